#include "serve.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "log.h"
#include "sbuf.h"

unsigned long serve_raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t cur = rl.rlim_cur;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			rl.rlim_cur = cur;
	}
	return (unsigned long)rl.rlim_cur;
}

void serve_access_log(const struct http_request *req, int status, size_t bytes, void *ud)
{
	(void)ud;
	uint64_t us = req->start_us ? loop_clock_us() - req->start_us : 0;
	log_access(req->peer, req->method_name.p, req->method_name.n, req->path.p, req->path.n,
		   req->plain, status, bytes, us);
}

static void drained(void *ud)
{
	loop_stop(ud);
}

static void on_signal(struct loop *l, int fd, void *data, int mask)
{
	(void)mask;
	struct serve_signals *ss = data;
	struct signalfd_siginfo si;
	if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	log_info("signal %u: finishing %u open connection(s)", si.ssi_signo,
		 http_server_conn_count(ss->http));
	loop_del(l, fd, LOOP_READABLE); /* a second signal changes nothing */
	http_server_drain(ss->http, drained, l);
}

static void flush_log(struct loop *l, void *data)
{
	(void)l;
	(void)data;
	log_flush();
}

/* The loop's idle hook asks this every iteration: no syscall unless a
 * batch starts (the timer armed once).  Without a timer: every idle
 * moment, as before. */
static int flush_due(void *data)
{
	struct serve_signals *ss = data;
	if (!log_pending(NULL))
		return 0;
	if (log_soon_asked() || ss->log_tfd < 0)
		return 1;
	if (!ss->log_armed) {
		if (loop_timer_arm(ss->log_tfd, loop_now_ms(ss->loop) + SERVE_LOG_DELAY_MS) < 0)
			return 1;
		ss->log_armed = 1;
	}
	return 0;
}

static void on_log_timer(struct loop *l, int fd, void *data, int mask)
{
	(void)l;
	(void)mask;
	struct serve_signals *ss = data;
	uint64_t n;
	(void)!read(fd, &n, sizeof(n));
	ss->log_armed = 0;
	log_flush();
}

int serve_signals_install(struct serve_signals *ss, struct loop *l, struct http_server *http)
{
	ss->loop = l;
	ss->http = http;
	ss->log_tfd = -1;
	ss->log_armed = 0;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	ss->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (ss->fd < 0)
		return -errno;
	int r = loop_add(l, ss->fd, LOOP_READABLE, on_signal, ss);
	if (r < 0)
		return r;
	/* The log's lines: see serve.h.  Without a timer (no descriptor left)
	 * they are written at every idle moment, which costs only time. */
	int t = loop_timer_new();
	if (t >= 0 && loop_add(l, t, LOOP_READABLE, on_log_timer, ss) == 0)
		ss->log_tfd = t;
	else if (t >= 0)
		close(t);
	loop_set_when_idle(l, flush_due, flush_log, ss);
	return 0;
}

void serve_signals_close(struct serve_signals *ss)
{
	if (ss->fd >= 0) {
		loop_del(ss->loop, ss->fd, LOOP_READABLE);
		close(ss->fd);
	}
	ss->fd = -1;
	if (ss->loop && ss->log_tfd >= 0) {
		loop_del(ss->loop, ss->log_tfd, LOOP_READABLE);
		close(ss->log_tfd);
	}
	ss->log_tfd = -1;
}

int serve_ops_method_ok(const struct http_request *req, struct http_response *res)
{
	if (req->method == HTTP_M_GET || req->method == HTTP_M_HEAD)
		return 1;
	http_res_error(res, 405, "method_not_allowed", "only GET and HEAD are supported");
	http_res_header(res, "Allow", "GET, HEAD");
	return 0;
}

int serve_ops_healthz(const struct http_request *req, struct http_response *res)
{
	if (!http_span_eq(req->path, "/healthz"))
		return 0;
	http_res_text(res, 200, "text/plain", "ok", 2);
	return 1;
}

void serve_ops_metrics(struct http_response *res, const struct sbuf *b)
{
	if (b->overflow)
		http_res_error(res, 500, "internal", "metrics buffer too small");
	else
		http_res_text(res, 200, "text/plain; version=0.0.4", b->p, b->len);
}
