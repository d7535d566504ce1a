#include "imds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "ec2.h"
#include "events.h"
#include "instance.h"
#include "kube.h"
#include "nocloud.h"
#include "openstack.h"
#include "password.h"
#include "rate.h"
#include "httproute.h"
#include "serve.h"
#include "session.h"
#include "wait.h"

struct imds_app {
	const struct imds_config *cfg;
	struct http_server *http;
	struct rate rate;
	struct instance inst;     /* the VM's data, once */
	struct nocloud nocloud;   /* its views */
	struct openstack openstack;
	struct ec2 ec2;
	struct kube kube;
	struct sessions sessions;
	struct wait_watch watch;
	struct httproute_index route_ix; /* over routes[] below */
	char path[8192];          /* the request's path, slashes merged */
};

static void healthz(struct call *c)
{
	http_res_text(c->res, 200, "text/plain", "OK", 2);
}

/* ---- the route table ---------------------------------------------------------- */

#define AT(member) offsetof(struct imds_app, member)

static const struct httproute routes[] = {
	{HTTPROUTE_READ, 0, "/healthz", NULL, healthz, 0},
	/* NoCloud, the seed URL of the VM's serial; cloud-init sends no headers. */
	{HTTPROUTE_READ, 0, "/v1/meta-data", NULL, nocloud_meta_data, AT(nocloud)},
	{HTTPROUTE_READ, 0, "/v1/user-data", NULL, nocloud_user_data, AT(nocloud)},
	{HTTPROUTE_READ, 0, "/v1/vendor-data", NULL, nocloud_vendor_data, AT(nocloud)},
	{HTTPROUTE_READ, 0, "/v1/network-config", NULL, nocloud_network_config, AT(nocloud)},
	/* Lifecycle events (events.c): ours, GCE's and Azure's; EC2's are in its tree. */
	{HTTPROUTE_READ, 0, "/v1/lifecycle", NULL, ev_lifecycle, AT(inst)},
	{HTTPROUTE_READ, HTTPROUTE_FLAVOR, "/computeMetadata/v1/instance/maintenance-event", NULL,
	 ev_gce_maintenance, AT(inst)},
	{HTTPROUTE_READ, HTTPROUTE_FLAVOR, "/computeMetadata/v1/instance/*", NULL, ev_gce_instance,
	 AT(inst)},
	{HTTPROUTE_READ, HTTPROUTE_FLAVOR, "/computeMetadata/*", NULL, ev_gce_not_found, AT(inst)},
	{HTTPROUTE_READ | HTTPROUTE_POST, HTTPROUTE_GUARD, "/metadata/scheduledevents", NULL,
	 ev_azure_events, AT(inst)},
	{HTTPROUTE_READ, HTTPROUTE_GUARD, "/metadata/instance", NULL, ev_azure_instance, AT(inst)},
	/* Kubernetes credentials. */
	{HTTPROUTE_READ, HTTPROUTE_GUARD | HTTPROUTE_GATED, "/v1/identity", NULL, kube_identity, AT(kube)},
	{HTTPROUTE_READ, HTTPROUTE_GUARD | HTTPROUTE_GATED, "/v1/token", NULL, kube_token, AT(kube)},
	{HTTPROUTE_PUT, HTTPROUTE_OPENS, "/v1/session", NULL, session_serve, AT(sessions)},
	/* OpenStack: cloudbase-init cannot send headers either. */
	{HTTPROUTE_READ, 0, "/openstack", NULL, openstack_versions, AT(openstack)},
	{HTTPROUTE_READ, 0, "/openstack/", NULL, openstack_versions, AT(openstack)},
	{HTTPROUTE_READ, 0, "/openstack/{v}", openstack_version_ok, openstack_files, AT(openstack)},
	{HTTPROUTE_READ, 0, "/openstack/{v}/", openstack_version_ok, openstack_files, AT(openstack)},
	/* Its files: a row each, from openstack.h's table of them. */
	OPENSTACK_ROUTES
	/* EC2: IMDSv2 sessions share the table; with IMDS_SESSION=required every
	 * read needs one, as on AWS. */
	{HTTPROUTE_PUT, HTTPROUTE_OPENS, "/latest/api/token", NULL, ec2_token, AT(sessions)},
	{HTTPROUTE_READ, HTTPROUTE_GATED, "/", NULL, ec2_versions, AT(ec2)},
	{HTTPROUTE_READ, HTTPROUTE_GATED, "/{v}", ec2_version_ok, ec2_root, AT(ec2)},
	{HTTPROUTE_READ, HTTPROUTE_GATED, "/{v}/", ec2_version_ok, ec2_root, AT(ec2)},
	/* Its parts: a row each (two for a tree), from ec2.h's table of them. */
	EC2_ROUTES
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* The session headers of each dialect, checked on every request in this
 * order: ours, then EC2's. */
static const struct session_dialect *const dialects[] = {&session_ours, &ec2_session};

const char *imds_route_pattern(size_t i)
{
	return i < NROUTES ? routes[i].pattern : NULL;
}

/* ---- the rules ------------------------------------------------------------------- */

static void not_allowed(struct http_response *res, unsigned allowed)
{
	if (allowed == HTTPROUTE_PUT) {
		http_res_error(res, 405, "method_not_allowed", "a session is opened with PUT");
		http_res_header(res, "Allow", "PUT");
	} else if (allowed & HTTPROUTE_POST) {
		http_res_error(res, 405, "method_not_allowed", "only GET, HEAD and POST are supported");
		http_res_header(res, "Allow", "GET, HEAD, POST");
	} else {
		http_res_error(res, 405, "method_not_allowed", "only GET and HEAD are supported");
		http_res_header(res, "Allow", "GET, HEAD");
	}
}

/* Token and identity: only a direct request from inside the guest. */
static int guard(const struct http_request *req, struct http_response *res)
{
	http_res_header(res, "Cache-Control", "no-store");
	if (answer_req_forwarded(req)) {
		/* A proxy in the guest relaying for someone else (SSRF). */
		http_res_error(res, 403, "forbidden", "proxied requests are not allowed");
		return -1;
	}
	unsigned count = 0;
	const struct http_span *m = http_req_header(req, "metadata", &count);
	if (!m || count != 1 || !http_span_eq(*m, "true")) {
		http_res_error(res, 400, "missing_header", "Metadata: true header is required");
		return -1;
	}
	return 0;
}

/* The request's path with every run of '/' made one (httproute_merge_slashes),
 * its length in *pn: the path itself when it has no "//" (most do), else
 * the merged copy in a->path. */
static const char *clean_path(struct imds_app *a, const struct http_span *p, size_t *pn)
{
	/* The head is at most 8 KiB; a longer path could not have been parsed. */
	size_t n = p->n < sizeof(a->path) ? p->n : sizeof(a->path);
	if (httproute_has_double_slash(p->p, n)) {
		*pn = httproute_merge_slashes(p->p, n, a->path);
		return a->path;
	}
	*pn = n;
	return p->p;
}

void imds_handle(const struct http_request *req, struct http_response *res, void *app)
{
	struct imds_app *a = app;
	struct call c = {.req = req, .res = res};
	size_t pn;
	const char *path = clean_path(a, &req->path, &pn);
	const struct httproute *r = httproute_lookup(&a->route_ix, path, pn, &c.ver, &c.rest);
	unsigned allowed = r ? r->methods : HTTPROUTE_READ;
	/* GCE's clients check the header on every answer, errors included. */
	if (r && (r->rules & HTTPROUTE_FLAVOR))
		ev_gce_flavor_header(res);
	if (!(httproute_method_bit(req->method) & allowed)) {
		not_allowed(res, allowed);
		return;
	}
	/* A waiting request run again is the same request: no second token. */
	if (!req->parked && !rate_take(&a->rate, req->start_us)) {
		http_res_error(res, 429, "rate_limited", "too many requests");
		http_res_header(res, "Retry-After", "1");
		return;
	}
	if (r)
		c.self = (char *)a + r->self;
	if (r && (r->rules & HTTPROUTE_OPENS)) {
		r->fn(&c);
		return;
	}
	/* A session token that is presented must be good, whatever the path. */
	int st = session_check(&a->sessions, req, dialects, sizeof(dialects) / sizeof(dialects[0]));
	if (st < 0) {
		http_res_error(res, 401, "invalid_token", "X-Metadata-Token is not a valid session");
		return;
	}
	if (st == 0 && a->cfg->session_required && r && (r->rules & HTTPROUTE_GATED)) {
		http_res_error(res, 401, "session_required",
			       "a session is required: PUT /v1/session (or /latest/api/token), then send "
			       "its token as X-Metadata-Token (or X-aws-ec2-metadata-token)");
		return;
	}
	struct wait w;
	if (wait_params(req, &w, res) < 0)
		return;
	if (!r) {
		/* Windows probes many paths at boot: say no at once. */
		http_res_error(res, 404, "not_found", "no such path");
		return;
	}
	if ((r->rules & HTTPROUTE_GUARD) && guard(req, res) < 0)
		return;
	if ((r->rules & HTTPROUTE_FLAVOR) && ev_gce_flavor(req, res) < 0)
		return;
	r->fn(&c);
	if (w.on && c.tag && (res->status == 200 || res->status == 304))
		wait_or_answer(&w, c.tag, req, res, a->http);
}

/* The one request that carries a body: a posted password. */
static size_t body_limit(const struct http_request *head, void *app)
{
	struct imds_app *a = app;
	if (head->method != HTTP_M_POST)
		return 0;
	struct http_span ver, rest;
	size_t pn;
	const char *path = clean_path(a, &head->path, &pn);
	const struct httproute *r = httproute_lookup(&a->route_ix, path, pn, &ver, &rest);
	return r && (r->methods & HTTPROUTE_POST) ? IMDS_MAX_BODY : 0;
}

/* ---- lifecycle ---------------------------------------------------------------- */

struct imds_app *imds_app_new(struct loop *l, const struct imds_config *cfg, char *err,
			      size_t errlen)
{
	struct imds_app *a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->cfg = cfg;
	a->watch.fd = -1;
	httproute_index_build(&a->route_ix, routes, NROUTES);
	if (inst_open(&a->inst, cfg, err, errlen) < 0 || kube_open(&a->kube, &a->inst, err, errlen) < 0)
		goto fail;
	if (session_init(&a->sessions) < 0 || nocloud_open(&a->nocloud, &a->inst) < 0 ||
	    openstack_open(&a->openstack, &a->inst) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	ec2_open(&a->ec2, &a->inst);
	rate_init(&a->rate, cfg->rate_limit, cfg->rate_limit, loop_clock_us());
	if (l) {
		a->http = http_server_new(l, &cfg->limits, imds_handle, serve_access_log, a);
		if (!a->http) {
			snprintf(err, errlen, "cannot start the HTTP server: %s", strerror(errno));
			goto fail;
		}
		http_server_set_body_limit(a->http, body_limit);
		/* One watch per folder holding a data file (kubelet swaps ..data there). */
		wait_watch_start(&a->watch, l, a->http);
		for (unsigned i = 0; i < a->inst.user.ncand; i++)
			wait_watch_add(&a->watch, a->inst.user.cand[i], 0);
		wait_watch_add(&a->watch, cfg->vendor_data_file, 0);
		wait_watch_add(&a->watch, cfg->network_config_file, 0);
		wait_watch_add(&a->watch, cfg->meta_data_file, 0);
		wait_watch_add(&a->watch, cfg->token_path, 0);
		wait_watch_add(&a->watch, cfg->ssh_keys_dir, 1);
		wait_watch_add(&a->watch, cfg->lifecycle_dir, 1);
	}
	return a;
fail:
	imds_app_free(a);
	return NULL;
}

void imds_app_free(struct imds_app *a)
{
	if (!a)
		return;
	http_server_free(a->http);
	wait_watch_stop(&a->watch);
	openstack_close(&a->openstack);
	nocloud_close(&a->nocloud);
	session_fini(&a->sessions);
	kube_close(&a->kube);
	inst_close(&a->inst);
	free(a);
}

struct http_server *imds_app_http(struct imds_app *a)
{
	return a->http;
}
