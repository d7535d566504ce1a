/* jview: the JSON reader of src/core.  Tables of raw texts it must accept
 * and refuse (RFC 8259, strictly), every truncated prefix of valid texts,
 * string decoding (escapes, surrogates, UTF-8) read back byte-exact and
 * checked against json-c, the fast string scan with a special byte at
 * every offset, lookups (last duplicate wins, escaped names), iteration,
 * and the depth and node caps. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "jview.h"

#define S(lit) lit, sizeof(lit) - 1

/* An exactly sized copy: ASan sees any read past the text. */
static int parse_exact(struct jv *v, const char *s, size_t n, char *err, size_t errlen)
{
	char *p = malloc(n ? n : 1);
	memcpy(p, s, n);
	int r = jv_parse(v, p, n, err, errlen);
	/* Keep the copy alive with the view: tests read strings after. */
	static char *keep;
	free(keep);
	keep = p;
	return r;
}

static void test_valid_table(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t n;
		enum jv_type root;
		uint32_t nodes;
	} ok[] = {
		{S("{}"), JV_OBJECT, 1},
		{S("[]"), JV_ARRAY, 1},
		{S(" \t\r\n{ \t\r\n} \t\r\n"), JV_OBJECT, 1},
		{S("0"), JV_NUMBER, 1},
		{S("-0"), JV_NUMBER, 1},
		{S("-12.5e+3"), JV_NUMBER, 1},
		{S("1E-2"), JV_NUMBER, 1},
		{S("0.0"), JV_NUMBER, 1},
		{S("true"), JV_BOOL, 1},
		{S("false"), JV_BOOL, 1},
		{S("null"), JV_NULL, 1},
		{S("\"\""), JV_STRING, 1},
		{S("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\""), JV_STRING, 1},
		{S("{\"a\":[1,{\"b\":null},\"c\"],\"d\":{}}"), JV_OBJECT, 10},
		{S("[[[[[]]]]]"), JV_ARRAY, 5},
		{S("{\"\":\"\"}"), JV_OBJECT, 3},
		{S("[1 , 2 ,\n3]"), JV_ARRAY, 4},
		{S("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""), JV_STRING, 1},
	};
	struct jv v = {0};
	char err[128];
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int r = parse_exact(&v, ok[i].s, ok[i].n, err, sizeof(err));
		if (r != 0)
			fail_msg("case %zu '%s': %d %s", i, ok[i].s, r, err);
		assert_int_equal(jv_type(&v, 0), ok[i].root);
		assert_int_equal(v.count, ok[i].nodes);
		assert_int_equal(v.nodes[0].end, ok[i].nodes);
	}
	jv_free(&v);
}

static void test_invalid_table(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t n;
		const char *msg;
	} bad[] = {
		{S(""), "no JSON value"},
		{S(" \n"), "no JSON value"},
		{S("{"), "ends inside"},
		{S("[1,"), "ends inside"},
		{S("{\"a\""), "ends inside"},
		{S("{\"a\":"), "ends inside"},
		{S("\"abc"), "ends inside"},
		{S("\"abc\\"), "ends inside"},
		{S("\"\\u12"), "ends inside"},
		{S("tru"), "ends inside"},
		{S("-"), "ends inside"},
		{S("1."), "ends inside"},
		{S("1e"), "ends inside"},
		{S("1e+"), "ends inside"},
		{S("01"), "after the value at byte 1"},
		{S("[00]"), "unexpected '0' at byte 2"},
		{S("+1"), "unexpected '+' at byte 0"},
		{S(".5"), "unexpected '.'"},
		{S("1.e5"), "unexpected 'e' at byte 2"},
		{S("-a"), "unexpected 'a'"},
		{S("[1,]"), "unexpected ']' at byte 3"},
		{S("{\"a\":1,}"), "unexpected '}' at byte 7"},
		{S("[1 2]"), "unexpected '2' at byte 3"},
		{S("{\"a\" 1}"), "unexpected '1'"},
		{S("{a:1}"), "unexpected 'a' at byte 1"},
		{S("{'a':1}"), "unexpected '''"},
		{S("{1:1}"), "member name"},
		{S("[1}"), "unexpected '}'"},
		{S("{\"a\":1]"), "unexpected ']'"},
		{S("NaN"), "unexpected 'N'"},
		{S("Infinity"), "unexpected 'I'"},
		{S("nul"), "ends inside"},
		{S("nulL"), "unexpected 'L'"},
		{S("True"), "unexpected 'T'"},
		{S("{} {}"), "after the value at byte 3"},
		{S("1 2"), "after the value at byte 2"},
		{S("{}\0"), "after the value at byte 2"},
		{S("{}x"), "after the value"},
		{S("[/*c*/]"), "unexpected '/'"},
		{S("\"a\tb\""), "control byte 0x09 in a string at byte 2"},
		{S("\"a\nb\""), "control byte 0x0a"},
		{S("\"\0\""), "control byte 0x00 in a string at byte 1"},
		{S("\"\x1f\""), "control byte 0x1f"},
		{S("\"\\x\""), "invalid escape '\\x' at byte 1"},
		{S("\"\\U0041\""), "invalid escape"},
		{S("\"\\u00g1\""), "invalid \\u escape at byte 1"},
		{S("\"\\'\""), "invalid escape"},
		{S("\"\xff\""), "invalid UTF-8 at byte 1"},
		{S("\"ab\xc3\x28\""), "invalid UTF-8 at byte 3"},
		{S("\"\xc0\xaf\""), "invalid UTF-8"},
		{S("\"\xed\xa0\x80\""), "invalid UTF-8"},
		{S("\"\xf4\x90\x80\x80\""), "invalid UTF-8"},
		{S("\"\xe2\x82\""), "invalid UTF-8"},
		{S("\xef\xbb\xbf{}"), "unexpected byte 0xef at byte 0"},
		{S("\x7f"), "unexpected byte 0x7f"},
	};
	struct jv v = {0};
	char err[128];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		int r = parse_exact(&v, bad[i].s, bad[i].n, err, sizeof(err));
		if (r != -EINVAL || !strstr(err, bad[i].msg))
			fail_msg("case %zu: %d '%s', want -EINVAL and '%s'", i, r, err, bad[i].msg);
	}
	jv_free(&v);
}

/* Every proper prefix of a valid text that is not itself a whole value
 * fails, and says it ends inside a value (or that there is none). */
static void test_truncated_prefixes(void **state)
{
	(void)state;
	static const char doc[] =
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"a\":[true,false,null,-1.5e-3,0,"
		"\"\\u00e9\\ud83d\\ude00\\n\",{\"k\":{}}],\"b\":\"\xc3\xa9\xf0\x9f\x98\x80\"}";
	struct jv v = {0};
	char err[128];
	size_t n = sizeof(doc) - 1;
	assert_int_equal(parse_exact(&v, doc, n, err, sizeof(err)), 0);
	for (size_t len = 0; len < n; len++) {
		int r = parse_exact(&v, doc, len, err, sizeof(err));
		if (r != -EINVAL || (!strstr(err, "ends inside") && !strstr(err, "no JSON value")))
			fail_msg("prefix %zu: %d '%s'", len, r, err);
	}
	jv_free(&v);
}

/* Decoded strings, byte-exact, and json-c agrees on each. */
static void test_string_decoding(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		size_t jn;
		const char *want;
		size_t wn;
	} cases[] = {
		{S("\"plain\""), S("plain")},
		{S("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""), S("\"\\/\b\f\n\r\t")},
		{S("\"\\u0041\\u00e9\\u20AC\""), S("A\xc3\xa9\xe2\x82\xac")},
		{S("\"\\u0000x\""), S("\0x")},
		{S("\"\\ud83d\\ude00\""), S("\xf0\x9f\x98\x80")},
		{S("\"\\uD800\""), S("\xef\xbf\xbd")},            /* lone high */
		{S("\"\\udc00x\""), S("\xef\xbf\xbdx")},          /* lone low */
		{S("\"\\ud800\\u0041\""), S("\xef\xbf\xbd" "A")}, /* high, then not a low */
		{S("\"\\ud800\\ud800\\udc00\""), S("\xef\xbf\xbd\xf0\x90\x80\x80")},
		{S("\"\\udbff\\udfff\""), S("\xf4\x8f\xbf\xbf")},
		/* json-c 0.16 gives U+FFFD here; Go, Python and RFC 8259 U+6DC00. */
		{S("\"\\ud977\\udc00\""), S("\xf1\xad\xb0\x80")},
		{S("\"a\\nb\\nc\""), S("a\nb\nc")},
		{S("\"\xc3\xa9\\n\xe2\x82\xac\""), S("\xc3\xa9\n\xe2\x82\xac")},
	};
	struct jv v = {0};
	char err[128];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = parse_exact(&v, cases[i].json, cases[i].jn, err, sizeof(err));
		if (r != 0)
			fail_msg("case %zu: %s", i, err);
		assert_int_equal(v.nodes[0].n, cases[i].wn);
		const char *p;
		size_t n;
		assert_int_equal(jv_str(&v, 0, &p, &n), 0);
		assert_int_equal(n, cases[i].wn);
		assert_memory_equal(p, cases[i].want, n);
		/* A lone surrogate is flagged (no case has a raw U+FFFD). */
		assert_int_equal(!!(v.nodes[0].flags & JV_F_LONE_SURROGATE),
				 memmem(cases[i].want, cases[i].wn, "\xef\xbf\xbd", 3) != NULL);
		/* Read twice: the same decoded bytes, not decoded again. */
		const char *p2;
		assert_int_equal(jv_str(&v, 0, &p2, &n), 0);
		assert_ptr_equal(p, p2);
		assert_true(jv_str_eq(&v, 0, cases[i].want, cases[i].wn));
		/* json-c decodes the same bytes (but for its surrogate bug). */
		if (strstr(cases[i].json, "ud977"))
			continue;
		struct json_object *o = json_tokener_parse(cases[i].json);
		assert_non_null(o);
		assert_int_equal((size_t)json_object_get_string_len(o), cases[i].wn);
		assert_memory_equal(json_object_get_string(o), cases[i].want, cases[i].wn);
		json_object_put(o);
	}
	/* Comparison before any decoding (jv_str_eq walks the escapes). */
	assert_int_equal(parse_exact(&v, S("\"\\u0041\\/\\ud83d\\ude00\""), err, sizeof(err)), 0);
	assert_true(jv_str_eq(&v, 0, S("A/\xf0\x9f\x98\x80")));
	assert_false(jv_str_eq(&v, 0, S("A/\xf0\x9f\x98\x81")));
	assert_false(jv_str_eq(&v, 0, S("B/\xf0\x9f\x98\x80")));
	assert_false(jv_str_eq(&v, 0, S("A/")));
	jv_free(&v);
}

/* The scan takes printable ASCII sixteen bytes at a time: a quote, an
 * escape, a control byte or a multi-byte character at any offset of a
 * long string is seen where it is. */
static void test_scan_offsets(void **state)
{
	(void)state;
	static const struct {
		const char *ins;
		size_t n;
		int valid;
		const char *dec;
		size_t dn;
	} kinds[] = {
		{S("\\\""), 1, S("\"")},
		{S("\\n"), 1, S("\n")},
		{S("\\u00e9"), 1, S("\xc3\xa9")},
		{S("\xc3\xa9"), 1, S("\xc3\xa9")},
		{S("\xf0\x9f\x98\x80"), 1, S("\xf0\x9f\x98\x80")},
		{S("\x01"), 0, NULL, 0},
		{S("\x7f"), 1, S("\x7f")}, /* DEL is allowed raw */
		{S("\xff"), 0, NULL, 0},
		{S("\xe2\x82"), 0, NULL, 0},
	};
	struct jv v = {0};
	char err[128], buf[128], want[128];
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (size_t pre = 0; pre < 40; pre++) {
			size_t o = 0, w = 0;
			buf[o++] = '"';
			for (size_t i = 0; i < pre; i++)
				buf[o++] = want[w++] = (char)('a' + i % 26);
			memcpy(buf + o, kinds[k].ins, kinds[k].n);
			o += kinds[k].n;
			if (kinds[k].valid) {
				memcpy(want + w, kinds[k].dec, kinds[k].dn);
				w += kinds[k].dn;
			}
			for (size_t i = 0; i < 37; i++)
				buf[o++] = want[w++] = 'Z';
			buf[o++] = '"';
			int r = parse_exact(&v, buf, o, err, sizeof(err));
			if (!kinds[k].valid) {
				char at[32];
				snprintf(at, sizeof(at), "at byte %zu", pre + 1);
				if (r != -EINVAL || !strstr(err, at))
					fail_msg("kind %zu pre %zu: %d '%s', want an error %s", k, pre, r, err, at);
				continue;
			}
			if (r != 0)
				fail_msg("kind %zu pre %zu: %s", k, pre, err);
			const char *p;
			size_t n;
			assert_int_equal(jv_str(&v, 0, &p, &n), 0);
			assert_int_equal(n, w);
			assert_memory_equal(p, want, w);
		}
	}
	/* A closing quote at every offset ends the string there. */
	for (size_t pre = 0; pre < 40; pre++) {
		size_t o = 0;
		buf[o++] = '[';
		buf[o++] = '"';
		memset(buf + o, 'q', pre);
		o += pre;
		memcpy(buf + o, "\",1]", 4);
		o += 4;
		assert_int_equal(parse_exact(&v, buf, o, err, sizeof(err)), 0);
		assert_int_equal(v.count, 3);
		assert_int_equal(v.nodes[1].len, pre);
		assert_int_equal(jv_type(&v, 2), JV_NUMBER);
	}
	jv_free(&v);
}

static void test_lookup_and_iteration(void **state)
{
	(void)state;
	static const char doc[] = "{\"a\":1,\"b\":{\"x\":[10,20,{\"y\":null}],\"z\":\"s\"},\"a\":2,"
				  "\"c\\u0064\":\"escaped name\",\"e\":[],\"f\":{},\"g\":true}";
	struct jv v = {0};
	char err[128];
	assert_int_equal(parse_exact(&v, doc, sizeof(doc) - 1, err, sizeof(err)), 0);
	assert_int_equal(v.nodes[0].n, 7);
	/* The last of a duplicated name, as json-c and Go take it. */
	uint32_t a = jv_get(&v, 0, "a");
	size_t n;
	const char *raw = jv_raw(&v, a, &n);
	assert_int_equal(n, 1);
	assert_int_equal(raw[0], '2');
	assert_true(v.nodes[a].flags & JV_F_INTEGER);
	/* An escaped member name is found by its decoded bytes. */
	uint32_t cd = jv_get(&v, 0, "cd");
	assert_int_not_equal(cd, JV_NONE);
	assert_true(jv_str_eq(&v, cd, S("escaped name")));
	assert_int_equal(jv_get(&v, 0, "c\\u0064"), JV_NONE);
	assert_int_equal(jv_get(&v, 0, "nope"), JV_NONE);
	assert_int_equal(jv_get(&v, JV_NONE, "a"), JV_NONE);
	uint32_t b = jv_get(&v, 0, "b");
	assert_int_equal(jv_type(&v, b), JV_OBJECT);
	assert_int_equal(jv_get(&v, a, "x"), JV_NONE); /* not an object */
	uint32_t x = jv_get(&v, b, "x");
	assert_int_equal(v.nodes[x].n, 3);
	/* Elements in order, subtrees skipped whole. */
	uint32_t e = jv_first(&v, x);
	assert_int_equal(jv_raw(&v, e, &n)[0], '1');
	e = jv_next(&v, x, e);
	assert_int_equal(jv_raw(&v, e, &n)[0], '2');
	e = jv_next(&v, x, e);
	assert_int_equal(jv_type(&v, e), JV_OBJECT);
	assert_int_equal(jv_type(&v, jv_get(&v, e, "y")), JV_NULL);
	assert_int_equal(jv_next(&v, x, e), JV_NONE);
	/* Members in order: names, with the value one node after. */
	const char *names[] = {"a", "b", "a", "cd", "e", "f", "g"};
	size_t k = 0;
	for (uint32_t m = jv_first(&v, 0); m != JV_NONE; m = jv_next(&v, 0, m), k++)
		assert_true(jv_str_eq(&v, m, names[k], strlen(names[k])));
	assert_int_equal(k, 7);
	assert_int_equal(jv_first(&v, jv_get(&v, 0, "e")), JV_NONE);
	assert_int_equal(jv_first(&v, jv_get(&v, 0, "f")), JV_NONE);
	assert_int_equal(jv_first(&v, a), JV_NONE);
	uint32_t g = jv_get(&v, 0, "g");
	assert_int_equal(jv_type(&v, g), JV_BOOL);
	assert_true(v.nodes[g].flags & JV_F_TRUE);
	/* Numbers keep their text; only plain integers are flagged. */
	assert_int_equal(parse_exact(&v, S("[1.0,1e3,-7,12345678901234567890123]"), err, sizeof(err)), 0);
	assert_false(v.nodes[1].flags & JV_F_INTEGER);
	assert_false(v.nodes[2].flags & JV_F_INTEGER);
	assert_true(v.nodes[3].flags & JV_F_INTEGER);
	assert_true(v.nodes[4].flags & JV_F_INTEGER);
	assert_int_equal(v.nodes[4].len, 23);
	jv_free(&v);
	jv_free(NULL);
}

static void test_limits(void **state)
{
	(void)state;
	char err[128];
	char buf[512];
	/* Depth: max_depth levels parse, one more does not. */
	struct jv v = {.max_depth = 8};
	memset(buf, '[', 8);
	memset(buf + 8, ']', 8);
	assert_int_equal(parse_exact(&v, buf, 16, err, sizeof(err)), 0);
	memset(buf, '[', 9);
	memset(buf + 9, ']', 9);
	assert_int_equal(parse_exact(&v, buf, 18, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested deeper than 8 levels at byte 8"));
	/* The default (and the ceiling) is JV_MAX_DEPTH. */
	v.max_depth = 0;
	size_t d = JV_MAX_DEPTH;
	memset(buf, '[', d);
	memset(buf + d, ']', d);
	assert_int_equal(parse_exact(&v, buf, 2 * d, err, sizeof(err)), 0);
	d++;
	memset(buf, '[', d);
	memset(buf + d, ']', d);
	assert_int_equal(parse_exact(&v, buf, 2 * d, err, sizeof(err)), -EINVAL);
	/* Objects count too. */
	size_t o = 0;
	for (int i = 0; i < JV_MAX_DEPTH + 1; i++) {
		memcpy(buf + o, "{\"a\":", 5);
		o += 5;
	}
	buf[o++] = '1';
	memset(buf + o, '}', JV_MAX_DEPTH + 1);
	o += JV_MAX_DEPTH + 1;
	assert_int_equal(parse_exact(&v, buf, o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested deeper"));
	jv_free(&v);

	/* Nodes: names count; the cap is exact, past it -E2BIG. */
	struct jv c = {.max_nodes = 5};
	assert_int_equal(parse_exact(&c, S("{\"a\":1,\"b\":2}"), err, sizeof(err)), 0);
	assert_int_equal(c.count, 5);
	assert_int_equal(parse_exact(&c, S("{\"a\":1,\"b\":2,\"c\":3}"), err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "more than 5"));
	assert_int_equal(parse_exact(&c, S("[1,2,3,4]"), err, sizeof(err)), 0);
	assert_int_equal(parse_exact(&c, S("[1,2,3,4,5]"), err, sizeof(err)), -E2BIG);
	jv_free(&c);

	/* Growth past the first allocation keeps every node. */
	struct jv g = {0};
	size_t cnt = 5000, cap = 2 * cnt + 2;
	char *big = malloc(cap);
	o = 0;
	big[o++] = '[';
	for (size_t i = 0; i < cnt; i++) {
		big[o++] = (char)('0' + i % 10);
		big[o++] = ',';
	}
	big[o - 1] = ']';
	assert_int_equal(parse_exact(&g, big, o, err, sizeof(err)), 0);
	assert_int_equal(g.count, cnt + 1);
	assert_int_equal(g.nodes[0].n, cnt);
	size_t i = 0;
	for (uint32_t e = jv_first(&g, 0); e != JV_NONE; e = jv_next(&g, 0, e), i++)
		assert_int_equal(jv_raw(&g, e, &o)[0], '0' + (char)(i % 10));
	assert_int_equal(i, cnt);
	free(big);
	jv_free(&g);
}

/* JV_BORROW: the caller's array serves while the text fits it (no heap),
 * a bigger text moves every node to the heap intact, jv_free leaves the
 * caller's array alone (ASan would see a bad free), max_nodes still holds. */
static void test_borrowed_nodes(void **state)
{
	(void)state;
	char err[128];
	struct jv_node first[4];
	struct jv v = {JV_BORROW(first)};
	assert_int_equal(v.cap, 4);
	assert_int_equal(parse_exact(&v, S("{\"a\":[1]}"), err, sizeof(err)), 0);
	assert_ptr_equal(v.nodes, first);
	assert_int_equal(v.count, 4);
	assert_int_equal(jv_type(&v, jv_get(&v, 0, "a")), JV_ARRAY);
	/* Five nodes: the fifth moves them all to the heap. */
	assert_int_equal(parse_exact(&v, S("{\"a\":[1,\"x\"]}"), err, sizeof(err)), 0);
	assert_ptr_not_equal(v.nodes, first);
	assert_int_equal(v.count, 5);
	uint32_t a = jv_get(&v, 0, "a");
	assert_int_equal(v.nodes[a].n, 2);
	const char *p;
	size_t n;
	assert_int_equal(jv_str(&v, jv_next(&v, a, jv_first(&v, a)), &p, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0], 'x');
	jv_free(&v);

	/* Freed while still borrowed: nothing freed. */
	struct jv w = {JV_BORROW(first)};
	assert_int_equal(parse_exact(&w, S("[true]"), err, sizeof(err)), 0);
	assert_ptr_equal(w.nodes, first);
	jv_free(&w);
	assert_null(w.nodes);

	/* A max_nodes below the array's size is the cap. */
	struct jv c = {.max_nodes = 2, JV_BORROW(first)};
	assert_int_equal(parse_exact(&c, S("[1]"), err, sizeof(err)), 0);
	assert_int_equal(parse_exact(&c, S("[1,2]"), err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "more than 2"));
	jv_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_table),
		cmocka_unit_test(test_invalid_table),
		cmocka_unit_test(test_truncated_prefixes),
		cmocka_unit_test(test_string_decoding),
		cmocka_unit_test(test_scan_offsets),
		cmocka_unit_test(test_lookup_and_iteration),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_borrowed_nodes),
	};
	return cmocka_run_group_tests_name("core jview", tests, NULL, NULL);
}
