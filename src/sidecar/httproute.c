#include "httproute.h"

#include <string.h>

#include "sbuf.h"

/* 1 when pat matches path[0..pn) whole; the wildcards' spans in ver and rest. */
static int match(const char *pat, httproute_ver_fn *ver_ok, const char *path, size_t pn,
		 struct http_span *ver, struct http_span *rest)
{
	size_t j = 0;
	for (const char *p = pat; *p;) {
		if (p[0] == '{' && p[1] == 'v' && p[2] == '}') {
			size_t k = j;
			while (k < pn && path[k] != '/')
				k++;
			if (!ver_ok || !ver_ok(path + j, k - j))
				return 0;
			*ver = (struct http_span){path + j, k - j};
			j = k;
			p += 3;
		} else if (p[0] == '*' && p[1] == '\0') {
			*rest = (struct http_span){path + j, pn - j};
			return 1;
		} else {
			if (j == pn || path[j] != *p)
				return 0;
			j++;
			p++;
		}
	}
	return j == pn;
}

const struct httproute *httproute_find(const struct httproute *t, size_t n, const char *path,
				       size_t pn, struct http_span *ver, struct http_span *rest)
{
	/* Most patterns differ from a path in the byte after the first '/':
	 * compared here, a route that cannot match costs one test, not a call
	 * (httproute_lookup walks here for the paths its index does not hold). */
	char p1 = 0;
	if (pn > 1)
		p1 = path[1];
	for (size_t i = 0; i < n; i++) {
		const char *pat = t[i].pattern;
		if (pat[0] == '/' && pat[1] != p1 && pat[1] != '{' && pat[1] != '*')
			continue;
		*ver = (struct http_span){NULL, 0};
		*rest = (struct http_span){NULL, 0};
		if (match(t[i].pattern, t[i].ver_ok, path, pn, ver, rest))
			return &t[i];
	}
	*ver = (struct http_span){NULL, 0};
	*rest = (struct http_span){NULL, 0};
	return NULL;
}

/* a[0..n) == b[0..n), eight bytes at a time (musl's memcmp goes by one). */
/* a[0..n) == b[0..n): eight bytes a compare, the last 1..7 in one word
 * (the word ending at n when there are eight, else both read into zeroed
 * words). */
static int same(const char *a, const char *b, size_t n)
{
	uint64_t x = 0, y = 0;
	if (n < 8) {
		sbuf_copy(&x, a, n);
		sbuf_copy(&y, b, n);
		return x == y;
	}
	for (size_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			return 0;
	}
	memcpy(&x, a + n - 8, 8);
	memcpy(&y, b + n - 8, 8);
	return x == y;
}

/* A hash of the path's bytes, eight at a time (a request's path is 10 to 40
 * bytes; FNV-1a's byte loop was most of a lookup): each word mixed in by a
 * multiply and a shift (the multiplier is MurmurHash3's fmix64's); the
 * last 0..7 bytes as one zero-padded word. */
static uint32_t path_hash(const char *p, size_t n)
{
	const uint64_t k = 0xff51afd7ed558ccdu;
	uint64_t h = 0x9e3779b97f4a7c15u ^ n;
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * k;
		h ^= h >> 32;
	}
	uint64_t w = 0;
	sbuf_copy(&w, p, n);
	h = (h ^ w) * k;
	h ^= h >> 29;
	return (uint32_t)h;
}

void httproute_index_build(struct httproute_index *ix, const struct httproute *t, size_t n)
{
	memset(ix, 0, sizeof(*ix));
	ix->t = t;
	ix->n = n;
	size_t filled = 0;
	for (size_t i = 0; i < n && i < UINT16_MAX && filled < HTTPROUTE_INDEX_SLOTS / 2; i++) {
		const char *pat = t[i].pattern;
		size_t len = strlen(pat);
		if (strchr(pat, '*') || strstr(pat, "{v}") || len > UINT16_MAX)
			continue;
		/* An earlier route that matches these bytes answers them. */
		size_t j = 0;
		struct http_span ver, rest;
		while (j < i && !match(t[j].pattern, t[j].ver_ok, pat, len, &ver, &rest))
			j++;
		if (j < i)
			continue;
		uint32_t h = path_hash(pat, len);
		while (ix->slot[h & (HTTPROUTE_INDEX_SLOTS - 1)])
			h++;
		ix->slot[h & (HTTPROUTE_INDEX_SLOTS - 1)] = (uint16_t)(i + 1);
		ix->len[h & (HTTPROUTE_INDEX_SLOTS - 1)] = (uint16_t)len;
		filled++;
	}
}

const struct httproute *httproute_lookup(const struct httproute_index *ix, const char *path,
					 size_t pn, struct http_span *ver, struct http_span *rest)
{
	for (uint32_t h = path_hash(path, pn);; h++) {
		unsigned s = h & (HTTPROUTE_INDEX_SLOTS - 1), k = ix->slot[s];
		if (!k)
			break;
		if (ix->len[s] == pn && same(ix->t[k - 1].pattern, path, pn)) {
			*ver = (struct http_span){NULL, 0};
			*rest = (struct http_span){NULL, 0};
			return &ix->t[k - 1];
		}
	}
	return httproute_find(ix->t, ix->n, path, pn, ver, rest);
}

/* The bytes of w equal to '/', as 0x80 in each (exact: no carry crosses
 * a byte, unlike the shorter "has a zero byte" test). */
static uint64_t slash_bytes(uint64_t w)
{
	const uint64_t low7 = 0x7f7f7f7f7f7f7f7fu;
	uint64_t t = w ^ 0x2f2f2f2f2f2f2f2fu;
	return ~(((t & low7) + low7) | t) & ~low7;
}

int httproute_has_double_slash(const char *path, size_t n)
{
	if (n < 8) {
		for (size_t i = 1; i < n; i++)
			if (path[i] == '/' && path[i - 1] == '/')
				return 1;
		return 0;
	}
	/* words seven bytes apart overlap by one, so a pair across two is in
	 * one; the last word ends at n */
	for (size_t i = 0;; i += 7) {
		if (i + 8 > n)
			i = n - 8;
		uint64_t w, m;
		memcpy(&w, path + i, 8);
		m = slash_bytes(w);
		if (m & (m >> 8)) /* two next to each other (either byte order) */
			return 1;
		if (i + 8 == n)
			return 0;
	}
}

size_t httproute_merge_slashes(const char *path, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (path[i] == '/' && o && out[o - 1] == '/')
			continue;
		out[o++] = path[i];
	}
	return o;
}

unsigned httproute_method_bit(enum http_method m)
{
	switch (m) {
	case HTTP_M_GET: return HTTPROUTE_GET;
	case HTTP_M_HEAD: return HTTPROUTE_HEAD;
	case HTTP_M_POST: return HTTPROUTE_POST;
	case HTTP_M_PUT: return HTTPROUTE_PUT;
	default: return 0;
	}
}
