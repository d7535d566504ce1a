/* admission: the envelope (src/webhook/admission.h) over fixtures that
 * look like what KubeVirt 1.8/1.9 and the API server send
 * (tests/fixtures/webhook, wh_fixture.h): every fixture answered and
 * idempotent, malformed bodies (every truncated prefix, deep nesting,
 * wrong types, 3 MiB + 1) answered with a status and a reason, the
 * configuration check.  What a pod, a VM's serial and a VMI's interfaces
 * get is in test_wh_pod.c, test_wh_serial.c and test_wh_vmnet.c. */
#include "wh_fixture.h"

/* ---- every fixture ------------------------------------------------------ */

static const char *const all_fixtures[] = {
	"pod-kv18", "pod-kv19-imagevolume", "pod-guaranteed", "pod-guaranteed-kv19", "pod-secret",
	"pod-configmap", "pod-minimal", "pod-no-annotations", "pod-label-vmname", "hostile-pod-last-applied-only",
	"pod-not-launcher", "pod-update", "pod-bad-expiration", "hostile-pod-no-vm-name", "pod-userdata-200k",
	"vm-no-firmware", "vm-serial", "vm-nocloud-serial", "vm-own-annotation", "vm-last-applied-only",
	"vm-update", "vmi-standalone", "vmi-serial", "vmi-update",
};

static void test_all_fixtures_idempotent(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(all_fixtures) / sizeof(all_fixtures[0]); i++) {
		for (int mode = 0; mode < 2; mode++) {
			const struct admission_config *cfg = mode ? &PLAIN : &NATIVE;
			struct json_object *review = fixture(all_fixtures[i]);
			struct answer a;
			run_review(cfg, review, &a);
			assert_int_equal(a.res.http_status, 200);
			/* The raw fixture text gives the same answer as json-c's re-serialisation. */
			size_t n;
			char *raw = fixture_text(all_fixtures[i], &n);
			struct admission_result r2;
			admission_handle(&adm, cfg, raw, n, &r2);
			assert_int_equal(r2.outcome, a.res.outcome);
			assert_int_equal(r2.body_len, a.res.body_len);
			assert_memory_equal(r2.body, a.res.body, r2.body_len);
			admission_result_free(&r2);
			free(raw);
			if (a.res.outcome == ADM_PATCHED)
				assert_second_pass_clean(cfg, review, a.object);
			answer_free(&a);
			json_object_put(review);
		}
	}
}

/* ---- malformed input ---------------------------------------------------- */

static void expect_status(const char *body, size_t len, int status, const char *what)
{
	struct admission_result res;
	admission_handle(&adm, &NATIVE, body, len, &res);
	if (res.http_status != status)
		fail_msg("%s: HTTP %d, want %d (%s)", what, res.http_status, status, res.reason);
	assert_non_null(res.body);
	struct json_object *o = parse_body(&res); /* every answer, even an error, is JSON */
	if (status != 200) {
		assert_int_equal(res.outcome, ADM_INVALID);
		assert_non_null(sat(at(o, "error", NULL)));
		assert_non_null(sat(at(o, "message", NULL)));
		assert_true(res.reason[0] != '\0');
	}
	json_object_put(o);
	admission_result_free(&res);
}

#define S(lit) lit, sizeof(lit) - 1

static void test_malformed_table(void **state)
{
	(void)state;
	static const struct {
		const char *body;
		size_t len;
		const char *what;
	} bad[] = {
		{S(""), "empty"},
		{S(" "), "whitespace"},
		{S("null"), "null"},
		{S("[]"), "array"},
		{S("\"AdmissionReview\""), "string"},
		{S("42"), "number"},
		{S("{}"), "empty object"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{}}"), "v1beta1"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Review\",\"request\":{}}"), "wrong kind"},
		{S("{\"apiVersion\":1,\"kind\":\"AdmissionReview\"}"), "apiVersion number"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}"), "no request"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":null}"), "request null"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":[]}"), "request array"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}"), "no uid"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":42}}"), "uid number"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"\"}}"), "uid empty"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}"), "no kind"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":\"Pod\"}}"), "kind string"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"},\"operation\":\"CREATE\",\"object\":{}}}"), "foreign kind"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"kubevirt.io\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"object\":{}}}"), "Pod in kubevirt.io"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":7},\"operation\":\"CREATE\"}}"), "kind.kind number"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"PATCH\"}}"), "bad operation"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"}}}"), "no operation"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\"}}"), "pod CREATE, no object"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"object\":\"pod\"}}"), "object string"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"kubevirt.io\",\"version\":\"v1\",\"kind\":\"VirtualMachine\"},\"operation\":\"UPDATE\",\"object\":[]}}"), "vm object array"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}} x"), "trailing garbage"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}{}"), "two objects"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}\0"), "trailing NUL"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\0\",\"kind\":\"AdmissionReview\"}"), "NUL inside"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"\xff\"}}"), "invalid UTF-8"},
		{S("{'apiVersion':'admission.k8s.io/v1'}"), "single quotes"},
		{S("{\"a\":1,}"), "trailing comma"},
		{S("{\"a\":NaN}"), "NaN"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_status(bad[i].body, bad[i].len, 400, bad[i].what);

	/* Wrong types inside an opted-in pod, each a 400 naming the field. */
	static const struct {
		const char *where, *key, *json;
	} wrong[] = {
		{"metadata", "annotations", "[]"},
		{"metadata", "labels", "\"kubevirt.io=virt-launcher\""},
		{"", "metadata", "7"},
		{"", "spec", "[]"},
		{"spec", "containers", "{}"},
		{"spec", "initContainers", "\"x\""},
		{"spec", "volumes", "{}"},
		{"spec", "containers", "[7]"},
		{"spec", "containers", "[{\"name\":7}]"},
		{"spec", "resources", "[]"},
		{"annotations", "imds.kubevirt.io/enabled", "true"},
		{"annotations", "imds.kubevirt.io/token-expiration", "3600"},
		{"annotations", "imds.kubevirt.io/user-data", "{}"},
		{"labels", "kubevirt.io", "null"}, /* null: absent, so skipped, 200 */
	};
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		struct json_object *review = fixture("pod-kv18");
		struct json_object *obj = at(review, "request", "object", NULL), *parent = obj;
		if (!strcmp(wrong[i].where, "metadata"))
			parent = at(obj, "metadata", NULL);
		else if (!strcmp(wrong[i].where, "spec"))
			parent = at(obj, "spec", NULL);
		else if (!strcmp(wrong[i].where, "annotations"))
			parent = at(obj, "metadata", "annotations", NULL);
		else if (!strcmp(wrong[i].where, "labels"))
			parent = at(obj, "metadata", "labels", NULL);
		set(parent, wrong[i].key, json_tokener_parse(wrong[i].json));
		size_t n;
		const char *s = json_object_to_json_string_length(review, JSON_C_TO_STRING_PLAIN, &n);
		char what[128];
		snprintf(what, sizeof(what), "%s.%s = %s", wrong[i].where, wrong[i].key, wrong[i].json);
		expect_status(s, n, strcmp(wrong[i].json, "null") ? 400 : 200, what);
		json_object_put(review);
	}
	/* Container resources of the wrong type. */
	struct json_object *review = fixture("pod-kv18");
	set(at(review, "request", "object", "spec", "containers", "0", "resources", NULL), "limits",
	    json_tokener_parse("[\"cpu\"]"));
	size_t n;
	const char *s = json_object_to_json_string_length(review, JSON_C_TO_STRING_PLAIN, &n);
	expect_status(s, n, 400, "resources.limits array");
	json_object_put(review);
}

static void test_malformed_sizes(void **state)
{
	(void)state;
	/* Nesting 10000 deep: the reader's depth cap answers. */
	size_t depth = 10000;
	char *deep = malloc(2 * depth);
	memset(deep, '[', depth);
	memset(deep + depth, ']', depth);
	expect_status(deep, 2 * depth, 400, "nesting 10000 deep");
	/* Objects too: 65 levels inside a review. */
	struct sbuf b;
	char *buf = malloc(4096);
	b = (struct sbuf)SBUF_INIT(buf, 4096);
	sbuf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"x\":");
	for (int i = 0; i < 70; i++)
		sbuf_puts(&b, "{\"a\":");
	sbuf_puts(&b, "1");
	for (int i = 0; i < 70; i++)
		sbuf_putc(&b, '}');
	sbuf_puts(&b, "}}");
	assert_false(b.overflow);
	expect_status(buf, b.len, 400, "objects 72 deep");
	free(buf);
	free(deep);

	/* 3 MiB is answered; 3 MiB + 1 is 413, whatever it holds. */
	size_t n;
	char *fx = fixture_text("pod-kv18", &n);
	while (n && (fx[n - 1] == '\n' || fx[n - 1] == ' '))
		n--;
	char *big = malloc(ADMISSION_MAX_BODY + 1);
	memcpy(big, fx, n);
	memset(big + n, ' ', ADMISSION_MAX_BODY + 1 - n);
	expect_status(big, ADMISSION_MAX_BODY, 200, "3 MiB of review and spaces");
	expect_status(big, ADMISSION_MAX_BODY + 1, 413, "3 MiB + 1");
	memset(big, 'x', ADMISSION_MAX_BODY + 1);
	expect_status(big, ADMISSION_MAX_BODY + 1, 413, "3 MiB + 1 of junk");
	/* A flood of tiny values: 413 at the node cap. */
	big[0] = '[';
	size_t o = 1;
	for (size_t i = 0; i < ADMISSION_MAX_VALUES + 10; i++) {
		big[o++] = '0';
		big[o++] = ',';
	}
	big[o - 1] = ']';
	expect_status(big, o, 413, "too many values");
	/* Commas inside strings are not values. */
	o = 0;
	const char *head = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"x\":\"";
	memcpy(big, head, strlen(head));
	o = strlen(head);
	memset(big + o, ',', 2 * ADMISSION_MAX_VALUES);
	o += 2 * ADMISSION_MAX_VALUES;
	memcpy(big + o, "\"}", 2);
	o += 2;
	expect_status(big, o, 400, "commas in a string (no request)");
	free(big);
	free(fx);
}

/* The reader's string scan (UTF-8 checked, printable ASCII sixteen
 * bytes at a time) and its node cap, which no string content counts to. */
static void test_prepasses(void **state)
{
	(void)state;
	static const char head[] = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"x\":\"";
	char buf[256];
	struct admission_result res;
	/* A bad byte at every offset around the 8-byte steps is found, and
	 * the message names where. */
	for (size_t pad = 0; pad < 20; pad++) {
		static const char *const bad[] = {"\xff", "\xc3\x28", "\xe0\x80\x80", "\xed\xa0\x80",
						  "\xf4\x90\x80\x80", "\xc0\xaf", "\xe2\x82"};
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			int n = snprintf(buf, sizeof(buf), "%s%.*s%s\"}", head, (int)pad,
					 "aaaaaaaaaaaaaaaaaaaaaaaa", bad[k]);
			admission_handle(&adm, &NATIVE, buf, (size_t)n, &res);
			char want[64];
			snprintf(want, sizeof(want), "invalid UTF-8 at byte %zu", strlen(head) + pad);
			if (res.http_status != 400 || !strstr(res.body, want))
				fail_msg("pad %zu bad %zu: HTTP %d %s (want %s)", pad, k, res.http_status,
					 res.body, want);
			admission_result_free(&res);
		}
		/* Valid multi-byte text at the same offsets passes the check
		 * (and fails later only for having no request). */
		int n = snprintf(buf, sizeof(buf), "%s%.*s\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
				 head, (int)pad, "aaaaaaaaaaaaaaaaaaaaaaaa");
		admission_handle(&adm, &NATIVE, buf, (size_t)n, &res);
		assert_int_equal(res.http_status, 400);
		assert_null(strstr(res.body, "UTF-8"));
		admission_result_free(&res);
	}
	/* An escaped quote does not end a string: the commas after it are
	 * still inside, so this is no flood of values. */
	size_t cap = 4 * ADMISSION_MAX_VALUES + 256, o = 0;
	char *big = malloc(cap);
	assert_non_null(big);
	memcpy(big, head, strlen(head));
	o = strlen(head);
	memcpy(big + o, "\\\"", 2);
	o += 2;
	memset(big + o, ',', 2 * ADMISSION_MAX_VALUES);
	o += 2 * ADMISSION_MAX_VALUES;
	memcpy(big + o, "\"}", 2);
	o += 2;
	expect_status(big, o, 400, "escaped quote, commas still in the string");
	/* An escaped backslash does not escape the quote after it: the
	 * values that follow are counted (413 before any parse). */
	o = strlen(head);
	memcpy(big + o, "\\\\\",\"y\":[", 9);
	o += 9;
	for (size_t i = 0; i < ADMISSION_MAX_VALUES + 10; i++) {
		big[o++] = '0';
		big[o++] = ',';
	}
	memcpy(big + o - 1, "]}", 2);
	o += 1;
	expect_status(big, o, 413, "escaped backslash, then a flood of values");
	free(big);
}

static void test_truncated_prefixes(void **state)
{
	(void)state;
	static const char *const names[] = {"pod-kv18", "vm-serial", "vmi-standalone", "pod-minimal"};
	for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
		size_t n;
		char *s = fixture_text(names[f], &n);
		size_t full = n;
		while (full && (s[full - 1] == '\n' || s[full - 1] == ' '))
			full--;
		for (size_t len = 0; len < n; len++) {
			/* Exactly sized copies, so ASan sees any over-read. */
			char *p = malloc(len ? len : 1);
			memcpy(p, s, len);
			struct admission_result res;
			admission_handle(&adm, &NATIVE, p, len, &res);
			int want = len < full ? 400 : 200;
			if (res.http_status != want)
				fail_msg("%s: prefix of %zu bytes: HTTP %d, want %d", names[f], len, res.http_status, want);
			admission_result_free(&res);
			free(p);
		}
		free(s);
	}
}

static void test_config_check(void **state)
{
	(void)state;
	char err[256];
	struct admission_config c = NATIVE;
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), 0);
	c.cpu = "20m";
	c.memory = "32Mi";
	c.memory_limit = "32Mi";
	c.vendor_data = "#cloud-config\n# ✓\n";
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), 0);
	c.default_eviction = "LiveMigrateIfPossible";
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), 0);
	c.default_eviction = "liveMigrate"; /* KubeVirt's values are exact */
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "default eviction strategy: 'liveMigrate'"));
	c.default_eviction = NULL;
	static const struct {
		const char *image, *cpu, *memory, *limit, *vendor, *msg;
	} bad[] = {
		{NULL, NULL, NULL, NULL, NULL, "image"},
		{"", NULL, NULL, NULL, NULL, "image"},
		{"img with space", NULL, NULL, NULL, NULL, "image"},
		{"img", "ten", NULL, NULL, NULL, "cpu"},
		{"img", "0", NULL, NULL, NULL, "cpu"},
		{"img", NULL, "16Qi", NULL, NULL, "memory"},
		{"img", NULL, "64Mi", NULL, NULL, "memory"}, /* above the 32Mi default limit */
		{"img", NULL, NULL, "8Mi", NULL, "memory"},
		{"img", NULL, NULL, NULL, "bad \xc3\x28 utf-8", "vendor-data"},
		{"img", NULL, NULL, NULL, "surrogate \xed\xa0\x80", "vendor-data"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct admission_config b = {.imds_image = bad[i].image, .native_sidecar = 1, .cpu = bad[i].cpu,
					     .memory = bad[i].memory, .memory_limit = bad[i].limit,
					     .vendor_data = bad[i].vendor};
		err[0] = '\0';
		assert_int_equal(admission_config_check(&b, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].msg))
			fail_msg("case %zu: '%s' does not name %s", i, err, bad[i].msg);
	}
	char *huge = malloc(200 * 1024);
	memset(huge, 'v', 200 * 1024 - 1);
	huge[200 * 1024 - 1] = '\0';
	c.vendor_data = huge;
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), -EINVAL);
	free(huge);
	/* The configured resources are what the sidecar gets. */
	c = NATIVE;
	c.cpu = "25m";
	c.memory = "20Mi";
	c.memory_limit = "40Mi";
	struct answer a;
	struct json_object *review = fixture("pod-kv18");
	run_review(&c, review, &a);
	struct json_object *sc = sidecar_of(a.object, NULL, NULL);
	assert_string_equal(sat(at(sc, "resources", "requests", "cpu", NULL)), "25m");
	assert_string_equal(sat(at(sc, "resources", "requests", "memory", NULL)), "20Mi");
	assert_string_equal(sat(at(sc, "resources", "limits", "memory", NULL)), "40Mi");
	answer_free(&a);
	json_object_put(review);
	assert_string_equal(admission_kind_name(ADM_KIND_VMI), "vmi");
	assert_string_equal(admission_outcome_name(ADM_DENIED), "denied");
	admission_result_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_fixtures_idempotent),
		cmocka_unit_test(test_malformed_table),
		cmocka_unit_test(test_malformed_sizes),
		cmocka_unit_test(test_prepasses),
		cmocka_unit_test(test_truncated_prefixes),
		cmocka_unit_test(test_config_check),
	};
	int failed = cmocka_run_group_tests_name("webhook admission", tests, NULL, NULL);
	admission_cleanup(&adm);
	return failed;
}
