/* cikeys: the SSH public keys of a VM's accessCredentials, as KubeVirt puts
 * them on its cloud-init disk (pkg/cloud-init/cloud-init.go:162-212).
 *
 * Each Secret is a folder (IMDS_CLOUD_INIT_DIR/ssh/<i>, in spec order);
 * every entry whose name does not start with ".." (kubelet's `..data` and
 * timestamped folders), in byte order of its name, whose bytes are not
 * empty, is one key: kept verbatim (a final newline included), numbered
 * on across the Secrets.  Unlike KubeVirt, which reads them once when the
 * launcher starts, a folder is read again when kubelet swaps its `..data`
 * link: a changed Secret reaches the guest. */
#ifndef IMDS_CIKEYS_H
#define IMDS_CIKEYS_H

#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#define CIKEYS_DIRS 16               /* the webhook's CI_MAX_SSH */
#define CIKEYS_MAX 256               /* entries in all; more are skipped, logged */
#define CIKEYS_ENTRY_MAX (64u << 10) /* bytes of one entry; a larger one is skipped, logged */

struct cikey {
	char *v; /* the bytes, NUL-terminated (a NUL inside cuts nothing: n counts) */
	size_t n;
};

struct cikeys {
	char *root;      /* NULL: none configured */
	unsigned ndirs;
	struct {
		ino_t ino;
		struct timespec ctim;
		int seen;
	} ver[CIKEYS_DIRS];
	struct cikey k[CIKEYS_MAX];
	unsigned n;
};

/* Reads root/ssh/0 .. root/ssh/<ndirs-1> now.  A folder that cannot be
 * read is logged and gives no key until it can.  0 or -ENOMEM. */
int cikeys_open(struct cikeys *s, const char *root, unsigned ndirs);
/* Re-reads when a folder changed (one lstat per folder when none did).  1
 * when the keys were re-read, 0 when unchanged. */
int cikeys_refresh(struct cikeys *s);
void cikeys_close(struct cikeys *s);

#endif
