#include "jwt.h"
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

/* ---- a minimal JSON walker ------------------------------------------------ */

struct jw {
	const char *p, *end;
	int depth;
};

#define JW_MAX_DEPTH 32

static void ws(struct jw *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* A string at j->p; its unescaped bytes go to key (cut at keycap, with
 * *keylen set to the full length) when key is given. */
static int str(struct jw *j, char *key, size_t keycap, size_t *keylen)
{
	if (j->p >= j->end || *j->p != '"')
		return -EINVAL;
	j->p++;
	size_t k = 0;
	while (j->p < j->end) {
		unsigned char c = (unsigned char)*j->p++;
		if (c == '"') {
			if (keylen)
				*keylen = k;
			return 0;
		}
		if (c < 0x20)
			return -EINVAL;
		if (c == '\\') {
			if (j->p >= j->end)
				return -EINVAL;
			char e = *j->p++;
			switch (e) {
			case '"': case '\\': case '/': c = (unsigned char)e; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u': {
				if (j->end - j->p < 4)
					return -EINVAL;
				unsigned u = 0;
				for (int i = 0; i < 4; i++) {
					int h = sbuf_hexval(j->p[i]);
					if (h < 0)
						return -EINVAL;
					u = u << 4 | (unsigned)h;
				}
				j->p += 4;
				/* Only key comparison needs the value; anything outside
				 * ASCII can never equal "exp", so mark it as such. */
				c = u < 0x80 ? (unsigned char)u : 0xff;
				break;
			}
			default:
				return -EINVAL;
			}
		}
		if (key && k < keycap)
			key[k] = (char)c;
		k++;
	}
	return -EINVAL;
}

static int value(struct jw *j);

static int number(struct jw *j, int64_t *out, int *range)
{
	int neg = 0;
	if (j->p < j->end && *j->p == '-') {
		neg = 1;
		j->p++;
	}
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return -EINVAL;
	if (*j->p == '0' && j->p + 1 < j->end && j->p[1] >= '0' && j->p[1] <= '9')
		return -EINVAL; /* leading zeros are not JSON */
	int64_t v = 0;
	int big = 0;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		if (v > (JWT_MAX_TIME + 1) / 10 + 1)
			big = 1;
		else
			v = v * 10 + (*j->p - '0');
		j->p++;
	}
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -EINVAL;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	int has_exp = 0;
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		has_exp = 1;
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -EINVAL;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (out) {
		/* NumericDate with an exponent is legal JSON but no issuer writes
		 * it; treat it as out of range rather than guess. */
		*range = neg || big || has_exp || v > JWT_MAX_TIME;
		*out = v;
	}
	return 0;
}

static int literal(struct jw *j, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return -EINVAL;
	j->p += n;
	return 0;
}

static int container(struct jw *j, char close)
{
	if (++j->depth > JW_MAX_DEPTH)
		return -EINVAL;
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return 0;
	}
	for (;;) {
		int r;
		if (close == '}') {
			if ((r = str(j, NULL, 0, NULL)) < 0)
				return r;
			ws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return -EINVAL;
		}
		if ((r = value(j)) < 0)
			return r;
		ws(j);
		if (j->p >= j->end)
			return -EINVAL;
		char c = *j->p++;
		if (c == close)
			break;
		if (c != ',')
			return -EINVAL;
		ws(j);
	}
	j->depth--;
	return 0;
}

static int value(struct jw *j)
{
	ws(j);
	if (j->p >= j->end)
		return -EINVAL;
	switch (*j->p) {
	case '{': return container(j, '}');
	case '[': return container(j, ']');
	case '"': return str(j, NULL, 0, NULL);
	case 't': return literal(j, "true");
	case 'f': return literal(j, "false");
	case 'n': return literal(j, "null");
	default: return number(j, NULL, NULL);
	}
}

int jwt_claims_exp(const char *json, size_t n, int64_t *exp)
{
	struct jw j = {json, json + n, 1};
	int found = 0, range = 0;
	int64_t v = 0;
	ws(&j);
	if (j.p >= j.end || *j.p != '{')
		return -EINVAL;
	j.p++;
	ws(&j);
	if (j.p < j.end && *j.p == '}') {
		j.p++;
	} else {
		for (;;) {
			char key[4];
			size_t klen = 0;
			int r = str(&j, key, sizeof(key), &klen);
			if (r < 0)
				return r;
			ws(&j);
			if (j.p >= j.end || *j.p++ != ':')
				return -EINVAL;
			ws(&j);
			if (klen == 3 && memcmp(key, "exp", 3) == 0) {
				if (found)
					return -EINVAL; /* two exps: which one? */
				found = 1;
				if (number(&j, &v, &range) < 0)
					return -EINVAL;
			} else if ((r = value(&j)) < 0) {
				return r;
			}
			ws(&j);
			if (j.p >= j.end)
				return -EINVAL;
			char c = *j.p++;
			if (c == '}')
				break;
			if (c != ',')
				return -EINVAL;
			ws(&j);
		}
	}
	ws(&j);
	if (j.p != j.end)
		return -EINVAL;
	if (!found)
		return -ENOENT;
	if (range)
		return -ERANGE;
	*exp = v;
	return 0;
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
