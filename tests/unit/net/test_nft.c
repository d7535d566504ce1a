/* nft: nf_tables over raw netlink, its own contract.  The pure builder: a
 * hand-made transaction with every kind of object and expression nft.h
 * offers, decoded the way `nft --debug=netlink` prints it (nft_decode.h),
 * its framing (begin/end, sequence numbers, acks asked), every buffer size
 * short of the whole failing cleanly, misuse refused; the event parser on
 * byte tables; and the socket side against the kernel in a private network
 * namespace: the transaction accepted, one with a bad rule refused whole
 * with the kernel's reason, and the events it emitted parsed back.  The
 * ruleset steer.c builds with it is test_steer.c's (this file held both). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter/nfnetlink.h>

#include "netns.h"
#include "nft.h"
#include "nft_decode.h"
#include "nl.h"

/* A transaction with each builder call: an ip table with an input chain
 * (two rules) and a prerouting one, a netdev table with an ingress chain
 * on lo. */
static void sample(struct nft_batch *b, const char *table)
{
	static const uint8_t tcp = 6, imds[4] = {169, 254, 169, 254};
	uint16_t p80 = htons(80), p8080 = htons(8080);
	uint32_t lo = 1, mark = 0x539;

	nft_add_table(b, NFT_FAMILY_IPV4, table);
	nft_add_chain(b, NFT_FAMILY_IPV4, table, "in", NFT_HOOK_INPUT, 0, NULL, NFT_V_ACCEPT);
	nft_add_chain(b, NFT_FAMILY_IPV4, table, "pre", NFT_HOOK_PREROUTING, -310, NULL, NFT_V_ACCEPT);
	nft_rule_begin(b, NFT_FAMILY_IPV4, table, "in");
	nft_e_meta(b, NFT_META_L4PROTO, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &tcp, 1);
	nft_e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_NEQ, &p80, 2);
	nft_e_counter(b);
	nft_e_reject(b, NFT_REJECT_ICMP_UNREACH, 13);
	nft_rule_end(b);
	nft_rule_begin(b, NFT_FAMILY_IPV4, table, "in");
	nft_e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, imds, 4);
	nft_e_imm(b, NFT_REG_1, &p8080, 2);
	nft_e_payload_set(b, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG_1, NFT_PAYLOAD_CSUM_INET, 16, 0);
	nft_e_verdict(b, NFT_V_DROP);
	nft_rule_end(b);
	nft_rule_begin(b, NFT_FAMILY_IPV4, table, "pre");
	nft_e_notrack(b);
	nft_rule_end(b);
	nft_add_table(b, NFT_FAMILY_NETDEV, table);
	nft_add_chain(b, NFT_FAMILY_NETDEV, table, "ing", NFT_HOOK_INGRESS, -500, "lo", NFT_V_ACCEPT);
	nft_rule_begin(b, NFT_FAMILY_NETDEV, table, "ing");
	nft_e_imm(b, NFT_REG_1, &mark, 4);
	nft_e_meta_set(b, NFT_META_MARK, NFT_REG_1);
	nft_e_imm(b, NFT_REG_1, &lo, 4);
	nft_e_dup(b, NFT_REG_1);
	nft_e_verdict(b, NFT_V_ACCEPT);
	nft_rule_end(b);
}

/* The sample's rules as nft --debug=netlink prints them. */
static const char sample_text[] =
	"ip t in\n"
	"  [ meta load l4proto => reg 1 ]\n"
	"  [ cmp eq reg 1 0x00000006 ]\n"
	"  [ payload load 2b @ transport header + 2 => reg 1 ]\n"
	"  [ cmp neq reg 1 0x00005000 ]\n"
	"  [ counter pkts 0 bytes 0 ]\n"
	"  [ reject type 0 code 13 ]\n"
	"ip t in\n"
	"  [ payload load 4b @ network header + 16 => reg 1 ]\n"
	"  [ cmp eq reg 1 0xfea9fea9 ]\n"
	"  [ immediate reg 1 0x0000901f ]\n"
	"  [ payload write reg 1 => 2b @ transport header + 2 csum_type 1 csum_off 16 csum_flags 0x0 ]\n"
	"  [ immediate reg 0 drop ]\n"
	"ip t pre\n"
	"  [ notrack ]\n"
	"netdev t ing\n"
	"  [ immediate reg 1 0x00000539 ]\n"
	"  [ meta set mark with reg 1 ]\n"
	"  [ immediate reg 1 0x00000001 ]\n"
	"  [ dup sreg_dev 1 ]\n"
	"  [ immediate reg 0 accept ]\n";

static void test_builder(void **state)
{
	(void)state;
	static uint8_t buf[8192];
	static char text[8192];
	struct nft_batch b;

	nft_batch_init(&b, buf, sizeof(buf), 100);
	sample(&b, "t");
	assert_int_equal(nft_batch_finish(&b), 0);
	decode_rules(buf, b.len, text, sizeof(text));
	assert_string_equal(text, sample_text);

	/* framing: begin, one message per object, end; every one a request
	 * with the next sequence number; every object asks for an ack */
	unsigned n = 0, acks = 0, tables = 0, chains = 0;
	for (size_t off = 0; off < b.len; n++) {
		struct nlmsghdr h;
		struct nfgenmsg g;
		memcpy(&h, buf + off, sizeof(h));
		memcpy(&g, buf + off + AL4(sizeof(h)), sizeof(g));
		assert_int_equal(h.nlmsg_seq, 100 + n);
		assert_true(h.nlmsg_flags & NLM_F_REQUEST);
		assert_int_equal(g.version, NFNETLINK_V0);
		if (off == 0) {
			assert_int_equal(h.nlmsg_type, NFNL_MSG_BATCH_BEGIN);
			assert_int_equal(ntohs(g.res_id), NFNL_SUBSYS_NFTABLES);
		}
		if (h.nlmsg_flags & NLM_F_ACK)
			acks++;
		tables += h.nlmsg_type == ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE);
		chains += h.nlmsg_type == ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWCHAIN);
		assert_true(h.nlmsg_len >= sizeof(h) && off + h.nlmsg_len <= b.len);
		off += AL4(h.nlmsg_len);
		if (off == b.len)
			assert_int_equal(h.nlmsg_type, NFNL_MSG_BATCH_END);
	}
	assert_int_equal(n, 2 + 2 + 3 + 4);
	assert_int_equal(acks, b.nacks);
	assert_int_equal(acks, 9);
	assert_int_equal(tables, 2);
	assert_int_equal(chains, 3);
	assert_int_equal(b.seq - b.seq0, n);

	/* nft_ifname: NUL-padded to 16, cut at 15 */
	uint8_t name[16];
	static const uint8_t want[16] = {'t', 'a', 'p', '0'};
	memset(name, 0xaa, sizeof(name));
	nft_ifname(name, "tap0");
	assert_memory_equal(name, want, 16);
	nft_ifname(name, "a-name-longer-than-ifnamsiz");
	assert_memory_equal(name, "a-name-longer-t", 15);
	assert_int_equal(name[15], 0);
}

static void test_errors(void **state)
{
	(void)state;
	static uint8_t buf[8192];
	struct nft_batch b;

	/* every size short of the whole batch fails cleanly, never overruns */
	nft_batch_init(&b, buf, sizeof(buf), 1);
	sample(&b, "t");
	assert_int_equal(nft_batch_finish(&b), 0);
	size_t need = b.len;
	for (size_t cap = 0; cap < need; cap++) {
		uint8_t *small = malloc(cap ? cap : 1);
		assert_non_null(small);
		nft_batch_init(&b, small, cap, 1);
		sample(&b, "t");
		assert_int_equal(nft_batch_finish(&b), -EMSGSIZE);
		assert_true(b.len <= cap);
		free(small);
	}

	/* misuse: an expression outside a rule, a rule left open, two at once */
	nft_batch_init(&b, buf, sizeof(buf), 1);
	nft_e_counter(&b);
	assert_int_equal(nft_batch_finish(&b), -EINVAL);
	nft_batch_init(&b, buf, sizeof(buf), 1);
	nft_rule_begin(&b, NFT_FAMILY_IPV4, "t", "c");
	assert_int_equal(nft_batch_finish(&b), -EINVAL);
	nft_batch_init(&b, buf, sizeof(buf), 1);
	nft_rule_begin(&b, NFT_FAMILY_IPV4, "t", "c");
	nft_rule_begin(&b, NFT_FAMILY_IPV4, "t", "c");
	assert_int_equal(b.err, -EINVAL);
	nft_batch_init(&b, buf, sizeof(buf), 1);
	nft_rule_end(&b);
	assert_int_equal(b.err, -EINVAL);
}

/* Events other processes' changes emit: header, nfgenmsg, attributes. */
static void test_events(void **state)
{
	(void)state;
	struct ev {
		const char *name;
		uint16_t type;
		uint8_t payload[64];
		size_t n;
		int ret;
		unsigned msg;
		const char *table;
	} evs[] = {
		{"DELTABLE ours", (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE,
		 {2, 0, 0, 0, 18, 0, 1, 0, 'k', 'u', 'b', 'e', 'v', 'i', 'r', 't', '_', 'i', 'm', 'd', 's', 0, 0, 0},
		 24, 0, NFT_MSG_DELTABLE, "kubevirt_imds"},
		{"NEWRULE, table after another attribute", (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE,
		 {7, 0, 0, 0, 8, 0, 2, 0, 'c', 0, 0, 0, 8, 0, 1, 0, 'n', 'a', 't', 0}, 20, 0, NFT_MSG_NEWRULE, "nat"},
		{"NEWGEN (no table)", (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWGEN,
		 {0, 0, 0, 0, 8, 0, 1, 0, 0, 0, 0, 5}, 12, 0, NFT_MSG_NEWGEN, ""},
		{"a table name without NUL, too long: cut", (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE,
		 {2, 0, 0, 0, 36, 0, 1, 0, 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'b', 'b', 'b', 'b'},
		 40, 0, NFT_MSG_NEWTABLE, "aaaaaaaaaaaaaaaaaaaaaaaaaaaabbb"},
		{"truncated nfgenmsg", (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE, {2, 0}, 2, -EBADMSG, 0, ""},
		{"attribute longer than the message", (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELRULE,
		 {2, 0, 0, 0, 30, 0, 1, 0, 'x', 0, 0, 0}, 12, -EBADMSG, 0, ""},
		{"rtnetlink, not ours", RTM_NEWLINK, {0}, 16, -ENOMSG, 0, ""},
	};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		struct nl_msgview m = {.type = evs[i].type, .payload = {evs[i].payload, evs[i].n}};
		struct nft_msg out;
		int r = nft_parse_msg(&m, &out);
		if (r != evs[i].ret)
			fail_msg("%s: %d", evs[i].name, r);
		if (r == 0) {
			assert_int_equal(out.type, evs[i].msg);
			assert_string_equal(out.table, evs[i].table);
		}
	}
}

/* What the kernel emitted for a transaction, parsed: counts by type. */
struct seen {
	unsigned tables, chains, rules, gens;
};

static void drain_events(struct nl_sock *ev, const char *table, struct seen *s)
{
	static uint8_t buf[65536];
	size_t len;
	int ret;
	memset(s, 0, sizeof(*s));
	while ((ret = nl_recv_events(ev, buf, sizeof(buf), &len)) == 0) {
		size_t off = 0;
		struct nl_msgview m;
		while (nl_next(buf, len, &off, &m) == 1) {
			struct nft_msg msg;
			if (nft_parse_msg(&m, &msg))
				continue;
			if (msg.type == NFT_MSG_NEWGEN)
				s->gens++;
			if (strcmp(msg.table, table) != 0)
				continue;
			s->tables += msg.type == NFT_MSG_NEWTABLE;
			s->chains += msg.type == NFT_MSG_NEWCHAIN;
			s->rules += msg.type == NFT_MSG_NEWRULE;
		}
	}
	assert_int_equal(ret, -EAGAIN);
}

static void test_kernel(void **state)
{
	(void)state;
	static uint8_t buf[8192];
	struct nl_sock s, ev;
	struct nft_batch b;
	struct seen seen;
	char err[512] = "";

	netns_private();
	nl_sock_init(&s);
	nl_sock_init(&ev);
	if (nft_open(&s, 0, err, sizeof(err)) || nft_open(&ev, 1, err, sizeof(err)))
		fail_msg("nft_open: %s", err);

	/* the sample, accepted; its events: two tables, three chains, four
	 * rules, one generation */
	nft_batch_init(&b, buf, sizeof(buf), 1);
	sample(&b, "imds_t");
	assert_int_equal(nft_batch_finish(&b), 0);
	if (nft_commit(&s, &b, err, sizeof(err)))
		fail_msg("the kernel refused the sample: %s", err);
	drain_events(&ev, "imds_t", &seen);
	assert_int_equal(seen.tables, 2);
	assert_int_equal(seen.chains, 3);
	assert_int_equal(seen.rules, 4);
	assert_int_equal(seen.gens, 1);

	/* a new table and a rule in a chain that is not there: refused with
	 * the kernel's errno (Linux gives no text for it), and nothing of it
	 * applied (no event, no table) */
	nft_batch_init(&b, buf, sizeof(buf), 50);
	nft_add_table(&b, NFT_FAMILY_IPV4, "imds_v");
	nft_rule_begin(&b, NFT_FAMILY_IPV4, "imds_v", "missing");
	nft_e_counter(&b);
	nft_rule_end(&b);
	assert_int_equal(nft_batch_finish(&b), 0);
	assert_int_equal(nft_commit(&s, &b, err, sizeof(err)), -ENOENT);
	drain_events(&ev, "imds_v", &seen);
	assert_int_equal(seen.tables + seen.gens, 0);
	nft_batch_init(&b, buf, sizeof(buf), 60);
	nft_del_table(&b, NFT_FAMILY_IPV4, "imds_v");
	assert_int_equal(nft_batch_finish(&b), 0);
	assert_int_equal(nft_commit(&s, &b, err, sizeof(err)), -ENOENT);

	/* a batch the builder could not finish is never sent */
	static uint8_t small[64];
	nft_batch_init(&b, small, sizeof(small), 80);
	sample(&b, "imds_w");
	assert_int_equal(nft_batch_finish(&b), -EMSGSIZE);
	assert_int_equal(nft_commit(&s, &b, err, sizeof(err)), -EMSGSIZE);
	drain_events(&ev, "imds_w", &seen);
	assert_int_equal(seen.tables + seen.gens, 0);

	/* the sample again: tables are created if absent, the rules added */
	nft_batch_init(&b, buf, sizeof(buf), 70);
	sample(&b, "imds_t");
	assert_int_equal(nft_batch_finish(&b), 0);
	assert_int_equal(nft_commit(&s, &b, err, sizeof(err)), 0);
	/* and deleted */
	nft_batch_init(&b, buf, sizeof(buf), 90);
	nft_del_table(&b, NFT_FAMILY_IPV4, "imds_t");
	nft_del_table(&b, NFT_FAMILY_NETDEV, "imds_t");
	assert_int_equal(nft_batch_finish(&b), 0);
	assert_int_equal(nft_commit(&s, &b, err, sizeof(err)), 0);
	nl_close(&s);
	nl_close(&ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builder),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_kernel),
	};
	return cmocka_run_group_tests_name("nft", tests, NULL, NULL);
}
