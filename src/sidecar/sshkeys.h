/* sshkeys: the guest's SSH public keys, from a mounted Secret.
 *
 * IMDS_SSH_KEYS_DIR is a Secret volume (imds.kubevirt.io/ssh-keys-secret):
 * every regular entry whose name does not start with '.' (kubelet's
 * `..data` and timestamped folders do) holds OpenSSH public keys, one a
 * line; blank lines and '#' comments are ignored, any other line that is
 * not a public key is skipped with one log line.  Keys are kept in order of
 * entry name, then line.  The directory is re-read when kubelet swaps its
 * `..data` link (or, for a plain directory, when it changes). */
#ifndef IMDS_SSHKEYS_H
#define IMDS_SSHKEYS_H

#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#define SSHKEYS_MAX 256              /* keys in all; more are skipped, logged */
#define SSHKEYS_ENTRY_MAX (256u << 10) /* bytes read from one entry */
#define SSHKEY_LINE_MAX 16384        /* an RSA-16384 key is ~2.8 KiB */

struct sshkey {
	char *entry;  /* the Secret key (file name) it came from */
	char *line;   /* "type base64[ comment]", NUL-terminated */
	unsigned nth; /* 1-based position in its entry */
	unsigned of;  /* keys in its entry */
};

struct sshkeys {
	const char *dir; /* NULL: none configured */
	struct sshkey k[SSHKEYS_MAX];
	unsigned n;
	ino_t ino;       /* of ..data (or of the folder), at the last read */
	struct timespec ctim;
	int seen;        /* ino/ctim are set */
};

/* Checks one line.  1: a public key, its normalized form at *out (*outlen
 * bytes, within line or, when the separators were not single spaces, in
 * buf of cap bytes); 0: blank or a comment; -EINVAL: not a public key. */
int sshkey_line(const char *line, size_t n, char *buf, size_t cap, const char **out,
		size_t *outlen);

/* Reads the folder now.  0, or -errno with a message naming
 * IMDS_SSH_KEYS_DIR in err.  dir NULL: no keys, never re-read. */
int sshkeys_open(struct sshkeys *s, const char *dir, char *err, size_t errlen);
/* Re-reads when the folder changed (one lstat when it did not).  1 when the
 * keys were re-read, 0 when unchanged.  A failed read keeps the old keys
 * and is logged. */
int sshkeys_refresh(struct sshkeys *s);
void sshkeys_close(struct sshkeys *s);

#endif
