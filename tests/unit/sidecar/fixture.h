/* What the sidecar's unit tests share: a clean IMDS_* environment, a
 * temporary folder (under IMDS_TEST_TMPDIR, else /tmp) removed whole, files
 * written as kubelet's atomic writer does, and the app built from the
 * environment as `imds-server run` builds it.  Include after cmocka.h: it
 * asserts with cmocka. */
#ifndef IMDS_TEST_SIDECAR_FIXTURE_H
#define IMDS_TEST_SIDECAR_FIXTURE_H

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "imds.h"

extern char **environ;

/* Unsets every IMDS_* variable. */
static inline void fx_env_clear(void)
{
	for (;;) {
		char **e = environ;
		while (*e && strncmp(*e, "IMDS_", 5) != 0)
			e++;
		if (!*e)
			break;
		char name[256];
		size_t n = strcspn(*e, "=");
		assert_true(n < sizeof(name));
		memcpy(name, *e, n);
		name[n] = '\0';
		assert_int_equal(unsetenv(name), 0);
	}
}

/* A new folder <tmp>/<prefix>-XXXXXX into dir. */
static inline void fx_mkdtemp(char *dir, size_t len, const char *prefix)
{
	const char *base = getenv("IMDS_TEST_TMPDIR");
	snprintf(dir, len, "%s/%s-XXXXXX", base && *base ? base : "/tmp", prefix);
	assert_non_null(mkdtemp(dir));
}

static inline int fx_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes dir and all below it (links not followed). */
static inline void fx_rm_tree(const char *dir)
{
	nftw(dir, fx_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes a new file and renames it over path, as kubelet's atomic writer
 * does (a new inode every time). */
static inline void fx_put_file(const char *path, const void *data, size_t n)
{
	char tmp[700];
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, rand());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	assert_int_equal(close(fd), 0);
	assert_int_equal(rename(tmp, path), 0);
}

/* root/rel: a file with data (fopen: a plain write), a folder, a link to
 * target (test_cloudinit.c, test_cikeys.c lay out volumes with them). */
static inline void fx_put_at(const char *root, const char *rel, const char *data)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, strlen(data), f), strlen(data));
	assert_int_equal(fclose(f), 0);
}

static inline void fx_mkdir_at(const char *root, const char *rel)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static inline void fx_symlink_at(const char *root, const char *target, const char *rel)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(symlink(target, p), 0);
}

/* A configuration with the VM's own cloud-init ci (NULL: none) and its
 * volume's folder dir (test_instance.c, test_cikeys.c). */
static inline struct imds_config fx_ci_config(const char *dir, const char *ci)
{
	struct imds_config c = {0};
	c.ns = "demo";
	c.vm_name = "db-01.prod.example";
	c.cloud_init = ci;
	c.cloud_init_dir = dir;
	return c;
}

/* Reads the environment as it is now into cfg and creates the app into
 * *app (the previous one freed). */
static inline struct imds_app *fx_app_start(struct imds_config *cfg, struct imds_app **app)
{
	char err[256] = "";
	imds_app_free(*app);
	*app = NULL;
	if (config_from_env(cfg, err, sizeof(err)) != 0)
		fail_msg("config_from_env: %s", err);
	*app = imds_app_new(NULL, cfg, err, sizeof(err));
	if (!*app)
		fail_msg("imds_app_new: %s", err);
	return *app;
}

#endif
