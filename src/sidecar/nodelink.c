#include "nodelink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "diag.h"
#include "log.h"
#include "nodemsg.h"
#include "plan.h"
#include "run.h"

#define MISSING_FIRST_MS 10000u /* the first "no agent yet" line */
#define MISSING_EVERY_MS 30000u
#define MSGS_PER_WAKE 8

struct link {
	struct loop *loop;
	struct http_server *http;
	const struct imds_config *cfg;
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char guard[sizeof(((struct sockaddr_un *)0)->sun_path) + 16];
	int lfd, conn, tfd;
	int lis[NODEMSG_FDS_MAX];
	unsigned nlis;
	int draining, guarded;
	uint64_t start_ms, generation;
	char told[NODEMSG_REASON_MAX + 1]; /* the agent's last "serving" */
};

/* ---- shared by run and await --------------------------------------------- */

static void guard_path(const char *sock, char *out, size_t cap)
{
	const char *slash = strrchr(sock, '/');
	if (!slash)
		snprintf(out, cap, "%s", NODELINK_GUARD_FILE);
	else
		snprintf(out, cap, "%.*s/%s", (int)(slash - sock), sock, NODELINK_GUARD_FILE);
}

static int sock_bind(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd;

	/* The path and its temporary name (below) must both fit. */
	if (strlen(path) + sizeof(".new") > sizeof(sa.sun_path)) {
		snprintf(err, errlen, "IMDS_AGENT_SOCKET: '%.60s...' is longer than a socket path (%zu, "
			 "less 4 for its temporary name)",
			 path, sizeof(sa.sun_path) - 1);
		return -EINVAL;
	}
	/* What an earlier sidecar (or `await`) left: a socket only. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "IMDS_AGENT_SOCKET %s exists and is not a socket", path);
			return -EEXIST;
		}
		unlink(path);
	}
	/* Bound and listening under a name of its own, then renamed: the
	 * agent, woken by the socket's creation, never finds one that does
	 * not listen yet (its connect refused, it would wait its back-off). */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.new", path);
	unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4) ||
	    rename(sa.sun_path, path)) {
		int e = errno;
		snprintf(err, errlen, "IMDS_AGENT_SOCKET %s: %s", path, strerror(e));
		if (fd >= 0) {
			unlink(sa.sun_path);
			close(fd);
		}
		return -e;
	}
	return fd;
}

/* Only the node's root, the agent, may talk to us: a listener from anyone
 * else would let it choose what the guest reaches. */
static int peer_is_root(int fd)
{
	struct ucred c;
	socklen_t cl = sizeof(c);
	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &cl) && c.uid == 0;
}

static int send_config(int fd, const struct imds_config *cfg, const int *lis, unsigned nlis)
{
	struct nodemsg m = {.type = NODEMSG_CONFIG};
	char buf[NODEMSG_MAX];
	struct sockaddr_storage ss;
	socklen_t sl;
	const char *ifs = getenv("IMDS_INTERFACES");
	int n;

	snprintf(m.ns, sizeof(m.ns), "%s", cfg->ns ? cfg->ns : "");
	snprintf(m.name, sizeof(m.name), "%s", cfg->vm_name ? cfg->vm_name : "");
	m.port = 80;
	if (cfg->listen_addr && addr_parse(cfg->listen_addr, &ss, &sl) == 0 && ss.ss_family == AF_INET)
		m.port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	m.hops = cfg->hop_limit;
	if (cfg->bridge_name && cfg->bridge_name[0]) {
		m.have_bridge = 1;
		snprintf(m.bridge, sizeof(m.bridge), "%s", cfg->bridge_name);
	}
	/* The variable as the webhook wrote it: the agent reads it with the
	 * same reader this process did. */
	if (cfg->have_ifaces && ifs) {
		m.have_ifaces = 1;
		snprintf(m.ifaces, sizeof(m.ifaces), "%s", ifs);
	}
	/* What we serve on already: an agent that restarted keeps it. */
	if (nlis) {
		int ifi = 0;
		socklen_t il = sizeof(ifi);
		if (!getsockopt(lis[0], SOL_SOCKET, SO_BINDTOIFINDEX, &ifi, &il) && ifi > 0) {
			m.have_serving = 1;
			m.serving_if = (unsigned)ifi;
			m.serving_n = nlis;
		}
	}
	n = nodemsg_encode(&m, buf, sizeof(buf));
	if (n < 0)
		return n;
	return send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n ? 0 : -errno;
}

static int write_guard(const char *path, uint64_t generation)
{
	char tmp[sizeof(((struct sockaddr_un *)0)->sun_path) + 32], line[96];
	int fd, n, ok;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	n = snprintf(line, sizeof(line), "guard in place, generation %llu, pid %d\n",
		     (unsigned long long)generation, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	ok = write(fd, line, (size_t)n) == n;
	close(fd);
	if (!ok || rename(tmp, path)) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		return -e;
	}
	return 0;
}

/* One message and its descriptors: 0 (fds[*nfds]), -EAGAIN, -ECONNRESET at
 * the end, or -errno. */
static int recv_msg(int fd, struct nodemsg *m, int *fds, unsigned *nfds, char *err, size_t errlen)
{
	char buf[NODEMSG_MAX + 1];
	union {
		char b[CMSG_SPACE(sizeof(int) * (NODEMSG_FDS_MAX + 1))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
			    .msg_controllen = sizeof(cm.b)};
	ssize_t got = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	*nfds = 0;
	err[0] = '\0';
	if (got < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : errno ? -errno : -EIO;
	/* The kernel gathers every SCM_RIGHTS of a message into one header
	 * (net/core/scm.c scm_detach_fds), and we ask for no other kind. */
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*nfds < NODEMSG_FDS_MAX)
				fds[(*nfds)++] = f;
			else
				close(f);
		}
	}
	if (got == 0)
		return -ECONNRESET;
	if ((size_t)got > NODEMSG_MAX || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		snprintf(err, errlen, "a message or its descriptors cut short");
		return -EMSGSIZE;
	}
	return nodemsg_decode(buf, (size_t)got, m, err, errlen);
}

static void close_fds(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

/* A listening TCP socket of ours (the agent's set may not contain anything
 * else) */
static int is_tcp_listener(int fd)
{
	int v, t;
	socklen_t l = sizeof(v), tl = sizeof(t);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) || !v)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &tl) || t != SOCK_STREAM)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) || (v != AF_INET && v != AF_INET6))
		return 0;
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

/* ---- run ----------------------------------------------------------------- */

/* "HEAD (since TIME[, TAIL])" */
static void status_agent(enum diag_agent_key key, const char *head, const char *tail)
{
	char v[256], at[32];
	diag_now_stamp(at);
	snprintf(v, sizeof(v), "%s (since %s%s%s)", head, at, tail ? ", " : "", tail ? tail : "");
	diag_status_agent(key, v);
}

/* The state diag shows: serving once the agent passed listeners and said
 * it serves a tap (or passt); what it serves in the agent's words. */
static void status_serving(const struct link *k)
{
	int serving = k->nlis && k->told[0] && strncmp(k->told, "nothing", 7) != 0;
	diag_status_set(serving ? "serving" : "waiting",
			k->told[0] ? k->told : "nothing yet: the node agent has not said");
}

/* "169.254.169.254:80, [fd00:ec2::254]:80 on veth-imds (generation 2)" */
static void status_listen(const struct link *k, uint64_t generation)
{
	char v[256], a[80], dev[IF_NAMESIZE] = "?";
	size_t at = 0;
	int ifi = 0;
	socklen_t il = sizeof(ifi);

	v[0] = '\0';
	for (unsigned i = 0; i < k->nlis && at < sizeof(v); i++) {
		int n = snprintf(v + at, sizeof(v) - at, "%s%s", i ? ", " : "",
				 addr_local(k->lis[i], a, sizeof(a)));
		if (n > 0)
			at += (size_t)n;
	}
	if (k->nlis && !getsockopt(k->lis[0], SOL_SOCKET, SO_BINDTOIFINDEX, &ifi, &il) && ifi > 0 &&
	    !if_indextoname((unsigned)ifi, dev))
		snprintf(dev, sizeof(dev), "#%d", ifi);
	if (at < sizeof(v))
		snprintf(v + at, sizeof(v) - at, "%s%s (generation %llu)", k->nlis ? " on " : "none",
			 k->nlis ? dev : "", (unsigned long long)generation);
	diag_status_agent(DIAG_LISTEN, v);
}

static int listeners_gone(struct link *k)
{
	for (unsigned i = 0; i < k->nlis; i++)
		if (!loop_mask(k->loop, k->lis[i]))
			return 1;
	return 0;
}

static void take_listeners(struct link *k, const struct nodemsg *m, int *fds, unsigned nfds)
{
	char where[80];
	int ret;

	if (k->draining || listeners_gone(k)) {
		k->draining = 1;
		close_fds(fds, nfds);
		return;
	}
	if (nfds != m->nfds) {
		log_error("net: the node agent's listeners: %u descriptor(s) for a count of %u: ignored",
			  nfds, m->nfds);
		close_fds(fds, nfds);
		return;
	}
	for (unsigned i = 0; i < nfds; i++) {
		if (!is_tcp_listener(fds[i])) {
			log_error("net: the node agent passed a descriptor that is no listening TCP "
				  "socket: the set ignored");
			close_fds(fds, nfds);
			return;
		}
	}
	for (unsigned i = 0; i < k->nlis; i++)
		http_server_close_listener(k->http, k->lis[i]);
	k->nlis = 0;
	for (unsigned i = 0; i < nfds; i++) {
		if ((ret = http_server_listen_fd(k->http, fds[i]))) {
			log_error("net: listener from the node agent: %s", strerror(-ret));
			close(fds[i]);
			continue;
		}
		k->lis[k->nlis++] = fds[i];
	}
	where[0] = '\0';
	if (k->nlis)
		addr_local(k->lis[0], where, sizeof(where));
	log_info("net: serving %s%s on %u listener(s) from the node agent (generation %llu), hop "
		 "limit %u",
		 where, k->nlis > 1 ? " and IPv6" : "", k->nlis, (unsigned long long)m->generation,
		 k->cfg->hop_limit);
	log_info("net: ready %llu ms after start",
		 (unsigned long long)(loop_clock_ms() - k->start_ms));
	status_listen(k, m->generation);
	status_serving(k);
}

static void drop_conn(struct link *k, const char *why)
{
	if (k->conn < 0)
		return;
	loop_del(k->loop, k->conn, LOOP_READABLE);
	close(k->conn);
	k->conn = -1;
	log_info("net: %s; %s", why,
		 k->nlis ? "serving on the listeners it gave until it comes back"
			 : "waiting for it to come back");
	status_agent(DIAG_AGENT, "not connected", why);
}

static void on_agent(struct loop *l, int fd, void *data, int mask)
{
	struct link *k = data;
	(void)l;
	(void)mask;

	for (int i = 0; i < MSGS_PER_WAKE && k->conn == fd; i++) {
		struct nodemsg m = {0};
		int fds[NODEMSG_FDS_MAX];
		unsigned nfds;
		char err[200];
		int r = recv_msg(fd, &m, fds, &nfds, err, sizeof(err));
		if (r == -EAGAIN)
			return;
		if (r) {
			close_fds(fds, nfds);
			if (r == -ECONNRESET) {
				drop_conn(k, "the node agent closed its connection");
			} else {
				log_error("net: from the node agent: %s", err[0] ? err : strerror(-r));
				drop_conn(k, "the node agent's connection closed");
			}
			return;
		}
		switch (m.type) {
		case NODEMSG_GUARD:
			close_fds(fds, nfds);
			k->generation = m.generation;
			if ((r = write_guard(k->guard, m.generation)))
				log_error("net: recording the guard in %s: %s", k->guard, strerror(-r));
			if (!k->guarded)
				log_info("net: the node agent put the guard in place (generation %llu, "
					 "%llu ms after start)",
					 (unsigned long long)m.generation,
					 (unsigned long long)(loop_clock_ms() - k->start_ms));
			k->guarded = 1;
			{
				char g[48];
				snprintf(g, sizeof(g), "generation %llu", (unsigned long long)m.generation);
				status_agent(DIAG_GUARD, "in place", g);
			}
			break;
		case NODEMSG_LISTENERS:
			take_listeners(k, &m, fds, nfds);
			break;
		case NODEMSG_REFUSED:
			close_fds(fds, nfds);
			log_error("net: the node agent refused this pod: %s", m.reason);
			break;
		case NODEMSG_SERVING:
			close_fds(fds, nfds);
			snprintf(k->told, sizeof(k->told), "%s", m.reason);
			status_serving(k);
			break;
		default:
			close_fds(fds, nfds);
			log_error("net: the node agent sent a %s message: ignored",
				  nodemsg_type_name(m.type));
		}
	}
}

static void on_accept(struct loop *l, int fd, void *data, int mask)
{
	struct link *k = data;
	(void)mask;

	for (int i = 0; i < 4; i++) {
		int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		int r;
		if (c < 0)
			return;
		if (!peer_is_root(c)) {
			log_error("net: a connection on %s from a process that is not root: refused",
				  k->sock);
			close(c);
			continue;
		}
		if (k->conn >= 0)
			drop_conn(k, "the node agent connected again");
		if ((r = send_config(c, k->cfg, k->lis, k->nlis)) || (r = loop_add(l, c, LOOP_READABLE, on_agent, k))) {
			log_error("net: sending the configuration to the node agent: %s", strerror(-r));
			close(c);
			continue;
		}
		k->conn = c;
		log_info("net: the node agent connected");
		status_agent(DIAG_AGENT, "connected", NULL);
	}
}

static void on_missing(struct loop *l, int fd, void *data, int mask)
{
	struct link *k = data;
	(void)l;
	(void)mask;
	loop_timer_ack(fd);
	if (k->guarded)
		return;
	log_error("net: %llu s after start: %s", (unsigned long long)((loop_clock_ms() - k->start_ms) / 1000u),
		  NODELINK_MISSING);
	loop_timer_arm(fd, loop_clock_ms() + MISSING_EVERY_MS);
}

int nodelink_run(struct loop *l, struct http_server *http, const struct imds_config *cfg,
		 const char *sock_path)
{
	struct link k = {.loop = l, .http = http, .cfg = cfg, .lfd = -1, .conn = -1, .tfd = -1};
	char err[256];
	int ret, status = 1;

	k.start_ms = loop_clock_ms();
	snprintf(k.sock, sizeof(k.sock), "%s", sock_path);
	guard_path(sock_path, k.guard, sizeof(k.guard));
	/* The guard is said to this process, not to an earlier one. */
	if (unlink(k.guard) && errno != ENOENT) {
		log_error("net: %s: %s", k.guard, strerror(errno));
		return 1;
	}
	k.lfd = sock_bind(sock_path, err, sizeof(err));
	if (k.lfd < 0) {
		log_error("net: %s", err);
		return k.lfd == -EINVAL ? 2 : 1;
	}
	k.tfd = loop_timer_new();
	if (k.tfd < 0 || loop_add(l, k.lfd, LOOP_READABLE, on_accept, &k) ||
	    loop_add(l, k.tfd, LOOP_READABLE, on_missing, &k)) {
		log_error("net: event loop: %s", strerror(errno));
		goto out;
	}
	loop_timer_arm(k.tfd, k.start_ms + MISSING_FIRST_MS);
	diag_status_set("waiting", "nothing yet: waiting for the node agent (imds-node)");
	status_agent(DIAG_AGENT, "not connected yet", NULL);
	diag_status_agent(DIAG_GUARD, "not in place yet: the node agent has not said");
	diag_status_agent(DIAG_LISTEN, "none yet: the node agent has passed none");
	log_info("net: agent mode: no network change from this process; waiting for the node "
		 "agent on %s",
		 sock_path);
	{
		struct plan_cfg pc;
		if (plan_cfg_init(&pc, cfg, err, sizeof(err)) == 0)
			run_tell_interfaces(&pc);
	}
	ret = loop_run(l);
	log_flush();
	if (ret < 0)
		log_error("event loop: %s", strerror(-ret));
	status = ret < 0 ? 1 : 0;
	log_info("net: stopped; the guard and the plumbing stay in the pod");
out:
	if (k.conn >= 0) {
		loop_del(l, k.conn, LOOP_READABLE);
		close(k.conn);
	}
	if (k.tfd >= 0) {
		loop_del(l, k.tfd, LOOP_READABLE);
		close(k.tfd);
	}
	loop_del(l, k.lfd, LOOP_READABLE);
	close(k.lfd);
	unlink(k.sock);
	unlink(k.guard);
	return status;
}

/* ---- await and probe ----------------------------------------------------- */

static int wait_readable(int fd, uint64_t deadline_ms)
{
	for (;;) {
		uint64_t now = loop_clock_ms();
		if (now >= deadline_ms)
			return 0;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, (int)(deadline_ms - now));
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

int nodelink_await(const struct imds_config *cfg, const char *sock_path, unsigned timeout_s)
{
	char err[256], guard[sizeof(((struct sockaddr_un *)0)->sun_path) + 16];
	uint64_t deadline = loop_clock_ms() + (uint64_t)timeout_s * 1000u;
	int lfd, c = -1, status = 1;

	guard_path(sock_path, guard, sizeof(guard));
	unlink(guard);
	lfd = sock_bind(sock_path, err, sizeof(err));
	if (lfd < 0) {
		fprintf(stderr, "imds-server await: %s\n", err);
		return lfd == -EINVAL ? 2 : 1;
	}
	while (wait_readable(c >= 0 ? c : lfd, deadline) > 0) {
		if (c < 0) {
			c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (c >= 0 && (!peer_is_root(c) || send_config(c, cfg, NULL, 0))) {
				close(c);
				c = -1;
			}
			continue;
		}
		struct nodemsg m = {0};
		int fds[NODEMSG_FDS_MAX];
		unsigned nfds;
		int r = recv_msg(c, &m, fds, &nfds, err, sizeof(err));
		close_fds(fds, nfds);
		if (r == -EAGAIN)
			continue;
		if (r || m.type == NODEMSG_REFUSED) {
			/* the agent restarted, or refused: wait for the next */
			if (!r)
				fprintf(stderr, "imds-server await: the node agent refused this pod: %s\n",
					m.reason);
			close(c);
			c = -1;
			continue;
		}
		if (m.type == NODEMSG_GUARD) {
			write_guard(guard, m.generation);
			printf("imds-server await: guard in place (generation %llu)\n",
			       (unsigned long long)m.generation);
			status = 0;
			break;
		}
	}
	if (status)
		fprintf(stderr, "imds-server await: after %u s: %s\n", timeout_s, NODELINK_MISSING);
	if (c >= 0)
		close(c);
	close(lfd);
	unlink(sock_path);
	return status;
}

int nodelink_probe(const char *sock_path)
{
	char guard[sizeof(((struct sockaddr_un *)0)->sun_path) + 16], line[128];
	ssize_t n = -1;
	int fd;

	guard_path(sock_path, guard, sizeof(guard));
	/* O_NONBLOCK: a FIFO in its place (the folder is the pod's) is read as
	 * empty at once, where a blocking open would wait for a writer until
	 * the kubelet's probe timeout */
	fd = open(guard, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0) {
		n = read(fd, line, sizeof(line) - 1);
		close(fd);
	}
	if (n <= 0) {
		fprintf(stderr, "imds-server probe: %s\n", NODELINK_MISSING);
		return 1;
	}
	line[n] = '\0';
	printf("imds-server probe: %s", line);
	return 0;
}
