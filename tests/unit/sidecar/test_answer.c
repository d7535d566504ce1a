/* answer: the answer helpers every layout's handler uses (answer.c): the data
 * answer with its ETag or a 304, the blob answer without one, rendering
 * and JSON fields, the request's headers (one value or many, proxies),
 * If-None-Match, and query parameters.  The byte tables (query, INM) and
 * the ETag walk over the data paths moved here from test_imds.c. */
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

/* ---- answer_query_param ------------------------------------------------------------ */

struct q_case {
	const char *name;
	const char *q;
	const char *key;
	size_t cap;
	int rc;
	const char *out;
	size_t outlen;
};

#define OUT(s) s, sizeof(s) - 1

static void test_query_param_table(void **state)
{
	(void)state;
	static const struct q_case cases[] = {
		{"first match", "audience=a&audience=b", "audience", 64, 1, OUT("a")},
		{"later parameter", "x=1&audience=vault", "audience", 64, 5, OUT("vault")},
		{"absent", "x=1&y=2", "audience", 64, -ENOENT, OUT("")},
		{"empty query", "", "audience", 64, -ENOENT, OUT("")},
		{"key without =", "audience", "audience", 64, -ENOENT, OUT("")},
		{"key without = then with", "audience&audience=z", "audience", 64, 1, OUT("z")},
		{"empty value", "audience=", "audience", 64, 0, OUT("")},
		{"empty value first", "audience=&audience=b", "audience", 64, 0, OUT("")},
		{"plus is space", "audience=a+b", "audience", 64, 3, OUT("a b")},
		{"percent URL", "audience=https%3A%2F%2Fx", "audience", 64, 9, OUT("https://x")},
		{"lower hex", "audience=%3a%2f", "audience", 64, 2, OUT(":/")},
		{"encoded plus", "audience=a%2Bb", "audience", 64, 3, OUT("a+b")},
		{"encoded percent", "audience=100%25", "audience", 64, 4, OUT("100%")},
		{"encoded NUL", "audience=a%00b", "audience", 64, 3, OUT("a\0b")},
		{"encoded high byte", "audience=%C3%A9", "audience", 64, 2, OUT("\xc3\xa9")},
		{"bad hex", "audience=a%zz", "audience", 64, -EINVAL, OUT("")},
		{"bad first hex", "audience=%G0", "audience", 64, -EINVAL, OUT("")},
		{"bad second hex", "audience=%0G", "audience", 64, -EINVAL, OUT("")},
		{"truncated %4", "audience=%4", "audience", 64, -EINVAL, OUT("")},
		{"lone %", "audience=%", "audience", 64, -EINVAL, OUT("")},
		{"escape cut by &", "audience=%4&x=1", "audience", 64, -EINVAL, OUT("")},
		{"escape cut by & 2", "audience=%&41", "audience", 64, -EINVAL, OUT("")},
		{"bad escape elsewhere", "x=%zz&audience=ok", "audience", 64, 2, OUT("ok")},
		{"prefix collision", "audiences=x&audience=y", "audience", 64, 1, OUT("y")},
		{"prefix only", "audiences=x", "audience", 64, -ENOENT, OUT("")},
		{"suffix collision", "xaudience=1", "audience", 64, -ENOENT, OUT("")},
		{"underscore collision", "audience_x=1", "audience", 64, -ENOENT, OUT("")},
		{"shorter key", "audienc=1", "audience", 64, -ENOENT, OUT("")},
		{"case sensitive", "Audience=1", "audience", 64, -ENOENT, OUT("")},
		{"= in value", "audience=a=b", "audience", 64, 3, OUT("a=b")},
		{"empty parameters", "&&audience=q&&", "audience", 64, 1, OUT("q")},
		{"trailing &", "audience=q&", "audience", 64, 1, OUT("q")},
		{"key a", "ab=1&a=2", "a", 64, 1, OUT("2")},
		{"ENOSPC", "audience=abcd", "audience", 4, -ENOSPC, OUT("")},
		{"exactly fits", "audience=abcd", "audience", 5, 4, OUT("abcd")},
		{"ENOSPC decoded", "audience=ab%20", "audience", 3, -ENOSPC, OUT("")},
		{"decoded exactly fits", "audience=ab%20", "audience", 4, 3, OUT("ab ")},
		{"cap 1 empty value", "audience=", "audience", 1, 0, OUT("")},
		{"cap 1 one byte", "audience=x", "audience", 1, -ENOSPC, OUT("")},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct q_case *c = &cases[i];
		size_t qn = strlen(c->q);
		/* Exact-size heap copies: no NUL after the query, and a read or a
		 * write past either buffer shows under ASan. */
		char *q = malloc(qn ? qn : 1);
		char *out = malloc(c->cap);
		assert_non_null(q);
		assert_non_null(out);
		memcpy(q, c->q, qn);
		memset(out, 'Z', c->cap);
		int rc = answer_query_param(q, qn, c->key, out, c->cap);
		int ok = rc == c->rc &&
			 (rc < 0 || ((size_t)rc == c->outlen && memcmp(out, c->out, c->outlen) == 0 &&
				     out[rc] == '\0'));
		char got[80];
		snprintf(got, sizeof(got), "%.*s", rc > 0 ? rc : 0, rc >= 0 ? out : "");
		free(q);
		free(out);
		if (!ok)
			fail_msg("%s: answer_query_param(\"%s\", \"%s\", cap %zu) = %d \"%s\", want %d",
				 c->name, c->q, c->key, c->cap, rc, got, c->rc);
	}
}

/* Cap 0 and an empty value: no room even for the NUL, so -ENOSPC and
 * nothing written (once a bug: the check sat inside the copy loop, which
 * an empty value never enters, and out[0] was written). */
static void test_query_param_cap0(void **state)
{
	(void)state;
	char guard[2] = {'Z', 'Z'};
	int rc = answer_query_param("audience=", 9, "audience", guard, 0);
	if (guard[0] != 'Z')
		fail_msg("cap 0: wrote 0x%02x to out[0] (rc %d)", (unsigned char)guard[0], rc);
	if (rc != -ENOSPC)
		fail_msg("cap 0: rc %d, want -ENOSPC", rc);
}

/* ---- If-None-Match ---------------------------------------------------------------------- */

static void test_if_none_match_table(void **state)
{
	(void)state;
	const uint64_t tag = 0x0123456789abcdefu;
	static const struct {
		const char *v;
		int match;
	} cases[] = {
		{"\"0123456789abcdef\"", 1},
		{"W/\"0123456789abcdef\"", 1},
		{"*", 1},
		{"\"x\", \"0123456789abcdef\"", 1},
		{"  \"0123456789abcdef\"  ", 1},
		{"\"x\",,\"0123456789abcdef\"", 1},
		{"\"0123456789ABCDEF\"", 0}, /* tags compare exactly */
		{"0123456789abcdef", 0},     /* not quoted: not an entity-tag */
		{"\"0123456789abcde\"", 0},
		{"\"0123456789abcdef0\"", 0},
		{"\"0123456789abcdef", 0},
		{"w/\"0123456789abcdef\"", 0},
		{"", 0},
		{",", 0},
		{"W/", 0},
		{"bogus, \"0123456789abcdef\"", 0}, /* the field is ignored after junk */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_request rq;
		memset(&rq, 0, sizeof(rq));
		rq.hname[0] = (struct http_span){"If-None-Match", 13};
		rq.hvalue[0] = (struct http_span){cases[i].v, strlen(cases[i].v)};
		rq.nheaders = 1;
		if (answer_req_inm_match(&rq, tag) != cases[i].match)
			fail_msg("'%s': %d, want %d", cases[i].v, !cases[i].match, cases[i].match);
	}
	/* Several fields: any one may match; other headers are not looked at. */
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.hname[0] = (struct http_span){"if-none-match", 13};
	rq.hvalue[0] = (struct http_span){"\"aaaa\"", 6};
	rq.hname[1] = (struct http_span){"IF-NONE-MATCH", 13};
	rq.hvalue[1] = (struct http_span){"\"0123456789abcdef\"", 18};
	rq.hname[2] = (struct http_span){"If-Match", 8};
	rq.hvalue[2] = (struct http_span){"*", 1};
	rq.nheaders = 3;
	assert_int_equal(answer_req_inm_match(&rq, tag), 1);
	rq.nheaders = 1;
	assert_int_equal(answer_req_inm_match(&rq, tag), 0);
	rq.hname[0] = (struct http_span){"If-Match", 8};
	rq.hvalue[0] = (struct http_span){"*", 1};
	assert_int_equal(answer_req_inm_match(&rq, tag), 0);
}

/* ---- the answers, on a hand-built call ------------------------------------------------ */

struct hand {
	struct http_request rq;
	struct http_response res;
	struct call c;
};

static void hand_init(struct hand *h, const char *inm)
{
	memset(h, 0, sizeof(*h));
	if (inm) {
		h->rq.hname[0] = (struct http_span){"If-None-Match", 13};
		h->rq.hvalue[0] = (struct http_span){inm, strlen(inm)};
		h->rq.nheaders = 1;
	}
	h->c.req = &h->rq;
	h->c.res = &h->res;
}

static void test_answer_data(void **state)
{
	(void)state;
	struct blob *b = blob_new("hello\n", 6);
	char tag[19], line[40];
	snprintf(tag, sizeof(tag), "\"%016llx\"", (unsigned long long)blob_tag(b));
	snprintf(line, sizeof(line), "ETag: %s\r\n", tag);

	struct hand h;
	hand_init(&h, NULL);
	answer_data(&h.c, "text/plain", b);
	assert_int_equal(h.res.status, 200);
	assert_string_equal(h.res.content_type, "text/plain");
	assert_ptr_equal(h.res.blob, b);
	assert_int_equal(b->refs, 2); /* the response's own reference */
	assert_true(h.c.tag == blob_tag(b));
	assert_int_equal(h.res.extra_len, strlen(line));
	assert_memory_equal(h.res.extra, line, h.res.extra_len);
	blob_unref(h.res.blob);

	/* The client has these bytes: 304, the tag, no body, no type, and the
	 * reference given back. */
	hand_init(&h, tag);
	answer_data(&h.c, "text/plain", b);
	assert_int_equal(h.res.status, 304);
	assert_null(h.res.content_type);
	assert_null(h.res.blob);
	assert_int_equal(h.res.body_len, 0);
	assert_int_equal(b->refs, 1);
	assert_memory_equal(h.res.extra, line, h.res.extra_len);
	assert_true(h.c.tag == blob_tag(b));

	/* Another tag: the whole answer. */
	hand_init(&h, "\"0000000000000000\"");
	answer_data(&h.c, "text/plain", b);
	assert_int_equal(h.res.status, 200);
	blob_unref(h.res.blob);
	blob_unref(b);

	/* No bytes: an empty 200 with the empty input's tag. */
	hand_init(&h, NULL);
	answer_data(&h.c, "text/plain", NULL);
	assert_int_equal(h.res.status, 200);
	assert_non_null(h.res.body);
	assert_int_equal(h.res.body_len, 0);
	assert_true(h.c.tag == blob_hash("", 0));

	/* Text that lives until the handler returns: the same rule. */
	hand_init(&h, NULL);
	answer_data_text(&h.c, "application/json", "{}", 2);
	assert_int_equal(h.res.status, 200);
	assert_int_equal(h.res.body_len, 2);
	assert_true(h.c.tag == blob_hash("{}", 2));
	snprintf(tag, sizeof(tag), "\"%016llx\"", (unsigned long long)blob_hash("{}", 2));
	hand_init(&h, tag);
	answer_data_text(&h.c, "application/json", "{}", 2);
	assert_int_equal(h.res.status, 304);
	assert_int_equal(h.res.body_len, 0);
	assert_null(h.res.content_type);
}

static void test_answer_blob(void **state)
{
	(void)state;
	struct blob *b = blob_new("x", 1);
	char tag[19];
	snprintf(tag, sizeof(tag), "\"%016llx\"", (unsigned long long)blob_tag(b));
	struct hand h;
	/* No validator: a matching If-None-Match changes nothing. */
	hand_init(&h, tag);
	answer_blob(&h.c, "application/octet-stream", b);
	assert_int_equal(h.res.status, 200);
	assert_ptr_equal(h.res.blob, b);
	assert_int_equal(h.res.extra_len, 0);
	assert_true(h.c.tag == 0);
	blob_unref(h.res.blob);
	blob_unref(b);
	hand_init(&h, NULL);
	answer_blob(&h.c, "text/plain", NULL);
	assert_int_equal(h.res.status, 200);
	assert_null(h.res.blob);
	assert_non_null(h.res.body);
	assert_int_equal(h.res.body_len, 0);
}

static void test_render_and_json_field(void **state)
{
	(void)state;
	char buf[128];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	sbuf_putc(&b, '{');
	answer_json_field(&b, "a", "plain", 0);
	answer_json_field(&b, "b", "q\"\\\n\x01", 1);
	answer_json_field(&b, "c", NULL, 1);
	sbuf_putc(&b, '}');
	const char *want = "{\"a\":\"plain\",\"b\":\"q\\\"\\\\\\n\\u0001\",\"c\":\"\"}";
	assert_false(b.overflow);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.p, want, b.len);
	struct blob *r = answer_render(&b);
	assert_non_null(r);
	assert_int_equal(r->len, b.len);
	assert_memory_equal(r->data, want, r->len);
	blob_unref(r);
	/* Overflowed: never a cut answer. */
	char small[8];
	b = (struct sbuf)SBUF_INIT(small, sizeof(small));
	answer_json_field(&b, "key", "a value too long", 0);
	assert_true(b.overflow);
	assert_null(answer_render(&b));
}

static void test_headers(void **state)
{
	(void)state;
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.hname[0] = (struct http_span){"Metadata", 8};
	rq.hvalue[0] = (struct http_span){"true", 4};
	rq.hname[1] = (struct http_span){"X-Twice", 7};
	rq.hvalue[1] = (struct http_span){"1", 1};
	rq.hname[2] = (struct http_span){"x-twice", 7};
	rq.hvalue[2] = (struct http_span){"2", 1};
	rq.nheaders = 3;
	int many = -1;
	const struct http_span *v = answer_req_header(&rq, "metadata", &many);
	assert_non_null(v);
	assert_int_equal(many, 0);
	assert_int_equal(v->n, 4);
	assert_memory_equal(v->p, "true", 4);
	v = answer_req_header(&rq, "x-twice", &many);
	assert_non_null(v);
	assert_int_equal(many, 1);
	many = -1;
	assert_null(answer_req_header(&rq, "metadata-flavor", &many));
	assert_int_equal(many, 0);
	assert_int_equal(answer_req_forwarded(&rq), 0);
	static const char *const proxy[] = {"X-Forwarded-For", "Forwarded", "x-forwarded-for", "FORWARDED"};
	for (size_t i = 0; i < 4; i++) {
		rq.hname[3] = (struct http_span){proxy[i], strlen(proxy[i])};
		rq.hvalue[3] = (struct http_span){"", 0}; /* even empty */
		rq.nheaders = 4;
		if (answer_req_forwarded(&rq) != 1)
			fail_msg("%s: not seen as a proxy", proxy[i]);
	}
	rq.hname[3] = (struct http_span){"X-Forwarded-Host", 16};
	assert_int_equal(answer_req_forwarded(&rq), 0);
}

/* ---- ETags through the handler, on every data path ----------------------------------------- */

static void test_etags(void **state)
{
	struct fx *f = *state;
	char ud[512];
	snprintf(ud, sizeof(ud), "%s", in_dir(f, "user-data"));
	put_str(ud, "#cloud-config\nhostname: one\n");
	put_str(f->token, "aaa.bbb.ccc");
	setenv("IMDS_USER_DATA_FILE", ud, 1);
	struct imds_app *a = start(f);
	static const struct {
		const char *path;
		int meta;
	} paths[] = {
		{"/v1/meta-data", 0},
		{"/v1/user-data", 0},
		{"/v1/vendor-data", 0},
		{"/v1/network-config", 0},
		{"/v1/identity", 1},
		{"/v1/token", 1},
		{"/openstack/latest/meta_data.json", 0},
		{"/openstack/latest/user_data", 0},
		{"/openstack/latest/vendor_data.json", 0},
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct resp r, r2, r3;
		call(a, "GET", paths[i].path, 0, paths[i].meta ? META : NULL, &r);
		EXPECT_STATUS(paths[i].path, &r, 200);
		const char *t = etag_of(&r);
		if (!t || strlen(t) != 18 || t[0] != '"' || t[17] != '"')
			fail_msg("%s: ETag %s", paths[i].path, t ? t : "(none)");
		char tag[19];
		snprintf(tag, sizeof(tag), "%s", t);
		/* the same bytes, the same tag */
		call(a, "GET", paths[i].path, 0, paths[i].meta ? META : NULL, &r2);
		assert_string_equal(etag_of(&r2), tag);
		/* the tag back: 304, the tag, no body */
		const char *h[] = {"If-None-Match", tag, "Metadata", "true", NULL};
		call(a, "GET", paths[i].path, 0, h, &r3);
		EXPECT_STATUS(paths[i].path, &r3, 304);
		assert_string_equal(etag_of(&r3), tag);
		assert_int_equal(r3.len, 0);
		assert_null(r3.ctype);
		resp_free(&r);
		resp_free(&r2);
		resp_free(&r3);
	}
	/* New bytes, a new tag: the old one gets the whole answer again. */
	struct resp r;
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	char old[19];
	snprintf(old, sizeof(old), "%s", etag_of(&r));
	resp_free(&r);
	put_str(ud, "#cloud-config\nhostname: two\n");
	const char *h[] = {"If-None-Match", old, NULL};
	call(a, "GET", "/v1/user-data", 0, h, &r);
	EXPECT_STATUS("changed user-data", &r, 200);
	EXPECT_BODY("changed user-data", &r, "#cloud-config\nhostname: two\n");
	if (strcmp(etag_of(&r), old) == 0)
		fail_msg("changed user-data kept its ETag %s", old);
	resp_free(&r);
	/* Errors carry no ETag. */
	call(a, "GET", "/v1/token", 0, NULL, &r);
	EXPECT_STATUS("token without header", &r, 400);
	assert_null(etag_of(&r));
	resp_free(&r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_param_table),
		cmocka_unit_test(test_query_param_cap0),
		cmocka_unit_test(test_if_none_match_table),
		cmocka_unit_test(test_answer_data),
		cmocka_unit_test(test_answer_blob),
		cmocka_unit_test(test_render_and_json_field),
		cmocka_unit_test(test_headers),
		T(test_etags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
