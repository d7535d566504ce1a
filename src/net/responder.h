/* responder: the ARP/NDP responder and SYN learner on veth-imds, a module
 * with its own state.
 *
 * Every frame that reaches veth-imds was steered there from one of the
 * VM's taps (steer.h).  On one AF_PACKET socket whose classic BPF filter
 * lets only these reach user space, it
 *  - answers ARP requests for 169.254.169.254 (arp.h) and IPv6 neighbour
 *    solicitations for fd00:ec2::254 and fe80::a9fe:a9fe (ndp.h) with
 *    veth-imds's MAC, out of veth-imds, back to the taps;
 *  - learns, from each source's ARP/NS and TCP SYN, the MAC to answer it
 *    at, and writes it as veth-imds's neighbour entry (once per pair).
 * The answers leave veth-imds on-link to whatever source asked: the VM's
 * address, an address the guest routes (hop limit > 1), the pod IP of
 * bridge binding; guests that ignore an ARP request from an off-subnet
 * sender are reached through the learned entry.
 *
 * Why a user-space responder: a guest with only a link-local address has
 * no gateway and ARPs for 169.254.169.254 on its bridge.  The kernel could
 * answer (arp_ignore 0) but it would answer anyone on the L2; this answers
 * only what was steered from the VM.  docs/design.md, "The network half".
 *
 * The module includes arp.h and ndp.h; neither includes the other or this. */
#ifndef IMDS_RESPONDER_H
#define IMDS_RESPONDER_H

#include <stddef.h>
#include <stdint.h>

#include <linux/filter.h>

#include "loop.h"
#include "nl.h"

#define RESP_FILTER_MAX 80
/* The most of a frame the socket copies: an IPv6 neighbour solicitation
 * with its options, an IPv6 SYN's headers. */
#define RESP_FRAME_MAX 128
#define RESP_BATCH 64    /* frames per wake-up: fair to the HTTP side */
#define RESP_NEIGH_MAX 64 /* sources whose MAC we wrote as a neighbour */

struct responder {
	struct loop *loop;
	struct nl_sock *req; /* for the neighbour entries; the caller's */
	uint8_t ip[4];
	uint16_t port;       /* the SYNs learned from: the listener's */
	uint8_t vmac[6];     /* veth-imds's */

	int fd, ifindex, v6; /* the socket, on ifindex, with IPv6 or not */

	struct {
		uint8_t family, ip[16], mac[6];
	} neigh[RESP_NEIGH_MAX];
	size_t nneigh, neigh_next;
	int neigh_if;

	unsigned long long arp_answered, ndp_answered, neigh_written;
};

void resp_init(struct responder *r, struct loop *l, struct nl_sock *req, const uint8_t ip[4],
	       uint16_t port, const uint8_t vmac[6]);
/* The socket on ifindex (0: none), IPv6 answered or not: reopened when
 * either changed, with its filter.  0 or -errno (logged). */
int resp_ensure(struct responder *r, int ifindex, int v6);
void resp_close(struct responder *r);

/* ---- the filter and the socket ------------------------------------------- */

/* ARP requests (Ethernet/IPv4) for ip; with syn_port, also IPv4 TCP SYNs
 * (no ACK, not a fragment) to ip:syn_port; with v6, IPv6 neighbour
 * solicitations for the service's IPv6 addresses (ndp.h), and with syn_port
 * IPv6 TCP SYNs to them.  Returns the instruction count or -ENOSPC. */
int resp_filter_prog(const uint8_t ip[4], uint16_t syn_port, int v6, struct sock_filter *out,
		     size_t cap);

/* AF_PACKET socket receiving what resp_filter_prog passes on ifindex; the
 * filter is attached before the socket is bound to a protocol, so nothing
 * unfiltered is ever queued.  Non-blocking, CLOEXEC.  fd or -errno.
 *
 * (PACKET_ORIGDEV does not name the bridge port of a frame on a socket
 * bound to the bridge: the bridge hands frames up with a second
 * netif_receive_skb whose "original device" is the bridge itself.) */
int resp_socket_open(int ifindex, const uint8_t ip[4], uint16_t syn_port, int v6, char *err,
		     size_t errlen);
/* 0 with the frame, the ingress ifindex and the packet type; -EAGAIN when
 * empty; other -errno. */
int resp_socket_recv(int fd, uint8_t *buf, size_t cap, size_t *len, int *ifindex, int *pkttype);
int resp_socket_send(int fd, int ifindex, const uint8_t *frame, size_t len);

#endif
