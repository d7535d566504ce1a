/* nl: rtnetlink by hand, in the style of iproute2's libnetlink and
 * wireguard-tools: requests are initialised stack structs, attributes are
 * appended with bounds-checked puts, replies are read with extended-ack
 * error strings and checked for our sequence number and port id.
 *
 * The module has two halves:
 *  - a pure reply parser (nl_next, nl_parse_*): bytes in, structs out, no
 *    allocation, no alignment assumption (it copies headers with memcpy, so
 *    a byte table in a unit test or a fuzzer's buffer is fine as input);
 *  - the socket side (nl_open, nl_talk, nl_dump and the typed requests).
 *
 * Only what the sidecar needs: links, IPv4 addresses, routes and rules,
 * veth creation, per-device IPv4 settings, and the bridge FDB. */
#ifndef IMDS_NL_H
#define IMDS_NL_H

#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#define NL_NAMESIZ 16 /* IFNAMSIZ, without pulling in <net/if.h> */
#define NL_KINDSIZ 16

/* ---- pure parser --------------------------------------------------------- */

struct nl_span {
	const uint8_t *p;
	size_t n;
};

/* One netlink message as read from a buffer; payload excludes the header. */
struct nl_msgview {
	uint16_t type;
	uint16_t flags;
	uint32_t seq;
	uint32_t portid;
	struct nl_span payload;
};

/* Walks a buffer of netlink messages starting at *off.  Returns 1 with *m
 * filled and *off advanced, 0 at the end of the buffer, -EBADMSG when the
 * next header is truncated or its length is impossible. */
int nl_next(const uint8_t *buf, size_t len, size_t *off, struct nl_msgview *m);

struct nl_link {
	int ifindex;
	unsigned flags;       /* IFF_* */
	uint16_t type;        /* ARPHRD_* */
	uint32_t mtu;
	int master;           /* 0: not enslaved */
	int link;             /* IFLA_LINK (a veth's peer); 0: none */
	int link_netnsid_set; /* IFLA_LINK_NETNSID present: the peer is elsewhere */
	int has_mac;
	uint8_t mac[6];
	char name[NL_NAMESIZ];
	char kind[NL_KINDSIZ]; /* IFLA_INFO_KIND, "" when absent */
	int has_inet_conf;    /* IFLA_AF_SPEC/AF_INET/IFLA_INET_CONF present */
	uint32_t arp_ignore;
	uint32_t rp_filter;
};

struct nl_addr {
	int ifindex;
	uint8_t family;
	uint8_t prefixlen;
	uint8_t scope;
	int has_local;
	uint8_t local[16]; /* IFA_LOCAL, else IFA_ADDRESS */
};

struct nl_route {
	uint8_t family;
	uint8_t dst_len;
	uint8_t scope;
	uint8_t type;
	uint8_t protocol;
	uint32_t table; /* RTA_TABLE wins over rtm_table */
	int has_dst;
	uint8_t dst[16];
	int has_gw;
	uint8_t gw[16];
	int has_prefsrc;
	uint8_t prefsrc[16];
	int oif;
	uint32_t priority;
};

struct nl_rule {
	uint8_t family;
	uint8_t src_len;
	uint8_t dst_len;
	uint8_t action;
	uint32_t table;
	uint32_t priority;
	int has_src;
	uint8_t src[16];
	int has_dst;
	uint8_t dst[16];
	int has_iif; /* any selector we do not model makes a rule "not ours" */
	int has_oif;
	int has_fwmark;
	int has_ipproto; /* FRA_IP_PROTO */
	uint8_t ipproto;
	int has_dport; /* FRA_DPORT_RANGE, host order */
	uint16_t dport_lo, dport_hi;
	int has_sport; /* FRA_SPORT_RANGE: never ours */
};

struct nl_neigh {
	uint8_t family; /* AF_BRIDGE for FDB entries */
	int ifindex;    /* the bridge port */
	uint16_t state; /* NUD_* */
	uint8_t flags;  /* NTF_* */
	int master;     /* NDA_MASTER: the bridge; 0 when absent */
	int has_lladdr;
	uint8_t lladdr[6];
	uint16_t vlan;
};

/* NLMSG_ERROR (an ack when error == 0) or NLMSG_DONE.  msg is the
 * extended-ack text (NLMSGERR_ATTR_MSG) as a span, not NUL-terminated. */
struct nl_error {
	int error; /* 0 or -errno */
	uint32_t req_seq;
	uint32_t req_portid;
	struct nl_span msg;
};

/* Each returns 0, -ENOMSG when m is not of that kind, -EBADMSG when it is
 * but malformed.  Out-structs are zeroed first. */
int nl_parse_link(const struct nl_msgview *m, struct nl_link *out);
int nl_parse_addr(const struct nl_msgview *m, struct nl_addr *out);
int nl_parse_route(const struct nl_msgview *m, struct nl_route *out);
int nl_parse_rule(const struct nl_msgview *m, struct nl_rule *out);
int nl_parse_neigh(const struct nl_msgview *m, struct nl_neigh *out);
int nl_parse_error(const struct nl_msgview *m, struct nl_error *out);

/* ---- building requests ----------------------------------------------------
 * n points at the start of a caller's stack struct of maxlen bytes whose
 * first member is the nlmsghdr.  Every put returns 0 or -EMSGSIZE. */
int nl_attr_put(struct nlmsghdr *n, size_t maxlen, uint16_t type, const void *data, size_t len);
int nl_attr_put_u8(struct nlmsghdr *n, size_t maxlen, uint16_t type, uint8_t v);
int nl_attr_put_u32(struct nlmsghdr *n, size_t maxlen, uint16_t type, uint32_t v);
int nl_attr_put_str(struct nlmsghdr *n, size_t maxlen, uint16_t type, const char *s);
/* NULL when the nest header does not fit. */
struct rtattr *nl_nest_begin(struct nlmsghdr *n, size_t maxlen, uint16_t type);
void nl_nest_end(struct nlmsghdr *n, struct rtattr *nest);

/* ---- sockets ------------------------------------------------------------- */

struct nl_sock {
	int fd;
	uint32_t portid;
	uint32_t seq;
};

/* A NETLINK_ROUTE socket (SOCK_CLOEXEC, NETLINK_EXT_ACK, NETLINK_CAP_ACK).
 * With ngroups > 0 it is an event socket: non-blocking, subscribed to the
 * RTNLGRP_* groups given, with a large receive buffer.  Without groups it
 * is a blocking request socket with strict dump checking.  0 or -errno. */
int nl_open(struct nl_sock *s, const unsigned *groups, size_t ngroups, char *err, size_t errlen);
/* The same for another netlink protocol (NETLINK_NETFILTER: nft.c); strict
 * dump checking is rtnetlink's only. */
int nl_open_proto(struct nl_sock *s, int proto, const unsigned *groups, size_t ngroups, char *err,
		  size_t errlen);
void nl_close(struct nl_sock *s); /* safe on a closed/zeroed socket (fd < 0 or 0 via nl_sock_init) */
void nl_sock_init(struct nl_sock *s);

/* Sends req (NLM_F_ACK added, seq assigned) and waits for its ack.
 * 0 or -errno; the kernel's extended-ack text, if any, goes into err. */
int nl_talk(struct nl_sock *s, struct nlmsghdr *req, char *err, size_t errlen);

/* Sends a dump request (NLM_F_DUMP added) and calls fn for every message
 * of the reply; fn returns 0 to go on or -errno to stop (the rest of the
 * reply is drained).  An interrupted dump (NLM_F_DUMP_INTR) is retried a
 * few times.  0 or -errno. */
typedef int nl_dump_fn(const struct nl_msgview *m, void *ud);
int nl_dump(struct nl_sock *s, struct nlmsghdr *req, nl_dump_fn *fn, void *ud, char *err,
	    size_t errlen);

/* Reads one datagram of events into buf (at most cap bytes) from the
 * kernel.  0 with *len set, -EAGAIN when nothing is queued, -ENOBUFS when
 * the kernel dropped events (the caller must resynchronise by dumping). */
int nl_recv_events(struct nl_sock *s, uint8_t *buf, size_t cap, size_t *len);
/* Raw datagrams: one request (or a batch of them) as built, and one
 * datagram from the kernel.  0 or -errno (-EAGAIN: timeout / nothing). */
int nl_send_raw(struct nl_sock *s, const void *buf, size_t len);
int nl_recv(struct nl_sock *s, uint8_t *buf, size_t cap, size_t *len);

/* ---- typed requests (all 0 or -errno, details in err) -------------------- */

/* Dumps into out[0..cap); -E2BIG when there are more than cap. */
int nl_get_links(struct nl_sock *s, struct nl_link *out, size_t cap, size_t *n, char *err,
		 size_t errlen);
int nl_get_link(struct nl_sock *s, const char *name, struct nl_link *out, char *err,
		size_t errlen); /* -ENODEV when absent */
/* A dump of every object of one kind (RTM_GETADDR, RTM_GETROUTE,
 * RTM_GETRULE, RTM_GETNEIGH) in family; fn sees each reply message.  An
 * interrupted dump is repeated, so fn may see a message twice and must be
 * idempotent.  0 or -errno. */
int nl_dump_all(struct nl_sock *s, uint16_t type, uint8_t family, nl_dump_fn *fn, void *ud,
		char *err, size_t errlen);
/* The bridge's FDB entry for mac (vlan 0), as `bridge fdb get MAC br BR`:
 * out->ifindex is the port it was learned on.  -ENOENT when unknown. */
int nl_fdb_get(struct nl_sock *s, int bridge, const uint8_t mac[6], struct nl_neigh *out,
	       char *err, size_t errlen);

/* A veth pair, both ends with the given MTU (0: kernel default) and
 * optionally fixed MACs (NULL: random). */
int nl_veth_add(struct nl_sock *s, const char *name, const char *peer, uint32_t mtu,
		const uint8_t *mac, const uint8_t *peer_mac, char *err, size_t errlen);
int nl_link_del(struct nl_sock *s, int ifindex, char *err, size_t errlen);

/* One RTM_NEWLINK on an existing link; fields left at their "unset" value
 * are not sent. */
struct nl_link_set {
	int master;           /* > 0: enslave to; 0: leave */
	int nomaster;         /* 1: release from its master */
	uint32_t mtu;         /* 0: leave */
	int up;               /* 1: set IFF_UP; 0: leave */
	const uint8_t *mac;   /* non-NULL: set this Ethernet address */
	int64_t arp_ignore;   /* < 0: leave; else IPV4_DEVCONF_ARP_IGNORE */
	int addr_gen_none;    /* 1: IPv6 addr_gen_mode none (no link-local) */
};
#define NL_LINK_SET_INIT                                                                    \
	{.master = 0, .nomaster = 0, .mtu = 0, .up = 0, .mac = NULL, .arp_ignore = -1,             \
	 .addr_gen_none = 0}
int nl_link_set(struct nl_sock *s, int ifindex, const struct nl_link_set *c, char *err,
		size_t errlen);

int nl_addr_add4(struct nl_sock *s, int ifindex, const uint8_t addr[4], uint8_t prefixlen,
		 char *err, size_t errlen);
/* IPv6: without duplicate address detection (IFA_F_NODAD). */
int nl_addr_add6(struct nl_sock *s, int ifindex, const uint8_t addr[16], uint8_t prefixlen,
		 char *err, size_t errlen);

/* IPv4 route dst/dst_len dev oif in table, scope link, with prefsrc when
 * given; replace = NLM_F_REPLACE instead of NLM_F_EXCL. */
int nl_route_add4(struct nl_sock *s, uint32_t table, const uint8_t dst[4], uint8_t dst_len,
		  int oif, const uint8_t *prefsrc, int replace, char *err, size_t errlen);
int nl_route_add6(struct nl_sock *s, uint32_t table, const uint8_t dst[16], uint8_t dst_len,
		  int oif, const uint8_t *prefsrc, int replace, char *err, size_t errlen);
/* "local dst/32 dev oif table T" (scope host): what an address's entry in
 * table local says, in another table. */
int nl_route_add_local4(struct nl_sock *s, uint32_t table, const uint8_t dst[4], int oif,
			char *err, size_t errlen);
/* A permanent IPv4 neighbour entry ip -> mac on ifindex (created or
 * replaced). */
int nl_neigh_set4(struct nl_sock *s, int ifindex, const uint8_t ip[4], const uint8_t mac[6],
		  char *err, size_t errlen);
int nl_neigh_set6(struct nl_sock *s, int ifindex, const uint8_t ip[16], const uint8_t mac[6],
		  char *err, size_t errlen);
/* Deletes the IPv4 route dst/dst_len of table (any device).  -ESRCH when
 * there is none. */
int nl_route_del4(struct nl_sock *s, uint32_t table, const uint8_t dst[4], uint8_t dst_len,
		  char *err, size_t errlen);
int nl_route_del6(struct nl_sock *s, uint32_t table, const uint8_t dst[16], uint8_t dst_len,
		  char *err, size_t errlen);
/* "from src/src_len lookup table" at priority. */
int nl_rule_add4(struct nl_sock *s, const uint8_t src[4], uint8_t src_len, uint32_t table,
		 uint32_t priority, char *err, size_t errlen);
int nl_rule_add6(struct nl_sock *s, const uint8_t src[16], uint8_t src_len, uint32_t table,
		 uint32_t priority, char *err, size_t errlen);
/* "to dst/32 ipproto P dport D lookup table" at priority. */
int nl_rule_add4_to_port(struct nl_sock *s, const uint8_t dst[4], uint8_t ipproto, uint16_t dport,
			 uint32_t table, uint32_t priority, char *err, size_t errlen);

#endif
