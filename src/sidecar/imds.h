/* imds: the sidecar's HTTP API (docs/sidecar.md) on top of the shared HTTP core. */
#ifndef IMDS_IMDS_H
#define IMDS_IMDS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "http.h"
#include "loop.h"

struct imds_app;

/* The most a guest may POST to /openstack/<version>/password (Nova's limit
 * is close: four 255-byte chunks); more gets 400. */
#define IMDS_PASSWORD_MAX 1024

/* Sessions (PUT /v1/session): tokens kept in memory, the oldest evicted. */
#define IMDS_SESSIONS_MAX 256
#define IMDS_SESSION_TTL_MAX 21600
#define IMDS_SESSION_TOKEN_LEN 43 /* 32 random bytes, base64url */

/* ?wait_for_change: at most this many requests wait at once (503 past it),
 * each at most IMDS_WAIT_MAX_SEC. */
#define IMDS_WAITERS_MAX 64
#define IMDS_WAIT_MAX_SEC 3600

/* Loads the data files and precomputes the fixed answers.  NULL with a
 * message naming the setting in err (exit 2). */
struct imds_app *imds_app_new(struct loop *l, const struct imds_config *cfg, char *err,
			      size_t errlen);
void imds_app_free(struct imds_app *a);
struct http_server *imds_app_http(struct imds_app *a);

/* The request handler (exposed for unit tests). */
void imds_handle(const struct http_request *req, struct http_response *res, void *app);

/* 1 when an If-None-Match header of req lists the ETag of tag (weak
 * comparison, as for GET) or is "*". */
int imds_inm_match(const struct http_request *req, uint64_t tag);

/* The decoded value of key in a query string (percent-decoding, '+' as
 * space).  Length, -ENOENT when absent, -EINVAL on a bad escape, -ENOSPC. */
int imds_query_param(const char *q, size_t qn, const char *key, char *out, size_t cap);

#endif
