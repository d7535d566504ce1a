#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void terminate(struct sbuf *b)
{
	if (b->cap)
		b->p[b->len] = '\0';
}

void sbuf_put_overflow(struct sbuf *b)
{
	b->overflow = 1;
	terminate(b);
}

void sbuf_put(struct sbuf *b, const void *data, size_t n)
{
	sbuf_put_fixed(b, data, n); /* the same, one copy of it out of line */
}

void sbuf_putc(struct sbuf *b, char c)
{
	if (!sbuf_room(b, 1))
		return;
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
}

void sbuf_copy_long(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (n > 256 || n < 16) {
		memcpy(d, s, n);
		return;
	}
	uint64_t a[2];
	for (size_t i = 0; i + 16 <= n; i += 16) {
		memcpy(a, s + i, 16);
		memcpy(d + i, a, 16);
	}
	memcpy(a, s + n - 16, 16); /* the last 16, which may overlap */
	memcpy(d + n - 16, a, 16);
}

static const char dec_pairs[] = "00010203040506070809101112131415161718192021222324"
				"25262728293031323334353637383940414243444546474849"
				"50515253545556575859606162636465666768697071727374"
				"75767778798081828384858687888990919293949596979899";

static unsigned dec_digits(unsigned long long v)
{
	unsigned n = 1;
	for (unsigned long long p = 10; n < 20 && v >= p; p *= 10)
		n++;
	return n;
}

/* v's n digits, ending at e: two at a time and last first, once their
 * count is known (no copy through a scratch buffer). */
static void dec_back(char *e, unsigned long long v)
{
	while (v >= 100) {
		size_t r = (size_t)(v % 100);
		v /= 100;
		e -= 2;
		e[0] = dec_pairs[2 * r];
		e[1] = dec_pairs[2 * r + 1];
	}
	if (v >= 10) {
		e[-2] = dec_pairs[2 * v];
		e[-1] = dec_pairs[2 * v + 1];
	} else {
		e[-1] = (char)('0' + v);
	}
}

char *sbuf_at_put_n(char *d, const void *s, size_t n)
{
	sbuf_copy(d, s, n);
	return d + n;
}

char *sbuf_at_dec(char *d, unsigned long long v)
{
	/* an answer's status, its length and its time: mostly 1 to 4 digits */
	if (v < 100) {
		if (v < 10) {
			*d = (char)('0' + v);
			return d + 1;
		}
		memcpy(d, dec_pairs + 2 * v, 2);
		return d + 2;
	}
	if (v < 10000) {
		size_t hi = (size_t)v / 100, lo = (size_t)v % 100;
		if (hi < 10) {
			*d++ = (char)('0' + hi);
		} else {
			memcpy(d, dec_pairs + 2 * hi, 2);
			d += 2;
		}
		memcpy(d, dec_pairs + 2 * lo, 2);
		return d + 2;
	}
	d += dec_digits(v);
	dec_back(d, v);
	return d;
}

void sbuf_put_u(struct sbuf *b, unsigned long long v)
{
	unsigned n = dec_digits(v);
	if (!sbuf_room(b, n))
		return;
	b->len += n;
	dec_back(b->p + b->len, v);
	b->p[b->len] = '\0';
}

void sbuf_put_hex(struct sbuf *b, uint64_t v, unsigned digits)
{
	static const char hex[] = "0123456789abcdef";
	char d[16];
	if (digits == 0 || digits > 16) {
		b->overflow = 1; /* a caller's mistake: never a short answer */
		terminate(b);
		return;
	}
	for (unsigned i = digits; i-- > 0; v >>= 4)
		d[i] = hex[v & 15];
	sbuf_put(b, d, digits);
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	if (b->overflow)
		return;
	if (b->cap == 0) {
		b->overflow = 1;
		return;
	}
	size_t room = b->cap - b->len;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->p + b->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room) {
		b->overflow = 1;
		terminate(b);
		return;
	}
	b->len += (size_t)n;
}

void sbuf_json_escape(struct sbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0; /* start of the current run of plain bytes */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f)
			continue;
		sbuf_put(b, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"': sbuf_put(b, "\\\"", 2); break;
		case '\\': sbuf_put(b, "\\\\", 2); break;
		case '\n': sbuf_put(b, "\\n", 2); break;
		case '\r': sbuf_put(b, "\\r", 2); break;
		case '\t': sbuf_put(b, "\\t", 2); break;
		default: {
			char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			sbuf_put(b, u, 6);
		}
		}
	}
	sbuf_put(b, s + run, n - run);
}

int sbuf_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int sbuf_b64val(char c, int url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

long sbuf_b64decode(const char *s, size_t n, unsigned char *out)
{
	unsigned acc = 0, bits = 0, pad = 0;
	size_t o = 0, digits = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\r' || c == '\n')
			continue;
		digits++;
		if (c == '=') {
			pad++;
			continue;
		}
		int v = sbuf_b64val(c, 0);
		if (v < 0 || pad)
			return -1; /* not base64, or data after padding */
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* Go's StdEncoding: whole quanta, padded; "==" after 2 digits, "="
	 * after 3. */
	if (digits % 4 != 0 || pad > 2 || (pad == 2 && bits != 4) || (pad == 1 && bits != 2) ||
	    (pad == 0 && bits != 0))
		return -1;
	return (long)o;
}
