#include "http_parse.h"

#include <errno.h>
#include <llhttp.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"

struct http_parser {
	struct http_parse_limits lim;
	llhttp_settings_t settings;
	llhttp_t ll;
	/* the call in progress */
	struct http_request *req;
	int in_field;
	int headers_done;
	int complete;
	int err_status; /* a limit hit inside a callback */
	const char *err_code;
	int no_fast; /* http_parser_set_fast(p, 0): llhttp for every request */
};

/* ---- request helpers ---------------------------------------------------- */

int http_span_eq_n(struct http_span s, const char *lit, size_t n)
{
	return s.n == n && (n == 0 || memcmp(s.p, lit, n) == 0);
}

/* ASCII case-insensitive a[0..n) == b[0..n), for header names (tokens,
 * RFC 9110 §5.1) and a target's scheme: musl's strncasecmp calls tolower
 * for each byte, and this runs several times for every request. */
static int name_eq(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
		if ((unsigned)(x - 'A') < 26u)
			x |= 0x20;
		if ((unsigned)(y - 'A') < 26u)
			y |= 0x20;
		if (x != y)
			return 0;
	}
	return 1;
}

/* A header name (a token: both parse paths refuse any other byte) against
 * a name of letters, digits and '-': then bit 5 set on both sides is an
 * exact case-insensitive compare (of a token's bytes, only a letter's other
 * case has the same byte with bit 5 set), eight bytes at a time. */
static int header_name_is(const char *a, const char *lit, size_t n)
{
	const uint64_t fold = 0x2020202020202020ull;
	uint64_t x = 0, y = 0;
	if (n < 8) { /* one zero-padded word each */
		sbuf_copy(&x, a, n);
		sbuf_copy(&y, lit, n);
		return (x | fold) == (y | fold);
	}
	for (size_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&x, a + i, sizeof(x));
		memcpy(&y, lit + i, sizeof(y));
		if ((x | fold) != (y | fold))
			return 0;
	}
	/* the last 1..7: the word that ends at n */
	memcpy(&x, a + n - 8, sizeof(x));
	memcpy(&y, lit + n - 8, sizeof(y));
	return (x | fold) == (y | fold);
}

const struct http_span *http_req_header_n(const struct http_request *req, const char *name,
					  size_t n, unsigned *count)
{
	const struct http_span *found = NULL;
	unsigned c = 0;
	for (unsigned i = 0; i < req->nheaders; i++) {
		if (req->hname[i].n == n && header_name_is(req->hname[i].p, name, n)) {
			if (!found)
				found = &req->hvalue[i];
			c++;
		}
	}
	if (count)
		*count = c;
	return found;
}

/* The path p[0..n) before q (its first '?', NULL: none), the query after. */
static void split_at_query(struct http_request *r, const char *p, size_t n, const char *q)
{
	if (q) {
		r->path = (struct http_span){p, (size_t)(q - p)};
		r->query = (struct http_span){q + 1, n - (size_t)(q - p) - 1};
	} else {
		r->path = (struct http_span){p, n};
		r->query = (struct http_span){NULL, 0};
	}
}

static void split_target(struct http_request *r)
{
	const char *p = r->target.p;
	size_t n = r->target.n;
	/* absolute-form (RFC 9112 §3.2.2): drop scheme and authority. */
	if (n >= 7 && p[0] != '/' && (name_eq(p, "http://", 7) || (n >= 8 && name_eq(p, "https://", 8)))) {
		size_t skip = p[4] == ':' ? 7 : 8;
		const char *slash = memchr(p + skip, '/', n - skip);
		if (!slash) {
			r->path = (struct http_span){"/", 1};
			r->query = (struct http_span){NULL, 0};
			return;
		}
		n -= (size_t)(slash - p);
		p = slash;
	}
	split_at_query(r, p, n, memchr(p, '?', n));
}

static enum http_method method_of(uint8_t m)
{
	switch (m) {
	case HTTP_GET: return HTTP_M_GET;
	case HTTP_HEAD: return HTTP_M_HEAD;
	case HTTP_POST: return HTTP_M_POST;
	case HTTP_PUT: return HTTP_M_PUT;
	default: return HTTP_M_OTHER;
	}
}

/* ---- llhttp callbacks ---------------------------------------------------- */

static struct http_parser *parser_of(llhttp_t *p)
{
	return p->data;
}

/* Callbacks return -1 after limit(): llhttp stops with HPE_USER. */
static int limit(struct http_parser *ps, int status, const char *code)
{
	ps->err_status = status;
	ps->err_code = code;
	return -1;
}

static void span_add(struct http_span *s, const char *at, size_t len)
{
	if (s->p && s->p + s->n == at)
		s->n += len;
	else {
		s->p = at;
		s->n = len;
	}
}

static int on_method(llhttp_t *p, const char *at, size_t len)
{
	span_add(&parser_of(p)->req->method_name, at, len);
	return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
	struct http_parser *ps = parser_of(p);
	span_add(&ps->req->target, at, len);
	if (ps->req->target.n > ps->lim.max_head)
		return limit(ps, 414, "uri_too_long");
	return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
	struct http_parser *ps = parser_of(p);
	struct http_request *r = ps->req;
	if (!ps->in_field) {
		if (r->nheaders >= ps->lim.max_headers || r->nheaders >= HTTP_MAX_HEADERS)
			return limit(ps, 431, "too_many_headers");
		ps->in_field = 1;
		r->hname[r->nheaders] = (struct http_span){at, 0};
		r->hvalue[r->nheaders] = (struct http_span){NULL, 0};
	}
	span_add(&r->hname[r->nheaders], at, len);
	return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
	struct http_parser *ps = parser_of(p);
	struct http_span *v = &ps->req->hvalue[ps->req->nheaders];
	/* Each parse sees the whole request in one buffer, so a value arrives
	 * in pieces only when llhttp unfolds obsolete line folding (RFC 9112
	 * §5.2 lets a server reject it; folded values are a smuggling aid). */
	if (v->p && v->p + v->n != at)
		return limit(ps, 400, "obs_fold");
	span_add(v, at, len);
	return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
	struct http_parser *ps = parser_of(p);
	/* RFC 9110 §5.5: surrounding whitespace is not part of the value;
	 * llhttp drops the leading part, the trailing part is ours to drop. */
	struct http_span *v = &ps->req->hvalue[ps->req->nheaders];
	while (v->n && (v->p[v->n - 1] == ' ' || v->p[v->n - 1] == '\t'))
		v->n--;
	ps->in_field = 0;
	ps->req->nheaders++;
	return 0;
}

static int on_headers_complete(llhttp_t *p)
{
	struct http_parser *ps = parser_of(p);
	struct http_request *r = ps->req;
	ps->headers_done = 1;
	r->method = method_of(p->method);
	r->version_major = p->http_major;
	r->version_minor = p->http_minor;
	split_target(r);
	size_t max = ps->lim.max_body;
	if (ps->lim.body_limit && max) {
		/* The application's say for this request, from its head. */
		size_t m = ps->lim.body_limit(r, ps->lim.ud);
		if (m < max)
			max = m;
	}
	if (p->flags & F_CHUNKED) {
		/* A chunked body has no length to check up front; no client of
		 * ours sends one (the API server sends Content-Length). */
		return max ? limit(ps, 411, "length_required") : limit(ps, 413, "body_not_allowed");
	}
	if ((p->flags & F_CONTENT_LENGTH) && p->content_length > max)
		return limit(ps, 413, max ? "body_too_large" : "body_not_allowed");
	return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
	span_add(&parser_of(p)->req->body, at, len);
	return 0;
}

static int on_message_complete(llhttp_t *p)
{
	parser_of(p)->complete = 1;
	/* Stop right after this message: the bytes behind it are the next
	 * request's, parsed once this one is answered. */
	return HPE_PAUSED;
}

/* ---- the parser ----------------------------------------------------------- */

struct http_parser *http_parser_new(const struct http_parse_limits *lim)
{
	struct http_parser *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->lim = *lim;
	llhttp_settings_init(&p->settings);
	p->settings.on_method = on_method;
	p->settings.on_url = on_url;
	p->settings.on_header_field = on_header_field;
	p->settings.on_header_value = on_header_value;
	p->settings.on_header_value_complete = on_header_value_complete;
	p->settings.on_headers_complete = on_headers_complete;
	p->settings.on_body = on_body;
	p->settings.on_message_complete = on_message_complete;
	return p;
}

void http_parser_set_body_limit(struct http_parser *p, http_body_limit *fn, void *ud)
{
	p->lim.body_limit = fn;
	p->lim.ud = ud;
}

void http_parser_free(struct http_parser *p)
{
	free(p);
}

void http_parser_set_fast(struct http_parser *p, int on)
{
	p->no_fast = !on;
}

/* ---- the fast path ---------------------------------------------------------
 *
 * Nearly every request a guest sends is a GET of a short path with a few
 * plain headers.  llhttp's state machine takes about a fifth of such an
 * answer's instructions; this reads exactly that common form in one pass and
 * fills the request as the llhttp path would.  Anything else — another
 * method, a byte outside the sets below, a header that changes framing or
 * the connection (Content-Length, Transfer-Encoding, Proxy-Connection,
 * Upgrade, a Connection other than one plain "keep-alive" or "close"), a
 * bare LF, folding, an empty value, a head not yet whole or past a limit —
 * returns 0 and the request goes through llhttp from its first byte, errors
 * and all.  "Connection: keep-alive" is read fast: every request of
 * python-requests carries it (cloud-init's, cloudbase-init's).  Its effect
 * is llhttp's (llhttp_should_keep_alive): HTTP/1.1 stays open unless a
 * Connection says "close", HTTP/1.0 closes unless one says "keep-alive".
 * So the fast path decides nothing llhttp would decide differently:
 * fuzz_http_parse runs both on every input and aborts on any difference,
 * and test_http_parse runs its table both ways. */

/* Byte classes, one load per byte; test_http_parse holds each against its
 * definition for all 256 bytes (http_parse_byte_class).
 * CLS_TARGET: RFC 3986 pchar and '/' (origin-form only; '?', the query's
 *   start, is seen apart): ALPHA DIGIT and "-._~!$&'()*+,;=:@/%".
 * CLS_TOKEN: RFC 9110 §5.6.2 tchar (a header name): ALPHA DIGIT and
 *   "!#$%&'*+-.^_`|~".
 * CLS_VALUE: a header value's bytes we read fast: visible ASCII, SP, HTAB
 *   (no CTL, no obs-text). */
enum { CLS_TARGET = 1, CLS_TOKEN = 2, CLS_VALUE = 4 };
static const uint8_t byte_class[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	4, 7, 4, 6, 7, 7, 7, 7, 5, 5, 7, 7, 5, 7, 7, 5,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 5, 5, 4, 5, 4, 4,
	5, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 4, 4, 4, 6, 7,
	6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 4, 6, 4, 7, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

int http_parse_byte_class(unsigned char c)
{
	return byte_class[c];
}

/* The header names llhttp gives a meaning beyond their value. */
static int framing_name(const char *p, size_t n)
{
	switch (n) { /* by length: most names are none of these lengths */
	case 7: return header_name_is(p, "upgrade", 7);
	case 14: return header_name_is(p, "content-length", 14);
	case 16: return header_name_is(p, "proxy-connection", 16);
	case 17: return header_name_is(p, "transfer-encoding", 17);
	default: return 0;
	}
}

/* p[0..4) == lit[0..4) and p[0..8) == lit[0..8): one load and compare each
 * (the literal's load is folded when compiled), not a call to memcmp. */
static inline int same4(const char *p, const char *lit)
{
	uint32_t a, b;
	memcpy(&a, p, sizeof(a));
	memcpy(&b, lit, sizeof(b));
	return a == b;
}

static inline int same8(const char *p, const char *lit)
{
	uint64_t a, b;
	memcpy(&a, p, sizeof(a));
	memcpy(&b, lit, sizeof(b));
	return a == b;
}

/* The first index from i on whose byte is not of class cls (end if all
 * are): four bytes a round while four remain, one bound check for them. */
static inline size_t scan_class(const char *d, size_t i, size_t end, unsigned cls)
{
	const unsigned char *u = (const unsigned char *)d;
	for (; end - i >= 4; i += 4) {
		if (!(byte_class[u[i]] & cls))
			return i;
		if (!(byte_class[u[i + 1]] & cls))
			return i + 1;
		if (!(byte_class[u[i + 2]] & cls))
			return i + 2;
		if (!(byte_class[u[i + 3]] & cls))
			return i + 3;
	}
	while (i < end && (byte_class[u[i]] & cls))
		i++;
	return i;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The first index from i on whose byte is not of CLS_VALUE: eight bytes a
 * round, each word tested whole for a byte outside 0x20..0x7e (the tests of
 * "Bit Twiddling Hacks", whose lowest flagged byte is exact: a borrow or
 * carry only flags bytes above a true one); the first such byte is found
 * from the flags' lowest bit (so little-endian only), and an HTAB there
 * (of CLS_VALUE too) goes on. */
static inline size_t scan_value(const char *d, size_t i, size_t end)
{
	const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
	while (end - i >= 8) {
		uint64_t w;
		memcpy(&w, d + i, 8);
		uint64_t m = ((w - ones * 0x20) & ~w & high) | (((w + ones) | w) & high);
		if (!m) {
			i += 8;
			continue;
		}
		i += (size_t)__builtin_ctzll(m) / 8;
		if (d[i] != '\t')
			return i;
		i++;
	}
	return scan_class(d, i, end, CLS_VALUE);
}
#else
static inline size_t scan_value(const char *d, size_t i, size_t end)
{
	return scan_class(d, i, end, CLS_VALUE);
}
#endif

/* 1 with req and out->used filled, or 0: use llhttp. */
static int fast_parse(const struct http_parser *ps, const char *d, size_t len,
		      struct http_request *r, struct http_parse_result *out, unsigned *hosts)
{
	size_t end = len < ps->lim.max_head ? len : ps->lim.max_head, i;
	if (end >= 4 && same4(d, "GET ")) {
		r->method = HTTP_M_GET;
		i = 4;
	} else if (end >= 5 && same4(d, "HEAD") && d[4] == ' ') {
		r->method = HTTP_M_HEAD;
		i = 5;
	} else {
		return 0;
	}
	r->method_name = (struct http_span){d, i - 1};
	size_t t = i, q = 0;
	if (i >= end || d[i] != '/')
		return 0;
	for (;;) {
		i = scan_class(d, i, end, CLS_TARGET);
		if (i >= end || d[i] != '?')
			break;
		if (!q)
			q = i; /* the query's start; later '?' are its bytes */
		i++;
	}
	r->target = (struct http_span){d + t, i - t};
	split_at_query(r, d + t, i - t, q ? d + q : NULL); /* origin-form: '?' seen on the way */
	if (end - i < 11 || !same8(d + i, " HTTP/1.") ||
	    (d[i + 8] != '0' && d[i + 8] != '1') || d[i + 9] != '\r' || d[i + 10] != '\n')
		return 0;
	r->version_major = 1;
	r->version_minor = (unsigned)(d[i + 8] - '0');
	i += 11;
	unsigned nh = 0, cap = ps->lim.max_headers < HTTP_MAX_HEADERS ? ps->lim.max_headers
								    : HTTP_MAX_HEADERS;
	int said_close = 0, said_keep = 0; /* a Connection header's word */
	for (;;) {
		if (end - i < 2)
			return 0;
		if (d[i] == '\r') {
			if (d[i + 1] != '\n')
				return 0;
			i += 2;
			break;
		}
		size_t ns = i;
		i = scan_class(d, i, end, CLS_TOKEN);
		if (i == ns || i >= end || d[i] != ':' || nh >= cap || framing_name(d + ns, i - ns))
			return 0;
		r->hname[nh] = (struct http_span){d + ns, i - ns};
		i++;
		while (i < end && (d[i] == ' ' || d[i] == '\t'))
			i++;
		size_t vs = i;
		/* visible ASCII, SP and HTAB (no obs-text, no CTL) */
		i = scan_value(d, i, end);
		if (end - i < 2 || d[i] != '\r' || d[i + 1] != '\n')
			return 0;
		size_t ve = i;
		while (ve > vs && (d[ve - 1] == ' ' || d[ve - 1] == '\t'))
			ve--;
		if (ve == vs)
			return 0;
		if (r->hname[nh].n == 4 && header_name_is(d + ns, "host", 4))
			++*hosts; /* for request_check, without a second look */
		if (r->hname[nh].n == 10 && header_name_is(d + ns, "connection", 10)) {
			/* one plain word, nothing after it: a list, another word or
			 * trailing blanks go to llhttp.  header_name_is's case fold
			 * (| 0x20) is exact here too: of a value's bytes only CR
			 * would fold onto '-', and CR ends the value. */
			if (ve != i)
				return 0;
			if (ve - vs == 5 && header_name_is(d + vs, "close", 5))
				said_close = 1;
			else if (ve - vs == 10 && header_name_is(d + vs, "keep-alive", 10))
				said_keep = 1;
			else
				return 0;
		}
		r->hvalue[nh++] = (struct http_span){d + vs, ve - vs};
		i += 2;
	}
	r->nheaders = nh;
	r->plain = 1; /* GET or HEAD, and a target of CLS_TARGET bytes */
	out->used = i;
	out->keep_alive = r->version_minor == 1 ? !said_close : said_keep;
	return 1;
}

/* What llhttp accepts but we do not.  0 or an HTTP status.  hosts: the
 * request's Host headers. */
static int request_check(const struct http_request *r, unsigned hosts, const char **code)
{
	if (r->version_major != 1) {
		*code = "bad_version";
		return 505;
	}
	if (hosts > 1 || (r->version_minor >= 1 && hosts == 0)) {
		*code = "bad_host";
		return 400;
	}
	if (r->path.n == 0 || r->path.p[0] != '/') {
		*code = "bad_target";
		return 400;
	}
	return 0;
}

static enum http_parse_status error(struct http_parse_result *out, int status, const char *code,
				    const char *detail)
{
	out->status = status;
	out->code = code;
	out->detail = detail;
	return HTTP_PARSE_ERROR;
}

enum http_parse_status http_parse(struct http_parser *p, const char *data, size_t len,
				  struct http_request *req, struct http_parse_result *out)
{
	memset(req, 0, offsetof(struct http_request, hname));
	req->peer = NULL;
	req->start_us = 0;
	req->parked = req->park_expired = 0;
	*out = (struct http_parse_result){0};
	p->req = req;
	p->in_field = p->headers_done = p->complete = 0;
	p->err_status = 0;
	p->err_code = NULL;
	unsigned hosts = 0;
	if (!p->no_fast && fast_parse(p, data, len, req, out, &hosts)) {
		out->fast = 1;
		const char *code = NULL;
		int bad = request_check(req, hosts, &code);
		if (bad)
			return error(out, bad, code, NULL);
		return HTTP_PARSE_DONE;
	}
	memset(req, 0, offsetof(struct http_request, hname));
	llhttp_init(&p->ll, HTTP_REQUEST, &p->settings);
	p->ll.data = p;
	llhttp_errno_t e = llhttp_execute(&p->ll, data, len);

	if (e == HPE_PAUSED && p->complete) {
		out->used = (size_t)(llhttp_get_error_pos(&p->ll) - data);
		if (out->used - req->body.n > p->lim.max_head)
			return error(out, 431, "head_too_large", NULL);
		const char *code = NULL;
		hosts = 0;
		http_req_header(req, "host", &hosts);
		int bad = request_check(req, hosts, &code);
		if (bad)
			return error(out, bad, code, NULL);
		out->keep_alive = llhttp_should_keep_alive(&p->ll);
		return HTTP_PARSE_DONE;
	}
	if (e == HPE_OK) {
		/* Not complete yet: refuse a head that already passed the cap. */
		if (!p->headers_done && len > p->lim.max_head)
			return error(out, 431, "head_too_large", NULL);
		return HTTP_PARSE_MORE;
	}
	if (!p->headers_done && req->target.n)
		split_target(req); /* what there is of it, for the log line */
	if (p->err_status)
		return error(out, p->err_status, p->err_code,
			     p->err_status == 400 ? llhttp_get_error_reason(&p->ll) : NULL);
	if (e == HPE_INVALID_VERSION)
		return error(out, 505, "bad_version", NULL);
	return error(out, 400, "bad_request", llhttp_get_error_reason(&p->ll));
}
