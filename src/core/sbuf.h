/* sbuf: a bounded string builder over caller-owned storage.
 *
 * Appends never write past cap; the first one that does not fit sets
 * overflow and later appends are ignored, so a sequence of puts needs one
 * check at the end.  The content stays NUL-terminated. */
#ifndef IMDS_SBUF_H
#define IMDS_SBUF_H

#include <stddef.h>
#include <stdint.h>

struct sbuf {
	char *p;
	size_t len;
	size_t cap; /* including the NUL */
	int overflow;
};

#define SBUF_INIT(buf, size) {.p = (buf), .len = 0, .cap = (size), .overflow = 0}

/* sbuf_copy's pieces of more than 32 bytes: up to 256 in 16-byte moves,
 * longer ones by memcpy (musl's, whose `rep movsq` start costs more than
 * a short copy). */
void sbuf_copy_long(void *dst, const void *src, size_t n);

/* Copies n bytes as memcpy does.  Pieces of up to 32 bytes are moved
 * inline: the static image's libc (musl) starts every memcpy with
 * `rep movsq`, which costs more than the copy itself for the few-byte
 * pieces an answer's head is made of (perf: 28 % of the server's CPU).
 * Inline itself, so that a length known when compiled (sbuf_lit) becomes
 * the one or two moves of its size. */
static inline __attribute__((always_inline)) void sbuf_copy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (n > 32) {
		sbuf_copy_long(d, s, n);
	} else if (n >= 16) { /* two 16-byte moves that may overlap */
		uint64_t a[2], z[2];
		__builtin_memcpy(a, s, 16);
		__builtin_memcpy(z, s + (n - 16), 16);
		__builtin_memcpy(d, a, 16);
		__builtin_memcpy(d + (n - 16), z, 16);
	} else if (n >= 8) {
		uint64_t a, z;
		__builtin_memcpy(&a, s, 8);
		__builtin_memcpy(&z, s + (n - 8), 8);
		__builtin_memcpy(d, &a, 8);
		__builtin_memcpy(d + (n - 8), &z, 8);
	} else if (n >= 4) {
		uint32_t a, z;
		__builtin_memcpy(&a, s, 4);
		__builtin_memcpy(&z, s + (n - 4), 4);
		__builtin_memcpy(d, &a, 4);
		__builtin_memcpy(d + (n - 4), &z, 4);
	} else if (n) { /* 1..3: first, middle, last */
		unsigned char a = s[0], m = s[n / 2], z = s[n - 1];
		d[0] = a;
		d[n / 2] = m;
		d[n - 1] = z;
	}
}

/* Writers at a bare pointer, for a piece made once per answer whose
 * buffer's room the caller has checked once for the whole (an answer's
 * head, an access line): no bounds check and no NUL of their own; each
 * returns the byte after what it wrote. */
char *sbuf_at_put_n(char *d, const void *s, size_t n);
/* A length known when compiled (sbuf_at_lit): its moves inline; any other
 * length: one copy of sbuf_copy, out of line (the binary stays small). */
static inline __attribute__((always_inline)) char *sbuf_at_put(char *d, const void *s, size_t n)
{
	if (!__builtin_constant_p(n))
		return sbuf_at_put_n(d, s, n);
	sbuf_copy(d, s, n);
	return d + n;
}
#define sbuf_at_lit(d, lit) sbuf_at_put((d), "" lit, sizeof(lit) - 1)
/* v in decimal: at most 20 bytes. */
char *sbuf_at_dec(char *d, unsigned long long v);

/* What does not fit: sets overflow (out of line, the rare path). */
void sbuf_put_overflow(struct sbuf *b);

void sbuf_put(struct sbuf *b, const void *data, size_t n);
/* sbuf_put inline, for a length known when compiled (sbuf_lit): the bounds
 * check and the one or two moves of its size, where most of an answer's
 * head and log line are literals. */
/* 1 when n more bytes fit (and a NUL after them); else 0, overflow set. */
static inline __attribute__((always_inline)) int sbuf_room(struct sbuf *b, size_t n)
{
	if (b->overflow)
		return 0;
	if (b->cap == 0 || n > b->cap - 1 - b->len) {
		sbuf_put_overflow(b);
		return 0;
	}
	return 1;
}
static inline __attribute__((always_inline)) void sbuf_put_fixed(struct sbuf *b, const void *data,
								  size_t n)
{
	if (!sbuf_room(b, n))
		return;
	sbuf_copy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}
/* Inline: a literal's length is then known when compiled. */
static inline __attribute__((always_inline)) void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_put(b, s, __builtin_strlen(s));
}
void sbuf_putc(struct sbuf *b, char c);
/* A string literal, its length known when compiled. */
#define sbuf_lit(b, lit) sbuf_put_fixed((b), "" lit, sizeof(lit) - 1)
/* v in decimal. */
void sbuf_put_u(struct sbuf *b, unsigned long long v);
/* The low digits*4 bits of v as that many lowercase hex digits (1..16). */
void sbuf_put_hex(struct sbuf *b, uint64_t v, unsigned digits);
__attribute__((format(printf, 2, 3))) void sbuf_printf(struct sbuf *b, const char *fmt, ...);
/* The bytes as the inside of a JSON string: ", \ and controls escaped;
 * bytes >= 0x80 pass unchanged (valid UTF-8 stays valid). */
void sbuf_json_escape(struct sbuf *b, const char *s, size_t n);

/* The value of one hex digit (either case), or -1. */
int sbuf_hexval(char c);
/* The value of one base64 digit, or -1: RFC 4648's standard alphabet (+ /)
 * or, with url set, its URL-safe one (- _). */
int sbuf_b64val(char c, int url);
/* Padded standard base64 as Go's base64.StdEncoding.DecodeString reads it
 * (KubeVirt's userDataBase64, and the webhook's own annotation the sidecar
 * reads back): whole quanta, padding required, '\r' and '\n' skipped.
 * The length, or -1.  out holds at least n / 4 * 3 + 3 bytes. */
long sbuf_b64decode(const char *s, size_t n, unsigned char *out);

#endif
