/* openstack: the OpenStack layout (meta_data.json, user_data,
 * network_data.json, its tree and versions) and the key its password
 * service names, through the handler (handler.h).  The password service
 * itself: test_password.c. */
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
#include "openstack.h"

/* ---- OpenStack layout --------------------------------------------------------------------- */

static void test_openstack(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f);
	struct resp r;
	static const char *const roots[] = {"/openstack", "/openstack/"};
	for (size_t i = 0; i < 2; i++) {
		call(a, "GET", roots[i], 0, NULL, &r);
		EXPECT_STATUS(roots[i], &r, 200);
		if (!strstr(r.body, "latest\n") || !strstr(r.body, "2012-08-10\n") ||
		    !strstr(r.body, "2018-08-27\n"))
			fail_msg("%s: versions list \"%s\"", roots[i], r.body);
		resp_free(&r);
	}
	static const char *const lists[] = {"/openstack/latest", "/openstack/latest/",
					    "/openstack/2018-08-27/", "/openstack/2012-08-10"};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		call(a, "GET", lists[i], 0, NULL, &r);
		EXPECT_STATUS(lists[i], &r, 200);
		static const char *const files[] = {"meta_data.json\n", "user_data\n",
						    "vendor_data.json\n", "network_data.json\n"};
		for (size_t k = 0; k < 4; k++)
			if (!strstr(r.body, files[k]))
				fail_msg("%s: no %s in \"%s\"", lists[i], files[k], r.body);
		resp_free(&r);
	}

	static const char *const metas[] = {"/openstack/latest/meta_data.json",
					    "/openstack/2012-08-10/meta_data.json",
					    "/openstack/2017-02-22/meta_data.json"};
	for (size_t i = 0; i < sizeof(metas) / sizeof(metas[0]); i++) {
		call(a, "GET", metas[i], 0, NULL, &r);
		EXPECT_STATUS(metas[i], &r, 200);
		EXPECT_CTYPE(metas[i], &r, "application/json");
		if (!json_object_ok(&r))
			fail_msg("%s: not JSON: %s", metas[i], r.body);
		static const char *const kv[][2] = {{"uuid", "default-vm1"},
						    {"name", "vm1"},
						    {"hostname", "vm1"},
						    {"project_id", "default"}};
		for (size_t k = 0; k < 4; k++) {
			const char *v = json_str(&r, kv[k][0]);
			if (!v || strcmp(v, kv[k][1]) != 0)
				fail_msg("%s: %s = %s, want %s", metas[i], kv[k][0], v ? v : "(none)",
					 kv[k][1]);
		}
		resp_free(&r);
	}
	/* no interface known by the guest's own MAC: no document, a JSON reason */
	call(a, "GET", "/openstack/latest/network_data.json", 0, NULL, &r);
	EXPECT_STATUS("network_data.json", &r, 404);
	if (!json_object_ok(&r) || !strstr(r.body, "\"not_found\""))
		fail_msg("network_data.json: %s", r.body);
	resp_free(&r);
	call(a, "GET", "/openstack/latest/vendor_data.json", 0, NULL, &r);
	EXPECT_STATUS("empty vendor_data.json", &r, 200);
	if (!json_object_ok(&r))
		fail_msg("empty vendor_data.json: %s", r.body);
	if (strstr(r.body, "cloud-init"))
		fail_msg("empty vendor_data.json has a cloud-init key: %s", r.body);
	resp_free(&r);

	/* An instance id that needs escaping; vendor-data wrapped for
	 * cloud-init's OpenStack datasource. */
	static const char vendor[] = "#cloud-config\nruncmd: [\"echo \\\"hi\\\"\"]\n\ttab\x01";
	char vpath[512];
	snprintf(vpath, sizeof(vpath), "%s", in_dir(f, "vendor"));
	put_str(vpath, vendor);
	setenv("IMDS_VENDOR_DATA_FILE", vpath, 1);
	setenv("IMDS_INSTANCE_ID", "i-\"1\"\\", 1);
	a = start(f);
	call(a, "GET", "/openstack/latest/meta_data.json", 0, NULL, &r);
	if (!json_object_ok(&r))
		fail_msg("escaped meta_data.json: not JSON: %s", r.body);
	const char *uuid = json_str(&r, "uuid");
	if (!uuid || strcmp(uuid, "i-\"1\"\\") != 0)
		fail_msg("escaped meta_data.json: uuid %s", uuid ? uuid : "(none)");
	resp_free(&r);
	call(a, "HEAD", "/openstack/latest/vendor_data.json", 0, NULL, &r);
	EXPECT_STATUS("HEAD vendor_data.json", &r, 200);
	resp_free(&r);
	call(a, "GET", "/openstack/latest/vendor_data.json", 0, NULL, &r);
	EXPECT_STATUS("vendor_data.json", &r, 200);
	EXPECT_CTYPE("vendor_data.json", &r, "application/json");
	if (!json_object_ok(&r))
		fail_msg("vendor_data.json: not JSON: %s", r.body);
	const char *ci = json_str(&r, "cloud-init");
	if (!ci || strcmp(ci, vendor) != 0)
		fail_msg("vendor_data.json: cloud-init = %s", ci ? ci : "(none)");
	resp_free(&r);
}

static void test_openstack_tree(void **state)
{
	struct fx *f = *state;
	struct imds_app *a = start(f);
	get_is(a, "/openstack/latest/vendor_data2.json", 200, "{}\n");
	get_is(a, "/openstack/2016-10-06/vendor_data2.json", 200, "{}\n");
	get_is(a, "/openstack/2016-06-30/vendor_data2.json", 404, NULL);
	get_is(a, "/openstack/2016-10-06/", 200,
	       "meta_data.json\nuser_data\nvendor_data.json\nnetwork_data.json\npassword\nvendor_data2.json\n");
	get_is(a, "/openstack/2016-06-30/", 200,
	       "meta_data.json\nuser_data\nvendor_data.json\nnetwork_data.json\npassword\n");
	/* no network-status: no link the guest's MAC names, no document
	 * (cloud-init then configures the first NIC by DHCP) */
	get_is(a, "/openstack/latest/network_data.json", 404, NULL);

	/* no zone known (the pod has no topology label): no key, not "" */
	{
		struct resp r0;
		call(a, "GET", "/openstack/latest/meta_data.json", 0, NULL, &r0);
		if (r0.status != 200 || !strstr(r0.body, "\"project_id\":") ||
		    strstr(r0.body, "availability_zone"))
			fail_msg("meta_data.json without a zone: %d %s", r0.status, r0.body);
		resp_free(&r0);
	}

	/* the pod's secondary networks, the pod network left out */
	put_str(in_dir(f, "ns"), NETSTATUS);
	setenv("IMDS_NETWORK_STATUS_FILE", in_dir(f, "ns"), 1);
	setenv("IMDS_AVAILABILITY_ZONE", "zone-a", 1);
	a = start(f);
	get_is(a, "/openstack/latest/network_data.json", 200,
	       "{\"links\":[{\"id\":\"pod26578a32802\",\"type\":\"phy\","
	       "\"ethernet_mac_address\":\"02:4b:b0:00:00:01\",\"vif_id\":\"demo/br1\"},"
	       "{\"id\":\"link2\",\"type\":\"phy\",\"ethernet_mac_address\":\"02:4b:b0:00:00:02\","
	       "\"vif_id\":\"demo/br2\"}],"
	       "\"networks\":[{\"id\":\"network1\",\"type\":\"ipv4_dhcp\",\"link\":\"pod26578a32802\","
	       "\"network_id\":\"demo/br1\"}],\"services\":[]}\n");
	struct resp r;
	call(a, "GET", "/openstack/latest/meta_data.json", 0, NULL, &r);
	if (!strstr(r.body, "\"availability_zone\":\"zone-a\",\"instance_type\":\"kubevirt\","))
		fail_msg("meta_data.json zone and type: %s", r.body);
	resp_free(&r);
	/* rewritten: the next answer describes the new document */
	put_str(in_dir(f, "ns"), "[]");
	get_is(a, "/openstack/latest/network_data.json", 404, NULL);
	put_str(in_dir(f, "ns"), "not json");
	get_is(a, "/openstack/latest/network_data.json", 404, NULL);
	/* the pod network bridged to the VM (IMDS_INTERFACES: tap0 in bridge
	 * binding): the guest has the pod interface's MAC, its link is listed;
	 * in masquerade (or passt) not */
	put_str(in_dir(f, "ns"), NETSTATUS);
	setenv("IMDS_INTERFACES", "default:bridge:tap0,br1:bridge:tap26578a32802", 1);
	a = start(f);
	get_is(a, "/openstack/latest/network_data.json", 200,
	       "{\"links\":[{\"id\":\"eth0\",\"type\":\"phy\","
	       "\"ethernet_mac_address\":\"0a:58:0a:f4:01:05\",\"vif_id\":\"k8s-pod-network\"},"
	       "{\"id\":\"pod26578a32802\",\"type\":\"phy\","
	       "\"ethernet_mac_address\":\"02:4b:b0:00:00:01\",\"vif_id\":\"demo/br1\"},"
	       "{\"id\":\"link2\",\"type\":\"phy\",\"ethernet_mac_address\":\"02:4b:b0:00:00:02\","
	       "\"vif_id\":\"demo/br2\"}],"
	       "\"networks\":[{\"id\":\"network0\",\"type\":\"ipv4_dhcp\",\"link\":\"eth0\","
	       "\"network_id\":\"k8s-pod-network\"},"
	       "{\"id\":\"network1\",\"type\":\"ipv4_dhcp\",\"link\":\"pod26578a32802\","
	       "\"network_id\":\"demo/br1\"}],\"services\":[]}\n");
	setenv("IMDS_INTERFACES", "default:masquerade:tap0,br1:bridge:tap26578a32802", 1);
	a = start(f);
	call(a, "GET", "/openstack/latest/network_data.json", 0, NULL, &r);
	if (strstr(r.body, "0a:58:0a:f4:01:05") || !strstr(r.body, "02:4b:b0:00:00:01"))
		fail_msg("masquerade on the pod network: its link left out: %s", r.body);
	resp_free(&r);
	setenv("IMDS_INTERFACES", "default:passt", 1);
	a = start(f);
	call(a, "GET", "/openstack/latest/network_data.json", 0, NULL, &r);
	if (strstr(r.body, "0a:58:0a:f4:01:05"))
		fail_msg("passt: the pod network's link left out: %s", r.body);
	resp_free(&r);
	unsetenv("IMDS_INTERFACES");
	/* absent at start (Multus writes it later): read when it comes */
	setenv("IMDS_NETWORK_STATUS_FILE", in_dir(f, "later"), 1);
	a = start(f);
	get_is(a, "/openstack/latest/network_data.json", 404, NULL);
	put_str(in_dir(f, "later"), NETSTATUS);
	call(a, "GET", "/openstack/latest/network_data.json", 0, NULL, &r);
	if (!strstr(r.body, "\"ethernet_mac_address\":\"02:4b:b0:00:00:01\""))
		fail_msg("network_data.json once the file came: %s", r.body);
	resp_free(&r);
}

static void test_password_key(void **state)
{
	struct fx *f = *state;
	ec2_keys(f);
	struct imds_app *a = start(f);
	struct resp r;
	/* no password-key: every key, as before (the choice is cloudbase-init's, logged) */
	call(a, "GET", "/openstack/latest/meta_data.json", 0, NULL, &r);
	if (!strstr(r.body, "\"public_keys\":{\"alice-1\":\"ssh-ed25519 " ED " a@x\",\"alice-2\":"
			    "\"ssh-rsa " RSA " a@y\",\"bob\":\"ssh-rsa " RSA " b@z\"}"))
		fail_msg("every key: %s", r.body);
	resp_free(&r);
	/* alice: her RSA key alone (the ed25519 one comes first in her entry) */
	setenv("IMDS_PASSWORD_KEY", "alice", 1);
	a = start(f);
	call(a, "GET", "/openstack/latest/meta_data.json", 0, NULL, &r);
	if (!strstr(r.body, "\"public_keys\":{\"alice-2\":\"ssh-rsa " RSA " a@y\"},\"keys\":[{\"name\":"
			    "\"alice-2\",\"type\":\"ssh\",\"data\":\"ssh-rsa " RSA " a@y\"}],"))
		fail_msg("password-key alice: %s", r.body);
	resp_free(&r);
	/* the other layouts keep every key (Linux guests install them all) */
	call(a, "GET", "/v1/meta-data", 0, NULL, &r);
	if (!strstr(r.body, "ssh-ed25519") || !strstr(r.body, "b@z"))
		fail_msg("NoCloud with password-key: %s", r.body);
	resp_free(&r);
	get_is(a, "/latest/meta-data/public-keys", 200, "0=alice-1\n1=alice-2\n2=bob");
	/* an entry without an RSA key, or none of that name: no key listed */
	put_str(in_dir(f, "keys/carol"), "ssh-ed25519 " ED " c@x\n");
	static const char *const none[] = {"carol", "dave"};
	for (size_t i = 0; i < 2; i++) {
		setenv("IMDS_PASSWORD_KEY", none[i], 1);
		a = start(f);
		call(a, "GET", "/openstack/latest/meta_data.json", 0, NULL, &r);
		if (!strstr(r.body, "\"public_keys\":{},\"meta\":{"))
			fail_msg("password-key %s: %s", none[i], r.body);
		resp_free(&r);
	}
	/* the setting itself: a Secret key, and only with a keys folder */
	char err[256];
	setenv("IMDS_PASSWORD_KEY", "../x", 1);
	assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "IMDS_PASSWORD_KEY"));
	setenv("IMDS_PASSWORD_KEY", "alice", 1);
	unsetenv("IMDS_SSH_KEYS_DIR");
	assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "IMDS_SSH_KEYS_DIR"));
}

/* The table of files against what is served: for every version the
 * layout lists (and one before the first, one past the last), a file
 * answers 200 exactly when the version's listing names it, and every file
 * of the table is listed by latest: the listing is derived from the rows,
 * the routes serve them.  With user-data and a bridged pod NIC, every
 * listed file has data (none: Nova's 404 with a reason). */
static void test_openstack_table(void **state)
{
	struct fx *f = *state;
	put_str(in_dir(f, "ud"), "#cloud-config\n");
	setenv("IMDS_USER_DATA_FILE", in_dir(f, "ud"), 1);
	put_str(in_dir(f, "ns"), NETSTATUS);
	setenv("IMDS_NETWORK_STATUS_FILE", in_dir(f, "ns"), 1);
	setenv("IMDS_INTERFACES", "default:bridge:tap0", 1);
	struct imds_app *a = start(f);
	struct resp r;
	call(a, "GET", "/openstack", 0, NULL, &r);
	EXPECT_STATUS("/openstack", &r, 200);
	char versions[512];
	snprintf(versions, sizeof(versions), "2011-01-01\n%s2030-01-01\n", r.body);
	resp_free(&r);
	unsigned answered = 0, versions_n = 0;
	for (char *v = versions, *e; (e = strchr(v, '\n')); v = e + 1) {
		*e = '\0';
		char target[256], listing[512];
		snprintf(target, sizeof(target), "/openstack/%.40s/", v);
		call(a, "GET", target, 0, NULL, &r);
		EXPECT_STATUS(target, &r, 200);
		snprintf(listing, sizeof(listing), "%s", r.body);
		resp_free(&r);
		versions_n++;
		for (size_t i = 0; openstack_file_name(i); i++) {
			char line[64];
			snprintf(line, sizeof(line), "%s\n", openstack_file_name(i));
			int listed = strstr(listing, line) != NULL;
			snprintf(target, sizeof(target), "/openstack/%.40s/%s", v, openstack_file_name(i));
			call(a, "GET", target, 0, NULL, &r);
			if ((r.status == 200) != listed)
				fail_msg("%s: answers %d, %s in the version's listing:\n%s", target, r.status,
					 listed ? "named" : "not named", listing);
			if (r.status != 200 && r.status != 404)
				fail_msg("%s: answers %d", target, r.status);
			answered += r.status == 200;
			resp_free(&r);
		}
		/* nothing listed that is not a row */
		size_t lines = 0, rows = 0;
		for (const char *p = listing; (p = strchr(p, '\n')); p++)
			lines++;
		for (size_t i = 0; openstack_file_name(i); i++)
			rows += strstr(listing, openstack_file_name(i)) != NULL;
		assert_int_equal(lines, rows);
	}
	size_t nrows = 0;
	while (openstack_file_name(nrows))
		nrows++;
	call(a, "GET", "/openstack/latest/", 0, NULL, &r);
	for (size_t i = 0; i < nrows; i++)
		if (!strstr(r.body, openstack_file_name(i)))
			fail_msg("latest does not list %s", openstack_file_name(i));
	resp_free(&r);
	assert_true(versions_n > 3 && answered > versions_n * 4);
	/* The route table's file rows are the table's, derived: one per file,
	 * no other. */
	size_t routed = 0;
	for (size_t i = 0; imds_route_pattern(i); i++) {
		const char *p = imds_route_pattern(i);
		const char *pre = "/openstack/{v}/";
		if (strncmp(p, pre, strlen(pre)) != 0 || !p[strlen(pre)])
			continue;
		size_t j = 0;
		while (openstack_file_name(j) && strcmp(openstack_file_name(j), p + strlen(pre)) != 0)
			j++;
		if (!openstack_file_name(j))
			fail_msg("route %s: no row of the table of files", p);
		routed++;
	}
	assert_int_equal(routed, nrows);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_openstack),
		T(test_openstack_tree),
		T(test_password_key),
		T(test_openstack_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
