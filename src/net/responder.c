#include "responder.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_ether.h>

#include "arp.h"
#include "log.h"
#include "ndp.h"

/* Offsets in an Ethernet frame (ARP for IPv4, RFC 826; IPv4 and IPv6
 * headers at OFF_IP). */
enum {
	OFF_IP = 14,
	OFF_ETH_DST = 0,
	OFF_ETHERTYPE = 12,
	OFF_HTYPE = 14,
	OFF_HLEN = 18,
	OFF_OP = 20,
	OFF_TPA = 38,
};

#define ARPHRD_ETHER_ 1
#define ETH_P_IPV6_ 0x86dd
#define ARPOP_REQUEST_ 1

#define STMT(code, k) ((struct sock_filter){(uint16_t)(code), 0, 0, (uint32_t)(k)})
#define JUMP(code, k, jt, jf) \
	((struct sock_filter){(uint16_t)(code), (uint8_t)(jt), (uint8_t)(jf), (uint32_t)(k)})

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- the filter ---------------------------------------------------------- */

/* A program under construction: jumps name labels, resolved at the end
 * into relative offsets (every jump here goes forward). */
enum { L_NEXT, L_DROP, L_ARP_OK, L_IP4, L_IP6, L_NS, L_NS_LL, L_SYN6, L_SYN6_LL, L_PORT6,
       L_OK6, L_COUNT };
struct bpf_build {
	struct sock_filter p[RESP_FILTER_MAX];
	uint8_t jt[RESP_FILTER_MAX], jf[RESP_FILTER_MAX]; /* labels */
	unsigned at[L_COUNT];
	unsigned n;
};

static void op(struct bpf_build *b, uint16_t code, uint32_t k)
{
	if (b->n < RESP_FILTER_MAX) {
		b->jt[b->n] = b->jf[b->n] = L_NEXT;
		b->p[b->n] = STMT(code, k);
	}
	b->n++;
}

static void jeq(struct bpf_build *b, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf)
{
	if (b->n < RESP_FILTER_MAX) {
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

int resp_filter_prog(const uint8_t ip[4], uint16_t syn_port, int v6, struct sock_filter *out,
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
		op(&b, BPF_RET | BPF_K, RESP_FRAME_MAX); /* a solicitation with its options */
	}
	label(&b, L_ARP_OK);
	/* 64 bytes hold the whole ARP frame and the SYN's headers up to its
	 * flags; the rest is never copied. */
	op(&b, BPF_RET | BPF_K, 64);
	label(&b, L_DROP);
	op(&b, BPF_RET | BPF_K, 0);
	if (b.n > RESP_FILTER_MAX || b.n > cap)
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

/* ---- the socket ---------------------------------------------------------- */

int resp_socket_open(int ifindex, const uint8_t ip[4], uint16_t syn_port, int v6, char *err,
		     size_t errlen)
{
	struct sock_filter prog[RESP_FILTER_MAX];
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
	n = resp_filter_prog(ip, syn_port, v6, prog, RESP_FILTER_MAX);
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

int resp_socket_recv(int fd, uint8_t *buf, size_t cap, size_t *len, int *ifindex, int *pkttype)
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

int resp_socket_send(int fd, int ifindex, const uint8_t *frame, size_t len)
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

/* ---- the responder ----------------------------------------------------- */

static void close_fd(struct responder *r)
{
	if (r->fd >= 0) {
		loop_del(r->loop, r->fd, LOOP_READABLE);
		close(r->fd);
	}
	r->fd = -1;
	r->ifindex = 0;
}

/* ip (of family) is at mac: make veth-imds's neighbour entry say so, once
 * per pair. */
static void learn(struct responder *r, uint8_t family, const uint8_t *ip, const uint8_t mac[6])
{
	size_t alen = family == AF_INET6 ? 16 : 4;
	char err[256];
	size_t i;
	int ret;

	if (r->neigh_if != r->ifindex) {
		r->nneigh = r->neigh_next = 0; /* a new veth-imds: no entries */
		r->neigh_if = r->ifindex;
	}
	if (family == AF_INET && (ip[0] == 0 || memcmp(ip, r->ip, 4) == 0))
		return; /* a probe (0.0.0.0), an announcement */
	for (i = 0; i < r->nneigh; i++)
		if (r->neigh[i].family == family && memcmp(r->neigh[i].ip, ip, alen) == 0)
			break;
	if (i < r->nneigh && memcmp(r->neigh[i].mac, mac, 6) == 0)
		return;
	ret = family == AF_INET6 ? nl_neigh_set6(r->req, r->ifindex, ip, mac, err, sizeof(err))
				 : nl_neigh_set4(r->req, r->ifindex, ip, mac, err, sizeof(err));
	if (ret) {
		log_error("net: %s", err);
		return;
	}
	r->neigh_written++;
	if (i == r->nneigh) {
		if (r->nneigh < RESP_NEIGH_MAX)
			i = r->nneigh++;
		else
			i = r->neigh_next++ % RESP_NEIGH_MAX; /* the oldest goes */
	}
	r->neigh[i].family = family;
	memcpy(r->neigh[i].ip, ip, alen);
	memcpy(r->neigh[i].mac, mac, 6);
}

/* A neighbour solicitation for one of the service's IPv6 addresses: the
 * VM's (nothing else reaches veth-imds), answered from veth-imds's MAC. */
static void answer_ns(struct responder *r, const uint8_t *frame, size_t len)
{
	static const uint8_t unspecified[16];
	uint8_t reply[NDP_NA_LEN];
	struct ndp_ns ns;
	size_t rlen;
	int ret;

	if (ndp_parse_ns(frame, len, &ns) || ndp_classify(&ns, ndp_imds_addr, 2) != NDP_ANSWER)
		return;
	if (memcmp(ns.src, unspecified, 16) != 0) /* not :: (DAD) */
		learn(r, AF_INET6, ns.src, ns.has_slla ? ns.slla : ns.eth_src);
	rlen = ndp_build_na(&ns, r->vmac, reply, sizeof(reply));
	ret = resp_socket_send(r->fd, r->ifindex, reply, rlen);
	if (ret)
		log_error("net: neighbour advertisement: %s", strerror(-ret));
	else
		r->ndp_answered++;
}

/* A request for the service address is the VM's, and is answered with
 * veth-imds's MAC, out of veth-imds, back to the taps; a SYN tells which
 * MAC to answer its source at. */
static void on_frame(struct loop *l, int fd, void *data, int mask)
{
	struct responder *r = data;
	(void)l;
	(void)mask;

	for (int i = 0; i < RESP_BATCH; i++) {
		uint8_t frame[RESP_FRAME_MAX], reply[ARP_FRAME_LEN], mac[6], ip[16];
		struct arp_pkt p;
		size_t len = 0, rlen;
		int ifi = 0, pkttype = 0, ret;

		ret = resp_socket_recv(fd, frame, sizeof(frame), &len, &ifi, &pkttype);
		if (ret == -EAGAIN || ret == -ENETDOWN)
			break; /* ENETDOWN: the device went down; reconcile follows */
		if (ret) {
			log_error("net: arp receive: %s", strerror(-ret));
			break;
		}
		if (pkttype == PACKET_OUTGOING)
			continue;
		if (arp_parse_syn(frame, len, mac, ip) == 0) {
			learn(r, AF_INET, ip, mac);
			continue;
		}
		if (ndp_parse_syn(frame, len, mac, ip) == 0) {
			learn(r, AF_INET6, ip, mac);
			continue;
		}
		if (len > 13 && frame[12] == 0x86 && frame[13] == 0xdd) {
			answer_ns(r, frame, len);
			continue;
		}
		if (arp_parse(frame, len, &p) || arp_classify(&p, r->ip) != ARP_ANSWER)
			continue;
		learn(r, AF_INET, p.spa, p.sha);
		rlen = arp_build_reply(&p, r->vmac, r->ip, reply, sizeof(reply));
		ret = resp_socket_send(fd, r->ifindex, reply, rlen);
		if (ret)
			log_error("net: arp reply: %s", strerror(-ret));
		else
			r->arp_answered++;
	}
}

void resp_init(struct responder *r, struct loop *l, struct nl_sock *req, const uint8_t ip[4],
	       uint16_t port, const uint8_t vmac[6])
{
	memset(r, 0, sizeof(*r));
	r->loop = l;
	r->req = req;
	memcpy(r->ip, ip, 4);
	r->port = port;
	memcpy(r->vmac, vmac, 6);
	r->fd = -1;
}

int resp_ensure(struct responder *r, int ifindex, int v6)
{
	char err[256];
	int nfd, ret;

	if (r->fd >= 0 && r->ifindex == ifindex && r->v6 == v6)
		return 0;
	close_fd(r);
	if (!ifindex)
		return 0;
	nfd = resp_socket_open(ifindex, r->ip, r->port, v6, err, sizeof(err));
	if (nfd < 0) {
		log_error("net: %s", err);
		return nfd;
	}
	if ((ret = loop_add(r->loop, nfd, LOOP_READABLE, on_frame, r))) {
		close(nfd);
		log_error("net: arp socket: %s", strerror(-ret));
		return ret;
	}
	r->fd = nfd;
	r->ifindex = ifindex;
	r->v6 = v6;
	return 0;
}

void resp_close(struct responder *r)
{
	close_fd(r);
}
