/* stalls: how often this machine takes the CPU away.  Spins for SECONDS on
 * the CPU it is pinned to, reading CLOCK_MONOTONIC, and counts the gaps
 * between two reads: a gap longer than 0.5 ms is a time when this thread
 * did not run although it never slept (an interrupt storm, a kernel thread,
 * or the hypervisor running something else on this vCPU's core).  Every
 * latency figure taken on the machine at the same time carries these.
 *
 *   stalls SECONDS
 *
 * Prints "gaps_over_0.5ms gaps_over_1ms max_ms total_ms". */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	double secs = argc == 2 ? atof(argv[1]) : 0;
	if (secs <= 0 || secs > 600) {
		fprintf(stderr, "usage: stalls SECONDS (0 < SECONDS <= 600)\n");
		return 2;
	}
	int64_t last = now_ns(), end = last + (int64_t)(secs * 1e9), max = 0, total = 0;
	long over_half = 0, over_one = 0;
	for (;;) {
		int64_t t = now_ns(), d = t - last;
		if (d > 500000) {
			over_half++;
			total += d;
			if (d > 1000000)
				over_one++;
		}
		if (d > max)
			max = d;
		last = t;
		if (t >= end)
			break;
	}
	printf("%ld %ld %.2f %.2f\n", over_half, over_one, (double)max / 1e6, (double)total / 1e6);
	return 0;
}
