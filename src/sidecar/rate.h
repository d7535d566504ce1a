/* rate: one token bucket for the whole sidecar.
 *
 * Tokens are kept in millionths so that refills at any rate are exact in
 * integer arithmetic; time comes from the caller (testable, no clock here). */
#ifndef IMDS_RATE_H
#define IMDS_RATE_H

#include <stdint.h>

struct rate {
	uint64_t per_sec;  /* 0: unlimited */
	uint64_t cap;      /* burst, in millionths */
	uint64_t tokens;   /* in millionths */
	uint64_t last_us;
};

void rate_init(struct rate *r, unsigned per_sec, unsigned burst, uint64_t now_us);
/* 1: allowed (a token was taken); 0: over the limit. */
int rate_take(struct rate *r, uint64_t now_us);

#endif
