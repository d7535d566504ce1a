/* nodemsg: the sidecar <-> imds-node messages, written and read back, and
 * every refusal of the reader naming its line. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nodemsg.h"

static struct nodemsg cfg_msg(void)
{
	struct nodemsg m = {.type = NODEMSG_CONFIG, .port = 80, .hops = 1};
	snprintf(m.ns, sizeof(m.ns), "default");
	snprintf(m.name, sizeof(m.name), "vm.one-2");
	return m;
}

static void roundtrip(const struct nodemsg *m, const char *want)
{
	static char buf[NODEMSG_MAX];
	static struct nodemsg back;
	char err[200];
	int n = nodemsg_encode(m, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(want));
	assert_memory_equal(buf, want, (size_t)n);
	assert_int_equal(nodemsg_decode(buf, (size_t)n, &back, err, sizeof(err)), 0);
	assert_int_equal(back.type, m->type);
	assert_string_equal(back.ns, m->ns);
	assert_string_equal(back.name, m->name);
	assert_int_equal(back.port, m->port);
	assert_int_equal(back.hops, m->hops);
	assert_int_equal(back.have_bridge, m->have_bridge);
	assert_string_equal(back.bridge, m->bridge);
	assert_int_equal(back.have_ifaces, m->have_ifaces);
	assert_string_equal(back.ifaces, m->ifaces);
	assert_int_equal(back.have_serving, m->have_serving);
	assert_int_equal(back.serving_if, m->serving_if);
	assert_int_equal(back.serving_n, m->serving_n);
	assert_int_equal(back.generation, m->generation);
	assert_int_equal(back.nfds, m->nfds);
	assert_string_equal(back.reason, m->reason);
}

static void test_config(void **state)
{
	(void)state;
	struct nodemsg m = cfg_msg();
	roundtrip(&m, "imds-node 1 config\nvm default vm.one-2\nport 80\nhops 1\n");
	m.have_bridge = 1;
	snprintf(m.bridge, sizeof(m.bridge), "k6t-eth0");
	m.have_ifaces = 1;
	snprintf(m.ifaces, sizeof(m.ifaces), "default:masquerade:tap0,#1:bridge:tap1");
	m.have_serving = 1;
	m.serving_if = 7;
	m.serving_n = 3;
	m.port = 8080;
	m.hops = 64;
	roundtrip(&m, "imds-node 1 config\nvm default vm.one-2\nport 8080\nhops 64\nbridge k6t-eth0\n"
		      "interfaces default:masquerade:tap0,#1:bridge:tap1\nserving 7 3\n");
	/* IMDS_INTERFACES set and empty is not the same as unset */
	m = cfg_msg();
	m.have_ifaces = 1;
	roundtrip(&m, "imds-node 1 config\nvm default vm.one-2\nport 80\nhops 1\ninterfaces \n");
}

static void test_agent_messages(void **state)
{
	(void)state;
	struct nodemsg m = {.type = NODEMSG_GUARD, .generation = 1};
	roundtrip(&m, "imds-node 1 guard 1\n");
	m = (struct nodemsg){.type = NODEMSG_LISTENERS, .generation = 18446744073709551615ULL, .nfds = 3};
	roundtrip(&m, "imds-node 1 listeners 18446744073709551615 3\n");
	m = (struct nodemsg){.type = NODEMSG_REFUSED};
	snprintf(m.reason, sizeof(m.reason), "interfaces: entry 1: unknown binding 'x'");
	roundtrip(&m, "imds-node 1 refused interfaces: entry 1: unknown binding 'x'\n");
	m = (struct nodemsg){.type = NODEMSG_SERVING};
	snprintf(m.reason, sizeof(m.reason), "tap0 (default, masquerade), tap1 (blue, bridge)");
	roundtrip(&m, "imds-node 1 serving tap0 (default, masquerade), tap1 (blue, bridge)\n");
	assert_string_equal(nodemsg_type_name(NODEMSG_SERVING), "serving");
}

static void test_encode_refuses(void **state)
{
	(void)state;
	char buf[NODEMSG_MAX];
	struct nodemsg m = cfg_msg();
	m.port = 0;
	assert_int_equal(nodemsg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = cfg_msg();
	snprintf(m.ns, sizeof(m.ns), "Default");
	assert_int_equal(nodemsg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = cfg_msg();
	m.have_bridge = 1;
	snprintf(m.bridge, sizeof(m.bridge), "a/b");
	assert_int_equal(nodemsg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = cfg_msg();
	m.have_ifaces = 1;
	snprintf(m.ifaces, sizeof(m.ifaces), "a\nserving 1 1");
	assert_int_equal(nodemsg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = (struct nodemsg){.type = NODEMSG_GUARD};
	assert_int_equal(nodemsg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = (struct nodemsg){.type = NODEMSG_LISTENERS, .generation = 1, .nfds = 4};
	assert_int_equal(nodemsg_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = (struct nodemsg){.type = NODEMSG_GUARD, .generation = 1};
	assert_int_equal(nodemsg_encode(&m, buf, 8), -ENOSPC);
}

static void refused(const char *in, int want, const char *err_has)
{
	static struct nodemsg m;
	char err[200];
	int r = nodemsg_decode(in, strlen(in), &m, err, sizeof(err));
	if (r != want || !strstr(err, err_has))
		fail_msg("'%s': got %d '%s', want %d with '%s'", in, r, err, want, err_has);
}

static void test_decode_refuses(void **state)
{
	(void)state;
	refused("", -EINVAL, "line 1: want 'imds-node");
	refused("imds-node 1 guard 1", -EINVAL, "line 1: want"); /* no newline */
	refused("imds-node 2 guard 1\n", -EPROTO, "protocol version 2, this side speaks 1");
	refused("imds-node 01 guard 1\n", -EINVAL, "line 1");
	refused("imds-node 1 guard 0\n", -EINVAL, "generation from 1");
	refused("imds-node 1 guard 18446744073709551616\n", -EINVAL, "generation");
	refused("imds-node 1 guard 1\nmore\n", -EINVAL, "line 2: unexpected");
	refused("imds-node 1 listeners 1 0\n", -EINVAL, "count 1..3");
	refused("imds-node 1 listeners 1 4\n", -EINVAL, "count 1..3");
	refused("imds-node 1 listeners 1\n", -EINVAL, "a generation from 1 and a count");
	refused("imds-node 1 refused \n", -EINVAL, "printable text");
	refused("imds-node 1 refused a\tb\n", -EINVAL, "printable text");
	refused("imds-node 1 serving \n", -EINVAL, "'serving': want printable text");
	refused("imds-node 1 serving tap0\x7f\n", -EINVAL, "'serving': want printable text");
	refused("imds-node 1 serving tap0\nmore\n", -EINVAL, "line 2: unexpected");
	refused("imds-node 1 hello\n", -EINVAL, "unknown type");
	refused("imds-node 1 config\n", -EINVAL, "line 1: want 'vm");
	refused("imds-node 1 config\nvm default\nport 80\nhops 1\n", -EINVAL, "line 2: 'vm'");
	refused("imds-node 1 config\nvm default x_y\nport 80\nhops 1\n", -EINVAL, "line 2: 'vm'");
	refused("imds-node 1 config\nvm default vm\nport 65536\nhops 1\n", -EINVAL, "line 3: want 'port");
	refused("imds-node 1 config\nvm default vm\nport 80\nhops 65\n", -EINVAL, "line 4: want 'hops");
	refused("imds-node 1 config\nvm default vm\nhops 1\nport 80\n", -EINVAL, "line 3: want 'port");
	refused("imds-node 1 config\nvm default vm\nport 80\nhops 1\nbridge a/b\n", -EINVAL,
		"line 5: 'bridge'");
	refused("imds-node 1 config\nvm default vm\nport 80\nhops 1\nbridge abcdefghijklmnop\n", -EINVAL,
		"line 5: 'bridge'");
	refused("imds-node 1 config\nvm default vm\nport 80\nhops 1\ninterfaces a\x01\n", -EINVAL,
		"line 5: 'interfaces'");
	refused("imds-node 1 config\nvm default vm\nport 80\nhops 1\nserving 0 1\n", -EINVAL,
		"line 5: 'serving'");
	refused("imds-node 1 config\nvm default vm\nport 80\nhops 1\nserving 3 4\n", -EINVAL,
		"line 5: 'serving'");
	/* the fields in their order, each once */
	refused("imds-node 1 config\nvm default vm\nport 80\nhops 1\ninterfaces x\nbridge b\n", -EINVAL,
		"line 6: unexpected");
	refused("imds-node 1 config\nvm default vm\nport 80\nhops 1\nbridge b\nbridge b\n", -EINVAL,
		"line 6: unexpected");
	static char big[NODEMSG_MAX + 2];
	memset(big, 'a', sizeof(big) - 1);
	refused(big, -EINVAL, "a message of");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_agent_messages),
		cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test(test_decode_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
