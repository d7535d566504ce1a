/* libFuzzer: the audience path of /v1/token — answer_query_param on a query
 * string, then audience_dir on what it decoded (and on the raw bytes).
 * Built from the real sources.
 *
 * Input: byte 0 picks the output capacity, byte 1 the key, the rest is the
 * query string (no NUL termination).  Output buffers are exact-size heap
 * blocks, so ASan catches a write or read past cap.
 *
 * Invariants (abort on violation):
 *  - answer_query_param agrees with a reference decoder: the first
 *    "key=" parameter, %XX and '+' decoded; -ENOENT / -EINVAL / -ENOSPC
 *    exactly when the reference says so; the result is NUL-terminated.
 *  - audience_dir: -EINVAL for "", ".", ".." and bytes outside 0x21..0x7e
 *    (or -ENOSPC if the name overflowed before such a byte); otherwise the name is one path component (no '/', never
 *    "." or ".."), made of [A-Za-z0-9._%-], and decodes back to the input;
 *    -ENOSPC exactly when it does not fit cap.
 *  - answer_req_inm_match (If-None-Match, the input as the value) agrees with a
 *    reference scan, and always matches once our tag leads the list. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience.h"
#include "answer.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keys[] = {"audience", "a", "au", "", "x y", "wait_for_change", "last_etag", "timeout_sec"};

static int hexv(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (unsigned char)(c | 0x20);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Reference: 1 found (decoded into out, *len), 0 absent, -1 bad escape. */
static int ref_param(const char *q, size_t n, const char *key, char *out, size_t *len)
{
	size_t kl = strlen(key);
	size_t i = 0;
	for (;;) {
		const char *amp = memchr(q + i, '&', n - i);
		size_t end = amp ? (size_t)(amp - q) : n;
		if (end - i > kl && memcmp(q + i, key, kl) == 0 && q[i + kl] == '=') {
			size_t o = 0;
			for (size_t j = i + kl + 1; j < end; j++) {
				unsigned char c = (unsigned char)q[j];
				if (c == '%') {
					if (end - j < 3 || hexv((unsigned char)q[j + 1]) < 0 ||
					    hexv((unsigned char)q[j + 2]) < 0)
						return -1;
					c = (unsigned char)(hexv((unsigned char)q[j + 1]) << 4 |
							    hexv((unsigned char)q[j + 2]));
					j += 2;
				} else if (c == '+') {
					c = ' ';
				}
				out[o++] = (char)c;
			}
			*len = o;
			return 1;
		}
		if (!amp)
			return 0;
		i = end + 1;
	}
}

static int plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static void check_audience(const char *in, size_t n, size_t cap)
{
	char *src = malloc(n ? n : 1);
	char *out = malloc(cap ? cap : 1);
	CHECK(src && out);
	memcpy(src, in, n);
	int r = audience_dir(src, n, out, cap);

	int special = n == 0 || (n == 1 && in[0] == '.') || (n == 2 && in[0] == '.' && in[1] == '.');
	int bad_byte = 0;
	size_t want = 0, before_bad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (!bad_byte && (c <= 0x20 || c >= 0x7f)) {
			bad_byte = 1;
			before_bad = want;
		}
		/* A leading '.' is encoded too (kubelet owns `..data`). */
		want += plain(c) && !(i == 0 && c == '.') ? 1 : 3;
	}
	/* So is the first byte of "token", the default token's file. */
	int is_token = n == 5 && memcmp(in, "token", 5) == 0;
	if (is_token)
		want = 7;
	if (special) {
		CHECK(r == -EINVAL);
	} else if (bad_byte) {
		/* Which error wins is not specified: a name that already
		 * overflowed before the bad byte may say -ENOSPC. */
		CHECK(r == -EINVAL || (r == -ENOSPC && before_bad >= cap));
	} else if (want >= cap) {
		CHECK(r == -ENOSPC);
	} else {
		CHECK(r >= 0 && (size_t)r == want && out[r] == '\0' && strlen(out) == want);
		CHECK(memchr(out, '/', want) == NULL);
		CHECK(strcmp(out, ".") != 0 && strcmp(out, "..") != 0);
		/* Decodes back, byte for byte. */
		size_t o = 0;
		for (size_t i = 0; i < want; i++) {
			unsigned char c = (unsigned char)out[i];
			if (c == '%') {
				CHECK(i + 2 < want);
				int hi = hexv((unsigned char)out[i + 1]), lo = hexv((unsigned char)out[i + 2]);
				CHECK(hi >= 0 && lo >= 0);
				c = (unsigned char)(hi << 4 | lo);
				/* One spelling per byte, but for the two encoded
				 * first bytes above. */
				CHECK(!plain(c) || (o == 0 && (c == '.' || is_token)));
				i += 2;
			} else {
				CHECK(plain(c));
			}
			CHECK(o < n && (unsigned char)in[o] == c);
			o++;
		}
		CHECK(o == n);
	}
	free(src);
	free(out);
}

/* If-None-Match: the input as the header's value.  It matches exactly when a
 * reference scan finds "*" or the tag quoted (W/ allowed) before anything
 * that is not an entity-tag; adding that tag at the front always matches. */
static void check_inm(const char *v, size_t n)
{
	const uint64_t tag = 0x0123456789abcdefu;
	static const char want[] = "\"0123456789abcdef\"";
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.hname[0] = (struct http_span){"If-None-Match", 13};
	rq.hvalue[0] = (struct http_span){v, n};
	rq.nheaders = 1;
	int got = answer_req_inm_match(&rq, tag), ref = 0;
	for (size_t i = 0; i < n && !ref;) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		if (i == n)
			break;
		if (v[i] == '*') {
			ref = 1;
			break;
		}
		if (n - i >= 2 && v[i] == 'W' && v[i + 1] == '/')
			i += 2;
		if (i == n || v[i] != '"')
			break;
		const char *e = memchr(v + i + 1, '"', n - i - 1);
		if (!e)
			break;
		size_t len = (size_t)(e - (v + i)) + 1;
		ref = len == 18 && memcmp(v + i, want, 18) == 0;
		i += len;
	}
	CHECK(got == ref);
	char *pre = malloc(n + 20);
	CHECK(pre);
	memcpy(pre, want, 18);
	pre[18] = ',';
	memcpy(pre + 19, v, n);
	rq.hvalue[0] = (struct http_span){pre, n + 19};
	CHECK(answer_req_inm_match(&rq, tag) == 1);
	free(pre);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	/* 0..63 exercises the bounds; 255 means "as do_token sizes it". */
	size_t cap = data[0] == 255 ? 512 : data[0] % 64;
	const char *key = keys[data[1] % (sizeof(keys) / sizeof(keys[0]))];
	size_t qn = size - 2;
	char *q = malloc(qn ? qn : 1);
	char *out = malloc(cap);
	char *ref = malloc(qn + 1);
	if (!q || !out || !ref)
		abort();
	memcpy(q, data + 2, qn);

	int r = answer_query_param(q, qn, key, out, cap);
	size_t rlen = 0;
	int rr = ref_param(q, qn, key, ref, &rlen);
	if (rr == 0) {
		CHECK(r == -ENOENT);
	} else if (rr < 0) {
		/* A bad escape after more bytes than fit may be reported as
		 * either. */
		CHECK(r == -EINVAL || r == -ENOSPC);
	} else if (rlen + 1 > cap) {
		CHECK(r == -ENOSPC);
	} else {
		CHECK(r >= 0 && (size_t)r == rlen);
		CHECK(memcmp(out, ref, rlen) == 0 && out[rlen] == '\0');
	}

	/* What do_token does next: the decoded audience as a directory. */
	size_t acap = data[0] % 7 == 0 ? 1600 : cap;
	if (r > 0)
		check_audience(out, (size_t)r, acap);
	check_audience(q, qn, acap);
	check_inm(q, qn);

	free(q);
	free(out);
	free(ref);
	return 0;
}
