#include "imds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audience.h"
#include "blob.h"
#include "dfile.h"
#include "jwt.h"
#include "log.h"
#include "metajson.h"
#include "rate.h"
#include "sbuf.h"
#include "serve.h"
#include "sshkeys.h"
#include "yaml.h"

/* Projected service-account tokens are 1-2 KiB; 64 KiB bounds a broken
 * file without ever cutting a real token. */
#define TOKEN_MAX 65536

struct imds_app {
	const struct imds_config *cfg;
	struct http_server *http;
	struct rate rate;
	struct blob *identity;    /* built once */
	struct blob *meta_data;   /* rebuilt when the keys or custom meta-data change */
	struct blob *os_meta;
	struct blob *user_inline; /* IMDS_USER_DATA */
	struct dfile user, vendor, netcfg;
	struct sshkeys keys;      /* IMDS_SSH_KEYS_DIR */
	struct dfile custom;      /* IMDS_META_DATA_FILE */
	struct blob *custom_seen; /* the custom bytes meta_data was built from (a reference) */
	char iid[600];
	struct blob *password;    /* posted by the guest; NULL: none yet */
	int netcfg_asked;         /* a guest asked for /v1/network-config */
	int netcfg_told;          /* ... or the log said why it had no effect */
	struct session *sessions; /* IMDS_SESSIONS_MAX; expires_us 0: free */
	unsigned sessions_used;   /* slots [0, sessions_used) were ever taken */
	struct loop *loop;
	int ino_fd;               /* inotify on the data files' folders; -1: none */
	char pw_path[4096];       /* IMDS_STATE_DIR/password; "" without a state dir */
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

static int build_identity(struct imds_app *a)
{
	const struct imds_config *c = a->cfg;
	char buf[4096];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	sbuf_putc(&b, '{');
	json_field(&b, "namespace", c->ns, 0);
	json_field(&b, "serviceAccountName", c->sa_name, 1);
	json_field(&b, "vmName", c->vm_name, 1);
	json_field(&b, "podName", c->pod_name, 1);
	json_field(&b, "instanceId", a->iid, 1);
	sbuf_puts(&b, "}\n");
	a->identity = sbuf_blob(&b);
	return a->identity ? 0 : -ENOMEM;
}

/* ---- meta-data: ours, the SSH keys, the custom keys ----------------------------- */

/* Keys the sidecar writes itself (the webhook refuses them in the
 * annotation; a file that has them anyway loses them, logged). */
static int reserved_key(const struct metakv *kv)
{
	static const char *const names[] = {"instance-id", "local-hostname", "public-keys",
					    "hostname",    "uuid",           NULL};
	for (const char *const *r = names; *r; r++)
		if (strlen(*r) == kv->kn && memcmp(*r, kv->k, kv->kn) == 0)
			return 1;
	return 0;
}

/* OpenStack's name of key k: its entry, "-N" appended when the entry holds several. */
static void os_key_name(struct sbuf *b, const struct sshkey *k)
{
	sbuf_json_escape(b, k->entry, strlen(k->entry));
	if (k->of > 1)
		sbuf_printf(b, "-%u", k->nth);
}

static void yaml_line(struct sbuf *b, const char *key, const char *v, size_t vn)
{
	sbuf_puts(b, key);
	yaml_scalar(b, v, vn);
	sbuf_putc(b, '\n');
}

/* NoCloud meta-data (YAML) and OpenStack's meta_data.json, from the VM's
 * names, the SSH keys and the custom meta-data in a->custom_seen. */
static int build_meta(struct imds_app *a, int custom_changed)
{
	const struct imds_config *c = a->cfg;
	struct metajson mj = {0};
	const struct blob *cu = a->custom_seen;
	char err[200];
	if (cu && cu->len && metajson_parse(cu->data, cu->len, &mj, err, sizeof(err)) < 0 &&
	    custom_changed)
		log_error("meta-data: IMDS_META_DATA_FILE is not a JSON object of strings (%s); "
			  "custom keys left out", err);
	int skip[METAJSON_MAX_KEYS] = {0};
	/* Worst case: every byte escaped (JSON \u00XX, 6 bytes), in both forms. */
	size_t cap = 4096 + strlen(a->iid) * 12 + strlen(c->vm_name) * 24;
	for (unsigned i = 0; i < a->keys.n; i++)
		cap += (strlen(a->keys.k[i].entry) * 2 + strlen(a->keys.k[i].line) * 3) * 6 + 128;
	for (size_t i = 0; i < mj.n; i++) {
		cap += (mj.kv[i].kn + mj.kv[i].vn) * 12 + 32;
		skip[i] = reserved_key(&mj.kv[i]);
		if (skip[i] && custom_changed)
			log_error("meta-data: key '%s' of IMDS_META_DATA_FILE is reserved, ignored",
				  mj.kv[i].k);
		else if (strcmp(mj.kv[i].k, "namespace") == 0 || strcmp(mj.kv[i].k, "vmName") == 0)
			skip[i] = 2; /* NoCloud only: OpenStack's "meta" has ours */
	}
	char *buf = malloc(cap);
	if (!buf) {
		metajson_free(&mj);
		return -ENOMEM;
	}
	struct sbuf b = SBUF_INIT(buf, cap);
	yaml_line(&b, "instance-id: ", a->iid, strlen(a->iid));
	yaml_line(&b, "local-hostname: ", c->vm_name, strlen(c->vm_name));
	if (a->keys.n)
		sbuf_puts(&b, "public-keys:\n");
	for (unsigned i = 0; i < a->keys.n; i++)
		yaml_line(&b, "  - ", a->keys.k[i].line, strlen(a->keys.k[i].line));
	for (size_t i = 0; i < mj.n; i++) {
		if (skip[i] == 1)
			continue;
		yaml_scalar(&b, mj.kv[i].k, mj.kv[i].kn);
		yaml_line(&b, ": ", mj.kv[i].v, mj.kv[i].vn);
	}
	struct blob *md = sbuf_blob(&b);

	/* OpenStack's meta_data.json as cloudbase-init and cloud-init read it:
	 * uuid is the instance id, hostname/name the VM name. */
	b = (struct sbuf)SBUF_INIT(buf, cap);
	sbuf_putc(&b, '{');
	json_field(&b, "uuid", a->iid, 0);
	json_field(&b, "name", c->vm_name, 1);
	json_field(&b, "hostname", c->vm_name, 1);
	json_field(&b, "project_id", c->ns, 1);
	sbuf_puts(&b, ",\"availability_zone\":\"\",\"launch_index\":0,\"public_keys\":{");
	for (unsigned i = 0; i < a->keys.n; i++) {
		sbuf_puts(&b, i ? ",\"" : "\"");
		os_key_name(&b, &a->keys.k[i]);
		sbuf_puts(&b, "\":\"");
		sbuf_json_escape(&b, a->keys.k[i].line, strlen(a->keys.k[i].line));
		sbuf_putc(&b, '"');
	}
	sbuf_putc(&b, '}');
	if (a->keys.n) /* as Nova: "keys" only for an instance with keys */
		sbuf_puts(&b, ",\"keys\":[");
	for (unsigned i = 0; i < a->keys.n; i++) {
		sbuf_puts(&b, i ? ",{\"name\":\"" : "{\"name\":\"");
		os_key_name(&b, &a->keys.k[i]);
		sbuf_puts(&b, "\",\"type\":\"ssh\",\"data\":\"");
		sbuf_json_escape(&b, a->keys.k[i].line, strlen(a->keys.k[i].line));
		sbuf_puts(&b, "\"}");
	}
	sbuf_puts(&b, a->keys.n ? "],\"meta\":{" : ",\"meta\":{");
	json_field(&b, "namespace", c->ns, 0);
	json_field(&b, "vmName", c->vm_name, 1);
	for (size_t i = 0; i < mj.n; i++) {
		if (skip[i])
			continue;
		sbuf_puts(&b, ",\"");
		sbuf_json_escape(&b, mj.kv[i].k, mj.kv[i].kn);
		sbuf_puts(&b, "\":\"");
		sbuf_json_escape(&b, mj.kv[i].v, mj.kv[i].vn);
		sbuf_putc(&b, '"');
	}
	sbuf_puts(&b, "}}\n");
	struct blob *os = sbuf_blob(&b);
	free(buf);
	metajson_free(&mj);
	if (!md || !os) {
		blob_unref(md);
		blob_unref(os);
		return -ENOMEM;
	}
	blob_unref(a->meta_data);
	blob_unref(a->os_meta);
	a->meta_data = md;
	a->os_meta = os;
	return 0;
}

/* Before a meta-data answer: one lstat for the keys, one stat for the
 * custom file; a rebuild only when either changed. */
static void refresh_meta(struct imds_app *a)
{
	int keys = sshkeys_refresh(&a->keys);
	struct blob *cu = a->cfg->meta_data_file ? dfile_get(&a->custom) : NULL;
	int custom = cu != a->custom_seen;
	if (!keys && !custom)
		return;
	blob_unref(a->custom_seen);
	a->custom_seen = cu ? blob_ref(cu) : NULL;
	if (build_meta(a, custom) < 0)
		log_error("meta-data: out of memory, serving the previous answer");
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

/* ---- validators: ETag and If-None-Match (RFC 9110 §8.8.3, §13.1.2) ---------- */

static void tag_text(uint64_t tag, char out[19])
{
	snprintf(out, 19, "\"%016llx\"", (unsigned long long)tag);
}

int imds_inm_match(const struct http_request *req, uint64_t tag)
{
	char want[19];
	tag_text(tag, want);
	for (unsigned h = 0; h < req->nheaders; h++) {
		struct http_span n = req->hname[h], v = req->hvalue[h];
		if (n.n != 13 || strncasecmp(n.p, "if-none-match", 13) != 0)
			continue;
		size_t i = 0;
		while (i < v.n) {
			while (i < v.n && (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == ','))
				i++;
			if (i == v.n)
				break;
			if (v.p[i] == '*')
				return 1;
			/* weak comparison: W/"x" matches "x" */
			if (v.n - i >= 2 && v.p[i] == 'W' && v.p[i + 1] == '/')
				i += 2;
			if (i == v.n || v.p[i] != '"')
				break; /* not an entity-tag: the field is ignored from here */
			size_t j = i + 1;
			while (j < v.n && v.p[j] != '"')
				j++;
			if (j == v.n)
				break;
			if (j + 1 - i == 18 && memcmp(v.p + i, want, 18) == 0)
				return 1;
			i = j + 1;
		}
	}
	return 0;
}

/* The tag of the data answer being built (0: none): what a wait compares. */
static uint64_t answer_tag;

/* A 200 with a validator, or 304 when the client has these bytes already. */
static void tagged(const struct http_request *req, struct http_response *res, uint64_t tag)
{
	char t[19];
	answer_tag = tag;
	tag_text(tag, t);
	http_res_header(res, "ETag", t);
	if (res->status == 200 && imds_inm_match(req, tag)) {
		res->status = 304;
		res->content_type = NULL;
		blob_unref(res->blob);
		res->blob = NULL;
		res->body = NULL;
		res->body_len = 0;
	}
}

static void send_data(const struct http_request *req, struct http_response *res,
		      const char *ctype, struct blob *b)
{
	send_blob(res, ctype, b);
	tagged(req, res, b ? blob_tag(b) : blob_hash("", 0));
}

static void send_data_text(const struct http_request *req, struct http_response *res,
			   const char *ctype, const char *p, size_t n)
{
	http_res_text(res, 200, ctype, p, n);
	tagged(req, res, blob_hash(p, n));
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
	send_data_text(req, res, "application/json", b.p, b.len);
}

static const char os_versions[] = "2012-08-10\n2013-04-04\n2013-10-17\n2015-10-15\n2016-06-30\n"
				  "2016-10-06\n2017-02-22\n2018-08-27\nlatest\n";
static const char os_files[] = "meta_data.json\nuser_data\nvendor_data.json\nnetwork_data.json\n";
/* Nova has the password from 2013-04-04 on. */
static const char os_files_pw[] =
	"meta_data.json\nuser_data\nvendor_data.json\nnetwork_data.json\npassword\n";

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

static int os_has_password(const char *v, size_t n)
{
	return (n == 6 && memcmp(v, "latest", 6) == 0) || (n == 10 && memcmp(v, "2013-04-04", 10) >= 0);
}

/* /openstack/<version>/password, for a version that has it. */
static int os_password_path(struct http_span p)
{
	static const char pre[] = "/openstack/", suf[] = "/password";
	size_t pl = sizeof(pre) - 1, sl = sizeof(suf) - 1;
	if (p.n <= pl + sl || memcmp(p.p, pre, pl) != 0 || memcmp(p.p + p.n - sl, suf, sl) != 0)
		return 0;
	const char *v = p.p + pl;
	size_t vn = p.n - pl - sl;
	return os_version_ok(v, vn) && os_has_password(v, vn);
}

/* /openstack/... : the layout of OpenStack's metadata service, for
 * cloudbase-init on Windows (and cloud-init's OpenStack datasource). */
static int do_openstack(struct imds_app *a, const struct http_request *req, struct http_span p,
			struct http_response *res)
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
		if (os_has_password(s, vlen))
			http_res_text(res, 200, "text/plain", os_files_pw, sizeof(os_files_pw) - 1);
		else
			http_res_text(res, 200, "text/plain", os_files, sizeof(os_files) - 1);
		return 1;
	}
	struct http_span file = {f, fn};
	if (http_span_eq(file, "meta_data.json")) {
		refresh_meta(a);
		send_data(req, res, "application/json", a->os_meta);
	} else if (http_span_eq(file, "user_data")) {
		struct blob *u = user_data(a);
		/* Nova answers 404 when an instance has no user data, and both
		 * cloudbase-init and cloud-init read that as "none". */
		if (!u || u->len == 0)
			http_res_error(res, 404, "not_found", "no user data");
		else
			send_data(req, res, "application/octet-stream", u);
	} else if (http_span_eq(file, "vendor_data.json")) {
		/* Vendor data goes in the "cloud-init" key, which cloud-init's
		 * OpenStack datasource unwraps. */
		struct blob *v = dfile_get(&a->vendor);
		if (!v || v->len == 0) {
			send_data_text(req, res, "application/json", "{}\n", 3);
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
			if (res->blob)
				tagged(req, res, blob_tag(res->blob));
		}
	} else if (http_span_eq(file, "network_data.json")) {
		/* network-config is cloud-init YAML (v1/v2), which has no
		 * OpenStack form without a YAML parser; guests of this layout
		 * (Windows) take DHCP, so an empty network_data is exact. */
		static const char empty[] = "{\"links\":[],\"networks\":[],\"services\":[]}\n";
		send_data_text(req, res, "application/json", empty, sizeof(empty) - 1);
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

/* ---- the OpenStack password (Nova's semantics, for cloudbase-init) -------------- */

/* The guest posts its generated administrator password, encrypted to its
 * first SSH key and base64-encoded; the owner reads it from the log.  It is
 * stored once, in IMDS_STATE_DIR so that a restarted sidecar keeps it. */
static int password_open(struct imds_app *a, char *err, size_t errlen)
{
	const char *dir = a->cfg->state_dir;
	struct stat st;
	if (!dir)
		return 0;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "IMDS_STATE_DIR '%.200s': not a directory", dir);
		return -EINVAL;
	}
	if (snprintf(a->pw_path, sizeof(a->pw_path), "%s/password", dir) >= (int)sizeof(a->pw_path)) {
		snprintf(err, errlen, "IMDS_STATE_DIR: too long");
		return -ENAMETOOLONG;
	}
	int r = dfile_read(a->pw_path, IMDS_PASSWORD_MAX, &a->password);
	if (r == 0)
		log_info("password: a stored password (%zu bytes) from %s", a->password->len,
			 a->pw_path);
	else if (r != -ENOENT)
		log_error("password: cannot read %s (%s); none is stored", a->pw_path, strerror(-r));
	return 0;
}

/* Writes the file whole or not at all: a temporary file, fsync, rename,
 * then fsync of the folder.  0 or -errno. */
static int password_write(const char *path, const char *p, size_t n)
{
	char tmp[4096 + 16];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	int r = 0;
	while (off < n) {
		ssize_t w = write(fd, p + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

static void do_password(struct imds_app *a, const struct http_request *req,
			struct http_response *res)
{
	http_res_header(res, "Cache-Control", "no-store");
	if (req->method != HTTP_M_POST) {
		struct blob *pw = a->password;
		send_blob(res, "text/plain", pw);
		return;
	}
	if (forwarded(req)) {
		http_res_error(res, 403, "forbidden", "proxied requests are not allowed");
		return;
	}
	struct http_span v = req->body;
	if (v.n > IMDS_PASSWORD_MAX) {
		http_res_error(res, 400, "password_too_long", "password: at most 1024 bytes");
		return;
	}
	if (v.n == 0) {
		http_res_error(res, 400, "password_empty", "password: the body is empty");
		return;
	}
	for (size_t i = 0; i < v.n; i++) {
		if (v.p[i] < 0x20 || v.p[i] > 0x7e) {
			http_res_error(res, 400, "password_not_text",
				       "password: printable ASCII only (base64 of the ciphertext)");
			return;
		}
	}
	if (a->password) {
		http_res_error(res, 409, "password_exists", "a password is stored already");
		return;
	}
	struct blob *pw = blob_new(v.p, v.n);
	if (!pw) {
		http_res_error(res, 500, "internal", "out of memory");
		return;
	}
	int r = a->pw_path[0] ? password_write(a->pw_path, v.p, v.n) : 0;
	if (r < 0) {
		log_error("password: cannot write %s: %s", a->pw_path, strerror(-r));
		blob_unref(pw);
		http_res_error(res, 500, "password_not_stored", "the password could not be stored");
		return;
	}
	a->password = pw;
	/* Once: the ciphertext, for `kubectl logs` (only the private key's
	 * owner can read it). */
	log_info("password: the guest stored its encrypted password (%zu bytes%s): %.*s", v.n,
		 a->pw_path[0] ? "" : ", in memory only: no IMDS_STATE_DIR", (int)v.n, v.p);
	http_res_text(res, 200, "text/plain", "", 0);
}

/* ---- sessions: PUT /v1/session, X-Metadata-Token ------------------------------- */

struct session {
	char tok[IMDS_SESSION_TOKEN_LEN + 1];
	uint64_t created_us, expires_us;
};

/* The one value of a header, or NULL when absent; *many when repeated. */
static const struct http_span *one_header(const struct http_request *req, const char *name,
					  int *many)
{
	unsigned count = 0;
	const struct http_span *v = http_req_header(req, name, &count);
	*many = count > 1;
	return v;
}

static void do_session(struct imds_app *a, const struct http_request *req,
		       struct http_response *res)
{
	http_res_header(res, "Cache-Control", "no-store");
	if (forwarded(req)) {
		/* A proxy cannot mint a session for whoever it relays (SSRF). */
		http_res_error(res, 403, "forbidden", "proxied requests cannot open a session");
		return;
	}
	int many;
	const struct http_span *h = one_header(req, "x-metadata-token-ttl-seconds", &many);
	char num[16];
	unsigned ttl = 0;
	if (!h || many || h->n == 0 || h->n >= sizeof(num) ||
	    (memcpy(num, h->p, h->n), num[h->n] = '\0',
	     config_parse_uint(num, 1, IMDS_SESSION_TTL_MAX, &ttl) < 0)) {
		http_res_error(res, 400, "bad_ttl",
			       "X-Metadata-Token-TTL-Seconds: want one whole number of seconds, 1..21600");
		return;
	}
	unsigned char rnd[32];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		http_res_error(res, 500, "internal", "no randomness for a session token");
		return;
	}
	/* A free (or expired) slot, the lowest first (so a check scans only as
	 * many slots as were ever in use at once), else the oldest session goes. */
	struct session *slot = &a->sessions[0];
	for (unsigned i = 0; i < IMDS_SESSIONS_MAX; i++) {
		struct session *s = &a->sessions[i];
		if (s->expires_us <= req->start_us) {
			slot = s;
			break;
		}
		if (s->created_us < slot->created_us)
			slot = s;
	}
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t o = 0;
	for (size_t i = 0; i < sizeof(rnd); i += 3) {
		uint32_t v = (uint32_t)rnd[i] << 16 | (i + 1 < sizeof(rnd) ? (uint32_t)rnd[i + 1] << 8 : 0) |
			     (i + 2 < sizeof(rnd) ? rnd[i + 2] : 0);
		size_t chars = sizeof(rnd) - i >= 3 ? 4 : sizeof(rnd) - i + 1;
		for (size_t k = 0; k < chars; k++)
			slot->tok[o++] = b64[v >> (18 - 6 * k) & 63];
	}
	slot->tok[o] = '\0';
	if ((unsigned)(slot - a->sessions) >= a->sessions_used)
		a->sessions_used = (unsigned)(slot - a->sessions) + 1;
	slot->created_us = req->start_us;
	slot->expires_us = req->start_us + (uint64_t)ttl * 1000000u;
	http_res_header(res, "X-Metadata-Token-TTL-Seconds", num);
	http_res_text(res, 200, "text/plain", slot->tok, o);
}

/* X-Metadata-Token: 1 valid and unexpired, 0 absent, -1 present but not valid. */
static int session_check(struct imds_app *a, const struct http_request *req)
{
	int many;
	const struct http_span *t = one_header(req, "x-metadata-token", &many);
	if (!t)
		return 0;
	if (many || t->n != IMDS_SESSION_TOKEN_LEN)
		return -1;
	for (unsigned i = 0; i < a->sessions_used; i++) {
		const struct session *s = &a->sessions[i];
		if (s->expires_us <= req->start_us)
			continue;
		unsigned char diff = 0; /* the whole compare, whatever matches */
		for (size_t k = 0; k < IMDS_SESSION_TOKEN_LEN; k++)
			diff |= (unsigned char)(s->tok[k] ^ t->p[k]);
		if (!diff)
			return 1;
	}
	return -1;
}

/* ---- wait for change: ?wait_for_change=true&last_etag=<hex>&timeout_sec=<s> ------ */

struct wait {
	int on;
	uint64_t last; /* last_etag */
	unsigned timeout_sec;
};

/* Reads the wait parameters.  0, or -1 with a 400 in res. */
static int wait_params(const struct http_request *req, struct wait *w, struct http_response *res)
{
	char v[64];
	const char *q = req->query.p;
	size_t qn = req->query.n;
	memset(w, 0, sizeof(*w));
	int n = imds_query_param(q, qn, "wait_for_change", v, sizeof(v));
	if (n == -ENOENT || (n >= 0 && strcmp(v, "false") == 0))
		return 0;
	if (n < 0 || strcmp(v, "true") != 0) {
		http_res_error(res, 400, "bad_wait_for_change", "wait_for_change: want true or false");
		return -1;
	}
	w->on = 1;
	n = imds_query_param(q, qn, "last_etag", v, sizeof(v));
	const char *h = v;
	if (n == 18 && v[0] == '"' && v[17] == '"') { /* the ETag as sent, quotes and all */
		v[17] = '\0';
		h = v + 1;
		n = 16;
	}
	int ok = n == 16;
	for (int i = 0; ok && i < 16; i++) {
		int d = sbuf_hexval(h[i]);
		ok = d >= 0 && !(h[i] >= 'A' && h[i] <= 'F'); /* as we write it: lower case */
		w->last = w->last << 4 | (uint64_t)(d < 0 ? 0 : d);
	}
	if (!ok) {
		http_res_error(res, 400, "bad_last_etag",
			       "last_etag: want the ETag of the last answer, 16 hex digits");
		return -1;
	}
	w->timeout_sec = 60;
	n = imds_query_param(q, qn, "timeout_sec", v, sizeof(v));
	if (n != -ENOENT &&
	    (n < 0 || config_parse_uint(v, 1, IMDS_WAIT_MAX_SEC, &w->timeout_sec) < 0)) {
		http_res_error(res, 400, "bad_timeout", "timeout_sec: want whole seconds, 1..3600");
		return -1;
	}
	return 0;
}

/* The answer is built: send it if it differs from last_etag (or the wait is
 * over), else wait for a change of the data files, up to timeout_sec. */
static void wait_or_answer(struct imds_app *a, const struct http_request *req,
			   struct http_response *res, const struct wait *w)
{
	if (answer_tag != w->last || req->park_expired)
		return;
	if (!req->parked && a->http && http_server_parked(a->http) >= IMDS_WAITERS_MAX) {
		blob_unref(res->blob);
		res->blob = NULL;
		res->extra_len = 0;
		res->extra[0] = '\0';
		http_res_error(res, 503, "too_many_waiters", "too many requests wait for a change");
		http_res_header(res, "Retry-After", "1");
		return;
	}
	res->park = 1;
	res->park_ms = w->timeout_sec * 1000u;
}

static void on_change(struct loop *l, int fd, void *data, int mask)
{
	struct imds_app *a = data;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	(void)l;
	(void)mask;
	while (read(fd, buf, sizeof(buf)) > 0)
		; /* which file does not matter: every waiter looks again */
	if (a->http)
		http_server_wake(a->http);
}

/* One watch per folder holding a data file (kubelet swaps ..data there). */
static void watch_folder(struct imds_app *a, const char *file, int is_dir)
{
	char dir[4096];
	if (!file || snprintf(dir, sizeof(dir), "%s", file) >= (int)sizeof(dir))
		return;
	char *slash = strrchr(dir, '/');
	if (!is_dir) {
		if (!slash)
			return;
		*slash = '\0';
		if (!dir[0])
			return;
	}
	uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE |
			IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
	/* A folder that is not there holds nothing to wait for (no token
	 * volume in `serve` tests, say): only other failures are worth a line. */
	if (inotify_add_watch(a->ino_fd, dir, mask) < 0 && errno != ENOENT)
		log_error("wait: cannot watch %s (%s): waiters there see changes at their timeout",
			  dir, strerror(errno));
}

static void watch_start(struct imds_app *a)
{
	const struct imds_config *c = a->cfg;
	a->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (a->ino_fd < 0 || loop_add(a->loop, a->ino_fd, LOOP_READABLE, on_change, a) < 0) {
		log_error("wait: no inotify (%s): waiters see changes at their timeout", strerror(errno));
		if (a->ino_fd >= 0)
			close(a->ino_fd);
		a->ino_fd = -1;
		return;
	}
	for (unsigned i = 0; i < a->user.ncand; i++)
		watch_folder(a, a->user.cand[i], 0);
	watch_folder(a, c->vendor_data_file, 0);
	watch_folder(a, c->network_config_file, 0);
	watch_folder(a, c->meta_data_file, 0);
	watch_folder(a, c->token_path, 0);
	watch_folder(a, c->ssh_keys_dir, 1);
}

/* The one request that carries a body: a posted password. */
static size_t body_limit(const struct http_request *head, void *app)
{
	(void)app;
	return head->method == HTTP_M_POST && os_password_path(head->path) ? IMDS_MAX_BODY : 0;
}

/* cloud-init asks for network-config before user-data from 24.3 on, and
 * never over HTTP before that: a network-config nobody asked for by the
 * first user-data request has no effect on this guest.  Said once. */
static void netcfg_unasked(struct imds_app *a)
{
	if (a->netcfg_asked || a->netcfg_told || !a->cfg->network_config_file)
		return;
	a->netcfg_told = 1;
	struct blob *b = dfile_get(&a->netcfg);
	if (b && b->len)
		log_info("network-config: configured, but the guest asked for user-data without asking "
			 "for network-config first: it is not applied (cloud-init before 24.3 does not "
			 "fetch network-config over HTTP)");
}

void imds_handle(const struct http_request *req, struct http_response *res, void *app)
{
	struct imds_app *a = app;
	struct http_span p = req->path;
	int pw = os_password_path(p);
	int sess = http_span_eq(p, "/v1/session");
	if (sess && req->method != HTTP_M_PUT) {
		http_res_error(res, 405, "method_not_allowed", "a session is opened with PUT");
		http_res_header(res, "Allow", "PUT");
		return;
	}
	if (!sess && req->method != HTTP_M_GET && req->method != HTTP_M_HEAD &&
	    !(pw && req->method == HTTP_M_POST)) {
		http_res_error(res, 405, "method_not_allowed",
			       pw ? "only GET, HEAD and POST are supported"
				  : "only GET and HEAD are supported");
		http_res_header(res, "Allow", pw ? "GET, HEAD, POST" : "GET, HEAD");
		return;
	}
	/* A waiting request run again is the same request: no second token. */
	if (!req->parked && !rate_take(&a->rate, req->start_us)) {
		http_res_error(res, 429, "rate_limited", "too many requests");
		http_res_header(res, "Retry-After", "1");
		return;
	}
	if (sess) {
		do_session(a, req, res);
		return;
	}
	/* A session token that is presented must be good, whatever the path. */
	int st = session_check(a, req);
	if (st < 0) {
		http_res_error(res, 401, "invalid_token", "X-Metadata-Token is not a valid session");
		return;
	}
	if (st == 0 && a->cfg->session_required &&
	    (http_span_eq(p, "/v1/token") || http_span_eq(p, "/v1/identity"))) {
		http_res_error(res, 401, "session_required",
			       "PUT /v1/session first, then send X-Metadata-Token");
		return;
	}
	struct wait w;
	if (wait_params(req, &w, res) < 0)
		return;
	answer_tag = 0;
	if (pw) {
		do_password(a, req, res);
	} else if (http_span_eq(p, "/v1/meta-data")) {
		refresh_meta(a);
		send_data(req, res, "text/yaml", a->meta_data);
	} else if (http_span_eq(p, "/v1/user-data")) {
		netcfg_unasked(a);
		send_data(req, res, "application/octet-stream", user_data(a));
	} else if (http_span_eq(p, "/v1/vendor-data")) {
		send_data(req, res, "application/octet-stream", dfile_get(&a->vendor));
	} else if (http_span_eq(p, "/v1/network-config")) {
		a->netcfg_asked = 1;
		send_data(req, res, "text/yaml", dfile_get(&a->netcfg));
	} else if (http_span_eq(p, "/v1/identity")) {
		if (guard(req, res) == 0)
			send_data(req, res, "application/json", a->identity);
	} else if (http_span_eq(p, "/v1/token")) {
		if (guard(req, res) == 0)
			do_token(a, req, res);
	} else if (http_span_eq(p, "/healthz")) {
		http_res_text(res, 200, "text/plain", "OK", 2);
	} else if (p.n >= 10 && memcmp(p.p, "/openstack", 10) == 0 && do_openstack(a, req, p, res)) {
		/* answered */
	} else {
		/* Windows probes many paths at boot: say no at once. */
		http_res_error(res, 404, "not_found", "no such path");
	}
	if (w.on && answer_tag && (res->status == 200 || res->status == 304))
		wait_or_answer(a, req, res, &w);
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
	a->ino_fd = -1;
	if (cfg->instance_id)
		snprintf(a->iid, sizeof(a->iid), "%s", cfg->instance_id);
	else
		snprintf(a->iid, sizeof(a->iid), "%s-%s", cfg->ns, cfg->vm_name);
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
	a->sessions = calloc(IMDS_SESSIONS_MAX, sizeof(*a->sessions));
	if (!a->tok || !a->body || !a->sessions || build_identity(a) < 0) {
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
		       errlen) < 0 ||
	    dfile_open(&a->custom, "IMDS_META_DATA_FILE", cfg->meta_data_file, err, errlen) < 0 ||
	    sshkeys_open(&a->keys, cfg->ssh_keys_dir, err, errlen) < 0 ||
	    password_open(a, err, errlen) < 0)
		goto fail;
	a->custom_seen = cfg->meta_data_file ? blob_ref(dfile_get(&a->custom)) : NULL;
	if (build_meta(a, 1) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rate_init(&a->rate, cfg->rate_limit, cfg->rate_limit, loop_clock_us());
	if (l) {
		a->http = http_server_new(l, &cfg->limits, imds_handle, serve_access_log, a);
		if (!a->http) {
			snprintf(err, errlen, "cannot start the HTTP server: %s", strerror(errno));
			goto fail;
		}
		http_server_set_body_limit(a->http, body_limit);
		a->loop = l;
		watch_start(a);
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
	if (a->ino_fd >= 0) {
		loop_del(a->loop, a->ino_fd, LOOP_READABLE);
		close(a->ino_fd);
	}
	dfile_close(&a->user);
	dfile_close(&a->vendor);
	dfile_close(&a->netcfg);
	dfile_close(&a->custom);
	sshkeys_close(&a->keys);
	blob_unref(a->custom_seen);
	blob_unref(a->password);
	blob_unref(a->identity);
	blob_unref(a->meta_data);
	blob_unref(a->os_meta);
	blob_unref(a->user_inline);
	free(a->tok);
	free(a->body);
	free(a->sessions);
	free(a);
}

struct http_server *imds_app_http(struct imds_app *a)
{
	return a->http;
}
