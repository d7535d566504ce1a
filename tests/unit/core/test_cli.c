/* cli: both forms of a flag, the next flag not taken for a value, a flag
 * that only starts like another; a flag with no value left exits 2. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static void test_forms(void **state)
{
	(void)state;
	char *argv[] = {"prog", "--pods-dir", "/a", "--pods-dir=/b", "--pods-dirx=/c", "--pods-dir=",
			"--rescan-ms", NULL};
	int argc = 7, i = 1;
	const char *v = NULL;

	assert_int_equal(cli_flag(argc, argv, &i, "prog", "--pods-dir", &v), 1);
	assert_string_equal(v, "/a");
	assert_int_equal(i, 2); /* past the value */
	i = 3;
	assert_int_equal(cli_flag(argc, argv, &i, "prog", "--pods-dir", &v), 1);
	assert_string_equal(v, "/b");
	assert_int_equal(i, 3);
	i = 4; /* only starts like it */
	v = NULL;
	assert_int_equal(cli_flag(argc, argv, &i, "prog", "--pods-dir", &v), 0);
	assert_null(v);
	i = 5; /* an empty value is a value: the caller checks it */
	assert_int_equal(cli_flag(argc, argv, &i, "prog", "--pods-dir", &v), 1);
	assert_string_equal(v, "");
	i = 1; /* another flag's name */
	assert_int_equal(cli_flag(argc, argv, &i, "prog", "--rescan-ms", &v), 0);
}

static void test_missing_value_exits_2(void **state)
{
	(void)state;
	char *argv[] = {"prog", "--rescan-ms", NULL};
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int i = 1;
		const char *v;
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2);
		cli_flag(2, argv, &i, "prog", "--rescan-ms", &v);
		_exit(0); /* not reached */
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_missing_value_exits_2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
