/* http_conn: the HTTP core's connections, shared by its two files —
 * http.c (accepting, reading, answering, timeouts, lingering close,
 * draining) and http_park.c (requests that wait: res->park).  Internal to
 * the core: nothing outside src/core/http*.c includes it. */
#ifndef IMDS_HTTP_CONN_H
#define IMDS_HTTP_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "blob.h"
#include "http.h"
#include "loop.h"

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
	int close_after;        /* close once output drains */
	int linger;             /* ... and drain input first (after an error answer) */
	int lingering;          /* answered; reading and dropping input until EOF */
	size_t lingered;        /* bytes dropped so far */
	int parked;             /* its request waits (res->park), held in `in` */
	int park_expired;       /* ... and its wait is over */
	uint64_t park_tag;      /* the handler's note (res->park_tag) */
	uint64_t park_deadline; /* ms */
	unsigned park_answers;  /* waits answered on this connection (park_release) */
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
	char head[1024];
	time_t date_sec;
	char date[40];
};

/* http.c, for http_park.c.  Steps that may free the connection return 1
 * while it lives and 0 once it is freed (see the top of http.c). */
void conn_free(struct http_server *s, struct conn *c);
ssize_t conn_process(struct http_server *s, struct conn *c, const char *data, size_t len);
int conn_hold(struct conn *c, const char *data, size_t len, size_t cap);
int conn_settle(struct http_server *s, struct conn *c);
size_t conn_in_cap_limit(const struct http_server *s);

/* http_park.c, for http.c. */
/* The handler asked c's request to wait park_ms (counted from its first park). */
void park_hold(struct http_server *s, struct conn *c, unsigned park_ms);
/* c's request was answered: it waits no more. */
void park_release(struct http_server *s, struct conn *c);
/* Runs the waiting requests whose deadline passed once more, expired (the
 * handler must answer).  The earliest deadline still ahead, or 0. */
uint64_t park_expire(struct http_server *s, uint64_t now);
/* Answers every waiting request now (SIGTERM). */
void park_drain(struct http_server *s);

#endif
