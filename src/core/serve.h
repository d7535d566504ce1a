/* serve: what both programs' mains share around the HTTP core — the
 * access-log callback, and SIGTERM/SIGINT as a signalfd in the loop that
 * drains the server (in-flight requests finish) and then stops the loop. */
#ifndef IMDS_SERVE_H
#define IMDS_SERVE_H

#include <stddef.h>

#include "http.h"
#include "loop.h"

struct serve_signals {
	struct loop *loop;
	struct http_server *http;
	int fd;
	int log_tfd;   /* the log's flush timer (timerfd), -1 without */
	int log_armed; /* set to fire, not yet fired */
};

/* Raises the soft RLIMIT_NOFILE to the hard limit (a container's soft
 * limit is often 1024, below what the connection cap needs).  Returns the
 * soft limit now in force, or 0 when it cannot be read. */
unsigned long serve_raise_nofile(void);

/* The http_logger of both programs: one access line per request. */
void serve_access_log(const struct http_request *req, int status, size_t bytes, void *ud);

/* The operator's endpoints of a program (/healthz, /readyz, /metrics):
 * GET and HEAD only.  1 when req may go on; else 0, res holding the 405
 * with its Allow.  /healthz answered "ok" here too (1 returned: handled). */
int serve_ops_method_ok(const struct http_request *req, struct http_response *res);
int serve_ops_healthz(const struct http_request *req, struct http_response *res);
/* /metrics: the Prometheus text in b, or a 500 when it outgrew its buffer. */
struct sbuf;
void serve_ops_metrics(struct http_response *res, const struct sbuf *b);

/* Blocks SIGTERM and SIGINT, watches them through a signalfd in l, and
 * writes the buffered log lines: at the loop's next idle moment once a
 * connection closed (log_soon) or an info line came; else (access lines
 * only) SERVE_LOG_DELAY_MS after the batch's first line (a timerfd, armed
 * once per batch); and whenever the buffer is full.  Not at every idle
 * moment: with one keep-alive client whose next request comes straight
 * after its answer, that was a write(2) and a second epoll_wait per answer,
 * 3.5 us of its 22-30 here.  The price: a SIGKILL (an OOM kill) loses at
 * most the access lines of the last SERVE_LOG_DELAY_MS; error lines are
 * written at once, and SIGTERM drains and exits, writing all.  0 or
 * -errno. */
#define SERVE_LOG_DELAY_MS 10u
int serve_signals_install(struct serve_signals *ss, struct loop *l, struct http_server *http);
/* Closes the signalfd and the log's timer (the lines still buffered are
 * written at exit); safe on a never-installed (zeroed, fd -1) struct. */
void serve_signals_close(struct serve_signals *ss);

#endif
