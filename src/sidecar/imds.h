/* imds: the sidecar's HTTP API (docs/sidecar.md), the wiring of its parts.
 *
 * The instance model (instance.c) holds the VM's data once; each layout
 * renders it (nocloud.c, openstack.c, kube.c for identity and token);
 * sessions (session.c), the password store (password.c) and waiting for a
 * change (wait.c) stand beside them.  This module owns them all, matches a
 * request against one route table (httproute.c) and checks the rules the route
 * names — method, rate limit, session token, the Metadata guard, wait
 * parameters — before its handler runs. */
#ifndef IMDS_IMDS_H
#define IMDS_IMDS_H

#include <stddef.h>

#include "config.h"
#include "http.h"
#include "loop.h"

struct imds_app;

/* Loads the data files and precomputes the fixed answers.  NULL with a
 * message naming the setting in err (exit 2).  l NULL: no HTTP server
 * (unit tests and fuzzers call imds_handle themselves). */
struct imds_app *imds_app_new(struct loop *l, const struct imds_config *cfg, char *err,
			      size_t errlen);
void imds_app_free(struct imds_app *a);
struct http_server *imds_app_http(struct imds_app *a);

/* The request handler (exposed for unit tests). */
void imds_handle(const struct http_request *req, struct http_response *res, void *app);
/* The route table's i-th pattern ("/openstack/{v}/meta_data.json"), NULL
 * past the end: what `imds-server diag` lists as served. */
const char *imds_route_pattern(size_t i);

#endif
