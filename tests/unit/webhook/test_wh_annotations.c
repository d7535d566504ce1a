/* The annotation checks a pod and a VM or VMI share (src/webhook/
 * annotations.h), on a review's annotations directly: each mistake denied
 * with a message naming the annotation, a wrong JSON type a malformed
 * review naming where.key; the VM's own annotations that reach no pod
 * warned about; a VMI's evictionStrategy recorded for the sidecar. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "annotations.h"
#include "wh_review.h"

#define WHERE "request.object.metadata.annotations"

/* {"a":{<members>}}: anns is node "a". */
static char *doc(const char *members)
{
	char *s = NULL;
	assert_true(asprintf(&s, "{\"a\":{%s}}", members) > 0);
	return s;
}

static void check(const char *members, int err, const char *msg)
{
	char *text = doc(members);
	struct rvfx f;
	rvfx_open(&f, NULL, text);
	ann_check_data(&f.a, rvfx_at(&f, "a", NULL), WHERE);
	if (err)
		rvfx_failed(&f, err, msg);
	else
		rvfx_ok(&f);
	/* Checks only: nothing is patched. */
	assert_int_equal(patch_count(f.a.patch), 0);
	rvfx_close(&f);
	free(text);
}

static void test_check_data_ok(void **state)
{
	(void)state;
	check("", 0, NULL);
	check("\"imds.kubevirt.io/serial-form\":\"nocloud\",\"imds.kubevirt.io/ip-family\":\"IPv4\","
	      "\"imds.kubevirt.io/dmi-chassis\":\"false\"",
	      0, NULL);
	check("\"imds.kubevirt.io/serial-form\":\"nocloud-net\",\"imds.kubevirt.io/ip-family\":\"IPv6\","
	      "\"imds.kubevirt.io/dmi-chassis\":\"true\"",
	      0, NULL);
	check("\"imds.kubevirt.io/ssh-keys-secret\":\"vm1-keys\",\"imds.kubevirt.io/password-key\":\"pass.word_1\"", 0,
	      NULL);
	check("\"imds.kubevirt.io/meta-data\":\"{\\\"role\\\":\\\"db\\\",\\\"zone\\\":\\\"\\\\u00e9\\\"}\"", 0, NULL);
	check("\"imds.kubevirt.io/meta-data\":\"{}\"", 0, NULL);
	/* Other annotations are not this module's. */
	check("\"example.com/serial-form\":\"x\",\"kubevirt.io/ip-family\":\"y\"", 0, NULL);
	/* null is absent (Go's encoder). */
	check("\"imds.kubevirt.io/serial-form\":null", 0, NULL);
}

/* Each mistake: denied, the message names the annotation (and the value
 * where it is a setting, never meta-data's values). */
static void test_check_data_denied(void **state)
{
	(void)state;
	static const struct {
		const char *members, *msg;
	} bad[] = {
		{"\"imds.kubevirt.io/serial-form\":\"NoCloud\"",
		 "imds.kubevirt.io/serial-form: want nocloud or nocloud-net, got 'NoCloud'"},
		{"\"imds.kubevirt.io/serial-form\":\"\"", "imds.kubevirt.io/serial-form: want nocloud or nocloud-net, got ''"},
		{"\"imds.kubevirt.io/ip-family\":\"ipv6\"", "imds.kubevirt.io/ip-family: want IPv4 or IPv6, got 'ipv6'"},
		{"\"imds.kubevirt.io/ip-family\":\"dual\"", "imds.kubevirt.io/ip-family: want IPv4 or IPv6"},
		{"\"imds.kubevirt.io/dmi-chassis\":\"yes\"", "imds.kubevirt.io/dmi-chassis: want true or false, got 'yes'"},
		{"\"imds.kubevirt.io/password-key\":\"pw\"", "imds.kubevirt.io/password-key: 'pw' must be a key of the Secret "
							    "imds.kubevirt.io/ssh-keys-secret names"},
		{"\"imds.kubevirt.io/ssh-keys-secret\":\"k\",\"imds.kubevirt.io/password-key\":\"a/b\"",
		 "imds.kubevirt.io/password-key: 'a/b'"},
		{"\"imds.kubevirt.io/ssh-keys-secret\":\"k\",\"imds.kubevirt.io/password-key\":\"..\"",
		 "imds.kubevirt.io/password-key: '..'"},
		{"\"imds.kubevirt.io/ssh-keys-secret\":\"Keys_1\"",
		 "imds.kubevirt.io/ssh-keys-secret: 'Keys_1' is not a Secret name"},
		{"\"imds.kubevirt.io/meta-data\":\"[1]\"", "imds.kubevirt.io/meta-data: want a JSON object of strings"},
		{"\"imds.kubevirt.io/meta-data\":\"{\\\"a\\\":1}\"", "imds.kubevirt.io/meta-data: the value of 'a' is not a string"},
		{"\"imds.kubevirt.io/meta-data\":\"{\\\"a\\\":{\\\"b\\\":\\\"c\\\"}}\"",
		 "imds.kubevirt.io/meta-data: the value of 'a' is not a string"},
		{"\"imds.kubevirt.io/meta-data\":\"{\\\"a\\\":{\\\"b\\\":{}}}\"",
		 "imds.kubevirt.io/meta-data: not JSON"}, /* past depth 2, refused by the parse */
		{"\"imds.kubevirt.io/meta-data\":\"{\\\"a\\\":\\\"x\\\",}\"", "imds.kubevirt.io/meta-data: not JSON"},
		{"\"imds.kubevirt.io/meta-data\":\"{\\\"hostname\\\":\\\"x\\\"}\"",
		 "imds.kubevirt.io/meta-data: hostname is set by the sidecar itself"},
		{"\"imds.kubevirt.io/meta-data\":\"{\\\"instance-id\\\":\\\"x\\\"}\"", "instance-id is set by the sidecar"},
		{"\"imds.kubevirt.io/meta-data\":\"{\\\"public-keys\\\":\\\"x\\\"}\"", "public-keys is set by the sidecar"},
		{"\"imds.kubevirt.io/meta-data\":\"{\\\"a\\\":\\\"x\\\",\\\"b\\\":\\\"y\\\",\\\"a\\\":\\\"z\\\"}\"",
		 "imds.kubevirt.io/meta-data: 'a' appears twice"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check(bad[i].members, RV_DENY, bad[i].msg);
	/* An annotation that is not a string: a malformed review, naming it. */
	check("\"imds.kubevirt.io/serial-form\":7", RV_BAD, WHERE ".imds.kubevirt.io/serial-form: must be a string");
	check("\"imds.kubevirt.io/meta-data\":{}", RV_BAD, WHERE ".imds.kubevirt.io/meta-data: must be a string");
}

/* META_DATA_MAX_KEYS keys pass; one more is denied, counted. */
static void test_meta_data_keys_cap(void **state)
{
	(void)state;
	for (int n = META_DATA_MAX_KEYS; n <= META_DATA_MAX_KEYS + 1; n++) {
		size_t cap = (size_t)n * 32 + 64, len = 0;
		char *m = malloc(cap);
		len += (size_t)snprintf(m + len, cap - len, "\"imds.kubevirt.io/meta-data\":\"{");
		for (int k = 0; k < n; k++)
			len += (size_t)snprintf(m + len, cap - len, "%s\\\"k%d\\\":\\\"v\\\"", k ? "," : "", k);
		snprintf(m + len, cap - len, "}\"");
		if (n == META_DATA_MAX_KEYS)
			check(m, 0, NULL);
		else
			check(m, RV_DENY, "imds.kubevirt.io/meta-data: more than 256 keys");
		free(m);
	}
}

/* A VM's own imds annotations missing on its template: one warning
 * naming them; on the template too, none; others ignored. */
static void test_warn_vm_own(void **state)
{
	(void)state;
	static const struct {
		const char *own, *tmpl; /* members; tmpl NULL: no template annotations */
		const char *want;       /* NULL: no warning */
	} cases[] = {
		{"\"imds.kubevirt.io/enabled\":\"true\"", NULL,
		 "imds.kubevirt.io: imds.kubevirt.io/enabled is on the VirtualMachine's own metadata; KubeVirt copies "
		 "only spec.template.metadata.annotations to the VMI and its pod: move it there"},
		{"\"imds.kubevirt.io/enabled\":\"true\",\"imds.kubevirt.io/user-data\":\"x\"",
		 "\"imds.kubevirt.io/enabled\":\"true\"",
		 "imds.kubevirt.io: imds.kubevirt.io/user-data is on the VirtualMachine's own metadata"},
		{"\"imds.kubevirt.io/enabled\":\"true\",\"imds.kubevirt.io/hop-limit\":\"2\"", "",
		 "imds.kubevirt.io: imds.kubevirt.io/enabled, imds.kubevirt.io/hop-limit are on the VirtualMachine's own "
		 "metadata; KubeVirt copies only spec.template.metadata.annotations to the VMI and its pod: move them there"},
		{"\"imds.kubevirt.io/enabled\":\"true\"", "\"imds.kubevirt.io/enabled\":\"false\"", NULL},
		{"\"kubevirt.io/latest-observed-api-version\":\"v1\",\"imds.kubevirt.io\":\"x\",\"imds.kubevirt.io/\":\"y\"",
		 NULL, NULL},
		{"", NULL, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = NULL;
		if (cases[i].tmpl)
			assert_true(asprintf(&text, "{\"own\":{%s},\"t\":{%s}}", cases[i].own, cases[i].tmpl) > 0);
		else
			assert_true(asprintf(&text, "{\"own\":{%s}}", cases[i].own) > 0);
		struct rvfx f;
		rvfx_open(&f, NULL, text);
		ann_warn_vm_own(&f.a, rvfx_at(&f, "own", NULL), rvfx_at(&f, "t", NULL));
		rvfx_ok(&f);
		if (!cases[i].want) {
			if (f.a.nwarn)
				fail_msg("case %zu: warned '%s'", i, f.a.warn[0]);
		} else {
			assert_int_equal(f.a.nwarn, 1);
			if (strncmp(f.a.warn[0], cases[i].want, strlen(cases[i].want)) != 0)
				fail_msg("case %zu: '%s'", i, f.a.warn[0]);
		}
		rvfx_close(&f);
		free(text);
	}
}

/* Many names: at most 100 bytes of them, the rest counted; non-printable
 * bytes of a name shown as '?'; one warning under RV_WARNING_MAX. */
static void test_warn_vm_own_many(void **state)
{
	(void)state;
	char members[2048];
	size_t len = 0;
	for (int k = 0; k < 12; k++)
		len += (size_t)snprintf(members + len, sizeof(members) - len, "%s\"imds.kubevirt.io/k%02d\":\"v\"",
					k ? "," : "", k);
	snprintf(members + len, sizeof(members) - len, ",\"imds.kubevirt.io/\\u0001x\":\"v\"");
	char *text = NULL;
	assert_true(asprintf(&text, "{\"own\":{%s}}", members) > 0);
	struct rvfx f;
	rvfx_open(&f, NULL, text);
	ann_warn_vm_own(&f.a, rvfx_at(&f, "own", NULL), JV_NONE);
	rvfx_ok(&f);
	assert_int_equal(f.a.nwarn, 1);
	/* "imds.kubevirt.io/kNN" is 20 bytes, ", " between: four fit in 100 */
	assert_non_null(strstr(f.a.warn[0], "imds.kubevirt.io/k00, imds.kubevirt.io/k01, imds.kubevirt.io/k02, "
					     "imds.kubevirt.io/k03 and 9 more are on"));
	assert_null(strstr(f.a.warn[0], "k04"));
	assert_true(strlen(f.a.warn[0]) < RV_WARNING_MAX - 1);
	rvfx_close(&f);
	free(text);
}

static void test_eviction_known(void **state)
{
	(void)state;
	static const char *const yes[] = {"LiveMigrate", "LiveMigrateIfPossible", "External", "None"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(ann_eviction_known(yes[i]));
	static const char *const no[] = {"", "liveMigrate", "LiveMigrate ", "none", "Sometimes", "LiveMigrateIf"};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (ann_eviction_known(no[i]))
			fail_msg("'%s' taken", no[i]);
}

/* A VMI's spec.evictionStrategy recorded for the sidecar (issue 31): the
 * table test_wh_admission.c ran through whole fixtures, here on the
 * module's entry point, with the exact patch. */
static void test_record_eviction(void **state)
{
	(void)state;
	static const char path[] = "/metadata/annotations/imds.kubevirt.io~1eviction-strategy";
	static const struct {
		const char *name, *strategy, *old; /* NULL: absent */
		const char *op, *want;            /* op NULL: no operation on the annotation */
		const char *def;                  /* --default-eviction-strategy, NULL: none */
	} cases[] = {
		{"LiveMigrate recorded", "LiveMigrate", NULL, "add", "LiveMigrate", NULL},
		{"LiveMigrateIfPossible recorded", "LiveMigrateIfPossible", NULL, "add", "LiveMigrateIfPossible", NULL},
		{"External recorded", "External", NULL, "add", "External", NULL},
		{"None recorded", "None", NULL, "add", "None", NULL},
		{"a stale value replaced", "External", "LiveMigrate", "add", "External", NULL},
		{"the same value: nothing", "LiveMigrate", "LiveMigrate", NULL, NULL, NULL},
		{"none set: nothing", NULL, NULL, NULL, NULL, NULL},
		{"none set: a user's value removed", NULL, "LiveMigrate", "remove", NULL, NULL},
		{"unknown strategy: a user's value removed", "Sometimes", "LiveMigrate", "remove", NULL, NULL},
		{"unknown strategy, no value: nothing", "Sometimes", NULL, NULL, NULL, NULL},
		{"none set: the cluster's default recorded", NULL, NULL, "add", "LiveMigrate", "LiveMigrate"},
		{"none set: the default replaces a user's value", NULL, "External", "add", "LiveMigrate", "LiveMigrate"},
		{"none set: the default equal to the value: nothing", NULL, "LiveMigrate", NULL, NULL, "LiveMigrate"},
		{"the VMI's own strategy wins over the default", "External", NULL, "add", "External", "LiveMigrate"},
		{"unknown strategy with a default: removed", "Sometimes", "LiveMigrate", "remove", NULL, "LiveMigrate"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char spec[96] = "", anns[160] = "", *text = NULL, want[256];
		if (cases[i].strategy)
			snprintf(spec, sizeof(spec), "\"evictionStrategy\":\"%s\"", cases[i].strategy);
		snprintf(anns, sizeof(anns), "\"imds.kubevirt.io/enabled\":\"true\"%s%s%s",
			 cases[i].old ? ",\"imds.kubevirt.io/eviction-strategy\":\"" : "", cases[i].old ? cases[i].old : "",
			 cases[i].old ? "\"" : "");
		assert_true(asprintf(&text, "{\"spec\":{%s},\"anns\":{%s}}", spec, anns) > 0);
		struct admission_config cfg = {.default_eviction = cases[i].def};
		struct rvfx f;
		rvfx_open(&f, &cfg, text);
		ann_record_eviction(&f.a, rvfx_at(&f, "spec", NULL), rvfx_at(&f, "anns", NULL));
		rvfx_ok(&f);
		if (!cases[i].op)
			snprintf(want, sizeof(want), "[]");
		else if (strcmp(cases[i].op, "remove") == 0)
			snprintf(want, sizeof(want), "[{\"op\":\"remove\",\"path\":\"%s\"}]", path);
		else
			snprintf(want, sizeof(want), "[{\"op\":\"add\",\"path\":\"%s\",\"value\":\"%s\"}]", path,
				 cases[i].want);
		if (strcmp(rvfx_patch(&f), want) != 0)
			fail_msg("%s: %s, want %s", cases[i].name, rvfx_patch(&f), want);
		rvfx_close(&f);
		free(text);
	}
	/* evictionStrategy not a string: malformed, named. */
	struct rvfx f;
	rvfx_open(&f, NULL, "{\"spec\":{\"evictionStrategy\":1},\"anns\":{}}");
	ann_record_eviction(&f.a, rvfx_at(&f, "spec", NULL), rvfx_at(&f, "anns", NULL));
	rvfx_failed(&f, RV_BAD, "request.object.spec.evictionStrategy: must be a string");
	assert_int_equal(patch_count(f.a.patch), 0);
	rvfx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_data_ok),
		cmocka_unit_test(test_check_data_denied),
		cmocka_unit_test(test_meta_data_keys_cap),
		cmocka_unit_test(test_warn_vm_own),
		cmocka_unit_test(test_warn_vm_own_many),
		cmocka_unit_test(test_eviction_known),
		cmocka_unit_test(test_record_eviction),
	};
	return cmocka_run_group_tests_name("webhook annotations", tests, NULL, NULL);
}
