/* rate: the token bucket on synthetic time (microseconds from the caller). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>

#include "rate.h"

#define SEC UINT64_C(1000000)

/* Takes until refused (at most limit); returns how many were allowed. */
static unsigned drain(struct rate *r, uint64_t now, unsigned limit)
{
	unsigned n = 0;
	while (n < limit && rate_take(r, now))
		n++;
	return n;
}

static void test_burst_then_limit(void **state)
{
	(void)state;
	static const struct {
		unsigned rate, burst;
	} cases[] = {{1, 1}, {3, 3}, {10, 10}, {100, 100}, {5, 20}, {20, 5}, {1000000, 1000000}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rate r;
		uint64_t t0 = 5 * SEC;
		rate_init(&r, cases[i].rate, cases[i].burst, t0);
		unsigned got = drain(&r, t0, cases[i].burst + 10);
		if (got != cases[i].burst)
			fail_msg("rate %u burst %u: %u allowed at once, want the burst", cases[i].rate,
				 cases[i].burst, got);
		/* Still refused at the same instant, again and again. */
		for (int k = 0; k < 5; k++)
			if (rate_take(&r, t0))
				fail_msg("rate %u burst %u: allowed past the burst", cases[i].rate,
					 cases[i].burst);
	}
}

/* One token every 1/rate s, to the microsecond, with no loss from the
 * calls in between. */
static void test_exact_refill(void **state)
{
	(void)state;
	static const struct {
		unsigned rate;
		uint64_t period_us; /* exact: rate divides 10^6 */
	} cases[] = {{1, 1000000}, {2, 500000}, {10, 100000}, {100, 10000},
		     {1000, 1000}, {250000, 4}, {1000000, 1}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rate r;
		uint64_t t = 1000;
		unsigned rate = cases[i].rate;
		uint64_t p = cases[i].period_us;
		rate_init(&r, rate, 1, t);
		if (!rate_take(&r, t))
			fail_msg("rate %u: first take refused", rate);
		for (int k = 0; k < 50; k++) {
			/* One microsecond short: refused (probing in between must not
			 * lose the partial token). */
			if (p > 1) {
				if (rate_take(&r, t + p / 2))
					fail_msg("rate %u: allowed after %" PRIu64 " us", rate, p / 2);
				if (rate_take(&r, t + p - 1))
					fail_msg("rate %u: allowed after %" PRIu64 " us", rate, p - 1);
			}
			t += p;
			if (!rate_take(&r, t))
				fail_msg("rate %u: refused after a full period (%d)", rate, k);
			if (rate_take(&r, t))
				fail_msg("rate %u: two tokens in one period (%d)", rate, k);
		}
	}
	/* A rate that does not divide a second: 3/s gives exactly 3 tokens per
	 * second over a long run (no rounding drift). */
	struct rate r;
	rate_init(&r, 3, 3, 0);
	assert_int_equal(drain(&r, 0, 10), 3);
	unsigned total = 0;
	for (uint64_t t = 1; t <= 100 * SEC; t += 1777)
		total += rate_take(&r, t) ? 1u : 0u;
	/* 100 s * 3/s, +-1 for where the last probe falls. */
	if (total < 299 || total > 300)
		fail_msg("3/s over 100 s: %u tokens, want 299..300", total);
}

static void test_unlimited(void **state)
{
	(void)state;
	struct rate r;
	rate_init(&r, 0, 0, 0);
	for (unsigned k = 0; k < 100000; k++)
		if (!rate_take(&r, 0))
			fail_msg("rate 0 refused request %u", k);
	/* Whatever the clock does. */
	assert_true(rate_take(&r, UINT64_MAX));
	assert_true(rate_take(&r, 0));
}

static void test_time_jump_caps_at_burst(void **state)
{
	(void)state;
	static const uint64_t jumps[] = {10 * SEC, 3600 * SEC, 365ull * 86400 * SEC, UINT64_MAX / 2,
					 UINT64_MAX - 1};
	static const unsigned rates[] = {1, 7, 100, 1000000, 4000000000u};
	for (size_t j = 0; j < sizeof(jumps) / sizeof(jumps[0]); j++) {
		for (size_t k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
			struct rate r;
			unsigned burst = rates[k] > 1000 ? 1000 : rates[k];
			rate_init(&r, rates[k], burst, 1);
			drain(&r, 1, burst);
			uint64_t now = 1 + jumps[j];
			unsigned got = drain(&r, now, burst + 5);
			if (got != burst)
				fail_msg("rate %u, jump %" PRIu64 " us: %u tokens, want burst %u", rates[k],
					 jumps[j], got, burst);
		}
	}
	/* The largest configuration does not overflow either. */
	struct rate r;
	rate_init(&r, UINT32_MAX, UINT32_MAX, 0);
	assert_true(rate_take(&r, UINT64_MAX));
	assert_true(r.tokens <= r.cap);
}

static void test_time_backwards(void **state)
{
	(void)state;
	struct rate r;
	uint64_t t0 = 100 * SEC;
	rate_init(&r, 10, 2, t0);
	assert_int_equal(drain(&r, t0, 10), 2);
	/* Earlier times add nothing, however far back. */
	const uint64_t back[] = {t0 - 1, t0 - SEC, 0, t0 / 2};
	for (size_t i = 0; i < sizeof(back) / sizeof(back[0]); i++)
		if (rate_take(&r, back[i]))
			fail_msg("allowed at %" PRIu64 " us, before the last take", back[i]);
	/* A step back does not move the reference either: a refill is
	 * measured from the latest time seen, not from the earlier one. */
	if (rate_take(&r, t0 + 99999))
		fail_msg("allowed 99999 us after the last take at 10/s");
	assert_true(rate_take(&r, t0 + 100000));
	assert_false(rate_take(&r, t0 + 100000));
}

static void test_one_per_second(void **state)
{
	(void)state;
	struct rate r;
	rate_init(&r, 1, 1, 0);
	assert_true(rate_take(&r, 0));
	assert_false(rate_take(&r, 0));
	assert_false(rate_take(&r, 999999));
	assert_true(rate_take(&r, 1000000));
	assert_false(rate_take(&r, 1000000));
	/* 10 s idle refills one token only (burst 1). */
	assert_true(rate_take(&r, 11000000));
	assert_false(rate_take(&r, 11000000));
}

static void test_million_per_second(void **state)
{
	(void)state;
	struct rate r;
	rate_init(&r, 1000000, 1000000, 0);
	assert_int_equal(drain(&r, 0, 2000000), 1000000);
	/* One token per microsecond from there. */
	for (uint64_t t = 1; t <= 1000; t++) {
		if (!rate_take(&r, t))
			fail_msg("1e6/s: refused at %" PRIu64 " us", t);
		if (rate_take(&r, t))
			fail_msg("1e6/s: two tokens at %" PRIu64 " us", t);
	}
	/* Half a second: half a million. */
	assert_int_equal(drain(&r, 1000 + 500000, 2000000), 500000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_then_limit),
		cmocka_unit_test(test_exact_refill),
		cmocka_unit_test(test_unlimited),
		cmocka_unit_test(test_time_jump_caps_at_burst),
		cmocka_unit_test(test_time_backwards),
		cmocka_unit_test(test_one_per_second),
		cmocka_unit_test(test_million_per_second),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
