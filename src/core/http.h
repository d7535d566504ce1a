/* http: the HTTP/1.x server core shared by imds-server and imds-webhook.
 *
 * http_parse.c turns bytes into a request; this module owns connections,
 * limits and timeouts and the responses' output, on the process's one
 * event loop.
 *
 * Memory: a connection is a small struct.  Reads land in one buffer shared
 * by the whole server; only bytes of a request that is not complete yet
 * (or pipelined requests waiting behind a slow write) are copied into a
 * per-connection buffer, capped by the limits.  Responses go out with one
 * writev from a shared buffer; only what the kernel did not take is kept.
 * So an idle keep-alive connection costs no buffer at all.
 *
 * Requests are handled one at a time, in order (pipelining-safe). */
#ifndef IMDS_HTTP_H
#define IMDS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "blob.h"
#include "http_parse.h"
#include "loop.h"

struct http_limits {
	size_t max_head;          /* request line + headers; past it: 431 */
	size_t max_body;          /* 0: any body is refused with 413 */
	unsigned max_headers;     /* header count; past it: 431 */
	unsigned max_conns;       /* open connections */
	unsigned header_timeout_ms; /* first byte of a request to its end */
	unsigned idle_timeout_ms; /* keep-alive idle, and a stalled write */
};

/* The defaults (docs/sidecar.md, "Limits"). */
#define HTTP_LIMITS_DEFAULT                                                    \
	{                                                                      \
		.max_head = 8192, .max_body = 0, .max_headers = 64,            \
		.max_conns = 1024, .header_timeout_ms = 5000,                  \
		.idle_timeout_ms = 20000,                                      \
	}

/* The handler fills this.  Header lines and small bodies are copied into
 * the response buffer; a large body may instead be a blob reference. */
struct http_response {
	int status;
	const char *content_type;   /* NULL: no Content-Type */
	char extra[512];            /* extra header lines, each "Name: v\r\n" */
	size_t extra_len;
	const char *body;           /* borrowed until the handler returns */
	size_t body_len;
	struct blob *blob;          /* or: a reference the core takes over */
	int close;                  /* close the connection after this one */
	/* Wait instead of answering: the core keeps the request (one connection,
	 * its bytes, nothing else) and runs the handler on it again at each
	 * http_server_wake() and once park_ms after the first park, with
	 * req->park_expired set; whatever else the handler filled is dropped. */
	int park;
	unsigned park_ms;
	/* The handler's own note, kept with the parked request and handed back
	 * as req->park_tag at each run (the tag it waits to see change). */
	uint64_t park_tag;
};

/* Response helpers: 0, or -ENOSPC when the header area is full. */
int http_res_header_n(struct http_response *res, const char *name, size_t nn, const char *value,
		      size_t vn);
static inline __attribute__((always_inline)) int
http_res_header(struct http_response *res, const char *name, const char *value)
{
	return http_res_header_n(res, name, __builtin_strlen(name), value, __builtin_strlen(value));
}
void http_res_text(struct http_response *res, int status, const char *ctype, const char *body,
		   size_t len);
/* {"error":"<code>","message":"<message>"} with the given status. */
void http_res_error(struct http_response *res, int status, const char *code, const char *message);
const char *http_reason(int status);

/* A transport under the HTTP core: plain sockets by default, TLS for the
 * webhook.  read/writev return bytes (> 0), 0 at EOF, or -errno; -EAGAIN
 * sets *want to LOOP_READABLE or LOOP_WRITABLE (TLS may need to write in
 * order to read, and the other way round).  pending() tells that bytes are
 * buffered inside the transport, where epoll cannot see them. */
struct http_transport {
	void *(*open)(void *ctx, int fd);  /* NULL: refuse the connection */
	ssize_t (*read)(void *conn, int fd, void *buf, size_t len, int *want);
	ssize_t (*writev)(void *conn, int fd, const struct iovec *iov, int cnt, int *want);
	size_t (*pending)(void *conn);
	/* Optional: end the session's output (TLS close_notify) before the core
	 * shuts the socket's write side for a lingering close. */
	void (*shutdown)(void *conn);
	void (*close)(void *conn);
	void *ctx;
};

struct http_server;
typedef void http_handler(const struct http_request *req, struct http_response *res, void *ud);
/* Called once per finished request (for the access log). */
typedef void http_logger(const struct http_request *req, int status, size_t bytes, void *ud);

struct http_server *http_server_new(struct loop *l, const struct http_limits *lim,
				    http_handler *handler, http_logger *logger, void *ud);
/* Optional: the most body bytes one request may carry, decided from its
 * head (http_parse.h); a longer body gets 413 before it is read.  The
 * limits' max_body stays the ceiling (it sizes the input buffer).
 * Without it: max_body for every request. */
void http_server_set_body_limit(struct http_server *s, http_body_limit *fn);

/* Use t (borrowed, must outlive the server) for connections accepted from
 * now on.  Without it, plain sockets. */
void http_server_set_transport(struct http_server *s, const struct http_transport *t);
/* Frees connections and listeners; NULL is a no-op. */
void http_server_free(struct http_server *s);

/* Takes ownership of a listening, non-blocking socket.  0 or -errno. */
int http_server_listen_fd(struct http_server *s, int fd);
/* Takes ownership of an already connected, non-blocking socket (tests and
 * fuzzers feed the core through a socketpair).  0 or -errno (fd closed). */
int http_server_adopt(struct http_server *s, int fd, const struct sockaddr_storage *peer);
/* Closes one listener taken earlier (the plumbing replaces listeners whose
 * device came back with a new ifindex). */
void http_server_close_listener(struct http_server *s, int fd);

/* Graceful stop: close listeners and idle connections, let in-flight
 * requests finish; calls done(ud) once no connection is left. */
void http_server_drain(struct http_server *s, void (*done)(void *), void *ud);

unsigned http_server_conn_count(const struct http_server *s);
/* Requests waiting (res->park) now. */
unsigned http_server_parked(const struct http_server *s);
/* Runs the handler again on every waiting request (something they may wait
 * for changed). */
void http_server_wake(struct http_server *s);

/* Parses "HOST:PORT", "[V6]:PORT" or ":PORT" and returns a bound, listening,
 * non-blocking socket, or -errno with a reason in err. */
int http_listen_addr(const char *addr, int backlog, char *err, size_t errlen);

#endif
