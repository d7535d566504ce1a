/* blob: immutable, reference-counted bytes.
 *
 * Data the sidecar serves (user-data up to a few MiB) is loaded once into a
 * blob; a response whose write the kernel only partly took keeps a
 * reference, so a reload meanwhile never frees bytes still being sent. */
#ifndef IMDS_BLOB_H
#define IMDS_BLOB_H

#include <stddef.h>
#include <stdint.h>

struct blob {
	unsigned refs;
	size_t len;
	uint64_t tag;  /* blob_tag(), computed once: 0 until then */
	char etag[19]; /* blob_etag(), made once: "" until then */
	char data[]; /* len bytes, then a NUL for convenience */
};

/* A new blob holding a copy of p[0..len); NULL on ENOMEM. */
struct blob *blob_new(const void *p, size_t len);
struct blob *blob_ref(struct blob *b);
/* Drops one reference; NULL is a no-op. */
void blob_unref(struct blob *b);
/* A 64-bit digest of bytes (FNV-1a, then mixed with the length): for
 * validators (ETags), not for security.  Never 0. */
uint64_t blob_hash(const void *p, size_t n);
/* blob_hash of b's bytes, computed on first use (blobs never change). */
uint64_t blob_tag(struct blob *b);
/* A tag as an HTTP entity-tag: '"', 16 lowercase hex digits, '"' (18
 * bytes and a NUL). */
void blob_tag_text(uint64_t tag, char out[19]);
/* blob_tag_text of blob_tag(b), made on first use: every answer of a blob
 * carries it. */
const char *blob_etag(struct blob *b);

#endif
