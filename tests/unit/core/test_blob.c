/* blob: copies of the bytes with a NUL after them, reference counting
 * (the last unref frees, ASan's leak check holds the count), and the
 * digest behind ETags: deterministic, never 0, sensitive to every byte
 * and to the length. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "blob.h"

static void test_new_copies(void **state)
{
	(void)state;
	char src[] = "hello";
	struct blob *b = blob_new(src, 5);
	assert_non_null(b);
	assert_int_equal(b->refs, 1);
	assert_int_equal(b->len, 5);
	assert_int_equal(b->tag, 0);
	src[0] = 'J'; /* a copy: the blob does not see it */
	assert_memory_equal(b->data, "hello", 5);
	assert_int_equal(b->data[5], '\0');
	blob_unref(b);

	/* Empty, even from NULL: a valid, NUL-terminated blob. */
	b = blob_new(NULL, 0);
	assert_non_null(b);
	assert_int_equal(b->len, 0);
	assert_int_equal(b->data[0], '\0');
	blob_unref(b);

	/* Binary bytes with NULs inside are kept whole. */
	const char bin[] = {'a', 0, 'b', 0, (char)0xff};
	b = blob_new(bin, sizeof(bin));
	assert_int_equal(b->len, sizeof(bin));
	assert_memory_equal(b->data, bin, sizeof(bin));
	blob_unref(b);
}

static void test_refcount(void **state)
{
	(void)state;
	struct blob *b = blob_new("x", 1);
	assert_ptr_equal(blob_ref(b), b);
	assert_ptr_equal(blob_ref(b), b);
	assert_int_equal(b->refs, 3);
	blob_unref(b);
	blob_unref(b);
	assert_int_equal(b->refs, 1);
	assert_memory_equal(b->data, "x", 2); /* still alive */
	blob_unref(b); /* freed: ASan reports a leak otherwise */
	assert_null(blob_ref(NULL));
	blob_unref(NULL);
}

static void test_hash(void **state)
{
	(void)state;
	assert_true(blob_hash("abc", 3) == blob_hash("abc", 3));
	assert_true(blob_hash("abc", 3) != blob_hash("abd", 3));
	assert_true(blob_hash("abc", 3) != blob_hash("acb", 3));
	/* The length is part of it: a trailing NUL changes the digest. */
	assert_true(blob_hash("abc", 3) != blob_hash("abc", 4));
	assert_true(blob_hash("", 0) != 0);
	assert_true(blob_hash("", 0) != blob_hash("\0", 1));
	/* One flipped bit anywhere in 64 bytes changes it, and the 256
	 * one-byte inputs all differ and none is 0. */
	unsigned char buf[64];
	memset(buf, 0x5a, sizeof(buf));
	uint64_t base = blob_hash(buf, sizeof(buf));
	for (size_t i = 0; i < sizeof(buf) * 8; i++) {
		buf[i / 8] ^= (unsigned char)(1u << (i % 8));
		if (blob_hash(buf, sizeof(buf)) == base)
			fail_msg("bit %zu flipped, same digest", i);
		buf[i / 8] ^= (unsigned char)(1u << (i % 8));
	}
	uint64_t one[256];
	for (unsigned c = 0; c < 256; c++) {
		unsigned char ch = (unsigned char)c;
		one[c] = blob_hash(&ch, 1);
		assert_true(one[c] != 0);
		for (unsigned k = 0; k < c; k++)
			if (one[k] == one[c])
				fail_msg("bytes %u and %u: same digest", k, c);
	}
}

/* The digest is the ETag a guest keeps between requests and across an
 * upgrade of the sidecar: the same bytes must give the same value in every
 * build.  Values from the documented algorithm (FNV-1a 64, the length
 * times 0x9e3779b97f4a7c15 folded in, splitmix64's finaliser), computed
 * apart from this code. */
static void test_hash_pinned(void **state)
{
	(void)state;
	assert_true(blob_hash("", 0) == 0xf52a15e9a9b5e89bu);
	assert_true(blob_hash("abc", 3) == 0x2c2104b7ed2e2f86u);
	assert_true(blob_hash("ami-0123456789abcdef0", 21) == 0x829a3252d4a7d73du);
}

static void test_tag_cached(void **state)
{
	(void)state;
	struct blob *b = blob_new("payload", 7);
	uint64_t t = blob_tag(b);
	assert_true(t == blob_hash("payload", 7));
	assert_true(b->tag == t);
	/* Computed once: the stored tag is what is answered afterwards. */
	b->tag = 42;
	assert_true(blob_tag(b) == 42);
	blob_unref(b);
	b = blob_new(NULL, 0);
	assert_true(blob_tag(b) == blob_hash("", 0));
	assert_true(blob_tag(b) != 0);
	blob_unref(b);
}

/* The entity-tag text: the tag in 16 lowercase hex digits between quotes,
 * as printf would write it; a blob's is made once and kept. */
static void test_etag_text(void **state)
{
	(void)state;
	const uint64_t tags[] = {0, 1, 0xf, 0x10, 0xabcdef0123456789ull, UINT64_MAX};
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		char got[19], want[32];
		blob_tag_text(tags[i], got);
		snprintf(want, sizeof(want), "\"%016llx\"", (unsigned long long)tags[i]);
		assert_string_equal(got, want);
	}
	struct blob *a = blob_new("abc", 3), *b = blob_new("abd", 3);
	assert_non_null(a);
	assert_non_null(b);
	char want[19];
	blob_tag_text(blob_hash("abc", 3), want);
	const char *t = blob_etag(a);
	assert_string_equal(t, want);
	assert_ptr_equal(blob_etag(a), t); /* kept */
	assert_int_equal(strlen(t), 18);
	assert_string_not_equal(blob_etag(b), t);
	blob_unref(a);
	blob_unref(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_copies),
		cmocka_unit_test(test_refcount),
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_hash_pinned),
		cmocka_unit_test(test_tag_cached),
		cmocka_unit_test(test_etag_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
