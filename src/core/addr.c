#include "addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"

static int parse_port(const char *p, in_port_t *port)
{
	if (!*p || strlen(p) > 5)
		return -EINVAL;
	unsigned v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
	}
	/* 0 asks the kernel for a free port (tests read it from the log). */
	if (v > 65535)
		return -EINVAL;
	*port = htons((uint16_t)v);
	return 0;
}

int addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	const char *colon = strrchr(s, ':');
	if (!colon)
		return -EINVAL;
	in_port_t port;
	if (parse_port(colon + 1, &port) < 0)
		return -EINVAL;
	size_t hlen = (size_t)(colon - s);
	char host[64];
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (hlen == 0) {
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = port;
		*len = sizeof(*s6);
		return 0;
	}
	if (host[0] == '[') {
		if (hlen < 3 || host[hlen - 1] != ']')
			return -EINVAL;
		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = port;
		*len = sizeof(*s6);
		return 0;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		return -EINVAL;
	s4->sin_family = AF_INET;
	s4->sin_port = port;
	*len = sizeof(*s4);
	return 0;
}

/* Dotted quad, as inet_ntop writes it; every access log line has one, and
 * musl's inet_ntop goes through snprintf.  NULL when it does not fit. */
static const char *ntop4(const unsigned char *q, char *buf, size_t len)
{
	struct sbuf b = SBUF_INIT(buf, len);
	for (int i = 0; i < 4; i++) {
		if (i)
			sbuf_putc(&b, '.');
		sbuf_put_u(&b, q[i]);
	}
	return b.overflow ? NULL : buf;
}

const char *addr_ntop(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const void *a = NULL;
	const unsigned char *q = NULL;
	if (ss->ss_family == AF_INET) {
		q = (const unsigned char *)&((const struct sockaddr_in *)ss)->sin_addr;
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		/* Show v4-mapped peers of a dual-stack listener as plain v4. */
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			q = &s6->sin6_addr.s6_addr[12];
		a = &s6->sin6_addr;
	}
	if (q) {
		if (ntop4(q, buf, len))
			return buf;
		a = NULL;
	}
	if (!a || !inet_ntop(ss->ss_family, a, buf, (socklen_t)len))
		snprintf(buf, len, "-");
	return buf;
}

int addr_set_hops(int fd, unsigned hops)
{
	struct sockaddr_storage ss = {0};
	socklen_t sl = sizeof(ss);
	int v = (int)hops;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return -errno;
	if (ss.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &v, sizeof(v)) < 0)
		return -errno;
	/* On an IPv6 socket this is the TTL of its v4-mapped traffic. */
	if (setsockopt(fd, IPPROTO_IP, IP_TTL, &v, sizeof(v)) < 0 && ss.ss_family == AF_INET)
		return -errno;
	return 0;
}

const char *addr_local(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss = {0}; /* filled by getsockname */
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN] = "";
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	addr_ntop(&ss, ip, sizeof(ip)); /* "-" when not an IP socket */
	in_port_t port_be = 0;
	if (ss.ss_family == AF_INET)
		port_be = ((const struct sockaddr_in *)&ss)->sin_port;
	else if (ss.ss_family == AF_INET6)
		port_be = ((const struct sockaddr_in6 *)&ss)->sin6_port;
	unsigned port = ntohs(port_be);
	snprintf(buf, len, ss.ss_family == AF_INET6 && !strchr(ip, '.') ? "[%s]:%u" : "%s:%u", ip,
		 port);
	return buf;
}
