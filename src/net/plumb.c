#include "plumb.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/fib_rules.h>

#include "arp.h"
#include "ndp.h"

#ifndef SO_BINDTOIFINDEX
#define SO_BINDTOIFINDEX 62 /* Linux 5.0; musl's headers may lack it */
#endif

const uint8_t plumb_imds_ip[4] = {169, 254, 169, 254};
const uint8_t plumb_peer_mac[6] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xfe};

/* ---- pure helpers -------------------------------------------------------- */

void plumb_vm_mac(const char *ns, const char *name, uint8_t mac[6])
{
	uint32_t h = 2166136261u; /* FNV-1a, 32 bits */
	const char *parts[2] = {ns ? ns : "", name ? name : ""};
	for (int p = 0; p < 2; p++) {
		for (const char *c = parts[p]; *c; c++) {
			h ^= (uint8_t)*c;
			h *= 16777619u;
		}
		h ^= '/';
		h *= 16777619u;
	}
	mac[0] = 0x02;
	mac[1] = 0xa9;
	mac[2] = 0xfe;
	mac[3] = (uint8_t)(h >> 16);
	mac[4] = (uint8_t)(h >> 8);
	mac[5] = (uint8_t)h;
}

int plumb_is_tap(const struct nl_link *l)
{
	return strcmp(l->kind, "tun") == 0 || strncmp(l->name, "tap", 3) == 0;
}

static const struct nl_link *find_name(const struct nl_link *links, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(links[i].name, name) == 0)
			return &links[i];
	return NULL;
}

static const struct nl_link *find_index(const struct nl_link *links, size_t n, int ifindex)
{
	for (size_t i = 0; i < n; i++)
		if (links[i].ifindex == ifindex)
			return &links[i];
	return NULL;
}

static int served_bridge(const struct nl_link *br, const char *bridge_name)
{
	if (!br || strcmp(br->kind, "bridge") != 0)
		return 0;
	if (bridge_name)
		return strcmp(br->name, bridge_name) == 0;
	return strncmp(br->name, "k6t-", 4) == 0;
}

static void add_tap(const struct nl_link *l, struct steer_tap *out, size_t *k, size_t cap,
		    uint32_t *mtu)
{
	if (*k >= cap)
		return;
	snprintf(out[*k].name, sizeof(out[*k].name), "%s", l->name);
	out[*k].ifindex = l->ifindex;
	(*k)++;
	if (l->mtu > *mtu)
		*mtu = l->mtu;
}

size_t plumb_pick_taps(const struct nl_link *links, size_t n, const struct ifaces *ifs,
		       const char *bridge_name, struct steer_tap *out, size_t cap, uint32_t *mtu)
{
	size_t k = 0;

	*mtu = 0;
	if (ifs) {
		for (size_t i = 0; i < ifs->n; i++) {
			const struct nl_link *l;
			if (!ifaces_kind_has_tap(ifs->e[i].kind))
				continue;
			l = find_name(links, n, ifs->e[i].tap);
			if (l)
				add_tap(l, out, &k, cap, mtu);
		}
		return k;
	}
	for (size_t i = 0; i < n; i++) {
		if (!plumb_is_tap(&links[i]) || !links[i].master ||
		    strcmp(links[i].name, PLUMB_PEER) == 0)
			continue;
		if (served_bridge(find_index(links, n, links[i].master), bridge_name))
			add_tap(&links[i], out, &k, cap, mtu);
	}
	return k;
}

/* ---- effects ------------------------------------------------------------- */

static int pair_ok(const struct nl_link *v, const struct nl_link *p)
{
	return v && p && strcmp(v->kind, "veth") == 0 && strcmp(p->kind, "veth") == 0 &&
	       v->link == p->ifindex && p->link == v->ifindex && !v->link_netnsid_set &&
	       !p->link_netnsid_set;
}

static int set1(struct nl_sock *s, int ifindex, const struct nl_link_set *c, unsigned *changes,
		unsigned what, char *err, size_t errlen)
{
	int ret = nl_link_set(s, ifindex, c, err, errlen);
	if (!ret)
		*changes |= what;
	return ret;
}

void plumb_changes_text(unsigned changes, char *out, size_t cap)
{
	static const char *const names[] = {"veth pair", "MAC",  "MTU",  "released from a bridge",
					    "arp_ignore", "up",  "address", "rule", "route"};
	size_t at = 0;
	out[0] = '\0';
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]) && at < cap; i++) {
		if (!(changes & (1u << i)))
			continue;
		int k = snprintf(out + at, cap - at, "%s%s", at ? ", " : "", names[i]);
		if (k < 0)
			break;
		at += (size_t)k;
	}
}

/* veth-imds and veth-imds-br exist, are a pair, and *v / *p describe them
 * (fresh from the kernel after any creation). */
static int ensure_pair(struct nl_sock *s, const struct nl_link *links, size_t n,
		       const uint8_t mac[6], uint32_t mtu, struct nl_link *v, struct nl_link *p,
		       unsigned *changes, char *err, size_t errlen)
{
	const struct nl_link *v0 = find_name(links, n, PLUMB_VETH);
	const struct nl_link *p0 = find_name(links, n, PLUMB_PEER);
	struct nl_link_set noipv6 = NL_LINK_SET_INIT;
	int ret;

	if (pair_ok(v0, p0)) {
		*v = *v0;
		*p = *p0;
		return 0;
	}
	/* Half a pair, or something else under our names: start over.
	 * Deleting either end of a veth deletes both. */
	if (v0) {
		if ((ret = nl_link_del(s, v0->ifindex, err, errlen)) && ret != -ENODEV)
			return ret;
	}
	if (p0 && !(v0 && v0->link == p0->ifindex)) {
		if ((ret = nl_link_del(s, p0->ifindex, err, errlen)) && ret != -ENODEV)
			return ret;
	}
	ret = nl_veth_add(s, PLUMB_VETH, PLUMB_PEER, mtu, mac, plumb_peer_mac, err, errlen);
	if (ret)
		return ret;
	*changes |= PLUMB_CH_PAIR;
	if ((ret = nl_get_link(s, PLUMB_VETH, v, err, errlen)) ||
	    (ret = nl_get_link(s, PLUMB_PEER, p, err, errlen)))
		return ret;
	/* No IPv6 link-local on either end: its DAD and MLD chatter would
	 * go to the VM for nothing.  Best effort: fails where IPv6 is off,
	 * which is just as good. */
	noipv6.addr_gen_none = 1;
	nl_link_set(s, v->ifindex, &noipv6, NULL, 0);
	nl_link_set(s, p->ifindex, &noipv6, NULL, 0);
	return 0;
}

struct find_addr {
	int ifindex;
	uint8_t family;
	uint8_t prefixlen;
	const uint8_t *ip;
	int found;
};

static int find_addr_cb(const struct nl_msgview *m, void *ud)
{
	struct find_addr *f = ud;
	struct nl_addr a;
	if (nl_parse_addr(m, &a))
		return 0;
	if (a.ifindex == f->ifindex && a.family == f->family && a.prefixlen == f->prefixlen &&
	    a.has_local && memcmp(a.local, f->ip, f->family == AF_INET6 ? 16 : 4) == 0)
		f->found = 1;
	return 0;
}

static int has_addr(struct nl_sock *s, int ifindex, uint8_t family, const uint8_t *ip,
		    uint8_t prefixlen, int *found, char *err, size_t errlen)
{
	struct find_addr fa = {ifindex, family, prefixlen, ip, 0};
	int ret = nl_dump_all(s, RTM_GETADDR, family, find_addr_cb, &fa, err, errlen);
	*found = fa.found;
	return ret;
}

struct find_rule {
	uint8_t family;
	const uint8_t *src; /* a host address of the family */
	int found;
};

static int is_our_rule(const struct nl_rule *r, const struct find_rule *f)
{
	size_t alen = f->family == AF_INET6 ? 16 : 4;
	return r->family == f->family && r->action == FR_ACT_TO_TBL && r->table == PLUMB_TABLE &&
	       r->priority == PLUMB_RULE_PREF && r->has_src && r->src_len == alen * 8 &&
	       memcmp(r->src, f->src, alen) == 0 && !r->has_dst && !r->dst_len &&
	       !r->has_iif && !r->has_oif && !r->has_fwmark && !r->has_ipproto && !r->has_dport &&
	       !r->has_sport;
}

/* "to 169.254.169.254 ipproto tcp dport port lookup PLUMB_TABLE". */
struct find_port_rule {
	uint16_t port;
	int found;
};

static int find_port_rule_cb(const struct nl_msgview *m, void *ud)
{
	struct find_port_rule *f = ud;
	struct nl_rule r;
	if (!nl_parse_rule(m, &r) && r.family == AF_INET && r.action == FR_ACT_TO_TBL &&
	    r.table == PLUMB_TABLE && r.priority == PLUMB_RULE_PREF && !r.has_src && !r.src_len &&
	    r.has_dst && r.dst_len == 32 && memcmp(r.dst, plumb_imds_ip, 4) == 0 && !r.has_iif &&
	    !r.has_oif && !r.has_fwmark && !r.has_sport && r.has_ipproto &&
	    r.ipproto == IPPROTO_TCP && r.has_dport && r.dport_lo == f->port &&
	    r.dport_hi == f->port)
		f->found = 1;
	return 0;
}

static int ensure_port_rule(struct nl_sock *s, uint16_t port, unsigned *changes, char *err,
			    size_t errlen)
{
	struct find_port_rule fr = {port, 0};
	int ret;

	if ((ret = nl_dump_all(s, RTM_GETRULE, AF_INET, find_port_rule_cb, &fr, err, errlen)))
		return ret;
	if (fr.found)
		return 0;
	ret = nl_rule_add4_to_port(s, plumb_imds_ip, IPPROTO_TCP, port, PLUMB_TABLE,
				   PLUMB_RULE_PREF, err, errlen);
	if (ret && ret != -EEXIST)
		return ret;
	*changes |= PLUMB_CH_RULE;
	return 0;
}

/* The kernel's "local 169.254.169.254" in table local (written with the
 * address, and again whenever veth-imds comes up): gone, so that only the
 * port rule makes the address local. */
struct find_local {
	int found;
};

static int find_local_cb(const struct nl_msgview *m, void *ud)
{
	struct find_local *f = ud;
	struct nl_route r;
	if (!nl_parse_route(m, &r) && r.family == AF_INET && r.table == RT_TABLE_LOCAL &&
	    r.type == RTN_LOCAL && r.dst_len == 32 && r.has_dst &&
	    memcmp(r.dst, plumb_imds_ip, 4) == 0)
		f->found = 1;
	return 0;
}

static int ensure_no_local(struct nl_sock *s, unsigned *changes, char *err, size_t errlen)
{
	struct find_local fl = {0};
	int ret;

	if ((ret = nl_dump_all(s, RTM_GETROUTE, AF_INET, find_local_cb, &fl, err, errlen)))
		return ret;
	if (!fl.found)
		return 0;
	ret = nl_route_del4(s, RT_TABLE_LOCAL, plumb_imds_ip, 32, err, errlen);
	if (ret && ret != -ESRCH)
		return ret;
	*changes |= PLUMB_CH_ROUTE;
	return 0;
}

static int find_rule_cb(const struct nl_msgview *m, void *ud)
{
	struct find_rule *f = ud;
	struct nl_rule r;
	if (!nl_parse_rule(m, &r) && is_our_rule(&r, f))
		f->found = 1;
	return 0;
}

#define STALE_MAX 8

struct find_route {
	uint8_t family;
	int oif;
	int found;      /* the right route */
	int found_local; /* IPv4: "local 169.254.169.254 dev oif" */
	size_t nstale;  /* other routes in our table (an older version's, a stray) */
	uint8_t stale[STALE_MAX][17]; /* dst, dst_len */
};

static int find_route_cb(const struct nl_msgview *m, void *ud)
{
	static const uint8_t any[16];
	struct find_route *f = ud;
	struct nl_route r;
	if (nl_parse_route(m, &r) || r.family != f->family || r.table != PLUMB_TABLE)
		return 0;
	/* IPv4: with the service's address as preferred source.  IPv6: the
	 * source is the socket's (the rules pick this table by it). */
	if (r.dst_len == 0 && r.oif == f->oif && !r.has_gw && r.type == RTN_UNICAST &&
	    (f->family == AF_INET6 ||
	     (r.has_prefsrc && memcmp(r.prefsrc, plumb_imds_ip, 4) == 0))) {
		f->found = 1;
	} else if (f->family == AF_INET && r.type == RTN_LOCAL && r.dst_len == 32 && r.has_dst &&
		   memcmp(r.dst, plumb_imds_ip, 4) == 0 && r.oif == f->oif) {
		f->found_local = 1;
	} else if (r.dst_len != 0 && f->nstale < STALE_MAX) {
		memcpy(f->stale[f->nstale], r.has_dst ? r.dst : any, 16);
		f->stale[f->nstale++][16] = r.dst_len;
	}
	return 0;
}

/* Our table's default route for family by veth-imds, and no other: the
 * route (replaced in place when it names another device) and the
 * deletion of strays, as *changes says. */
static int ensure_route(struct nl_sock *s, uint8_t family, int oif, unsigned *changes, char *err,
			size_t errlen)
{
	static const uint8_t any[16];
	struct find_route ft = {.family = family, .oif = oif};
	int ret;

	if ((ret = nl_dump_all(s, RTM_GETROUTE, family, find_route_cb, &ft, err, errlen)))
		return ret;
	for (size_t i = 0; i < ft.nstale; i++) {
		ret = family == AF_INET6
			      ? nl_route_del6(s, PLUMB_TABLE, ft.stale[i], ft.stale[i][16], err, errlen)
			      : nl_route_del4(s, PLUMB_TABLE, ft.stale[i], ft.stale[i][16], err, errlen);
		if (ret && ret != -ESRCH)
			return ret;
		*changes |= PLUMB_CH_ROUTE;
	}
	/* The local route first: the default's preferred source must be
	 * local in this table or in table local (fib_valid_prefsrc), and the
	 * latter's entry goes (ensure_no_local). */
	if (family == AF_INET && !ft.found_local) {
		ret = nl_route_add_local4(s, PLUMB_TABLE, plumb_imds_ip, oif, err, errlen);
		if (ret && ret != -EEXIST)
			return ret;
		*changes |= PLUMB_CH_ROUTE;
	}
	if (!ft.found) {
		ret = family == AF_INET6
			      ? nl_route_add6(s, PLUMB_TABLE, any, 0, oif, NULL, 1, err, errlen)
			      : nl_route_add4(s, PLUMB_TABLE, any, 0, oif, plumb_imds_ip, 1, err, errlen);
		if (ret)
			return ret;
		*changes |= PLUMB_CH_ROUTE;
	}
	return 0;
}

static int ensure_rule(struct nl_sock *s, uint8_t family, const uint8_t *src, unsigned *changes,
		       char *err, size_t errlen)
{
	struct find_rule fr = {family, src, 0};
	int ret;

	if ((ret = nl_dump_all(s, RTM_GETRULE, family, find_rule_cb, &fr, err, errlen)))
		return ret;
	if (fr.found)
		return 0;
	ret = family == AF_INET6
		      ? nl_rule_add6(s, src, 128, PLUMB_TABLE, PLUMB_RULE_PREF, err, errlen)
		      : nl_rule_add4(s, src, 32, PLUMB_TABLE, PLUMB_RULE_PREF, err, errlen);
	if (ret && ret != -EEXIST)
		return ret;
	*changes |= PLUMB_CH_RULE;
	return 0;
}

static int ensure_addr(struct nl_sock *s, int ifindex, uint8_t family, const uint8_t *ip,
		       uint8_t prefixlen, unsigned *changes, char *err, size_t errlen)
{
	int found, ret;

	if ((ret = has_addr(s, ifindex, family, ip, prefixlen, &found, err, errlen)))
		return ret;
	if (found)
		return 0;
	ret = family == AF_INET6 ? nl_addr_add6(s, ifindex, ip, prefixlen, err, errlen)
				 : nl_addr_add4(s, ifindex, ip, prefixlen, err, errlen);
	if (ret && ret != -EEXIST)
		return ret;
	*changes |= PLUMB_CH_ADDR;
	return 0;
}

/* IPv6: fd00:ec2::254/128 and fe80::a9fe:a9fe/64 on veth-imds, a rule for
 * each to our table, the table's default by veth-imds. */
static int ensure_v6(struct nl_sock *s, int veth, unsigned *changes, char *err, size_t errlen)
{
	int ret;
	if ((ret = ensure_addr(s, veth, AF_INET6, ndp_imds_global, 128, changes, err, errlen)) ||
	    (ret = ensure_addr(s, veth, AF_INET6, ndp_imds_ll, 64, changes, err, errlen)) ||
	    (ret = ensure_rule(s, AF_INET6, ndp_imds_global, changes, err, errlen)) ||
	    (ret = ensure_rule(s, AF_INET6, ndp_imds_ll, changes, err, errlen)) ||
	    (ret = ensure_route(s, AF_INET6, veth, changes, err, errlen)))
		return ret;
	return 0;
}

int plumb_ensure(struct nl_sock *s, struct plumb_state *st, const struct nl_link *links,
		 size_t n, const uint8_t mac[6], uint32_t mtu, int want_v6, unsigned *changes,
		 char *err, size_t errlen)
{
	struct nl_link v, p;
	struct nl_link_set c;
	int ret;

	*changes = 0;
	if (!mtu)
		mtu = PLUMB_DEFAULT_MTU; /* no tap (passt): frames never cross it */
	if ((ret = ensure_pair(s, links, n, mac, mtu, &v, &p, changes, err, errlen)))
		goto out;
	st->veth = v.ifindex;
	st->peer = p.ifindex;
	st->mtu = mtu;

	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.mac = mac;
	if ((!v.has_mac || memcmp(v.mac, mac, 6) != 0) &&
	    (ret = set1(s, v.ifindex, &c, changes, PLUMB_CH_MAC, err, errlen)))
		goto out;
	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.mac = plumb_peer_mac;
	if ((!p.has_mac || memcmp(p.mac, plumb_peer_mac, 6) != 0) &&
	    (ret = set1(s, p.ifindex, &c, changes, PLUMB_CH_MAC, err, errlen)))
		goto out;
	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.mtu = mtu;
	if (p.mtu != mtu && (ret = set1(s, p.ifindex, &c, changes, PLUMB_CH_MTU, err, errlen)))
		goto out;
	if (v.mtu != mtu && (ret = set1(s, v.ifindex, &c, changes, PLUMB_CH_MTU, err, errlen)))
		goto out;
	/* An older sidecar enslaved veth-imds-br to the VM's bridge; now
	 * nothing may reach veth-imds but the steered frames. */
	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.nomaster = 1;
	if (p.master && (ret = set1(s, p.ifindex, &c, changes, PLUMB_CH_MASTER, err, errlen)))
		goto out;

	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.arp_ignore = PLUMB_VETH_ARP_IGNORE;
	if ((!v.has_inet_conf || v.arp_ignore != PLUMB_VETH_ARP_IGNORE) &&
	    (ret = set1(s, v.ifindex, &c, changes, PLUMB_CH_ARP, err, errlen)))
		goto out;

	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.up = 1;
	if (!(p.flags & IFF_UP) && (ret = set1(s, p.ifindex, &c, changes, PLUMB_CH_UP, err, errlen)))
		goto out;
	if (!(v.flags & IFF_UP) && (ret = set1(s, v.ifindex, &c, changes, PLUMB_CH_UP, err, errlen)))
		goto out;

	if ((ret = ensure_addr(s, v.ifindex, AF_INET, plumb_imds_ip, 32, changes, err, errlen)) ||
	    (ret = ensure_rule(s, AF_INET, plumb_imds_ip, changes, err, errlen)) ||
	    (ret = ensure_route(s, AF_INET, v.ifindex, changes, err, errlen)) ||
	    (ret = ensure_port_rule(s, st->port ? st->port : 80, changes, err, errlen)) ||
	    (ret = ensure_no_local(s, changes, err, errlen)))
		goto out;
	st->v6 = 0;
	if (want_v6) {
		char why[256];
		unsigned c6 = 0;
		ret = ensure_v6(s, v.ifindex, &c6, why, sizeof(why));
		if (ret == -EACCES || ret == -EAFNOSUPPORT || ret == -EOPNOTSUPP) {
			/* IPv6 off in the pod (disable_ipv6) or in the kernel:
			 * IPv4 alone, said once by the caller. */
			snprintf(st->v6_off, sizeof(st->v6_off), "%s", why);
		} else if (ret) {
			snprintf(err, errlen, "%s", why);
			goto out;
		} else {
			st->v6 = 1;
			st->v6_off[0] = '\0';
		}
		*changes |= c6;
	}
	ret = 0;
out:
	return ret;
}

struct locals {
	uint8_t *out; /* cap addresses of alen bytes */
	size_t alen;
	int ifindex[STEER_MAX_LOCAL6]; /* either family's */
	size_t n, cap;
};

_Static_assert(STEER_MAX_LOCAL6 >= STEER_MAX_LOCAL, "struct locals holds either family's");

/* An address of the pod a guest could be using as its source: IPv4's every
 * one but loopback's, the service's and our aliases'; IPv6's those of
 * global scope (a link-local source needs no alias, nor ::1) but the
 * service's and our aliases'. */
static int local_wanted(const struct nl_addr *a)
{
	static const uint8_t alias6[12] = {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01};
	if (a->family == AF_INET)
		return !(a->local[0] == 127 || memcmp(a->local, plumb_imds_ip, 4) == 0 ||
			 (a->local[0] == 192 && a->local[1] == 0 && a->local[2] == 0 &&
			  a->local[3] >= STEER_ALIAS_BASE));
	return a->scope == RT_SCOPE_UNIVERSE && a->local[0] != 0xff &&
	       memcmp(a->local, ndp_imds_global, 16) != 0 && memcmp(a->local, alias6, 12) != 0;
}

static int locals_cb(const struct nl_msgview *m, void *ud)
{
	struct locals *l = ud;
	struct nl_addr a;
	size_t at, al = l->alen;

	if (nl_parse_addr(m, &a) || a.family != (al == 4 ? AF_INET : AF_INET6) || !a.has_local ||
	    !local_wanted(&a))
		return 0;
	for (size_t i = 0; i < l->n; i++)
		if (memcmp(l->out + i * al, a.local, al) == 0)
			return 0; /* an interrupted dump repeats; one address twice */
	/* Insertion in (ifindex, address) order: the aliases stay the same
	 * for the same set of addresses, whatever the dump order. */
	for (at = l->n; at > 0; at--) {
		int c = l->ifindex[at - 1] - a.ifindex;
		if (c < 0 || (c == 0 && memcmp(l->out + (at - 1) * al, a.local, al) < 0))
			break;
	}
	if (l->n == l->cap) {
		if (at == l->n)
			return 0; /* sorts after everything kept: dropped */
		l->n--;
	}
	memmove(l->out + (at + 1) * al, l->out + at * al, (l->n - at) * al);
	memmove(l->ifindex + at + 1, l->ifindex + at, (l->n - at) * sizeof(*l->ifindex));
	memcpy(l->out + at * al, a.local, al);
	l->ifindex[at] = a.ifindex;
	l->n++;
	return 0;
}

int plumb_local_addrs(struct nl_sock *s, uint8_t (*out)[4], size_t cap, char *err, size_t errlen)
{
	struct locals l = {.out = out[0], .alen = 4,
			   .cap = cap < STEER_MAX_LOCAL ? cap : STEER_MAX_LOCAL};
	int ret = nl_dump_all(s, RTM_GETADDR, AF_INET, locals_cb, &l, err, errlen);
	return ret ? ret : (int)l.n;
}

int plumb_local_addrs6(struct nl_sock *s, uint8_t (*out)[16], size_t cap, char *err,
		       size_t errlen)
{
	struct locals l = {.out = out[0], .alen = 16,
			   .cap = cap < STEER_MAX_LOCAL6 ? cap : STEER_MAX_LOCAL6};
	int ret = nl_dump_all(s, RTM_GETADDR, AF_INET6, locals_cb, &l, err, errlen);
	return ret ? ret : (int)l.n;
}

/* A TCP listener of family on addr (a sockaddr_in or _in6), as
 * plumb_listener_open says. */
static int listener_open(int veth, const struct sockaddr *addr, socklen_t alen, unsigned hops,
			 int allow_lo, char *err, size_t errlen)
{
	const char *step = "socket";
	int family = addr->sa_family, one = 1, fd, ret, h = (int)hops;
	char where[INET6_ADDRSTRLEN + 16];

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	step = "SO_REUSEADDR";
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		goto fail;
	/* Answers go one link far (IMDS_HOP_LIMIT): the SYN-ACK already. */
	if (family == AF_INET6) {
		step = "IPV6_V6ONLY";
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
			goto fail;
		step = "IPV6_UNICAST_HOPS";
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &h, sizeof(h)))
			goto fail;
	} else {
		step = "IP_TTL";
		if (setsockopt(fd, IPPROTO_IP, IP_TTL, &h, sizeof(h)))
			goto fail;
	}
	/* The address is put on veth-imds by the same pass that opens this
	 * listener, and comes back after the veth is recreated: bind first
	 * (IP_FREEBIND applies to IPv6 sockets as well). */
	step = "IP_FREEBIND";
	if (setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)))
		goto fail;
	/* Bound by ifindex, not name: the device we looked at, not whatever
	 * carries the name by now. */
	step = "SO_BINDTOIFINDEX";
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &veth, sizeof(veth))) {
		char name[IF_NAMESIZE];
		if (errno != ENOPROTOOPT)
			goto fail;
		/* Before Linux 5.0: by name. */
		step = "SO_BINDTODEVICE";
		if (!if_indextoname((unsigned)veth, name) ||
		    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name, (socklen_t)strlen(name) + 1))
			goto fail;
	}
	step = "guard filter";
	if ((ret = arp_guard_attach(fd, veth, allow_lo))) {
		errno = -ret;
		goto fail;
	}
	step = "bind";
	if (bind(fd, addr, alen))
		goto fail;
	step = "listen";
	if (listen(fd, 511))
		goto fail;
	return fd;
fail:
	ret = -errno;
	if (family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)addr;
		char t[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, &s6->sin6_addr, t, sizeof(t));
		snprintf(where, sizeof(where), "[%s]:%u", t, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)addr;
		char t[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &s4->sin_addr, t, sizeof(t));
		snprintf(where, sizeof(where), "%s:%u", t, ntohs(s4->sin_port));
	}
	snprintf(err, errlen, "listener %s on ifindex %d: %s: %s", where, veth, step,
		 strerror(-ret));
	if (fd >= 0)
		close(fd);
	return ret;
}

int plumb_listener_open(int veth, const uint8_t ip[4], uint16_t port, unsigned hops, int allow_lo,
			char *err, size_t errlen)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	memcpy(&sin.sin_addr, ip, 4);
	return listener_open(veth, (struct sockaddr *)&sin, sizeof(sin), hops, allow_lo, err,
			     errlen);
}

int plumb_listener_open6(int veth, const uint8_t ip[16], uint16_t port, unsigned hops,
			 int allow_lo, char *err, size_t errlen)
{
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	memcpy(&sin6.sin6_addr, ip, 16);
	if (ip[0] == 0xfe && (ip[1] & 0xc0) == 0x80)
		sin6.sin6_scope_id = (uint32_t)veth; /* link-local: on veth-imds */
	return listener_open(veth, (struct sockaddr *)&sin6, sizeof(sin6), hops, allow_lo, err,
			     errlen);
}

int plumb_port_hold6(int veth, const uint8_t ip[16], uint16_t port)
{
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	int one = 1, fd, ret;

	memcpy(&sin6.sin6_addr, ip, 16);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* SO_REUSEADDR and never listening: a wildcard listener with
	 * SO_REUSEADDR (passt's) binds the port next to it, a bind without
	 * (passt's probe) fails with EADDRINUSE. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &veth, sizeof(veth)) ||
	    bind(fd, (struct sockaddr *)&sin6, sizeof(sin6))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}
