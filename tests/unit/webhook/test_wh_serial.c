/* serial: the NoCloud DMI serial of an opted-in VM or VMI
 * (src/webhook/serial.h) over fixtures (wh_fixture.h): set, appended
 * after the user's own, left alone when it names nocloud; empty and null
 * parents, UPDATE reads object, a VMI's UPDATE never patched, the skips,
 * wrong types malformed.  Moved from test_wh_admission.c. */
#include "wh_fixture.h"
#include "serial.h"
#include "wh_review.h"

/* ---- VirtualMachines and VirtualMachineInstances ------------------------ */

static const char *vm_serial(struct json_object *o, int vm)
{
	return vm ? sat(at(o, "spec", "template", "spec", "domain", "firmware", "serial", NULL))
		  : sat(at(o, "spec", "domain", "firmware", "serial", NULL));
}

struct serialcase {
	const char *fixture;
	int vm;
	enum admission_outcome outcome;
	const char *want; /* the serial after the patch */
	const char *op;   /* the one operation's op and path */
	const char *path;
};

static void test_serial(void **state)
{
	(void)state;
	static const struct serialcase cases[] = {
		{"vm-no-firmware", 1, ADM_PATCHED, SERIAL, "add", "/spec/template/spec/domain/firmware"},
		{"vm-serial", 1, ADM_PATCHED, "8e1c5a3f-6b2d-4a90-b7e1-2f3c4d5e6f70 " SERIAL, "replace",
		 "/spec/template/spec/domain/firmware/serial"},
		{"vm-own-annotation", 1, ADM_PATCHED, SERIAL, "add", "/spec/template/spec/domain/firmware/serial"},
		{"vm-update", 1, ADM_PATCHED, "ABC-123 " SERIAL, "replace", "/spec/template/spec/domain/firmware/serial"},
		{"vm-nocloud-serial", 1, ADM_SKIPPED, NULL, NULL, NULL},
		{"vm-last-applied-only", 1, ADM_SKIPPED, NULL, NULL, NULL},
		{"vmi-standalone", 0, ADM_PATCHED, SERIAL, "add", "/spec/domain/firmware"},
		{"vmi-serial", 0, ADM_PATCHED, "INV-0042 " SERIAL, "replace", "/spec/domain/firmware/serial"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *review = fixture(cases[i].fixture);
		struct answer a;
		run_review(&NATIVE, review, &a);
		if (a.res.outcome != cases[i].outcome)
			fail_msg("%s: %s (%s)", cases[i].fixture, admission_outcome_name(a.res.outcome), a.res.reason);
		assert_int_equal(a.res.kind, cases[i].vm ? ADM_KIND_VM : ADM_KIND_VMI);
		if (cases[i].want) {
			/* A VMI also gets imds.kubevirt.io/interfaces (issue 24):
			 * one masquerade NIC on the pod network in every fixture;
			 * and its spec.evictionStrategy (None in these fixtures,
			 * as KubeVirt's examples) as imds.kubevirt.io/eviction-strategy
			 * (issue 31); and imds.kubevirt.io/cloud-init (issue 30). */
			assert_int_equal(json_object_array_length(a.patch), cases[i].vm ? 1 : 4);
			assert_true(has_op_path(a.patch, cases[i].op, cases[i].path));
			assert_string_equal(vm_serial(a.object, cases[i].vm), cases[i].want);
			if (!cases[i].vm) {
				assert_true(has_op_path(a.patch, "add", "/metadata/annotations/imds.kubevirt.io~1interfaces"));
				assert_string_equal(sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/interfaces", NULL)),
						    "default:masquerade:tap0");
				assert_true(has_op_path(a.patch, "add",
							"/metadata/annotations/imds.kubevirt.io~1eviction-strategy"));
				assert_string_equal(sat(at(a.object, "metadata", "annotations",
							   "imds.kubevirt.io/eviction-strategy", NULL)),
						    "None");
			}
			/* firmware.uuid and the rest stay. */
			struct json_object *o = dup(a.object);
			if (!cases[i].vm) {
				json_object_object_del(at(o, "metadata", "annotations", NULL), "imds.kubevirt.io/interfaces");
				json_object_object_del(at(o, "metadata", "annotations", NULL),
						       "imds.kubevirt.io/eviction-strategy");
				json_object_object_del(at(o, "metadata", "annotations", NULL), "imds.kubevirt.io/cloud-init");
			}
			struct json_object *fw = cases[i].vm ? at(o, "spec", "template", "spec", "domain", "firmware", NULL)
							     : at(o, "spec", "domain", "firmware", NULL);
			json_object_object_del(fw, "serial");
			struct json_object *orig = dup(at(review, "request", "object", NULL));
			fw = cases[i].vm ? at(orig, "spec", "template", "spec", "domain", "firmware", NULL)
					 : at(orig, "spec", "domain", "firmware", NULL);
			if (fw)
				json_object_object_del(fw, "serial");
			else
				set(cases[i].vm ? at(orig, "spec", "template", "spec", "domain", NULL) : at(orig, "spec", "domain", NULL),
				    "firmware", json_object_new_object());
			assert_true(json_eq(o, orig));
			json_object_put(o);
			json_object_put(orig);
			/* Idempotent: a second pass (CREATE or UPDATE) changes nothing. */
			assert_second_pass_clean(&NATIVE, review, a.object);
			struct json_object *upd = dup(review);
			set(at(upd, "request", NULL), "operation", json_object_new_string("UPDATE"));
			set(at(upd, "request", NULL), "oldObject", dup(at(review, "request", "object", NULL)));
			assert_second_pass_clean(&NATIVE, upd, a.object);
			json_object_put(upd);
		}
		answer_free(&a);
		json_object_put(review);
	}
}

static void test_serial_variants(void **state)
{
	(void)state;
	struct answer a;
	struct json_object *review, *dom;

	/* An empty serial is none. */
	review = fixture("vmi-serial");
	set(at(review, "request", "object", "spec", "domain", "firmware", NULL), "serial", json_object_new_string(""));
	run_review(&NATIVE, review, &a);
	assert_true(has_op_path(a.patch, "replace", "/spec/domain/firmware/serial"));
	assert_string_equal(vm_serial(a.object, 0), SERIAL);
	answer_free(&a);
	json_object_put(review);

	/* JSON null firmware: created. */
	review = fixture("vmi-standalone");
	set(at(review, "request", "object", "spec", "domain", NULL), "firmware", NULL);
	run_review(&NATIVE, review, &a);
	assert_string_equal(vm_serial(a.object, 0), SERIAL);
	answer_free(&a);
	json_object_put(review);

	/* A VM opted in on its own metadata with no template at all: the
	 * whole chain of parents in one add. */
	review = fixture("vm-own-annotation");
	json_object_object_del(at(review, "request", "object", "spec", NULL), "template");
	run_review(&NATIVE, review, &a);
	assert_true(has_op_path(a.patch, "add", "/spec/template"));
	assert_string_equal(vm_serial(a.object, 1), SERIAL);
	answer_free(&a);
	json_object_put(review);

	/* UPDATE uses object, not oldObject. */
	review = fixture("vm-update");
	dom = at(review, "request", "oldObject", "spec", "template", "spec", "domain", "firmware", NULL);
	set(dom, "serial", json_object_new_string("OLD " SERIAL));
	run_review(&NATIVE, review, &a);
	assert_string_equal(vm_serial(a.object, 1), "ABC-123 " SERIAL);
	answer_free(&a);
	json_object_put(review);

	/* A VMI UPDATE is never patched, even without the serial: virt-api
	 * would refuse the spec change ("update of VMI object is restricted"). */
	review = fixture("vmi-standalone");
	set(at(review, "request", NULL), "operation", json_object_new_string("UPDATE"));
	set(at(review, "request", NULL), "oldObject", dup(at(review, "request", "object", NULL)));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	assert_non_null(strstr(a.res.reason, "UPDATE of a VMI"));
	answer_free(&a);
	json_object_put(review);

	/* Skipped: DELETE, a subresource, opted out on UPDATE. */
	review = fixture("vm-serial");
	set(at(review, "request", NULL), "operation", json_object_new_string("DELETE"));
	set(at(review, "request", NULL), "object", NULL);
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	answer_free(&a);
	json_object_put(review);
	review = fixture("vmi-standalone");
	set(at(review, "request", NULL), "subResource", json_object_new_string("status"));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	answer_free(&a);
	json_object_put(review);
	review = fixture("vmi-standalone");
	set_ann(review, "imds.kubevirt.io/enabled", "false");
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	answer_free(&a);
	json_object_put(review);

	/* A serial that is not a string: malformed. */
	review = fixture("vmi-serial");
	set(at(review, "request", "object", "spec", "domain", "firmware", NULL), "serial", json_object_new_int(7));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.http_status, 400);
	assert_non_null(strstr(sat(at(a.resp, "message", NULL)), "serial"));
	answer_free(&a);
	json_object_put(review);
	/* domain not an object: malformed. */
	review = fixture("vm-serial");
	set(at(review, "request", "object", "spec", "template", "spec", NULL), "domain", json_object_new_string("x"));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.http_status, 400);
	answer_free(&a);
	json_object_put(review);
}

/* ---- serial_admit on a request directly -------------------------------- */

/* A VM request (operation CREATE): its template's annotations and
 * domain members as given. */
static void vm_direct(const char *op, const char *tanns, const char *domain, const char *want_patch,
		      const char *want_reason, int err, const char *msg)
{
	char *text = NULL;
	assert_true(asprintf(&text,
			     "{\"operation\":\"%s\",\"object\":{\"metadata\":{\"name\":\"vm1\"},\"spec\":{\"template\":"
			     "{\"metadata\":{\"annotations\":{%s}},\"spec\":{\"domain\":{%s}}}}}}",
			     op, tanns, domain) > 0);
	struct rvfx f;
	rvfx_open(&f, NULL, text);
	serial_admit(&f.a, 0, (struct str){op, strlen(op)}, 1);
	if (err) {
		rvfx_failed(&f, err, msg);
	} else {
		rvfx_ok(&f);
		if (strcmp(rvfx_patch(&f), want_patch) != 0)
			fail_msg("%s: %s, want %s", domain, rvfx_patch(&f), want_patch);
		if (!strstr(f.res.reason, want_reason))
			fail_msg("%s: reason '%s', want '%s'", domain, f.res.reason, want_reason);
	}
	rvfx_close(&f);
	free(text);
}

#define IN "\"imds.kubevirt.io/enabled\":\"true\""
#define FW "/spec/template/spec/domain/firmware"

static void test_serial_direct(void **state)
{
	(void)state;
	vm_direct("CREATE", IN, "\"firmware\":{\"serial\":\"ABC\"}",
		  "[{\"op\":\"replace\",\"path\":\"" FW "/serial\",\"value\":\"ABC " DISC_SERIAL "\"}]",
		  "ds=nocloud appended to the serial", 0, NULL);
	vm_direct("UPDATE", IN, "\"firmware\":{\"serial\":\"\"}",
		  "[{\"op\":\"replace\",\"path\":\"" FW "/serial\",\"value\":\"" DISC_SERIAL "\"}]",
		  "serial set (was empty)", 0, NULL);
	vm_direct("CREATE", IN, "\"firmware\":{}", "[{\"op\":\"add\",\"path\":\"" FW "/serial\",\"value\":\"" DISC_SERIAL "\"}]",
		  "serial set", 0, NULL);
	vm_direct("CREATE", IN, "\"cpu\":{}",
		  "[{\"op\":\"add\",\"path\":\"" FW "\",\"value\":{\"serial\":\"" DISC_SERIAL "\"}}]",
		  "serial set (created firmware)", 0, NULL);
	vm_direct("CREATE", IN, "\"firmware\":{\"serial\":\"x ds=nocloud;s=http://10.0.0.1/\"}", "[]",
		  "serial already has ds=nocloud", 0, NULL);
	vm_direct("CREATE", IN, "\"firmware\":{\"serial\":\"ds=nocloud-net;s=http://10.0.0.1/\"}", "[]",
		  "serial already has ds=nocloud", 0, NULL);
	/* The serial follows ip-family and serial-form. */
	vm_direct("CREATE", IN ",\"imds.kubevirt.io/ip-family\":\"IPv6\",\"imds.kubevirt.io/serial-form\":\"nocloud-net\"",
		  "\"firmware\":{}",
		  "[{\"op\":\"add\",\"path\":\"" FW "/serial\",\"value\":\"" DISC_SERIAL6_NET "\"}]", "serial set", 0, NULL);
	/* Not opted in ("True" is not "true"), or an operation never patched. */
	vm_direct("CREATE", "\"imds.kubevirt.io/enabled\":\"True\"", "\"firmware\":{}", "[]", "not opted in", 0, NULL);
	vm_direct("DELETE", IN, "\"firmware\":{}", "[]", "DELETE is never patched", 0, NULL);
	vm_direct("CONNECT", IN, "\"firmware\":{}", "[]", "CONNECT is never patched", 0, NULL);
	/* The annotations are checked before anything is patched. */
	vm_direct("CREATE", IN ",\"imds.kubevirt.io/serial-form\":\"talos\"", "\"firmware\":{}", NULL, NULL, RV_DENY,
		  "imds.kubevirt.io/serial-form: want nocloud or nocloud-net, got 'talos'");
	/* Wrong types are malformed, named. */
	vm_direct("CREATE", IN, "\"firmware\":{\"serial\":7}", NULL, NULL, RV_BAD,
		  "request.object.spec.template.spec.domain.firmware.serial: must be a string");
	vm_direct("CREATE", IN, "\"firmware\":\"uefi\"", NULL, NULL, RV_BAD,
		  "request.object.spec.template.spec.domain.firmware: must be an object");
}

/* A VMI: UPDATE never patched, a subresource never patched, a request
 * without its object malformed. */
static void test_serial_direct_vmi(void **state)
{
	(void)state;
	static const struct {
		const char *req, *op, *reason;
		int err;
		const char *msg;
	} cases[] = {
		{"{\"object\":{\"metadata\":{\"annotations\":{" IN "}},\"spec\":{}}}", "UPDATE", "UPDATE of a VMI is never patched",
		 0, NULL},
		{"{\"subResource\":\"status\",\"object\":{}}", "CREATE", "subresource 'status' is never patched", 0, NULL},
		{"{}", "CREATE", NULL, RV_BAD, "request.object: missing"},
		{"{\"object\":[]}", "CREATE", NULL, RV_BAD, "request.object: must be an object"},
		{"{\"object\":{\"metadata\":{\"annotations\":[]}}}", "CREATE", NULL, RV_BAD,
		 "request.object.metadata.annotations: must be an object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rvfx f;
		rvfx_open(&f, NULL, cases[i].req);
		serial_admit(&f.a, 0, (struct str){cases[i].op, strlen(cases[i].op)}, 0);
		if (cases[i].err) {
			rvfx_failed(&f, cases[i].err, cases[i].msg);
		} else {
			rvfx_ok(&f);
			if (!strstr(f.res.reason, cases[i].reason))
				fail_msg("case %zu: reason '%s'", i, f.res.reason);
		}
		assert_int_equal(patch_count(f.a.patch), 0);
		rvfx_close(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serial),
		cmocka_unit_test(test_serial_variants),
		cmocka_unit_test(test_serial_direct),
		cmocka_unit_test(test_serial_direct_vmi),
	};
	int failed = cmocka_run_group_tests_name("webhook serial", tests, NULL, NULL);
	admission_cleanup(&adm);
	return failed;
}
