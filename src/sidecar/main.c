/* imds-server: the per-VM metadata sidecar.  See docs/sidecar.md. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "config.h"
#include "diag.h"
#include "http.h"
#include "imds.h"
#include "log.h"
#include "loop.h"
#include "nodelink.h"
#include "run.h"
#include "serve.h"

#ifndef IMDS_VERSION
#define IMDS_VERSION "dev"
#endif

static const char usage[] =
	"usage: imds-server <command> [options]\n"
	"\n"
	"commands:\n"
	"  run                 plumb 169.254.169.254, steer the VM's taps to it, answer\n"
	"                      ARP and serve (what the webhook injects)\n"
	"  init                one-shot network setup, then exit (needs only\n"
	"                      IMDS_INTERFACES or IMDS_BRIDGE_NAME, both optional)\n"
	"  serve [--listen ADDR]\n"
	"                      HTTP only, on ADDR (default $IMDS_LISTEN_ADDR or\n"
	"                      169.254.169.254:80); e.g. --listen 127.0.0.1:8080\n"
	"  diag [--json]       what the running sidecar serves, to which interfaces,\n"
	"                      its plumbing and last errors, without secrets (for\n"
	"                      kubectl exec -c imds-server -- /imds-server diag)\n"
	"  probe               exit 0 once the node agent put the guard in place for this\n"
	"                      pod (IMDS_NET_MODE=agent: the native sidecar's startupProbe)\n"
	"  await [--timeout S] bind the agent's socket and wait at most S seconds (default\n"
	"                      60) for the guard, then exit 0 (the init container of\n"
	"                      --sidecar-mode=container)\n"
	"  version             print the version\n"
	"\n"
	"configuration comes from the environment: IMDS_NAMESPACE and IMDS_VM_NAME\n"
	"(required), IMDS_POD_NAME, IMDS_SA_NAME, IMDS_INSTANCE_ID, IMDS_TOKEN_PATH,\n"
	"IMDS_USER_DATA, IMDS_USER_DATA_FILE, IMDS_VENDOR_DATA_FILE,\n"
	"IMDS_NETWORK_CONFIG_FILE, IMDS_INTERFACES, IMDS_BRIDGE_NAME,\n"
	"IMDS_NETWORK_STATUS_FILE, IMDS_RATE_LIMIT (req/s, 0 = off),\n"
	"IMDS_BUSY_POLL_US (us, 0 = off), IMDS_NET_MODE (pod: run plumbs the pod itself;\n"
	"agent: the node agent imds-node does, run serves on its listeners),\n"
	"IMDS_AGENT_SOCKET (default " NODELINK_DEFAULT_SOCKET ");\n"
	"see docs/sidecar.md.\n";

/* Exit status for configuration errors (a clear message, status 2). */
#define EXIT_CONFIG 2

/* IMDS_NET_MODE: 0 pod (the default), 1 agent, -1 (err set) anything else. */
static int net_mode(char *err, size_t errlen)
{
	const char *m = getenv("IMDS_NET_MODE");
	if (!m || !m[0] || strcmp(m, "pod") == 0)
		return 0;
	if (strcmp(m, "agent") == 0)
		return 1;
	snprintf(err, errlen, "IMDS_NET_MODE: want pod or agent, got '%.40s'", m);
	return -1;
}

static const char *agent_socket(void)
{
	const char *s = getenv("IMDS_AGENT_SOCKET");
	return s && s[0] ? s : NODELINK_DEFAULT_SOCKET;
}

static int setsize_for(const struct imds_config *cfg)
{
	/* Every connection is an fd; keep room for listeners, netlink, ARP,
	 * timers and stdio.  Past the soft limit, accept pauses (http.c). */
	serve_raise_nofile();
	return (int)cfg->limits.max_conns + 64;
}

static int cmd_server(int argc, char **argv, int networked)
{
	const char *listen_arg = NULL;
	for (int i = 2; i < argc; i++) {
		if (!networked && strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
			listen_arg = argv[++i];
		} else if (!networked && strncmp(argv[i], "--listen=", 9) == 0) {
			listen_arg = argv[i] + 9;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "imds-server %s: unknown argument '%s'\n%s", argv[1], argv[i],
				usage);
			return EXIT_CONFIG;
		}
	}
	char err[512];
	struct imds_config cfg;
	if (config_from_env(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "imds-server: %s\n", err);
		return EXIT_CONFIG;
	}
	if (listen_arg)
		cfg.listen_addr = listen_arg;
	int agent = networked ? net_mode(err, sizeof(err)) : 0;
	if (agent < 0) {
		fprintf(stderr, "imds-server: %s\n", err);
		return EXIT_CONFIG;
	}

	int status = 1;
	struct imds_app *app = NULL;
	struct serve_signals sc = {.fd = -1};
	struct loop *l = loop_new(setsize_for(&cfg));
	if (!l) {
		fprintf(stderr, "imds-server: event loop: %s\n", strerror(errno));
		return 1;
	}
	loop_set_busy_poll(l, cfg.busy_poll_us);
	app = imds_app_new(l, &cfg, err, sizeof(err));
	if (!app) {
		fprintf(stderr, "imds-server: %s\n", err);
		status = EXIT_CONFIG;
		goto out;
	}
	int r = serve_signals_install(&sc, l, imds_app_http(app));
	if (r < 0) {
		fprintf(stderr, "imds-server: signals: %s\n", strerror(-r));
		goto out;
	}
	if (networked) {
		/* The first log line names the version (a configuration error
		 * before it is one line of its own). */
		log_info("imds-server %s (run%s)", IMDS_VERSION, agent ? ", agent mode" : "");
		diag_status_start(cfg.state_dir, IMDS_VERSION);
		/* agent mode: nodelink records what the node agent says */
		status = agent ? nodelink_run(l, imds_app_http(app), &cfg, agent_socket())
			       : run_main(l, app, &cfg);
		goto out;
	}
	int fd = http_listen_addr(cfg.listen_addr, 511, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "imds-server: %s\n", err);
		status = fd == -EINVAL ? EXIT_CONFIG : 1;
		goto out;
	}
	r = addr_set_hops(fd, cfg.hop_limit);
	if (r < 0) {
		close(fd);
		fprintf(stderr, "imds-server: IMDS_HOP_LIMIT: %s\n", strerror(-r));
		goto out;
	}
	r = http_server_listen_fd(sc.http, fd);
	if (r < 0) {
		close(fd);
		fprintf(stderr, "imds-server: %s\n", strerror(-r));
		goto out;
	}
	char where[80];
	log_info("imds-server %s (serve)", IMDS_VERSION);
	log_info("serving %s/%s on %s (rate limit %u/s, hop limit %u)", cfg.ns, cfg.vm_name,
		 addr_local(fd, where, sizeof(where)), cfg.rate_limit, cfg.hop_limit);
	r = loop_run(l);
	log_flush();
	if (r < 0) {
		log_error("event loop: %s", strerror(-r));
		goto out;
	}
	log_info("stopped");
	status = 0;
out:
	imds_app_free(app);
	serve_signals_close(&sc);
	loop_free(l);
	return status;
}

int main(int argc, char **argv)
{
	log_init("imds-server");
	/* a closed peer is an error return, not a death */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		log_error("cannot ignore SIGPIPE: %s", strerror(errno));
		return 1;
	}
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_CONFIG : 0;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("imds-server %s\n", IMDS_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "diag") == 0)
		return diag_main(argc, argv, IMDS_VERSION);
	if (strcmp(argv[1], "serve") == 0)
		return cmd_server(argc, argv, 0);
	if (strcmp(argv[1], "run") == 0)
		return cmd_server(argc, argv, 1);
	if (strcmp(argv[1], "init") == 0) {
		char err[512];
		struct imds_config cfg;
		if (config_net_from_env(&cfg, err, sizeof(err)) < 0) {
			fprintf(stderr, "imds-server: %s\n", err);
			return EXIT_CONFIG;
		}
		log_info("imds-server %s (init)", IMDS_VERSION);
		log_flush();
		return init_main(&cfg);
	}
	if (strcmp(argv[1], "probe") == 0) {
		if (argc > 2) {
			fprintf(stderr, "imds-server probe: unknown argument '%s'\n", argv[2]);
			return EXIT_CONFIG;
		}
		return nodelink_probe(agent_socket());
	}
	if (strcmp(argv[1], "await") == 0) {
		char err[512];
		unsigned timeout = NODELINK_AWAIT_DEFAULT_S;
		struct imds_config cfg;
		for (int i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc &&
			    config_parse_uint(argv[i + 1], 1, 3600, &timeout) == 0) {
				i++;
				continue;
			}
			fprintf(stderr, "imds-server await: want [--timeout SECONDS 1..3600], got '%s'\n",
				argv[i]);
			return EXIT_CONFIG;
		}
		if (config_from_env(&cfg, err, sizeof(err)) < 0) {
			fprintf(stderr, "imds-server: %s\n", err);
			return EXIT_CONFIG;
		}
		return nodelink_await(&cfg, agent_socket(), timeout);
	}
	fprintf(stderr, "imds-server: unknown command '%s'\n%s", argv[1], usage);
	return EXIT_CONFIG;
}
