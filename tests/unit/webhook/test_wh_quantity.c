/* Kubernetes resource quantities (src/webhook/quantity.h): exact values,
 * so "1" and "1000m" are one, every suffix, decimal exponents, what does
 * not parse and what does not fit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

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

/* Every suffix, in nano-units: the decimal ones powers of ten, the binary
 * ones powers of two. */
static void test_qty_suffixes(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int e10, e2; /* the value is 10^e10 * 2^e2 nano-units */
	} sufs[] = {
		{"1n", 0, 0},   {"1u", 3, 0},   {"1m", 6, 0},   {"1", 9, 0},     {"1k", 12, 0},   {"1M", 15, 0},
		{"1G", 18, 0},  {"1T", 21, 0},  {"1P", 24, 0},  {"1E", 27, 0},   {"1Ki", 9, 10},  {"1Mi", 9, 20},
		{"1Gi", 9, 30}, {"1Ti", 9, 40}, {"1Pi", 9, 50}, {"1Ei", 9, 60},
	};
	for (size_t i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++) {
		struct qty q = q_of(sufs[i].s);
		__int128 v, want = 1;
		for (int k = 0; k < sufs[i].e10; k++)
			want *= 10;
		want <<= sufs[i].e2;
		assert_int_equal(qty_nano(&q, &v), 0);
		if (v != want)
			fail_msg("%s: %lld nano, want %lld", sufs[i].s, (long long)(v >> 64), (long long)(want >> 64));
	}
	/* Suffixes are case-sensitive and whole: "K", "mi" and "Kib" are not
	 * Kubernetes'. */
	static const char *const bad[] = {"1K", "1mi", "1Kib", "1ii", "1nm", "1e3Ki"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct qty q;
		if (qty_parse(bad[i], strlen(bad[i]), &q) == 0)
			fail_msg("'%s' should not parse", bad[i]);
	}
}

/* Decimal exponents: signs, a fraction before them, and the cap on their
 * size (the digits stop being read past 1000: 1e10009 is the largest, a
 * longer exponent is refused rather than overflowing an int). */
static void test_qty_exponent(void **state)
{
	(void)state;
	struct qty a = q_of("1.5e3"), b = q_of("1500");
	assert_true(qty_eq(&a, &b));
	a = q_of("25e-1");
	b = q_of("2.5");
	assert_true(qty_eq(&a, &b));
	a = q_of("1e1000");
	b = q_of("1e999");
	assert_false(qty_eq(&a, &b));
	__int128 v;
	assert_int_equal(qty_nano(&a, &v), -1);
	struct qty q;
	assert_int_equal(qty_parse("1e10009", 7, &q), 0);
	assert_int_equal(qty_parse("1e100000", 8, &q), -1);
	assert_int_equal(qty_parse("1e99999999999", 13, &q), -1);
	assert_int_equal(qty_parse("1e-", 3, &q), -1);
	assert_int_equal(qty_parse("1e3.5", 5, &q), -1);
	assert_int_equal(qty_parse("1ee3", 4, &q), -1);
	/* Far below a nano-unit truncates to zero. */
	a = q_of("1e-1000");
	assert_int_equal(qty_nano(&a, &v), 0);
	assert_true(v == 0);
}

/* The binary suffixes overflow through their power of two as well. */
static void test_qty_nano_range(void **state)
{
	(void)state;
	__int128 v;
	struct qty q = q_of("100000000000Ei"); /* 1e11 * 2^60 * 1e9 < 2^127 */
	assert_int_equal(qty_nano(&q, &v), 0);
	assert_true(v == ((__int128)100000000000LL * 1000000000LL) << 60);
	q = q_of("1000000000000Ei"); /* ten times that does not fit */
	assert_int_equal(qty_nano(&q, &v), -1);
	q = q_of("0Ei");
	assert_int_equal(qty_nano(&q, &v), 0);
	assert_true(v == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qty_equal),
		cmocka_unit_test(test_qty_invalid),
		cmocka_unit_test(test_qty_nano),
		cmocka_unit_test(test_qty_suffixes),
		cmocka_unit_test(test_qty_exponent),
		cmocka_unit_test(test_qty_nano_range),
	};
	return cmocka_run_group_tests_name("webhook quantity", tests, NULL, NULL);
}
