/* arp_flood: ARP requests for 169.254.169.254 as fast as one core sends
 * them, from inside a guest netns, and the replies counted — how many ARP
 * replies per second the sidecar's responder sustains.  Bounded: COUNT
 * requests, then QUIET_MS of silence ends it.
 *   arp_flood IFACE SENDER_IP COUNT [QUIET_MS]
 * Prints: sent replies seconds replies_per_s */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long drain(int fd)
{
	unsigned char b[128];
	long n = 0;
	for (;;) {
		ssize_t r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (r < 0)
			return n;
		if (r >= 42 && b[12] == 8 && b[13] == 6 && b[21] == 2 && b[28] == 169 && b[29] == 254 &&
		    b[30] == 169 && b[31] == 254)
			n++;
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: arp_flood IFACE SENDER_IP COUNT [QUIET_MS]\n");
		return 2;
	}
	long count = atol(argv[3]), quiet = argc > 4 ? atol(argv[4]) : 300, sent = 0, got = 0;
	unsigned ifindex = if_nametoindex(argv[1]);
	int fd = socket(AF_PACKET, SOCK_RAW, htons(0x0806)), sz = 16 << 20;
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(0x0806),
				  .sll_ifindex = (int)ifindex};
	unsigned char f[60] = {0}, mac[6];
	socklen_t sl = sizeof(sll);
	if (fd < 0 || !ifindex || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) ||
	    getsockname(fd, (struct sockaddr *)&sll, &sl)) {
		perror("arp_flood");
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	memcpy(mac, sll.sll_addr, 6);
	memset(f, 0xff, 6);
	memcpy(f + 6, mac, 6);
	memcpy(f + 12, "\x08\x06\x00\x01\x08\x00\x06\x04\x00\x01", 10);
	memcpy(f + 22, mac, 6);
	inet_pton(AF_INET, argv[2], f + 28);
	memcpy(f + 38, "\xa9\xfe\xa9\xfe", 4);
	double t0 = now(), last = t0;
	while (sent < count) {
		if (send(fd, f, sizeof(f), 0) == (ssize_t)sizeof(f))
			sent++;
		else if (errno != ENOBUFS && errno != EAGAIN)
			break;
		if ((sent & 63) == 0) {
			long d = drain(fd);
			if (d) {
				got += d;
				last = now();
			}
		}
	}
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, (int)quiet) <= 0)
			break;
		long d = drain(fd);
		got += d;
		if (d)
			last = now();
	}
	double secs = last - t0;
	printf("%ld %ld %.3f %.0f\n", sent, got, secs, secs > 0 ? (double)got / secs : 0.0);
	return 0;
}
