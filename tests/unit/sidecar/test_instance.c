/* instance: the one model of the VM every layout renders (instance.c).
 * The VM's own cloud-init in it (issue 30): IMDS_CLOUD_INIT read,
 * KubeVirt's identity (pkg/cloud-init/cloud-init.go: 113-158, 411-419;
 * pkg/util/net/dns/sanitize.go:33-44) and the override, the precedence of
 * the annotations' files over the volume, a Secret key that is missing
 * then appears, and bad settings refused.  Then the derived parts: the
 * custom meta-data's keys as the layouts may use them and the generation
 * that moves only when a source changed, the pod's interfaces from a
 * network-status file that comes late, changes or breaks, and a data
 * file that cannot be read named at open.  The accessCredentials' keys:
 * test_cikeys.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "instance.h"
#include "sbuf.h"
#include "fixture.h"

static char root[256];

static void put(const char *rel, const char *data)
{
	fx_put_at(root, rel, data);
}

static void mk(const char *rel)
{
	fx_mkdir_at(root, rel);
}

static int setup(void **state)
{
	(void)state;
	fx_mkdtemp(root, sizeof(root), "imds-ci");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_rm_tree(root);
	return 0;
}

static struct imds_config config(const char *ci)
{
	return fx_ci_config(root, ci);
}

static void assert_blob(struct blob *b, const char *want)
{
	assert_non_null(b);
	assert_int_equal(b->len, strlen(want));
	assert_memory_equal(b->data, want, b->len);
}

static void test_base64(void **state)
{
	(void)state;
	unsigned char out[16];
	assert_int_equal(sbuf_b64decode("", 0, out), 0);
	assert_int_equal(sbuf_b64decode("/w==", 4, out), 1);
	assert_int_equal(out[0], 0xff);
	assert_int_equal(sbuf_b64decode("YWJj", 4, out), 3);
	assert_int_equal(sbuf_b64decode("YWJ", 3, out), -1);
	assert_int_equal(sbuf_b64decode("Y===", 4, out), -1);
	assert_int_equal(sbuf_b64decode("YQ=a", 4, out), -1);
	assert_int_equal(sbuf_b64decode("YW-j", 4, out), -1);
}

/* The identity with and without IMDS_CLOUD_INIT, and the override. */
static void test_identity(void **state)
{
	(void)state;
	char err[256];
	struct instance in;
	struct imds_config c = config("{\"uuid\":\"5d307ca9-b3ef-428c-8861-06e72d69f223\","
				      "\"instanceType\":\"u1.medium\"}");
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	assert_string_equal(in.iid, "5d307ca9-b3ef-428c-8861-06e72d69f223");
	assert_string_equal(in.uuid, "5d307ca9-b3ef-428c-8861-06e72d69f223");
	assert_string_equal(in.openstack_iid, "db-01.prod.example.demo");
	assert_string_equal(in.hostname, "db-01");
	assert_string_equal(in.instance_type, "u1.medium");
	assert_true(in.instance_type_known);
	assert_int_equal(in.ci_source, INST_CI_NONE);
	assert_null(inst_user_data(&in)); /* no volume: nothing of it */
	inst_close(&in);

	c = config("{\"uuid\":\"u\",\"hostname\":\"web-1\"}");
	c.instance_id = "mine";
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	assert_string_equal(in.iid, "mine");
	assert_string_equal(in.uuid, "mine");
	assert_string_equal(in.openstack_iid, "mine");
	assert_string_equal(in.hostname, "web-1");
	assert_string_equal(in.instance_type, "kubevirt");
	assert_false(in.instance_type_known);
	inst_close(&in);

	/* A pod from before the annotation: the old instance-id. */
	c = config(NULL);
	c.vm_name = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	assert_string_equal(in.iid, "demo-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(strlen(in.hostname), 63); /* DNS1123LabelMaxLength */
	inst_close(&in);
}

/* Inline data, decoded; network data on the right layout; the
 * annotation's files win. */
static void test_inline_and_precedence(void **state)
{
	(void)state;
	char err[256];
	struct instance in;
	struct imds_config c = config("{\"source\":\"configDrive\",\"userData\":\"/wA=\","
				      "\"networkData\":\"eyJsaW5rcyI6W119\"}");
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	struct blob *u = inst_user_data(&in);
	assert_int_equal(u->len, 2);
	assert_memory_equal(u->data, "\xff\0", 2);
	assert_null(inst_network_config(&in)); /* a config drive's JSON is not NoCloud's */
	assert_blob(inst_openstack_network_data(&in), "{\"links\":[]}");
	inst_close(&in);

	c = config("{\"source\":\"noCloud\",\"networkData\":\"dmVyc2lvbjogMgo=\"}");
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	assert_blob(inst_user_data(&in), ""); /* KubeVirt writes an empty user-data */
	assert_blob(inst_network_config(&in), "version: 2\n");
	assert_null(inst_openstack_network_data(&in));
	inst_close(&in);

	put("ann-user-data", "from the annotation");
	char path[512];
	snprintf(path, sizeof(path), "%s/ann-user-data", root);
	c = config("{\"source\":\"noCloud\",\"userData\":\"eA==\"}");
	c.user_data_file = path;
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	assert_blob(inst_user_data(&in), "from the annotation");
	inst_close(&in);
}

/* The volume's Secret: userdata, else userData; missing, then there. */
static void test_secret_keys(void **state)
{
	(void)state;
	char err[256];
	struct instance in;
	mk("user-data");
	struct imds_config c = config("{\"source\":\"noCloud\",\"userDataSecret\":\"s\"}");
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	assert_blob(inst_user_data(&in), ""); /* logged; KubeVirt would not start */
	put("user-data/userData", "camel");
	assert_blob(inst_user_data(&in), "camel");
	put("user-data/userdata", "lower wins");
	assert_blob(inst_user_data(&in), "lower wins");
	inst_close(&in);
}

static void test_bad_settings(void **state)
{
	(void)state;
	static const struct {
		const char *ci, *dir, *err;
	} cases[] = {
		{"not json", "/x", "IMDS_CLOUD_INIT: not a JSON object of strings"},
		{"{\"source\":\"disk\"}", "/x", "IMDS_CLOUD_INIT: source: want noCloud or configDrive, got 'disk'"},
		{"{\"source\":\"noCloud\",\"userData\":\"!\"}", "/x", "IMDS_CLOUD_INIT: userData is not base64"},
		{"{\"source\":\"noCloud\",\"userDataSecret\":\"s\"}", NULL,
		 "IMDS_CLOUD_INIT: names Secrets, but IMDS_CLOUD_INIT_DIR is not set"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256] = "";
		struct instance in;
		struct imds_config c = config(cases[i].ci);
		c.cloud_init_dir = cases[i].dir;
		assert_int_equal(inst_open(&in, &c, err, sizeof(err)), -EINVAL);
		if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
			fail_msg("case %zu: %s, want %s", i, err, cases[i].err);
		inst_close(&in);
	}
}

/* Custom meta-data: our own keys left out, namespace and vmName NoCloud's
 * only, the rest everywhere; the generation moves with the file alone. */
static void test_custom_meta(void **state)
{
	(void)state;
	char err[256];
	struct instance in;
	put("meta.json", "{\"instance-id\":\"x\",\"team\":\"db\",\"namespace\":\"n\","
			 "\"vmName\":\"v\",\"public-keys\":\"k\",\"zone\":\"z\"}");
	char path[600];
	snprintf(path, sizeof(path), "%s/meta.json", root);
	struct imds_config c = config(NULL);
	c.meta_data_file = path;
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	struct inst_meta m = inst_meta(&in);
	assert_int_equal(m.custom->n, 6);
	static const struct {
		const char *k;
		enum inst_custom_use use;
	} want[] = {
		{"instance-id", INST_CUSTOM_RESERVED}, {"team", INST_CUSTOM_ALL},
		{"namespace", INST_CUSTOM_NOCLOUD},    {"vmName", INST_CUSTOM_NOCLOUD},
		{"public-keys", INST_CUSTOM_RESERVED}, {"zone", INST_CUSTOM_ALL},
	};
	for (size_t i = 0; i < 6; i++) {
		size_t k = 0;
		while (k < m.custom->n && strcmp(m.custom->kv[k].k, want[i].k) != 0)
			k++;
		if (k == m.custom->n || m.custom_use[k] != want[i].use)
			fail_msg("%s: use %d, want %d", want[i].k, k < m.custom->n ? (int)m.custom_use[k] : -1,
				 (int)want[i].use);
	}
	uint64_t gen = m.gen;
	assert_true(inst_meta(&in).gen == gen); /* nothing changed */
	fx_put_file(path, "{\"team\":\"web\"}", 14);
	m = inst_meta(&in);
	assert_true(m.gen != gen);
	assert_int_equal(m.custom->n, 1);
	assert_string_equal(m.custom->kv[0].v, "web");
	gen = m.gen;
	/* Not a JSON object of strings: no custom keys, and said once. */
	fx_put_file(path, "{\"team\":1}", 10);
	m = inst_meta(&in);
	assert_true(m.gen != gen);
	assert_int_equal(m.custom->n, 0);
	inst_close(&in);
}

/* The pod's interfaces: a network-status file that comes after the start,
 * then changes, then breaks. */
static void test_net(void **state)
{
	(void)state;
	char err[256];
	struct instance in;
	char path[600];
	snprintf(path, sizeof(path), "%s/network-status", root);
	struct imds_config c = config(NULL);
	c.network_status_file = path;
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0); /* not there yet: fine */
	struct inst_net n = inst_net(&in);
	assert_int_equal(n.ns->n, 0);
	assert_null(n.ipv4);
	uint64_t gen = n.gen;
	assert_true(inst_net(&in).gen == gen);
	static const char doc[] =
		"[{\"name\":\"demo/br1\",\"interface\":\"pod1\",\"ips\":[\"192.168.10.7\"],"
		"\"mac\":\"02:4b:b0:00:00:01\"},"
		"{\"name\":\"k8s-pod-network\",\"interface\":\"eth0\",\"ips\":[\"fd00::5\",\"10.244.1.5\","
		"\"10.244.1.6\"],\"mac\":\"0a:58:0a:f4:01:05\",\"default\":true}]";
	fx_put_file(path, doc, sizeof(doc) - 1);
	n = inst_net(&in);
	assert_true(n.gen != gen);
	assert_int_equal(n.ns->n, 2);
	assert_non_null(n.ipv4);
	assert_string_equal(n.ipv4, "10.244.1.5"); /* the default network's first IPv4 */
	gen = n.gen;
	assert_true(inst_net(&in).gen == gen);
	fx_put_file(path, "[{\"name\":", 9);
	n = inst_net(&in);
	assert_true(n.gen != gen);
	assert_int_equal(n.ns->n, 0);
	assert_null(n.ipv4);
	inst_close(&in);
}

/* A data file that is set and cannot be read stops the start, named. */
static void test_open_names_the_file(void **state)
{
	(void)state;
	char err[256] = "";
	struct instance in;
	char path[600];
	snprintf(path, sizeof(path), "%s/none", root);
	struct imds_config c = config(NULL);
	c.vendor_data_file = path;
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "IMDS_VENDOR_DATA_FILE"));
	inst_close(&in);
	/* The user-data file wins over the inline value. */
	put("ud", "from the file");
	snprintf(path, sizeof(path), "%s/ud", root);
	c = config(NULL);
	c.user_data = "inline";
	c.user_data_file = path;
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	assert_blob(inst_user_data(&in), "from the file");
	inst_close(&in);
	c.user_data_file = NULL;
	assert_int_equal(inst_open(&in, &c, err, sizeof(err)), 0);
	assert_blob(inst_user_data(&in), "inline");
	assert_null(inst_vendor_data(&in));
	assert_null(inst_network_config(&in));
	inst_close(&in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64),
		cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inline_and_precedence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secret_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_settings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_custom_meta, setup, teardown),
		cmocka_unit_test_setup_teardown(test_net, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_names_the_file, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
