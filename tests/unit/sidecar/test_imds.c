/* imds: the handler itself (docs/sidecar.md): routes, methods and
 * headers, the token and identity, driven with hand-built requests
 * against files in a temporary directory (handler.h).  The answer helpers
 * and ETags: test_call.c; sessions: test_session.c; waiting for a
 * change: test_wait.c; each layout's own answers: test_nocloud.c,
 * test_openstack.c, test_ec2.c. */
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

/* ---- /v1/token ----------------------------------------------------------------------------- */

static void test_token_unavailable(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f); /* no token file yet */
	struct resp r;
	call(a, "GET", "/v1/token", 0, META, &r);
	expect_error("missing file", &r, 503, "token_unavailable");
	EXPECT_HEADER("missing file", &r, "Retry-After: 1");
	EXPECT_HEADER("missing file", &r, "Cache-Control: no-store");
	resp_free(&r);

	static const char *const empty[] = {"", "\n", " \t\r\n "};
	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		put_str(f->token, empty[i]);
		call(a, "GET", "/v1/token", 0, META, &r);
		expect_error("empty file", &r, 503, "token_unavailable");
		EXPECT_HEADER("empty file", &r, "Retry-After: 1");
		resp_free(&r);
	}
	/* Kubelet writes it: the next request has it (read every time). */
	put_str(f->token, "abc\n");
	call(a, "GET", "/v1/token", 0, META, &r);
	EXPECT_STATUS("after write", &r, 200);
	EXPECT_BODY("after write", &r, "{\"token\":\"abc\"}\n");
	resp_free(&r);
	/* A directory in its place. */
	assert_int_equal(unlink(f->token), 0);
	assert_int_equal(mkdir(f->token, 0755), 0);
	call(a, "GET", "/v1/token", 0, META, &r);
	expect_error("directory", &r, 503, "token_unavailable");
	resp_free(&r);
}

static void test_token_json(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f);
	static char jwt[4096], want[8192];
	static const struct {
		const char *name, *claims, *when; /* claims NULL: the raw token is `when` */
	} cases[] = {
		{"exp", "{\"exp\":1735689600,\"sub\":\"system:serviceaccount:default:sa1\"}",
		 "2025-01-01T00:00:00Z"},
		{"fractional exp", "{\"exp\":1700000000.9}", "2023-11-14T22:13:20Z"},
		{"no exp", "{\"sub\":\"x\",\"iat\":1}", NULL},
		{"exp out of range", "{\"exp\":253402300800}", NULL},
		{"negative exp", "{\"exp\":-5}", NULL},
		{"string exp", "{\"exp\":\"1735689600\"}", NULL},
		{"nested exp only", "{\"a\":{\"exp\":1735689600}}", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		make_jwt(jwt, sizeof(jwt), cases[i].claims);
		char file[4200];
		snprintf(file, sizeof(file), "\n  %s\r\n\n", jwt); /* trimmed on read */
		put_str(f->token, file);
		if (cases[i].when)
			snprintf(want, sizeof(want), "{\"token\":\"%s\",\"expirationTimestamp\":\"%s\"}\n",
				 jwt, cases[i].when);
		else
			snprintf(want, sizeof(want), "{\"token\":\"%s\"}\n", jwt);
		struct resp r;
		call(a, "GET", "/v1/token", 0, META, &r);
		EXPECT_STATUS(cases[i].name, &r, 200);
		EXPECT_CTYPE(cases[i].name, &r, "application/json");
		EXPECT_HEADER(cases[i].name, &r, "Cache-Control: no-store");
		EXPECT_BODY(cases[i].name, &r, want);
		if (!json_object_ok(&r))
			fail_msg("%s: not JSON", cases[i].name);
		resp_free(&r);
	}
	/* Not a JWT at all: served as it is, JSON-escaped, without a time. */
	put_str(f->token, "opaque \"quoted\" \\ token\x01");
	struct resp r;
	call(a, "GET", "/v1/token", 0, META, &r);
	EXPECT_STATUS("opaque", &r, 200);
	if (!json_object_ok(&r))
		fail_msg("opaque: not JSON: %s", r.body);
	const char *tok = json_str(&r, "token");
	if (!tok || strcmp(tok, "opaque \"quoted\" \\ token\x01") != 0)
		fail_msg("opaque: token %s", tok ? tok : "(none)");
	if (strstr(r.body, "expirationTimestamp"))
		fail_msg("opaque: has an expirationTimestamp");
	resp_free(&r);

	/* Rotation: the next request sees the new file. */
	put_str(f->token, "second");
	call(a, "GET", "/v1/token", 0, META, &r);
	EXPECT_BODY("rotated", &r, "{\"token\":\"second\"}\n");
	resp_free(&r);

	/* Size bound: 64 KiB is a token, one byte more is refused. */
	static char big[65538];
	memset(big, 'a', sizeof(big));
	put_file(f->token, big, 65536);
	call(a, "GET", "/v1/token", 0, META, &r);
	EXPECT_STATUS("64 KiB token", &r, 200);
	assert_int_equal(r.len, 65536 + strlen("{\"token\":\"\"}\n"));
	resp_free(&r);
	put_file(f->token, big, 65537);
	call(a, "GET", "/v1/token", 0, META, &r);
	expect_error("64 KiB + 1 token", &r, 500, "token_invalid");
	resp_free(&r);
}

static void test_token_audience(void **state)
{
	struct fx *f = *state;
	put_str(f->token, "default-token");
	assert_int_equal(mkdir(in_dir(f, "https%3A%2F%2Fvault.example.com"), 0755), 0);
	put_str(in_dir(f, "https%3A%2F%2Fvault.example.com/token"), "vault-url-token\n");
	assert_int_equal(mkdir(in_dir(f, "vault"), 0755), 0);
	put_str(in_dir(f, "vault/token"), "vault-token");
	assert_int_equal(mkdir(in_dir(f, "no-token-yet"), 0755), 0);
	struct imds_app *a = start(f);
	static const struct {
		const char *target;
		int status;
		const char *token_or_code;
	} cases[] = {
		{"/v1/token", 200, "default-token"},
		{"/v1/token?audience=https%3A%2F%2Fvault.example.com", 200, "vault-url-token"},
		{"/v1/token?audience=https://vault.example.com", 200, "vault-url-token"},
		{"/v1/token?audience=https%3a%2f%2fvault.example.com", 200, "vault-url-token"},
		{"/v1/token?audience=vault", 200, "vault-token"},
		{"/v1/token?x=1&audience=vault&y=2", 200, "vault-token"},
		{"/v1/token?audience=vault&audience=unknown", 200, "vault-token"},
		{"/v1/token?audience=", 200, "default-token"},
		{"/v1/token?audiences=vault", 200, "default-token"},
		{"/v1/token?aud=vault", 200, "default-token"},
		{"/v1/token?audience=unknown", 404, "unknown_audience"},
		{"/v1/token?audience=Vault", 404, "unknown_audience"},
		{"/v1/token?audience=https%3A%2F%2Fother.example.com", 404, "unknown_audience"},
		{"/v1/token?audience=..%2F..%2Fetc", 404, "unknown_audience"},
		{"/v1/token?audience=no-token-yet", 503, "token_unavailable"},
		{"/v1/token?audience=.", 400, "bad_audience"},
		{"/v1/token?audience=..", 400, "bad_audience"},
		{"/v1/token?audience=%2E%2E", 400, "bad_audience"},
		{"/v1/token?audience=a+b", 400, "bad_audience"},
		{"/v1/token?audience=a%20b", 400, "bad_audience"},
		{"/v1/token?audience=%zz", 400, "bad_audience"},
		{"/v1/token?audience=%4", 400, "bad_audience"},
		{"/v1/token?audience=caf%C3%A9", 400, "bad_audience"},
		{"/v1/token?audience=a%00b", 400, "bad_audience"},
		{"/v1/token?audience=a%0Ab", 400, "bad_audience"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct resp r;
		call(a, "GET", cases[i].target, 0, META, &r);
		if (cases[i].status == 200) {
			char want[128];
			snprintf(want, sizeof(want), "{\"token\":\"%s\"}\n", cases[i].token_or_code);
			EXPECT_STATUS(cases[i].target, &r, 200);
			EXPECT_BODY(cases[i].target, &r, want);
		} else {
			expect_error(cases[i].target, &r, cases[i].status, cases[i].token_or_code);
			if (strstr(r.body, "-token"))
				fail_msg("%s: a token leaked into an error", cases[i].target);
		}
		EXPECT_HEADER(cases[i].target, &r, "Cache-Control: no-store");
		resp_free(&r);
	}
	/* Too long to be an audience (the decoded value is capped). */
	static char target[2200];
	int n = snprintf(target, sizeof(target), "/v1/token?audience=");
	memset(target + n, 'a', 2000);
	target[n + 2000] = '\0';
	struct resp r;
	call(a, "GET", target, 0, META, &r);
	expect_error("2000-byte audience", &r, 400, "bad_audience");
	resp_free(&r);
}

/* KNOWN PRODUCT BUG (reported, left failing on purpose): do_token takes any
 * existing entry <token dir>/<audience dir> as "this audience is
 * configured" (access(F_OK)), but the token directory is a projected volume
 * written by kubelet's atomic writer, which also holds the default token
 * file and its "..data" / "..<timestamp>" entries:
 *   ?audience=token   -> <dir>/token exists (the default token FILE), so
 *                        <dir>/token/token is read: ENOTDIR -> 503 with
 *                        Retry-After: 1, and a client retries for ever;
 *   ?audience=..data  -> <dir>/..data/token is the DEFAULT token, served as
 *                        the token for audience "..data" (200).
 * An audience with no volume of its own must get 404 unknown_audience. */
static void test_token_audience_collisions(void **state)
{
	struct fx *f = *state;
	/* The layout kubelet's AtomicWriter leaves in a projected volume. */
	const char *ts = in_dir(f, "..2025_01_01_00_00_00.000000001");
	assert_int_equal(mkdir(ts, 0755), 0);
	put_str(in_dir(f, "..2025_01_01_00_00_00.000000001/token"), "default-token");
	assert_int_equal(symlink("..2025_01_01_00_00_00.000000001", in_dir(f, "..data")), 0);
	assert_int_equal(symlink("..data/token", f->token), 0);
	struct imds_app *a = start(f);
	struct resp r;
	call(a, "GET", "/v1/token", 0, META, &r);
	EXPECT_BODY("default token through the symlinks", &r, "{\"token\":\"default-token\"}\n");
	resp_free(&r);
	static const char *const targets[] = {"/v1/token?audience=token",
					      "/v1/token?audience=..data",
					      "/v1/token?audience=..2025_01_01_00_00_00.000000001"};
	/* Every case is tried; the failure lists them all. */
	char msg[600] = "";
	size_t ml = 0;
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		call(a, "GET", targets[i], 0, META, &r);
		if (r.status != 404)
			ml += (size_t)snprintf(msg + ml, sizeof(msg) - ml, "%s%s: %d %.*s", ml ? "; " : "",
					       targets[i] + 19, r.status, (int)strcspn(r.body, "\n"),
					       r.body);
		resp_free(&r);
		assert_true(ml < sizeof(msg));
	}
	if (ml)
		fail_msg("want 404 unknown_audience for these audiences, got: %s", msg);
}

/* ---- identity and NoCloud ------------------------------------------------------------------ */

static void test_identity(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f);
	struct resp r;
	call(a, "GET", "/v1/identity", 0, META, &r);
	EXPECT_STATUS("identity", &r, 200);
	EXPECT_CTYPE("identity", &r, "application/json");
	EXPECT_HEADER("identity", &r, "Cache-Control: no-store");
	EXPECT_BODY("identity", &r,
		    "{\"namespace\":\"default\",\"serviceAccountName\":\"sa1\",\"vmName\":\"vm1\","
		    "\"podName\":\"virt-launcher-vm1-abcde\",\"instanceId\":\"default-vm1\"}\n");
	resp_free(&r);

	/* Values that need escaping stay valid JSON and read back exactly. */
	setenv("IMDS_SA_NAME", "sa\"1\\x", 1);
	setenv("IMDS_INSTANCE_ID", "i-\xc3\xa9/\"", 1);
	unsetenv("IMDS_POD_NAME");
	a = start(f);
	call(a, "GET", "/v1/identity", 0, META, &r);
	EXPECT_STATUS("escaped identity", &r, 200);
	if (!json_object_ok(&r))
		fail_msg("escaped identity: not JSON: %s", r.body);
	const char *v = json_str(&r, "serviceAccountName");
	assert_non_null(v);
	assert_string_equal(v, "sa\"1\\x");
	v = json_str(&r, "instanceId");
	assert_non_null(v);
	assert_string_equal(v, "i-\xc3\xa9/\"");
	v = json_str(&r, "podName");
	assert_non_null(v);
	assert_string_equal(v, "");
	resp_free(&r);
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
		T(test_token_unavailable),
		T(test_token_json),
		T(test_token_audience),
		T(test_token_audience_collisions),
		T(test_identity),
		T(test_merged_slashes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
