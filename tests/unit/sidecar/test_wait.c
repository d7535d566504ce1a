/* wait: ?wait_for_change (wait.c): the parameters read (a table of good
 * and bad ones, each refusal a 400 naming it), the decision to answer or
 * park (the client's tag, GCE's "from now", a wait run again, its end),
 * the bound of WAIT_WAITERS_MAX waiters (503 past it), and the inotify
 * watch waking a parked request through a real HTTP core when a file in
 * its folder changes; then the walk through the handler moved here from
 * test_imds.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wait.h"
#include "handler.h"

static struct http_request q(const char *query)
{
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.method = HTTP_M_GET;
	rq.query = (struct http_span){query, strlen(query)};
	return rq;
}

static void test_params_table(void **state)
{
	(void)state;
	static const struct {
		const char *q;
		int rc, on, from_now;
		uint64_t last;
		unsigned timeout;
		const char *code;
	} cases[] = {
		{"", 0, 0, 0, 0, 0, NULL},
		{"x=1", 0, 0, 0, 0, 0, NULL},
		{"wait_for_change=false", 0, 0, 0, 0, 0, NULL},
		{"wait_for_change=false&last_etag=junk", 0, 0, 0, 0, 0, NULL}, /* not read */
		{"wait_for_change=true", 0, 1, 1, 0, 60, NULL},
		{"wait_for_change=true&last_etag=", 0, 1, 1, 0, 60, NULL},
		{"wait_for_change=true&last_etag=00000000000000ff", 0, 1, 0, 0xff, 60, NULL},
		{"wait_for_change=true&last_etag=%220123456789abcdef%22", 0, 1, 0, 0x0123456789abcdefu, 60,
		 NULL},
		{"last_etag=fedcba9876543210&timeout_sec=1&wait_for_change=true", 0, 1, 0,
		 0xfedcba9876543210u, 1, NULL},
		{"wait_for_change=true&timeout_sec=3600", 0, 1, 1, 0, 3600, NULL},
		{"wait_for_change=TRUE", -1, 0, 0, 0, 0, "bad_wait_for_change"},
		{"wait_for_change=1", -1, 0, 0, 0, 0, "bad_wait_for_change"},
		{"wait_for_change=", -1, 0, 0, 0, 0, "bad_wait_for_change"},
		{"wait_for_change=%", -1, 0, 0, 0, 0, "bad_wait_for_change"},
		{"wait_for_change=true&last_etag=0123456789abcde", -1, 0, 0, 0, 0, "bad_last_etag"},
		{"wait_for_change=true&last_etag=0123456789abcdef0", -1, 0, 0, 0, 0, "bad_last_etag"},
		{"wait_for_change=true&last_etag=0123456789abcdeF", -1, 0, 0, 0, 0, "bad_last_etag"},
		{"wait_for_change=true&last_etag=W/%220123456789abcdef%22", -1, 0, 0, 0, 0, "bad_last_etag"},
		{"wait_for_change=true&last_etag=%220123456789abcdef", -1, 0, 0, 0, 0, "bad_last_etag"},
		{"wait_for_change=true&last_etag=%zz", -1, 0, 0, 0, 0, "bad_last_etag"},
		{"wait_for_change=true&timeout_sec=0", -1, 0, 0, 0, 0, "bad_timeout"},
		{"wait_for_change=true&timeout_sec=3601", -1, 0, 0, 0, 0, "bad_timeout"},
		{"wait_for_change=true&timeout_sec=-1", -1, 0, 0, 0, 0, "bad_timeout"},
		{"wait_for_change=true&timeout_sec=99999999999999999999", -1, 0, 0, 0, 0, "bad_timeout"},
		{"wait_for_change=true&timeout_sec=%31", 0, 1, 1, 0, 1, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_request rq = q(cases[i].q);
		struct http_response res;
		memset(&res, 0, sizeof(res));
		struct wait w;
		memset(&w, 0xa5, sizeof(w));
		int rc = wait_params(&rq, &w, &res);
		char code[80] = "";
		if (cases[i].code)
			snprintf(code, sizeof(code), "{\"error\":\"%s\"", cases[i].code);
		int ok = rc == cases[i].rc;
		if (ok && rc == 0)
			ok = w.on == cases[i].on && (!w.on || (w.from_now == cases[i].from_now &&
							       w.last == cases[i].last &&
							       w.timeout_sec == cases[i].timeout)) &&
			     res.status == 0;
		if (ok && rc < 0)
			ok = res.status == 400 && res.body && strncmp(res.body, code, strlen(code)) == 0;
		if (!ok)
			fail_msg("%s: rc %d on %d from_now %d last %llx timeout %u status %d", cases[i].q, rc,
				 w.on, w.from_now, (unsigned long long)w.last, w.timeout_sec, res.status);
	}
}

static void test_wait_or_answer(void **state)
{
	(void)state;
	struct wait w = {.on = 1, .last = 0x1234, .timeout_sec = 7};
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	struct http_response res;
	/* Another tag than the client's: answered now. */
	memset(&res, 0, sizeof(res));
	res.status = 200;
	wait_or_answer(&w, 0x9999, &rq, &res, NULL);
	assert_int_equal(res.park, 0);
	assert_int_equal(res.status, 200);
	/* The client's tag: parked for its timeout, noting the tag. */
	wait_or_answer(&w, 0x1234, &rq, &res, NULL);
	assert_int_equal(res.park, 1);
	assert_int_equal(res.park_ms, 7000);
	assert_true(res.park_tag == 0x1234);
	/* Its time is over: answered with what there is. */
	memset(&res, 0, sizeof(res));
	rq.parked = 1;
	rq.park_expired = 1;
	wait_or_answer(&w, 0x1234, &rq, &res, NULL);
	assert_int_equal(res.park, 0);

	/* From now: the first run parks on the tag it sees... */
	struct wait now = {.on = 1, .from_now = 1, .timeout_sec = 60};
	memset(&rq, 0, sizeof(rq));
	memset(&res, 0, sizeof(res));
	wait_or_answer(&now, 0xaaaa, &rq, &res, NULL);
	assert_int_equal(res.park, 1);
	assert_true(res.park_tag == 0xaaaa);
	/* ...a run again with the same data parks again on it... */
	rq.parked = 1;
	rq.park_tag = 0xaaaa;
	memset(&res, 0, sizeof(res));
	wait_or_answer(&now, 0xaaaa, &rq, &res, NULL);
	assert_int_equal(res.park, 1);
	assert_true(res.park_tag == 0xaaaa);
	/* ...and new data is answered. */
	memset(&res, 0, sizeof(res));
	wait_or_answer(&now, 0xbbbb, &rq, &res, NULL);
	assert_int_equal(res.park, 0);
}

/* ---- the watch and the bound, through a real HTTP core -------------------------------- */

/* Parks until woken (or its time is over), then answers what it was run
 * with: "woken" or "timeout"; with a bound, 503 past it. */
static struct http_server *srv;
static void parking(const struct http_request *req, struct http_response *res, void *ud)
{
	(void)ud;
	if (req->park_expired) {
		http_res_text(res, 200, "text/plain", "timeout", 7);
		return;
	}
	if (req->parked) {
		http_res_text(res, 200, "text/plain", "woken", 5);
		return;
	}
	struct wait w = {.on = 1, .last = 1, .timeout_sec = 3600};
	http_res_text(res, 200, "text/plain", "now", 3);
	wait_or_answer(&w, 1, req, res, srv);
}

struct core {
	struct loop *l;
	int cli[WAIT_WAITERS_MAX + 1];
	unsigned n;
};

static void core_new(struct core *c)
{
	memset(c, 0, sizeof(*c));
	c->l = loop_new(4096);
	assert_non_null(c->l);
	struct http_limits lim = HTTP_LIMITS_DEFAULT;
	srv = http_server_new(c->l, &lim, parking, NULL, NULL);
	assert_non_null(srv);
}

static void core_free(struct core *c)
{
	for (unsigned i = 0; i < c->n; i++)
		close(c->cli[i]);
	http_server_free(srv);
	srv = NULL;
	loop_free(c->l);
}

/* A client that sent GET / and whose answer is not read yet. */
static int client(struct core *c)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(http_server_adopt(srv, sv[1], NULL), 0);
	const char *rq = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
	assert_int_equal(write(sv[0], rq, strlen(rq)), (ssize_t)strlen(rq));
	c->cli[c->n++] = sv[0];
	return sv[0];
}

static void spin(struct core *c)
{
	for (int i = 0; i < 4; i++)
		(void)loop_once(c->l, 0);
}

/* What the client got so far ("" when nothing). */
static const char *answer(int fd)
{
	static char buf[1024];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void test_watch_wakes(void **state)
{
	struct fx *f = *state;
	struct core c;
	core_new(&c);
	assert_int_equal(mkdir(in_dir(f, "watched"), 0755), 0);
	assert_int_equal(mkdir(in_dir(f, "other"), 0755), 0);
	struct wait_watch ww;
	wait_watch_start(&ww, c.l, srv);
	assert_true(ww.fd >= 0);
	wait_watch_add(&ww, in_dir(f, "watched/user-data"), 0); /* its folder */
	wait_watch_add(&ww, in_dir(f, "missing/user-data"), 0); /* skipped, no error */
	wait_watch_add(&ww, "relative", 0);                     /* no folder: skipped */
	wait_watch_add(&ww, NULL, 0);
	int fd = client(&c);
	spin(&c);
	assert_int_equal(http_server_parked(srv), 1);
	assert_string_equal(answer(fd), "");
	/* A change elsewhere wakes nobody. */
	put_str(in_dir(f, "other/x"), "1");
	spin(&c);
	assert_int_equal(http_server_parked(srv), 1);
	assert_string_equal(answer(fd), "");
	/* kubelet's swap in the watched folder: woken, answered. */
	put_str(in_dir(f, "watched/user-data"), "2");
	spin(&c);
	assert_int_equal(http_server_parked(srv), 0);
	const char *a = answer(fd);
	assert_memory_equal(a, "HTTP/1.1 200", 12);
	assert_non_null(strstr(a, "\r\n\r\nwoken"));
	/* A folder named as itself (is_dir). */
	fd = client(&c);
	spin(&c);
	assert_int_equal(http_server_parked(srv), 1);
	wait_watch_add(&ww, in_dir(f, "other"), 1);
	put_str(in_dir(f, "other/y"), "1");
	spin(&c);
	assert_non_null(strstr(answer(fd), "\r\n\r\nwoken"));
	wait_watch_stop(&ww);
	assert_int_equal(ww.fd, -1);
	wait_watch_stop(&ww); /* twice: safe */
	wait_watch_add(&ww, in_dir(f, "other"), 1); /* stopped: nothing */
	core_free(&c);
}

static void test_waiters_bounded(void **state)
{
	(void)state;
	struct core c;
	core_new(&c);
	for (unsigned i = 0; i < WAIT_WAITERS_MAX; i++)
		client(&c);
	spin(&c);
	assert_int_equal(http_server_parked(srv), WAIT_WAITERS_MAX);
	int fd = client(&c);
	spin(&c);
	assert_int_equal(http_server_parked(srv), WAIT_WAITERS_MAX);
	const char *a = answer(fd);
	assert_memory_equal(a, "HTTP/1.1 503", 12);
	assert_non_null(strstr(a, "Retry-After: 1\r\n"));
	assert_non_null(strstr(a, "\"error\":\"too_many_waiters\""));
	assert_null(strstr(a, "now")); /* the data answer dropped */
	/* Those waiting are answered when woken. */
	http_server_wake(srv);
	spin(&c);
	assert_int_equal(http_server_parked(srv), 0);
	assert_non_null(strstr(answer(c.cli[0]), "woken"));
	core_free(&c);
}

/* ---- through the handler --------------------------------------------------------------- */

static void test_wait_for_change(void **state)
{
	struct fx *f = *state;
	char ud[512];
	snprintf(ud, sizeof(ud), "%s", in_dir(f, "user-data"));
	put_str(ud, "one\n");
	setenv("IMDS_USER_DATA_FILE", ud, 1);
	struct imds_app *a = start(f);
	struct resp r;
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	char tag[17];
	snprintf(tag, sizeof(tag), "%.16s", etag_of(&r) + 1);
	resp_free(&r);
	char q[256];
	/* Same tag: wait, for timeout_sec (default 60). */
	snprintf(q, sizeof(q), "/v1/user-data?wait_for_change=true&last_etag=%s&timeout_sec=7", tag);
	call(a, "GET", q, 0, NULL, &r);
	assert_int_equal(r.park, 1);
	assert_int_equal(r.park_ms, 7000);
	resp_free(&r);
	snprintf(q, sizeof(q), "/v1/user-data?wait_for_change=true&last_etag=%%22%s%%22", tag);
	call(a, "GET", q, 0, NULL, &r);
	assert_int_equal(r.park, 1);
	assert_int_equal(r.park_ms, 60000);
	resp_free(&r);
	/* Another tag, or wait_for_change=false: the answer at once. */
	call(a, "GET", "/v1/user-data?wait_for_change=true&last_etag=0000000000000000", 0, NULL, &r);
	EXPECT_STATUS("other tag", &r, 200);
	assert_int_equal(r.park, 0);
	EXPECT_BODY("other tag", &r, "one\n");
	resp_free(&r);
	snprintf(q, sizeof(q), "/v1/user-data?wait_for_change=false&last_etag=%s", tag);
	call(a, "GET", q, 0, NULL, &r);
	assert_int_equal(r.park, 0);
	resp_free(&r);
	/* The data changed meanwhile: answered. */
	put_str(ud, "two\n");
	snprintf(q, sizeof(q), "/v1/user-data?wait_for_change=true&last_etag=%s", tag);
	call(a, "GET", q, 0, NULL, &r);
	assert_int_equal(r.park, 0);
	EXPECT_BODY("changed", &r, "two\n");
	resp_free(&r);
	/* Bad parameters: 400, naming them. */
	static const struct {
		const char *q, *code;
	} bad[] = {
		{"wait_for_change=yes", "bad_wait_for_change"},
		{"wait_for_change=%zz", "bad_wait_for_change"},
		{"wait_for_change=true&last_etag=123", "bad_last_etag"},
		{"wait_for_change=true&last_etag=0123456789ABCDEF", "bad_last_etag"},
		{"wait_for_change=true&last_etag=0123456789abcdeg", "bad_last_etag"},
		{"wait_for_change=true&last_etag=0123456789abcdef&timeout_sec=0", "bad_timeout"},
		{"wait_for_change=true&last_etag=0123456789abcdef&timeout_sec=3601", "bad_timeout"},
		{"wait_for_change=true&last_etag=0123456789abcdef&timeout_sec=1.5", "bad_timeout"},
		{"wait_for_change=true&last_etag=0123456789abcdef&timeout_sec=", "bad_timeout"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(q, sizeof(q), "/v1/user-data?%s", bad[i].q);
		call(a, "GET", q, 0, NULL, &r);
		expect_error(bad[i].q, &r, 400, bad[i].code);
		assert_int_equal(r.park, 0);
		resp_free(&r);
	}
	snprintf(q, sizeof(q), "/v1/user-data?wait_for_change=true&last_etag=%s&timeout_sec=3600", tag);
	put_str(ud, "one\n");
	call(a, "GET", q, 0, NULL, &r);
	assert_int_equal(r.park, 1);
	assert_int_equal(r.park_ms, 3600000);
	resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params_table),
		cmocka_unit_test(test_wait_or_answer),
		cmocka_unit_test_setup_teardown(test_watch_wakes, setup, teardown),
		cmocka_unit_test(test_waiters_bounded),
		cmocka_unit_test_setup_teardown(test_wait_for_change, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
