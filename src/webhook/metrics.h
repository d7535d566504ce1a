/* metrics: the webhook's Prometheus text exposition (GET /metrics). */
#ifndef IMDS_METRICS_H
#define IMDS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "sbuf.h"

#define METRICS_KINDS 4    /* pod, virtualmachine, virtualmachineinstance, other */
#define METRICS_OUTCOMES 4 /* patched, skipped, denied, invalid */
#define METRICS_BUCKETS 10

struct metrics {
	uint64_t reviews[METRICS_KINDS][METRICS_OUTCOMES];
	uint64_t bucket[METRICS_BUCKETS]; /* cumulative at render time */
	uint64_t count;
	uint64_t sum_us;
};

void metrics_observe(struct metrics *m, unsigned kind, unsigned outcome, uint64_t us);

struct metrics_tls {
	int64_t not_after;
	unsigned reloads, reload_failures, handshake_failures;
	int ready;
};

void metrics_render(const struct metrics *m, const struct metrics_tls *t, struct sbuf *b);

#endif
