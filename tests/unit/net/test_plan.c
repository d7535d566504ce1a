/* plan's event decision, the one the sidecar (run.c) and the node agent
 * (src/node/node.c) both take: which rtnetlink and nf_tables events call
 * for a pass (and for the ruleset again), on messages built as the kernel
 * sends them (a header, the family's fixed part, attributes) — the
 * kernel's "local 169.254.169.254" in table local among them, written
 * again when veth-imds comes up — and the read loop's answers for lost
 * events, read errors and datagrams that are not the kernel's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>

#include "plan.h"

#define OWN_PORTID 4242u

struct msg {
	union {
		struct nlmsghdr h;
		uint8_t b[512];
	};
};

static const uint8_t svc[4] = {169, 254, 169, 254};
static const uint8_t pod_ip[4] = {10, 244, 1, 5};

/* A header of type with its fixed part; *m's view once attributes are in. */
static void *start(struct msg *m, uint16_t type, size_t fixed)
{
	memset(m, 0, sizeof(*m));
	m->h.nlmsg_len = (uint32_t)NLMSG_LENGTH(fixed);
	m->h.nlmsg_type = type;
	return NLMSG_DATA(&m->h);
}

static struct nl_msgview view(const struct msg *m)
{
	struct nl_msgview v;
	size_t off = 0;
	assert_int_equal(nl_next(m->b, m->h.nlmsg_len, &off, &v), 1);
	return v;
}

/* "local|unicast DST/LEN" in TABLE (over 255: RTA_TABLE, as the kernel
 * writes it, with RT_TABLE_UNSPEC in the header's byte). */
static unsigned route(uint16_t type, uint8_t family, const uint8_t *dst, uint8_t dst_len,
		      uint32_t table, uint8_t rtype)
{
	struct msg m;
	struct rtmsg *r = start(&m, type, sizeof(*r));
	r->rtm_family = family;
	r->rtm_dst_len = dst_len;
	r->rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
	r->rtm_type = rtype;
	r->rtm_scope = rtype == RTN_LOCAL ? RT_SCOPE_HOST : RT_SCOPE_UNIVERSE;
	r->rtm_protocol = RTPROT_KERNEL;
	assert_int_equal(nl_attr_put_u32(&m.h, sizeof(m), RTA_TABLE, table), 0);
	if (dst)
		assert_int_equal(nl_attr_put(&m.h, sizeof(m), RTA_DST, dst, family == AF_INET ? 4 : 16), 0);
	struct nl_msgview v = view(&m);
	return plan_event_relevant(&v, 0, OWN_PORTID);
}

static unsigned rule(uint16_t type, uint32_t table)
{
	struct msg m;
	struct fib_rule_hdr *f = start(&m, type, sizeof(*f));
	f->family = AF_INET;
	f->action = FR_ACT_TO_TBL;
	f->table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
	assert_int_equal(nl_attr_put_u32(&m.h, sizeof(m), FRA_TABLE, table), 0);
	assert_int_equal(nl_attr_put_u32(&m.h, sizeof(m), FRA_PRIORITY, 1000), 0);
	struct nl_msgview v = view(&m);
	return plan_event_relevant(&v, 0, OWN_PORTID);
}

/* A message of type with a zeroed fixed part, read from the rtnetlink
 * socket (nft 0) or the nf_tables one (nft 1). */
static unsigned bare_on(int nft, uint16_t type, size_t fixed)
{
	struct msg m;
	start(&m, type, fixed);
	struct nl_msgview v = view(&m);
	return plan_event_relevant(&v, nft, OWN_PORTID);
}

static unsigned bare(uint16_t type, size_t fixed)
{
	return bare_on(0, type, fixed);
}

/* An nf_tables event naming table (NULL: none) from portid. */
static unsigned nft_event(uint8_t msg, const char *table, uint32_t portid)
{
	struct msg m;
	struct nfgenmsg *g = start(&m, (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | msg), sizeof(*g));
	g->nfgen_family = NFPROTO_BRIDGE;
	g->version = NFNETLINK_V0;
	m.h.nlmsg_pid = portid;
	if (table)
		assert_int_equal(nl_attr_put_str(&m.h, sizeof(m), NFTA_TABLE_NAME, table), 0);
	struct nl_msgview v = view(&m);
	return plan_event_relevant(&v, 1, OWN_PORTID);
}

static void test_links_addresses(void **state)
{
	(void)state;
	assert_int_equal(bare(RTM_NEWLINK, sizeof(struct ifinfomsg)), PLAN_EV_PASS);
	assert_int_equal(bare(RTM_DELLINK, sizeof(struct ifinfomsg)), PLAN_EV_PASS);
	assert_int_equal(bare(RTM_NEWADDR, sizeof(struct ifaddrmsg)), PLAN_EV_PASS);
	assert_int_equal(bare(RTM_DELADDR, sizeof(struct ifaddrmsg)), PLAN_EV_PASS);
	/* neighbours (the responder writes them) call for nothing */
	assert_int_equal(bare(RTM_NEWNEIGH, sizeof(struct ndmsg)), 0);
	assert_int_equal(bare(RTM_DELNEIGH, sizeof(struct ndmsg)), 0);
}

static void test_routes(void **state)
{
	static const uint8_t any6[16];
	(void)state;
	/* ours: anything in table 169254 */
	assert_int_equal(route(RTM_NEWROUTE, AF_INET, NULL, 0, PLUMB_TABLE, RTN_UNICAST), PLAN_EV_PASS);
	assert_int_equal(route(RTM_DELROUTE, AF_INET, svc, 32, PLUMB_TABLE, RTN_LOCAL), PLAN_EV_PASS);
	assert_int_equal(route(RTM_DELROUTE, AF_INET6, any6, 0, PLUMB_TABLE, RTN_UNICAST), PLAN_EV_PASS);
	/* the kernel's "local 169.254.169.254" in table local: written again when
	 * veth-imds comes up (fib_add_ifaddr), so it must wake a pass, and so
	 * does its deletion (our own write settling) */
	assert_int_equal(route(RTM_NEWROUTE, AF_INET, svc, 32, RT_TABLE_LOCAL, RTN_LOCAL), PLAN_EV_PASS);
	assert_int_equal(route(RTM_DELROUTE, AF_INET, svc, 32, RT_TABLE_LOCAL, RTN_LOCAL), PLAN_EV_PASS);
	/* the pod's other routes: nothing */
	assert_int_equal(route(RTM_NEWROUTE, AF_INET, pod_ip, 32, RT_TABLE_LOCAL, RTN_LOCAL), 0);
	assert_int_equal(route(RTM_NEWROUTE, AF_INET, svc, 24, RT_TABLE_LOCAL, RTN_BROADCAST), 0);
	assert_int_equal(route(RTM_NEWROUTE, AF_INET, svc, 32, RT_TABLE_MAIN, RTN_UNICAST), 0);
	assert_int_equal(route(RTM_NEWROUTE, AF_INET, NULL, 0, RT_TABLE_MAIN, RTN_UNICAST), 0);
	assert_int_equal(route(RTM_NEWROUTE, AF_INET6, any6, 0, RT_TABLE_LOCAL, RTN_LOCAL), 0);
	/* a route message too short to parse: nothing (not a crash) */
	assert_int_equal(bare(RTM_NEWROUTE, 4), 0);
}

static void test_rules(void **state)
{
	(void)state;
	assert_int_equal(rule(RTM_NEWRULE, PLUMB_TABLE), PLAN_EV_PASS);
	assert_int_equal(rule(RTM_DELRULE, PLUMB_TABLE), PLAN_EV_PASS);
	assert_int_equal(rule(RTM_NEWRULE, RT_TABLE_MAIN), 0);
	assert_int_equal(rule(RTM_DELRULE, 254000u), 0);
	assert_int_equal(bare(RTM_NEWRULE, 2), 0);
}

static void test_nft(void **state)
{
	(void)state;
	/* another process touched our table: a pass, the ruleset again */
	assert_int_equal(nft_event(NFT_MSG_DELTABLE, STEER_TABLE, 99u), PLAN_EV_PASS | PLAN_EV_RULESET);
	assert_int_equal(nft_event(NFT_MSG_NEWRULE, STEER_TABLE, 0u), PLAN_EV_PASS | PLAN_EV_RULESET);
	/* our own transaction's echo, another table, no table, a malformed one */
	assert_int_equal(nft_event(NFT_MSG_NEWRULE, STEER_TABLE, OWN_PORTID), 0);
	assert_int_equal(nft_event(NFT_MSG_NEWRULE, "kubevirt_imds2", 99u), 0);
	assert_int_equal(nft_event(NFT_MSG_NEWTABLE, "filter", 99u), 0);
	assert_int_equal(nft_event(NFT_MSG_NEWGEN, NULL, 99u), 0);
	assert_int_equal(bare_on(1, (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_DELTABLE), 2), 0);
	/* the socket tells the kinds apart: nfnetlink's batch begin is
	 * rtnetlink's RTM_NEWLINK by number, and neither is the other */
	assert_int_equal(NFNL_MSG_BATCH_BEGIN, RTM_NEWLINK);
	assert_int_equal(bare_on(1, NFNL_MSG_BATCH_BEGIN, sizeof(struct nfgenmsg)), 0);
	assert_int_equal(bare_on(0, (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_DELTABLE),
				 sizeof(struct nfgenmsg)),
			 0);
}

/* The read loop over what is not a kernel's event socket. */
static void test_read(void **state)
{
	static uint8_t buf[4096];
	int sv[2], pfd[2], err = -1;
	struct nl_sock s;
	struct msg m;
	(void)state;

	/* a datagram that is not the kernel's (no sockaddr_nl from pid 0): passed
	 * over, then nothing queued */
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv), 0);
	start(&m, RTM_NEWLINK, sizeof(struct ifinfomsg));
	assert_int_equal(write(sv[1], m.b, m.h.nlmsg_len), (ssize_t)m.h.nlmsg_len);
	nl_sock_init(&s);
	s.fd = sv[0];
	assert_int_equal(plan_events_read(&s, 0, OWN_PORTID, buf, sizeof(buf), 8, &err), 0);
	assert_int_equal(err, 0);
	close(sv[0]);
	close(sv[1]);

	/* a read error: what a lost event calls for, the error said */
	assert_int_equal(pipe2(pfd, O_NONBLOCK), 0);
	assert_int_equal(write(pfd[1], "x", 1), 1);
	s.fd = pfd[0];
	assert_int_equal(plan_events_read(&s, 1, OWN_PORTID, buf, sizeof(buf), 8, &err),
			 PLAN_EV_PASS | PLAN_EV_RULESET);
	assert_int_equal(err, -ENOTSOCK);
	close(pfd[0]);
	close(pfd[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_links_addresses),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_nft),
		cmocka_unit_test(test_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
