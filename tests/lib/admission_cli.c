/* admission_cli: one AdmissionReview on stdin, the webhook's answer on
 * stdout, "status=N kind=K outcome=O reason=R" on stderr.  The admission
 * module with no TLS around it, for tests/integration/webhook_patch.sh.
 *   admission_cli [--container] [--agent] [--image IMG] [--vendor-data-file F]
 *                 [--cpu Q] [--memory Q] [--memory-limit Q] [--binding-plugin NAME=KIND]...
 * Exit status 0 whenever an answer was produced; 2 on usage errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "ifaces.h"

static char *slurp(FILE *f, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		/* Up to 4 MiB: enough to show the 3 MiB cap at work. */
		if (cap >= (4u << 20)) {
			free(buf);
			return NULL;
		}
		char *nb = realloc(buf, cap * 2);
		if (!nb)
			free(buf);
		buf = nb;
		cap *= 2;
	}
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	struct admission_config cfg = {.imds_image = "registry.example/kubevirt-imds/imds-server:test",
				       .native_sidecar = 1};
	char *vendor = NULL;
	static struct ifc_plugin plugins[IFC_MAX_PLUGINS];
	char perr[256];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--container") == 0) {
			cfg.native_sidecar = 0;
		} else if (strcmp(a, "--agent") == 0) { /* --network-mode agent */
			cfg.agent_network = 1;
		} else if (v && strcmp(a, "--image") == 0) {
			cfg.imds_image = v;
			i++;
		} else if (v && strcmp(a, "--cpu") == 0) {
			cfg.cpu = v;
			i++;
		} else if (v && strcmp(a, "--memory") == 0) {
			cfg.memory = v;
			i++;
		} else if (v && strcmp(a, "--memory-limit") == 0) {
			cfg.memory_limit = v;
			i++;
		} else if (v && strcmp(a, "--binding-plugin") == 0) {
			if (cfg.nplugins == IFC_MAX_PLUGINS ||
			    ifc_plugin_parse(v, &plugins[cfg.nplugins], perr, sizeof(perr)) < 0) {
				fprintf(stderr, "admission_cli: %s\n",
					cfg.nplugins == IFC_MAX_PLUGINS ? "too many --binding-plugin" : perr);
				return 2;
			}
			cfg.plugins = plugins;
			cfg.nplugins++;
			i++;
		} else if (v && strcmp(a, "--vendor-data-file") == 0) {
			FILE *f = fopen(v, "rb");
			size_t n = 0;
			if (!f || !(vendor = slurp(f, &n)) || memchr(vendor, '\0', n)) {
				fprintf(stderr, "admission_cli: %s: cannot read, or holds a NUL byte\n", v);
				return 2;
			}
			fclose(f);
			vendor[n] = '\0'; /* slurp leaves room: n < cap */
			cfg.vendor_data = vendor;
			i++;
		} else {
			fprintf(stderr, "usage: admission_cli [--container] [--agent] [--image IMG] "
					"[--vendor-data-file F] [--cpu Q] [--memory Q] [--memory-limit Q] "
					"[--binding-plugin NAME=KIND]...\n");
			return 2;
		}
	}
	char err[256];
	if (admission_config_check(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "admission_cli: %s\n", err);
		return 2;
	}
	size_t len = 0;
	char *body = slurp(stdin, &len);
	if (!body) {
		fprintf(stderr, "admission_cli: stdin: too large or out of memory\n");
		return 2;
	}
	struct admission adm = ADMISSION_INIT;
	struct admission_result res;
	admission_handle(&adm, &cfg, body, len, &res);
	fwrite(res.body, 1, res.body_len, stdout);
	fprintf(stderr, "status=%d kind=%s outcome=%s warnings=%zu reason=%s\n", res.http_status,
		admission_kind_name(res.kind), admission_outcome_name(res.outcome), res.warnings, res.reason);
	admission_result_free(&res);
	admission_cleanup(&adm);
	free(body);
	free(vendor);
	return 0;
}
