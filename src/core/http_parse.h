/* http_parse: one HTTP/1.x request from bytes.
 *
 * Bytes in; a request (spans into those bytes) and a status out.  No
 * syscalls, no loop, no allocation after http_parser_new(): the
 * connection code in http.c calls it on whatever input a connection holds,
 * and the table test and the fuzzer call it on plain buffers.
 *
 * llhttp (Debian's node-llhttp sources, strict mode) tokenizes; this module
 * adds what llhttp accepts and we do not: limits on the head, the headers
 * and the body (checked from Content-Length before any body byte is
 * needed), no chunked bodies, no obsolete line folding, one Host header
 * (required from HTTP/1.1 on), HTTP/1.x only, an origin- or absolute-form
 * target.
 *
 * The common request (GET or HEAD, an origin-form target, plain headers,
 * none that changes framing or the connection) is read by a fast path in
 * one pass; anything else goes through llhttp from its first byte, so the
 * two give one answer for every input (fuzz_http_parse checks it).
 *
 * Each call parses from the first byte with a fresh llhttp state, so the
 * caller keeps no parser state per connection: a partial head is parsed
 * again when more bytes arrive (bounded by max_head). */
#ifndef IMDS_HTTP_PARSE_H
#define IMDS_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum http_method {
	HTTP_M_OTHER = 0,
	HTTP_M_GET,
	HTTP_M_HEAD,
	HTTP_M_POST,
	HTTP_M_PUT,
};

struct http_span {
	const char *p;
	size_t n;
};

#define HTTP_MAX_HEADERS 100

/* The spans point into the parsed bytes. */
struct http_request {
	enum http_method method;
	struct http_span method_name;
	struct http_span target; /* as sent: path?query */
	struct http_span path;
	struct http_span query;  /* without '?'; n == 0 when absent */
	struct http_span body;
	unsigned version_major, version_minor;
	/* method_name and path hold only bytes 0x21..0x7e other than '\'
	 * (the fast path read them so): the access log copies them as they
	 * are.  0: not known, the log checks each byte. */
	int plain;
	unsigned nheaders;
	struct http_span hname[HTTP_MAX_HEADERS];
	struct http_span hvalue[HTTP_MAX_HEADERS];
	/* Not the parser's: the connection code fills these for its handler. */
	const struct sockaddr_storage *peer;
	uint64_t start_us;
	int parked;      /* this request waited (res->park) and is run again */
	int park_expired; /* ... because its wait is over: answer now */
	uint64_t park_tag; /* what the handler put in res->park_tag when it parked it */
};

/* Case-insensitive lookup; returns NULL when absent.  With several
 * headers of one name, the first; *count (if given) gets how many.  name
 * is letters, digits and '-' only (as every header name we look up). */
const struct http_span *http_req_header_n(const struct http_request *req, const char *name,
					  size_t n, unsigned *count);
/* Inline so that a literal name's length is known when compiled: a
 * request's headers are looked up several times for every answer. */
static inline __attribute__((always_inline)) const struct http_span *
http_req_header(const struct http_request *req, const char *name, unsigned *count)
{
	return http_req_header_n(req, name, __builtin_strlen(name), count);
}
int http_span_eq_n(struct http_span s, const char *lit, size_t n);
static inline __attribute__((always_inline)) int http_span_eq(struct http_span s, const char *lit)
{
	return http_span_eq_n(s, lit, __builtin_strlen(lit));
}

/* The most body bytes one request may carry, decided from its head
 * (method, path, query and headers are filled) once the headers are in. */
typedef size_t http_body_limit(const struct http_request *head, void *ud);

struct http_parse_limits {
	size_t max_head;      /* request line + headers; past it: 431 (414 for the target alone) */
	size_t max_body;      /* the ceiling; 0: any body is refused with 413 */
	unsigned max_headers; /* past it: 431 (never more than HTTP_MAX_HEADERS) */
	http_body_limit *body_limit; /* optional, may only lower max_body */
	void *ud;             /* for body_limit */
};

enum http_parse_status {
	HTTP_PARSE_MORE,  /* no error so far, the request is not complete */
	HTTP_PARSE_DONE,  /* one whole, valid request */
	HTTP_PARSE_ERROR, /* answer `status` and close */
};

struct http_parse_result {
	size_t used;        /* DONE: the request's bytes (head and body) */
	int keep_alive;     /* DONE: the client allows another request after it */
	int status;         /* ERROR: 400, 411, 413, 414, 431 or 505 */
	const char *code;   /* ERROR: a short snake_case code for the JSON body */
	const char *detail; /* ERROR: llhttp's reason for a 400 it found, else NULL */
	int fast;           /* read by the fast path (http_parse.c), not llhttp */
};

struct http_parser;

/* The limits are copied.  NULL when out of memory. */
struct http_parser *http_parser_new(const struct http_parse_limits *lim);
/* Sets (or clears, with NULL) lim.body_limit and lim.ud. */
void http_parser_set_body_limit(struct http_parser *p, http_body_limit *fn, void *ud);
/* on = 0: every request through llhttp, not the fast path for the common
 * GET (http_parse.c); for the tests that hold the two to one answer. */
void http_parser_set_fast(struct http_parser *p, int on);
/* The fast path's byte sets, for their test: bit 1 an origin-form target's
 * (RFC 3986 pchar, / and ?), bit 2 a header name's (RFC 9110 tchar), bit 4
 * a header value's (visible ASCII, SP, HTAB). */
int http_parse_byte_class(unsigned char c);
/* NULL is a no-op. */
void http_parser_free(struct http_parser *p);

/* One request from data[0..len) (the bytes after it, pipelined requests,
 * are not looked at).  req is overwritten: with DONE every field the parser
 * owns is set; with ERROR, what was read before the error (the target, split
 * into path and query, when it was read whole). */
enum http_parse_status http_parse(struct http_parser *p, const char *data, size_t len,
				  struct http_request *req, struct http_parse_result *out);

#endif
