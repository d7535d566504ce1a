/* The webhook's pure checks, table-driven: Kubernetes resource quantities
 * (src/webhook/quantity.c) and the names and values k8s_names.c accepts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "k8s_names.h"
#include "quantity.h"

static struct qty q_of(const char *s)
{
	struct qty q;
	if (qty_parse(s, strlen(s), &q) < 0)
		fail_msg("'%s' should parse", s);
	return q;
}

static void test_qty_equal(void **state)
{
	(void)state;
	static const char *const same[][2] = {
		{"1", "1000m"},      {"1Ki", "1024"},    {"0.5", "500m"},   {"1e3", "1k"},
		{"1.5Gi", "1536Mi"}, {"+1", "1"},        {"0", "0m"},       {"001", "1"},
		{"1E-3", "1m"},      {"1e+6", "1M"},     {"16Mi", "16384Ki"}, {"100u", "0.1m"},
		{"1T", "1000G"},     {"0.000000001", "1n"},
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		struct qty a = q_of(same[i][0]), b = q_of(same[i][1]);
		if (!qty_eq(&a, &b))
			fail_msg("%s != %s", same[i][0], same[i][1]);
	}
	static const char *const differ[][2] = {
		{"1", "1001m"}, {"1Ki", "1k"}, {"1Mi", "1M"}, {"10m", "1m"}, {"0", "1n"},
	};
	for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
		struct qty a = q_of(differ[i][0]), b = q_of(differ[i][1]);
		if (qty_eq(&a, &b))
			fail_msg("%s == %s", differ[i][0], differ[i][1]);
	}
}

static void test_qty_invalid(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "m", "Ki", "1x", "1e", "1e+", "-1", "1.2.3", "1 ", " 1", "1KiB", "1ki", "e3",
		"1234567890123456789012345678901", /* 31 significant digits */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct qty q;
		if (qty_parse(bad[i], strlen(bad[i]), &q) == 0)
			fail_msg("'%s' should not parse", bad[i]);
	}
	struct qty q;
	/* 30 significant digits fit, leading zeros are free */
	assert_int_equal(qty_parse("000123456789012345678901234567890", 33, &q), 0);
	/* only the given bytes count */
	assert_int_equal(qty_parse("10mX", 3, &q), 0);
}

static void test_qty_nano(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		long long nano;
	} cases[] = {
		{"10m", 10000000LL}, {"1", 1000000000LL}, {"1n", 1}, {"0.5n", 0}, {"16Mi", 16LL * 1048576 * 1000000000},
		{"1.5", 1500000000LL}, {"2e-9", 2},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct qty q = q_of(cases[i].s);
		__int128 v;
		assert_int_equal(qty_nano(&q, &v), 0);
		if (v != cases[i].nano)
			fail_msg("%s: %lld nano, want %lld", cases[i].s, (long long)v, cases[i].nano);
	}
	struct qty q = q_of("1e30");
	__int128 v;
	assert_int_equal(qty_nano(&q, &v), -1); /* 1e39 nano does not fit */
}

static struct str s_of(const char *s)
{
	return (struct str){s, strlen(s)};
}

static void test_names(void **state)
{
	(void)state;
	char long254[255], long253[254];
	memset(long254, 'a', 254);
	long254[254] = '\0';
	memset(long253, 'a', 253);
	long253[253] = '\0';

	static const char *const dns_ok[] = {"a", "a-b.c", "abc123", "0", "my-secret.v1"};
	for (size_t i = 0; i < sizeof(dns_ok) / sizeof(dns_ok[0]); i++)
		if (!k8s_dns1123_subdomain(s_of(dns_ok[i])))
			fail_msg("dns1123 '%s' refused", dns_ok[i]);
	static const char *const dns_bad[] = {"", "-a", "a-", "A", "a..b", "a.-b", "a-.b", ".a", "a.", "a_b", "a b"};
	for (size_t i = 0; i < sizeof(dns_bad) / sizeof(dns_bad[0]); i++)
		if (k8s_dns1123_subdomain(s_of(dns_bad[i])))
			fail_msg("dns1123 '%s' accepted", dns_bad[i]);
	assert_true(k8s_dns1123_subdomain(s_of(long253)));
	assert_false(k8s_dns1123_subdomain(s_of(long254)));

	static const char *const if_ok[] = {"br0", "k6t-eth0", "123456789012345", "a.b", "...x"};
	for (size_t i = 0; i < sizeof(if_ok) / sizeof(if_ok[0]); i++)
		if (!k8s_ifname_ok(s_of(if_ok[i])))
			fail_msg("ifname '%s' refused", if_ok[i]);
	static const char *const if_bad[] = {"", ".", "..", "a/b", "a:b", "a b", "1234567890123456", "a\tb", "a\x7f"};
	for (size_t i = 0; i < sizeof(if_bad) / sizeof(if_bad[0]); i++)
		if (k8s_ifname_ok(s_of(if_bad[i])))
			fail_msg("ifname '%s' accepted", if_bad[i]);

	static const char *const id_ok[] = {"vm-1", "grüße ✓", "a b", "x"};
	for (size_t i = 0; i < sizeof(id_ok) / sizeof(id_ok[0]); i++)
		if (!k8s_identity_ok(s_of(id_ok[i])))
			fail_msg("identity '%s' refused", id_ok[i]);
	static const char *const id_bad[] = {"", "a\nb", "a\x7f", "\xff", "\xc3", "\xed\xa0\x80" /* a surrogate */};
	for (size_t i = 0; i < sizeof(id_bad) / sizeof(id_bad[0]); i++)
		if (k8s_identity_ok(s_of(id_bad[i])))
			fail_msg("identity #%zu accepted", i);
	assert_true(k8s_identity_ok(s_of(long253)));
	assert_false(k8s_identity_ok(s_of(long254)));
	assert_true(k8s_utf8_ok("ok", 2));
	assert_false(k8s_utf8_ok("\xc0\x80", 2)); /* overlong */

	/* Secret keys (imds.kubevirt.io/password-key): every byte alone, then
	 * the dot names and the length limit. */
	for (int b = 0; b < 256; b++) {
		char c = (char)b;
		int want = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
			   b == '-' || b == '_';
		if (k8s_secret_key_ok((struct str){&c, 1}) != want)
			fail_msg("secret key of byte 0x%02x: %d", b, !want);
	}
	static const char *const key_ok[] = {"id_rsa.pub", "a..b", ".ssh", "..x", "ID-1_2.3"};
	for (size_t i = 0; i < sizeof(key_ok) / sizeof(key_ok[0]); i++)
		if (!k8s_secret_key_ok(s_of(key_ok[i])))
			fail_msg("secret key '%s' refused", key_ok[i]);
	static const char *const key_bad[] = {"", ".", "..", "a/b", "a b", "a=b", "a:b"};
	for (size_t i = 0; i < sizeof(key_bad) / sizeof(key_bad[0]); i++)
		if (k8s_secret_key_ok(s_of(key_bad[i])))
			fail_msg("secret key '%s' accepted", key_bad[i]);
	assert_true(k8s_secret_key_ok(s_of(long253)));
	assert_false(k8s_secret_key_ok(s_of(long254)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qty_equal),
		cmocka_unit_test(test_qty_invalid),
		cmocka_unit_test(test_qty_nano),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests_name("webhook names and quantities", tests, NULL, NULL);
}
