/* sbuf: the bounded builder's overflow semantics, and JSON escaping of
 * every byte value.  Buffers are bigger than the cap given to sbuf and
 * filled with a canary, so a write past cap shows. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sbuf.h"

#define CANARY 'Z'

static void check_canary(const char *name, const char *buf, size_t from, size_t to)
{
	for (size_t k = from; k < to; k++)
		if (buf[k] != CANARY)
			fail_msg("%s: byte %zu past cap written (0x%02x)", name, k, (unsigned char)buf[k]);
}

/* State after a step: len, overflow, content. */
static void check(const char *name, const struct sbuf *b, size_t len, int overflow,
		  const char *content)
{
	if (b->len != len || b->overflow != overflow)
		fail_msg("%s: len %zu overflow %d, want %zu %d", name, b->len, b->overflow, len,
			 overflow);
	/* SBUF_INIT writes nothing, so a builder whose first append failed
	 * holds no string yet; once anything was written it stays terminated. */
	if (b->cap && (memcmp(b->p, content, len) != 0 || (len && b->p[len] != '\0')))
		fail_msg("%s: content \"%.*s\", want \"%s\"", name, (int)len, b->p, content);
}

static void test_put_exact_and_over(void **state)
{
	(void)state;
	char buf[32];
	memset(buf, CANARY, sizeof(buf));
	struct sbuf b = SBUF_INIT(buf, 8);
	sbuf_put(&b, "abc", 3);
	check("abc", &b, 3, 0, "abc");
	sbuf_put(&b, "defg", 4); /* 7 bytes + NUL: exactly fits */
	check("exactly fits", &b, 7, 0, "abcdefg");
	sbuf_put(&b, "", 0); /* nothing, even when full */
	check("empty put when full", &b, 7, 0, "abcdefg");
	sbuf_putc(&b, 'h'); /* one over */
	check("one over", &b, 7, 1, "abcdefg");
	sbuf_puts(&b, ""); /* sticky: stays overflowed */
	check("after overflow", &b, 7, 1, "abcdefg");
	check_canary("put", buf, 8, sizeof(buf));

	/* One over at once: nothing of it lands. */
	memset(buf, CANARY, sizeof(buf));
	b = (struct sbuf)SBUF_INIT(buf, 8);
	sbuf_puts(&b, "12345678");
	check("8 into cap 8", &b, 0, 1, "");
	sbuf_puts(&b, "x"); /* would fit, but overflow is sticky */
	check("fits after overflow", &b, 0, 1, "");
	check_canary("put 8", buf, 8, sizeof(buf));

	/* A huge n cannot wrap the bounds check. */
	memset(buf, CANARY, sizeof(buf));
	b = (struct sbuf)SBUF_INIT(buf, 8);
	sbuf_put(&b, "a", 1);
	sbuf_put(&b, "b", SIZE_MAX);
	check("SIZE_MAX", &b, 1, 1, "a");
	check_canary("SIZE_MAX", buf, 8, sizeof(buf));
}

static void test_tiny_caps(void **state)
{
	(void)state;
	char buf[8];
	/* cap 1: room for the NUL only. */
	memset(buf, CANARY, sizeof(buf));
	struct sbuf b = SBUF_INIT(buf, 1);
	sbuf_put(&b, "", 0);
	check("cap 1 empty", &b, 0, 0, "");
	assert_int_equal(buf[0], '\0'); /* a successful append terminates */
	sbuf_putc(&b, 'x');
	check("cap 1 one byte", &b, 0, 1, "");
	check_canary("cap 1", buf, 1, sizeof(buf));
	/* cap 0: nothing is ever written, not even a NUL. */
	memset(buf, CANARY, sizeof(buf));
	b = (struct sbuf)SBUF_INIT(buf, 0);
	sbuf_putc(&b, 'x');
	assert_true(b.overflow);
	b = (struct sbuf)SBUF_INIT(buf, 0);
	sbuf_printf(&b, "%s", "");
	assert_true(b.overflow);
	b = (struct sbuf)SBUF_INIT(buf, 0);
	sbuf_json_escape(&b, "\"", 1);
	assert_true(b.overflow);
	check_canary("cap 0", buf, 0, sizeof(buf));
}

static void test_printf(void **state)
{
	(void)state;
	char buf[32];
	memset(buf, CANARY, sizeof(buf));
	struct sbuf b = SBUF_INIT(buf, 8);
	sbuf_printf(&b, "%d", 12);
	check("12", &b, 2, 0, "12");
	sbuf_printf(&b, "%s-%u", "ab", 7u); /* 2 + 4 = 6 */
	check("ab-7", &b, 6, 0, "12ab-7");
	sbuf_printf(&b, "%c", 'x'); /* 7: exactly fits */
	check("exactly fits", &b, 7, 0, "12ab-7x");
	sbuf_printf(&b, "%c", 'y'); /* one over: content kept */
	check("one over", &b, 7, 1, "12ab-7x");
	sbuf_printf(&b, "%s", "");
	check("after overflow", &b, 7, 1, "12ab-7x");
	check_canary("printf", buf, 8, sizeof(buf));

	/* An overflowing printf leaves the earlier content exactly as it was
	 * (vsnprintf wrote a partial tail; it must be cut off again). */
	memset(buf, CANARY, sizeof(buf));
	b = (struct sbuf)SBUF_INIT(buf, 8);
	sbuf_puts(&b, "ab");
	sbuf_printf(&b, "%s", "cdefghijk");
	check("partial printf", &b, 2, 1, "ab");
	check_canary("partial printf", buf, 8, sizeof(buf));
	/* Then puts are ignored too. */
	sbuf_puts(&b, "c");
	check("put after printf overflow", &b, 2, 1, "ab");

	/* printf of the exact remaining room minus one, after puts. */
	memset(buf, CANARY, sizeof(buf));
	b = (struct sbuf)SBUF_INIT(buf, 16);
	sbuf_puts(&b, "0123456789");
	sbuf_printf(&b, "%05d", 42);
	check("puts then printf fits", &b, 15, 0, "012345678900042");
	check_canary("puts then printf", buf, 16, sizeof(buf));
}

/* An independent JSON string decoder: the inside of a string, escapes
 * per RFC 8259 §7.  Returns the decoded length or -1. */
static long json_unescape(const char *s, size_t n, unsigned char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == '"')
			return -1; /* must be escaped */
		if (c != '\\') {
			out[o++] = c;
			continue;
		}
		if (++i >= n)
			return -1;
		switch (s[i]) {
		case '"': out[o++] = '"'; break;
		case '\\': out[o++] = '\\'; break;
		case '/': out[o++] = '/'; break;
		case 'b': out[o++] = '\b'; break;
		case 'f': out[o++] = '\f'; break;
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 't': out[o++] = '\t'; break;
		case 'u': {
			if (i + 4 >= n)
				return -1;
			unsigned v = 0;
			for (int k = 1; k <= 4; k++) {
				char h = s[i + (size_t)k];
				int d = h >= '0' && h <= '9' ? h - '0'
					: h >= 'a' && h <= 'f' ? h - 'a' + 10
					: h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
				if (d < 0)
					return -1;
				v = v << 4 | (unsigned)d;
			}
			if (v > 0x7f)
				return -1; /* we only ever expect escapes of ASCII bytes */
			out[o++] = (unsigned char)v;
			i += 4;
			break;
		}
		default:
			return -1;
		}
	}
	return (long)o;
}

static void test_json_every_byte(void **state)
{
	(void)state;
	for (int c = 0; c < 256; c++) {
		char in = (char)c, buf[32];
		memset(buf, CANARY, sizeof(buf));
		struct sbuf b = SBUF_INIT(buf, 16);
		sbuf_json_escape(&b, &in, 1);
		assert_false(b.overflow);
		unsigned char back[8];
		long r = json_unescape(b.p, b.len, back);
		if (r != 1 || back[0] != (unsigned char)c)
			fail_msg("byte 0x%02x: escaped as \"%s\", which decodes to %ld bytes", c, b.p, r);
		int must = c < 0x20 || c == '"' || c == '\\';
		int raw = b.len == 1;
		if (must && raw)
			fail_msg("byte 0x%02x: must be escaped", c);
		/* Printable ASCII and every byte >= 0x80 pass unchanged (UTF-8
		 * stays UTF-8); DEL may go either way. */
		if (!must && c != 0x7f && !raw)
			fail_msg("byte 0x%02x: escaped as \"%s\", want raw", c, b.p);
		check_canary("json byte", buf, 16, sizeof(buf));
	}
	/* The exact forms other JSON readers most often meet. */
	static const struct {
		const char *in, *want;
	} exact[] = {
		{"\"", "\\\""}, {"\\", "\\\\"}, {"\n", "\\n"}, {"\r", "\\r"}, {"\t", "\\t"},
		{"\x01", "\\u0001"}, {"\x1f", "\\u001f"}, {"/", "/"}, {"\xc3\xa9", "\xc3\xa9"},
		{"a\"b\\c\nd", "a\\\"b\\\\c\\nd"},
	};
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		char buf[64];
		struct sbuf b = SBUF_INIT(buf, sizeof(buf));
		sbuf_json_escape(&b, exact[i].in, strlen(exact[i].in));
		if (strcmp(buf, exact[i].want) != 0)
			fail_msg("escape of case %zu: \"%s\", want \"%s\"", i, buf, exact[i].want);
	}
	/* NUL inside the input is data, not an end. */
	char buf[64];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	sbuf_json_escape(&b, "a\0b", 3);
	assert_string_equal(buf, "a\\u0000b");
}

/* All 256 bytes in one string, then into every cap from 0 up: either it
 * all fits and decodes back, or overflow is set and nothing passes cap. */
static void test_json_all_bytes_every_cap(void **state)
{
	(void)state;
	char in[256];
	for (int c = 0; c < 256; c++)
		in[c] = (char)c;
	static char buf[2048];
	size_t full = 0;
	for (size_t cap = 0; cap < 1200; cap++) {
		memset(buf, CANARY, sizeof(buf));
		struct sbuf b = SBUF_INIT(buf, cap);
		sbuf_json_escape(&b, in, sizeof(in));
		check_canary("all bytes", buf, cap, sizeof(buf));
		if (cap && b.p[b.len] != '\0')
			fail_msg("cap %zu: not terminated", cap);
		if (!b.overflow) {
			if (!full)
				full = b.len;
			unsigned char back[512];
			long r = json_unescape(b.p, b.len, back);
			if (r != 256 || memcmp(back, in, 256) != 0)
				fail_msg("cap %zu: does not decode back", cap);
		} else if (full) {
			fail_msg("cap %zu: overflow although %zu bytes fit before", cap, full);
		}
	}
	/* It fits exactly at len + 1, and not one byte below. */
	assert_true(full > 256);
	memset(buf, CANARY, sizeof(buf));
	struct sbuf b = SBUF_INIT(buf, full);
	sbuf_json_escape(&b, in, sizeof(in));
	assert_true(b.overflow);
	b = (struct sbuf)SBUF_INIT(buf, full + 1);
	sbuf_json_escape(&b, in, sizeof(in));
	assert_false(b.overflow);
	assert_int_equal(b.len, full);
}

/* Both base64 alphabets of RFC 4648, every byte. */
/* sbuf_copy moves pieces of up to 32 bytes inline and up to 256 in
 * 16-byte moves: as memcpy for every length 0..300 at every alignment, and
 * nothing written past the piece. */
static void test_copy_every_length(void **state)
{
	(void)state;
	unsigned char src[320], dst[320], want[320];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 7 + 1);
	for (size_t n = 0; n <= 300; n++) {
		for (size_t off = 0; off < 8; off++) {
			memset(dst, CANARY, sizeof(dst));
			memset(want, CANARY, sizeof(want));
			sbuf_copy(dst + off, src + (7 - off), n);
			memcpy(want + off, src + (7 - off), n);
			if (memcmp(dst, want, sizeof(dst)) != 0)
				fail_msg("sbuf_copy of %zu bytes at offset %zu differs from memcpy", n, off);
		}
	}
}

/* sbuf_at_dec(v) writes want's bytes, no more, and returns their end. */
static void at_dec_is(unsigned long long v, const char *want)
{
	char d[32];
	memset(d, CANARY, sizeof(d));
	char *e = sbuf_at_dec(d, v);
	size_t n = strlen(want);
	if ((size_t)(e - d) != n || memcmp(d, want, n) != 0)
		fail_msg("at_dec(%s) wrote \"%.*s\"", want, (int)(e - d), d);
	check_canary("at_dec", d, n, sizeof(d));
}

static void test_put_numbers(void **state)
{
	(void)state;
	char buf[64];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	sbuf_put_u(&b, 0);
	sbuf_putc(&b, ' ');
	sbuf_put_u(&b, 9);
	sbuf_putc(&b, ' ');
	sbuf_put_u(&b, 10);
	sbuf_putc(&b, ' ');
	sbuf_put_u(&b, 18446744073709551615ull);
	check("put_u", &b, 27, 0, "0 9 10 18446744073709551615");

	/* every power of ten and its neighbours, and every number to 10,000,
	 * as printf writes them */
	for (unsigned long long p = 1, k = 0; k < 20; k++, p *= 10) {
		const unsigned long long vs[] = {p - 1, p, p + 1, p * 2 - 1, p * 9 + (p - 1)};
		for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
			char want[32];
			snprintf(want, sizeof(want), "%llu", vs[i]);
			b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
			sbuf_put_u(&b, vs[i]);
			if (strcmp(buf, want) != 0 || b.len != strlen(want))
				fail_msg("put_u(%s) wrote \"%s\"", want, buf);
			at_dec_is(vs[i], want);
		}
	}
	for (unsigned long long v = 0; v <= 100000; v++) {
		char want[32];
		snprintf(want, sizeof(want), "%llu", v);
		b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
		sbuf_put_u(&b, v);
		if (strcmp(buf, want) != 0)
			fail_msg("put_u(%s) wrote \"%s\"", want, buf);
		at_dec_is(v, want);
	}

	b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
	sbuf_put_hex(&b, 0xabcdef0123456789ull, 16);
	sbuf_putc(&b, ' ');
	sbuf_put_hex(&b, 0x2f, 4);
	sbuf_putc(&b, ' ');
	sbuf_put_hex(&b, 0x2f, 1); /* the low digit only */
	check("put_hex", &b, 23, 0, "abcdef0123456789 002f f");
	/* 0 or more than 16 digits: the caller's mistake sets overflow */
	sbuf_put_hex(&b, 1, 0);
	check("put_hex 0 digits", &b, 23, 1, "abcdef0123456789 002f f");
	b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
	sbuf_put_hex(&b, 1, 17);
	assert_int_equal(b.overflow, 1);

	/* a number that does not fit whole is not written in part */
	memset(buf, CANARY, sizeof(buf));
	b = (struct sbuf)SBUF_INIT(buf, 6);
	sbuf_put_u(&b, 12345);
	check("put_u exact", &b, 5, 0, "12345");
	b = (struct sbuf)SBUF_INIT(buf, 5);
	sbuf_put_u(&b, 12345);
	assert_int_equal(b.overflow, 1);
	check_canary("put_u over", buf, 6, sizeof(buf));
	/* sbuf_lit: a literal's bytes, its length known when compiled */
	b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
	sbuf_lit(&b, "a\0b");
	assert_int_equal(b.len, 3);
	assert_memory_equal(buf, "a\0b", 3);
}

static void test_b64val(void **state)
{
	(void)state;
	static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	for (int c = 0; c < 256; c++) {
		const char *ps = c ? memchr(std, c, 64) : NULL, *pu = c ? memchr(url, c, 64) : NULL;
		assert_int_equal(sbuf_b64val((char)c, 0), ps ? (int)(ps - std) : -1);
		assert_int_equal(sbuf_b64val((char)c, 1), pu ? (int)(pu - url) : -1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_exact_and_over),
		cmocka_unit_test(test_tiny_caps),
		cmocka_unit_test(test_printf),
		cmocka_unit_test(test_json_every_byte),
		cmocka_unit_test(test_json_all_bytes_every_cap),
		cmocka_unit_test(test_copy_every_length),
		cmocka_unit_test(test_put_numbers),
		cmocka_unit_test(test_b64val),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
