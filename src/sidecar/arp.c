#include "arp.h"
#include "ndp.h"
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
#define ETH_P_IPV6_ 0x86dd
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

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
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

/* A program under construction: jumps name labels, resolved at the end
 * into relative offsets (every jump here goes forward). */
enum { L_NEXT, L_DROP, L_ARP_OK, L_IP4, L_IP6, L_NS, L_NS_LL, L_SYN6, L_SYN6_LL, L_PORT6,
       L_OK6, L_COUNT };
struct bpf_build {
	struct sock_filter p[ARP_FILTER_MAX];
	uint8_t jt[ARP_FILTER_MAX], jf[ARP_FILTER_MAX]; /* labels */
	unsigned at[L_COUNT];
	unsigned n;
};

static void op(struct bpf_build *b, uint16_t code, uint32_t k)
{
	if (b->n < ARP_FILTER_MAX) {
		b->jt[b->n] = b->jf[b->n] = L_NEXT;
		b->p[b->n] = STMT(code, k);
	}
	b->n++;
}

static void jeq(struct bpf_build *b, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf)
{
	if (b->n < ARP_FILTER_MAX) {
		b->p[b->n] = JUMP(BPF_JMP | code | BPF_K, k, 0, 0);
		b->jt[b->n] = jt;
		b->jf[b->n] = jf;
	}
	b->n++;
}

static void label(struct bpf_build *b, unsigned l)
{
	b->at[l] = b->n;
}

/* The 16 bytes at off equal a: to ok, else to no. */
static void cmp16(struct bpf_build *b, unsigned off, const uint8_t a[16], uint8_t ok, uint8_t no)
{
	for (size_t i = 0; i < 4; i++) {
		op(b, BPF_LD | BPF_W | BPF_ABS, off + 4 * (unsigned)i);
		jeq(b, BPF_JEQ, be32(a + 4 * i), i < 3 ? L_NEXT : ok, no);
	}
}

int arp_filter_prog(const uint8_t ip[4], uint16_t syn_port, int v6, struct sock_filter *out,
		    size_t cap)
{
	struct bpf_build b = {.n = 0};

	op(&b, BPF_LD | BPF_H | BPF_ABS, OFF_ETHERTYPE);
	if (syn_port)
		jeq(&b, BPF_JEQ, ETH_P_IP, L_IP4, L_NEXT);
	if (v6)
		jeq(&b, BPF_JEQ, ETH_P_IPV6_, L_IP6, L_NEXT);
	jeq(&b, BPF_JEQ, ETH_P_ARP, L_NEXT, L_DROP);
	op(&b, BPF_LD | BPF_H | BPF_ABS, OFF_OP);
	jeq(&b, BPF_JEQ, ARPOP_REQUEST_, L_NEXT, L_DROP);
	op(&b, BPF_LD | BPF_W | BPF_ABS, OFF_TPA);
	jeq(&b, BPF_JEQ, be32(ip), L_NEXT, L_DROP);
	op(&b, BPF_LD | BPF_W | BPF_ABS, OFF_HTYPE); /* htype, ptype */
	jeq(&b, BPF_JEQ, (uint32_t)ARPHRD_ETHER_ << 16 | ETH_P_IP, L_NEXT, L_DROP);
	op(&b, BPF_LD | BPF_H | BPF_ABS, OFF_HLEN); /* hlen, plen */
	jeq(&b, BPF_JEQ, 0x0604, L_ARP_OK, L_DROP);
	if (syn_port) {
		/* An IPv4 TCP SYN (not SYN-ACK) to ip:syn_port, not a fragment:
		 * a connection's first segment, whose Ethernet and IP sources
		 * tell which MAC answers for that address (arp_parse_syn). */
		label(&b, L_IP4);
		op(&b, BPF_LD | BPF_W | BPF_ABS, OFF_IP + 16); /* daddr */
		jeq(&b, BPF_JEQ, be32(ip), L_NEXT, L_DROP);
		op(&b, BPF_LD | BPF_B | BPF_ABS, OFF_IP + 9); /* protocol */
		jeq(&b, BPF_JEQ, 6, L_NEXT, L_DROP);
		op(&b, BPF_LD | BPF_H | BPF_ABS, OFF_IP + 6); /* MF, fragment offset */
		jeq(&b, BPF_JSET, 0x3fff, L_DROP, L_NEXT);
		op(&b, BPF_LDX | BPF_B | BPF_MSH, OFF_IP); /* X = IP header length */
		op(&b, BPF_LD | BPF_H | BPF_IND, OFF_IP + 2);  /* TCP dport */
		jeq(&b, BPF_JEQ, syn_port, L_NEXT, L_DROP);
		op(&b, BPF_LD | BPF_B | BPF_IND, OFF_IP + 13); /* TCP flags */
		op(&b, BPF_ALU | BPF_AND | BPF_K, 0x12);      /* SYN, ACK */
		jeq(&b, BPF_JEQ, 0x02, L_ARP_OK, L_DROP);
	}
	if (v6) {
		/* IPv6 with no extension header: a neighbour solicitation
		 * (ICMPv6 135) for one of the service's addresses, or (with
		 * syn_port) a TCP SYN to one of them (ndp.h). */
		label(&b, L_IP6);
		op(&b, BPF_LD | BPF_B | BPF_ABS, OFF_IP + 6); /* next header */
		jeq(&b, BPF_JEQ, 58, L_NS, syn_port ? L_NEXT : L_DROP);
		if (syn_port)
			jeq(&b, BPF_JEQ, 6, L_SYN6, L_DROP);
		label(&b, L_NS);
		op(&b, BPF_LD | BPF_B | BPF_ABS, OFF_IP + 40); /* ICMPv6 type */
		jeq(&b, BPF_JEQ, 135, L_NEXT, L_DROP);
		cmp16(&b, OFF_IP + 48, ndp_imds_global, L_OK6, L_NS_LL); /* the target */
		label(&b, L_NS_LL);
		cmp16(&b, OFF_IP + 48, ndp_imds_ll, L_OK6, L_DROP);
		if (syn_port) {
			label(&b, L_SYN6);
			cmp16(&b, OFF_IP + 24, ndp_imds_global, L_PORT6, L_SYN6_LL); /* dst */
			label(&b, L_SYN6_LL);
			cmp16(&b, OFF_IP + 24, ndp_imds_ll, L_PORT6, L_DROP);
			label(&b, L_PORT6);
			op(&b, BPF_LD | BPF_H | BPF_ABS, OFF_IP + 40 + 2); /* TCP dport */
			jeq(&b, BPF_JEQ, syn_port, L_NEXT, L_DROP);
			op(&b, BPF_LD | BPF_B | BPF_ABS, OFF_IP + 40 + 13); /* TCP flags */
			op(&b, BPF_ALU | BPF_AND | BPF_K, 0x12);
			jeq(&b, BPF_JEQ, 0x02, L_OK6, L_DROP);
		}
		label(&b, L_OK6);
		op(&b, BPF_RET | BPF_K, ARP_FRAME_MAX); /* a solicitation with its options */
	}
	label(&b, L_ARP_OK);
	/* 64 bytes hold the whole ARP frame and the SYN's headers up to its
	 * flags; the rest is never copied. */
	op(&b, BPF_RET | BPF_K, 64);
	label(&b, L_DROP);
	op(&b, BPF_RET | BPF_K, 0);
	if (b.n > ARP_FILTER_MAX || b.n > cap)
		return -ENOSPC;
	for (unsigned i = 0; i < b.n; i++) {
		if (BPF_CLASS(b.p[i].code) != BPF_JMP)
			continue;
		b.p[i].jt = (uint8_t)(b.jt[i] == L_NEXT ? 0 : b.at[b.jt[i]] - i - 1);
		b.p[i].jf = (uint8_t)(b.jf[i] == L_NEXT ? 0 : b.at[b.jf[i]] - i - 1);
	}
	memcpy(out, b.p, b.n * sizeof(*b.p));
	return (int)b.n;
}

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

/* ---- the socket ---------------------------------------------------------- */

int arp_socket_open(int ifindex, const uint8_t ip[4], uint16_t syn_port, int v6, char *err,
		    size_t errlen)
{
	struct sock_filter prog[ARP_FILTER_MAX];
	struct sock_fprog fp = {.filter = prog};
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(syn_port ? ETH_P_ALL : ETH_P_ARP),
		.sll_ifindex = ifindex,
	};
	const char *step = "socket";
	int rcvbuf = 1 << 20, fd, ret, n;

	/* Protocol 0: the socket receives nothing until bind() names one,
	 * by which time the filter is in place. */
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto fail;
	n = arp_filter_prog(ip, syn_port, v6, prog, ARP_FILTER_MAX);
	if (n < 0) {
		errno = -n;
		step = "filter";
		goto fail;
	}
	fp.len = (unsigned short)n;
	step = "SO_ATTACH_FILTER";
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof(fp)))
		goto fail;
	/* Room for a burst of requests (a frame costs ~1 KiB of buffer);
	 * FORCE lifts rmem_max with CAP_NET_ADMIN.  Best effort. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	step = "bind";
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		goto fail;
	return fd;
fail:
	ret = -errno;
	snprintf(err, errlen, "arp socket on ifindex %d: %s: %s", ifindex, step, strerror(errno));
	if (fd >= 0)
		close(fd);
	return ret;
}

int arp_socket_recv(int fd, uint8_t *buf, size_t cap, size_t *len, int *ifindex, int *pkttype)
{
	struct sockaddr_ll sll = {0};
	socklen_t sl = sizeof(sll);
	ssize_t n;

	do
		n = recvfrom(fd, buf, cap, 0, (struct sockaddr *)&sll, &sl);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	*len = (size_t)n;
	*ifindex = sll.sll_ifindex;
	*pkttype = sll.sll_pkttype;
	return 0;
}

int arp_socket_send(int fd, int ifindex, const uint8_t *frame, size_t len)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ARP),
		.sll_ifindex = ifindex,
		.sll_halen = 6,
	};
	ssize_t n;

	memcpy(sll.sll_addr, frame + OFF_ETH_DST, 6);
	do
		n = sendto(fd, frame, len, 0, (struct sockaddr *)&sll, sizeof(sll));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}
