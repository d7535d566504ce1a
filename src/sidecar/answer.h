/* answer: one request being answered, as every layout's handler sees it
 * (struct call, a handler's call), and the helpers that answer it.
 *
 * The wiring (imds.c) matches the route, checks the rules the route names
 * and hands its handler a call: the parsed request, the response to fill,
 * the parts of the path the route captured, and the handler's own state.
 * Data answers go through answer_data(), which adds the ETag, answers 304
 * when the client has the bytes already, and records the tag a
 * ?wait_for_change request compares. */
#ifndef IMDS_ANSWER_H
#define IMDS_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "http.h"
#include "sbuf.h"

struct call {
	const struct http_request *req;
	struct http_response *res;
	struct http_span ver;  /* the route's version segment ({v}); n 0: none */
	struct http_span rest; /* what the route's trailing '*' matched */
	void *self;            /* the handler's state (its layout) */
	uint64_t tag;          /* the ETag of the data answer built; 0: none */
};

/* 200 with b's bytes (NULL: an empty body) and its ETag, or 304 when an
 * If-None-Match of the request lists that tag.  b is borrowed: the
 * response takes its own reference. */
void answer_data(struct call *c, const char *ctype, struct blob *b);
/* The same for bytes that live until the handler returns. */
void answer_data_text(struct call *c, const char *ctype, const char *p, size_t n);
/* 200 with b's bytes (NULL: empty), no validator. */
void answer_blob(struct call *c, const char *ctype, struct blob *b);

/* A rendered answer as a blob: NULL when b overflowed, or on ENOMEM. */
struct blob *answer_render(const struct sbuf *b);
/* ,"key":"v" (without the comma when first), v JSON-escaped; NULL as "". */
void answer_json_field(struct sbuf *b, const char *key, const char *v, int comma);

/* The one value of a header, or NULL when absent; *many when repeated.
 * Inline, so that a literal name's length is known when compiled. */
static inline __attribute__((always_inline)) const struct http_span *
answer_req_header(const struct http_request *req, const char *name, int *many)
{
	unsigned count = 0;
	const struct http_span *v = http_req_header_n(req, name, __builtin_strlen(name), &count);
	*many = count > 1;
	return v;
}
/* X-Forwarded-For or Forwarded: a proxy in the guest relays the request. */
int answer_req_forwarded(const struct http_request *req);

/* 1 when an If-None-Match header of req lists the ETag of tag (weak
 * comparison, as for GET) or is "*". */
int answer_req_inm_match(const struct http_request *req, uint64_t tag);

/* The decoded value of key in a query string (percent-decoding, '+' as
 * space).  Length, -ENOENT when absent, -EINVAL on a bad escape, -ENOSPC. */
int answer_query_param(const char *q, size_t qn, const char *key, char *out, size_t cap);

#endif
