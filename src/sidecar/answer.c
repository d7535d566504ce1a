#include "answer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sbuf.h"

/* ---- answers ---------------------------------------------------------------- */

void answer_blob(struct call *c, const char *ctype, struct blob *b)
{
	struct http_response *res = c->res;
	res->status = 200;
	res->content_type = ctype;
	if (b) {
		res->blob = blob_ref(b); /* the core takes this reference */
	} else {
		res->body = "";
		res->body_len = 0;
	}
}

struct blob *answer_render(const struct sbuf *b)
{
	return b->overflow ? NULL : blob_new(b->p, b->len);
}

void answer_json_field(struct sbuf *b, const char *key, const char *v, int comma)
{
	sbuf_printf(b, "%s\"%s\":\"", comma ? "," : "", key);
	if (v)
		sbuf_json_escape(b, v, strlen(v));
	sbuf_putc(b, '"');
}

/* ---- validators: ETag and If-None-Match (RFC 9110 §8.8.3, §13.1.2) ---------- */

/* 1 when an If-None-Match of req lists the entity-tag want[0..18) ("..."),
 * weakly compared. */
static int inm_lists(const struct http_request *req, const char want[18])
{
	for (unsigned h = 0; h < req->nheaders; h++) {
		struct http_span n = req->hname[h], v = req->hvalue[h];
		if (n.n != 13 || strncasecmp(n.p, "if-none-match", 13) != 0)
			continue;
		size_t i = 0;
		while (i < v.n) {
			while (i < v.n && (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == ','))
				i++;
			if (i == v.n)
				break;
			if (v.p[i] == '*')
				return 1;
			/* weak comparison: W/"x" matches "x" */
			if (v.n - i >= 2 && v.p[i] == 'W' && v.p[i + 1] == '/')
				i += 2;
			if (i == v.n || v.p[i] != '"')
				break; /* not an entity-tag: the field is ignored from here */
			size_t j = i + 1;
			while (j < v.n && v.p[j] != '"')
				j++;
			if (j == v.n)
				break;
			if (j + 1 - i == 18 && memcmp(v.p + i, want, 18) == 0)
				return 1;
			i = j + 1;
		}
	}
	return 0;
}

int answer_req_inm_match(const struct http_request *req, uint64_t tag)
{
	char want[19];
	blob_tag_text(tag, want);
	return inm_lists(req, want);
}

/* A 200 with a validator, or 304 when the client has these bytes already:
 * tag, and its text t (blob_tag_text). */
static void tagged(struct call *c, uint64_t tag, const char *t)
{
	struct http_response *res = c->res;
	c->tag = tag;
	http_res_header_n(res, "ETag", 4, t, 18);
	if (res->status == 200 && inm_lists(c->req, t)) {
		res->status = 304;
		res->content_type = NULL;
		blob_unref(res->blob);
		res->blob = NULL;
		res->body = NULL;
		res->body_len = 0;
	}
}

/* tagged, for bytes that are not a blob's. */
static void tagged_bytes(struct call *c, const char *p, size_t n)
{
	char t[19];
	uint64_t tag = blob_hash(p, n);
	blob_tag_text(tag, t);
	tagged(c, tag, t);
}

void answer_data(struct call *c, const char *ctype, struct blob *b)
{
	answer_blob(c, ctype, b);
	if (b)
		tagged(c, blob_tag(b), blob_etag(b));
	else
		tagged_bytes(c, "", 0);
}

void answer_data_text(struct call *c, const char *ctype, const char *p, size_t n)
{
	http_res_text(c->res, 200, ctype, p, n);
	tagged_bytes(c, p, n);
}

/* ---- reading the request ------------------------------------------------------ */

int answer_req_forwarded(const struct http_request *req)
{
	return http_req_header(req, "x-forwarded-for", NULL) || http_req_header(req, "forwarded", NULL);
}

int answer_query_param(const char *q, size_t qn, const char *key, char *out, size_t cap)
{
	if (qn == 0)
		return -ENOENT; /* most requests: no query at all */
	size_t klen = strlen(key);
	size_t i = 0;
	while (i <= qn) {
		size_t end = i;
		while (end < qn && q[end] != '&')
			end++;
		if (end - i > klen && memcmp(q + i, key, klen) == 0 && q[i + klen] == '=') {
			size_t o = 0;
			for (size_t j = i + klen + 1; j < end; j++) {
				char ch = q[j];
				if (ch == '%') {
					if (j + 2 >= end)
						return -EINVAL;
					int a = sbuf_hexval(q[j + 1]), b = sbuf_hexval(q[j + 2]);
					if (a < 0 || b < 0)
						return -EINVAL;
					ch = (char)(a << 4 | b);
					j += 2;
				} else if (ch == '+') {
					ch = ' ';
				}
				if (o + 1 >= cap)
					return -ENOSPC;
				out[o++] = ch;
			}
			if (o >= cap)
				return -ENOSPC; /* cap 0: not even room for the NUL */
			out[o] = '\0';
			return (int)o;
		}
		i = end + 1;
	}
	return -ENOENT;
}
