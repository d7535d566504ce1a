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

#include "http.h"
#include "log.h"
#include "ndp.h"
#include "nft.h"
#include "nl.h"
#include "plan.h"
#include "diag.h"
#include "plumb.h"
#include "responder.h"
#include "steer.h"

#define WAIT_LOG_MS 30000u     /* "still waiting" line while no tap */
#define RETRY_MIN_MS 100u      /* after a failed pass; doubles up to max */
#define RETRY_MAX_MS 10000u
#define EV_BUF (64u << 10)     /* one event datagram */
#define NFT_BUF (64u << 10)    /* one transaction */

struct run {
	struct loop *loop;
	struct http_server *http;
	const struct imds_config *cfg;
	struct plan_cfg pc;        /* the bindings, the address, veth-imds's MAC */
	unsigned hops;

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

	struct responder resp;     /* ARP/NDP answers on veth-imds */
	int lis, lis_if;
	int lis6[2], lis6_if;      /* fd00:ec2::254, fe80::a9fe:a9fe */
	int hold6, hold6_if;       /* passt's pods: plumb_port_hold6 */
	int v6_said;               /* IPv6 off in the pod: logged */
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
		for (size_t i = 0; r->pc.ifs && i < r->pc.ifs->n; i++) {
			if (strcmp(r->pc.ifs->e[i].tap, st->taps[t].name) == 0) {
				name = r->pc.ifs->e[i].name;
				kind = ifaces_kind_name(r->pc.ifs->e[i].kind);
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
	nfd = plumb_listener_open(want_if, r->pc.ip, r->pc.lport, r->hops, r->pc.passt, err, sizeof(err));
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
		int nfd = plumb_listener_open6(want_if, ndp_imds_addr[a], r->pc.lport, r->hops, r->pc.passt, err,
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

/* passt's pods: the service's IPv6 port held on veth-imds (plumb.h); tried
 * again on every pass while passt's own listener has it. */
static void ensure_hold6(struct run *r, int want_if)
{
	if (!r->pc.passt || r->pc.lport == r->pc.port)
		return;
	if (r->hold6 >= 0 && r->hold6_if == want_if)
		return;
	if (r->hold6 >= 0)
		close(r->hold6);
	r->hold6 = -1;
	if (want_if && (r->hold6 = plumb_port_hold6(want_if, ndp_imds_addr[0], r->pc.port)) < 0) {
		if (r->hold6 != -EADDRINUSE)
			log_error("net: holding [fd00:ec2::254]:%u for passt: %s", r->pc.port,
				  strerror(-r->hold6));
		r->hold6 = -1;
	}
	r->hold6_if = want_if;
}

/* ---- the ruleset --------------------------------------------------------- */

/* Programs r->want unless the kernel already holds it.  0 or -errno. */
static int ensure_rules(struct run *r)
{
	char err[512], taps[256];
	int ret;

	if (r->programmed && plan_steer_eq(&r->want, &r->have))
		return 0;
	ret = plan_program(&r->nft, r->nftbuf, NFT_BUF, &r->want, err, sizeof(err));
	if (ret) {
		log_error("net: nf_tables: %s%s%s", strerror(-ret), err[0] ? ": " : "", err);
		r->programmed = 0;
		return ret;
	}
	describe_taps(r, &r->want, taps, sizeof(taps));
	if (!r->programmed || r->want.ntaps != r->have.ntaps || r->want.nlocal != r->have.nlocal ||
	    r->want.nlocal6 != r->have.nlocal6 ||
	    r->want.veth != r->have.veth)
		log_info("net: nf_tables table %s: %zu tap(s) steered%s%s, %zu pod address(es) "
			 "aliased",
			 STEER_TABLE, r->want.ntaps, r->want.ntaps ? ": " : "", taps,
			 r->want.nlocal + r->want.nlocal6);
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
	for (size_t i = 0; r->pc.ifs && i < r->pc.ifs->n && at < sizeof(names); i++) {
		if (!ifaces_kind_has_tap(r->pc.ifs->e[i].kind))
			continue;
		int k = snprintf(names + at, sizeof(names) - at, "%s%s", at ? ", " : "",
				 r->pc.ifs->e[i].tap);
		if (k > 0)
			at += (size_t)k;
	}
	if (r->pc.ifs)
		log_info("net: waiting for the VM's tap(s): %s", names);
	else
		log_info("net: waiting for a VM tap on bridge %s", r->pc.bridge ? r->pc.bridge : "k6t-*");
	loop_timer_arm(r->wait_tfd, r->wait_since_ms + WAIT_LOG_MS);
}

static void reconcile(struct run *r)
{
	char err[512], taps[256];
	unsigned changes = 0;
	int ret, servable;

	/* Check before this pass opens any socket: a closed listener's fd
	 * number may be handed out again. */
	if (r->draining || listener_gone(r, r->lis))
		return;
	/* The fallback first, before any plumbing: from this process's first
	 * moment on, the pod never lets .254 out. */
	if (!r->programmed) {
		plan_fallback(&r->pc, &r->have, &r->want);
		if (ensure_rules(r)) {
			arm_retry(r);
			return;
		}
	}
	if (plan_make(&r->pc, &r->req, &r->ps, r->links, &r->nlinks, &r->want, &changes, err,
		      sizeof(err))) {
		log_error("net: %s", err);
		arm_retry(r);
		return;
	}
	if (!r->ps.v6 && !r->v6_said) {
		log_info("net: IPv6 is off in the pod (%s): 169.254.169.254 only", r->ps.v6_off);
		r->v6_said = 1;
	}
	ret = ensure_rules(r);
	if (!ret)
		ensure_hold6(r, r->ps.v6 ? r->ps.veth : 0);
	if (!ret && (resp_ensure(&r->resp, r->ps.veth, r->ps.v6) || ensure_listener(r, r->ps.veth) ||
		     ensure_listener6(r, r->ps.v6 ? r->ps.veth : 0)))
		ret = -1;
	if (r->draining)
		return;
	if (ret) {
		arm_retry(r);
		return;
	}
	r->retry_ms = 0;
	servable = r->pc.passt || r->want.ntaps > 0;
	if (servable && !r->serving) {
		char m[18];
		fmt_mac(r->pc.vmac, m);
		describe_taps(r, &r->want, taps, sizeof(taps));
		char lp[48] = "";
		if (r->pc.lport != r->pc.port)
			snprintf(lp, sizeof(lp), ", listening on port %u", r->pc.lport);
		log_info("net: serving %u.%u.%u.%u%s:%u on %s (%s) to %s%s%s, hop limit %u%s",
			 r->pc.ip[0], r->pc.ip[1], r->pc.ip[2], r->pc.ip[3],
			 r->ps.v6 ? ", [fd00:ec2::254], [fe80::a9fe:a9fe]" : "", r->pc.port, PLUMB_VETH, m,
			 r->want.ntaps ? taps : "", r->want.ntaps && r->pc.passt ? " and " : "",
			 r->pc.passt ? "passt (over the pod's loopback)" : "", r->hops, lp);
		log_info("net: ready %llu ms after start",
			 (unsigned long long)(loop_clock_ms() - r->start_ms));
		r->serving = 1;
		r->waiting = 0;
		{
			char what[sizeof(taps) + 16];
			snprintf(what, sizeof(what), "%s%s%s", r->want.ntaps ? taps : "",
				 r->want.ntaps && r->pc.passt ? " and " : "", r->pc.passt ? "passt" : "");
			diag_status_set("serving", what);
		}
		loop_timer_arm(r->wait_tfd, 0);
	} else if (!servable) {
		if (r->serving)
			log_info("net: the VM's tap(s) are gone");
		r->serving = 0;
		diag_status_set(r->pc.ifs && !r->pc.nwanted ? "idle" : "waiting", NULL);
		if (!r->pc.ifs || r->pc.nwanted)
			start_waiting(r);
	} else if (changes) {
		char what[160];
		plumb_changes_text(changes, what, sizeof(what));
		log_info("net: restored plumbing (%s)", what);
	}
}

/* ---- events -------------------------------------------------------------- */

/* Both event sockets, rtnetlink and nf_tables: what their events call for
 * (plan.h, the same decision as the node agent's): a pass; and, when
 * someone else changed our tables (nft flush ruleset, a debugging
 * operator), the ruleset written again, as any other removed plumbing. */
static void on_events(struct loop *l, int fd, void *data, int mask)
{
	struct run *r = data;
	int nft = fd == r->nftev.fd, err;
	unsigned need = plan_events_read(nft ? &r->nftev : &r->ev, nft, r->nft.portid,
					 r->evbuf, EV_BUF, 256, &err);
	(void)l;
	(void)mask;

	if (err && !nft)
		log_error("net: netlink events: %s", strerror(-err));
	if (need & PLAN_EV_RULESET) {
		if (!r->programmed)
			return; /* a pass that programs it is due already */
		log_info("net: nf_tables table %s was changed by another process: programming it again",
			 STEER_TABLE);
		r->programmed = 0;
	}
	if (need)
		reconcile(r);
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

/* What the webhook said about the interfaces, once: which are served, which
 * cannot be and why (in agent mode too: nodelink.c). */
void run_tell_interfaces(const struct plan_cfg *pc)
{
	if (!pc->ifs) {
		log_info("net: IMDS_INTERFACES not set (a launcher pod admitted without the VMI's "
			 "imds.kubevirt.io/interfaces): serving the taps of %s",
			 pc->bridge ? pc->bridge : "every k6t-* bridge");
		return;
	}
	for (size_t i = 0; i < pc->ifs->n; i++) {
		const struct ifaces_entry *e = &pc->ifs->e[i];
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
	if (!pc->passt && !pc->nwanted)
		log_info("net: no interface of this VM can reach the service; the sidecar stays idle");
}

static void run_free(struct run *r)
{
	if (!r)
		return;
	resp_close(&r->resp);
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
	nl_sock_init(&r->req);
	nl_sock_init(&r->ev);
	nl_sock_init(&r->nft);
	nl_sock_init(&r->nftev);
	r->wait_tfd = r->retry_tfd = -1;
	r->lis = r->lis6[0] = r->lis6[1] = r->hold6 = -1;
	r->start_ms = loop_clock_ms();
	if (plan_cfg_init(&r->pc, cfg, err, errlen))
		goto fail;
	resp_init(&r->resp, l, &r->req, r->pc.ip, r->pc.port, r->pc.vmac);
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
	if ((ret = loop_add(l, r->ev.fd, LOOP_READABLE, on_events, r)) ||
	    (ret = loop_add(l, r->nftev.fd, LOOP_READABLE, on_events, r)) ||
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
	run_tell_interfaces(&r->pc);
	reconcile(r);
	ret = loop_run(l);
	log_flush();
	if (ret < 0)
		log_error("event loop: %s", strerror(-ret));
	log_info("net: stopped (%llu ARP replies, %llu neighbour advertisements, %llu neighbour "
		 "entries written); plumbing and "
		 "rules left in place",
		 r->resp.arp_answered, r->resp.ndp_answered, r->resp.neigh_written);
	run_free(r);
	return ret < 0 ? 1 : 0;
}

int init_main(const struct imds_config *cfg)
{
	struct plan_cfg pc;
	struct plumb_state ps = {0};
	struct steer_state st;
	struct nl_link *links = calloc(PLUMB_MAX_LINKS, sizeof(*links));
	uint8_t *buf = malloc(NFT_BUF);
	struct nl_sock s, nft;
	char err[512], why[256];
	unsigned changes = 0;
	size_t n;
	int ret, status = 1;

	nl_sock_init(&s);
	nl_sock_init(&nft);
	if (!links || !buf) {
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	if (plan_cfg_init(&pc, cfg, err, sizeof(err)) || nl_open(&s, NULL, 0, err, sizeof(err)) ||
	    nft_open(&nft, 0, err, sizeof(err)) ||
	    plan_make(&pc, &s, &ps, links, &n, &st, &changes, err, sizeof(err)))
		goto out;
	if ((ret = plan_program(&nft, buf, NFT_BUF, &st, why, sizeof(why)))) {
		snprintf(err, sizeof(err), "nf_tables: %s%s%s", strerror(-ret), why[0] ? ": " : "", why);
		goto out;
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
