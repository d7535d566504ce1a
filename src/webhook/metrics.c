#include "metrics.h"

/* Upper bounds in µs: admission answers are sub-millisecond; the tail
 * buckets catch a stalled machine. */
static const uint64_t bounds_us[METRICS_BUCKETS - 1] = {100, 250, 500, 1000, 2500,
							 5000, 10000, 50000, 100000};
static const char *const bound_s[METRICS_BUCKETS] = {"0.0001", "0.00025", "0.0005", "0.001",
						     "0.0025", "0.005",   "0.01",   "0.05",
						     "0.1",    "+Inf"};
static const char *const kinds[METRICS_KINDS] = {"pod", "virtualmachine", "virtualmachineinstance",
						 "other"};
static const char *const outcomes[METRICS_OUTCOMES] = {"patched", "skipped", "denied", "invalid"};

void metrics_observe(struct metrics *m, unsigned kind, unsigned outcome, uint64_t us)
{
	if (kind < METRICS_KINDS && outcome < METRICS_OUTCOMES)
		m->reviews[kind][outcome]++;
	unsigned i = 0;
	while (i < METRICS_BUCKETS - 1 && us > bounds_us[i])
		i++;
	m->bucket[i]++;
	m->count++;
	m->sum_us += us;
}

void metrics_render(const struct metrics *m, const struct metrics_tls *t, struct sbuf *b)
{
	sbuf_puts(b, "# HELP imds_webhook_reviews_total Admission reviews answered, by kind and outcome.\n"
		     "# TYPE imds_webhook_reviews_total counter\n");
	for (unsigned k = 0; k < METRICS_KINDS; k++)
		for (unsigned o = 0; o < METRICS_OUTCOMES; o++)
			sbuf_printf(b, "imds_webhook_reviews_total{kind=\"%s\",outcome=\"%s\"} %llu\n",
				    kinds[k], outcomes[o], (unsigned long long)m->reviews[k][o]);
	sbuf_puts(b, "# HELP imds_webhook_review_duration_seconds Time to answer a review.\n"
		     "# TYPE imds_webhook_review_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (unsigned i = 0; i < METRICS_BUCKETS; i++) {
		cum += m->bucket[i];
		sbuf_printf(b, "imds_webhook_review_duration_seconds_bucket{le=\"%s\"} %llu\n",
			    bound_s[i], (unsigned long long)cum);
	}
	sbuf_printf(b, "imds_webhook_review_duration_seconds_sum %llu.%06llu\n",
		    (unsigned long long)(m->sum_us / 1000000), (unsigned long long)(m->sum_us % 1000000));
	sbuf_printf(b, "imds_webhook_review_duration_seconds_count %llu\n", (unsigned long long)m->count);
	sbuf_printf(b,
		    "# HELP imds_webhook_certificate_expiry_timestamp_seconds notAfter of the serving certificate.\n"
		    "# TYPE imds_webhook_certificate_expiry_timestamp_seconds gauge\n"
		    "imds_webhook_certificate_expiry_timestamp_seconds %lld\n"
		    "# HELP imds_webhook_certificate_reloads_total Certificate reloads, by result.\n"
		    "# TYPE imds_webhook_certificate_reloads_total counter\n"
		    "imds_webhook_certificate_reloads_total{result=\"success\"} %u\n"
		    "imds_webhook_certificate_reloads_total{result=\"failure\"} %u\n"
		    "# HELP imds_webhook_tls_handshake_failures_total Failed TLS handshakes.\n"
		    "# TYPE imds_webhook_tls_handshake_failures_total counter\n"
		    "imds_webhook_tls_handshake_failures_total %u\n"
		    "# HELP imds_webhook_ready 1 once a serving certificate is loaded.\n"
		    "# TYPE imds_webhook_ready gauge\n"
		    "imds_webhook_ready %d\n",
		    (long long)t->not_after, t->reloads, t->reload_failures, t->handshake_failures,
		    t->ready);
}
