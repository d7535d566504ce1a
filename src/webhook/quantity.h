/* quantity: Kubernetes resource quantities ("10m", "16Mi", "1e3", "0.5"),
 * exact: 128-bit arithmetic, no floating point. */
#ifndef IMDS_WH_QUANTITY_H
#define IMDS_WH_QUANTITY_H

#include <stddef.h>

/* value = m * 10^e10 * 2^e2: exact, so "1" and "1000m" compare equal. */
struct qty {
	__int128 m;
	int e10, e2;
};

/* 0, or -1 when s[0..n) is not a quantity (or does not fit). */
int qty_parse(const char *s, size_t n, struct qty *q);
/* 1 when both are the same value ("1" and "1000m"). */
int qty_eq(const struct qty *x, const struct qty *y);
/* In nano-units, truncated; -1 when out of range. */
int qty_nano(const struct qty *q, __int128 *out);

#endif
