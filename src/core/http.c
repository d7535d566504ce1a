#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "blob.h"
#include "log.h"
#include "loop.h"
#include "sbuf.h"

/* Timeout lists.  Every connection is on exactly one; since all entries of a
 * list share one duration, appending keeps each list sorted by deadline and
 * the earliest deadline is always a list head: O(1) timeouts, no heap. */
enum conn_list { L_READING, L_IDLE, L_WRITING, L_LINGER, L_PARKED, L_COUNT };

struct conn {
	int fd;
	struct http_server *srv;
	void *tr;               /* transport state (TLS), NULL for plain */
	int want;               /* what the transport waits for to go on reading */
	enum conn_list list;
	struct conn *prev, *next;
	uint64_t deadline;
	int started;            /* bytes of the current request seen */
	uint64_t req_us;        /* when the current request's bytes began */
	uint64_t read_us;       /* the loop's wake before the last read: the bytes held came by then */
	int close_after;        /* close once output drains */
	int linger;             /* ... and drain input first (after an error answer) */
	int lingering;          /* answered; reading and dropping input until EOF */
	size_t lingered;        /* bytes dropped so far */
	int parked;             /* its request waits (res->park), held in `in` */
	int park_expired;       /* ... and its wait is over */
	uint64_t park_deadline; /* ms */
	unsigned park_answers;  /* waits answered on this connection (park_release) */
	uint64_t park_tag;      /* the handler's note (res->park_tag) */
	char *in;               /* held input: partial or pipelined requests */
	size_t in_len, in_cap;
	char *out;              /* unsent response bytes */
	size_t out_len, out_off;
	struct blob *blob;      /* unsent body held by reference */
	size_t blob_off;
	struct sockaddr_storage peer;
};

struct listener {
	int fd;
	struct listener *next;
};

struct clist {
	struct conn *head, *tail;
};

struct http_server {
	struct loop *loop;
	const struct http_transport *tr;
	struct http_limits lim;
	http_handler *handler;
	http_logger *logger;
	void *ud;
	struct listener *listeners;
	uint64_t accept_paused_until; /* 0: accepting */
	int fd_starved;         /* an EMFILE episode is going on (logged once) */
	struct clist lists[L_COUNT];
	unsigned nconns;
	unsigned nparked;
	int timer_fd;
	uint64_t timer_at;
	int draining;
	void (*drained)(void *);
	void *drained_ud;
	struct http_parser *parser;
	struct http_request req; /* the one being handled: requests go one at a time */
	struct http_response res;
	char *scratch;
	size_t scratch_cap;
	char head[4096];        /* an answer's head, and a small body after it */
	time_t date_sec;
	char date[40];
	size_t date_len;
};

/* Defined below; the waiting requests (res->park) are at the end of the
 * file.  Steps that may free the connection return 1 while it lives and 0
 * once it is freed (see below). */
static void conn_free(struct http_server *s, struct conn *c);
static ssize_t conn_process(struct http_server *s, struct conn *c, const char *data, size_t len);
static int conn_hold(struct conn *c, const char *data, size_t len, size_t cap);
static int conn_settle(struct http_server *s, struct conn *c);
static size_t conn_in_cap_limit(const struct http_server *s);
/* The handler asked c's request to wait park_ms (counted from its first park). */
static void park_hold(struct http_server *s, struct conn *c, unsigned park_ms);
/* c's request was answered: it waits no more. */
static void park_release(struct http_server *s, struct conn *c);
/* Runs the waiting requests whose deadline passed once more, expired (the
 * handler must answer).  The earliest deadline still ahead, or 0. */
static uint64_t park_expire(struct http_server *s, uint64_t now);
/* Answers every waiting request now (SIGTERM). */
static void park_drain(struct http_server *s);

/* One convention for the connection steps below: a step that may free the
 * connection returns 1 while it lives and 0 once it is freed (the caller
 * must not touch it again); every other step returns 0, or -1 for "close
 * this connection now", and its caller frees it.  Public functions return
 * 0 or -errno. */

/* Lingering close, as nginx's lingering_close: after an error answer the
 * client may still be sending (a body over the cap, the rest of a bad
 * request).  Closing with unread bytes makes the kernel reset the
 * connection, and a client that writes everything before it reads (Python's
 * http.client, Go's net/http) then never sees the answer.  So the write side
 * is shut and input is read and dropped, bounded in time and bytes. */
#define LINGER_MS 2000
#define LINGER_MAX_BYTES ((size_t)8 << 20)

/* Out of descriptors, accept fails and the listener stays readable: a
 * level-triggered loop would wake at once, forever.  Listeners pause until
 * a connection closes, or this long at most (descriptors freed elsewhere). */
#define ACCEPT_PAUSE_MS 100

/* ---- request helpers ---------------------------------------------------- */

const char *http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 204: return "No Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

int http_res_header_n(struct http_response *res, const char *name, size_t nn, const char *value,
		      size_t vn)
{
	size_t len = res->extra_len, cap = sizeof(res->extra);
	/* "name: value\r\n" and its NUL; nothing written when it does not fit */
	if (nn > cap || vn > cap || nn + vn + 5 > cap - len)
		return -ENOSPC;
	char *d = sbuf_at_put(res->extra + len, name, nn);
	d = sbuf_at_lit(d, ": ");
	d = sbuf_at_put(d, value, vn);
	d = sbuf_at_lit(d, "\r\n");
	*d = '\0';
	res->extra_len = (size_t)(d - res->extra);
	return 0;
}

void http_res_text(struct http_response *res, int status, const char *ctype, const char *body,
		   size_t len)
{
	res->status = status;
	res->content_type = ctype;
	res->body = body;
	res->body_len = len;
}

/* Error bodies are built in a small buffer owned by the response path; the
 * codes and messages are our own literals, so no escaping is needed beyond
 * what json_escape does for safety. */
static char err_body[384];

void http_res_error(struct http_response *res, int status, const char *code, const char *message)
{
	struct sbuf b = SBUF_INIT(err_body, sizeof(err_body));
	sbuf_puts(&b, "{\"error\":\"");
	sbuf_json_escape(&b, code, strlen(code));
	sbuf_puts(&b, "\",\"message\":\"");
	sbuf_json_escape(&b, message, strlen(message));
	sbuf_puts(&b, "\"}\n");
	http_res_text(res, status, "application/json", b.p, b.len);
}

/* ---- connection lists and the timer -------------------------------------- */

static void clist_remove(struct clist *l, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = c->next = NULL;
}

static void clist_append(struct clist *l, struct conn *c)
{
	c->prev = l->tail;
	c->next = NULL;
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
}

static void timer_want(struct http_server *s, uint64_t deadline)
{
	/* Re-arm only for an earlier deadline; a timer that fires early just
	 * finds nothing expired and re-arms for the true head. */
	if (s->timer_at && s->timer_at <= deadline)
		return;
	if (loop_timer_arm(s->timer_fd, deadline) == 0)
		s->timer_at = deadline;
}

static void conn_move(struct http_server *s, struct conn *c, enum conn_list to, uint64_t deadline)
{
	clist_remove(&s->lists[c->list], c);
	c->list = to;
	c->deadline = deadline;
	clist_append(&s->lists[to], c);
	timer_want(s, deadline);
}

static void accept_resume(struct http_server *s);

static void conn_free(struct http_server *s, struct conn *c)
{
	loop_del(s->loop, c->fd, LOOP_READABLE | LOOP_WRITABLE);
	if (c->parked)
		s->nparked--;
	if (c->tr && s->tr)
		s->tr->close(c->tr); /* may still write a TLS close_notify */
	close(c->fd);
	/* The client has all it will get: its lines go out at the next idle
	 * moment (serve.c), not at the log's delay. */
	log_soon();
	clist_remove(&s->lists[c->list], c);
	free(c->in);
	free(c->out);
	blob_unref(c->blob);
	free(c);
	s->nconns--;
	if (s->accept_paused_until)
		accept_resume(s); /* a descriptor just came free */
	if (s->draining && s->nconns == 0 && s->drained) {
		void (*done)(void *) = s->drained;
		s->drained = NULL;
		done(s->drained_ud);
	}
}

/* ---- response output ------------------------------------------------------ */

/* The Date header's value, formatted once a second; its length in *len. */
static const char *date_now(struct http_server *s, size_t *len)
{
	time_t now = loop_wall_sec();
	if (now != s->date_sec) {
		struct tm tm;
		gmtime_r(&now, &tm);
		s->date_len = strftime(s->date, sizeof(s->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (s->date_len == 0)
			s->date[0] = '\0'; /* cannot happen: 29 bytes */
		s->date_sec = now;
	}
	*len = s->date_len;
	return s->date;
}

static void conn_io(struct loop *l, int fd, void *data, int mask);

/* writev without SIGPIPE: a guest that hangs up mid-answer must never kill
 * the sidecar, whatever the process's signal setup.  Through the
 * transport when there is one; -1 with errno set, like writev. */
static ssize_t send_iov(struct conn *c, struct iovec *iov, int cnt)
{
	struct http_server *s = c->srv;
	if (c->tr && s->tr) {
		int want = 0;
		ssize_t n = s->tr->writev(c->tr, c->fd, iov, cnt, &want);
		if (n < 0) {
			errno = (int)-n;
			return -1;
		}
		return n;
	}
	if (cnt == 1)
		return send(c->fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
	return sendmsg(c->fd, &mh, MSG_NOSIGNAL);
}

static int want_out(struct http_server *s, struct conn *c)
{
	/* Writing: stop reading (bounds what a pipelining client can queue). */
	loop_del(s->loop, c->fd, LOOP_READABLE);
	return loop_add(s->loop, c->fd, LOOP_WRITABLE, conn_io, c);
}

/* Sends what it can of head + body; keeps the rest.  Returns 0 when all is
 * out, 1 when some is pending, -1 when the connection must be dropped. */
static int send_response(struct conn *c, const char *head, size_t hlen,
			 const char *body, size_t blen, struct blob *blob)
{
	struct iovec iov[2] = {{(void *)head, hlen}, {(void *)body, blen}};
	ssize_t n = send_iov(c, iov, blen ? 2 : 1);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			blob_unref(blob);
			return -1;
		}
		n = 0;
	}
	size_t done = (size_t)n;
	if (done == hlen + blen) {
		blob_unref(blob);
		return 0;
	}
	/* Keep the unsent head (and a borrowed body) in c->out; a blob body is
	 * kept by reference. */
	size_t keep_head = done < hlen ? hlen - done : 0;
	size_t body_done = done > hlen ? done - hlen : 0;
	size_t keep_body = blob ? 0 : blen - body_done;
	size_t need = keep_head + keep_body;
	if (need) {
		char *o = malloc(need);
		if (!o) {
			blob_unref(blob);
			return -1;
		}
		if (keep_head)
			memcpy(o, head + done, keep_head);
		if (keep_body)
			memcpy(o + keep_head, body + body_done, keep_body);
		free(c->out);
		c->out = o;
		c->out_len = need;
		c->out_off = 0;
	}
	if (blob) {
		c->blob = blob; /* takes the reference */
		c->blob_off = (size_t)(body - blob->data) + body_done;
	} else {
		blob_unref(blob);
	}
	return 1;
}

/* Flushes pending output.  0: all out; 1: still pending; -1: drop. */
static int flush_pending(struct conn *c)
{
	while (c->out_off < c->out_len || c->blob) {
		struct iovec iov[2];
		int cnt = 0;
		if (c->out_off < c->out_len)
			iov[cnt++] = (struct iovec){c->out + c->out_off, c->out_len - c->out_off};
		if (c->blob)
			iov[cnt++] = (struct iovec){c->blob->data + c->blob_off,
						    c->blob->len - c->blob_off};
		ssize_t n = send_iov(c, iov, cnt);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 1;
			if (errno == EINTR)
				continue;
			return -1;
		}
		size_t done = (size_t)n;
		size_t a = c->out_len - c->out_off;
		if (done >= a) {
			c->out_off = c->out_len;
			done -= a;
			if (c->blob) {
				c->blob_off += done;
				if (c->blob_off >= c->blob->len) {
					blob_unref(c->blob);
					c->blob = NULL;
				}
			}
		} else {
			c->out_off += done;
		}
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return 0;
}

/* Formats and sends one response.  Returns as send_response. */
static int respond(struct http_server *s, struct conn *c, const struct http_request *req,
		   struct http_response *res, int keep_alive)
{
	int head_only = req && req->method == HTTP_M_HEAD;
	const char *body = res->blob ? res->blob->data : res->body;
	size_t blen = res->blob ? res->blob->len : res->body_len;
	int http10 = req && req->version_major == 1 && req->version_minor == 0;

	/* Put together piece by piece, not with printf: this runs for every
	 * answer, and musl's printf is most of a small answer's user time.
	 * The room for its longest form is checked once, here. */
	size_t dlen;
	const char *date = date_now(s, &dlen);
	const char *reason = res->status == 200 ? NULL : http_reason(res->status);
	size_t rlen = reason ? strlen(reason) : 0;
	size_t tlen = res->content_type ? strlen(res->content_type) : 0;
	size_t most = sizeof("HTTP/1.1 \r\nDate: \r\n") + 20 + 1 + rlen + dlen +
		      sizeof("Content-Type: \r\n") + tlen + sizeof("Content-Length: \r\n") + 20 +
		      sizeof("Connection: keep-alive\r\n") + res->extra_len + 2;
	if (most > sizeof(s->head)) {
		/* Our own headers never reach 1 KiB; refuse rather than truncate. */
		blob_unref(res->blob);
		return -1;
	}
	char *d = s->head;
	if (res->status == 200) {
		d = sbuf_at_lit(d, "HTTP/1.1 200 OK\r\nDate: "); /* most answers: one move */
	} else {
		d = sbuf_at_lit(d, "HTTP/1.1 ");
		d = sbuf_at_dec(d, (unsigned)res->status);
		*d++ = ' ';
		d = sbuf_at_put(d, reason, rlen);
		d = sbuf_at_lit(d, "\r\nDate: ");
	}
	d = sbuf_at_put(d, date, dlen);
	d = sbuf_at_lit(d, "\r\n");
	if (res->content_type) {
		d = sbuf_at_lit(d, "Content-Type: ");
		d = sbuf_at_put(d, res->content_type, tlen);
		d = sbuf_at_lit(d, "\r\n");
	}
	/* 304 (and 204) carry no body, so no length (RFC 9110 §8.6). */
	int no_body = res->status == 304 || res->status == 204;
	if (!no_body) {
		d = sbuf_at_lit(d, "Content-Length: ");
		d = sbuf_at_dec(d, blen);
		d = sbuf_at_lit(d, "\r\n");
	}
	if (!keep_alive)
		d = sbuf_at_lit(d, "Connection: close\r\n");
	else if (http10)
		d = sbuf_at_lit(d, "Connection: keep-alive\r\n");
	d = sbuf_at_put(d, res->extra, res->extra_len);
	d = sbuf_at_lit(d, "\r\n");
	size_t hlen = (size_t)(d - s->head);
	size_t logged = head_only || no_body ? 0 : blen;
	struct blob *blob = res->blob;
	res->blob = NULL;
	if (head_only || no_body) {
		/* No body goes out: drop the reference here, or a head the kernel
		 * only partly took would be followed by the blob when flushed. */
		blen = 0;
		blob_unref(blob);
		blob = NULL;
	}
	if (blen && blen <= sizeof(s->head) - hlen) {
		/* A small body goes out in one piece with its head, as one
		 * buffer: the kernel then copies one segment, not two. */
		sbuf_copy(s->head + hlen, body, blen);
		hlen += blen;
		blen = 0;
		blob_unref(blob);
		blob = NULL;
	}
	int sent = send_response(c, s->head, hlen, body, blen, blob);
	/* The log line once the answer is out: its making is not between the
	 * guest and its answer (and its time then includes the send). */
	if (s->logger)
		s->logger(req, res->status, logged, s->ud);
	return sent;
}

static void response_reset(struct http_response *res)
{
	res->status = 500;
	res->content_type = NULL;
	res->extra_len = 0;
	res->extra[0] = '\0';
	res->body = NULL;
	res->body_len = 0;
	res->blob = NULL;
	res->close = 0;
	res->park = 0;
	res->park_ms = 0;
	res->park_tag = 0;
}

/* An error the core itself answers (parse error, limit, timeout).  The
 * log line describes this connection's request: its peer, its start, and
 * the method and target only when they came from this very parse
 * (parsed != 0); never what another connection left in the parse state. */
static int respond_error(struct http_server *s, struct conn *c, int status, const char *code,
			 const char *msg, int parsed)
{
	struct http_response *res = &s->res;
	response_reset(res);
	http_res_error(res, status, code, msg);
	c->close_after = 1;
	c->linger = 1;
	struct http_request *r = &s->req;
	if (!parsed)
		memset(r, 0, offsetof(struct http_request, hname));
	r->method = HTTP_M_OTHER;
	r->version_major = 1;
	r->version_minor = 1;
	r->body = (struct http_span){NULL, 0};
	r->peer = &c->peer;
	r->start_us = c->req_us;
	return respond(s, c, r, res, 0);
}

/* ---- request processing --------------------------------------------------- */

/* Handles the requests in data[0..len).  Returns the bytes consumed, or -1
 * when the connection must be dropped at once. */
static ssize_t conn_process(struct http_server *s, struct conn *c, const char *data, size_t len)
{
	size_t off = 0;
	while (off < len && !c->close_after && !c->out && !c->blob) {
		struct http_request *r = &s->req;
		struct http_parse_result pr;
		enum http_parse_status st = http_parse(s->parser, data + off, len - off, r, &pr);
		if (st == HTTP_PARSE_MORE)
			break;
		if (st == HTTP_PARSE_ERROR) {
			const char *msg = pr.detail ? pr.detail : http_reason(pr.status);
			if (respond_error(s, c, pr.status, pr.code, msg, 1) < 0)
				return -1;
			return (ssize_t)len; /* the rest is garbage; we close */
		}
		size_t used = pr.used;
		r->peer = &c->peer;
		r->start_us = c->req_us;
		int keep = pr.keep_alive && !s->draining;
		struct http_response *res = &s->res;
		response_reset(res);
		r->parked = c->parked;
		r->park_expired = c->park_expired;
		r->park_tag = c->parked ? c->park_tag : 0;
		s->handler(r, res, s->ud);
		if (res->close)
			keep = 0;
		if (res->park && !s->draining) {
			/* Not consumed: the bytes stay held and are parsed again. */
			blob_unref(res->blob);
			res->blob = NULL;
			park_hold(s, c, res->park_ms);
			c->park_tag = res->park_tag;
			break;
		}
		park_release(s, c);
		off += used;
		c->started = 0;
		/* The next request's bytes, if any, are held: they came with the
		 * last read or before (one clock read per read, not per answer). */
		c->req_us = c->read_us;
		if (!keep)
			c->close_after = 1;
		if (respond(s, c, r, res, keep) < 0)
			return -1;
	}
	return (ssize_t)off;
}

/* Keeps data[0..len) as held input of c (data may be c->in itself). */
static int conn_hold(struct conn *c, const char *data, size_t len, size_t cap)
{
	if (len == 0) {
		free(c->in);
		c->in = NULL;
		c->in_len = c->in_cap = 0;
		return 0;
	}
	if (data == c->in) {
		c->in_len = len;
		return 0;
	}
	if (c->in && data > c->in && data < c->in + c->in_cap) {
		memmove(c->in, data, len);
		c->in_len = len;
		return 0;
	}
	if (len > cap || !data)
		return -1;
	char *n = malloc(len < 1024 ? 1024 : len);
	if (!n)
		return -1;
	memcpy(n, data, len);
	free(c->in);
	c->in = n;
	c->in_len = len;
	c->in_cap = len < 1024 ? 1024 : len;
	return 0;
}

/* The answer is out: shut the write side (the client reads it to EOF) and
 * drop what the client still sends, until EOF, LINGER_MS or
 * LINGER_MAX_BYTES, whichever comes first.  0, or -1 to close at once. */
static int linger_start(struct http_server *s, struct conn *c, uint64_t now)
{
	if (c->lingering)
		return 0;
	c->lingering = 1;
	conn_hold(c, NULL, 0, 0);
	/* TLS says close_notify first; the records the client still sends are
	 * then dropped undecrypted. */
	if (c->tr && s->tr && s->tr->shutdown)
		s->tr->shutdown(c->tr);
	if (shutdown(c->fd, SHUT_WR) < 0)
		return -1;
	if (loop_mask(s->loop, c->fd) != LOOP_READABLE) {
		loop_del(s->loop, c->fd, LOOP_WRITABLE);
		if (loop_add(s->loop, c->fd, LOOP_READABLE, conn_io, c) < 0)
			return -1;
	}
	conn_move(s, c, L_LINGER, now + LINGER_MS);
	return 0;
}

/* Returns 1 while c lives, 0 once it was freed. */
static int linger_read(struct http_server *s, struct conn *c)
{
	for (int i = 0; i < 16; i++) {
		ssize_t n = read(c->fd, s->scratch, s->scratch_cap);
		if (n > 0) {
			c->lingered += (size_t)n;
			if (c->lingered > LINGER_MAX_BYTES)
				goto done;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 1;
		goto done; /* EOF or a reset: the client is gone */
	}
	return 1; /* a fast sender: the loop comes back after the others */
done:
	conn_free(s, c);
	return 0;
}

/* After I/O: put c on the list its state asks for, or close it. */
/* Returns 1 while c lives, 0 once it was freed. */
static int conn_settle(struct http_server *s, struct conn *c)
{
	uint64_t now = loop_now_ms(s->loop);
	if (c->out || c->blob) {
		if (c->list != L_WRITING)
			conn_move(s, c, L_WRITING, now + s->lim.idle_timeout_ms);
		if (want_out(s, c) < 0) {
			conn_free(s, c);
			return 0;
		}
		return 1;
	}
	if (c->close_after && (!c->linger || linger_start(s, c, now) < 0)) {
		conn_free(s, c);
		return 0;
	}
	if (c->lingering)
		return 1;
	if (loop_mask(s->loop, c->fd) != LOOP_READABLE) {
		loop_del(s->loop, c->fd, LOOP_WRITABLE);
		if (loop_add(s->loop, c->fd, LOOP_READABLE, conn_io, c) < 0) {
			conn_free(s, c);
			return 0;
		}
	}
	if (c->parked) {
		/* Readable still: more bytes run it again, EOF frees it.  A wait
		 * that began after another was answered (pipelined) has its own
		 * deadline: the list entry takes it. */
		if (c->list != L_PARKED || c->deadline != c->park_deadline)
			conn_move(s, c, L_PARKED, c->park_deadline);
		return 1;
	}
	if (c->in_len) {
		/* A partial request: the head timeout runs from its first byte and
		 * is never extended by more bytes (slow-loris). */
		if (!c->started) {
			c->started = 1;
			conn_move(s, c, L_READING, now + s->lim.header_timeout_ms);
		}
		return 1;
	}
	if (s->draining) {
		conn_free(s, c);
		return 0;
	}
	c->started = 0;
	conn_move(s, c, L_IDLE, now + s->lim.idle_timeout_ms);
	return 1;
}

static size_t conn_in_cap_limit(const struct http_server *s)
{
	return s->lim.max_head + s->lim.max_body + 1;
}

/* Returns 1 while c lives, 0 once it was freed. */
static int conn_read(struct http_server *s, struct conn *c)
{
	char *buf;
	size_t cap;
	if (c->in_len == 0) {
		buf = s->scratch;
		cap = s->scratch_cap;
	} else {
		size_t limit = conn_in_cap_limit(s) + s->scratch_cap;
		if (c->in_cap - c->in_len < 4096 && c->in_cap < limit) {
			size_t ncap = c->in_cap * 2;
			if (ncap > limit)
				ncap = limit;
			char *n = realloc(c->in, ncap);
			if (!n) {
				conn_free(s, c);
				return 0;
			}
			c->in = n;
			c->in_cap = ncap;
		}
		buf = c->in;
		cap = c->in_cap;
	}
	size_t have = buf == c->in ? c->in_len : 0;
	/* the loop's wake: the bytes read now were there by then, and the
	 * time this connection waited behind others of the batch counts */
	c->read_us = loop_now_us(s->loop);
	if (have == 0)
		c->req_us = c->read_us; /* these bytes begin a request */
	if (cap == have) {
		/* Held input fills the cap: the request cannot be valid. */
		if (respond_error(s, c, 431, "head_too_large", http_reason(431), 0) < 0) {
			conn_free(s, c);
			return 0;
		}
		conn_hold(c, NULL, 0, 0);
		return conn_settle(s, c);
	}
	ssize_t n;
	c->want = 0;
	if (c->tr && s->tr) {
		n = s->tr->read(c->tr, c->fd, buf + have, cap - have, &c->want);
		if (n < 0) {
			errno = (int)-n;
			n = -1;
		}
	} else {
		n = read(c->fd, buf + have, cap - have);
	}
	if (n == 0) {
		conn_free(s, c);
		return 0;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			conn_free(s, c);
			return 0;
		}
		/* The transport may need the socket writable to read on. */
		if (c->want == LOOP_WRITABLE && !(loop_mask(s->loop, c->fd) & LOOP_WRITABLE) &&
		    loop_add(s->loop, c->fd, LOOP_WRITABLE, conn_io, c) < 0) {
			conn_free(s, c);
			return 0;
		}
		return 1;
	}
	size_t total = have + (size_t)n;
	ssize_t used = conn_process(s, c, buf, total);
	if (used < 0) {
		conn_free(s, c);
		return 0;
	}
	if (!c->close_after &&
	    conn_hold(c, buf + used, total - (size_t)used, conn_in_cap_limit(s) + s->scratch_cap) < 0) {
		conn_free(s, c);
		return 0;
	}
	if (c->close_after)
		conn_hold(c, NULL, 0, 0);
	return conn_settle(s, c);
}

static void conn_io(struct loop *l, int fd, void *data, int mask)
{
	(void)l;
	(void)fd;
	struct conn *c = data;
	struct http_server *s = c->srv;
	if (c->lingering) {
		linger_read(s, c);
		return;
	}
	if ((mask & LOOP_WRITABLE) && !c->out && !c->blob) {
		/* The transport asked for writability in order to read. */
		loop_del(s->loop, c->fd, LOOP_WRITABLE);
		conn_read(s, c);
		return;
	}
	if (mask & LOOP_WRITABLE) {
		int r = flush_pending(c);
		if (r < 0) {
			conn_free(s, c);
			return;
		}
		if (r == 0) {
			/* Answer pipelined requests that waited behind this write. */
			if (c->in_len && !c->close_after) {
				ssize_t used = conn_process(s, c, c->in, c->in_len);
				if (used < 0 || conn_hold(c, c->in + used, c->in_len - (size_t)used,
						     conn_in_cap_limit(s)) < 0) {
					conn_free(s, c);
					return;
				}
			}
			int alive = conn_settle(s, c);
			while (alive && s->tr && s->tr->pending && !c->out && !c->blob &&
			       !c->close_after && s->tr->pending(c->tr))
				alive = conn_read(s, c);
		} else {
			/* Progress resets the stall clock. */
			conn_move(s, c, L_WRITING, loop_now_ms(s->loop) + s->lim.idle_timeout_ms);
		}
		return;
	}
	if (mask & LOOP_READABLE) {
		/* TLS may hold decrypted bytes that epoll cannot signal. */
		int alive = conn_read(s, c);
		while (alive && s->tr && s->tr->pending && !c->out && !c->blob && !c->close_after &&
		       s->tr->pending(c->tr))
			alive = conn_read(s, c);
	}
}

/* ---- accepting ------------------------------------------------------------ */

/* At the cap, make room by closing the connection that matters least: the
 * oldest idle keep-alive one, else the oldest unfinished request (slowest
 * sender).  So 1000 idle or stalled sockets never lock cloud-init out. */
static int make_room(struct http_server *s)
{
	struct conn *victim = s->lists[L_IDLE].head;
	if (!victim)
		victim = s->lists[L_READING].head;
	if (!victim)
		return -1;
	conn_free(s, victim);
	return 0;
}

static int conn_add(struct http_server *s, int fd, const struct sockaddr_storage *peer)
{
	if (s->nconns >= s->lim.max_conns && make_room(s) < 0)
		return -EMFILE;
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->srv = s;
	if (s->tr) {
		c->tr = s->tr->open(s->tr->ctx, fd);
		if (!c->tr) {
			free(c);
			return -EPROTO;
		}
	}
	if (peer)
		c->peer = *peer;
	c->started = 1; /* the head clock runs from accept */
	c->req_us = c->read_us = loop_clock_us();
	c->list = L_READING;
	int r = loop_add(s->loop, fd, LOOP_READABLE, conn_io, c);
	if (r < 0) {
		if (c->tr)
			s->tr->close(c->tr);
		free(c);
		return r;
	}
	s->nconns++;
	c->deadline = loop_now_ms(s->loop) + s->lim.header_timeout_ms;
	clist_append(&s->lists[L_READING], c);
	timer_want(s, c->deadline);
	return 0;
}

int http_server_adopt(struct http_server *s, int fd, const struct sockaddr_storage *peer)
{
	int r = conn_add(s, fd, peer);
	if (r < 0)
		close(fd);
	return r;
}

static void on_accept(struct loop *l, int lfd, void *data, int mask);

static void accept_resume(struct http_server *s)
{
	s->accept_paused_until = 0;
	for (struct listener *ln = s->listeners; ln; ln = ln->next)
		(void)loop_add(s->loop, ln->fd, LOOP_READABLE, on_accept, s);
}

/* No descriptor for the next connection: stop watching the listeners (the
 * clients wait in the backlog) until a connection closes or the pause ends. */
static void accept_pause(struct http_server *s, int err)
{
	if (!s->fd_starved)
		log_error("http: accept: %s with %u connections open; pausing accept until a "
			  "descriptor comes free", strerror(err), s->nconns);
	s->fd_starved = 1;
	s->accept_paused_until = loop_now_ms(s->loop) + ACCEPT_PAUSE_MS;
	for (struct listener *ln = s->listeners; ln; ln = ln->next)
		loop_del(s->loop, ln->fd, LOOP_READABLE);
	timer_want(s, s->accept_paused_until);
}

static void on_accept(struct loop *l, int lfd, void *data, int mask)
{
	(void)l;
	(void)mask;
	struct http_server *s = data;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				accept_pause(s, errno);
			return; /* EAGAIN, or a connection that died in the backlog */
		}
		if (s->fd_starved) {
			log_info("http: accepting again (%u connections open)", s->nconns);
			s->fd_starved = 0;
		}
		int one = 1;
		/* Responses leave in one writev; Nagle would only delay the
		 * tail of a partial write. */
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (conn_add(s, fd, &peer) < 0)
			close(fd);
	}
}

static void on_timer(struct loop *l, int fd, void *data, int mask)
{
	(void)mask;
	struct http_server *s = data;
	loop_timer_ack(fd);
	s->timer_at = 0;
	uint64_t now = loop_clock_ms();
	(void)l;
	uint64_t next = 0;
	if (s->accept_paused_until) {
		if (s->accept_paused_until <= now)
			accept_resume(s);
		else
			next = s->accept_paused_until;
	}
	uint64_t parked_next = park_expire(s, now);
	if (parked_next && (!next || parked_next < next))
		next = parked_next;
	for (int i = 0; i < L_COUNT; i++) {
		struct clist *cl = &s->lists[i];
		if (i == L_PARKED)
			continue;
		/* conn_free unlinks c from the list it is on (c->list): this one,
		 * or the one respond_error moved it to; either way it leaves cl's
		 * head, which the analyzer cannot tie together. */
		// NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
		while (cl->head && cl->head->deadline <= now) {
			struct conn *c = cl->head;
			if (i == L_READING && c->in_len && !c->out && !c->blob) {
				/* Tell a client that started a request why it is cut off;
				 * one non-blocking try, then close either way. */
				respond_error(s, c, 408, "timeout", "request head not received in time", 0);
			}
			conn_free(s, c);
		}
		if (cl->head && (!next || cl->head->deadline < next))
			next = cl->head->deadline;
	}
	if (next)
		timer_want(s, next);
}

/* ---- server lifecycle ----------------------------------------------------- */

struct http_server *http_server_new(struct loop *l, const struct http_limits *lim,
				    http_handler *handler, http_logger *logger, void *ud)
{
	struct http_server *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->loop = l;
	s->lim = *lim;
	s->handler = handler;
	s->logger = logger;
	s->ud = ud;
	struct http_parse_limits pl = {
		.max_head = lim->max_head, .max_body = lim->max_body, .max_headers = lim->max_headers,
		.ud = ud,
	};
	s->parser = http_parser_new(&pl);
	/* Reads of idle connections land here; pipelined requests beyond it
	 * simply wait for the next read. */
	s->scratch_cap = s->lim.max_head * 2 > 16384 ? s->lim.max_head * 2 : 16384;
	s->scratch = malloc(s->scratch_cap);
	s->timer_fd = loop_timer_new();
	if (!s->parser || !s->scratch || s->timer_fd < 0 ||
	    loop_add(l, s->timer_fd, LOOP_READABLE, on_timer, s) < 0) {
		http_server_free(s);
		return NULL;
	}
	return s;
}

void http_server_free(struct http_server *s)
{
	if (!s)
		return;
	s->draining = 0; /* no drained callback from here */
	for (int i = 0; i < L_COUNT; i++)
		while (s->lists[i].head) /* conn_free unlinks it (see on_timer) */
			conn_free(s, s->lists[i].head); // NOLINT(clang-analyzer-unix.Malloc)
	while (s->listeners)
		http_server_close_listener(s, s->listeners->fd);
	if (s->timer_fd >= 0) {
		loop_del(s->loop, s->timer_fd, LOOP_READABLE);
		close(s->timer_fd);
	}
	free(s->scratch);
	http_parser_free(s->parser);
	free(s);
}

int http_server_listen_fd(struct http_server *s, int fd)
{
	struct listener *ln = calloc(1, sizeof(*ln));
	if (!ln)
		return -ENOMEM;
	int r = loop_add(s->loop, fd, LOOP_READABLE, on_accept, s);
	if (r < 0) {
		free(ln);
		return r;
	}
	ln->fd = fd;
	ln->next = s->listeners;
	s->listeners = ln;
	return 0;
}

void http_server_close_listener(struct http_server *s, int fd)
{
	for (struct listener **pp = &s->listeners; *pp; pp = &(*pp)->next) {
		if ((*pp)->fd == fd) {
			struct listener *ln = *pp;
			*pp = ln->next;
			loop_del(s->loop, fd, LOOP_READABLE);
			close(fd);
			free(ln);
			return;
		}
	}
}

void http_server_set_transport(struct http_server *s, const struct http_transport *t)
{
	s->tr = t;
}

void http_server_set_body_limit(struct http_server *s, http_body_limit *fn)
{
	http_parser_set_body_limit(s->parser, fn, s->ud);
}

unsigned http_server_conn_count(const struct http_server *s)
{
	return s->nconns;
}

void http_server_drain(struct http_server *s, void (*done)(void *), void *ud)
{
	s->draining = 1;
	s->drained = done;
	s->drained_ud = ud;
	while (s->listeners)
		http_server_close_listener(s, s->listeners->fd);
	/* Idle keep-alive connections and fresh ones with no bytes have nothing
	 * in flight: close them now.  The rest finish their request. */
	while (s->lists[L_IDLE].head) /* conn_free unlinks it (see on_timer) */
		conn_free(s, s->lists[L_IDLE].head); // NOLINT(clang-analyzer-unix.Malloc)
	/* Waiting requests are answered now, with what there is. */
	park_drain(s);
	struct conn *c = s->lists[L_READING].head;
	while (c) {
		struct conn *next = c->next;
		if (!c->in_len)
			conn_free(s, c);
		c = next;
	}
	if (s->nconns == 0 && s->drained) {
		s->drained = NULL;
		done(ud);
	}
}

/* ---- listening sockets ---------------------------------------------------- */

int http_listen_addr(const char *addr, int backlog, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t slen;
	int r = addr_parse(addr, &ss, &slen);
	if (r < 0) {
		snprintf(err, errlen, "invalid listen address '%s' (want HOST:PORT, [V6]:PORT or :PORT)",
			 addr);
		return r;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return r;
	}
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, slen) < 0 || listen(fd, backlog) < 0) {
		r = -errno;
		snprintf(err, errlen, "listen on %s: %s", addr, strerror(errno));
		close(fd);
		return r;
	}
	return fd;
}

/* ---- requests that wait (res->park) ----------------------------------------
 *
 * A waiting request keeps its connection and its bytes, held unconsumed in
 * the connection's input, and nothing else; it sits on the L_PARKED list,
 * sorted by deadline like every list.  http_server_wake() runs the handler
 * on every waiting request again; at its deadline a request is run once
 * more with req->park_expired set, and the handler must answer then. */

static void park_hold(struct http_server *s, struct conn *c, unsigned park_ms)
{
	if (!c->parked) {
		c->parked = 1;
		c->park_deadline = loop_now_ms(s->loop) + park_ms;
		s->nparked++;
	}
	c->park_expired = 0;
}

static void park_release(struct http_server *s, struct conn *c)
{
	if (c->parked) {
		c->parked = 0;
		c->park_expired = 0;
		c->park_answers++;
		s->nparked--;
	}
}

/* Runs a waiting request again.  1 while c lives, 0 once freed. */
static int unpark(struct http_server *s, struct conn *c)
{
	ssize_t used = conn_process(s, c, c->in, c->in_len);
	if (used < 0) {
		conn_free(s, c);
		return 0;
	}
	if (!c->close_after && conn_hold(c, c->in + used, c->in_len - (size_t)used,
				    conn_in_cap_limit(s) + s->scratch_cap) < 0) {
		conn_free(s, c);
		return 0;
	}
	if (c->close_after)
		conn_hold(c, NULL, 0, 0);
	return conn_settle(s, c);
}

/* Runs c's expired wait once more: the handler must answer it now.  A
 * connection still waiting on that same request is dropped; one whose next
 * pipelined request started a wait of its own keeps it. */
static void expire_one(struct http_server *s, struct conn *c)
{
	unsigned answers = c->park_answers;
	c->park_expired = 1;
	if (unpark(s, c) && c->parked && c->park_answers == answers)
		conn_free(s, c); /* the handler must answer once expired */
}

void http_server_wake(struct http_server *s)
{
	for (struct conn *c = s->lists[L_PARKED].head, *nx; c; c = nx) {
		nx = c->next;
		unpark(s, c);
	}
}

unsigned http_server_parked(const struct http_server *s)
{
	return s->nparked;
}

static uint64_t park_expire(struct http_server *s, uint64_t now)
{
	uint64_t next = 0;
	for (struct conn *c = s->lists[L_PARKED].head, *nx; c; c = nx) {
		nx = c->next;
		if (c->deadline <= now) {
			expire_one(s, c);
		} else if (!next || c->deadline < next) {
			next = c->deadline;
		}
	}
	return next;
}

static void park_drain(struct http_server *s)
{
	for (struct conn *w = s->lists[L_PARKED].head, *nx; w; w = nx) {
		nx = w->next;
		expire_one(s, w);
	}
}
