/* session: IMDSv2-style session tokens (session.c): the table itself
 * (token form, expiry to the microsecond, free slots reused lowest first,
 * the oldest evicted when full), session_check across dialects (absent,
 * valid, repeated, unknown, cut), and session_open's answer; then the
 * walk through the handler (PUT /v1/session, bad TTLs, proxies, optional
 * and required) moved here from test_imds.c. */
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
#include <sys/stat.h>
#include <unistd.h>

#include "handler.h"

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
#define SEC 1000000u

static const struct session_dialect *const OURS[] = {&session_ours};

static int check1(const struct sessions *ss, uint64_t now, const char *tok)
{
	const char *h[] = {"X-Metadata-Token", tok, NULL};
	struct http_request rq = bare_req(now, h);
	return session_check(ss, &rq, OURS, 1);
}

static void test_tokens_and_expiry(void **state)
{
	(void)state;
	struct sessions ss;
	assert_int_equal(session_init(&ss), 0);
	const char *t;
	char first[SESSION_TOKEN_LEN + 1];
	assert_int_equal(session_new(&ss, 60, 10 * SEC, &t), 0);
	assert_int_equal(strlen(t), SESSION_TOKEN_LEN);
	assert_int_equal(strspn(t, B64URL), SESSION_TOKEN_LEN);
	memcpy(first, t, sizeof(first));
	/* Live up to its last microsecond, not at its end. */
	assert_int_equal(check1(&ss, 10 * SEC, first), 1);
	assert_int_equal(check1(&ss, 70 * SEC - 1, first), 1);
	assert_int_equal(check1(&ss, 70 * SEC, first), -1);
	/* Tokens differ (32 random bytes each). */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(session_new(&ss, 1, 0, &t), 0);
		assert_string_not_equal(t, first);
	}
	session_fini(&ss);
	assert_null(ss.s);
}

static void test_slots(void **state)
{
	(void)state;
	struct sessions ss;
	assert_int_equal(session_init(&ss), 0);
	const char *t;
	for (int i = 0; i < 3; i++)
		assert_int_equal(session_new(&ss, 1, 0, &t), 0);
	assert_int_equal(ss.used, 3);
	/* All expired: the lowest slot is taken again, the scan stays at 3. */
	assert_int_equal(session_new(&ss, 1, 5 * SEC, &t), 0);
	assert_int_equal(ss.used, 3);
	assert_ptr_equal(t, (const char *)ss.s); /* slot 0's token */

	/* Full of live sessions: the oldest goes, the rest stay. */
	session_fini(&ss);
	assert_int_equal(session_init(&ss), 0);
	char oldest[SESSION_TOKEN_LEN + 1], second[SESSION_TOKEN_LEN + 1];
	assert_int_equal(session_new(&ss, 600, 1 * SEC, &t), 0);
	memcpy(oldest, t, sizeof(oldest));
	assert_int_equal(session_new(&ss, 600, 1 * SEC + 1, &t), 0);
	memcpy(second, t, sizeof(second));
	for (unsigned i = 2; i < SESSION_MAX; i++)
		assert_int_equal(session_new(&ss, 600, 1 * SEC + i, &t), 0);
	assert_int_equal(ss.used, SESSION_MAX);
	assert_int_equal(check1(&ss, 2 * SEC, oldest), 1);
	assert_int_equal(session_new(&ss, 600, 2 * SEC, &t), 0);
	assert_int_equal(ss.used, SESSION_MAX);
	assert_int_equal(check1(&ss, 2 * SEC, oldest), -1);
	assert_int_equal(check1(&ss, 2 * SEC, second), 1);
	assert_int_equal(check1(&ss, 2 * SEC, t), 1);
	session_fini(&ss);
}

static void test_check_dialects(void **state)
{
	(void)state;
	struct sessions ss;
	assert_int_equal(session_init(&ss), 0);
	const char *t;
	assert_int_equal(session_new(&ss, 60, 0, &t), 0);
	char tok[SESSION_TOKEN_LEN + 1];
	memcpy(tok, t, sizeof(tok));
	static const struct session_dialect theirs =
		SESSION_DIALECT("x-their-ttl", "X-Their-TTL", "x-their-token");
	const struct session_dialect *const both[] = {&session_ours, &theirs};
	char cut[SESSION_TOKEN_LEN];
	memcpy(cut, tok, SESSION_TOKEN_LEN - 1);
	cut[SESSION_TOKEN_LEN - 1] = '\0';
	char longer[SESSION_TOKEN_LEN + 2];
	snprintf(longer, sizeof(longer), "%sA", tok);
	char flipped[SESSION_TOKEN_LEN + 1];
	memcpy(flipped, tok, sizeof(flipped));
	flipped[SESSION_TOKEN_LEN - 1] = flipped[SESSION_TOKEN_LEN - 1] == 'A' ? 'B' : 'A';
	const struct {
		const char *name;
		const char *h[7];
		int want;
	} cases[] = {
		{"none", {"Host", "x", NULL}, 0},
		{"ours", {"X-Metadata-Token", tok, NULL}, 1},
		{"theirs", {"X-Their-Token", tok, NULL}, 1},
		{"header name's case", {"x-METADATA-token", tok, NULL}, 1},
		{"both good", {"X-Metadata-Token", tok, "X-Their-Token", tok, NULL}, 1},
		{"one good, one bad", {"X-Metadata-Token", tok, "X-Their-Token", flipped, NULL}, -1},
		{"one bad, one good", {"X-Metadata-Token", flipped, "X-Their-Token", tok, NULL}, -1},
		{"repeated", {"X-Metadata-Token", tok, "X-Metadata-Token", tok, NULL}, -1},
		{"last byte changed", {"X-Metadata-Token", flipped, NULL}, -1},
		{"cut by one", {"X-Metadata-Token", cut, NULL}, -1},
		{"one more byte", {"X-Metadata-Token", longer, NULL}, -1},
		{"empty", {"X-Metadata-Token", "", NULL}, -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_request rq = bare_req(SEC, cases[i].h);
		int got = session_check(&ss, &rq, both, 2);
		if (got != cases[i].want)
			fail_msg("%s: %d, want %d", cases[i].name, got, cases[i].want);
	}
	/* Only the dialects asked for are read. */
	const char *h[] = {"X-Their-Token", "junk", NULL};
	struct http_request rq = bare_req(SEC, h);
	assert_int_equal(session_check(&ss, &rq, OURS, 1), 0);
	session_fini(&ss);
}

/* session_open on a hand-built call: the token, the TTL echoed under the
 * dialect's own name, never cached. */
static void test_open_answer(void **state)
{
	(void)state;
	struct sessions ss;
	assert_int_equal(session_init(&ss), 0);
	static const struct session_dialect theirs =
		SESSION_DIALECT("x-their-ttl", "X-Their-TTL", "x-their-token");
	const char *h[] = {"x-their-ttl", "90", NULL};
	struct http_request rq = bare_req(3 * SEC, h);
	struct http_response res;
	memset(&res, 0, sizeof(res));
	struct call c = {.req = &rq, .res = &res, .self = &ss};
	session_open(&c, &theirs);
	assert_int_equal(res.status, 200);
	assert_int_equal(res.body_len, SESSION_TOKEN_LEN);
	char extra[600];
	snprintf(extra, sizeof(extra), "%.*s", (int)res.extra_len, res.extra);
	assert_non_null(strstr(extra, "Cache-Control: no-store\r\n"));
	assert_non_null(strstr(extra, "X-Their-TTL: 90\r\n"));
	char tok[SESSION_TOKEN_LEN + 1];
	memcpy(tok, res.body, SESSION_TOKEN_LEN);
	tok[SESSION_TOKEN_LEN] = '\0';
	const char *p[] = {"X-Their-Token", tok, NULL};
	struct http_request later = bare_req(92 * SEC, p);
	const struct session_dialect *const d[] = {&theirs};
	assert_int_equal(session_check(&ss, &later, d, 1), 1);
	later.start_us = 93 * SEC;
	assert_int_equal(session_check(&ss, &later, d, 1), -1);
	/* Our TTL header is not theirs. */
	const char *ours[] = {"X-Metadata-Token-TTL-Seconds", "90", NULL};
	rq = bare_req(0, ours);
	memset(&res, 0, sizeof(res));
	session_open(&c, &theirs);
	assert_int_equal(res.status, 400);
	assert_non_null(strstr(res.body, "X-Their-TTL"));
	session_fini(&ss);
}

/* ---- through the handler --------------------------------------------------------------- */

static void test_sessions(void **state)
{
	struct fx *f = *state;
	put_str(f->token, "aaa.bbb.ccc");
	struct imds_app *a = start(f);
	struct resp r;
	const uint64_t S = 1000000u;
	char t1[64], t2[64];
	open_session(a, 10 * S, "60", t1);
	open_session(a, 10 * S, "21600", t2);
	assert_string_not_equal(t1, t2);

	/* Bad TTLs, proxies, other methods. */
	static const char *const bad[] = {"0", "21601", "-1", "1.5", "", " 60", "60s", "99999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *h[] = {"X-Metadata-Token-TTL-Seconds", bad[i], NULL};
		call(a, "PUT", "/v1/session", 0, h, &r);
		expect_error(bad[i], &r, 400, "bad_ttl");
		resp_free(&r);
	}
	call(a, "PUT", "/v1/session", 0, NULL, &r);
	expect_error("no TTL", &r, 400, "bad_ttl");
	resp_free(&r);
	const char *two[] = {"X-Metadata-Token-TTL-Seconds", "60", "X-Metadata-Token-TTL-Seconds", "61", NULL};
	call(a, "PUT", "/v1/session", 0, two, &r);
	expect_error("two TTLs", &r, 400, "bad_ttl");
	resp_free(&r);
	static const char *const proxies[] = {"X-Forwarded-For", "Forwarded"};
	for (size_t i = 0; i < 2; i++) {
		const char *h[] = {"X-Metadata-Token-TTL-Seconds", "60", proxies[i], "for=10.0.0.1", NULL};
		call(a, "PUT", "/v1/session", 0, h, &r);
		expect_error(proxies[i], &r, 403, "forbidden");
		resp_free(&r);
	}
	call(a, "GET", "/v1/session", 0, NULL, &r);
	expect_error("GET /v1/session", &r, 405, "method_not_allowed");
	EXPECT_HEADER("GET /v1/session", &r, "Allow: PUT");
	resp_free(&r);
	const char *h60[] = {"X-Metadata-Token-TTL-Seconds", "60", NULL};
	call(a, "PUT", "/v1/meta-data", 0, h60, &r);
	expect_error("PUT elsewhere", &r, 405, "method_not_allowed");
	resp_free(&r);

	/* optional (the default): none needed, a valid one accepted, a bad one refused. */
	call(a, "GET", "/v1/token", 20 * S, META, &r);
	EXPECT_STATUS("token without a session", &r, 200);
	resp_free(&r);
	const char *with1[] = {"Metadata", "true", "X-Metadata-Token", t1, NULL};
	call(a, "GET", "/v1/token", 20 * S, with1, &r);
	EXPECT_STATUS("token with a session", &r, 200);
	resp_free(&r);
	char forged[64];
	snprintf(forged, sizeof(forged), "%s", t1);
	forged[0] = forged[0] == 'A' ? 'B' : 'A';
	static const char *const wrong[] = {"x", "", NULL};
	const char *wf[] = {"X-Metadata-Token", forged, NULL};
	call(a, "GET", "/v1/meta-data", 20 * S, wf, &r);
	expect_error("a forged token", &r, 401, "invalid_token");
	resp_free(&r);
	for (size_t i = 0; wrong[i]; i++) {
		const char *w[] = {"X-Metadata-Token", wrong[i], NULL};
		call(a, "GET", "/v1/user-data", 20 * S, w, &r);
		expect_error(wrong[i], &r, 401, "invalid_token");
		resp_free(&r);
	}
	/* Expired: t1 lived 60 s from 10 s. */
	call(a, "GET", "/v1/token", 70 * S, with1, &r);
	expect_error("expired token", &r, 401, "invalid_token");
	resp_free(&r);
	const char *with2[] = {"Metadata", "true", "X-Metadata-Token", t2, NULL};
	call(a, "GET", "/v1/token", 70 * S, with2, &r);
	EXPECT_STATUS("t2 still valid", &r, 200);
	resp_free(&r);

	/* required: token and identity need one; cloud-init's paths stay open. */
	setenv("IMDS_SESSION", "required", 1);
	a = start(f);
	call(a, "GET", "/v1/token", 0, META, &r);
	expect_error("required: token without", &r, 401, "session_required");
	resp_free(&r);
	call(a, "GET", "/v1/identity", 0, META, &r);
	expect_error("required: identity without", &r, 401, "session_required");
	resp_free(&r);
	static const char *const open_paths[] = {"/v1/meta-data", "/v1/user-data", "/v1/vendor-data",
						 "/v1/network-config", "/openstack/latest/meta_data.json"};
	for (size_t i = 0; i < sizeof(open_paths) / sizeof(open_paths[0]); i++) {
		call(a, "GET", open_paths[i], 0, NULL, &r);
		EXPECT_STATUS(open_paths[i], &r, 200);
		resp_free(&r);
	}
	char t3[64];
	open_session(a, S, "5", t3);
	const char *with3[] = {"Metadata", "true", "X-Metadata-Token", t3, NULL};
	call(a, "GET", "/v1/identity", 2 * S, with3, &r);
	EXPECT_STATUS("required: identity with", &r, 200);
	resp_free(&r);

	/* The table is bounded: the oldest of SESSION_MAX + 1 is evicted. */
	char first[64], tok[64];
	open_session(a, 10 * S, "600", first);
	for (unsigned i = 1; i <= SESSION_MAX; i++)
		open_session(a, 10 * S + i, "600", tok);
	const char *wfirst[] = {"Metadata", "true", "X-Metadata-Token", first, NULL};
	call(a, "GET", "/v1/token", 11 * S, wfirst, &r);
	expect_error("evicted", &r, 401, "invalid_token");
	resp_free(&r);
	const char *wlast[] = {"Metadata", "true", "X-Metadata-Token", tok, NULL};
	call(a, "GET", "/v1/token", 11 * S, wlast, &r);
	EXPECT_STATUS("the newest", &r, 200);
	resp_free(&r);

	setenv("IMDS_SESSION", "sometimes", 1);
	char err[256];
	assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "IMDS_SESSION"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tokens_and_expiry),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_check_dialects),
		cmocka_unit_test(test_open_answer),
		cmocka_unit_test_setup_teardown(test_sessions, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
