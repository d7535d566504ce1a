#include "httproute.h"

#include <string.h>

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

/* pat (a C string) is exactly path[0..pn) (which may hold NULs). */
static int same(const char *pat, const char *path, size_t pn)
{
	for (size_t i = 0; i < pn; i++)
		if (pat[i] == '\0' || pat[i] != path[i])
			return 0;
	return pat[pn] == '\0';
}

static uint32_t path_hash(const char *p, size_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
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
		if (strchr(pat, '*') || strstr(pat, "{v}"))
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
		filled++;
	}
}

const struct httproute *httproute_lookup(const struct httproute_index *ix, const char *path,
					 size_t pn, struct http_span *ver, struct http_span *rest)
{
	for (uint32_t h = path_hash(path, pn);; h++) {
		unsigned k = ix->slot[h & (HTTPROUTE_INDEX_SLOTS - 1)];
		if (!k)
			break;
		const char *pat = ix->t[k - 1].pattern;
		if (same(pat, path, pn)) {
			*ver = (struct http_span){NULL, 0};
			*rest = (struct http_span){NULL, 0};
			return &ix->t[k - 1];
		}
	}
	return httproute_find(ix->t, ix->n, path, pn, ver, rest);
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
