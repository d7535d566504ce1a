/* floor: the fastest a one-core HTTP/1.1 server can answer here — an epoll
 * loop that reads, counts the requests (each ends with a blank line) and
 * writes one canned response per request, with no parsing, routing, date or
 * logging.  `make bench` prints it beside imds-server and nginx as the
 * reference of what is left to gain (bench/README.md).
 *
 *   floor PORT BODY-FILE         (listens on 127.0.0.1:PORT)
 *   floor PORT --raw RESPONSE    the whole response as it is in the file:
 *                                make bench gives it imds-server's own answer
 *                                (head and body), so that the client parses the
 *                                very bytes it parses from imds-server and the
 *                                difference is the servers' work alone
 *   ... --busy-poll US           poll without sleeping before each sleep, as
 *                                imds-server does (IMDS_BUSY_POLL_US, loop.c):
 *                                up to US microseconds, the window grown and
 *                                shrunk by haltpoll's rule, so that the floor
 *                                keeps being the floor of a server that polls */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int main(int argc, char **argv)
{
	unsigned poll_max = 0, poll = 0;
	if (argc > 2 && strcmp(argv[argc - 2], "--busy-poll") == 0) {
		poll_max = (unsigned)atoi(argv[argc - 1]);
		argc -= 2;
	}
	int raw = argc == 4 && strcmp(argv[2], "--raw") == 0;
	if (argc != 3 && !raw) {
		fprintf(stderr, "usage: floor PORT BODY-FILE | floor PORT --raw RESPONSE-FILE "
				"[--busy-poll US]\n");
		return 2;
	}
	static char body[16384], resp[17000], out[1 << 20], in[65536];
	FILE *f = fopen(argv[raw ? 3 : 2], "rb");
	size_t bl = f ? fread(body, 1, sizeof(body), f) : 0;
	if (f)
		fclose(f);
	size_t rlen;
	if (raw) {
		memcpy(resp, body, bl);
		rlen = bl;
	} else {
		int rl = snprintf(resp, sizeof(resp),
				  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n",
				  bl);
		memcpy(resp + rl, body, bl);
		rlen = (size_t)rl + bl;
	}

	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1024) < 0) {
		perror("floor: listen");
		return 1;
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = l}, evs[256];
	epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
	for (;;) {
		int n = 0;
		uint64_t t0 = poll_max ? now_us() : 0;
		while (poll && (n = epoll_wait(ep, evs, 256, 0)) == 0 && now_us() - t0 < poll)
			;
		if (n == 0) {
			n = epoll_wait(ep, evs, 256, -1);
			uint64_t waited = poll_max ? now_us() - t0 : 0;
			if (waited > poll_max)
				poll = poll / 2 < 10 ? 0 : poll / 2;
			else if (poll_max && waited > poll)
				poll = poll ? (poll * 2 < poll_max ? poll * 2 : poll_max) : 10;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == l) {
				int c;
				while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
				}
				continue;
			}
			ssize_t r = read(fd, in, sizeof(in));
			if (r <= 0) {
				close(fd);
				continue;
			}
			size_t k = 0;
			for (ssize_t j = 3; j < r; j++)
				if (in[j] == '\n' && in[j - 1] == '\r' && in[j - 2] == '\n' && in[j - 3] == '\r')
					k++;
			size_t o = 0;
			for (size_t j = 0; j < k && o + rlen <= sizeof(out); j++, o += rlen)
				memcpy(out + o, resp, rlen);
			if (o && write(fd, out, o) < 0)
				close(fd);
		}
	}
}
