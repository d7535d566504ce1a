/* log: stderr logging.  Lines are batched in a bounded buffer and written
 * by the server's loop (serve.c: at its next idle moment once a client hung
 * up, else within SERVE_LOG_DELAY_MS, or when the buffer is full), one
 * write(2) for many requests; an error line flushes at once, and so does
 * exit(). */
#ifndef IMDS_LOG_H
#define IMDS_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

void log_init(const char *prog);
__attribute__((format(printf, 1, 2))) void log_info(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void log_error(const char *fmt, ...);

/* One access line: time, peer, method, path, status, bytes, µs.  The path
 * is cut at 200 bytes and non-printable bytes are escaped; never pass
 * secrets (the request target carries none on our endpoints).  plain: the
 * caller knows method and path hold only bytes 0x21..0x7e other than '\'
 * (none to escape), so they are copied without a look. */
void log_access(const struct sockaddr_storage *peer, const char *method, size_t mlen,
		const char *path, size_t plen, int plain, int status, size_t bytes, uint64_t us);
void log_flush(void);
/* Lines buffered and not yet written. */
int log_pending(void *unused);
/* A client has all it will get (the HTTP server closed its connection):
 * the lines buffered are due at the next idle moment, not at the delay.
 * An info line makes them due so too (only access lines wait; an error
 * line is written at once).  log_soon_asked(): whether either happened
 * since the last flush. */
void log_soon(void);
int log_soon_asked(void);

/* The last error lines (for the sidecar's status file, `imds-server
 * diag`): how many were logged, and up to cap of the last LOG_RECENT_MAX
 * ("<time> <message>", oldest first) into out; valid until the next error. */
#define LOG_RECENT_MAX 8
#define LOG_RECENT_LEN 256
unsigned long log_error_count(void);
size_t log_recent_errors(const char **out, size_t cap);
/* fn runs after each error line is recorded; it must not log errors. */
void log_on_error(void (*fn)(void));

#endif
