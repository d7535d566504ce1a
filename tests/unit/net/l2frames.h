/* What test_arp.c, test_ndp.c and test_responder.c share: Ethernet frames
 * as byte tables (ARP requests and refusals, IPv4 SYNs, IPv6 frames and
 * neighbour solicitations built byte by byte) and a classic BPF
 * interpreter for the opcodes our programs use (responder.h's socket
 * filter, arp.h's listener guard).  Each table carries the verdicts the
 * modules give it: arp_parse/arp_classify's, the socket filter's.
 * Include after cmocka.h. */
#ifndef IMDS_TEST_SIDECAR_L2FRAMES_H
#define IMDS_TEST_SIDECAR_L2FRAMES_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/filter.h>

#include "arp.h"
#include "ndp.h"

/* A table not every including test reads. */
#define L2_SHARED __attribute__((unused))

#define VM 0x52, 0x54, 0x00, 0x12, 0x34, 0x56
#define BCAST 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
#define IMDS 169, 254, 169, 254
#define ARPHDR 0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04

static const L2_SHARED uint8_t imds_ip[4] = {IMDS};
static const L2_SHARED uint8_t vm_mac[6] = {VM};
static const L2_SHARED uint8_t our_mac[6] = {0x0e, 0xd6, 0x7d, 0xda, 0x50, 0x41};


/* who-has 169.254.169.254 tell 169.254.10.20, from the VM, padded to 60
 * bytes as on the wire. */
static const L2_SHARED uint8_t req_frame[60] = {
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

static const L2_SHARED struct frame frames[] = {
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

static inline int load(const struct pkt *p, int32_t k, unsigned size, uint32_t *a)
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

static inline uint32_t run(const struct sock_filter *prog, int n, const struct pkt *p)
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
static const L2_SHARED struct synframe syns[] = {
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

static const L2_SHARED uint8_t guest_ll[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56};
static const L2_SHARED uint8_t guest_ula[16] = {0xfd, 0x10, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

/* Ethernet + IPv6 (next header nh, hop limit hl) + payload; the payload
 * length field as given (0xffff: the true one).  The frame's length. */
static inline size_t v6frame(uint8_t *out, const uint8_t dmac[6], const uint8_t src[16],
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
static inline size_t ns_frame(uint8_t *out, const uint8_t src[16], const uint8_t dst[16],
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

static inline void solicited_node(const uint8_t target[16], uint8_t out[16])
{
	static const uint8_t sn[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
	memcpy(out, sn, 13);
	memcpy(out + 13, target + 13, 3);
}

/* Resets the ICMPv6 checksum of an NS frame after an edit. */
static inline void ns_fix(uint8_t *f, size_t n)
{
	f[56] = f[57] = 0;
	uint16_t c = ndp_icmp6_csum(f + 22, f + 38, f + 54, n - 54);
	f[56] = (uint8_t)(c >> 8);
	f[57] = (uint8_t)c;
}


#endif
