/* imds: the wiring (imds.c, docs/sidecar.md): routes, methods, the
 * header rules, proxies, the rate limit and merged slashes, driven with
 * hand-built requests against files in a temporary directory (handler.h).
 * The modules' own tests are in their files: the answer helpers and ETags
 * test_answer.c, the token and identity test_kube.c, sessions
 * test_session.c, waiting for a change test_wait.c; each layout's own
 * answers test_nocloud.c, test_openstack.c, test_ec2.c. */
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

#include "handler.h"

/* ---- routes and statuses ----------------------------------------------------------------- */

static void test_healthz_and_unknown(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f);
	struct resp r;
	call(a, "GET", "/healthz", 0, NULL, &r);
	EXPECT_STATUS("healthz", &r, 200);
	EXPECT_BODY("healthz", &r, "OK");
	EXPECT_CTYPE("healthz", &r, "text/plain");
	resp_free(&r);
	call(a, "HEAD", "/healthz", 0, NULL, &r);
	EXPECT_STATUS("HEAD healthz", &r, 200);
	resp_free(&r);

	static const char *const unknown[] = {
		"/v1", "/v1/", "/v1/token/", "/V1/token", "/v1/identity/x", "/v1/meta-data/",
		"/v1/metadata", "/healthz/", "/healthzz", "/openstackx",
		"/openstack/latest/foo", "/openstack/latest/meta_data.json/",
		"/openstack//meta_data.json",
		/* EC2: names that are not there (no keys, no user-data, no zone here) */
		"/latest/meta-data/nope", "/latest/meta-datax", "/latest/meta-data/public-keys",
		"/latest/meta-data/public-keys/0", "/latest/meta-data/placement/",
		"/latest/meta-data/local-ipv4", "/latest/user-data", "/latest/dynamic/nope",
		"/latest/dynamic/instance-identity/documentx", "/2009-04-4/meta-data/",
		"/Latest/meta-data/", "/latest/api/tokenx", "/v2/meta-data/",
		"/openstack/2016-06-30/vendor_data2.json",
		"/openstack/2012-08-1/meta_data.json", "/openstack/20120810/meta_data.json",
		"/openstack/2012_08_10/meta_data.json", "/openstack/2012-08-10x/meta_data.json",
		"/openstack/x012-08-10/meta_data.json", "/openstack/latest2/meta_data.json",
		"/openstack/LATEST/meta_data.json", "/openstack/latest/user-data",
		"/openstack/latest/meta_data.JSON", "/OPENSTACK/latest", "/ec2/latest/meta-data",
		/* GCE's and Azure's trees have their own rules (test_lifecycle.c) */
		"/computeMetadata", "/metadata/instancex", "/metadata/identity",
	};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		call(a, "GET", unknown[i], 0, META, &r);
		expect_error(unknown[i], &r, 404, "not_found");
		resp_free(&r);
	}
}

static void test_methods(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f);
	static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
	static const char *const paths[] = {"/v1/meta-data", "/v1/token", "/healthz", "/nope",
					    "/openstack/latest/meta_data.json"};
	for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
		for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
			char name[96];
			snprintf(name, sizeof(name), "%s %s", methods[m], paths[p]);
			struct resp r;
			call(a, methods[m], paths[p], 0, META, &r);
			expect_error(name, &r, 405, "method_not_allowed");
			EXPECT_HEADER(name, &r, "Allow: GET, HEAD");
			resp_free(&r);
		}
	}
	/* HEAD answers like GET (the core drops the body). */
	struct resp g, h;
	call(a, "GET", "/v1/meta-data", 0, NULL, &g);
	call(a, "HEAD", "/v1/meta-data", 0, NULL, &h);
	EXPECT_STATUS("HEAD meta-data", &h, 200);
	assert_int_equal(g.len, h.len);
	assert_memory_equal(g.body, h.body, g.len);
	resp_free(&g);
	resp_free(&h);
}

static void test_metadata_header(void **state)
{
	struct fx *f = *state;
	put_str(f->token, "tok");
	struct imds_app *a = start(f);
	static const struct {
		const char *name;
		const char *h[7];
		int status;
	} cases[] = {
		{"no header", {NULL}, 400},
		{"true", {"Metadata", "true", NULL}, 200},
		{"lower-case name", {"metadata", "true", NULL}, 200},
		{"upper-case name", {"METADATA", "true", NULL}, 200},
		{"True", {"Metadata", "True", NULL}, 400},
		{"TRUE", {"Metadata", "TRUE", NULL}, 400},
		{"1", {"Metadata", "1", NULL}, 400},
		{"yes", {"Metadata", "yes", NULL}, 400},
		{"empty", {"Metadata", "", NULL}, 400},
		{"trailing space", {"Metadata", "true ", NULL}, 400},
		{"leading space", {"Metadata", " true", NULL}, 400},
		{"list", {"Metadata", "true,true", NULL}, 400},
		{"two headers", {"Metadata", "true", "Metadata", "true", NULL}, 400},
		{"true then false", {"Metadata", "true", "metadata", "false", NULL}, 400},
		{"other name", {"Meta-Data", "true", NULL}, 400},
		{"GCE name", {"Metadata-Flavor", "Google", NULL}, 400},
	};
	static const char *const paths[] = {"/v1/token", "/v1/identity"};
	for (size_t p = 0; p < 2; p++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char name[96];
			snprintf(name, sizeof(name), "%s %s", paths[p], cases[i].name);
			struct resp r;
			call(a, "GET", paths[p], 0, cases[i].h, &r);
			if (cases[i].status == 400) {
				expect_error(name, &r, 400, "missing_header");
				EXPECT_BODY(name, &r,
					    "{\"error\":\"missing_header\",\"message\":\"Metadata: true "
					    "header is required\"}\n");
			} else {
				EXPECT_STATUS(name, &r, 200);
			}
			EXPECT_HEADER(name, &r, "Cache-Control: no-store");
			resp_free(&r);
		}
	}
	/* NoCloud and OpenStack paths need no header. */
	static const char *const open_paths[] = {"/v1/meta-data", "/v1/user-data", "/v1/vendor-data",
						 "/v1/network-config", "/healthz",
						 "/openstack/latest/meta_data.json"};
	for (size_t i = 0; i < sizeof(open_paths) / sizeof(open_paths[0]); i++) {
		struct resp r;
		call(a, "GET", open_paths[i], 0, NULL, &r);
		EXPECT_STATUS(open_paths[i], &r, 200);
		resp_free(&r);
	}
}

static void test_forwarded(void **state)
{
	struct fx *f = *state;
	put_str(f->token, "tok");
	struct imds_app *a = start(f);
	static const struct {
		const char *name;
		const char *h[7];
	} cases[] = {
		{"X-Forwarded-For", {"Metadata", "true", "X-Forwarded-For", "10.0.0.1", NULL}},
		{"x-forwarded-for", {"x-forwarded-for", "10.0.0.1", "Metadata", "true", NULL}},
		{"Forwarded", {"Metadata", "true", "Forwarded", "for=10.0.0.1", NULL}},
		{"FORWARDED", {"FORWARDED", "for=10.0.0.1", "Metadata", "true", NULL}},
		{"empty X-Forwarded-For", {"Metadata", "true", "X-Forwarded-For", "", NULL}},
		{"without Metadata", {"X-Forwarded-For", "10.0.0.1", NULL}},
	};
	static const char *const paths[] = {"/v1/token", "/v1/identity", "/v1/token?audience=x"};
	for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char name[96];
			snprintf(name, sizeof(name), "%s %s", paths[p], cases[i].name);
			struct resp r;
			call(a, "GET", paths[p], 0, cases[i].h, &r);
			expect_error(name, &r, 403, "forbidden");
			if (strstr(r.body, "tok\""))
				fail_msg("%s: token leaked", name);
			resp_free(&r);
		}
	}
	/* cloud-init through a proxy still gets its NoCloud data. */
	static const char *const xff[] = {"X-Forwarded-For", "10.0.0.1", NULL};
	struct resp r;
	call(a, "GET", "/v1/meta-data", 0, xff, &r);
	EXPECT_STATUS("meta-data via proxy", &r, 200);
	resp_free(&r);
}

static void test_rate_limit(void **state)
{
	struct fx *f = *state;
	setenv("IMDS_RATE_LIMIT", "3", 1);
	struct imds_app *a = start(f);
	/* The bucket was filled at creation (loop_clock_us()); from now on
	 * time is ours. */
	uint64_t t = loop_clock_us();
	for (int round = 0; round < 3; round++) {
		char name[64];
		for (int k = 0; k < 3; k++) {
			struct resp r;
			snprintf(name, sizeof(name), "round %d request %d", round, k);
			call(a, "GET", k == 1 ? "/v1/meta-data" : "/healthz", t, NULL, &r);
			EXPECT_STATUS(name, &r, 200);
			resp_free(&r);
		}
		struct resp r;
		snprintf(name, sizeof(name), "round %d: 4th request", round);
		call(a, "GET", "/v1/meta-data", t, NULL, &r);
		expect_error(name, &r, 429, "rate_limited");
		EXPECT_HEADER(name, &r, "Retry-After: 1");
		resp_free(&r);
		call(a, "GET", "/v1/identity", t, META, &r);
		expect_error(name, &r, 429, "rate_limited");
		resp_free(&r);
		/* A second later the burst is back, no more. */
		t += 1000000;
	}
	/* Off: any number at one instant. */
	setenv("IMDS_RATE_LIMIT", "0", 1);
	a = start(f);
	for (int k = 0; k < 1000; k++) {
		struct resp r;
		call(a, "GET", "/healthz", 0, NULL, &r);
		if (r.status != 200)
			fail_msg("rate 0: request %d got %d", k, r.status);
		resp_free(&r);
	}
}










static void test_merged_slashes(void **state)
{
	struct fx *f = *state;
	put_str(in_dir(f, "ud"), "#cloud-config\n");
	setenv("IMDS_USER_DATA_FILE", in_dir(f, "ud"), 1);
	struct imds_app *a = start(f);
	/* tiny-cloud asks for $seed/meta-data with a seed ending in '/' */
	static const char *const same[][2] = {
		{"/v1//meta-data", "/v1/meta-data"},
		{"//v1/meta-data", "/v1/meta-data"},
		{"/v1///user-data", "/v1/user-data"},
		{"//openstack//latest///meta_data.json", "/openstack/latest/meta_data.json"},
		{"/latest//meta-data//instance-id", "/latest/meta-data/instance-id"},
		{"//healthz", "/healthz"},
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		struct resp r1, r2;
		call(a, "GET", same[i][0], 0, NULL, &r1);
		call(a, "GET", same[i][1], 0, NULL, &r2);
		EXPECT_STATUS(same[i][0], &r1, 200);
		if (r1.len != r2.len || memcmp(r1.body, r2.body, r1.len) != 0)
			fail_msg("%s: \"%s\", not the answer of %s", same[i][0], r1.body, same[i][1]);
		resp_free(&r1);
		resp_free(&r2);
	}
	/* merged, a trailing slash stays: these are still unknown */
	static const char *const still[] = {"/v1/meta-data//", "/v1//meta-data/", "///"};
	for (size_t i = 0; i < sizeof(still) / sizeof(still[0]); i++) {
		struct resp r;
		call(a, "GET", still[i], 0, NULL, &r);
		if (strcmp(still[i], "///") == 0) /* "/" is EC2's version list */
			EXPECT_STATUS(still[i], &r, 200);
		else
			expect_error(still[i], &r, 404, "not_found");
		resp_free(&r);
	}
	/* the method rules follow the merged path too */
	struct resp r;
	call(a, "PUT", "//v1//session", 0, NULL, &r);
	expect_error("PUT //v1//session without a TTL", &r, 400, "bad_ttl");
	resp_free(&r);
	call(a, "POST", "/openstack//latest//password", 0, NULL, &r);
	expect_error("POST of an empty password, slashes merged", &r, 400, "password_empty");
	resp_free(&r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_healthz_and_unknown),
		T(test_methods),
		T(test_metadata_header),
		T(test_forwarded),
		T(test_rate_limit),
		T(test_merged_slashes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
