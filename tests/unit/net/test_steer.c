/* steer: the ruleset it builds for what the sidecar serves, decoded
 * expression by expression the way `nft --debug=netlink` prints them
 * (nft_decode.h), must be what nft itself sends for the same rules
 * (tests/fixtures/nft/steer.golden: nft 1.0.6 fed the listing of our own
 * committed ruleset); the transaction's framing and the fallback alone
 * without plumbing; which ports are steered and guarded; passt's port
 * rewrite; the aliases for the pod's own addresses.  nft.c's own builder,
 * socket and event parser are test_nft.c (this file was test_nft.c and
 * held both). */
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
#include "nft_decode.h"
#include "plumb.h"
#include "steer.h"
#include "steer_golden.h"


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

/* The aliases: 192.0.0.128 + i (RFC 6890's protocol-assignment block) and
 * the same in 64:ff9b:1::/48 (RFC 8215), one per pod address, distinct. */
static void test_aliases(void **state)
{
	(void)state;
	uint8_t a[4], b[4], a6[16];
	static const uint8_t first[4] = {192, 0, 0, 128};
	static const uint8_t first6[16] = {0, 0x64, 0xff, 0x9b, 0, 1, 0, 0, 0, 0, 0, 0, 192, 0, 0, 128};
	steer_alias(0, a);
	assert_memory_equal(a, first, 4);
	steer_alias6(0, a6);
	assert_memory_equal(a6, first6, 16);
	for (size_t i = 0; i < STEER_MAX_LOCAL6; i++) {
		steer_alias(i, a);
		steer_alias6(i, a6);
		assert_int_equal(a[3], 128 + i);
		assert_memory_equal(a6 + 12, a, 4);
		for (size_t j = 0; j < i; j++) {
			steer_alias(j, b);
			assert_memory_not_equal(a, b, 4);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_passt_port),
		cmocka_unit_test(test_aliases),
	};
	return cmocka_run_group_tests_name("steer", tests, NULL, NULL);
}
