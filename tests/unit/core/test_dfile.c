/* dfile: a served file read whole (bounded by max, also when stat's size
 * lies), its candidates "a:b" (the first that exists), the update seen by
 * a changed stat (kubelet's rename, an in-place rewrite), the previous
 * bytes kept through a failed re-read, and messages naming the setting. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dfile.h"

static char dir[256];

static const char *at(const char *name)
{
	static char buf[4][512];
	static int k;
	char *p = buf[k++ & 3];
	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

/* A new inode renamed over path, as kubelet's atomic writer does. */
static void put(const char *name, const char *s)
{
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s.tmp", at(name));
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	close(fd);
	assert_int_equal(rename(tmp, at(name)), 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	(void)state;
	const char *base = getenv("IMDS_TEST_TMPDIR");
	snprintf(dir, sizeof(dir), "%s/dfile-XXXXXX", base && *base ? base : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_read_whole_and_bounded(void **state)
{
	(void)state;
	struct blob *b = NULL;
	put("f", "0123456789");
	assert_int_equal(dfile_read(at("f"), 10, &b), 0);
	assert_int_equal(b->len, 10);
	assert_memory_equal(b->data, "0123456789", 11);
	blob_unref(b);
	b = NULL;
	assert_int_equal(dfile_read(at("f"), 9, &b), -EFBIG);
	assert_null(b);
	assert_int_equal(dfile_read(at("f"), 0, &b), -EFBIG);

	put("empty", "");
	assert_int_equal(dfile_read(at("empty"), 0, &b), 0);
	assert_int_equal(b->len, 0);
	blob_unref(b);

	assert_int_equal(dfile_read(at("missing"), 100, &b), -ENOENT);
	assert_int_equal(dfile_read(dir, 100, &b), -EINVAL); /* a directory */
}

/* /proc files say size 0 and have bytes: read on past the stat's size,
 * and still stop at max. */
static void test_read_past_stat_size(void **state)
{
	(void)state;
	struct stat st;
	assert_int_equal(stat("/proc/self/status", &st), 0);
	assert_int_equal(st.st_size, 0);
	struct blob *b = NULL;
	assert_int_equal(dfile_read("/proc/self/status", 1 << 20, &b), 0);
	assert_true(b->len > 100);
	assert_memory_equal(b->data, "Name:", 5);
	blob_unref(b);
	assert_int_equal(dfile_read("/proc/self/status", 50, &b), -EFBIG);
}

static void test_open_messages(void **state)
{
	(void)state;
	struct dfile f;
	char err[256] = "";
	/* No setting: nothing served, not an error. */
	assert_int_equal(dfile_open(&f, "IMDS_X", NULL, err, sizeof(err)), 0);
	assert_null(dfile_get(&f));
	dfile_close(&f);

	assert_int_equal(dfile_open(&f, "IMDS_X", ":", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "IMDS_X: empty path list");
	dfile_close(&f);

	assert_int_equal(dfile_open(&f, "IMDS_X", "a:b:c:d:e", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "IMDS_X: at most 4 paths");
	dfile_close(&f);

	char paths[600];
	snprintf(paths, sizeof(paths), "%s:%s", at("no1"), at("no2"));
	assert_int_equal(dfile_open(&f, "IMDS_USER_DATA", paths, err, sizeof(err)), -ENOENT);
	char want[1400];
	snprintf(want, sizeof(want), "IMDS_USER_DATA: cannot read '%s': No such file or directory", paths);
	assert_string_equal(err, want);
	dfile_close(&f);

	assert_int_equal(dfile_open(&f, "IMDS_X", dir, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
	dfile_close(&f);

	/* Past 16 MiB (a sparse file): refused by name. */
	int fd = open(at("big"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)DFILE_MAX + 1), 0);
	close(fd);
	assert_int_equal(dfile_open(&f, "IMDS_X", at("big"), err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, "larger than 16 MiB"));
	dfile_close(&f);
}

static void test_candidates(void **state)
{
	(void)state;
	struct dfile f;
	char err[256];
	char paths[600];
	put("user-data", "second");
	snprintf(paths, sizeof(paths), "%s:%s", at("userdata"), at("user-data"));
	assert_int_equal(dfile_open(&f, "IMDS_X", paths, err, sizeof(err)), 0);
	assert_int_equal(f.ncand, 2);
	assert_string_equal(f.path, at("user-data"));
	struct blob *b = dfile_get(&f);
	assert_memory_equal(b->data, "second", 7);
	/* The first candidate appears: it wins from the next request on. */
	put("userdata", "first");
	b = dfile_get(&f);
	assert_string_equal(f.path, at("userdata"));
	assert_memory_equal(b->data, "first", 6);
	dfile_close(&f);
	assert_null(f.blob);
	assert_null(dfile_get(&f));
}

static void test_reload_on_change(void **state)
{
	(void)state;
	struct dfile f;
	char err[256];
	put("f", "one");
	assert_int_equal(dfile_open(&f, "IMDS_X", at("f"), err, sizeof(err)), 0);
	struct blob *b1 = dfile_get(&f);
	assert_memory_equal(b1->data, "one", 4);
	/* Unchanged: the very same blob, nothing re-read. */
	assert_ptr_equal(dfile_get(&f), b1);
	/* A caller's reference outlives the reload. */
	blob_ref(b1);
	put("f", "two!");
	struct blob *b2 = dfile_get(&f);
	assert_ptr_not_equal(b2, b1);
	assert_memory_equal(b2->data, "two!", 5);
	assert_memory_equal(b1->data, "one", 4);
	blob_unref(b1);

	/* Rewritten in place, same size and inode: the mtime tells. */
	int fd = open(at("f"), O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "TWO?", 4, 0), 4);
	struct timespec ts[2] = {{.tv_sec = 1000000, .tv_nsec = 1}, {.tv_sec = 1000000, .tv_nsec = 1}};
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
	assert_memory_equal(dfile_get(&f)->data, "TWO?", 5);
	dfile_close(&f);
}

static void test_failed_reload_keeps_bytes(void **state)
{
	(void)state;
	struct dfile f;
	char err[256];
	put("f", "kept");
	assert_int_equal(dfile_open(&f, "IMDS_X", at("f"), err, sizeof(err)), 0);
	assert_int_equal(unlink(at("f")), 0);
	struct blob *b = dfile_get(&f);
	assert_non_null(b);
	assert_memory_equal(b->data, "kept", 5);
	assert_int_equal(f.stale, 1);
	assert_memory_equal(dfile_get(&f)->data, "kept", 5); /* still, and logged once */
	/* Replaced by a directory: not a regular file, still the old bytes. */
	assert_int_equal(mkdir(at("f"), 0755), 0);
	assert_memory_equal(dfile_get(&f)->data, "kept", 5);
	assert_int_equal(f.stale, 1);
	assert_int_equal(rmdir(at("f")), 0);
	/* Another size: a reused inode within one clock tick looks unchanged. */
	put("f", "back again");
	assert_memory_equal(dfile_get(&f)->data, "back again", 11);
	assert_int_equal(f.stale, 0);
	dfile_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_whole_and_bounded, setup, teardown),
		cmocka_unit_test(test_read_past_stat_size),
		cmocka_unit_test_setup_teardown(test_open_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_candidates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_on_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_reload_keeps_bytes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
