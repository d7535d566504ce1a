/* plumb: the network plumbing of docs/sidecar.md as an idempotent "ensure".
 *
 *   bridge (k6t-eth0) ── veth-imds-br ═══ veth-imds  169.254.169.254/32
 *
 * - veth-imds-br is a port of the VM's bridge with the bridge's MTU and a
 *   MAC that can never become the bridge's own; both ends are up; the
 *   address sits on veth-imds (scope link).
 * - Return path for link-local guests: "from 169.254.169.254 lookup
 *   PLUMB_TABLE" with 169.254.0.0/16 dev veth-imds in that table.  Only
 *   packets sourced from the metadata address are affected, and a table
 *   with no match falls through to main, so no route of the pod (Calico's
 *   169.254.1.1 gateway included) is shadowed.
 * - The kernel never answers ARP for 169.254.169.254: arp_ignore 8 on
 *   veth-imds and at least 1 on the bridge (reply only for the bridge's
 *   own addresses, which KubeVirt's 10.0.2.1 is), set per device over
 *   netlink — never net.ipv4.conf.all, never through /proc/sys (read-only
 *   in an unprivileged container).
 *
 * Every step first looks, then changes only what is wrong, so a second run
 * changes nothing and emits no netlink event (run.c re-runs it on events;
 * a write on every pass would wake it forever). */
#ifndef IMDS_PLUMB_H
#define IMDS_PLUMB_H

#include <stddef.h>
#include <stdint.h>

#include "arp.h"
#include "nl.h"

#define PLUMB_VETH "veth-imds"
#define PLUMB_PEER "veth-imds-br"
/* Our policy-routing table and rule priority.  The table number spells the
 * address range; the priority sits well before main (32766). */
#define PLUMB_TABLE 169254u
#define PLUMB_RULE_PREF 1000u
#define PLUMB_VETH_ARP_IGNORE 8u   /* never reply (ip-sysctl.rst) */
#define PLUMB_BRIDGE_ARP_IGNORE 1u /* only for addresses on the bridge */
#define PLUMB_MAX_LINKS 256
#define PLUMB_MAX_TAPS 16

extern const uint8_t plumb_imds_ip[4]; /* 169.254.169.254 */
/* veth-imds-br's MAC.  A bridge whose address was not set explicitly takes
 * the lowest MAC of its ports, so a random MAC on our port could change
 * the bridge's MAC, and with it the MAC guests hold for their gateway
 * 10.0.2.1.  fe:ff:ff:ff:ff:fe (unicast, locally administered) is above
 * any MAC a tap or NIC will have; the port never sends from it. */
extern const uint8_t plumb_peer_mac[6];

struct plumb_state {
	int bridge; /* ifindex; 0: none */
	char bridge_name[NL_NAMESIZ];
	uint32_t mtu;
	int veth;   /* ifindex of veth-imds */
	int peer;   /* ifindex of veth-imds-br */
	int have_mac;
	uint8_t veth_mac[6]; /* kept so a recreated veth-imds keeps its MAC:
			      * guests' neighbour entries stay valid */
	/* bridge ports, from the last classify */
	size_t ntaps;
	int taps[PLUMB_MAX_TAPS];
	size_t nforeign; /* ports neither a tap nor veth-imds-br */
};

/* ---- pure helpers -------------------------------------------------------- */

/* Index in links of the bridge to serve: the one named want, else the
 * first (lowest ifindex) whose name starts with "k6t-"; kind must be
 * "bridge".  -1 when none. */
int plumb_pick_bridge(const struct nl_link *links, size_t n, const char *want);
/* A VM's port: kind "tun" (KubeVirt's tap) or a name starting "tap". */
int plumb_is_tap(const struct nl_link *l);
/* Fills st->taps / ntaps / nforeign from the ports of st->bridge. */
void plumb_classify_ports(struct plumb_state *st, const struct nl_link *links, size_t n);
int plumb_is_tap_port(const struct plumb_state *st, int ifindex);

/* ---- effects ------------------------------------------------------------- */

/* Makes the plumbing correct for bridge links[bi] (links: a fresh dump).
 * *changes counts the writes made (0: it was all right).  0 or -errno. */
int plumb_ensure(struct nl_sock *s, struct plumb_state *st, const struct nl_link *links,
		 size_t n, int bi, unsigned *changes, char *err, size_t errlen);

/* A TCP listener on ip:port bound to device ifindex (SO_BINDTOIFINDEX),
 * IP_FREEBIND (the address may not exist yet), SO_REUSEADDR, non-blocking,
 * CLOEXEC, with the guard filter attached before listen().  fd or -errno. */
int plumb_listener_open(int ifindex, const uint8_t ip[4], uint16_t port, unsigned hops,
			const struct arp_macset *allow, int open, char *err, size_t errlen);

#endif
