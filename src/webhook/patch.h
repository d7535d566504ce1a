/* patch: a JSON Patch (RFC 6902) builder for admission responses.
 *
 * Only the operations the webhook needs, add, replace and remove; values are
 * json-c objects, the text is compact, and the API server wants it in
 * base64 (standard alphabet, padded) inside the AdmissionReview. */
#ifndef IMDS_PATCH_H
#define IMDS_PATCH_H

#include <stddef.h>

#include "sbuf.h"

struct json_object;
struct patch;

struct patch *patch_new(void);
/* NULL is a no-op. */
void patch_free(struct patch *p);

/* Append {"op":"add"|"replace","path":path,"value":value}.  Both take the
 * caller's reference to value, also on failure (and a NULL value, what a
 * failed json-c constructor returns, fails with -ENOMEM).  0 or -ENOMEM. */
int patch_add(struct patch *p, const char *path, struct json_object *value);
int patch_replace(struct patch *p, const char *path, struct json_object *value);

/* Append {"op":"remove","path":path} (the member must exist).  0 or -ENOMEM. */
int patch_remove(struct patch *p, const char *path);

/* Number of operations so far. */
size_t patch_count(const struct patch *p);

/* The compact JSON text of the operations; borrowed, valid until the next
 * change or patch_free().  NULL on allocation failure. */
const char *patch_json(struct patch *p, size_t *len);

/* RFC 6901: "/" then the token with "~" written "~0" and "/" written "~1"
 * (in that order, so "~1" in a key stays a key). */
void patch_pointer_token(struct sbuf *b, const char *tok, size_t n);
/* A whole pointer from its tokens, NUL-terminated in out; its length, or
 * -ENOSPC when it does not fit. */
int patch_pointer(char *out, size_t cap, const char *const *tokens, size_t n);

/* Encoded length of n bytes, without the NUL. */
size_t patch_base64_len(size_t n);
/* Writes patch_base64_len(n) characters and a NUL to out. */
void patch_base64(const void *in, size_t n, char *out);

#endif
