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

void sbuf_put(struct sbuf *b, const void *data, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_putc(struct sbuf *b, char c);
/* A string literal, its length known when compiled. */
#define sbuf_lit(b, lit) sbuf_put((b), "" lit, sizeof(lit) - 1)
/* v in decimal. */
void sbuf_put_u(struct sbuf *b, unsigned long long v);
/* The low digits*4 bits of v as that many lowercase hex digits (1..16). */
void sbuf_put_hex(struct sbuf *b, uint64_t v, unsigned digits);
/* Copies n bytes as memcpy does.  Pieces of up to 32 bytes are moved
 * inline: the static image's libc (musl) starts every memcpy with
 * `rep movsq`, which costs more than the copy itself for the few-byte
 * pieces an answer's head is made of (perf: 28 % of the server's CPU). */
void sbuf_copy(void *dst, const void *src, size_t n);
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
