/* ec2: the EC2 tree (meta-data, user-data, dynamic, its listings) and
 * IMDSv2's sessions on it, through the handler (handler.h); each of its
 * tables (a version's parts, the meta-data/ and dynamic/ trees) held to its
 * listings and the parts to their routes. */
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

#include "ec2.h"
#include "handler.h"

static void test_ec2_tree(void **state)
{
	struct fx *f = *state;
	ec2_keys(f);
	put_str(in_dir(f, "ns"), NETSTATUS);
	setenv("IMDS_NETWORK_STATUS_FILE", in_dir(f, "ns"), 1);
	setenv("IMDS_AVAILABILITY_ZONE", "zone-a", 1);
	setenv("IMDS_REGION", "region-1", 1);
	struct imds_app *a = start(f);
	get_is(a, "/", 200, "1.0\n2009-04-04\n2016-09-02\n2018-09-24\n2021-03-23\nlatest");
	/* no user-data: not listed, 404 as EC2 */
	get_is(a, "/latest", 200, "dynamic\nmeta-data");
	get_is(a, "/latest/user-data", 404, NULL);
	static const char root[] = "events/\nhostname\ninstance-id\ninstance-type\nlocal-hostname\nlocal-ipv4\n"
				   "placement/\npublic-keys/";
	static const char *const roots[] = {"/latest/meta-data", "/latest/meta-data/",
					    "/2009-04-04/meta-data/", "/1.0/meta-data/",
					    "/2021-03-23/meta-data"};
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		get_is(a, roots[i], 200, root);
	get_is(a, "/latest/meta-data/hostname", 200, "vm1");
	get_is(a, "/latest/meta-data/local-hostname", 200, "vm1");
	get_is(a, "/latest/meta-data/instance-id", 200, "default-vm1");
	get_is(a, "/latest/meta-data/instance-type", 200, "kubevirt");
	get_is(a, "/latest/meta-data/local-ipv4", 200, "10.244.1.5");
	get_is(a, "/latest/meta-data/placement", 200, "availability-zone\nregion");
	get_is(a, "/latest/meta-data/placement/availability-zone", 200, "zone-a");
	/* botocore asks for the leaf with a trailing slash */
	get_is(a, "/latest/meta-data/placement/availability-zone/", 200, "zone-a");
	get_is(a, "/latest/meta-data/placement/region", 200, "region-1");
	get_is(a, "/latest/meta-data/public-keys", 200, "0=alice-1\n1=alice-2\n2=bob");
	get_is(a, "/latest/meta-data/public-keys/", 200, "0=alice-1\n1=alice-2\n2=bob");
	get_is(a, "/latest/meta-data/public-keys/1", 200, "openssh-key");
	get_is(a, "/latest/meta-data/public-keys/1/", 200, "openssh-key");
	get_is(a, "/latest/meta-data/public-keys/0/openssh-key", 200, "ssh-ed25519 " ED " a@x");
	get_is(a, "/latest/meta-data/public-keys/2/openssh-key", 200, "ssh-rsa " RSA " b@z");
	static const char *const missing[] = {
		"/latest/meta-data/public-keys/3", "/latest/meta-data/public-keys/01",
		"/latest/meta-data/public-keys/-1", "/latest/meta-data/public-keys/1/x",
		"/latest/meta-data/public-keys/1/openssh-keyx", "/latest/meta-data/public-keys/1000",
		"/latest/meta-data/placement/x", "/latest/meta-data/ami-id", "/latest/meta-data/hostnamex",
		"/latest/meta-data/hostname/x", "/latest/dynamic/instance-identity/x",
		"/latest/dynamic/x", "/2009-04-04x/meta-data/", "/99/meta-data/",
	};
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
		struct resp r;
		call(a, "GET", missing[i], 0, NULL, &r);
		expect_error(missing[i], &r, 404, "not_found");
		resp_free(&r);
	}
	get_is(a, "/latest/dynamic", 200, "instance-identity/");
	get_is(a, "/latest/dynamic/", 200, "instance-identity/");
	get_is(a, "/latest/dynamic/instance-identity", 200, "document");
	get_is(a, "/latest/dynamic/instance-identity/", 200, "document");
	struct resp r;
	call(a, "GET", "/latest/dynamic/instance-identity/document", 0, NULL, &r);
	EXPECT_STATUS("document", &r, 200);
	if (!json_object_ok(&r) || !strstr(r.body, "\"availabilityZone\":\"zone-a\",\"instanceId\":"
					       "\"default-vm1\",\"instanceType\":\"kubevirt\","
					       "\"privateIp\":\"10.244.1.5\",\"region\":\"region-1\","
					       "\"version\":\"2017-09-30\"}\n"))
		fail_msg("document: %s", r.body);
	if (!strstr(r.extra, "ETag: \""))
		fail_msg("document: no ETag in %s", r.extra);
	resp_free(&r);
	/* HEAD: the same answer */
	call(a, "HEAD", "/latest/meta-data/instance-id", 0, NULL, &r);
	EXPECT_STATUS("HEAD instance-id", &r, 200);
	resp_free(&r);

	/* user-data appears: listed and served byte-exact */
	put_str(in_dir(f, "ud"), "#!/bin/sh\necho hi\n");
	setenv("IMDS_USER_DATA_FILE", in_dir(f, "ud"), 1);
	setenv("IMDS_INSTANCE_TYPE", "u1.small", 1);
	unsetenv("IMDS_AVAILABILITY_ZONE");
	a = start(f);
	get_is(a, "/latest/", 200, "dynamic\nmeta-data\nuser-data");
	get_is(a, "/latest/user-data", 200, "#!/bin/sh\necho hi\n");
	get_is(a, "/latest/meta-data/instance-type", 200, "u1.small");
	get_is(a, "/latest/meta-data/placement/", 200, "region");
	get_is(a, "/latest/meta-data/placement/availability-zone", 404, NULL);
	call(a, "GET", "/latest/dynamic/instance-identity/document", 0, NULL, &r);
	if (!strstr(r.body, "\"availabilityZone\":null,"))
		fail_msg("document without a zone: %s", r.body);
	resp_free(&r);
	/* The network-status changes (Multus rewrites it): local-ipv4 follows;
	 * a document that is not one leaves no address, and the name goes. */
	put_str(in_dir(f, "ns"), "[{\"interface\":\"eth0\",\"ips\":[\"10.1.2.3\"],\"default\":true}]");
	get_is(a, "/latest/meta-data/local-ipv4", 200, "10.1.2.3");
	put_str(in_dir(f, "ns"), "[{\"interface\":\"eth0\",\"ips\":[\"10.1.2.300\"],\"default\":true}]");
	get_is(a, "/latest/meta-data/local-ipv4", 404, NULL);
	get_is(a, "/latest/meta-data/", 200,
	       "events/\nhostname\ninstance-id\ninstance-type\nlocal-hostname\nplacement/\npublic-keys/");
}

static void test_ec2_sessions(void **state)
{
	struct fx *f = *state;
	put_str(f->token, "tok-1");
	struct imds_app *a = start(f);
	struct resp r;
	static const char *const ttl[] = {"X-aws-ec2-metadata-token-ttl-seconds", "21600", NULL};
	call(a, "PUT", "/latest/api/token", 1000, ttl, &r);
	EXPECT_STATUS("PUT /latest/api/token", &r, 200);
	assert_int_equal(r.len, SESSION_TOKEN_LEN);
	EXPECT_HEADER("PUT /latest/api/token", &r, "X-aws-ec2-metadata-token-ttl-seconds: 21600");
	char tok[SESSION_TOKEN_LEN + 1];
	memcpy(tok, r.body, sizeof(tok));
	resp_free(&r);
	/* each route takes its own TTL header */
	static const char *const v1ttl[] = {"X-Metadata-Token-TTL-Seconds", "60", NULL};
	call(a, "PUT", "/latest/api/token", 1000, v1ttl, &r);
	expect_error("EC2 token with our TTL header", &r, 400, "bad_ttl");
	if (!strstr(r.body, "X-aws-ec2-metadata-token-ttl-seconds"))
		fail_msg("bad_ttl message names the header: %s", r.body);
	resp_free(&r);
	call(a, "PUT", "/v1/session", 1000, ttl, &r);
	expect_error("our session with EC2's TTL header", &r, 400, "bad_ttl");
	resp_free(&r);
	static const char *const badttl[] = {"X-aws-ec2-metadata-token-ttl-seconds", "21601", NULL};
	call(a, "PUT", "/latest/api/token", 1000, badttl, &r);
	expect_error("TTL past 6 h", &r, 400, "bad_ttl");
	resp_free(&r);
	static const char *const fwd[] = {"X-aws-ec2-metadata-token-ttl-seconds", "60",
					  "X-Forwarded-For", "10.0.0.1", NULL};
	call(a, "PUT", "/latest/api/token", 1000, fwd, &r);
	expect_error("EC2 token through a proxy", &r, 403, "forbidden");
	resp_free(&r);
	call(a, "GET", "/latest/api/token", 1000, NULL, &r);
	expect_error("GET of the token path", &r, 405, "method_not_allowed");
	EXPECT_HEADER("GET of the token path", &r, "Allow: PUT");
	resp_free(&r);
	/* either header carries it, on any path */
	const char *h1[] = {"X-aws-ec2-metadata-token", tok, "Metadata", "true", NULL};
	call(a, "GET", "/v1/token", 2000, h1, &r);
	EXPECT_STATUS("/v1/token with the EC2 header", &r, 200);
	resp_free(&r);
	const char *h2[] = {"X-Metadata-Token", tok, NULL};
	call(a, "GET", "/latest/meta-data/instance-id", 2000, h2, &r);
	EXPECT_STATUS("EC2 path with our header", &r, 200);
	resp_free(&r);
	/* a bad one in either header is 401, even beside a good one */
	const char *h3[] = {"X-Metadata-Token", tok, "X-aws-ec2-metadata-token", "x", NULL};
	call(a, "GET", "/latest/meta-data/instance-id", 2000, h3, &r);
	expect_error("good and bad token", &r, 401, "invalid_token");
	resp_free(&r);
	const char *h4[] = {"X-aws-ec2-metadata-token", tok, "X-aws-ec2-metadata-token", tok, NULL};
	call(a, "GET", "/latest/meta-data/instance-id", 2000, h4, &r);
	expect_error("the EC2 header twice", &r, 401, "invalid_token");
	resp_free(&r);
	/* expired after its TTL */
	call(a, "GET", "/latest/meta-data/instance-id", 1000 + 21600ull * 1000000u, h2, &r);
	expect_error("expired EC2 token", &r, 401, "invalid_token");
	resp_free(&r);

	/* required: every EC2 read needs one; NoCloud and OpenStack do not */
	setenv("IMDS_SESSION", "required", 1);
	a = start(f);
	static const char *const gated[] = {"/", "/latest", "/latest/meta-data/",
					    "/latest/meta-data/instance-id", "/latest/user-data",
					    "/latest/dynamic/instance-identity/document"};
	for (size_t i = 0; i < sizeof(gated) / sizeof(gated[0]); i++) {
		call(a, "GET", gated[i], 1000, NULL, &r);
		expect_error(gated[i], &r, 401, "session_required");
		resp_free(&r);
	}
	get_is(a, "/v1/meta-data", 200, NULL);
	get_is(a, "/openstack/latest/meta_data.json", 200, NULL);
	call(a, "PUT", "/latest/api/token", 1000, ttl, &r);
	memcpy(tok, r.body, sizeof(tok));
	resp_free(&r);
	const char *h5[] = {"X-aws-ec2-metadata-token", tok, NULL};
	call(a, "GET", "/latest/meta-data/instance-id", 2000, h5, &r);
	EXPECT_STATUS("required, with a token", &r, 200);
	EXPECT_BODY("required, with a token", &r, "default-vm1");
	resp_free(&r);
}

/* ---- the tables against their listings: the version's parts, its trees ------------- */

/* GET target: its status; the body into out (cap bytes, NUL-terminated). */
static int get_body(struct imds_app *a, const char *target, char *out, size_t cap)
{
	struct resp r;
	call(a, "GET", target, 0, NULL, &r);
	int st = r.status;
	snprintf(out, cap, "%s", r.body ? r.body : "");
	resp_free(&r);
	return st;
}

/* 1 when the listing names name, as a leaf or (folder) a folder ("name/"). */
static int lists_as(const char *listing, const char *name, int folder)
{
	size_t n = strlen(name);
	for (const char *l = listing; *l;) {
		const char *e = strchr(l, '\n');
		size_t ln = e ? (size_t)(e - l) : strlen(l);
		if ((ln == n || (folder && ln == n + 1 && l[n] == '/')) && memcmp(l, name, n) == 0)
			return 1;
		l += ln + (e != NULL);
	}
	return 0;
}

static int lists(const char *listing, const char *name)
{
	return lists_as(listing, name, 1);
}

/* Every name a listing under root names answers 200 (a folder, with its
 * '/', a listing crawled in turn; public-keys/'s "N=name" is N/).  The
 * names answered, counted in *n. */
static void crawl(struct imds_app *a, const char *root, unsigned *n)
{
	char listing[4096];
	int st = get_body(a, root, listing, sizeof(listing));
	if (st != 200)
		fail_msg("%s: listed, answers %d", root, st);
	++*n;
	for (char *l = listing, *e; *l; l = e ? e + 1 : l + strlen(l)) {
		e = strchr(l, '\n');
		if (e)
			*e = '\0';
		char name[256], path[512];
		snprintf(name, sizeof(name), "%.200s", l);
		char *eq = strchr(name, '=');
		if (eq)
			strcpy(eq, "/");
		snprintf(path, sizeof(path), "%s%s", root, name);
		if (path[strlen(path) - 1] == '/') {
			crawl(a, path, n);
		} else {
			char body[4096];
			st = get_body(a, path, body, sizeof(body));
			if (st != 200)
				fail_msg("%s: listed, answers %d", path, st);
			++*n;
		}
	}
}

/* A tree's table (meta-data/ or dynamic/, path(i) its rows) against what
 * is served under /ver/part/: its rows sorted (each listing comes out
 * sorted), each row's folder a row, each row answered 200 exactly when its
 * folder's listing names it; and every name the part's listings name
 * answers.  The rows answered, in *there. */
static void tree_and_listings(struct imds_app *a, const char *ver, const char *part,
			      const char *(*path)(size_t), unsigned *there)
{
	char target[512], listing[4096], body[4096];
	*there = 0;
	for (size_t i = 0; path(i); i++) {
		const char *p = path(i);
		if (i && strcmp(path(i - 1), p) >= 0)
			fail_msg("%s: row '%s' after '%s': the table is sorted", part, p, path(i - 1));
		const char *slash = strrchr(p, '/');
		size_t dn = slash ? (size_t)(slash - p) : 0;
		if (slash) {
			int parent = 0;
			for (size_t j = 0; j < i; j++)
				parent |= strlen(path(j)) == dn && memcmp(path(j), p, dn) == 0;
			if (!parent)
				fail_msg("%s: row '%s' has no row for its folder", part, p);
		}
		snprintf(target, sizeof(target), "/%s/%s/%.*s%s", ver, part, (int)dn, p, dn ? "/" : "");
		int pst = get_body(a, target, listing, sizeof(listing));
		snprintf(target, sizeof(target), "/%s/%s/%s", ver, part, p);
		int st = get_body(a, target, body, sizeof(body));
		int listed = pst == 200 && lists(listing, slash ? slash + 1 : p);
		if (st != 200 && st != 404)
			fail_msg("%s: answers %d", target, st);
		if ((st == 200) != listed)
			fail_msg("%s: answers %d, %s in its folder's listing:\n%s", target, st,
				 listed ? "named" : "not named", pst == 200 ? listing : "(no listing)");
		*there += st == 200;
	}
	unsigned n = 0;
	snprintf(target, sizeof(target), "/%s/%s/", ver, part);
	crawl(a, target, &n);
}

/* The version's table of parts against GET /ver/: each part answered 200
 * exactly when the listing names it (bare, as EC2's), nothing listed that is
 * not a part; then each tree's table against its listings.  The rows of
 * meta-data/ answered, in *there. */
static void rows_and_listings(struct imds_app *a, const char *ver, unsigned *there)
{
	char target[512], listing[4096], body[4096];
	snprintf(target, sizeof(target), "/%s/", ver);
	if (get_body(a, target, listing, sizeof(listing)) != 200)
		fail_msg("%s: no listing", target);
	size_t lines = *listing != '\0', listed_parts = 0;
	for (const char *l = listing; (l = strchr(l, '\n')); l++)
		lines++;
	for (size_t i = 0; ec2_part_name(i); i++) {
		const char *name = ec2_part_name(i);
		if (i && strcmp(ec2_part_name(i - 1), name) >= 0)
			fail_msg("parts: '%s' after '%s': the table is sorted", name, ec2_part_name(i - 1));
		int listed = lists_as(listing, name, 0); /* bare, as EC2's */
		snprintf(target, sizeof(target), "/%s/%s", ver, name);
		int st = get_body(a, target, body, sizeof(body));
		if ((st == 200) != listed)
			fail_msg("%s: answers %d, %s in the version's listing:\n%s", target, st,
				 listed ? "named" : "not named", listing);
		listed_parts += (size_t)listed;
	}
	if (lines != listed_parts)
		fail_msg("/%s/ lists %zu names, %zu of them parts:\n%s", ver, lines, listed_parts, listing);
	unsigned dyn;
	tree_and_listings(a, ver, "dynamic", ec2_dynamic_path, &dyn);
	if (dyn != 2)
		fail_msg("/%s/dynamic/: %u rows there, want its two", ver, dyn);
	tree_and_listings(a, ver, "meta-data", ec2_tree_path, there);
}

/* The route table's rows under /{v}/ are the parts', derived: /{v}/<part>,
 * and /{v}/<part>/<anything> for a tree, no other. */
static void test_ec2_parts_routed(void **state)
{
	(void)state;
	size_t nparts = 0, routed = 0;
	while (ec2_part_name(nparts))
		nparts++;
	unsigned seen[8] = {0};
	assert_true(nparts <= sizeof(seen) / sizeof(seen[0]));
	for (size_t i = 0; imds_route_pattern(i); i++) {
		const char *p = imds_route_pattern(i);
		const char *pre = "/{v}/";
		if (strncmp(p, pre, strlen(pre)) != 0 || !p[strlen(pre)])
			continue;
		const char *name = p + strlen(pre);
		size_t n = strcspn(name, "/");
		size_t j = 0;
		while (j < nparts && !(strlen(ec2_part_name(j)) == n && !strncmp(ec2_part_name(j), name, n)))
			j++;
		if (j == nparts || (name[n] && strcmp(name + n, "/*") != 0))
			fail_msg("route %s: no part of the version's table", p);
		seen[j]++;
		routed++;
	}
	for (size_t j = 0; j < nparts; j++)
		if (seen[j] == 0)
			fail_msg("part %s: no route", ec2_part_name(j));
	/* dynamic/ and meta-data/ are trees (two rows each), user-data a leaf */
	assert_int_equal(routed, 5);
	assert_int_equal(nparts, 3);
}

static void test_ec2_table(void **state)
{
	struct fx *f = *state;
	unsigned there;
	/* Nothing but the identity: the optional rows are not there. */
	struct imds_app *a = start(f);
	/* Every version GET / lists is one, whose parts and trees hold. */
	char versions[512];
	assert_int_equal(get_body(a, "/", versions, sizeof(versions)), 200);
	unsigned nver = 0;
	for (char *v = versions, *e; *v; v = e ? e + 1 : v + strlen(v)) {
		e = strchr(v, '\n');
		if (e)
			*e = '\0';
		rows_and_listings(a, v, &there);
		nver++;
	}
	assert_true(nver >= 6);
	rows_and_listings(a, "latest", &there);
	get_is(a, "/latest/meta-data/", 200,
	       "events/\nhostname\ninstance-id\ninstance-type\nlocal-hostname");
	unsigned bare = there;

	/* Everything: keys, the pod's address, zone and region, an eviction
	 * pending (spot/). */
	ec2_keys(f);
	put_str(in_dir(f, "ns"), NETSTATUS);
	setenv("IMDS_NETWORK_STATUS_FILE", in_dir(f, "ns"), 1);
	setenv("IMDS_AVAILABILITY_ZONE", "zone-a", 1);
	setenv("IMDS_REGION", "region-1", 1);
	assert_int_equal(mkdir(in_dir(f, "podinfo"), 0755), 0);
	put_str(in_dir(f, "podinfo/eviction-strategy"), "External");
	put_str(in_dir(f, "podinfo/eviction-in-progress"), "true");
	setenv("IMDS_LIFECYCLE_DIR", in_dir(f, "podinfo"), 1);
	put_str(in_dir(f, "ud"), "#cloud-config\n");
	setenv("IMDS_USER_DATA_FILE", in_dir(f, "ud"), 1);
	a = start(f);
	get_is(a, "/latest/", 200, "dynamic\nmeta-data\nuser-data");
	static const char *const vers[] = {"latest", "2009-04-04", "1.0"};
	for (size_t v = 0; v < sizeof(vers) / sizeof(vers[0]); v++)
		rows_and_listings(a, vers[v], &there);
	get_is(a, "/latest/meta-data/", 200,
	       "events/\nhostname\ninstance-id\ninstance-type\nlocal-hostname\nlocal-ipv4\n"
	       "placement/\npublic-keys/\nspot/");
	size_t rows = 0;
	while (ec2_tree_path(rows))
		rows++;
	assert_int_equal(there, rows); /* every row there */
	assert_true(bare < there);

	/* A region alone: placement/ lists it alone. */
	unsetenv("IMDS_AVAILABILITY_ZONE");
	unsetenv("IMDS_LIFECYCLE_DIR");
	a = start(f);
	rows_and_listings(a, "latest", &there);
	get_is(a, "/latest/meta-data/placement/", 200, "region");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_ec2_tree),
		T(test_ec2_sessions),
		T(test_ec2_table),
		T(test_ec2_parts_routed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
