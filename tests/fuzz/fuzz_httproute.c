/* libFuzzer: the route matcher (httproute_find) on any path bytes, against a
 * reference written the slow, obvious way.  Built from the real sources.
 *
 * Input: the path (no NUL termination; an exact-size heap copy, so a read
 * past its end shows under ASan).
 *
 * Invariants (abort on violation):
 *  - httproute_find picks the first route the reference matches, or none;
 *  - httproute_lookup (the exact-path index) gives the same route and spans;
 *  - its captures are the reference's, and lie inside the path;
 *  - a literal route matches only its own bytes;
 *  - httproute_merge_slashes leaves no "//", keeps every other byte in order,
 *    keeps a leading '/', is idempotent, and gives the same in place. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httproute.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int ver_date(const char *v, size_t n)
{
	if (n == 6 && memcmp(v, "latest", 6) == 0)
		return 1;
	if (n != 10 || v[4] != '-' || v[7] != '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && i != 7 && (v[i] < '0' || v[i] > '9'))
			return 0;
	return 1;
}

static int ver_any(const char *v, size_t n)
{
	(void)v;
	return n > 0;
}

static void h(struct call *c)
{
	(void)c;
}

static const struct httproute table[] = {
	{HTTPROUTE_READ, 0, "/healthz", NULL, h, 0},
	{HTTPROUTE_READ, 0, "/v1/meta-data", NULL, h, 0},
	{HTTPROUTE_PUT, HTTPROUTE_OPENS, "/latest/api/token", NULL, h, 0},
	{HTTPROUTE_READ, 0, "/openstack", NULL, h, 0},
	{HTTPROUTE_READ, 0, "/openstack/{v}", ver_date, h, 0},
	{HTTPROUTE_READ, 0, "/openstack/{v}/", ver_date, h, 0},
	{HTTPROUTE_READ, 0, "/openstack/{v}/meta_data.json", ver_date, h, 0},
	{HTTPROUTE_READ, 0, "/{v}/meta-data/*", ver_date, h, 0},
	{HTTPROUTE_READ, 0, "/{v}/meta-data", ver_date, h, 0},
	{HTTPROUTE_READ, 0, "/{v}/dynamic/*", ver_date, h, 0},
	{HTTPROUTE_READ, 0, "/{v}", ver_date, h, 0},
	{HTTPROUTE_READ, 0, "/x/{v}/y", ver_any, h, 0},
	{HTTPROUTE_READ, 0, "/*", NULL, h, 0},
};
#define N (sizeof(table) / sizeof(table[0]))

/* The reference: pattern and path compared from the left, byte by byte;
 * {v} takes a whole segment (up to the next '/'), '*' the rest. */
static int ref_match(const char *pat, httproute_ver_fn *ok, const char *s, size_t n)
{
	if (!*pat)
		return n == 0;
	if (strncmp(pat, "{v}", 3) == 0) {
		size_t k = 0;
		while (k < n && s[k] != '/')
			k++;
		return ok && ok(s, k) && ref_match(pat + 3, ok, s + k, n - k);
	}
	if (pat[0] == '*' && pat[1] == '\0')
		return 1;
	return n > 0 && s[0] == pat[0] && ref_match(pat + 1, ok, s + 1, n - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *p = malloc(size ? size : 1);
	if (!p)
		abort();
	memcpy(p, data, size);
	struct http_span ver, rest;
	const struct httproute *r = httproute_find(table, N, p, size, &ver, &rest);
	const struct httproute *want = NULL;
	for (size_t i = 0; i < N && !want; i++)
		if (ref_match(table[i].pattern, table[i].ver_ok, p, size))
			want = &table[i];
	CHECK(r == want);
	static struct httproute_index ix;
	if (!ix.t)
		httproute_index_build(&ix, table, N);
	struct http_span iver, irest;
	CHECK(httproute_lookup(&ix, p, size, &iver, &irest) == r);
	CHECK(iver.p == ver.p && iver.n == ver.n && irest.p == rest.p && irest.n == rest.n);
	if (ver.p)
		CHECK(ver.p >= p && ver.p + ver.n <= p + size && r && strstr(r->pattern, "{v}"));
	else
		CHECK(ver.n == 0 && (!r || !strstr(r->pattern, "{v}")));
	if (rest.p) {
		CHECK(rest.p >= p && rest.p + rest.n == p + size);
		CHECK(r && r->pattern[strlen(r->pattern) - 1] == '*');
	} else {
		CHECK(rest.n == 0 && (!r || r->pattern[strlen(r->pattern) - 1] != '*'));
	}
	if (r && !strchr(r->pattern, '{') && !strchr(r->pattern, '*'))
		CHECK(strlen(r->pattern) == size && memcmp(r->pattern, p, size) == 0);
	if (r && ver.p) /* the version is what the validator accepted */
		CHECK(r->ver_ok(ver.p, ver.n));

	char *m = malloc(size ? size : 1), *m2 = malloc(size ? size : 1);
	if (!m || !m2)
		abort();
	size_t mn = httproute_merge_slashes(p, size, m);
	CHECK(mn <= size);
	for (size_t i = 1; i < mn; i++)
		CHECK(!(m[i] == '/' && m[i - 1] == '/'));
	size_t j = 0; /* the bytes that are not '/' come through, in order */
	for (size_t i = 0; i < size; i++) {
		if (p[i] == '/')
			continue;
		while (j < mn && m[j] == '/')
			j++;
		CHECK(j < mn && m[j] == p[i]);
		j++;
	}
	while (j < mn && m[j] == '/')
		j++;
	CHECK(j == mn);
	CHECK(!size || (p[0] == '/') == (m[0] == '/'));
	CHECK(httproute_merge_slashes(m, mn, m2) == mn && memcmp(m, m2, mn) == 0);
	memcpy(m2, p, size);
	CHECK(httproute_merge_slashes(m2, size, m2) == mn && memcmp(m, m2, mn) == 0);
	free(m);
	free(m2);
	free(p);
	return 0;
}
