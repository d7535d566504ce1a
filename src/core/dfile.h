/* dfile: a data file served to the guest, re-read when it changes.
 *
 * Kubelet updates downward-API, Secret and ConfigMap volumes by swapping a
 * `..data` symlink, so the file we stat gets a new inode: one stat(2) per
 * request notices it and the next answer carries the new bytes. */
#ifndef IMDS_DFILE_H
#define IMDS_DFILE_H

#include <stddef.h>
#include <sys/stat.h>

#include "blob.h"

/* ConfigMaps and Secrets stop at 1 MiB; 16 MiB leaves room for files
 * mounted by other means and still bounds memory. */
#define DFILE_MAX (16u << 20)

/* A setting may list candidates, "a:b": the first that exists is read.
 * The webhook uses it for a user-data Secret, whose key is `userdata`
 * (KubeVirt's convention) or `user-data`: it cannot look inside. */
#define DFILE_MAX_CANDIDATES 4

struct dfile {
	const char *path; /* the candidate in use; NULL: no file */
	char *list;       /* owned copy of the setting, split at ':' */
	const char *cand[DFILE_MAX_CANDIDATES];
	unsigned ncand;
	const char *name; /* the setting, for messages */
	struct blob *blob;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
	int stale;        /* the last reload failed; serving older bytes */
};

/* Loads the first existing candidate of paths now.  0, or -errno with a message naming the setting. */
int dfile_open(struct dfile *f, const char *name, const char *paths, char *err, size_t errlen);
/* The current bytes (borrowed; blob_ref() to keep them), reloading first if
 * the file changed.  A failed reload keeps the previous bytes and logs once. */
struct blob *dfile_get(struct dfile *f);
void dfile_close(struct dfile *f);

/* Reads a whole file into a new blob, at most max bytes.  -EFBIG past it. */
int dfile_read(const char *path, size_t max, struct blob **out);

#endif
