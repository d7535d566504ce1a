/* serve: what both mains share.  The operator endpoints' method rule,
 * /healthz and /metrics (a 500 when the text outgrew its buffer), the
 * access line, the open-files limit raised to the hard one, and SIGTERM
 * through the signalfd: the server drains (a request in flight is
 * answered in full) and then the loop stops; when the access lines are
 * written. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "log.h"
#include "loop.h"
#include "sbuf.h"
#include "serve.h"

static struct http_request req_for(enum http_method m, const char *method, const char *path)
{
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.method = m;
	rq.method_name = (struct http_span){method, strlen(method)};
	rq.path = (struct http_span){path, strlen(path)};
	rq.target = rq.path;
	return rq;
}

static int has_line(const struct http_response *res, const char *line)
{
	char buf[sizeof(res->extra) + 1];
	memcpy(buf, res->extra, res->extra_len);
	buf[res->extra_len] = '\0';
	return strstr(buf, line) != NULL;
}

static void test_ops_method(void **state)
{
	(void)state;
	static const struct {
		enum http_method m;
		const char *name;
		int ok;
	} rows[] = {
		{HTTP_M_GET, "GET", 1},	   {HTTP_M_HEAD, "HEAD", 1},   {HTTP_M_POST, "POST", 0},
		{HTTP_M_PUT, "PUT", 0},	   {HTTP_M_OTHER, "DELETE", 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct http_request rq = req_for(rows[i].m, rows[i].name, "/metrics");
		struct http_response res;
		memset(&res, 0, sizeof(res));
		int ok = serve_ops_method_ok(&rq, &res);
		if (ok != rows[i].ok)
			fail_msg("%s: %d", rows[i].name, ok);
		if (ok) {
			assert_int_equal(res.status, 0); /* untouched */
			continue;
		}
		assert_int_equal(res.status, 405);
		assert_true(has_line(&res, "Allow: GET, HEAD\r\n"));
		assert_non_null(strstr(res.body, "\"error\":\"method_not_allowed\""));
	}
}

static void test_ops_healthz(void **state)
{
	(void)state;
	struct http_request rq = req_for(HTTP_M_GET, "GET", "/healthz");
	struct http_response res;
	memset(&res, 0, sizeof(res));
	assert_int_equal(serve_ops_healthz(&rq, &res), 1);
	assert_int_equal(res.status, 200);
	assert_string_equal(res.content_type, "text/plain");
	assert_int_equal(res.body_len, 2);
	assert_memory_equal(res.body, "ok", 2);
	/* Other paths, near misses too, are not its. */
	static const char *const other[] = {"/readyz", "/healthz/", "/healthzz", "/Healthz", "/"};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		rq = req_for(HTTP_M_GET, "GET", other[i]);
		memset(&res, 0, sizeof(res));
		if (serve_ops_healthz(&rq, &res) != 0 || res.status != 0)
			fail_msg("%s: handled", other[i]);
	}
}

static void test_ops_metrics(void **state)
{
	(void)state;
	char buf[64];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	sbuf_puts(&b, "imds_requests_total 3\n");
	struct http_response res;
	memset(&res, 0, sizeof(res));
	serve_ops_metrics(&res, &b);
	assert_int_equal(res.status, 200);
	assert_string_equal(res.content_type, "text/plain; version=0.0.4");
	assert_int_equal(res.body_len, strlen("imds_requests_total 3\n"));
	assert_memory_equal(res.body, "imds_requests_total 3\n", res.body_len);
	/* Outgrown: never a cut text, a 500 saying so. */
	char small[8];
	b = (struct sbuf)SBUF_INIT(small, sizeof(small));
	sbuf_puts(&b, "imds_requests_total 3\n");
	assert_true(b.overflow);
	memset(&res, 0, sizeof(res));
	serve_ops_metrics(&res, &b);
	assert_int_equal(res.status, 500);
	assert_non_null(strstr(res.body, "metrics buffer too small"));
}

static void test_raise_nofile(void **state)
{
	(void)state;
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rlim_t hard = rl.rlim_max;
	/* Lower the soft limit (always allowed), then raise it back. */
	rl.rlim_cur = hard > 64 ? 64 : hard;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	unsigned long got = serve_raise_nofile();
	assert_true(got == (unsigned long)hard);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_true(rl.rlim_cur == hard);
	/* Already at the hard limit: stays there. */
	assert_true(serve_raise_nofile() == (unsigned long)hard);
}

/* The access line as written to stderr (captured in a file). */
/* stderr into a temporary file (what the log writes), and back: the
 * file's whole text into out (NUL-terminated), the file closed. */
static int stderr_to(FILE *tf)
{
	fflush(stderr);
	log_flush();
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fileno(tf), STDERR_FILENO), STDERR_FILENO);
	return saved;
}

static void stderr_back(int saved, FILE *tf, char *out, size_t cap)
{
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	ssize_t n = pread(fileno(tf), out, cap - 1, 0);
	assert_true(n > 0);
	out[n] = '\0';
	fclose(tf);
}

static void test_access_log(void **state)
{
	(void)state;
	FILE *tf = tmpfile();
	assert_non_null(tf);
	int saved = stderr_to(tf);
	struct sockaddr_storage peer;
	memset(&peer, 0, sizeof(peer));
	struct sockaddr_in *in = (struct sockaddr_in *)&peer;
	in->sin_family = AF_INET;
	in->sin_port = htons(40000);
	assert_int_equal(inet_pton(AF_INET, "10.0.2.2", &in->sin_addr), 1);
	struct http_request rq = req_for(HTTP_M_GET, "GET", "/latest/meta-data/\x01x");
	rq.peer = &peer;
	rq.start_us = loop_clock_us();
	serve_access_log(&rq, 404, 123, NULL);
	rq.start_us = 0; /* no start: 0 µs */
	rq.peer = NULL;
	serve_access_log(&rq, 200, 7, NULL);
	log_flush();
	char out[1024];
	stderr_back(saved, tf, out, sizeof(out));
	char *second = strchr(out, '\n');
	assert_non_null(second);
	*second++ = '\0';
	assert_non_null(strstr(out, " 10.0.2.2 GET /latest/meta-data/"));
	assert_non_null(strstr(out, " 404 123 "));
	assert_null(strchr(out, '\x01')); /* a control byte never reaches the log */
	assert_non_null(strstr(second, " - GET "));
	assert_non_null(strstr(second, " 200 7 0us\n"));
}

static void handler(const struct http_request *req, struct http_response *res, void *ud)
{
	(void)req;
	(void)ud;
	http_res_text(res, 200, "text/plain", "done", 4);
}

/* SIGTERM with a request half sent: the loop goes on until it is
 * answered in full, then stops by itself (loop_run returns). */
static void test_sigterm_drains_then_stops(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	struct http_limits lim = HTTP_LIMITS_DEFAULT;
	struct http_server *srv = http_server_new(l, &lim, handler, NULL, NULL);
	assert_non_null(srv);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(http_server_adopt(srv, sv[1], NULL), 0);
	struct serve_signals ss;
	assert_int_equal(serve_signals_install(&ss, l, srv), 0);
	assert_true(ss.fd >= 0);
	assert_int_equal(loop_mask(l, ss.fd), LOOP_READABLE);

	const char *head = "GET /x HTTP/1.1\r\nHost: a\r\n";
	assert_int_equal(write(sv[0], head, strlen(head)), (ssize_t)strlen(head));
	for (int i = 0; i < 3; i++)
		(void)loop_once(l, 0);
	assert_int_equal(raise(SIGTERM), 0); /* blocked: waits in the signalfd */
	for (int i = 0; i < 3; i++)
		(void)loop_once(l, 0);
	/* Consumed, watched no more; the connection is still open. */
	assert_int_equal(loop_mask(l, ss.fd), LOOP_NONE);
	assert_int_equal(http_server_conn_count(srv), 1);
	assert_int_equal(write(sv[0], "\r\n", 2), 2);
	alarm(20); /* a loop that never stops fails here, not forever */
	assert_int_equal(loop_run(l), 0);
	alarm(0);
	assert_int_equal(http_server_conn_count(srv), 0);
	char out[512];
	ssize_t n = read(sv[0], out, sizeof(out) - 1);
	assert_true(n > 0);
	out[n] = '\0';
	assert_memory_equal(out, "HTTP/1.1 200", 12);
	assert_non_null(strstr(out, "\r\n\r\ndone"));
	serve_signals_close(&ss);
	assert_int_equal(ss.fd, -1);
	serve_signals_close(&ss); /* twice: safe */
	close(sv[0]);
	http_server_free(srv);
	loop_free(l);
}

/* When the access lines go out (serve.h): not at every idle moment (a
 * keep-alive client's lines wait for the timer, armed once per batch),
 * within SERVE_LOG_DELAY_MS by the timer, and at the next idle moment once
 * the client hung up or an info line came.  stderr goes to a file, whose size says what was
 * written. */
static void test_log_flush_rule(void **state)
{
	(void)state;
	FILE *tf = tmpfile();
	assert_non_null(tf);
	int saved = stderr_to(tf);
	struct loop *l = loop_new(1024);
	struct http_limits lim = HTTP_LIMITS_DEFAULT;
	struct http_server *srv = http_server_new(l, &lim, handler, serve_access_log, NULL);
	assert_non_null(srv);
	struct serve_signals ss = {.fd = -1};
	assert_int_equal(serve_signals_install(&ss, l, srv), 0);
	assert_true(ss.log_tfd >= 0);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(http_server_adopt(srv, sv[1], NULL), 0);
	const char *rq = "GET /kept HTTP/1.1\r\nHost: a\r\n\r\n";
	char out[512];
	/* a keep-alive answer: the line waits, the timer is set */
	assert_int_equal(write(sv[0], rq, strlen(rq)), (ssize_t)strlen(rq));
	for (int i = 0; i < 4; i++)
		(void)loop_once(l, 0);
	assert_true(read(sv[0], out, sizeof(out)) > 0);
	for (int i = 0; i < 4; i++)
		(void)loop_once(l, 0);
	assert_int_equal(log_pending(NULL), 1);
	assert_int_equal(ss.log_armed, 1);
	assert_int_equal(lseek(fileno(tf), 0, SEEK_END), 0);
	/* the timer writes it (within 10 ms; 2 s allowed) */
	for (int i = 0; i < 200 && log_pending(NULL); i++)
		(void)loop_once(l, 10);
	assert_int_equal(log_pending(NULL), 0);
	assert_int_equal(ss.log_armed, 0);
	off_t after_timer = lseek(fileno(tf), 0, SEEK_END);
	assert_true(after_timer > 0);
	/* the next answer, then the client hangs up: written at once, before
	 * the timer (armed again) could fire */
	assert_int_equal(write(sv[0], rq, strlen(rq)), (ssize_t)strlen(rq));
	for (int i = 0; i < 4; i++)
		(void)loop_once(l, 0);
	assert_int_equal(log_pending(NULL), 1);
	close(sv[0]);
	uint64_t t0 = loop_clock_us();
	for (int i = 0; i < 4; i++)
		(void)loop_once(l, 0);
	assert_true(loop_clock_us() - t0 < SERVE_LOG_DELAY_MS * 1000u);
	assert_int_equal(log_pending(NULL), 0);
	assert_int_equal(http_server_conn_count(srv), 0);
	off_t after_close = lseek(fileno(tf), 0, SEEK_END);
	assert_true(after_close > after_timer);
	/* an info line: at the next idle moment too */
	log_info("flush-rule info line");
	assert_int_equal(log_pending(NULL), 1);
	(void)loop_once(l, 0);
	assert_int_equal(log_pending(NULL), 0);
	assert_true(lseek(fileno(tf), 0, SEEK_END) > after_close);
	char text[1024];
	stderr_back(saved, tf, text, sizeof(text));
	char *second = strchr(text, '\n');
	assert_non_null(second);
	assert_non_null(strstr(text, " GET /kept 200 4 "));
	assert_non_null(strstr(second + 1, " GET /kept 200 4 "));
	assert_non_null(strstr(second + 1, " info: flush-rule info line\n"));
	serve_signals_close(&ss);
	assert_int_equal(ss.log_tfd, -1);
	serve_signals_close(&ss); /* twice: safe */
	http_server_free(srv);
	loop_free(l);
}

/* SIGINT with nothing open: the loop stops at once. */
static void test_sigint_idle_stops(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	struct http_limits lim = HTTP_LIMITS_DEFAULT;
	struct http_server *srv = http_server_new(l, &lim, handler, NULL, NULL);
	struct serve_signals ss;
	assert_int_equal(serve_signals_install(&ss, l, srv), 0);
	assert_int_equal(raise(SIGINT), 0);
	alarm(20);
	assert_int_equal(loop_run(l), 0);
	alarm(0);
	serve_signals_close(&ss);
	http_server_free(srv);
	loop_free(l);
}

int main(void)
{
	log_init("test_serve");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_method),
		cmocka_unit_test(test_ops_healthz),
		cmocka_unit_test(test_ops_metrics),
		cmocka_unit_test(test_raise_nofile),
		cmocka_unit_test(test_access_log),
		cmocka_unit_test(test_sigterm_drains_then_stops),
		cmocka_unit_test(test_sigint_idle_stops),
		cmocka_unit_test(test_log_flush_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
