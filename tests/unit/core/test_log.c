/* log: the ring of the last error lines `imds-server diag` shows (through
 * the sidecar's status file), and the hook that rewrites that file.  The
 * lines also go to stderr, as always; the test reads only the ring. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

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

int main(void)
{
	log_init("test_log");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_clean_and_cut),
		cmocka_unit_test(test_hook),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
