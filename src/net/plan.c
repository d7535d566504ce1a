#include "plan.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "nft.h"

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

int plan_cfg_init(struct plan_cfg *pc, const struct imds_config *cfg, char *err, size_t errlen)
{
	memset(pc, 0, sizeof(*pc));
	pc->ifs = cfg->have_ifaces ? &cfg->ifaces : NULL;
	pc->bridge = cfg->bridge_name && cfg->bridge_name[0] ? cfg->bridge_name : NULL;
	for (size_t i = 0; pc->ifs && i < pc->ifs->n; i++) {
		enum ifaces_kind k = pc->ifs->e[i].kind;
		if (binding_table[k].path == BINDING_LOOPBACK)
			pc->passt = 1;
		if (ifaces_kind_has_tap(k))
			pc->nwanted++;
	}
	plumb_vm_mac(cfg->ns, cfg->vm_name, pc->vmac);
	int ret = listen_ip(cfg->listen_addr ? cfg->listen_addr : IMDS_DEFAULT_LISTEN, pc->ip,
			    &pc->port, err, errlen);
	/* passt's wildcard sockets and ours must not meet (plumb.h). */
	pc->lport = pc->passt ? PLUMB_PASST_LPORT : pc->port;
	return ret;
}

static void base(const struct plan_cfg *pc, struct steer_state *st)
{
	memcpy(st->ip, pc->ip, 4);
	memcpy(st->vmac, pc->vmac, 6);
	st->port = pc->port;
	st->lport = pc->lport;
	st->local_ok = pc->passt;
}

void plan_fallback(const struct plan_cfg *pc, const struct steer_state *have, struct steer_state *out)
{
	*out = have && have->veth ? *have : (struct steer_state){0};
	base(pc, out);
}

int plan_make(const struct plan_cfg *pc, struct nl_sock *req, struct plumb_state *ps,
	      struct nl_link *links, size_t *nlinks, struct steer_state *want, unsigned *changes,
	      char *err, size_t errlen)
{
	char why[384];
	uint32_t mtu;
	int ret, nlocal;

	*changes = 0;
	if ((ret = nl_get_links(req, links, PLUMB_MAX_LINKS, nlinks, err, errlen)))
		return ret;
	memset(want, 0, sizeof(*want));
	base(pc, want);
	ps->port = pc->port; /* only it is local (plumb.h) */
	/* The taps first for their MTU, which veth-imds takes. */
	plumb_pick_taps(links, *nlinks, pc->ifs, pc->bridge, want->taps, STEER_MAX_TAPS, &mtu);
	if ((ret = plumb_ensure(req, ps, links, *nlinks, pc->vmac, mtu, 1, changes, why,
				sizeof(why)))) {
		snprintf(err, errlen, "plumbing: %s", why);
		return ret;
	}
	/* Our writes changed ifindexes, flags: look again. */
	if (*changes && (ret = nl_get_links(req, links, PLUMB_MAX_LINKS, nlinks, err, errlen)))
		return ret;
	want->ntaps = plumb_pick_taps(links, *nlinks, pc->ifs, pc->bridge, want->taps, STEER_MAX_TAPS,
				      &mtu);
	want->veth = ps->veth;
	want->peer = ps->peer;
	nlocal = plumb_local_addrs(req, want->local, STEER_MAX_LOCAL, err, errlen);
	if (nlocal < 0)
		return nlocal;
	want->nlocal = (size_t)nlocal;
	nlocal = plumb_local_addrs6(req, want->local6, STEER_MAX_LOCAL6, err, errlen);
	if (nlocal < 0)
		return nlocal;
	want->nlocal6 = (size_t)nlocal;
	return 0;
}

int plan_program(struct nl_sock *nft, uint8_t *buf, size_t cap, const struct steer_state *st,
		 char *err, size_t errlen)
{
	struct nft_batch b;
	int ret;

	err[0] = '\0';
	nft_batch_init(&b, buf, cap, 1);
	if ((ret = steer_build(st, &b)) || (ret = nft_batch_finish(&b))) {
		snprintf(err, errlen, "building the ruleset: %s", strerror(-ret));
		return ret;
	}
	return nft_commit(nft, &b, err, errlen);
}

int plan_steer_eq(const struct steer_state *a, const struct steer_state *b)
{
	return a->veth == b->veth && a->peer == b->peer && a->local_ok == b->local_ok &&
	       a->port == b->port && a->lport == b->lport &&
	       !memcmp(a->vmac, b->vmac, 6) && !memcmp(a->ip, b->ip, 4) && a->ntaps == b->ntaps &&
	       !memcmp(a->taps, b->taps, a->ntaps * sizeof(a->taps[0])) && a->nlocal == b->nlocal &&
	       !memcmp(a->local, b->local, a->nlocal * 4) && a->nlocal6 == b->nlocal6 &&
	       !memcmp(a->local6, b->local6, a->nlocal6 * 16);
}

/* The kernel's "local 169.254.169.254" in table local (plumb.h). */
static int kernel_local_imds(const struct nl_route *rt)
{
	return rt->table == RT_TABLE_LOCAL && rt->family == AF_INET && rt->has_dst &&
	       rt->dst_len == 32 && memcmp(rt->dst, plumb_imds_ip, 4) == 0;
}

unsigned plan_event_relevant(const struct nl_msgview *m, int nft, uint32_t own_portid)
{
	struct nft_msg nm;
	struct nl_route rt;
	struct nl_rule ru;

	if (nft) {
		if (m->portid == own_portid || nft_parse_msg(m, &nm) ||
		    strcmp(nm.table, STEER_TABLE) != 0)
			return 0;
		return PLAN_EV_PASS | PLAN_EV_RULESET;
	}
	switch (m->type) {
	case RTM_NEWLINK:
	case RTM_DELLINK:
	case RTM_NEWADDR:
	case RTM_DELADDR:
		return PLAN_EV_PASS;
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		if (nl_parse_route(m, &rt) || (rt.table != PLUMB_TABLE && !kernel_local_imds(&rt)))
			return 0;
		return PLAN_EV_PASS;
	case RTM_NEWRULE:
	case RTM_DELRULE:
		return !nl_parse_rule(m, &ru) && ru.table == PLUMB_TABLE ? PLAN_EV_PASS : 0;
	default:
		return 0;
	}
}

unsigned plan_events_read(struct nl_sock *ev, int nft, uint32_t own_portid, uint8_t *buf,
			  size_t cap, unsigned max, int *err)
{
	const unsigned lost = nft ? PLAN_EV_PASS | PLAN_EV_RULESET : PLAN_EV_PASS;
	unsigned need = 0;

	*err = 0;
	for (unsigned i = 0; i < max; i++) {
		struct nl_msgview m;
		size_t len, off = 0;
		int ret = nl_recv_events(ev, buf, cap, &len);
		if (ret == -EAGAIN)
			break;
		if (ret) {
			need |= lost;
			if (ret != -ENOBUFS) {
				*err = ret;
				break;
			}
			continue;
		}
		while (nl_next(buf, len, &off, &m) > 0)
			need |= plan_event_relevant(&m, nft, own_portid);
	}
	return need;
}
