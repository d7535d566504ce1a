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
 *                                difference is the servers' work alone */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int raw = argc == 4 && strcmp(argv[2], "--raw") == 0;
	if (argc != 3 && !raw) {
		fprintf(stderr, "usage: floor PORT BODY-FILE | floor PORT --raw RESPONSE-FILE\n");
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
		int n = epoll_wait(ep, evs, 256, -1);
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
