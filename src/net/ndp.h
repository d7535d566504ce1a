/* ndp: the sidecar's IPv6 face at L2, beside arp.h's IPv4 one.
 *
 * The service answers on two IPv6 addresses besides 169.254.169.254:
 * fe80::a9fe:a9fe (OpenStack's, on the VM's link: Ignition and cloud-init's
 * OpenStack datasource try it) and fd00:ec2::254 (AWS's, routed through the
 * guest's IPv6 gateway).  A guest finds them with neighbour solicitations
 * (RFC 4861), which the steering at the VM's taps hands to veth-imds like
 * its ARP requests; the kernel is kept from answering them there (the ip6
 * table drops them at input, as arp_ignore 8 does for ARP), and this
 * responder answers, from the socket that sees only the VM's steered frames.
 *
 * Pure: a parser of Ethernet/IPv6 neighbour solicitations, the
 * advertisement that answers one, the sources of an IPv6 TCP SYN (the
 * neighbour entry the answer needs, as arp_parse_syn for IPv4), and the
 * ICMPv6 checksum. */
#ifndef IMDS_NDP_H
#define IMDS_NDP_H

#include <stddef.h>
#include <stdint.h>

#define NDP_OFF_IP6 14
#define NDP_NS_MIN (14 + 40 + 24)       /* Ethernet, IPv6, NS without options */
#define NDP_NA_LEN (14 + 40 + 24 + 8)   /* ... an NA with its target link-layer option */

/* The service's IPv6 addresses: [0] fd00:ec2::254, [1] fe80::a9fe:a9fe. */
extern const uint8_t ndp_imds_addr[2][16];
#define ndp_imds_global (ndp_imds_addr[0])
#define ndp_imds_ll (ndp_imds_addr[1])

struct ndp_ns {
	uint8_t eth_src[6];
	uint8_t src[16];    /* IPv6 source: :: for duplicate address detection */
	uint8_t dst[16];
	uint8_t target[16];
	int has_slla;       /* a source link-layer address option */
	uint8_t slla[6];
};

/* 0; -EBADMSG when it is not a well-formed Ethernet/IPv6 neighbour
 * solicitation (RFC 4861 §7.1.1: hop limit 255, code 0, ICMP length >= 24,
 * the checksum, a target that is not multicast, options of non-zero length
 * that fit, no source link-layer option from ::, a solicited-node
 * multicast destination for DAD); -EPROTONOSUPPORT for another frame
 * (not IPv6, not ICMPv6 NS, an extension header). */
int ndp_parse_ns(const uint8_t *frame, size_t len, struct ndp_ns *out);

enum ndp_verdict {
	NDP_ANSWER = 0,   /* for one of targets, from a sane sender */
	NDP_OTHER_TARGET, /* for someone else */
	NDP_BAD_SENDER,   /* Ethernet source multicast or zero, or a source
			   * link-layer option that is not a unicast MAC */
};
enum ndp_verdict ndp_classify(const struct ndp_ns *ns, const uint8_t (*targets)[16], size_t n);

/* The neighbour advertisement answering ns for its target, from mac: to
 * the solicitor (its link-layer option, else its Ethernet source), the
 * solicited flag set; for duplicate address detection (source ::) to the
 * all-nodes group, not solicited (RFC 4861 §7.2.4).  Override set, router
 * not.  NDP_NA_LEN, or 0 when cap is too small. */
size_t ndp_build_na(const struct ndp_ns *ns, const uint8_t mac[6], uint8_t *out, size_t cap);

/* The Ethernet and IPv6 sources of an IPv6 TCP SYN frame (as the socket's
 * filter passes it: no extension header): 0; -EBADMSG when it is no such
 * frame; -EINVAL for a multicast or zero source MAC, or a source address
 * that is unspecified or multicast. */
int ndp_parse_syn(const uint8_t *frame, size_t len, uint8_t mac[6], uint8_t ip[16]);

/* The ICMPv6 checksum of msg[0..len) between src and dst (RFC 4443 §2.3),
 * with the checksum field as it is in msg (0 when computing). */
uint16_t ndp_icmp6_csum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *msg,
			size_t len);

#endif
