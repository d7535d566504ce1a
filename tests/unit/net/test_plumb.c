/* plumb: the pure helpers (veth-imds's MAC for a VM against FNV-1a worked
 * out here, the taps picked from a link table by bridge or by the
 * interfaces annotation, the change list's text), and plumb_ensure and its
 * neighbours against the kernel in a private network namespace: the first
 * run builds the pair, the addresses, the rule and the route, read back
 * with getifaddrs/ioctl rather than with nl.c; a second run changes
 * nothing; a piece broken behind its back (the link down, the MTU, the
 * peer deleted) is exactly what the next run puts back; the pod's own
 * addresses; the listener's socket options. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "binding.h"
#include "netns.h"
#include "nl.h"
#include "plumb.h"

static void test_vm_mac(void **state)
{
	(void)state;
	uint8_t m[6], m2[6];
	/* FNV-1a 32 over "default" "/" "vm1" "/": 0x..b8720e (Python, by hand) */
	static const uint8_t want[6] = {0x02, 0xa9, 0xfe, 0xb8, 0x72, 0x0e};
	plumb_vm_mac("default", "vm1", m);
	assert_memory_equal(m, want, 6);
	/* locally administered, unicast; another VM, another MAC */
	assert_int_equal(m[0] & 3, 2);
	plumb_vm_mac("default", "vm2", m2);
	assert_memory_not_equal(m, m2, 6);
	plumb_vm_mac("other", "vm1", m2);
	assert_memory_not_equal(m, m2, 6);
	/* no namespace or name: still a MAC of ours, no crash */
	plumb_vm_mac(NULL, NULL, m2);
	assert_memory_equal(m2, want, 3);
}

static struct nl_link mklink(int ifindex, const char *name, const char *kind, int master, uint32_t mtu)
{
	struct nl_link l = {.ifindex = ifindex, .master = master, .mtu = mtu};
	snprintf(l.name, sizeof(l.name), "%s", name);
	snprintf(l.kind, sizeof(l.kind), "%s", kind);
	return l;
}

static void test_pick_taps(void **state)
{
	(void)state;
	const struct nl_link links[] = {
		mklink(1, "lo", "", 0, 65536),
		mklink(2, "k6t-eth0", "bridge", 0, 1500),
		mklink(3, "tap0", "tun", 2, 1450),
		mklink(4, "br1", "bridge", 0, 9000),
		mklink(5, "tap26578a32802", "tun", 4, 9000),
		mklink(6, "tap7", "tun", 0, 1500),          /* no master */
		mklink(7, "veth-imds-br", "veth", 2, 1500), /* ours, even on a bridge */
		mklink(8, "tapx", "veth", 2, 1400),         /* a test's veth named tap* */
		mklink(9, "eth0", "veth", 2, 1500),         /* not a tap */
		mklink(10, "k6t-net1", "bridge", 0, 1500),
		mklink(11, "tun5", "tun", 10, 1600),        /* kind tun, any name */
	};
	size_t n = sizeof(links) / sizeof(links[0]);
	struct steer_tap out[8];
	uint32_t mtu;

	/* any k6t-* bridge */
	assert_int_equal(plumb_pick_taps(links, n, NULL, NULL, out, 8, &mtu), 3);
	assert_string_equal(out[0].name, "tap0");
	assert_int_equal(out[0].ifindex, 3);
	assert_string_equal(out[1].name, "tapx");
	assert_string_equal(out[2].name, "tun5");
	assert_int_equal(mtu, 1600);
	/* the bridge named */
	assert_int_equal(plumb_pick_taps(links, n, NULL, "br1", out, 8, &mtu), 1);
	assert_string_equal(out[0].name, "tap26578a32802");
	assert_int_equal(mtu, 9000);
	assert_int_equal(plumb_pick_taps(links, n, NULL, "lo", out, 8, &mtu), 0);
	assert_int_equal(mtu, 0);
	/* cap */
	assert_int_equal(plumb_pick_taps(links, n, NULL, NULL, out, 1, &mtu), 1);
	assert_int_equal(mtu, 1450);
	/* the annotation: its taps that exist, whatever their bridge; kinds
	 * without a tap add none */
	struct ifaces ifs;
	char err[256];
	static const char text[] = "default:masquerade:tap0,br1:bridge:tap26578a32802,"
				   "gone:bridge:tap3a7a9e2e7b1,fast:sriov,p:passt";
	assert_int_equal(ifaces_parse(text, strlen(text), &ifs, err, sizeof(err)), 0);
	assert_int_equal(plumb_pick_taps(links, n, &ifs, NULL, out, 8, &mtu), 2);
	assert_string_equal(out[0].name, "tap0");
	assert_string_equal(out[1].name, "tap26578a32802");
	assert_int_equal(mtu, 9000);
	/* plumb_is_tap: kind tun, or a name tap* */
	struct nl_link t = mklink(1, "x", "tun", 0, 0);
	assert_true(plumb_is_tap(&t));
	t = mklink(1, "tapz", "dummy", 0, 0);
	assert_true(plumb_is_tap(&t));
	t = mklink(1, "eth0", "veth", 0, 0);
	assert_false(plumb_is_tap(&t));
}

static void test_changes_text(void **state)
{
	(void)state;
	char t[256];
	plumb_changes_text(0, t, sizeof(t));
	assert_string_equal(t, "");
	plumb_changes_text(PLUMB_CH_PAIR | PLUMB_CH_UP | PLUMB_CH_ADDR, t, sizeof(t));
	assert_string_equal(t, "veth pair, up, address");
	plumb_changes_text(~0u, t, sizeof(t));
	assert_string_equal(t, "veth pair, MAC, MTU, released from a bridge, arp_ignore, up, address, "
			       "rule, route");
	/* short: cut, terminated, nothing past cap */
	memset(t, 'x', sizeof(t));
	plumb_changes_text(~0u, t, 12);
	assert_true(strlen(t) < 12);
	assert_int_equal(t[12], 'x');
}

/* ---- against the kernel ------------------------------------------------- */

struct kern {
	struct nl_sock s;
	struct nl_link links[PLUMB_MAX_LINKS];
	size_t n;
};

static void dump(struct kern *k)
{
	char err[256];
	if (nl_get_links(&k->s, k->links, PLUMB_MAX_LINKS, &k->n, err, sizeof(err)))
		fail_msg("links: %s", err);
}

static unsigned ensure(struct kern *k, struct plumb_state *st, const uint8_t mac[6], uint32_t mtu)
{
	char err[256] = "";
	unsigned ch = 0;
	dump(k);
	int ret = plumb_ensure(&k->s, st, k->links, k->n, mac, mtu, 1, &ch, err, sizeof(err));
	if (ret)
		fail_msg("plumb_ensure: %d %s", ret, err);
	return ch;
}

/* An address of ifname, by getifaddrs (libc's own netlink dump). */
static int has_ifaddr(const char *ifname, int family, const void *addr)
{
	struct ifaddrs *all, *a;
	int found = 0;
	assert_int_equal(getifaddrs(&all), 0);
	for (a = all; a; a = a->ifa_next) {
		if (!a->ifa_addr || a->ifa_addr->sa_family != family || strcmp(a->ifa_name, ifname))
			continue;
		const void *p = family == AF_INET
					? (const void *)&((struct sockaddr_in *)a->ifa_addr)->sin_addr
					: (const void *)&((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
		found |= memcmp(p, addr, family == AF_INET ? 4 : 16) == 0;
	}
	freeifaddrs(all);
	return found;
}

static long read_sys(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;
	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	if (fscanf(f, "%ld", &v) != 1)
		fail_msg("%s: not a number", path);
	fclose(f);
	return v;
}

static void write_sys(const char *path, const char *v)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(v, f) < 0 || fclose(f))
		fail_msg("%s: %s", path, strerror(errno));
}

static struct ifreq ifr_of(const char *name)
{
	struct ifreq r;
	memset(&r, 0, sizeof(r));
	snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", name);
	return r;
}

static void test_ensure(void **state)
{
	(void)state;
	struct kern *k = calloc(1, sizeof(*k));
	struct plumb_state st = {0};
	uint8_t mac[6];
	char err[256];
	static const uint8_t v6g[16] = {0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54};
	static const uint8_t v6l[16] = {0xfe, 0x80, [12] = 0xa9, [13] = 0xfe, [14] = 0xa9, [15] = 0xfe};

	assert_non_null(k);
	netns_private();
	nl_sock_init(&k->s);
	if (nl_open(&k->s, NULL, 0, err, sizeof(err)))
		fail_msg("netlink: %s", err);
	plumb_vm_mac("default", "vm1", mac);

	/* the first run writes every piece */
	unsigned ch = ensure(k, &st, mac, 1400);
	unsigned all = PLUMB_CH_PAIR | PLUMB_CH_ARP | PLUMB_CH_UP | PLUMB_CH_ADDR | PLUMB_CH_RULE |
		       PLUMB_CH_ROUTE;
	if ((ch & all) != all)
		fail_msg("first run wrote 0x%x, want at least 0x%x", ch, all);
	assert_true(st.veth > 0 && st.peer > 0 && st.veth != st.peer);
	assert_int_equal(st.v6, 1);
	assert_int_equal((int)if_nametoindex(PLUMB_VETH), st.veth);
	assert_int_equal((int)if_nametoindex(PLUMB_PEER), st.peer);

	/* read back without nl.c */
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct ifreq r = ifr_of(PLUMB_VETH);
	assert_int_equal(ioctl(fd, SIOCGIFHWADDR, &r), 0);
	assert_memory_equal(r.ifr_hwaddr.sa_data, mac, 6);
	r = ifr_of(PLUMB_VETH);
	assert_int_equal(ioctl(fd, SIOCGIFMTU, &r), 0);
	assert_int_equal(r.ifr_mtu, 1400);
	r = ifr_of(PLUMB_PEER);
	assert_int_equal(ioctl(fd, SIOCGIFMTU, &r), 0);
	assert_int_equal(r.ifr_mtu, 1400);
	r = ifr_of(PLUMB_VETH);
	assert_int_equal(ioctl(fd, SIOCGIFFLAGS, &r), 0);
	assert_true(r.ifr_flags & IFF_UP);
	assert_true(has_ifaddr(PLUMB_VETH, AF_INET, plumb_imds_ip));
	assert_true(has_ifaddr(PLUMB_VETH, AF_INET6, v6g));
	assert_true(has_ifaddr(PLUMB_VETH, AF_INET6, v6l));
	/* arp_ignore 8 on veth-imds, per device (/proc/sys/net shows the
	 * namespace of the process that reads it) */
	assert_int_equal(read_sys("/proc/sys/net/ipv4/conf/" PLUMB_VETH "/arp_ignore"), 8);
	assert_int_equal(read_sys("/proc/sys/net/ipv4/conf/all/arp_ignore"), 0);
	/* only the service's TCP port is local: a UDP bind to .254 fails */
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(53)};
	memcpy(&sin.sin_addr, plumb_imds_ip, 4);
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(u, (struct sockaddr *)&sin, sizeof(sin)), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	close(u);

	/* a second run: nothing to write */
	ch = ensure(k, &st, mac, 1400);
	if (ch)
		fail_msg("second run wrote 0x%x", ch);

	/* broken behind its back, one piece at a time: exactly that put back */
	r = ifr_of(PLUMB_VETH);
	assert_int_equal(ioctl(fd, SIOCGIFFLAGS, &r), 0);
	r.ifr_flags = (short)(r.ifr_flags & ~IFF_UP);
	assert_int_equal(ioctl(fd, SIOCSIFFLAGS, &r), 0);
	ch = ensure(k, &st, mac, 1400);
	assert_true(ch & PLUMB_CH_UP);
	assert_false(ch & (PLUMB_CH_PAIR | PLUMB_CH_MTU | PLUMB_CH_MAC));
	assert_int_equal(ensure(k, &st, mac, 1400), 0);

	r = ifr_of(PLUMB_PEER);
	r.ifr_mtu = 1300;
	assert_int_equal(ioctl(fd, SIOCSIFMTU, &r), 0);
	assert_int_equal(ensure(k, &st, mac, 1400), PLUMB_CH_MTU);
	/* another MTU wanted (a tap with a larger one came) */
	assert_int_equal(ensure(k, &st, mac, 9000), PLUMB_CH_MTU);
	r = ifr_of(PLUMB_VETH);
	assert_int_equal(ioctl(fd, SIOCGIFMTU, &r), 0);
	assert_int_equal(r.ifr_mtu, 9000);

	/* another MAC (a VM's identity) */
	uint8_t mac2[6];
	plumb_vm_mac("default", "vm2", mac2);
	assert_int_equal(ensure(k, &st, mac2, 9000), PLUMB_CH_MAC);

	/* the peer deleted: the pair made anew, all on it again */
	assert_int_equal(nl_link_del(&k->s, st.peer, err, sizeof(err)), 0);
	ch = ensure(k, &st, mac2, 9000);
	assert_true(ch & PLUMB_CH_PAIR);
	assert_true(ch & PLUMB_CH_ADDR);
	assert_true(has_ifaddr(PLUMB_VETH, AF_INET, plumb_imds_ip));
	assert_int_equal(ensure(k, &st, mac2, 9000), 0);

	/* the pod's own addresses: not loopback's, not the service's */
	static const uint8_t pod[4] = {10, 244, 1, 5};
	uint8_t got[8][4];
	assert_int_equal(plumb_local_addrs(&k->s, got, 8, err, sizeof(err)), 0);
	assert_int_equal(nl_addr_add4(&k->s, st.peer, pod, 24, err, sizeof(err)), 0);
	assert_int_equal(plumb_local_addrs(&k->s, got, 8, err, sizeof(err)), 1);
	assert_memory_equal(got[0], pod, 4);
	assert_int_equal(plumb_local_addrs(&k->s, got, 0, err, sizeof(err)), 0);
	close(fd);
	nl_close(&k->s);
	free(k);
}

static void test_listener(void **state)
{
	(void)state;
	struct kern *k = calloc(1, sizeof(*k));
	struct plumb_state st = {0};
	uint8_t mac[6];
	char err[256];

	assert_non_null(k);
	netns_private();
	nl_sock_init(&k->s);
	if (nl_open(&k->s, NULL, 0, err, sizeof(err)))
		fail_msg("netlink: %s", err);
	plumb_vm_mac("default", "vm1", mac);
	ensure(k, &st, mac, 1500);

	int fd = plumb_listener_open(st.veth, plumb_imds_ip, 80, 1, 0, err, sizeof(err));
	if (fd < 0)
		fail_msg("listener: %s", err);
	int v = 0;
	socklen_t vl = sizeof(v);
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &v, &vl), 0);
	assert_int_equal(v, st.veth);
	vl = sizeof(v);
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl), 0);
	assert_int_equal(v, 1);
	vl = sizeof(v);
	assert_int_equal(getsockopt(fd, IPPROTO_IP, IP_TTL, &v, &vl), 0);
	assert_int_equal(v, 1);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	/* the guard is attached: SO_GET_FILTER with no room says its length */
	vl = 0;
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, NULL, &vl), 0);
	assert_int_equal(vl, 4);
	struct sockaddr_in sin;
	vl = sizeof(sin);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &vl), 0);
	assert_int_equal(ntohs(sin.sin_port), 80);
	assert_memory_equal(&sin.sin_addr, plumb_imds_ip, 4);
	close(fd);
	/* with the pod's own processes allowed (passt): a longer guard */
	fd = plumb_listener_open(st.veth, plumb_imds_ip, PLUMB_PASST_LPORT, 1, 1, err, sizeof(err));
	assert_true(fd >= 0);
	vl = 0;
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, NULL, &vl), 0);
	assert_int_equal(vl, 5);
	close(fd);
	/* IPv6: the global address */
	static const uint8_t v6g[16] = {0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54};
	fd = plumb_listener_open6(st.veth, v6g, 80, 1, 0, err, sizeof(err));
	if (fd < 0)
		fail_msg("listener6: %s", err);
	vl = sizeof(v);
	assert_int_equal(getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, &vl), 0);
	assert_int_equal(v, 1);
	close(fd);
	/* no device (ifindex 0): no guard can be built, an error naming the
	 * step, no socket.  (An ifindex that is not there is the kernel's to
	 * take: SO_BINDTOIFINDEX does not look it up.) */
	err[0] = 0;
	assert_int_equal(plumb_listener_open(0, plumb_imds_ip, 80, 1, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "guard filter"));
	nl_close(&k->s);
	free(k);
}

/* IPv6 off in the pod (disable_ipv6): IPv4 plumbed, no error, and why
 * IPv6 is not there said for the caller's log. */
static void test_v6_off(void **state)
{
	(void)state;
	struct kern *k = calloc(1, sizeof(*k));
	struct plumb_state st = {0};
	uint8_t mac[6];
	char err[256];

	assert_non_null(k);
	netns_private();
	write_sys("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	write_sys("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
	nl_sock_init(&k->s);
	if (nl_open(&k->s, NULL, 0, err, sizeof(err)))
		fail_msg("netlink: %s", err);
	plumb_vm_mac("default", "vm1", mac);
	unsigned ch = ensure(k, &st, mac, 1500);
	assert_true(ch & PLUMB_CH_ADDR);
	assert_int_equal(st.v6, 0);
	assert_true(st.v6_off[0] != 0);
	assert_true(has_ifaddr(PLUMB_VETH, AF_INET, plumb_imds_ip));
	assert_int_equal(ensure(k, &st, mac, 1500), 0);
	nl_close(&k->s);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vm_mac),
		cmocka_unit_test(test_pick_taps),
		cmocka_unit_test(test_changes_text),
		cmocka_unit_test(test_ensure),
		cmocka_unit_test(test_v6_off),
		cmocka_unit_test(test_listener),
	};
	return cmocka_run_group_tests_name("plumb", tests, NULL, NULL);
}
