/* libFuzzer: the whole request path — HTTP core (llhttp, limits,
 * pipelining) and the sidecar's handler — fed through a socketpair, as a
 * guest's bytes would arrive.  Built from the real sources. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "http.h"
#include "imds.h"
#include "loop.h"
#include "peer_close.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct loop *loop;
static struct http_server *srv;
static struct imds_app *app;
static struct imds_config cfg;
static char dir[] = "/tmp/fuzz-http.XXXXXX";

static void put(const char *name, const char *content)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(content, f);
		fclose(f);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!mkdtemp(dir))
		abort();
	char p[256];
	snprintf(p, sizeof(p), "%s/aud", dir);
	mkdir(p, 0700);
	put("token", "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2ln\n");
	put("aud/token", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln");
	put("ud", "#cloud-config\nhostname: fuzz\n");
	put("vd", "#cloud-config\n{}\n");
	/* The lifecycle events with a migration pending: every dialect has an
	 * event to render, Azure's an id to acknowledge. */
	put("eviction-in-progress", "true");
	put("eviction-strategy", "LiveMigrate");
	setenv("IMDS_LIFECYCLE_DIR", dir, 1);
	setenv("IMDS_NAMESPACE", "ns", 1);
	setenv("IMDS_VM_NAME", "vm", 1);
	setenv("IMDS_RATE_LIMIT", "0", 1);
	snprintf(p, sizeof(p), "%s/token", dir);
	setenv("IMDS_TOKEN_PATH", p, 1);
	snprintf(p, sizeof(p), "%s/ud", dir);
	setenv("IMDS_USER_DATA_FILE", p, 1);
	snprintf(p, sizeof(p), "%s/vd", dir);
	setenv("IMDS_VENDOR_DATA_FILE", p, 1);
	char err[256];
	if (config_from_env(&cfg, err, sizeof(err)) < 0)
		abort();
	loop = loop_new(64);
	app = imds_app_new(NULL, &cfg, err, sizeof(err));
	if (!loop || !app)
		abort();
	srv = http_server_new(loop, &cfg.limits, imds_handle, NULL, app);
	if (!srv)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	int big = 1 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (http_server_adopt(srv, sv[1], NULL) < 0)
		abort();
	/* Feed in two pieces at a data-chosen cut, so split heads are covered. */
	size_t cut = size ? data[0] % (size + 1) : 0;
	char sink[65536];
	size_t off = 0;
	for (int part = 0; part < 2; part++) {
		size_t end = part ? size : cut;
		while (off < end) {
			ssize_t w = send(sv[0], data + off, end - off, MSG_NOSIGNAL);
			if (w <= 0)
				break;
			off += (size_t)w;
			while (loop_once(loop, 0) > 0)
				while (read(sv[0], sink, sizeof(sink)) > 0)
					;
		}
		while (loop_once(loop, 0) > 0)
			while (read(sv[0], sink, sizeof(sink)) > 0)
				;
	}
	close(sv[0]);
	/* Every connection must be gone once its peer closed: the hangup is
	 * waited for (peer_close.h says why it can come late), 5 s at most. */
	if (drain_after_peer_close(loop, srv, 5000) != 0) {
		fprintf(stderr, "fuzz_http: a connection outlived its peer by 5 s\n");
		abort();
	}
	return 0;
}
