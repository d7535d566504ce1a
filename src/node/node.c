#include "node.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "addr.h"
#include "config.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "nft.h"
#include "nl.h"
#include "nodemsg.h"
#include "plan.h"
#include "plumb.h"
#include "serve.h"
#include "ndp.h"
#include "responder.h"
#include "steer.h"

#define EV_BUF (64u << 10)
#define NFT_BUF (64u << 10)
#define TICK_MS 200u
#define RETRY_MIN_MS 100u
#define RETRY_MAX_MS 10000u
#define CGROUP_READ_MAX 8192

enum pod_state {
	POD_IDLE,   /* not connected; retried at retry_at */
	POD_HELLO,  /* connected, the config not read yet (deadline) */
	POD_ACTIVE, /* followed: plan passes on its events */
};

struct node;

struct pod {
	struct node *node;
	char uid[64];
	enum pod_state state;
	int wd;               /* inotify watch on its imds-node folder, or on the deepest
				 folder of its path that exists yet (wd_level), -1 */
	int wd_level;         /* 0 the pod's folder .. POD_WATCH_FULL its imds-node folder */
	int conn;             /* the sidecar's socket */
	dev_t sdev;           /* the socket file connected to */
	ino_t sino;
	uint64_t deadline_ms; /* POD_HELLO: drop after */
	uint64_t retry_at;    /* POD_IDLE: connect again from */
	unsigned backoff_ms;
	char said[160];       /* the last refusal logged (said once) */
	pid_t pid;
	int netns;

	/* POD_ACTIVE */
	struct nodemsg msg;   /* the config; cfg points into it */
	struct imds_config cfg;
	struct plan_cfg pc;
	struct nl_sock req, ev, nft, nftev;
	struct plumb_state ps;
	struct steer_state want, have;
	int programmed, guard_sent, serving;
	int v6_said;      /* "IPv6 is off in the pod" logged */
	int waiting_said; /* "waiting for the VM's tap(s)" logged since it last served */
	char told[NODEMSG_REASON_MAX + 1]; /* the last "serving" message sent ("": none) */
	struct responder resp;
	int sent_if, sent_v6;
	int hold6;            /* passt's pods: plumb_port_hold6, held here, or -1 */
	uint64_t generation;
	uint64_t pass_at;     /* a failed pass: again from */
	unsigned pass_ms;
	uint64_t since_ms;
};

struct node {
	struct loop *loop;
	const struct node_opts *o;
	int dirfd;            /* the pods folder, O_PATH */
	int ino;              /* inotify */
	int pods_wd;
	int tick;             /* timerfd */
	int sigfd;
	int self_ns;          /* the agent's own netns */
	ino_t self_ns_ino;
	int nopidfd_said;      /* said once: the kernel has no SO_PEERPIDFD */
	uint64_t next_rescan;
	struct pod *pods[NODE_PODS_MAX];
	size_t npods;
	int full_said;
	uint8_t *evbuf, *nftbuf;
	struct nl_link *links;
	size_t nlinks;
	struct node_counters ctr;
	struct http_server *http; /* --metrics-addr: /healthz, /readyz, /metrics */
	char *mbuf;
	int scanned;              /* the first rescan done */
};

static void pod_pass(struct pod *p);

/* ---- helpers ------------------------------------------------------------- */

int node_uid_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 63 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return 1;
}

static int openat2_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long r = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	return r < 0 ? -errno : (int)r;
}

int node_open_sock(int dirfd, const char *uid, struct stat *st)
{
	char rel[256];
	int fd;

	if (!node_uid_ok(uid))
		return -EINVAL;
	snprintf(rel, sizeof(rel), "%s/%s", uid, NODE_SOCK_REL);
	/* no O_NOFOLLOW: RESOLVE_NO_SYMLINKS refuses a link as the last
	 * component too (ELOOP), where O_PATH|O_NOFOLLOW would open it; O_PATH
	 * opens a FIFO without waiting for a writer and reads nothing */
	fd = openat2_beneath(dirfd, rel, O_PATH);
	if (fd < 0)
		return fd == -EXDEV ? -ELOOP : fd;
	if (fstat(fd, st) || !S_ISSOCK(st->st_mode)) {
		close(fd);
		return -ENOTSOCK;
	}
	return fd;
}

/* Says why a pod is refused, once per reason (a rescan finds it again). */
static void pod_say(struct pod *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pod_say(struct pod *p, const char *fmt, ...)
{
	char line[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (strcmp(line, p->said) == 0)
		return;
	snprintf(p->said, sizeof(p->said), "%s", line);
	log_info("pod %s: %s", p->uid, line);
}

/* The taps served, each with its interface and binding when the webhook
 * named them, as the in-pod sidecar says them (src/sidecar/run.c
 * describe_taps). */
static void describe_taps(const struct pod *p, char *out, size_t cap)
{
	size_t at = 0;
	out[0] = '\0';
	for (size_t t = 0; t < p->want.ntaps && at < cap; t++) {
		const char *name = NULL, *kind = NULL;
		for (size_t i = 0; p->pc.ifs && i < p->pc.ifs->n; i++) {
			if (strcmp(p->pc.ifs->e[i].tap, p->want.taps[t].name) == 0) {
				name = p->pc.ifs->e[i].name;
				kind = ifaces_kind_name(p->pc.ifs->e[i].kind);
			}
		}
		int k = name ? snprintf(out + at, cap - at, "%s%s (%s, %s)", t ? ", " : "",
					p->want.taps[t].name, name, kind)
			     : snprintf(out + at, cap - at, "%s%s", t ? ", " : "", p->want.taps[t].name);
		if (k < 0)
			break;
		at += (size_t)k;
	}
}

/* What a pod waits for, as the in-pod sidecar says it (src/sidecar/run.c
 * start_waiting): the operator reads it in the agent's log. */
static void say_waiting(const struct pod *p)
{
	char names[160] = "";
	size_t at = 0;
	if (!p->pc.ifs) {
		log_info("pod %s: waiting for a VM tap on bridge %s", p->uid,
			 p->pc.bridge ? p->pc.bridge : "k6t-*");
		return;
	}
	if (!p->pc.nwanted)
		return; /* nothing it could serve: the sidecar says so */
	for (size_t i = 0; i < p->pc.ifs->n && at < sizeof(names); i++) {
		if (!ifaces_kind_has_tap(p->pc.ifs->e[i].kind))
			continue;
		int k = snprintf(names + at, sizeof(names) - at, "%s%s", at ? ", " : "",
				 p->pc.ifs->e[i].tap);
		if (k > 0)
			at += (size_t)k;
	}
	log_info("pod %s: waiting for the VM's tap(s): %s", p->uid, names);
}

static int enter(struct pod *p)
{
	if (setns(p->netns, CLONE_NEWNET)) {
		log_error("pod %s: setns: %s", p->uid, strerror(errno));
		return -1;
	}
	return 0;
}

static void leave(struct node *n)
{
	/* Not back in our own namespace: every later step would act in a
	 * pod's.  Nothing sane is left to do. */
	if (setns(n->self_ns, CLONE_NEWNET)) {
		log_error("setns back to the agent's own network namespace: %s", strerror(errno));
		log_flush();
		_exit(1);
	}
}

static int send_msg(struct pod *p, const struct nodemsg *m, const int *fds, unsigned nfds)
{
	char buf[NODEMSG_MAX];
	int len = nodemsg_encode(m, buf, sizeof(buf));
	union {
		char b[CMSG_SPACE(sizeof(int) * NODEMSG_FDS_MAX)];
		struct cmsghdr align;
	} cm;
	struct iovec iov = {buf, len > 0 ? (size_t)len : 0};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (len < 0)
		return len;
	if (nfds) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.b;
		mh.msg_controllen = (socklen_t)CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = (socklen_t)CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	/* Never blocks: a sidecar that does not read is dropped. */
	if (sendmsg(p->conn, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != len)
		return errno ? -errno : -EIO;
	return 0;
}

/* ---- a pod's life -------------------------------------------------------- */

static void pod_close_active(struct pod *p)
{
	struct loop *l = p->node->loop;
	/* the responder's counts start over at the next resp_init: kept here */
	p->node->ctr.arp_replies += p->resp.arp_answered;
	p->node->ctr.ndp_replies += p->resp.ndp_answered;
	resp_close(&p->resp);
	if (p->ev.fd >= 0)
		loop_del(l, p->ev.fd, LOOP_READABLE);
	if (p->nftev.fd >= 0)
		loop_del(l, p->nftev.fd, LOOP_READABLE);
	nl_close(&p->ev);
	nl_close(&p->req);
	nl_close(&p->nftev);
	nl_close(&p->nft);
	p->programmed = p->guard_sent = p->serving = 0;
	p->told[0] = '\0';
	p->sent_if = p->sent_v6 = 0;
	if (p->hold6 >= 0)
		close(p->hold6);
	p->hold6 = -1;
}

/* Back to POD_IDLE (the kernel state stays: a restarted sidecar or agent
 * adopts it), retried after a delay that doubles while the pod fails. */
static void pod_drop(struct pod *p, int failed)
{
	if (p->state == POD_ACTIVE)
		pod_close_active(p);
	if (p->conn >= 0) {
		loop_del(p->node->loop, p->conn, LOOP_READABLE);
		close(p->conn);
	}
	p->conn = -1;
	if (p->netns >= 0)
		close(p->netns);
	p->netns = -1;
	p->state = POD_IDLE;
	if (failed) {
		p->node->ctr.refused++;
		p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : 500u;
		if (p->backoff_ms > p->node->o->backoff_max_ms)
			p->backoff_ms = p->node->o->backoff_max_ms;
	} else {
		p->backoff_ms = 0;
	}
	p->retry_at = loop_clock_ms() + p->backoff_ms;
}

/* Forgets pods[i] (the last takes its place). */
static void pod_remove(struct node *n, size_t i)
{
	struct pod *p = n->pods[i];
	n->pods[i] = n->pods[n->npods - 1];
	n->pods[--n->npods] = NULL;
	pod_drop(p, 0);
	if (p->wd >= 0)
		inotify_rm_watch(n->ino, p->wd);
	free(p);
}

static struct pod *pod_find(struct node *n, const char *uid)
{
	for (size_t i = 0; i < n->npods; i++)
		if (strcmp(n->pods[i]->uid, uid) == 0)
			return n->pods[i];
	return NULL;
}

static struct pod *pod_by_wd(struct node *n, int wd)
{
	for (size_t i = 0; i < n->npods; i++)
		if (n->pods[i]->wd == wd)
			return n->pods[i];
	return NULL;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5: include/uapi/asm-generic/socket.h */
#endif

/* The socket's peer as a pidfd (SO_PEERPIDFD, Linux 6.5): it names the
 * process that listened, never whatever holds its pid number later.  -1
 * with *none set when the kernel has no such option. */
static int peer_pidfd(int c, int *none)
{
	int fd = -1;
	socklen_t l = sizeof(fd);

	*none = 0;
	if (!getsockopt(c, SOL_SOCKET, SO_PEERPIDFD, &fd, &l) && fd >= 0)
		return fd;
	*none = errno == ENOPROTOOPT;
	return -1;
}

/* Has the pidfd's process exited?  A pidfd polls readable once it has
 * (pidfd_open(2)); an error counts as exited. */
static int pidfd_exited(int pfd)
{
	struct pollfd pf = {.fd = pfd, .events = POLLIN};
	return poll(&pf, 1, 0) != 0;
}

/* "pod" + id in text as a whole path element: after '/' or '-', and
 * followed by what ends it (end, '/' or a line's end; ".slice" when slice). */
static int names_element(const char *text, const char *id, int slice)
{
	size_t n = strlen(id);
	for (const char *at = strstr(text, "pod"); at; at = strstr(at + 1, "pod")) {
		const char *e = at + 3 + n;
		if (at == text || (at[-1] != '/' && at[-1] != '-') || strncmp(at + 3, id, n) != 0)
			continue;
		if (slice ? strncmp(e, ".slice", 6) == 0 && (e[6] == '/' || e[6] == '\n' || !e[6])
			  : (*e == '/' || *e == '\n' || !*e))
			return 1;
	}
	return 0;
}

int node_cgroup_names_pod(const char *text, const char *uid)
{
	char alt[64];

	if (!node_uid_ok(uid))
		return 0;
	snprintf(alt, sizeof(alt), "%s", uid);
	for (char *c = alt; *c; c++)
		if (*c == '-')
			*c = '_';
	return names_element(text, uid, 0) || names_element(text, alt, 1);
}

/* Does /proc/<pid>/cgroup name the pod's UID?  At most CGROUP_READ_MAX
 * bytes read. */
static int cgroup_names_pod(pid_t pid, const char *uid)
{
	char path[64], buf[CGROUP_READ_MAX + 1];
	ssize_t got = 0, r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < CGROUP_READ_MAX && (r = read(fd, buf + got, (size_t)(CGROUP_READ_MAX - got))) > 0)
		got += r;
	close(fd);
	buf[got] = '\0';
	return node_cgroup_names_pod(buf, uid);
}

static void on_conn(struct loop *l, int fd, void *data, int mask);

/* From POD_IDLE: find the socket, connect, authenticate the peer. */
static void pod_connect(struct pod *p)
{
	struct node *n = p->node;
	char via[64], nspath[64];
	struct stat st, nst;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	int sfd, c, r, pfd, nopidfd, gone, ns_errno = 0;

	sfd = node_open_sock(n->dirfd, p->uid, &st);
	if (sfd == -ENOTSOCK) {
		pod_say(p, "refused: %s is not a socket", NODE_SOCK_REL);
		p->backoff_ms = n->o->backoff_max_ms;
		p->retry_at = loop_clock_ms() + p->backoff_ms;
		return;
	}
	if (sfd < 0) {
		if (sfd == -ELOOP)
			pod_say(p, "refused: a symbolic link on the way to %s (not followed)",
				NODE_SOCK_REL);
		else if (sfd != -ENOENT)
			pod_say(p, "refused: %s: %s", NODE_SOCK_REL, strerror(-sfd));
		p->retry_at = loop_clock_ms() + n->o->rescan_ms;
		return;
	}
	/* The socket the descriptor holds, not the path again: nothing can
	 * be swapped in between. */
	snprintf(via, sizeof(via), "/proc/self/fd/%d", sfd);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", via);
	c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c < 0) {
		log_error("pod %s: socket: %s", p->uid, strerror(errno));
		close(sfd);
		pod_drop(p, 1);
		return;
	}
	r = connect(c, (struct sockaddr *)&sa, sizeof(sa));
	close(sfd);
	if (r && errno != EINPROGRESS) {
		/* a stale socket (no sidecar), a full backlog, a peer of another type */
		pod_say(p, "no sidecar on %s: %s", NODE_SOCK_REL, strerror(errno));
		close(c);
		pod_drop(p, 1);
		return;
	}
	p->conn = c;
	p->sdev = st.st_dev;
	p->sino = st.st_ino;
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) || cred.pid <= 0) {
		pod_say(p, "refused: the socket's peer has no pid in the agent's pid namespace "
			   "(is the agent hostPID?)");
		pod_drop(p, 1);
		return;
	}
	p->pid = cred.pid;
	/* The pid is a number: the peer may exit and the number name another
	 * process by the time its cgroup and netns are read.  The pidfd names
	 * the peer itself; alive after the reads, the reads were of it. */
	pfd = peer_pidfd(c, &nopidfd);
	if (pfd < 0 && !nopidfd) {
		pod_say(p, "refused: the socket's peer (pid %d) has exited (SO_PEERPIDFD: %s)",
			(int)cred.pid, strerror(errno));
		pod_drop(p, 1);
		return;
	}
	if (nopidfd && !n->nopidfd_said) {
		log_info("this kernel has no SO_PEERPIDFD (Linux 6.5): a sidecar's pid is read once, "
			 "and a pid reused at once could name another process of its pod");
		n->nopidfd_said = 1;
	}
	r = cgroup_names_pod(cred.pid, p->uid);
	if (r == 1) {
		snprintf(nspath, sizeof(nspath), "/proc/%d/ns/net", (int)cred.pid);
		p->netns = open(nspath, O_RDONLY | O_CLOEXEC);
		if (p->netns >= 0 && fstat(p->netns, &nst)) {
			close(p->netns);
			p->netns = -1;
		}
		ns_errno = errno;
	}
	gone = pfd >= 0 && pidfd_exited(pfd);
	if (pfd >= 0)
		close(pfd);
	if (gone) {
		pod_say(p, "refused: the socket's peer (pid %d) exited while it was checked: its "
			   "pid may name another process now",
			(int)cred.pid);
		pod_drop(p, 1);
		return;
	}
	if (r != 1) {
		pod_say(p, "refused: the socket's peer (pid %d) is not a process of this pod (its "
			   "cgroup does not name pod %s)",
			(int)cred.pid, p->uid);
		pod_drop(p, 1);
		return;
	}
	if (p->netns < 0) {
		pod_say(p, "refused: %s: %s", nspath, strerror(ns_errno));
		pod_drop(p, 1);
		return;
	}
	if (nst.st_ino == n->self_ns_ino) {
		pod_say(p, "refused: the sidecar (pid %d) is in the node's network namespace "
			   "(a hostNetwork pod)",
			(int)cred.pid);
		pod_drop(p, 1);
		return;
	}
	if (loop_add(n->loop, c, LOOP_READABLE, on_conn, p)) {
		pod_drop(p, 1);
		return;
	}
	p->state = POD_HELLO;
	p->deadline_ms = loop_clock_ms() + n->o->hello_ms;
}

static void on_events(struct loop *l, int fd, void *data, int mask);

/* The config read: open the pod's netlink sockets inside its namespace. */
static int pod_activate(struct pod *p)
{
	static const unsigned groups[] = {RTNLGRP_LINK,		RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV4_ROUTE,
					  RTNLGRP_IPV4_RULE,	RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV6_ROUTE,
					  RTNLGRP_IPV6_RULE};
	struct node *n = p->node;
	char err[256], why[200], listen[40];
	int r = 0;

	memset(&p->cfg, 0, sizeof(p->cfg));
	p->cfg.ns = p->msg.ns;
	p->cfg.vm_name = p->msg.name;
	p->cfg.hop_limit = p->msg.hops;
	p->cfg.bridge_name = p->msg.have_bridge ? p->msg.bridge : NULL;
	snprintf(listen, sizeof(listen), "169.254.169.254:%u", p->msg.port);
	p->cfg.listen_addr = listen;
	if (p->msg.have_ifaces) {
		if (ifaces_parse(p->msg.ifaces, strlen(p->msg.ifaces), &p->cfg.ifaces, why,
				 sizeof(why)) < 0) {
			struct nodemsg m = {.type = NODEMSG_REFUSED};
			snprintf(m.reason, sizeof(m.reason), "interfaces: %.200s", why);
			send_msg(p, &m, NULL, 0);
			pod_say(p, "refused: its IMDS_INTERFACES: %s", why);
			return -EINVAL;
		}
		p->cfg.have_ifaces = 1;
	}
	if (plan_cfg_init(&p->pc, &p->cfg, err, sizeof(err)))
		return -EINVAL;
	p->cfg.listen_addr = NULL; /* the stack buffer: plan_cfg holds the address */
	nl_sock_init(&p->req);
	nl_sock_init(&p->ev);
	nl_sock_init(&p->nft);
	nl_sock_init(&p->nftev);
	resp_init(&p->resp, n->loop, &p->req, p->pc.ip, p->pc.port, p->pc.vmac);
	p->state = POD_ACTIVE;
	if (enter(p))
		return -EPERM;
	/* Subscribe before the first dump, as run.c does. */
	if (nl_open(&p->ev, groups, sizeof(groups) / sizeof(groups[0]), err, sizeof(err)) ||
	    nl_open(&p->req, NULL, 0, err, sizeof(err)) || nft_open(&p->nftev, 1, err, sizeof(err)) ||
	    nft_open(&p->nft, 0, err, sizeof(err)))
		r = -EIO;
	leave(n);
	if (r) {
		log_error("pod %s: netlink in its namespace: %s", p->uid, err);
		return r;
	}
	if (loop_add(n->loop, p->ev.fd, LOOP_READABLE, on_events, p) ||
	    loop_add(n->loop, p->nftev.fd, LOOP_READABLE, on_events, p))
		return -ENOMEM;
	p->generation = 0;
	/* Listeners the sidecar holds from an agent before us: kept while
	 * veth-imds is the device they are bound to. */
	if (p->msg.have_serving) {
		p->sent_if = (int)p->msg.serving_if;
		p->sent_v6 = p->msg.serving_n > 1;
	}
	p->since_ms = loop_clock_ms();
	p->said[0] = '\0';
	log_info("pod %s: sidecar pid %d, VM %s/%s, port %u, hop limit %u%s%s", p->uid, (int)p->pid,
		 p->msg.ns, p->msg.name, p->msg.port, p->msg.hops,
		 p->msg.have_ifaces ? ", interfaces " : "", p->msg.have_ifaces ? p->msg.ifaces : "");
	if (!p->msg.have_ifaces)
		log_info("pod %s: IMDS_INTERFACES not set (a launcher pod admitted without the VMI's "
			 "imds.kubevirt.io/interfaces): serving the taps of %s",
			 p->uid, p->pc.bridge ? p->pc.bridge : "every k6t-* bridge");
	return 0;
}

static void on_conn(struct loop *l, int fd, void *data, int mask)
{
	struct pod *p = data;
	char buf[NODEMSG_MAX + 1], err[200];
	(void)l;
	(void)mask;

	/* One message per wake-up: a pod that floods gets no more of the
	 * loop than one that does not. */
	ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got <= 0) {
		if (p->state == POD_ACTIVE)
			log_info("pod %s: the sidecar closed its socket; its plumbing stays", p->uid);
		pod_drop(p, got < 0);
		return;
	}
	if ((size_t)got > NODEMSG_MAX) {
		pod_say(p, "refused: a message of %zd bytes (at most %u)", got, (unsigned)NODEMSG_MAX);
		pod_drop(p, 1);
		return;
	}
	if (p->state != POD_HELLO) {
		pod_say(p, "refused: a message after the config (the sidecar sends one)");
		pod_drop(p, 1);
		return;
	}
	if (nodemsg_decode(buf, (size_t)got, &p->msg, err, sizeof(err)) ||
	    p->msg.type != NODEMSG_CONFIG) {
		struct nodemsg m = {.type = NODEMSG_REFUSED};
		if (!err[0])
			snprintf(err, sizeof(err), "a %s message where the config was due",
				 nodemsg_type_name(p->msg.type));
		snprintf(m.reason, sizeof(m.reason), "%s", err);
		send_msg(p, &m, NULL, 0);
		pod_say(p, "refused: %s", err);
		pod_drop(p, 1);
		return;
	}
	if (pod_activate(p)) {
		pod_drop(p, 1);
		return;
	}
	pod_pass(p);
}

/* ---- one plan pass in a pod ---------------------------------------------- */

static int ensure_rules(struct pod *p)
{
	char err[512];
	int ret;

	if (p->programmed && plan_steer_eq(&p->want, &p->have))
		return 0;
	ret = plan_program(&p->nft, p->node->nftbuf, NFT_BUF, &p->want, err, sizeof(err));
	if (ret) {
		log_error("pod %s: nf_tables: %s%s%s", p->uid, strerror(-ret), err[0] ? ": " : "", err);
		p->programmed = 0;
		return ret;
	}
	if (!p->programmed || p->want.ntaps != p->have.ntaps || p->want.nlocal != p->have.nlocal ||
	    p->want.nlocal6 != p->have.nlocal6)
		log_info("pod %s: nf_tables table %s: %zu tap(s) steered, %zu pod address(es) aliased",
			 p->uid, STEER_TABLE, p->want.ntaps, p->want.nlocal + p->want.nlocal6);
	p->have = p->want;
	p->programmed = 1;
	return 0;
}

/* The listeners, made in the pod's namespace (we are in it) and passed. */
static int send_listeners(struct pod *p)
{
	char err[256];
	int fds[NODEMSG_FDS_MAX];
	unsigned nfds = 0;
	int ret = 0;

	fds[nfds] = plumb_listener_open(p->ps.veth, p->pc.ip, p->pc.lport, p->msg.hops, p->pc.passt,
					err, sizeof(err));
	if (fds[nfds] < 0) {
		log_error("pod %s: %s", p->uid, err);
		return fds[nfds];
	}
	nfds++;
	for (int a = 0; p->ps.v6 && a < 2; a++) {
		fds[nfds] = plumb_listener_open6(p->ps.veth, ndp_imds_addr[a], p->pc.lport, p->msg.hops,
						 p->pc.passt, err, sizeof(err));
		if (fds[nfds] < 0) {
			log_error("pod %s: %s", p->uid, err);
			ret = fds[nfds];
			goto out;
		}
		nfds++;
	}
	/* passt's pods: the service's IPv6 port held for the pod (plumb.h);
	 * -EADDRINUSE: passt's own listener has it. */
	if (p->pc.passt && p->pc.lport != p->pc.port && p->ps.v6) {
		if (p->hold6 >= 0)
			close(p->hold6);
		p->hold6 = plumb_port_hold6(p->ps.veth, ndp_imds_addr[0], p->pc.port);
		if (p->hold6 < 0 && p->hold6 != -EADDRINUSE)
			log_error("pod %s: holding [fd00:ec2::254]:%u for passt: %s", p->uid, p->pc.port,
				  strerror(-p->hold6));
		if (p->hold6 < 0)
			p->hold6 = -1;
	}
	struct nodemsg m = {.type = NODEMSG_LISTENERS, .generation = ++p->generation, .nfds = nfds};
	ret = send_msg(p, &m, fds, nfds);
	if (ret)
		log_error("pod %s: sending the listeners: %s", p->uid, strerror(-ret));
out:
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	if (!ret) {
		p->sent_if = p->ps.veth;
		p->sent_v6 = p->ps.v6;
		p->node->ctr.listener_sets++;
	}
	return ret;
}

/* What the pod is served, told the sidecar whenever it changed (nodemsg.h
 * "serving"): `imds-server diag` shows it.  0, or send_msg's error. */
static int tell_serving(struct pod *p, int servable)
{
	struct nodemsg m = {.type = NODEMSG_SERVING};

	if (servable) {
		describe_taps(p, m.reason, sizeof(m.reason));
		size_t at = strlen(m.reason);
		if (p->pc.passt)
			snprintf(m.reason + at, sizeof(m.reason) - at, "%spasst (over the pod's loopback)",
				 at ? " and " : "");
	} else {
		snprintf(m.reason, sizeof(m.reason), "%s",
			 p->pc.ifs && !p->pc.nwanted ? "nothing: no interface of this VM can reach the service"
						     : "nothing yet: waiting for the VM's tap(s)");
	}
	if (strcmp(m.reason, p->told) == 0)
		return 0;
	int ret = send_msg(p, &m, NULL, 0);
	if (!ret)
		snprintf(p->told, sizeof(p->told), "%s", m.reason);
	return ret;
}

static void pass_failed(struct pod *p)
{
	p->node->ctr.pass_failed++;
	p->pass_ms = p->pass_ms ? p->pass_ms * 2 : RETRY_MIN_MS;
	if (p->pass_ms > RETRY_MAX_MS)
		p->pass_ms = RETRY_MAX_MS;
	p->pass_at = loop_clock_ms() + p->pass_ms;
}

static void pod_pass(struct pod *p)
{
	struct node *n = p->node;
	char err[512];
	unsigned changes = 0;
	int ret = 0, dead = 0;

	if (p->state != POD_ACTIVE)
		return;
	p->pass_at = 0;
	n->ctr.passes++;
	if (enter(p)) {
		pod_drop(p, 1);
		return;
	}
	/* The guard first, before any plumbing, as the sidecar does. */
	if (!p->programmed) {
		plan_fallback(&p->pc, &p->have, &p->want);
		if ((ret = ensure_rules(p)))
			goto out;
	}
	if (!p->guard_sent) {
		struct nodemsg m = {.type = NODEMSG_GUARD, .generation = ++p->generation};
		if ((ret = send_msg(p, &m, NULL, 0))) {
			dead = 1;
			goto out;
		}
		p->guard_sent = 1;
		log_info("pod %s: guard in place (%llu ms after the sidecar's config)", p->uid,
			 (unsigned long long)(loop_clock_ms() - p->since_ms));
	}
	if ((ret = plan_make(&p->pc, &p->req, &p->ps, n->links, &n->nlinks, &p->want, &changes, err,
			     sizeof(err)))) {
		log_error("pod %s: %s", p->uid, err);
		goto out;
	}
	/* As the in-pod sidecar says it (src/sidecar/run.c): the operator
	 * reads it in the agent's log now. */
	if (!p->ps.v6 && !p->v6_said) {
		log_info("pod %s: IPv6 is off in the pod (%s): 169.254.169.254 only", p->uid,
			 p->ps.v6_off);
		p->v6_said = 1;
	}
	if ((ret = ensure_rules(p)) || (ret = resp_ensure(&p->resp, p->ps.veth, p->ps.v6)))
		goto out;
	if (p->ps.veth && (p->ps.veth != p->sent_if || p->ps.v6 != p->sent_v6) &&
	    (ret = send_listeners(p))) {
		dead = ret != -EADDRINUSE && ret != -ENOMEM;
		goto out;
	}
	int servable = p->pc.passt || p->want.ntaps > 0;
	if (servable && !p->serving) {
		char taps[320];
		describe_taps(p, taps, sizeof(taps));
		n->ctr.served++;
		log_info("pod %s: serving %zu tap(s)%s, ready %llu ms after the sidecar's config: to "
			 "%s%s%s, hop limit %u",
			 p->uid, p->want.ntaps, p->pc.passt ? " and passt" : "",
			 (unsigned long long)(loop_clock_ms() - p->since_ms), taps,
			 p->want.ntaps && p->pc.passt ? " and " : "",
			 p->pc.passt ? "passt (over the pod's loopback)" : "", p->msg.hops);
	} else if (servable && changes) {
		char what[160];
		plumb_changes_text(changes, what, sizeof(what));
		log_info("pod %s: restored plumbing (%s)", p->uid, what);
		n->ctr.restored++;
	} else if (!servable && (p->serving || !p->waiting_said)) {
		if (p->serving)
			log_info("pod %s: the VM's tap(s) are gone", p->uid);
		say_waiting(p);
	}
	p->waiting_said = !servable; /* said above, or before */
	p->serving = servable;
	if ((ret = tell_serving(p, servable))) {
		dead = 1;
		log_error("pod %s: telling the sidecar what it serves: %s", p->uid, strerror(-ret));
	}
out:
	leave(n);
	if (dead) {
		log_info("pod %s: the sidecar does not read its socket: dropped", p->uid);
		pod_drop(p, 1);
	} else if (ret) {
		pass_failed(p);
	} else {
		p->pass_ms = 0;
	}
}

/* ---- events -------------------------------------------------------------- */

/* A pod's two event sockets, read from its namespace's kernel: what their
 * events call for is plan.h's decision, the sidecar's own (run.c) — so a
 * pass also when "local 169.254.169.254" is written into table local
 * again (by the kernel as veth-imds comes up, or by anyone), which the
 * pass deletes (plumb.h).  At most 64 datagrams per wake-up: one busy pod
 * does not hold the others. */
static void on_events(struct loop *l, int fd, void *data, int mask)
{
	struct pod *p = data;
	int nft = fd == p->nftev.fd, err;
	unsigned need = plan_events_read(nft ? &p->nftev : &p->ev, nft, p->nft.portid,
					 p->node->evbuf, EV_BUF, 64, &err);
	(void)l;
	(void)mask;

	if (err && !nft)
		log_error("pod %s: netlink events: %s", p->uid, strerror(-err));
	if (need & PLAN_EV_RULESET) {
		if (!p->programmed)
			return; /* a pass that programs it is due already */
		log_info("pod %s: nf_tables table %s was changed by another process: programming it "
			 "again",
			 p->uid, STEER_TABLE);
		p->programmed = 0;
	}
	if (need)
		pod_pass(p);
}

/* ---- discovery ----------------------------------------------------------- */

/* The folders from the pod's down to its imds-node folder, which the
 * kubelet makes one after the other (the pod's at admission, volumes/...
 * when it sets up the emptyDir, seconds before the sidecar binds). */
static const char *const pod_levels[] = {"", "/volumes", "/volumes/kubernetes.io~empty-dir",
					 "/" NODE_DIR_REL};
#define POD_WATCH_FULL ((int)(sizeof(pod_levels) / sizeof(pod_levels[0])) - 1)

/* A watch on the pod's imds-node folder, the socket's creation waking us;
 * until that folder exists, on the deepest folder of its path that does,
 * whose next folder's creation brings us here again (without it a pod seen
 * before its emptyDir waited for the rescan: 500 ms to 2 s of its start). */
static void pod_watch(struct pod *p)
{
	struct node *n = p->node;
	char rel[200], via[64];

	/* Each round only goes deeper; a folder made between our look and the
	 * watch raised no event, so the next round looks again. */
	for (int round = 0; round <= POD_WATCH_FULL; round++) {
		int fd = -1, lvl, wd;
		if (p->wd >= 0 && p->wd_level == POD_WATCH_FULL)
			return;
		for (lvl = POD_WATCH_FULL; lvl >= 0 && (p->wd < 0 || lvl > p->wd_level); lvl--) {
			snprintf(rel, sizeof(rel), "%s%s", p->uid, pod_levels[lvl]);
			fd = openat2_beneath(n->dirfd, rel, O_PATH | O_DIRECTORY);
			if (fd >= 0)
				break;
		}
		if (fd < 0)
			return;
		/* The folder opened beneath the pods folder, watched through its
		 * descriptor's magic link: followed (IN_DONT_FOLLOW would watch the
		 * link in /proc itself, which never sees a file created in the
		 * folder: every pod then waited for the rescan), and it names that
		 * very folder, never a path resolved again. */
		snprintf(via, sizeof(via), "/proc/self/fd/%d", fd);
		wd = inotify_add_watch(n->ino, via, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
		close(fd);
		if (wd < 0)
			return;
		if (p->wd >= 0 && p->wd != wd)
			inotify_rm_watch(n->ino, p->wd);
		p->wd = wd;
		p->wd_level = lvl;
	}
}

/* The pod's folder: followed from now on, its socket tried when due. */
static void pod_seen(struct node *n, const char *uid, int now)
{
	struct pod *p;

	if (!node_uid_ok(uid))
		return;
	p = pod_find(n, uid);
	if (!p) {
		if (n->npods >= NODE_PODS_MAX) {
			if (!n->full_said)
				log_error("%u pods followed already: pod %s waits for one to go",
					  NODE_PODS_MAX, uid);
			n->full_said = 1;
			return;
		}
		p = calloc(1, sizeof(*p));
		if (!p)
			return;
		p->node = n;
		snprintf(p->uid, sizeof(p->uid), "%s", uid);
		p->wd = p->conn = p->netns = p->hold6 = -1;
		p->state = POD_IDLE;
		n->pods[n->npods++] = p;
	}
	pod_watch(p);
	if (p->state == POD_IDLE && (now || loop_clock_ms() >= p->retry_at))
		pod_connect(p);
}

/* A connected pod whose socket file is no longer the one it connected to
 * (a new sidecar bound it again): connect to the new one. */
static void pod_check_socket(struct pod *p)
{
	char rel[256];
	struct stat st;
	int fd;

	if (p->state == POD_IDLE)
		return;
	snprintf(rel, sizeof(rel), "%s/%s", p->uid, NODE_SOCK_REL);
	fd = openat2_beneath(p->node->dirfd, rel, O_PATH);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && (st.st_dev != p->sdev || st.st_ino != p->sino)) {
		log_info("pod %s: its socket was bound again: connecting to the new one", p->uid);
		pod_drop(p, 0);
		p->retry_at = 0;
	}
	close(fd);
}

static void rescan(struct node *n)
{
	int fd = openat(n->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;

	n->next_rescan = loop_clock_ms() + n->o->rescan_ms;
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		log_error("pods folder %s: %s", n->o->pods_dir, strerror(errno));
		return;
	}
	/* Forget the pods whose folder is gone. */
	for (size_t i = 0; i < n->npods;) {
		struct stat st;
		if (fstatat(n->dirfd, n->pods[i]->uid, &st, AT_SYMLINK_NOFOLLOW) && errno == ENOENT) {
			log_info("pod %s: its folder is gone", n->pods[i]->uid);
			pod_remove(n, i);
			n->full_said = 0;
			continue;
		}
		i++;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		pod_seen(n, e->d_name, 0);
	}
	closedir(d);
	for (size_t i = 0; i < n->npods; i++)
		pod_check_socket(n->pods[i]);
}

static void on_inotify(struct loop *l, int fd, void *data, int mask)
{
	struct node *n = data;
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	(void)l;
	(void)mask;

	for (int i = 0; i < 16; i++) {
		ssize_t got = read(fd, buf, sizeof(buf));
		if (got <= 0)
			break;
		for (char *at = buf; at < buf + got;) {
			const struct inotify_event *ev = (const struct inotify_event *)at;
			at += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				rescan(n);
				continue;
			}
			if (ev->wd == n->pods_wd) {
				if (ev->len && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
					pod_seen(n, ev->name, 1);
				continue;
			}
			struct pod *p = pod_by_wd(n, ev->wd);
			if (!p)
				continue;
			if (ev->mask & IN_IGNORED) {
				p->wd = -1;
				continue;
			}
			if (!ev->len || !(ev->mask & (IN_CREATE | IN_MOVED_TO)))
				continue;
			if (p->wd_level < POD_WATCH_FULL)
				pod_watch(p); /* a folder on the way to its imds-node folder: deeper */
			else if (strcmp(ev->name, "agent.sock") != 0)
				continue;
			else if (p->state != POD_IDLE)
				pod_check_socket(p);
			/* its socket appeared, or its folder did (the socket may be
			 * there already) */
			if (p->wd_level == POD_WATCH_FULL && p->state == POD_IDLE) {
				p->backoff_ms = 0;
				pod_connect(p);
			}
		}
	}
}

/* Deadlines, retries and the rescan, every TICK_MS: bounded work per pod. */
static void on_tick(struct loop *l, int fd, void *data, int mask)
{
	struct node *n = data;
	uint64_t now = loop_clock_ms();
	(void)l;
	(void)mask;

	loop_timer_ack(fd);
	for (size_t i = 0; i < n->npods; i++) {
		struct pod *p = n->pods[i];
		if (p->state == POD_HELLO && now >= p->deadline_ms) {
			pod_say(p, "refused: no config within %u ms of connecting", n->o->hello_ms);
			pod_drop(p, 1);
		} else if (p->state == POD_ACTIVE && p->pass_at && now >= p->pass_at) {
			pod_pass(p);
		} else if (p->state == POD_IDLE && p->retry_at && now >= p->retry_at) {
			pod_connect(p);
		}
	}
	if (now >= n->next_rescan)
		rescan(n);
	loop_timer_arm(n->tick, now + TICK_MS);
}

static void on_signal(struct loop *l, int fd, void *data, int mask)
{
	struct signalfd_siginfo si;
	(void)data;
	(void)mask;
	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		log_info("signal %u: stopping; every pod's plumbing and rules stay", si.ssi_signo);
	loop_stop(l);
}

static void before_sleep(struct loop *l, void *data)
{
	(void)l;
	(void)data;
	log_flush();
}

/* ---- health and metrics (--metrics-addr) ----------------------------------- */

#define METRICS_BUF 4096

static void handle(const struct http_request *req, struct http_response *res, void *ud)
{
	struct node *n = ud;
	struct http_span p = req->path;

	/* /healthz is answered from the one loop that does everything: a stuck
	 * loop answers nothing, and the kubelet restarts the agent */
	if (!serve_ops_method_ok(req, res) || serve_ops_healthz(req, res))
		return;
	if (http_span_eq(p, "/readyz")) {
		if (n->scanned)
			http_res_text(res, 200, "text/plain", "ok", 2);
		else
			http_res_error(res, 503, "not_ready", "the pods folder not read yet");
	} else if (http_span_eq(p, "/metrics")) {
		struct node_gauges g = {.pods = (unsigned)n->npods, .max_pods = NODE_PODS_MAX};
		struct node_counters c = n->ctr;
		for (size_t i = 0; i < n->npods; i++) {
			const struct pod *pi = n->pods[i];
			g.connected += pi->state != POD_IDLE;
			g.serving += pi->state == POD_ACTIVE && pi->serving;
			if (pi->state == POD_ACTIVE) {
				c.arp_replies += pi->resp.arp_answered;
				c.ndp_replies += pi->resp.ndp_answered;
			}
		}
		struct sbuf b = SBUF_INIT(n->mbuf, METRICS_BUF);
		node_metrics_render(&c, &g, n->o->version ? n->o->version : "dev", &b);
		serve_ops_metrics(res, &b);
	} else {
		http_res_error(res, 404, "not_found", "no such path");
	}
}

/* The listener for --metrics-addr; 0, -EINVAL for an address that is not
 * one, or -1 (said why). */
static int metrics_listen(struct node *n)
{
	struct http_limits lim = HTTP_LIMITS_DEFAULT;
	char err[256], where[80];
	int fd;

	lim.max_conns = 16; /* the kubelet's probes and a scraper */
	n->mbuf = malloc(METRICS_BUF);
	n->http = n->mbuf ? http_server_new(n->loop, &lim, handle, NULL, n) : NULL;
	if (!n->http) {
		log_error("--metrics-addr: out of memory");
		return -1;
	}
	fd = http_listen_addr(n->o->metrics_addr, 16, err, sizeof(err));
	if (fd < 0) {
		log_error("--metrics-addr: %s", err);
		return fd == -EINVAL ? -EINVAL : -1;
	}
	if (http_server_listen_fd(n->http, fd) < 0) {
		close(fd);
		log_error("--metrics-addr: cannot watch the listener");
		return -1;
	}
	log_info("health and metrics on %s (/healthz, /readyz, /metrics)",
		 addr_local(fd, where, sizeof(where)));
	return 0;
}

int node_main(const struct node_opts *o)
{
	struct node n = {.o = o, .dirfd = -1, .ino = -1, .tick = -1, .sigfd = -1, .self_ns = -1};
	struct stat st;
	sigset_t ss;
	int status = 1, r;

	n.loop = loop_new(NODE_PODS_MAX * NODE_FDS_PER_POD + 64);
	n.evbuf = malloc(EV_BUF);
	n.nftbuf = malloc(NFT_BUF);
	n.links = calloc(PLUMB_MAX_LINKS, sizeof(*n.links));
	if (!n.loop || !n.evbuf || !n.nftbuf || !n.links) {
		log_error("out of memory");
		goto out;
	}
	loop_set_before_sleep(n.loop, before_sleep, NULL);
	n.dirfd = open(o->pods_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (n.dirfd < 0) {
		log_error("--pods-dir %s: %s", o->pods_dir, strerror(errno));
		goto out;
	}
	n.self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (n.self_ns < 0 || fstat(n.self_ns, &st)) {
		log_error("/proc/self/ns/net: %s", strerror(errno));
		goto out;
	}
	n.self_ns_ino = st.st_ino;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	n.sigfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
	n.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	n.tick = loop_timer_new();
	if (n.sigfd < 0 || n.ino < 0 || n.tick < 0) {
		log_error("signalfd/inotify/timerfd: %s", strerror(errno));
		goto out;
	}
	n.pods_wd = inotify_add_watch(n.ino, o->pods_dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
	if (n.pods_wd < 0) {
		log_error("inotify on %s: %s", o->pods_dir, strerror(errno));
		goto out;
	}
	if ((r = loop_add(n.loop, n.sigfd, LOOP_READABLE, on_signal, &n)) ||
	    (r = loop_add(n.loop, n.ino, LOOP_READABLE, on_inotify, &n)) ||
	    (r = loop_add(n.loop, n.tick, LOOP_READABLE, on_tick, &n))) {
		log_error("event loop: %s", strerror(-r));
		goto out;
	}
	if (o->metrics_addr && (r = metrics_listen(&n))) {
		status = r == -EINVAL ? 2 : 1;
		goto out;
	}
	log_info("watching %s/<pod UID>/%s (rescan every %u ms)", o->pods_dir, NODE_SOCK_REL,
		 o->rescan_ms);
	rescan(&n);
	n.scanned = 1;
	loop_timer_arm(n.tick, loop_clock_ms() + TICK_MS);
	r = loop_run(n.loop);
	status = r < 0 ? 1 : 0;
	if (r < 0)
		log_error("event loop: %s", strerror(-r));
out:
	while (n.npods)
		pod_remove(&n, n.npods - 1);
	if (n.scanned) /* the loop ran */
		log_info("stopped (%llu ARP replies, %llu neighbour advertisements, all pods); the "
			 "pods' plumbing left in place",
			 (unsigned long long)n.ctr.arp_replies, (unsigned long long)n.ctr.ndp_replies);
	log_flush();
	if (n.sigfd >= 0)
		close(n.sigfd);
	if (n.ino >= 0)
		close(n.ino);
	if (n.tick >= 0)
		close(n.tick);
	if (n.dirfd >= 0)
		close(n.dirfd);
	if (n.self_ns >= 0)
		close(n.self_ns);
	free(n.evbuf);
	free(n.nftbuf);
	free(n.links);
	http_server_free(n.http);
	free(n.mbuf);
	if (n.loop)
		loop_free(n.loop);
	return status;
}
