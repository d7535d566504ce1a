#include "metrics.h"

static void counter(struct sbuf *b, const char *name, const char *help, uint64_t v)
{
	sbuf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
		    (unsigned long long)v);
}

static void gauge(struct sbuf *b, const char *name, const char *help, unsigned v)
{
	sbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %u\n", name, help, name, name, v);
}

/* A label's value as the text format wants it: backslash, double quote and
 * line feed escaped (prometheus/docs content/docs/instrumenting/
 * exposition_formats.md, "label_value can be any sequence of UTF-8
 * characters, but the backslash, double-quote and line feed characters have
 * to be escaped").  VERSION=... may be anything. */
static void label_value(struct sbuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			sbuf_putc(b, '\\');
		if (*s == '\n')
			sbuf_puts(b, "\\n");
		else
			sbuf_putc(b, *s);
	}
}

void node_metrics_render(const struct node_counters *c, const struct node_gauges *g,
			 const char *version, struct sbuf *b)
{
	gauge(b, "imds_node_pods", "Pod folders followed on this node.", g->pods);
	gauge(b, "imds_node_pods_connected", "Pods whose sidecar is connected to the agent.",
	      g->connected);
	gauge(b, "imds_node_pods_serving", "Pods plumbed, steered and handed their listeners.",
	      g->serving);
	gauge(b, "imds_node_pods_max", "The most pods the agent follows.", g->max_pods);
	counter(b, "imds_node_pods_served_total", "Pods that became served.", c->served);
	counter(b, "imds_node_pod_refusals_total",
		"Pod sockets refused or pods dropped (the reason is in the log).", c->refused);
	counter(b, "imds_node_passes_total", "Passes over a pod's plumbing.", c->passes);
	counter(b, "imds_node_pass_failures_total", "Passes that failed and are retried.",
		c->pass_failed);
	counter(b, "imds_node_restores_total", "Passes that put back a piece someone removed.",
		c->restored);
	counter(b, "imds_node_listener_sets_total", "Listener sets handed to sidecars.",
		c->listener_sets);
	counter(b, "imds_node_arp_replies_total",
		"ARP replies sent to VMs for the service's IPv4 address, all pods.", c->arp_replies);
	counter(b, "imds_node_ndp_replies_total",
		"Neighbour advertisements sent to VMs for the service's IPv6 addresses, all pods.",
		c->ndp_replies);
	sbuf_puts(b, "# HELP imds_node_build_info The running version (git describe), always 1.\n"
		     "# TYPE imds_node_build_info gauge\n"
		     "imds_node_build_info{version=\"");
	label_value(b, version);
	sbuf_puts(b, "\"} 1\n");
}
