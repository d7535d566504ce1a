/* kube: what the guest gets of Kubernetes (kube.c): kube_open's checks
 * and its identity built once, and a token read on a hand-built call
 * (an audience longer than 500 bytes, a `token` entry that is no
 * audience); then the token and identity through the handler (missing,
 * empty, rotated, size-bounded, exp, audiences and their collisions,
 * escaping), moved here from test_imds.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "instance.h"
#include "kube.h"
#include "handler.h"

/* An instance with just what kube.c reads of it: the model's fields, no
 * configuration (in.cfg stays NULL: a layout reads only the model). */
struct kfx {
	struct instance in;
	struct kube k;
};

static void kfx_init(struct kfx *x, const char *token_path)
{
	memset(x, 0, sizeof(*x));
	x->in.vm_ns = "ns1";
	x->in.sa_name = "sa1";
	x->in.vm_name = "vm1";
	x->in.pod_name = "pod1";
	x->in.token_path = token_path;
	snprintf(x->in.iid, sizeof(x->in.iid), "ns1-vm1");
}

static void test_open(void **state)
{
	(void)state;
	struct kfx x;
	char err[200] = "";
	kfx_init(&x, "/var/run/secrets/tokens/token");
	assert_int_equal(kube_open(&x.k, &x.in, err, sizeof(err)), 0);
	assert_string_equal(x.k.token_dir, "/var/run/secrets/tokens");
	assert_non_null(x.k.identity);
	const char *want = "{\"namespace\":\"ns1\",\"serviceAccountName\":\"sa1\",\"vmName\":\"vm1\","
			   "\"podName\":\"pod1\",\"instanceId\":\"ns1-vm1\"}\n";
	assert_int_equal(x.k.identity->len, strlen(want));
	assert_memory_equal(x.k.identity->data, want, x.k.identity->len);
	/* Built once: later changes to the instance are not in it. */
	snprintf(x.in.iid, sizeof(x.in.iid), "other");
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	struct http_response res;
	memset(&res, 0, sizeof(res));
	struct call c = {.req = &rq, .res = &res, .self = &x.k};
	kube_identity(&c);
	assert_int_equal(res.status, 200);
	assert_ptr_equal(res.blob, x.k.identity);
	blob_unref(res.blob);
	kube_close(&x.k);
	assert_null(x.k.identity);
	kube_close(&x.k); /* twice: safe */

	/* A token folder longer than a path: refused, named. */
	static char longp[4200];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[4100] = '/';
	longp[4101] = 't';
	longp[4102] = '\0';
	kfx_init(&x, longp);
	assert_int_equal(kube_open(&x.k, &x.in, err, sizeof(err)), -ENAMETOOLONG);
	assert_string_equal(err, "IMDS_TOKEN_PATH: too long");
	kube_close(&x.k);
}

/* The token on a hand-built call, for the bounds the handler's walk does
 * not reach. */
static void test_token_bounds(void **state)
{
	struct fx *f = *state;
	put_str(f->token, "tok");
	struct kfx x;
	char err[200];
	kfx_init(&x, f->token);
	assert_int_equal(kube_open(&x.k, &x.in, err, sizeof(err)), 0);
	static char target[700];
	struct http_request rq;
	struct http_response res;
	struct call c;
	/* 500 bytes of audience are one; 501 are refused before any lookup. */
	for (int n = 500; n <= 501; n++) {
		int o = snprintf(target, sizeof(target), "audience=");
		memset(target + o, 'a', (size_t)n);
		target[o + n] = '\0';
		memset(&rq, 0, sizeof(rq));
		rq.query = (struct http_span){target, strlen(target)};
		memset(&res, 0, sizeof(res));
		c = (struct call){.req = &rq, .res = &res, .self = &x.k};
		kube_token(&c);
		if (n == 500 ? res.status != 404 : res.status != 400)
			fail_msg("audience of %d bytes: %d %s", n, res.status, res.body ? res.body : "");
	}
	/* The default token's own file and kubelet's ..data are no audience,
	 * nor is a plain file named as one. */
	put_str(in_dir(f, "vault"), "not a folder");
	static const char *const not_aud[] = {"audience=token", "audience=..data", "audience=vault"};
	for (size_t i = 0; i < 3; i++) {
		memset(&rq, 0, sizeof(rq));
		rq.query = (struct http_span){not_aud[i], strlen(not_aud[i])};
		memset(&res, 0, sizeof(res));
		c = (struct call){.req = &rq, .res = &res, .self = &x.k};
		kube_token(&c);
		if (res.status != 404 || !strstr(res.body, "unknown_audience"))
			fail_msg("%s: %d %s", not_aud[i], res.status, res.body ? res.body : "");
	}
	/* An audience folder: its token. */
	assert_int_equal(mkdir(in_dir(f, "aud1"), 0755), 0);
	put_str(in_dir(f, "aud1/token"), " t1\n");
	memset(&rq, 0, sizeof(rq));
	rq.query = (struct http_span){"audience=aud1", 13};
	memset(&res, 0, sizeof(res));
	c = (struct call){.req = &rq, .res = &res, .self = &x.k};
	kube_token(&c);
	assert_int_equal(res.status, 200);
	assert_int_equal(res.body_len, strlen("{\"token\":\"t1\"}\n"));
	assert_memory_equal(res.body, "{\"token\":\"t1\"}\n", res.body_len);
	kube_close(&x.k);
}

/* ---- through the handler --------------------------------------------------------------- */

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

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open),
		T(test_token_bounds),
		T(test_token_unavailable),
		T(test_token_json),
		T(test_token_audience),
		T(test_token_audience_collisions),
		T(test_identity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
