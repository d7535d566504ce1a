#include "ndp.h"

#include <errno.h>
#include <string.h>

#include "arp.h"

const uint8_t ndp_imds_addr[2][16] = {
	{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54},
	{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xa9, 0xfe, 0xa9, 0xfe},
};

#define ETH_P_IPV6_ 0x86dd
#define IPPROTO_ICMPV6_ 58
#define IPPROTO_TCP_ 6
#define ND_NS 135
#define ND_NA 136
#define OPT_SLLA 1
#define OPT_TLLA 2
#define IP6 NDP_OFF_IP6
#define ICMP (IP6 + 40)

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static int is_zero16(const uint8_t a[16])
{
	for (int i = 0; i < 16; i++)
		if (a[i])
			return 0;
	return 1;
}

uint16_t ndp_icmp6_csum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *msg,
			size_t len)
{
	uint32_t sum = 0;
	for (int i = 0; i < 16; i += 2)
		sum += (uint32_t)be16(src + i) + be16(dst + i);
	sum += (uint32_t)(len >> 16) + (uint32_t)(len & 0xffff);
	sum += IPPROTO_ICMPV6_;
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += be16(msg + i);
	if (len & 1)
		sum += (uint32_t)msg[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Ethernet, IPv6 with no extension header and a payload that fits the
 * frame, next header nh: the payload's length, or -1. */
static long ip6_payload(const uint8_t *frame, size_t len, uint8_t nh)
{
	if (len < IP6 + 40 || be16(frame + 12) != ETH_P_IPV6_ || (frame[IP6] >> 4) != 6 ||
	    frame[IP6 + 6] != nh)
		return -1;
	size_t plen = be16(frame + IP6 + 4);
	if (IP6 + 40 + plen > len)
		return -1;
	return (long)plen;
}

int ndp_parse_ns(const uint8_t *frame, size_t len, struct ndp_ns *out)
{
	memset(out, 0, sizeof(*out));
	long plen = ip6_payload(frame, len, IPPROTO_ICMPV6_);
	if (plen < 1 || frame[ICMP] != ND_NS) /* no ICMP type at all: not an NS */
		return -EPROTONOSUPPORT;
	const uint8_t *src = frame + IP6 + 8, *dst = frame + IP6 + 24, *m = frame + ICMP;
	if (plen < 24 || frame[IP6 + 7] != 255 || m[1] != 0 ||
	    ndp_icmp6_csum(src, dst, m, (size_t)plen) != 0)
		return -EBADMSG;
	if (m[8] == 0xff) /* a multicast target */
		return -EBADMSG;
	memcpy(out->eth_src, frame + 6, 6);
	memcpy(out->src, src, 16);
	memcpy(out->dst, dst, 16);
	memcpy(out->target, m + 8, 16);
	for (size_t o = 24; o < (size_t)plen;) {
		if ((size_t)plen - o < 2)
			return -EBADMSG;
		size_t olen = (size_t)m[o + 1] * 8;
		if (olen == 0 || olen > (size_t)plen - o)
			return -EBADMSG;
		if (m[o] == OPT_SLLA && olen == 8) {
			out->has_slla = 1;
			memcpy(out->slla, m + o + 2, 6);
		}
		o += olen;
	}
	if (is_zero16(out->src)) {
		/* DAD: no source link-layer option, to the target's
		 * solicited-node group ff02::1:ffXX:XXXX. */
		static const uint8_t sn[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
		if (out->has_slla || memcmp(dst, sn, 13) != 0 ||
		    memcmp(dst + 13, out->target + 13, 3) != 0)
			return -EBADMSG;
	}
	return 0;
}

enum ndp_verdict ndp_classify(const struct ndp_ns *ns, const uint8_t (*targets)[16], size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (memcmp(ns->target, targets[i], 16) == 0)
			break;
	if (i == n)
		return NDP_OTHER_TARGET;
	if (!arp_mac_is_unicast(ns->eth_src) || (ns->has_slla && !arp_mac_is_unicast(ns->slla)))
		return NDP_BAD_SENDER;
	return NDP_ANSWER;
}

size_t ndp_build_na(const struct ndp_ns *ns, const uint8_t mac[6], uint8_t *out, size_t cap)
{
	static const uint8_t all_nodes[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	static const uint8_t all_nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};
	int dad = is_zero16(ns->src);
	uint8_t *ip = out + IP6, *m = out + ICMP;

	if (cap < NDP_NA_LEN)
		return 0;
	memset(out, 0, NDP_NA_LEN);
	memcpy(out, dad ? all_nodes_mac : ns->has_slla ? ns->slla : ns->eth_src, 6);
	memcpy(out + 6, mac, 6);
	out[12] = ETH_P_IPV6_ >> 8;
	out[13] = ETH_P_IPV6_ & 0xff;
	ip[0] = 0x60;
	ip[4] = 0;
	ip[5] = 32; /* NA (24) + target link-layer option (8) */
	ip[6] = IPPROTO_ICMPV6_;
	ip[7] = 255;
	memcpy(ip + 8, ns->target, 16);
	memcpy(ip + 24, dad ? all_nodes : ns->src, 16);
	m[0] = ND_NA;
	m[4] = dad ? 0x20 : 0x60; /* [S]olicited, [O]verride; never [R]outer */
	memcpy(m + 8, ns->target, 16);
	m[24] = OPT_TLLA;
	m[25] = 1;
	memcpy(m + 26, mac, 6);
	uint16_t c = ndp_icmp6_csum(ip + 8, ip + 24, m, 32);
	m[2] = (uint8_t)(c >> 8);
	m[3] = (uint8_t)c;
	return NDP_NA_LEN;
}

int ndp_parse_syn(const uint8_t *frame, size_t len, uint8_t mac[6], uint8_t ip[16])
{
	long plen = ip6_payload(frame, len, IPPROTO_TCP_);
	if (plen < 20)
		return -EBADMSG;
	memcpy(mac, frame + 6, 6);
	memcpy(ip, frame + IP6 + 8, 16);
	if (!arp_mac_is_unicast(mac) || is_zero16(ip) || ip[0] == 0xff)
		return -EINVAL;
	return 0;
}
