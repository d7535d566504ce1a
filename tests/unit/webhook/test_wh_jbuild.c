/* json-c values built in one expression (src/webhook/jbuild.h): the tree
 * a builder returns, and NULL, with every reference it was given released,
 * when any part failed (the ASan build's leak check holds the release). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <json-c/json.h>

#include "jbuild.h"

static const char *text(struct json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* A nested tree in one expression, members in the order given. */
static void test_tree(void **state)
{
	(void)state;
	struct json_object *o =
		jb_obj("name", jb_str("imds-server"), "args",
		       jb_arr(2, jb_str("--a"), jb_strn((struct str){"--bx", 3})), "env",
		       jb_arr(1, jb_obj("name", jb_str("K"), "value", jb_str("v/1"), JB_END)), "empty",
		       jb_arr(0), "obj", jb_obj(JB_END), JB_END);
	assert_non_null(o);
	assert_string_equal(text(o), "{\"name\":\"imds-server\",\"args\":[\"--a\",\"--b\"],"
				     "\"env\":[{\"name\":\"K\",\"value\":\"v/1\"}],\"empty\":[],\"obj\":{}}");
	/* jb_set and jb_push extend what they are given and return it. */
	assert_ptr_equal(jb_set(o, "more", jb_str("x")), o);
	struct json_object *args = json_object_object_get(o, "args");
	assert_ptr_equal(jb_push(args, jb_str("--c")), args);
	assert_int_equal(json_object_array_length(args), 3);
	/* A later jb_set of the same key replaces the value. */
	assert_ptr_equal(jb_set(o, "name", jb_str("other")), o);
	assert_string_equal(json_object_get_string(json_object_object_get(o, "name")), "other");
	json_object_put(o);
}

/* jb_strn takes exactly n bytes: a NUL inside stays, bytes after n do not. */
static void test_strn(void **state)
{
	(void)state;
	struct json_object *s = jb_strn((struct str){"a\0bc", 3});
	assert_non_null(s);
	assert_int_equal(json_object_get_string_len(s), 3);
	assert_memory_equal(json_object_get_string(s), "a\0b", 3);
	json_object_put(s);
	s = jb_strn((struct str){"", 0});
	assert_non_null(s);
	assert_string_equal(json_object_get_string(s), "");
	json_object_put(s);
}

/* A NULL anywhere (a failed constructor) makes the whole expression NULL;
 * the siblings built before and after it are released, not leaked. */
static void test_null_propagates(void **state)
{
	(void)state;
	assert_null(jb_obj("a", jb_str("x"), "b", NULL, "c", jb_str("y"), JB_END));
	assert_null(jb_arr(3, jb_str("x"), NULL, jb_str("y")));
	assert_null(jb_obj("outer", jb_arr(2, jb_str("x"), NULL), "after", jb_obj("k", jb_str("v"), JB_END), JB_END));
	assert_null(jb_set(NULL, "k", jb_str("v")));
	assert_null(jb_push(NULL, jb_str("v")));
	struct json_object *o = jb_obj("k", jb_str("v"), JB_END);
	assert_null(jb_set(o, "k2", NULL)); /* o is released too */
	struct json_object *a = jb_arr(1, jb_str("v"));
	assert_null(jb_push(a, NULL)); /* a is released too */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_strn),
		cmocka_unit_test(test_null_propagates),
	};
	return cmocka_run_group_tests_name("webhook jbuild", tests, NULL, NULL);
}
