#include "password.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "answer.h"
#include "dfile.h"
#include "log.h"

int password_open(struct password *p, const char *dir, char *err, size_t errlen)
{
	struct stat st;
	p->path[0] = '\0';
	p->pw = NULL;
	if (!dir)
		return 0;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "IMDS_STATE_DIR '%.200s': not a directory", dir);
		return -EINVAL;
	}
	if (snprintf(p->path, sizeof(p->path), "%s/password", dir) >= (int)sizeof(p->path)) {
		p->path[0] = '\0';
		snprintf(err, errlen, "IMDS_STATE_DIR: too long");
		return -ENAMETOOLONG;
	}
	int r = dfile_read(p->path, PASSWORD_MAX, &p->pw);
	if (r == 0)
		log_info("password: a stored password (%zu bytes) from %s", p->pw->len, p->path);
	else if (r != -ENOENT)
		log_error("password: cannot read %s (%s); none is stored", p->path, strerror(-r));
	return 0;
}

void password_close(struct password *p)
{
	blob_unref(p->pw);
	p->pw = NULL;
}

/* Writes the file whole or not at all: a temporary file, fsync, rename,
 * then fsync of the folder.  0 or -errno. */
static int write_whole(const char *path, const char *data, size_t n)
{
	char tmp[4096 + 16];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	int r = 0;
	while (off < n) {
		ssize_t w = write(fd, data + off, n - off);
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

void password_serve(struct call *c)
{
	struct password *p = c->self;
	struct http_response *res = c->res;
	http_res_header(res, "Cache-Control", "no-store");
	if (c->req->method != HTTP_M_POST) {
		answer_blob(c, "text/plain", p->pw);
		return;
	}
	if (answer_req_forwarded(c->req)) {
		http_res_error(res, 403, "forbidden", "proxied requests are not allowed");
		return;
	}
	struct http_span v = c->req->body;
	if (v.n > PASSWORD_MAX) {
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
	if (p->pw) {
		http_res_error(res, 409, "password_exists", "a password is stored already");
		return;
	}
	struct blob *pw = blob_new(v.p, v.n);
	if (!pw) {
		http_res_error(res, 500, "internal", "out of memory");
		return;
	}
	int r = p->path[0] ? write_whole(p->path, v.p, v.n) : 0;
	if (r < 0) {
		log_error("password: cannot write %s: %s", p->path, strerror(-r));
		blob_unref(pw);
		http_res_error(res, 500, "password_not_stored", "the password could not be stored");
		return;
	}
	p->pw = pw;
	/* Once: the ciphertext, for `kubectl logs` (only the private key's
	 * owner can read it). */
	log_info("password: the guest stored its encrypted password (%zu bytes%s): %.*s", v.n,
		 p->path[0] ? "" : ", in memory only: no IMDS_STATE_DIR", (int)v.n, v.p);
	http_res_text(res, 200, "text/plain", "", 0);
}
