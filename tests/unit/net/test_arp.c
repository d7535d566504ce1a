/* arp's own half: frames as byte tables (requests, probes, announcements,
 * replies, wrong types, every truncated prefix), the exact reply bytes, the
 * SYN learner's IPv4 parser, the listener's guard (a classic BPF program by
 * ingress device) run through the interpreter of l2frames.h, the MAC set,
 * and the network-status scanner.  IPv6 is test_ndp.c; the socket filter
 * that lets these frames reach user space, and the responder that answers
 * them, test_responder.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arp.h"
#include "l2frames.h"

/* ---- tests ----------------------------------------------------------------- */

static void test_frames(void **state)
{
	(void)state;
	for (size_t i = 0; i < NFRAMES; i++) {
		const struct frame *f = &frames[i];
		struct arp_pkt p;
		int ret = arp_parse(f->b, f->n, &p);
		if (ret != f->parse)
			fail_msg("%s: parse %d, want %d", f->name, ret, f->parse);
		if (ret == 0 && arp_classify(&p, imds_ip) != f->verdict)
			fail_msg("%s: verdict %d, want %d", f->name, arp_classify(&p, imds_ip), f->verdict);
	}
}

static void test_truncated_prefixes(void **state)
{
	(void)state;
	for (size_t n = 0; n <= sizeof(req_frame); n++) {
		uint8_t *c = malloc(n ? n : 1);
		struct arp_pkt p;
		assert_non_null(c);
		memcpy(c, req_frame, n);
		assert_int_equal(arp_parse(c, n, &p), n < ARP_FRAME_LEN ? -EBADMSG : 0);
		free(c);
	}
}

static void test_reply_bytes(void **state)
{
	(void)state;
	static const uint8_t want[ARP_FRAME_LEN] = {
		VM, 0x0e, 0xd6, 0x7d, 0xda, 0x50, 0x41, ARPHDR, 0, 2,
		0x0e, 0xd6, 0x7d, 0xda, 0x50, 0x41, IMDS, VM, 169, 254, 10, 20,
	};
	static const uint8_t want_probe[ARP_FRAME_LEN] = {
		VM, 0x0e, 0xd6, 0x7d, 0xda, 0x50, 0x41, ARPHDR, 0, 2,
		0x0e, 0xd6, 0x7d, 0xda, 0x50, 0x41, IMDS, VM, 0, 0, 0, 0,
	};
	uint8_t out[64];
	struct arp_pkt p;

	assert_int_equal(arp_parse(frames[0].b, frames[0].n, &p), 0);
	assert_int_equal(arp_build_reply(&p, our_mac, imds_ip, out, sizeof(out)), ARP_FRAME_LEN);
	assert_memory_equal(out, want, ARP_FRAME_LEN);
	assert_int_equal(arp_build_reply(&p, our_mac, imds_ip, out, ARP_FRAME_LEN - 1), 0);

	assert_int_equal(arp_parse(frames[2].b, frames[2].n, &p), 0);
	assert_int_equal(arp_build_reply(&p, our_mac, imds_ip, out, sizeof(out)), ARP_FRAME_LEN);
	assert_memory_equal(out, want_probe, ARP_FRAME_LEN);

}

/* The sources of the SYNs the responder's filter passes (l2frames.h's
 * table), and the refusals. */
static void test_parse_syn(void **state)
{
	(void)state;
	static const uint8_t src[4] = {10, 0, 2, 2};
	uint8_t mac[6], ip[4], bad[54];
	for (size_t i = 0; i < sizeof(syns) / sizeof(syns[0]); i++) {
		const struct synframe *f = &syns[i];
		if (!f->bpf)
			continue;
		/* what the socket copies: at least both sources (34 bytes) */
		assert_int_equal(arp_parse_syn(f->b, 34, mac, ip), 0);
		assert_int_equal(arp_parse_syn(f->b, f->n, mac, ip), 0);
		assert_memory_equal(mac, vm_mac, 6);
		assert_memory_equal(ip, src, 4);
	}
	/* what is not an IPv4 frame, or from no unicast MAC */
	assert_int_equal(arp_parse_syn(frames[0].b, frames[0].n, mac, ip), -EBADMSG);
	assert_int_equal(arp_parse_syn(syns[0].b, 33, mac, ip), -EBADMSG);
	memcpy(bad, syns[0].b, 54);
	bad[14] = 0x65; /* version 6 */
	assert_int_equal(arp_parse_syn(bad, 54, mac, ip), -EBADMSG);
	memcpy(bad, syns[0].b, 54);
	bad[12] = 0x86; /* IPv6's ethertype */
	bad[13] = 0xdd;
	assert_int_equal(arp_parse_syn(bad, 54, mac, ip), -EBADMSG);
	memcpy(bad, syns[0].b, 54);
	bad[6] = 0x01; /* multicast source */
	assert_int_equal(arp_parse_syn(bad, 54, mac, ip), -EINVAL);
	memset(bad + 6, 0, 6); /* zero source */
	assert_int_equal(arp_parse_syn(bad, 54, mac, ip), -EINVAL);
}


static void test_guard(void **state)
{
	(void)state;
	struct sock_filter prog[ARP_GUARD_MAX];
	/* Ethernet header + a bit of IP: the guard looks at none of it. */
	uint8_t hdr[20] = {0};
	int n;

	memcpy(hdr + 6, vm_mac, 6);
	/* taps only: veth-imds (ifindex 7) in, everything else out */
	n = arp_guard_prog(7, 0, prog, ARP_GUARD_MAX);
	assert_int_equal(n, 4);
	for (unsigned ifi = 0; ifi < 300; ifi++) {
		struct pkt p = {hdr, sizeof(hdr), PACKET_HOST, ifi};
		assert_int_equal(run(prog, n, &p), ifi == 7 ? 0xffffffffu : 0);
	}
	/* passt: veth-imds and loopback (ifindex 1), nothing else */
	n = arp_guard_prog(7, 1, prog, ARP_GUARD_MAX);
	assert_int_equal(n, 5);
	for (unsigned ifi = 0; ifi < 300; ifi++) {
		struct pkt p = {hdr, sizeof(hdr), PACKET_HOST, ifi};
		assert_int_equal(run(prog, n, &p), ifi == 7 || ifi == 1 ? 0xffffffffu : 0);
	}
	/* the payload does not matter, even none at all */
	struct pkt none = {hdr, 0, PACKET_HOST, 7};
	assert_int_equal(run(prog, n, &none), 0xffffffffu);
	/* veth-imds is loopback itself: the check holds */
	n = arp_guard_prog(1, 0, prog, ARP_GUARD_MAX);
	struct pkt lo = {hdr, sizeof(hdr), PACKET_HOST, 1}, two = {hdr, sizeof(hdr), PACKET_HOST, 2};
	assert_int_equal(run(prog, n, &lo), 0xffffffffu);
	assert_int_equal(run(prog, n, &two), 0);
	assert_int_equal(arp_guard_prog(0, 0, prog, ARP_GUARD_MAX), -EINVAL);
	assert_int_equal(arp_guard_prog(-3, 1, prog, ARP_GUARD_MAX), -EINVAL);
	assert_int_equal(arp_guard_prog(7, 1, prog, 4), -ENOSPC);
	assert_int_equal(arp_guard_prog(7, 0, prog, 4), 4);
}

static void test_macset(void **state)
{
	(void)state;
	struct arp_macset a = {0}, b = {0};
	static const uint8_t mc[6] = {0x33, 0x33, 0, 0, 0, 1}, zero[6] = {0};
	assert_int_equal(arp_macset_add(&a, vm_mac), 1);
	assert_int_equal(arp_macset_add(&a, vm_mac), 0);
	assert_int_equal(arp_macset_add(&a, mc), -EINVAL);
	assert_int_equal(arp_macset_add(&a, zero), -EINVAL);
	assert_true(arp_macset_has(&a, vm_mac));
	assert_false(arp_macset_has(&a, our_mac));
	assert_false(arp_macset_eq(&a, &b));
	assert_int_equal(arp_macset_add(&b, vm_mac), 1);
	assert_true(arp_macset_eq(&a, &b));
	for (int i = 0; i < ARP_MACSET_MAX - 1; i++) {
		uint8_t m[6] = {0x02, 1, 2, 3, 4, (uint8_t)i};
		assert_int_equal(arp_macset_add(&a, m), 1);
	}
	assert_int_equal(arp_macset_add(&a, our_mac), -ENOSPC);
}

struct scan {
	const char *name;
	const char *text;
	int want;          /* return value */
	const char *first; /* first MAC found, or NULL */
};

/* Multus network-status as the JSON annotation value, and the same inside
 * a downward-API annotations file (Go-quoted: \" around strings). */
static const struct scan scans[] = {
	{"network-status JSON",
	 "[{\n    \"name\": \"k8s-pod-network\",\n    \"ips\": [\"10.244.1.5\"],\n    \"default\": true,\n"
	 "    \"dns\": {}\n},{\n    \"name\": \"default/br-net\",\n    \"interface\": \"net1\",\n"
	 "    \"mac\": \"02:42:ac:11:00:02\",\n    \"dns\": {}\n}]",
	 1, "02:42:ac:11:00:02"},
	{"downward API file",
	 "k8s.v1.cni.cncf.io/network-status=\"[{\\n    \\\"name\\\": \\\"cbr0\\\",\\n    \\\"interface\\\": "
	 "\\\"eth0\\\",\\n    \\\"mac\\\": \\\"0A:58:0A:F4:01:05\\\",\\n    \\\"default\\\": true\\n}]\"\n"
	 "kubevirt.io/domain=\"netvm\"\n",
	 1, "0a:58:0a:f4:01:05"},
	{"two, one repeated",
	 "[{\"mac\":\"02:00:00:00:00:01\"},{\"mac\" : \"02:00:00:00:00:02\"},{\"mac\":\"02:00:00:00:00:01\"}]", 3,
	 "02:00:00:00:00:01"},
	{"macaddress is another key", "{\"macaddress\":\"02:00:00:00:00:01\"}", 0, NULL},
	{"not a MAC", "{\"mac\":\"02:00:00:00:00\"}", 0, NULL},
	{"bad hex", "{\"mac\":\"02:00:0g:00:00:01\"}", 0, NULL},
	{"multicast ignored", "{\"mac\":\"01:00:5e:00:00:01\"}", 0, NULL},
	{"unterminated", "{\"mac\":\"02:00:00:00:00:01", 0, NULL},
	{"empty", "", 0, NULL},
};

static void test_scan(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(scans) / sizeof(scans[0]); i++) {
		const struct scan *s = &scans[i];
		struct arp_macset set = {0};
		size_t len = strlen(s->text);
		int ret = arp_scan_macs(s->text, len, &set);
		if (ret != s->want)
			fail_msg("%s: %d, want %d", s->name, ret, s->want);
		if (s->first) {
			char got[18];
			snprintf(got, sizeof(got), "%02x:%02x:%02x:%02x:%02x:%02x", set.mac[0][0],
				 set.mac[0][1], set.mac[0][2], set.mac[0][3], set.mac[0][4], set.mac[0][5]);
			assert_string_equal(got, s->first);
		}
		/* every prefix: no more found than in the whole, no overread */
		for (size_t n = 0; n < len; n++) {
			char *c = malloc(n ? n : 1);
			struct arp_macset ps = {0};
			assert_non_null(c);
			memcpy(c, s->text, n);
			int r = arp_scan_macs(c, n, &ps);
			assert_true(r >= 0 && r <= (s->want > 0 ? s->want : 0));
			free(c);
		}
	}
	/* more MACs than the set holds */
	char big[4096];
	size_t at = 0;
	for (int i = 0; i < ARP_MACSET_MAX + 2; i++)
		at += (size_t)snprintf(big + at, sizeof(big) - at, "{\"mac\":\"02:00:00:00:01:%02x\"}", i);
	struct arp_macset set = {0};
	assert_int_equal(arp_scan_macs(big, at, &set), -ENOSPC);
	assert_int_equal(set.n, ARP_MACSET_MAX);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_truncated_prefixes),
		cmocka_unit_test(test_reply_bytes),
		cmocka_unit_test(test_parse_syn),
		cmocka_unit_test(test_guard),
		cmocka_unit_test(test_macset),
		cmocka_unit_test(test_scan),
	};
	return cmocka_run_group_tests_name("arp", tests, NULL, NULL);
}
