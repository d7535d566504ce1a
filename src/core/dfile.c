#include "dfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

int dfile_read(const char *path, size_t max, struct blob **out)
{
	int r = 0;
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	size_t cap = (size_t)st.st_size + 1; /* +1 tells a file that grew */
	if (cap > max + 1)
		cap = max + 1;
	buf = malloc(cap);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	size_t len = 0;
	for (;;) {
		if (len == cap) {
			if (cap > max) {
				r = -EFBIG;
				goto out;
			}
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *n = realloc(buf, ncap);
			if (!n) {
				r = -ENOMEM;
				goto out;
			}
			buf = n;
			cap = ncap;
		}
		ssize_t got = read(fd, buf + len, cap - len);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	if (len > max) {
		r = -EFBIG;
		goto out;
	}
	*out = blob_new(buf, len);
	if (!*out)
		r = -ENOMEM;
out:
	free(buf);
	close(fd);
	return r;
}

static int same(const struct dfile *f, const struct stat *st)
{
	return f->dev == st->st_dev && f->ino == st->st_ino && f->size == st->st_size &&
	       f->mtim.tv_sec == st->st_mtim.tv_sec && f->mtim.tv_nsec == st->st_mtim.tv_nsec &&
	       f->ctim.tv_sec == st->st_ctim.tv_sec && f->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

static void remember(struct dfile *f, const struct stat *st)
{
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->size = st->st_size;
	f->mtim = st->st_mtim;
	f->ctim = st->st_ctim;
}

/* stat() of the first candidate that exists; -ENOENT when none does. */
static int pick(struct dfile *f, struct stat *st)
{
	int r = -ENOENT;
	for (unsigned i = 0; i < f->ncand; i++) {
		if (stat(f->cand[i], st) == 0) {
			f->path = f->cand[i];
			return 0;
		}
		if (errno != ENOENT)
			r = -errno;
	}
	return r;
}

/* stat, then read; if the file changed between the two, the next request
 * sees a different stat and reads again, so no update is ever lost. */
static int load(struct dfile *f)
{
	struct stat st;
	int r = pick(f, &st);
	if (r < 0)
		return r;
	struct blob *b = NULL;
	r = dfile_read(f->path, DFILE_MAX, &b);
	if (r < 0)
		return r;
	blob_unref(f->blob);
	f->blob = b;
	remember(f, &st);
	return 0;
}

static const char *why(int r)
{
	return r == -EFBIG ? "larger than 16 MiB" : r == -EINVAL ? "not a regular file" : strerror(-r);
}

int dfile_open(struct dfile *f, const char *name, const char *paths, char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->name = name;
	if (!paths)
		return 0;
	f->list = strdup(paths);
	if (!f->list) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	for (char *save = NULL, *t = strtok_r(f->list, ":", &save); t;
	     t = strtok_r(NULL, ":", &save)) {
		if (f->ncand == DFILE_MAX_CANDIDATES) {
			snprintf(err, errlen, "%s: at most %d paths", name, DFILE_MAX_CANDIDATES);
			return -EINVAL;
		}
		f->cand[f->ncand++] = t;
	}
	if (!f->ncand) {
		snprintf(err, errlen, "%s: empty path list", name);
		return -EINVAL;
	}
	f->path = f->cand[0];
	int r = load(f);
	if (r < 0)
		snprintf(err, errlen, "%s: cannot read '%s': %s", name, paths, why(r));
	return r;
}

struct blob *dfile_get(struct dfile *f)
{
	if (!f->ncand)
		return NULL;
	struct stat st;
	const char *was = f->path;
	int r = pick(f, &st);
	if (r == 0 && f->path == was && same(f, &st))
		return f->blob;
	if (r == 0)
		r = load(f);
	if (r < 0) {
		if (!f->stale)
			log_error("%s: cannot re-read '%s': %s; serving the previous %zu bytes",
				  f->name, f->path, why(r), f->blob ? f->blob->len : (size_t)0);
		f->stale = 1;
	} else if (f->stale) {
		log_info("%s: '%s' readable again", f->name, f->path);
		f->stale = 0;
	}
	return f->blob;
}

void dfile_close(struct dfile *f)
{
	blob_unref(f->blob);
	f->blob = NULL;
	free(f->list);
	f->list = NULL;
	f->ncand = 0;
}
