/* jwt: just enough of a JWT to say when it expires.
 *
 * The sidecar does not validate tokens (the API server that issued it and
 * whoever receives it do); it only reports `exp` as an RFC 3339 time so a
 * guest knows when to come back.  Functions over bytes, no NUL termination
 * assumed; the claims are read with the core's JSON reader (jview.h), which
 * allocates its nodes. */
#ifndef IMDS_JWT_H
#define IMDS_JWT_H

#include <stddef.h>
#include <stdint.h>

/* Latest second RFC 3339 can write with a 4-digit year: 9999-12-31T23:59:59Z. */
#define JWT_MAX_TIME INT64_C(253402300799)

/* base64url (RFC 4648 §5), '=' padding optional but checked when present.
 * 0, -EINVAL (bad character, bad length, bad padding, non-zero trailing
 * bits) or -ENOSPC (out too small). */
int jwt_b64url_decode(const char *in, size_t n, unsigned char *out, size_t cap, size_t *outlen);

/* The top-level "exp" claim of a JSON object.  0; -ENOENT when absent;
 * -EINVAL when the JSON is malformed (strict RFC 8259: UTF-8 in strings
 * too), nested past 32, or exp is not a number (or appears twice); -ERANGE
 * when exp is negative, has an exponent or is past JWT_MAX_TIME; -ENOMEM.
 * A fractional exp is truncated. */
int jwt_claims_exp(const char *json, size_t n, int64_t *exp);

/* exp of a compact JWT (header.payload.signature).  Errors as above. */
int jwt_exp(const char *token, size_t n, int64_t *exp);

/* "YYYY-MM-DDTHH:MM:SSZ" for 0 <= t <= JWT_MAX_TIME; buf needs 21 bytes.
 * 0 or -ERANGE. */
int jwt_format_time(int64_t t, char buf[21]);

#endif
