#include "quantity.h"

#include <string.h>

int qty_parse(const char *s, size_t n, struct qty *q)
{
	size_t i = 0, sig = 0;
	int frac = -1, any = 0;
	memset(q, 0, sizeof(*q));
	if (i < n && s[i] == '+')
		i++;
	for (; i < n; i++) {
		if (s[i] == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (s[i] < '0' || s[i] > '9')
			break;
		any = 1;
		/* Leading zeros cost nothing; 30 significant digits fit. */
		if ((q->m || s[i] != '0') && ++sig > 30)
			return -1;
		q->m = q->m * 10 + (s[i] - '0');
		if (frac >= 0)
			frac++;
	}
	if (!any)
		return -1;
	if (frac > 0)
		q->e10 -= frac;
	const char *suf = s + i;
	size_t sn = n - i;
	static const struct {
		const char *s;
		int e10, e2;
	} sufs[] = {
		{"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},   {"k", 3, 0},    {"M", 6, 0},
		{"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},   {"Ki", 0, 10},  {"Mi", 0, 20},
		{"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
	};
	for (size_t k = 0; k < sizeof(sufs) / sizeof(sufs[0]); k++) {
		if (strlen(sufs[k].s) == sn && memcmp(sufs[k].s, suf, sn) == 0) {
			q->e10 += sufs[k].e10;
			q->e2 += sufs[k].e2;
			return 0;
		}
	}
	/* A decimal exponent: e3, E-2, e+6. */
	if (sn >= 2 && (suf[0] == 'e' || suf[0] == 'E')) {
		size_t j = 1;
		int neg = 0, e = 0;
		if (suf[j] == '+' || suf[j] == '-')
			neg = suf[j++] == '-';
		if (j == sn)
			return -1;
		for (; j < sn; j++) {
			if (suf[j] < '0' || suf[j] > '9' || e > 1000)
				return -1;
			e = e * 10 + (suf[j] - '0');
		}
		q->e10 += neg ? -e : e;
		return 0;
	}
	return -1;
}

/* m * 2^a * 5^b with m coprime to 10: one form per value. */
static void qty_norm(const struct qty *q, __int128 *m, int *a, int *b)
{
	*m = q->m;
	*a = q->e10 + q->e2;
	*b = q->e10;
	if (*m == 0) {
		*a = *b = 0;
		return;
	}
	while (*m % 2 == 0) {
		*m /= 2;
		(*a)++;
	}
	while (*m % 5 == 0) {
		*m /= 5;
		(*b)++;
	}
}

int qty_eq(const struct qty *x, const struct qty *y)
{
	__int128 mx, my;
	int ax, bx, ay, by;
	qty_norm(x, &mx, &ax, &bx);
	qty_norm(y, &my, &ay, &by);
	return mx == my && ax == ay && bx == by;
}

/* In nano-units, truncated; -1 when out of range (only for configuration). */
int qty_nano(const struct qty *q, __int128 *out)
{
	__int128 v = q->m;
	int e = q->e10 + 9;
	for (; e > 0; e--)
		if (__builtin_mul_overflow(v, 10, &v))
			return -1;
	for (; e < 0; e++)
		v /= 10;
	for (int k = 0; k < q->e2; k++)
		if (__builtin_mul_overflow(v, 2, &v))
			return -1;
	*out = v;
	return 0;
}
