/* httproute: the sidecar's HTTP route table, matched against a request's
 * path (the kernel's routes the network half writes are nl.c's and
 * plumb.c's).
 *
 * A route is a method set, a path pattern, the header rules the wiring
 * checks before its handler runs, and the handler with the offset of its
 * state in the table's owner.  Patterns are literal bytes with two
 * wildcards:
 *   {v}  one path segment (no '/'), accepted by the route's ver_ok: the
 *        version of a layout ("latest", "2013-04-04"), captured in ver;
 *   *    at the end only: the rest of the path, any bytes, captured in rest.
 * The first route whose pattern matches wins, whatever the method; the
 * caller answers 405 when the method is not among the route's.
 *
 * Pure: bytes in, a route and spans out; no allocation. */
#ifndef IMDS_HTTPROUTE_H
#define IMDS_HTTPROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "http_parse.h"

struct call;
typedef void httproute_fn(struct call *c);
/* 1 when v[0..n) is a version this route serves. */
typedef int httproute_ver_fn(const char *v, size_t n);

enum httproute_method {
	HTTPROUTE_GET = 1 << 0,
	HTTPROUTE_HEAD = 1 << 1,
	HTTPROUTE_POST = 1 << 2,
	HTTPROUTE_PUT = 1 << 3,
};
#define HTTPROUTE_READ (HTTPROUTE_GET | HTTPROUTE_HEAD)

enum httproute_rule {
	/* Kubernetes credentials: the exact header Metadata: true, no proxy
	 * headers (403), Cache-Control: no-store. */
	HTTPROUTE_GUARD = 1 << 0,
	/* With IMDS_SESSION=required, 401 without a session token. */
	HTTPROUTE_GATED = 1 << 1,
	/* Opens a session: answered before any token check or wait. */
	HTTPROUTE_OPENS = 1 << 2,
	/* GCE's rule (events.c's ev_gce_flavor): every answer says
	 * Metadata-Flavor: Google; a request without that exact header, or with
	 * proxy headers, gets 403. */
	HTTPROUTE_FLAVOR = 1 << 3,
};

struct httproute {
	unsigned methods;         /* enum httproute_method bits */
	unsigned rules;           /* enum httproute_rule bits */
	const char *pattern;
	httproute_ver_fn *ver_ok; /* for {v}; NULL when the pattern has none */
	httproute_fn *fn;
	size_t self;              /* offset of the handler's state in the owner */
};

/* The first route of t[0..n) whose pattern matches path[0..pn), or NULL.
 * ver and rest get the spans of path the wildcards matched ({NULL, 0}
 * when the pattern has none). */
const struct httproute *httproute_find(const struct httproute *t, size_t n, const char *path,
				       size_t pn, struct http_span *ver, struct http_span *rest);

/* The routes found by a path's exact bytes: each route whose pattern has
 * no wildcard and that no earlier route of its table matches, in an open
 * hash of the pattern.  httproute_lookup answers as httproute_find does,
 * and for those paths (most requests) without walking the table. */
#define HTTPROUTE_INDEX_SLOTS 256 /* a power of two; at most half are filled */
struct httproute_index {
	const struct httproute *t;
	size_t n;
	uint16_t slot[HTTPROUTE_INDEX_SLOTS]; /* route number + 1; 0: empty */
	uint16_t len[HTTPROUTE_INDEX_SLOTS];  /* its pattern's length */
};

/* Indexes t[0..n) (borrowed: it must outlive ix).  A table with more exact
 * routes than half the slots gets an index of the first of them; lookups
 * stay right, the rest are found by the walk. */
void httproute_index_build(struct httproute_index *ix, const struct httproute *t, size_t n);
/* httproute_find(ix->t, ix->n, path, pn, ver, rest): the same route and
 * spans. */
const struct httproute *httproute_lookup(const struct httproute_index *ix, const char *path,
					 size_t pn, struct http_span *ver, struct http_span *rest);

/* path[0..n) with every run of '/' made one (nginx's merge_slashes, on by
 * default there: "/v1//meta-data" is "/v1/meta-data"), into out (room for
 * n bytes; it may be path itself).  The length written. */
size_t httproute_merge_slashes(const char *path, size_t n, char *out);
/* Whether path[0..n) has a run of '/' to merge ("//" anywhere). */
int httproute_has_double_slash(const char *path, size_t n);

/* The httproute_method bit of an HTTP method; 0 for others. */
unsigned httproute_method_bit(enum http_method m);

#endif
