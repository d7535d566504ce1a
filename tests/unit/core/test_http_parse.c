/* http_parse on plain buffers, picohttpparser's way: a table of requests
 * with what each must parse to, every truncated prefix of each (a prefix of
 * a good request is "more", never an answer; once a prefix is an error,
 * every longer one is the same error), trailing bytes of the next request
 * left alone, and the limits — each with the fast path for the common GET
 * and with llhttp alone — and the two paths' answers held equal for every
 * case and prefix.  No socket, no loop. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "http_parse.h"
#include "../../fuzz/parse_same.h"

struct pcase {
	const char *name;
	const char *raw;
	size_t len;          /* 0: strlen(raw) */
	enum http_parse_status st;
	int status;          /* ERROR: the status */
	const char *code;    /* ERROR: the code */
	/* DONE: */
	enum http_method method;
	const char *path, *query, *body;
	unsigned nheaders;
	int keep_alive;
};

#define OK(n, r, m, p, q, b, nh, ka) {n, r, 0, HTTP_PARSE_DONE, 0, NULL, m, p, q, b, nh, ka}
#define BAD(n, r, s, c) {n, r, 0, HTTP_PARSE_ERROR, s, c, HTTP_M_OTHER, NULL, NULL, NULL, 0, 0}

static const struct pcase cases[] = {
	OK("get", "GET /x HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_M_GET, "/x", "", "", 1, 1),
	OK("query", "GET /x?a=1&b=2 HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_M_GET, "/x", "a=1&b=2", "", 1, 1),
	OK("empty query", "GET /x? HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_M_GET, "/x", "", "", 1, 1),
	OK("head 1.0", "HEAD /x HTTP/1.0\r\n\r\n", HTTP_M_HEAD, "/x", "", "", 0, 0),
	OK("1.0 keep-alive", "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", HTTP_M_GET, "/x", "", "", 1, 1),
	OK("close", "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", HTTP_M_GET, "/", "", "", 2, 0),
	/* llhttp_should_keep_alive's rule: 1.1 stays open unless a Connection
	 * says close, 1.0 closes unless one says keep-alive (both said: 1.1
	 * closes, 1.0 stays open) */
	OK("1.0 close", "GET /x HTTP/1.0\r\nConnection: close\r\n\r\n", HTTP_M_GET, "/x", "", "", 1, 0),
	OK("1.0 Keep-Alive", "GET /x HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", HTTP_M_GET, "/x", "", "", 1, 1),
	OK("1.1 both", "GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
	   HTTP_M_GET, "/x", "", "", 3, 0),
	OK("1.0 both", "GET /x HTTP/1.0\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n",
	   HTTP_M_GET, "/x", "", "", 2, 1),
	OK("1.1 list", "GET /x HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n", HTTP_M_GET, "/x", "", "", 2, 0),
	OK("absolute", "GET http://169.254.169.254/v1/x?y HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_M_GET, "/v1/x", "y", "", 1, 1),
	OK("absolute no path", "GET https://h HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_M_GET, "/", "", "", 1, 1),
	OK("put", "PUT /v1/session HTTP/1.1\r\nHost: a\r\nX-Metadata-Token-TTL-Seconds: 60\r\n\r\n", HTTP_M_PUT, "/v1/session", "", "", 2, 1),
	OK("post body", "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", HTTP_M_POST, "/p", "", "hello", 2, 1),
	OK("other method", "DELETE /x HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_M_OTHER, "/x", "", "", 1, 1),
	OK("trailing space", "GET /x HTTP/1.1\r\nHost: a \t\r\nA:  b  \r\n\r\n", HTTP_M_GET, "/x", "", "", 2, 1),
	OK("cloud-init", "GET /v1/meta-data HTTP/1.1\r\nHost: 169.254.169.254\r\nUser-Agent: Cloud-Init/22.4.2\r\n"
	   "Accept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n",
	   HTTP_M_GET, "/v1/meta-data", "", "", 5, 1),
	BAD("1.1 without host", "GET /x HTTP/1.1\r\n\r\n", 400, "bad_host"),
	BAD("two hosts", "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "bad_host"),
	BAD("space before colon", "GET /x HTTP/1.1\r\nHost : a\r\n\r\n", 400, "bad_request"),
	BAD("cl and te", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "bad_request"),
	BAD("duplicate cl", "GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n", 400, "bad_request"),
	BAD("body over", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\nhello", 413, "body_too_large"),
	BAD("chunked", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411, "length_required"),
	BAD("bare lf", "GET /x HTTP/1.1\nHost: a\n\n", 400, "bad_request"),
	BAD("obs-fold", "GET /x HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n", 400, "obs_fold"),
	BAD("ctl in target", "GET /x\x01y HTTP/1.1\r\nHost: a\r\n\r\n", 400, "bad_request"),
	BAD("lowercase method", "get /x HTTP/1.1\r\nHost: a\r\n\r\n", 400, "bad_request"),
	BAD("version 1.2", "GET /x HTTP/1.2\r\nHost: a\r\n\r\n", 505, "bad_version"),
	BAD("version 2.0", "GET /x HTTP/2.0\r\nHost: a\r\n\r\n", 505, "bad_version"),
	BAD("version 0.9", "GET /x\r\n\r\n", 505, "bad_version"),
	BAD("no slash", "GET x HTTP/1.1\r\nHost: a\r\n\r\n", 400, "bad_request"),
	BAD("asterisk form", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 400, "bad_target"),
	BAD("tls hello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, "bad_request"),
	{"nul in header", "GET /x HTTP/1.1\r\nHost: a\0b\r\n\r\n", 30, HTTP_PARSE_ERROR, 400, "bad_request",
	 HTTP_M_OTHER, NULL, NULL, NULL, 0, 0},
};

static size_t body_limit(const struct http_request *head, void *ud)
{
	(void)ud;
	return head->method == HTTP_M_POST ? 64 : 0;
}

static const struct http_parse_limits limits = {
	.max_head = 512, .max_body = 1024, .max_headers = 8, .body_limit = body_limit,
};

/* Each test runs twice: with the fast path (as served) and llhttp alone. */
static int use_fast = 1;

static int with_fast(void **state)
{
	(void)state;
	use_fast = 1;
	return 0;
}

static int with_llhttp(void **state)
{
	(void)state;
	use_fast = 0;
	return 0;
}

static struct http_parser *parser(void)
{
	struct http_parser *p = http_parser_new(&limits);
	assert_non_null(p);
	http_parser_set_fast(p, use_fast);
	return p;
}

static int span_is(struct http_span s, const char *want)
{
	return s.n == strlen(want) && (s.n == 0 || memcmp(s.p, want, s.n) == 0);
}

static void check_done(const struct pcase *c, const char *buf, size_t len,
		       const struct http_request *r, const struct http_parse_result *o)
{
	assert_int_equal(o->used, len);
	assert_int_equal(r->method, c->method);
	assert_true(span_is(r->path, c->path));
	assert_true(span_is(r->query, c->query));
	assert_true(span_is(r->body, c->body));
	assert_int_equal(r->nheaders, c->nheaders);
	assert_int_equal(o->keep_alive, c->keep_alive);
	assert_int_equal(r->version_major, 1);
	/* Every span lies inside the buffer. */
	for (unsigned i = 0; i < r->nheaders; i++) {
		assert_true(r->hname[i].p >= buf && r->hname[i].p + r->hname[i].n <= buf + len);
		assert_true(r->hvalue[i].n == 0 ||
			    (r->hvalue[i].p >= buf && r->hvalue[i].p + r->hvalue[i].n <= buf + len));
	}
}

static void test_table(void **state)
{
	(void)state;
	struct http_parser *p = parser();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		size_t len = c->len ? c->len : strlen(c->raw);
		struct http_request r;
		struct http_parse_result o;
		enum http_parse_status st = http_parse(p, c->raw, len, &r, &o);
		print_message("case %-20s -> %d %d %s\n", c->name, st, o.status, o.code ? o.code : "");
		assert_int_equal(st, c->st);
		if (st == HTTP_PARSE_DONE) {
			check_done(c, c->raw, len, &r, &o);
		} else {
			assert_int_equal(o.status, c->status);
			assert_string_equal(o.code, c->code);
		}
	}
	http_parser_free(p);
}

/* Every truncated prefix (which is also what byte-at-a-time arrival looks
 * like, since each call parses from the first byte): MORE until the first
 * error, and from there on that same error; never DONE before the end. */
static void test_every_prefix(void **state)
{
	(void)state;
	struct http_parser *p = parser();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		size_t len = c->len ? c->len : strlen(c->raw);
		int err = 0;
		for (size_t cut = 0; cut < len; cut++) {
			struct http_request r;
			struct http_parse_result o;
			enum http_parse_status st = http_parse(p, c->raw, cut, &r, &o);
			if (st == HTTP_PARSE_DONE || (err && st != HTTP_PARSE_ERROR) ||
			    (st == HTTP_PARSE_ERROR && c->st == HTTP_PARSE_DONE))
				print_message("%s cut at %zu: %d\n", c->name, cut, st);
			assert_int_not_equal(st, HTTP_PARSE_DONE);
			if (c->st == HTTP_PARSE_DONE) {
				assert_int_equal(st, HTTP_PARSE_MORE);
			} else if (st == HTTP_PARSE_ERROR) {
				assert_int_equal(o.status, c->status);
				assert_string_equal(o.code, c->code);
				err = 1;
			} else {
				assert_false(err);
			}
		}
	}
	http_parser_free(p);
}

/* The next request's bytes (or garbage) behind one are not looked at. */
static void test_trailing_bytes(void **state)
{
	(void)state;
	struct http_parser *p = parser();
	const char *tails[] = {"GET /y HTTP/1.1\r\nHost: a\r\n\r\n", "\x16\x03\x01", "G", "\r\n\r\n"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		if (c->st != HTTP_PARSE_DONE)
			continue;
		size_t len = strlen(c->raw);
		for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
			char buf[1024];
			size_t tl = strlen(tails[t]);
			assert_true(len + tl <= sizeof(buf));
			memcpy(buf, c->raw, len);
			memcpy(buf + len, tails[t], tl);
			struct http_request r;
			struct http_parse_result o;
			assert_int_equal(http_parse(p, buf, len + tl, &r, &o), HTTP_PARSE_DONE);
			check_done(c, buf, len, &r, &o);
		}
	}
	http_parser_free(p);
}

static enum http_parse_status parse_str(struct http_parser *p, const char *s, struct http_parse_result *o)
{
	struct http_request r;
	return http_parse(p, s, strlen(s), &r, o);
}

static void test_limits(void **state)
{
	(void)state;
	struct http_parser *p = parser();
	struct http_parse_result o;
	char big[2048];

	/* a target longer than the head cap: 414 as soon as it is seen */
	int n = snprintf(big, sizeof(big), "GET /%0600d", 0);
	assert_int_equal(http_parse(p, big, (size_t)n, &(struct http_request){0}, &o), HTTP_PARSE_ERROR);
	assert_int_equal(o.status, 414);
	/* a head past max_head (512): 431 while incomplete, and when complete */
	n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: a\r\nX: %0500d", 0);
	assert_int_equal(http_parse(p, big, (size_t)n, &(struct http_request){0}, &o), HTTP_PARSE_ERROR);
	assert_int_equal(o.status, 431);
	assert_string_equal(o.code, "head_too_large");
	n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: a\r\nX: %0481d\r\n\r\n", 0); /* 513 bytes */
	assert_int_equal(http_parse(p, big, (size_t)n, &(struct http_request){0}, &o), HTTP_PARSE_ERROR);
	assert_int_equal(o.status, 431);
	/* exactly at the cap is fine */
	n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: a\r\nX: %0*d\r\n\r\n", 512 - 32, 0);
	assert_int_equal(n, 512);
	enum http_parse_status st = http_parse(p, big, (size_t)n, &(struct http_request){0}, &o);
	print_message("at the cap: %d %d %s\n", st, o.status, o.code ? o.code : "");
	assert_int_equal(st, HTTP_PARSE_DONE);
	/* header count: 8 fine, 9 refused */
	assert_int_equal(parse_str(p, "GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 1\r\nD: 1\r\n"
				      "E: 1\r\nF: 1\r\nG: 1\r\nH: 1\r\n\r\n", &o), HTTP_PARSE_DONE);
	assert_int_equal(parse_str(p, "GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 1\r\nD: 1\r\n"
				      "E: 1\r\nF: 1\r\nG: 1\r\nH: 1\r\nI: 1\r\n\r\n", &o), HTTP_PARSE_ERROR);
	assert_int_equal(o.status, 431);
	assert_string_equal(o.code, "too_many_headers");
	/* the body limit from the head: GET gets none, POST 64 bytes */
	assert_int_equal(parse_str(p, "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx", &o),
			 HTTP_PARSE_ERROR);
	assert_int_equal(o.status, 413);
	assert_string_equal(o.code, "body_not_allowed");
	assert_int_equal(parse_str(p, "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", &o),
			 HTTP_PARSE_ERROR);
	assert_int_equal(o.status, 413);
	n = snprintf(big, sizeof(big), "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 64\r\n\r\n%064d", 0);
	assert_int_equal(http_parse(p, big, (size_t)n, &(struct http_request){0}, &o), HTTP_PARSE_DONE);
	/* a body still arriving is "more" (the 413 needs no body bytes) */
	assert_int_equal(http_parse(p, big, (size_t)n - 1, &(struct http_request){0}, &o), HTTP_PARSE_MORE);
	/* without the hook, max_body is the ceiling */
	http_parser_set_body_limit(p, NULL, NULL);
	n = snprintf(big, sizeof(big), "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1024\r\n\r\n%01024d", 0);
	assert_int_equal(http_parse(p, big, (size_t)n, &(struct http_request){0}, &o), HTTP_PARSE_DONE);
	assert_int_equal(parse_str(p, "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1025\r\n\r\n", &o),
			 HTTP_PARSE_ERROR);
	assert_int_equal(o.status, 413);
	assert_string_equal(o.code, "body_too_large");
	http_parser_free(p);
}

/* An error keeps what was read, for the log line: a target read whole is
 * split; a 400 found by llhttp carries its reason. */
static void test_error_detail(void **state)
{
	(void)state;
	struct http_parser *p = parser();
	struct http_request r;
	struct http_parse_result o;
	const char *s = "GET /v1/x?q HTTP/1.1\r\nHost: a\r\nBad Name: 1\r\n\r\n";
	assert_int_equal(http_parse(p, s, strlen(s), &r, &o), HTTP_PARSE_ERROR);
	assert_int_equal(o.status, 400);
	assert_non_null(o.detail);
	assert_true(span_is(r.path, "/v1/x"));
	assert_true(span_is(r.query, "q"));
	s = "GET /x HTTP/1.1\r\n\r\n";
	assert_int_equal(http_parse(p, s, strlen(s), &r, &o), HTTP_PARSE_ERROR);
	assert_null(o.detail); /* our own check: the status's text is the message */
	http_parser_free(p);
}

/* Two parsers with the limits: one with the fast path, one without. */
static void both_paths(struct http_parser **fast, struct http_parser **slow)
{
	*fast = http_parser_new(&limits);
	*slow = http_parser_new(&limits);
	assert_non_null(*fast);
	assert_non_null(*slow);
	http_parser_set_fast(*slow, 0);
}

/* The two paths over every case, every prefix of it and every case with
 * each tail: one answer.  And the fast path is the one taken for the
 * requests guests send most (a GET or HEAD with plain headers), and not
 * for those that need llhttp's framing or connection rules. */
static void test_fast_same_as_llhttp(void **state)
{
	(void)state;
	struct http_parser *fast, *slow;
	both_paths(&fast, &slow);
	unsigned taken = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		size_t len = c->len ? c->len : strlen(c->raw);
		for (size_t cut = 0; cut <= len; cut++) {
			struct http_request rf, rs;
			struct http_parse_result of, os;
			enum http_parse_status sf = http_parse(fast, c->raw, cut, &rf, &of);
			enum http_parse_status ss = http_parse(slow, c->raw, cut, &rs, &os);
			if (!parse_same(sf, &rf, &of, ss, &rs, &os))
				print_message("%s cut at %zu: fast %d %d, llhttp %d %d\n", c->name, cut, sf,
					      of.status, ss, os.status);
			assert_true(parse_same(sf, &rf, &of, ss, &rs, &os));
			assert_false(os.fast);
			taken += cut == len && of.fast;
		}
	}
	print_message("the fast path took %u of %zu whole cases\n", taken, sizeof(cases) / sizeof(cases[0]));
	static const struct {
		const char *raw;
		int fast;
	} which[] = {
		{"GET /v1/identity HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n\r\n", 1},
		{"HEAD /x?a=%20&b=c HTTP/1.0\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n", 1},
		{"GET /x HTTP/1.1\r\nHost: a\r\nX-Aws-Ec2-Metadata-Token: AQAE=\t \r\n\r\n", 1},
		{"GET /x HTTP/1.1\r\nHost: a\r\n\r\n", 1},
		{"GET /x HTTP/1.1\r\n\r\n", 1}, /* read fast, refused by the common check */
		/* python-requests' own request (cloud-init, cloudbase-init) */
		{"GET /openstack/latest/meta_data.json HTTP/1.1\r\nHost: 169.254.169.254\r\n"
		 "User-Agent: Cloud-Init/25.1.4\r\nAccept-Encoding: gzip, deflate\r\nAccept: */*\r\n"
		 "Connection: keep-alive\r\n\r\n", 1},
		{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n", 1},
		{"GET /x HTTP/1.1\r\nHost: a\r\nconnection: CLOSE\r\n\r\n", 1},
		{"GET /x HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 1},
		{"GET /x HTTP/1.0\r\nConnection: close\r\n\r\n", 1},
		{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n", 1},
		{"GET /x HTTP/1.0\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n", 1},
		{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\n\r\n", 0},
		{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close \r\n\r\n", 0},
		{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\n\r\n", 0},
		{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alivex\r\n\r\n", 0},
		{"GET /x HTTP/1.1\r\nHost: a\r\nproxy-connection: close\r\n\r\n", 0},
		{"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 0},
		{"GET /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", 0},
		{"GET /x HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\n\r\n", 0},
		{"GET /x HTTP/1.1\r\nHost: a\r\nX:\r\n\r\n", 0},
		{"GET /x HTTP/1.1\r\nHost: \xc3\xa9\r\n\r\n", 0},
		{"GET /x#f HTTP/1.1\r\nHost: a\r\n\r\n", 0},
		{"GET http://a/x HTTP/1.1\r\nHost: a\r\n\r\n", 0},
		{"PUT /x HTTP/1.1\r\nHost: a\r\n\r\n", 0},
		{"GET /x HTTP/1.1\nHost: a\n\n", 0},
	};
	for (size_t i = 0; i < sizeof(which) / sizeof(which[0]); i++) {
		struct http_request rf, rs;
		struct http_parse_result of, os;
		size_t len = strlen(which[i].raw);
		enum http_parse_status sf = http_parse(fast, which[i].raw, len, &rf, &of);
		enum http_parse_status ss = http_parse(slow, which[i].raw, len, &rs, &os);
		print_message("which %zu: fast=%d status %d/%d\n", i, of.fast, sf, ss);
		assert_int_equal(of.fast, which[i].fast);
		/* plain (the log's no-look copy) only where the fast path read it */
		if (sf == HTTP_PARSE_DONE)
			assert_int_equal(rf.plain, of.fast);
		if (ss == HTTP_PARSE_DONE)
			assert_int_equal(rs.plain, 0);
		assert_true(parse_same(sf, &rf, &of, ss, &rs, &os));
	}
	http_parser_free(fast);
	http_parser_free(slow);
}

/* The fast path's byte sets against their definitions, every byte. */
static void test_byte_classes(void **state)
{
	(void)state;
	/* '?' is not in the target's class: the fast path sees it apart */
	static const char target[] = "-._~!$&'()*+,;=:@/%", token[] = "!#$%&'*+-.^_`|~";
	for (unsigned c = 0; c < 256; c++) {
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		int in_target = alnum || (c && memchr(target, (int)c, sizeof(target) - 1));
		int in_token = alnum || (c && memchr(token, (int)c, sizeof(token) - 1));
		int in_value = (c >= 0x20 && c < 0x7f) || c == '\t';
		assert_int_equal(http_parse_byte_class((unsigned char)c),
				 in_target | in_token << 1 | in_value << 2);
	}
}

/* A header value with each byte at each place of its first 20 (inside a
 * word of the fast scan, across two, and in the tail), and an HTAB before
 * it: both paths give one answer, and the fast path reads it exactly when
 * the byte is of a value's fast set (visible ASCII, SP, HTAB). */
static void test_value_bytes(void **state)
{
	(void)state;
	struct http_parser *fast, *slow;
	both_paths(&fast, &slow);
	for (unsigned c = 0; c < 256; c++) {
		for (size_t at = 0; at < 20; at++) {
			for (int tab = 0; tab < 2; tab++) {
				char raw[128];
				int n = snprintf(raw, sizeof(raw), "GET / HTTP/1.1\r\nHost: a\r\nX-V: v");
				size_t v = (size_t)n;
				memset(raw + v, 'q', 21);
				if (tab && at > 0)
					raw[v + at - 1] = '\t';
				raw[v + at] = (char)c;
				memcpy(raw + v + 21, "z\r\n\r\n", 5);
				size_t len = v + 26;
				struct http_request rf, rs;
				struct http_parse_result of, os;
				enum http_parse_status sf = http_parse(fast, raw, len, &rf, &of);
				enum http_parse_status ss = http_parse(slow, raw, len, &rs, &os);
				if (!parse_same(sf, &rf, &of, ss, &rs, &os))
					fail_msg("byte 0x%02x at %zu: the paths differ", c, at);
				int want = (c >= 0x20 && c < 0x7f) || c == '\t';
				if (of.fast != want)
					fail_msg("byte 0x%02x at %zu: fast %d", c, at, of.fast);
			}
		}
	}
	http_parser_free(fast);
	http_parser_free(slow);
}

/* Header lookup: for every byte a header name may hold (a tchar) against
 * every byte a looked-up name holds (letters, digits, '-'), in the word
 * part of the compare (byte 0) and its tail (byte 8): a match exactly when
 * the two are one letter in either case or the same byte. */
static void test_header_lookup_case(void **state)
{
	(void)state;
	struct http_parser *p = parser();
	static const char lits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-";
	unsigned matched = 0;
	for (unsigned x = 0; x < 128; x++) {
		if (!(http_parse_byte_class((unsigned char)x) & 2))
			continue;
		for (size_t k = 0; k <= 8; k += 8) {
			char raw[128], name[10] = "abcdefghi";
			name[k] = (char)x;
			int n = snprintf(raw, sizeof(raw), "GET / HTTP/1.1\r\nHost: a\r\n%s: v\r\n\r\n", name);
			struct http_request r;
			struct http_parse_result o;
			assert_int_equal(http_parse(p, raw, (size_t)n, &r, &o), HTTP_PARSE_DONE);
			for (size_t j = 0; j < sizeof(lits) - 1; j++) {
				char lit[10] = "ABCDEFGHI";
				unsigned y = (unsigned char)lits[j];
				lit[k] = (char)y;
				unsigned lx = x >= 'A' && x <= 'Z' ? x | 0x20 : x;
				unsigned ly = y >= 'A' && y <= 'Z' ? y | 0x20 : y;
				const struct http_span *v = http_req_header_n(&r, lit, 9, NULL);
				if ((v != NULL) != (lx == ly))
					print_message("header byte 0x%02x, name byte '%c' at %zu\n", x, (int)y, k);
				assert_int_equal(v != NULL, lx == ly);
				matched += v != NULL;
			}
		}
	}
	assert_int_equal(matched, 2 * (26 * 2 * 2 + 10 + 1)); /* each letter's two cases */
	http_parser_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_table, with_fast),
		cmocka_unit_test_setup(test_every_prefix, with_fast),
		cmocka_unit_test_setup(test_trailing_bytes, with_fast),
		cmocka_unit_test_setup(test_limits, with_fast),
		cmocka_unit_test_setup(test_error_detail, with_fast),
		cmocka_unit_test_setup(test_table, with_llhttp),
		cmocka_unit_test_setup(test_every_prefix, with_llhttp),
		cmocka_unit_test_setup(test_trailing_bytes, with_llhttp),
		cmocka_unit_test_setup(test_limits, with_llhttp),
		cmocka_unit_test_setup(test_error_detail, with_llhttp),
		cmocka_unit_test(test_fast_same_as_llhttp),
		cmocka_unit_test(test_byte_classes),
		cmocka_unit_test(test_value_bytes),
		cmocka_unit_test_setup(test_header_lookup_case, with_fast),
		cmocka_unit_test_setup(test_header_lookup_case, with_llhttp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
