/* addr: the listen-address parser (every port string up to six digits,
 * hosts of each form and their refusals), the printers, and the hop
 * limit read back from real sockets. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"

/* What addr_parse gave, printed back: "4 A.B.C.D port", "6 V6 port", or
 * the error. */
static const char *parsed(const char *s, char *out, size_t cap)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	char ip[INET6_ADDRSTRLEN];
	int r = addr_parse(s, &ss, &len);

	if (r < 0) {
		snprintf(out, cap, "error %d", r);
		return out;
	}
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
		assert_int_equal(len, sizeof(*s4));
		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(out, cap, "4 %s %u", ip, ntohs(s4->sin_port));
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
		assert_int_equal(ss.ss_family, AF_INET6);
		assert_int_equal(len, sizeof(*s6));
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(out, cap, "6 %s %u", ip, ntohs(s6->sin6_port));
	}
	return out;
}

static void test_parse_table(void **state)
{
	(void)state;
	static const struct {
		const char *in, *want;
	} t[] = {
		{"127.0.0.1:8080", "4 127.0.0.1 8080"},
		{"169.254.169.254:80", "4 169.254.169.254 80"},
		{"0.0.0.0:0", "4 0.0.0.0 0"}, /* 0: the kernel picks the port */
		{"[::1]:443", "6 ::1 443"},
		{"[fe80::1]:80", "6 fe80::1 80"},
		{"[::ffff:10.0.0.1]:80", "6 ::ffff:10.0.0.1 80"},
		{":9000", "6 :: 9000"}, /* any address, dual-stack */
		{":65535", "6 :: 65535"},
		{"1.2.3.4:00080", "4 1.2.3.4 80"},
		/* refused */
		{"", "error -22"},
		{"127.0.0.1", "error -22"},    /* no port */
		{"127.0.0.1:", "error -22"},   /* empty port */
		{":", "error -22"},
		{"127.0.0.1:65536", "error -22"},
		{"127.0.0.1:000080", "error -22"}, /* six digits */
		{"127.0.0.1:+80", "error -22"},
		{"127.0.0.1:-1", "error -22"},
		{"127.0.0.1:8 0", "error -22"},
		{"127.0.0.1:0x50", "error -22"},
		{"::1:80", "error -22"},       /* v6 needs brackets */
		{"[::1:80", "error -22"},
		{"::1]:80", "error -22"},
		{"[]:80", "error -22"},
		{"[1.2.3.4]:80", "error -22"},
		{"[::1] :80", "error -22"},
		{"256.0.0.1:80", "error -22"},
		{"1.2.3:80", "error -22"},
		{"localhost:80", "error -22"}, /* no name lookups */
		{" 1.2.3.4:80", "error -22"},
		{"1.2.3.4 :80", "error -22"},
	};
	char out[128];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		parsed(t[i].in, out, sizeof(out));
		if (strcmp(out, t[i].want) != 0)
			fail_msg("addr_parse(\"%s\") = \"%s\", want \"%s\"", t[i].in, out, t[i].want);
	}
}

/* Every port string of one to six digits: accepted exactly when it has
 * at most five digits and a value up to 65535. */
static void test_parse_every_port(void **state)
{
	(void)state;
	char in[32], out[128], want[64];

	for (int digits = 1; digits <= 6; digits++) {
		long end = 1;
		for (int d = 0; d < digits; d++)
			end *= 10;
		/* all of them up to five digits; a sample of the six-digit ones */
		long step = digits == 6 ? 997 : 1;
		for (long v = 0; v < end; v += step) {
			snprintf(in, sizeof(in), "10.1.2.3:%0*ld", digits, v);
			if (digits <= 5 && v <= 65535)
				snprintf(want, sizeof(want), "4 10.1.2.3 %ld", v);
			else
				snprintf(want, sizeof(want), "error -22");
			parsed(in, out, sizeof(out));
			if (strcmp(out, want) != 0)
				fail_msg("addr_parse(\"%s\") = \"%s\", want \"%s\"", in, out, want);
		}
	}
}

/* A host part of 63 bytes is the longest the parser copies; longer is
 * refused, not truncated. */
static void test_parse_long_host(void **state)
{
	(void)state;
	char in[256], out[128];

	memset(in, 0, sizeof(in));
	strcpy(in, "[0000:0000:0000:0000:0000:0000:0000:0001]:80");
	assert_string_equal(parsed(in, out, sizeof(out)), "6 ::1 80");
	for (size_t n = 60; n < 200; n++) {
		memset(in, '1', n);
		snprintf(in + n, sizeof(in) - n, ":80");
		assert_string_equal(parsed(in, out, sizeof(out)), "error -22");
	}
}

static void test_ntop(void **state)
{
	(void)state;
	struct sockaddr_storage ss;
	char buf[INET6_ADDRSTRLEN];

	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	s4->sin_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.7", &s4->sin_addr);
	assert_string_equal(addr_ntop(&ss, buf, sizeof(buf)), "192.0.2.7");

	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	s6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::5", &s6->sin6_addr);
	assert_string_equal(addr_ntop(&ss, buf, sizeof(buf)), "2001:db8::5");
	/* a v4-mapped peer of a dual-stack listener is shown as v4 */
	inet_pton(AF_INET6, "::ffff:198.51.100.9", &s6->sin6_addr);
	assert_string_equal(addr_ntop(&ss, buf, sizeof(buf)), "198.51.100.9");

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNIX;
	assert_string_equal(addr_ntop(&ss, buf, sizeof(buf)), "-");
	/* a buffer too small for the address gives "-", cut to fit */
	s4->sin_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.77", &s4->sin_addr);
	char tiny[4];
	assert_string_equal(addr_ntop(&ss, tiny, sizeof(tiny)), "-");
	/* the IPv4 text is built by hand: as inet_ntop's for every octet value
	 * in every place, and an exact fit (16 bytes) still fits */
	for (unsigned v = 0; v < 256; v++) {
		for (int at = 0; at < 4; at++) {
			unsigned char q[4] = {10, 0, 200, 9};
			q[at] = (unsigned char)v;
			memcpy(&s4->sin_addr, q, 4);
			char want[INET_ADDRSTRLEN];
			assert_non_null(inet_ntop(AF_INET, q, want, sizeof(want)));
			assert_string_equal(addr_ntop(&ss, buf, sizeof(buf)), want);
		}
	}
	inet_pton(AF_INET, "255.255.255.255", &s4->sin_addr);
	char fit[16], short1[15];
	assert_string_equal(addr_ntop(&ss, fit, sizeof(fit)), "255.255.255.255");
	assert_string_equal(addr_ntop(&ss, short1, sizeof(short1)), "-");
	/* a v4-mapped peer and a buffer too small: "-", never NULL */
	memset(&ss, 0, sizeof(ss));
	s6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:198.51.100.9", &s6->sin6_addr);
	assert_string_equal(addr_ntop(&ss, tiny, sizeof(tiny)), "-");
}

/* Bound sockets print as the log shows them: "IP:PORT", "[V6]:PORT". */
static void test_local(void **state)
{
	(void)state;
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[64], want[64];

	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(addr_parse("127.0.0.1:0", &ss, &len), 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&ss, len), 0);
	len = sizeof(ss);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	snprintf(want, sizeof(want), "127.0.0.1:%u",
		 ntohs(((struct sockaddr_in *)&ss)->sin_port));
	assert_string_equal(addr_local(fd, buf, sizeof(buf)), want);
	close(fd);

	fd = socket(AF_INET6, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(addr_parse(":0", &ss, &len), 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&ss, len), 0);
	len = sizeof(ss);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	snprintf(want, sizeof(want), "[::]:%u", ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	assert_string_equal(addr_local(fd, buf, sizeof(buf)), want);
	close(fd);

	/* not a socket */
	assert_string_equal(addr_local(-1, buf, sizeof(buf)), "-");
}

static int ttl_of(int fd, int level, int opt)
{
	int v = -1;
	socklen_t l = sizeof(v);
	assert_int_equal(getsockopt(fd, level, opt, &v, &l), 0);
	return v;
}

/* The TTL (v4) and the unicast hop limit (v6, and the TTL of a dual-stack
 * socket's v4-mapped traffic) read back as set, across the whole range. */
static void test_set_hops(void **state)
{
	(void)state;
	int f4 = socket(AF_INET, SOCK_STREAM, 0), f6 = socket(AF_INET6, SOCK_STREAM, 0);
	int u4 = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(f4 >= 0 && f6 >= 0 && u4 >= 0);

	for (unsigned h = 1; h <= 64; h++) {
		assert_int_equal(addr_set_hops(f4, h), 0);
		assert_int_equal(ttl_of(f4, IPPROTO_IP, IP_TTL), (int)h);
		assert_int_equal(addr_set_hops(u4, h), 0);
		assert_int_equal(ttl_of(u4, IPPROTO_IP, IP_TTL), (int)h);
		assert_int_equal(addr_set_hops(f6, h), 0);
		assert_int_equal(ttl_of(f6, IPPROTO_IPV6, IPV6_UNICAST_HOPS), (int)h);
		assert_int_equal(ttl_of(f6, IPPROTO_IP, IP_TTL), (int)h);
	}
	/* the kernel's own limit: a TTL of 0 or past 255 is refused */
	assert_int_equal(addr_set_hops(f4, 0), -EINVAL);
	assert_int_equal(addr_set_hops(f4, 256), -EINVAL);
	assert_int_equal(addr_set_hops(f6, 256), -EINVAL);
	/* not a socket */
	assert_int_equal(addr_set_hops(-1, 1), -EBADF);
	close(f4);
	close(f6);
	close(u4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_parse_every_port),
		cmocka_unit_test(test_parse_long_host),
		cmocka_unit_test(test_ntop),
		cmocka_unit_test(test_local),
		cmocka_unit_test(test_set_hops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
