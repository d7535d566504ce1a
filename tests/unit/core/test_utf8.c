/* utf8: strict RFC 3629 decoding held against every code point (each one
 * encoded by utf8_put and decoded back), and the invalid forms (overlong,
 * surrogates, past U+10FFFF, stray continuation bytes, sequences cut
 * short) refused wherever they sit, also inside the 8-byte ASCII stride. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "utf8.h"

static size_t want_len(uint32_t cp)
{
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* Every scalar value round-trips: put, next, prefix, valid. */
static void test_every_code_point(void **state)
{
	(void)state;
	for (uint32_t cp = 0; cp <= 0x10ffff; cp++) {
		if (cp >= 0xd800 && cp <= 0xdfff)
			continue;
		char buf[4];
		size_t n = utf8_put(cp, buf);
		if (n != want_len(cp))
			fail_msg("U+%04X: put %zu bytes", (unsigned)cp, n);
		uint32_t got = 0xffffffff;
		size_t m = utf8_next((const unsigned char *)buf, n, &got);
		if (m != n || got != cp)
			fail_msg("U+%04X: next %zu, U+%04X", (unsigned)cp, m, (unsigned)got);
		/* Cut short by one byte: invalid, never read past n. */
		if (n > 1 && utf8_next((const unsigned char *)buf, n - 1, &got) != 0)
			fail_msg("U+%04X: accepted cut short", (unsigned)cp);
		if (utf8_valid(buf, n) != 0)
			fail_msg("U+%04X: not valid", (unsigned)cp);
	}
}

static void test_surrogates_refused(void **state)
{
	(void)state;
	uint32_t cp;
	/* ED A0 80 = U+D800, ED BF BF = U+DFFF; ED 9F BF = U+D7FF is fine. */
	assert_int_equal(utf8_next((const unsigned char *)"\xed\xa0\x80", 3, &cp), 0);
	assert_int_equal(utf8_next((const unsigned char *)"\xed\xbf\xbf", 3, &cp), 0);
	assert_int_equal(utf8_next((const unsigned char *)"\xed\x9f\xbf", 3, &cp), 3);
	assert_int_equal(cp, 0xd7ff);
	assert_int_equal(utf8_next((const unsigned char *)"\xee\x80\x80", 3, &cp), 3);
	assert_int_equal(cp, 0xe000);
}

static void test_overlong_and_range_refused(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t n;
		const char *why;
	} bad[] = {
		{"\xc0\x80", 2, "overlong NUL"},
		{"\xc1\xbf", 2, "overlong U+7F"},
		{"\xe0\x80\x80", 3, "overlong 3-byte NUL"},
		{"\xe0\x9f\xbf", 3, "overlong U+7FF"},
		{"\xf0\x80\x80\x80", 4, "overlong 4-byte NUL"},
		{"\xf0\x8f\xbf\xbf", 4, "overlong U+FFFF"},
		{"\xf4\x90\x80\x80", 4, "U+110000"},
		{"\xf7\xbf\xbf\xbf", 4, "U+1FFFFF"},
		{"\xf8\x88\x80\x80\x80", 5, "5-byte form"},
		{"\xfc\x84\x80\x80\x80\x80", 6, "6-byte form"},
		{"\xfe", 1, "FE"},
		{"\xff", 1, "FF"},
		{"\x80", 1, "lone continuation"},
		{"\xbf", 1, "lone continuation BF"},
		{"\xc3\x28", 2, "second byte not a continuation"},
		{"\xe2\x82\x28", 3, "third byte not a continuation"},
		{"\xf0\x9f\x98\x28", 4, "fourth byte not a continuation"},
		{"\xc3", 1, "2-byte cut short"},
		{"\xe2\x82", 2, "3-byte cut short"},
		{"\xf0\x9f\x98", 3, "4-byte cut short"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t cp;
		if (utf8_next((const unsigned char *)bad[i].s, bad[i].n, &cp) != 0)
			fail_msg("%s: accepted", bad[i].why);
		if (utf8_valid(bad[i].s, bad[i].n) != -EINVAL)
			fail_msg("%s: valid", bad[i].why);
	}
	uint32_t cp;
	assert_int_equal(utf8_next((const unsigned char *)"\xf4\x8f\xbf\xbf", 4, &cp), 4);
	assert_int_equal(cp, 0x10ffff);
}

/* The valid prefix ends exactly at the first bad byte, wherever it is:
 * inside an ASCII run of 8 or more (the word-at-a-time path) too. */
static void test_prefix_stops_at_first_bad_byte(void **state)
{
	(void)state;
	char buf[40];
	for (size_t at = 0; at < 32; at++) {
		memset(buf, 'a', sizeof(buf));
		buf[at] = (char)0x80;
		size_t got = utf8_prefix(buf, sizeof(buf));
		if (got != at)
			fail_msg("bad byte at %zu: prefix %zu", at, got);
		assert_int_equal(utf8_valid(buf, sizeof(buf)), -EINVAL);
	}
	/* A 3-byte sequence cut by the end of the input. */
	memset(buf, 'a', sizeof(buf));
	memcpy(buf + 14, "\xe2\x82\xac", 3);
	assert_int_equal(utf8_prefix(buf, 16), 14);
	assert_int_equal(utf8_prefix(buf, 17), 17);
	/* Mixed text: all of it. */
	const char *mixed = "caf\xc3\xa9 \xe2\x82\xac 100 \xf0\x9f\x98\x80 plain ascii tail";
	assert_int_equal(utf8_prefix(mixed, strlen(mixed)), strlen(mixed));
	assert_int_equal(utf8_valid(mixed, strlen(mixed)), 0);
	/* NUL is a code point like any other; empty input is valid. */
	assert_int_equal(utf8_valid("a\0b", 3), 0);
	assert_int_equal(utf8_valid("", 0), 0);
	assert_int_equal(utf8_prefix("", 0), 0);
}

static void test_put_boundaries(void **state)
{
	(void)state;
	char b[4];
	assert_int_equal(utf8_put(0x7f, b), 1);
	assert_memory_equal(b, "\x7f", 1);
	assert_int_equal(utf8_put(0x80, b), 2);
	assert_memory_equal(b, "\xc2\x80", 2);
	assert_int_equal(utf8_put(0x7ff, b), 2);
	assert_memory_equal(b, "\xdf\xbf", 2);
	assert_int_equal(utf8_put(0x800, b), 3);
	assert_memory_equal(b, "\xe0\xa0\x80", 3);
	assert_int_equal(utf8_put(0xffff, b), 3);
	assert_memory_equal(b, "\xef\xbf\xbf", 3);
	assert_int_equal(utf8_put(0x10000, b), 4);
	assert_memory_equal(b, "\xf0\x90\x80\x80", 4);
	assert_int_equal(utf8_put(0x10ffff, b), 4);
	assert_memory_equal(b, "\xf4\x8f\xbf\xbf", 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_code_point),
		cmocka_unit_test(test_surrogates_refused),
		cmocka_unit_test(test_overlong_and_range_refused),
		cmocka_unit_test(test_prefix_stops_at_first_bad_byte),
		cmocka_unit_test(test_put_boundaries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
