/* lifecycle: the state derived from the pod's downward-API files
 * (lifecycle.c) and its four dialects (events.c), driven through the
 * request handler against files in a temporary directory.
 *
 * The KubeVirt facts the table pins (kubevirt/kubevirt at d923fdb8):
 * - the eviction admitter marks a VMI for evacuation under LiveMigrate,
 *   LiveMigrateIfPossible (when migratable) and External, and lets the
 *   eviction through otherwise
 *   (pkg/virt-api/webhooks/validating-webhook/admitters/pod-eviction-admitter.go:146-158);
 * - virt-controller then annotates the source pod
 *   descheduler.alpha.kubernetes.io/eviction-in-progress: "true"
 *   (pkg/virt-controller/watch/descheduler/descheduler.go:41,57;
 *   pkg/virt-controller/watch/vmi/lifecycle.go:216-226), removed when the mark clears;
 * - a target pod is labelled kubevirt.io/migrationJobUID
 *   (pkg/virt-controller/watch/migration/migration.go:962; the name in
 *   staging/src/kubevirt.io/api/core/v1/types.go:1175) and annotated
 *   kubevirt.io/migration-target-ready-timestamp once the domain runs there
 *   (migration.go:825-835; types.go:1419). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blob.h"
#include "config.h"
#include "events.h"
#include "http.h"
#include "imds.h"
#include "lifecycle.h"
#include "fixture.h"

/* ---- lc_derive ------------------------------------------------------------------- */

static void test_derive_table(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		struct lc_inputs in;
		enum lc_state want;
		enum lc_reason reason;
		int bad;
	} cases[] = {
		{"nothing", {"", "", "", "", ""}, LC_NONE, LC_R_NONE, 0},
		{"eviction, LiveMigrate", {"true", "LiveMigrate", "", "", ""}, LC_MIGRATE, LC_R_EVICTION, 0},
		{"eviction, LiveMigrateIfPossible", {"true", "LiveMigrateIfPossible", "", "", ""},
		 LC_MIGRATE, LC_R_EVICTION, 0},
		{"eviction, External", {"true", "External", "", "", ""}, LC_TERMINATE, LC_R_EVICTION, 0},
		{"eviction, strategy not recorded", {"true", "", "", "", ""}, LC_TERMINATE, LC_R_EVICTION, 0},
		{"eviction, None", {"true", "None", "", "", ""}, LC_TERMINATE, LC_R_EVICTION, 0},
		{"eviction, strategy case matters", {"true", "livemigrate", "", "", ""}, LC_TERMINATE,
		 LC_R_EVICTION, 0},
		{"any eviction value counts", {"yes", "LiveMigrate", "", "", ""}, LC_MIGRATE, LC_R_EVICTION, 0},
		{"strategy alone is nothing", {"", "LiveMigrate", "", "", ""}, LC_NONE, LC_R_NONE, 0},
		{"maintenance migrate", {"", "", "", "", "migrate"}, LC_MIGRATE, LC_R_MAINTENANCE, 0},
		{"maintenance terminate", {"", "", "", "", "terminate"}, LC_TERMINATE, LC_R_MAINTENANCE, 0},
		{"maintenance none", {"", "", "", "", "none"}, LC_NONE, LC_R_NONE, 0},
		{"maintenance unknown: ignored, flagged", {"", "", "", "", "reboot"}, LC_NONE, LC_R_NONE, 1},
		{"maintenance case matters", {"", "", "", "", "Migrate"}, LC_NONE, LC_R_NONE, 1},
		{"eviction wins over maintenance", {"true", "External", "", "", "migrate"}, LC_TERMINATE,
		 LC_R_EVICTION, 0},
		{"target pod, domain not ready yet", {"", "", "0b5c-uid", "", ""}, LC_NONE, LC_R_NONE, 0},
		{"target pod, ready", {"", "", "0b5c-uid", "2026-11-27 15:04:05 +0000 UTC", ""}, LC_ARRIVED,
		 LC_R_MIGRATION, 0},
		{"ready without a job label", {"", "", "", "2026-11-27 15:04:05 +0000 UTC", ""}, LC_NONE,
		 LC_R_NONE, 0},
		{"maintenance wins over arrival", {"", "", "u", "t", "terminate"}, LC_TERMINATE,
		 LC_R_MAINTENANCE, 0},
		{"an arrived VM evicted again", {"true", "LiveMigrate", "u", "t", ""}, LC_MIGRATE,
		 LC_R_EVICTION, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum lc_reason r;
		int bad;
		enum lc_state s = lc_derive(&cases[i].in, &r, &bad);
		if (s != cases[i].want || r != cases[i].reason || bad != cases[i].bad)
			fail_msg("%s: %s/%s bad %d, want %s/%s bad %d", cases[i].name, lc_state_name(s),
				 lc_reason_name(r), bad, lc_state_name(cases[i].want),
				 lc_reason_name(cases[i].reason), cases[i].bad);
	}
}

/* ---- dates ------------------------------------------------------------------------- */

static void test_dates(void **state)
{
	(void)state;
	char out[64];
	/* AWS's own example event (21 Jan 2019 09:00:43 GMT), and Go's
	 * reference time, a one-digit day: aws-node-termination-handler parses
	 * "2 Jan 2006 15:04:05 GMT" (pkg/monitor/scheduledevent). */
	lc_time_ec2(1548061243, out);
	assert_string_equal(out, "21 Jan 2019 09:00:43 GMT");
	lc_time_ec2(1136214245, out);
	assert_string_equal(out, "2 Jan 2006 15:04:05 GMT");
	lc_time_rfc1123(1136214245, out);
	assert_string_equal(out, "Mon, 02 Jan 2006 15:04:05 GMT");
	lc_time_rfc1123(1548061243, out);
	assert_string_equal(out, "Mon, 21 Jan 2019 09:00:43 GMT");
	lc_time_rfc3339(1548061243, out);
	assert_string_equal(out, "2019-01-21T09:00:43Z");
	lc_time_rfc3339(0, out);
	assert_string_equal(out, "1970-01-01T00:00:00Z");
	lc_time_rfc1123(951782400, out); /* a leap day */
	assert_string_equal(out, "Tue, 29 Feb 2000 00:00:00 GMT");
}

/* ---- Azure's acknowledgement body ------------------------------------------------------ */

static void test_ack_parse_table(void **state)
{
	(void)state;
	static const struct {
		const char *name, *body;
		int rc;
		unsigned n;
		const char *first;
	} cases[] = {
		{"one", "{\"StartRequests\":[{\"EventId\":\"a-1\"}]}", 0, 1, "a-1"},
		{"two, spaces", " { \"StartRequests\" : [ {\"EventId\":\"x\"} , {\"EventId\":\"y\"} ] }\n", 0,
		 2, "x"},
		{"none", "{\"StartRequests\":[]}", 0, 0, NULL},
		{"empty body", "", -1, 0, NULL},
		{"not an object", "[]", -1, 0, NULL},
		{"other member", "{\"StartRequests\":[],\"x\":1}", -1, 0, NULL},
		{"wrong key", "{\"StartRequest\":[]}", -1, 0, NULL},
		{"entry not an object", "{\"StartRequests\":[\"a\"]}", -1, 0, NULL},
		{"entry with another key", "{\"StartRequests\":[{\"Id\":\"a\"}]}", -1, 0, NULL},
		{"id not a string", "{\"StartRequests\":[{\"EventId\":1}]}", -1, 0, NULL},
		{"escape in id", "{\"StartRequests\":[{\"EventId\":\"a\\\"b\"}]}", -1, 0, NULL},
		{"control byte in id", "{\"StartRequests\":[{\"EventId\":\"a\tb\"}]}", -1, 0, NULL},
		{"non-ASCII id", "{\"StartRequests\":[{\"EventId\":\"\xc3\xa9\"}]}", -1, 0, NULL},
		{"unterminated string", "{\"StartRequests\":[{\"EventId\":\"a", -1, 0, NULL},
		{"unterminated list", "{\"StartRequests\":[{\"EventId\":\"a\"}", -1, 0, NULL},
		{"trailing comma", "{\"StartRequests\":[{\"EventId\":\"a\"},]}", -1, 0, NULL},
		{"bytes after", "{\"StartRequests\":[]}x", -1, 0, NULL},
		{"two objects", "{\"StartRequests\":[]}{}", -1, 0, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = strlen(cases[i].body);
		char *p = malloc(n ? n : 1); /* exact size: no NUL to lean on */
		assert_non_null(p);
		memcpy(p, cases[i].body, n);
		struct ev_ack ack;
		char err[160] = "";
		int rc = ev_azure_parse_ack(p, n, &ack, err, sizeof(err));
		int ok = rc == cases[i].rc && (rc < 0 ? err[0] != '\0' : ack.n == cases[i].n);
		if (ok && rc == 0 && cases[i].first)
			ok = ack.idn[0] == strlen(cases[i].first) &&
			     memcmp(ack.id[0], cases[i].first, ack.idn[0]) == 0;
		free(p);
		if (!ok)
			fail_msg("%s: rc %d n %u (%s), want %d n %u", cases[i].name, rc, ack.n, err,
				 cases[i].rc, cases[i].n);
	}
	/* At most EV_ACK_MAX entries. */
	char big[2048];
	size_t o = (size_t)snprintf(big, sizeof(big), "{\"StartRequests\":[");
	for (int i = 0; i <= EV_ACK_MAX; i++)
		o += (size_t)snprintf(big + o, sizeof(big) - o, "%s{\"EventId\":\"e%d\"}", i ? "," : "", i);
	o += (size_t)snprintf(big + o, sizeof(big) - o, "]}");
	struct ev_ack ack;
	char err[160];
	assert_int_equal(ev_azure_parse_ack(big, o, &ack, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "more than"));
}

/* ---- the handler: fixture ------------------------------------------------------------ */

struct fx {
	char dir[256];
	char lc[300];
	struct imds_config cfg;
	struct imds_app *app;
};

/* Writes lc/<name> anew and renames it into place, as kubelet's atomic
 * writer gives each version a new inode. */
static void put(struct fx *f, const char *name, const char *s)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", f->lc, name);
	fx_put_file(path, s, strlen(s));
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	fx_mkdtemp(f->dir, sizeof(f->dir), "imds-unit");
	snprintf(f->lc, sizeof(f->lc), "%s/podinfo", f->dir);
	assert_int_equal(mkdir(f->lc, 0755), 0);
	fx_env_clear();
	setenv("IMDS_NAMESPACE", "default", 1);
	setenv("IMDS_VM_NAME", "vm1", 1);
	setenv("IMDS_RATE_LIMIT", "0", 1);
	setenv("IMDS_TOKEN_PATH", "/nonexistent/token", 1);
	setenv("IMDS_LIFECYCLE_DIR", f->lc, 1);
	/* What kubelet writes for a source pod of a LiveMigrate VM at rest. */
	put(f, "eviction-in-progress", "");
	put(f, "eviction-strategy", "LiveMigrate");
	put(f, "migration-job-uid", "");
	put(f, "migration-target-ready", "");
	put(f, "maintenance", "");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	imds_app_free(f->app);
	fx_rm_tree(f->dir);
	free(f);
	fx_env_clear();
	return 0;
}

/* Reads the environment as it is now and creates the app. */
static struct imds_app *start(struct fx *f)
{
	return fx_app_start(&f->cfg, &f->app);
}

/* The next req() is a parked request run again, with this note. */
static int next_parked;
static uint64_t next_park_tag;

struct resp {
	int status;
	int park;
	uint64_t park_tag;
	char extra[512];
	char *body;
	size_t len;
};

/* One request; hdrs: name, value pairs ended by NULL; body may be NULL. */
static void req(struct fx *f, const char *method, const char *target, const char *const *hdrs,
		const char *body, struct resp *out)
{
	static struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.method = strcmp(method, "GET") == 0	 ? HTTP_M_GET
		    : strcmp(method, "HEAD") == 0 ? HTTP_M_HEAD
		    : strcmp(method, "POST") == 0 ? HTTP_M_POST
		    : strcmp(method, "PUT") == 0  ? HTTP_M_PUT
						  : HTTP_M_OTHER;
	rq.method_name = (struct http_span){method, strlen(method)};
	rq.target = (struct http_span){target, strlen(target)};
	const char *qm = strchr(target, '?');
	rq.path = qm ? (struct http_span){target, (size_t)(qm - target)} : rq.target;
	if (qm)
		rq.query = (struct http_span){qm + 1, strlen(qm + 1)};
	rq.version_major = 1;
	rq.version_minor = 1;
	for (size_t i = 0; hdrs && hdrs[i]; i += 2) {
		rq.hname[rq.nheaders] = (struct http_span){hdrs[i], strlen(hdrs[i])};
		rq.hvalue[rq.nheaders] = (struct http_span){hdrs[i + 1], strlen(hdrs[i + 1])};
		rq.nheaders++;
	}
	if (body)
		rq.body = (struct http_span){body, strlen(body)};
	rq.parked = next_parked;
	rq.park_tag = next_park_tag;
	next_parked = 0;
	next_park_tag = 0;
	struct http_response res;
	memset(&res, 0, sizeof(res));
	imds_handle(&rq, &res, f->app);
	out->status = res.status;
	out->park = res.park;
	out->park_tag = res.park_tag;
	memcpy(out->extra, res.extra, res.extra_len);
	out->extra[res.extra_len] = '\0';
	const char *p = res.blob ? res.blob->data : res.body;
	out->len = res.blob ? res.blob->len : res.body_len;
	out->body = malloc(out->len + 1);
	assert_non_null(out->body);
	if (out->len)
		memcpy(out->body, p, out->len);
	out->body[out->len] = '\0';
	blob_unref(res.blob);
}

/* GET target: status and body, freed by the caller's next get() (one slot). */
static const char *get(struct fx *f, const char *target, const char *const *hdrs, int want)
{
	static struct resp r;
	free(r.body);
	req(f, "GET", target, hdrs, NULL, &r);
	if (r.status != want)
		fail_msg("GET %s: %d %s, want %d", target, r.status, r.body, want);
	return r.body;
}

static int has_header(const char *extra, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = extra; *p;) {
		const char *e = strstr(p, "\r\n");
		if (!e)
			return 0;
		if ((size_t)(e - p) == n && memcmp(p, line, n) == 0)
			return 1;
		p = e + 2;
	}
	return 0;
}

static const char *const GOOGLE[] = {"Metadata-Flavor", "Google", NULL};
static const char *const AZURE[] = {"Metadata", "true", NULL};
#define MAINT "/computeMetadata/v1/instance/maintenance-event"
#define SCHED "/metadata/scheduledevents?api-version=2020-07-01"
#define EC2EV "/latest/meta-data/events/maintenance/scheduled"
#define SPOT "/latest/meta-data/spot/instance-action"

/* The Azure event's EventId in body, into id. */
static void event_id(const char *body, char id[64])
{
	const char *p = strstr(body, "\"EventId\":\"");
	assert_non_null(p);
	p += 11;
	size_t n = strcspn(p, "\"");
	assert_true(n < 64);
	memcpy(id, p, n);
	id[n] = '\0';
}

/* ---- the dialects through none -> migrate -> none, and none -> terminate ---------------- */

static void test_none_migrate_none(void **state)
{
	struct fx *f = *state;
	start(f);
	assert_non_null(strstr(get(f, "/v1/lifecycle", NULL, 200),
			       "{\"state\":\"none\",\"since\":\""));
	assert_non_null(strstr(get(f, "/v1/lifecycle", NULL, 200),
			       "\",\"migrationUID\":null,\"reason\":\"\"}\n"));
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "NONE");
	assert_string_equal(get(f, SCHED, AZURE, 200), "{\"DocumentIncarnation\":1,\"Events\":[]}\n");
	assert_string_equal(get(f, EC2EV, NULL, 200), "[]");
	get(f, SPOT, NULL, 404);

	put(f, "eviction-in-progress", "true");
	const char *b = get(f, "/v1/lifecycle", NULL, 200);
	assert_non_null(strstr(b, "{\"state\":\"migrate\","));
	assert_non_null(strstr(b, "\"reason\":\"eviction\"}"));
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "MIGRATE_ON_HOST_MAINTENANCE");
	b = get(f, SCHED, AZURE, 200);
	assert_non_null(strstr(b, "{\"DocumentIncarnation\":2,\"Events\":[{\"EventId\":\""));
	assert_non_null(strstr(b, "\"EventStatus\":\"Scheduled\",\"EventType\":\"Freeze\","
				  "\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm1\"],"
				  "\"NotBefore\":\""));
	assert_non_null(strstr(b, " GMT\",\"Description\":"));
	assert_non_null(strstr(b, "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}\n"));
	char id[64], post[200];
	event_id(b, id);
	assert_int_equal(strlen(id), 36);
	b = get(f, EC2EV, NULL, 200);
	assert_non_null(strstr(b, "[{\"Code\":\"system-maintenance\","));
	assert_non_null(strstr(b, "\"EventId\":\"instance-event-"));
	assert_non_null(strstr(b, "\"State\":\"active\"}]"));
	get(f, SPOT, NULL, 404); /* a migration is no spot interruption */

	/* The acknowledgement: Scheduled -> Started. */
	struct resp r;
	snprintf(post, sizeof(post), "{\"StartRequests\":[{\"EventId\":\"%s\"}]}", id);
	req(f, "POST", SCHED, AZURE, post, &r);
	assert_int_equal(r.status, 200);
	free(r.body);
	b = get(f, SCHED, AZURE, 200);
	assert_non_null(strstr(b, "\"EventStatus\":\"Started\""));
	assert_non_null(strstr(b, "\"NotBefore\":\"\""));

	put(f, "eviction-in-progress", "");
	assert_non_null(strstr(get(f, "/v1/lifecycle", NULL, 200), "{\"state\":\"none\","));
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "NONE");
	assert_string_equal(get(f, SCHED, AZURE, 200), "{\"DocumentIncarnation\":3,\"Events\":[]}\n");
	assert_string_equal(get(f, EC2EV, NULL, 200), "[]");
	/* The acknowledged event is gone: acknowledging it again is refused. */
	req(f, "POST", SCHED, AZURE, post, &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "\"unknown_event\""));
	free(r.body);
}

static void test_none_terminate(void **state)
{
	struct fx *f = *state;
	put(f, "eviction-strategy", "External");
	start(f);
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "NONE");
	put(f, "eviction-in-progress", "true");
	assert_non_null(strstr(get(f, "/v1/lifecycle", NULL, 200), "{\"state\":\"terminate\","));
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "TERMINATE_ON_HOST_MAINTENANCE");
	assert_non_null(strstr(get(f, SCHED, AZURE, 200), "\"EventType\":\"Terminate\""));
	assert_non_null(strstr(get(f, EC2EV, NULL, 200), "[{\"Code\":\"instance-stop\","));
	const char *b = get(f, SPOT, NULL, 200);
	assert_int_equal(strlen(b), strlen("{\"action\":\"terminate\",\"time\":\"2026-11-27T15:04:05Z\"}"));
	assert_non_null(strstr(b, "{\"action\":\"terminate\",\"time\":\""));
	assert_non_null(strstr(get(f, "/latest/meta-data/", NULL, 200), "\nspot/"));
	assert_string_equal(get(f, "/latest/meta-data/spot", NULL, 200), "instance-action");
}

static void test_maintenance_annotation(void **state)
{
	struct fx *f = *state;
	start(f);
	put(f, "maintenance", "terminate\n");
	const char *b = get(f, "/v1/lifecycle", NULL, 200);
	assert_non_null(strstr(b, "\"state\":\"terminate\""));
	assert_non_null(strstr(b, "\"reason\":\"maintenance\""));
	assert_non_null(strstr(get(f, SCHED, AZURE, 200), "\"EventSource\":\"User\""));
	put(f, "maintenance", "reboot"); /* not ours: logged, ignored */
	assert_non_null(strstr(get(f, "/v1/lifecycle", NULL, 200), "\"state\":\"none\""));
}

static void test_arrived(void **state)
{
	struct fx *f = *state;
	put(f, "migration-job-uid", "5d1e2a34-75f0-4a5e-9f35-6c8b1e0b1f2a");
	start(f);
	assert_non_null(strstr(get(f, "/v1/lifecycle", NULL, 200), "\"state\":\"none\""));
	static struct resp r;
	req(f, "GET", "/v1/lifecycle", NULL, NULL, &r);
	char etag[64];
	const char *e = strstr(r.extra, "ETag: \"");
	assert_non_null(e);
	snprintf(etag, sizeof(etag), "%.16s", e + 7);
	free(r.body);
	/* A waiter with the current tag parks... */
	char target[200];
	snprintf(target, sizeof(target), "/v1/lifecycle?wait_for_change=true&last_etag=%s", etag);
	req(f, "GET", target, NULL, NULL, &r);
	assert_int_equal(r.park, 1);
	free(r.body);
	/* ...and is answered once the domain runs here. */
	put(f, "migration-target-ready", "2026-11-27 15:04:05 +0000 UTC");
	req(f, "GET", target, NULL, NULL, &r);
	assert_int_equal(r.park, 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "{\"state\":\"arrived\","));
	assert_non_null(strstr(r.body, "\"migrationUID\":\"5d1e2a34-75f0-4a5e-9f35-6c8b1e0b1f2a\","
				       "\"reason\":\"migration\"}"));
	free(r.body);
	/* Every other dialect: nothing is coming. */
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "NONE");
	assert_non_null(strstr(get(f, SCHED, AZURE, 200), "\"Events\":[]}"));
	assert_string_equal(get(f, EC2EV, NULL, 200), "[]");
	/* A UID that is not one is not shown. */
	put(f, "migration-job-uid", "a\"b");
	assert_non_null(strstr(get(f, "/v1/lifecycle", NULL, 200), "\"migrationUID\":null"));
}

/* GCE's own use: ?wait_for_change=true without last_etag waits for the
 * next change from what is there when the request comes. */
static void test_wait_from_now(void **state)
{
	struct fx *f = *state;
	start(f);
	struct resp r;
	req(f, "GET", MAINT "?wait_for_change=true", GOOGLE, NULL, &r);
	assert_int_equal(r.park, 1);
	assert_true(r.park_tag != 0);
	uint64_t t = r.park_tag;
	free(r.body);
	/* Woken with nothing changed: parked again, on the same tag. */
	next_parked = 1;
	next_park_tag = t;
	req(f, "GET", MAINT "?wait_for_change=true&last_etag=", GOOGLE, NULL, &r);
	assert_int_equal(r.park, 1);
	assert_true(r.park_tag == t);
	free(r.body);
	put(f, "eviction-in-progress", "true");
	next_parked = 1;
	next_park_tag = t;
	req(f, "GET", MAINT "?wait_for_change=true", GOOGLE, NULL, &r);
	assert_int_equal(r.park, 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "MIGRATE_ON_HOST_MAINTENANCE");
	free(r.body);
}

static void test_no_lifecycle_dir(void **state)
{
	struct fx *f = *state;
	unsetenv("IMDS_LIFECYCLE_DIR");
	start(f);
	assert_non_null(strstr(get(f, "/v1/lifecycle", NULL, 200), "\"state\":\"none\""));
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "NONE");
	/* Missing files count as empty, and are read when they come. */
	setenv("IMDS_LIFECYCLE_DIR", f->dir, 1);
	start(f);
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "NONE");
	char p[600];
	snprintf(p, sizeof(p), "%s/maintenance", f->dir);
	FILE *fp = fopen(p, "w");
	assert_non_null(fp);
	fputs("migrate", fp);
	fclose(fp);
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "MIGRATE_ON_HOST_MAINTENANCE");
	/* A relative folder is a configuration error naming the variable. */
	setenv("IMDS_LIFECYCLE_DIR", "podinfo", 1);
	char err[200] = "";
	assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "IMDS_LIFECYCLE_DIR"));
}

/* ---- bad input --------------------------------------------------------------------- */

static void test_gce_rules(void **state)
{
	struct fx *f = *state;
	start(f);
	struct resp r;
	const struct {
		const char *name, *method, *target;
		const char *const *hdrs;
		int status;
		const char *code;
	} cases[] = {
		{"no flavor header", "GET", MAINT, NULL, 403, "missing_header"},
		{"flavor lower case", "GET", MAINT, (const char *const[]){"Metadata-Flavor", "google", NULL},
		 403, "missing_header"},
		{"flavor twice", "GET", MAINT,
		 (const char *const[]){"Metadata-Flavor", "Google", "Metadata-Flavor", "Google", NULL}, 403,
		 "missing_header"},
		{"proxied", "GET", MAINT,
		 (const char *const[]){"Metadata-Flavor", "Google", "X-Forwarded-For", "10.0.0.1", NULL},
		 403, "forbidden"},
		{"POST", "POST", MAINT, GOOGLE, 405, "method_not_allowed"},
		{"unknown key", "GET", "/computeMetadata/v1/instance/attributes/x", GOOGLE, 404,
		 "not_found"},
		{"unknown tree", "GET", "/computeMetadata/v2/", GOOGLE, 404, "not_found"},
		{"bad wait", "GET", MAINT "?wait_for_change=yes", GOOGLE, 400, "bad_wait_for_change"},
		{"bad last_etag", "GET", MAINT "?wait_for_change=true&last_etag=xyz", GOOGLE, 400,
		 "bad_last_etag"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		req(f, cases[i].method, cases[i].target, cases[i].hdrs, NULL, &r);
		char code[80];
		snprintf(code, sizeof(code), "{\"error\":\"%s\"", cases[i].code);
		int ok = r.status == cases[i].status && strstr(r.body, code) == r.body &&
			 has_header(r.extra, "Metadata-Flavor: Google");
		if (!ok)
			fail_msg("%s: %d %s [%s], want %d %s and the flavor echoed", cases[i].name,
				 r.status, r.body, r.extra, cases[i].status, cases[i].code);
		free(r.body);
	}
	/* The keys its clients read first. */
	assert_string_equal(get(f, "/computeMetadata/v1/instance/id", GOOGLE, 200), "default-vm1");
	assert_string_equal(get(f, "/computeMetadata/v1/instance/name", GOOGLE, 200), "vm1");
	assert_string_equal(get(f, "/computeMetadata/v1/instance/hostname", GOOGLE, 200), "vm1");
	/* no zone known: not listed, 404 (not a stand-in) */
	get(f, "/computeMetadata/v1/instance/zone", GOOGLE, 404);
	assert_string_equal(get(f, "/computeMetadata/v1/instance/", GOOGLE, 200),
			    "hostname\nid\nmaintenance-event\nname\n");
}

static void test_azure_rules(void **state)
{
	struct fx *f = *state;
	put(f, "eviction-in-progress", "true");
	start(f);
	struct resp r;
	const struct {
		const char *name, *method, *target;
		const char *const *hdrs;
		const char *body;
		int status;
		const char *code;
	} cases[] = {
		{"no Metadata header", "GET", SCHED, NULL, NULL, 400, "missing_header"},
		{"proxied", "GET", SCHED,
		 (const char *const[]){"Metadata", "true", "Forwarded", "for=1.2.3.4", NULL}, NULL, 403,
		 "forbidden"},
		{"no api-version", "GET", "/metadata/scheduledevents", AZURE, NULL, 400, "bad_api_version"},
		{"api-version Azure never had", "GET", "/metadata/scheduledevents?api-version=2021-01-01",
		 AZURE, NULL, 400, "bad_api_version"},
		{"api-version not a date", "GET", "/metadata/instance?api-version=latest", AZURE, NULL, 400,
		 "bad_api_version"},
		{"api-version bad escape", "GET", "/metadata/instance?api-version=%zz", AZURE, NULL, 400,
		 "bad_api_version"},
		{"PUT", "PUT", SCHED, AZURE, NULL, 405, "method_not_allowed"},
		{"POST to instance", "POST", "/metadata/instance?api-version=2021-02-01", AZURE, "{}", 405,
		 "method_not_allowed"},
		{"POST empty", "POST", SCHED, AZURE, "", 400, "bad_body"},
		{"POST malformed", "POST", SCHED, AZURE, "{\"StartRequests\":[{\"EventId\":}]}", 400,
		 "bad_body"},
		{"POST unknown id", "POST", SCHED, AZURE, "{\"StartRequests\":[{\"EventId\":\"nope\"}]}", 400,
		 "unknown_event"},
		{"POST without header", "POST", SCHED, NULL, "{\"StartRequests\":[]}", 400,
		 "missing_header"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		req(f, cases[i].method, cases[i].target, cases[i].hdrs, cases[i].body, &r);
		char code[80];
		snprintf(code, sizeof(code), "{\"error\":\"%s\"", cases[i].code);
		if (r.status != cases[i].status || strstr(r.body, code) != r.body)
			fail_msg("%s: %d %s, want %d %s", cases[i].name, r.status, r.body, cases[i].status,
				 cases[i].code);
		free(r.body);
	}
	/* The event is still Scheduled: nothing above acknowledged it. */
	assert_non_null(strstr(get(f, SCHED, AZURE, 200), "\"EventStatus\":\"Scheduled\""));
	/* An empty list is a valid acknowledgement of nothing. */
	req(f, "POST", SCHED, AZURE, "{\"StartRequests\":[]}", &r);
	assert_int_equal(r.status, 200);
	free(r.body);
	const char *b = get(f, "/metadata/instance?api-version=2021-02-01", AZURE, 200);
	assert_string_equal(b, "{\"compute\":{\"name\":\"vm1\",\"vmId\":\"default-vm1\",\"location\":\"\","
			       "\"zone\":\"\",\"resourceGroupName\":\"default\",\"vmSize\":\"kubevirt\"}}\n");
}

/* Azure's compute.zone is the zone's number: AKS labels <region>-<n>. */
static void test_azure_zone_table(void **state)
{
	(void)state;
	static const struct {
		const char *zone, *region, *want;
	} cases[] = {
		{"eastus-2", "eastus", "2"},  /* AKS: makeZone(location, id) */
		{"EastUS-1", "eastus", "1"},  /* lower-cased by Azure's provider */
		{"3", "westeurope", "3"},     /* a bare number */
		{"3", NULL, "3"},
		{"eu-west-1b", "eu-west-1", ""}, /* AWS's form: no Azure number */
		{"eastus-2", NULL, ""},       /* no region to strip */
		{"eastus-2", "westus", ""},
		{"eastus-", "eastus", ""},
		{"eastus-2a", "eastus", ""},
		{"eastus-12345678901", "eastus", ""}, /* longer than a zone number */
		{"", "eastus", ""},
		{NULL, "eastus", ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[16] = "x";
		const char *got = ev_azure_zone(cases[i].zone, cases[i].region, out, sizeof(out));
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("zone %s region %s: %s, want %s", cases[i].zone ? cases[i].zone : "(null)",
				 cases[i].region ? cases[i].region : "(null)", got, cases[i].want);
	}
	char small[2];
	assert_string_equal(ev_azure_zone("12", NULL, small, sizeof(small)), "");
}

/* With IMDS_SESSION=required the EC2 events need a session as the rest of
 * its tree; GCE's and Azure's do not know sessions. */
static void test_sessions(void **state)
{
	struct fx *f = *state;
	setenv("IMDS_SESSION", "required", 1);
	start(f);
	get(f, EC2EV, NULL, 401);
	assert_string_equal(get(f, MAINT, GOOGLE, 200), "NONE");
	get(f, SCHED, AZURE, 200);
	/* A token that is presented must be good, on every path. */
	static const char *const bad[] = {"Metadata-Flavor", "Google", "X-Metadata-Token", "nope", NULL};
	get(f, MAINT, bad, 401);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_derive_table),
		cmocka_unit_test(test_azure_zone_table),
		cmocka_unit_test(test_dates),
		cmocka_unit_test(test_ack_parse_table),
		cmocka_unit_test_setup_teardown(test_none_migrate_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_terminate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_maintenance_annotation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arrived, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_from_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_lifecycle_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gce_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_azure_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sessions, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
