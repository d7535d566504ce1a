/* str: a span of bytes the webhook reads from a review (not NUL-terminated;
 * p == NULL: absent, which differs from present and empty). */
#ifndef IMDS_WH_STR_H
#define IMDS_WH_STR_H

#include <stddef.h>
#include <string.h>

struct str {
	const char *p; /* NULL: absent */
	size_t n;
};

static inline int str_is(struct str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.p && s.n == n && memcmp(s.p, lit, n) == 0;
}

#endif
