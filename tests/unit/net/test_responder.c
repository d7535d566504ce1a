/* responder: its socket filter (classic BPF, run through l2frames.h's
 * interpreter over the ARP, SYN and IPv6 tables: what reaches user space
 * and what never does, our own answers among the latter), and the module
 * itself on a real socket in a private network namespace: a veth pair
 * stands for veth-imds and a VM's tap, frames are sent from the tap's end
 * and the answers read there, byte for byte; the neighbour entries it
 * writes (the kernel's ARP table read back with SIOCGARP), its counters,
 * and resp_ensure's reopen/close.  The filter tests moved here from
 * test_arp.c, which held them with arp's own. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_ether.h>

#include "arp.h"
#include "l2frames.h"
#include "loop.h"
#include "ndp.h"
#include "netns.h"
#include "nl.h"
#include "responder.h"

/* ---- the filter -------------------------------------------------------- */


static void test_socket_filter(void **state)
{
	(void)state;
	struct sock_filter prog[RESP_FILTER_MAX], sprog[RESP_FILTER_MAX];
	int n = resp_filter_prog(imds_ip, 0, 0, prog, RESP_FILTER_MAX);
	int sn = resp_filter_prog(imds_ip, 80, 0, sprog, RESP_FILTER_MAX);
	assert_true(n > 0 && sn > n);
	assert_int_equal(resp_filter_prog(imds_ip, 80, 0, sprog, 4), -ENOSPC);
	for (size_t i = 0; i < NFRAMES; i++) {
		const struct frame *f = &frames[i];
		struct pkt bc = {f->b, f->n, PACKET_BROADCAST, 0};
		uint32_t r = run(prog, n, &bc);
		if ((r != 0) != f->bpf)
			fail_msg("%s: filter returned %u", f->name, r);
		if (r)
			assert_true(r >= ARP_FRAME_LEN);
		/* the learner's variant: the same verdicts for ARP */
		assert_int_equal(run(sprog, sn, &bc) != 0, f->bpf);
	}
	for (size_t i = 0; i < NSYNS; i++) {
		const struct synframe *f = &syns[i];
		struct pkt pk = {f->b, f->n, PACKET_HOST, 0};
		uint32_t r = run(sprog, sn, &pk);
		if ((r != 0) != f->bpf)
			fail_msg("%s: learner's filter returned %u", f->name, r);
		if (run(prog, n, &pk))
			fail_msg("%s: passed the ARP-only filter", f->name);
		if (f->bpf)
			assert_true(r >= 34); /* both sources inside what is copied */
	}
	/* our own reply is a reply: it never passes our filter */
	uint8_t reply[64];
	struct arp_pkt p;
	assert_int_equal(arp_parse(frames[0].b, frames[0].n, &p), 0);
	assert_int_equal(arp_build_reply(&p, our_mac, imds_ip, reply, sizeof(reply)), ARP_FRAME_LEN);
	struct pkt pk = {reply, ARP_FRAME_LEN, PACKET_OUTGOING, 0};
	assert_int_equal(run(prog, n, &pk), 0);
	assert_int_equal(run(sprog, sn, &pk), 0);
}


static void test_ndp_filter(void **state)
{
	(void)state;
	struct sock_filter prog[RESP_FILTER_MAX], nprog[RESP_FILTER_MAX];
	uint8_t f[128], sn[16], tcp[20] = {0xa4, 0x10, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02};
	static const uint8_t dmac[6] = {0x02, 0xa9, 0xfe, 0, 0, 1};
	int n = resp_filter_prog(imds_ip, 80, 1, prog, RESP_FILTER_MAX);
	int nn = resp_filter_prog(imds_ip, 0, 1, nprog, RESP_FILTER_MAX);
	assert_true(n > 0 && nn > 0 && n <= RESP_FILTER_MAX);
	/* IPv4 verdicts unchanged with IPv6 on */
	for (size_t i = 0; i < NFRAMES; i++) {
		struct pkt bc = {frames[i].b, frames[i].n, PACKET_BROADCAST, 0};
		assert_int_equal(run(prog, n, &bc) != 0, frames[i].bpf);
	}
	for (size_t i = 0; i < NSYNS; i++) {
		struct pkt pk = {syns[i].b, syns[i].n, PACKET_HOST, 0};
		assert_int_equal(run(prog, n, &pk) != 0, syns[i].bpf);
	}
	for (int a = 0; a < 2; a++) {
		/* NS for ours: passed whole (options too) */
		solicited_node(ndp_imds_addr[a], sn);
		size_t k = ns_frame(f, guest_ll, sn, ndp_imds_addr[a], 1);
		struct pkt pk = {f, k, PACKET_MULTICAST, 0};
		uint32_t r = run(prog, n, &pk);
		assert_true(r >= k);
		assert_true(run(nprog, nn, &pk) >= k);
		struct ndp_ns ns;
		assert_int_equal(ndp_parse_ns(f, r < k ? r : k, &ns), 0);
		/* a SYN to ours on 80: passed; SYN-ACK, ACK, another port: not */
		k = v6frame(f, dmac, guest_ula, ndp_imds_addr[a], 6, 64, tcp, sizeof(tcp));
		pk = (struct pkt){f, k, PACKET_HOST, 0};
		r = run(prog, n, &pk);
		assert_true(r >= 54 + 14);
		assert_int_equal(run(nprog, nn, &pk), 0); /* no learner without a port */
		for (int v = 0; v < 3; v++) {
			uint8_t t2[20];
			memcpy(t2, tcp, 20);
			if (v == 0)
				t2[13] = 0x12; /* SYN-ACK */
			else if (v == 1)
				t2[13] = 0x10; /* ACK */
			else
				t2[3] = 81;
			k = v6frame(f, dmac, guest_ula, ndp_imds_addr[a], 6, 64, t2, sizeof(t2));
			pk = (struct pkt){f, k, PACKET_HOST, 0};
			assert_int_equal(run(prog, n, &pk), 0);
		}
	}
	/* NS for another address, NA, SYN to another address, UDP, an
	 * extension header: not passed */
	solicited_node(guest_ula, sn);
	size_t k = ns_frame(f, guest_ll, sn, guest_ula, 1);
	struct pkt pk = {f, k, PACKET_MULTICAST, 0};
	assert_int_equal(run(prog, n, &pk), 0);
	k = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	f[54] = 136;
	assert_int_equal(run(prog, n, &pk), 0);
	k = v6frame(f, dmac, guest_ula, guest_ll, 6, 64, tcp, sizeof(tcp));
	pk = (struct pkt){f, k, PACKET_HOST, 0};
	assert_int_equal(run(prog, n, &pk), 0);
	k = v6frame(f, dmac, guest_ula, ndp_imds_global, 17, 64, tcp, sizeof(tcp));
	assert_int_equal(run(prog, n, &pk), 0);
	k = v6frame(f, dmac, guest_ula, ndp_imds_global, 0, 64, tcp, sizeof(tcp));
	assert_int_equal(run(prog, n, &pk), 0);
	/* IPv6 off: no IPv6 frame at all */
	struct sock_filter p4[RESP_FILTER_MAX];
	int n4 = resp_filter_prog(imds_ip, 80, 0, p4, RESP_FILTER_MAX);
	solicited_node(ndp_imds_global, sn);
	k = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	pk = (struct pkt){f, k, PACKET_MULTICAST, 0};
	assert_int_equal(run(p4, n4, &pk), 0);
	/* our own advertisement never passes */
	struct ndp_ns ns;
	uint8_t na[NDP_NA_LEN];
	k = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	assert_int_equal(ndp_parse_ns(f, k, &ns), 0);
	assert_int_equal(ndp_build_na(&ns, our_mac, na, sizeof(na)), NDP_NA_LEN);
	pk = (struct pkt){na, NDP_NA_LEN, PACKET_OUTGOING, 0};
	assert_int_equal(run(prog, n, &pk), 0);
}


/* ---- the module on a real socket ---------------------------------------- */

struct rig {
	struct nl_sock s;
	struct loop *l;
	struct responder r;
	int veth, tap; /* ifindexes: veth-imds, and the VM's tap end */
	int fd;        /* an AF_PACKET socket on the tap end: the VM */
};

static void rig_up(struct rig *g)
{
	char err[256];
	struct nl_link k;
	struct nl_link_set up = NL_LINK_SET_INIT;

	netns_private();
	nl_sock_init(&g->s);
	if (nl_open(&g->s, NULL, 0, err, sizeof(err)))
		fail_msg("netlink: %s", err);
	if (nl_veth_add(&g->s, "veth-imds", "tap0", 1500, our_mac, vm_mac, err, sizeof(err)))
		fail_msg("veth: %s", err);
	assert_int_equal(nl_get_link(&g->s, "veth-imds", &k, err, sizeof(err)), 0);
	g->veth = k.ifindex;
	assert_int_equal(nl_get_link(&g->s, "tap0", &k, err, sizeof(err)), 0);
	g->tap = k.ifindex;
	up.up = 1;
	up.addr_gen_none = 1; /* no link-local, no DAD of ours on the wire */
	assert_int_equal(nl_link_set(&g->s, g->veth, &up, err, sizeof(err)), 0);
	assert_int_equal(nl_link_set(&g->s, g->tap, &up, err, sizeof(err)), 0);

	g->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	assert_true(g->fd >= 0);
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				  .sll_ifindex = g->tap};
	assert_int_equal(bind(g->fd, (struct sockaddr *)&sll, sizeof(sll)), 0);

	g->l = loop_new(16);
	assert_non_null(g->l);
	resp_init(&g->r, g->l, &g->s, imds_ip, 80, our_mac);
}

static void rig_down(struct rig *g)
{
	resp_close(&g->r);
	loop_free(g->l);
	close(g->fd);
	nl_close(&g->s);
}

/* The VM sends frame on its tap; the loop runs until *counter moved or a
 * second passed.  What the responder did with it. */
static void vm_send(struct rig *g, const uint8_t *frame, size_t len)
{
	uint8_t b[128] = {0};
	size_t n = len < 60 ? 60 : len; /* padded as on the wire */
	memcpy(b, frame, len);
	assert_int_equal(send(g->fd, b, n, 0), (ssize_t)n);
}

static void pump(struct rig *g, const unsigned long long *counter, unsigned long long want)
{
	for (int i = 0; i < 100 && *counter < want; i++)
		assert_true(loop_once(g->l, 10) >= 0);
	/* and a little more: whatever else it would do, it has done */
	for (int i = 0; i < 5; i++)
		assert_true(loop_once(g->l, 5) >= 0);
}

/* The next frame the VM receives with ethertype type (its own sends, seen
 * as outgoing, skipped): its length, or 0 when none came in 300 ms. */
static size_t vm_recv(struct rig *g, uint16_t type, uint8_t *out, size_t cap)
{
	for (int i = 0; i < 30; i++) {
		struct pollfd p = {g->fd, POLLIN, 0};
		if (poll(&p, 1, 10) <= 0)
			continue;
		struct sockaddr_ll sll;
		socklen_t sl = sizeof(sll);
		ssize_t n = recvfrom(g->fd, out, cap, 0, (struct sockaddr *)&sll, &sl);
		assert_true(n >= 0);
		if (sll.sll_pkttype == PACKET_OUTGOING || n < 14 || (out[12] << 8 | out[13]) != type)
			continue;
		return (size_t)n;
	}
	return 0;
}

/* The kernel's ARP entry for ip on veth-imds (SIOCGARP): 1 with its MAC. */
static int kernel_arp(const uint8_t ip[4], uint8_t mac[6])
{
	struct arpreq req = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&req.arp_pa;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;
	assert_true(fd >= 0);
	sin->sin_family = AF_INET;
	memcpy(&sin->sin_addr, ip, 4);
	snprintf(req.arp_dev, sizeof(req.arp_dev), "veth-imds");
	ret = ioctl(fd, SIOCGARP, &req);
	close(fd);
	if (ret)
		return 0;
	memcpy(mac, req.arp_ha.sa_data, 6);
	return 1;
}

static void test_answers_arp(void **state)
{
	(void)state;
	struct rig g;
	uint8_t got[128], want[ARP_FRAME_LEN], mac[6];
	static const uint8_t guest[4] = {169, 254, 10, 20};
	struct arp_pkt p;

	rig_up(&g);
	assert_int_equal(resp_ensure(&g.r, g.veth, 0), 0);
	assert_true(g.r.fd >= 0);
	assert_int_equal(g.r.ifindex, g.veth);

	/* a request for .254 from the VM: answered, the exact reply */
	vm_send(&g, frames[0].b, frames[0].n);
	pump(&g, &g.r.arp_answered, 1);
	assert_int_equal(g.r.arp_answered, 1);
	assert_int_equal(arp_parse(frames[0].b, frames[0].n, &p), 0);
	assert_int_equal(arp_build_reply(&p, our_mac, imds_ip, want, sizeof(want)), ARP_FRAME_LEN);
	size_t n = vm_recv(&g, 0x0806, got, sizeof(got));
	assert_true(n >= ARP_FRAME_LEN);
	assert_memory_equal(got, want, ARP_FRAME_LEN);
	/* the requester's neighbour entry, written once */
	assert_int_equal(g.r.neigh_written, 1);
	assert_true(kernel_arp(guest, mac));
	assert_memory_equal(mac, vm_mac, 6);
	vm_send(&g, frames[0].b, frames[0].n);
	pump(&g, &g.r.arp_answered, 2);
	assert_int_equal(g.r.arp_answered, 2);
	assert_int_equal(g.r.neigh_written, 1);
	assert_true(vm_recv(&g, 0x0806, got, sizeof(got)) >= ARP_FRAME_LEN);

	/* refused: an announcement, a bad sender, a reply, another target,
	 * then a request again, and only that one answered */
	for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++)
		if (frames[i].parse == 0 && frames[i].verdict != ARP_ANSWER)
			vm_send(&g, frames[i].b, frames[i].n);
	vm_send(&g, frames[1].b, frames[1].n); /* from 10.0.2.2 */
	pump(&g, &g.r.arp_answered, 3);
	assert_int_equal(g.r.arp_answered, 3);
	n = vm_recv(&g, 0x0806, got, sizeof(got));
	assert_true(n >= ARP_FRAME_LEN);
	static const uint8_t masq[4] = {10, 0, 2, 2};
	assert_memory_equal(got + 38, masq, 4); /* the answer to 10.0.2.2, no other */
	assert_int_equal(vm_recv(&g, 0x0806, got, sizeof(got)), 0);
	assert_int_equal(g.r.neigh_written, 2);

	/* a SYN from a new source teaches its MAC: a third entry, no answer */
	uint8_t syn[80];
	memcpy(syn, syns[0].b, syns[0].n);
	syn[26 + 3] = 9; /* from 10.0.2.9 */
	vm_send(&g, syn, syns[0].n);
	pump(&g, &g.r.neigh_written, 3);
	assert_int_equal(g.r.neigh_written, 3);
	static const uint8_t nine[4] = {10, 0, 2, 9};
	assert_true(kernel_arp(nine, mac));
	assert_memory_equal(mac, vm_mac, 6);
	assert_int_equal(g.r.arp_answered, 3);
	/* IPv6 off: a solicitation is not answered */
	uint8_t f[128], sn[16];
	solicited_node(ndp_imds_global, sn);
	size_t k = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	vm_send(&g, f, k);
	pump(&g, &g.r.ndp_answered, 1);
	assert_int_equal(g.r.ndp_answered, 0);
	assert_int_equal(vm_recv(&g, 0x86dd, got, sizeof(got)), 0);
	rig_down(&g);
}

static void test_answers_ndp(void **state)
{
	(void)state;
	struct rig g;
	uint8_t f[128], sn[16], got[128], want[NDP_NA_LEN];
	struct ndp_ns ns;

	rig_up(&g);
	assert_int_equal(resp_ensure(&g.r, g.veth, 1), 0);
	for (int a = 0; a < 2; a++) {
		solicited_node(ndp_imds_addr[a], sn);
		size_t k = ns_frame(f, guest_ll, sn, ndp_imds_addr[a], 1);
		vm_send(&g, f, k);
		pump(&g, &g.r.ndp_answered, (unsigned long long)a + 1);
		assert_int_equal(g.r.ndp_answered, a + 1);
		assert_int_equal(ndp_parse_ns(f, k, &ns), 0);
		assert_int_equal(ndp_build_na(&ns, our_mac, want, sizeof(want)), NDP_NA_LEN);
		size_t n = vm_recv(&g, 0x86dd, got, sizeof(got));
		assert_int_equal(n, NDP_NA_LEN);
		assert_memory_equal(got, want, NDP_NA_LEN);
	}
	/* one neighbour entry for the guest's link-local: the same pair once */
	assert_int_equal(g.r.neigh_written, 1);
	/* DAD (from ::) answered to all nodes, nothing learned */
	static const uint8_t any[16];
	solicited_node(ndp_imds_global, sn);
	size_t k = ns_frame(f, any, sn, ndp_imds_global, 0);
	vm_send(&g, f, k);
	pump(&g, &g.r.ndp_answered, 3);
	assert_int_equal(g.r.ndp_answered, 3);
	assert_int_equal(vm_recv(&g, 0x86dd, got, sizeof(got)), NDP_NA_LEN);
	assert_int_equal(got[0], 0x33);
	assert_int_equal(g.r.neigh_written, 1);
	/* refused: a bad checksum, hop limit 64, another target */
	k = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	f[57] ^= 1;
	vm_send(&g, f, k);
	k = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	f[21] = 64;
	vm_send(&g, f, k);
	solicited_node(guest_ula, sn);
	k = ns_frame(f, guest_ll, sn, guest_ula, 1);
	vm_send(&g, f, k);
	pump(&g, &g.r.ndp_answered, 4);
	assert_int_equal(g.r.ndp_answered, 3);
	assert_int_equal(vm_recv(&g, 0x86dd, got, sizeof(got)), 0);
	/* an IPv6 SYN from the guest's ULA: learned, not answered */
	uint8_t tcp[20] = {0xa4, 0x10, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02};
	k = v6frame(f, our_mac, guest_ula, ndp_imds_global, 6, 64, tcp, sizeof(tcp));
	vm_send(&g, f, k);
	pump(&g, &g.r.neigh_written, 2);
	assert_int_equal(g.r.neigh_written, 2);
	assert_int_equal(g.r.ndp_answered, 3);
	rig_down(&g);
}

/* resp_ensure: the same arguments keep the socket; IPv6 switched reopens
 * it with the other filter; ifindex 0 closes; a device that is not there
 * is an error, and no socket. */
static void test_ensure(void **state)
{
	(void)state;
	struct rig g;
	rig_up(&g);
	assert_int_equal(resp_ensure(&g.r, g.veth, 1), 0);
	int fd = g.r.fd;
	assert_true(fd >= 0);
	assert_int_equal(resp_ensure(&g.r, g.veth, 1), 0);
	assert_int_equal(g.r.fd, fd);
	assert_int_equal(resp_ensure(&g.r, g.veth, 0), 0);
	assert_true(g.r.fd >= 0);
	assert_int_equal(g.r.v6, 0);
	/* the new socket is IPv4 only: an NS goes unanswered */
	uint8_t f[128], sn[16], got[128];
	solicited_node(ndp_imds_global, sn);
	size_t k = ns_frame(f, guest_ll, sn, ndp_imds_global, 1);
	vm_send(&g, f, k);
	pump(&g, &g.r.ndp_answered, 1);
	assert_int_equal(g.r.ndp_answered, 0);
	assert_int_equal(vm_recv(&g, 0x86dd, got, sizeof(got)), 0);
	assert_int_equal(resp_ensure(&g.r, 0, 0), 0);
	assert_int_equal(g.r.fd, -1);
	assert_int_equal(g.r.ifindex, 0);
	/* nothing answers now */
	vm_send(&g, frames[0].b, frames[0].n);
	pump(&g, &g.r.arp_answered, 1);
	assert_int_equal(g.r.arp_answered, 0);
	assert_int_equal(resp_ensure(&g.r, 999999, 0), -ENODEV);
	assert_int_equal(g.r.fd, -1);
	rig_down(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_socket_filter),
		cmocka_unit_test(test_ndp_filter),
		cmocka_unit_test(test_answers_arp),
		cmocka_unit_test(test_answers_ndp),
		cmocka_unit_test(test_ensure),
	};
	return cmocka_run_group_tests_name("responder", tests, NULL, NULL);
}
