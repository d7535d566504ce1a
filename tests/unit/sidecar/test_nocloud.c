/* nocloud: the NoCloud layout (/v1/meta-data, user-data, vendor-data,
 * network-config), the files it reads and their candidates, and the SSH
 * keys and custom meta-data it shares with OpenStack's meta_data.json,
 * through the handler (handler.h). */
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

static void test_meta_data(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f);
	struct resp r;
	call(a, "GET", "/v1/meta-data", 0, NULL, &r);
	EXPECT_STATUS("meta-data", &r, 200);
	EXPECT_CTYPE("meta-data", &r, "text/yaml");
	EXPECT_BODY("meta-data", &r, "instance-id: default-vm1\nlocal-hostname: vm1\n");
	resp_free(&r);
	/* YAML-quoted where a reader would see a bool or a number. */
	setenv("IMDS_INSTANCE_ID", "no", 1);
	setenv("IMDS_VM_NAME", "0x1f", 1);
	a = start(f);
	call(a, "GET", "/v1/meta-data", 0, NULL, &r);
	EXPECT_BODY("quoted meta-data", &r, "instance-id: \"no\"\nlocal-hostname: \"0x1f\"\n");
	resp_free(&r);
}

static void test_user_data(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f);
	struct resp r;
	/* None: an empty 200 for NoCloud, 404 in the OpenStack layout. */
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_STATUS("no user-data", &r, 200);
	EXPECT_BODY("no user-data", &r, "");
	resp_free(&r);
	call(a, "GET", "/openstack/latest/user_data", 0, NULL, &r);
	expect_error("no OpenStack user_data", &r, 404, "not_found");
	resp_free(&r);

	/* Inline. */
	setenv("IMDS_USER_DATA", "#cloud-config\nhostname: inline\n", 1);
	a = start(f);
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_STATUS("inline", &r, 200);
	EXPECT_CTYPE("inline", &r, "application/octet-stream");
	EXPECT_BODY("inline", &r, "#cloud-config\nhostname: inline\n");
	resp_free(&r);
	call(a, "GET", "/openstack/2013-10-17/user_data", 0, NULL, &r);
	EXPECT_STATUS("inline OpenStack", &r, 200);
	EXPECT_BODY("inline OpenStack", &r, "#cloud-config\nhostname: inline\n");
	resp_free(&r);

	/* Set but empty: like none. */
	setenv("IMDS_USER_DATA", "", 1);
	a = start(f);
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_STATUS("empty inline", &r, 200);
	EXPECT_BODY("empty inline", &r, "");
	resp_free(&r);
	call(a, "GET", "/openstack/latest/user_data", 0, NULL, &r);
	expect_error("empty inline OpenStack", &r, 404, "not_found");
	resp_free(&r);

	/* The file wins over the variable, bytes exactly (NUL included). */
	static const char v1[] = "#cloud-config\nfrom: file\n\0binary\xff";
	const char *path = in_dir(f, "user-data");
	char upath[512];
	snprintf(upath, sizeof(upath), "%s", path);
	put_file(upath, v1, sizeof(v1) - 1);
	setenv("IMDS_USER_DATA", "#cloud-config\nfrom: env\n", 1);
	setenv("IMDS_USER_DATA_FILE", upath, 1);
	a = start(f);
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_STATUS("file wins", &r, 200);
	assert_int_equal(r.len, sizeof(v1) - 1);
	assert_memory_equal(r.body, v1, sizeof(v1) - 1);
	resp_free(&r);

	/* Replaced by rename (kubelet's ..data swap): the next answer has it. */
	put_str(upath, "#cloud-config\nversion: 2\n");
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_BODY("after rename", &r, "#cloud-config\nversion: 2\n");
	resp_free(&r);
	call(a, "GET", "/openstack/latest/user_data", 0, NULL, &r);
	EXPECT_BODY("after rename, OpenStack", &r, "#cloud-config\nversion: 2\n");
	resp_free(&r);
	put_str(upath, "v3");
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_BODY("second rename", &r, "v3");
	resp_free(&r);

	/* Emptied file: the variable does not come back. */
	put_str(upath, "");
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_STATUS("emptied file", &r, 200);
	EXPECT_BODY("emptied file", &r, "");
	resp_free(&r);

	/* A file that vanished: the last bytes are still served. */
	put_str(upath, "last");
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_BODY("before unlink", &r, "last");
	resp_free(&r);
	assert_int_equal(unlink(upath), 0);
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_STATUS("after unlink", &r, 200);
	EXPECT_BODY("after unlink", &r, "last");
	resp_free(&r);
}

/* A data-file setting may list up to 4 candidate paths, "a:b": the first
 * that exists is served, re-chosen on every request. */
static void test_user_data_candidates(void **state)
{
	struct fx *f = *state;
	char first[512], second[512], list[1100];
	snprintf(first, sizeof(first), "%s", in_dir(f, "userdata"));
	snprintf(second, sizeof(second), "%s", in_dir(f, "user-data"));
	snprintf(list, sizeof(list), "%s:%s", first, second);
	put_str(second, "from second");
	setenv("IMDS_USER_DATA_FILE", list, 1);
	struct imds_app *a = start(f);
	struct resp r;
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_BODY("only the second exists", &r, "from second");
	resp_free(&r);
	put_str(first, "from first");
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_BODY("the first appears", &r, "from first");
	resp_free(&r);
	put_str(second, "second again");
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_BODY("the first still wins", &r, "from first");
	resp_free(&r);
	assert_int_equal(unlink(first), 0);
	call(a, "GET", "/v1/user-data", 0, NULL, &r);
	EXPECT_BODY("the first removed", &r, "second again");
	resp_free(&r);

	/* Refused at start: too many candidates, none at all, none present. */
	static const char *const bad[] = {"/a:/b:/c:/d:/e", ":", "/no/such/a:/no/such/b"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		imds_app_free(f->app);
		f->app = NULL;
		setenv("IMDS_USER_DATA_FILE", bad[i], 1);
		char err[256] = "";
		assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), 0);
		a = imds_app_new(NULL, &f->cfg, err, sizeof(err));
		if (a) {
			imds_app_free(a);
			fail_msg("IMDS_USER_DATA_FILE='%s': the app started", bad[i]);
		}
		if (!strstr(err, "IMDS_USER_DATA_FILE"))
			fail_msg("IMDS_USER_DATA_FILE='%s': error \"%s\" does not name it", bad[i], err);
	}
}

static void test_missing_files_at_start(void **state)
{
	struct fx *f = *state;
	static const char *const vars[] = {"IMDS_USER_DATA_FILE", "IMDS_VENDOR_DATA_FILE",
					   "IMDS_NETWORK_CONFIG_FILE"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		fx_env_clear();
		setenv("IMDS_NAMESPACE", "default", 1);
		setenv("IMDS_VM_NAME", "vm1", 1);
		setenv("IMDS_TOKEN_PATH", f->token, 1);
		setenv(vars[i], in_dir(f, "does-not-exist"), 1);
		char err[256] = "";
		assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), 0);
		struct imds_app *a = imds_app_new(NULL, &f->cfg, err, sizeof(err));
		if (a) {
			imds_app_free(a);
			fail_msg("%s missing: the app started", vars[i]);
		}
		if (!strstr(err, vars[i]))
			fail_msg("%s missing: error \"%s\" does not name it", vars[i], err);
	}
}

static void test_vendor_and_network(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f);
	static const char *const paths[] = {"/v1/vendor-data", "/v1/network-config"};
	for (size_t i = 0; i < 2; i++) {
		struct resp r;
		call(a, "GET", paths[i], 0, NULL, &r);
		EXPECT_STATUS(paths[i], &r, 200);
		EXPECT_BODY(paths[i], &r, "");
		resp_free(&r);
	}
	char vpath[512], npath[512];
	snprintf(vpath, sizeof(vpath), "%s", in_dir(f, "vendor"));
	snprintf(npath, sizeof(npath), "%s", in_dir(f, "netcfg"));
	put_str(vpath, "#cloud-config\npackages: [curl]\n");
	put_str(npath, "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n");
	setenv("IMDS_VENDOR_DATA_FILE", vpath, 1);
	setenv("IMDS_NETWORK_CONFIG_FILE", npath, 1);
	a = start(f);
	struct resp r;
	call(a, "GET", "/v1/vendor-data", 0, NULL, &r);
	EXPECT_STATUS("vendor-data", &r, 200);
	EXPECT_BODY("vendor-data", &r, "#cloud-config\npackages: [curl]\n");
	resp_free(&r);
	call(a, "GET", "/v1/network-config", 0, NULL, &r);
	EXPECT_STATUS("network-config", &r, 200);
	EXPECT_CTYPE("network-config", &r, "text/yaml");
	EXPECT_BODY("network-config", &r, "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n");
	resp_free(&r);
	put_str(npath, "version: 1\n");
	put_str(vpath, "v2");
	call(a, "GET", "/v1/network-config", 0, NULL, &r);
	EXPECT_BODY("network-config after rename", &r, "version: 1\n");
	resp_free(&r);
	call(a, "GET", "/v1/vendor-data", 0, NULL, &r);
	EXPECT_BODY("vendor-data after rename", &r, "v2");
	resp_free(&r);
}

static void test_ssh_keys(void **state)
{
	struct fx *f = *state;
	char keys[512], cmd[1200];
	snprintf(keys, sizeof(keys), "%s", in_dir(f, "keys"));
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/..1 && cd %s && ln -s ..1 ..data && ln -s ..data/bob bob && "
		 "ln -s ..data/alice alice", keys, keys);
	assert_int_equal(system(cmd), 0);
	put_str(in_dir(f, "keys/..1/alice"), "ssh-ed25519 " ED " a@x\n# c\nbogus\nssh-rsa " RSA "\n");
	put_str(in_dir(f, "keys/..1/bob"), "ssh-ed25519 " ED " b@y\n");
	setenv("IMDS_SSH_KEYS_DIR", keys, 1);
	struct imds_app *a = start(f);
	struct resp r;
	call(a, "GET", "/v1/meta-data", 0, NULL, &r);
	EXPECT_STATUS("meta-data with keys", &r, 200);
	EXPECT_BODY("meta-data with keys", &r,
		    "instance-id: default-vm1\nlocal-hostname: vm1\npublic-keys:\n"
		    "  - \"ssh-ed25519 " ED " a@x\"\n  - \"ssh-rsa " RSA "\"\n"
		    "  - \"ssh-ed25519 " ED " b@y\"\n");
	resp_free(&r);
	call(a, "GET", "/openstack/latest/meta_data.json", 0, NULL, &r);
	if (!json_object_ok(&r))
		fail_msg("meta_data.json with keys: not JSON: %s", r.body);
	if (!strstr(r.body, "\"public_keys\":{\"alice-1\":\"ssh-ed25519 " ED " a@x\","
			    "\"alice-2\":\"ssh-rsa " RSA "\",\"bob\":\"ssh-ed25519 " ED " b@y\"}") ||
	    !strstr(r.body, "\"keys\":[{\"name\":\"alice-1\",\"type\":\"ssh\",\"data\":\"ssh-ed25519 " ED
			    " a@x\"},{\"name\":\"alice-2\",\"type\":\"ssh\"") ||
	    !strstr(r.body, "{\"name\":\"bob\",\"type\":\"ssh\",\"data\":\"ssh-ed25519 " ED " b@y\"}]"))
		fail_msg("meta_data.json keys: %s", r.body);
	resp_free(&r);

	/* The Secret changes: the next answer has the new keys. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && mkdir ..2 && printf 'ssh-rsa %s new\\n' >..2/bob && ln -s ..2 ..tmp && "
		 "mv -T ..tmp ..data && rm -rf ..1", keys, RSA);
	assert_int_equal(system(cmd), 0);
	call(a, "GET", "/v1/meta-data", 0, NULL, &r);
	EXPECT_BODY("meta-data after the swap", &r,
		    "instance-id: default-vm1\nlocal-hostname: vm1\npublic-keys:\n"
		    "  - \"ssh-rsa " RSA " new\"\n");
	resp_free(&r);
	call(a, "GET", "/openstack/latest/meta_data.json", 0, NULL, &r);
	if (!strstr(r.body, "\"public_keys\":{\"bob\":\"ssh-rsa " RSA " new\"},\"keys\":[{"))
		fail_msg("meta_data.json after the swap: %s", r.body);
	resp_free(&r);

	/* A folder that is not there: the sidecar does not start, naming it. */
	setenv("IMDS_SSH_KEYS_DIR", in_dir(f, "nope"), 1);
	char err[256];
	assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), 0);
	imds_app_free(f->app);
	f->app = imds_app_new(NULL, &f->cfg, err, sizeof(err));
	assert_null(f->app);
	assert_non_null(strstr(err, "IMDS_SSH_KEYS_DIR"));
}

static void test_custom_meta_data(void **state)
{
	struct fx *f = *state;
	char md[512];
	snprintf(md, sizeof(md), "%s", in_dir(f, "meta"));
	put_str(md, "{\"role\":\"db\",\"instance-id\":\"evil\",\"no\":\"yes\","
		    "\"namespace\":\"x\",\"snow\":\"\\u2603\\n\"}");
	setenv("IMDS_META_DATA_FILE", md, 1);
	struct imds_app *a = start(f);
	struct resp r;
	call(a, "GET", "/v1/meta-data", 0, NULL, &r);
	/* after ours; YAML-quoted where needed; a reserved key dropped */
	EXPECT_BODY("custom meta-data", &r,
		    "instance-id: default-vm1\nlocal-hostname: vm1\nrole: db\n\"no\": \"yes\"\n"
		    "namespace: x\nsnow: \"\xe2\x98\x83\\n\"\n");
	resp_free(&r);
	call(a, "GET", "/openstack/latest/meta_data.json", 0, NULL, &r);
	if (!json_object_ok(&r) ||
	    !strstr(r.body, "\"meta\":{\"namespace\":\"default\",\"vmName\":\"vm1\",\"role\":\"db\","
			    "\"no\":\"yes\",\"snow\":\"\xe2\x98\x83\\n\"}}"))
		fail_msg("meta_data.json meta: %s", r.body);
	resp_free(&r);

	/* Rewritten: the next answer follows; not an object of strings: left out. */
	put_str(md, "{\"role\":\"web\"}");
	call(a, "GET", "/v1/meta-data", 0, NULL, &r);
	EXPECT_BODY("custom meta-data rewritten", &r,
		    "instance-id: default-vm1\nlocal-hostname: vm1\nrole: web\n");
	resp_free(&r);
	put_str(md, "{\"role\":1}");
	call(a, "GET", "/v1/meta-data", 0, NULL, &r);
	EXPECT_STATUS("custom meta-data broken", &r, 200);
	EXPECT_BODY("custom meta-data broken", &r, "instance-id: default-vm1\nlocal-hostname: vm1\n");
	resp_free(&r);
	put_str(md, "");
	call(a, "GET", "/v1/meta-data", 0, NULL, &r);
	EXPECT_BODY("custom meta-data empty", &r, "instance-id: default-vm1\nlocal-hostname: vm1\n");
	resp_free(&r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_meta_data),
		T(test_user_data),
		T(test_user_data_candidates),
		T(test_missing_files_at_start),
		T(test_vendor_and_network),
		T(test_ssh_keys),
		T(test_custom_meta_data),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
