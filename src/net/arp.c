#include "arp.h"
#include "sbuf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_ether.h>

/* Offsets in an Ethernet frame carrying ARP for IPv4 (RFC 826). */
enum {
	OFF_IP = 14, /* an IPv4 header, for the SYN learner */
	OFF_ETH_DST = 0,
	OFF_ETH_SRC = 6,
	OFF_ETHERTYPE = 12,
	OFF_HTYPE = 14,
	OFF_PTYPE = 16,
	OFF_HLEN = 18,
	OFF_PLEN = 19,
	OFF_OP = 20,
	OFF_SHA = 22,
	OFF_SPA = 28,
	OFF_THA = 32,
	OFF_TPA = 38,
};

#define ARPHRD_ETHER_ 1
#define ARPOP_REQUEST_ 1
#define ARPOP_REPLY_ 2

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

int arp_parse(const uint8_t *frame, size_t len, struct arp_pkt *out)
{
	memset(out, 0, sizeof(*out));
	if (len < ARP_FRAME_LEN)
		return -EBADMSG;
	if (be16(frame + OFF_ETHERTYPE) != ETH_P_ARP || be16(frame + OFF_HTYPE) != ARPHRD_ETHER_ ||
	    be16(frame + OFF_PTYPE) != ETH_P_IP || frame[OFF_HLEN] != 6 || frame[OFF_PLEN] != 4)
		return -EPROTONOSUPPORT;
	memcpy(out->eth_dst, frame + OFF_ETH_DST, 6);
	memcpy(out->eth_src, frame + OFF_ETH_SRC, 6);
	out->op = be16(frame + OFF_OP);
	memcpy(out->sha, frame + OFF_SHA, 6);
	memcpy(out->spa, frame + OFF_SPA, 4);
	memcpy(out->tha, frame + OFF_THA, 6);
	memcpy(out->tpa, frame + OFF_TPA, 4);
	return 0;
}

int arp_mac_is_unicast(const uint8_t mac[6])
{
	static const uint8_t zero[6];
	return !(mac[0] & 1) && memcmp(mac, zero, 6) != 0;
}

enum arp_verdict arp_classify(const struct arp_pkt *p, const uint8_t ip[4])
{
	if (p->op != ARPOP_REQUEST_)
		return ARP_NOT_REQUEST;
	if (memcmp(p->tpa, ip, 4) != 0)
		return ARP_OTHER_TARGET;
	/* An announcement claims the address for the sender; answering it
	 * would only start an argument.  (A probe has sender 0.0.0.0 and is
	 * answered: that is how the prober learns the address is taken.) */
	if (memcmp(p->spa, p->tpa, 4) == 0)
		return ARP_GRATUITOUS;
	/* A request whose sender MAC is not the frame's source would have us
	 * send the reply to a third party: a proxy we do not support. */
	if (!arp_mac_is_unicast(p->sha) || memcmp(p->sha, p->eth_src, 6) != 0)
		return ARP_BAD_SENDER;
	return ARP_ANSWER;
}

size_t arp_build_reply(const struct arp_pkt *req, const uint8_t mac[6], const uint8_t ip[4],
		       uint8_t *out, size_t cap)
{
	if (cap < ARP_FRAME_LEN)
		return 0;
	memcpy(out + OFF_ETH_DST, req->sha, 6);
	memcpy(out + OFF_ETH_SRC, mac, 6);
	put_be16(out + OFF_ETHERTYPE, ETH_P_ARP);
	put_be16(out + OFF_HTYPE, ARPHRD_ETHER_);
	put_be16(out + OFF_PTYPE, ETH_P_IP);
	out[OFF_HLEN] = 6;
	out[OFF_PLEN] = 4;
	put_be16(out + OFF_OP, ARPOP_REPLY_);
	memcpy(out + OFF_SHA, mac, 6);
	memcpy(out + OFF_SPA, ip, 4);
	memcpy(out + OFF_THA, req->sha, 6);
	/* For a probe this is 0.0.0.0: the reply goes back to the prober's
	 * MAC, and its sender IP is what tells it of the conflict. */
	memcpy(out + OFF_TPA, req->spa, 4);
	return ARP_FRAME_LEN;
}

/* ---- MAC sets ------------------------------------------------------------ */

int arp_macset_has(const struct arp_macset *s, const uint8_t mac[6])
{
	for (unsigned i = 0; i < s->n && i < ARP_MACSET_MAX; i++)
		if (memcmp(s->mac[i], mac, 6) == 0)
			return 1;
	return 0;
}

int arp_macset_add(struct arp_macset *s, const uint8_t mac[6])
{
	if (!arp_mac_is_unicast(mac))
		return -EINVAL;
	if (arp_macset_has(s, mac))
		return 0;
	if (s->n >= ARP_MACSET_MAX)
		return -ENOSPC;
	memcpy(s->mac[s->n++], mac, 6);
	return 1;
}

int arp_macset_eq(const struct arp_macset *a, const struct arp_macset *b)
{
	if (a->n != b->n)
		return 0;
	for (unsigned i = 0; i < a->n && i < ARP_MACSET_MAX; i++)
		if (!arp_macset_has(b, a->mac[i]))
			return 0;
	return 1;
}

/* "xx:xx:xx:xx:xx:xx" at p (17 bytes available). */
static int parse_mac(const char *p, uint8_t mac[6])
{
	for (size_t i = 0; i < 6; i++) {
		int hi = sbuf_hexval(p[3 * i]), lo = sbuf_hexval(p[3 * i + 1]);
		if (hi < 0 || lo < 0 || (i < 5 && p[3 * i + 2] != ':'))
			return -EINVAL;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* Skips a quote at buf[*i], written either " or \" (the document may be
 * a JSON string inside the downward API's key="value" lines). */
static int skip_quote(const char *buf, size_t len, size_t *i)
{
	if (*i < len && buf[*i] == '\\')
		(*i)++;
	if (*i < len && buf[*i] == '"') {
		(*i)++;
		return 1;
	}
	return 0;
}

static void skip_ws(const char *buf, size_t len, size_t *i)
{
	while (*i < len && (buf[*i] == ' ' || buf[*i] == '\t' || buf[*i] == '\n' || buf[*i] == '\r'))
		(*i)++;
}

int arp_scan_macs(const char *buf, size_t len, struct arp_macset *out)
{
	int found = 0;

	for (size_t k = 0; k + 4 <= len; k++) {
		uint8_t mac[6];
		size_t i;
		int ret;

		/* A key is "mac" with its opening quote right before it. */
		if (buf[k] != '"' || memcmp(buf + k + 1, "mac", 3) != 0)
			continue;
		i = k + 4;
		if (!skip_quote(buf, len, &i))
			continue;
		skip_ws(buf, len, &i);
		if (i >= len || buf[i] != ':')
			continue;
		i++;
		skip_ws(buf, len, &i);
		if (!skip_quote(buf, len, &i) || len - i < 17 || parse_mac(buf + i, mac))
			continue;
		i += 17;
		if (!skip_quote(buf, len, &i))
			continue;
		ret = arp_macset_add(out, mac);
		if (ret == -ENOSPC)
			return ret;
		if (ret >= 0)
			found++;
	}
	return found;
}

/* ---- classic BPF --------------------------------------------------------- */

#define STMT(code, k) ((struct sock_filter){(uint16_t)(code), 0, 0, (uint32_t)(k)})
#define JUMP(code, k, jt, jf) \
	((struct sock_filter){(uint16_t)(code), (uint8_t)(jt), (uint8_t)(jf), (uint32_t)(k)})

/* Accept the whole packet.  A socket filter's return is a length to trim
 * to; for TCP the kernel trims to max(header, this), so anything short of
 * "all" could cut a GRO super-packet. */
#define BPF_ACCEPT 0xffffffffu

int arp_parse_syn(const uint8_t *frame, size_t len, uint8_t mac[6], uint8_t ip[4])
{
	/* What the filter passed: Ethernet, IPv4 (its source at 26..29). */
	if (len < OFF_IP + 20 || be16(frame + OFF_ETHERTYPE) != ETH_P_IP ||
	    (frame[OFF_IP] >> 4) != 4)
		return -EBADMSG;
	memcpy(mac, frame + OFF_ETH_SRC, 6);
	memcpy(ip, frame + OFF_IP + 12, 4);
	return arp_mac_is_unicast(mac) ? 0 : -EINVAL;
}

int arp_guard_prog(int ifindex, int allow_lo, struct sock_filter *out, size_t cap)
{
	struct sock_filter p[ARP_GUARD_MAX];
	unsigned n = 0;

	if (ifindex <= 0)
		return -EINVAL;
	/* The device the segment came in on (skb->dev): veth-imds for the
	 * VM's, lo (ifindex 1, LOOPBACK_IFINDEX) for a process of the pod. */
	p[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_IFINDEX);
	if (allow_lo) {
		p[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ifindex, 2, 0);
		p[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 1, 0);
	} else {
		p[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ifindex, 1, 0);
	}
	p[n++] = STMT(BPF_RET | BPF_K, 0);
	p[n++] = STMT(BPF_RET | BPF_K, BPF_ACCEPT);
	if (n > cap)
		return -ENOSPC;
	memcpy(out, p, n * sizeof(*p));
	return (int)n;
}

int arp_guard_attach(int fd, int ifindex, int allow_lo)
{
	struct sock_filter prog[ARP_GUARD_MAX];
	struct sock_fprog fp = {.filter = prog};
	int n = arp_guard_prog(ifindex, allow_lo, prog, ARP_GUARD_MAX);
	if (n < 0)
		return n;
	fp.len = (unsigned short)n;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof(fp)))
		return -errno;
	return 0;
}
