/* One review being answered (src/webhook/review.h): typed member reads
 * whose wrong type names where.key, null read as absent, the sticky first
 * failure, warnings capped with a count of the dropped, values cleaned for
 * messages, the log's reason, and patch operations. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "wh_review.h"

static const char DOC[] = "{\"o\":{\"s\":\"plain\",\"e\":\"a\\u00e9\\n\\\"\",\"n\":3,\"b\":true,\"z\":null,"
			  "\"a\":[1],\"obj\":{},\"dup\":\"first\",\"dup\":\"last\"}}";

/* rv_member: the node when the type matches; absent, null and a JV_NONE
 * object give JV_NONE and no error; any other type is a malformed review
 * naming where.key and the type wanted. */
static void test_member_types(void **state)
{
	(void)state;
	struct rvfx f;
	rvfx_open(&f, NULL, DOC);
	uint32_t o = rvfx_at(&f, "o", NULL);
	assert_int_not_equal(rv_member(&f.a, o, "obj", JV_OBJECT, "x"), JV_NONE);
	assert_int_not_equal(rv_member(&f.a, o, "a", JV_ARRAY, "x"), JV_NONE);
	assert_int_not_equal(rv_member(&f.a, o, "n", JV_NUMBER, "x"), JV_NONE);
	assert_int_not_equal(rv_member(&f.a, o, "b", JV_BOOL, "x"), JV_NONE);
	assert_int_equal(rv_member(&f.a, o, "missing", JV_OBJECT, "x"), JV_NONE);
	assert_int_equal(rv_member(&f.a, o, "z", JV_OBJECT, "x"), JV_NONE); /* Go's nil map */
	assert_int_equal(rv_member(&f.a, JV_NONE, "s", JV_STRING, "x"), JV_NONE);
	rvfx_ok(&f);
	rvfx_close(&f);

	static const struct {
		const char *key;
		enum jv_type t;
		const char *msg;
	} bad[] = {
		{"s", JV_OBJECT, "request.object.o.s: must be an object"},
		{"n", JV_STRING, "request.object.o.n: must be a string"},
		{"b", JV_NUMBER, "request.object.o.b: must be a number"},
		{"a", JV_BOOL, "request.object.o.a: must be a boolean"},
		{"obj", JV_ARRAY, "request.object.o.obj: must be an array"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rvfx_open(&f, NULL, DOC);
		assert_int_equal(rv_member(&f.a, rvfx_at(&f, "o", NULL), bad[i].key, bad[i].t, "request.object.o"),
				 JV_NONE);
		rvfx_failed(&f, RV_BAD, bad[i].msg);
		rvfx_close(&f);
	}
}

/* rv_str: decoded bytes; absent is {NULL, 0} (not ""); a duplicate
 * member reads as its last, as the API server's Go does. */
static void test_str(void **state)
{
	(void)state;
	struct rvfx f;
	rvfx_open(&f, NULL, DOC);
	uint32_t o = rvfx_at(&f, "o", NULL);
	struct str s = rv_str(&f.a, o, "s", "o");
	assert_true(str_is(s, "plain"));
	s = rv_str(&f.a, o, "e", "o");
	assert_int_equal(s.n, 5);
	assert_memory_equal(s.p, "a\xc3\xa9\n\"", 5);
	s = rv_str(&f.a, o, "missing", "o");
	assert_null(s.p);
	assert_int_equal(s.n, 0);
	assert_true(str_is(rv_str(&f.a, o, "dup", "o"), "last"));
	rvfx_ok(&f);
	s = rv_str(&f.a, o, "n", "request.object");
	assert_null(s.p);
	rvfx_failed(&f, RV_BAD, "request.object.n: must be a string");
	rvfx_close(&f);
}

/* The first failure wins: its kind and its message. */
static void test_fail_sticky(void **state)
{
	(void)state;
	struct rvfx f;
	rvfx_open(&f, NULL, "{}");
	rv_fail(&f.a, RV_DENY, "first: %s", "denied");
	rv_fail(&f.a, RV_BAD, "second");
	rv_fail(&f.a, RV_NOMEM, "third");
	assert_int_equal(f.a.err, RV_DENY);
	assert_string_equal(f.a.msg, "first: denied");
	rvfx_close(&f);
	/* A long message is cut, NUL-terminated, within msg. */
	rvfx_open(&f, NULL, "{}");
	char big[1024];
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	rv_fail(&f.a, RV_DENY, "%s", big);
	assert_int_equal(strlen(f.a.msg), sizeof(f.a.msg) - 1);
	rvfx_close(&f);
}

/* Warnings: RV_MAX_WARNINGS kept; past that the last one says how many
 * were not shown (itself included); each cut to RV_WARNING_MAX - 1. */
static void test_warnings(void **state)
{
	(void)state;
	struct rvfx f;
	rvfx_open(&f, NULL, "{}");
	for (int i = 0; i < RV_MAX_WARNINGS; i++)
		rv_warn(&f.a, "w%d", i);
	assert_int_equal(f.a.nwarn, RV_MAX_WARNINGS);
	assert_int_equal(f.a.warn_dropped, 0);
	assert_string_equal(f.a.warn[RV_MAX_WARNINGS - 1], "w15");
	rv_warn(&f.a, "w16");
	rv_warn(&f.a, "w17");
	rv_warn(&f.a, "w18");
	assert_int_equal(f.a.nwarn, RV_MAX_WARNINGS);
	assert_int_equal(f.a.warn_dropped, 3);
	assert_string_equal(f.a.warn[0], "w0");
	assert_string_equal(f.a.warn[RV_MAX_WARNINGS - 2], "w14");
	/* w15 and the three after it */
	assert_string_equal(f.a.warn[RV_MAX_WARNINGS - 1], "imds.kubevirt.io: 4 more warnings not shown");
	rvfx_close(&f);

	rvfx_open(&f, NULL, "{}");
	char big[600];
	memset(big, 'w', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	rv_warn(&f.a, "%s", big);
	assert_int_equal(strlen(f.a.warn[0]), RV_WARNING_MAX - 1);
	/* Warnings do not fail the review. */
	rvfx_ok(&f);
	rvfx_close(&f);
}

/* rv_clean: printable ASCII only, at most 40 bytes then "...", quoted on
 * request; rv_shown always quoted; a small buffer cuts, NUL-terminated. */
static void test_clean(void **state)
{
	(void)state;
	char buf[64];
	assert_string_equal(rv_clean((struct str){"my-secret", 9}, 0, buf, sizeof(buf)), "my-secret");
	assert_string_equal(rv_clean((struct str){"my-secret", 9}, 1, buf, sizeof(buf)), "'my-secret'");
	assert_string_equal(rv_shown((struct str){"a\nb\x7f\xc3\xa9\0", 7}, buf, sizeof(buf)), "'a?b?" "?" "?" "?'");
	assert_string_equal(rv_shown((struct str){"", 0}, buf, sizeof(buf)), "''");
	const char *l41 = "0123456789012345678901234567890123456789X";
	assert_string_equal(rv_clean((struct str){l41, 40}, 0, buf, sizeof(buf)),
			    "0123456789012345678901234567890123456789");
	assert_string_equal(rv_clean((struct str){l41, 41}, 1, buf, sizeof(buf)),
			    "'0123456789012345678901234567890123456789...'");
	char small[8];
	assert_string_equal(rv_clean((struct str){"abcdefghij", 10}, 1, small, sizeof(small)), "'abcdef");
}

/* The log line's reason: "<what>: <text>", cut to fit res->reason. */
static void test_reason(void **state)
{
	(void)state;
	struct rvfx f;
	rvfx_open(&f, NULL, "{}");
	f.a.what = "pod demo/virt-launcher-vm1-";
	rv_reason(&f.a, "patched (%d ops)", 12);
	assert_string_equal(f.res.reason, "pod demo/virt-launcher-vm1-: patched (12 ops)");
	char big[400];
	memset(big, 'r', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	rv_set_reason(&f.res, "%s", big);
	assert_int_equal(strlen(f.res.reason), sizeof(f.res.reason) - 1);
	rvfx_close(&f);
}

/* Patch operations go to the review's patch in order; a NULL value (a
 * failed constructor) is RV_NOMEM, and later operations still apply. */
static void test_patch_ops(void **state)
{
	(void)state;
	struct rvfx f;
	rvfx_open(&f, NULL, "{}");
	assert_int_equal(rv_add(&f.a, "/a", json_object_new_string("x")), 0);
	assert_int_equal(rv_replace(&f.a, "/b", json_object_new_int(1)), 0);
	assert_int_equal(rv_remove(&f.a, "/c"), 0);
	rvfx_ok(&f);
	assert_string_equal(rvfx_patch(&f), "[{\"op\":\"add\",\"path\":\"/a\",\"value\":\"x\"},"
					    "{\"op\":\"replace\",\"path\":\"/b\",\"value\":1},"
					    "{\"op\":\"remove\",\"path\":\"/c\"}]");
	assert_int_equal(rv_add(&f.a, "/d", NULL), -1);
	rvfx_failed(&f, RV_NOMEM, "out of memory");
	assert_int_equal(rv_replace(&f.a, "/e", NULL), -1);
	assert_int_equal(patch_count(f.a.patch), 3);
	rvfx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_member_types),
		cmocka_unit_test(test_str),
		cmocka_unit_test(test_fail_sticky),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_reason),
		cmocka_unit_test(test_patch_ops),
	};
	return cmocka_run_group_tests_name("webhook review", tests, NULL, NULL);
}
