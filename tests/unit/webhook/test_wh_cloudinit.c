/* The VM's own cloud-init in the webhook (src/webhook/cloudinit.c, issue 30):
 * KubeVirt's admitter checks and messages (pkg/virt-api/webhooks/
 * validating-webhook/admitters/vmi-create-admitter.go:1703-1807 at v1.8.4),
 * Go's base64, the precedence warnings, the disk-removal opt-in and its
 * reinvocation, and the pod's side (Secrets mounted, environment). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "admission.h"
#include "cloudinit.h"
#include "sbuf.h"

static const struct admission_config CFG = {.imds_image = "registry.example/imds:test", .native_sidecar = 1};
static struct admission adm;

struct ans {
	struct admission_result res;
	struct json_object *resp, *patch;
};

static struct json_object *get(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static void review(const char *kind, const char *object, struct ans *a)
{
	char *body = NULL;
	int n = asprintf(&body,
			 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
			 "\"uid\":\"u1\",\"kind\":{\"group\":\"%s\",\"version\":\"v1\",\"kind\":\"%s\"},"
			 "\"resource\":{\"group\":\"%s\",\"version\":\"v1\",\"resource\":\"x\"},"
			 "\"name\":\"vm1\",\"namespace\":\"demo\",\"operation\":\"CREATE\",\"object\":%s}}",
			 strcmp(kind, "Pod") == 0 ? "" : "kubevirt.io", kind,
			 strcmp(kind, "Pod") == 0 ? "" : "kubevirt.io", object);
	assert_true(n > 0);
	memset(a, 0, sizeof(*a));
	admission_handle(&adm, &CFG, body, (size_t)n, &a->res);
	free(body);
	assert_int_equal(a->res.http_status, 200);
	a->resp = json_tokener_parse(a->res.body);
	assert_non_null(a->resp);
	const char *p64 = json_object_get_string(get(get(a->resp, "response"), "patch"));
	if (p64) {
		unsigned char *raw = malloc(strlen(p64));
		long len = sbuf_b64decode(p64, strlen(p64), raw);
		assert_true(len > 0);
		raw[len] = '\0';
		a->patch = json_tokener_parse((char *)raw);
		free(raw);
		assert_non_null(a->patch);
	}
}

static void ans_free(struct ans *a)
{
	admission_result_free(&a->res);
	json_object_put(a->resp);
	json_object_put(a->patch);
}

static int allowed(const struct ans *a)
{
	return json_object_get_boolean(get(get(a->resp, "response"), "allowed"));
}

static const char *message(const struct ans *a)
{
	return json_object_get_string(get(get(get(a->resp, "response"), "status"), "message"));
}

static size_t nwarn(const struct ans *a)
{
	struct json_object *w = get(get(a->resp, "response"), "warnings");
	return w ? json_object_array_length(w) : 0;
}

static const char *warning(const struct ans *a, size_t i)
{
	return json_object_get_string(json_object_array_get_idx(get(get(a->resp, "response"), "warnings"), i));
}

/* The value of the op on path (NULL: no such op); *op its kind. */
static struct json_object *op_on(const struct ans *a, const char *path, const char **op)
{
	for (size_t i = 0; a->patch && i < json_object_array_length(a->patch); i++) {
		struct json_object *o = json_object_array_get_idx(a->patch, i);
		if (strcmp(json_object_get_string(get(o, "path")), path) == 0) {
			*op = json_object_get_string(get(o, "op"));
			struct json_object *v = get(o, "value");
			return v ? v : o;
		}
	}
	*op = NULL;
	return NULL;
}

/* The annotation the VMI gets, parsed (NULL: none written). */
static struct json_object *ci_ann(const struct ans *a)
{
	const char *op;
	struct json_object *v = op_on(a, "/metadata/annotations/imds.kubevirt.io~1cloud-init", &op);
	return v ? json_tokener_parse(json_object_get_string(v)) : NULL;
}

static const char *field(struct json_object *o, const char *k)
{
	return json_object_get_string(get(o, k));
}

/* A VMI with these annotations (JSON members, may be empty), volumes and
 * accessCredentials (JSON array or "null"). */
/* noinline: gcc 12 takes the asprintf result for a dangling local otherwise */
__attribute__((noinline)) static char *vmi(const char *anns, const char *volume, const char *creds)
{
	char *s = NULL;
	int n = asprintf(&s,
			 "{\"apiVersion\":\"kubevirt.io/v1\",\"kind\":\"VirtualMachineInstance\","
			 "\"metadata\":{\"name\":\"vm1\",\"namespace\":\"demo\",\"annotations\":"
			 "{\"imds.kubevirt.io/enabled\":\"true\"%s%s}},"
			 "\"spec\":{\"domain\":{\"firmware\":{\"uuid\":\"5d307ca9-b3ef-428c-8861-06e72d69f223\"},"
			 "\"devices\":{\"disks\":[{\"name\":\"root\"},{\"name\":\"ci\"}],"
			 "\"interfaces\":[{\"name\":\"default\",\"masquerade\":{}}]}},"
			 "\"networks\":[{\"name\":\"default\",\"pod\":{}}],"
			 "\"accessCredentials\":%s,"
			 "\"volumes\":[{\"name\":\"root\",\"containerDisk\":{\"image\":\"x\"}},{\"name\":\"ci\",%s}]}}",
			 *anns ? "," : "", anns, creds, volume);
	assert_true(n > 0);
	return s;
}

static void vmi_review(const char *anns, const char *volume, const char *creds, struct ans *a)
{
	char *o = vmi(anns, volume, creds);
	review("VirtualMachineInstance", o, a);
	free(o);
}

static void test_base64_go(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		const char *out; /* NULL: refused */
	} cases[] = {
		{"", ""},
		{"YQ==", "a"},
		{"YWI=", "ab"},
		{"YWJj", "abc"},
		{"YW\nJj\r\n", "abc"},     /* Go skips \r and \n */
		{"YWJ", NULL},             /* not a whole quantum */
		{"YQ", NULL},              /* StdEncoding wants the padding */
		{"YQ=", NULL},
		{"YQ===", NULL},
		{"Y===", NULL},
		{"YQ==YQ==", NULL},        /* data after padding */
		{"YW-j", NULL},            /* the URL alphabet is not StdEncoding's */
		{"YW j", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char out[32];
		long n = sbuf_b64decode(cases[i].in, strlen(cases[i].in), out);
		if (!cases[i].out) {
			if (n >= 0)
				fail_msg("%s: decoded, Go refuses it", cases[i].in);
			continue;
		}
		assert_int_equal(n, (long)strlen(cases[i].out));
		assert_memory_equal(out, cases[i].out, (size_t)n);
	}
}

/* Each with KubeVirt's own words (admitter:1724-1807). */
static void test_bad_volumes(void **state)
{
	(void)state;
	static const struct {
		const char *volume;
		const char *msg;
	} cases[] = {
		{"\"cloudInitNoCloud\":{\"userData\":\"a\",\"userDataBase64\":\"YQ==\"}",
		 "spec.volumes[1].cloudInitNoCloud must have only one userdatasource set."},
		{"\"cloudInitNoCloud\":{\"userData\":\"a\",\"secretRef\":{\"name\":\"s\"}}",
		 "spec.volumes[1].cloudInitNoCloud must have only one userdatasource set."},
		{"\"cloudInitConfigDrive\":{\"networkData\":\"{}\",\"networkDataSecretRef\":{\"name\":\"s\"}}",
		 "spec.volumes[1].cloudInitConfigDrive must have only one networkdata source set."},
		{"\"cloudInitNoCloud\":{\"userDataBase64\":\"!!\"}",
		 "spec.volumes[1].cloudInitNoCloud.cloudInitNoCloud.userDataBase64 is not a valid base64 value."},
		{"\"cloudInitNoCloud\":{\"networkDataBase64\":\"YQ\"}",
		 "spec.volumes[1].cloudInitNoCloud.cloudInitNoCloud.networkDataBase64 is not a valid base64 value."},
		{"\"cloudInitNoCloud\":{}",
		 "spec.volumes[1].cloudInitNoCloud must have at least one userdatasource or one networkdatasource set."},
		{"\"cloudInitNoCloud\":{\"secretRef\":{\"name\":\"Not_A_Name\"}}",
		 "spec.volumes[1].cloudInitNoCloud.secretRef.name: 'Not_A_Name' is not a Secret name"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ans a;
		vmi_review("", cases[i].volume, "null", &a);
		if (allowed(&a) || !message(&a) || strcmp(message(&a), cases[i].msg) != 0)
			fail_msg("case %zu: %s, want %s", i, allowed(&a) ? "allowed" : message(&a), cases[i].msg);
		ans_free(&a);
	}
}

/* 2048 bytes inline are accepted, 2049 denied; the decoded length counts
 * for userDataBase64 (admitter:1733-1765). */
static void test_sizes(void **state)
{
	(void)state;
	static const size_t lens[] = {2048, 2049};
	for (int b64 = 0; b64 < 2; b64++) {
		for (size_t i = 0; i < 2; i++) {
			char *data = malloc(lens[i] * 2 + 8);
			memset(data, 'a', lens[i]);
			data[lens[i]] = '\0';
			if (b64) { /* 'aaa' is 'YWFh' */
				size_t q = lens[i] / 3, r = lens[i] % 3, o = 0;
				for (size_t k = 0; k < q; k++, o += 4)
					memcpy(data + o, "YWFh", 4);
				memcpy(data + o, r == 1 ? "YQ==" : r == 2 ? "YWE=" : "", r ? 4 : 0);
				data[o + (r ? 4 : 0)] = '\0';
			}
			char *vol = NULL;
			assert_true(asprintf(&vol, "\"cloudInitNoCloud\":{\"%s\":\"%s\"}", b64 ? "userDataBase64" : "userData",
					     data) > 0);
			struct ans a;
			vmi_review("", vol, "null", &a);
			if (lens[i] == 2048) {
				assert_true(allowed(&a));
			} else {
				assert_false(allowed(&a));
				assert_string_equal(message(&a), "spec.volumes[1].cloudInitNoCloud userdata exceeds 2048 byte "
								 "limit. Should use UserDataSecretRef for larger data.");
			}
			ans_free(&a);
			free(vol);
			free(data);
		}
	}
}

/* The annotation: identity, data base64, Secrets, SSH key Secrets of the
 * volume's propagation method only (cloud-init.go:162-212). */
static void test_annotation(void **state)
{
	(void)state;
	struct ans a;
	vmi_review("\"kubevirt.io/instancetype-name\":\"mine\",\"kubevirt.io/cluster-instancetype-name\":\"u1.small\"",
		   "\"cloudInitNoCloud\":{\"userDataBase64\":\"/w==\",\"networkDataSecretRef\":{\"name\":\"net\"}}",
		   "[{\"sshPublicKey\":{\"source\":{\"secret\":{\"secretName\":\"k1\"}},\"propagationMethod\":{\"noCloud\":{}}}},"
		   "{\"sshPublicKey\":{\"source\":{\"secret\":{\"secretName\":\"k2\"}},\"propagationMethod\":{\"qemuGuestAgent\":{\"users\":[\"x\"]}}}},"
		   "{\"sshPublicKey\":{\"source\":{\"secret\":{\"secretName\":\"k3\"}},\"propagationMethod\":{\"configDrive\":{}}}},"
		   "{\"sshPublicKey\":{\"source\":{\"secret\":{\"secretName\":\"k4\"}},\"propagationMethod\":{\"noCloud\":{}}}}]",
		   &a);
	assert_true(allowed(&a));
	assert_int_equal(nwarn(&a), 0);
	struct json_object *ci = ci_ann(&a);
	assert_non_null(ci);
	assert_string_equal(field(ci, "uuid"), "5d307ca9-b3ef-428c-8861-06e72d69f223");
	assert_string_equal(field(ci, "instanceType"), "u1.small"); /* the cluster one wins */
	assert_string_equal(field(ci, "source"), "noCloud");
	assert_string_equal(field(ci, "volume"), "ci");
	assert_string_equal(field(ci, "userData"), "/w=="); /* a byte that is not UTF-8, kept */
	assert_string_equal(field(ci, "networkDataSecret"), "net");
	assert_string_equal(field(ci, "sshSecrets"), "k1,k4");
	assert_null(get(ci, "hostname"));
	json_object_put(ci);
	/* Nothing of the VMI is removed without the opt-in. */
	const char *op;
	assert_null(op_on(&a, "/spec/volumes/1", &op));
	ans_free(&a);
}

/* A VMI without a cloud-init volume still gets KubeVirt's identity; one
 * without a firmware UUID none until virt-api's mutator set it (the
 * webhook is called again then: reinvocationPolicy IfNeeded). */
static void test_identity_only(void **state)
{
	(void)state;
	struct ans a;
	vmi_review("", "\"emptyDisk\":{\"capacity\":\"1Gi\"}", "null", &a);
	assert_true(allowed(&a));
	struct json_object *ci = ci_ann(&a);
	assert_non_null(ci);
	assert_string_equal(field(ci, "uuid"), "5d307ca9-b3ef-428c-8861-06e72d69f223");
	assert_null(get(ci, "source"));
	json_object_put(ci);
	ans_free(&a);

	char *o = vmi("", "\"cloudInitNoCloud\":{\"userData\":\"x\"}", "null");
	char *fw = strstr(o, "\"uuid\":");
	assert_non_null(fw);
	memcpy(fw + 1, "uuix", 4); /* firmware without a uuid */
	review("VirtualMachineInstance", o, &a);
	free(o);
	ci = ci_ann(&a);
	assert_non_null(ci);
	assert_null(get(ci, "uuid"));
	assert_string_equal(field(ci, "userData"), "eA==");
	json_object_put(ci);
	ans_free(&a);
}

/* One rule: the annotations win; a difference is a warning, sameness none. */
static void test_precedence(void **state)
{
	(void)state;
	struct ans a;
	vmi_review("\"imds.kubevirt.io/user-data\":\"same\"", "\"cloudInitNoCloud\":{\"userData\":\"same\"}", "null", &a);
	assert_true(allowed(&a));
	assert_int_equal(nwarn(&a), 0);
	ans_free(&a);

	vmi_review("\"imds.kubevirt.io/user-data\":\"mine\"", "\"cloudInitNoCloud\":{\"userDataBase64\":\"eA==\"}",
		   "null", &a);
	assert_true(allowed(&a));
	assert_int_equal(nwarn(&a), 1);
	assert_non_null(strstr(warning(&a, 0), "imds.kubevirt.io/user-data differs from the user data of the "
						"cloudInitNoCloud volume 'ci'; the service serves the annotation's"));
	ans_free(&a);

	vmi_review("\"imds.kubevirt.io/user-data-secret\":\"s\",\"imds.kubevirt.io/network-config\":\"n\"",
		   "\"cloudInitNoCloud\":{\"secretRef\":{\"name\":\"t\"},\"networkData\":\"m\"}", "null", &a);
	assert_true(allowed(&a));
	assert_int_equal(nwarn(&a), 2);
	assert_non_null(strstr(warning(&a, 0), "imds.kubevirt.io/user-data-secret and the cloudInitNoCloud volume"));
	assert_non_null(strstr(warning(&a, 1), "imds.kubevirt.io/network-config differs"));
	ans_free(&a);
}

/* A config drive's network data that is not JSON: KubeVirt takes it, the
 * guest's cloud-init would not; a warning. */
static void test_configdrive_network_json(void **state)
{
	(void)state;
	struct ans a;
	vmi_review("", "\"cloudInitConfigDrive\":{\"networkData\":\"version: 2\\n\"}", "null", &a);
	assert_true(allowed(&a));
	assert_int_equal(nwarn(&a), 1);
	assert_non_null(strstr(warning(&a, 0), "is not a JSON object"));
	ans_free(&a);
	vmi_review("", "\"cloudInitConfigDrive\":{\"networkData\":\"{\\\"links\\\":[]}\"}", "null", &a);
	assert_true(allowed(&a));
	assert_int_equal(nwarn(&a), 0);
	ans_free(&a);
}

/* imds.kubevirt.io/cloud-init-disk: remove takes the volume, its disk and
 * the SSH key credentials propagated to it; called again (reinvocation)
 * the data stays in the annotation though the volume is gone. */
static void test_disk_removal(void **state)
{
	(void)state;
	struct ans a;
	const char *creds =
		"[{\"sshPublicKey\":{\"source\":{\"secret\":{\"secretName\":\"q\"}},\"propagationMethod\":{\"qemuGuestAgent\":{\"users\":[\"x\"]}}}},"
		"{\"sshPublicKey\":{\"source\":{\"secret\":{\"secretName\":\"k1\"}},\"propagationMethod\":{\"noCloud\":{}}}}]";
	vmi_review("\"imds.kubevirt.io/cloud-init-disk\":\"remove\"", "\"cloudInitNoCloud\":{\"userData\":\"x\"}", creds,
		   &a);
	assert_true(allowed(&a));
	const char *op;
	assert_non_null(op_on(&a, "/spec/volumes/1", &op));
	assert_string_equal(op, "remove");
	assert_non_null(op_on(&a, "/spec/domain/devices/disks/1", &op));
	assert_string_equal(op, "remove");
	assert_non_null(op_on(&a, "/spec/accessCredentials/1", &op));
	assert_string_equal(op, "remove");
	assert_null(op_on(&a, "/spec/accessCredentials/0", &op));
	struct json_object *ci = ci_ann(&a);
	const char *text = json_object_to_json_string_ext(ci, JSON_C_TO_STRING_PLAIN);
	char *ann = NULL;
	/* The object as it is after the patch, reviewed again. */
	struct json_object *esc = json_object_new_string(text);
	assert_true(asprintf(&ann, "\"imds.kubevirt.io/cloud-init-disk\":\"remove\",\"imds.kubevirt.io/cloud-init\":%s",
			     json_object_to_json_string(esc)) > 0);
	json_object_put(esc);
	ans_free(&a);
	vmi_review(ann, "\"emptyDisk\":{\"capacity\":\"1Gi\"}", "null", &a);
	assert_true(allowed(&a));
	assert_null(ci_ann(&a)); /* unchanged: nothing to write */
	ans_free(&a);
	free(ann);
	json_object_put(ci);

	vmi_review("\"imds.kubevirt.io/cloud-init-disk\":\"yes\"", "\"cloudInitNoCloud\":{\"userData\":\"x\"}", "null", &a);
	assert_false(allowed(&a));
	assert_string_equal(message(&a), "imds.kubevirt.io/cloud-init-disk: want keep or remove, got 'yes'");
	ans_free(&a);
}

/* A VM's template gets the same checks, with KubeVirt's VM field path, and
 * no annotation (virt-controller's VMI gets it). */
static void test_vm_template(void **state)
{
	(void)state;
	struct ans a;
	review("VirtualMachine",
	       "{\"apiVersion\":\"kubevirt.io/v1\",\"kind\":\"VirtualMachine\",\"metadata\":{\"name\":\"vm1\"},"
	       "\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"imds.kubevirt.io/enabled\":\"true\"}},"
	       "\"spec\":{\"domain\":{\"devices\":{}},\"volumes\":[{\"name\":\"ci\",\"cloudInitNoCloud\":"
	       "{\"userData\":\"a\",\"userDataBase64\":\"YQ==\"}}]}}}}",
	       &a);
	assert_false(allowed(&a));
	assert_string_equal(message(&a), "spec.template.spec.volumes[0].cloudInitNoCloud must have only one "
					 "userdatasource set.");
	ans_free(&a);
}

static const char POD[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"virt-launcher-vm1-\","
	"\"namespace\":\"demo\",\"labels\":{\"kubevirt.io\":\"virt-launcher\"},\"annotations\":{"
	"\"imds.kubevirt.io/enabled\":\"true\",\"kubevirt.io/domain\":\"vm1\"%s}},"
	"\"spec\":{\"containers\":[{\"name\":\"compute\",\"image\":\"x\"}],\"volumes\":[]}}";

static void pod_review(const char *anns, struct ans *a)
{
	char *o = NULL;
	assert_true(asprintf(&o, POD, anns) > 0);
	review("Pod", o, a);
	free(o);
}

static struct json_object *sidecar_env(const struct ans *a, const char *name)
{
	const char *op;
	struct json_object *c = op_on(a, "/spec/initContainers", &op);
	assert_non_null(c);
	struct json_object *env = get(json_object_array_get_idx(c, 0), "env");
	for (size_t i = 0; i < json_object_array_length(env); i++) {
		struct json_object *e = json_object_array_get_idx(env, i);
		if (strcmp(field(e, "name"), name) == 0)
			return get(e, "value");
	}
	return NULL;
}

static int has_volume(const struct ans *a, const char *vol, const char *secret)
{
	for (size_t i = 0; a->patch && i < json_object_array_length(a->patch); i++) {
		struct json_object *v = get(json_object_array_get_idx(a->patch, i), "value");
		if (v && json_object_is_type(v, json_type_object) && field(v, "name") &&
		    strcmp(field(v, "name"), vol) == 0)
			return strcmp(field(get(v, "secret"), "secretName"), secret) == 0;
	}
	return 0;
}

static void test_pod(void **state)
{
	(void)state;
	struct ans a;
	pod_review(",\"imds.kubevirt.io/cloud-init\":\"{\\\"source\\\":\\\"noCloud\\\",\\\"userDataSecret\\\":\\\"ud\\\","
		   "\\\"networkData\\\":\\\"eA==\\\",\\\"sshSecrets\\\":\\\"k1,k2\\\"}\"",
		   &a);
	assert_true(allowed(&a));
	assert_non_null(sidecar_env(&a, "IMDS_CLOUD_INIT"));
	assert_string_equal(json_object_get_string(sidecar_env(&a, "IMDS_CLOUD_INIT_DIR")), "/var/run/imds/cloud-init");
	/* the volume gives both: no annotation file in their place */
	assert_null(sidecar_env(&a, "IMDS_USER_DATA_FILE"));
	assert_null(sidecar_env(&a, "IMDS_NETWORK_CONFIG_FILE"));
	assert_true(has_volume(&a, "imds-ci-user-data", "ud"));
	assert_true(has_volume(&a, "imds-ci-ssh-0", "k1"));
	assert_true(has_volume(&a, "imds-ci-ssh-1", "k2"));
	ans_free(&a);

	/* The annotation's user-data wins: its file, and no volume Secret. */
	pod_review(",\"imds.kubevirt.io/user-data\":\"mine\",\"imds.kubevirt.io/cloud-init\":"
		   "\"{\\\"source\\\":\\\"noCloud\\\",\\\"userDataSecret\\\":\\\"ud\\\"}\"",
		   &a);
	assert_true(allowed(&a));
	assert_string_equal(json_object_get_string(sidecar_env(&a, "IMDS_USER_DATA_FILE")),
			    "/var/run/imds/podinfo/user-data");
	assert_false(has_volume(&a, "imds-ci-user-data", "ud"));
	ans_free(&a);

	/* Not what the webhook writes: denied, naming the annotation. */
	static const char *const bad[] = {
		",\"imds.kubevirt.io/cloud-init\":\"not json\"",
		",\"imds.kubevirt.io/cloud-init\":\"{\\\"a\\\":1}\"",
		",\"imds.kubevirt.io/cloud-init\":\"{\\\"userDataSecret\\\":\\\"../x\\\"}\"",
		",\"imds.kubevirt.io/cloud-init\":\"{\\\"sshSecrets\\\":\\\"a,,b\\\"}\"",
		",\"imds.kubevirt.io/cloud-init\":\"{\\\"source\\\":\\\"disk\\\"}\"",
		",\"imds.kubevirt.io/cloud-init\":\"{\\\"userData\\\":\\\"YQ\\\"}\"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pod_review(bad[i], &a);
		assert_false(allowed(&a));
		assert_non_null(strstr(message(&a), "imds.kubevirt.io/cloud-init: "));
		ans_free(&a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_go),
		cmocka_unit_test(test_bad_volumes),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_annotation),
		cmocka_unit_test(test_identity_only),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_configdrive_network_json),
		cmocka_unit_test(test_disk_removal),
		cmocka_unit_test(test_vm_template),
		cmocka_unit_test(test_pod),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	admission_cleanup(&adm);
	return r;
}
