/* wait: ?wait_for_change=true&last_etag=<hex>&timeout_sec=<s> on the data
 * paths (as GCP's metadata server).
 *
 * An answer whose ETag differs from last_etag goes out at once; otherwise
 * the request is parked in the HTTP core (its connection and bytes, nothing
 * else) until the data changes or timeout_sec passes.  A change is seen
 * through one inotify watch per folder holding a data file (kubelet swaps a
 * `..data` link there); any event wakes every waiter, and each looks again. */
#ifndef IMDS_WAIT_H
#define IMDS_WAIT_H

#include <stdint.h>

#include "http.h"
#include "loop.h"

/* At most this many requests wait at once (503 past it), each at most
 * WAIT_MAX_SEC. */
#define WAIT_WAITERS_MAX 64
#define WAIT_MAX_SEC 3600

struct wait {
	int on;
	int from_now;          /* no last_etag (or empty): wait for the next change, as GCE */
	uint64_t last;         /* last_etag */
	unsigned timeout_sec;
};

/* Reads the wait parameters of req into w (w->on 0: no wait asked).  0, or
 * -1 with a 400 naming the parameter in res.  Without last_etag (or with
 * an empty one) the request waits for the next change from the data it
 * would be answered now, as GCE's metadata server: the tag of its first run
 * rides with the parked request (res->park_tag). */
int wait_params(const struct http_request *req, struct wait *w, struct http_response *res);

/* The answer in res carries tag: when it is the one the client has and its
 * wait is not over, turn res into a park (or a 503 when WAIT_WAITERS_MAX
 * wait already).  http may be NULL (no server: unit tests). */
void wait_or_answer(const struct wait *w, uint64_t tag, const struct http_request *req,
		    struct http_response *res, struct http_server *http);

/* The inotify watch on the data files' folders. */
struct wait_watch {
	struct loop *loop;
	struct http_server *http;
	int fd; /* -1: none */
};

/* Starts watching (failures are logged: waiters then see changes at their
 * timeout).  Folders that do not exist are skipped. */
void wait_watch_start(struct wait_watch *ww, struct loop *l, struct http_server *http);
/* One watch for the folder holding file (is_dir: file is the folder). */
void wait_watch_add(struct wait_watch *ww, const char *file, int is_dir);
void wait_watch_stop(struct wait_watch *ww);

#endif
