/* imds-webhook: the mutating admission webhook (docs/webhook.md).  One HTTPS
 * listener on the shared event loop: POST /mutate (and per-kind aliases),
 * GET /healthz, /readyz, /metrics. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "admission.h"
#include "dfile.h"
#include "http.h"
#include "ifaces.h"
#include "cli.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "sbuf.h"
#include "serve.h"
#include "tls.h"

#ifndef IMDS_VERSION
#define IMDS_VERSION "dev"
#endif

#define EXIT_CONFIG 2
/* The API server caps request bodies at 3 MiB; so do we (413 past it). */
#define WEBHOOK_MAX_BODY (3u << 20)

static const char usage[] =
	"usage: imds-webhook [flags]\n"
	"  --listen ADDR              HTTPS listen address (default :8443)\n"
	"  --tls-cert-file FILE       serving certificate (default /etc/webhook/certs/tls.crt)\n"
	"  --tls-key-file FILE        its key (default /etc/webhook/certs/tls.key)\n"
	"  --imds-image IMAGE         imds-server image to inject (required; $IMDS_IMAGE overrides)\n"
	"  --sidecar-mode MODE        native (init container, restartPolicy Always; k8s >= 1.29)\n"
	"                             or container (a plain container, older clusters)\n"
	"  --network-mode MODE        agent (default: the imds-node DaemonSet builds the pod's\n"
	"                             network half; the sidecar runs as UID 107 with no\n"
	"                             capability: the pod keeps its Pod Security level)\n"
	"                             or pod (no DaemonSet: the sidecar builds it as root with\n"
	"                             NET_ADMIN and NET_RAW: the pod becomes Pod Security privileged)\n"
	"  --vendor-data-file FILE    cluster-wide vendor-data for pods that set none\n"
	"  --sidecar-cpu Q            CPU request of the sidecar (default 10m)\n"
	"  --sidecar-memory Q         memory request (default 16Mi)\n"
	"  --sidecar-memory-limit Q   memory limit when the pod is not Guaranteed (default 32Mi)\n"
	"  --default-eviction-strategy S  the cluster's default evictionStrategy (KubeVirt CR\n"
	"                             spec.configuration.evictionStrategy: LiveMigrate,\n"
	"                             LiveMigrateIfPossible, External, None), recorded for a VMI\n"
	"                             that sets none (default: none recorded)\n"
	"  --binding-plugin NAME=KIND the kind of NIC a KubeVirt network binding plugin makes\n"
	"                             (managedtap, passt, tap, masquerade, bridge; repeatable;\n"
	"                             built in: passt=passt, macvtap=tap, l2bridge=managedtap)\n"
	"  --version, --help\n";

struct webhook {
	struct loop *loop;
	struct http_server *http;
	struct tls_server *tls;
	struct admission_config acfg;
	struct admission adm;
	struct dfile vendor;
	struct metrics metrics;
	struct serve_signals sig;
	char *metrics_buf;
	size_t metrics_cap;
};

static void answer_review(struct webhook *w, const struct http_request *req,
			  struct http_response *res)
{
	/* Cluster-wide vendor-data follows its file (a mounted ConfigMap). */
	struct blob *vd = dfile_get(&w->vendor);
	w->acfg.vendor_data = vd && vd->len ? vd->data : NULL;
	struct admission_result ar;
	memset(&ar, 0, sizeof(ar));
	admission_handle(&w->adm, &w->acfg, req->body.p, req->body.n, &ar);
	uint64_t us = loop_clock_us() - req->start_us;
	metrics_observe(&w->metrics, (unsigned)ar.kind, (unsigned)ar.outcome, us);
	if (ar.outcome != ADM_SKIPPED)
		log_info("review: %s", ar.reason); /* never user-data */
	if (ar.body) {
		res->status = ar.http_status;
		res->content_type = "application/json";
		res->blob = blob_new(ar.body, ar.body_len); /* the core takes it */
		if (!res->blob)
			http_res_error(res, 500, "internal", "out of memory");
	} else {
		http_res_error(res, 500, "internal", "no answer");
	}
	admission_result_free(&ar);
}

static void before_sleep(struct loop *l, void *data)
{
	(void)l;
	struct webhook *w = data;
	admission_release(&w->adm);
	log_flush();
}

static int is_mutate_path(struct http_span p)
{
	return http_span_eq(p, "/mutate") || http_span_eq(p, "/mutate-pods") ||
	       http_span_eq(p, "/mutate-virtualmachines") ||
	       http_span_eq(p, "/mutate-virtualmachineinstances");
}

static void handle(const struct http_request *req, struct http_response *res, void *ud)
{
	struct webhook *w = ud;
	struct http_span p = req->path;
	if (is_mutate_path(p)) {
		if (req->method != HTTP_M_POST) {
			http_res_error(res, 405, "method_not_allowed", "use POST");
			http_res_header(res, "Allow", "POST");
			return;
		}
		answer_review(w, req, res);
		return;
	}
	if (!serve_ops_method_ok(req, res) || serve_ops_healthz(req, res))
		return;
	if (http_span_eq(p, "/readyz")) {
		if (tls_server_ready(w->tls))
			http_res_text(res, 200, "text/plain", "ok", 2);
		else
			http_res_error(res, 503, "not_ready", "no serving certificate loaded yet");
	} else if (http_span_eq(p, "/metrics")) {
		struct metrics_tls mt = {
			.not_after = tls_server_not_after(w->tls),
			.reloads = tls_server_reloads(w->tls),
			.reload_failures = tls_server_reload_failures(w->tls),
			.handshake_failures = tls_server_handshake_failures(w->tls),
			.ready = tls_server_ready(w->tls),
		};
		struct sbuf b = SBUF_INIT(w->metrics_buf, w->metrics_cap);
		metrics_render(&w->metrics, &mt, &b);
		/* Here, not in metrics.c: only main.o depends on the version. */
		sbuf_printf(&b,
			    "# HELP imds_webhook_build_info The running version (git describe), always 1.\n"
			    "# TYPE imds_webhook_build_info gauge\n"
			    "imds_webhook_build_info{version=\"%s\"} 1\n",
			    IMDS_VERSION);
		serve_ops_metrics(res, &b);
	} else {
		http_res_error(res, 404, "not_found", "no such path");
	}
}

static int flag(int argc, char **argv, int *i, const char *name, const char **out)
{
	return cli_flag(argc, argv, i, "imds-webhook", name, out);
}

int main(int argc, char **argv)
{
	log_init("imds-webhook");
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		log_error("cannot ignore SIGPIPE: %s", strerror(errno));
		return 1;
	}
	const char *listen_addr = ":8443";
	const char *cert = "/etc/webhook/certs/tls.crt", *key = "/etc/webhook/certs/tls.key";
	const char *image = NULL, *mode = "native", *vendor_file = NULL;
	const char *net_mode = "agent";
	const char *cpu = "10m", *mem = "16Mi", *mem_limit = "32Mi", *plugin = NULL;
	const char *def_eviction = NULL;
	static struct ifc_plugin plugins[IFC_MAX_PLUGINS];
	size_t nplugins = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "version") == 0) {
			printf("imds-webhook %s\n", IMDS_VERSION);
			return 0;
		}
		if (flag(argc, argv, &i, "--listen", &listen_addr) ||
		    flag(argc, argv, &i, "--tls-cert-file", &cert) ||
		    flag(argc, argv, &i, "--tls-key-file", &key) ||
		    flag(argc, argv, &i, "--imds-image", &image) ||
		    flag(argc, argv, &i, "--sidecar-mode", &mode) ||
		    flag(argc, argv, &i, "--network-mode", &net_mode) ||
		    flag(argc, argv, &i, "--vendor-data-file", &vendor_file) ||
		    flag(argc, argv, &i, "--sidecar-cpu", &cpu) ||
		    flag(argc, argv, &i, "--sidecar-memory", &mem) ||
		    flag(argc, argv, &i, "--sidecar-memory-limit", &mem_limit) ||
		    flag(argc, argv, &i, "--default-eviction-strategy", &def_eviction))
			continue;
		if (flag(argc, argv, &i, "--binding-plugin", &plugin)) {
			char perr[256];
			if (nplugins == IFC_MAX_PLUGINS) {
				fprintf(stderr, "imds-webhook: --binding-plugin: more than %d\n", IFC_MAX_PLUGINS);
				return EXIT_CONFIG;
			}
			if (ifc_plugin_parse(plugin, &plugins[nplugins], perr, sizeof(perr)) < 0) {
				fprintf(stderr, "imds-webhook: %s\n", perr);
				return EXIT_CONFIG;
			}
			nplugins++;
			continue;
		}
		fprintf(stderr, "imds-webhook: unknown argument '%s'\n%s", argv[i], usage);
		return EXIT_CONFIG;
	}
	const char *env_image = getenv("IMDS_IMAGE");
	if (env_image && *env_image)
		image = env_image;
	if (!image) {
		fprintf(stderr, "imds-webhook: --imds-image: required (or $IMDS_IMAGE)\n");
		return EXIT_CONFIG;
	}
	if (strcmp(mode, "native") != 0 && strcmp(mode, "container") != 0) {
		fprintf(stderr, "imds-webhook: --sidecar-mode: '%s' is not native or container\n", mode);
		return EXIT_CONFIG;
	}
	if (strcmp(net_mode, "pod") != 0 && strcmp(net_mode, "agent") != 0) {
		fprintf(stderr,
			"imds-webhook: --network-mode: '%s' is not pod or agent (agent needs the imds-node DaemonSet, deploy/)\n",
			net_mode);
		return EXIT_CONFIG;
	}

	int status = 1;
	char err[512];
	struct webhook w;
	memset(&w, 0, sizeof(w));
	w.sig.fd = -1;
	w.adm = (struct admission)ADMISSION_INIT;
	w.acfg = (struct admission_config){
		.imds_image = image,
		.native_sidecar = strcmp(mode, "native") == 0,
		.agent_network = strcmp(net_mode, "agent") == 0,
		.cpu = cpu,
		.memory = mem,
		.memory_limit = mem_limit,
		.plugins = plugins,
		.nplugins = nplugins,
		.default_eviction = def_eviction,
	};
	if (dfile_open(&w.vendor, "--vendor-data-file", vendor_file, err, sizeof(err)) < 0) {
		fprintf(stderr, "imds-webhook: %s\n", err);
		return EXIT_CONFIG;
	}
	struct blob *vd = dfile_get(&w.vendor);
	w.acfg.vendor_data = vd && vd->len ? vd->data : NULL;
	if (admission_config_check(&w.acfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "imds-webhook: %s\n", err);
		dfile_close(&w.vendor);
		return EXIT_CONFIG;
	}
	struct http_limits lim = HTTP_LIMITS_DEFAULT;
	lim.max_body = WEBHOOK_MAX_BODY;
	/* The API server keeps a few connections per webhook; probes add some. */
	lim.max_conns = 256;
	lim.header_timeout_ms = 10000;
	lim.idle_timeout_ms = 90000; /* longer than Go's 90 s idle keep-alive */
	w.metrics_cap = 8192;
	w.metrics_buf = malloc(w.metrics_cap);
	serve_raise_nofile();
	w.loop = loop_new((int)lim.max_conns + 64);
	if (!w.loop || !w.metrics_buf) {
		fprintf(stderr, "imds-webhook: out of memory\n");
		goto out;
	}
	/* The first log line names the version (flushed: errors from here on
	 * are written straight to stderr, after it). */
	log_info("imds-webhook %s", IMDS_VERSION);
	log_flush();
	w.tls = tls_server_new(w.loop, cert, key, err, sizeof(err));
	if (!w.tls) {
		fprintf(stderr, "imds-webhook: %s\n", err);
		status = EXIT_CONFIG;
		goto out;
	}
	w.http = http_server_new(w.loop, &lim, handle, serve_access_log, &w);
	if (!w.http) {
		fprintf(stderr, "imds-webhook: http server: %s\n", strerror(errno));
		goto out;
	}
	http_server_set_transport(w.http, tls_server_transport(w.tls));
	int fd = http_listen_addr(listen_addr, 511, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "imds-webhook: %s\n", err);
		status = fd == -EINVAL ? EXIT_CONFIG : 1;
		goto out;
	}
	if (http_server_listen_fd(w.http, fd) < 0) {
		close(fd);
		fprintf(stderr, "imds-webhook: cannot watch the listener\n");
		goto out;
	}
	int r = serve_signals_install(&w.sig, w.loop, w.http);
	if (r < 0) {
		fprintf(stderr, "imds-webhook: signals: %s\n", strerror(-r));
		goto out;
	}
	/* After serve's hook: the log, and the last review's DOM once its
	 * answer has been written. */
	loop_set_before_sleep(w.loop, before_sleep, &w);
	char where[80];
	log_info("serving admission reviews on %s (image %s, %s sidecar, network mode %s)",
		 addr_local(fd, where, sizeof(where)), image, mode, net_mode);
	r = loop_run(w.loop);
	log_flush();
	if (r < 0) {
		log_error("event loop: %s", strerror(-r));
		goto out;
	}
	log_info("stopped");
	status = 0;
out:
	http_server_free(w.http);
	tls_server_free(w.tls);
	dfile_close(&w.vendor);
	serve_signals_close(&w.sig);
	loop_free(w.loop);
	free(w.metrics_buf);
	admission_cleanup(&w.adm);
	return status;
}
