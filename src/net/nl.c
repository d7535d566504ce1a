#include "nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/neighbour.h>
#include <linux/veth.h>

/* Kernel headers' alignment macros mix int and unsigned; these keep
 * -Wconversion quiet and say the same thing. */
#define AL4(x) (((size_t)(x) + 3u) & ~(size_t)3u)
#define HDRLEN AL4(sizeof(struct nlmsghdr))
#define ATTRHDR ((size_t)4)

/* A dump reply datagram is at most 32 KiB: the kernel sizes dump skbs by
 * the reader's buffer, capped there (netlink_dump, max_recvmsg_len). */
#define NL_RECV_BUF 32768
#define NL_DUMP_TRIES 5

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- pure parser --------------------------------------------------------- */

int nl_next(const uint8_t *buf, size_t len, size_t *off, struct nl_msgview *m)
{
	struct nlmsghdr h;
	size_t rest;

	if (*off >= len)
		return 0;
	rest = len - *off;
	if (rest < sizeof(h))
		return -EBADMSG;
	memcpy(&h, buf + *off, sizeof(h));
	if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > rest)
		return -EBADMSG;
	m->type = h.nlmsg_type;
	m->flags = h.nlmsg_flags;
	m->seq = h.nlmsg_seq;
	m->portid = h.nlmsg_pid;
	m->payload.p = buf + *off + HDRLEN;
	m->payload.n = h.nlmsg_len - HDRLEN;
	/* The last message of a datagram may omit its padding. */
	*off += AL4(h.nlmsg_len) < rest ? AL4(h.nlmsg_len) : rest;
	return 1;
}

/* Fills tb[0..max] with the attributes in p[0..n); unknown types are
 * skipped, a later duplicate wins (as the kernel's nla_parse does). */
static int attrs(const uint8_t *p, size_t n, struct nl_span *tb, unsigned max)
{
	for (unsigned i = 0; i <= max; i++)
		tb[i] = (struct nl_span){0};
	while (n >= ATTRHDR) {
		struct rtattr a;
		size_t step;
		unsigned type;

		memcpy(&a, p, sizeof(a));
		if (a.rta_len < ATTRHDR || a.rta_len > n)
			return -EBADMSG;
		type = (unsigned)a.rta_type & (unsigned)NLA_TYPE_MASK;
		if (type <= max)
			tb[type] = (struct nl_span){p + ATTRHDR, a.rta_len - ATTRHDR};
		step = AL4(a.rta_len);
		if (step > n)
			step = n;
		p += step;
		n -= step;
	}
	return n == 0 ? 0 : -EBADMSG;
}

static int get_u32(struct nl_span s, uint32_t *v)
{
	if (s.n < sizeof(*v))
		return -EBADMSG;
	memcpy(v, s.p, sizeof(*v));
	return 0;
}

static int get_u16(struct nl_span s, uint16_t *v)
{
	if (s.n < sizeof(*v))
		return -EBADMSG;
	memcpy(v, s.p, sizeof(*v));
	return 0;
}

/* A string attribute: up to its first NUL; must fit cap with the NUL. */
static int get_str(struct nl_span s, char *dst, size_t cap)
{
	const uint8_t *nul = memchr(s.p, 0, s.n);
	size_t n = nul ? (size_t)(nul - s.p) : s.n;
	if (n >= cap)
		return -EBADMSG;
	memcpy(dst, s.p, n);
	dst[n] = '\0';
	return 0;
}

static int addr_len(uint8_t family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : -1;
}

/* An address attribute of the family's exact length, or -EBADMSG. */
static int get_addr(struct nl_span s, uint8_t family, uint8_t out[16], int *has)
{
	int alen = addr_len(family);
	if (!s.p)
		return 0;
	if (alen < 0 || s.n != (size_t)alen)
		return -EBADMSG;
	memcpy(out, s.p, s.n);
	*has = 1;
	return 0;
}

/* Optional attributes: absent leaves *v as it is; present must be whole. */
static int opt_u32(struct nl_span s, uint32_t *v)
{
	return s.p ? get_u32(s, v) : 0;
}

static int opt_u16(struct nl_span s, uint16_t *v)
{
	return s.p ? get_u16(s, v) : 0;
}

/* An interface index (kernel u32, ours int). */
static int opt_ifindex(struct nl_span s, int *v)
{
	uint32_t u;
	int ret;
	if (!s.p)
		return 0;
	if ((ret = get_u32(s, &u)))
		return ret;
	*v = (int)u;
	return 0;
}

/* The shape every rtnetlink message shares: one of two types (-ENOMSG
 * otherwise), a fixed header copied out to hdr, then attributes up to max
 * (-EBADMSG when the header or an attribute does not fit). */
static int msg_open(const struct nl_msgview *m, uint16_t t_new, uint16_t t_del, void *hdr,
		    size_t hdrlen, struct nl_span *tb, unsigned max)
{
	const size_t hl = AL4(hdrlen);

	if (m->type != t_new && m->type != t_del)
		return -ENOMSG;
	if (m->payload.n < hl)
		return -EBADMSG;
	memcpy(hdr, m->payload.p, hdrlen);
	return attrs(m->payload.p + hl, m->payload.n - hl, tb, max);
}

static int parse_linkinfo(struct nl_span s, struct nl_link *out)
{
	struct nl_span tb[IFLA_INFO_MAX + 1];
	int ret = attrs(s.p, s.n, tb, IFLA_INFO_MAX);
	if (ret)
		return ret;
	if (tb[IFLA_INFO_KIND].p)
		return get_str(tb[IFLA_INFO_KIND], out->kind, sizeof(out->kind));
	return 0;
}

/* IFLA_AF_SPEC holds one nest per address family; AF_INET's has
 * IFLA_INET_CONF, a flat array of u32 where entry i is IPV4_DEVCONF i+1
 * (inet_fill_link_af). */
static int parse_afspec(struct nl_span s, struct nl_link *out)
{
	struct nl_span af[AF_INET + 1];
	struct nl_span in[IFLA_INET_MAX + 1];
	struct nl_span conf;
	int ret = attrs(s.p, s.n, af, AF_INET);
	if (ret || !af[AF_INET].p)
		return ret;
	ret = attrs(af[AF_INET].p, af[AF_INET].n, in, IFLA_INET_MAX);
	if (ret || !in[IFLA_INET_CONF].p)
		return ret;
	conf = in[IFLA_INET_CONF];
	if (conf.n % 4)
		return -EBADMSG;
	out->has_inet_conf = 1;
	if (conf.n >= (size_t)4 * IPV4_DEVCONF_ARP_IGNORE)
		memcpy(&out->arp_ignore, conf.p + (size_t)4 * (IPV4_DEVCONF_ARP_IGNORE - 1), 4);
	if (conf.n >= (size_t)4 * IPV4_DEVCONF_RP_FILTER)
		memcpy(&out->rp_filter, conf.p + (size_t)4 * (IPV4_DEVCONF_RP_FILTER - 1), 4);
	return 0;
}

int nl_parse_link(const struct nl_msgview *m, struct nl_link *out)
{
	struct ifinfomsg ifi;
	struct nl_span tb[IFLA_MAX + 1];
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = msg_open(m, RTM_NEWLINK, RTM_DELLINK, &ifi, sizeof(ifi), tb, IFLA_MAX)))
		return ret;
	if (ifi.ifi_index <= 0 || !tb[IFLA_IFNAME].p)
		return -EBADMSG;
	out->ifindex = ifi.ifi_index;
	out->flags = ifi.ifi_flags;
	out->type = ifi.ifi_type;
	if ((ret = get_str(tb[IFLA_IFNAME], out->name, sizeof(out->name))))
		return ret;
	if ((ret = opt_u32(tb[IFLA_MTU], &out->mtu)) ||
	    (ret = opt_ifindex(tb[IFLA_MASTER], &out->master)) ||
	    (ret = opt_ifindex(tb[IFLA_LINK], &out->link)))
		return ret;
	out->link_netnsid_set = tb[IFLA_LINK_NETNSID].p != NULL;
	if (tb[IFLA_ADDRESS].n == 6) {
		memcpy(out->mac, tb[IFLA_ADDRESS].p, 6);
		out->has_mac = 1;
	}
	if (tb[IFLA_LINKINFO].p && (ret = parse_linkinfo(tb[IFLA_LINKINFO], out)))
		return ret;
	if (tb[IFLA_AF_SPEC].p && (ret = parse_afspec(tb[IFLA_AF_SPEC], out)))
		return ret;
	return 0;
}

int nl_parse_addr(const struct nl_msgview *m, struct nl_addr *out)
{
	struct ifaddrmsg ifa;
	struct nl_span tb[IFA_MAX + 1];
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = msg_open(m, RTM_NEWADDR, RTM_DELADDR, &ifa, sizeof(ifa), tb, IFA_MAX)))
		return ret;
	if (addr_len(ifa.ifa_family) < 0 || ifa.ifa_prefixlen > 8 * addr_len(ifa.ifa_family))
		return -EBADMSG;
	out->ifindex = (int)ifa.ifa_index;
	out->family = ifa.ifa_family;
	out->prefixlen = ifa.ifa_prefixlen;
	out->scope = ifa.ifa_scope;
	/* IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer
	 * on point-to-point links and equal to it elsewhere. */
	return get_addr(tb[IFA_LOCAL].p ? tb[IFA_LOCAL] : tb[IFA_ADDRESS], ifa.ifa_family,
			out->local, &out->has_local);
}

int nl_parse_route(const struct nl_msgview *m, struct nl_route *out)
{
	struct rtmsg rtm;
	struct nl_span tb[RTA_MAX + 1];
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = msg_open(m, RTM_NEWROUTE, RTM_DELROUTE, &rtm, sizeof(rtm), tb, RTA_MAX)))
		return ret;
	out->family = rtm.rtm_family;
	out->dst_len = rtm.rtm_dst_len;
	out->scope = rtm.rtm_scope;
	out->type = rtm.rtm_type;
	out->protocol = rtm.rtm_protocol;
	out->table = rtm.rtm_table;
	/* Other families (multicast, MPLS) are passed on unparsed. */
	if (addr_len(rtm.rtm_family) < 0)
		return 0;
	if (rtm.rtm_dst_len > 8 * addr_len(rtm.rtm_family))
		return -EBADMSG;
	if ((ret = opt_u32(tb[RTA_TABLE], &out->table)) ||
	    (ret = get_addr(tb[RTA_DST], rtm.rtm_family, out->dst, &out->has_dst)) ||
	    (ret = get_addr(tb[RTA_GATEWAY], rtm.rtm_family, out->gw, &out->has_gw)) ||
	    (ret = get_addr(tb[RTA_PREFSRC], rtm.rtm_family, out->prefsrc, &out->has_prefsrc)) ||
	    (ret = opt_ifindex(tb[RTA_OIF], &out->oif)))
		return ret;
	return opt_u32(tb[RTA_PRIORITY], &out->priority);
}

int nl_parse_rule(const struct nl_msgview *m, struct nl_rule *out)
{
	struct fib_rule_hdr frh;
	struct nl_span tb[FRA_MAX + 1];
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = msg_open(m, RTM_NEWRULE, RTM_DELRULE, &frh, sizeof(frh), tb, FRA_MAX)))
		return ret;
	out->family = frh.family;
	out->src_len = frh.src_len;
	out->dst_len = frh.dst_len;
	out->action = frh.action;
	out->table = frh.table;
	if (addr_len(frh.family) < 0)
		return 0;
	if (frh.src_len > 8 * addr_len(frh.family) || frh.dst_len > 8 * addr_len(frh.family))
		return -EBADMSG;
	if ((ret = opt_u32(tb[FRA_TABLE], &out->table)) ||
	    (ret = opt_u32(tb[FRA_PRIORITY], &out->priority)) ||
	    (ret = get_addr(tb[FRA_SRC], frh.family, out->src, &out->has_src)) ||
	    (ret = get_addr(tb[FRA_DST], frh.family, out->dst, &out->has_dst)))
		return ret;
	out->has_iif = tb[FRA_IIFNAME].p != NULL;
	out->has_oif = tb[FRA_OIFNAME].p != NULL;
	out->has_fwmark = tb[FRA_FWMARK].p != NULL;
	out->has_sport = tb[FRA_SPORT_RANGE].p != NULL;
	if (tb[FRA_IP_PROTO].p) {
		if (tb[FRA_IP_PROTO].n != 1)
			return -EBADMSG;
		out->has_ipproto = 1;
		out->ipproto = *(const uint8_t *)tb[FRA_IP_PROTO].p;
	}
	if (tb[FRA_DPORT_RANGE].p) {
		struct fib_rule_port_range pr;
		if (tb[FRA_DPORT_RANGE].n != sizeof(pr))
			return -EBADMSG;
		memcpy(&pr, tb[FRA_DPORT_RANGE].p, sizeof(pr));
		out->has_dport = 1;
		out->dport_lo = pr.start;
		out->dport_hi = pr.end;
	}
	return 0;
}

int nl_parse_neigh(const struct nl_msgview *m, struct nl_neigh *out)
{
	struct ndmsg ndm;
	struct nl_span tb[NDA_MAX + 1];
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = msg_open(m, RTM_NEWNEIGH, RTM_DELNEIGH, &ndm, sizeof(ndm), tb, NDA_MAX)))
		return ret;
	out->family = ndm.ndm_family;
	out->ifindex = ndm.ndm_ifindex;
	out->state = ndm.ndm_state;
	out->flags = ndm.ndm_flags;
	if (tb[NDA_LLADDR].n == 6) {
		memcpy(out->lladdr, tb[NDA_LLADDR].p, 6);
		out->has_lladdr = 1;
	}
	if ((ret = opt_ifindex(tb[NDA_MASTER], &out->master)))
		return ret;
	return opt_u16(tb[NDA_VLAN], &out->vlan);
}

int nl_parse_error(const struct nl_msgview *m, struct nl_error *out)
{
	struct nl_span tb[NLMSGERR_ATTR_MAX + 1];
	struct nlmsgerr e;
	size_t tlv_off;
	int32_t code;
	int ret;

	memset(out, 0, sizeof(*out));
	if (m->type == NLMSG_DONE) {
		/* A dump's end: an int (its error) and, with ext-ack, TLVs. */
		if (m->payload.n < sizeof(code))
			return -EBADMSG;
		memcpy(&code, m->payload.p, sizeof(code));
		tlv_off = sizeof(code);
	} else if (m->type == NLMSG_ERROR) {
		if (m->payload.n < sizeof(e))
			return -EBADMSG;
		memcpy(&e, m->payload.p, sizeof(e));
		code = e.error;
		out->req_seq = e.msg.nlmsg_seq;
		out->req_portid = e.msg.nlmsg_pid;
		tlv_off = sizeof(e);
		/* Without NETLINK_CAP_ACK (or on an ack) the request's own
		 * payload is echoed between the header and the TLVs. */
		if (!(m->flags & NLM_F_CAPPED) && code != 0) {
			if (e.msg.nlmsg_len < HDRLEN)
				return -EBADMSG;
			tlv_off += AL4(e.msg.nlmsg_len - HDRLEN);
		}
	} else {
		return -ENOMSG;
	}
	if (code > 0 || code < -4095)
		return -EBADMSG;
	out->error = code;
	if (!(m->flags & NLM_F_ACK_TLVS) || tlv_off >= m->payload.n)
		return 0;
	ret = attrs(m->payload.p + tlv_off, m->payload.n - tlv_off, tb, NLMSGERR_ATTR_MAX);
	if (ret)
		return ret;
	if (tb[NLMSGERR_ATTR_MSG].p) {
		const uint8_t *nul = memchr(tb[NLMSGERR_ATTR_MSG].p, 0, tb[NLMSGERR_ATTR_MSG].n);
		out->msg.p = tb[NLMSGERR_ATTR_MSG].p;
		out->msg.n = nul ? (size_t)(nul - out->msg.p) : tb[NLMSGERR_ATTR_MSG].n;
	}
	return 0;
}

/* ---- building requests --------------------------------------------------- */

static int put_raw(struct nlmsghdr *n, size_t maxlen, const void *data, size_t len)
{
	size_t at = AL4(n->nlmsg_len);
	if (at > maxlen || AL4(len) > maxlen - at)
		return -EMSGSIZE;
	memset((uint8_t *)n + at, 0, AL4(len));
	if (len)
		memcpy((uint8_t *)n + at, data, len);
	n->nlmsg_len = (uint32_t)(at + AL4(len));
	return 0;
}

int nl_attr_put(struct nlmsghdr *n, size_t maxlen, uint16_t type, const void *data, size_t len)
{
	size_t at = AL4(n->nlmsg_len);
	struct rtattr a;

	if (len > UINT16_MAX - ATTRHDR || at > maxlen || AL4(ATTRHDR + len) > maxlen - at)
		return -EMSGSIZE;
	a.rta_len = (unsigned short)(ATTRHDR + len);
	a.rta_type = type;
	memset((uint8_t *)n + at, 0, AL4(ATTRHDR + len));
	memcpy((uint8_t *)n + at, &a, sizeof(a));
	if (len)
		memcpy((uint8_t *)n + at + ATTRHDR, data, len);
	n->nlmsg_len = (uint32_t)(at + AL4(ATTRHDR + len));
	return 0;
}

int nl_attr_put_u8(struct nlmsghdr *n, size_t maxlen, uint16_t type, uint8_t v)
{
	return nl_attr_put(n, maxlen, type, &v, sizeof(v));
}

int nl_attr_put_u32(struct nlmsghdr *n, size_t maxlen, uint16_t type, uint32_t v)
{
	return nl_attr_put(n, maxlen, type, &v, sizeof(v));
}

int nl_attr_put_str(struct nlmsghdr *n, size_t maxlen, uint16_t type, const char *s)
{
	return nl_attr_put(n, maxlen, type, s, strlen(s) + 1);
}

struct rtattr *nl_nest_begin(struct nlmsghdr *n, size_t maxlen, uint16_t type)
{
	struct rtattr *nest = (struct rtattr *)(void *)((uint8_t *)n + AL4(n->nlmsg_len));
	if (nl_attr_put(n, maxlen, type | NLA_F_NESTED, NULL, 0))
		return NULL;
	return nest;
}

void nl_nest_end(struct nlmsghdr *n, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)((uint8_t *)n + n->nlmsg_len - (uint8_t *)nest);
}

/* ---- sockets ------------------------------------------------------------- */

void nl_sock_init(struct nl_sock *s)
{
	s->fd = -1;
	s->portid = 0;
	s->seq = 0;
}

void nl_close(struct nl_sock *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int nl_open(struct nl_sock *s, const unsigned *groups, size_t ngroups, char *err, size_t errlen)
{
	return nl_open_proto(s, NETLINK_ROUTE, groups, ngroups, err, errlen);
}

int nl_open_proto(struct nl_sock *s, int proto, const unsigned *groups, size_t ngroups, char *err,
		  size_t errlen)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	socklen_t salen = sizeof(sa);
	int one = 1;
	int ret;

	nl_sock_init(s);
	s->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | (ngroups ? SOCK_NONBLOCK : 0), proto);
	if (s->fd < 0) {
		ret = -errno;
		seterr(err, errlen, "netlink socket: %s", strerror(errno));
		goto out;
	}
	/* Both are hints: a kernel without them still works, only with less
	 * detail in errors and longer error messages. */
	setsockopt(s->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(s->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (ngroups) {
		/* A burst of events (a pod's links coming up) must not
		 * overrun us; overruns are still handled (-ENOBUFS, resync).
		 * The FORCE variant lifts rmem_max and needs CAP_NET_ADMIN,
		 * which the sidecar has. */
		int sz = 4 << 20;
		if (setsockopt(s->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
			setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	} else {
		/* Strict checking makes the kernel filter dumps by the header
		 * we send and reject junk in it, instead of ignoring it. */
		struct timeval tv = {.tv_sec = 5};
		if (proto == NETLINK_ROUTE)
			setsockopt(s->fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
		/* A lost reply must not hang the event loop forever. */
		setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (bind(s->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		seterr(err, errlen, "netlink bind: %s", strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < ngroups; i++) {
		if (setsockopt(s->fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &groups[i],
			       sizeof(groups[i]))) {
			ret = -errno;
			seterr(err, errlen, "netlink group %u: %s", groups[i], strerror(errno));
			goto out;
		}
	}
	if (getsockname(s->fd, (struct sockaddr *)&sa, &salen) || sa.nl_family != AF_NETLINK) {
		ret = -errno;
		seterr(err, errlen, "netlink getsockname: %s", strerror(errno));
		goto out;
	}
	s->portid = sa.nl_pid;
	/* As iproute2: start from the clock so that replies to a previous
	 * process's requests on a recycled port id cannot match. */
	s->seq = (uint32_t)time(NULL);
	return 0;
out:
	nl_close(s);
	return ret;
}

static int sendreq(struct nl_sock *s, struct nlmsghdr *req)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	ssize_t n;

	req->nlmsg_seq = ++s->seq;
	req->nlmsg_pid = 0;
	do
		n = sendto(s->fd, req, req->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == req->nlmsg_len ? 0 : -EMSGSIZE;
}

int nl_send_raw(struct nl_sock *s, const void *buf, size_t len)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	ssize_t n;

	do
		n = sendto(s->fd, buf, len, 0, (struct sockaddr *)&sa, sizeof(sa));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

/* One datagram from the kernel (nl_pid 0), or -errno; a timeout on the
 * request socket becomes -ETIMEDOUT. */
static int recvone(struct nl_sock *s, uint8_t *buf, size_t cap, size_t *len)
{
	for (;;) {
		struct sockaddr_nl sa;
		struct iovec iov = {.iov_base = buf, .iov_len = cap};
		struct msghdr mh = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov,
				    .msg_iovlen = 1};
		ssize_t n = recvmsg(s->fd, &mh, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (mh.msg_flags & MSG_TRUNC)
			return -EMSGSIZE;
		if (mh.msg_namelen != sizeof(sa) || sa.nl_pid != 0)
			continue; /* not from the kernel */
		*len = (size_t)n;
		return 0;
	}
}

static void copy_ext(const struct nl_error *e, char *err, size_t errlen)
{
	if (e->msg.n)
		seterr(err, errlen, "%.*s", (int)e->msg.n, (const char *)e->msg.p);
	else
		seterr(err, errlen, "%s", "");
}

/* Request + ack; messages of the reply before the ack go to fn.  A get
 * (one_reply) asks for no ack: its one reply, or an error, ends it. */
static int talk_cb(struct nl_sock *s, struct nlmsghdr *req, nl_dump_fn *fn, void *ud,
		   int one_reply, char *err, size_t errlen)
{
	uint8_t buf[8192];
	int ret;

	seterr(err, errlen, "%s", "");
	req->nlmsg_flags |= NLM_F_REQUEST | (one_reply ? 0 : NLM_F_ACK);
	if ((ret = sendreq(s, req)))
		return ret;
	for (;;) {
		size_t len = 0, off = 0;
		struct nl_msgview m;

		if ((ret = recvone(s, buf, sizeof(buf), &len)))
			return ret == -EAGAIN ? -ETIMEDOUT : ret;
		while ((ret = nl_next(buf, len, &off, &m)) > 0) {
			struct nl_error e;
			if (m.seq != req->nlmsg_seq || m.portid != s->portid)
				continue; /* a late reply to an earlier request */
			if (m.type == NLMSG_ERROR) {
				if ((ret = nl_parse_error(&m, &e)))
					return ret;
				copy_ext(&e, err, errlen);
				return e.error;
			}
			if (fn && (ret = fn(&m, ud)))
				return ret;
			if (one_reply)
				return 0;
		}
		if (ret < 0)
			return ret;
	}
}

int nl_talk(struct nl_sock *s, struct nlmsghdr *req, char *err, size_t errlen)
{
	return talk_cb(s, req, NULL, NULL, 0, err, errlen);
}

int nl_dump(struct nl_sock *s, struct nlmsghdr *req, nl_dump_fn *fn, void *ud, char *err,
	    size_t errlen)
{
	static uint8_t buf[NL_RECV_BUF]; /* one loop thread: a static is fine */
	int intr = 0, cbret = 0, ret;

	seterr(err, errlen, "%s", "");
	req->nlmsg_flags |= NLM_F_REQUEST | NLM_F_DUMP;
	if ((ret = sendreq(s, req)))
		return ret;
	for (;;) {
		size_t len = 0, off = 0;
		struct nl_msgview m;

		if ((ret = recvone(s, buf, sizeof(buf), &len)))
			return ret == -EAGAIN ? -ETIMEDOUT : ret;
		while ((ret = nl_next(buf, len, &off, &m)) > 0) {
			struct nl_error e;
			if (m.seq != req->nlmsg_seq || m.portid != s->portid)
				continue;
			if (m.flags & NLM_F_DUMP_INTR)
				intr = 1;
			if (m.type == NLMSG_DONE || m.type == NLMSG_ERROR) {
				if ((ret = nl_parse_error(&m, &e)))
					return ret;
				copy_ext(&e, err, errlen);
				if (e.error)
					return e.error;
				if (cbret)
					return cbret;
				return intr ? -EAGAIN : 0;
			}
			/* After a callback error keep reading to the end, so
			 * the next request does not meet this dump's tail. */
			if (!cbret)
				cbret = fn(&m, ud);
		}
		if (ret < 0)
			return ret;
	}
}

int nl_recv(struct nl_sock *s, uint8_t *buf, size_t cap, size_t *len)
{
	return recvone(s, buf, cap, len);
}

int nl_recv_events(struct nl_sock *s, uint8_t *buf, size_t cap, size_t *len)
{
	int ret = recvone(s, buf, cap, len);
	if (ret == -EMSGSIZE)
		return -ENOBUFS; /* a truncated event is a lost event */
	return ret;
}

/* ---- typed requests ------------------------------------------------------ */

static const char *what_msg(int type)
{
	switch (type) {
	case RTM_NEWLINK: return "RTM_NEWLINK";
	case RTM_DELLINK: return "RTM_DELLINK";
	case RTM_GETLINK: return "RTM_GETLINK";
	case RTM_NEWADDR: return "RTM_NEWADDR";
	case RTM_GETADDR: return "RTM_GETADDR";
	case RTM_NEWROUTE: return "RTM_NEWROUTE";
	case RTM_DELROUTE: return "RTM_DELROUTE";
	case RTM_GETROUTE: return "RTM_GETROUTE";
	case RTM_NEWRULE: return "RTM_NEWRULE";
	case RTM_DELRULE: return "RTM_DELRULE";
	case RTM_GETRULE: return "RTM_GETRULE";
	case RTM_GETNEIGH: return "RTM_GETNEIGH";
	case RTM_NEWNEIGH: return "RTM_NEWNEIGH";
	default: return "rtnetlink";
	}
}

/* "<what>: <strerror>[: <kernel's ext-ack text>]" into err. */
static int failed(int ret, const char *what, const char *ext, char *err, size_t errlen)
{
	if (ext[0])
		seterr(err, errlen, "%s: %s: %s", what, strerror(-ret), ext);
	else
		seterr(err, errlen, "%s: %s", what, strerror(-ret));
	return ret;
}

static int talk(struct nl_sock *s, struct nlmsghdr *req, const char *what, char *err,
		size_t errlen)
{
	char ext[256];
	char w[96];
	int ret = nl_talk(s, req, ext, sizeof(ext));
	if (!ret)
		return 0;
	snprintf(w, sizeof(w), "%s %s", what_msg(req->nlmsg_type), what);
	return failed(ret, w, ext, err, errlen);
}

struct collect {
	void *out;
	size_t size; /* of one element */
	size_t cap;
	size_t n;
	int (*parse)(const struct nl_msgview *, void *);
	uint16_t want; /* message type to keep */
};

static int parse_link_v(const struct nl_msgview *m, void *o) { return nl_parse_link(m, o); }

static int collect_one(const struct nl_msgview *m, void *ud)
{
	struct collect *c = ud;
	int ret;
	if (m->type != c->want)
		return 0;
	if (c->n >= c->cap)
		return -E2BIG;
	ret = c->parse(m, (uint8_t *)c->out + c->n * c->size);
	if (ret)
		return ret;
	c->n++;
	return 0;
}

/* Dumps with retries on NLM_F_DUMP_INTR; req is re-sent as it is. */
static int dump_collect(struct nl_sock *s, struct nlmsghdr *req, struct collect *c, size_t *n,
			const char *what, char *err, size_t errlen)
{
	char ext[256];
	uint32_t len0 = req->nlmsg_len;
	int ret = -EAGAIN;

	for (int i = 0; i < NL_DUMP_TRIES && ret == -EAGAIN; i++) {
		c->n = 0;
		req->nlmsg_len = len0;
		ret = nl_dump(s, req, collect_one, c, ext, sizeof(ext));
	}
	*n = c->n;
	if (ret == -E2BIG) {
		seterr(err, errlen, "%s: more than %zu entries", what, c->cap);
		return ret;
	}
	if (ret)
		return failed(ret, what, ext, err, errlen);
	return 0;
}

int nl_get_links(struct nl_sock *s, struct nl_link *out, size_t cap, size_t *n, char *err,
		 size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct ifinfomsg i;
		char buf[64];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct ifinfomsg)),
		      .nlmsg_type = RTM_GETLINK},
		.i = {.ifi_family = AF_UNSPEC},
	};
	struct collect c = {out, sizeof(*out), cap, 0, parse_link_v, RTM_NEWLINK};

	/* Statistics are most of a link message and we never read them. */
	if (nl_attr_put_u32(&req.n, sizeof(req), IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS))
		return -EMSGSIZE;
	return dump_collect(s, &req.n, &c, n, "link dump", err, errlen);
}

struct one_link {
	struct nl_link *out;
	int found;
};

static int one_link_cb(const struct nl_msgview *m, void *ud)
{
	struct one_link *o = ud;
	if (m->type != RTM_NEWLINK)
		return 0;
	o->found = 1;
	return nl_parse_link(m, o->out);
}

int nl_get_link(struct nl_sock *s, const char *name, struct nl_link *out, char *err,
		size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct ifinfomsg i;
		char buf[64];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct ifinfomsg)),
		      .nlmsg_type = RTM_GETLINK},
		.i = {.ifi_family = AF_UNSPEC},
	};
	struct one_link o = {out, 0};
	char ext[256];
	int ret;

	if (strlen(name) >= NL_NAMESIZ) {
		seterr(err, errlen, "link name '%s' too long", name);
		return -EINVAL;
	}
	if (nl_attr_put_str(&req.n, sizeof(req), IFLA_IFNAME, name) ||
	    nl_attr_put_u32(&req.n, sizeof(req), IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS))
		return -EMSGSIZE;
	ret = talk_cb(s, &req.n, one_link_cb, &o, 1, ext, sizeof(ext));
	if (ret == -ENODEV || (!ret && !o.found)) {
		seterr(err, errlen, "no link '%s'", name);
		return -ENODEV;
	}
	if (ret) {
		char w[64];
		snprintf(w, sizeof(w), "RTM_GETLINK %s", name);
		return failed(ret, w, ext, err, errlen);
	}
	return 0;
}

int nl_dump_all(struct nl_sock *s, uint16_t type, uint8_t family, nl_dump_fn *fn, void *ud,
		char *err, size_t errlen)
{
	/* The family headers of these requests are 8 (ifaddrmsg) or 12
	 * (rtmsg, fib_rule_hdr, ndmsg) bytes; with strict checking all but
	 * the family must be zero. */
	struct {
		struct nlmsghdr n;
		uint8_t family;
		uint8_t pad[11];
	} req;
	char ext[256];
	int ret = -EAGAIN;

	for (int i = 0; i < NL_DUMP_TRIES && ret == -EAGAIN; i++) {
		memset(&req, 0, sizeof(req));
		req.n.nlmsg_len = (uint32_t)(HDRLEN + (type == RTM_GETADDR ? 8u : 12u));
		req.n.nlmsg_type = type;
		req.family = family;
		ret = nl_dump(s, &req.n, fn, ud, ext, sizeof(ext));
	}
	if (ret)
		return failed(ret, what_msg(type), ext, err, errlen);
	return 0;
}

struct one_neigh {
	struct nl_neigh *out;
	int found;
};

static int one_neigh_cb(const struct nl_msgview *m, void *ud)
{
	struct one_neigh *o = ud;
	if (m->type != RTM_NEWNEIGH)
		return 0;
	o->found = 1;
	return nl_parse_neigh(m, o->out);
}

int nl_fdb_get(struct nl_sock *s, int bridge, const uint8_t mac[6], struct nl_neigh *out,
	       char *err, size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct ndmsg nd;
		char buf[32];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct ndmsg)),
		      .nlmsg_type = RTM_GETNEIGH},
		.nd = {.ndm_family = AF_BRIDGE, .ndm_flags = NTF_MASTER},
	};
	struct one_neigh o = {out, 0};
	char ext[256];
	int ret;

	if (nl_attr_put(&req.n, sizeof(req), NDA_LLADDR, mac, 6) ||
	    nl_attr_put_u32(&req.n, sizeof(req), NDA_MASTER, (uint32_t)bridge))
		return -EMSGSIZE;
	/* Asked for every ARP request the VM sends: one round trip, no ack. */
	ret = talk_cb(s, &req.n, one_neigh_cb, &o, 1, ext, sizeof(ext));
	if (!ret && !o.found)
		ret = -ENOENT;
	if (ret)
		return failed(ret, "RTM_GETNEIGH fdb entry", ext, err, errlen);
	return 0;
}

int nl_veth_add(struct nl_sock *s, const char *name, const char *peer, uint32_t mtu,
		const uint8_t *mac, const uint8_t *peer_mac, char *err, size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct ifinfomsg i;
		char buf[512];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct ifinfomsg)),
		      .nlmsg_type = RTM_NEWLINK,
		      .nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL},
		.i = {.ifi_family = AF_UNSPEC},
	};
	const struct ifinfomsg peer_ifi = {.ifi_family = AF_UNSPEC};
	struct rtattr *linkinfo, *data, *p;
	char what[64];

	snprintf(what, sizeof(what), "veth %s/%s", name, peer);
	if (strlen(name) >= NL_NAMESIZ || strlen(peer) >= NL_NAMESIZ) {
		seterr(err, errlen, "%s: name too long", what);
		return -EINVAL;
	}
	if (nl_attr_put_str(&req.n, sizeof(req), IFLA_IFNAME, name) ||
	    (mtu && nl_attr_put_u32(&req.n, sizeof(req), IFLA_MTU, mtu)) ||
	    (mac && nl_attr_put(&req.n, sizeof(req), IFLA_ADDRESS, mac, 6)) ||
	    !(linkinfo = nl_nest_begin(&req.n, sizeof(req), IFLA_LINKINFO)) ||
	    nl_attr_put_str(&req.n, sizeof(req), IFLA_INFO_KIND, "veth") ||
	    !(data = nl_nest_begin(&req.n, sizeof(req), IFLA_INFO_DATA)) ||
	    !(p = nl_nest_begin(&req.n, sizeof(req), VETH_INFO_PEER)) ||
	    /* The peer nest starts with a bare ifinfomsg, then attributes. */
	    put_raw(&req.n, sizeof(req), &peer_ifi, sizeof(peer_ifi)) ||
	    nl_attr_put_str(&req.n, sizeof(req), IFLA_IFNAME, peer) ||
	    (mtu && nl_attr_put_u32(&req.n, sizeof(req), IFLA_MTU, mtu)) ||
	    (peer_mac && nl_attr_put(&req.n, sizeof(req), IFLA_ADDRESS, peer_mac, 6))) {
		seterr(err, errlen, "%s: request too large", what);
		return -EMSGSIZE;
	}
	nl_nest_end(&req.n, p);
	nl_nest_end(&req.n, data);
	nl_nest_end(&req.n, linkinfo);
	return talk(s, &req.n, what, err, errlen);
}

int nl_link_del(struct nl_sock *s, int ifindex, char *err, size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct ifinfomsg i;
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct ifinfomsg)),
		      .nlmsg_type = RTM_DELLINK},
		.i = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex},
	};
	char what[32];
	snprintf(what, sizeof(what), "ifindex %d", ifindex);
	return talk(s, &req.n, what, err, errlen);
}

int nl_link_set(struct nl_sock *s, int ifindex, const struct nl_link_set *c, char *err,
		size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct ifinfomsg i;
		char buf[256];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct ifinfomsg)),
		      .nlmsg_type = RTM_NEWLINK},
		.i = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex},
	};
	char what[32];

	snprintf(what, sizeof(what), "ifindex %d", ifindex);
	if (c->up) {
		req.i.ifi_flags = IFF_UP;
		req.i.ifi_change = IFF_UP;
	}
	if ((c->master > 0 && nl_attr_put_u32(&req.n, sizeof(req), IFLA_MASTER, (uint32_t)c->master)) ||
	    (c->nomaster && nl_attr_put_u32(&req.n, sizeof(req), IFLA_MASTER, 0)) ||
	    (c->mtu && nl_attr_put_u32(&req.n, sizeof(req), IFLA_MTU, c->mtu)) ||
	    (c->mac && nl_attr_put(&req.n, sizeof(req), IFLA_ADDRESS, c->mac, 6)))
		return -EMSGSIZE;
	if (c->arp_ignore >= 0 || c->addr_gen_none) {
		struct rtattr *spec, *af;
		if (!(spec = nl_nest_begin(&req.n, sizeof(req), IFLA_AF_SPEC)))
			return -EMSGSIZE;
		if (c->arp_ignore >= 0) {
			struct rtattr *conf;
			/* Per-device IPv4 settings over netlink
			 * (inet_set_link_af): works where /proc/sys is
			 * mounted read-only, as in every unprivileged
			 * container. */
			if (!(af = nl_nest_begin(&req.n, sizeof(req), AF_INET)) ||
			    !(conf = nl_nest_begin(&req.n, sizeof(req), IFLA_INET_CONF)) ||
			    nl_attr_put_u32(&req.n, sizeof(req), IPV4_DEVCONF_ARP_IGNORE,
					    (uint32_t)c->arp_ignore))
				return -EMSGSIZE;
			nl_nest_end(&req.n, conf);
			nl_nest_end(&req.n, af);
		}
		if (c->addr_gen_none) {
			if (!(af = nl_nest_begin(&req.n, sizeof(req), AF_INET6)) ||
			    nl_attr_put_u8(&req.n, sizeof(req), IFLA_INET6_ADDR_GEN_MODE,
					   IN6_ADDR_GEN_MODE_NONE))
				return -EMSGSIZE;
			nl_nest_end(&req.n, af);
		}
		nl_nest_end(&req.n, spec);
	}
	return talk(s, &req.n, what, err, errlen);
}

/* "a.b.c.d" or an IPv6 text, then "/len" when len is given (>= 0). */
static void ip_text(char *out, size_t cap, uint8_t family, const uint8_t *ip, int len)
{
	char t[INET6_ADDRSTRLEN];
	if (!inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, ip, t, sizeof(t)))
		snprintf(t, sizeof(t), "?");
	if (len >= 0)
		snprintf(out, cap, "%s/%d", t, len);
	else
		snprintf(out, cap, "%s", t);
}

static size_t alen_of(uint8_t family)
{
	return family == AF_INET6 ? 16 : 4;
}

static int addr_add(struct nl_sock *s, uint8_t family, int ifindex, const uint8_t *addr,
		    uint8_t prefixlen, char *err, size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct ifaddrmsg a;
		char buf[96];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct ifaddrmsg)),
		      .nlmsg_type = RTM_NEWADDR,
		      .nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL},
		/* IPv4: scope link, so the kernel never picks the address as
		 * the source of the pod's own traffic on other links.  IPv6:
		 * the scope follows the address; no duplicate address
		 * detection (the address is ours by definition, and a
		 * tentative address could not be bound). */
		.a = {.ifa_family = family, .ifa_prefixlen = prefixlen,
		      .ifa_scope = family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE,
		      .ifa_flags = family == AF_INET6 ? IFA_F_NODAD : 0,
		      .ifa_index = (uint32_t)ifindex},
	};
	char what[80], ip[64];

	ip_text(ip, sizeof(ip), family, addr, prefixlen);
	snprintf(what, sizeof(what), "%s on ifindex %d", ip, ifindex);
	if (nl_attr_put(&req.n, sizeof(req), IFA_LOCAL, addr, alen_of(family)) ||
	    (family == AF_INET && nl_attr_put(&req.n, sizeof(req), IFA_ADDRESS, addr, 4)) ||
	    (family == AF_INET6 &&
	     nl_attr_put_u32(&req.n, sizeof(req), IFA_FLAGS, IFA_F_NODAD)))
		return -EMSGSIZE;
	return talk(s, &req.n, what, err, errlen);
}

int nl_addr_add4(struct nl_sock *s, int ifindex, const uint8_t addr[4], uint8_t prefixlen,
		 char *err, size_t errlen)
{
	return addr_add(s, AF_INET, ifindex, addr, prefixlen, err, errlen);
}

int nl_addr_add6(struct nl_sock *s, int ifindex, const uint8_t addr[16], uint8_t prefixlen,
		 char *err, size_t errlen)
{
	return addr_add(s, AF_INET6, ifindex, addr, prefixlen, err, errlen);
}

static uint8_t table_hdr(uint32_t table)
{
	/* Tables past 255 only fit RTA_TABLE / FRA_TABLE. */
	return table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
}

static int route_add(struct nl_sock *s, uint8_t family, uint8_t type, uint32_t table,
		     const uint8_t *dst, uint8_t dst_len, int oif, const uint8_t *prefsrc, int replace,
		     char *err, size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct rtmsg r;
		char buf[160];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct rtmsg)),
		      .nlmsg_type = RTM_NEWROUTE,
		      .nlmsg_flags = (uint16_t)(NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL))},
		/* IPv6 routes have no scope of their own (the kernel keeps
		 * universe); IPv4's is link: the device, no gateway; a local
		 * route's is host. */
		.r = {.rtm_family = family, .rtm_dst_len = dst_len, .rtm_table = table_hdr(table),
		      .rtm_protocol = RTPROT_STATIC,
		      .rtm_scope = family != AF_INET	 ? RT_SCOPE_UNIVERSE
				   : type == RTN_LOCAL ? RT_SCOPE_HOST
						       : RT_SCOPE_LINK,
		      .rtm_type = type},
	};
	char what[96], ip[64];

	ip_text(ip, sizeof(ip), family, dst, dst_len);
	snprintf(what, sizeof(what), "%s table %u", ip, table);
	if (nl_attr_put_u32(&req.n, sizeof(req), RTA_TABLE, table) ||
	    (dst_len && nl_attr_put(&req.n, sizeof(req), RTA_DST, dst, alen_of(family))) ||
	    nl_attr_put_u32(&req.n, sizeof(req), RTA_OIF, (uint32_t)oif) ||
	    (prefsrc && nl_attr_put(&req.n, sizeof(req), RTA_PREFSRC, prefsrc, alen_of(family))))
		return -EMSGSIZE;
	return talk(s, &req.n, what, err, errlen);
}

int nl_route_add4(struct nl_sock *s, uint32_t table, const uint8_t dst[4], uint8_t dst_len,
		  int oif, const uint8_t *prefsrc, int replace, char *err, size_t errlen)
{
	return route_add(s, AF_INET, RTN_UNICAST, table, dst, dst_len, oif, prefsrc, replace, err,
			 errlen);
}

int nl_route_add_local4(struct nl_sock *s, uint32_t table, const uint8_t dst[4], int oif,
			char *err, size_t errlen)
{
	return route_add(s, AF_INET, RTN_LOCAL, table, dst, 32, oif, NULL, 0, err, errlen);
}

int nl_route_add6(struct nl_sock *s, uint32_t table, const uint8_t dst[16], uint8_t dst_len,
		  int oif, const uint8_t *prefsrc, int replace, char *err, size_t errlen)
{
	return route_add(s, AF_INET6, RTN_UNICAST, table, dst, dst_len, oif, prefsrc, replace, err,
			 errlen);
}

static int neigh_set(struct nl_sock *s, uint8_t family, int ifindex, const uint8_t *ip,
		     const uint8_t mac[6], char *err, size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct ndmsg nd;
		char buf[64];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct ndmsg)),
		      .nlmsg_type = RTM_NEWNEIGH,
		      .nlmsg_flags = (uint16_t)(NLM_F_CREATE | NLM_F_REPLACE)},
		.nd = {.ndm_family = family, .ndm_ifindex = ifindex, .ndm_state = NUD_PERMANENT},
	};
	char what[96], t[64];

	ip_text(t, sizeof(t), family, ip, -1);
	snprintf(what, sizeof(what), "%s on ifindex %d", t, ifindex);
	if (nl_attr_put(&req.n, sizeof(req), NDA_DST, ip, alen_of(family)) ||
	    nl_attr_put(&req.n, sizeof(req), NDA_LLADDR, mac, 6))
		return -EMSGSIZE;
	return talk(s, &req.n, what, err, errlen);
}

int nl_neigh_set4(struct nl_sock *s, int ifindex, const uint8_t ip[4], const uint8_t mac[6],
		  char *err, size_t errlen)
{
	return neigh_set(s, AF_INET, ifindex, ip, mac, err, errlen);
}

int nl_neigh_set6(struct nl_sock *s, int ifindex, const uint8_t ip[16], const uint8_t mac[6],
		  char *err, size_t errlen)
{
	return neigh_set(s, AF_INET6, ifindex, ip, mac, err, errlen);
}

static int route_del(struct nl_sock *s, uint8_t family, uint32_t table, const uint8_t *dst,
		     uint8_t dst_len, char *err, size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct rtmsg r;
		char buf[64];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct rtmsg)),
		      .nlmsg_type = RTM_DELROUTE},
		.r = {.rtm_family = family, .rtm_dst_len = dst_len, .rtm_table = table_hdr(table),
		      .rtm_scope = RT_SCOPE_NOWHERE},
	};
	char what[96], ip[64];

	ip_text(ip, sizeof(ip), family, dst, dst_len);
	snprintf(what, sizeof(what), "%s table %u", ip, table);
	if (nl_attr_put_u32(&req.n, sizeof(req), RTA_TABLE, table) ||
	    (dst_len && nl_attr_put(&req.n, sizeof(req), RTA_DST, dst, alen_of(family))))
		return -EMSGSIZE;
	return talk(s, &req.n, what, err, errlen);
}

int nl_route_del4(struct nl_sock *s, uint32_t table, const uint8_t dst[4], uint8_t dst_len,
		  char *err, size_t errlen)
{
	return route_del(s, AF_INET, table, dst, dst_len, err, errlen);
}

int nl_route_del6(struct nl_sock *s, uint32_t table, const uint8_t dst[16], uint8_t dst_len,
		  char *err, size_t errlen)
{
	return route_del(s, AF_INET6, table, dst, dst_len, err, errlen);
}

static int rule_add(struct nl_sock *s, uint8_t family, const uint8_t *src, uint8_t src_len,
		    uint32_t table, uint32_t priority, char *err, size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct fib_rule_hdr f;
		char buf[96];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct fib_rule_hdr)),
		      .nlmsg_type = RTM_NEWRULE,
		      .nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL},
		.f = {.family = family, .src_len = src_len, .table = table_hdr(table),
		      .action = FR_ACT_TO_TBL},
	};
	char what[96], ip[64];

	ip_text(ip, sizeof(ip), family, src, src_len);
	snprintf(what, sizeof(what), "from %s lookup %u", ip, table);
	if (nl_attr_put(&req.n, sizeof(req), FRA_SRC, src, alen_of(family)) ||
	    nl_attr_put_u32(&req.n, sizeof(req), FRA_TABLE, table) ||
	    nl_attr_put_u32(&req.n, sizeof(req), FRA_PRIORITY, priority))
		return -EMSGSIZE;
	return talk(s, &req.n, what, err, errlen);
}

int nl_rule_add4(struct nl_sock *s, const uint8_t src[4], uint8_t src_len, uint32_t table,
		 uint32_t priority, char *err, size_t errlen)
{
	return rule_add(s, AF_INET, src, src_len, table, priority, err, errlen);
}

int nl_rule_add4_to_port(struct nl_sock *s, const uint8_t dst[4], uint8_t ipproto, uint16_t dport,
			 uint32_t table, uint32_t priority, char *err, size_t errlen)
{
	struct {
		struct nlmsghdr n;
		struct fib_rule_hdr f;
		char buf[96];
	} req = {
		.n = {.nlmsg_len = (uint32_t)(HDRLEN + sizeof(struct fib_rule_hdr)),
		      .nlmsg_type = RTM_NEWRULE,
		      .nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL},
		.f = {.family = AF_INET, .dst_len = 32, .table = table_hdr(table),
		      .action = FR_ACT_TO_TBL},
	};
	/* The kernel reads the range in host order (fib_rule_port_inrange). */
	struct fib_rule_port_range pr = {.start = dport, .end = dport};
	char what[128], ip[64];

	ip_text(ip, sizeof(ip), AF_INET, dst, 32);
	snprintf(what, sizeof(what), "to %s ipproto %u dport %u lookup %u", ip, ipproto, dport,
		 table);
	if (nl_attr_put(&req.n, sizeof(req), FRA_DST, dst, 4) ||
	    nl_attr_put_u8(&req.n, sizeof(req), FRA_IP_PROTO, ipproto) ||
	    nl_attr_put(&req.n, sizeof(req), FRA_DPORT_RANGE, &pr, sizeof(pr)) ||
	    nl_attr_put_u32(&req.n, sizeof(req), FRA_TABLE, table) ||
	    nl_attr_put_u32(&req.n, sizeof(req), FRA_PRIORITY, priority))
		return -EMSGSIZE;
	return talk(s, &req.n, what, err, errlen);
}

int nl_rule_add6(struct nl_sock *s, const uint8_t src[16], uint8_t src_len, uint32_t table,
		 uint32_t priority, char *err, size_t errlen)
{
	return rule_add(s, AF_INET6, src, src_len, table, priority, err, errlen);
}

