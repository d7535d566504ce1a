/* httproute: the matcher as a byte table — literal patterns, the {v} version
 * segment with its validator, the trailing '*', first match wins — every
 * path given as an exact-size heap copy (no NUL after it, so a read past
 * the end shows under ASan), and every truncated prefix of each matching
 * path, which must not match the same route with the same spans. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httproute.h"

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

/* The routes' order matters: the first match wins. */
static const struct httproute table[] = {
	{HTTPROUTE_READ, 0, "/healthz", NULL, h, 0},                       /* 0 */
	{HTTPROUTE_READ, 0, "/v1/meta-data", NULL, h, 1},                  /* 1 */
	{HTTPROUTE_PUT, HTTPROUTE_OPENS, "/v1/session", NULL, h, 2},           /* 2 */
	{HTTPROUTE_READ, 0, "/os", NULL, h, 3},                            /* 3 */
	{HTTPROUTE_READ, 0, "/os/{v}", ver_date, h, 4},                    /* 4 */
	{HTTPROUTE_READ, 0, "/os/{v}/", ver_date, h, 5},                   /* 5 */
	{HTTPROUTE_READ, 0, "/os/{v}/meta_data.json", ver_date, h, 6},     /* 6 */
	{HTTPROUTE_READ, 0, "/{v}/meta-data/*", ver_date, h, 7},           /* 7 */
	{HTTPROUTE_READ, 0, "/{v}/meta-data", ver_date, h, 8},             /* 8 */
	{HTTPROUTE_READ, 0, "/any/{v}/x", ver_any, h, 9},                  /* 9 */
	{HTTPROUTE_READ, 0, "/star*", NULL, h, 10},                        /* 10 */
	{HTTPROUTE_READ, 0, "/{v}", NULL, h, 11},                          /* 11: no validator, never */
};
#define N (sizeof(table) / sizeof(table[0]))

struct rcase {
	const char *path;
	int route;        /* index in table, -1: none */
	const char *ver;  /* NULL: none captured */
	const char *rest; /* NULL: none captured */
};

static const struct rcase cases[] = {
	{"/healthz", 0, NULL, NULL},
	{"/healthz/", -1, NULL, NULL},
	{"/healthzz", -1, NULL, NULL},
	{"/Healthz", -1, NULL, NULL},
	{"", -1, NULL, NULL},
	{"/", -1, NULL, NULL},
	{"/v1/meta-data", 1, NULL, NULL},
	{"/v1/meta-data?x", -1, NULL, NULL},
	{"/v1/session", 2, NULL, NULL},
	{"/os", 3, NULL, NULL},
	{"/os/", -1, NULL, NULL}, /* {v} of nothing: the validator says no */
	{"/os/latest", 4, "latest", NULL},
	{"/os/latest/", 5, "latest", NULL},
	{"/os/2013-04-04", 4, "2013-04-04", NULL},
	{"/os/2013-04-4", -1, NULL, NULL},
	{"/os/2013-04-04x", -1, NULL, NULL},
	{"/os/latest/meta_data.json", 6, "latest", NULL},
	{"/os/latest/meta_data.jsonx", -1, NULL, NULL},
	{"/os/latest//meta_data.json", -1, NULL, NULL},
	{"/latest/meta-data/", 7, "latest", ""},
	{"/latest/meta-data/instance-id", 7, "latest", "instance-id"},
	{"/latest/meta-data/public-keys/0/openssh-key", 7, "latest", "public-keys/0/openssh-key"},
	{"/2009-04-04/meta-data/a//b", 7, "2009-04-04", "a//b"},
	{"/latest/meta-data", 8, "latest", NULL},
	{"/latest/meta-datax", -1, NULL, NULL},
	{"/1.0/meta-data", -1, NULL, NULL},
	{"/any/x/x", 9, "x", NULL},
	{"/any//x", -1, NULL, NULL},
	{"/any/a b/x", 9, "a b", NULL},
	{"/star", 10, NULL, ""},
	{"/starry/night", 10, NULL, "ry/night"},
	{"/sta", -1, NULL, NULL},
	{"/x", -1, NULL, NULL}, /* route 11 has no validator */
};

static int span_is(struct http_span s, const char *want)
{
	if (!want)
		return s.p == NULL && s.n == 0;
	return s.p && s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
}

static void test_httproute_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rcase *c = &cases[i];
		size_t n = strlen(c->path);
		char *p = malloc(n ? n : 1);
		assert_non_null(p);
		memcpy(p, c->path, n);
		struct http_span ver, rest;
		const struct httproute *r = httproute_find(table, N, p, n, &ver, &rest);
		int got = r ? (int)(r - table) : -1;
		if (got != c->route)
			fail_msg("\"%s\": route %d, want %d", c->path, got, c->route);
		if (!span_is(ver, c->ver) || !span_is(rest, c->rest))
			fail_msg("\"%s\": ver \"%.*s\" rest \"%.*s\", want \"%s\" \"%s\"", c->path,
				 (int)ver.n, ver.p ? ver.p : "", (int)rest.n, rest.p ? rest.p : "",
				 c->ver ? c->ver : "(none)", c->rest ? c->rest : "(none)");
		/* Captures point into the path. */
		if (ver.p && (ver.p < p || ver.p + ver.n > p + n))
			fail_msg("\"%s\": ver outside the path", c->path);
		if (rest.p && (rest.p < p || rest.p + rest.n > p + n))
			fail_msg("\"%s\": rest outside the path", c->path);
		/* No prefix of a path matches its route with the same captures. */
		for (size_t k = 0; got >= 0 && k < n; k++) {
			struct http_span v2, r2;
			const struct httproute *rk = httproute_find(table, N, p, k, &v2, &r2);
			if (rk == r && !table[got].ver_ok && strchr(table[got].pattern, '*') == NULL)
				fail_msg("\"%s\": its %zu-byte prefix matches route %d too", c->path, k,
					 got);
		}
		free(p);
	}
}

/* The exact-path index answers as the walk does, on every case and every
 * prefix of each. */
static void test_httproute_index_agrees(void **state)
{
	(void)state;
	struct httproute_index ix;
	httproute_index_build(&ix, table, N);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = cases[i].path;
		for (size_t k = 0; k <= strlen(path); k++) {
			struct http_span v1, r1, v2, r2;
			const struct httproute *a = httproute_find(table, N, path, k, &v1, &r1);
			const struct httproute *b = httproute_lookup(&ix, path, k, &v2, &r2);
			if (a != b || v1.p != v2.p || v1.n != v2.n || r1.p != r2.p || r1.n != r2.n)
				fail_msg("\"%.*s\": the index differs from the walk", (int)k, path);
		}
		/* one byte changed at each place: the word compare's head, body
		 * and last word (the index must not take it for the route) */
		char m[128];
		size_t n = strlen(path);
		assert_true(n < sizeof(m));
		for (size_t k = 0; k < n; k++) {
			memcpy(m, path, n);
			m[k] ^= 0x01;
			struct http_span v1, r1, v2, r2;
			const struct httproute *a = httproute_find(table, N, m, n, &v1, &r1);
			const struct httproute *b = httproute_lookup(&ix, m, n, &v2, &r2);
			if (a != b || v1.p != v2.p || v1.n != v2.n || r1.p != r2.p || r1.n != r2.n)
				fail_msg("\"%.*s\": the index differs from the walk", (int)n, m);
		}
	}
}

/* "//" found as the byte loop finds it: each pair of places in paths of
 * every length to 40 (inside one word, across two, in the last). */
static void test_double_slash(void **state)
{
	(void)state;
	char p[41];
	for (size_t n = 0; n <= 40; n++) {
		for (size_t a = 0; a <= n; a++) {
			for (size_t b = a; b <= n; b++) {
				memset(p, 'x', n);
				if (a < n)
					p[a] = '/';
				if (b < n)
					p[b] = '/';
				int want = 0;
				for (size_t i = 1; i < n; i++)
					want |= p[i] == '/' && p[i - 1] == '/';
				if (httproute_has_double_slash(p, n) != want)
					fail_msg("n %zu, '/' at %zu and %zu: want %d", n, a, b, want);
			}
		}
	}
	/* between each two '/', a byte that differs from '/' in one bit */
	char near[17];
	for (unsigned k = 0; k < 8; k++) {
		near[2 * k] = '/';
		near[2 * k + 1] = (char)('/' ^ (1u << k));
	}
	near[16] = '/';
	for (size_t n = 0; n <= sizeof(near); n++)
		assert_false(httproute_has_double_slash(near, n));
	assert_false(httproute_has_double_slash("/a/b/c/d/e/f/g/h.?o", 19));
	assert_true(httproute_has_double_slash("/latest/meta-data//x", 20));
}

static const struct httproute shadow[] = {
	{HTTPROUTE_READ, 0, "/{v}/meta-data", ver_date, h, 0}, /* answers /latest/meta-data */
	{HTTPROUTE_READ, 0, "/latest/meta-data", NULL, h, 1},  /* never reached */
	{HTTPROUTE_READ, 0, "/plain", NULL, h, 2},
	{HTTPROUTE_READ, 0, "/plain", NULL, h, 3},             /* a second one: never reached */
	{HTTPROUTE_READ, 0, "/pl*", NULL, h, 4},
};

/* An exact route that an earlier route matches is not indexed; a path that
 * only begins like an exact route, or holds a NUL, is not taken for it. */
static void test_httproute_index_order(void **state)
{
	(void)state;
	struct httproute_index ix;
	httproute_index_build(&ix, shadow, 5);
	struct http_span v, r;
	assert_ptr_equal(httproute_lookup(&ix, "/latest/meta-data", 17, &v, &r), &shadow[0]);
	assert_true(span_is(v, "latest"));
	assert_ptr_equal(httproute_lookup(&ix, "/plain", 6, &v, &r), &shadow[2]);
	assert_true(span_is(v, NULL) && span_is(r, NULL));
	assert_ptr_equal(httproute_lookup(&ix, "/plai", 5, &v, &r), &shadow[4]);
	assert_ptr_equal(httproute_lookup(&ix, "/plainx", 7, &v, &r), &shadow[4]);
	assert_ptr_equal(httproute_lookup(&ix, "/plain\0x", 8, &v, &r), &shadow[4]);
	assert_true(r.p != NULL && r.n == 5);
	assert_null(httproute_lookup(&ix, "/pain", 5, &v, &r));
}

/* More exact routes than the index holds: the rest are found by the walk. */
static void test_httproute_index_full(void **state)
{
	(void)state;
	enum { MANY = HTTPROUTE_INDEX_SLOTS + 44 };
	static char names[MANY][8];
	static struct httproute many[MANY];
	for (unsigned i = 0; i < MANY; i++) {
		snprintf(names[i], sizeof(names[i]), "/r%u", i);
		many[i] = (struct httproute){HTTPROUTE_READ, 0, names[i], NULL, h, i};
	}
	struct httproute_index ix;
	httproute_index_build(&ix, many, MANY);
	unsigned indexed = 0;
	for (unsigned i = 0; i < HTTPROUTE_INDEX_SLOTS; i++)
		indexed += ix.slot[i] != 0;
	assert_int_equal(indexed, HTTPROUTE_INDEX_SLOTS / 2);
	for (unsigned i = 0; i < MANY; i++) {
		struct http_span v, r;
		assert_ptr_equal(httproute_lookup(&ix, names[i], strlen(names[i]), &v, &r), &many[i]);
	}
}

static void test_method_bits(void **state)
{
	(void)state;
	assert_int_equal(httproute_method_bit(HTTP_M_GET), HTTPROUTE_GET);
	assert_int_equal(httproute_method_bit(HTTP_M_HEAD), HTTPROUTE_HEAD);
	assert_int_equal(httproute_method_bit(HTTP_M_POST), HTTPROUTE_POST);
	assert_int_equal(httproute_method_bit(HTTP_M_PUT), HTTPROUTE_PUT);
	assert_int_equal(httproute_method_bit(HTTP_M_OTHER), 0);
	/* every bit distinct */
	unsigned all = HTTPROUTE_GET | HTTPROUTE_HEAD | HTTPROUTE_POST | HTTPROUTE_PUT;
	assert_int_equal(__builtin_popcount(all), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_httproute_table),
		cmocka_unit_test(test_httproute_index_agrees),
		cmocka_unit_test(test_httproute_index_order),
		cmocka_unit_test(test_httproute_index_full),
		cmocka_unit_test(test_method_bits),
		cmocka_unit_test(test_double_slash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
