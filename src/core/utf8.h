/* utf8: strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing
 * past U+10FFFF.  Shared by the sidecar (identity strings, YAML) and the
 * webhook (JSON strings, configuration). */
#ifndef IMDS_UTF8_H
#define IMDS_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the sequence at s (n > 0 bytes available) into *cp: its length
 * 1..4, or 0 when it is invalid or cut short. */
size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp);

/* The length of the valid prefix of s: n when all of it is valid.  ASCII,
 * most of any text here, goes eight bytes at a time. */
size_t utf8_prefix(const char *s, size_t n);

/* 0 when s is valid UTF-8, else -EINVAL. */
int utf8_valid(const char *s, size_t n);

/* Writes code point cp (<= U+10FFFF) to out (room for 4); its length. */
size_t utf8_put(uint32_t cp, char *out);

#endif
