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
		cmocka_unit_test(test_method_bits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
