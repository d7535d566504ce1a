#include "sshkeys.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blob.h"
#include "dfile.h"
#include "log.h"
#include "sbuf.h"
#include "utf8.h"

/* The key types OpenSSH writes in a public key line (ssh-keygen, sshd's
 * authorized_keys), with the number of length-prefixed fields that follow
 * the type in the key blob; 0 for certificates, whose blob has fixed-size
 * fields too (only their type is checked). */
static const struct {
	const char *name;
	unsigned fields;
} key_types[] = {
	{"ssh-ed25519", 1},
	{"ssh-rsa", 2},
	{"ssh-dss", 4},
	{"ecdsa-sha2-nistp256", 2},
	{"ecdsa-sha2-nistp384", 2},
	{"ecdsa-sha2-nistp521", 2},
	{"sk-ssh-ed25519@openssh.com", 2},
	{"sk-ecdsa-sha2-nistp256@openssh.com", 3},
	{"ssh-ed25519-cert-v01@openssh.com", 0},
	{"ssh-rsa-cert-v01@openssh.com", 0},
	{"ssh-dss-cert-v01@openssh.com", 0},
	{"ecdsa-sha2-nistp256-cert-v01@openssh.com", 0},
	{"ecdsa-sha2-nistp384-cert-v01@openssh.com", 0},
	{"ecdsa-sha2-nistp521-cert-v01@openssh.com", 0},
	{"sk-ssh-ed25519-cert-v01@openssh.com", 0},
	{"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com", 0},
	{NULL, 0},
};

/* Decodes padded base64 into out (room for n / 4 * 3).  Its length, or -1. */
static long b64decode(const char *b, size_t n, unsigned char *out)
{
	if (n == 0 || n % 4)
		return -1;
	size_t pad = b[n - 1] == '=' ? (b[n - 2] == '=' ? 2 : 1) : 0;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		for (size_t j = 0; j < 4; j++) {
			size_t at = i + j;
			if (at >= n - pad)
				v[j] = 0;
			else if ((v[j] = sbuf_b64val(b[at], 0)) < 0)
				return -1;
		}
		unsigned char t[3] = {(unsigned char)(v[0] << 2 | v[1] >> 4),
				      (unsigned char)(v[1] << 4 | v[2] >> 2),
				      (unsigned char)(v[2] << 6 | v[3])};
		size_t on = i + 4 == n ? 3 - pad : 3;
		memcpy(out + o, t, on);
		o += on;
	}
	return (long)o;
}

/* One SSH wire string at *at: its length, the offset moved past it; -1 when
 * it runs past the end. */
static long wire_string(const unsigned char *p, size_t n, size_t *at)
{
	if (n - *at < 4)
		return -1;
	uint32_t len = (uint32_t)p[*at] << 24 | (uint32_t)p[*at + 1] << 16 |
		       (uint32_t)p[*at + 2] << 8 | p[*at + 3];
	*at += 4;
	if (len > n - *at)
		return -1;
	*at += len;
	return (long)len;
}

/* The key blob, as ssh-keygen reads it: the wire string of the line's type
 * first, then exactly the type's fields, nothing after them. */
static int blob_ok(const char *b, size_t n, unsigned idx, const char *type, size_t tn)
{
	unsigned char buf[SSHKEY_LINE_MAX / 4 * 3 + 3];
	if (n > SSHKEY_LINE_MAX)
		return 0;
	long len = b64decode(b, n, buf);
	if (len < 0)
		return 0;
	size_t at = 0, bn = (size_t)len;
	if (wire_string(buf, bn, &at) != (long)tn || memcmp(buf + 4, type, tn) != 0)
		return 0;
	if (key_types[idx].fields == 0)
		return 1;
	for (unsigned f = 0; f < key_types[idx].fields; f++)
		if (wire_string(buf, bn, &at) <= 0)
			return 0;
	return at == bn;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

int sshkey_line(const char *line, size_t n, char *buf, size_t cap, const char **out,
		size_t *outlen)
{
	while (n && is_space(line[0])) {
		line++;
		n--;
	}
	while (n && is_space(line[n - 1]))
		n--;
	if (n == 0 || line[0] == '#')
		return 0;
	if (n > SSHKEY_LINE_MAX || utf8_valid(line, n) < 0)
		return -EINVAL;
	size_t i = 0;
	while (i < n && !is_space(line[i]))
		i++;
	size_t tn = i;
	unsigned t;
	for (t = 0; key_types[t].name; t++)
		if (strlen(key_types[t].name) == tn && memcmp(key_types[t].name, line, tn) == 0)
			break;
	if (!key_types[t].name)
		return -EINVAL; /* also an authorized_keys line with options */
	size_t sep1 = i;
	while (i < n && is_space(line[i]))
		i++;
	if (i == n)
		return -EINVAL;
	size_t bs = i;
	while (i < n && !is_space(line[i]))
		i++;
	size_t bn = i - bs;
	if (!blob_ok(line + bs, bn, t, line, tn))
		return -EINVAL;
	size_t sep2 = i;
	while (i < n && is_space(line[i]))
		i++;
	size_t cs = i, cn = n - i;
	for (size_t j = cs; j < n; j++) /* a comment is text: no controls but tab */
		if (((unsigned char)line[j] < 0x20 && line[j] != '\t') || line[j] == 0x7f)
			return -EINVAL;
	/* Single spaces between the parts already: the line is its own form. */
	if (bs == sep1 + 1 && line[sep1] == ' ' && (cn == 0 || (cs == sep2 + 1 && line[sep2] == ' '))) {
		*out = line;
		*outlen = n;
		return 1;
	}
	size_t need = tn + 1 + bn + (cn ? 1 + cn : 0);
	if (need >= cap)
		return -EINVAL;
	memcpy(buf, line, tn);
	buf[tn] = ' ';
	memcpy(buf + tn + 1, line + bs, bn);
	if (cn) {
		buf[tn + 1 + bn] = ' ';
		memcpy(buf + tn + 2 + bn, line + cs, cn);
	}
	buf[need] = '\0';
	*out = buf;
	*outlen = need;
	return 1;
}

static void clear(struct sshkey *k, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(k[i].entry);
		free(k[i].line);
	}
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The folder's version: kubelet's ..data link when there is one. */
static int version(const char *dir, ino_t *ino, struct timespec *ctim)
{
	char p[4096];
	struct stat st;
	if (snprintf(p, sizeof(p), "%s/..data", dir) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	if (lstat(p, &st) < 0) {
		if (errno != ENOENT)
			return -errno;
		if (stat(dir, &st) < 0)
			return -errno;
		*ctim = st.st_mtim;
	} else {
		*ctim = st.st_ctim;
	}
	*ino = st.st_ino;
	return 0;
}

/* Adds one entry's keys to k[*n].  -errno when it cannot be read. */
static int read_entry(const char *dir, const char *name, struct sshkey *k, unsigned *n)
{
	char path[4096];
	struct blob *b = NULL;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int r = dfile_read(path, SSHKEYS_ENTRY_MAX, &b);
	if (r < 0)
		return r;
	unsigned first = *n, lineno = 0;
	char *norm = malloc(SSHKEY_LINE_MAX + 1);
	if (!norm) {
		blob_unref(b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < b->len;) {
		const char *nl = memchr(b->data + i, '\n', b->len - i);
		size_t ln = nl ? (size_t)(nl - (b->data + i)) : b->len - i;
		const char *key;
		size_t kn;
		lineno++;
		int v = sshkey_line(b->data + i, ln, norm, SSHKEY_LINE_MAX + 1, &key, &kn);
		i += ln + 1;
		if (v < 0) {
			log_error("ssh-keys: %s line %u is not an OpenSSH public key, skipped", name,
				  lineno);
			continue;
		}
		if (v == 0)
			continue;
		if (*n == SSHKEYS_MAX) {
			log_error("ssh-keys: more than %d keys, %s line %u and later skipped",
				  SSHKEYS_MAX, name, lineno);
			break;
		}
		k[*n].entry = strdup(name);
		k[*n].line = strndup(key, kn);
		if (!k[*n].entry || !k[*n].line) {
			free(k[*n].entry);
			free(k[*n].line);
			r = -ENOMEM;
			break;
		}
		(*n)++;
	}
	for (unsigned j = first; j < *n; j++) {
		k[j].nth = j - first + 1;
		k[j].of = *n - first;
	}
	free(norm);
	blob_unref(b);
	return r;
}

/* Reads every entry into k.  The key count, or -errno. */
static int read_dir(const char *dir, struct sshkey *k)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	char **names = NULL;
	size_t nn = 0, cap = 0;
	unsigned n = 0;
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (nn == cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **t = nc <= 4096 ? realloc(names, nc * sizeof(*names)) : NULL;
			if (!t) {
				r = -ENOMEM;
				goto out;
			}
			names = t;
			cap = nc;
		}
		if (!(names[nn] = strdup(e->d_name))) {
			r = -ENOMEM;
			goto out;
		}
		nn++;
	}
	if (nn)
		qsort(names, nn, sizeof(*names), cmp_names);
	for (size_t i = 0; i < nn && n < SSHKEYS_MAX; i++) {
		char path[4096];
		struct stat st;
		/* Follow the symlinks; only regular files hold keys. */
		if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= (int)sizeof(path) ||
		    stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		int er = read_entry(dir, names[i], k, &n);
		if (er == -ENOMEM) {
			r = er;
			goto out;
		}
		if (er < 0)
			log_error("ssh-keys: %s: %s, skipped", names[i], strerror(-er));
	}
out:
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	closedir(d);
	if (r < 0) {
		clear(k, n);
		return r;
	}
	return (int)n;
}

static int reload(struct sshkeys *s)
{
	struct sshkey *k = calloc(SSHKEYS_MAX, sizeof(*k));
	if (!k)
		return -ENOMEM;
	int n = read_dir(s->dir, k);
	if (n >= 0) {
		clear(s->k, s->n);
		memcpy(s->k, k, sizeof(s->k));
		s->n = (unsigned)n;
	}
	free(k);
	return n < 0 ? n : 0;
}

int sshkeys_open(struct sshkeys *s, const char *dir, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->dir = dir;
	if (!dir)
		return 0;
	int r = version(dir, &s->ino, &s->ctim);
	if (r == 0)
		r = reload(s);
	if (r < 0) {
		snprintf(err, errlen, "IMDS_SSH_KEYS_DIR '%.200s': %s", dir, strerror(-r));
		return r;
	}
	s->seen = 1;
	log_info("ssh-keys: %u key(s) from %s", s->n, dir);
	return 0;
}

int sshkeys_refresh(struct sshkeys *s)
{
	ino_t ino = 0;
	struct timespec ct = {0, 0};
	if (!s->dir)
		return 0;
	int r = version(s->dir, &ino, &ct);
	if (r == 0 && s->seen && ino == s->ino && ct.tv_sec == s->ctim.tv_sec &&
	    ct.tv_nsec == s->ctim.tv_nsec)
		return 0;
	if (r == 0)
		r = reload(s);
	if (r < 0) {
		/* Logged once per change: the version is taken as seen. */
		if (s->seen)
			log_error("ssh-keys: cannot re-read %s (%s), keeping %u key(s)", s->dir,
				  strerror(-r), s->n);
		s->seen = 0;
		return 0;
	}
	s->ino = ino;
	s->ctim = ct;
	s->seen = 1;
	log_info("ssh-keys: %u key(s) from %s (re-read)", s->n, s->dir);
	return 1;
}

void sshkeys_close(struct sshkeys *s)
{
	clear(s->k, s->n);
	s->n = 0;
}
