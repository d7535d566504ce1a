/* How a guest agent finds the sidecar (src/webhook/discovery.h), on a
 * VM's or VMI's object directly: the serial by serial-form and ip-family,
 * a VM's template annotations before its own, and the chassis
 * manufacturer added where the object has none (parents made in one add),
 * kept where it has one, a wrong type a malformed review naming it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discovery.h"
#include "wh_review.h"

/* A VMI with these annotation members. */
static char *vmi(const char *anns, const char *spec)
{
	char *s = NULL;
	assert_true(asprintf(&s, "{\"metadata\":{\"annotations\":{%s}},\"spec\":%s}", anns, spec) > 0);
	return s;
}

/* A VM: its own annotations and its template's (tanns NULL: no template
 * annotations at all). */
static char *vm(const char *own, const char *tanns, const char *tspec)
{
	char *s = NULL;
	char t[512];
	if (tanns)
		snprintf(t, sizeof(t), "{\"metadata\":{\"annotations\":{%s}},\"spec\":%s}", tanns, tspec);
	else
		snprintf(t, sizeof(t), "{\"spec\":%s}", tspec);
	assert_true(asprintf(&s, "{\"metadata\":{\"annotations\":{%s}},\"spec\":{\"template\":%s}}", own, t) > 0);
	return s;
}

static void test_serials(void **state)
{
	(void)state;
	static const struct {
		const char *anns, *want;
	} cases[] = {
		{"", DISC_SERIAL},
		{"\"imds.kubevirt.io/serial-form\":\"nocloud\"", DISC_SERIAL},
		{"\"imds.kubevirt.io/serial-form\":\"nocloud-net\"", DISC_SERIAL_NET},
		{"\"imds.kubevirt.io/ip-family\":\"IPv4\"", DISC_SERIAL},
		{"\"imds.kubevirt.io/ip-family\":\"IPv6\"", DISC_SERIAL6},
		{"\"imds.kubevirt.io/ip-family\":\"IPv6\",\"imds.kubevirt.io/serial-form\":\"nocloud-net\"", DISC_SERIAL6_NET},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int asvm = 0; asvm <= 1; asvm++) {
			char *text = asvm ? vm("", cases[i].anns, "{}") : vmi(cases[i].anns, "{}");
			struct rvfx f;
			rvfx_open(&f, NULL, text);
			const char *got = disc_serial(&f.a, 0, asvm);
			rvfx_ok(&f);
			if (strcmp(got, cases[i].want) != 0)
				fail_msg("case %zu (%s): %s, want %s", i, asvm ? "vm" : "vmi", got, cases[i].want);
			rvfx_close(&f);
			free(text);
		}
	}
	/* The serials themselves: what cloud-init and Talos read. */
	assert_string_equal(DISC_SERIAL, "ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net");
	assert_string_equal(DISC_SERIAL6_NET, "ds=nocloud-net;s=http://[fd00:ec2::254]/v1/");
}

/* A VM: the template's annotation first, the VM's own when the template
 * has none of that key; a VMI reads only its own. */
static void test_vm_template_first(void **state)
{
	(void)state;
	struct rvfx f;
	char *text = vm("\"imds.kubevirt.io/ip-family\":\"IPv6\"", "\"imds.kubevirt.io/ip-family\":\"IPv4\"", "{}");
	rvfx_open(&f, NULL, text);
	assert_string_equal(disc_serial(&f.a, 0, 1), DISC_SERIAL);
	assert_true(str_is(disc_ann(&f.a, 0, 1, "imds.kubevirt.io/ip-family"), "IPv4"));
	rvfx_close(&f);
	free(text);

	text = vm("\"imds.kubevirt.io/ip-family\":\"IPv6\"", "\"imds.kubevirt.io/enabled\":\"true\"", "{}");
	rvfx_open(&f, NULL, text);
	assert_string_equal(disc_serial(&f.a, 0, 1), DISC_SERIAL6);
	rvfx_close(&f);
	free(text);

	text = vm("\"imds.kubevirt.io/serial-form\":\"nocloud-net\"", NULL, "{}");
	rvfx_open(&f, NULL, text);
	assert_string_equal(disc_serial(&f.a, 0, 1), DISC_SERIAL_NET);
	rvfx_ok(&f);
	rvfx_close(&f);
	free(text);

	/* Read as a VMI, the same object's template is not looked at. */
	text = vm("", "\"imds.kubevirt.io/ip-family\":\"IPv6\"", "{}");
	rvfx_open(&f, NULL, text);
	assert_null(disc_ann(&f.a, 0, 0, "imds.kubevirt.io/ip-family").p);
	assert_string_equal(disc_serial(&f.a, 0, 0), DISC_SERIAL);
	rvfx_close(&f);
	free(text);

	/* A template that is not an object: malformed, named. */
	rvfx_open(&f, NULL, "{\"spec\":{\"template\":[]}}");
	disc_ann(&f.a, 0, 1, "imds.kubevirt.io/ip-family");
	rvfx_failed(&f, RV_BAD, "request.object.spec.template: must be an object");
	rvfx_close(&f);
}

#define ON "\"imds.kubevirt.io/dmi-chassis\":\"true\""

static void chassis(int asvm, const char *anns, const char *spec, const char *want)
{
	char *text = asvm ? vm("", anns, spec) : vmi(anns, spec);
	struct rvfx f;
	rvfx_open(&f, NULL, text);
	disc_chassis(&f.a, 0, asvm);
	rvfx_ok(&f);
	if (strcmp(rvfx_patch(&f), want) != 0)
		fail_msg("%s %s: %s, want %s", asvm ? "vm" : "vmi", spec, rvfx_patch(&f), want);
	rvfx_close(&f);
	free(text);
}

static void test_chassis(void **state)
{
	(void)state;
	/* Not asked for: nothing. */
	chassis(0, "", "{}", "[]");
	chassis(0, "\"imds.kubevirt.io/dmi-chassis\":\"false\"", "{}", "[]");
	/* The first missing parent is added whole. */
	chassis(0, ON, "{}",
		"[{\"op\":\"add\",\"path\":\"/spec/domain\",\"value\":{\"chassis\":{\"manufacturer\":\"kubevirt-imds\"}}}]");
	chassis(0, ON, "{\"domain\":{\"cpu\":{}}}",
		"[{\"op\":\"add\",\"path\":\"/spec/domain/chassis\",\"value\":{\"manufacturer\":\"kubevirt-imds\"}}]");
	chassis(0, ON, "{\"domain\":{\"chassis\":{\"serial\":\"s\"}}}",
		"[{\"op\":\"add\",\"path\":\"/spec/domain/chassis/manufacturer\",\"value\":\"kubevirt-imds\"}]");
	/* An empty manufacturer is none: replaced; the VM's own is kept. */
	chassis(0, ON, "{\"domain\":{\"chassis\":{\"manufacturer\":\"\"}}}",
		"[{\"op\":\"replace\",\"path\":\"/spec/domain/chassis/manufacturer\",\"value\":\"kubevirt-imds\"}]");
	chassis(0, ON, "{\"domain\":{\"chassis\":{\"manufacturer\":\"ACME\"}}}", "[]");
	/* A VM: under its template's spec. */
	chassis(1, ON, "{\"domain\":{}}",
		"[{\"op\":\"add\",\"path\":\"/spec/template/spec/domain/chassis\",\"value\":"
		"{\"manufacturer\":\"kubevirt-imds\"}}]");
	/* A template without spec gets the chain from there. */
	{
		struct rvfx f;
		rvfx_open(&f, NULL, "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{" ON "}}}}}");
		disc_chassis(&f.a, 0, 1);
		rvfx_ok(&f);
		assert_string_equal(rvfx_patch(&f), "[{\"op\":\"add\",\"path\":\"/spec/template/spec\",\"value\":"
						    "{\"domain\":{\"chassis\":{\"manufacturer\":\"kubevirt-imds\"}}}}]");
		rvfx_close(&f);
	}
	/* Wrong types: malformed reviews naming where. */
	static const struct {
		const char *spec, *msg;
	} bad[] = {
		{"{\"domain\":\"x\"}", "request.object.spec.domain: must be an object"},
		{"{\"domain\":{\"chassis\":[]}}", "request.object.spec.domain.chassis: must be an object"},
		{"{\"domain\":{\"chassis\":{\"manufacturer\":3}}}",
		 "request.object.spec.domain.chassis.manufacturer: must be a string"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = vmi(ON, bad[i].spec);
		struct rvfx f;
		rvfx_open(&f, NULL, text);
		disc_chassis(&f.a, 0, 0);
		rvfx_failed(&f, RV_BAD, bad[i].msg);
		assert_int_equal(patch_count(f.a.patch), 0);
		rvfx_close(&f);
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serials),
		cmocka_unit_test(test_vm_template_first),
		cmocka_unit_test(test_chassis),
	};
	return cmocka_run_group_tests_name("webhook discovery", tests, NULL, NULL);
}
