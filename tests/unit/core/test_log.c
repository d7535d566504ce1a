/* log: the ring of the last error lines `imds-server diag` shows (through
 * the sidecar's status file), and the hook that rewrites that file.  The
 * lines also go to stderr, as always; the test reads only the ring. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static int hook_calls;

static void hook(void)
{
	hook_calls++;
	/* must not recurse: a hook that logs an error is not re-entered */
	log_error("from the hook %d", hook_calls);
}

/* "<YYYY-MM-DDTHH:MM:SSZ> " then the message */
static const char *msg_of(const char *line)
{
	assert_true(strlen(line) > 21);
	assert_int_equal(line[4], '-');
	assert_int_equal(line[10], 'T');
	assert_int_equal(line[19], 'Z');
	assert_int_equal(line[20], ' ');
	return line + 21;
}

static void test_ring(void **state)
{
	(void)state;
	const char *out[LOG_RECENT_MAX + 4];
	unsigned long base = log_error_count();
	assert_int_equal(base, 0);
	assert_int_equal(log_recent_errors(out, LOG_RECENT_MAX), 0);

	log_error("first %d", 1);
	assert_int_equal(log_error_count(), 1);
	assert_int_equal(log_recent_errors(out, 4), 1);
	assert_string_equal(msg_of(out[0]), "first 1");

	/* more than the ring holds: the last LOG_RECENT_MAX, oldest first */
	for (int i = 2; i <= 11; i++)
		log_error("line %d", i);
	assert_int_equal(log_error_count(), 11);
	size_t n = log_recent_errors(out, sizeof(out) / sizeof(out[0]));
	assert_int_equal(n, LOG_RECENT_MAX);
	for (size_t i = 0; i < n; i++) {
		char want[32];
		snprintf(want, sizeof(want), "line %zu", 11 - LOG_RECENT_MAX + 1 + i);
		assert_string_equal(msg_of(out[i]), want);
	}
	/* fewer asked: the newest of them */
	assert_int_equal(log_recent_errors(out, 2), 2);
	assert_string_equal(msg_of(out[0]), "line 10");
	assert_string_equal(msg_of(out[1]), "line 11");

	/* info lines are not errors */
	log_info("just info");
	assert_int_equal(log_error_count(), 11);
}

static void test_clean_and_cut(void **state)
{
	(void)state;
	const char *out[1];
	/* a control byte would forge a line of the status file */
	log_error("two\nlines\tand\x1b[31m");
	assert_int_equal(log_recent_errors(out, 1), 1);
	assert_string_equal(msg_of(out[0]), "two lines and [31m");
	char big[1000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_error("%s", big);
	assert_int_equal(log_recent_errors(out, 1), 1);
	assert_int_equal(strlen(out[0]), LOG_RECENT_LEN - 1);
}

static void test_hook(void **state)
{
	(void)state;
	unsigned long before = log_error_count();
	log_on_error(hook);
	log_error("with a hook");
	/* called once; its own error line recorded, not re-entering it */
	assert_int_equal(hook_calls, 1);
	assert_int_equal(log_error_count(), before + 2);
	const char *out[2];
	assert_int_equal(log_recent_errors(out, 2), 2);
	assert_string_equal(msg_of(out[0]), "with a hook");
	assert_string_equal(msg_of(out[1]), "from the hook 1");
	log_on_error(NULL);
	log_error("no hook");
	assert_int_equal(hook_calls, 1);
}

static struct sockaddr_storage peer4(const char *ip)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;
	a->sin_family = AF_INET;
	a->sin_port = htons(40000);
	assert_int_equal(inet_pton(AF_INET, ip, &a->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage peer6(const char *ip)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
	a->sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
	return ss;
}

/* Access lines: "<stamp> <peer> <method> <path> <status> <bytes> <us>us",
 * each with its own peer's address though the last one's text is kept. */
static void test_access_lines(void **state)
{
	(void)state;
	char path[] = "/tmp/test_log.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	log_flush();
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	struct sockaddr_storage p[] = {peer4("10.0.2.2"), peer4("10.0.2.2"), peer4("10.0.2.3"),
				       peer6("fd00:ec2::2"), peer6("::ffff:10.0.2.2"),
				       peer6("fd00:ec2::3"), peer4("10.0.2.2")};
	const char *want[] = {"10.0.2.2", "10.0.2.2", "10.0.2.3", "fd00:ec2::2",
			      "10.0.2.2", "fd00:ec2::3", "10.0.2.2", "-"};
	size_t n = sizeof(p) / sizeof(p[0]);
	for (size_t i = 0; i <= n; i++)
		log_access(i < n ? &p[i] : NULL, "GET", 3, "/v1/meta-data", 13, (int)(i % 2), 200, i,
			   1000 + i);
	log_flush();
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	char buf[4096];
	ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	assert_true(got > 0);
	buf[got] = '\0';
	char *line = buf;
	for (size_t i = 0; i <= n; i++) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		char exp[128];
		snprintf(exp, sizeof(exp), "%s GET /v1/meta-data 200 %zu %zuus", want[i], i, 1000 + i);
		if (strcmp(msg_of(line), exp) != 0)
			fail_msg("line %zu: \"%s\", want \"%s\"", i, msg_of(line), exp);
		line = nl + 1;
	}
	assert_string_equal(line, "");
}

/* The access line's method and path as the log writes them, the slow way:
 * bytes outside 0x21..0x7e and '\' as \xHH, cut at max with "...". */
static void clean_ref(char *out, const unsigned char *s, size_t n, size_t max)
{
	size_t o = 0;
	if (n == 0) {
		strcpy(out, "-");
		return;
	}
	for (size_t i = 0; i < n && i < max; i++) {
		if (s[i] > 0x20 && s[i] < 0x7f && s[i] != '\\')
			out[o++] = (char)s[i];
		else
			o += (size_t)sprintf(out + o, "\\x%02x", s[i]);
	}
	if (n > max)
		o += (size_t)sprintf(out + o, "...");
	out[o] = '\0';
}

/* Paths of every length to 260 (past the 200 cut), of plain bytes with
 * escaped ones at every place in and across the eight-byte words the log
 * scans, and 39 of 200 bytes all escaped (840-byte lines: whole; a 512-byte
 * line buffer once dropped them). */
static void test_access_escapes(void **state)
{
	(void)state;
	char tmp[] = "/tmp/test_log.XXXXXX";
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	unlink(tmp);
	int saved = dup(STDERR_FILENO);
	log_flush();
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	enum { N = 300 };
	unsigned plains = 0;
	static unsigned char paths[N][262];
	static size_t lens[N];
	static const unsigned char odd[] = {0x00, 0x09, 0x0a, 0x20, 0x5c, 0x7f, 0x80, 0xff, 0x21, 0x7e};
	static const char long_method[] = "M\\ETHOD\x01-LONGER-THAN-16";
	uint32_t seed = 12345;
	for (size_t k = 0; k < N; k++) {
		size_t n = k < 261 ? k : 200;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			unsigned r = seed >> 16;
			/* odd[0..8) are escaped; 0x21 and 0x7e, the plain range's ends,
			 * not; one path in four has only plain bytes */
			paths[k][i] = k >= 261			    ? odd[r % 8]
				      : r % 11 == 0 && k % 4 != 1 ? odd[r % sizeof(odd)]
				      : k % 4 == 1 && r % 7 == 0  ? odd[8 + r % 2]
								    : (unsigned char)('a' + r % 26);
		}
		lens[k] = n;
		/* GET and a path of plain bytes: said plain (as the fast parse
		 * says), copied without a look, the same line */
		int plain = k % 2 == 1;
		for (size_t i = 0; i < n; i++)
			plain &= paths[k][i] > 0x20 && paths[k][i] < 0x7f && paths[k][i] != '\\';
		plains += (unsigned)plain;
		log_access(NULL, k % 2 ? "GET" : long_method, k % 2 ? 3 : sizeof(long_method) - 1,
			   (const char *)paths[k], n, plain, 404, k, 7);
	}
	log_flush();
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)size, 0), size);
	close(fd);
	buf[size] = '\0';
	char *line = buf;
	for (size_t k = 0; k < N; k++) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		static char method[128], path[1100], exp[1300];
		clean_ref(method, (const unsigned char *)(k % 2 ? "GET" : long_method),
			  k % 2 ? 3 : sizeof(long_method) - 1, 16);
		clean_ref(path, paths[k], lens[k], 200);
		snprintf(exp, sizeof(exp), "- %s %s 404 %zu 7us", method, path, k);
		if (strcmp(msg_of(line), exp) != 0)
			fail_msg("path %zu (%zu bytes): \"%s\", want \"%s\"", k, lens[k], msg_of(line), exp);
		line = nl + 1;
	}
	assert_string_equal(line, "");
	free(buf);
	assert_true(plains > 10); /* the plain copy had lines of many lengths */
}

int main(void)
{
	log_init("test_log");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_clean_and_cut),
		cmocka_unit_test(test_hook),
		cmocka_unit_test(test_access_escapes),
		cmocka_unit_test(test_access_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
