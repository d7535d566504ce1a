/* node's metrics (src/node/metrics.h): the exposition imds-node serves at
 * /metrics, whole and exact for one set of figures; read back line by line
 * as a scraper reads the text format (a HELP and a TYPE before each sample,
 * counters named *_total, integer values, the last line ended); the
 * largest counter; a version with the characters a label value must
 * escape; and a buffer too small, flagged, never overrun. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "sbuf.h"

static const struct node_counters counters = {
	.refused = 3, .passes = 120, .pass_failed = 2, .restored = 1, .listener_sets = 7, .served = 5,
	.arp_replies = 41, .ndp_replies = 9};
static const struct node_gauges gauges = {.pods = 6, .connected = 5, .serving = 4, .max_pods = 256};

static const char want[] =
	"# HELP imds_node_pods Pod folders followed on this node.\n"
	"# TYPE imds_node_pods gauge\n"
	"imds_node_pods 6\n"
	"# HELP imds_node_pods_connected Pods whose sidecar is connected to the agent.\n"
	"# TYPE imds_node_pods_connected gauge\n"
	"imds_node_pods_connected 5\n"
	"# HELP imds_node_pods_serving Pods plumbed, steered and handed their listeners.\n"
	"# TYPE imds_node_pods_serving gauge\n"
	"imds_node_pods_serving 4\n"
	"# HELP imds_node_pods_max The most pods the agent follows.\n"
	"# TYPE imds_node_pods_max gauge\n"
	"imds_node_pods_max 256\n"
	"# HELP imds_node_pods_served_total Pods that became served.\n"
	"# TYPE imds_node_pods_served_total counter\n"
	"imds_node_pods_served_total 5\n"
	"# HELP imds_node_pod_refusals_total Pod sockets refused or pods dropped (the reason is in the log).\n"
	"# TYPE imds_node_pod_refusals_total counter\n"
	"imds_node_pod_refusals_total 3\n"
	"# HELP imds_node_passes_total Passes over a pod's plumbing.\n"
	"# TYPE imds_node_passes_total counter\n"
	"imds_node_passes_total 120\n"
	"# HELP imds_node_pass_failures_total Passes that failed and are retried.\n"
	"# TYPE imds_node_pass_failures_total counter\n"
	"imds_node_pass_failures_total 2\n"
	"# HELP imds_node_restores_total Passes that put back a piece someone removed.\n"
	"# TYPE imds_node_restores_total counter\n"
	"imds_node_restores_total 1\n"
	"# HELP imds_node_listener_sets_total Listener sets handed to sidecars.\n"
	"# TYPE imds_node_listener_sets_total counter\n"
	"imds_node_listener_sets_total 7\n"
	"# HELP imds_node_arp_replies_total ARP replies sent to VMs for the service's IPv4 address, all pods.\n"
	"# TYPE imds_node_arp_replies_total counter\n"
	"imds_node_arp_replies_total 41\n"
	"# HELP imds_node_ndp_replies_total Neighbour advertisements sent to VMs for the service's IPv6 addresses, all pods.\n"
	"# TYPE imds_node_ndp_replies_total counter\n"
	"imds_node_ndp_replies_total 9\n"
	"# HELP imds_node_build_info The running version (git describe), always 1.\n"
	"# TYPE imds_node_build_info gauge\n"
	"imds_node_build_info{version=\"v0.9.0-3-gabcdef0\"} 1\n";

static void test_exact(void **state)
{
	(void)state;
	static char buf[8192];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	node_metrics_render(&counters, &gauges, "v0.9.0-3-gabcdef0", &b);
	assert_false(b.overflow);
	assert_string_equal(buf, want);
}

/* The text read the way a scraper reads it. */
static void test_format(void **state)
{
	(void)state;
	static char buf[8192];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	char help[64] = "", type[64] = "", kind[16] = "";
	unsigned samples = 0;

	node_metrics_render(&counters, &gauges, "dev", &b);
	assert_true(b.len > 0 && buf[b.len - 1] == '\n');
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64];
		if (strncmp(line, "# HELP ", 7) == 0) {
			assert_int_equal(sscanf(line + 7, "%63s", help), 1);
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			assert_int_equal(sscanf(line + 7, "%63s %15s", type, kind), 2);
			assert_string_equal(type, help); /* TYPE follows its HELP */
			assert_true(!strcmp(kind, "counter") || !strcmp(kind, "gauge"));
			continue;
		}
		assert_true(line[0] != '#');
		size_t n = strcspn(line, "{ ");
		assert_true(n > 0 && n < sizeof(name));
		memcpy(name, line, n);
		name[n] = 0;
		for (size_t i = 0; i < n; i++)
			assert_non_null(strchr("abcdefghijklmnopqrstuvwxyz_", name[i]));
		if (strcmp(name, type) != 0)
			fail_msg("sample %s without its TYPE (last TYPE %s)", name, type);
		size_t l = strlen(name);
		if (!strcmp(kind, "counter"))
			assert_true(l > 6 && !strcmp(name + l - 6, "_total"));
		const char *v = strrchr(line, ' ');
		char *end;
		assert_non_null(v);
		strtoull(v + 1, &end, 10);
		assert_true(end != v + 1 && *end == 0);
		samples++;
	}
	assert_int_equal(samples, 13);
}

static void test_edges(void **state)
{
	(void)state;
	static char buf[8192];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	struct node_counters big = counters;

	big.passes = UINT64_MAX;
	node_metrics_render(&big, &gauges, "dev", &b);
	assert_non_null(strstr(buf, "\nimds_node_passes_total 18446744073709551615\n"));

	/* a version with a quote, a backslash and a line feed stays one
	 * sample with one label */
	b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
	node_metrics_render(&counters, &gauges, "a\"b\\c\nd", &b);
	assert_non_null(strstr(buf, "imds_node_build_info{version=\"a\\\"b\\\\c\\nd\"} 1\n"));
	size_t lines = 0;
	for (const char *p = buf; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 39);

	/* too small: flagged, NUL-terminated inside, nothing past cap */
	for (size_t cap = 1; cap < sizeof(want); cap += 37) {
		char *small = malloc(cap + 8);
		assert_non_null(small);
		memset(small, 'x', cap + 8);
		b = (struct sbuf)SBUF_INIT(small, cap);
		node_metrics_render(&counters, &gauges, "v0.9.0-3-gabcdef0", &b);
		assert_true(b.overflow);
		assert_true(strlen(small) < cap);
		for (size_t i = cap; i < cap + 8; i++)
			assert_int_equal(small[i], 'x');
		free(small);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_edges),
	};
	return cmocka_run_group_tests_name("node_metrics", tests, NULL, NULL);
}
