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
	for (size_t i = 0; i < n; i++) {
		*ver = (struct http_span){NULL, 0};
		*rest = (struct http_span){NULL, 0};
		if (match(t[i].pattern, t[i].ver_ok, path, pn, ver, rest))
			return &t[i];
	}
	*ver = (struct http_span){NULL, 0};
	*rest = (struct http_span){NULL, 0};
	return NULL;
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
