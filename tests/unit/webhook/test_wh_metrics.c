/* The webhook's Prometheus exposition (src/webhook/metrics.h): counters
 * by kind and outcome, the latency histogram's buckets at their bounds
 * (cumulative when rendered), the sum in seconds, the TLS gauges. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "sbuf.h"

static char out[8192];

static const char *render(const struct metrics *m, const struct metrics_tls *t)
{
	struct sbuf b = SBUF_INIT(out, sizeof(out));
	metrics_render(m, t, &b);
	assert_false(b.overflow);
	return out;
}

/* The line whose name and labels are exactly `series`; its value. */
static const char *value_of(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
		if (strncmp(l, series, n) == 0 && l[n] == ' ')
			return l + n + 1;
		if (!strchr(l, '\n'))
			break;
	}
	fail_msg("no series %s", series);
	return NULL;
}

static void expect(const char *text, const char *series, const char *value)
{
	const char *v = value_of(text, series);
	size_t n = strlen(value);
	if (strncmp(v, value, n) != 0 || v[n] != '\n')
		fail_msg("%s: got '%.*s', want '%s'", series, (int)strcspn(v, "\n"), v, value);
}

/* Each latency lands in the first bucket whose bound it does not pass
 * (le: less or equal), and the rendered buckets are cumulative. */
static void test_buckets(void **state)
{
	(void)state;
	struct metrics m = {0};
	const struct metrics_tls t = {0};
	static const uint64_t us[] = {0, 100, 101, 250, 1000, 1001, 100000, 100001, 5000000};
	for (size_t i = 0; i < sizeof(us) / sizeof(us[0]); i++)
		metrics_observe(&m, 0, 0, us[i]);
	const char *s = render(&m, &t);
	static const char *const le[][2] = {
		{"0.0001", "2"}, {"0.00025", "4"}, {"0.0005", "4"}, {"0.001", "5"}, {"0.0025", "6"},
		{"0.005", "6"},  {"0.01", "6"},    {"0.05", "6"},   {"0.1", "7"},   {"+Inf", "9"},
	};
	for (size_t i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
		char series[96];
		snprintf(series, sizeof(series), "imds_webhook_review_duration_seconds_bucket{le=\"%s\"}", le[i][0]);
		expect(s, series, le[i][1]);
	}
	expect(s, "imds_webhook_review_duration_seconds_count", "9");
	/* 0+100+101+250+1000+1001+100000+100001+5000000 us */
	expect(s, "imds_webhook_review_duration_seconds_sum", "5.202453");
}

/* Reviews count by kind and outcome, every pair rendered (zeros too); a
 * kind or outcome out of range counts in the histogram only. */
static void test_reviews(void **state)
{
	(void)state;
	struct metrics m = {0};
	const struct metrics_tls t = {0};
	metrics_observe(&m, 0, 0, 10);
	metrics_observe(&m, 0, 0, 10);
	metrics_observe(&m, 1, 2, 10);
	metrics_observe(&m, 2, 3, 10);
	metrics_observe(&m, 3, 1, 10);
	metrics_observe(&m, METRICS_KINDS, 0, 10);
	metrics_observe(&m, 0, METRICS_OUTCOMES, 10);
	const char *s = render(&m, &t);
	expect(s, "imds_webhook_reviews_total{kind=\"pod\",outcome=\"patched\"}", "2");
	expect(s, "imds_webhook_reviews_total{kind=\"virtualmachine\",outcome=\"denied\"}", "1");
	expect(s, "imds_webhook_reviews_total{kind=\"virtualmachineinstance\",outcome=\"invalid\"}", "1");
	expect(s, "imds_webhook_reviews_total{kind=\"other\",outcome=\"skipped\"}", "1");
	expect(s, "imds_webhook_reviews_total{kind=\"pod\",outcome=\"invalid\"}", "0");
	size_t series = 0;
	for (const char *p = s; (p = strstr(p, "imds_webhook_reviews_total{")); p++)
		series++;
	assert_int_equal(series, METRICS_KINDS * METRICS_OUTCOMES);
	expect(s, "imds_webhook_review_duration_seconds_count", "7");
	expect(s, "imds_webhook_review_duration_seconds_sum", "0.000070");
}

/* The TLS side as given, and every series with its HELP and TYPE. */
static void test_tls_and_format(void **state)
{
	(void)state;
	const struct metrics m = {0};
	const struct metrics_tls t = {.not_after = 1893456000, .reloads = 3, .reload_failures = 1,
				      .handshake_failures = 7, .ready = 1};
	const char *s = render(&m, &t);
	expect(s, "imds_webhook_certificate_expiry_timestamp_seconds", "1893456000");
	expect(s, "imds_webhook_certificate_reloads_total{result=\"success\"}", "3");
	expect(s, "imds_webhook_certificate_reloads_total{result=\"failure\"}", "1");
	expect(s, "imds_webhook_tls_handshake_failures_total", "7");
	expect(s, "imds_webhook_ready", "1");
	expect(s, "imds_webhook_review_duration_seconds_sum", "0.000000");
	static const char *const families[][2] = {
		{"imds_webhook_reviews_total", "counter"},
		{"imds_webhook_review_duration_seconds", "histogram"},
		{"imds_webhook_certificate_expiry_timestamp_seconds", "gauge"},
		{"imds_webhook_certificate_reloads_total", "counter"},
		{"imds_webhook_tls_handshake_failures_total", "counter"},
		{"imds_webhook_ready", "gauge"},
	};
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char line[128];
		snprintf(line, sizeof(line), "\n# TYPE %s %s\n", families[i][0], families[i][1]);
		if (!strstr(s, line) && strncmp(s, line + 1, strlen(line) - 1) != 0)
			fail_msg("no TYPE line for %s", families[i][0]);
		snprintf(line, sizeof(line), "# HELP %s ", families[i][0]);
		if (!strstr(s, line))
			fail_msg("no HELP line for %s", families[i][0]);
	}
	assert_int_equal(s[strlen(s) - 1], '\n');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_reviews),
		cmocka_unit_test(test_tls_and_format),
	};
	return cmocka_run_group_tests_name("webhook metrics", tests, NULL, NULL);
}
