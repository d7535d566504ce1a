/* The HTTP core fed raw bytes through a socketpair, driven one loop step at
 * a time: tables of requests and the status each must get, every
 * truncated prefix of the valid ones, and byte-at-a-time feeding. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "loop.h"
#include "../../fuzz/peer_close.h"

struct seen {
	int calls;
	enum http_method method;
	char path[256], query[256], body[64];
	unsigned nheaders;
	unsigned vmajor, vminor;
};

static struct seen seen;
static struct blob *blob_body; /* what /blob answers */

static void copy_span(char *dst, size_t cap, struct http_span s)
{
	size_t n = s.n < cap - 1 ? s.n : cap - 1;
	if (n)
		memcpy(dst, s.p, n);
	dst[n] = '\0';
}

static void handler(const struct http_request *req, struct http_response *res, void *ud)
{
	(void)ud;
	seen.calls++;
	seen.method = req->method;
	copy_span(seen.path, sizeof(seen.path), req->path);
	copy_span(seen.query, sizeof(seen.query), req->query);
	copy_span(seen.body, sizeof(seen.body), req->body);
	seen.nheaders = req->nheaders;
	seen.vmajor = req->version_major;
	seen.vminor = req->version_minor;
	if (strcmp(seen.path, "/wait") == 0 && !req->park_expired) {
		res->park = 1; /* answered at the deadline */
		res->park_ms = 60;
		return;
	}
	if (seen.path[0] == '/' && strcmp(seen.path, "/blob") == 0 && blob_body) {
		res->status = 200;
		res->content_type = "application/octet-stream";
		res->blob = blob_ref(blob_body);
		return;
	}
	http_res_text(res, 200, "text/plain", "hello", 5);
	http_res_header(res, "X-Test", "1");
}

struct fixture {
	struct loop *loop;
	struct http_server *srv;
	int client;
};

static struct fixture *fx_new_sndbuf(int server_sndbuf)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct http_limits lim = HTTP_LIMITS_DEFAULT;
	f->loop = loop_new(256);
	assert_non_null(f->loop);
	f->srv = http_server_new(f->loop, &lim, handler, NULL, NULL);
	assert_non_null(f->srv);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	int big = 1 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (server_sndbuf)
		setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &server_sndbuf, sizeof(server_sndbuf));
	f->client = sv[0];
	assert_int_equal(http_server_adopt(f->srv, sv[1], NULL), 0);
	memset(&seen, 0, sizeof(seen));
	return f;
}

static struct fixture *fx_new(void)
{
	return fx_new_sndbuf(0);
}

static void fx_free(struct fixture *f)
{
	if (f->client >= 0)
		close(f->client);
	http_server_free(f->srv);
	loop_free(f->loop);
	free(f);
}

static void pump(struct fixture *f)
{
	while (loop_once(f->loop, 0) > 0)
		;
}

static void send_bytes(struct fixture *f, const char *p, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t w = send(f->client, p + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EAGAIN) {
			pump(f);
			continue;
		}
		if (w < 0 && errno == EPIPE)
			return; /* the server closed on an early error */
		assert_true(w > 0);
		off += (size_t)w;
	}
	pump(f);
}

/* Reads what the server wrote; *closed tells whether it hung up. */
static size_t recv_all(struct fixture *f, char *buf, size_t cap, int *closed)
{
	size_t len = 0;
	*closed = 0;
	for (;;) {
		pump(f);
		ssize_t r = recv(f->client, buf + len, cap - 1 - len, MSG_DONTWAIT);
		if (r > 0) {
			len += (size_t)r;
			if (len == cap - 1)
				break;
			continue;
		}
		if (r == 0)
			*closed = 1;
		break;
	}
	buf[len] = '\0';
	return len;
}

/* Status codes of every response in buf, in order. */
static int statuses(const char *buf, int *out, int max)
{
	int n = 0;
	const char *p = buf;
	while (n < max && (p = strstr(p, "HTTP/1.1 ")) != NULL) {
		out[n++] = atoi(p + 9);
		p += 9;
	}
	return n;
}

struct req_case {
	const char *name;
	const char *raw;
	size_t len; /* 0: strlen(raw) */
	int status; /* of the first response */
	int closes; /* the server closes after it */
};

#define R(n, s, st, cl) {n, s, 0, st, cl}

static const struct req_case cases[] = {
	R("get", "GET /x HTTP/1.1\r\nHost: a\r\n\r\n", 200, 0),
	R("get with query", "GET /x?a=1&b=2 HTTP/1.1\r\nHost: a\r\n\r\n", 200, 0),
	R("head", "HEAD /x HTTP/1.1\r\nHost: a\r\n\r\n", 200, 0),
	R("http/1.0 no host", "GET /x HTTP/1.0\r\n\r\n", 200, 1),
	R("http/1.0 keep-alive", "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 200, 0),
	R("connection close", "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 200, 1),
	R("absolute form", "GET http://169.254.169.254/x HTTP/1.1\r\nHost: a\r\n\r\n", 200, 0),
	R("content-length 0", "GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 200, 0),
	R("1.1 without host", "GET /x HTTP/1.1\r\n\r\n", 400, 1),
	R("two hosts", "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, 1),
	R("space before colon", "GET /x HTTP/1.1\r\nHost : a\r\n\r\n", 400, 1),
	R("cl and te", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, 1),
	R("te and cl", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", 400, 1),
	R("duplicate cl", "GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n", 400, 1),
	R("cl with sign", "GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: +0\r\n\r\n", 400, 1),
	R("body refused", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", 413, 1),
	R("chunked refused", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 413, 1),
	R("te not chunked", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 400, 1),
	R("bare lf", "GET /x HTTP/1.1\nHost: a\n\n", 400, 1),
	R("obs-fold", "GET /x HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n", 400, 1),
	R("ctl in target", "GET /x\x01y HTTP/1.1\r\nHost: a\r\n\r\n", 400, 1),
	R("space in target", "GET /x y HTTP/1.1\r\nHost: a\r\n\r\n", 400, 1),
	R("ctl in header value", "GET /x HTTP/1.1\r\nHost: a\x01\r\n\r\n", 400, 1),
	R("bad method", "G@T /x HTTP/1.1\r\nHost: a\r\n\r\n", 400, 1),
	R("lowercase method", "get /x HTTP/1.1\r\nHost: a\r\n\r\n", 400, 1),
	R("version 1.2", "GET /x HTTP/1.2\r\nHost: a\r\n\r\n", 505, 1),
	R("version 2.0", "GET /x HTTP/2.0\r\nHost: a\r\n\r\n", 505, 1),
	R("version 0.9", "GET /x\r\n\r\n", 505, 1),
	R("no slash target", "GET x HTTP/1.1\r\nHost: a\r\n\r\n", 400, 1),
	R("tls hello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, 1),
	{"nul in header", "GET /x HTTP/1.1\r\nHost: a\0b\r\n\r\n", 30, 400, 1},
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct req_case *c = &cases[i];
		struct fixture *f = fx_new();
		size_t len = c->len ? c->len : strlen(c->raw);
		send_bytes(f, c->raw, len);
		char buf[8192];
		int closed, st[4];
		recv_all(f, buf, sizeof(buf), &closed);
		int n = statuses(buf, st, 4);
		print_message("case %-22s -> %d%s\n", c->name, n ? st[0] : 0, closed ? " (closed)" : "");
		assert_int_equal(n, 1);
		assert_int_equal(st[0], c->status);
		assert_int_equal(closed, c->closes);
		/* Errors are JSON with a reason. */
		if (c->status >= 400)
			assert_non_null(strstr(buf, "{\"error\":\""));
		fx_free(f);
	}
}

static const char *const valid[] = {
	"GET /x HTTP/1.1\r\nHost: a\r\nMetadata: true\r\nUser-Agent: Cloud-Init/22.4.2\r\n\r\n",
	"GET /x?audience=a%20b HTTP/1.1\r\nHost: 169.254.169.254\r\nAccept: */*\r\n\r\n",
	"HEAD /x HTTP/1.0\r\n\r\n",
};

/* No prefix of a valid request is answered or closed; the rest completes it. */
static void test_every_prefix(void **state)
{
	(void)state;
	for (size_t v = 0; v < sizeof(valid) / sizeof(valid[0]); v++) {
		size_t len = strlen(valid[v]);
		for (size_t cut = 1; cut < len; cut++) {
			struct fixture *f = fx_new();
			send_bytes(f, valid[v], cut);
			char buf[4096];
			int closed;
			size_t got = recv_all(f, buf, sizeof(buf), &closed);
			if (got || closed)
				print_message("valid %zu cut at %zu: answered early\n", v, cut);
			assert_int_equal(got, 0);
			assert_int_equal(closed, 0);
			assert_int_equal(seen.calls, 0);
			send_bytes(f, valid[v] + cut, len - cut);
			recv_all(f, buf, sizeof(buf), &closed);
			int st[2];
			assert_int_equal(statuses(buf, st, 2), 1);
			assert_int_equal(st[0], 200);
			assert_int_equal(seen.calls, 1);
			fx_free(f);
		}
	}
}

/* One byte per read gives the same answer as the whole request at once. */
static void test_byte_at_a_time(void **state)
{
	(void)state;
	const char *req = valid[0];
	size_t len = strlen(req);
	struct fixture *f = fx_new();
	for (size_t i = 0; i < len; i++)
		send_bytes(f, req + i, 1);
	char buf[4096];
	int closed;
	recv_all(f, buf, sizeof(buf), &closed);
	int st[2];
	assert_int_equal(statuses(buf, st, 2), 1);
	assert_int_equal(st[0], 200);
	assert_string_equal(seen.path, "/x");
	assert_int_equal(seen.nheaders, 3);
	assert_non_null(strstr(buf, "\r\n\r\nhello"));
	fx_free(f);
}

static void test_pipelining(void **state)
{
	(void)state;
	struct fixture *f = fx_new();
	const char *three = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
			    "HEAD /b HTTP/1.1\r\nHost: a\r\n\r\n"
			    "GET /c?q HTTP/1.1\r\nHost: a\r\n\r\n";
	send_bytes(f, three, strlen(three));
	char buf[4096];
	int closed, st[4];
	recv_all(f, buf, sizeof(buf), &closed);
	assert_int_equal(statuses(buf, st, 4), 3);
	assert_int_equal(seen.calls, 3);
	assert_string_equal(seen.path, "/c");
	assert_string_equal(seen.query, "q");
	assert_int_equal(closed, 0);
	/* HEAD: Content-Length of the GET answer, no body: two bodies in all. */
	int bodies = 0;
	for (const char *p = buf; (p = strstr(p, "hello")) != NULL; p++)
		bodies++;
	assert_int_equal(bodies, 2);
	fx_free(f);
}

static void test_limits(void **state)
{
	(void)state;
	/* Head past 8 KiB: 431 and close, before any end of head arrives. */
	struct fixture *f = fx_new();
	char big[9000];
	int n = snprintf(big, sizeof(big), "GET /x HTTP/1.1\r\nHost: a\r\nX-Pad: ");
	memset(big + n, 'a', sizeof(big) - (size_t)n);
	send_bytes(f, big, sizeof(big));
	char buf[4096];
	int closed, st[2];
	recv_all(f, buf, sizeof(buf), &closed);
	assert_int_equal(statuses(buf, st, 2), 1);
	assert_int_equal(st[0], 431);
	assert_int_equal(closed, 1);
	fx_free(f);

	/* 65 headers: 431. */
	f = fx_new();
	char many[4096];
	struct { char *p; size_t len; } b = {many, 0};
	b.len += (size_t)sprintf(many, "GET /x HTTP/1.1\r\nHost: a\r\n");
	for (int i = 0; i < 64; i++)
		b.len += (size_t)sprintf(many + b.len, "X-%d: v\r\n", i);
	b.len += (size_t)sprintf(many + b.len, "\r\n");
	send_bytes(f, many, b.len);
	recv_all(f, buf, sizeof(buf), &closed);
	assert_int_equal(statuses(buf, st, 2), 1);
	assert_int_equal(st[0], 431);
	fx_free(f);

	/* A long target alone: 414. */
	f = fx_new();
	char url[9000];
	memcpy(url, "GET /", 5);
	memset(url + 5, 'u', sizeof(url) - 5);
	send_bytes(f, url, sizeof(url));
	recv_all(f, buf, sizeof(buf), &closed);
	assert_int_equal(statuses(buf, st, 2), 1);
	assert_int_equal(st[0], 414);
	fx_free(f);
}

static void test_response_headers(void **state)
{
	(void)state;
	struct fixture *f = fx_new();
	const char *r = "HEAD /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
	send_bytes(f, r, strlen(r));
	char buf[4096];
	int closed;
	recv_all(f, buf, sizeof(buf), &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(buf, "\r\nContent-Length: 5\r\n"));
	assert_non_null(strstr(buf, "\r\nConnection: keep-alive\r\n"));
	assert_non_null(strstr(buf, "\r\nX-Test: 1\r\n"));
	assert_non_null(strstr(buf, "\r\nDate: "));
	assert_null(strstr(buf, "hello"));
	assert_int_equal(closed, 0);
	fx_free(f);
}

/* A HEAD whose answer the kernel cannot take at once (the socket full from
 * the answer before it, pipelined) keeps its head for later and nothing
 * else: the body of a blob response is never sent after it.  Each body
 * size from 64 bytes to 12 KiB against the smallest send buffer, so some
 * of them leave the socket full just as the HEAD is answered. */
static void test_head_when_full(void **state)
{
	(void)state;
	char body[12288];
	memset(body, 'B', sizeof(body));
	int full_seen = 0;
	for (size_t len = 64; len <= sizeof(body); len += 61) {
		blob_body = blob_new(body, len);
		assert_non_null(blob_body);
		struct fixture *f = fx_new_sndbuf(1);
		const char *reqs = "GET /blob HTTP/1.1\r\nHost: a\r\n\r\n"
				   "HEAD /blob HTTP/1.1\r\nHost: a\r\n\r\n"
				   "GET /blob HTTP/1.1\r\nHost: a\r\n\r\n";
		send_bytes(f, reqs, strlen(reqs));
		if (http_server_conn_count(f->srv) == 1 && seen.calls < 3)
			full_seen++;
		static char buf[65536];
		int closed;
		size_t n = recv_all(f, buf, sizeof(buf), &closed);
		int st[4];
		assert_int_equal(statuses(buf, st, 4), 3);
		size_t bs = 0;
		for (size_t i = 0; i < n; i++)
			bs += buf[i] == 'B';
		if (bs != 2 * len)
			fail_msg("body %zu: %zu body bytes for two GETs and a HEAD", len, bs);
		fx_free(f);
		blob_unref(blob_body);
		blob_body = NULL;
	}
	assert_true(full_seen > 0);
}

/* Two waiting requests pipelined on one connection: the first is answered
 * at its deadline, and the second, which starts a wait of its own then, is
 * kept and answered at its own (the expiry once dropped the connection
 * because it found it waiting again). */
static void test_pipelined_waits(void **state)
{
	(void)state;
	struct fixture *f = fx_new();
	const char *two = "GET /wait HTTP/1.1\r\nHost: a\r\n\r\n"
			  "GET /wait?2 HTTP/1.1\r\nHost: a\r\n\r\n";
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	send_bytes(f, two, strlen(two));
	static char buf[8192];
	size_t len = 0;
	int closed = 0, st[4];
	while (peer_close_ms_since(&t0) < 2000 && !closed) {
		loop_once(f->loop, 10);
		ssize_t r = recv(f->client, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT);
		if (r > 0)
			len += (size_t)r;
		else if (r == 0)
			closed = 1;
		buf[len] = '\0';
		if (statuses(buf, st, 4) == 2)
			break;
	}
	long ms = peer_close_ms_since(&t0);
	assert_int_equal(closed, 0);
	assert_int_equal(statuses(buf, st, 4), 2);
	assert_int_equal(st[0], 200);
	assert_int_equal(st[1], 200);
	assert_true(ms >= 110); /* two waits of 60 ms, one after the other */
	assert_int_equal(http_server_conn_count(f->srv), 1);
	fx_free(f);
}

/* Issue 19: the peer's close reaches the server late when another holder
 * keeps the peer's file open for a moment (here a child process that lets
 * go 50 ms after it is told, as a process reading /proc/PID/fd holds it
 * for the time of a readlink).  The
 * connection rightly stays while the peer lives, and goes at the hangup;
 * the harnesses' drain (peer_close.h) waits for it.  The drain before the
 * fix, which only took what was queued, left it counted: this test fails
 * with it. */
static void peer_close_held(const char *req, int want_lingering)
{
	struct fixture *f = fx_new();
	if (req) {
		send_bytes(f, req, strlen(req));
		char buf[4096];
		int closed;
		recv_all(f, buf, sizeof(buf), &closed);
		assert_int_equal(closed, want_lingering);
	}
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* holds its copy of f->client until told, then 50 ms more */
		char x;
		close(go[1]);
		if (read(go[0], &x, 1) < 0)
			_exit(1);
		usleep(50 * 1000);
		_exit(0);
	}
	close(go[0]);
	close(f->client);
	f->client = -1;
	pump(f);
	/* the peer's file lives in the child: no hangup, the connection stays */
	assert_int_equal(http_server_conn_count(f->srv), 1);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(write(go[1], "x", 1), 1);
	close(go[1]);
	assert_int_equal(drain_after_peer_close(f->loop, f->srv, 5000), 0);
	assert_true(peer_close_ms_since(&t0) >= 45);
	int st;
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fx_free(f);
}

static void test_peer_close_late(void **state)
{
	(void)state;
	peer_close_held(NULL, 0);					/* idle */
	peer_close_held("GET /a HTTP/1.1\r\nHost: a\r\n\r\n", 0);	/* kept alive */
	peer_close_held("GET /a HTTP/1.1\r\n\r\n", 1);	/* 400, lingering close */
	peer_close_held("GET /a HTTP/1.1\r\nHost: a\r\n", 0);		/* half a head */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_every_prefix),
		cmocka_unit_test(test_byte_at_a_time),
		cmocka_unit_test(test_pipelining),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_response_headers),
		cmocka_unit_test(test_head_when_full),
		cmocka_unit_test(test_pipelined_waits),
		cmocka_unit_test(test_peer_close_late),
	};
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
