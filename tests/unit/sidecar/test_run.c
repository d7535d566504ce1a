/* run: `imds-server init`, the one-shot plan-to-kernel pass (init_main),
 * in a private network namespace with a veth named tap0 standing in for
 * the VM's tap: the plumbing for the VM (veth-imds with the VM's MAC, read
 * back with ioctl) and the three tables of the steering, each found by
 * deleting it; a second run succeeds on what the first left; a tap the
 * annotation names that is not there leaves the netdev table out and the
 * fallback in; a listen address that is not IPv4 host:port fails with its
 * message.  run_main (the long-running loop, with the HTTP side) is the
 * network suites' (tests/integration/net_*.sh). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "binding.h"
#include "config.h"
#include "../net/netns.h"
#include "nft.h"
#include "nl.h"
#include "plumb.h"
#include "run.h"
#include "steer.h"

static void cfg_for(struct imds_config *cfg, const char *ifaces)
{
	char err[256];
	memset(cfg, 0, sizeof(*cfg));
	cfg->ns = "default";
	cfg->vm_name = "vm1";
	cfg->hop_limit = 1;
	if (ifaces) {
		cfg->have_ifaces = 1;
		if (ifaces_parse(ifaces, strlen(ifaces), &cfg->ifaces, err, sizeof(err)))
			fail_msg("%s: %s", ifaces, err);
	}
}

/* The VM's tap: a veth named tap0, up. */
static void make_tap(void)
{
	struct nl_sock s;
	struct nl_link k;
	struct nl_link_set up = NL_LINK_SET_INIT;
	char err[256];
	static const uint8_t vm[6] = {0x52, 0x54, 0, 0x12, 0x34, 0x56}, peer[6] = {0x02, 0, 0, 0, 0, 9};
	nl_sock_init(&s);
	if (nl_open(&s, NULL, 0, err, sizeof(err)) ||
	    nl_veth_add(&s, "tap0", "tap0-vm", 1450, peer, vm, err, sizeof(err)))
		fail_msg("tap: %s", err);
	up.up = 1;
	assert_int_equal(nl_get_link(&s, "tap0", &k, err, sizeof(err)), 0);
	assert_int_equal(nl_link_set(&s, k.ifindex, &up, err, sizeof(err)), 0);
	nl_close(&s);
}

/* Is table (family) there?  Found by deleting it: 1, 0 when absent. */
static int table_there(uint8_t family)
{
	static uint8_t buf[4096];
	struct nl_sock s;
	struct nft_batch b;
	char err[256];
	nl_sock_init(&s);
	if (nft_open(&s, 0, err, sizeof(err)))
		fail_msg("nft: %s", err);
	nft_batch_init(&b, buf, sizeof(buf), 1);
	nft_del_table(&b, family, STEER_TABLE);
	assert_int_equal(nft_batch_finish(&b), 0);
	int r = nft_commit(&s, &b, err, sizeof(err));
	nl_close(&s);
	if (r && r != -ENOENT)
		fail_msg("delete table: %d %s", r, err);
	return r == 0;
}

static void test_init(void **state)
{
	(void)state;
	struct imds_config cfg;
	uint8_t mac[6];

	netns_private();
	make_tap();
	cfg_for(&cfg, "default:masquerade:tap0");
	assert_int_equal(init_main(&cfg), 0);
	/* veth-imds, the VM's MAC, the tap's MTU */
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq r;
	memset(&r, 0, sizeof(r));
	snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", PLUMB_VETH);
	assert_int_equal(ioctl(fd, SIOCGIFHWADDR, &r), 0);
	plumb_vm_mac("default", "vm1", mac);
	assert_memory_equal(r.ifr_hwaddr.sa_data, mac, 6);
	assert_int_equal(ioctl(fd, SIOCGIFMTU, &r), 0);
	assert_int_equal(r.ifr_mtu, 1450);
	close(fd);
	/* again, on what it left: nothing to do, success */
	assert_int_equal(init_main(&cfg), 0);
	/* the steering at the tap, the fallback in ip, ip6 and bridge */
	assert_true(table_there(NFT_FAMILY_NETDEV));
	assert_true(table_there(NFT_FAMILY_IPV4));
	assert_true(table_there(NFT_FAMILY_IPV6));
	assert_true(table_there(NFT_FAMILY_BRIDGE));
	assert_false(table_there(NFT_FAMILY_IPV4)); /* the probe itself deletes */
}

static void test_init_no_tap(void **state)
{
	(void)state;
	struct imds_config cfg;
	netns_private();
	cfg_for(&cfg, "default:masquerade:tap0");
	assert_int_equal(init_main(&cfg), 0);
	assert_true(if_nametoindex(PLUMB_VETH) > 0);
	/* no tap to steer: no netdev table; the fallback is there */
	assert_false(table_there(NFT_FAMILY_NETDEV));
	assert_true(table_there(NFT_FAMILY_IPV4));
	assert_true(table_there(NFT_FAMILY_BRIDGE));
}

static void test_init_bad_config(void **state)
{
	(void)state;
	struct imds_config cfg;
	netns_private();
	cfg_for(&cfg, NULL);
	cfg.listen_addr = "not-an-address";
	assert_int_equal(init_main(&cfg), 1);
	/* nothing was built */
	assert_int_equal(if_nametoindex(PLUMB_VETH), 0);
	assert_false(table_there(NFT_FAMILY_IPV4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_init_no_tap),
		cmocka_unit_test(test_init_bad_config),
	};
	return cmocka_run_group_tests_name("run", tests, NULL, NULL);
}
