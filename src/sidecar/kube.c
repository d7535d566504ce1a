#include "kube.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audience.h"
#include "answer.h"
#include "jwt.h"
#include "sbuf.h"

int kube_open(struct kube *k, struct instance *in, char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	k->inst = in;
	const char *slash = strrchr(in->token_path, '/');
	size_t dlen = (size_t)(slash - in->token_path);
	if (dlen >= sizeof(k->token_dir)) {
		snprintf(err, errlen, "IMDS_TOKEN_PATH: too long");
		return -ENAMETOOLONG;
	}
	memcpy(k->token_dir, in->token_path, dlen);
	k->token_dir[dlen] = '\0';
	k->body_cap = KUBE_TOKEN_MAX * 6 / 5 + 256;
	k->tok = malloc(KUBE_TOKEN_MAX + 1);
	k->body = malloc(k->body_cap);
	char buf[4096];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	sbuf_putc(&b, '{');
	answer_json_field(&b, "namespace", in->vm_ns, 0);
	answer_json_field(&b, "serviceAccountName", in->sa_name, 1);
	answer_json_field(&b, "vmName", in->vm_name, 1);
	answer_json_field(&b, "podName", in->pod_name, 1);
	answer_json_field(&b, "instanceId", in->iid, 1);
	sbuf_puts(&b, "}\n");
	k->identity = answer_render(&b);
	if (!k->tok || !k->body || !k->identity) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void kube_close(struct kube *k)
{
	blob_unref(k->identity);
	free(k->tok);
	free(k->body);
	k->identity = NULL;
	k->tok = k->body = NULL;
}

void kube_identity(struct call *c)
{
	struct kube *k = c->self;
	answer_data(c, "application/json", k->identity);
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

/* Reads path into k->tok.  Length, or -errno. */
static ssize_t read_token(struct kube *k, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	ssize_t r = 0;
	while (len <= KUBE_TOKEN_MAX) {
		r = read(fd, k->tok + len, KUBE_TOKEN_MAX + 1 - len);
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
	if (len > KUBE_TOKEN_MAX)
		return -EFBIG;
	return (ssize_t)len;
}

static void unavailable(struct http_response *res, const char *msg)
{
	http_res_error(res, 503, "token_unavailable", msg);
	http_res_header(res, "Retry-After", "1");
}

void kube_token(struct call *c)
{
	struct kube *k = c->self;
	struct http_response *res = c->res;
	char path[4096 + 512];
	const char *tpath = k->inst->token_path;
	char aud[512], dir[1600];
	int an = answer_query_param(c->req->query.p, c->req->query.n, "audience", aud, sizeof(aud));
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
		sbuf_printf(&pb, "%s/%s", k->token_dir, dir);
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
	ssize_t n = read_token(k, tpath);
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
	const char *t = trim(k->tok, &tlen);
	if (tlen == 0) {
		unavailable(res, "token file is empty");
		return;
	}
	struct sbuf b = SBUF_INIT(k->body, k->body_cap);
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
	answer_data_text(c, "application/json", b.p, b.len);
}
