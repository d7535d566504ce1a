/* metajson: the custom meta-data object as a byte table (escapes, order,
 * every way to not be an object of strings), and every truncated prefix of
 * a valid document refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metajson.h"

struct mj_case {
	const char *name;
	const char *in;
	int rc;
	const char *pairs; /* for rc 0: "k=v;k=v;" as decoded */
	const char *err;   /* for rc < 0: a part of the message */
};

static void test_table(void **state)
{
	(void)state;
	static const struct mj_case cases[] = {
		{"empty object", "{}", 0, "", NULL},
		{"spaces around", " \n\t{ } \r\n", 0, "", NULL},
		{"one pair", "{\"role\":\"db\"}", 0, "role=db;", NULL},
		{"order kept", "{\"b\":\"1\",\"a\":\"2\",\"c\":\"\"}", 0, "b=1;a=2;c=;", NULL},
		{"simple escapes", "{\"k\":\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\"}", 0,
		 "k=q\" b\\ s/ \b\f\n\r\t;", NULL},
		{"\\u BMP", "{\"k\":\"\\u00e9\\u2603\"}", 0, "k=\xc3\xa9\xe2\x98\x83;", NULL},
		{"surrogate pair", "{\"k\":\"\\ud83d\\ude00\"}", 0, "k=\xf0\x9f\x98\x80;", NULL},
		{"raw UTF-8", "{\"gr\xc3\xbc\xc3\x9f\":\"\xe2\x9c\x93\"}", 0,
		 "gr\xc3\xbc\xc3\x9f=\xe2\x9c\x93;", NULL},
		{"empty key", "{\"\":\"v\"}", 0, "=v;", NULL},
		{"not an object", "[\"a\"]", -EINVAL, NULL, "expected a JSON object"},
		{"a string", "\"a\"", -EINVAL, NULL, "expected a JSON object"},
		{"empty input", "", -EINVAL, NULL, "no JSON value"},
		{"number value", "{\"a\":1}", -EINVAL, NULL, "value of \"a\" is not a string"},
		{"object value", "{\"a\":{}}", -EINVAL, NULL, "not a string"},
		{"null value", "{\"a\":null}", -EINVAL, NULL, "not a string"},
		{"bare key", "{a:\"b\"}", -EINVAL, NULL, "want a member name"},
		{"single quotes", "{'a':'b'}", -EINVAL, NULL, "want a member name"},
		{"trailing comma", "{\"a\":\"b\",}", -EINVAL, NULL, "want a member name"},
		{"missing colon", "{\"a\" \"b\"}", -EINVAL, NULL, "want ':'"},
		{"missing comma", "{\"a\":\"b\" \"c\":\"d\"}", -EINVAL, NULL, "want ',' or '}'"},
		{"text after", "{} x", -EINVAL, NULL, "bytes after the value"},
		{"two objects", "{}{}", -EINVAL, NULL, "bytes after the value"},
		{"duplicate key", "{\"a\":\"1\",\"a\":\"2\"}", -EINVAL, NULL, "appears twice"},
		{"raw newline in string", "{\"a\":\"x\ny\"}", -EINVAL, NULL, "control byte 0x0a"},
		{"bad escape", "{\"a\":\"\\x\"}", -EINVAL, NULL, "invalid escape"},
		{"short \\u", "{\"a\":\"\\u12\"}", -EINVAL, NULL, "invalid \\u escape"},
		/* lone surrogates: U+FFFD, as Go and the webhook's reader decode them */
		{"lone high surrogate", "{\"a\":\"\\ud83d\"}", 0, "a=\xef\xbf\xbd;", NULL},
		{"lone low surrogate", "{\"a\":\"\\ude00x\"}", 0, "a=\xef\xbf\xbdx;", NULL},
		{"high then not low", "{\"a\":\"\\ud83d\\u0041\"}", 0, "a=\xef\xbf\xbd" "A;", NULL},
		{"high then bad escape", "{\"a\":\"\\ud83d\\u00\"}", -EINVAL, NULL, "invalid \\u escape"},
		{"not UTF-8", "{\"a\":\"\xff\"}", -EINVAL, NULL, "invalid UTF-8"},
		{"unterminated", "{\"a\":\"b", -EINVAL, NULL, "ends inside a value"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct mj_case *c = &cases[i];
		struct metajson m;
		char err[256] = "";
		int rc = metajson_parse(c->in, strlen(c->in), &m, err, sizeof(err));
		if (rc != c->rc)
			fail_msg("%s: rc %d (%s), want %d", c->name, rc, err, c->rc);
		if (rc < 0) {
			if (!strstr(err, c->err))
				fail_msg("%s: message \"%s\", want \"%s\" in it", c->name, err, c->err);
			assert_null(m.kv);
			continue;
		}
		char got[512] = "";
		size_t o = 0;
		for (size_t k = 0; k < m.n; k++) {
			assert_int_equal(strlen(m.kv[k].k), m.kv[k].kn);
			o += (size_t)snprintf(got + o, sizeof(got) - o, "%s=%s;", m.kv[k].k, m.kv[k].v);
		}
		if (strcmp(got, c->pairs) != 0)
			fail_msg("%s: \"%s\", want \"%s\"", c->name, got, c->pairs);
		metajson_free(&m);
	}
}

/* \u0000 decodes to a NUL inside the value: the length says so. */
static void test_nul_escape(void **state)
{
	(void)state;
	static const char in[] = "{\"k\":\"a\\u0000b\"}";
	struct metajson m;
	char err[128];
	assert_int_equal(metajson_parse(in, sizeof(in) - 1, &m, err, sizeof(err)), 0);
	assert_int_equal(m.kv[0].vn, 3);
	assert_memory_equal(m.kv[0].v, "a\0b", 3);
	metajson_free(&m);
}

static void test_prefixes(void **state)
{
	(void)state;
	static const char doc[] = " {\"role\": \"db\", \"snow\": \"\\u2603\\ud83d\\ude00\"} ";
	size_t n = sizeof(doc) - 1;
	for (size_t i = 0; i < n; i++) {
		struct metajson m;
		char err[128];
		int rc = metajson_parse(doc, i, &m, err, sizeof(err));
		/* the whole object ends one byte before the end */
		int want = i == n - 1 ? 0 : -EINVAL;
		if (rc != want)
			fail_msg("prefix %zu: rc %d, want %d", i, rc, want);
		if (rc == 0)
			metajson_free(&m);
	}
}

static void test_key_limit(void **state)
{
	(void)state;
	size_t cap = (METAJSON_MAX_KEYS + 2) * 16;
	char *s = malloc(cap);
	assert_non_null(s);
	for (int max = METAJSON_MAX_KEYS; max <= METAJSON_MAX_KEYS + 1; max++) {
		size_t o = 0;
		s[o++] = '{';
		for (int k = 0; k < max; k++)
			o += (size_t)snprintf(s + o, cap - o, "%s\"k%d\":\"v\"", k ? "," : "", k);
		s[o++] = '}';
		struct metajson m;
		char err[128];
		int rc = metajson_parse(s, o, &m, err, sizeof(err));
		if (max == METAJSON_MAX_KEYS) {
			assert_int_equal(rc, 0);
			assert_int_equal(m.n, METAJSON_MAX_KEYS);
			metajson_free(&m);
		} else {
			assert_int_equal(rc, -EINVAL);
			assert_non_null(strstr(err, "more than"));
		}
	}
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_nul_escape),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_key_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
