#include "wait.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "answer.h"
#include "config.h"
#include "log.h"
#include "sbuf.h"

int wait_params(const struct http_request *req, struct wait *w, struct http_response *res)
{
	char v[64];
	const char *q = req->query.p;
	size_t qn = req->query.n;
	memset(w, 0, sizeof(*w));
	int n = answer_query_param(q, qn, "wait_for_change", v, sizeof(v));
	if (n == -ENOENT || (n >= 0 && strcmp(v, "false") == 0))
		return 0;
	if (n < 0 || strcmp(v, "true") != 0) {
		http_res_error(res, 400, "bad_wait_for_change", "wait_for_change: want true or false");
		return -1;
	}
	w->on = 1;
	n = answer_query_param(q, qn, "last_etag", v, sizeof(v));
	/* GCE's own use (maintenance-event?wait_for_change=true): without a
	 * last_etag, wait for the next change from what is there now. */
	w->from_now = n == -ENOENT || n == 0;
	const char *h = v;
	if (n == 18 && v[0] == '"' && v[17] == '"') { /* the ETag as sent, quotes and all */
		v[17] = '\0';
		h = v + 1;
		n = 16;
	}
	int ok = n == 16 || w->from_now;
	for (int i = 0; ok && !w->from_now && i < 16; i++) {
		int d = sbuf_hexval(h[i]);
		ok = d >= 0 && !(h[i] >= 'A' && h[i] <= 'F'); /* as we write it: lower case */
		w->last = w->last << 4 | (uint64_t)(d < 0 ? 0 : d);
	}
	if (!ok) {
		http_res_error(res, 400, "bad_last_etag",
			       "last_etag: want the ETag of the last answer, 16 hex digits");
		return -1;
	}
	w->timeout_sec = 60;
	n = answer_query_param(q, qn, "timeout_sec", v, sizeof(v));
	if (n != -ENOENT &&
	    (n < 0 || config_parse_uint(v, 1, WAIT_MAX_SEC, &w->timeout_sec) < 0)) {
		http_res_error(res, 400, "bad_timeout", "timeout_sec: want whole seconds, 1..3600");
		return -1;
	}
	return 0;
}

void wait_or_answer(const struct wait *w, uint64_t tag, const struct http_request *req,
		    struct http_response *res, struct http_server *http)
{
	/* From now: the tag of the first run, kept with the parked request. */
	uint64_t last = !w->from_now ? w->last : req->parked ? req->park_tag : tag;
	if (tag != last || req->park_expired)
		return;
	if (!req->parked && http && http_server_parked(http) >= WAIT_WAITERS_MAX) {
		blob_unref(res->blob);
		res->blob = NULL;
		res->extra_len = 0;
		res->extra[0] = '\0';
		http_res_error(res, 503, "too_many_waiters", "too many requests wait for a change");
		http_res_header(res, "Retry-After", "1");
		return;
	}
	res->park = 1;
	res->park_ms = w->timeout_sec * 1000u;
	res->park_tag = last;
}

static void on_change(struct loop *l, int fd, void *data, int mask)
{
	struct wait_watch *ww = data;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	(void)l;
	(void)mask;
	while (read(fd, buf, sizeof(buf)) > 0)
		; /* which file does not matter: every waiter looks again */
	if (ww->http)
		http_server_wake(ww->http);
}

void wait_watch_add(struct wait_watch *ww, const char *file, int is_dir)
{
	char dir[4096];
	if (ww->fd < 0 || !file || snprintf(dir, sizeof(dir), "%s", file) >= (int)sizeof(dir))
		return;
	char *slash = strrchr(dir, '/');
	if (!is_dir) {
		if (!slash)
			return;
		*slash = '\0';
		if (!dir[0])
			return;
	}
	uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE |
			IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
	/* A folder that is not there holds nothing to wait for (no token
	 * volume in `serve` tests, say): only other failures are worth a line. */
	if (inotify_add_watch(ww->fd, dir, mask) < 0 && errno != ENOENT)
		log_error("wait: cannot watch %s (%s): waiters there see changes at their timeout",
			  dir, strerror(errno));
}

void wait_watch_start(struct wait_watch *ww, struct loop *l, struct http_server *http)
{
	ww->loop = l;
	ww->http = http;
	ww->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ww->fd < 0 || loop_add(l, ww->fd, LOOP_READABLE, on_change, ww) < 0) {
		log_error("wait: no inotify (%s): waiters see changes at their timeout", strerror(errno));
		if (ww->fd >= 0)
			close(ww->fd);
		ww->fd = -1;
	}
}

void wait_watch_stop(struct wait_watch *ww)
{
	if (ww->fd < 0)
		return;
	loop_del(ww->loop, ww->fd, LOOP_READABLE);
	close(ww->fd);
	ww->fd = -1;
}
