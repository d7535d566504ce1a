#include "rate.h"

#define MICRO UINT64_C(1000000)

void rate_init(struct rate *r, unsigned per_sec, unsigned burst, uint64_t now_us)
{
	r->per_sec = per_sec;
	r->cap = (uint64_t)burst * MICRO;
	r->tokens = r->cap; /* start full: a booting guest fetches in a burst */
	r->last_us = now_us;
}

int rate_take(struct rate *r, uint64_t now_us)
{
	if (!r->per_sec)
		return 1;
	if (now_us > r->last_us) {
		uint64_t dt = now_us - r->last_us;
		/* Past a full refill the exact time no longer matters; capping dt
		 * first keeps dt * per_sec far from overflow. */
		uint64_t full = r->cap / r->per_sec + 1;
		if (dt > full)
			dt = full;
		r->tokens += dt * r->per_sec;
		if (r->tokens > r->cap)
			r->tokens = r->cap;
		r->last_us = now_us;
	}
	if (r->tokens < MICRO)
		return 0;
	r->tokens -= MICRO;
	return 1;
}
