/* events: the lifecycle state in each dialect a guest's tools read
 * (events.c): GCE's header rule and its instance keys, Azure's
 * api-version, methods and acknowledgement body, Azure's zone number, and
 * the session rule on EC2's events (moved here from test_lifecycle.c,
 * which keeps the state's derivation and its walk through the dialects),
 * through the handler (handler.h) or the functions themselves. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "handler.h"

/* GCE's rule by itself: the exact header once, no proxy; the header's
 * name in any case, its value exact. */
static void test_gce_flavor_rule(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		const char *h[7];
		int rc, status;
		const char *code;
	} cases[] = {
		{"exact", {"Metadata-Flavor", "Google", NULL}, 0, 0, NULL},
		{"name in lower case", {"metadata-flavor", "Google", NULL}, 0, 0, NULL},
		{"with others", {"Host", "x", "Accept", "*/*", "METADATA-FLAVOR", "Google", NULL}, 0, 0, NULL},
		{"absent", {NULL}, -1, 403, "missing_header"},
		{"value case", {"Metadata-Flavor", "google", NULL}, -1, 403, "missing_header"},
		{"value padded", {"Metadata-Flavor", "Google ", NULL}, -1, 403, "missing_header"},
		{"empty", {"Metadata-Flavor", "", NULL}, -1, 403, "missing_header"},
		{"twice", {"Metadata-Flavor", "Google", "Metadata-Flavor", "Google", NULL}, -1, 403,
		 "missing_header"},
		{"X-Forwarded-For", {"Metadata-Flavor", "Google", "X-Forwarded-For", "1.2.3.4", NULL}, -1,
		 403, "forbidden"},
		{"Forwarded", {"Forwarded", "for=1.2.3.4", "Metadata-Flavor", "Google", NULL}, -1, 403,
		 "forbidden"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_request rq = bare_req(0, cases[i].h);
		struct http_response res;
		memset(&res, 0, sizeof(res));
		int rc = ev_gce_flavor(&rq, &res);
		char code[80] = "";
		if (cases[i].code)
			snprintf(code, sizeof(code), "{\"error\":\"%s\"", cases[i].code);
		if (rc != cases[i].rc || res.status != cases[i].status ||
		    (cases[i].code && (!res.body || strncmp(res.body, code, strlen(code)) != 0)))
			fail_msg("%s: rc %d status %d, want %d %d %s", cases[i].name, rc, res.status,
				 cases[i].rc, cases[i].status, cases[i].code ? cases[i].code : "");
	}
	/* The header every answer carries, errors included. */
	struct http_response res;
	memset(&res, 0, sizeof(res));
	ev_gce_flavor_header(&res);
	assert_int_equal(res.extra_len, strlen("Metadata-Flavor: Google\r\n"));
	assert_memory_equal(res.extra, "Metadata-Flavor: Google\r\n", res.extra_len);
}

/* The reason of a refused acknowledgement fits any buffer given. */
static void test_ack_parse_err_bounded(void **state)
{
	(void)state;
	for (size_t cap = 1; cap < 40; cap++) {
		char err[64];
		memset(err, 'Z', sizeof(err));
		struct ev_ack ack;
		assert_int_equal(ev_azure_parse_ack("[]", 2, &ack, err, cap), -1);
		if (memchr(err, '\0', cap) == NULL)
			fail_msg("cap %zu: reason not terminated", cap);
		for (size_t k = cap; k < sizeof(err); k++)
			if (err[k] != 'Z')
				fail_msg("cap %zu: byte %zu written", cap, k);
	}
}

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
		call_body(f->app, cases[i].method, cases[i].target, cases[i].hdrs, NULL, &r);
		char code[80];
		snprintf(code, sizeof(code), "{\"error\":\"%s\"", cases[i].code);
		int ok = r.status == cases[i].status && strstr(r.body, code) == r.body &&
			 has_header(&r, "Metadata-Flavor: Google");
		if (!ok)
			fail_msg("%s: %d %s [%s], want %d %s and the flavor echoed", cases[i].name,
				 r.status, r.body, r.extra, cases[i].status, cases[i].code);
		resp_free(&r);
	}
	/* The keys its clients read first. */
	assert_string_equal(get_want(f->app, "/computeMetadata/v1/instance/id", GOOGLE, 200), "default-vm1");
	assert_string_equal(get_want(f->app, "/computeMetadata/v1/instance/name", GOOGLE, 200), "vm1");
	assert_string_equal(get_want(f->app, "/computeMetadata/v1/instance/hostname", GOOGLE, 200), "vm1");
	/* no zone known: not listed, 404 (not a stand-in) */
	get_want(f->app, "/computeMetadata/v1/instance/zone", GOOGLE, 404);
	assert_string_equal(get_want(f->app, "/computeMetadata/v1/instance/", GOOGLE, 200),
			    "hostname\nid\nmaintenance-event\nname\n");
}

/* GCE's instance/ is one table: with and without a zone, every key its
 * listing names answers 200, every row it does not name 404, and it names
 * nothing that is not a row. */
static void test_gce_instance_table(void **state)
{
	struct fx *f = *state;
	for (int zoned = 0; zoned < 2; zoned++) {
		if (zoned) /* start() frees the app before */
			setenv("IMDS_AVAILABILITY_ZONE", "z1", 1);
		start(f);
		char listing[256];
		snprintf(listing, sizeof(listing), "%s",
			 get_want(f->app, "/computeMetadata/v1/instance/", GOOGLE, 200));
		size_t lines = 0, listed = 0, rows = 0;
		for (const char *p = listing; (p = strchr(p, '\n')); p++)
			lines++;
		for (size_t i = 0; ev_gce_instance_key(i); i++, rows++) {
			char line[64], target[128];
			snprintf(line, sizeof(line), "%s\n", ev_gce_instance_key(i));
			int named = strstr(listing, line) != NULL;
			listed += named != 0;
			snprintf(target, sizeof(target), "/computeMetadata/v1/instance/%s",
				 ev_gce_instance_key(i));
			get_want(f->app, target, GOOGLE, named ? 200 : 404);
		}
		assert_int_equal(lines, listed);
		assert_int_equal(listed, zoned ? rows : rows - 1);
	}
	assert_string_equal(get_want(f->app, "/computeMetadata/v1/instance/zone", GOOGLE, 200),
			    "projects/default/zones/z1");
}

static void test_azure_rules(void **state)
{
	struct fx *f = *state;
	lc_put(f, "eviction-in-progress", "true");
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
		call_body(f->app, cases[i].method, cases[i].target, cases[i].hdrs, cases[i].body, &r);
		char code[80];
		snprintf(code, sizeof(code), "{\"error\":\"%s\"", cases[i].code);
		if (r.status != cases[i].status || strstr(r.body, code) != r.body)
			fail_msg("%s: %d %s, want %d %s", cases[i].name, r.status, r.body, cases[i].status,
				 cases[i].code);
		resp_free(&r);
	}
	/* The event is still Scheduled: nothing above acknowledged it. */
	assert_non_null(strstr(get_want(f->app, SCHED, AZURE, 200), "\"EventStatus\":\"Scheduled\""));
	/* An empty list is a valid acknowledgement of nothing. */
	call_body(f->app, "POST", SCHED, AZURE, "{\"StartRequests\":[]}", &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	const char *b = get_want(f->app, "/metadata/instance?api-version=2021-02-01", AZURE, 200);
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
	get_want(f->app, EC2EV, NULL, 401);
	assert_string_equal(get_want(f->app, MAINT, GOOGLE, 200), "NONE");
	get_want(f->app, SCHED, AZURE, 200);
	/* A token that is presented must be good, on every path. */
	static const char *const bad[] = {"Metadata-Flavor", "Google", "X-Metadata-Token", "nope", NULL};
	get_want(f->app, MAINT, bad, 401);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gce_flavor_rule),
		cmocka_unit_test(test_ack_parse_table),
		cmocka_unit_test(test_ack_parse_err_bounded),
		cmocka_unit_test(test_azure_zone_table),
		cmocka_unit_test_setup_teardown(test_gce_rules, lc_setup, teardown),
		cmocka_unit_test_setup_teardown(test_gce_instance_table, lc_setup, teardown),
		cmocka_unit_test_setup_teardown(test_azure_rules, lc_setup, teardown),
		cmocka_unit_test_setup_teardown(test_sessions, lc_setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
