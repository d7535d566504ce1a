/* The JSON Patch builder (src/webhook/patch.h): RFC 6902 operations in
 * order, values owned by the patch (also on failure), RFC 6901 pointers
 * and the standard padded base64 the API server reads the patch in. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "patch.h"
#include "sbuf.h"

static void test_patch_pointer(void **state)
{
	(void)state;
	char out[64];
	const char *t1[] = {"metadata", "annotations", "imds.kubevirt.io/injected"};
	assert_int_equal(patch_pointer(out, sizeof(out), t1, 3), strlen("/metadata/annotations/imds.kubevirt.io~1injected"));
	assert_string_equal(out, "/metadata/annotations/imds.kubevirt.io~1injected");
	const char *t2[] = {"a~b", "~1", "/", "", "-"};
	assert_true(patch_pointer(out, sizeof(out), t2, 5) > 0);
	assert_string_equal(out, "/a~0b/~01/~1//-"); /* "~" first, so "~1" stays a key */
	assert_int_equal(patch_pointer(out, sizeof(out), t2, 0), 0);
	assert_string_equal(out, "");
	const char *t3[] = {"0123456789012345678901234567890123456789", "0123456789012345678901234567890123456789"};
	assert_int_equal(patch_pointer(out, sizeof(out), t3, 2), -ENOSPC);
	assert_int_equal(patch_pointer(out, 0, t3, 1), -ENOSPC);
	/* Token by token into an sbuf, with embedded bytes kept. */
	struct sbuf b = SBUF_INIT(out, sizeof(out));
	patch_pointer_token(&b, "x/y\0z", 5);
	assert_int_equal(b.len, 7);
	assert_memory_equal(out, "/x~1y\0z", 7);
}

static void test_patch_base64(void **state)
{
	(void)state;
	static const char *const vec[][2] = {
		{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="},
		{"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}, {"\xff\xfe\xfd", "//79"}, {"\xfb\xff", "+/8="},
	};
	char out[64];
	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		size_t n = strlen(vec[i][0]);
		assert_int_equal(patch_base64_len(n), strlen(vec[i][1]));
		patch_base64(vec[i][0], n, out);
		assert_string_equal(out, vec[i][1]);
	}
	/* Every byte value round-trips. */
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	char enc[400];
	patch_base64(all, 256, enc);
	assert_int_equal(strlen(enc), patch_base64_len(256));
	unsigned char dec[300];
	assert_int_equal(sbuf_b64decode(enc, strlen(enc), dec), 256);
	assert_memory_equal(dec, all, 256);
}

static void test_patch_builder(void **state)
{
	(void)state;
	struct patch *p = patch_new();
	assert_non_null(p);
	size_t n;
	assert_string_equal(patch_json(p, &n), "[]");
	assert_int_equal(patch_add(p, "/a~1b", json_object_new_string("x/y\"z")), 0);
	assert_int_equal(patch_replace(p, "/n", json_object_new_int(3)), 0);
	assert_int_equal(patch_add(p, "/o", json_tokener_parse("{\"k\":[true,null]}")), 0);
	assert_int_equal(patch_add(p, "/bad", NULL), -ENOMEM); /* a failed constructor */
	assert_int_equal(patch_count(p), 3);
	const char *s = patch_json(p, &n);
	assert_string_equal(s, "[{\"op\":\"add\",\"path\":\"/a~1b\",\"value\":\"x/y\\\"z\"},"
			       "{\"op\":\"replace\",\"path\":\"/n\",\"value\":3},"
			       "{\"op\":\"add\",\"path\":\"/o\",\"value\":{\"k\":[true,null]}}]");
	assert_int_equal(n, strlen(s));
	patch_free(p);
	patch_free(NULL);
}

/* remove has no value; every op keeps its place, and the text is
 * re-rendered after a change; the text parses back to the operations. */
static void test_patch_remove_and_order(void **state)
{
	(void)state;
	struct patch *p = patch_new();
	assert_non_null(p);
	assert_int_equal(patch_count(p), 0);
	assert_int_equal(patch_remove(p, "/metadata/annotations/imds.kubevirt.io~1user-data"), 0);
	size_t n;
	assert_string_equal(patch_json(p, &n),
			    "[{\"op\":\"remove\",\"path\":\"/metadata/annotations/imds.kubevirt.io~1user-data\"}]");
	for (int i = 0; i < 100; i++) {
		char path[32];
		snprintf(path, sizeof(path), "/spec/containers/%d", i);
		assert_int_equal(i % 2 ? patch_replace(p, path, json_object_new_int(i))
				       : patch_add(p, path, json_object_new_int(i)),
				 0);
	}
	assert_int_equal(patch_count(p), 101);
	const char *s = patch_json(p, &n);
	struct json_object *ops = json_tokener_parse(s);
	assert_non_null(ops);
	assert_int_equal(json_object_array_length(ops), 101);
	for (int i = 0; i < 100; i++) {
		struct json_object *o = json_object_array_get_idx(ops, (size_t)i + 1), *v;
		assert_true(json_object_object_get_ex(o, "op", &v));
		assert_string_equal(json_object_get_string(v), i % 2 ? "replace" : "add");
		assert_true(json_object_object_get_ex(o, "value", &v));
		assert_int_equal(json_object_get_int(v), i);
	}
	json_object_put(ops);
	/* A NULL value fails and leaves the patch as it was. */
	assert_int_equal(patch_replace(p, "/x", NULL), -ENOMEM);
	assert_int_equal(patch_count(p), 101);
	patch_free(p);
}

/* Strings go out as JSON strings: quotes, backslashes, control bytes and
 * NUL escaped, UTF-8 as it is, "/" unescaped. */
static void test_patch_escapes(void **state)
{
	(void)state;
	struct patch *p = patch_new();
	assert_non_null(p);
	assert_int_equal(patch_add(p, "/a", json_object_new_string_len("q\"b\\n\nt\tz\0/\xc3\xa9", 13)), 0);
	size_t n;
	const char *s = patch_json(p, &n);
	assert_string_equal(s, "[{\"op\":\"add\",\"path\":\"/a\",\"value\":\"q\\\"b\\\\n\\nt\\tz\\u0000/\xc3\xa9\"}]");
	assert_int_equal(n, strlen(s));
	patch_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch_pointer),
		cmocka_unit_test(test_patch_base64),
		cmocka_unit_test(test_patch_builder),
		cmocka_unit_test(test_patch_remove_and_order),
		cmocka_unit_test(test_patch_escapes),
	};
	return cmocka_run_group_tests_name("webhook patch", tests, NULL, NULL);
}
