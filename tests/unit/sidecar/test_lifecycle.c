/* lifecycle: the state derived from the pod's downward-API files
 * (lifecycle.c), and its walk through the four dialects (events.c, whose
 * own rules are test_events.c's), driven through the request handler
 * against files in a temporary directory (handler.h).
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

#include "events.h"
#include "lifecycle.h"
#include "handler.h"

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
	assert_non_null(strstr(get_want(f->app, "/v1/lifecycle", NULL, 200),
			       "{\"state\":\"none\",\"since\":\""));
	assert_non_null(strstr(get_want(f->app, "/v1/lifecycle", NULL, 200),
			       "\",\"migrationUID\":null,\"reason\":\"\"}\n"));
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "NONE");
	assert_string_equal(get_want(f->app, SCHED, AZURE, 200), "{\"DocumentIncarnation\":1,\"Events\":[]}\n");
	assert_string_equal(get_want(f->app, EC2EV, NULL, 200), "[]");
	get_want(f->app, SPOT, NULL, 404);

	lc_put(f, "eviction-in-progress", "true");
	const char *b = get_want(f->app, "/v1/lifecycle", NULL, 200);
	assert_non_null(strstr(b, "{\"state\":\"migrate\","));
	assert_non_null(strstr(b, "\"reason\":\"eviction\"}"));
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "MIGRATE_ON_HOST_MAINTENANCE");
	b = get_want(f->app, SCHED, AZURE, 200);
	assert_non_null(strstr(b, "{\"DocumentIncarnation\":2,\"Events\":[{\"EventId\":\""));
	assert_non_null(strstr(b, "\"EventStatus\":\"Scheduled\",\"EventType\":\"Freeze\","
				  "\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm1\"],"
				  "\"NotBefore\":\""));
	assert_non_null(strstr(b, " GMT\",\"Description\":"));
	assert_non_null(strstr(b, "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}\n"));
	char id[64], post[200];
	event_id(b, id);
	assert_int_equal(strlen(id), 36);
	b = get_want(f->app, EC2EV, NULL, 200);
	assert_non_null(strstr(b, "[{\"Code\":\"system-maintenance\","));
	assert_non_null(strstr(b, "\"EventId\":\"instance-event-"));
	assert_non_null(strstr(b, "\"State\":\"active\"}]"));
	get_want(f->app, SPOT, NULL, 404); /* a migration is no spot interruption */

	/* The acknowledgement: Scheduled -> Started. */
	struct resp r;
	snprintf(post, sizeof(post), "{\"StartRequests\":[{\"EventId\":\"%s\"}]}", id);
	call_body(f->app, "POST", SCHED, AZURE, post, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	b = get_want(f->app, SCHED, AZURE, 200);
	assert_non_null(strstr(b, "\"EventStatus\":\"Started\""));
	assert_non_null(strstr(b, "\"NotBefore\":\"\""));

	lc_put(f, "eviction-in-progress", "");
	assert_non_null(strstr(get_want(f->app, "/v1/lifecycle", NULL, 200), "{\"state\":\"none\","));
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "NONE");
	assert_string_equal(get_want(f->app, SCHED, AZURE, 200), "{\"DocumentIncarnation\":3,\"Events\":[]}\n");
	assert_string_equal(get_want(f->app, EC2EV, NULL, 200), "[]");
	/* The acknowledged event is gone: acknowledging it again is refused. */
	call_body(f->app, "POST", SCHED, AZURE, post, &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "\"unknown_event\""));
	resp_free(&r);
}

static void test_none_terminate(void **state)
{
	struct fx *f = *state;
	lc_put(f, "eviction-strategy", "External");
	start(f);
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "NONE");
	lc_put(f, "eviction-in-progress", "true");
	assert_non_null(strstr(get_want(f->app, "/v1/lifecycle", NULL, 200), "{\"state\":\"terminate\","));
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "TERMINATE_ON_HOST_MAINTENANCE");
	assert_non_null(strstr(get_want(f->app, SCHED, AZURE, 200), "\"EventType\":\"Terminate\""));
	assert_non_null(strstr(get_want(f->app, EC2EV, NULL, 200), "[{\"Code\":\"instance-stop\","));
	const char *b = get_want(f->app, SPOT, NULL, 200);
	assert_int_equal(strlen(b), strlen("{\"action\":\"terminate\",\"time\":\"2026-11-27T15:04:05Z\"}"));
	assert_non_null(strstr(b, "{\"action\":\"terminate\",\"time\":\""));
	assert_non_null(strstr(get_want(f->app, "/latest/meta-data/", NULL, 200), "\nspot/"));
	assert_string_equal(get_want(f->app, "/latest/meta-data/spot", NULL, 200), "instance-action");
}

static void test_maintenance_annotation(void **state)
{
	struct fx *f = *state;
	start(f);
	lc_put(f, "maintenance", "terminate\n");
	const char *b = get_want(f->app, "/v1/lifecycle", NULL, 200);
	assert_non_null(strstr(b, "\"state\":\"terminate\""));
	assert_non_null(strstr(b, "\"reason\":\"maintenance\""));
	assert_non_null(strstr(get_want(f->app, SCHED, AZURE, 200), "\"EventSource\":\"User\""));
	lc_put(f, "maintenance", "reboot"); /* not ours: logged, ignored */
	assert_non_null(strstr(get_want(f->app, "/v1/lifecycle", NULL, 200), "\"state\":\"none\""));
}

static void test_arrived(void **state)
{
	struct fx *f = *state;
	lc_put(f, "migration-job-uid", "5d1e2a34-75f0-4a5e-9f35-6c8b1e0b1f2a");
	start(f);
	assert_non_null(strstr(get_want(f->app, "/v1/lifecycle", NULL, 200), "\"state\":\"none\""));
	static struct resp r;
	call_body(f->app, "GET", "/v1/lifecycle", NULL, NULL, &r);
	char etag[64];
	const char *e = strstr(r.extra, "ETag: \"");
	assert_non_null(e);
	snprintf(etag, sizeof(etag), "%.16s", e + 7);
	resp_free(&r);
	/* A waiter with the current tag parks... */
	char target[200];
	snprintf(target, sizeof(target), "/v1/lifecycle?wait_for_change=true&last_etag=%s", etag);
	call_body(f->app, "GET", target, NULL, NULL, &r);
	assert_int_equal(r.park, 1);
	resp_free(&r);
	/* ...and is answered once the domain runs here. */
	lc_put(f, "migration-target-ready", "2026-11-27 15:04:05 +0000 UTC");
	call_body(f->app, "GET", target, NULL, NULL, &r);
	assert_int_equal(r.park, 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "{\"state\":\"arrived\","));
	assert_non_null(strstr(r.body, "\"migrationUID\":\"5d1e2a34-75f0-4a5e-9f35-6c8b1e0b1f2a\","
				       "\"reason\":\"migration\"}"));
	resp_free(&r);
	/* Every other dialect: nothing is coming. */
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "NONE");
	assert_non_null(strstr(get_want(f->app, SCHED, AZURE, 200), "\"Events\":[]}"));
	assert_string_equal(get_want(f->app, EC2EV, NULL, 200), "[]");
	/* A UID that is not one is not shown. */
	lc_put(f, "migration-job-uid", "a\"b");
	assert_non_null(strstr(get_want(f->app, "/v1/lifecycle", NULL, 200), "\"migrationUID\":null"));
}

/* GCE's own use: ?wait_for_change=true without last_etag waits for the
 * next change from what is there when the request comes. */
static void test_wait_from_now(void **state)
{
	struct fx *f = *state;
	start(f);
	struct resp r;
	call_body(f->app, "GET", MAINT "?wait_for_change=true", GOOGLE, NULL, &r);
	assert_int_equal(r.park, 1);
	assert_true(r.park_tag != 0);
	uint64_t t = r.park_tag;
	resp_free(&r);
	/* Woken with nothing changed: parked again, on the same tag. */
	next_parked = 1;
	next_park_tag = t;
	call_body(f->app, "GET", MAINT "?wait_for_change=true&last_etag=", GOOGLE, NULL, &r);
	assert_int_equal(r.park, 1);
	assert_true(r.park_tag == t);
	resp_free(&r);
	lc_put(f, "eviction-in-progress", "true");
	next_parked = 1;
	next_park_tag = t;
	call_body(f->app, "GET", MAINT "?wait_for_change=true", GOOGLE, NULL, &r);
	assert_int_equal(r.park, 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "MIGRATE_ON_HOST_MAINTENANCE");
	resp_free(&r);
}

static void test_no_lifecycle_dir(void **state)
{
	struct fx *f = *state;
	unsetenv("IMDS_LIFECYCLE_DIR");
	start(f);
	assert_non_null(strstr(get_want(f->app, "/v1/lifecycle", NULL, 200), "\"state\":\"none\""));
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "NONE");
	/* Missing files count as empty, and are read when they come. */
	setenv("IMDS_LIFECYCLE_DIR", f->dir, 1);
	start(f);
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "NONE");
	char p[600];
	snprintf(p, sizeof(p), "%s/maintenance", f->dir);
	FILE *fp = fopen(p, "w");
	assert_non_null(fp);
	fputs("migrate", fp);
	fclose(fp);
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "MIGRATE_ON_HOST_MAINTENANCE");
	/* A relative folder is a configuration error naming the variable. */
	setenv("IMDS_LIFECYCLE_DIR", "podinfo", 1);
	char err[200] = "";
	assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "IMDS_LIFECYCLE_DIR"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_derive_table),
		cmocka_unit_test(test_dates),
		cmocka_unit_test_setup_teardown(test_none_migrate_none, lc_setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_terminate, lc_setup, teardown),
		cmocka_unit_test_setup_teardown(test_maintenance_annotation, lc_setup, teardown),
		cmocka_unit_test_setup_teardown(test_arrived, lc_setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_from_now, lc_setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_lifecycle_dir, lc_setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
