/* run: `imds-server run` and `init` — the network half of the sidecar.
 *
 * Everything is driven by two event sockets in the process's one loop:
 * rtnetlink (links, addresses, our rule and table) and nf_tables (someone
 * else touching our tables).  On any relevant event the whole state is
 * reconciled: dump, compare, fix what is wrong (plumb_ensure), program the
 * ruleset when what it must say changed (steer_build, one atomic
 * transaction), then make the sockets match (the ARP responder and the
 * HTTP listener on veth-imds).  A pass that finds everything right writes
 * nothing, so the events of our own writes settle after one more pass.
 *
 * What is served, and how (docs/sidecar.md, "Bindings"):
 *  - the VM's taps (masquerade, bridge, managedTap): named by the webhook
 *    (IMDS_INTERFACES), else every tap of a k6t-* bridge (or of
 *    IMDS_BRIDGE_NAME).  Their frames for 169.254.169.254 are steered to
 *    veth-imds (steer.h), so only the VM reaches the listener, and the
 *    listener's guard takes nothing that did not come in on veth-imds: no
 *    process of the pod, no other host;
 *  - passt: there is no tap; passt connects from the pod for its guest, and
 *    its connection comes over loopback to the same listener (a process of
 *    the pod reaches a listener bound to veth-imds: kubevirt-network.md E1).
 *    The guard then also takes loopback: every process of the pod can reach
 *    the service, which docs/sidecar.md explains;
 *  - SR-IOV, macvtap, unknown plugins: said once in the log, never waited
 *    for.
 * The fallback rules (steer.h) are programmed first, before any tap or
 * plumbing exists, and stay when the process exits. */
#include "run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "arp.h"
#include "http.h"
#include "log.h"
#include "nft.h"
#include "ndp.h"
#include "nl.h"
#include "plumb.h"
#include "steer.h"

#define WAIT_LOG_MS 30000u     /* "still waiting" line while no tap */
#define RETRY_MIN_MS 100u      /* after a failed pass; doubles up to max */
#define RETRY_MAX_MS 10000u
#define EV_BUF (64u << 10)     /* one event datagram */
#define NFT_BUF (64u << 10)    /* one transaction */
#define ARP_BATCH 64           /* frames per wake-up: fair to the HTTP side */
#define NEIGH_MAX 64           /* sources whose MAC we wrote as a neighbour */

struct run {
	struct loop *loop;
	struct http_server *http;
	const struct imds_config *cfg;
	const char *bridge_name;   /* NULL: any k6t-* */
	const struct ifaces *ifs;  /* NULL: not told (legacy discovery) */
	int passt;                 /* an interface is bound by passt */
	size_t nwanted;            /* taps the webhook named */
	uint8_t ip[4];
	uint16_t port;
	unsigned hops;
	uint8_t vmac[6];

	struct nl_sock req, ev, nft, nftev;
	int wait_tfd, retry_tfd;
	uint8_t *evbuf, *nftbuf;
	struct nl_link *links;
	size_t nlinks;

	struct plumb_state ps;
	struct steer_state want, have;
	int programmed;            /* have is what the kernel holds */
	int waiting;
	int serving;
	int draining;              /* the HTTP server closed our listener */
	uint64_t wait_since_ms, start_ms;
	unsigned retry_ms;

	int arp, arp_if, arp_v6;
	int lis, lis_if;
	int lis6[2], lis6_if;      /* fd00:ec2::254, fe80::a9fe:a9fe */
	int v6_said;               /* IPv6 off in the pod: logged */

	/* The answers leave veth-imds on-link to whatever source asked: the
	 * VM's address, an address the guest routes (hop limit > 1), the pod
	 * IP of bridge binding.  The guest's own ARP answer resolves its
	 * address; for the others, and for guests that ignore an ARP request
	 * from an off-subnet sender, the MAC a source's SYN came from is written
	 * as its neighbour entry (learned from the VM's frames only). */
	struct {
		uint8_t family, ip[16], mac[6];
	} neigh[NEIGH_MAX];
	size_t nneigh, neigh_next;
	int neigh_if;

	unsigned long long arp_answered, ndp_answered, neigh_written;
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

/* "tap0 (default, masquerade), tap2657… (br1, bridge)" for the log. */
static void describe_taps(const struct run *r, const struct steer_state *st, char *out, size_t cap)
{
	size_t at = 0;
	out[0] = '\0';
	for (size_t t = 0; t < st->ntaps && at < cap; t++) {
		const char *name = NULL, *kind = NULL;
		for (size_t i = 0; r->ifs && i < r->ifs->n; i++) {
			if (strcmp(r->ifs->e[i].tap, st->taps[t].name) == 0) {
				name = r->ifs->e[i].name;
				kind = ifaces_kind_name(r->ifs->e[i].kind);
			}
		}
		int k = name ? snprintf(out + at, cap - at, "%s%s (%s, %s)", t ? ", " : "",
					st->taps[t].name, name, kind)
			     : snprintf(out + at, cap - at, "%s%s", t ? ", " : "", st->taps[t].name);
		if (k < 0)
			break;
		at += (size_t)k;
	}
}

/* Our listener fd is owned by the HTTP server; when it drains it closes it
 * and unregisters it from the loop.  A listener gone from the loop means:
 * shutting down, touch nothing more. */
static int listener_gone(struct run *r, int fd)
{
	if (fd >= 0 && !loop_mask(r->loop, fd)) {
		r->draining = 1;
		return 1;
	}
	return 0;
}

static int ensure_listener(struct run *r, int want_if)
{
	char err[256];
	int nfd, ret;

	if (listener_gone(r, r->lis))
		return -ESHUTDOWN;
	if (r->lis >= 0 && r->lis_if == want_if)
		return 0;
	if (r->lis >= 0)
		http_server_close_listener(r->http, r->lis);
	r->lis = -1;
	r->lis_if = 0;
	if (!want_if)
		return 0;
	nfd = plumb_listener_open(want_if, r->ip, r->port, r->hops, r->passt, err, sizeof(err));
	if (nfd < 0) {
		log_error("net: %s", err);
		return nfd;
	}
	if ((ret = http_server_listen_fd(r->http, nfd))) {
		log_error("net: listener on %s: %s", PLUMB_VETH, strerror(-ret));
		close(nfd);
		return ret;
	}
	r->lis = nfd;
	r->lis_if = want_if;
	return 0;
}

/* The IPv6 listeners, on veth-imds when its IPv6 plumbing is in place
 * (want_if 0: none). */
static int ensure_listener6(struct run *r, int want_if)
{
	char err[256];
	int ret;

	for (int a = 0; a < 2; a++)
		if (listener_gone(r, r->lis6[a]))
			return -ESHUTDOWN;
	if (r->lis6_if == want_if && (!want_if || (r->lis6[0] >= 0 && r->lis6[1] >= 0)))
		return 0;
	for (int a = 0; a < 2; a++) {
		if (r->lis6[a] >= 0)
			http_server_close_listener(r->http, r->lis6[a]);
		r->lis6[a] = -1;
	}
	r->lis6_if = 0;
	if (!want_if)
		return 0;
	for (int a = 0; a < 2; a++) {
		int nfd = plumb_listener_open6(want_if, ndp_imds_addr[a], r->port, r->hops, r->passt, err,
					       sizeof(err));
		if (nfd < 0) {
			log_error("net: %s", err);
			return nfd;
		}
		if ((ret = http_server_listen_fd(r->http, nfd))) {
			log_error("net: IPv6 listener on %s: %s", PLUMB_VETH, strerror(-ret));
			close(nfd);
			return ret;
		}
		r->lis6[a] = nfd;
	}
	r->lis6_if = want_if;
	return 0;
}

/* ---- ARP ----------------------------------------------------------------- */

/* ip (of family) is at mac: make veth-imds's neighbour entry say so, once
 * per pair. */
static void learn(struct run *r, uint8_t family, const uint8_t *ip, const uint8_t mac[6])
{
	size_t alen = family == AF_INET6 ? 16 : 4;
	char err[256];
	size_t i;
	int ret;

	if (r->neigh_if != r->arp_if) {
		r->nneigh = r->neigh_next = 0; /* a new veth-imds: no entries */
		r->neigh_if = r->arp_if;
	}
	if (family == AF_INET && (ip[0] == 0 || memcmp(ip, r->ip, 4) == 0))
		return; /* a probe (0.0.0.0), an announcement */
	for (i = 0; i < r->nneigh; i++)
		if (r->neigh[i].family == family && memcmp(r->neigh[i].ip, ip, alen) == 0)
			break;
	if (i < r->nneigh && memcmp(r->neigh[i].mac, mac, 6) == 0)
		return;
	ret = family == AF_INET6 ? nl_neigh_set6(&r->req, r->arp_if, ip, mac, err, sizeof(err))
				 : nl_neigh_set4(&r->req, r->arp_if, ip, mac, err, sizeof(err));
	if (ret) {
		log_error("net: %s", err);
		return;
	}
	r->neigh_written++;
	if (i == r->nneigh) {
		if (r->nneigh < NEIGH_MAX)
			i = r->nneigh++;
		else
			i = r->neigh_next++ % NEIGH_MAX; /* the oldest goes */
	}
	r->neigh[i].family = family;
	memcpy(r->neigh[i].ip, ip, alen);
	memcpy(r->neigh[i].mac, mac, 6);
}

/* A neighbour solicitation for one of the service's IPv6 addresses: the
 * VM's (nothing else reaches veth-imds), answered from veth-imds's MAC. */
static void answer_ns(struct run *r, int fd, const uint8_t *frame, size_t len)
{
	uint8_t reply[NDP_NA_LEN];
	struct ndp_ns ns;
	size_t rlen;
	int ret;

	if (ndp_parse_ns(frame, len, &ns) || ndp_classify(&ns, ndp_imds_addr, 2) != NDP_ANSWER)
		return;
	static const uint8_t unspecified[16];
	if (memcmp(ns.src, unspecified, 16) != 0) /* not :: (DAD) */
		learn(r, AF_INET6, ns.src, ns.has_slla ? ns.slla : ns.eth_src);
	rlen = ndp_build_na(&ns, r->vmac, reply, sizeof(reply));
	ret = arp_socket_send(fd, r->arp_if, reply, rlen);
	if (ret)
		log_error("net: neighbour advertisement: %s", strerror(-ret));
	else
		r->ndp_answered++;
}

/* Every frame that reaches veth-imds was steered there from one of the VM's
 * taps: a request for the service address is the VM's, and is answered
 * with veth-imds's MAC, out of veth-imds, back to the taps; a SYN tells
 * which MAC to answer its source at. */
static void on_arp(struct loop *l, int fd, void *data, int mask)
{
	struct run *r = data;
	(void)l;
	(void)mask;

	for (int i = 0; i < ARP_BATCH; i++) {
		uint8_t frame[ARP_FRAME_MAX], reply[ARP_FRAME_LEN];
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
		if (pkttype == PACKET_OUTGOING)
			continue;
		{
			uint8_t mac[6], ip[16];
			if (arp_parse_syn(frame, len, mac, ip) == 0) {
				learn(r, AF_INET, ip, mac);
				continue;
			}
			if (ndp_parse_syn(frame, len, mac, ip) == 0) {
				learn(r, AF_INET6, ip, mac);
				continue;
			}
		}
		if (len > 13 && frame[12] == 0x86 && frame[13] == 0xdd) {
			answer_ns(r, fd, frame, len);
			continue;
		}
		if (arp_parse(frame, len, &p) || arp_classify(&p, r->ip) != ARP_ANSWER)
			continue;
		learn(r, AF_INET, p.spa, p.sha);
		rlen = arp_build_reply(&p, r->vmac, r->ip, reply, sizeof(reply));
		ret = arp_socket_send(fd, r->arp_if, reply, rlen);
		if (ret)
			log_error("net: arp reply: %s", strerror(-ret));
		else
			r->arp_answered++;
	}
}

static int ensure_arp(struct run *r, int want_if)
{
	char err[256];
	int nfd, ret;

	if (r->arp >= 0 && r->arp_if == want_if && r->arp_v6 == r->ps.v6)
		return 0;
	close_fd(r, &r->arp);
	r->arp_if = 0;
	if (!want_if)
		return 0;
	nfd = arp_socket_open(want_if, r->ip, r->port, r->ps.v6, err, sizeof(err));
	if (nfd < 0) {
		log_error("net: %s", err);
		return nfd;
	}
	if ((ret = loop_add(r->loop, nfd, LOOP_READABLE, on_arp, r))) {
		close(nfd);
		log_error("net: arp socket: %s", strerror(-ret));
		return ret;
	}
	r->arp = nfd;
	r->arp_if = want_if;
	r->arp_v6 = r->ps.v6;
	return 0;
}

/* ---- the ruleset --------------------------------------------------------- */

static int program(struct run *r, const struct steer_state *st, char *err, size_t errlen)
{
	struct nft_batch b;
	int ret;

	nft_batch_init(&b, r->nftbuf, NFT_BUF, 1);
	if ((ret = steer_build(st, &b)) || (ret = nft_batch_finish(&b))) {
		snprintf(err, errlen, "building the ruleset: %s", strerror(-ret));
		return ret;
	}
	return nft_commit(&r->nft, &b, err, errlen);
}

static int steer_eq(const struct steer_state *a, const struct steer_state *b)
{
	return a->veth == b->veth && a->peer == b->peer && a->local_ok == b->local_ok &&
	       !memcmp(a->vmac, b->vmac, 6) &&
	       !memcmp(a->ip, b->ip, 4) && a->ntaps == b->ntaps &&
	       !memcmp(a->taps, b->taps, a->ntaps * sizeof(a->taps[0])) &&
	       a->nlocal == b->nlocal && !memcmp(a->local, b->local, a->nlocal * 4);
}

/* Programs r->want unless the kernel already holds it.  0 or -errno. */
static int ensure_rules(struct run *r)
{
	char err[512], taps[256];
	int ret;

	if (r->programmed && steer_eq(&r->want, &r->have))
		return 0;
	ret = program(r, &r->want, err, sizeof(err));
	if (ret) {
		log_error("net: nf_tables: %s%s%s", strerror(-ret), err[0] ? ": " : "", err);
		r->programmed = 0;
		return ret;
	}
	describe_taps(r, &r->want, taps, sizeof(taps));
	if (!r->programmed || r->want.ntaps != r->have.ntaps || r->want.nlocal != r->have.nlocal ||
	    r->want.veth != r->have.veth)
		log_info("net: nf_tables table %s: %zu tap(s) steered%s%s, %zu pod address(es) "
			 "aliased",
			 STEER_TABLE, r->want.ntaps, r->want.ntaps ? ": " : "", taps, r->want.nlocal);
	r->have = r->want;
	r->programmed = 1;
	return 0;
}

/* ---- reconcile ----------------------------------------------------------- */

static void start_waiting(struct run *r)
{
	char names[256] = "";
	size_t at = 0;
	if (r->waiting)
		return;
	r->waiting = 1;
	r->wait_since_ms = loop_clock_ms();
	for (size_t i = 0; r->ifs && i < r->ifs->n && at < sizeof(names); i++) {
		if (!ifaces_kind_has_tap(r->ifs->e[i].kind))
			continue;
		int k = snprintf(names + at, sizeof(names) - at, "%s%s", at ? ", " : "",
				 r->ifs->e[i].tap);
		if (k > 0)
			at += (size_t)k;
	}
	if (r->ifs)
		log_info("net: waiting for the VM's tap(s): %s", names);
	else
		log_info("net: waiting for a VM tap on bridge %s", r->bridge_name ? r->bridge_name : "k6t-*");
	loop_timer_arm(r->wait_tfd, r->wait_since_ms + WAIT_LOG_MS);
}

static int relist(struct run *r, char *err, size_t errlen)
{
	size_t n;
	int ret = nl_get_links(&r->req, r->links, PLUMB_MAX_LINKS, &n, err, errlen);
	if (!ret)
		r->nlinks = n;
	return ret;
}

static void reconcile(struct run *r)
{
	char err[512], taps[256];
	unsigned changes = 0;
	uint32_t mtu;
	int ret, nlocal, servable;

	/* Check before this pass opens any socket: a closed listener's fd
	 * number may be handed out again. */
	if (r->draining || listener_gone(r, r->lis))
		return;
	/* The fallback first, before any plumbing: from this process's first
	 * moment on, the pod never lets .254 out. */
	if (!r->programmed) {
		struct steer_state fb = r->have.veth ? r->have : (struct steer_state){0};
		memcpy(fb.ip, r->ip, 4);
		memcpy(fb.vmac, r->vmac, 6);
		fb.local_ok = r->passt;
		r->want = fb;
		if (ensure_rules(r)) {
			arm_retry(r);
			return;
		}
	}
	if (relist(r, err, sizeof(err))) {
		log_error("net: %s", err);
		arm_retry(r);
		return;
	}
	memset(&r->want, 0, sizeof(r->want));
	memcpy(r->want.ip, r->ip, 4);
	memcpy(r->want.vmac, r->vmac, 6);
	r->want.local_ok = r->passt;
	r->want.ntaps = plumb_pick_taps(r->links, r->nlinks, r->ifs, r->bridge_name, r->want.taps,
					STEER_MAX_TAPS, &mtu);
	ret = plumb_ensure(&r->req, &r->ps, r->links, r->nlinks, r->vmac, mtu, 1, &changes, err,
			   sizeof(err));
	if (ret) {
		log_error("net: plumbing: %s", err);
		arm_retry(r);
		return;
	}
	if (changes && relist(r, err, sizeof(err))) {
		/* Our writes changed ifindexes, flags: look again. */
		log_error("net: %s", err);
		arm_retry(r);
		return;
	}
	r->want.ntaps = plumb_pick_taps(r->links, r->nlinks, r->ifs, r->bridge_name, r->want.taps,
					STEER_MAX_TAPS, &mtu);
	r->want.veth = r->ps.veth;
	r->want.peer = r->ps.peer;
	nlocal = plumb_local_addrs(&r->req, r->want.local, STEER_MAX_LOCAL, err, sizeof(err));
	if (nlocal < 0) {
		log_error("net: %s", err);
		arm_retry(r);
		return;
	}
	r->want.nlocal = (size_t)nlocal;
	if (!r->ps.v6 && !r->v6_said) {
		log_info("net: IPv6 is off in the pod (%s): 169.254.169.254 only", r->ps.v6_off);
		r->v6_said = 1;
	}
	ret = ensure_rules(r);
	if (!ret && (ensure_arp(r, r->ps.veth) || ensure_listener(r, r->ps.veth) ||
		     ensure_listener6(r, r->ps.v6 ? r->ps.veth : 0)))
		ret = -1;
	if (r->draining)
		return;
	if (ret) {
		arm_retry(r);
		return;
	}
	r->retry_ms = 0;
	servable = r->passt || r->want.ntaps > 0;
	if (servable && !r->serving) {
		char m[18];
		fmt_mac(r->vmac, m);
		describe_taps(r, &r->want, taps, sizeof(taps));
		log_info("net: serving %u.%u.%u.%u%s:%u on %s (%s) to %s%s%s, hop limit %u", r->ip[0],
			 r->ip[1], r->ip[2], r->ip[3],
			 r->ps.v6 ? ", [fd00:ec2::254], [fe80::a9fe:a9fe]" : "", r->port, PLUMB_VETH, m,
			 r->want.ntaps ? taps : "", r->want.ntaps && r->passt ? " and " : "",
			 r->passt ? "passt (over the pod's loopback)" : "", r->hops);
		log_info("net: ready %llu ms after start",
			 (unsigned long long)(loop_clock_ms() - r->start_ms));
		r->serving = 1;
		r->waiting = 0;
		loop_timer_arm(r->wait_tfd, 0);
	} else if (!servable) {
		if (r->serving)
			log_info("net: the VM's tap(s) are gone");
		r->serving = 0;
		if (!r->ifs || r->nwanted)
			start_waiting(r);
	} else if (changes) {
		char what[160];
		plumb_changes_text(changes, what, sizeof(what));
		log_info("net: restored plumbing (%s)", what);
	}
}

/* ---- events -------------------------------------------------------------- */

/* Does this rtnetlink event concern what we look at?  Links: any (taps and
 * bridges come and go only while the pod is set up); addresses: any (the
 * pod's own, for the aliases); routes and rules: ours. */
static int relevant(const struct nl_msgview *m)
{
	struct nl_route rt;
	struct nl_rule ru;

	switch (m->type) {
	case RTM_NEWLINK:
	case RTM_DELLINK:
	case RTM_NEWADDR:
	case RTM_DELADDR:
		return 1;
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		return !nl_parse_route(m, &rt) && rt.table == PLUMB_TABLE;
	case RTM_NEWRULE:
	case RTM_DELRULE:
		return !nl_parse_rule(m, &ru) && ru.table == PLUMB_TABLE;
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
		if (ret) {
			/* -ENOBUFS: events were lost; trust nothing, look. */
			if (ret != -ENOBUFS)
				log_error("net: netlink events: %s", strerror(-ret));
			need = 1;
			if (ret != -ENOBUFS)
				break;
			continue;
		}
		while (nl_next(r->evbuf, len, &off, &m) > 0)
			if (relevant(&m))
				need = 1;
	}
	if (need)
		reconcile(r);
}

/* Someone else changed our tables (nft flush ruleset, a debugging
 * operator): put them back, as any other removed plumbing. */
static void on_nft_event(struct loop *l, int fd, void *data, int mask)
{
	struct run *r = data;
	int need = 0;
	(void)l;
	(void)fd;
	(void)mask;

	for (int i = 0; i < 256; i++) {
		struct nl_msgview m;
		size_t len, off = 0;
		int ret = nl_recv_events(&r->nftev, r->evbuf, EV_BUF, &len);
		if (ret == -EAGAIN)
			break;
		if (ret) {
			need = 1;
			if (ret != -ENOBUFS)
				break;
			continue;
		}
		while (nl_next(r->evbuf, len, &off, &m) > 0) {
			struct nft_msg nm;
			if (m.portid == r->nft.portid || nft_parse_msg(&m, &nm))
				continue; /* our own transaction's echo */
			if (strcmp(nm.table, STEER_TABLE) == 0)
				need = 1;
		}
	}
	if (need && r->programmed) {
		log_info("net: nf_tables table %s was changed by another process: programming it again",
			 STEER_TABLE);
		r->programmed = 0;
		reconcile(r);
	}
}

static void on_wait_timer(struct loop *l, int fd, void *data, int mask)
{
	struct run *r = data;
	(void)l;
	(void)mask;
	loop_timer_ack(fd);
	if (!r->waiting)
		return;
	log_info("net: still waiting for the VM's tap (%llu s)",
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

	if (addr_parse(addr, &ss, &sl) < 0 || ss.ss_family != AF_INET)
		goto bad;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
	memcpy(ip, &s4->sin_addr, 4);
	*port = ntohs(s4->sin_port);
	if (memcmp(ip, plumb_imds_ip, 4) == 0)
		return 0;
bad:
	snprintf(err, errlen,
		 "IMDS_LISTEN_ADDR '%s': run serves 169.254.169.254 (a port may be chosen: "
		 "169.254.169.254:PORT)",
		 addr);
	return -EINVAL;
}

/* What the webhook said about the interfaces, once: which are served, which
 * cannot be and why. */
static void tell_interfaces(struct run *r)
{
	if (!r->ifs) {
		log_info("net: IMDS_INTERFACES not set (a launcher pod admitted without the VMI's "
			 "imds.kubevirt.io/interfaces): serving the taps of %s",
			 r->bridge_name ? r->bridge_name : "every k6t-* bridge");
		return;
	}
	for (size_t i = 0; i < r->ifs->n; i++) {
		const struct ifaces_entry *e = &r->ifs->e[i];
		const char *why = ifaces_kind_unserved(e->kind);
		if (why)
			log_info("net: interface %s (%s) cannot be served: %s", e->name,
				 ifaces_kind_name(e->kind), why);
		else if (e->kind == IFACES_PASST)
			log_info("net: interface %s (passt): served over the pod's loopback", e->name);
		else
			log_info("net: interface %s (%s): served through %s", e->name,
				 ifaces_kind_name(e->kind), e->tap);
	}
	if (!r->passt && !r->nwanted)
		log_info("net: no interface of this VM can reach the service; the sidecar stays idle");
}

static void run_free(struct run *r)
{
	if (!r)
		return;
	close_fd(r, &r->arp);
	close_fd(r, &r->wait_tfd);
	close_fd(r, &r->retry_tfd);
	if (r->ev.fd >= 0)
		loop_del(r->loop, r->ev.fd, LOOP_READABLE);
	if (r->nftev.fd >= 0)
		loop_del(r->loop, r->nftev.fd, LOOP_READABLE);
	nl_close(&r->ev);
	nl_close(&r->req);
	nl_close(&r->nftev);
	nl_close(&r->nft);
	/* The listener belongs to the HTTP server; the plumbing and the rules
	 * stay (a restarted sidecar adopts them, and the fallback must hold
	 * while no sidecar runs). */
	free(r->evbuf);
	free(r->nftbuf);
	free(r->links);
	free(r);
}

static struct run *run_new(struct loop *l, struct http_server *http,
			   const struct imds_config *cfg, char *err, size_t errlen)
{
	static const unsigned groups[] = {RTNLGRP_LINK,		RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV4_ROUTE,
					  RTNLGRP_IPV4_RULE,	RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV6_ROUTE,
					  RTNLGRP_IPV6_RULE};
	struct run *r = calloc(1, sizeof(*r));
	int ret;

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->loop = l;
	r->http = http;
	r->cfg = cfg;
	r->hops = cfg->hop_limit;
	r->bridge_name = cfg->bridge_name && cfg->bridge_name[0] ? cfg->bridge_name : NULL;
	r->ifs = cfg->have_ifaces ? &cfg->ifaces : NULL;
	for (size_t i = 0; r->ifs && i < r->ifs->n; i++) {
		if (r->ifs->e[i].kind == IFACES_PASST)
			r->passt = 1;
		if (ifaces_kind_has_tap(r->ifs->e[i].kind))
			r->nwanted++;
	}
	plumb_vm_mac(cfg->ns, cfg->vm_name, r->vmac);
	nl_sock_init(&r->req);
	nl_sock_init(&r->ev);
	nl_sock_init(&r->nft);
	nl_sock_init(&r->nftev);
	r->wait_tfd = r->retry_tfd = -1;
	r->arp = r->lis = r->lis6[0] = r->lis6[1] = -1;
	r->start_ms = loop_clock_ms();
	if (listen_ip(cfg->listen_addr ? cfg->listen_addr : IMDS_DEFAULT_LISTEN, r->ip, &r->port,
		      err, errlen))
		goto fail;
	r->evbuf = malloc(EV_BUF);
	r->nftbuf = malloc(NFT_BUF);
	r->links = calloc(PLUMB_MAX_LINKS, sizeof(*r->links));
	if (!r->evbuf || !r->nftbuf || !r->links) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* Subscribe before the first dump: a change between the two is then
	 * an event we will read, not a gap. */
	if (nl_open(&r->ev, groups, sizeof(groups) / sizeof(groups[0]), err, errlen) ||
	    nl_open(&r->req, NULL, 0, err, errlen) || nft_open(&r->nftev, 1, err, errlen) ||
	    nft_open(&r->nft, 0, err, errlen))
		goto fail;
	r->wait_tfd = loop_timer_new();
	r->retry_tfd = loop_timer_new();
	if (r->wait_tfd < 0 || r->retry_tfd < 0) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		goto fail;
	}
	if ((ret = loop_add(l, r->ev.fd, LOOP_READABLE, on_event, r)) ||
	    (ret = loop_add(l, r->nftev.fd, LOOP_READABLE, on_nft_event, r)) ||
	    (ret = loop_add(l, r->wait_tfd, LOOP_READABLE, on_wait_timer, r)) ||
	    (ret = loop_add(l, r->retry_tfd, LOOP_READABLE, on_retry_timer, r))) {
		snprintf(err, errlen, "event loop: %s", strerror(-ret));
		goto fail;
	}
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
	tell_interfaces(r);
	reconcile(r);
	ret = loop_run(l);
	log_flush();
	if (ret < 0)
		log_error("event loop: %s", strerror(-ret));
	log_info("net: stopped (%llu ARP replies, %llu neighbour advertisements, %llu neighbour "
		 "entries written); plumbing and "
		 "rules left in place",
		 r->arp_answered, r->ndp_answered, r->neigh_written);
	run_free(r);
	return ret < 0 ? 1 : 0;
}

int init_main(const struct imds_config *cfg)
{
	struct plumb_state ps = {0};
	struct steer_state st = {0};
	struct nl_link *links = calloc(PLUMB_MAX_LINKS, sizeof(*links));
	uint8_t *buf = malloc(NFT_BUF);
	struct nl_sock s, nft;
	struct nft_batch b;
	const struct ifaces *ifs = cfg->have_ifaces ? &cfg->ifaces : NULL;
	const char *bridge = cfg->bridge_name && cfg->bridge_name[0] ? cfg->bridge_name : NULL;
	char err[512];
	unsigned changes = 0;
	uint32_t mtu;
	size_t n;
	int nlocal, status = 1;

	nl_sock_init(&s);
	nl_sock_init(&nft);
	if (!links || !buf) {
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	if (listen_ip(cfg->listen_addr ? cfg->listen_addr : IMDS_DEFAULT_LISTEN, st.ip,
		      &(uint16_t){0}, err, sizeof(err)))
		goto out;
	plumb_vm_mac(cfg->ns, cfg->vm_name, st.vmac);
	for (size_t i = 0; ifs && i < ifs->n; i++)
		st.local_ok |= ifs->e[i].kind == IFACES_PASST;
	if (nl_open(&s, NULL, 0, err, sizeof(err)) || nft_open(&nft, 0, err, sizeof(err)) ||
	    nl_get_links(&s, links, PLUMB_MAX_LINKS, &n, err, sizeof(err)))
		goto out;
	st.ntaps = plumb_pick_taps(links, n, ifs, bridge, st.taps, STEER_MAX_TAPS, &mtu);
	if (plumb_ensure(&s, &ps, links, n, st.vmac, mtu, 1, &changes, err, sizeof(err)) ||
	    nl_get_links(&s, links, PLUMB_MAX_LINKS, &n, err, sizeof(err)))
		goto out;
	st.ntaps = plumb_pick_taps(links, n, ifs, bridge, st.taps, STEER_MAX_TAPS, &mtu);
	st.veth = ps.veth;
	st.peer = ps.peer;
	nlocal = plumb_local_addrs(&s, st.local, STEER_MAX_LOCAL, err, sizeof(err));
	if (nlocal < 0)
		goto out;
	st.nlocal = (size_t)nlocal;
	nft_batch_init(&b, buf, NFT_BUF, 1);
	if (steer_build(&st, &b) || nft_batch_finish(&b)) {
		snprintf(err, sizeof(err), "building the ruleset: %s", strerror(-b.err));
		goto out;
	}
	{
		char why[256];
		int ret = nft_commit(&nft, &b, why, sizeof(why));
		if (ret) {
			snprintf(err, sizeof(err), "nf_tables: %s%s%s", strerror(-ret), why[0] ? ": " : "",
				 why);
			goto out;
		}
	}
	{
		char what[160];
		plumb_changes_text(changes, what, sizeof(what));
		log_info("net: plumbing in place (%s), %zu tap(s) steered%s%s%s",
			 changes ? what : "nothing to change", st.ntaps,
			 ps.v6 ? "" : "; IPv6 off in the pod (", ps.v6 ? "" : ps.v6_off,
			 ps.v6 ? "" : ")");
	}
	status = 0;
out:
	if (status)
		fprintf(stderr, "imds-server init: %s\n", err);
	nl_close(&s);
	nl_close(&nft);
	free(links);
	free(buf);
	return status;
}
