/* imds-node: the network half of kubevirt-imds as a node agent, one per
 * node (a DaemonSet).  See node.h and docs/design.md. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "log.h"
#include "node.h"
#include "serve.h"

#ifndef IMDS_VERSION
#define IMDS_VERSION "dev"
#endif

static const char usage[] =
	"usage: imds-node [--pods-dir DIR] [--rescan-ms N] [--metrics-addr HOST:PORT]\n"
	"       imds-node version\n"
	"\n"
	"Builds the network half of kubevirt-imds in every launcher pod of this node\n"
	"whose sidecar runs with IMDS_NET_MODE=agent: it finds\n"
	"DIR/<pod UID>/" NODE_SOCK_REL ",\n"
	"enters the pod's network namespace and plumbs, steers and guards it.\n"
	"\n"
	"  --pods-dir DIR   the kubelet's pods folder (default " NODE_DEFAULT_PODS_DIR ")\n"
	"  --rescan-ms N    a rescan of DIR under inotify, 100..60000 (default 2000)\n"
	"  --metrics-addr HOST:PORT\n"
	"                   plain HTTP for the kubelet's probes and Prometheus: /healthz,\n"
	"                   /readyz, /metrics (default: none; the DaemonSet gives :8080)\n"
	"\n"
	"needs hostPID, CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_NET_ADMIN, CAP_NET_RAW and\n"
	"CAP_NET_BIND_SERVICE; see docs/design.md, \"The agent's privileges\".\n";

int main(int argc, char **argv)
{
	struct node_opts o = {.pods_dir = NODE_DEFAULT_PODS_DIR,
			      .rescan_ms = 2000,
			      .hello_ms = 2000,
			      .backoff_max_ms = 30000,
			      .version = IMDS_VERSION};

	log_init("imds-node");
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		log_error("cannot ignore SIGPIPE: %s", strerror(errno));
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (strcmp(a, "version") == 0 || strcmp(a, "--version") == 0) {
			printf("imds-node %s\n", IMDS_VERSION);
			return 0;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (cli_flag(argc, argv, &i, "imds-node", "--pods-dir", &v)) {
			o.pods_dir = v;
		} else if (cli_flag(argc, argv, &i, "imds-node", "--rescan-ms", &v)) {
			if (config_parse_uint(v, 100, 60000, &o.rescan_ms)) {
				fprintf(stderr, "imds-node: --rescan-ms: want milliseconds 100..60000, got '%s'\n",
					v);
				return 2;
			}
		} else if (cli_flag(argc, argv, &i, "imds-node", "--metrics-addr", &v)) {
			o.metrics_addr = v;
		} else {
			fprintf(stderr, "imds-node: unknown argument '%s'\n%s", a, usage);
			return 2;
		}
	}
	if (o.pods_dir[0] != '/') {
		fprintf(stderr, "imds-node: --pods-dir: want an absolute path, got '%s'\n", o.pods_dir);
		return 2;
	}
	serve_raise_nofile();
	log_info("imds-node %s", IMDS_VERSION);
	return node_main(&o);
}
