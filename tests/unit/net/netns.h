/* A private network namespace for the tests that hold a module to the
 * kernel (test_responder.c, test_plumb.c): the process moves into a fresh
 * one, so nothing of the machine's own network is seen or touched.  It
 * needs root (CAP_SYS_ADMIN for unshare, CAP_NET_ADMIN/NET_RAW inside), as
 * `make test` runs; without it the test fails, saying so: it never skips.
 * Include after cmocka.h. */
#ifndef IMDS_TEST_SIDECAR_NETNS_H
#define IMDS_TEST_SIDECAR_NETNS_H

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

static inline void netns_private(void)
{
	if (geteuid() != 0)
		fail_msg("this test needs root: it unshares a private network namespace "
			 "(CLONE_NEWNET), as `make test` runs it (uid is %u)",
			 (unsigned)geteuid());
	if (unshare(CLONE_NEWNET) != 0)
		fail_msg("unshare(CLONE_NEWNET): %s (root without CAP_SYS_ADMIN?)", strerror(errno));
}

#endif
