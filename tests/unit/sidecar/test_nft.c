/* nft and steer: the batch our builder writes, decoded expression by
 * expression the way `nft --debug=netlink` prints them, must be what nft
 * itself sends for the same rules (tests/fixtures/nft/steer.golden: nft
 * 1.0.6 fed the listing of our own committed ruleset).  Plus the batch's
 * framing (begin/end, sequence numbers, acks asked), the builder's errors
 * (a full buffer, a rule left open), and the event parser on byte tables. */
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

#include "nft.h"
#include "plumb.h"
#include "steer.h"
#include "steer_golden.h"

#define AL4(x) (((size_t)(x) + 3u) & ~(size_t)3u)

struct attr {
	uint16_t type;
	const uint8_t *p;
	size_t n;
};

/* The attributes in p[0..n) into tb (by type, up to max). */
static void attrs(const uint8_t *p, size_t n, struct attr *tb, unsigned max)
{
	memset(tb, 0, sizeof(*tb) * (max + 1));
	while (n >= 4) {
		uint16_t len, type;
		memcpy(&len, p, 2);
		memcpy(&type, p + 2, 2);
		assert_true(len >= 4 && len <= n);
		type &= NLA_TYPE_MASK;
		if (type <= max)
			tb[type] = (struct attr){type, p + 4, len - 4u};
		size_t step = AL4(len);
		if (step > n)
			step = n;
		p += step;
		n -= step;
	}
	assert_int_equal(n, 0);
}

static uint32_t be32at(struct attr a)
{
	uint32_t v;
	assert_int_equal(a.n, 4);
	memcpy(&v, a.p, 4);
	return ntohl(v);
}

/* "0x... 0x..." as nft prints register data: 32-bit words, host order. */
static void words(char *out, size_t cap, struct attr data)
{
	struct attr tb[NFTA_DATA_MAX + 1];
	size_t at = 0;
	attrs(data.p, data.n, tb, NFTA_DATA_MAX);
	assert_non_null(tb[NFTA_DATA_VALUE].p);
	for (size_t i = 0; i < tb[NFTA_DATA_VALUE].n; i += 4) {
		uint8_t w[4] = {0};
		size_t k = tb[NFTA_DATA_VALUE].n - i < 4 ? tb[NFTA_DATA_VALUE].n - i : 4;
		uint32_t v;
		memcpy(w, tb[NFTA_DATA_VALUE].p + i, k);
		memcpy(&v, w, 4);
		at += (size_t)snprintf(out + at, cap - at, "%s0x%08x", i ? " " : "", v);
	}
}

static const char *base_name(uint32_t b)
{
	return b == NFT_PAYLOAD_LL_HEADER ? "link" : b == NFT_PAYLOAD_NETWORK_HEADER ? "network" : "transport";
}

static const char *meta_name(uint32_t k)
{
	switch (k) {
	case NFT_META_PROTOCOL: return "protocol";
	case NFT_META_L4PROTO: return "l4proto";
	case NFT_META_IIFNAME: return "iifname";
	case NFT_META_OIFNAME: return "oifname";
	case NFT_META_IIFTYPE: return "iiftype";
	case NFT_META_MARK: return "mark";
	default: return "?";
	}
}

/* One expression as `[ ... ]`. */
static void expr_text(struct attr elem, char *out, size_t cap)
{
	struct attr e[NFTA_EXPR_MAX + 1], d[16];
	char name[32], w[128];
	attrs(elem.p, elem.n, e, NFTA_EXPR_MAX);
	assert_non_null(e[NFTA_EXPR_NAME].p);
	snprintf(name, sizeof(name), "%.*s", (int)e[NFTA_EXPR_NAME].n, (const char *)e[NFTA_EXPR_NAME].p);
	attrs(e[NFTA_EXPR_DATA].p, e[NFTA_EXPR_DATA].n, d, 15);
	if (!strcmp(name, "meta") && d[NFTA_META_SREG].p) {
		snprintf(out, cap, "[ meta set %s with reg %u ]", meta_name(be32at(d[NFTA_META_KEY])),
			 be32at(d[NFTA_META_SREG]));
	} else if (!strcmp(name, "meta")) {
		snprintf(out, cap, "[ meta load %s => reg %u ]", meta_name(be32at(d[NFTA_META_KEY])),
			 be32at(d[NFTA_META_DREG]));
	} else if (!strcmp(name, "cmp")) {
		words(w, sizeof(w), d[NFTA_CMP_DATA]);
		snprintf(out, cap, "[ cmp %s reg %u %s ]", be32at(d[NFTA_CMP_OP]) == NFT_CMP_EQ ? "eq" : "neq",
			 be32at(d[NFTA_CMP_SREG]), w);
	} else if (!strcmp(name, "payload") && d[NFTA_PAYLOAD_SREG].p) {
		snprintf(out, cap, "[ payload write reg %u => %ub @ %s header + %u csum_type %u csum_off %u csum_flags 0x%x ]",
			 be32at(d[NFTA_PAYLOAD_SREG]), be32at(d[NFTA_PAYLOAD_LEN]),
			 base_name(be32at(d[NFTA_PAYLOAD_BASE])), be32at(d[NFTA_PAYLOAD_OFFSET]),
			 be32at(d[NFTA_PAYLOAD_CSUM_TYPE]), be32at(d[NFTA_PAYLOAD_CSUM_OFFSET]),
			 d[NFTA_PAYLOAD_CSUM_FLAGS].p ? be32at(d[NFTA_PAYLOAD_CSUM_FLAGS]) : 0);
	} else if (!strcmp(name, "payload")) {
		snprintf(out, cap, "[ payload load %ub @ %s header + %u => reg %u ]", be32at(d[NFTA_PAYLOAD_LEN]),
			 base_name(be32at(d[NFTA_PAYLOAD_BASE])), be32at(d[NFTA_PAYLOAD_OFFSET]),
			 be32at(d[NFTA_PAYLOAD_DREG]));
	} else if (!strcmp(name, "immediate") && be32at(d[NFTA_IMMEDIATE_DREG]) == NFT_REG_VERDICT) {
		struct attr v[NFTA_DATA_MAX + 1], c[NFTA_VERDICT_MAX + 1];
		attrs(d[NFTA_IMMEDIATE_DATA].p, d[NFTA_IMMEDIATE_DATA].n, v, NFTA_DATA_MAX);
		attrs(v[NFTA_DATA_VERDICT].p, v[NFTA_DATA_VERDICT].n, c, NFTA_VERDICT_MAX);
		snprintf(out, cap, "[ immediate reg 0 %s ]",
			 be32at(c[NFTA_VERDICT_CODE]) == NFT_V_DROP ? "drop" : "accept");
	} else if (!strcmp(name, "immediate")) {
		words(w, sizeof(w), d[NFTA_IMMEDIATE_DATA]);
		snprintf(out, cap, "[ immediate reg %u %s ]", be32at(d[NFTA_IMMEDIATE_DREG]), w);
	} else if (!strcmp(name, "fwd")) {
		snprintf(out, cap, "[ fwd sreg_dev %u ]", be32at(d[NFTA_FWD_SREG_DEV]));
	} else if (!strcmp(name, "dup")) {
		snprintf(out, cap, "[ dup sreg_dev %u ]", be32at(d[NFTA_DUP_SREG_DEV]));
	} else if (!strcmp(name, "reject")) {
		snprintf(out, cap, "[ reject type %u code %u ]", be32at(d[NFTA_REJECT_TYPE]),
			 d[NFTA_REJECT_ICMP_CODE].p[0]);
	} else if (!strcmp(name, "counter")) {
		snprintf(out, cap, "[ counter pkts 0 bytes 0 ]");
	} else {
		snprintf(out, cap, "[ %s ]", name);
	}
}

static const char *family_name(uint8_t f)
{
	return f == NFT_FAMILY_NETDEV ? "netdev"
	       : f == NFT_FAMILY_IPV4 ? "ip"
	       : f == NFT_FAMILY_IPV6 ? "ip6"
	       : f == NFT_FAMILY_BRIDGE ? "bridge"
				       : "?";
}

/* Every rule of the batch, in nft's debug format, into out. */
static size_t decode_rules(const uint8_t *buf, size_t len, char *out, size_t cap)
{
	size_t at = 0;
	for (size_t off = 0; off < len;) {
		struct nlmsghdr h;
		struct nfgenmsg g;
		memcpy(&h, buf + off, sizeof(h));
		memcpy(&g, buf + off + AL4(sizeof(h)), sizeof(g));
		if (h.nlmsg_type == ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE)) {
			struct attr r[NFTA_RULE_MAX + 1];
			size_t hdr = AL4(sizeof(h)) + AL4(sizeof(g));
			attrs(buf + off + hdr, h.nlmsg_len - hdr, r, NFTA_RULE_MAX);
			at += (size_t)snprintf(out + at, cap - at, "%s %.*s %.*s\n", family_name(g.nfgen_family),
					       (int)r[NFTA_RULE_TABLE].n - 1, (const char *)r[NFTA_RULE_TABLE].p,
					       (int)r[NFTA_RULE_CHAIN].n - 1, (const char *)r[NFTA_RULE_CHAIN].p);
			const uint8_t *p = r[NFTA_RULE_EXPRESSIONS].p;
			size_t n = r[NFTA_RULE_EXPRESSIONS].n;
			while (n >= 4) {
				uint16_t alen;
				char line[256];
				memcpy(&alen, p, 2);
				expr_text((struct attr){0, p + 4, alen - 4u}, line, sizeof(line));
				at += (size_t)snprintf(out + at, cap - at, "  %s\n", line);
				size_t step = AL4(alen) < n ? AL4(alen) : n;
				p += step;
				n -= step;
			}
		}
		off += AL4(h.nlmsg_len);
	}
	return at;
}

static char *read_golden(void)
{
	FILE *f = fopen("tests/fixtures/nft/steer.golden", "r");
	static char text[32768];
	size_t at = 0;
	char line[512];
	assert_non_null(f); /* run from the repository's root, as tests/run.sh does */
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#')
			at += (size_t)snprintf(text + at, sizeof(text) - at, "%s", line);
	fclose(f);
	return text;
}

static void test_golden(void **state)
{
	(void)state;
	static uint8_t buf[65536];
	static char ours[32768];
	struct nft_batch b;
	struct steer_state st = golden_state();

	nft_batch_init(&b, buf, sizeof(buf), 100);
	assert_int_equal(steer_build(&st, &b), 0);
	assert_int_equal(nft_batch_finish(&b), 0);
	decode_rules(buf, b.len, ours, sizeof(ours));
	/* the first line that differs, with its number, on failure */
	const char *g = read_golden(), *o = ours;
	for (unsigned line = 1;; line++) {
		const char *ge = strchr(g, '\n'), *oe = strchr(o, '\n');
		size_t gl = ge ? (size_t)(ge - g) : strlen(g), ol = oe ? (size_t)(oe - o) : strlen(o);
		if (gl != ol || memcmp(g, o, gl) != 0)
			fail_msg("line %u: nft sends '%.*s', we send '%.*s'", line, (int)gl, g, (int)ol, o);
		if (!ge || !oe) {
			assert_true(!ge && !oe);
			break;
		}
		g = ge + 1;
		o = oe + 1;
	}
}

static void test_framing(void **state)
{
	(void)state;
	static uint8_t buf[65536];
	struct nft_batch b;
	struct steer_state st = golden_state();
	unsigned n = 0, acks = 0;
	uint32_t seq = 100;

	nft_batch_init(&b, buf, sizeof(buf), 100);
	steer_build(&st, &b);
	assert_int_equal(nft_batch_finish(&b), 0);
	for (size_t off = 0; off < b.len; n++) {
		struct nlmsghdr h;
		struct nfgenmsg g;
		memcpy(&h, buf + off, sizeof(h));
		memcpy(&g, buf + off + AL4(sizeof(h)), sizeof(g));
		assert_int_equal(h.nlmsg_seq, seq++);
		assert_true(h.nlmsg_flags & NLM_F_REQUEST);
		if (off == 0) {
			assert_int_equal(h.nlmsg_type, NFNL_MSG_BATCH_BEGIN);
			assert_int_equal(ntohs(g.res_id), NFNL_SUBSYS_NFTABLES);
		}
		if (h.nlmsg_flags & NLM_F_ACK)
			acks++;
		off += AL4(h.nlmsg_len);
		if (off == b.len)
			assert_int_equal(h.nlmsg_type, NFNL_MSG_BATCH_END);
	}
	assert_int_equal(acks, b.nacks);
	assert_int_equal(n, b.nacks + 2);
	assert_int_equal(b.seq - b.seq0, n);

	/* Without plumbing: the netdev table is deleted, the fallback stays. */
	struct steer_state fb = {0};
	memcpy(fb.ip, st.ip, 4);
	static char text[32768];
	nft_batch_init(&b, buf, sizeof(buf), 1);
	assert_int_equal(steer_build(&fb, &b), 0);
	assert_int_equal(nft_batch_finish(&b), 0);
	decode_rules(buf, b.len, text, sizeof(text));
	assert_null(strstr(text, "netdev"));
	assert_non_null(strstr(text, "ip kubevirt_imds forward"));
	assert_non_null(strstr(text, "bridge kubevirt_imds input"));
}

static void test_errors(void **state)
{
	(void)state;
	static uint8_t buf[65536];
	struct nft_batch b;
	struct steer_state st = golden_state();

	/* every size short of the whole batch fails cleanly, never overruns */
	nft_batch_init(&b, buf, sizeof(buf), 1);
	steer_build(&st, &b);
	nft_batch_finish(&b);
	size_t need = b.len;
	for (size_t cap = 0; cap < need; cap += 7) {
		uint8_t *small = malloc(cap ? cap : 1);
		assert_non_null(small);
		nft_batch_init(&b, small, cap, 1);
		steer_build(&st, &b);
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

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Only the service's TCP port is steered (DNS at .254 stays the node's);
 * with a port other than 80, 80 is guarded too (the node's own metadata
 * service), never steered. */
static void test_ports(void **state)
{
	(void)state;
	static uint8_t buf[65536];
	static char text[32768];
	struct nft_batch b;
	struct steer_state st = golden_state();
	const char *p80 = "payload load 2b @ transport header + 2 => reg 1 ]\n  [ cmp eq reg 1 0x00005000 ]";
	const char *p8080 = "payload load 2b @ transport header + 2 => reg 1 ]\n  [ cmp eq reg 1 0x0000901f ]";

	nft_batch_init(&b, buf, sizeof(buf), 1);
	assert_int_equal(steer_build(&st, &b), 0);
	assert_int_equal(nft_batch_finish(&b), 0);
	decode_rules(buf, b.len, text, sizeof(text));
	/* two taps' steering, the mark that keeps Istio's TPROXY off (steer.h
	 * STEER_MARK), two output rejects, forward, bridge forward and input */
	assert_int_equal(count(text, p80), 8);
	assert_int_equal(count(text, p8080), 0);

	st.port = 8080;
	nft_batch_init(&b, buf, sizeof(buf), 1);
	assert_int_equal(steer_build(&st, &b), 0);
	assert_int_equal(nft_batch_finish(&b), 0);
	decode_rules(buf, b.len, text, sizeof(text));
	assert_int_equal(count(text, p8080), 8);
	/* 80: guarded (output off the pod, forward, the two bridge chains) */
	assert_int_equal(count(text, p80), 4);
}

/* passt's pods: the listeners on PLUMB_PASST_LPORT, the service's port
 * rewritten to it after routing and back on the way out, in both families;
 * the blocks as nft --debug=netlink encodes "ip daddr 169.254.169.254 tcp
 * dport 80 counter tcp dport set 50254" and "ip saddr 169.254.169.254 tcp
 * sport 50254 counter tcp sport set 80" (nftables 1.0.6, Debian 12).  No
 * rewrite where the listener has the service's port (every tap binding). */
static void test_passt_port(void **state)
{
	(void)state;
	static uint8_t buf[65536];
	static char text[32768];
	struct nft_batch b;
	struct steer_state st = golden_state();
	const char *in4 = "ip kubevirt_imds input\n"
			  "  [ payload load 4b @ network header + 16 => reg 1 ]\n"
			  "  [ cmp eq reg 1 0xfea9fea9 ]\n"
			  "  [ meta load l4proto => reg 1 ]\n"
			  "  [ cmp eq reg 1 0x00000006 ]\n"
			  "  [ payload load 2b @ transport header + 2 => reg 1 ]\n"
			  "  [ cmp eq reg 1 0x00005000 ]\n"
			  "  [ counter pkts 0 bytes 0 ]\n"
			  "  [ immediate reg 1 0x00004ec4 ]\n"
			  "  [ payload write reg 1 => 2b @ transport header + 2 csum_type 1 csum_off 16 "
			  "csum_flags 0x0 ]";
	const char *out4 = "ip kubevirt_imds output\n"
			   "  [ payload load 4b @ network header + 12 => reg 1 ]\n"
			   "  [ cmp eq reg 1 0xfea9fea9 ]\n"
			   "  [ meta load l4proto => reg 1 ]\n"
			   "  [ cmp eq reg 1 0x00000006 ]\n"
			   "  [ payload load 2b @ transport header + 0 => reg 1 ]\n"
			   "  [ cmp eq reg 1 0x00004ec4 ]\n"
			   "  [ counter pkts 0 bytes 0 ]\n"
			   "  [ immediate reg 1 0x00005000 ]\n"
			   "  [ payload write reg 1 => 2b @ transport header + 0 csum_type 1 csum_off 16 "
			   "csum_flags 0x0 ]";
	const char *w = "payload write reg 1 => 2b @ transport header";

	st.local_ok = 1;
	st.lport = PLUMB_PASST_LPORT;
	assert_int_equal(PLUMB_PASST_LPORT, 50254);
	nft_batch_init(&b, buf, sizeof(buf), 1);
	assert_int_equal(steer_build(&st, &b), 0);
	assert_int_equal(nft_batch_finish(&b), 0);
	decode_rules(buf, b.len, text, sizeof(text));
	assert_non_null(strstr(text, in4));
	assert_non_null(strstr(text, out4));
	/* ip: in and out; ip6: in and out for each of the two addresses */
	assert_int_equal(count(text, w), 6);

	for (int same = 0; same < 2; same++) {
		st.lport = same ? 80 : 0;
		nft_batch_init(&b, buf, sizeof(buf), 1);
		assert_int_equal(steer_build(&st, &b), 0);
		assert_int_equal(nft_batch_finish(&b), 0);
		decode_rules(buf, b.len, text, sizeof(text));
		assert_int_equal(count(text, w), 0);
		assert_null(strstr(text, "ip kubevirt_imds input"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_passt_port),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_events),
	};
	return cmocka_run_group_tests_name("nft", tests, NULL, NULL);
}
