/* metrics: what imds-node counts and how it says it (Prometheus text,
 * docs/node.md "Health and metrics"): counters kept by node.c, gauges taken
 * from its pods at each scrape.  No I/O. */
#ifndef IMDS_NODE_METRICS_H
#define IMDS_NODE_METRICS_H

#include <stdint.h>

#include "sbuf.h"

struct node_counters {
	uint64_t refused;      /* a pod's socket refused (a reason in the log) or the pod dropped */
	uint64_t passes;       /* passes over a followed pod's plumbing */
	uint64_t pass_failed;  /* ... that failed and will be retried */
	uint64_t restored;     /* ... that put back a piece someone removed */
	uint64_t listener_sets; /* listener sets passed to sidecars */
	uint64_t served;       /* pods that became served */
	/* The responders' answers, all pods together (a label per pod would
	 * grow with every pod the node ever ran): those of the pods that left
	 * POD_ACTIVE here, those of the active ones added at each scrape. */
	uint64_t arp_replies;  /* ARP replies for the service's IPv4 address */
	uint64_t ndp_replies;  /* neighbour advertisements for its IPv6 addresses */
};

struct node_gauges {
	unsigned pods;      /* pod folders followed */
	unsigned connected; /* ... whose sidecar is connected (config read or due) */
	unsigned serving;   /* ... served: plumbed, steered, listeners passed */
	unsigned max_pods;
};

void node_metrics_render(const struct node_counters *c, const struct node_gauges *g,
			 const char *version, struct sbuf *b);

#endif
