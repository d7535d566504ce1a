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
	return listen_ip(cfg->listen_addr ? cfg->listen_addr : IMDS_DEFAULT_LISTEN, pc->ip, &pc->port,
			 err, errlen);
}

static void base(const struct plan_cfg *pc, struct steer_state *st)
{
	memcpy(st->ip, pc->ip, 4);
	memcpy(st->vmac, pc->vmac, 6);
	st->port = pc->port;
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
	       a->port == b->port &&
	       !memcmp(a->vmac, b->vmac, 6) && !memcmp(a->ip, b->ip, 4) && a->ntaps == b->ntaps &&
	       !memcmp(a->taps, b->taps, a->ntaps * sizeof(a->taps[0])) && a->nlocal == b->nlocal &&
	       !memcmp(a->local, b->local, a->nlocal * 4);
}
