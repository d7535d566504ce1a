/* session: session tokens, as AWS's IMDSv2.
 *
 * A PUT with a dialect's TTL header (ours: PUT /v1/session with
 * X-Metadata-Token-TTL-Seconds; EC2's is ec2.c's) answers a random token
 * (getrandom, 32 bytes, base64url), kept in memory with its expiry; at most
 * SESSION_MAX at a time, the oldest evicted, one table for every dialect.
 * Requests present it in any dialect's token header (ours:
 * X-Metadata-Token).  A check scans only the slots ever in use at once. */
#ifndef IMDS_SESSION_H
#define IMDS_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "http_parse.h"

#define SESSION_MAX 256
#define SESSION_TTL_MAX 21600
#define SESSION_TOKEN_LEN 43 /* 32 random bytes, base64url */

struct session;
struct sessions {
	struct session *s;  /* SESSION_MAX slots; expires_us 0: free */
	unsigned used;      /* slots [0, used) were ever taken */
};

/* 0 or -ENOMEM. */
int session_init(struct sessions *ss);
void session_fini(struct sessions *ss);

/* A new token for ttl seconds from now_us: *tok points at its
 * SESSION_TOKEN_LEN characters (NUL-terminated) in the table, valid until
 * the slot is taken again.  0, or -EIO when there is no randomness. */
int session_new(struct sessions *ss, unsigned ttl, uint64_t now_us, const char **tok);
/* A dialect's session headers: the TTL header a PUT carries (lower case,
 * as looked up) and its name as the answer echoes it, and the header a
 * request presents its token in (lower case). */
struct session_dialect {
	const char *ttl;
	const char *ttl_echo;
	const char *token;
	size_t token_len; /* strlen(token): looked up on every request */
};
/* A dialect from its three names (literals). */
#define SESSION_DIALECT(ttl, ttl_echo, token) {ttl, ttl_echo, token, sizeof(token) - 1}
/* Ours: X-Metadata-Token-TTL-Seconds and X-Metadata-Token. */
extern const struct session_dialect session_ours;

/* The session token a request presents (in each dialect of d[0..n) in
 * turn; each one there must be good): 1 valid and unexpired, 0 absent, -1
 * present but not valid (unknown, expired, repeated, malformed). */
int session_check(const struct sessions *ss, const struct http_request *req,
		  const struct session_dialect *const *d, size_t n);

struct call;
/* A PUT of dialect d: the token for its TTL header (400 when missing or
 * bad, 403 through a proxy).  c->self is the struct sessions. */
void session_open(struct call *c, const struct session_dialect *d);
/* PUT /v1/session: session_open in ours. */
void session_serve(struct call *c);

#endif
