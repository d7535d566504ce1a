#include "cikeys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static void dir_of(const struct cikeys *s, unsigned i, char *p, size_t cap)
{
	snprintf(p, cap, "%s/ssh/%u", s->root, i);
}

/* The folder's version: kubelet's ..data link, else the folder itself. */
static int version(const char *dir, ino_t *ino, struct timespec *ctim)
{
	char p[4200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/..data", dir);
	if (lstat(p, &st) < 0) {
		if (errno != ENOENT || stat(dir, &st) < 0)
			return -errno;
		*ctim = st.st_mtim;
	} else {
		*ctim = st.st_ctim;
	}
	*ino = st.st_ino;
	return 0;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static void clear(struct cikeys *s)
{
	for (unsigned i = 0; i < s->n; i++)
		free(s->k[i].v);
	s->n = 0;
}

/* One entry's bytes; -errno, -EFBIG past the cap. */
static int read_entry(const char *path, char **out, size_t *outn)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	char *b = malloc(CIKEYS_ENTRY_MAX + 2);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, b + n, CIKEYS_ENTRY_MAX + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(b);
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > CIKEYS_ENTRY_MAX) {
			free(b);
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	b[n] = '\0';
	*out = b;
	*outn = n;
	return 0;
}

static void read_dir(struct cikeys *s, unsigned i)
{
	char dir[4096];
	dir_of(s, i, dir, sizeof(dir));
	DIR *d = opendir(dir);
	if (!d) {
		log_error("cloud-init: SSH keys folder %s: %s; its keys are left out", dir, strerror(errno));
		return;
	}
	/* The first CIKEYS_MAX + 1 names in byte order (one more than are
	 * kept, to say that some were left out), whatever order the folder
	 * lists them in: the keys kept never depend on the file system. */
	char *names[CIKEYS_MAX + 1] = {0};
	size_t nn = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "..", 2) == 0 || strcmp(e->d_name, ".") == 0)
			continue;
		if (e->d_type == DT_DIR)
			continue;
		size_t at = nn;
		if (nn == CIKEYS_MAX + 1) { /* full: replace the greatest, if this is smaller */
			at = 0;
			for (size_t k = 1; k < nn; k++)
				if (strcmp(names[k], names[at]) > 0)
					at = k;
			if (strcmp(e->d_name, names[at]) >= 0)
				continue;
		}
		char *c = strdup(e->d_name);
		if (!c)
			continue;
		if (at == nn)
			nn++;
		else
			free(names[at]);
		names[at] = c;
	}
	closedir(d);
	qsort(names, nn, sizeof(names[0]), by_name);
	for (size_t k = 0; k < nn; k++) {
		char p[4400];
		snprintf(p, sizeof(p), "%s/%s", dir, names[k]);
		char *v = NULL;
		size_t n = 0;
		int r = read_entry(p, &v, &n);
		if (r < 0) {
			if (r != -EINVAL) /* a folder through a link: skipped, as KubeVirt's IsDir */
				log_error("cloud-init: SSH key %s: %s; left out", p,
					  r == -EFBIG ? "larger than 64 KiB" : strerror(-r));
		} else if (n == 0) {
			free(v); /* KubeVirt skips an empty key */
		} else if (s->n == CIKEYS_MAX) {
			log_error("cloud-init: more than %d SSH keys; %s left out", CIKEYS_MAX, p);
			free(v);
		} else {
			s->k[s->n].v = v;
			s->k[s->n++].n = n;
		}
		free(names[k]);
	}
}

static void reload(struct cikeys *s)
{
	clear(s);
	for (unsigned i = 0; i < s->ndirs; i++)
		read_dir(s, i);
}

int cikeys_open(struct cikeys *s, const char *root, unsigned ndirs)
{
	memset(s, 0, sizeof(*s));
	if (!root || !ndirs)
		return 0;
	s->root = strdup(root);
	if (!s->root)
		return -ENOMEM;
	s->ndirs = ndirs > CIKEYS_DIRS ? CIKEYS_DIRS : ndirs;
	(void)cikeys_refresh(s);
	return 0;
}

int cikeys_refresh(struct cikeys *s)
{
	int changed = 0;
	for (unsigned i = 0; i < s->ndirs; i++) {
		char dir[4096];
		ino_t ino = 0;
		struct timespec ct = {0, 0};
		dir_of(s, i, dir, sizeof(dir));
		if (version(dir, &ino, &ct) < 0) {
			changed |= s->ver[i].seen;
			s->ver[i].seen = 0;
			continue;
		}
		if (s->ver[i].seen && ino == s->ver[i].ino && ct.tv_sec == s->ver[i].ctim.tv_sec &&
		    ct.tv_nsec == s->ver[i].ctim.tv_nsec)
			continue;
		s->ver[i].ino = ino;
		s->ver[i].ctim = ct;
		s->ver[i].seen = 1;
		changed = 1;
	}
	if (!changed)
		return 0;
	reload(s);
	log_info("cloud-init: %u SSH key(s) from the accessCredentials Secrets (read)", s->n);
	return 1;
}

void cikeys_close(struct cikeys *s)
{
	clear(s);
	free(s->root);
	s->root = NULL;
	s->ndirs = 0;
}
