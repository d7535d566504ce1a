#include "imds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audience.h"
#include "blob.h"
#include "dfile.h"
#include "jwt.h"
#include "log.h"
#include "rate.h"
#include "sbuf.h"
#include "serve.h"
#include "yaml.h"

/* Projected service-account tokens are 1-2 KiB; 64 KiB bounds a broken
 * file without ever cutting a real token. */
#define TOKEN_MAX 65536

struct imds_app {
	const struct imds_config *cfg;
	struct http_server *http;
	struct rate rate;
	struct blob *identity;    /* fixed answers, built once */
	struct blob *meta_data;
	struct blob *os_meta;
	struct blob *user_inline; /* IMDS_USER_DATA */
	struct dfile user, vendor, netcfg;
	char token_dir[4096];
	char *tok;                /* TOKEN_MAX + 1 */
	char *body;               /* token answer */
	size_t body_cap;
};

/* ---- helpers -------------------------------------------------------------- */

int imds_query_param(const char *q, size_t qn, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key);
	size_t i = 0;
	while (i <= qn) {
		size_t end = i;
		while (end < qn && q[end] != '&')
			end++;
		if (end - i > klen && memcmp(q + i, key, klen) == 0 && q[i + klen] == '=') {
			size_t o = 0;
			for (size_t j = i + klen + 1; j < end; j++) {
				char c = q[j];
				if (c == '%') {
					if (j + 2 >= end)
						return -EINVAL;
					int a = sbuf_hexval(q[j + 1]), b = sbuf_hexval(q[j + 2]);
					if (a < 0 || b < 0)
						return -EINVAL;
					c = (char)(a << 4 | b);
					j += 2;
				} else if (c == '+') {
					c = ' ';
				}
				if (o + 1 >= cap)
					return -ENOSPC;
				out[o++] = c;
			}
			if (o >= cap)
				return -ENOSPC; /* cap 0: not even room for the NUL */
			out[o] = '\0';
			return (int)o;
		}
		i = end + 1;
	}
	return -ENOENT;
}

static struct blob *sbuf_blob(struct sbuf *b)
{
	return b->overflow ? NULL : blob_new(b->p, b->len);
}

static void json_field(struct sbuf *b, const char *key, const char *v, int comma)
{
	sbuf_printf(b, "%s\"%s\":\"", comma ? "," : "", key);
	if (v)
		sbuf_json_escape(b, v, strlen(v));
	sbuf_putc(b, '"');
}

/* ---- fixed answers ---------------------------------------------------------- */

static int build_fixed(struct imds_app *a, const char *iid)
{
	const struct imds_config *c = a->cfg;
	char buf[4096];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	sbuf_putc(&b, '{');
	json_field(&b, "namespace", c->ns, 0);
	json_field(&b, "serviceAccountName", c->sa_name, 1);
	json_field(&b, "vmName", c->vm_name, 1);
	json_field(&b, "podName", c->pod_name, 1);
	json_field(&b, "instanceId", iid, 1);
	sbuf_puts(&b, "}\n");
	a->identity = sbuf_blob(&b);

	b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
	sbuf_puts(&b, "instance-id: ");
	yaml_scalar(&b, iid, strlen(iid));
	sbuf_puts(&b, "\nlocal-hostname: ");
	yaml_scalar(&b, c->vm_name, strlen(c->vm_name));
	sbuf_putc(&b, '\n');
	a->meta_data = sbuf_blob(&b);

	/* OpenStack's meta_data.json as cloudbase-init and cloud-init read it:
	 * uuid is the instance id, hostname/name the VM name. */
	b = (struct sbuf)SBUF_INIT(buf, sizeof(buf));
	sbuf_putc(&b, '{');
	json_field(&b, "uuid", iid, 0);
	json_field(&b, "name", c->vm_name, 1);
	json_field(&b, "hostname", c->vm_name, 1);
	json_field(&b, "project_id", c->ns, 1);
	sbuf_puts(&b, ",\"availability_zone\":\"\",\"launch_index\":0,\"public_keys\":{},\"meta\":{");
	json_field(&b, "namespace", c->ns, 0);
	json_field(&b, "vmName", c->vm_name, 1);
	sbuf_puts(&b, "}}\n");
	a->os_meta = sbuf_blob(&b);
	return a->identity && a->meta_data && a->os_meta ? 0 : -ENOMEM;
}

/* ---- answers ---------------------------------------------------------------- */

static void send_blob(struct http_response *res, const char *ctype, struct blob *b)
{
	res->status = 200;
	res->content_type = ctype;
	if (b) {
		res->blob = blob_ref(b); /* the core takes this reference */
	} else {
		res->body = "";
		res->body_len = 0;
	}
}

static const char *trim(const char *p, size_t *n)
{
	while (*n && (p[0] == ' ' || p[0] == '\n' || p[0] == '\r' || p[0] == '\t')) {
		p++;
		(*n)--;
	}
	while (*n && (p[*n - 1] == ' ' || p[*n - 1] == '\n' || p[*n - 1] == '\r' ||
		      p[*n - 1] == '\t'))
		(*n)--;
	return p;
}

/* Reads path into a->tok.  Length, or -errno. */
static ssize_t read_token(struct imds_app *a, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	ssize_t r = 0;
	while (len <= TOKEN_MAX) {
		r = read(fd, a->tok + len, TOKEN_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	int e = errno;
	close(fd);
	if (r < 0)
		return -e;
	if (len > TOKEN_MAX)
		return -EFBIG;
	return (ssize_t)len;
}

static void unavailable(struct http_response *res, const char *msg)
{
	http_res_error(res, 503, "token_unavailable", msg);
	http_res_header(res, "Retry-After", "1");
}

static void do_token(struct imds_app *a, const struct http_request *req, struct http_response *res)
{
	char path[4096 + 512];
	const char *tpath = a->cfg->token_path;
	char aud[512], dir[1600];
	int an = imds_query_param(req->query.p, req->query.n, "audience", aud, sizeof(aud));
	if (an == -EINVAL || an == -ENOSPC || an > 500) {
		http_res_error(res, 400, "bad_audience", "audience: malformed or longer than 500 bytes");
		return;
	}
	if (an > 0) {
		if (audience_dir(aud, (size_t)an, dir, sizeof(dir)) < 0) {
			http_res_error(res, 400, "bad_audience",
				       "audience: must be printable ASCII without spaces");
			return;
		}
		struct sbuf pb = SBUF_INIT(path, sizeof(path));
		sbuf_printf(&pb, "%s/%s", a->token_dir, dir);
		struct stat st;
		/* Only a directory is an audience: the token volume also holds the
		 * default `token` file and kubelet's `..data` entries. */
		if (pb.overflow || stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
			/* No projected volume for it: the webhook mounts one per
			 * audience named in imds.kubevirt.io/token-audience. */
			http_res_error(res, 404, "unknown_audience",
				       "no token is configured for this audience");
			return;
		}
		sbuf_puts(&pb, "/token");
		if (pb.overflow) {
			http_res_error(res, 400, "bad_audience", "audience: too long");
			return;
		}
		tpath = path;
	}
	ssize_t n = read_token(a, tpath);
	if (n == -EFBIG) {
		http_res_error(res, 500, "token_invalid", "token file is larger than 64 KiB");
		return;
	}
	if (n < 0) {
		/* Kubelet writes the projected token shortly after start; say
		 * when to come back rather than fail the guest. */
		unavailable(res, "token file is not readable yet");
		return;
	}
	size_t tlen = (size_t)n;
	const char *t = trim(a->tok, &tlen);
	if (tlen == 0) {
		unavailable(res, "token file is empty");
		return;
	}
	struct sbuf b = SBUF_INIT(a->body, a->body_cap);
	sbuf_puts(&b, "{\"token\":\"");
	sbuf_json_escape(&b, t, tlen);
	sbuf_putc(&b, '"');
	int64_t exp;
	char when[21];
	if (jwt_exp(t, tlen, &exp) == 0 && jwt_format_time(exp, when) == 0)
		sbuf_printf(&b, ",\"expirationTimestamp\":\"%s\"", when);
	sbuf_puts(&b, "}\n");
	if (b.overflow) {
		http_res_error(res, 500, "token_invalid", "token does not fit the answer");
		return;
	}
	http_res_text(res, 200, "application/json", b.p, b.len);
}

static const char os_versions[] = "2012-08-10\n2013-04-04\n2013-10-17\n2015-10-15\n2016-06-30\n"
				  "2016-10-06\n2017-02-22\n2018-08-27\nlatest\n";
static const char os_files[] = "meta_data.json\nuser_data\nvendor_data.json\nnetwork_data.json\n";

static struct blob *user_data(struct imds_app *a)
{
	/* The file wins over the inline variable. */
	return a->cfg->user_data_file ? dfile_get(&a->user) : a->user_inline;
}

static int os_version_ok(const char *v, size_t n)
{
	if (n == 6 && memcmp(v, "latest", 6) == 0)
		return 1;
	if (n != 10 || v[4] != '-' || v[7] != '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && i != 7 && (v[i] < '0' || v[i] > '9'))
			return 0;
	return 1;
}

/* /openstack/... : the layout of OpenStack's metadata service, for
 * cloudbase-init on Windows (and cloud-init's OpenStack datasource). */
static int do_openstack(struct imds_app *a, struct http_span p, struct http_response *res)
{
	const char *s = p.p + 10; /* after "/openstack" */
	size_t n = p.n - 10;
	if (n == 0 || (n == 1 && s[0] == '/')) {
		http_res_text(res, 200, "text/plain", os_versions, sizeof(os_versions) - 1);
		return 1;
	}
	if (s[0] != '/')
		return 0;
	s++;
	n--;
	const char *slash = memchr(s, '/', n);
	size_t vlen = slash ? (size_t)(slash - s) : n;
	if (!os_version_ok(s, vlen))
		return 0;
	const char *f = slash ? slash + 1 : s + n;
	size_t fn = slash ? n - vlen - 1 : 0;
	if (fn == 0) {
		http_res_text(res, 200, "text/plain", os_files, sizeof(os_files) - 1);
		return 1;
	}
	struct http_span file = {f, fn};
	if (http_span_eq(file, "meta_data.json")) {
		send_blob(res, "application/json", a->os_meta);
	} else if (http_span_eq(file, "user_data")) {
		struct blob *u = user_data(a);
		/* Nova answers 404 when an instance has no user data, and both
		 * cloudbase-init and cloud-init read that as "none". */
		if (!u || u->len == 0)
			http_res_error(res, 404, "not_found", "no user data");
		else
			send_blob(res, "application/octet-stream", u);
	} else if (http_span_eq(file, "vendor_data.json")) {
		/* Vendor data goes in the "cloud-init" key, which cloud-init's
		 * OpenStack datasource unwraps. */
		struct blob *v = dfile_get(&a->vendor);
		if (!v || v->len == 0) {
			http_res_text(res, 200, "application/json", "{}\n", 3);
		} else {
			size_t cap = v->len * 6 + 32;
			char *tmp = malloc(cap);
			if (!tmp) {
				http_res_error(res, 500, "internal", "out of memory");
				return 1;
			}
			struct sbuf b = SBUF_INIT(tmp, cap);
			sbuf_puts(&b, "{\"cloud-init\":\"");
			sbuf_json_escape(&b, v->data, v->len);
			sbuf_puts(&b, "\"}\n");
			res->blob = blob_new(b.p, b.len);
			free(tmp);
			res->status = res->blob ? 200 : 500;
			res->content_type = "application/json";
		}
	} else if (http_span_eq(file, "network_data.json")) {
		/* network-config is cloud-init YAML (v1/v2), which has no
		 * OpenStack form without a YAML parser; guests of this layout
		 * (Windows) take DHCP, so an empty network_data is exact. */
		static const char empty[] = "{\"links\":[],\"networks\":[],\"services\":[]}\n";
		http_res_text(res, 200, "application/json", empty, sizeof(empty) - 1);
	} else {
		return 0;
	}
	return 1;
}

static int forwarded(const struct http_request *req)
{
	return http_req_header(req, "x-forwarded-for", NULL) || http_req_header(req, "forwarded", NULL);
}

/* Token and identity: only a direct request from inside the guest. */
static int guard(const struct http_request *req, struct http_response *res)
{
	http_res_header(res, "Cache-Control", "no-store");
	if (forwarded(req)) {
		/* A proxy in the guest relaying for someone else (SSRF). */
		http_res_error(res, 403, "forbidden", "proxied requests are not allowed");
		return -1;
	}
	unsigned count = 0;
	const struct http_span *m = http_req_header(req, "metadata", &count);
	if (!m || count != 1 || !http_span_eq(*m, "true")) {
		http_res_error(res, 400, "missing_header", "Metadata: true header is required");
		return -1;
	}
	return 0;
}

void imds_handle(const struct http_request *req, struct http_response *res, void *app)
{
	struct imds_app *a = app;
	struct http_span p = req->path;
	if (req->method != HTTP_M_GET && req->method != HTTP_M_HEAD) {
		http_res_error(res, 405, "method_not_allowed", "only GET and HEAD are supported");
		http_res_header(res, "Allow", "GET, HEAD");
		return;
	}
	if (!rate_take(&a->rate, req->start_us)) {
		http_res_error(res, 429, "rate_limited", "too many requests");
		http_res_header(res, "Retry-After", "1");
		return;
	}
	if (http_span_eq(p, "/v1/meta-data")) {
		send_blob(res, "text/yaml", a->meta_data);
	} else if (http_span_eq(p, "/v1/user-data")) {
		send_blob(res, "application/octet-stream", user_data(a));
	} else if (http_span_eq(p, "/v1/vendor-data")) {
		send_blob(res, "application/octet-stream", dfile_get(&a->vendor));
	} else if (http_span_eq(p, "/v1/network-config")) {
		send_blob(res, "text/yaml", dfile_get(&a->netcfg));
	} else if (http_span_eq(p, "/v1/identity")) {
		if (guard(req, res) == 0)
			send_blob(res, "application/json", a->identity);
	} else if (http_span_eq(p, "/v1/token")) {
		if (guard(req, res) == 0)
			do_token(a, req, res);
	} else if (http_span_eq(p, "/healthz")) {
		http_res_text(res, 200, "text/plain", "OK", 2);
	} else if (p.n >= 10 && memcmp(p.p, "/openstack", 10) == 0 && do_openstack(a, p, res)) {
		/* answered */
	} else {
		/* Windows probes many paths at boot: say no at once. */
		http_res_error(res, 404, "not_found", "no such path");
	}
}

/* ---- lifecycle ---------------------------------------------------------------- */

struct imds_app *imds_app_new(struct loop *l, const struct imds_config *cfg, char *err,
			      size_t errlen)
{
	struct imds_app *a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->cfg = cfg;
	char iid_buf[600];
	const char *iid = cfg->instance_id;
	if (!iid) {
		snprintf(iid_buf, sizeof(iid_buf), "%s-%s", cfg->ns, cfg->vm_name);
		iid = iid_buf;
	}
	const char *slash = strrchr(cfg->token_path, '/');
	size_t dlen = (size_t)(slash - cfg->token_path);
	if (dlen >= sizeof(a->token_dir)) {
		snprintf(err, errlen, "IMDS_TOKEN_PATH: too long");
		goto fail;
	}
	memcpy(a->token_dir, cfg->token_path, dlen);
	a->token_dir[dlen] = '\0';
	a->body_cap = TOKEN_MAX * 6 / 5 + 256;
	a->tok = malloc(TOKEN_MAX + 1);
	a->body = malloc(a->body_cap);
	if (!a->tok || !a->body || build_fixed(a, iid) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (cfg->user_data && !cfg->user_data_file) {
		a->user_inline = blob_new(cfg->user_data, strlen(cfg->user_data));
		if (!a->user_inline) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	if (dfile_open(&a->user, "IMDS_USER_DATA_FILE", cfg->user_data_file, err, errlen) < 0 ||
	    dfile_open(&a->vendor, "IMDS_VENDOR_DATA_FILE", cfg->vendor_data_file, err, errlen) < 0 ||
	    dfile_open(&a->netcfg, "IMDS_NETWORK_CONFIG_FILE", cfg->network_config_file, err,
		       errlen) < 0)
		goto fail;
	rate_init(&a->rate, cfg->rate_limit, cfg->rate_limit, loop_clock_us());
	if (l) {
		a->http = http_server_new(l, &cfg->limits, imds_handle, serve_access_log, a);
		if (!a->http) {
			snprintf(err, errlen, "cannot start the HTTP server: %s", strerror(errno));
			goto fail;
		}
	}
	return a;
fail:
	imds_app_free(a);
	return NULL;
}

void imds_app_free(struct imds_app *a)
{
	if (!a)
		return;
	http_server_free(a->http);
	dfile_close(&a->user);
	dfile_close(&a->vendor);
	dfile_close(&a->netcfg);
	blob_unref(a->identity);
	blob_unref(a->meta_data);
	blob_unref(a->os_meta);
	blob_unref(a->user_inline);
	free(a->tok);
	free(a->body);
	free(a);
}

struct http_server *imds_app_http(struct imds_app *a)
{
	return a->http;
}
