#include "jwt.h"

#include "jview.h"
#include "sbuf.h"

#include <errno.h>
#include <string.h>

int jwt_b64url_decode(const char *in, size_t n, unsigned char *out, size_t cap, size_t *outlen)
{
	size_t pad = 0;
	while (n && in[n - 1] == '=') {
		n--;
		pad++;
	}
	if (pad > 2 || n % 4 == 1 || (pad && (n + pad) % 4 != 0))
		return -EINVAL;
	size_t need = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
	if (need > cap)
		return -ENOSPC;
	uint32_t acc = 0;
	unsigned bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int v = sbuf_b64val(in[i], 1);
		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* Canonical encodings only: leftover bits must be zero. */
	if (acc != 0)
		return -EINVAL;
	*outlen = o;
	return 0;
}

/* Claims nest at most this deep, the top-level object included. */
#define CLAIMS_MAX_DEPTH 32

/* A NumericDate's raw JSON number (checked by the reader): its whole
 * seconds, or -ERANGE when negative, written with an exponent (legal JSON,
 * but no issuer writes it: out of range rather than a guess) or past
 * JWT_MAX_TIME.  A fraction is truncated. */
static int numeric_date(const char *p, size_t n, int64_t *out)
{
	if (p[0] == '-' || memchr(p, 'e', n) || memchr(p, 'E', n))
		return -ERANGE;
	int64_t v = 0;
	for (size_t i = 0; i < n && p[i] != '.'; i++) {
		v = v * 10 + (p[i] - '0');
		if (v > JWT_MAX_TIME)
			return -ERANGE;
	}
	*out = v;
	return 0;
}

int jwt_claims_exp(const char *json, size_t n, int64_t *exp)
{
	/* A ServiceAccount token's claims are a few dozen values: read on
	 * every /v1/token, they take no allocation (a bigger text moves to
	 * the heap). */
	struct jv_node first[64];
	struct jv v = {.max_depth = CLAIMS_MAX_DEPTH, JV_BORROW(first)};
	uint32_t found = JV_NONE;
	int r = jv_parse(&v, json, n, NULL, 0);
	if (r == -E2BIG || (r == 0 && jv_type(&v, 0) != JV_OBJECT))
		r = -EINVAL;
	for (uint32_t k = r == 0 ? jv_first(&v, 0) : JV_NONE; k != JV_NONE; k = jv_next(&v, 0, k)) {
		if (!jv_str_eq(&v, k, "exp", 3))
			continue;
		if (found != JV_NONE) {
			r = -EINVAL; /* two exps: which one? */
			break;
		}
		found = k + 1;
	}
	if (r == 0 && found == JV_NONE) {
		r = -ENOENT;
	} else if (r == 0 && jv_type(&v, found) != JV_NUMBER) {
		r = -EINVAL;
	} else if (r == 0) {
		size_t len;
		const char *raw = jv_raw(&v, found, &len);
		int64_t t = 0;
		if ((r = numeric_date(raw, len, &t)) == 0)
			*exp = t;
	}
	jv_free(&v);
	return r;
}

int jwt_exp(const char *token, size_t n, int64_t *exp)
{
	const char *dot1 = memchr(token, '.', n);
	if (!dot1)
		return -EINVAL;
	const char *pay = dot1 + 1;
	const char *dot2 = memchr(pay, '.', n - (size_t)(pay - token));
	if (!dot2)
		return -EINVAL;
	/* Claims of a service-account token are ~1 KiB; 8 KiB is generous. */
	unsigned char buf[8192];
	size_t len = 0;
	int r = jwt_b64url_decode(pay, (size_t)(dot2 - pay), buf, sizeof(buf), &len);
	if (r < 0)
		return r == -ENOSPC ? -EINVAL : r;
	return jwt_claims_exp((const char *)buf, len, exp);
}

int jwt_format_time(int64_t t, char buf[21])
{
	if (t < 0 || t > JWT_MAX_TIME)
		return -ERANGE;
	int64_t days = t / 86400, secs = t % 86400;
	/* civil_from_days (H. Hinnant): proleptic Gregorian, no libc limits. */
	int64_t z = days + 719468;
	int64_t era = z / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = yoe + era * 400;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int64_t d = doy - (153 * mp + 2) / 5 + 1;
	int64_t m = mp < 10 ? mp + 3 : mp - 9;
	if (m <= 2)
		y++;
	/* Digits by hand: every field is in range by construction. */
	unsigned v[6] = {(unsigned)y, (unsigned)m, (unsigned)d, (unsigned)(secs / 3600),
			 (unsigned)(secs / 60 % 60), (unsigned)(secs % 60)};
	static const char sep[6] = {'-', '-', 'T', ':', ':', 'Z'};
	char *o = buf;
	for (int i = 0; i < 6; i++) {
		if (i == 0) {
			*o++ = (char)('0' + v[0] / 1000 % 10);
			*o++ = (char)('0' + v[0] / 100 % 10);
		}
		*o++ = (char)('0' + v[i] / 10 % 10);
		*o++ = (char)('0' + v[i] % 10);
		*o++ = sep[i];
	}
	*o = '\0';
	return 0;
}
