/* node: imds-node, the network half as a node agent (docs/design.md, "The
 * network half as a node agent").
 *
 * One loop for every pod of the node.  A pod is found by its sidecar's
 * socket, <pods-dir>/<pod UID>/volumes/kubernetes.io~empty-dir/imds-node/
 * agent.sock (inotify on the pods folder and on each pod's imds-node
 * folder, and a rescan as the net); the agent opens it without following
 * any link out of the pods folder, connects without blocking, takes the
 * peer's pid (SO_PEERCRED), checks that /proc/<pid>/cgroup names the pod's
 * UID and that its network namespace is not the agent's own, reads the
 * sidecar's configuration (nodemsg.h), and from then on keeps that pod's
 * kernel state right with the sidecar's own steps (plan.h, responder.h):
 * the guard first ("guard in place" to the sidecar), then the plumbing, the
 * steering and the listeners, created inside the pod's namespace and passed
 * to the sidecar.  Each pod is hostile: every read is one bounded message,
 * every wait has a deadline, a pod that misbehaves is dropped and retried
 * later with a growing delay, and none stalls another. */
#ifndef IMDS_NODE_H
#define IMDS_NODE_H

#include "loop.h"

#define NODE_DEFAULT_PODS_DIR "/var/lib/kubelet/pods"
#define NODE_SOCK_REL "volumes/kubernetes.io~empty-dir/imds-node/agent.sock"
#define NODE_DIR_REL "volumes/kubernetes.io~empty-dir/imds-node"
#define NODE_PODS_MAX 256 /* pods followed at once (the kubelet's default is 110) */
#define NODE_FDS_PER_POD 8

struct node_opts {
	const char *pods_dir;
	unsigned rescan_ms;    /* the net under inotify */
	unsigned hello_ms;     /* connect to config: the most a pod may take */
	unsigned backoff_max_ms;
	const char *metrics_addr; /* "HOST:PORT" for /healthz, /readyz, /metrics; NULL: none */
	const char *version;      /* for imds_node_build_info */
};

/* Runs until SIGTERM/SIGINT; the exit status. */
int node_main(const struct node_opts *o);

/* ---- the pod folder's pieces (tests/unit/node/test_node.c) --------------- */

struct stat;
/* A pod folder's name the agent follows: 1..63 of [A-Za-z0-9._-], not "."
 * or ".." (a pod UID; nothing that could climb out of the pods folder). */
int node_uid_ok(const char *s);
/* The sidecar's socket <dirfd>/<uid>/NODE_SOCK_REL, opened O_PATH without
 * following a link anywhere on the way (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS) and without reading or waiting on what is there:
 * the descriptor with *st filled; -EINVAL for a uid node_uid_ok refuses,
 * -ENOENT, -ELOOP for a link on the way, -ENOTSOCK for anything but a
 * socket (a FIFO, a file of any size, a folder), or another -errno. */
int node_open_sock(int dirfd, const char *uid, struct stat *st);
/* Does a /proc/<pid>/cgroup text name pod uid as a whole path element:
 * cgroupfs ".../pod<uid>/...", the systemd driver "...-pod<uid with '_'
 * for '-'>.slice/..."?  1 or 0. */
int node_cgroup_names_pod(const char *text, const char *uid);

#endif
