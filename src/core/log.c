#include "log.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "loop.h"
#include "sbuf.h"

static const char *log_prog = "imds";
/* 16 KiB: about 150 lines; a full buffer is flushed before it overflows. */
static char log_buf[16384];
static size_t log_len;
static int log_due_now; /* log_soon() since the last flush */
static time_t log_sec;
static char log_stamp[32];
static size_t log_stamp_len;
/* The last peer's address as text: a sidecar's requests come from its one
 * guest, so most lines reuse it rather than format it again. */
static struct sockaddr_storage log_peer;
static char log_peer_ip[64];
static size_t log_peer_len;

void log_init(const char *prog)
{
	log_prog = prog;
	/* lines still in the buffer when a command exits */
	if (atexit(log_flush) != 0)
		log_error("cannot register the exit flush: lines may be lost at exit");
}

static const char *stamp(void)
{
	time_t now = loop_wall_sec();
	if (now != log_sec) {
		struct tm tm;
		gmtime_r(&now, &tm);
		log_stamp_len = strftime(log_stamp, sizeof(log_stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
		if (log_stamp_len == 0)
			log_stamp[0] = '\0'; /* cannot happen: 20 bytes into 32 */
		log_sec = now;
	}
	return log_stamp;
}

/* The text of peer's address (addr_ntop), kept for the next line; its
 * length in *len. */
static const char *peer_text(const struct sockaddr_storage *peer, size_t *len)
{
	int same = peer->ss_family == log_peer.ss_family && log_peer_ip[0];
	if (same && peer->ss_family == AF_INET)
		same = ((const struct sockaddr_in *)peer)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)&log_peer)->sin_addr.s_addr;
	else if (same && peer->ss_family == AF_INET6)
		same = memcmp(&((const struct sockaddr_in6 *)peer)->sin6_addr,
			      &((const struct sockaddr_in6 *)&log_peer)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	else
		same = 0;
	if (!same) {
		addr_ntop(peer, log_peer_ip, sizeof(log_peer_ip));
		log_peer_len = strlen(log_peer_ip);
		log_peer = *peer;
	}
	*len = log_peer_len;
	return log_peer_ip;
}

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDERR_FILENO, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere to report a failing stderr */
		}
		p += w;
		n -= (size_t)w;
	}
}

void log_flush(void)
{
	write_all(log_buf, log_len);
	log_len = 0;
	log_due_now = 0;
}

int log_pending(void *unused)
{
	(void)unused;
	return log_len > 0;
}

void log_soon(void)
{
	log_due_now = 1;
}

int log_soon_asked(void)
{
	return log_due_now;
}

/* Appends a line to the buffer; the server's loop (serve.c), a full
 * buffer, the next error or exit writes it: one write(2) per buffer of
 * lines, not one per answer. */
static void buffer_line(const char *line, size_t n)
{
	if (log_len + n > sizeof(log_buf))
		log_flush();
	sbuf_copy(log_buf + log_len, line, n);
	log_len += n;
}

static void vlog(const char *level, int now, const char *fmt, va_list ap)
{
	char line[1024];
	struct sbuf b = SBUF_INIT(line, sizeof(line));
	sbuf_printf(&b, "%s %s %s: ", stamp(), log_prog, level);
	size_t room = b.cap - b.len;
	int n = vsnprintf(line + b.len, room, fmt, ap);
	if (n > 0)
		b.len += (size_t)n < room ? (size_t)n : room - 1;
	if (b.len > sizeof(line) - 2)
		b.len = sizeof(line) - 2;
	line[b.len++] = '\n';
	buffer_line(line, b.len);
	if (now)
		log_flush();
	else
		log_due_now = 1; /* info: the next idle moment, not the access delay */
}

void log_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog("info", 0, fmt, ap);
	va_end(ap);
}

/* The last error lines, for `imds-server diag` (through the sidecar's
 * status file): a ring of LOG_RECENT_MAX, each "<time> <message>" cut to
 * LOG_RECENT_LEN-1 bytes, control bytes made spaces. */
static char log_recent[LOG_RECENT_MAX][LOG_RECENT_LEN];
static unsigned long log_errors;
static void (*log_err_hook)(void);
static int log_in_hook;

static void remember(const char *fmt, va_list ap)
{
	char *r = log_recent[log_errors % LOG_RECENT_MAX];
	int k = snprintf(r, LOG_RECENT_LEN, "%s ", stamp());
	if (k < 0 || k >= LOG_RECENT_LEN)
		k = 0;
	if (vsnprintf(r + k, LOG_RECENT_LEN - (size_t)k, fmt, ap) < 0)
		r[k] = '\0';
	for (char *c = r; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	log_errors++;
}

void log_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog("error", 1, fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	remember(fmt, ap);
	va_end(ap);
	/* The hook may fail quietly but must not log an error itself; a
	 * nested call is not re-entered. */
	if (log_err_hook && !log_in_hook) {
		log_in_hook = 1;
		log_err_hook();
		log_in_hook = 0;
	}
}

unsigned long log_error_count(void)
{
	return log_errors;
}

size_t log_recent_errors(const char **out, size_t cap)
{
	size_t have = log_errors < LOG_RECENT_MAX ? (size_t)log_errors : LOG_RECENT_MAX;
	size_t n = have < cap ? have : cap;
	/* oldest of the last n first */
	for (size_t i = 0; i < n; i++)
		out[i] = log_recent[(log_errors - n + i) % LOG_RECENT_MAX];
	return n;
}

void log_on_error(void (*fn)(void))
{
	log_err_hook = fn;
}

/* Whether none of the eight bytes of w needs escaping in a log line: each
 * in 0x21..0x7e and none a backslash.  The tests of a byte below n / above
 * n / equal to zero are the exact ones of "Bit Twiddling Hacks" (hasless,
 * hasmore, haszero) for n <= 127. */
static int plain8(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
	uint64_t below = (w - ones * 0x21) & ~w & high;
	uint64_t above = ((w + ones * (127 - 0x7e)) | w) & high;
	uint64_t bs = w ^ (ones * '\\');
	uint64_t is_bs = (bs - ones) & ~bs & high;
	return !(below | above | is_bs);
}

/* The access line is written with sbuf_at_*, not an sbuf: the buffer's
 * room for the longest line (ACCESS_LINE_MAX) is checked once before, so
 * no piece checks it again (this runs once per answer). */

/* s[0..n) with bytes outside 0x21..0x7e and the backslash written as \xHH,
 * cut at max bytes ("..." after); "-" for none.  At most max * 4 + 3
 * bytes.  Checked and copied eight at a time, the last 1..7 as one word
 * padded with plain bytes (all eight stored: the line's room has them;
 * only those of s counted); a word with a byte to escape, one byte. */
static char *put_clean(char *d, const char *s, size_t n, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	if (!s || !n) {
		*d++ = '-';
		return d;
	}
	size_t end = n < max ? n : max, i = 0;
	while (i < end) {
		size_t take = end - i < 8 ? end - i : 8;
		uint64_t w = 0x6161616161616161u;
		sbuf_copy(&w, s + i, take);
		if (plain8(w)) {
			memcpy(d, &w, 8);
			d += take;
			i += take;
			continue;
		}
		unsigned char c = (unsigned char)s[i++];
		if (c > 0x20 && c < 0x7f && c != '\\') {
			*d++ = (char)c;
		} else {
			d[0] = '\\';
			d[1] = 'x';
			d[2] = hex[c >> 4];
			d[3] = hex[c & 15];
			d += 4;
		}
	}
	if (n > max)
		d = sbuf_at_lit(d, "...");
	return d;
}

/* Room for the longest access line: stamp (20), peer (< 64), method (16
 * bytes, each at most 4 escaped, and "..."), path (200 such and "..."),
 * three numbers (<= 20 each), five spaces and "us\n": 1,043; and the 7
 * bytes put_clean may store past its end. */
#define ACCESS_LINE_MAX 1100

/* What put_clean writes for bytes known plain: the same, without a look. */
static char *put_plain(char *d, const char *s, size_t n, size_t max)
{
	if (!s || !n) {
		*d++ = '-';
		return d;
	}
	d = sbuf_at_put(d, s, n < max ? n : max);
	if (n > max)
		d = sbuf_at_lit(d, "...");
	return d;
}

void log_access(const struct sockaddr_storage *peer, const char *method, size_t mlen,
		const char *path, size_t plen, int plain, int status, size_t bytes, uint64_t us)
{
	/* Made in place at the buffer's end, as the answer's head is made:
	 * without printf and without a copy. */
	if (sizeof(log_buf) - log_len < ACCESS_LINE_MAX)
		log_flush();
	char *const start = log_buf + log_len;
	const char *ts = stamp();
	char *d = sbuf_at_put(start, ts, log_stamp_len);
	*d++ = ' ';
	if (peer) {
		size_t pl;
		const char *pt = peer_text(peer, &pl);
		d = sbuf_at_put(d, pt, pl);
	} else {
		*d++ = '-';
	}
	*d++ = ' ';
	d = plain ? put_plain(d, method, mlen, 16) : put_clean(d, method, mlen, 16);
	*d++ = ' ';
	d = plain ? put_plain(d, path, plen, 200) : put_clean(d, path, plen, 200);
	*d++ = ' ';
	d = sbuf_at_dec(d, (unsigned)status);
	*d++ = ' ';
	d = sbuf_at_dec(d, bytes);
	*d++ = ' ';
	d = sbuf_at_dec(d, us);
	d = sbuf_at_lit(d, "us\n");
	log_len += (size_t)(d - start);
}
