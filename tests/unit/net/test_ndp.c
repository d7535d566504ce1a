/* ndp: neighbour solicitations built byte by byte (address resolution,
 * unreachability detection, DAD; every RFC 4861 §7.1.1 refusal, every
 * truncated prefix), the advertisement's exact bytes, the SYN learner's
 * IPv6 parser, and the ICMPv6 checksum against a reference sum over odd and
 * even lengths.  The socket filter that passes these frames, and the
 * responder that answers them, are test_responder.c (moved from
 * test_arp.c, which held both protocols). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "l2frames.h"
#include "ndp.h"


static void test_ndp_parse(void **state)
{
	(void)state;
	uint8_t f[128], sn[16];
	struct ndp_ns ns;
	size_t n;

	for (int a = 0; a < 2; a++) {
		/* address resolution, from the guest's link-local and ULA */
		solicited_node(ndp_imds_addr[a], sn);
		n = ns_frame(f, guest_ll, sn, ndp_imds_addr[a], 1);
		assert_int_equal(ndp_parse_ns(f, n, &ns), 0);
		assert_int_equal(ns.has_slla, 1);
		assert_memory_equal(ns.slla, vm_mac, 6);
		assert_memory_equal(ns.target, ndp_imds_addr[a], 16);
		assert_int_equal(ndp_classify(&ns, ndp_imds_addr, 2), NDP_ANSWER);
		n = ns_frame(f, guest_ula, sn, ndp_imds_addr[a], 1);
		assert_int_equal(ndp_parse_ns(f, n, &ns), 0);
		/* unreachability detection: unicast to the target, no option */
		n = ns_frame(f, guest_ll, ndp_imds_addr[a], ndp_imds_addr[a], 0);
		assert_int_equal(ndp_parse_ns(f, n, &ns), 0);
		assert_int_equal(ns.has_slla, 0);
		assert_int_equal(ndp_classify(&ns, ndp_imds_addr, 2), NDP_ANSWER);
		/* DAD: from ::, to the solicited-node group, no option */
		static const uint8_t any[16];
		n = ns_frame(f, any, sn, ndp_imds_addr[a], 0);
		assert_int_equal(ndp_parse_ns(f, n, &ns), 0);
		n = ns_frame(f, any, sn, ndp_imds_addr[a], 1);
		assert_int_equal(ndp_parse_ns(f, n, &ns), -EBADMSG); /* option from :: */
		n = ns_frame(f, any, ndp_imds_addr[a], ndp_imds_addr[a], 0);
		assert_int_equal(ndp_parse_ns(f, n, &ns), -EBADMSG); /* DAD not multicast */
	}
	/* another target */
	solicited_node(guest_ula, sn);
	n = ns_frame(f, guest_ll, sn, guest_ula, 1);
	assert_int_equal(ndp_parse_ns(f, n, &ns), 0);
	assert_int_equal(ndp_classify(&ns, ndp_imds_addr, 2), NDP_OTHER_TARGET);
	/* RFC 4861 §7.1.1, one refusal each */
	solicited_node(ndp_imds_global, sn);
	n = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	uint8_t g[128];
	memcpy(g, f, n);
	g[21] = 64; /* hop limit */
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EBADMSG);
	memcpy(g, f, n);
	g[55] = 1; /* code */
	ns_fix(g, n);
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EBADMSG);
	memcpy(g, f, n);
	g[57] ^= 1; /* checksum */
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EBADMSG);
	memcpy(g, f, n);
	g[62] = 0xff; /* a multicast target */
	ns_fix(g, n);
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EBADMSG);
	memcpy(g, f, n);
	g[79] = 0; /* an option of length 0 */
	ns_fix(g, n);
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EBADMSG);
	memcpy(g, f, n);
	g[79] = 2; /* an option longer than what is left */
	ns_fix(g, n);
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EBADMSG);
	memcpy(g, f, n);
	g[19] = 16; /* ICMP shorter than an NS */
	assert_int_equal(ndp_parse_ns(g, 70, &ns), -EBADMSG);
	memcpy(g, f, n);
	g[19] = 40; /* a payload longer than the frame */
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EPROTONOSUPPORT);
	memcpy(g, f, n);
	g[54] = 136; /* an NA */
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EPROTONOSUPPORT);
	memcpy(g, f, n);
	g[20] = 0; /* a hop-by-hop header first */
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EPROTONOSUPPORT);
	memcpy(g, f, n);
	g[13] = 0x00; /* IPv4's ethertype */
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EPROTONOSUPPORT);
	memcpy(g, f, n);
	g[14] = 0x40; /* version 4 */
	assert_int_equal(ndp_parse_ns(g, n, &ns), -EPROTONOSUPPORT);
	/* an unknown option is skipped; a bad sender is classified */
	memcpy(g, f, n);
	g[78] = 14;
	ns_fix(g, n);
	assert_int_equal(ndp_parse_ns(g, n, &ns), 0);
	assert_int_equal(ns.has_slla, 0);
	memcpy(g, f, n);
	g[6] = 0x01;
	assert_int_equal(ndp_parse_ns(g, n, &ns), 0);
	assert_int_equal(ndp_classify(&ns, ndp_imds_addr, 2), NDP_BAD_SENDER);
	memcpy(g, f, n);
	g[80] = 0x01; /* the option's MAC multicast */
	ns_fix(g, n);
	assert_int_equal(ndp_parse_ns(g, n, &ns), 0);
	assert_int_equal(ndp_classify(&ns, ndp_imds_addr, 2), NDP_BAD_SENDER);
	/* every truncated prefix */
	for (size_t k = 0; k < n; k++)
		assert_int_not_equal(ndp_parse_ns(f, k, &ns), 0);
	/* ICMPv6 with no byte of payload, the frame ending with the IPv6
	 * header (fuzz_ndp's first finding: the type was read past it) */
	uint8_t *tight = malloc(54);
	assert_non_null(tight);
	v6frame(tight, vm_mac, guest_ll, ndp_imds_global, 58, 255, NULL, 0);
	assert_int_equal(ndp_parse_ns(tight, 54, &ns), -EPROTONOSUPPORT);
	free(tight);
}

static void test_ndp_reply(void **state)
{
	(void)state;
	uint8_t f[128], out[128], sn[16];
	struct ndp_ns ns;
	static const uint8_t want[NDP_NA_LEN] = {
		VM, 0x0e, 0xd6, 0x7d, 0xda, 0x50, 0x41, 0x86, 0xdd,
		0x60, 0, 0, 0, 0, 32, 58, 255,
		0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54,
		0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56,
		136, 0, 0x00, 0x00, 0x60, 0, 0, 0,
		0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54,
		2, 1, 0x0e, 0xd6, 0x7d, 0xda, 0x50, 0x41,
	};
	uint8_t w[NDP_NA_LEN];

	solicited_node(ndp_imds_global, sn);
	size_t n = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	assert_int_equal(ndp_parse_ns(f, n, &ns), 0);
	assert_int_equal(ndp_build_na(&ns, our_mac, out, sizeof(out)), NDP_NA_LEN);
	memcpy(w, want, sizeof(w));
	uint16_t c = ndp_icmp6_csum(w + 22, w + 38, w + 54, 32);
	w[56] = (uint8_t)(c >> 8);
	w[57] = (uint8_t)c;
	assert_memory_equal(out, w, NDP_NA_LEN);
	/* the checksum verifies (RFC 4443: the sum over all is 0) */
	assert_int_equal(ndp_icmp6_csum(out + 22, out + 38, out + 54, 32), 0);
	assert_int_equal(ndp_build_na(&ns, our_mac, out, NDP_NA_LEN - 1), 0);
	/* DAD: to all nodes, not solicited */
	static const uint8_t any[16], all_nodes[16] = {0xff, 0x02, [15] = 1};
	n = ns_frame(f, any, sn, ndp_imds_global, 0);
	assert_int_equal(ndp_parse_ns(f, n, &ns), 0);
	assert_int_equal(ndp_build_na(&ns, our_mac, out, sizeof(out)), NDP_NA_LEN);
	static const uint8_t mc[6] = {0x33, 0x33, 0, 0, 0, 1};
	assert_memory_equal(out, mc, 6);
	assert_memory_equal(out + 38, all_nodes, 16);
	assert_int_equal(out[58], 0x20);
	assert_int_equal(ndp_icmp6_csum(out + 22, out + 38, out + 54, 32), 0);
	/* no option: to the frame's source */
	n = ns_frame(f, guest_ula, ndp_imds_ll, ndp_imds_ll, 0);
	assert_int_equal(ndp_parse_ns(f, n, &ns), 0);
	assert_int_equal(ndp_build_na(&ns, our_mac, out, sizeof(out)), NDP_NA_LEN);
	assert_memory_equal(out, vm_mac, 6);
	assert_memory_equal(out + 22, ndp_imds_ll, 16);
}

/* The sources of an IPv6 SYN to the service, and the refusals. */
static void test_ndp_syn(void **state)
{
	(void)state;
	uint8_t f[128], mac[6], ip[16], tcp[20] = {0xa4, 0x10, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02};
	static const uint8_t dmac[6] = {0x02, 0xa9, 0xfe, 0, 0, 1}, any[16];
	static const uint8_t mc_src[16] = {0xff, 0x02, [15] = 1};
	for (int a = 0; a < 2; a++) {
		size_t k = v6frame(f, dmac, guest_ula, ndp_imds_addr[a], 6, 64, tcp, sizeof(tcp));
		assert_int_equal(ndp_parse_syn(f, k, mac, ip), 0);
		assert_memory_equal(mac, vm_mac, 6);
		assert_memory_equal(ip, guest_ula, 16);
	}
	size_t k = v6frame(f, dmac, guest_ula, ndp_imds_global, 6, 64, tcp, sizeof(tcp));
	assert_int_equal(ndp_parse_syn(f, k - 1, mac, ip), -EBADMSG);
	assert_int_equal(ndp_parse_syn(f, 54, mac, ip), -EBADMSG);
	assert_int_equal(ndp_parse_syn(frames[0].b, frames[0].n, mac, ip), -EBADMSG); /* ARP */
	assert_int_equal(ndp_parse_syn(syns[0].b, syns[0].n, mac, ip), -EBADMSG);     /* IPv4 */
	k = v6frame(f, dmac, guest_ula, ndp_imds_global, 17, 64, tcp, sizeof(tcp));
	assert_int_equal(ndp_parse_syn(f, k, mac, ip), -EBADMSG); /* UDP */
	k = v6frame(f, dmac, any, ndp_imds_global, 6, 64, tcp, sizeof(tcp));
	assert_int_equal(ndp_parse_syn(f, k, mac, ip), -EINVAL); /* from :: */
	k = v6frame(f, dmac, mc_src, ndp_imds_global, 6, 64, tcp, sizeof(tcp));
	assert_int_equal(ndp_parse_syn(f, k, mac, ip), -EINVAL); /* from a group */
	k = v6frame(f, dmac, guest_ula, ndp_imds_global, 6, 64, tcp, sizeof(tcp));
	f[6] = 0x01; /* a multicast source MAC */
	assert_int_equal(ndp_parse_syn(f, k, mac, ip), -EINVAL);
}

/* RFC 4443 §2.3 / RFC 1071, written out the plain way: the pseudo-header
 * (source, destination, upper-layer length, next header 58) and the
 * message as 16-bit words, an odd last byte padded with zero. */
static uint16_t ref_csum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *m, size_t n)
{
	uint64_t sum = 0;
	for (int i = 0; i < 16; i += 2)
		sum += (uint32_t)(src[i] << 8 | src[i + 1]) + (uint32_t)(dst[i] << 8 | dst[i + 1]);
	sum += (uint32_t)(n >> 16) + (uint32_t)(n & 0xffff) + 58;
	for (size_t i = 0; i < n; i += 2)
		sum += (uint32_t)(m[i] << 8 | (i + 1 < n ? m[i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void test_icmp6_csum(void **state)
{
	(void)state;
	uint8_t m[300];
	uint32_t x = 0x12345678;
	for (size_t i = 0; i < sizeof(m); i++) {
		x = x * 1103515245u + 12345u;
		m[i] = (uint8_t)(x >> 16);
	}
	for (size_t n = 0; n <= sizeof(m); n++) {
		uint16_t got = ndp_icmp6_csum(guest_ll, ndp_imds_global, m, n);
		if (got != ref_csum(guest_ll, ndp_imds_global, m, n))
			fail_msg("length %zu: 0x%04x, want 0x%04x", n, got,
				 ref_csum(guest_ll, ndp_imds_global, m, n));
	}
	/* all 0xff: the carries fold more than once */
	memset(m, 0xff, sizeof(m));
	assert_int_equal(ndp_icmp6_csum(guest_ll, ndp_imds_global, m, 64),
			 ref_csum(guest_ll, ndp_imds_global, m, 64));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ndp_parse),
		cmocka_unit_test(test_ndp_reply),
		cmocka_unit_test(test_ndp_syn),
		cmocka_unit_test(test_icmp6_csum),
	};
	return cmocka_run_group_tests_name("ndp", tests, NULL, NULL);
}
