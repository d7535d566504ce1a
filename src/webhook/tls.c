#include "tls.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "log.h"

/* Kubelet's atomic writer makes several changes per update (new dir,
 * symlink, rename, delete); wait for them to settle before reloading. */
#define TLS_RELOAD_DELAY_MS 100

struct tls_watch {
	int wd;
	char dir[PATH_MAX];
};

struct tls_server {
	struct loop *loop;
	SSL_CTX *ctx;       /* current pair; NULL until one loads */
	char cert[PATH_MAX], key[PATH_MAX];
	int ino_fd, timer_fd;
	struct tls_watch watch[2];
	int nwatch;
	/* What the loaded (or last refused) pair looked like on disk. */
	struct stat cert_st, key_st;
	int64_t not_after;
	unsigned reloads, failures, handshake_failures;
	struct http_transport tr;
};

static void ssl_reason(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256] = "unknown error";
	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	snprintf(err, errlen, "%s: %s", what, buf);
	ERR_clear_error();
}

/* ALPN: the API server offers h2 and http/1.1; we speak http/1.1. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	for (unsigned i = 0; i < inlen;) {
		unsigned n = in[i];
		if (i + 1 + n > inlen)
			break;
		if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
			*out = in + i + 1;
			*outlen = (unsigned char)n;
			return SSL_TLSEXT_ERR_OK;
		}
		i += 1 + n;
	}
	/* No http/1.1 on offer: go on without ALPN rather than fail. */
	return SSL_TLSEXT_ERR_NOACK;
}

static int64_t cert_not_after(SSL_CTX *ctx)
{
	X509 *x = SSL_CTX_get0_certificate(ctx);
	struct tm tm;
	if (!x || ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) != 1)
		return 0;
	return (int64_t)timegm(&tm);
}

static SSL_CTX *load_ctx(const char *cert, const char *key, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		ssl_reason(err, errlen, "SSL_CTX_new");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* Partial writes with a moving buffer: the core keeps what SSL_write
	 * did not take and retries from its own copy.  Released buffers keep
	 * idle keep-alive connections small. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		ssl_reason(err, errlen, cert);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		ssl_reason(err, errlen, key);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		ssl_reason(err, errlen, "key does not match certificate");
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

int tls_check_pair(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
	SSL_CTX *ctx = load_ctx(cert_file, key_file, err, errlen);
	if (!ctx)
		return -EINVAL;
	SSL_CTX_free(ctx);
	return 0;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Loads the pair if it changed since the last attempt.  A refused pair is
 * remembered so that one bad update is logged once, not on every event. */
static void try_reload(struct tls_server *t, int first)
{
	struct stat cs, ks;
	if (stat(t->cert, &cs) < 0 || stat(t->key, &ks) < 0) {
		if (first)
			log_info("tls: no certificate yet at %s / %s; not ready", t->cert, t->key);
		return;
	}
	if (!first && same_file(&cs, &t->cert_st) && same_file(&ks, &t->key_st))
		return;
	t->cert_st = cs;
	t->key_st = ks;
	char err[512];
	SSL_CTX *ctx = load_ctx(t->cert, t->key, err, sizeof(err));
	if (!ctx) {
		t->failures++;
		log_error("tls: refusing the new certificate pair (%s)%s", err,
			  t->ctx ? "; keeping the previous one" : "");
		return;
	}
	SSL_CTX_free(t->ctx); /* connections hold their own reference */
	t->ctx = ctx;
	t->not_after = cert_not_after(ctx);
	if (!first)
		t->reloads++;
	log_info("tls: %s certificate %s (expires %lld)", first ? "loaded" : "reloaded", t->cert,
		 (long long)t->not_after);
}

static void on_inotify(struct loop *l, int fd, void *data, int mask)
{
	(void)l;
	(void)mask;
	struct tls_server *t = data;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	loop_timer_arm(t->timer_fd, loop_clock_ms() + TLS_RELOAD_DELAY_MS);
}

static void on_timer(struct loop *l, int fd, void *data, int mask)
{
	(void)l;
	(void)mask;
	loop_timer_ack(fd);
	try_reload(data, 0);
}

/* ---- transport ------------------------------------------------------------ */

static void *tr_open(void *ctx, int fd)
{
	struct tls_server *t = ctx;
	if (!t->ctx)
		return NULL;
	SSL *ssl = SSL_new(t->ctx);
	if (!ssl)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_accept_state(ssl);
	SSL_set_app_data(ssl, t); /* for the handshake-failure count */
	return ssl;
}

static ssize_t map_error(SSL *ssl, int r, int *want)
{
	struct tls_server *t = SSL_get_app_data(ssl);
	int e = SSL_get_error(ssl, r);
	switch (e) {
	case SSL_ERROR_WANT_READ:
		*want = LOOP_READABLE;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		*want = LOOP_WRITABLE;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		return errno ? -errno : -ECONNRESET;
	default:
		if (!SSL_is_init_finished(ssl))
			t->handshake_failures++;
		ERR_clear_error();
		return -EPROTO;
	}
}

static ssize_t tr_read(void *conn, int fd, void *buf, size_t len, int *want)
{
	(void)fd;
	SSL *ssl = conn;
	size_t got = 0;
	errno = 0;
	int r = SSL_read_ex(ssl, buf, len, &got);
	if (r == 1)
		return (ssize_t)got;
	return map_error(ssl, r, want);
}

/* Small pieces (the head and a short body) are gathered into one TLS
 * record: one write(2), one record to seal and one wake-up of the peer
 * instead of one per piece.  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER lets a
 * retry pass the same bytes from the core's own iovecs again. */
static unsigned char gather_buf[16384];

static ssize_t tr_writev(void *conn, int fd, const struct iovec *iov, int cnt, int *want)
{
	(void)fd;
	SSL *ssl = conn;
	size_t total = 0, off = 0;
	int i = 0;
	while (i < cnt) {
		if (off == iov[i].iov_len) {
			i++;
			off = 0;
			continue;
		}
		const void *p = (const char *)iov[i].iov_base + off;
		size_t n = iov[i].iov_len - off;
		if (n < sizeof(gather_buf) && i + 1 < cnt) {
			/* Gather this piece and what follows, up to one record. */
			size_t g = 0, ro = off;
			for (int k = i; k < cnt && g < sizeof(gather_buf); k++, ro = 0) {
				size_t take = iov[k].iov_len - ro;
				if (take > sizeof(gather_buf) - g)
					take = sizeof(gather_buf) - g;
				memcpy(gather_buf + g, (const char *)iov[k].iov_base + ro, take);
				g += take;
			}
			p = gather_buf;
			n = g;
		}
		size_t put = 0;
		errno = 0;
		int r = SSL_write_ex(ssl, p, n, &put);
		if (r != 1) {
			ssize_t m = map_error(ssl, r, want);
			/* Report what went out; the core retries the rest. */
			return total ? (ssize_t)total : (m == 0 ? -EPIPE : m);
		}
		total += put;
		/* Step over what went out, across pieces. */
		while (put && i < cnt) {
			size_t left = iov[i].iov_len - off;
			if (put < left) {
				off += put;
				put = 0;
			} else {
				put -= left;
				i++;
				off = 0;
			}
		}
	}
	return (ssize_t)total;
}

static size_t tr_pending(void *conn)
{
	return (size_t)SSL_pending(conn);
}

/* One try at close_notify; a peer that is gone gets none.  Once sent
 * (a lingering close sends it early), OpenSSL does not send it again. */
static void tr_shutdown(void *conn)
{
	SSL *ssl = conn;
	if (SSL_is_init_finished(ssl) && !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN))
		(void)SSL_shutdown(ssl);
	ERR_clear_error();
}

static void tr_close(void *conn)
{
	tr_shutdown(conn);
	SSL_free(conn);
}

/* ---- lifecycle -------------------------------------------------------------- */

static int add_watch(struct tls_server *t, const char *file, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", file);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	for (int i = 0; i < t->nwatch; i++)
		if (strcmp(t->watch[i].dir, dir) == 0)
			return 0;
	int wd = inotify_add_watch(t->ino_fd, dir,
				   IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE |
					   IN_DELETE | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF);
	if (wd < 0) {
		int r = -errno;
		snprintf(err, errlen, "watching certificate directory %s: %s", dir, strerror(errno));
		return r;
	}
	t->watch[t->nwatch].wd = wd;
	snprintf(t->watch[t->nwatch].dir, sizeof(t->watch[0].dir), "%s", dir);
	t->nwatch++;
	return 0;
}

struct tls_server *tls_server_new(struct loop *l, const char *cert_file, const char *key_file,
				  char *err, size_t errlen)
{
	struct tls_server *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->loop = l;
	t->ino_fd = t->timer_fd = -1;
	if (strlen(cert_file) >= sizeof(t->cert) || strlen(key_file) >= sizeof(t->key)) {
		snprintf(err, errlen, "certificate path too long");
		goto fail;
	}
	memcpy(t->cert, cert_file, strlen(cert_file) + 1); /* lengths checked above */
	memcpy(t->key, key_file, strlen(key_file) + 1);
	t->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	t->timer_fd = loop_timer_new();
	if (t->ino_fd < 0 || t->timer_fd < 0) {
		snprintf(err, errlen, "inotify/timerfd: %s", strerror(errno));
		goto fail;
	}
	if (add_watch(t, cert_file, err, errlen) < 0 || add_watch(t, key_file, err, errlen) < 0)
		goto fail;
	if (loop_add(l, t->ino_fd, LOOP_READABLE, on_inotify, t) < 0 ||
	    loop_add(l, t->timer_fd, LOOP_READABLE, on_timer, t) < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(errno));
		goto fail;
	}
	t->tr = (struct http_transport){
		.open = tr_open,
		.read = tr_read,
		.writev = tr_writev,
		.pending = tr_pending,
		.shutdown = tr_shutdown,
		.close = tr_close,
		.ctx = t,
	};
	try_reload(t, 1);
	return t;
fail:
	tls_server_free(t);
	return NULL;
}

void tls_server_free(struct tls_server *t)
{
	if (!t)
		return;
	if (t->ino_fd >= 0) {
		loop_del(t->loop, t->ino_fd, LOOP_READABLE);
		close(t->ino_fd);
	}
	if (t->timer_fd >= 0) {
		loop_del(t->loop, t->timer_fd, LOOP_READABLE);
		close(t->timer_fd);
	}
	SSL_CTX_free(t->ctx);
	free(t);
}

const struct http_transport *tls_server_transport(struct tls_server *t)
{
	return &t->tr;
}

int tls_server_ready(const struct tls_server *t)
{
	return t->ctx != NULL;
}

int64_t tls_server_not_after(const struct tls_server *t)
{
	return t->not_after;
}

unsigned tls_server_reloads(const struct tls_server *t)
{
	return t->reloads;
}

unsigned tls_server_reload_failures(const struct tls_server *t)
{
	return t->failures;
}

unsigned tls_server_handshake_failures(const struct tls_server *t)
{
	return t->handshake_failures;
}
