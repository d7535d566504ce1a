/* run: `imds-server run` and `init` — the network half of the sidecar.
 *
 * Everything is driven by one rtnetlink event socket in the process's one
 * loop: waiting for the bridge (no polling, no deadline), restoring the
 * plumbing when something removes it, learning the VM's MAC(s) from the
 * bridge FDB.  On any relevant event the whole state is reconciled: dump,
 * compare, fix what is wrong (plumb_ensure), then make the sockets match
 * (ARP responders and HTTP listeners bound to the current ifindexes, and
 * the listeners' MAC guard).  A pass that finds everything right writes
 * nothing, so the events of our own writes settle after one more pass.
 *
 * Who may reach the server:
 *  - listeners are bound to the bridge (masquerade: the guest routes via
 *    10.0.2.1, the packet arrives on the bridge) and to veth-imds
 *    (link-local: the guest ARPs, we answer with veth-imds's MAC);
 *    anything arriving elsewhere (the pod's eth0) finds no listener;
 *  - while every port of the bridge but ours is a tap, whatever arrives
 *    on the bridge came from the VM, and the guard accepts all; once a
 *    foreign port is enslaved (bridge binding with eth0, a neighbour on a
 *    shared L2) the guard accepts only the VM's MACs: those the bridge
 *    learned on a tap port, and those of the network-status file.  A
 *    dropped SYN gets no answer at all;
 *  - the ARP responder answers requests whose sender the bridge has just
 *    learned on a tap port: FDB learning happens before the frame is
 *    delivered up to the bridge device, so one RTM_GETNEIGH for the
 *    frame's source MAC names the port it came in on, spoofing included
 *    (a spoofed MAC moves the entry to the spoofer's port). */
#include "run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/neighbour.h>

#include "addr.h"
#include "arp.h"
#include "http.h"
#include "log.h"
#include "nl.h"
#include "plumb.h"

#define WAIT_LOG_MS 30000u     /* "still waiting" line while no bridge */
#define RETRY_MIN_MS 100u      /* after a failed pass; doubles up to max */
#define RETRY_MAX_MS 10000u
#define EV_BUF (64u << 10)     /* one event datagram */
#define NETSTATUS_MAX (1u << 20)
#define ARP_BATCH 64           /* frames per wake-up: fair to the HTTP side */

struct run {
	struct loop *loop;
	struct http_server *http;
	const char *bridge_name;   /* NULL: first k6t-* */
	const char *netstatus;     /* NULL: none */
	uint8_t ip[4];
	uint16_t port;
	unsigned hops;             /* IMDS_HOP_LIMIT */

	struct nl_sock req, ev;
	int wait_tfd, retry_tfd;
	uint8_t *evbuf;
	struct nl_link *links;
	size_t nlinks;

	struct plumb_state ps;
	int waiting;
	int serving;               /* plumbed and listening on ps.bridge */
	int draining;              /* the HTTP server closed our listeners */
	int need_fdb;              /* dump the FDB on the next pass */
	uint64_t wait_since_ms, bridge_seen_ms;
	unsigned retry_ms;

	int arp_br, arp_br_if;     /* broadcast requests, on the bridge */
	int arp_veth, arp_veth_if; /* unicast re-validations, on veth-imds */
	int lis_br, lis_br_if;
	int lis_veth, lis_veth_if;

	struct arp_macset learned, configured;
	int learned_full;
	struct arp_macset guard_allow;
	int guard_open, guard_set;

	unsigned long long arp_answered, arp_refused;
};

static void reconcile(struct run *r);

/* ---- helpers ------------------------------------------------------------- */

static void fmt_mac(const uint8_t m[6], char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static void close_fd(struct run *r, int *fd)
{
	if (*fd >= 0) {
		loop_del(r->loop, *fd, LOOP_READABLE);
		close(*fd);
	}
	*fd = -1;
}

static void arm_retry(struct run *r)
{
	r->retry_ms = r->retry_ms ? r->retry_ms * 2 : RETRY_MIN_MS;
	if (r->retry_ms > RETRY_MAX_MS)
		r->retry_ms = RETRY_MAX_MS;
	loop_timer_arm(r->retry_tfd, loop_clock_ms() + r->retry_ms);
}

/* The network-status file is optional and may appear late (downward API):
 * absent means no configured MACs, not an error. */
static void read_netstatus(struct run *r)
{
	struct arp_macset s = {0};
	char *buf = NULL;
	ssize_t n;
	int fd;

	if (!r->netstatus)
		return;
	fd = open(r->netstatus, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	buf = malloc(NETSTATUS_MAX);
	if (!buf)
		goto out;
	n = read(fd, buf, NETSTATUS_MAX);
	if (n > 0 && arp_scan_macs(buf, (size_t)n, &s) == -ENOSPC)
		log_error("net: %s: more than %d MACs, using the first", r->netstatus,
			  ARP_MACSET_MAX);
out:
	if (!arp_macset_eq(&s, &r->configured)) {
		log_info("net: %u VM MAC(s) from %s", s.n, r->netstatus);
		r->configured = s;
	}
	free(buf);
	if (fd >= 0)
		close(fd);
}

static void learn(struct run *r, const uint8_t mac[6], const char *how)
{
	char m[18];
	int ret = arp_macset_add(&r->learned, mac);
	if (ret <= 0) {
		/* Only a VM sending from many MACs fills it; say so once. */
		if (ret == -ENOSPC && !r->learned_full) {
			fmt_mac(mac, m);
			log_error("net: VM MAC table full (%d), %s and later ones not added",
				  ARP_MACSET_MAX, m);
			r->learned_full = 1;
		}
		return;
	}
	fmt_mac(mac, m);
	log_info("net: VM MAC %s (%s)", m, how);
}

static void fdb_learn(struct run *r, const struct nl_neigh *nb)
{
	if (nb->family != AF_BRIDGE || !nb->has_lladdr || nb->master != r->ps.bridge ||
	    (nb->state & (NUD_PERMANENT | NUD_NOARP)) || !plumb_is_tap_port(&r->ps, nb->ifindex) ||
	    !arp_mac_is_unicast(nb->lladdr))
		return;
	learn(r, nb->lladdr, "bridge FDB");
}

static int fdb_cb(const struct nl_msgview *m, void *ud)
{
	struct nl_neigh nb;
	if (!nl_parse_neigh(m, &nb))
		fdb_learn(ud, &nb);
	return 0;
}

/* The MACs the bridge already learned on tap ports (a VM that was up
 * before this sidecar started). */
static void dump_fdb(struct run *r)
{
	char err[256];
	if (nl_dump_all(&r->req, RTM_GETNEIGH, AF_BRIDGE, fdb_cb, r, err, sizeof(err)))
		log_error("net: %s", err);
	r->need_fdb = 0;
}

/* ---- the guard and the listeners ----------------------------------------- */

static void guard_wanted(const struct run *r, struct arp_macset *allow, int *open)
{
	*allow = r->configured;
	for (unsigned i = 0; i < r->learned.n; i++)
		if (arp_macset_add(allow, r->learned.mac[i]) == -ENOSPC)
			break;
	*open = r->ps.nforeign == 0;
}

/* Our listener fds are owned by the HTTP server; when it drains it closes
 * them and unregisters them from the loop.  A listener that is gone from
 * the loop means: shutting down, touch nothing more. */
static int listener_gone(struct run *r, int fd)
{
	if (fd >= 0 && !loop_mask(r->loop, fd)) {
		r->draining = 1;
		return 1;
	}
	return 0;
}

static void update_guard(struct run *r)
{
	struct arp_macset allow;
	int open, ret;

	guard_wanted(r, &allow, &open);
	if (r->guard_set && open == r->guard_open &&
	    (open || arp_macset_eq(&allow, &r->guard_allow)))
		return;
	if (listener_gone(r, r->lis_br) || listener_gone(r, r->lis_veth))
		return;
	int fds[2] = {r->lis_br, r->lis_veth};
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 0)
			continue;
		if ((ret = arp_guard_attach(fds[i], &allow, open)))
			log_error("net: guard filter: %s", strerror(-ret));
	}
	if (!r->guard_set || open != r->guard_open)
		log_info("net: listener guard: %s", open ? "bridge has only tap ports, all accepted"
							 : "foreign bridge port, VM MACs only");
	r->guard_allow = allow;
	r->guard_open = open;
	r->guard_set = 1;
}

static int ensure_listener(struct run *r, int *fd, int *bound_if, int want_if, const char *dev)
{
	struct arp_macset allow;
	char err[256];
	int open, nfd, ret;

	if (listener_gone(r, *fd))
		return -ESHUTDOWN;
	if (*fd >= 0 && *bound_if == want_if)
		return 0;
	if (*fd >= 0)
		http_server_close_listener(r->http, *fd);
	*fd = -1;
	*bound_if = 0;
	if (!want_if)
		return 0;
	guard_wanted(r, &allow, &open);
	nfd = plumb_listener_open(want_if, r->ip, r->port, r->hops, &allow, open, err, sizeof(err));
	if (nfd < 0) {
		log_error("net: %s", err);
		return nfd;
	}
	if ((ret = http_server_listen_fd(r->http, nfd))) {
		log_error("net: listener on %s: %s", dev, strerror(-ret));
		close(nfd);
		return ret;
	}
	*fd = nfd;
	*bound_if = want_if;
	return 0;
}

/* ---- ARP ----------------------------------------------------------------- */

/* A port we have not classified yet (enslaved a moment ago, its event not
 * read yet): look again before deciding, or the VM's first ARP could be
 * ignored and cost it a one-second retransmit. */
static void refresh_ports(struct run *r)
{
	char err[256];
	size_t n;
	if (nl_get_links(&r->req, r->links, PLUMB_MAX_LINKS, &n, err, sizeof(err)) == 0) {
		r->nlinks = n;
		plumb_classify_ports(&r->ps, r->links, n);
		update_guard(r);
	}
}

static int is_port(const struct run *r, int ifindex)
{
	for (size_t i = 0; i < r->nlinks; i++)
		if (r->links[i].ifindex == ifindex)
			return r->links[i].master == r->ps.bridge;
	return 0;
}

/* Is the sender of this frame the VM?  Asks the bridge which port it
 * learned the source MAC on. */
static int from_vm(struct run *r, const uint8_t mac[6])
{
	struct nl_neigh nb = {0}; /* filled by nl_fdb_get */
	char err[256];

	if (!r->ps.bridge || nl_fdb_get(&r->req, r->ps.bridge, mac, &nb, err, sizeof(err)))
		return 0;
	if (nb.ifindex == r->ps.peer || nb.ifindex == r->ps.bridge)
		return 0; /* the pod's own stack */
	if (!plumb_is_tap_port(&r->ps, nb.ifindex) && !is_port(r, nb.ifindex))
		refresh_ports(r);
	return plumb_is_tap_port(&r->ps, nb.ifindex);
}

static void on_arp(struct loop *l, int fd, void *data, int mask)
{
	struct run *r = data;
	(void)l;
	(void)mask;

	for (int i = 0; i < ARP_BATCH; i++) {
		uint8_t frame[64], reply[ARP_FRAME_LEN];
		struct arp_pkt p;
		size_t len, rlen;
		int ifi, pkttype, ret;

		ret = arp_socket_recv(fd, frame, sizeof(frame), &len, &ifi, &pkttype);
		if (ret == -EAGAIN || ret == -ENETDOWN)
			break; /* ENETDOWN: the device went down; reconcile follows */
		if (ret) {
			log_error("net: arp receive: %s", strerror(-ret));
			break;
		}
		if (pkttype == PACKET_OUTGOING || arp_parse(frame, len, &p) ||
		    arp_classify(&p, plumb_imds_ip) != ARP_ANSWER)
			continue;
		if (!from_vm(r, p.eth_src)) {
			r->arp_refused++;
			continue;
		}
		learn(r, p.eth_src, "ARP from a tap port");
		update_guard(r);
		rlen = arp_build_reply(&p, r->ps.veth_mac, plumb_imds_ip, reply, sizeof(reply));
		/* Out through veth-imds: the bridge then learns veth-imds's MAC
		 * on its port, so the guest's unicast frames are not flooded. */
		if (r->arp_veth >= 0)
			ret = arp_socket_send(r->arp_veth, r->arp_veth_if, reply, rlen);
		else
			ret = arp_socket_send(r->arp_br, r->arp_br_if, reply, rlen);
		if (ret)
			log_error("net: arp reply: %s", strerror(-ret));
		else
			r->arp_answered++;
	}
}

static int ensure_arp(struct run *r, int *fd, int *bound_if, int want_if, int on_bridge)
{
	char err[256];
	int nfd, ret;

	if (*fd >= 0 && *bound_if == want_if)
		return 0;
	close_fd(r, fd);
	*bound_if = 0;
	if (!want_if)
		return 0;
	nfd = arp_socket_open(want_if, plumb_imds_ip, !on_bridge, err, sizeof(err));
	if (nfd < 0) {
		log_error("net: %s", err);
		return nfd;
	}
	if ((ret = loop_add(r->loop, nfd, LOOP_READABLE, on_arp, r))) {
		close(nfd);
		log_error("net: arp socket: %s", strerror(-ret));
		return ret;
	}
	*fd = nfd;
	*bound_if = want_if;
	return 0;
}

/* ---- reconcile ----------------------------------------------------------- */

static void stop_bridge_side(struct run *r)
{
	close_fd(r, &r->arp_br);
	r->arp_br_if = 0;
	if (!listener_gone(r, r->lis_br) && r->lis_br >= 0)
		http_server_close_listener(r->http, r->lis_br);
	r->lis_br = -1;
	r->lis_br_if = 0;
}

static void start_waiting(struct run *r)
{
	if (r->waiting)
		return;
	r->waiting = 1;
	r->serving = 0;
	r->wait_since_ms = loop_clock_ms();
	log_info("net: waiting for bridge %s", r->bridge_name ? r->bridge_name : "k6t-*");
	loop_timer_arm(r->wait_tfd, r->wait_since_ms + WAIT_LOG_MS);
}

static void reconcile(struct run *r)
{
	char err[512];
	unsigned changes = 0;
	size_t n;
	int bi, ret, had_bridge = r->ps.bridge;

	/* Check before this pass opens any socket: a closed listener's fd
	 * number may be handed out again. */
	if (r->draining || listener_gone(r, r->lis_br) || listener_gone(r, r->lis_veth))
		return;
	ret = nl_get_links(&r->req, r->links, PLUMB_MAX_LINKS, &n, err, sizeof(err));
	if (ret) {
		log_error("net: %s", err);
		arm_retry(r);
		return;
	}
	r->nlinks = n;
	bi = plumb_pick_bridge(r->links, n, r->bridge_name);
	if (bi < 0) {
		if (had_bridge)
			log_info("net: bridge %s is gone", r->ps.bridge_name);
		stop_bridge_side(r);
		r->ps.bridge = 0;
		start_waiting(r);
		return;
	}
	if (r->waiting) {
		r->waiting = 0;
		r->bridge_seen_ms = loop_clock_ms();
		loop_timer_arm(r->wait_tfd, 0);
		log_info("net: bridge %s is here (waited %llu ms)", r->links[bi].name,
			 (unsigned long long)(r->bridge_seen_ms - r->wait_since_ms));
	}
	if (had_bridge != r->links[bi].ifindex) {
		r->need_fdb = 1;
		r->serving = 0;
	}
	/* The ARP socket first: a guest's request that arrives while the
	 * plumbing is being made then waits in its queue, instead of being
	 * missed and retried by the guest a second later. */
	ensure_arp(r, &r->arp_br, &r->arp_br_if, r->links[bi].ifindex, 1);
	ret = plumb_ensure(&r->req, &r->ps, r->links, n, bi, &changes, err, sizeof(err));
	if (ret) {
		log_error("net: plumbing %s: %s", r->links[bi].name, err);
		arm_retry(r);
		return;
	}
	if (changes) {
		/* Our writes changed ifindexes, masters, flags: look again. */
		ret = nl_get_links(&r->req, r->links, PLUMB_MAX_LINKS, &n, err, sizeof(err));
		if (ret) {
			log_error("net: %s", err);
			arm_retry(r);
			return;
		}
		r->nlinks = n;
	}
	plumb_classify_ports(&r->ps, r->links, r->nlinks);
	read_netstatus(r);
	if (r->need_fdb)
		dump_fdb(r);

	ret = 0;
	if (ensure_arp(r, &r->arp_br, &r->arp_br_if, r->ps.bridge, 1) ||
	    ensure_arp(r, &r->arp_veth, &r->arp_veth_if, r->ps.veth, 0))
		ret = -1;
	if (ensure_listener(r, &r->lis_br, &r->lis_br_if, r->ps.bridge, r->ps.bridge_name) ||
	    ensure_listener(r, &r->lis_veth, &r->lis_veth_if, r->ps.veth, PLUMB_VETH))
		ret = -1;
	if (r->draining)
		return;
	update_guard(r);
	if (ret) {
		arm_retry(r);
		return;
	}
	r->retry_ms = 0;
	if (!r->serving) {
		char m[18];
		fmt_mac(r->ps.veth_mac, m);
		log_info("net: serving %u.%u.%u.%u:%u on %s and %s (%s), %zu tap port(s), %zu "
			 "other port(s), hop limit %u",
			 r->ip[0], r->ip[1], r->ip[2], r->ip[3], r->port, r->ps.bridge_name,
			 PLUMB_VETH, m, r->ps.ntaps, r->ps.nforeign, r->hops);
		if (r->bridge_seen_ms)
			log_info("net: ready %llu ms after the bridge appeared",
				 (unsigned long long)(loop_clock_ms() - r->bridge_seen_ms));
		r->serving = 1;
	} else if (changes) {
		log_info("net: restored plumbing (%u change(s))", changes);
	}
}

/* ---- events -------------------------------------------------------------- */

static int bridge_name_match(const struct run *r, const char *name)
{
	if (r->bridge_name && r->bridge_name[0])
		return strcmp(name, r->bridge_name) == 0;
	return strncmp(name, "k6t-", 4) == 0;
}

/* Does this event concern the bridge, our plumbing, or the bridge's
 * ports?  Neighbour events feed the MAC learning directly. */
static int relevant(struct run *r, const struct nl_msgview *m)
{
	const struct plumb_state *ps = &r->ps;
	struct nl_link lk;
	struct nl_addr a;
	struct nl_route rt;
	struct nl_rule ru;
	struct nl_neigh nb;

	switch (m->type) {
	case RTM_NEWLINK:
	case RTM_DELLINK:
		if (nl_parse_link(m, &lk))
			return 1; /* cannot tell: look */
		return bridge_name_match(r, lk.name) || strcmp(lk.name, PLUMB_VETH) == 0 ||
		       strcmp(lk.name, PLUMB_PEER) == 0 ||
		       (ps->bridge && (lk.ifindex == ps->bridge || lk.master == ps->bridge)) ||
		       (ps->veth && lk.ifindex == ps->veth) || (ps->peer && lk.ifindex == ps->peer) ||
		       plumb_is_tap_port(ps, lk.ifindex);
	case RTM_NEWADDR:
	case RTM_DELADDR:
		return !nl_parse_addr(m, &a) && ps->veth && a.ifindex == ps->veth;
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		return !nl_parse_route(m, &rt) && rt.table == PLUMB_TABLE;
	case RTM_NEWRULE:
	case RTM_DELRULE:
		return !nl_parse_rule(m, &ru) && ru.table == PLUMB_TABLE;
	case RTM_NEWNEIGH:
		if (!nl_parse_neigh(m, &nb))
			fdb_learn(r, &nb);
		return 0;
	default:
		return 0;
	}
}

static void on_event(struct loop *l, int fd, void *data, int mask)
{
	struct run *r = data;
	int need = 0;
	(void)l;
	(void)fd;
	(void)mask;

	for (int i = 0; i < 256; i++) {
		struct nl_msgview m;
		size_t len, off = 0;
		int ret = nl_recv_events(&r->ev, r->evbuf, EV_BUF, &len);
		if (ret == -EAGAIN)
			break;
		if (ret == -ENOBUFS) {
			/* Events were lost: trust nothing, look at everything. */
			need = 1;
			r->need_fdb = 1;
			continue;
		}
		if (ret) {
			log_error("net: netlink events: %s", strerror(-ret));
			need = 1;
			break;
		}
		while (nl_next(r->evbuf, len, &off, &m) > 0)
			if (relevant(r, &m))
				need = 1;
	}
	if (need)
		reconcile(r);
	else if (!r->draining && r->serving)
		update_guard(r);
}

static void on_wait_timer(struct loop *l, int fd, void *data, int mask)
{
	struct run *r = data;
	(void)l;
	(void)mask;
	loop_timer_ack(fd);
	if (!r->waiting)
		return;
	log_info("net: still waiting for bridge %s (%llu s)",
		 r->bridge_name ? r->bridge_name : "k6t-*",
		 (unsigned long long)((loop_clock_ms() - r->wait_since_ms) / 1000u));
	loop_timer_arm(fd, loop_clock_ms() + WAIT_LOG_MS);
}

static void on_retry_timer(struct loop *l, int fd, void *data, int mask)
{
	(void)l;
	(void)mask;
	loop_timer_ack(fd);
	reconcile(data);
}

/* ---- entry points -------------------------------------------------------- */

static int listen_ip(const char *addr, uint8_t ip[4], uint16_t *port, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;

	if (addr_parse(addr, &ss, &sl) < 0)
		goto bad;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
		memcpy(ip, &s4->sin_addr, 4);
		*port = ntohs(s4->sin_port);
		return 0;
	}
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
		/* ":PORT": any address, still bound to the two devices. */
		if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr)) {
			memset(ip, 0, 4);
			*port = ntohs(s6->sin6_port);
			return 0;
		}
	}
bad:
	snprintf(err, errlen, "IMDS_LISTEN_ADDR '%s': run needs an IPv4 address and port", addr);
	return -EINVAL;
}

static void run_free(struct run *r)
{
	if (!r)
		return;
	close_fd(r, &r->arp_br);
	close_fd(r, &r->arp_veth);
	close_fd(r, &r->wait_tfd);
	close_fd(r, &r->retry_tfd);
	if (r->ev.fd >= 0)
		loop_del(r->loop, r->ev.fd, LOOP_READABLE);
	nl_close(&r->ev);
	nl_close(&r->req);
	/* Listeners belong to the HTTP server; the plumbing stays (a
	 * restarted sidecar reuses it, and the bridge is never ours). */
	free(r->evbuf);
	free(r->links);
	free(r);
}

static struct run *run_new(struct loop *l, struct http_server *http,
			   const struct imds_config *cfg, char *err, size_t errlen)
{
	static const unsigned groups[] = {RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV4_ROUTE,
					  RTNLGRP_IPV4_RULE, RTNLGRP_NEIGH};
	struct run *r = calloc(1, sizeof(*r));
	int ret;

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->loop = l;
	r->http = http;
	r->hops = cfg->hop_limit;
	r->bridge_name = cfg->bridge_name && cfg->bridge_name[0] ? cfg->bridge_name : NULL;
	r->netstatus = cfg->network_status_file && cfg->network_status_file[0]
			       ? cfg->network_status_file
			       : NULL;
	nl_sock_init(&r->req);
	nl_sock_init(&r->ev);
	r->wait_tfd = r->retry_tfd = -1;
	r->arp_br = r->arp_veth = r->lis_br = r->lis_veth = -1;
	if (listen_ip(cfg->listen_addr ? cfg->listen_addr : IMDS_DEFAULT_LISTEN, r->ip, &r->port,
		      err, errlen))
		goto fail;
	r->evbuf = malloc(EV_BUF);
	r->links = calloc(PLUMB_MAX_LINKS, sizeof(*r->links));
	if (!r->evbuf || !r->links) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* Subscribe before the first dump: a change between the two is then
	 * an event we will read, not a gap. */
	if (nl_open(&r->ev, groups, sizeof(groups) / sizeof(groups[0]), err, errlen) ||
	    nl_open(&r->req, NULL, 0, err, errlen))
		goto fail;
	r->wait_tfd = loop_timer_new();
	r->retry_tfd = loop_timer_new();
	if (r->wait_tfd < 0 || r->retry_tfd < 0) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		goto fail;
	}
	if ((ret = loop_add(l, r->ev.fd, LOOP_READABLE, on_event, r)) ||
	    (ret = loop_add(l, r->wait_tfd, LOOP_READABLE, on_wait_timer, r)) ||
	    (ret = loop_add(l, r->retry_tfd, LOOP_READABLE, on_retry_timer, r))) {
		snprintf(err, errlen, "event loop: %s", strerror(-ret));
		goto fail;
	}
	r->need_fdb = 1;
	return r;
fail:
	run_free(r);
	return NULL;
}

int run_main(struct loop *l, struct imds_app *app, const struct imds_config *cfg)
{
	char err[512];
	struct run *r = run_new(l, imds_app_http(app), cfg, err, sizeof(err));
	int ret;

	if (!r) {
		log_error("net: %s", err);
		return 1;
	}
	reconcile(r);
	ret = loop_run(l);
	log_flush();
	if (ret < 0)
		log_error("event loop: %s", strerror(-ret));
	log_info("net: stopped (%llu ARP replies, %llu requests refused); plumbing left in place",
		 r->arp_answered, r->arp_refused);
	run_free(r);
	return ret < 0 ? 1 : 0;
}

int init_main(const struct imds_config *cfg)
{
	struct plumb_state ps = {0};
	struct nl_link *links = calloc(PLUMB_MAX_LINKS, sizeof(*links));
	struct nl_sock s;
	char err[512];
	const char *want = cfg->bridge_name && cfg->bridge_name[0] ? cfg->bridge_name : NULL;
	unsigned changes = 0;
	size_t n;
	int bi, status = 1;

	nl_sock_init(&s);
	if (!links) {
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	if (nl_open(&s, NULL, 0, err, sizeof(err)) ||
	    nl_get_links(&s, links, PLUMB_MAX_LINKS, &n, err, sizeof(err)))
		goto out;
	bi = plumb_pick_bridge(links, n, want);
	if (bi < 0) {
		snprintf(err, sizeof(err), "no bridge %s in this network namespace",
			 want ? want : "k6t-*");
		goto out;
	}
	if (plumb_ensure(&s, &ps, links, n, bi, &changes, err, sizeof(err)))
		goto out;
	log_info("net: plumbing on %s is in place (%u change(s))", ps.bridge_name, changes);
	status = 0;
out:
	if (status)
		fprintf(stderr, "imds-server init: %s\n", err);
	nl_close(&s);
	free(links);
	return status;
}
