/* ifaces: the text of imds.kubevirt.io/interfaces (issue 24's contract
 * with the sidecar) as byte tables: the tap names of secondary Multus
 * networks against sha256 computed here independently (a plain FIPS 180-4
 * implementation below, not OpenSSL's), every kind, the name fallback,
 * the caps, the checker over good and bad texts and every truncated
 * prefix, and the --binding-plugin flag. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ifaces.h"
#include "sbuf.h"

/* ---- sha256, FIPS 180-4, for the expected tap names ------------------- */

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return x >> n | x << (32 - n);
}

static void sha256_hex(const char *msg, size_t n, char out[65])
{
	uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	size_t total = (n + 9 + 63) / 64 * 64;
	unsigned char *m = calloc(total, 1);
	memcpy(m, msg, n);
	m[n] = 0x80;
	uint64_t bits = (uint64_t)n * 8;
	for (int i = 0; i < 8; i++)
		m[total - 1 - i] = (unsigned char)(bits >> (8 * i));
	for (size_t off = 0; off < total; off += 64) {
		uint32_t w[64];
		for (int i = 0; i < 16; i++)
			w[i] = (uint32_t)m[off + 4 * i] << 24 | (uint32_t)m[off + 4 * i + 1] << 16 |
			       (uint32_t)m[off + 4 * i + 2] << 8 | m[off + 4 * i + 3];
		for (int i = 16; i < 64; i++) {
			uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
			uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
			w[i] = w[i - 16] + s0 + w[i - 7] + s1;
		}
		uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
		for (int i = 0; i < 64; i++) {
			uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
			uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
			hh = g;
			g = f;
			f = e;
			e = d + t1;
			d = c;
			c = b;
			b = a;
			a = t1 + t2;
		}
		h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
	}
	free(m);
	for (int i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", h[i]);
}

static void test_sha256_vectors(void **state)
{
	(void)state;
	char hex[65];
	/* FIPS 180-4 examples, so the reference itself is right. */
	sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha256_hex(two, strlen(two), hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* ---- tap names ---------------------------------------------------------- */

static void test_tap_names(void **state)
{
	(void)state;
	/* The rendered pods pin two: 06's Multus network br1 is interface
	 * pod26578a32802 and 07's sriov is podf767c48f0c6
	 * (k8s.v1.cni.cncf.io/networks of the KubeVirt v1.8.4 pods). */
	static const struct {
		const char *net, *tap;
	} pinned[] = {{"br1", "tap26578a32802"}, {"sriov", "tapf767c48f0c6"}};
	char tap[IFACES_TAP_MAX + 1], hex[65], want[IFACES_TAP_MAX + 1];
	for (size_t i = 0; i < 2; i++) {
		ifc_tap_secondary(pinned[i].net, strlen(pinned[i].net), tap);
		assert_string_equal(tap, pinned[i].tap);
	}
	/* Others, against the reference: names of every length to 63, bytes a
	 * name may hold, and one that is not a valid name (hashed all the
	 * same: KubeVirt hashes whatever the network is called). */
	static const char *const nets[] = {"a", "net1", "blue-net", "storage.v2", "A_B",
					   "0123456789012345678901234567890123456789012345678901234567890ab",
					   "x y", "é"};
	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++) {
		size_t n = strlen(nets[i]);
		ifc_tap_secondary(nets[i], n, tap);
		sha256_hex(nets[i], n, hex);
		snprintf(want, sizeof(want), "tap%.11s", hex);
		assert_string_equal(tap, want);
		assert_int_equal(strlen(tap), 14); /* within the kernel's 15 */
	}
	/* All 256 one-byte names. */
	for (int c = 0; c < 256; c++) {
		char b = (char)c;
		ifc_tap_secondary(&b, 1, tap);
		sha256_hex(&b, 1, hex);
		snprintf(want, sizeof(want), "tap%.11s", hex);
		assert_string_equal(tap, want);
	}
}

/* ---- kinds and entries --------------------------------------------------- */

static void test_kinds(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		enum ifaces_kind k;
		int tap, in_pod;
	} kinds[] = {
		{"masquerade", IFACES_MASQUERADE, 1, 1}, {"bridge", IFACES_BRIDGE, 1, 1},
		{"managedtap", IFACES_MANAGEDTAP, 1, 1}, {"passt", IFACES_PASST, 0, 1},
		{"sriov", IFACES_SRIOV, 0, 0},           {"tap", IFACES_TAP, 0, 0},
		{"unknown", IFACES_UNKNOWN, 0, 0},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		enum ifaces_kind k;
		assert_string_equal(ifaces_kind_name(kinds[i].k), kinds[i].name);
		assert_int_equal(ifaces_kind_parse(kinds[i].name, strlen(kinds[i].name), &k), 0);
		assert_int_equal(k, kinds[i].k);
		assert_int_equal(ifaces_kind_has_tap(k), kinds[i].tap);
		assert_int_equal(ifaces_kind_in_pod(k), kinds[i].in_pod);
	}
	static const char *const bad[] = {"", "Masquerade", "masq", "masquerade ", "managedTap", "passtBinding",
					  "slirp", "macvtap", "unknownx"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum ifaces_kind k;
		assert_int_equal(ifaces_kind_parse(bad[i], strlen(bad[i]), &k), -EINVAL);
	}
	assert_string_equal(ifaces_kind_name((enum ifaces_kind)99), "?"); /* the shared table's */
}

static void test_names(void **state)
{
	(void)state;
	char n63[64], n64[65];
	memset(n63, 'a', 63);
	n63[63] = '\0';
	memset(n64, 'a', 64);
	n64[64] = '\0';
	static const char *const good[] = {"default", "br1", "a", "A.b_c-9", "..", "-"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(ifaces_name_ok(good[i], strlen(good[i])));
	assert_true(ifaces_name_ok(n63, 63));
	assert_false(ifaces_name_ok(n64, 64));
	assert_false(ifaces_name_ok("", 0));
	/* every byte outside [A-Za-z0-9._-] */
	for (int c = 0; c < 256; c++) {
		char b = (char)c;
		int want = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
			   c == '_' || c == '-';
		assert_int_equal(ifaces_name_ok(&b, 1), want);
	}
}

static void test_append(void **state)
{
	(void)state;
	char buf[256];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	ifaces_append(&b, 0, "default", 7, IFACES_MASQUERADE, "tap0");
	ifaces_append(&b, 1, "br1", 3, IFACES_BRIDGE, "tap26578a32802");
	ifaces_append(&b, 2, "fast", 4, IFACES_SRIOV, NULL);
	assert_string_equal(buf, "default:masquerade:tap0,br1:bridge:tap26578a32802,fast:sriov");
	/* the name fallback: not [A-Za-z0-9._-]{1,63} gives #<index> */
	b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
	ifaces_append(&b, 0, "", 0, IFACES_PASST, NULL);
	ifaces_append(&b, 1, "a:b", 3, IFACES_TAP, NULL);
	ifaces_append(&b, 12, "a,b", 3, IFACES_MANAGEDTAP, "tap0");
	ifaces_append(&b, 3, "x y", 3, IFACES_UNKNOWN, "tap0"); /* no tap for unknown, whatever is passed */
	assert_string_equal(buf, "#0:passt,#1:tap,#12:managedtap:tap0,#3:unknown");
	/* overflow is the sbuf's */
	char small[8];
	b = (struct sbuf)SBUF_INIT(small, sizeof(small));
	ifaces_append(&b, 0, "default", 7, IFACES_MASQUERADE, "tap0");
	assert_true(b.overflow);
}

/* ---- the checker ---------------------------------------------------------- */

static void test_check_table(void **state)
{
	(void)state;
	static const char *const good[] = {
		"",
		"default:masquerade:tap0",
		"default:bridge:tap0",
		"default:passt",
		"default:masquerade:tap0,br1:bridge:tap26578a32802",
		"default:masquerade:tap0,sriov:sriov",
		"default:masquerade:tap0,br1:bridge:tap26578a32802,fast:sriov",
		"#0:managedtap:tap0,#1:tap,#2:unknown",
		"a.b_c-D:managedtap:tapabcdef01234",
		/* KubeVirt's ordinal scheme: an old VMI's pod (net1 -> tap1) */
		"default:masquerade:tap0,blue:bridge:tap1,red:bridge:tap2",
		"default:bridge:tap0,b10:managedtap:tap10",
	};
	char err[160];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		err[0] = '\0';
		if (ifc_check(good[i], strlen(good[i]), err, sizeof(err)) != 0)
			fail_msg("'%s' refused: %s", good[i], err);
	}
	static const struct {
		const char *text, *says;
	} bad[] = {
		{",", "entry 0"},
		{"default", "NAME:KIND"},
		{"default:", "kind"},
		{":masquerade:tap0", "name"},
		{"default:masquerade", "needs a tap"},
		{"default:passt:tap0", "takes no tap"},
		{"default:sriov:tap0", "takes no tap"},
		{"default:masquerade:tap01", "tap0, tap<N> or"},
		{"default:masquerade:tap1x", "tap0, tap<N> or"},
		{"a:bridge:tap1,b:bridge:tap1", "named twice"},
		{"default:masquerade:tap26578A32802", "lowercase"},
		{"default:masquerade:tap26578a3280", "tap0, tap<N> or"},
		{"default:masquerade:tap26578a328021", "tap0, tap<N> or"},
		{"default:masquerade:eth0", "tap0, tap<N> or"},
		{"default:masquerade:tap0:x", "NAME:KIND"},
		{"default:Masquerade:tap0", "kind"},
		{"default:slirp", "kind"},
		{"#1:passt", "#0"},
		{"a:passt,#0:passt", "#1"},
		{"#00:passt", "#0"},
		{"a b:passt", "name"},
		{"default:masquerade:tap0,", "entry 1"},
		{"default:masquerade:tap0,,b:passt", "entry 1"},
		{" default:passt", "name"},
		/* one tap for two NICs: KubeVirt never makes it, the sidecar refuses it */
		{"a:bridge:tap26578a32802,b:managedtap:tap26578a32802", "named twice"},
		{"default:passt\n", "kind"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (ifc_check(bad[i].text, strlen(bad[i].text), err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' accepted", bad[i].text);
		if (!strstr(err, bad[i].says))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].text, err, bad[i].says);
	}
}

static void test_check_caps(void **state)
{
	(void)state;
	char err[160];
	/* 64 entries are fine, 65 are not */
	char buf[IFACES_TEXT_MAX * 2];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	for (size_t i = 0; i < 64; i++) {
		char net[8], tap[IFACES_TAP_MAX + 1];
		snprintf(net, sizeof(net), "n%zu", i);
		ifc_tap_secondary(net, strlen(net), tap); /* 64 networks, 64 taps */
		ifaces_append(&b, i, "", 0, IFACES_MANAGEDTAP, tap);
	}
	assert_false(b.overflow);
	assert_int_equal(ifc_check(buf, b.len, err, sizeof(err)), 0);
	size_t len64 = b.len;
	ifaces_append(&b, 64, "", 0, IFACES_PASST, NULL);
	assert_int_equal(ifc_check(buf, b.len, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 64"));
	/* 64 entries with index names stay far under the byte cap: the
	 * generator's fallback always fits */
	assert_true(len64 <= IFACES_TEXT_MAX);
	/* the byte cap: 4096 accepted, 4097 refused (names of 63 bytes) */
	b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
	char name[64];
	memset(name, 'n', 63);
	name[63] = '\0';
	size_t i = 0;
	while (b.len + 1 + 63 + 6 <= IFACES_TEXT_MAX)
		ifaces_append(&b, i++, name, 63, IFACES_PASST, NULL);
	size_t pad = IFACES_TEXT_MAX - b.len - 1; /* one more entry "x...:tap" filling to 4096 */
	assert_true(pad >= 5 && pad - 4 <= 63);
	char last[80];
	memset(last, 'x', pad - 4);
	last[pad - 4] = '\0';
	ifaces_append(&b, i, last, pad - 4, IFACES_TAP, NULL);
	assert_int_equal(b.len, IFACES_TEXT_MAX);
	assert_int_equal(ifc_check(buf, b.len, err, sizeof(err)), 0);
	sbuf_putc(&b, 'x'); /* "tapx": a bad kind, but the size is refused first */
	assert_int_equal(ifc_check(buf, b.len, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "4097 bytes"));
}

/* Every prefix of a good text: accepted exactly when it ends on an entry
 * boundary that leaves a complete entry, never a crash; bytes past n are
 * never read (the copy is exactly n bytes). */
static void test_check_prefixes(void **state)
{
	(void)state;
	const char *text = "default:masquerade:tap0,br1:bridge:tap26578a32802,fast:sriov,#3:passt";
	/* "", then after each whole entry: 23, 49, 60 and 69 bytes; and
	 * 39..41: tap2, tap26 and tap265 are ordinal names (net2, net26,
	 * net265), tap2657 is not (4 digits) */
	static const size_t ok_at[] = {0, 23, 39, 40, 41, 49, 60, 69};
	size_t n = strlen(text);
	assert_int_equal(n, 69);
	char err[160];
	for (size_t k = 0; k <= n; k++) {
		char *copy = malloc(k ? k : 1);
		memcpy(copy, text, k);
		int want = -EINVAL;
		for (size_t j = 0; j < sizeof(ok_at) / sizeof(ok_at[0]); j++)
			if (ok_at[j] == k)
				want = 0;
		int got = ifc_check(copy, k, err, sizeof(err));
		if (got != want)
			fail_msg("prefix of %zu bytes: got %d want %d (%s)", k, got, want, err);
		free(copy);
	}
}

/* ---- --binding-plugin ------------------------------------------------------ */

static void test_plugins(void **state)
{
	(void)state;
	struct ifc_plugin p[4];
	char err[256];
	int known;
	/* the built-ins */
	assert_int_equal(ifc_plugin_kind(NULL, 0, "passt", 5, &known), IFACES_PASST);
	assert_true(known);
	assert_int_equal(ifc_plugin_kind(NULL, 0, "macvtap", 7, &known), IFACES_TAP);
	assert_int_equal(ifc_plugin_kind(NULL, 0, "l2bridge", 8, &known), IFACES_MANAGEDTAP);
	assert_int_equal(ifc_plugin_kind(NULL, 0, "slirp", 5, &known), IFACES_UNKNOWN);
	assert_false(known);
	assert_int_equal(ifc_plugin_kind(NULL, 0, "pass", 4, &known), IFACES_UNKNOWN); /* no prefix match */
	assert_false(known);
	/* flags, a later one winning, over the built-ins */
	static const struct {
		const char *arg, *name;
		enum ifaces_kind k;
	} good[] = {
		{"ovs=managedtap", "ovs", IFACES_MANAGEDTAP}, {"passt=tap", "passt", IFACES_TAP},
		{"ovs=bridge", "ovs", IFACES_BRIDGE},         {"my.plugin_2-x=masquerade", "my.plugin_2-x", IFACES_MASQUERADE},
	};
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(ifc_plugin_parse(good[i].arg, &p[i], err, sizeof(err)), 0);
		assert_string_equal(p[i].name, good[i].name);
		assert_int_equal(p[i].kind, good[i].k);
	}
	assert_int_equal(ifc_plugin_kind(p, 4, "ovs", 3, &known), IFACES_BRIDGE);
	assert_int_equal(ifc_plugin_kind(p, 4, "passt", 5, &known), IFACES_TAP);
	assert_int_equal(ifc_plugin_kind(p, 4, "macvtap", 7, &known), IFACES_TAP);
	assert_int_equal(ifc_plugin_kind(p, 4, "my.plugin_2-x", 13, &known), IFACES_MASQUERADE);
	static const struct {
		const char *arg, *says;
	} bad[] = {
		{"ovs", "NAME=KIND"},          {"=passt", "name"},           {"a b=passt", "name"},
		{"ovs=sriov", "KIND must"},    {"ovs=unknown", "KIND must"}, {"ovs=", "KIND must"},
		{"ovs=Passt", "KIND must"},    {"ovs=passt=x", "KIND must"},
		{"0123456789012345678901234567890123456789012345678901234567890123=tap", "name"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ifc_plugin q;
		err[0] = '\0';
		assert_int_equal(ifc_plugin_parse(bad[i].arg, &q, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].says))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].arg, err, bad[i].says);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors), cmocka_unit_test(test_tap_names),
		cmocka_unit_test(test_kinds),          cmocka_unit_test(test_names),
		cmocka_unit_test(test_append),         cmocka_unit_test(test_check_table),
		cmocka_unit_test(test_check_caps),     cmocka_unit_test(test_check_prefixes),
		cmocka_unit_test(test_plugins),
	};
	return cmocka_run_group_tests_name("webhook interfaces annotation", tests, NULL, NULL);
}
