/* arp: the sidecar's L2 face.
 *
 *  - A pure parser of Ethernet/IPv4 ARP frames and a reply builder.
 *  - The "guard", a classic BPF program for the TCP listener, which
 *    drops, silently, any segment that did not arrive on veth-imds (the
 *    VM's steered path).
 *  - A small MAC set, and a scanner for the "mac" fields of a Multus
 *    network-status document (the VM's MACs when the pod has them).
 *
 * The responder that answers with them, its socket and its filter are
 * responder.h; this file sees nothing of IPv6 (ndp.h), so the two
 * protocols' modules do not include each other. */
#ifndef IMDS_ARP_H
#define IMDS_ARP_H

#include <stddef.h>
#include <stdint.h>

#include <linux/filter.h>

#define ARP_FRAME_LEN 42 /* Ethernet header (14) + ARP for IPv4 (28) */
#define ARP_MACSET_MAX 32

struct arp_pkt {
	uint8_t eth_dst[6];
	uint8_t eth_src[6];
	uint16_t op; /* host order: 1 request, 2 reply */
	uint8_t sha[6];
	uint8_t spa[4];
	uint8_t tha[6];
	uint8_t tpa[4];
};

/* 0; -EBADMSG when shorter than an ARP frame; -EPROTONOSUPPORT when it is
 * not Ethernet/IPv4 ARP (ethertype, htype, ptype, hlen, plen). */
int arp_parse(const uint8_t *frame, size_t len, struct arp_pkt *out);

enum arp_verdict {
	ARP_ANSWER = 0,   /* a request for ip from a sane sender */
	ARP_NOT_REQUEST,  /* a reply, or an op we do not speak */
	ARP_OTHER_TARGET, /* a request for someone else */
	ARP_GRATUITOUS,   /* sender IP == target IP: an announcement (RFC 5227
			   * §2.3), never answered */
	ARP_BAD_SENDER,   /* sender MAC multicast or zero, or not the frame's
			   * Ethernet source */
};
enum arp_verdict arp_classify(const struct arp_pkt *p, const uint8_t ip[4]);

/* Writes the reply to req (a request for ip) into out: from mac/ip to the
 * requester's MAC.  A probe (sender 0.0.0.0, RFC 5227 §2.1.1) is answered
 * to the prober's MAC with target IP 0.0.0.0, as Linux's arp_process does.
 * Returns ARP_FRAME_LEN, or 0 when cap is too small. */
size_t arp_build_reply(const struct arp_pkt *req, const uint8_t mac[6], const uint8_t ip[4],
		       uint8_t *out, size_t cap);

/* ---- MAC sets ------------------------------------------------------------ */

struct arp_macset {
	unsigned n;
	uint8_t mac[ARP_MACSET_MAX][6];
};

int arp_mac_is_unicast(const uint8_t mac[6]); /* not multicast, not all-zero */
/* 1 added, 0 already there, -ENOSPC full, -EINVAL not a unicast MAC. */
int arp_macset_add(struct arp_macset *s, const uint8_t mac[6]);
int arp_macset_has(const struct arp_macset *s, const uint8_t mac[6]);
int arp_macset_eq(const struct arp_macset *a, const struct arp_macset *b);

/* Adds the value of every "mac" key of a Multus network-status document
 * (JSON, or the same text escaped inside a downward-API annotations file)
 * to out.  Returns the number of MACs found (added or already there), or
 * -ENOSPC when out filled up.  Pure; buf need not be NUL-terminated. */
int arp_scan_macs(const char *buf, size_t len, struct arp_macset *out);

/* ---- classic BPF --------------------------------------------------------- */

#define ARP_GUARD_MAX 6

/* The Ethernet and IPv4 sources of a frame that filter passed as a SYN:
 * 0; -EBADMSG when it is no IPv4 frame; -EINVAL for a multicast or zero
 * source MAC.  Pure. */
int arp_parse_syn(const uint8_t *frame, size_t len, uint8_t mac[6], uint8_t ip[4]);
/* The TCP listener's guard: accept segments that came in on device
 * ifindex (veth-imds: only the VM's steered frames arrive there), and with
 * allow_lo also those from a process of the pod (over loopback: the path
 * passt takes for its guest).  Anything else is dropped silently: a SYN
 * the guard drops is never answered.  The instruction count or -ENOSPC. */
int arp_guard_prog(int ifindex, int allow_lo, struct sock_filter *out, size_t cap);
/* Attaches (or replaces) the guard on a socket: 0 or -errno. */
int arp_guard_attach(int fd, int ifindex, int allow_lo);

#endif
