#include "plumb.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/fib_rules.h>

#ifndef SO_BINDTOIFINDEX
#define SO_BINDTOIFINDEX 62 /* Linux 5.0; musl's headers may lack it */
#endif

const uint8_t plumb_imds_ip[4] = {169, 254, 169, 254};
const uint8_t plumb_peer_mac[6] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xfe};
static const uint8_t linklocal_net[4] = {169, 254, 0, 0};

/* ---- pure helpers -------------------------------------------------------- */

int plumb_pick_bridge(const struct nl_link *links, size_t n, const char *want)
{
	int best = -1;
	for (size_t i = 0; i < n; i++) {
		const struct nl_link *l = &links[i];
		if (strcmp(l->kind, "bridge") != 0)
			continue;
		if (want && want[0]) {
			if (strcmp(l->name, want) == 0)
				return (int)i;
			continue;
		}
		if (strncmp(l->name, "k6t-", 4) == 0 &&
		    (best < 0 || l->ifindex < links[best].ifindex))
			best = (int)i;
	}
	return best;
}

int plumb_is_tap(const struct nl_link *l)
{
	return strcmp(l->kind, "tun") == 0 || strncmp(l->name, "tap", 3) == 0;
}

void plumb_classify_ports(struct plumb_state *st, const struct nl_link *links, size_t n)
{
	st->ntaps = 0;
	st->nforeign = 0;
	for (size_t i = 0; i < n && st->bridge; i++) {
		const struct nl_link *l = &links[i];
		if (l->master != st->bridge || l->ifindex == st->peer)
			continue;
		if (plumb_is_tap(l) && st->ntaps < PLUMB_MAX_TAPS)
			st->taps[st->ntaps++] = l->ifindex;
		else
			st->nforeign++;
	}
}

int plumb_is_tap_port(const struct plumb_state *st, int ifindex)
{
	for (size_t i = 0; i < st->ntaps; i++)
		if (st->taps[i] == ifindex)
			return 1;
	return 0;
}

/* ---- effects ------------------------------------------------------------- */

static const struct nl_link *find_name(const struct nl_link *links, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(links[i].name, name) == 0)
			return &links[i];
	return NULL;
}

static int pair_ok(const struct nl_link *v, const struct nl_link *p)
{
	return v && p && strcmp(v->kind, "veth") == 0 && strcmp(p->kind, "veth") == 0 &&
	       v->link == p->ifindex && p->link == v->ifindex && !v->link_netnsid_set &&
	       !p->link_netnsid_set;
}

static int set1(struct nl_sock *s, int ifindex, const struct nl_link_set *c, unsigned *changes,
		char *err, size_t errlen)
{
	int ret = nl_link_set(s, ifindex, c, err, errlen);
	if (!ret)
		(*changes)++;
	return ret;
}

/* veth-imds and veth-imds-br exist, are a pair, and *v / *p describe them
 * (fresh from the kernel after any creation). */
static int ensure_pair(struct nl_sock *s, struct plumb_state *st, const struct nl_link *links,
		       size_t n, uint32_t mtu, struct nl_link *v, struct nl_link *p,
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
		if (v0->has_mac && !st->have_mac) {
			memcpy(st->veth_mac, v0->mac, 6);
			st->have_mac = 1;
		}
		if ((ret = nl_link_del(s, v0->ifindex, err, errlen)) && ret != -ENODEV)
			return ret;
		(*changes)++;
	}
	if (p0 && !(v0 && v0->link == p0->ifindex)) {
		if ((ret = nl_link_del(s, p0->ifindex, err, errlen)) && ret != -ENODEV)
			return ret;
		(*changes)++;
	}
	ret = nl_veth_add(s, PLUMB_VETH, PLUMB_PEER, mtu, st->have_mac ? st->veth_mac : NULL,
			  plumb_peer_mac, err, errlen);
	if (ret)
		return ret;
	(*changes)++;
	if ((ret = nl_get_link(s, PLUMB_VETH, v, err, errlen)) ||
	    (ret = nl_get_link(s, PLUMB_PEER, p, err, errlen)))
		return ret;
	/* No IPv6 link-local on either end: its DAD and MLD chatter would
	 * go out on the VM's L2 for nothing.  Best effort: fails where IPv6
	 * is off, which is just as good. */
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

struct find_rule {
	int found;
};

static int is_our_rule(const struct nl_rule *r)
{
	return r->family == AF_INET && r->action == FR_ACT_TO_TBL && r->table == PLUMB_TABLE &&
	       r->priority == PLUMB_RULE_PREF && r->has_src && r->src_len == 32 &&
	       memcmp(r->src, plumb_imds_ip, 4) == 0 && !r->has_dst && !r->dst_len &&
	       !r->has_iif && !r->has_oif && !r->has_fwmark;
}

static int find_rule_cb(const struct nl_msgview *m, void *ud)
{
	struct find_rule *f = ud;
	struct nl_rule r;
	if (!nl_parse_rule(m, &r) && is_our_rule(&r))
		f->found = 1;
	return 0;
}

struct find_route {
	int oif;
	int found;      /* the right route */
	int stale;      /* our prefix in our table, but wrong */
	struct nl_route old;
};

static int find_route_cb(const struct nl_msgview *m, void *ud)
{
	struct find_route *f = ud;
	struct nl_route r;
	if (nl_parse_route(m, &r) || r.family != AF_INET || r.table != PLUMB_TABLE)
		return 0;
	if (r.dst_len != 16 || !r.has_dst || memcmp(r.dst, linklocal_net, 4) != 0)
		return 0;
	if (r.oif == f->oif && !r.has_gw && r.type == RTN_UNICAST && r.has_prefsrc &&
	    memcmp(r.prefsrc, plumb_imds_ip, 4) == 0) {
		f->found = 1;
	} else {
		f->stale = 1;
		f->old = r;
	}
	return 0;
}

int plumb_ensure(struct nl_sock *s, struct plumb_state *st, const struct nl_link *links,
		 size_t n, int bi, unsigned *changes, char *err, size_t errlen)
{
	const struct nl_link *b = &links[bi];
	struct nl_link v, p;
	struct nl_link_set c;
	struct find_addr fa;
	struct find_rule fr = {0};
	struct find_route ft;
	int ret;

	*changes = 0;
	st->bridge = b->ifindex;
	snprintf(st->bridge_name, sizeof(st->bridge_name), "%s", b->name);
	st->mtu = b->mtu;

	if ((ret = ensure_pair(s, st, links, n, b->mtu, &v, &p, changes, err, errlen)))
		goto out;
	st->veth = v.ifindex;
	st->peer = p.ifindex;
	if (v.has_mac) {
		memcpy(st->veth_mac, v.mac, 6);
		st->have_mac = 1;
	}

	/* MAC and MTU before enslaving: a port with a lower MAC or a smaller
	 * MTU than the bridge would pull an auto-configured bridge to it. */
	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.mac = plumb_peer_mac;
	if ((!p.has_mac || memcmp(p.mac, plumb_peer_mac, 6) != 0) &&
	    (ret = set1(s, p.ifindex, &c, changes, err, errlen)))
		goto out;
	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.mtu = b->mtu;
	if (b->mtu && p.mtu != b->mtu && (ret = set1(s, p.ifindex, &c, changes, err, errlen)))
		goto out;
	if (b->mtu && v.mtu != b->mtu && (ret = set1(s, v.ifindex, &c, changes, err, errlen)))
		goto out;

	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.master = b->ifindex;
	if (p.master != b->ifindex && (ret = set1(s, p.ifindex, &c, changes, err, errlen)))
		goto out;

	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.arp_ignore = PLUMB_VETH_ARP_IGNORE;
	if ((!v.has_inet_conf || v.arp_ignore != PLUMB_VETH_ARP_IGNORE) &&
	    (ret = set1(s, v.ifindex, &c, changes, err, errlen)))
		goto out;
	/* Raise the bridge only from 0: a stricter value someone chose
	 * (2, 8) already keeps the kernel from answering for our address. */
	c.arp_ignore = PLUMB_BRIDGE_ARP_IGNORE;
	if (b->has_inet_conf && b->arp_ignore == 0 &&
	    (ret = set1(s, b->ifindex, &c, changes, err, errlen)))
		goto out;

	c = (struct nl_link_set)NL_LINK_SET_INIT;
	c.up = 1;
	if (!(p.flags & IFF_UP) && (ret = set1(s, p.ifindex, &c, changes, err, errlen)))
		goto out;
	if (!(v.flags & IFF_UP) && (ret = set1(s, v.ifindex, &c, changes, err, errlen)))
		goto out;

	fa = (struct find_addr){v.ifindex, 0};
	if ((ret = nl_dump_all(s, RTM_GETADDR, AF_INET, find_addr_cb, &fa, err, errlen)))
		goto out;
	if (!fa.found) {
		ret = nl_addr_add4(s, v.ifindex, plumb_imds_ip, 32, err, errlen);
		if (ret && ret != -EEXIST)
			goto out;
		(*changes)++;
	}

	if ((ret = nl_dump_all(s, RTM_GETRULE, AF_INET, find_rule_cb, &fr, err, errlen)))
		goto out;
	if (!fr.found) {
		ret = nl_rule_add4(s, plumb_imds_ip, 32, PLUMB_TABLE, PLUMB_RULE_PREF, err, errlen);
		if (ret && ret != -EEXIST)
			goto out;
		(*changes)++;
	}

	ft = (struct find_route){.oif = v.ifindex};
	if ((ret = nl_dump_all(s, RTM_GETROUTE, AF_INET, find_route_cb, &ft, err, errlen)))
		goto out;
	if (!ft.found) {
		/* Replace: a stale copy (another oif) is corrected in place. */
		ret = nl_route_add4(s, PLUMB_TABLE, linklocal_net, 16, v.ifindex, plumb_imds_ip, 1,
				    err, errlen);
		if (ret)
			goto out;
		(*changes)++;
	}
	ret = 0;
out:
	return ret;
}

int plumb_listener_open(int ifindex, const uint8_t ip[4], uint16_t port, unsigned hops,
			const struct arp_macset *allow, int open, char *err, size_t errlen)
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
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &ifindex, sizeof(ifindex))) {
		char name[IF_NAMESIZE];
		if (errno != ENOPROTOOPT)
			goto fail;
		/* Before Linux 5.0: by name. */
		step = "SO_BINDTODEVICE";
		if (!if_indextoname((unsigned)ifindex, name) ||
		    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name, (socklen_t)strlen(name) + 1))
			goto fail;
	}
	step = "guard filter";
	if ((ret = arp_guard_attach(fd, allow, open))) {
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
		 ip[3], port, ifindex, step, strerror(errno));
	if (fd >= 0)
		close(fd);
	return ret;
}
