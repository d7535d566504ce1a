/* parse_same: whether two http_parse calls over the same bytes gave one
 * answer, field by field (status, code, lengths, every span's bytes); for
 * the fast path against llhttp (fuzz_http_parse, test_http_parse). */
#ifndef IMDS_PARSE_SAME_H
#define IMDS_PARSE_SAME_H

#include <string.h>

#include "http_parse.h"

static inline int parse_span_same(struct http_span a, struct http_span b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static inline int parse_same(enum http_parse_status sa, const struct http_request *a,
			     const struct http_parse_result *oa, enum http_parse_status sb,
			     const struct http_request *b, const struct http_parse_result *ob)
{
	if (sa != sb || oa->status != ob->status || (oa->code == NULL) != (ob->code == NULL) ||
	    (oa->code && strcmp(oa->code, ob->code) != 0))
		return 0;
	if (sa != HTTP_PARSE_DONE)
		return 1; /* an error's spans are what was read so far: each path's own */
	if (oa->used != ob->used || oa->keep_alive != ob->keep_alive || a->method != b->method ||
	    a->version_major != b->version_major || a->version_minor != b->version_minor ||
	    a->nheaders != b->nheaders || !parse_span_same(a->method_name, b->method_name) ||
	    !parse_span_same(a->target, b->target) || !parse_span_same(a->path, b->path) ||
	    !parse_span_same(a->query, b->query) || !parse_span_same(a->body, b->body))
		return 0;
	for (unsigned i = 0; i < a->nheaders; i++)
		if (!parse_span_same(a->hname[i], b->hname[i]) ||
		    !parse_span_same(a->hvalue[i], b->hvalue[i]))
			return 0;
	return 1;
}

#endif
