/* netstatus: Multus network-status documents as a byte table — what each
 * interface keeps, what is refused and where — every input an exact-size
 * heap copy (no NUL after it), every truncated prefix of each accepted
 * document refused, and the caps at and past each limit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netstatus.h"

static int parse(const char *doc, size_t n, struct netstatus *out, char *err, size_t errlen)
{
	char *p = malloc(n ? n : 1);
	assert_non_null(p);
	memcpy(p, doc, n);
	int r = netstatus_parse(p, n, out, err, errlen);
	free(p);
	return r;
}

/* What KubeVirt's launcher pod gets from Multus with a bridge secondary
 * network (the shape of pods/06-multus-bridge-secondary). */
static const char multus[] =
	"[{\n"
	"    \"name\": \"k8s-pod-network\",\n"
	"    \"interface\": \"eth0\",\n"
	"    \"ips\": [\n        \"10.244.1.5\", \"fd00:10:244:1::5\"\n    ],\n"
	"    \"mac\": \"0a:58:0a:f4:01:05\",\n"
	"    \"default\": true,\n"
	"    \"dns\": {}\n"
	"},{\n"
	"    \"name\": \"demo/br1\",\n"
	"    \"interface\": \"pod26578a32802\",\n"
	"    \"mac\": \"02:4B:b0:00:00:01\",\n"
	"    \"dns\": {\"nameservers\": [\"10.0.0.10\"], \"search\": []},\n"
	"    \"device-info\": {\"type\": \"pci\", \"version\": \"1.1.0\", \"pci\": {\"pci-address\": \"0000:00:05.0\"}},\n"
	"    \"mtu\": 1500, \"gateway\": null, \"x\": [1, -2.5e+3, 0.25, true, false]\n"
	"}]";

static void test_multus_document(void **state)
{
	(void)state;
	struct netstatus ns;
	char err[128] = "";
	int r = parse(multus, sizeof(multus) - 1, &ns, err, sizeof(err));
	if (r != 0)
		fail_msg("%s", err);
	assert_int_equal(ns.n, 2);
	assert_string_equal(ns.nic[0].name, "k8s-pod-network");
	assert_string_equal(ns.nic[0].iface, "eth0");
	assert_true(ns.nic[0].has_mac);
	static const uint8_t m0[6] = {0x0a, 0x58, 0x0a, 0xf4, 0x01, 0x05};
	assert_memory_equal(ns.nic[0].mac, m0, 6);
	assert_string_equal(ns.nic[0].ipv4, "10.244.1.5");
	assert_true(ns.nic[0].is_default);
	assert_string_equal(ns.nic[1].name, "demo/br1");
	assert_string_equal(ns.nic[1].iface, "pod26578a32802");
	static const uint8_t m1[6] = {0x02, 0x4b, 0xb0, 0x00, 0x00, 0x01};
	assert_memory_equal(ns.nic[1].mac, m1, 6);
	assert_string_equal(ns.nic[1].ipv4, "");
	assert_false(ns.nic[1].is_default);
	/* Every proper prefix is refused, and says where. */
	for (size_t k = 0; k < sizeof(multus) - 1; k++) {
		struct netstatus t;
		char e[128] = "";
		if (parse(multus, k, &t, e, sizeof(e)) != -EINVAL || t.n != 0)
			fail_msg("prefix of %zu bytes accepted", k);
		if (!strstr(e, "at byte"))
			fail_msg("prefix of %zu bytes: no offset in \"%s\"", k, e);
	}
}

struct ncase {
	const char *name;
	const char *doc;
	int rc;
	unsigned n;
	const char *err; /* a part of the message (refused) or the first nic's iface */
};

#define NIC(x) "[{\"interface\":\"eth0\"," x "}]"

static const struct ncase cases[] = {
	{"empty array", "[]", 0, 0, NULL},
	{"spaces", " \t\r\n[ ] \n", 0, 0, NULL},
	{"empty object", "[{}]", 0, 1, ""},
	{"nothing", "", -EINVAL, 0, "no JSON value"},
	{"an object", "{}", -EINVAL, 0, "expected a JSON array"},
	{"null", "null", -EINVAL, 0, "expected a JSON array"},
	{"text after", "[] x", -EINVAL, 0, "bytes after the value"},
	{"two arrays", "[][]", -EINVAL, 0, "bytes after the value"},
	{"trailing comma", "[{},]", -EINVAL, 0, "want a value"},
	{"not an object", "[1]", -EINVAL, 0, "expected an object"},
	{"mac upper", NIC("\"mac\":\"AA:BB:CC:DD:EE:FF\""), 0, 1, "eth0"},
	{"mac short", NIC("\"mac\":\"aa:bb:cc:dd:ee\""), -EINVAL, 0, "\"mac\""},
	{"mac dashes", NIC("\"mac\":\"aa-bb-cc-dd-ee-ff\""), -EINVAL, 0, "\"mac\""},
	{"mac not hex", NIC("\"mac\":\"gg:bb:cc:dd:ee:ff\""), -EINVAL, 0, "\"mac\""},
	{"mac a number", NIC("\"mac\":1"), -EINVAL, 0, "expected a string"},
	{"ips v6 only", NIC("\"ips\":[\"::1\"]"), 0, 1, "eth0"},
	{"ips empty", NIC("\"ips\":[]"), 0, 1, "eth0"},
	{"ips bad", NIC("\"ips\":[\"10.0.0.256\"]"), -EINVAL, 0, "not an IP address"},
	{"ips cidr", NIC("\"ips\":[\"10.0.0.1/24\"]"), -EINVAL, 0, "not an IP address"},
	{"ips not array", NIC("\"ips\":\"10.0.0.1\""), -EINVAL, 0, "not an array"},
	{"ips trailing comma", NIC("\"ips\":[\"10.0.0.1\",]"), -EINVAL, 0, "want a value"},
	{"default false", NIC("\"default\":false"), 0, 1, "eth0"},
	{"default string", NIC("\"default\":\"true\""), -EINVAL, 0, "not true or false"},
	{"escaped name", "[{\"interface\":\"e\\u0074h\\/0\"}]", 0, 1, "eth/0"},
	{"surrogate pair", "[{\"interface\":\"\\ud83d\\ude00\"}]", 0, 1, "\xf0\x9f\x98\x80"},
	{"lone high", "[{\"interface\":\"\\ud83d\"}]", -EINVAL, 0, "surrogate"},
	{"lone low", "[{\"interface\":\"\\ude00\"}]", -EINVAL, 0, "surrogate"},
	{"lone in a skipped member", "[{\"x\":[\"\\ud800\"],\"interface\":\"a\"}]", -EINVAL, 0, "surrogate"},
	{"bad escape", "[{\"interface\":\"\\x\"}]", -EINVAL, 0, "invalid escape"},
	{"control char", "[{\"interface\":\"a\tb\"}]", -EINVAL, 0, "control byte 0x09"},
	{"bad utf-8", "[{\"interface\":\"\xc3\x28\"}]", -EINVAL, 0, "UTF-8"},
	{"overlong utf-8", "[{\"interface\":\"\xc0\xaf\"}]", -EINVAL, 0, "UTF-8"},
	{"long unknown key", "[{\"a-key-longer-than-sixteen-bytes\":1,\"interface\":\"x\"}]", 0, 1, "x"},
	{"skipped nesting", "[{\"a\":[[{\"b\":[null,{}]}]],\"interface\":\"x\"}]", 0, 1, "x"},
	{"bad number 01", "[{\"a\":01}]", -EINVAL, 0, "want ',' or '}'"},
	{"bad number -", "[{\"a\":-}]", -EINVAL, 0, "want a digit"},
	{"bad number 1.", "[{\"a\":1.}]", -EINVAL, 0, "want a digit"},
	{"bad number 1e", "[{\"a\":1e}]", -EINVAL, 0, "want a digit"},
	{"bad literal", "[{\"a\":tru}]", -EINVAL, 0, "want a value"},
	{"missing colon", "[{\"a\" 1}]", -EINVAL, 0, "want ':'"},
	{"unquoted key", "[{a:1}]", -EINVAL, 0, "want a member name"},
	{"unterminated", "[{\"interface\":\"x", -EINVAL, 0, "ends inside a value"},
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ncase *c = &cases[i];
		struct netstatus ns;
		char err[128] = "";
		int r = parse(c->doc, strlen(c->doc), &ns, err, sizeof(err));
		if (r != c->rc || ns.n != c->n)
			fail_msg("%s: rc %d n %u (%s), want %d n %u", c->name, r, ns.n, err, c->rc, c->n);
		if (r < 0 && !strstr(err, c->err))
			fail_msg("%s: \"%s\" does not say \"%s\"", c->name, err, c->err);
		if (r == 0 && c->n && c->err && strcmp(ns.nic[0].iface, c->err) != 0)
			fail_msg("%s: interface \"%s\", want \"%s\"", c->name, ns.nic[0].iface, c->err);
	}
}

static void test_caps(void **state)
{
	(void)state;
	char doc[8192];
	struct netstatus ns;
	char err[128];
	/* NETSTATUS_MAX_NICS interfaces fit, one more is refused. */
	for (unsigned want = NETSTATUS_MAX_NICS; want <= NETSTATUS_MAX_NICS + 1; want++) {
		size_t o = 0;
		o += (size_t)snprintf(doc + o, sizeof(doc) - o, "[");
		for (unsigned k = 0; k < want; k++)
			o += (size_t)snprintf(doc + o, sizeof(doc) - o, "%s{\"interface\":\"net%u\"}",
					      k ? "," : "", k);
		o += (size_t)snprintf(doc + o, sizeof(doc) - o, "]");
		int r = parse(doc, o, &ns, err, sizeof(err));
		if (want == NETSTATUS_MAX_NICS) {
			assert_int_equal(r, 0);
			assert_int_equal(ns.n, NETSTATUS_MAX_NICS);
			assert_string_equal(ns.nic[NETSTATUS_MAX_NICS - 1].iface, "net15");
		} else {
			assert_int_equal(r, -EINVAL);
			assert_int_equal(ns.n, 0);
		}
	}
	/* Names and interfaces at their cap fit; a byte more is refused. */
	struct {
		const char *key;
		size_t cap;
	} f[] = {{"name", NETSTATUS_NAME_MAX}, {"interface", NETSTATUS_IFACE_MAX}};
	for (size_t k = 0; k < 2; k++) {
		for (size_t len = f[k].cap; len <= f[k].cap + 1; len++) {
			size_t o = (size_t)snprintf(doc, sizeof(doc), "[{\"%s\":\"", f[k].key);
			memset(doc + o, 'n', len);
			o += len;
			o += (size_t)snprintf(doc + o, sizeof(doc) - o, "\"}]");
			int r = parse(doc, o, &ns, err, sizeof(err));
			assert_int_equal(r, len == f[k].cap ? 0 : -EINVAL);
		}
	}
	/* Nesting: skipped values nest at most NETSTATUS_DEPTH_MAX deep. */
	for (unsigned depth = 28; depth <= 34; depth++) {
		size_t o = (size_t)snprintf(doc, sizeof(doc), "[{\"x\":");
		for (unsigned k = 0; k < depth; k++)
			doc[o++] = '[';
		for (unsigned k = 0; k < depth; k++)
			doc[o++] = ']';
		o += (size_t)snprintf(doc + o, sizeof(doc) - o, "}]");
		int r = parse(doc, o, &ns, err, sizeof(err));
		/* the member's value sits at depth 2 */
		assert_int_equal(r, depth + 1 <= NETSTATUS_DEPTH_MAX ? 0 : -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_multus_document),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
