/* What the sidecar's handler tests share (test_imds.c, test_nocloud.c,
 * test_openstack.c, test_ec2.c, test_lifecycle.c, test_events.c, ...): a folder of files and the app built from
 * the environment (fixture.h), hand-built requests through imds_handle()
 * and their answers, the checks on them, and the data several layouts'
 * tests write.  imds_app_new(NULL, ...) makes no HTTP server.  Include
 * after cmocka.h. */
#ifndef IMDS_TEST_SIDECAR_HANDLER_H
#define IMDS_TEST_SIDECAR_HANDLER_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audience.h"
#include "blob.h"
#include "config.h"
#include "http.h"
#include "answer.h"
#include "imds.h"
#include "password.h"
#include "session.h"
#include "jwt.h"
#include "loop.h"
#include "fixture.h"

/* ---- the handler: fixture ------------------------------------------------------------ */

struct fx {
	char dir[256];
	char token[320];
	struct imds_config cfg;
	struct imds_app *app;
};

/* dir/name, in a static ring of buffers. */
static inline const char *in_dir(const struct fx *f, const char *name)
{
	static char buf[4][512];
	static int k;
	char *p = buf[k++ & 3];
	snprintf(p, sizeof(buf[0]), "%s/%s", f->dir, name);
	return p;
}

/* Writes a new file and renames it over path, as kubelet's atomic
 * writer does (a new inode every time). */
static inline void put_file(const char *path, const void *data, size_t n)
{
	fx_put_file(path, data, n);
}

static inline void put_str(const char *path, const char *s)
{
	put_file(path, s, strlen(s));
}

static inline int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	fx_mkdtemp(f->dir, sizeof(f->dir), "imds-unit");
	snprintf(f->token, sizeof(f->token), "%s/token", f->dir);
	fx_env_clear();
	setenv("IMDS_NAMESPACE", "default", 1);
	setenv("IMDS_VM_NAME", "vm1", 1);
	setenv("IMDS_POD_NAME", "virt-launcher-vm1-abcde", 1);
	setenv("IMDS_SA_NAME", "sa1", 1);
	setenv("IMDS_TOKEN_PATH", f->token, 1);
	setenv("IMDS_RATE_LIMIT", "0", 1);
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fx *f = *state;
	imds_app_free(f->app);
	fx_rm_tree(f->dir);
	free(f);
	fx_env_clear();
	return 0;
}

/* Reads the environment as it is now and creates the app. */
static inline struct imds_app *start(struct fx *f)
{
	return fx_app_start(&f->cfg, &f->app);
}

/* ---- the lifecycle's files (lifecycle.c, events.c) ------------------------------------- */

/* Writes <dir>/podinfo/<name> anew, as kubelet's atomic writer (a new
 * inode for each version). */
static inline void lc_put(struct fx *f, const char *name, const char *s)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/podinfo/%s", f->dir, name);
	put_str(path, s);
}

/* setup(), and IMDS_LIFECYCLE_DIR holding what kubelet writes for a source
 * pod of a LiveMigrate VM at rest. */
static inline int lc_setup(void **state)
{
	setup(state);
	struct fx *f = *state;
	assert_int_equal(mkdir(in_dir(f, "podinfo"), 0755), 0);
	setenv("IMDS_LIFECYCLE_DIR", in_dir(f, "podinfo"), 1);
	lc_put(f, "eviction-in-progress", "");
	lc_put(f, "eviction-strategy", "LiveMigrate");
	lc_put(f, "migration-job-uid", "");
	lc_put(f, "migration-target-ready", "");
	lc_put(f, "maintenance", "");
	return 0;
}

/* ---- the handler: requests and responses ----------------------------------------------- */

struct resp {
	int status;
	int park;     /* the handler asked to wait */
	unsigned park_ms;
	uint64_t park_tag; /* the note it parked with */
	const char *ctype;
	char extra[512];
	char *body; /* a NUL-terminated copy */
	size_t len;
};

/* The body of the next call() (then cleared). */
static struct http_span next_body;
/* The next call() is a parked request run again, with this note (then
 * cleared). */
static int next_parked;
static uint64_t next_park_tag;

/* Up to 8 headers as name, value pairs, ended by NULL. */
static inline void call(struct imds_app *a, const char *method, const char *target, uint64_t now,
		 const char *const *hdrs, struct resp *out)
{
	static struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.method = strcmp(method, "GET") == 0	 ? HTTP_M_GET
		    : strcmp(method, "HEAD") == 0 ? HTTP_M_HEAD
		    : strcmp(method, "POST") == 0 ? HTTP_M_POST
		    : strcmp(method, "PUT") == 0  ? HTTP_M_PUT
						  : HTTP_M_OTHER;
	rq.method_name = (struct http_span){method, strlen(method)};
	rq.target = (struct http_span){target, strlen(target)};
	const char *qm = strchr(target, '?');
	if (qm) {
		rq.path = (struct http_span){target, (size_t)(qm - target)};
		rq.query = (struct http_span){qm + 1, strlen(qm + 1)};
	} else {
		rq.path = rq.target;
	}
	rq.version_major = 1;
	rq.version_minor = 1;
	rq.hname[0] = (struct http_span){"Host", 4};
	rq.hvalue[0] = (struct http_span){"169.254.169.254", 15};
	rq.nheaders = 1;
	for (size_t i = 0; hdrs && hdrs[i]; i += 2) {
		rq.hname[rq.nheaders] = (struct http_span){hdrs[i], strlen(hdrs[i])};
		rq.hvalue[rq.nheaders] = (struct http_span){hdrs[i + 1], strlen(hdrs[i + 1])};
		rq.nheaders++;
	}
	rq.start_us = now;
	rq.body = next_body;
	next_body = (struct http_span){NULL, 0};
	rq.parked = next_parked;
	rq.park_tag = next_park_tag;
	next_parked = 0;
	next_park_tag = 0;

	struct http_response res;
	memset(&res, 0, sizeof(res));
	imds_handle(&rq, &res, a);
	out->status = res.status;
	out->park = res.park;
	out->park_ms = res.park_ms;
	out->park_tag = res.park_tag;
	out->ctype = res.content_type;
	memcpy(out->extra, res.extra, res.extra_len);
	out->extra[res.extra_len] = '\0';
	const char *p = res.blob ? res.blob->data : res.body;
	out->len = res.blob ? res.blob->len : res.body_len;
	out->body = malloc(out->len + 1);
	assert_non_null(out->body);
	if (out->len)
		memcpy(out->body, p, out->len);
	out->body[out->len] = '\0';
	/* The core would take this reference; the test stands in for it. */
	blob_unref(res.blob);
}

static inline void resp_free(struct resp *r)
{
	free(r->body);
	r->body = NULL;
}

/* A bare GET at now_us with these header pairs (NULL-ended), for a
 * module's function called without the handler (test_events.c,
 * test_session.c). */
static inline struct http_request bare_req(uint64_t now_us, const char *const *hdrs)
{
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.method = HTTP_M_GET;
	rq.start_us = now_us;
	for (size_t i = 0; hdrs && hdrs[i]; i += 2) {
		rq.hname[rq.nheaders] = (struct http_span){hdrs[i], strlen(hdrs[i])};
		rq.hvalue[rq.nheaders] = (struct http_span){hdrs[i + 1], strlen(hdrs[i + 1])};
		rq.nheaders++;
	}
	return rq;
}

/* "Name: value" is one of the extra header lines. */
static inline int has_header(const struct resp *r, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = r->extra; *p;) {
		const char *e = strstr(p, "\r\n");
		if (!e)
			return 0;
		if ((size_t)(e - p) == n && memcmp(p, line, n) == 0)
			return 1;
		p = e + 2;
	}
	return 0;
}

/* Valid JSON (the jwt walker is a strict RFC 8259 object parser) holding
 * no top-level "exp". */
static inline int json_object_ok(const struct resp *r)
{
	int64_t exp;
	return jwt_claims_exp(r->body, r->len, &exp) == -ENOENT;
}

/* The decoded string value of the first "key": in a JSON body, or NULL. */
static inline const char *json_str(const struct resp *r, const char *key)
{
	static char out[70000];
	char pat[80];
	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	const char *p = strstr(r->body, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	size_t o = 0;
	while (*p != '"') {
		if (!*p || o + 2 >= sizeof(out))
			return NULL;
		if (*p != '\\') {
			out[o++] = *p++;
			continue;
		}
		p++;
		switch (*p) {
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 't': out[o++] = '\t'; break;
		case 'b': out[o++] = '\b'; break;
		case 'f': out[o++] = '\f'; break;
		case '"': case '\\': case '/': out[o++] = *p; break;
		case 'u': {
			unsigned v = 0;
			for (int k = 1; k <= 4; k++) {
				char h = p[k];
				int d = h >= '0' && h <= '9' ? h - '0'
					: h >= 'a' && h <= 'f' ? h - 'a' + 10
					: h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
				if (d < 0)
					return NULL;
				v = v << 4 | (unsigned)d;
			}
			if (v > 0x7f)
				return NULL;
			out[o++] = (char)v;
			p += 4;
			break;
		}
		default:
			return NULL;
		}
		p++;
	}
	out[o] = '\0';
	return out;
}

#define EXPECT_STATUS(name, r, want)                                                          \
	do {                                                                                  \
		if ((r)->status != (want))                                                    \
			fail_msg("%s: status %d, want %d; body %.200s", (name), (r)->status, (want), \
				 (r)->body);                                                  \
	} while (0)

#define EXPECT_BODY(name, r, want)                                                            \
	do {                                                                                  \
		if ((r)->len != strlen(want) || memcmp((r)->body, (want), (r)->len) != 0)      \
			fail_msg("%s: body \"%.300s\", want \"%s\"", (name), (r)->body, (want)); \
	} while (0)

#define EXPECT_HEADER(name, r, line)                                                          \
	do {                                                                                  \
		if (!has_header((r), (line)))                                                 \
			fail_msg("%s: no \"%s\" in \"%s\"", (name), (line), (r)->extra);        \
	} while (0)

#define EXPECT_CTYPE(name, r, want)                                                           \
	do {                                                                                  \
		if (!(r)->ctype || strcmp((r)->ctype, (want)) != 0)                           \
			fail_msg("%s: Content-Type %s, want %s", (name),                      \
				 (r)->ctype ? (r)->ctype : "(none)", (want));                 \
	} while (0)

/* An error answer: status, JSON body with the code. */
static inline void expect_error(const char *name, const struct resp *r, int status, const char *code)
{
	EXPECT_STATUS(name, r, status);
	EXPECT_CTYPE(name, r, "application/json");
	if (!json_object_ok(r))
		fail_msg("%s: error body is not a JSON object: %s", name, r->body);
	const char *c = json_str(r, "error");
	if (!c || strcmp(c, code) != 0)
		fail_msg("%s: error code %s, want %s", name, c ? c : "(none)", code);
	if (!json_str(r, "message"))
		fail_msg("%s: no message", name);
}

__attribute__((unused)) static const char *const META[] = {"Metadata", "true", NULL};

/* A compact JWT whose payload is the given claims. */
static inline void make_jwt(char *out, size_t cap, const char *claims)
{
	static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t n = strlen(claims), o = 0;
	o += (size_t)snprintf(out, cap, "eyJhbGciOiJSUzI1NiIsImtpZCI6ImFiYyJ9.");
	const unsigned char *s = (const unsigned char *)claims;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) |
			     (i + 2 < n ? s[i + 2] : 0);
		size_t chars = n - i >= 3 ? 4 : n - i + 1;
		for (size_t k = 0; k < chars; k++)
			out[o++] = alpha[v >> (18 - 6 * k) & 63];
	}
	o += (size_t)snprintf(out + o, cap - o, ".c2lnbmF0dXJl");
	assert_true(o < cap);
}

/* ---- SSH keys, custom meta-data, the password (issue 11) --------------------------------- */

#define ED "AAAAC3NzaC1lZDI1NTE5AAAAIDOVXNOrJOZMHoR3LIYqD5UskjBYmN/wLkEBgV7K/0K0"
#define RSA "AAAAB3NzaC1yc2EAAAADAQABAAAAAQE="

static inline void post_password(struct imds_app *a, const char *path, const char *body, size_t n,
			  struct resp *r)
{
	next_body = (struct http_span){body, n};
	call(a, "POST", path, 0, NULL, r);
}

/* ---- ETags (issue 12) ---------------------------------------------------------------- */

/* The ETag header of a response: its quoted value, in a static buffer. */
__attribute__((noinline, unused)) static const char *etag_of(const struct resp *r)
{
	static char out[64];
	const char *p = strstr(r->extra, "ETag: ");
	if (!p)
		return NULL;
	p += 6;
	size_t n = strcspn(p, "\r");
	snprintf(out, sizeof(out), "%.*s", (int)n, p);
	return out;
}

/* ---- sessions (issue 12) --------------------------------------------------------------- */

static inline void open_session(struct imds_app *a, uint64_t now, const char *ttl, char out[64])
{
	struct resp r;
	const char *h[] = {"X-Metadata-Token-TTL-Seconds", ttl, NULL};
	call(a, "PUT", "/v1/session", now, h, &r);
	EXPECT_STATUS("PUT /v1/session", &r, 200);
	EXPECT_CTYPE("PUT /v1/session", &r, "text/plain");
	EXPECT_HEADER("PUT /v1/session", &r, "Cache-Control: no-store");
	assert_int_equal(r.len, SESSION_TOKEN_LEN);
	for (size_t i = 0; i < r.len; i++)
		assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", r.body[i]));
	snprintf(out, 64, "%s", r.body);
	resp_free(&r);
}

/* ---- the EC2 tree ----------------------------------------------------------------------- */

/* A keys folder: alice holds an ed25519 and an RSA key, bob one RSA key. */
static inline void ec2_keys(struct fx *f)
{
	char dir[512], cmd[700];
	snprintf(dir, sizeof(dir), "%s", in_dir(f, "keys"));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
	assert_int_equal(system(cmd), 0);
	put_str(in_dir(f, "keys/alice"), "ssh-ed25519 " ED " a@x\nssh-rsa " RSA " a@y\n");
	put_str(in_dir(f, "keys/bob"), "ssh-rsa " RSA " b@z\n");
	setenv("IMDS_SSH_KEYS_DIR", dir, 1);
}

__attribute__((unused)) static const char NETSTATUS[] =
	"[{\"name\":\"k8s-pod-network\",\"interface\":\"eth0\",\"ips\":[\"10.244.1.5\",\"fd00::5\"],"
	"\"mac\":\"0a:58:0a:f4:01:05\",\"default\":true,\"dns\":{}},"
	"{\"name\":\"demo/br1\",\"interface\":\"pod26578a32802\",\"ips\":[\"192.168.10.7\"],"
	"\"mac\":\"02:4B:b0:00:00:01\"},"
	"{\"name\":\"demo/br2\",\"interface\":\"net/2\",\"mac\":\"02:4b:b0:00:00:02\"},"
	"{\"name\":\"demo/nomac\",\"interface\":\"pod1\"}]";

static inline void get_is(struct imds_app *a, const char *target, int status, const char *body)
{
	struct resp r;
	call(a, "GET", target, 0, NULL, &r);
	EXPECT_STATUS(target, &r, status);
	if (body)
		EXPECT_BODY(target, &r, body);
	resp_free(&r);
}

/* ---- the lifecycle's dialects (test_lifecycle.c, test_events.c) ------------------------ */

__attribute__((unused)) static const char *const GOOGLE[] = {"Metadata-Flavor", "Google", NULL};
__attribute__((unused)) static const char *const AZURE[] = {"Metadata", "true", NULL};
#define MAINT "/computeMetadata/v1/instance/maintenance-event"
#define SCHED "/metadata/scheduledevents?api-version=2020-07-01"
#define EC2EV "/latest/meta-data/events/maintenance/scheduled"
#define SPOT "/latest/meta-data/spot/instance-action"

/* call() with a body (NULL: none). */
static inline void call_body(struct imds_app *a, const char *method, const char *target,
			     const char *const *hdrs, const char *body, struct resp *out)
{
	if (body)
		next_body = (struct http_span){body, strlen(body)};
	call(a, method, target, 0, hdrs, out);
}

/* GET target: its body, the status checked (one slot: valid until the next
 * get_want()). */
static inline const char *get_want(struct imds_app *a, const char *target, const char *const *hdrs,
				   int want)
{
	static struct resp r;
	resp_free(&r);
	call(a, "GET", target, 0, hdrs, &r);
	if (r.status != want)
		fail_msg("GET %s: %d %s, want %d", target, r.status, r.body, want);
	return r.body;
}

#endif
