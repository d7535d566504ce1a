/* arp: the sidecar's L2 face.
 *
 *  - A pure parser of Ethernet/IPv4 ARP frames and a reply builder.
 *  - The classic BPF programs: one for the AF_PACKET socket (only ARP
 *    requests for 169.254.169.254 ever reach user space), and the "guard"
 *    for the TCP listener, which drops, silently, any segment that did not
 *    arrive on veth-imds (the VM's steered path).
 *  - A small MAC set, and a scanner for the "mac" fields of a Multus
 *    network-status document (the VM's MACs when the pod has them).
 *  - The AF_PACKET socket itself.
 *
 * Why a user-space responder: a guest with only a link-local address has no
 * gateway and ARPs for 169.254.169.254 on its bridge.  The kernel could
 * answer (arp_ignore 0) but it would answer anyone on the L2; the
 * responder answers the VM's MAC(s) only, with veth-imds's MAC. */
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

#define ARP_FILTER_MAX 80
/* The most of a frame the socket copies: an IPv6 neighbour solicitation
 * with its options, an IPv6 SYN's headers. */
#define ARP_FRAME_MAX 128
#define ARP_GUARD_MAX 6

/* ARP requests (Ethernet/IPv4) for ip; with syn_port, also IPv4 TCP SYNs
 * (no ACK, not a fragment) to ip:syn_port; with v6, IPv6 neighbour
 * solicitations for the service's IPv6 addresses (ndp.h), and with syn_port
 * IPv6 TCP SYNs to them.  Returns the instruction count or -ENOSPC. */
int arp_filter_prog(const uint8_t ip[4], uint16_t syn_port, int v6, struct sock_filter *out,
		    size_t cap);
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

/* ---- the socket ---------------------------------------------------------- */

/* AF_PACKET socket receiving ARP requests for ip on ifindex (and SYNs to
 * ip:syn_port, when not 0); the filter is attached before the socket is
 * bound to a protocol, so nothing unfiltered is ever queued.  Non-blocking,
 * CLOEXEC.  fd or -errno.
 *
 * (PACKET_ORIGDEV does not name the bridge port of a frame on a socket
 * bound to the bridge: the bridge hands frames up with a second
 * netif_receive_skb whose "original device" is the bridge itself.  The
 * port comes from the FDB instead, see run.c.) */
int arp_socket_open(int ifindex, const uint8_t ip[4], uint16_t syn_port, int v6, char *err,
		    size_t errlen);
/* 0 with the frame, the ingress ifindex and the packet type; -EAGAIN when
 * empty; other -errno. */
int arp_socket_recv(int fd, uint8_t *buf, size_t cap, size_t *len, int *ifindex, int *pkttype);
int arp_socket_send(int fd, int ifindex, const uint8_t *frame, size_t len);

#endif
