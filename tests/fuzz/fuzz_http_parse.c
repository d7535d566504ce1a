/* libFuzzer: the request parser alone (src/core/http_parse.c), bytes in,
 * no socket and no loop, so every execution is a parse.  The first byte
 * picks the limits; the rest is the request.  Beyond the sanitizers it
 * checks what the connection code relies on: a finished request lies
 * inside the bytes and within every limit, parses the same again from
 * exactly its own bytes and is not finished one byte earlier; an error
 * has one of the statuses the parser documents and a code.  And the fast
 * path for the common GET answers exactly as llhttp does: every input is
 * parsed a second time with it off (parse_same.h).  A request said plain
 * (the access log copies its method and path without a look) has nothing
 * in them to escape. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http_parse.h"
#include "parse_same.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t body_limit(const struct http_request *head, void *ud)
{
	(void)ud;
	return head->method == HTTP_M_POST ? 1024 : 0;
}

static void inside(struct http_span s, const char *p, size_t n)
{
	if (s.n && (s.p < p || s.p + s.n > p + n))
		abort();
}

static int plain(struct http_span s)
{
	for (size_t i = 0; i < s.n; i++)
		if (s.p[i] <= 0x20 || s.p[i] >= 0x7f || s.p[i] == '\\')
			return 0;
	return 1;
}

static int span_same(struct http_span a, struct http_span b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const struct http_parse_limits lims[4] = {
		{.max_head = 8192, .max_body = 0, .max_headers = 64},
		{.max_head = 128, .max_body = 16, .max_headers = 4},
		{.max_head = 8192, .max_body = 4096, .max_headers = 100, .body_limit = body_limit},
		{.max_head = 64, .max_body = 1 << 20, .max_headers = 1},
	};
	const struct http_parse_limits *lim = &lims[data[0] & 3];
	static struct http_parser *ps[4];
	struct http_parser **pp = &ps[data[0] & 3];
	if (!*pp && !(*pp = http_parser_new(lim)))
		abort();
	static struct http_parser *slow[4];
	struct http_parser **sp = &slow[data[0] & 3];
	if (!*sp) {
		if (!(*sp = http_parser_new(lim)))
			abort();
		http_parser_set_fast(*sp, 0);
	}
	/* an exact-size copy, so ASan sees any read past the end */
	size_t n = size - 1;
	char *buf = malloc(n ? n : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, n);

	struct http_request r;
	struct http_parse_result o;
	enum http_parse_status st = http_parse(*pp, buf, n, &r, &o);
	struct http_request rs;
	struct http_parse_result os;
	enum http_parse_status ss = http_parse(*sp, buf, n, &rs, &os);
	if (os.fast || !parse_same(st, &r, &o, ss, &rs, &os))
		abort();
	if (st == HTTP_PARSE_DONE) {
		if (o.used == 0 || o.used > n || r.nheaders > lim->max_headers)
			abort();
		if (o.used - r.body.n > lim->max_head || r.body.n > lim->max_body)
			abort();
		if (r.version_major != 1 || r.path.n == 0 || r.path.p[0] != '/')
			abort();
		/* what the log copies without a look holds nothing to escape */
		if (r.plain && (!plain(r.method_name) || !plain(r.path)))
			abort();
		inside(r.method_name, buf, o.used);
		inside(r.target, buf, o.used);
		inside(r.query, buf, o.used);
		inside(r.body, buf, o.used);
		if (r.path.n != 1) /* absolute-form without a path: a literal "/" */
			inside(r.path, buf, o.used);
		for (unsigned i = 0; i < r.nheaders; i++) {
			inside(r.hname[i], buf, o.used);
			inside(r.hvalue[i], buf, o.used);
		}
		/* the same request from exactly its bytes */
		struct http_request r2;
		struct http_parse_result o2;
		if (http_parse(*pp, buf, o.used, &r2, &o2) != HTTP_PARSE_DONE || o2.used != o.used ||
		    r2.method != r.method || r2.nheaders != r.nheaders || !span_same(r2.path, r.path) ||
		    !span_same(r2.query, r.query) || r2.body.n != r.body.n || o2.keep_alive != o.keep_alive)
			abort();
		/* and not finished one byte earlier */
		if (http_parse(*pp, buf, o.used - 1, &r2, &o2) == HTTP_PARSE_DONE)
			abort();
	} else if (st == HTTP_PARSE_ERROR) {
		switch (o.status) {
		case 400: case 411: case 413: case 414: case 431: case 505:
			break;
		default:
			abort();
		}
		if (!o.code)
			abort();
	} else if (st != HTTP_PARSE_MORE) {
		abort();
	}
	free(buf);
	return 0;
}
