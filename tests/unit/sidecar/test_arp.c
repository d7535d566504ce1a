/* arp's pure half: frames as byte tables (requests, probes, announcements,
 * replies, wrong types, every truncated prefix), the exact reply bytes,
 * the classic BPF programs (the ARP socket's filter, the listener's guard
 * by ingress device) run through a small interpreter of the opcodes they
 * use, the MAC set, and the network-status scanner.  IPv6 (ndp.h): neighbour
 * solicitations built byte by byte (every RFC 4861 §7.1.1 refusal, every
 * truncated prefix), the advertisement's exact bytes, the SYN learner's
 * IPv6 frames, and the same filter with IPv6 on. */
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
#include "ndp.h"
#include "responder.h"

#define VM 0x52, 0x54, 0x00, 0x12, 0x34, 0x56
#define BCAST 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
#define IMDS 169, 254, 169, 254
#define ARPHDR 0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04

static const uint8_t imds_ip[4] = {IMDS};
static const uint8_t vm_mac[6] = {VM};
static const uint8_t our_mac[6] = {0x0e, 0xd6, 0x7d, 0xda, 0x50, 0x41};

/* who-has 169.254.169.254 tell 169.254.10.20, from the VM, padded to 60
 * bytes as on the wire. */
static const uint8_t req_frame[60] = {
	BCAST, VM, ARPHDR, 0x00, 0x01, VM, 169, 254, 10, 20, 0, 0, 0, 0, 0, 0, IMDS,
};

struct frame {
	const char *name;
	uint8_t b[64];
	size_t n;
	int parse;                 /* arp_parse result */
	enum arp_verdict verdict;  /* when parse == 0 */
	int bpf;                   /* the socket filter accepts it */
};

static const struct frame frames[] = {
	{"request", {BCAST, VM, ARPHDR, 0, 1, VM, 169, 254, 10, 20, 0, 0, 0, 0, 0, 0, IMDS}, 42, 0,
	 ARP_ANSWER, 1},
	{"request from masquerade guest", {BCAST, VM, ARPHDR, 0, 1, VM, 10, 0, 2, 2, 0, 0, 0, 0, 0, 0, IMDS},
	 42, 0, ARP_ANSWER, 1},
	{"probe (RFC 5227)", {BCAST, VM, ARPHDR, 0, 1, VM, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, IMDS}, 42, 0,
	 ARP_ANSWER, 1},
	{"announcement", {BCAST, VM, ARPHDR, 0, 1, VM, IMDS, 0, 0, 0, 0, 0, 0, IMDS}, 42, 0,
	 ARP_GRATUITOUS, 1},
	{"other target", {BCAST, VM, ARPHDR, 0, 1, VM, 169, 254, 10, 20, 0, 0, 0, 0, 0, 0, 10, 0, 2, 1},
	 42, 0, ARP_OTHER_TARGET, 0},
	{"reply", {VM, VM, ARPHDR, 0, 2, VM, 169, 254, 10, 20, VM, IMDS}, 42, 0, ARP_NOT_REQUEST, 0},
	{"op 3 (RARP)", {BCAST, VM, ARPHDR, 0, 3, VM, 169, 254, 10, 20, 0, 0, 0, 0, 0, 0, IMDS}, 42, 0,
	 ARP_NOT_REQUEST, 0},
	{"sender MAC multicast", {BCAST, 0x01, 0, 0x5e, 0, 0, 1, ARPHDR, 0, 1, 0x01, 0, 0x5e, 0, 0, 1,
				  169, 254, 10, 20, 0, 0, 0, 0, 0, 0, IMDS},
	 42, 0, ARP_BAD_SENDER, 1},
	{"sender MAC zero", {BCAST, 0, 0, 0, 0, 0, 0, ARPHDR, 0, 1, 0, 0, 0, 0, 0, 0, 169, 254, 10, 20,
			     0, 0, 0, 0, 0, 0, IMDS},
	 42, 0, ARP_BAD_SENDER, 1},
	{"sha != Ethernet source", {BCAST, VM, ARPHDR, 0, 1, 0x52, 0x54, 0, 0xaa, 0xbb, 0xcc, 169, 254,
				    10, 20, 0, 0, 0, 0, 0, 0, IMDS},
	 42, 0, ARP_BAD_SENDER, 1},
	{"IPv4 ethertype", {BCAST, VM, 0x08, 0x00, 0, 1, 8, 0, 6, 4, 0, 1, VM, 169, 254, 10, 20, 0, 0,
			    0, 0, 0, 0, IMDS},
	 42, -EPROTONOSUPPORT, 0, 0},
	{"VLAN tagged", {BCAST, VM, 0x81, 0x00, 0x00, 0x05, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1, VM, 169,
			 254, 10, 20, 0, 0, 0, 0, 0, 0, IMDS},
	 46, -EPROTONOSUPPORT, 0, 0},
	{"htype 6", {BCAST, VM, 0x08, 0x06, 0, 6, 8, 0, 6, 4, 0, 1, VM, 169, 254, 10, 20, 0, 0, 0, 0, 0,
		     0, IMDS},
	 42, -EPROTONOSUPPORT, 0, 0},
	{"ptype IPv6", {BCAST, VM, 0x08, 0x06, 0, 1, 0x86, 0xdd, 6, 4, 0, 1, VM, 169, 254, 10, 20, 0, 0,
			0, 0, 0, 0, IMDS},
	 42, -EPROTONOSUPPORT, 0, 0},
	{"hlen 8", {BCAST, VM, 0x08, 0x06, 0, 1, 8, 0, 8, 4, 0, 1, VM, 169, 254, 10, 20, 0, 0, 0, 0, 0,
		    0, IMDS},
	 42, -EPROTONOSUPPORT, 0, 0},
	{"41 bytes", {BCAST, VM, ARPHDR, 0, 1, VM, 169, 254, 10, 20, 0, 0, 0, 0, 0, 0, IMDS}, 41, -EBADMSG,
	 0, 0},
};
#define NFRAMES (sizeof(frames) / sizeof(frames[0]))

/* ---- a classic BPF interpreter for the opcodes our programs use --------- */

struct pkt {
	const uint8_t *data; /* from the Ethernet header */
	size_t len;
	unsigned pkttype;
	unsigned ifindex;    /* skb->dev: the device it came in on */
};

static int load(const struct pkt *p, int32_t k, unsigned size, uint32_t *a)
{
	int64_t off = k;
	if (k == SKF_AD_OFF + SKF_AD_PKTTYPE) {
		*a = p->pkttype;
		return 0;
	}
	if (k == SKF_AD_OFF + SKF_AD_IFINDEX) {
		*a = p->ifindex;
		return 0;
	}
	if (k >= SKF_LL_OFF && k < SKF_AD_OFF + 0x1000 && k < 0)
		off = k - SKF_LL_OFF; /* the link-layer header is where data starts */
	if (off < 0 || (uint64_t)off + size > p->len)
		return -1; /* the kernel's load fails: the program returns 0 */
	*a = 0;
	for (unsigned i = 0; i < size; i++)
		*a = *a << 8 | p->data[off + i];
	return 0;
}

static uint32_t run(const struct sock_filter *prog, int n, const struct pkt *p)
{
	uint32_t a = 0, x = 0;
	for (int pc = 0; pc < n; pc++) {
		const struct sock_filter *f = &prog[pc];
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (load(p, (int32_t)f->k, 4, &a))
				return 0;
			break;
		case BPF_LD | BPF_H | BPF_ABS:
			if (load(p, (int32_t)f->k, 2, &a))
				return 0;
			break;
		case BPF_LD | BPF_B | BPF_ABS:
			if (load(p, (int32_t)f->k, 1, &a))
				return 0;
			break;
		case BPF_LD | BPF_H | BPF_IND:
			if (load(p, (int32_t)(x + f->k), 2, &a))
				return 0;
			break;
		case BPF_LD | BPF_B | BPF_IND:
			if (load(p, (int32_t)(x + f->k), 1, &a))
				return 0;
			break;
		case BPF_LDX | BPF_B | BPF_MSH:
			if (load(p, (int32_t)f->k, 1, &x))
				return 0;
			x = (x & 0xf) * 4;
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			a &= f->k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += a == f->k ? f->jt : f->jf;
			assert_true(pc + 1 < n); /* every jump lands inside */
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += (a & f->k) ? f->jt : f->jf;
			assert_true(pc + 1 < n);
			break;
		case BPF_RET | BPF_K:
			return f->k;
		default:
			fail_msg("unexpected opcode 0x%x at %d", f->code, pc);
		}
	}
	fail_msg("fell off the end");
	return 0;
}

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

	/* Our reply is a reply: it never passes our own filter. */
	struct sock_filter prog[RESP_FILTER_MAX];
	int n = resp_filter_prog(imds_ip, 0, 0, prog, RESP_FILTER_MAX);
	struct pkt pk = {out, ARP_FRAME_LEN, PACKET_OUTGOING, 0};
	assert_int_equal(run(prog, n, &pk), 0);
}

/* IPv4 + TCP frames for the SYN learner: Ethernet (14), IP (20, or 24
 * with options), TCP (20). */
#define ETHIP 0x02, 0xa9, 0xfe, 0, 0, 1, VM, 0x08, 0x00
#define TCPH(dport_hi, dport_lo, flags) 0xa4, 0x10, dport_hi, dport_lo, 0, 0, 0, 1, 0, 0, 0, 0, \
	0x50, flags, 0xff, 0xff, 0, 0, 0, 0
struct synframe {
	const char *name;
	uint8_t b[80];
	size_t n;
	int bpf;
};
static const struct synframe syns[] = {
	{"SYN to .254:80", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 2, IMDS,
			    TCPH(0, 80, 0x02)}, 54, 1},
	{"SYN with IP options", {ETHIP, 0x46, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 2, IMDS,
				 1, 1, 1, 0, TCPH(0, 80, 0x02)}, 58, 1},
	{"SYN+ECE+CWR", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 2, IMDS,
			 TCPH(0, 80, 0xc2)}, 54, 1},
	{"SYN-ACK", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 2, IMDS,
		     TCPH(0, 80, 0x12)}, 54, 0},
	{"ACK", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 2, IMDS,
		 TCPH(0, 80, 0x10)}, 54, 0},
	{"SYN to port 8080", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 2, IMDS,
			      TCPH(0x1f, 0x90, 0x02)}, 54, 0},
	{"SYN to another address", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 2, 10,
				    0, 2, 1, TCPH(0, 80, 0x02)}, 54, 0},
	{"UDP to .254:80", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 2, 2, IMDS,
			    TCPH(0, 80, 0x02)}, 54, 0},
	{"a later fragment", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x00, 0x10, 64, 6, 0, 0, 10, 0, 2, 2, IMDS,
			      TCPH(0, 80, 0x02)}, 54, 0},
	{"a first fragment (MF)", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x20, 0, 64, 6, 0, 0, 10, 0, 2, 2, IMDS,
				   TCPH(0, 80, 0x02)}, 54, 0},
	{"truncated before the flags", {ETHIP, 0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 2,
					IMDS, TCPH(0, 80, 0x02)}, 47, 0},
};
#define NSYNS (sizeof(syns) / sizeof(syns[0]))

static void test_socket_filter(void **state)
{
	(void)state;
	struct sock_filter prog[RESP_FILTER_MAX], sprog[RESP_FILTER_MAX];
	int n = resp_filter_prog(imds_ip, 0, 0, prog, RESP_FILTER_MAX);
	int sn = resp_filter_prog(imds_ip, 80, 0, sprog, RESP_FILTER_MAX);
	assert_true(n > 0 && sn > n);
	assert_int_equal(resp_filter_prog(imds_ip, 80, 0, sprog, 4), -ENOSPC);
	for (size_t i = 0; i < NFRAMES; i++) {
		const struct frame *f = &frames[i];
		struct pkt bc = {f->b, f->n, PACKET_BROADCAST, 0};
		uint32_t r = run(prog, n, &bc);
		if ((r != 0) != f->bpf)
			fail_msg("%s: filter returned %u", f->name, r);
		if (r)
			assert_true(r >= ARP_FRAME_LEN);
		/* the learner's variant: the same verdicts for ARP */
		assert_int_equal(run(sprog, sn, &bc) != 0, f->bpf);
	}
	for (size_t i = 0; i < NSYNS; i++) {
		const struct synframe *f = &syns[i];
		struct pkt pk = {f->b, f->n, PACKET_HOST, 0};
		uint32_t r = run(sprog, sn, &pk);
		if ((r != 0) != f->bpf)
			fail_msg("%s: learner's filter returned %u", f->name, r);
		if (run(prog, n, &pk))
			fail_msg("%s: passed the ARP-only filter", f->name);
		uint8_t mac[6], ip[4];
		if (f->bpf) {
			assert_true(r >= 34); /* both sources inside what is copied */
			assert_int_equal(arp_parse_syn(f->b, r < f->n ? r : f->n, mac, ip), 0);
			assert_memory_equal(mac, vm_mac, 6);
			static const uint8_t src[4] = {10, 0, 2, 2};
			assert_memory_equal(ip, src, 4);
		}
	}
	/* arp_parse_syn on what is not an IPv4 frame, or from no unicast MAC */
	uint8_t mac[6], ip[4], bad[54];
	assert_int_equal(arp_parse_syn(frames[0].b, frames[0].n, mac, ip), -EBADMSG);
	assert_int_equal(arp_parse_syn(syns[0].b, 33, mac, ip), -EBADMSG);
	memcpy(bad, syns[0].b, 54);
	bad[14] = 0x65; /* version 6 */
	assert_int_equal(arp_parse_syn(bad, 54, mac, ip), -EBADMSG);
	memcpy(bad, syns[0].b, 54);
	bad[6] = 0x01; /* multicast source */
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

/* ---- IPv6 ------------------------------------------------------------------- */

static const uint8_t guest_ll[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56};
static const uint8_t guest_ula[16] = {0xfd, 0x10, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

/* Ethernet + IPv6 (next header nh, hop limit hl) + payload; the payload
 * length field as given (0xffff: the true one).  The frame's length. */
static size_t v6frame(uint8_t *out, const uint8_t dmac[6], const uint8_t src[16],
		      const uint8_t dst[16], uint8_t nh, uint8_t hl, const uint8_t *pl, size_t plen)
{
	memcpy(out, dmac, 6);
	memcpy(out + 6, vm_mac, 6);
	out[12] = 0x86;
	out[13] = 0xdd;
	memset(out + 14, 0, 40);
	out[14] = 0x60;
	out[18] = (uint8_t)(plen >> 8);
	out[19] = (uint8_t)plen;
	out[20] = nh;
	out[21] = hl;
	memcpy(out + 22, src, 16);
	memcpy(out + 38, dst, 16);
	if (plen)
		memcpy(out + 54, pl, plen);
	return 54 + plen;
}

/* An NS for target from src to dst (with the source link-layer option when
 * slla), checksummed. */
static size_t ns_frame(uint8_t *out, const uint8_t src[16], const uint8_t dst[16],
		       const uint8_t target[16], int slla)
{
	uint8_t m[32] = {135, 0, 0, 0, 0, 0, 0, 0};
	size_t n = 24;
	static const uint8_t mc[6] = {0x33, 0x33, 0xff, 0, 0, 0};
	memcpy(m + 8, target, 16);
	if (slla) {
		m[24] = 1;
		m[25] = 1;
		memcpy(m + 26, vm_mac, 6);
		n = 32;
	}
	uint16_t c = ndp_icmp6_csum(src, dst, m, n);
	m[2] = (uint8_t)(c >> 8);
	m[3] = (uint8_t)c;
	return v6frame(out, mc, src, dst, 58, 255, m, n);
}

static void solicited_node(const uint8_t target[16], uint8_t out[16])
{
	static const uint8_t sn[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
	memcpy(out, sn, 13);
	memcpy(out + 13, target + 13, 3);
}

/* Resets the ICMPv6 checksum of an NS frame after an edit. */
static void ns_fix(uint8_t *f, size_t n)
{
	f[56] = f[57] = 0;
	uint16_t c = ndp_icmp6_csum(f + 22, f + 38, f + 54, n - 54);
	f[56] = (uint8_t)(c >> 8);
	f[57] = (uint8_t)c;
}

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
	/* our advertisement never passes our own filter */
	struct sock_filter prog[RESP_FILTER_MAX];
	int pn = resp_filter_prog(imds_ip, 80, 1, prog, RESP_FILTER_MAX);
	struct pkt pk = {out, NDP_NA_LEN, PACKET_OUTGOING, 0};
	assert_int_equal(run(prog, pn, &pk), 0);
}

static void test_ndp_filter(void **state)
{
	(void)state;
	struct sock_filter prog[RESP_FILTER_MAX], nprog[RESP_FILTER_MAX];
	uint8_t f[128], sn[16], tcp[20] = {0xa4, 0x10, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02};
	static const uint8_t dmac[6] = {0x02, 0xa9, 0xfe, 0, 0, 1};
	int n = resp_filter_prog(imds_ip, 80, 1, prog, RESP_FILTER_MAX);
	int nn = resp_filter_prog(imds_ip, 0, 1, nprog, RESP_FILTER_MAX);
	assert_true(n > 0 && nn > 0 && n <= RESP_FILTER_MAX);
	/* IPv4 verdicts unchanged with IPv6 on */
	for (size_t i = 0; i < NFRAMES; i++) {
		struct pkt bc = {frames[i].b, frames[i].n, PACKET_BROADCAST, 0};
		assert_int_equal(run(prog, n, &bc) != 0, frames[i].bpf);
	}
	for (size_t i = 0; i < NSYNS; i++) {
		struct pkt pk = {syns[i].b, syns[i].n, PACKET_HOST, 0};
		assert_int_equal(run(prog, n, &pk) != 0, syns[i].bpf);
	}
	for (int a = 0; a < 2; a++) {
		/* NS for ours: passed whole (options too) */
		solicited_node(ndp_imds_addr[a], sn);
		size_t k = ns_frame(f, guest_ll, sn, ndp_imds_addr[a], 1);
		struct pkt pk = {f, k, PACKET_MULTICAST, 0};
		uint32_t r = run(prog, n, &pk);
		assert_true(r >= k);
		assert_true(run(nprog, nn, &pk) >= k);
		struct ndp_ns ns;
		assert_int_equal(ndp_parse_ns(f, r < k ? r : k, &ns), 0);
		/* a SYN to ours on 80: passed; SYN-ACK, ACK, another port: not */
		k = v6frame(f, dmac, guest_ula, ndp_imds_addr[a], 6, 64, tcp, sizeof(tcp));
		pk = (struct pkt){f, k, PACKET_HOST, 0};
		r = run(prog, n, &pk);
		assert_true(r >= 54 + 14);
		assert_int_equal(run(nprog, nn, &pk), 0); /* no learner without a port */
		uint8_t mac[6], ip[16];
		assert_int_equal(ndp_parse_syn(f, k, mac, ip), 0);
		assert_memory_equal(mac, vm_mac, 6);
		assert_memory_equal(ip, guest_ula, 16);
		for (int v = 0; v < 3; v++) {
			uint8_t t2[20];
			memcpy(t2, tcp, 20);
			if (v == 0)
				t2[13] = 0x12; /* SYN-ACK */
			else if (v == 1)
				t2[13] = 0x10; /* ACK */
			else
				t2[3] = 81;
			k = v6frame(f, dmac, guest_ula, ndp_imds_addr[a], 6, 64, t2, sizeof(t2));
			pk = (struct pkt){f, k, PACKET_HOST, 0};
			assert_int_equal(run(prog, n, &pk), 0);
		}
	}
	/* NS for another address, NA, SYN to another address, UDP, an
	 * extension header: not passed */
	solicited_node(guest_ula, sn);
	size_t k = ns_frame(f, guest_ll, sn, guest_ula, 1);
	struct pkt pk = {f, k, PACKET_MULTICAST, 0};
	assert_int_equal(run(prog, n, &pk), 0);
	k = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	f[54] = 136;
	assert_int_equal(run(prog, n, &pk), 0);
	k = v6frame(f, dmac, guest_ula, guest_ll, 6, 64, tcp, sizeof(tcp));
	pk = (struct pkt){f, k, PACKET_HOST, 0};
	assert_int_equal(run(prog, n, &pk), 0);
	k = v6frame(f, dmac, guest_ula, ndp_imds_global, 17, 64, tcp, sizeof(tcp));
	assert_int_equal(run(prog, n, &pk), 0);
	k = v6frame(f, dmac, guest_ula, ndp_imds_global, 0, 64, tcp, sizeof(tcp));
	assert_int_equal(run(prog, n, &pk), 0);
	/* IPv6 off: no IPv6 frame at all */
	struct sock_filter p4[RESP_FILTER_MAX];
	int n4 = resp_filter_prog(imds_ip, 80, 0, p4, RESP_FILTER_MAX);
	solicited_node(ndp_imds_global, sn);
	k = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	pk = (struct pkt){f, k, PACKET_MULTICAST, 0};
	assert_int_equal(run(p4, n4, &pk), 0);
	/* ndp_parse_syn refusals */
	uint8_t mac[6], ip[16];
	k = v6frame(f, dmac, guest_ula, ndp_imds_global, 6, 64, tcp, sizeof(tcp));
	assert_int_equal(ndp_parse_syn(f, k - 1, mac, ip), -EBADMSG);
	assert_int_equal(ndp_parse_syn(frames[0].b, frames[0].n, mac, ip), -EBADMSG);
	static const uint8_t any[16];
	k = v6frame(f, dmac, any, ndp_imds_global, 6, 64, tcp, sizeof(tcp));
	assert_int_equal(ndp_parse_syn(f, k, mac, ip), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_truncated_prefixes),
		cmocka_unit_test(test_reply_bytes),
		cmocka_unit_test(test_socket_filter),
		cmocka_unit_test(test_guard),
		cmocka_unit_test(test_ndp_parse),
		cmocka_unit_test(test_ndp_reply),
		cmocka_unit_test(test_ndp_filter),
		cmocka_unit_test(test_macset),
		cmocka_unit_test(test_scan),
	};
	return cmocka_run_group_tests_name("arp", tests, NULL, NULL);
}
