/* steer: the sidecar's nf_tables ruleset, built from what it serves.
 *
 * A guest's TCP to 169.254.169.254's service port is taken at the VM's own
 * port, before any bridge, routing or NAT of the pod sees it, and handed to
 * veth-imds (the rest of .254, a guest's DNS where the node's resolver is
 * there, is the pod's to route, as if we were not there):
 *
 *   tap0 ──ingress──► [ip daddr .254 tcp dport P | ICMP to .254 quoting TCP from .254:P
 *                      | ARP for .254 | ether daddr VMAC]
 *                        └─ ether daddr set VMAC, fwd ─► veth-imds-br ═ veth-imds (.254)
 *   veth-imds-br ──ingress──► fwd (dup) to the VM's tap(s)
 *
 * so the binding's own plumbing (KubeVirt's masquerade NAT, Istio's
 * PREROUTING redirects, a bridge whose other port is the node's NIC) never
 * sees it, and only the VM's frames ever reach veth-imds.  Three tables, all
 * named STEER_TABLE, replaced together in one transaction:
 *
 *  netdev  one ingress chain per served tap, one on veth-imds-br (the way
 *          back); only while there are taps to serve;
 *  ip      raw prerouting on veth-imds: notrack (NAT hooks, Istio's inbound
 *          capture in REDIRECT mode among them, only see tracked
 *          connections), and STEER_MARK on the service's TCP (Istio's TPROXY
 *          rules, which take untracked packets too, leave that mark alone)
 *          and, for a guest
 *          whose source address is also an address of the pod (bridge
 *          binding keeps the pod IP on a dummy eth0, kubevirt-network.md E2:
 *          a martian), a stateless rewrite to an alias STEER_ALIAS_BASE+i,
 *          undone in postrouting on the way out of veth-imds; raw output:
 *          notrack for what we send from .254; and the fallbacks: TCP to
 *          .254's service port (and 80) is never forwarded, nor anything
 *          from veth-imds, and no process of the pod connects to a .254
 *          port P that is not local; with a listener port L other than P
 *          (lport, passt's pods): input rewrites the TCP destination port P
 *          of .254 to L after routing, output the source port L of .254
 *          back to P, statelessly (ip6 the same for both IPv6 addresses):
 *          the pod's routing and every client see only P;
 *  ip6     the same for fd00:ec2::254 and fe80::a9fe:a9fe (every port),
 *          with aliases for the pod's own addresses of global scope
 *          (bridge binding's dummy keeps the pod's /128: what the kernel
 *          itself answers to it, a reset, would be routed into the pod),
 *          and the kernel kept from answering the steered solicitations;
 *  bridge  the fallback on every bridge of the pod (any bridge, present or
 *          future): no TCP for .254's service port (and 80), no ARP for .254,
 *          is forwarded between ports or delivered to the bridge itself.
 * The ip and bridge tables exist from the sidecar's first start on, before
 * any bridge or tap, and stay after it exits: a guest's packet to .254 never
 * leaves the pod, before the plumbing, while it is restored, or after the
 * sidecar died. */
#ifndef IMDS_STEER_H
#define IMDS_STEER_H

#include <stddef.h>
#include <stdint.h>

#include "nft.h"

#define STEER_TABLE "kubevirt_imds"
#define STEER_MAX_TAPS 16
#define STEER_MAX_LOCAL 16
/* Aliases for guest sources that are local in the pod: 192.0.0.128 + i, in
 * the IETF protocol-assignment block (RFC 6890), which no guest uses. */
#define STEER_ALIAS_BASE 128u
/* IPv6's: the same 192.0.0.128 + i in the local-use IPv4/IPv6 translation
 * prefix 64:ff9b:1::/48 (RFC 8215), for a pod address of global scope
 * (bridge binding's dummy keeps the pod's /128, docs/sidecar.md "IPv6") */
#define STEER_MAX_LOCAL6 16
#define STEER_PRIO_TAP (-500)  /* netdev ingress: before anyone else */
#define STEER_PRIO_RAW (-310)  /* before conntrack (-200) and raw (-300) */
#define STEER_PRIO_POST 300    /* after source NAT */
/* The mark the steered TCP for the service carries from raw prerouting on:
 * Istio's mark for its proxy's own traffic, which its TPROXY capture passes
 * by (mangle prerouting, priority -150, before which our notrack does not
 * help): sidecar interceptionMode TPROXY `-A ISTIO_INBOUND -p tcp -m mark
 * --mark 1337 -j RETURN`, the chain's first rule (istio/istio
 * tools/istio-iptables/pkg/capture/run.go:436-437, InboundTProxyMark's default
 * "1337", tools/common/config/config.go:40), and ambient's in-pod TPROXY
 * rules `-m mark ! --mark 0x539/0xfff -j TPROXY` (Istio 1.21-1.24,
 * cni/pkg/iptables/testdata/tproxy.golden:9,11 at 1.24.0).  Neither routes
 * the mark anywhere but to lo (Istio's `fwmark 1337 lookup 133` is `local
 * default dev lo`, where the service is local anyway; ambient's rule is
 * fwmark 0x111/0xfff). */
#define STEER_MARK 0x539u

struct steer_tap {
	char name[16];
	int ifindex;
};

struct steer_state {
	int veth;       /* veth-imds's ifindex, 0: no plumbing yet */
	int peer;       /* veth-imds-br's */
	uint8_t vmac[6];
	uint8_t ip[4];  /* the service address (169.254.169.254) */
	uint16_t port;  /* its TCP port, the only one steered and guarded; 0: 80 */
	uint16_t lport; /* the listener's port, when not port (passt: steer.h's top); 0: port */
	size_t ntaps;
	struct steer_tap taps[STEER_MAX_TAPS];
	size_t nlocal;
	uint8_t local[STEER_MAX_LOCAL][4];
	size_t nlocal6;
	uint8_t local6[STEER_MAX_LOCAL6][16];
	int local_ok;   /* a process of the pod may connect (passt's path) */
};

/* The alias of local[i]; of local6[i]. */
void steer_alias(size_t i, uint8_t out[4]);
void steer_alias6(size_t i, uint8_t out[16]);

/* The whole ruleset as one transaction into b (after nft_batch_init):
 * every table created if absent, deleted and made anew; the netdev table
 * only when st has plumbing and taps (else it is deleted).  Without
 * plumbing (veth 0) this is the fallback alone.  0 or b's error. */
int steer_build(const struct steer_state *st, struct nft_batch *b);

#endif
