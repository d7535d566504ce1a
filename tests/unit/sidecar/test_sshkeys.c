/* sshkeys: public key lines as a byte table (valid types, base64 whose
 * wire type must match the line's, comments, separators, every prefix of
 * a valid line), then a Secret folder read and re-read through kubelet's
 * ..data swap. */
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

#include "sshkeys.h"

#define ED "AAAAC3NzaC1lZDI1NTE5AAAAIDOVXNOrJOZMHoR3LIYqD5UskjBYmN/wLkEBgV7K/0K0"
#define EC "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBGTx5GT2Vo/tB11gixycV0NymHUBpIcdoBJz+D0XOfEBdWGRvH+Yjw6ErLczG6mlr0ANQ+GZBMsO8J1mt7zQERU="
/* ssh-rsa: e = 65537, n = 1 byte (a real key's n is 257 bytes; the
 * structure is what is checked) */
#define RSA "AAAAB3NzaC1yc2EAAAADAQABAAAAAQE="

struct line_case {
	const char *name;
	const char *in;
	int rc;
	const char *out; /* normalized, for rc 1 */
};

static void test_line_table(void **state)
{
	(void)state;
	static const struct line_case cases[] = {
		{"ed25519 with comment", "ssh-ed25519 " ED " alice@example", 1,
		 "ssh-ed25519 " ED " alice@example"},
		{"no comment", "ssh-ed25519 " ED, 1, "ssh-ed25519 " ED},
		{"ecdsa, padded", "ecdsa-sha2-nistp256 " EC " root@vm", 1,
		 "ecdsa-sha2-nistp256 " EC " root@vm"},
		{"rsa", "ssh-rsa " RSA " bob", 1, "ssh-rsa " RSA " bob"},
		{"CR LF and spaces around", "  ssh-ed25519 " ED " c \r", 1, "ssh-ed25519 " ED " c"},
		{"tabs and runs of spaces", "ssh-ed25519\t\t" ED "   two words", 1,
		 "ssh-ed25519 " ED " two words"},
		{"comment keeps inner spaces", "ssh-ed25519 " ED " a  b", 1, "ssh-ed25519 " ED " a  b"},
		{"UTF-8 comment", "ssh-ed25519 " ED " gr\xc3\xbc\xc3\x9f" "e", 1,
		 "ssh-ed25519 " ED " gr\xc3\xbc\xc3\x9f" "e"},
		{"blank", "", 0, NULL},
		{"spaces only", "  \t\r", 0, NULL},
		{"comment line", "# ssh-ed25519 " ED, 0, NULL},
		{"indented comment", "   # note", 0, NULL},
		{"type of another key", "ssh-rsa " ED " x", -EINVAL, NULL},
		{"unknown type", "ssh-foo " ED, -EINVAL, NULL},
		{"type alone", "ssh-ed25519", -EINVAL, NULL},
		{"type and spaces", "ssh-ed25519   ", -EINVAL, NULL},
		{"options first", "command=\"ls\" ssh-ed25519 " ED, -EINVAL, NULL},
		{"private key header", "-----BEGIN OPENSSH PRIVATE KEY-----", -EINVAL, NULL},
		{"bad base64 char", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI*OVXNOrJOZMHoR3LIYqD5Usk", -EINVAL, NULL},
		{"base64 not a multiple of 4", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5A", -EINVAL, NULL},
		{"base64 cut before the type ends", "ssh-ed25519 AAAAC3NzaC1lZDI1", -EINVAL, NULL},
		{"key cut after the type", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDOV", -EINVAL, NULL},
		{"a byte more than the key", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAAQEA", -EINVAL, NULL},
		{"rsa without its modulus", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQAB", -EINVAL, NULL},
		{"padding inside", "ssh-ed25519 AAAA=3NzaC1lZDI1NTE5AAAAIDOV", -EINVAL, NULL},
		{"control char in comment", "ssh-ed25519 " ED " a\x01" "b", -EINVAL, NULL},
		{"DEL in comment", "ssh-ed25519 " ED " a\x7f", -EINVAL, NULL},
		{"not UTF-8", "ssh-ed25519 " ED " \xff", -EINVAL, NULL},
		{"NUL inside", "ssh-ed25519 " ED " a\0b", -EINVAL, NULL},
	};
	char buf[SSHKEY_LINE_MAX + 1];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct line_case *c = &cases[i];
		size_t n = strlen(c->in);
		if (strcmp(c->name, "NUL inside") == 0)
			n += 2;
		const char *out = NULL;
		size_t on = 0;
		int rc = sshkey_line(c->in, n, buf, sizeof(buf), &out, &on);
		if (rc != c->rc)
			fail_msg("%s: rc %d, want %d", c->name, rc, c->rc);
		if (rc == 1 && (on != strlen(c->out) || memcmp(out, c->out, on) != 0))
			fail_msg("%s: \"%.*s\", want \"%s\"", c->name, (int)on, out, c->out);
	}
}

/* Every proper prefix of a key line: refused while it cuts the type or the
 * key blob (the blob's fields must be whole), the key once the blob is. */
static void test_line_prefixes(void **state)
{
	(void)state;
	static const char line[] = "ssh-ed25519 " ED " alice@example";
	char buf[SSHKEY_LINE_MAX + 1];
	size_t full = sizeof(line) - 1, keyend = strlen("ssh-ed25519 " ED);
	for (size_t n = 0; n < full; n++) {
		const char *out;
		size_t on;
		int rc = sshkey_line(line, n, buf, sizeof(buf), &out, &on);
		int want = n == 0 ? 0 : n >= keyend ? 1 : -EINVAL;
		if (rc != want)
			fail_msg("prefix %zu: rc %d, want %d", n, rc, want);
	}
}

static void test_line_too_long(void **state)
{
	(void)state;
	size_t n = SSHKEY_LINE_MAX + 10;
	char *l = malloc(n + 1), buf[64];
	assert_non_null(l);
	memcpy(l, "ssh-ed25519 " ED " ", strlen("ssh-ed25519 " ED " "));
	memset(l + strlen("ssh-ed25519 " ED " "), 'c', n - strlen("ssh-ed25519 " ED " "));
	const char *out;
	size_t on;
	assert_int_equal(sshkey_line(l, n, buf, sizeof(buf), &out, &on), -EINVAL);
	/* Needs normalizing but does not fit the caller's buffer: refused, not cut. */
	static const char tab[] = "ssh-ed25519\t" ED " comment";
	assert_int_equal(sshkey_line(tab, sizeof(tab) - 1, buf, sizeof(buf), &out, &on), -EINVAL);
	free(l);
}

/* ---- the folder ----------------------------------------------------------------------- */

static char dir[256];

static void put(const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* A shell command built from a format (checked at each call). */
#define SH(...)                                                                               \
	do {                                                                                  \
		char cmd_[1024];                                                              \
		snprintf(cmd_, sizeof(cmd_), __VA_ARGS__);                                    \
		assert_int_equal(system(cmd_), 0);                                            \
	} while (0)

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void test_folder(void **state)
{
	(void)state;
	const char *base = getenv("IMDS_TEST_TMPDIR");
	snprintf(dir, sizeof(dir), "%s/imds-keys-XXXXXX", base && *base ? base : "/tmp");
	assert_non_null(mkdtemp(dir));
	/* kubelet's layout: ..2024/{b,a}, ..data -> ..2024, a -> ..data/a */
	SH("mkdir %s/..2024 && ln -s ..2024 %s/..data", dir, dir);
	SH("cd %s && ln -s ..data/b b && ln -s ..data/a a && ln -s ..data/sub sub", dir);
	put("..2024/b", "ssh-rsa " RSA " bob\n");
	put("..2024/a", "# alice's keys\n\nssh-ed25519 " ED " one\nnot a key\r\n"
			"ecdsa-sha2-nistp256 " EC " two\r\n");
	SH("mkdir %s/..2024/sub", dir);
	put(".hidden", "ssh-ed25519 " ED " hidden\n");

	struct sshkeys k;
	char err[256];
	assert_int_equal(sshkeys_open(&k, dir, err, sizeof(err)), 0);
	assert_int_equal(k.n, 3);
	/* entry name order, then line order; a folder entry is skipped */
	assert_string_equal(k.k[0].entry, "a");
	assert_string_equal(k.k[0].line, "ssh-ed25519 " ED " one");
	assert_int_equal(k.k[0].nth, 1);
	assert_int_equal(k.k[0].of, 2);
	assert_string_equal(k.k[1].entry, "a");
	assert_string_equal(k.k[1].line, "ecdsa-sha2-nistp256 " EC " two");
	assert_int_equal(k.k[1].nth, 2);
	assert_string_equal(k.k[2].entry, "b");
	assert_int_equal(k.k[2].of, 1);
	assert_int_equal(sshkeys_refresh(&k), 0); /* unchanged */

	/* A Secret update: a new timestamped folder, ..data swapped, the old one removed. */
	SH("mkdir %s/..2025 && ln -s ..2025 %s/..data_tmp", dir, dir);
	put("..2025/b", "ssh-ed25519 " ED " new\n");
	SH("mv -T %s/..data_tmp %s/..data", dir, dir);
	SH("rm -rf %s/..2024", dir);
	assert_int_equal(sshkeys_refresh(&k), 1);
	assert_int_equal(k.n, 1);
	assert_string_equal(k.k[0].entry, "b");
	assert_string_equal(k.k[0].line, "ssh-ed25519 " ED " new");

	/* The folder gone: the keys are kept. */
	SH("rm -rf %s/..2025 %s/..data", dir, dir);
	SH("rm -rf %s", dir);
	assert_int_equal(sshkeys_refresh(&k), 0);
	assert_int_equal(k.n, 1);
	sshkeys_close(&k);

	/* A folder that does not exist at start: an error naming the variable. */
	assert_int_equal(sshkeys_open(&k, dir, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "IMDS_SSH_KEYS_DIR"));
	sshkeys_close(&k);
	/* None configured: no keys, nothing read. */
	assert_int_equal(sshkeys_open(&k, NULL, err, sizeof(err)), 0);
	assert_int_equal(k.n, 0);
	assert_int_equal(sshkeys_refresh(&k), 0);
	sshkeys_close(&k);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A plain folder (no ..data): re-read when an entry is added. */
static void test_plain_folder(void **state)
{
	(void)state;
	const char *base = getenv("IMDS_TEST_TMPDIR");
	snprintf(dir, sizeof(dir), "%s/imds-keys-XXXXXX", base && *base ? base : "/tmp");
	assert_non_null(mkdtemp(dir));
	put("one", "ssh-ed25519 " ED "\n");
	struct sshkeys k;
	char err[256];
	assert_int_equal(sshkeys_open(&k, dir, err, sizeof(err)), 0);
	assert_int_equal(k.n, 1);
	/* mtime granularity: make sure the folder's time moves */
	struct timespec t = {0, 20 * 1000 * 1000};
	nanosleep(&t, NULL);
	put("two", "ssh-rsa " RSA "\nssh-ed25519 " ED " x\n");
	assert_int_equal(sshkeys_refresh(&k), 1);
	assert_int_equal(k.n, 3);
	assert_string_equal(k.k[1].entry, "two");
	assert_int_equal(k.k[2].nth, 2);
	sshkeys_close(&k);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_table),
		cmocka_unit_test(test_line_prefixes),
		cmocka_unit_test(test_line_too_long),
		cmocka_unit_test(test_folder),
		cmocka_unit_test(test_plain_folder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
