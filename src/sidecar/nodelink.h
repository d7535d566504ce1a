/* nodelink: the sidecar's side of the node agent, imds-node
 * (IMDS_NET_MODE=agent; docs/design.md, "The network half as a node agent").
 *
 * The sidecar touches no network state and needs no capability: it binds a
 * SOCK_SEQPACKET socket in the pod's imds-node emptyDir, sends the agent
 * its configuration when the agent connects (nodemsg.h), records the
 * agent's "guard in place" in a file next to the socket (what `probe`
 * reads), and serves on the listeners the agent created inside the pod's
 * network namespace and passed over the socket.  A new set replaces the
 * old; when the agent goes, the sidecar keeps serving on what it has and
 * waits for the agent to connect again. */
#ifndef IMDS_NODELINK_H
#define IMDS_NODELINK_H

#include "config.h"
#include "http.h"
#include "loop.h"

#define NODELINK_DEFAULT_SOCKET "/run/imds-node/agent.sock"
#define NODELINK_GUARD_FILE "guard" /* in the socket's folder */
#define NODELINK_AWAIT_DEFAULT_S 60u
/* the line `probe` and `await` print, and the sidecar logs while no agent came */
#define NODELINK_MISSING                                                                        \
	"no node agent has put the guard in place for this pod: is the imds-node DaemonSet "   \
	"running on this node? (kubectl -n kubevirt-imds get daemonset imds-node)"

/* `run` in agent mode: until SIGTERM drains the server; the exit status. */
int nodelink_run(struct loop *l, struct http_server *http, const struct imds_config *cfg,
		 const char *sock_path);
/* `await`: bind, wait at most timeout_s for the guard; 0, or 1 with the
 * message on stderr. */
int nodelink_await(const struct imds_config *cfg, const char *sock_path, unsigned timeout_s);
/* `probe`: 0 when the running sidecar recorded the guard, else 1 with the
 * message on stderr. */
int nodelink_probe(const char *sock_path);

#endif
