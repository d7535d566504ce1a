/* libFuzzer: jwt.c on arbitrary bytes — the input is tried as base64url,
 * as a claims object and as a whole token, and the three are checked
 * against each other.  Built from the real sources.
 *
 * Invariants (abort on violation):
 *  - jwt_b64url_decode: 0 or -EINVAL when out has room; on 0 the bytes
 *    re-encode to the input (canonical), padding was exact, and one byte
 *    less of room gives -ENOSPC; any bytes, encoded, decode back.
 *  - jwt_claims_exp / jwt_exp return 0, -ENOENT, -EINVAL, -ERANGE (or
 *    -ENOMEM); on 0,
 *    0 <= exp <= JWT_MAX_TIME and jwt_format_time agrees with gmtime_r.
 *  - jwt_exp(h.b64(x).s) == jwt_claims_exp(x) while x fits 8 KiB, and
 *    jwt_exp of the input agrees with decoding its payload by hand. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jwt.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PAYLOAD_CAP 8192 /* jwt_exp's buffer */

static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t encode(const unsigned char *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		size_t chars = n - i >= 3 ? 4 : n - i + 1;
		for (size_t k = 0; k < chars; k++)
			out[o++] = alpha[v >> (18 - 6 * k) & 63];
	}
	return o;
}

static void check_time(int64_t exp)
{
	CHECK(exp >= 0 && exp <= JWT_MAX_TIME);
	char buf[32], want[32];
	memset(buf, 'Q', sizeof(buf));
	CHECK(jwt_format_time(exp, buf) == 0);
	CHECK(strlen(buf) == 20 && buf[21] == 'Q');
	time_t t = (time_t)exp;
	struct tm tm;
	CHECK(gmtime_r(&t, &tm) != NULL);
	strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%SZ", &tm);
	CHECK(strcmp(buf, want) == 0);
}

static int known_rc(int r)
{
	return r == 0 || r == -ENOENT || r == -EINVAL || r == -ERANGE || r == -ENOMEM;
}

static void fuzz_b64(const char *in, size_t n)
{
	size_t cap = n;
	unsigned char *out = malloc(cap ? cap : 1);
	char *enc = malloc(n + 4);
	CHECK(out && enc);
	size_t len = 0;
	int r = jwt_b64url_decode(in, n, out, cap, &len);
	CHECK(r == 0 || r == -EINVAL); /* decoded bytes never exceed the input */
	if (r == 0) {
		CHECK(len <= cap);
		size_t el = encode(out, len, enc);
		size_t pad = 0;
		while (pad < n && in[n - 1 - pad] == '=')
			pad++;
		CHECK(el == n - pad && memcmp(enc, in, el) == 0);
		CHECK(pad == 0 || (el % 4 != 0 && pad == 4 - el % 4));
		if (len > 0) {
			size_t l2;
			CHECK(jwt_b64url_decode(in, n, out, len - 1, &l2) == -ENOSPC);
		}
	}
	free(out);
	free(enc);
}

static void fuzz_encode_roundtrip(const unsigned char *in, size_t n)
{
	if (n > 3000)
		n = 3000;
	char *enc = malloc(n / 3 * 4 + 8);
	unsigned char *back = malloc(n ? n : 1);
	CHECK(enc && back);
	size_t el = encode(in, n, enc);
	size_t len = 0;
	CHECK(jwt_b64url_decode(enc, el, back, n, &len) == 0);
	CHECK(len == n && memcmp(back, in, n) == 0);
	free(enc);
	free(back);
}

/* The input as claims, then wrapped in a token. */
static void fuzz_claims(const char *in, size_t n)
{
	int64_t exp = -1;
	int r = jwt_claims_exp(in, n, &exp);
	CHECK(known_rc(r));
	if (r == 0)
		check_time(exp);

	char *tok = malloc(n / 3 * 4 + 16);
	CHECK(tok);
	size_t o = 0;
	memcpy(tok, "e30.", 4);
	o = 4 + encode((const unsigned char *)in, n, tok + 4);
	memcpy(tok + o, ".c2ln", 5);
	o += 5;
	int64_t exp2 = -1;
	int r2 = jwt_exp(tok, o, &exp2);
	if (n <= PAYLOAD_CAP) {
		CHECK(r2 == r);
		CHECK(r != 0 || exp2 == exp);
	} else {
		CHECK(r2 == -EINVAL);
	}
	free(tok);
}

/* The input as a token; its payload decoded here must agree. */
static void fuzz_token(const char *in, size_t n)
{
	int64_t exp = -1;
	int r = jwt_exp(in, n, &exp);
	CHECK(known_rc(r));
	if (r == 0)
		check_time(exp);
	const char *d1 = memchr(in, '.', n);
	const char *d2 = d1 ? memchr(d1 + 1, '.', n - (size_t)(d1 + 1 - in)) : NULL;
	if (!d2) {
		CHECK(r == -EINVAL);
		return;
	}
	size_t pn = (size_t)(d2 - d1 - 1);
	unsigned char *pay = malloc(pn ? pn : 1);
	CHECK(pay);
	size_t len = 0;
	int dr = jwt_b64url_decode(d1 + 1, pn, pay, pn, &len);
	if (dr < 0 || len > PAYLOAD_CAP) {
		CHECK(r == -EINVAL);
	} else {
		int64_t exp2 = -1;
		int r2 = jwt_claims_exp((const char *)pay, len, &exp2);
		CHECK(r2 == r);
		CHECK(r != 0 || exp2 == exp);
	}
	free(pay);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy: ASan sees a read past the end. */
	char *in = malloc(size ? size : 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	fuzz_b64(in, size);
	fuzz_encode_roundtrip(data, size);
	fuzz_claims(in, size);
	fuzz_token(in, size);
	free(in);
	return 0;
}
