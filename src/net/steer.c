#include "steer.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <linux/if_ether.h>
#include <netinet/in.h>

#include "ndp.h"

#define IMDS_VETH "veth-imds"

static const uint8_t alias_net[3] = {192, 0, 0};

void steer_alias(size_t i, uint8_t out[4])
{
	memcpy(out, alias_net, 3);
	out[3] = (uint8_t)(STEER_ALIAS_BASE + i);
}

void steer_alias6(size_t i, uint8_t out[16])
{
	static const uint8_t pfx[12] = {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01};
	memcpy(out, pfx, 12);
	steer_alias(i, out + 12);
}

/* Offsets in the IPv4 header and in an Ethernet/IPv4 ARP body; in the
 * IPv6 header and a neighbour solicitation right after it. */
enum { IP_CSUM = 10, IP_SADDR = 12, IP_DADDR = 16, ARP_PTYPE = 2, ARP_TPA = 24 };
enum { IP6_NEXTHDR = 6, IP6_SADDR = 8, IP6_DADDR = 24, IP6_ICMP_TYPE = 40, IP6_NS_TARGET = 48 };

/* The service's IPv6 addresses (ndp.h): AWS's fd00:ec2::254, OpenStack's
 * fe80::a9fe:a9fe. */
#define svc6 ndp_imds_addr

static void match_proto(struct nft_batch *b, uint16_t ethertype)
{
	uint16_t be = htons(ethertype);
	nft_e_meta(b, NFT_META_PROTOCOL, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &be, sizeof(be));
}

static void match_nh4(struct nft_batch *b, uint32_t off, const uint8_t ip[4])
{
	nft_e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, off, 4, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, ip, 4);
}

static void match_nh6(struct nft_batch *b, uint32_t off, const uint8_t ip[16])
{
	nft_e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, off, 16, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, ip, 16);
}

static void match_tcp_port(struct nft_batch *b, uint32_t off, uint16_t port)
{
	static const uint8_t tcp = IPPROTO_TCP;
	uint16_t be = htons(port);
	nft_e_meta(b, NFT_META_L4PROTO, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &tcp, 1);
	nft_e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, off, 2, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &be, sizeof(be));
}

/* TCP to the service's port (what nft writes for "tcp dport P"): the one
 * thing for 169.254.169.254 that is ours.  Whatever else a guest sends
 * there (DNS, where the node's resolver is 169.254.169.254) is the pod's
 * to route, as if we were not there. */
static void match_svc_tcp(struct nft_batch *b, uint16_t port)
{
	match_tcp_port(b, 2, port ? port : 80);
}

/* An ICMP message quoting a TCP segment from ip's service port: the
 * quoted IPv4 header (RFC 792: after the 8 bytes of the ICMP header) of 20
 * bytes, as ours are (the sidecar sends no IP options). */
static void match_icmp_about_svc(struct nft_batch *b, const uint8_t ip[4], uint16_t port)
{
	static const uint8_t icmp = IPPROTO_ICMP, tcp = IPPROTO_TCP;
	uint16_t be = htons(port ? port : 80);
	nft_e_meta(b, NFT_META_L4PROTO, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &icmp, 1);
	nft_e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 8 + 9, 1, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &tcp, 1);
	nft_e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 8 + IP_SADDR, 4, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, ip, 4);
	nft_e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 8 + 20, 2, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &be, sizeof(be));
}

/* The listener's port when it is not the service's (passt's pods: passt
 * binds every port but the ephemeral ones on the wildcard address, which a
 * listener on .254:80 collides with; plumb.h PLUMB_PASST_LPORT), else 0. */
static uint16_t moved_port(const struct steer_state *st)
{
	uint16_t svc = st->port ? st->port : 80;
	return st->lport && st->lport != svc ? st->lport : 0;
}

/* "tcp sport|dport set PORT" as nft writes it: the TCP checksum at 16
 * fixed (ports are not in the pseudo-header). */
static void set_tcp_port(struct nft_batch *b, uint32_t off, uint16_t port)
{
	uint16_t be = htons(port);
	nft_e_imm(b, NFT_REG_1, &be, sizeof(be));
	nft_e_payload_set(b, NFT_PAYLOAD_TRANSPORT_HEADER, off, 2, NFT_REG_1, NFT_PAYLOAD_CSUM_INET,
			  16, 0);
}

/* The ports guarded: the service's, and 80 when it is another (the port
 * of every cloud's own metadata service on the node's side). */
static size_t guarded_ports(const struct steer_state *st, uint16_t out[2])
{
	out[0] = st->port ? st->port : 80;
	out[1] = 80;
	return out[0] == 80 ? 1 : 2;
}

static void match_u8(struct nft_batch *b, uint32_t off, uint8_t v)
{
	nft_e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, off, 1, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &v, 1);
}

/* An IPv6 neighbour solicitation (no extension header) for target. */
static void match_ns6(struct nft_batch *b, const uint8_t target[16])
{
	match_proto(b, ETH_P_IPV6);
	match_u8(b, IP6_NEXTHDR, IPPROTO_ICMPV6);
	match_u8(b, IP6_ICMP_TYPE, 135);
	match_nh6(b, IP6_NS_TARGET, target);
}

/* An Ethernet/IPv4 ARP message whose target is ip (any operation).  The
 * bridge family reads the EtherType from the frame, as nft writes it. */
static void match_arp_target(struct nft_batch *b, const uint8_t ip[4], int bridge)
{
	static const uint8_t eth_ip[4] = {0x08, 0x00, 6, 4}; /* ptype, hlen, plen */
	if (bridge) {
		uint16_t be = htons(ETH_P_ARP);
		nft_e_payload(b, NFT_PAYLOAD_LL_HEADER, 12, 2, NFT_REG_1);
		nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &be, sizeof(be));
	} else {
		match_proto(b, ETH_P_ARP);
	}
	nft_e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, ARP_PTYPE, 4, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, eth_ip, 4);
	match_nh4(b, ARP_TPA, ip);
}

static void match_ifname(struct nft_batch *b, uint32_t key, uint32_t op, const char *name)
{
	uint8_t n[16];
	nft_ifname(n, name);
	nft_e_meta(b, key, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, op, n, sizeof(n));
}

/* An address of len bytes at network-header offset off, rewritten without
 * connection state on veth-imds: in prerouting (iif) a source, in
 * postrouting (oif) a destination, from -> to.  IPv4 (csum_off the header
 * checksum's) fixes its header checksum, IPv6 has none; both the
 * transport's pseudo-header sum. */
static void alias_rule(struct nft_batch *b, uint8_t f, const char *chain, uint32_t if_key,
		       uint32_t off, const uint8_t *from, const uint8_t *to, uint32_t len,
		       uint32_t csum_off)
{
	nft_rule_begin(b, f, STEER_TABLE, chain);
	match_ifname(b, if_key, NFT_CMP_EQ, IMDS_VETH);
	nft_e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, off, len, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, from, len);
	nft_e_counter(b);
	nft_e_imm(b, NFT_REG_1, to, len);
	nft_e_payload_set(b, NFT_PAYLOAD_NETWORK_HEADER, off, len, NFT_REG_1,
			  len == 4 ? NFT_PAYLOAD_CSUM_INET : NFT_PAYLOAD_CSUM_NONE, csum_off,
			  NFT_PAYLOAD_L4CSUM_PSEUDOHDR);
	nft_rule_end(b);
}

/* What nft adds before an Ethernet header match in the netdev family (so
 * `nft list` shows "ether daddr"): the input device is Ethernet. */
static void match_ether(struct nft_batch *b)
{
	uint16_t ether = 1; /* ARPHRD_ETHER, host order as the kernel loads it */
	nft_e_meta(b, NFT_META_IIFTYPE, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &ether, sizeof(ether));
}

/* meta mark set STEER_MARK (steer.h: Istio's TPROXY rules pass it by). */
static void set_mark(struct nft_batch *b)
{
	uint32_t mark = STEER_MARK;
	nft_e_imm(b, NFT_REG_1, &mark, sizeof(mark));
	nft_e_meta_set(b, NFT_META_MARK, NFT_REG_1);
}

static void to_dev(struct nft_batch *b, int ifindex, int dup)
{
	uint32_t i = (uint32_t)ifindex;
	nft_e_imm(b, NFT_REG_1, &i, sizeof(i));
	if (dup)
		nft_e_dup(b, NFT_REG_1);
	else
		nft_e_fwd(b, NFT_REG_1);
}

/* The end of a rule for what goes to the sidecar: counted, then (on an
 * Ethernet link) its destination MAC made st->vmac and the frame forwarded
 * to st->peer. */
static void to_veth_imds(struct nft_batch *b, const struct steer_state *st)
{
	nft_e_counter(b);
	match_ether(b);
	nft_e_imm(b, NFT_REG_1, st->vmac, 6);
	nft_e_payload_set(b, NFT_PAYLOAD_LL_HEADER, 0, 6, NFT_REG_1, NFT_PAYLOAD_CSUM_NONE, 0, 0);
	to_dev(b, st->peer, 0);
	nft_rule_end(b);
}

static void fresh_table(struct nft_batch *b, uint8_t family)
{
	/* Create, delete, create: one transaction replaces whatever is there
	 * (a previous run's rules, someone's edits) with ours, atomically. */
	nft_add_table(b, family, STEER_TABLE);
	nft_del_table(b, family, STEER_TABLE);
	nft_add_table(b, family, STEER_TABLE);
}

static void build_netdev(const struct steer_state *st, struct nft_batch *b)
{
	const uint8_t f = NFT_FAMILY_NETDEV;
	char chain[NFT_NAMESIZ];

	fresh_table(b, f);
	for (size_t t = 0; t < st->ntaps; t++) {
		const struct steer_tap *tp = &st->taps[t];
		snprintf(chain, sizeof(chain), "vm-%.15s", tp->name);
		nft_add_chain(b, f, STEER_TABLE, chain, NFT_HOOK_INGRESS, STEER_PRIO_TAP, tp->name,
			      NFT_V_ACCEPT);
		/* The guest's IPv4 to the service's TCP port, whatever MAC it
		 * chose (its gateway's in masquerade and bridge binding, ours on
		 * the link-local path, an old pod's after a migration). */
		nft_rule_begin(b, f, STEER_TABLE, chain);
		match_proto(b, ETH_P_IP);
		match_nh4(b, IP_DADDR, st->ip);
		match_svc_tcp(b, st->port);
		to_veth_imds(b, st);
		/* The guest's ICMP errors about the service's answers (a
		 * workload the guest routes, at hop limit 1: time exceeded for
		 * our SYN-ACK) go back to their sender, not out of the pod by
		 * its routing: ICMP to .254 quoting TCP from .254's service
		 * port (net_hop_limit's node-side capture saw them leave). */
		nft_rule_begin(b, f, STEER_TABLE, chain);
		match_proto(b, ETH_P_IP);
		match_nh4(b, IP_DADDR, st->ip);
		match_icmp_about_svc(b, st->ip, st->port);
		to_veth_imds(b, st);
		/* ARP for the service address: answered by our responder only,
		 * never flooded to the pod's L2 (a node's proxy ARP would race it). */
		nft_rule_begin(b, f, STEER_TABLE, chain);
		match_arp_target(b, st->ip, 0);
		nft_e_counter(b);
		to_dev(b, st->peer, 0);
		nft_rule_end(b);
		/* The same for IPv6: to either service address, and the
		 * neighbour solicitations for them (ndp.h). */
		for (int a = 0; a < 2; a++) {
			nft_rule_begin(b, f, STEER_TABLE, chain);
			match_proto(b, ETH_P_IPV6);
			match_nh6(b, IP6_DADDR, svc6[a]);
			nft_e_counter(b);
			match_ether(b);
			nft_e_imm(b, NFT_REG_1, st->vmac, 6);
			nft_e_payload_set(b, NFT_PAYLOAD_LL_HEADER, 0, 6, NFT_REG_1,
					  NFT_PAYLOAD_CSUM_NONE, 0, 0);
			to_dev(b, st->peer, 0);
			nft_rule_end(b);
		}
		for (int a = 0; a < 2; a++) {
			nft_rule_begin(b, f, STEER_TABLE, chain);
			match_ns6(b, svc6[a]);
			nft_e_counter(b);
			to_dev(b, st->peer, 0);
			nft_rule_end(b);
		}
		/* Whatever else is addressed to veth-imds (ARP replies to it). */
		nft_rule_begin(b, f, STEER_TABLE, chain);
		match_ether(b);
		nft_e_payload(b, NFT_PAYLOAD_LL_HEADER, 0, 6, NFT_REG_1);
		nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, st->vmac, 6);
		nft_e_counter(b);
		to_dev(b, st->peer, 0);
		nft_rule_end(b);
	}
	/* The way back: everything veth-imds sends goes to the VM's ports, and
	 * nowhere else (a frame for one NIC reaching another NIC of the same
	 * VM is dropped by that NIC's MAC filter). */
	nft_add_chain(b, f, STEER_TABLE, "from-imds", NFT_HOOK_INGRESS, STEER_PRIO_TAP, "veth-imds-br",
		      NFT_V_DROP);
	nft_rule_begin(b, f, STEER_TABLE, "from-imds");
	nft_e_counter(b);
	for (size_t t = 0; t + 1 < st->ntaps; t++)
		to_dev(b, st->taps[t].ifindex, 1);
	to_dev(b, st->taps[st->ntaps - 1].ifindex, 0);
	nft_rule_end(b);
}

static void build_ip(const struct steer_state *st, struct nft_batch *b)
{
	const uint8_t f = NFT_FAMILY_IPV4;
	uint16_t ports[2];
	size_t nports = guarded_ports(st, ports);

	fresh_table(b, f);
	nft_add_chain(b, f, STEER_TABLE, "prerouting", NFT_HOOK_PREROUTING, STEER_PRIO_RAW, NULL,
		      NFT_V_ACCEPT);
	nft_rule_begin(b, f, STEER_TABLE, "prerouting");
	match_ifname(b, NFT_META_IIFNAME, NFT_CMP_EQ, IMDS_VETH);
	nft_e_notrack(b);
	nft_rule_end(b);
	/* ... and kept from Istio's TPROXY capture (mangle, priority -150),
	 * which takes untracked segments too and would hand the guest's SYN
	 * to its proxy's :15006. */
	nft_rule_begin(b, f, STEER_TABLE, "prerouting");
	match_ifname(b, NFT_META_IIFNAME, NFT_CMP_EQ, IMDS_VETH);
	match_nh4(b, IP_DADDR, st->ip);
	match_svc_tcp(b, st->port);
	nft_e_counter(b);
	set_mark(b);
	nft_rule_end(b);
	for (size_t i = 0; i < st->nlocal; i++) {
		uint8_t alias[4];
		steer_alias(i, alias);
		alias_rule(b, f, "prerouting", NFT_META_IIFNAME, IP_SADDR, st->local[i], alias, 4,
			   IP_CSUM);
	}
	nft_add_chain(b, f, STEER_TABLE, "postrouting", NFT_HOOK_POSTROUTING, STEER_PRIO_POST, NULL,
		      NFT_V_ACCEPT);
	for (size_t i = 0; i < st->nlocal; i++) {
		uint8_t alias[4];
		steer_alias(i, alias);
		alias_rule(b, f, "postrouting", NFT_META_OIFNAME, IP_DADDR, alias, st->local[i], 4,
			   IP_CSUM);
	}
	nft_add_chain(b, f, STEER_TABLE, "output", NFT_HOOK_OUTPUT, STEER_PRIO_RAW, NULL,
		      NFT_V_ACCEPT);
	/* Our answers: untracked too, or the pod's NAT output chains (Istio's
	 * redirect of every outgoing TCP segment) would take them. */
	nft_rule_begin(b, f, STEER_TABLE, "output");
	match_nh4(b, IP_SADDR, st->ip);
	nft_e_notrack(b);
	nft_rule_end(b);
	if (moved_port(st)) {
		/* The listener's answers leave with the service's port. */
		nft_rule_begin(b, f, STEER_TABLE, "output");
		match_nh4(b, IP_SADDR, st->ip);
		match_tcp_port(b, 0, moved_port(st));
		nft_e_counter(b);
		set_tcp_port(b, 0, st->port ? st->port : 80);
		nft_rule_end(b);
		/* After routing (which took the service's port to the local
		 * .254: plumb.h), before the socket lookup: to the listener. */
		nft_add_chain(b, f, STEER_TABLE, "input", NFT_HOOK_INPUT, STEER_PRIO_RAW, NULL,
			      NFT_V_ACCEPT);
		nft_rule_begin(b, f, STEER_TABLE, "input");
		match_nh4(b, IP_DADDR, st->ip);
		match_svc_tcp(b, st->port);
		nft_e_counter(b);
		set_tcp_port(b, 2, moved_port(st));
		nft_rule_end(b);
	}
	/* A process of the pod (passt, Envoy) reaching for the service while
	 * it is not local: refused at once rather than routed off the pod. */
	for (size_t i = 0; i < nports; i++) {
		nft_rule_begin(b, f, STEER_TABLE, "output");
		match_nh4(b, IP_DADDR, st->ip);
		match_ifname(b, NFT_META_OIFNAME, NFT_CMP_NEQ, "lo");
		match_svc_tcp(b, ports[i]);
		nft_e_counter(b);
		nft_e_reject(b, NFT_REJECT_ICMP_UNREACH, 13 /* ICMP_PKT_FILTERED */);
		nft_rule_end(b);
	}
	if (!st->local_ok) {
		/* ... and while it is local, where no binding has a process of the
		 * pod on its path: refused at once too (the listener's filter would
		 * drop the SYN, and the client wait out its retries).  TCP only:
		 * the ICMP error itself goes to .254, the connecting socket. */
		nft_rule_begin(b, f, STEER_TABLE, "output");
		match_nh4(b, IP_DADDR, st->ip);
		match_ifname(b, NFT_META_OIFNAME, NFT_CMP_EQ, "lo");
		match_svc_tcp(b, st->port);
		nft_e_counter(b);
		nft_e_reject(b, NFT_REJECT_ICMP_UNREACH, 13 /* ICMP_PKT_FILTERED */);
		nft_rule_end(b);
	}
	/* The guest's service connection routed by the pod (masquerade's
	 * ip_forward=1) while the tap is not steered or the port rule is
	 * gone: never forwarded, never masqueraded.  Nor anything that came
	 * in on veth-imds (a frame a guest sent to our MAC). */
	nft_add_chain(b, f, STEER_TABLE, "forward", NFT_HOOK_FORWARD, STEER_PRIO_RAW, NULL,
		      NFT_V_ACCEPT);
	for (size_t i = 0; i < nports; i++) {
		nft_rule_begin(b, f, STEER_TABLE, "forward");
		match_nh4(b, IP_DADDR, st->ip);
		match_svc_tcp(b, ports[i]);
		nft_e_counter(b);
		nft_e_verdict(b, NFT_V_DROP);
		nft_rule_end(b);
	}
	nft_rule_begin(b, f, STEER_TABLE, "forward");
	match_ifname(b, NFT_META_IIFNAME, NFT_CMP_EQ, IMDS_VETH);
	nft_e_counter(b);
	nft_e_verdict(b, NFT_V_DROP);
	nft_rule_end(b);
}

/* IPv6, as build_ip for IPv4.  A guest of bridge binding may ask from an
 * address of the pod (the dummy holds the pod's link-local and /128, the
 * guest has the pod's MAC: docs/sidecar.md "IPv6").  IPv6 has no
 * martian-source check, and our listeners, bound to veth-imds, answer on
 * that link; but what the kernel answers itself (a reset for another port,
 * or while no listener is open) is routed by the dummy's local entry into
 * the pod: so a global-scope source of the pod's is aliased as IPv4's are
 * (a link-local one needs none: its answers go out the link it came in
 * on).  And the kernel kept from answering the steered solicitations (our
 * responder does, as arp_ignore 8 does for ARP). */
static void build_ip6(const struct steer_state *st, struct nft_batch *b)
{
	static const uint8_t tcp = IPPROTO_TCP, icmp6 = IPPROTO_ICMPV6;
	const uint8_t f = NFT_FAMILY_IPV6;

	fresh_table(b, f);
	nft_add_chain(b, f, STEER_TABLE, "prerouting", NFT_HOOK_PREROUTING, STEER_PRIO_RAW, NULL,
		      NFT_V_ACCEPT);
	nft_rule_begin(b, f, STEER_TABLE, "prerouting");
	match_ifname(b, NFT_META_IIFNAME, NFT_CMP_EQ, IMDS_VETH);
	nft_e_notrack(b);
	nft_rule_end(b);
	for (int a = 0; a < 2; a++) { /* as IPv4's: Istio's TPROXY passes it by */
		nft_rule_begin(b, f, STEER_TABLE, "prerouting");
		match_ifname(b, NFT_META_IIFNAME, NFT_CMP_EQ, IMDS_VETH);
		match_nh6(b, IP6_DADDR, svc6[a]);
		nft_e_meta(b, NFT_META_L4PROTO, NFT_REG_1);
		nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &tcp, 1);
		nft_e_counter(b);
		set_mark(b);
		nft_rule_end(b);
	}
	for (size_t i = 0; i < st->nlocal6; i++) {
		uint8_t alias[16];
		steer_alias6(i, alias);
		alias_rule(b, f, "prerouting", NFT_META_IIFNAME, IP6_SADDR, st->local6[i], alias, 16,
			   0);
	}
	nft_add_chain(b, f, STEER_TABLE, "postrouting", NFT_HOOK_POSTROUTING, STEER_PRIO_POST, NULL,
		      NFT_V_ACCEPT);
	for (size_t i = 0; i < st->nlocal6; i++) {
		uint8_t alias[16];
		steer_alias6(i, alias);
		alias_rule(b, f, "postrouting", NFT_META_OIFNAME, IP6_DADDR, alias, st->local6[i], 16,
			   0);
	}
	nft_add_chain(b, f, STEER_TABLE, "input", NFT_HOOK_INPUT, STEER_PRIO_RAW, NULL,
		      NFT_V_ACCEPT);
	nft_rule_begin(b, f, STEER_TABLE, "input");
	match_ifname(b, NFT_META_IIFNAME, NFT_CMP_EQ, IMDS_VETH);
	nft_e_meta(b, NFT_META_L4PROTO, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &icmp6, 1);
	nft_e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1, NFT_REG_1);
	nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &(const uint8_t){135}, 1);
	nft_e_counter(b);
	nft_e_verdict(b, NFT_V_DROP);
	nft_rule_end(b);
	for (int a = 0; moved_port(st) && a < 2; a++) {
		nft_rule_begin(b, f, STEER_TABLE, "input");
		match_nh6(b, IP6_DADDR, svc6[a]);
		match_svc_tcp(b, st->port);
		nft_e_counter(b);
		set_tcp_port(b, 2, moved_port(st));
		nft_rule_end(b);
	}
	nft_add_chain(b, f, STEER_TABLE, "output", NFT_HOOK_OUTPUT, STEER_PRIO_RAW, NULL,
		      NFT_V_ACCEPT);
	for (int a = 0; a < 2; a++) {
		nft_rule_begin(b, f, STEER_TABLE, "output");
		match_nh6(b, IP6_SADDR, svc6[a]);
		nft_e_notrack(b);
		nft_rule_end(b);
		if (!moved_port(st))
			continue;
		nft_rule_begin(b, f, STEER_TABLE, "output");
		match_nh6(b, IP6_SADDR, svc6[a]);
		match_tcp_port(b, 0, moved_port(st));
		nft_e_counter(b);
		set_tcp_port(b, 0, st->port ? st->port : 80);
		nft_rule_end(b);
	}
	for (int a = 0; a < 2; a++) {
		nft_rule_begin(b, f, STEER_TABLE, "output");
		match_nh6(b, IP6_DADDR, svc6[a]);
		match_ifname(b, NFT_META_OIFNAME, NFT_CMP_NEQ, "lo");
		nft_e_counter(b);
		nft_e_reject(b, NFT_REJECT_ICMP_UNREACH, 1 /* ICMPV6_ADM_PROHIBITED */);
		nft_rule_end(b);
		if (st->local_ok)
			continue;
		/* A reset, not an ICMPv6 error: that one reaches the connecting
		 * socket while connect() still holds it, counts as a soft error,
		 * and the client waits for its second SYN (measured: 1 s).  The
		 * SYN alone (flags exactly SYN): the reset is not rejected in
		 * turn. */
		nft_rule_begin(b, f, STEER_TABLE, "output");
		match_nh6(b, IP6_DADDR, svc6[a]);
		match_ifname(b, NFT_META_OIFNAME, NFT_CMP_EQ, "lo");
		nft_e_meta(b, NFT_META_L4PROTO, NFT_REG_1);
		nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &tcp, 1);
		nft_e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 13, 1, NFT_REG_1);
		nft_e_cmp(b, NFT_REG_1, NFT_CMP_EQ, &(const uint8_t){0x02}, 1);
		nft_e_counter(b);
		nft_e_reject(b, NFT_REJECT_TCP_RST, 0);
		nft_rule_end(b);
	}
	nft_add_chain(b, f, STEER_TABLE, "forward", NFT_HOOK_FORWARD, STEER_PRIO_RAW, NULL,
		      NFT_V_ACCEPT);
	for (int a = 0; a < 2; a++) {
		nft_rule_begin(b, f, STEER_TABLE, "forward");
		match_nh6(b, IP6_DADDR, svc6[a]);
		nft_e_counter(b);
		nft_e_verdict(b, NFT_V_DROP);
		nft_rule_end(b);
	}
}

static void build_bridge(const struct steer_state *st, struct nft_batch *b)
{
	static const char *const chains[2] = {"forward", "input"};
	static const unsigned hooks[2] = {NFT_HOOK_FORWARD, NFT_HOOK_INPUT};
	const uint8_t f = NFT_FAMILY_BRIDGE;
	uint16_t ports[2];
	size_t nports = guarded_ports(st, ports);

	fresh_table(b, f);
	for (int c = 0; c < 2; c++) {
		nft_add_chain(b, f, STEER_TABLE, chains[c], hooks[c], STEER_PRIO_RAW, NULL,
			      NFT_V_ACCEPT);
		for (size_t i = 0; i < nports; i++) {
			nft_rule_begin(b, f, STEER_TABLE, chains[c]);
			match_proto(b, ETH_P_IP);
			match_nh4(b, IP_DADDR, st->ip);
			match_svc_tcp(b, ports[i]);
			nft_e_counter(b);
			nft_e_verdict(b, NFT_V_DROP);
			nft_rule_end(b);
		}
		nft_rule_begin(b, f, STEER_TABLE, chains[c]);
		match_arp_target(b, st->ip, 1);
		nft_e_counter(b);
		nft_e_verdict(b, NFT_V_DROP);
		nft_rule_end(b);
		for (int a = 0; a < 2; a++) {
			nft_rule_begin(b, f, STEER_TABLE, chains[c]);
			match_proto(b, ETH_P_IPV6);
			match_nh6(b, IP6_DADDR, svc6[a]);
			nft_e_counter(b);
			nft_e_verdict(b, NFT_V_DROP);
			nft_rule_end(b);
			nft_rule_begin(b, f, STEER_TABLE, chains[c]);
			match_ns6(b, svc6[a]);
			nft_e_counter(b);
			nft_e_verdict(b, NFT_V_DROP);
			nft_rule_end(b);
		}
	}
}

int steer_build(const struct steer_state *st, struct nft_batch *b)
{
	if (st->veth && st->peer && st->ntaps) {
		build_netdev(st, b);
	} else {
		nft_add_table(b, NFT_FAMILY_NETDEV, STEER_TABLE);
		nft_del_table(b, NFT_FAMILY_NETDEV, STEER_TABLE);
	}
	build_ip(st, b);
	build_ip6(st, b);
	build_bridge(st, b);
	return b->err;
}
