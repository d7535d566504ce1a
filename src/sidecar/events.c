#include "events.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lifecycle.h"

/* p[0..n) is the literal s. */
static int is(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(p, s, n) == 0;
}

static void answer(struct call *c, const char *ctype, const struct sbuf *b)
{
	if (b->overflow)
		http_res_error(c->res, 500, "internal", "the answer does not fit");
	else
		answer_data_text(c, ctype, b->p, b->len);
}

/* ---- ours: /v1/lifecycle ---------------------------------------------------------- */

void ev_lifecycle(struct call *c)
{
	struct instance *in = c->self;
	const struct lc_view *v = lc_get(&in->life);
	char since[64];
	struct sbuf b = SBUF_INIT(in->life.out, sizeof(in->life.out));
	lc_time_rfc3339(v->since, since);
	sbuf_putc(&b, '{');
	answer_json_field(&b, "state", lc_state_name(v->state), 0);
	answer_json_field(&b, "since", since, 1);
	if (v->uid[0])
		answer_json_field(&b, "migrationUID", v->uid, 1);
	else
		sbuf_puts(&b, ",\"migrationUID\":null");
	answer_json_field(&b, "reason", lc_reason_name(v->reason), 1);
	sbuf_puts(&b, "}\n");
	answer(c, "application/json", &b);
}

/* ---- GCE ------------------------------------------------------------------------- */

void ev_gce_flavor_header(struct http_response *res)
{
	http_res_header(res, "Metadata-Flavor", "Google");
}

/* As GCE's metadata server: Metadata-Flavor: Google, exactly once, and no
 * proxy header (it answers 403 to either). */
int ev_gce_flavor(const struct http_request *req, struct http_response *res)
{
	if (answer_req_forwarded(req)) {
		http_res_error(res, 403, "forbidden", "proxied requests are not allowed");
		return -1;
	}
	int many = 0;
	const struct http_span *f = answer_req_header(req, "metadata-flavor", &many);
	if (!f || many || !http_span_eq(*f, "Google")) {
		http_res_error(res, 403, "missing_header", "Metadata-Flavor: Google header is required");
		return -1;
	}
	return 0;
}

void ev_gce_maintenance(struct call *c)
{
	struct instance *in = c->self;
	const struct lc_view *v = lc_get(&in->life);
	/* GCE's values (compute/docs/metadata/predefined-metadata-keys): an
	 * arrival is over, so NONE. */
	const char *s = v->state == LC_MIGRATE	 ? "MIGRATE_ON_HOST_MAINTENANCE"
			: v->state == LC_TERMINATE ? "TERMINATE_ON_HOST_MAINTENANCE"
						   : "NONE";
	answer_data_text(c, "application/text", s, strlen(s));
}

/* GCE's instance/ folder as one table: a row per key, in the listing's
 * order, with the condition it is there on (NULL: always) and its leaf
 * (NULL: its own route, ev_gce_maintenance).  The listing is the rows
 * that are there, so that it cannot drift from its leaves. */
static void gce_id(struct sbuf *b, const struct instance *in)
{
	sbuf_puts(b, in->iid);
}

static void gce_hostname(struct sbuf *b, const struct instance *in)
{
	sbuf_puts(b, in->hostname);
}

/* projects/<project>/zones/<zone>: the namespace stands for the project,
 * as in the OpenStack layout's project_id. */
static void gce_zone(struct sbuf *b, const struct instance *in)
{
	sbuf_printf(b, "projects/%s/zones/%s", in->vm_ns, in->zone);
}

/* zone only when known (the pod's topology label): no stand-in */
static int zone_known(const struct instance *in)
{
	return in->zone != NULL;
}

static const struct gce_key {
	const char *name;
	int (*there)(const struct instance *in);
	void (*leaf)(struct sbuf *b, const struct instance *in);
} gce_instance[] = {
	{"hostname", NULL, gce_hostname},
	{"id", NULL, gce_id},
	{"maintenance-event", NULL, NULL},
	{"name", NULL, gce_hostname},
	{"zone", zone_known, gce_zone},
};

const char *ev_gce_instance_key(size_t i)
{
	return i < sizeof(gce_instance) / sizeof(gce_instance[0]) ? gce_instance[i].name : NULL;
}

void ev_gce_instance(struct call *c)
{
	struct instance *in = c->self;
	const char *p = c->rest.p;
	size_t n = c->rest.n;
	struct sbuf b = SBUF_INIT(in->life.out, sizeof(in->life.out));
	for (size_t i = 0; i < sizeof(gce_instance) / sizeof(gce_instance[0]); i++) {
		const struct gce_key *k = &gce_instance[i];
		if (k->there && !k->there(in))
			continue;
		if (n == 0) {
			sbuf_printf(&b, "%s\n", k->name);
		} else if (k->leaf && is(p, n, k->name)) {
			k->leaf(&b, in);
			answer(c, "application/text", &b);
			return;
		}
	}
	if (n) {
		ev_gce_not_found(c);
		return;
	}
	answer(c, "application/text", &b);
}

void ev_gce_not_found(struct call *c)
{
	http_res_error(c->res, 404, "not_found", "no such path");
}

/* ---- Azure ----------------------------------------------------------------------- */

/* The api-version of the query: the versions Azure serves Scheduled Events
 * at, or (any_date) any YYYY-MM-DD for /metadata/instance.  0, or -1 with
 * a 400 naming the parameter. */
static int azure_version(struct call *c, int any_date)
{
	static const char *const events_versions[] = {"2017-11-01", "2019-01-01", "2019-08-01",
						      "2020-07-01", NULL};
	char v[32];
	int n = answer_query_param(c->req->query.p, c->req->query.n, "api-version", v, sizeof(v));
	int ok = 0;
	if (n == 10 && any_date) {
		ok = v[4] == '-' && v[7] == '-';
		for (int i = 0; ok && i < 10; i++)
			ok = i == 4 || i == 7 || (v[i] >= '0' && v[i] <= '9');
	} else if (n == 10) {
		for (const char *const *e = events_versions; *e && !ok; e++)
			ok = strcmp(v, *e) == 0;
	}
	if (!ok) {
		http_res_error(c->res, 400, "bad_api_version",
			       any_date ? "api-version: missing or not a date YYYY-MM-DD"
					: "api-version: missing or not one of 2017-11-01, 2019-01-01, "
					  "2019-08-01, 2020-07-01");
		return -1;
	}
	return 0;
}

/* ---- the acknowledgement: {"StartRequests":[{"EventId":"..."}, ...]} ---- */

struct jp {
	const char *p;
	size_t n, i;
};

static void ws(struct jp *j)
{
	while (j->i < j->n &&
	       (j->p[j->i] == ' ' || j->p[j->i] == '\t' || j->p[j->i] == '\n' || j->p[j->i] == '\r'))
		j->i++;
}

static int lit(struct jp *j, char ch)
{
	ws(j);
	if (j->i < j->n && j->p[j->i] == ch) {
		j->i++;
		return 1;
	}
	return 0;
}

/* A JSON string of printable ASCII without escapes (EventIds and keys are
 * GUIDs and names): its span. */
static int str(struct jp *j, const char **s, size_t *sn)
{
	if (!lit(j, '"'))
		return 0;
	size_t a = j->i;
	while (j->i < j->n && j->p[j->i] != '"') {
		unsigned char ch = (unsigned char)j->p[j->i];
		if (ch < 0x20 || ch > 0x7e || ch == '\\')
			return 0;
		j->i++;
	}
	if (j->i == j->n)
		return 0;
	*s = j->p + a;
	*sn = j->i - a;
	j->i++;
	return 1;
}

int ev_azure_parse_ack(const char *p, size_t n, struct ev_ack *out, char *err, size_t errlen)
{
	struct jp j = {p, n, 0};
	const char *k;
	size_t kn;
	memset(out, 0, sizeof(*out));
	if (!lit(&j, '{') || !str(&j, &k, &kn) || !is(k, kn, "StartRequests") || !lit(&j, ':') ||
	    !lit(&j, '[')) {
		snprintf(err, errlen, "want {\"StartRequests\":[{\"EventId\":\"...\"}]}");
		return -1;
	}
	if (!lit(&j, ']')) {
		do {
			const char *id = NULL;
			size_t idn = 0;
			if (!lit(&j, '{') || !str(&j, &k, &kn) || !is(k, kn, "EventId") ||
			    !lit(&j, ':') || !str(&j, &id, &idn) || !lit(&j, '}')) {
				snprintf(err, errlen,
					 "StartRequests[%u]: want an object {\"EventId\":\"<id>\"}",
					 out->n);
				return -1;
			}
			if (out->n == EV_ACK_MAX) {
				snprintf(err, errlen, "StartRequests: more than %d entries", EV_ACK_MAX);
				return -1;
			}
			out->id[out->n] = id;
			out->idn[out->n++] = idn;
		} while (lit(&j, ','));
		if (!lit(&j, ']')) {
			snprintf(err, errlen, "StartRequests: want ',' or ']'");
			return -1;
		}
	}
	if (!lit(&j, '}')) {
		snprintf(err, errlen, "want '}' after StartRequests (no other member)");
		return -1;
	}
	ws(&j);
	if (j.i != j.n) {
		snprintf(err, errlen, "bytes after the JSON object");
		return -1;
	}
	return 0;
}

static void azure_ack(struct call *c, struct instance *in)
{
	struct http_span body = c->req->body;
	struct ev_ack ack;
	char err[160], msg[240];
	if (ev_azure_parse_ack(body.p, body.n, &ack, err, sizeof(err)) < 0) {
		snprintf(msg, sizeof(msg), "body: %s", err);
		http_res_error(c->res, 400, "bad_body", msg);
		return;
	}
	for (unsigned i = 0; i < ack.n; i++) {
		if (lc_ack(&in->life, ack.id[i], ack.idn[i]) < 0) {
			snprintf(msg, sizeof(msg), "StartRequests[%u]: '%.*s' is not a pending event", i,
				 (int)(ack.idn[i] > 64 ? 64 : ack.idn[i]), ack.id[i]);
			http_res_error(c->res, 400, "unknown_event", msg);
			return;
		}
	}
	/* Accepted; it cannot make KubeVirt start sooner (docs/sidecar.md). */
	http_res_text(c->res, 200, "application/json", "", 0);
}

void ev_azure_events(struct call *c)
{
	struct instance *in = c->self;
	if (azure_version(c, 0) < 0)
		return;
	if (c->req->method == HTTP_M_POST) {
		azure_ack(c, in);
		return;
	}
	const struct lc_view *v = lc_get(&in->life);
	struct sbuf b = SBUF_INIT(in->life.out, sizeof(in->life.out));
	sbuf_printf(&b, "{\"DocumentIncarnation\":%llu,\"Events\":[", (unsigned long long)v->gen);
	if (v->state == LC_MIGRATE || v->state == LC_TERMINATE) {
		char nb[64];
		lc_time_rfc1123(v->since, nb);
		sbuf_putc(&b, '{');
		answer_json_field(&b, "EventId", v->event_id, 0);
		answer_json_field(&b, "EventStatus", v->acked ? "Started" : "Scheduled", 1);
		answer_json_field(&b, "EventType", v->state == LC_MIGRATE ? "Freeze" : "Terminate", 1);
		answer_json_field(&b, "ResourceType", "VirtualMachine", 1);
		sbuf_puts(&b, ",\"Resources\":[\"");
		sbuf_json_escape(&b, in->hostname, strlen(in->hostname));
		sbuf_puts(&b, "\"]");
		/* Started: Azure leaves NotBefore empty. */
		answer_json_field(&b, "NotBefore", v->acked ? "" : nb, 1);
		answer_json_field(&b, "Description",
				v->state == LC_MIGRATE
					? "The VM is being live-migrated to another node (KubeVirt)."
					: "The VM is being evicted and will be stopped (KubeVirt).",
				1);
		answer_json_field(&b, "EventSource",
				v->reason == LC_R_MAINTENANCE ? "User" : "Platform", 1);
		sbuf_puts(&b, ",\"DurationInSeconds\":-1}");
	}
	sbuf_puts(&b, "]}\n");
	answer(c, "application/json", &b);
}

const char *ev_azure_zone(const char *zone, const char *region, char *out, size_t size)
{
	const char *n = zone;
	size_t r = region ? strlen(region) : 0, d;

	if (!zone || !size)
		return "";
	if (r && strncasecmp(zone, region, r) == 0 && zone[r] == '-')
		n = zone + r + 1;
	d = strspn(n, "0123456789");
	if (d == 0 || n[d] != '\0' || d >= size || d > 9)
		return "";
	memcpy(out, n, d + 1);
	return out;
}

void ev_azure_instance(struct call *c)
{
	struct instance *in = c->self;
	if (azure_version(c, 1) < 0)
		return;
	struct sbuf b = SBUF_INIT(in->life.out, sizeof(in->life.out));
	sbuf_puts(&b, "{\"compute\":{");
	answer_json_field(&b, "name", in->hostname, 0);
	answer_json_field(&b, "vmId", in->iid, 1);
	answer_json_field(&b, "location", in->region ? in->region : "", 1);
	char zone[16];
	answer_json_field(&b, "zone", ev_azure_zone(in->zone, in->region, zone, sizeof(zone)), 1);
	answer_json_field(&b, "resourceGroupName", in->vm_ns, 1);
	answer_json_field(&b, "vmSize", in->instance_type, 1);
	sbuf_puts(&b, "}}\n");
	answer(c, "application/json", &b);
}

/* ---- EC2 ------------------------------------------------------------------------- */

int ev_ec2_spot(struct instance *in)
{
	return lc_get(&in->life)->state == LC_TERMINATE;
}

void ev_ec2_scheduled(struct instance *in, struct sbuf *b)
{
	const struct lc_view *v = lc_get(&in->life);
	if (v->state != LC_MIGRATE && v->state != LC_TERMINATE) {
		sbuf_puts(b, "[]");
		return;
	}
	char nb[64];
	lc_time_ec2(v->since, nb);
	/* EventId as EC2's: instance-event- and 17 hex digits. */
	char id[40];
	snprintf(id, sizeof(id), "instance-event-%.8s%.4s%.4s%.1s", v->event_id, v->event_id + 9,
		 v->event_id + 14, v->event_id + 19);
	sbuf_putc(b, '[');
	sbuf_putc(b, '{');
	answer_json_field(b, "Code", v->state == LC_MIGRATE ? "system-maintenance" : "instance-stop", 0);
	answer_json_field(b, "Description",
			v->state == LC_MIGRATE ? "live migration to another node (KubeVirt)"
					       : "eviction: the VM will be stopped (KubeVirt)",
			1);
	answer_json_field(b, "EventId", id, 1);
	answer_json_field(b, "NotAfter", nb, 1);
	answer_json_field(b, "NotBefore", nb, 1);
	answer_json_field(b, "State", "active", 1);
	sbuf_puts(b, "}]");
}

void ev_ec2_instance_action(struct instance *in, struct sbuf *b)
{
	char t[64];
	lc_time_rfc3339(lc_get(&in->life)->since, t);
	sbuf_printf(b, "{\"action\":\"terminate\",\"time\":\"%s\"}", t);
}
