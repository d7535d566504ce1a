/* audience: where a token for an audience lives — shared by the webhook,
 * which mounts it, and the sidecar, which reads it, so the two never drift.
 *
 * The token for audience A is <token dir>/<audience_dir(A)>/token.  Bytes
 * outside [A-Za-z0-9._-], and a leading '.', are percent-encoded, so any
 * audience (often a URL) is one safe path component that cannot collide
 * with kubelet's `..data` entries (nor with the default token's file
 * `token`, written `%74oken`); "." and ".." and empty are refused. */
#ifndef IMDS_AUDIENCE_H
#define IMDS_AUDIENCE_H

#include <stddef.h>

/* Writes the NUL-terminated directory name; returns its length, or
 * -EINVAL (empty, ".", "..", a byte outside printable ASCII or a space)
 * or -ENOSPC. */
int audience_dir(const char *aud, size_t n, char *out, size_t cap);

#endif
