/* session: session tokens, as AWS's IMDSv2.
 *
 * PUT /v1/session with X-Metadata-Token-TTL-Seconds, or EC2's PUT
 * /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds (one table
 * for both), answers a random token (getrandom, 32 bytes, base64url), kept
 * in memory with its expiry; at most SESSION_MAX at a time, the oldest
 * evicted.  Requests present it as X-Metadata-Token or
 * X-aws-ec2-metadata-token.  A check scans only the slots ever in use at
 * once. */
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
/* The session token a request presents (either header; each one there
 * must be good): 1 valid and unexpired, 0 absent, -1 present but not valid
 * (unknown, expired, repeated, malformed). */
int session_check(const struct sessions *ss, const struct http_request *req);

struct call;
/* PUT /v1/session: the token for X-Metadata-Token-TTL-Seconds (400 when
 * missing or bad, 403 through a proxy).  c->self is the struct sessions. */
void session_serve(struct call *c);
/* PUT /latest/api/token: the same with X-aws-ec2-metadata-token-ttl-seconds. */
void session_serve_ec2(struct call *c);

#endif
