/* cikeys: the accessCredentials' SSH keys as KubeVirt puts them on its
 * cloud-init disk (cikeys.c; pkg/cloud-init/cloud-init.go:162-212): which
 * entries are keys (not "..*", not folders, not empty; a "." name is one),
 * their order (byte order in a folder, folders in spec order), the bytes
 * kept verbatim (a NUL inside too), the bounds (64 KiB an entry,
 * CIKEYS_MAX in all, CIKEYS_DIRS folders), and cikeys_refresh: 0 when
 * nothing changed, 1 after a folder's edit, its removal or its arrival.
 * Then the keys through the instance model, moved from test_cloudinit.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cikeys.h"
#include "instance.h"
#include "fixture.h"

static char root[256];

static void put(const char *rel, const char *data)
{
	fx_put_at(root, rel, data);
}

static void mk(const char *rel)
{
	fx_mkdir_at(root, rel);
}

static void ln(const char *target, const char *rel)
{
	fx_symlink_at(root, target, rel);
}

static const char *at(const char *rel)
{
	static char p[2][600];
	static int k;
	char *o = p[k++ & 1];
	snprintf(o, sizeof(p[0]), "%s/%s", root, rel);
	return o;
}

static int setup(void **state)
{
	(void)state;
	fx_mkdtemp(root, sizeof(root), "imds-cikeys");
	mk("ssh");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_rm_tree(root);
	return 0;
}

static void test_none(void **state)
{
	(void)state;
	struct cikeys s;
	assert_int_equal(cikeys_open(&s, NULL, 3), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(cikeys_refresh(&s), 0);
	cikeys_close(&s);
	assert_int_equal(cikeys_open(&s, root, 0), 0);
	assert_null(s.root);
	assert_int_equal(cikeys_refresh(&s), 0);
	cikeys_close(&s);
	/* Folders that are not there (yet): no key, no failure. */
	assert_int_equal(cikeys_open(&s, root, 2), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(cikeys_refresh(&s), 0);
	cikeys_close(&s);
	/* More folders than the webhook mounts: the first CIKEYS_DIRS. */
	assert_int_equal(cikeys_open(&s, root, CIKEYS_DIRS + 5), 0);
	assert_int_equal(s.ndirs, CIKEYS_DIRS);
	cikeys_close(&s);
}

static void test_which_entries(void **state)
{
	(void)state;
	mk("ssh/0");
	put("ssh/0/b", "ssh-ed25519 B");
	put("ssh/0/a", "ssh-rsa A\n");
	put("ssh/0/B", "ssh-ed25519 upper");  /* byte order: before "a" */
	put("ssh/0/.dot", "ssh-ed25519 dot"); /* one dot: a key's name */
	put("ssh/0/..hidden", "ssh-ed25519 kubelet's");
	put("ssh/0/empty", "");
	mk("ssh/0/sub");
	put("ssh/0/sub/x", "ssh-ed25519 in a folder");
	ln("sub", "ssh/0/linkdir"); /* a folder through a link: skipped */
	ln("a", "ssh/0/linkfile");  /* a key through a link: read */
	ln("nowhere", "ssh/0/dangling");
	static const char nul[] = "ssh-ed25519 N\0tail";
	fx_put_file(at("ssh/0/nul"), nul, sizeof(nul) - 1);
	struct cikeys s;
	assert_int_equal(cikeys_open(&s, root, 1), 0);
	static const struct {
		const char *v;
		size_t n;
	} want[] = {
		{"ssh-ed25519 dot", 15}, {"ssh-ed25519 upper", 17}, {"ssh-rsa A\n", 10},
		{"ssh-ed25519 B", 13},	 {"ssh-rsa A\n", 10},	    {"ssh-ed25519 N\0tail", 18},
	};
	assert_int_equal(s.n, 6);
	for (unsigned i = 0; i < 6; i++) {
		if (s.k[i].n != want[i].n || memcmp(s.k[i].v, want[i].v, want[i].n) != 0 ||
		    s.k[i].v[s.k[i].n] != '\0')
			fail_msg("key %u: %zu '%s', want '%s'", i, s.k[i].n, s.k[i].v, want[i].v);
	}
	cikeys_close(&s);
	assert_int_equal(s.n, 0);
	assert_null(s.root);
}

static void test_entry_bound(void **state)
{
	(void)state;
	mk("ssh/0");
	static char big[CIKEYS_ENTRY_MAX + 1];
	memset(big, 'k', sizeof(big));
	fx_put_file(at("ssh/0/a-max"), big, CIKEYS_ENTRY_MAX);
	fx_put_file(at("ssh/0/b-over"), big, CIKEYS_ENTRY_MAX + 1);
	put("ssh/0/c-small", "ssh-ed25519 C");
	struct cikeys s;
	assert_int_equal(cikeys_open(&s, root, 1), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.k[0].n, CIKEYS_ENTRY_MAX);
	assert_string_equal(s.k[1].v, "ssh-ed25519 C");
	cikeys_close(&s);
}

/* CIKEYS_MAX in all, counted across folders in their order. */
static void test_count_bound(void **state)
{
	(void)state;
	mk("ssh/0");
	mk("ssh/1");
	char rel[64];
	for (int i = 0; i < 200; i++) {
		snprintf(rel, sizeof(rel), "ssh/0/k%03d", i);
		put(rel, "ssh-ed25519 zero");
		snprintf(rel, sizeof(rel), "ssh/1/k%03d", 199 - i);
		put(rel, rel + 6);
	}
	struct cikeys s;
	assert_int_equal(cikeys_open(&s, root, 2), 0);
	assert_int_equal(s.n, CIKEYS_MAX);
	for (unsigned i = 0; i < 200; i++)
		assert_string_equal(s.k[i].v, "ssh-ed25519 zero");
	/* Folder 1's first ones in byte order, the rest left out. */
	for (unsigned i = 200; i < CIKEYS_MAX; i++) {
		snprintf(rel, sizeof(rel), "k%03u", i - 200);
		assert_string_equal(s.k[i].v, rel);
	}
	cikeys_close(&s);
}

static void test_refresh(void **state)
{
	(void)state;
	mk("ssh/0");
	put("ssh/0/a", "ssh-ed25519 A");
	struct cikeys s;
	assert_int_equal(cikeys_open(&s, root, 2), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(cikeys_refresh(&s), 0);
	assert_int_equal(cikeys_refresh(&s), 0);
	/* A folder without ..data: its own change (a new entry) is seen. */
	put("ssh/0/b", "ssh-ed25519 B");
	struct timespec ts[2] = {{.tv_sec = 1000, .tv_nsec = 0}, {.tv_sec = 1000, .tv_nsec = 0}};
	assert_int_equal(utimensat(AT_FDCWD, at("ssh/0"), ts, 0), 0); /* whatever the clock */
	assert_int_equal(cikeys_refresh(&s), 1);
	assert_int_equal(s.n, 2);
	assert_int_equal(cikeys_refresh(&s), 0);
	/* The second Secret's folder arrives. */
	mk("ssh/1");
	put("ssh/1/c", "ssh-ed25519 C");
	assert_int_equal(cikeys_refresh(&s), 1);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.k[2].v, "ssh-ed25519 C");
	/* And goes: its key with it. */
	fx_rm_tree(at("ssh/1"));
	assert_int_equal(cikeys_refresh(&s), 1);
	assert_int_equal(s.n, 2);
	assert_int_equal(cikeys_refresh(&s), 0);
	cikeys_close(&s);
}

static struct imds_config config(const char *ci)
{
	return fx_ci_config(root, ci);
}

/* Through the instance model: key-name order, verbatim, empty skipped,
 * numbered on across Secrets; kubelet's ..data swap is seen and moves the
 * meta-data's generation. */
static void test_keys_through_instance(void **state)
{
	(void)state;
	char err[256];
	struct instance in;
	mk("ssh/0");
	mk("ssh/0/..2026_01");
	put("ssh/0/..2026_01/b-laptop", "ssh-ed25519 B bob\n");
	put("ssh/0/..2026_01/a-desktop", "ssh-rsa A alice");
	put("ssh/0/..2026_01/empty", "");
	ln("..2026_01", "ssh/0/..data");
	ln("..data/b-laptop", "ssh/0/b-laptop");
	ln("..data/a-desktop", "ssh/0/a-desktop");
	ln("..data/empty", "ssh/0/empty");
	mk("ssh/1");
	put("ssh/1/key", "ssh-ed25519 O ops");
	struct imds_config c = config("{\"source\":\"noCloud\",\"userData\":\"eA==\",\"sshSecrets\":\"a,b\"}");
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	struct inst_meta m = inst_meta(&in);
	assert_int_equal(m.cikeys->n, 3);
	assert_string_equal(m.cikeys->k[0].v, "ssh-rsa A alice");
	assert_string_equal(m.cikeys->k[1].v, "ssh-ed25519 B bob\n");
	assert_string_equal(m.cikeys->k[2].v, "ssh-ed25519 O ops");
	uint64_t gen = m.gen;
	assert_int_equal(inst_meta(&in).gen, gen); /* unchanged: not re-read */

	/* kubelet's swap: a new folder, ..data re-pointed. */
	mk("ssh/0/..2026_02");
	put("ssh/0/..2026_02/b-laptop", "ssh-ed25519 C carol");
	ln("..2026_02", "ssh/0/..data.tmp");
	char a[512], b[512];
	snprintf(a, sizeof(a), "%s/ssh/0/..data.tmp", root);
	snprintf(b, sizeof(b), "%s/ssh/0/..data", root);
	assert_int_equal(rename(a, b), 0);
	m = inst_meta(&in);
	assert_true(m.gen != gen);
	assert_int_equal(m.cikeys->n, 2); /* a-desktop and empty now dangle */
	assert_string_equal(m.cikeys->k[0].v, "ssh-ed25519 C carol");
	assert_string_equal(m.cikeys->k[1].v, "ssh-ed25519 O ops");
	inst_close(&in);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_none),
		T(test_which_entries),
		T(test_entry_bound),
		T(test_count_bound),
		T(test_refresh),
		T(test_keys_through_instance),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
