/* The fuzzers' invariant check: on violation, say which (file, line, the
 * condition) and abort, so libFuzzer saves the input that broke it. */
#ifndef IMDS_FUZZ_CHECK_H
#define IMDS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                \
			abort();                                                       \
		}                                                                      \
	} while (0)

#endif
