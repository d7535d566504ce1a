/* config: the sidecar's environment, variable by variable. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

extern char **environ;

/* Removes every IMDS_* variable, then sets the two required ones. */
static void env_reset(int with_required)
{
	for (;;) {
		char **e = environ, name[256];
		while (*e && strncmp(*e, "IMDS_", 5) != 0)
			e++;
		if (!*e)
			break;
		size_t n = strcspn(*e, "=");
		assert_true(n < sizeof(name));
		memcpy(name, *e, n);
		name[n] = '\0';
		assert_int_equal(unsetenv(name), 0);
	}
	if (with_required) {
		setenv("IMDS_NAMESPACE", "default", 1);
		setenv("IMDS_VM_NAME", "vm1", 1);
	}
}

static int setup(void **state)
{
	(void)state;
	env_reset(1);
	return 0;
}

/* config_from_env must fail with -EINVAL and an error naming var. */
static void expect_error(const char *name, const char *var)
{
	struct imds_config c;
	char err[256] = "";
	int rc = config_from_env(&c, err, sizeof(err));
	if (rc != -EINVAL)
		fail_msg("%s: rc %d, want -EINVAL", name, rc);
	if (!strstr(err, var))
		fail_msg("%s: error \"%s\" does not name %s", name, err, var);
	if (strchr(err, '\n'))
		fail_msg("%s: error \"%s\" is not one line", name, err);
}

static void expect_ok(const char *name, struct imds_config *c)
{
	char err[256] = "";
	int rc = config_from_env(c, err, sizeof(err));
	if (rc != 0)
		fail_msg("%s: rc %d (%s), want 0", name, rc, err);
}

static void test_defaults(void **state)
{
	(void)state;
	struct imds_config c;
	expect_ok("defaults", &c);
	assert_string_equal(c.ns, "default");
	assert_string_equal(c.vm_name, "vm1");
	assert_string_equal(c.listen_addr, IMDS_DEFAULT_LISTEN);
	assert_string_equal(c.token_path, IMDS_DEFAULT_TOKEN_PATH);
	assert_null(c.pod_name);
	assert_null(c.sa_name);
	assert_null(c.instance_id);
	assert_null(c.user_data);
	assert_null(c.user_data_file);
	assert_null(c.vendor_data_file);
	assert_null(c.network_config_file);
	assert_null(c.bridge_name);
	assert_null(c.ssh_keys_dir);
	assert_null(c.meta_data_file);
	assert_null(c.state_dir);
	assert_int_equal(c.hop_limit, 1); /* one link: the guest, not what it routes */
	assert_int_equal(c.rate_limit, IMDS_DEFAULT_RATE);
	assert_int_equal(c.busy_poll_us, 0); /* the loop sleeps at once unless asked to poll */
	assert_int_equal(c.limits.header_timeout_ms, 5000);
	assert_int_equal(c.limits.idle_timeout_ms, 20000);
	assert_int_equal(c.limits.max_head, 8192);
	/* the one body taken: a posted password (<= 1024 bytes, 400 past it) */
	assert_int_equal(c.limits.max_body, IMDS_MAX_BODY);
	assert_true(c.limits.max_conns > 0);
}

static void test_all_set(void **state)
{
	(void)state;
	setenv("IMDS_LISTEN_ADDR", "127.0.0.1:8080", 1);
	setenv("IMDS_POD_NAME", "virt-launcher-vm1-abcde", 1);
	setenv("IMDS_SA_NAME", "sa1", 1);
	setenv("IMDS_INSTANCE_ID", "i-123", 1);
	setenv("IMDS_TOKEN_PATH", "/tmp/tok/token", 1);
	setenv("IMDS_USER_DATA", "#cloud-config\n", 1);
	setenv("IMDS_USER_DATA_FILE", "/u", 1);
	setenv("IMDS_VENDOR_DATA_FILE", "/v", 1);
	setenv("IMDS_NETWORK_CONFIG_FILE", "/n", 1);
	setenv("IMDS_BRIDGE_NAME", "k6t-eth0", 1);
	setenv("IMDS_RATE_LIMIT", "7", 1);
	setenv("IMDS_HEADER_TIMEOUT_MS", "1234", 1);
	setenv("IMDS_IDLE_TIMEOUT_MS", "4321", 1);
	setenv("IMDS_MAX_CONNS", "17", 1);
	struct imds_config c;
	expect_ok("all set", &c);
	assert_string_equal(c.listen_addr, "127.0.0.1:8080");
	assert_string_equal(c.pod_name, "virt-launcher-vm1-abcde");
	assert_string_equal(c.sa_name, "sa1");
	assert_string_equal(c.instance_id, "i-123");
	assert_string_equal(c.token_path, "/tmp/tok/token");
	assert_string_equal(c.user_data, "#cloud-config\n");
	assert_string_equal(c.user_data_file, "/u");
	assert_string_equal(c.vendor_data_file, "/v");
	assert_string_equal(c.network_config_file, "/n");
	assert_string_equal(c.bridge_name, "k6t-eth0");
	assert_int_equal(c.rate_limit, 7);
	assert_int_equal(c.limits.header_timeout_ms, 1234);
	assert_int_equal(c.limits.idle_timeout_ms, 4321);
	assert_int_equal(c.limits.max_conns, 17);
}

static void test_required(void **state)
{
	(void)state;
	env_reset(0);
	expect_error("nothing set", "IMDS_NAMESPACE");
	setenv("IMDS_VM_NAME", "vm1", 1);
	expect_error("no namespace", "IMDS_NAMESPACE");
	setenv("IMDS_NAMESPACE", "", 1);
	expect_error("empty namespace", "IMDS_NAMESPACE");
	setenv("IMDS_NAMESPACE", "default", 1);
	unsetenv("IMDS_VM_NAME");
	expect_error("no VM name", "IMDS_VM_NAME");
	setenv("IMDS_VM_NAME", "", 1);
	expect_error("empty VM name", "IMDS_VM_NAME");
	setenv("IMDS_VM_NAME", "vm1", 1);
	struct imds_config c;
	expect_ok("both set", &c);
}

static void test_rate_limit(void **state)
{
	(void)state;
	static const char *const bad[] = {"abc", "-1", "", "1000001", " 5", "5 ", "+5", "0x10",
					  "1e3", "5.0", "99999999999", "4294967296", "18446744073709551617",
					  "\xd9\xa3" /* ARABIC-INDIC THREE */};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		env_reset(1);
		setenv("IMDS_RATE_LIMIT", bad[i], 1);
		char name[64];
		snprintf(name, sizeof(name), "IMDS_RATE_LIMIT='%s'", bad[i]);
		expect_error(name, "IMDS_RATE_LIMIT");
	}
	static const struct {
		const char *v;
		unsigned want;
	} good[] = {{"0", 0}, {"1", 1}, {"3", 3}, {"100", 100}, {"999999", 999999},
		    {"1000000", 1000000}};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		env_reset(1);
		setenv("IMDS_RATE_LIMIT", good[i].v, 1);
		struct imds_config c;
		expect_ok(good[i].v, &c);
		if (c.rate_limit != good[i].want)
			fail_msg("IMDS_RATE_LIMIT='%s': %u, want %u", good[i].v, c.rate_limit,
				 good[i].want);
	}
}

static void test_token_path(void **state)
{
	(void)state;
	static const char *const bad[] = {"token", "./token", "var/run/token", " /token", "~/token"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		env_reset(1);
		setenv("IMDS_TOKEN_PATH", bad[i], 1);
		expect_error(bad[i], "IMDS_TOKEN_PATH");
	}
	env_reset(1);
	setenv("IMDS_TOKEN_PATH", "/run/t/token", 1);
	struct imds_config c;
	expect_ok("absolute", &c);
	assert_string_equal(c.token_path, "/run/t/token");
	/* Empty means unset: the default. */
	setenv("IMDS_TOKEN_PATH", "", 1);
	expect_ok("empty", &c);
	assert_string_equal(c.token_path, IMDS_DEFAULT_TOKEN_PATH);
}

static void test_bridge_name(void **state)
{
	(void)state;
	struct imds_config c;
	setenv("IMDS_BRIDGE_NAME", "k6t-0123456789a", 1); /* 15: IFNAMSIZ - 1 */
	expect_ok("15 bytes", &c);
	assert_string_equal(c.bridge_name, "k6t-0123456789a");
	setenv("IMDS_BRIDGE_NAME", "k6t-0123456789ab", 1);
	expect_error("16 bytes", "IMDS_BRIDGE_NAME");
	setenv("IMDS_BRIDGE_NAME", "k6t-0123456789abcdefghijklmnopqrstuvwxyz", 1);
	expect_error("40 bytes", "IMDS_BRIDGE_NAME");
}

static void test_identity_values(void **state)
{
	(void)state;
	static const char *const vars[] = {"IMDS_NAMESPACE", "IMDS_VM_NAME", "IMDS_POD_NAME",
					   "IMDS_SA_NAME", "IMDS_INSTANCE_ID"};
	static const struct {
		const char *name, *v;
	} bad[] = {
		{"byte FF", "a\xff"},
		{"lone continuation", "\x80"},
		{"overlong", "\xc0\xaf"},
		{"surrogate", "\xed\xa0\x80"},
		{"truncated", "ab\xe2\x82"},
		{"tab", "a\tb"},
		{"newline", "a\nb"},
		{"CR", "a\r"},
		{"ESC", "\x1b[31m"},
		{"DEL", "a\x7f"},
		{"0x01", "\x01"},
	};
	char long_ok[254], long_bad[255];
	memset(long_ok, 'a', 253);
	long_ok[253] = '\0';
	memset(long_bad, 'a', 254);
	long_bad[254] = '\0';
	for (size_t v = 0; v < sizeof(vars) / sizeof(vars[0]); v++) {
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			env_reset(1);
			setenv(vars[v], bad[i].v, 1);
			char name[96];
			snprintf(name, sizeof(name), "%s %s", vars[v], bad[i].name);
			expect_error(name, vars[v]);
		}
		env_reset(1);
		setenv(vars[v], long_bad, 1);
		expect_error("254 bytes", vars[v]);

		struct imds_config c;
		static const char *const good[] = {"caf\xc3\xa9", "\xf0\x9f\x98\x80", "a b", "x:y#z"};
		for (size_t g = 0; g < sizeof(good) / sizeof(good[0]); g++) {
			env_reset(1);
			setenv(vars[v], good[g], 1);
			expect_ok(good[g], &c);
		}
		env_reset(1);
		setenv(vars[v], long_ok, 1);
		expect_ok("253 bytes", &c);
	}
}

static void test_uint_vars(void **state)
{
	(void)state;
	static const struct {
		const char *var, *v;
		int ok;
		unsigned want;
	} cases[] = {
		{"IMDS_HEADER_TIMEOUT_MS", "9", 0, 0},
		{"IMDS_HEADER_TIMEOUT_MS", "10", 1, 10},
		{"IMDS_HEADER_TIMEOUT_MS", "600000", 1, 600000},
		{"IMDS_HEADER_TIMEOUT_MS", "600001", 0, 0},
		{"IMDS_HEADER_TIMEOUT_MS", "0", 0, 0},
		{"IMDS_HEADER_TIMEOUT_MS", "", 0, 0},
		{"IMDS_HEADER_TIMEOUT_MS", "5s", 0, 0},
		{"IMDS_IDLE_TIMEOUT_MS", "9", 0, 0},
		{"IMDS_IDLE_TIMEOUT_MS", "10", 1, 10},
		{"IMDS_IDLE_TIMEOUT_MS", "3600000", 1, 3600000},
		{"IMDS_IDLE_TIMEOUT_MS", "3600001", 0, 0},
		{"IMDS_IDLE_TIMEOUT_MS", "-10", 0, 0},
		{"IMDS_MAX_CONNS", "0", 0, 0},
		{"IMDS_MAX_CONNS", "1", 1, 1},
		{"IMDS_MAX_CONNS", "65536", 1, 65536},
		{"IMDS_MAX_CONNS", "65537", 0, 0},
		{"IMDS_MAX_CONNS", "99999999999", 0, 0},
		{"IMDS_HOP_LIMIT", "0", 0, 0},
		{"IMDS_HOP_LIMIT", "1", 1, 1},
		{"IMDS_HOP_LIMIT", "64", 1, 64},
		{"IMDS_HOP_LIMIT", "65", 0, 0},
		{"IMDS_HOP_LIMIT", "2x", 0, 0},
		{"IMDS_BUSY_POLL_US", "0", 1, 0},
		{"IMDS_BUSY_POLL_US", "1000", 1, 1000},
		{"IMDS_BUSY_POLL_US", "1001", 0, 0},
		{"IMDS_BUSY_POLL_US", "-1", 0, 0},
		{"IMDS_BUSY_POLL_US", "50us", 0, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		env_reset(1);
		setenv(cases[i].var, cases[i].v, 1);
		char name[96];
		snprintf(name, sizeof(name), "%s='%s'", cases[i].var, cases[i].v);
		if (!cases[i].ok) {
			expect_error(name, cases[i].var);
			continue;
		}
		struct imds_config c;
		expect_ok(name, &c);
		unsigned got = strcmp(cases[i].var, "IMDS_HOP_LIMIT") == 0      ? c.hop_limit
			       : strcmp(cases[i].var, "IMDS_BUSY_POLL_US") == 0 ? c.busy_poll_us
			       : cases[i].var[5] == 'H'			       ? c.limits.header_timeout_ms
			       : cases[i].var[5] == 'I' ? c.limits.idle_timeout_ms
							: c.limits.max_conns;
		if (got != cases[i].want)
			fail_msg("%s: %u, want %u", name, got, cases[i].want);
	}
}

/* A short err buffer is never overrun: the message is cut and terminated. */
static void test_short_err_buffer(void **state)
{
	(void)state;
	setenv("IMDS_RATE_LIMIT", "not-a-number-at-all", 1);
	char err[8];
	memset(err, 'Z', sizeof(err));
	struct imds_config c;
	assert_int_equal(config_from_env(&c, err, 4), -EINVAL);
	assert_int_equal(err[3], '\0');
	for (size_t k = 4; k < sizeof(err); k++)
		assert_int_equal(err[k], 'Z');
}

static void test_parse_uint(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		unsigned min, max;
		int rc;
		unsigned want;
	} cases[] = {
		{NULL, 0, 10, -EINVAL, 0},
		{"", 0, 10, -EINVAL, 0},
		{"0", 0, 10, 0, 0},
		{"0", 1, 10, -EINVAL, 0},
		{"10", 0, 10, 0, 10},
		{"11", 0, 10, -EINVAL, 0},
		{"7", 7, 7, 0, 7},
		{"4294967295", 0, UINT_MAX, 0, UINT_MAX},
		{"4294967296", 0, UINT_MAX, -EINVAL, 0},
		{"9999999999", 0, UINT_MAX, -EINVAL, 0},
		{"99999999999", 0, UINT_MAX, -EINVAL, 0},
		{"18446744073709551616", 0, UINT_MAX, -EINVAL, 0},
		{"184467440737095516160000", 0, UINT_MAX, -EINVAL, 0},
		{"12a", 0, 100, -EINVAL, 0},
		{"a12", 0, 100, -EINVAL, 0},
		{"-0", 0, 100, -EINVAL, 0},
		{"+1", 0, 100, -EINVAL, 0},
		{" 1", 0, 100, -EINVAL, 0},
		{"1 ", 0, 100, -EINVAL, 0},
		{"1\n", 0, 100, -EINVAL, 0},
		{"1.0", 0, 100, -EINVAL, 0},
		{"0x1", 0, 100, -EINVAL, 0},
		{"\xd9\xa3", 0, 100, -EINVAL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned out = 4242;
		int rc = config_parse_uint(cases[i].s, cases[i].min, cases[i].max, &out);
		if (rc != cases[i].rc)
			fail_msg("case %zu '%s' [%u,%u]: rc %d, want %d", i,
				 cases[i].s ? cases[i].s : "(null)", cases[i].min, cases[i].max, rc,
				 cases[i].rc);
		if (rc == 0 && out != cases[i].want)
			fail_msg("case %zu '%s': %u, want %u", i, cases[i].s, out, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_defaults, setup),
		cmocka_unit_test_setup(test_all_set, setup),
		cmocka_unit_test_setup(test_required, setup),
		cmocka_unit_test_setup(test_rate_limit, setup),
		cmocka_unit_test_setup(test_token_path, setup),
		cmocka_unit_test_setup(test_bridge_name, setup),
		cmocka_unit_test_setup(test_identity_values, setup),
		cmocka_unit_test_setup(test_uint_vars, setup),
		cmocka_unit_test_setup(test_short_err_buffer, setup),
		cmocka_unit_test_setup(test_parse_uint, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
