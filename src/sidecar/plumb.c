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

#ifndef SO_BINDTOIFINDEX
#define SO_BINDTOIFINDEX 62 /* Linux 5.0; musl's headers may lack it */
#endif

const uint8_t plumb_imds_ip[4] = {169, 254, 169, 254};
const uint8_t plumb_peer_mac[6] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xfe};
static const uint8_t any4[4] = {0, 0, 0, 0};

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
	int found;
};

static int find_addr_cb(const struct nl_msgview *m, void *ud)
{
	struct find_addr *f = ud;
	struct nl_addr a;
	if (nl_parse_addr(m, &a))
		return 0;
	if (a.ifindex == f->ifindex && a.family == AF_INET && a.prefixlen == 32 && a.has_local &&
	    memcmp(a.local, plumb_imds_ip, 4) == 0)
		f->found = 1;
	return 0;
}

static int is_our_rule(const struct nl_rule *r)
{
	return r->family == AF_INET && r->action == FR_ACT_TO_TBL && r->table == PLUMB_TABLE &&
	       r->priority == PLUMB_RULE_PREF && r->has_src && r->src_len == 32 &&
	       memcmp(r->src, plumb_imds_ip, 4) == 0 && !r->has_dst && !r->dst_len &&
	       !r->has_iif && !r->has_oif && !r->has_fwmark;
}

static int find_rule_cb(const struct nl_msgview *m, void *ud)
{
	int *found = ud;
	struct nl_rule r;
	if (!nl_parse_rule(m, &r) && is_our_rule(&r))
		*found = 1;
	return 0;
}

#define STALE_MAX 8

struct find_route {
	int oif;
	int found;      /* the right route */
	size_t nstale;  /* other routes in our table (an older version's, a stray) */
	uint8_t stale[STALE_MAX][5]; /* dst, dst_len */
};

static int find_route_cb(const struct nl_msgview *m, void *ud)
{
	struct find_route *f = ud;
	struct nl_route r;
	if (nl_parse_route(m, &r) || r.family != AF_INET || r.table != PLUMB_TABLE)
		return 0;
	if (r.dst_len == 0 && r.oif == f->oif && !r.has_gw && r.type == RTN_UNICAST &&
	    r.has_prefsrc && memcmp(r.prefsrc, plumb_imds_ip, 4) == 0) {
		f->found = 1;
	} else if (r.dst_len != 0 && f->nstale < STALE_MAX) {
		memcpy(f->stale[f->nstale], r.has_dst ? r.dst : any4, 4);
		f->stale[f->nstale++][4] = r.dst_len;
	}
	return 0;
}

int plumb_ensure(struct nl_sock *s, struct plumb_state *st, const struct nl_link *links,
		 size_t n, const uint8_t mac[6], uint32_t mtu, unsigned *changes, char *err,
		 size_t errlen)
{
	struct nl_link v, p;
	struct nl_link_set c;
	struct find_addr fa;
	struct find_route ft;
	int found_rule = 0;
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

	fa = (struct find_addr){v.ifindex, 0};
	if ((ret = nl_dump_all(s, RTM_GETADDR, AF_INET, find_addr_cb, &fa, err, errlen)))
		goto out;
	if (!fa.found) {
		ret = nl_addr_add4(s, v.ifindex, plumb_imds_ip, 32, err, errlen);
		if (ret && ret != -EEXIST)
			goto out;
		*changes |= PLUMB_CH_ADDR;
	}

	if ((ret = nl_dump_all(s, RTM_GETRULE, AF_INET, find_rule_cb, &found_rule, err, errlen)))
		goto out;
	if (!found_rule) {
		ret = nl_rule_add4(s, plumb_imds_ip, 32, PLUMB_TABLE, PLUMB_RULE_PREF, err, errlen);
		if (ret && ret != -EEXIST)
			goto out;
		*changes |= PLUMB_CH_RULE;
	}

	ft = (struct find_route){.oif = v.ifindex};
	if ((ret = nl_dump_all(s, RTM_GETROUTE, AF_INET, find_route_cb, &ft, err, errlen)))
		goto out;
	for (size_t i = 0; i < ft.nstale; i++) {
		ret = nl_route_del4(s, PLUMB_TABLE, ft.stale[i], ft.stale[i][4], err, errlen);
		if (ret && ret != -ESRCH)
			goto out;
		*changes |= PLUMB_CH_ROUTE;
	}
	if (!ft.found) {
		/* Replace: a stale default (another oif) is corrected in place. */
		ret = nl_route_add4(s, PLUMB_TABLE, any4, 0, v.ifindex, plumb_imds_ip, 1, err,
				    errlen);
		if (ret)
			goto out;
		*changes |= PLUMB_CH_ROUTE;
	}
	ret = 0;
out:
	return ret;
}

struct locals {
	uint8_t (*out)[4];
	int ifindex[STEER_MAX_LOCAL];
	size_t n, cap;
};

static int locals_cb(const struct nl_msgview *m, void *ud)
{
	struct locals *l = ud;
	struct nl_addr a;
	size_t at;

	if (nl_parse_addr(m, &a) || a.family != AF_INET || !a.has_local)
		return 0;
	if (a.local[0] == 127 || memcmp(a.local, plumb_imds_ip, 4) == 0 ||
	    (a.local[0] == 192 && a.local[1] == 0 && a.local[2] == 0 &&
	     a.local[3] >= STEER_ALIAS_BASE))
		return 0;
	for (size_t i = 0; i < l->n; i++)
		if (memcmp(l->out[i], a.local, 4) == 0)
			return 0; /* an interrupted dump repeats; one address twice */
	/* Insertion in (ifindex, address) order: the aliases stay the same
	 * for the same set of addresses, whatever the dump order. */
	for (at = l->n; at > 0; at--) {
		int c = l->ifindex[at - 1] - a.ifindex;
		if (c < 0 || (c == 0 && memcmp(l->out[at - 1], a.local, 4) < 0))
			break;
	}
	if (l->n == l->cap) {
		if (at == l->n)
			return 0; /* sorts after everything kept: dropped */
		l->n--;
	}
	memmove(l->out + at + 1, l->out + at, (l->n - at) * sizeof(*l->out));
	memmove(l->ifindex + at + 1, l->ifindex + at, (l->n - at) * sizeof(*l->ifindex));
	memcpy(l->out[at], a.local, 4);
	l->ifindex[at] = a.ifindex;
	l->n++;
	return 0;
}

int plumb_local_addrs(struct nl_sock *s, uint8_t (*out)[4], size_t cap, char *err, size_t errlen)
{
	struct locals l = {.out = out, .cap = cap < STEER_MAX_LOCAL ? cap : STEER_MAX_LOCAL};
	int ret = nl_dump_all(s, RTM_GETADDR, AF_INET, locals_cb, &l, err, errlen);
	return ret ? ret : (int)l.n;
}

int plumb_listener_open(int veth, const uint8_t ip[4], uint16_t port, unsigned hops, int allow_lo,
			char *err, size_t errlen)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	const char *step = "socket";
	int one = 1, fd, ret;

	memcpy(&sin.sin_addr, ip, 4);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	step = "SO_REUSEADDR";
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		goto fail;
	/* Answers go one link far (IMDS_HOP_LIMIT): the SYN-ACK already. */
	step = "IP_TTL";
	int ttl = (int)hops;
	if (setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)))
		goto fail;
	/* The address is put on veth-imds by the same pass that opens this
	 * listener, and comes back after the veth is recreated: bind first. */
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
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
		goto fail;
	step = "listen";
	if (listen(fd, 511))
		goto fail;
	return fd;
fail:
	ret = -errno;
	snprintf(err, errlen, "listener %u.%u.%u.%u:%u on ifindex %d: %s: %s", ip[0], ip[1], ip[2],
		 ip[3], port, veth, step, strerror(errno));
	if (fd >= 0)
		close(fd);
	return ret;
}
