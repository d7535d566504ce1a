/* plumb: the sidecar's own devices and routes, as an idempotent "ensure".
 *
 *   veth-imds-br ═══ veth-imds  169.254.169.254/32
 *   (no master)      (the listener, the ARP responder)
 *
 * Neither end is a bridge port: the VM's frames for the service reach
 * veth-imds only through the steering rules at the VM's taps (steer.h), and
 * what veth-imds sends goes back only to those taps.  So only the VM ever
 * reaches veth-imds, whatever else shares the pod's bridges (the node's NIC
 * in bridge binding, other hosts on a Multus L2).
 *
 * - veth-imds has a MAC derived from the VM's identity (the same in every
 *   launcher pod of the VM: a guest's neighbour entry for the service stays
 *   right across a live migration) and the largest MTU of the VM's taps (a
 *   frame larger than the receiving veth's MTU would be dropped);
 * - the return path: "from 169.254.169.254 lookup PLUMB_TABLE" with
 *   "default dev veth-imds" in that table: every answer leaves by veth-imds,
 *   and a guest's packet arriving there passes reverse-path filtering in
 *   strict mode too (the reverse lookup of its source from .254 meets the
 *   same rule).  Only packets sourced from the service address use the table,
 *   so no route of the pod is shadowed;
 * - the service's TCP port only is local: the kernel's "local
 *   169.254.169.254" entry in table local (which it writes with the address)
 *   is moved to PLUMB_TABLE, behind "to 169.254.169.254 ipproto tcp dport
 *   PORT lookup PLUMB_TABLE".  Everything else for .254 (a guest's DNS where
 *   the node's resolver is 169.254.169.254, passt's forwarding of it) is
 *   routed by the pod as if we were not there; the address stays on
 *   veth-imds for the source of our answers and of the kernel's ARP;
 * - the kernel never answers ARP for 169.254.169.254 (arp_ignore 8 on
 *   veth-imds, per device over netlink: never net.ipv4.conf.all, never
 *   /proc/sys): our responder answers, to the VM only.
 *
 * Every step first looks, then changes only what is wrong, so a second run
 * changes nothing and emits no netlink event (run.c re-runs it on events; a
 * write on every pass would wake it forever). */
#ifndef IMDS_PLUMB_H
#define IMDS_PLUMB_H

#include <stddef.h>
#include <stdint.h>

#include "binding.h"
#include "nl.h"
#include "steer.h"

#define PLUMB_VETH "veth-imds"
#define PLUMB_PEER "veth-imds-br"
/* Our policy-routing table and rule priority.  The table number spells the
 * address range; the priority sits well before main (32766). */
#define PLUMB_TABLE 169254u
#define PLUMB_RULE_PREF 1000u
#define PLUMB_VETH_ARP_IGNORE 8u /* never reply (ip-sysctl.rst) */
#define PLUMB_MAX_LINKS 256
#define PLUMB_DEFAULT_MTU 1500u

extern const uint8_t plumb_imds_ip[4]; /* 169.254.169.254 */
/* The listeners' port where passt serves a NIC (the service's port P stays
 * what the pod's routing and every client see; steer.h rewrites P to it
 * after routing and back).  passt binds every port it forwards on the
 * wildcard address, and with no `ports` on the VMI that is "all" (KubeVirt
 * v1.9 pkg/virt-launcher/virtwrap/converter/network/passt.go:68-75, libvirt
 * src/qemu/qemu_passt.c:294-295): every port but the ephemeral ones, which
 * are 49152-65535 in Debian 12's passt (0.0~git20230309.7c7625d conf.c
 * "all", util.h PORT_EPHEMERAL_MIN) and the pod's ip_local_port_range
 * (32768-60999 by default) in passt since 2024 (fwd.c fwd_probe_ephemeral):
 * a port in both ranges is bound by neither.  A VMI naming this port in its
 * `ports` collides with it (docs/sidecar.md). */
#define PLUMB_PASST_LPORT 50254
/* veth-imds-br's MAC: fixed, never seen by anyone (the port is on no L2). */
extern const uint8_t plumb_peer_mac[6];

struct plumb_state {
	int veth; /* ifindex of veth-imds; 0: none */
	int peer; /* ifindex of veth-imds-br */
	uint32_t mtu;
	uint16_t port; /* in: the service's TCP port (IMDS_LISTEN_ADDR's); 0: 80 */
	int v6;   /* the IPv6 addresses, rules and route are in place */
	char v6_off[256]; /* why not, when IPv6 is off in the pod */
};

/* ---- pure helpers -------------------------------------------------------- */

/* veth-imds's MAC for the VM ns/name: 02:a9:fe and 24 bits of its FNV-1a
 * hash (locally administered, unicast). */
void plumb_vm_mac(const char *ns, const char *name, uint8_t mac[6]);
/* A VM's tap as KubeVirt makes it (kind tun), or a link named tap* (a test's
 * veth standing in for one). */
int plumb_is_tap(const struct nl_link *l);
/* The taps to steer, into out[0..cap) (name, ifindex), and the largest MTU
 * among them into *mtu.  With ifs, the taps it names that exist; without,
 * the taps whose master is a bridge named bridge_name, or any k6t-* bridge
 * when bridge_name is NULL (the webhook did not say which).  The count. */
size_t plumb_pick_taps(const struct nl_link *links, size_t n, const struct ifaces *ifs,
		       const char *bridge_name, struct steer_tap *out, size_t cap, uint32_t *mtu);

/* ---- effects ------------------------------------------------------------- */

/* What plumb_ensure had to write (bits of *changes). */
enum {
	PLUMB_CH_PAIR = 1u << 0,   /* the veth pair (re)created */
	PLUMB_CH_MAC = 1u << 1,
	PLUMB_CH_MTU = 1u << 2,
	PLUMB_CH_MASTER = 1u << 3, /* veth-imds-br released from a bridge */
	PLUMB_CH_ARP = 1u << 4,    /* arp_ignore on veth-imds */
	PLUMB_CH_UP = 1u << 5,
	PLUMB_CH_ADDR = 1u << 6,
	PLUMB_CH_RULE = 1u << 7,
	PLUMB_CH_ROUTE = 1u << 8,
};
/* "veth pair, up, address" for the log. */
void plumb_changes_text(unsigned changes, char *out, size_t cap);

/* Makes the plumbing correct (links: a fresh dump): the veth pair with mac
 * on veth-imds and mtu on both, up, not enslaved, the address, the rule and
 * the table's route; with want_v6 the same for IPv6 (fd00:ec2::254/128,
 * fe80::a9fe:a9fe/64, a rule from each; st->v6 says whether they are in
 * place, st->v6_off why not when the pod has IPv6 off, which is no error).  *changes says what was written (PLUMB_CH_*; 0: it was
 * all right).  0 or -errno, details in err. */
int plumb_ensure(struct nl_sock *s, struct plumb_state *st, const struct nl_link *links,
		 size_t n, const uint8_t mac[6], uint32_t mtu, int want_v6, unsigned *changes,
		 char *err, size_t errlen);

/* The pod's own IPv4 addresses a guest could also be using as its source
 * (bridge binding gives the guest the pod IP and keeps it on a dummy in the
 * pod): every address but loopback's, the service's and our aliases', in
 * (ifindex, address) order.  The count (at most cap), or -errno. */
int plumb_local_addrs(struct nl_sock *s, uint8_t (*out)[4], size_t cap, char *err,
		      size_t errlen);
/* The same for IPv6: the pod's addresses of global scope (bridge binding's
 * dummy keeps the pod's /128) but the service's and our aliases', at most
 * STEER_MAX_LOCAL6.  A link-local one needs no alias (steer.h). */
int plumb_local_addrs6(struct nl_sock *s, uint8_t (*out)[16], size_t cap, char *err,
		       size_t errlen);

/* A TCP listener on ip:port bound to veth-imds (SO_BINDTOIFINDEX),
 * IP_FREEBIND (the address may not exist yet), SO_REUSEADDR, non-blocking,
 * CLOEXEC, IP TTL hops, with the guard filter (arp_guard_prog) attached
 * before listen().  fd or -errno. */
int plumb_listener_open(int veth, const uint8_t ip[4], uint16_t port, unsigned hops, int allow_lo,
			char *err, size_t errlen);
/* The same for an IPv6 address (IPV6_V6ONLY, IPV6_UNICAST_HOPS hops; a
 * link-local address scoped to veth-imds). */
int plumb_listener_open6(int veth, const uint8_t ip[16], uint16_t port, unsigned hops,
			 int allow_lo, char *err, size_t errlen);

/* passt's pods, where the listeners are on PLUMB_PASST_LPORT: a TCP socket
 * bound to [ip]:port on veth-imds that never listens, held for the pod's
 * life.  Debian 12's passt connects for its guest only after a bind() to
 * the destination failed ("Nobody is listening then" when it succeeds:
 * tcp.c tcp_conn_from_tap at 7c7625d; since passt 54a9d38, 2024-06-18, it goes on either way),
 * and fd00:ec2::254 is an address of the pod: without this, a guest of a
 * passt that does not bind the service's port itself (a VMI whose `ports`
 * omit it) would be refused over IPv6.  (169.254.169.254 is not local to a
 * bind, plumb.h's table: EADDRNOTAVAIL.)  fd, or -errno: -EADDRINUSE while
 * passt's own wildcard listener holds the port (which does the same). */
int plumb_port_hold6(int veth, const uint8_t ip[16], uint16_t port);

#endif
