/* The webhook's TLS (src/webhook/tls.h), with certificates made at test
 * time (OpenSSL's API: self-signed P-256, notAfter chosen so it can be
 * read back): a pair checked, a refused pair naming what is wrong, a
 * missing pair that appears later, kubelet's ..data swap reloading the
 * pair, a bad update refused with the old pair kept, and the transport's
 * handshakes (ALPN, a plaintext client counted as a failed handshake,
 * a connection opened before a reload keeping its pair). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "loop.h"
#include "tls.h"

/* notAfter of the pairs, whole seconds in the future */
#define NA1 ((int64_t)4102444800) /* 2100-01-01 */
#define NA2 ((int64_t)4133980800) /* 2101-01-01 */

struct fx {
	char dir[256];
	struct loop *loop;
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *base = getenv("IMDS_TEST_TMPDIR");
	snprintf(f->dir, sizeof(f->dir), "%s/imds-tls-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(f->dir))
		return -1;
	f->loop = loop_new(64);
	*state = f;
	return f->loop ? 0 : -1;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	loop_free(f->loop);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static char *path(const struct fx *f, const char *name)
{
	static char p[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", f->dir, name);
	return p[k];
}

/* A self-signed certificate for key, valid until not_after. */
static void write_cert(const char *file, EVP_PKEY *key, int64_t not_after, long serial)
{
	X509 *x = X509_new();
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, 2), 1);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
	assert_non_null(ASN1_TIME_set(X509_getm_notAfter(x), (time_t)not_after));
	assert_int_equal(X509_set_pubkey(x, key), 1);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"imds-webhook.test", -1, -1, 0);
	assert_int_equal(X509_set_issuer_name(x, n), 1);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	assert_int_equal(PEM_write_X509(fp, x), 1);
	fclose(fp);
	X509_free(x);
}

static void write_key(const char *file, EVP_PKEY *key)
{
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	assert_int_equal(PEM_write_PrivateKey(fp, key, NULL, NULL, 0, NULL, NULL), 1);
	fclose(fp);
}

static void write_file(const char *file, const char *text)
{
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* A pair in dir/sub/{tls.crt,tls.key}; mismatched: the key is another's. */
static void write_pair(const struct fx *f, const char *sub, int64_t not_after, int mismatched)
{
	char d[512], c[600], k[600];
	snprintf(d, sizeof(d), "%s/%s", f->dir, sub);
	assert_true(mkdir(d, 0700) == 0 || errno == EEXIST);
	snprintf(c, sizeof(c), "%s/tls.crt", d);
	snprintf(k, sizeof(k), "%s/tls.key", d);
	EVP_PKEY *key = EVP_EC_gen("P-256");
	assert_non_null(key);
	write_cert(c, key, not_after, (long)not_after % 100000);
	if (mismatched) {
		EVP_PKEY *other = EVP_EC_gen("P-256");
		assert_non_null(other);
		write_key(k, other);
		EVP_PKEY_free(other);
	} else {
		write_key(k, key);
	}
	EVP_PKEY_free(key);
}

/* Kubelet's atomic writer: ..data points at sub, tls.{crt,key} through it. */
static void kubelet_swap(const struct fx *f, const char *sub)
{
	assert_int_equal(symlink(sub, path(f, "..data_tmp")), 0);
	assert_int_equal(rename(path(f, "..data_tmp"), path(f, "..data")), 0);
	if (access(path(f, "tls.crt"), F_OK) != 0 && errno == ENOENT) {
		(void)symlink("..data/tls.crt", path(f, "tls.crt"));
		(void)symlink("..data/tls.key", path(f, "tls.key"));
	}
}

/* Runs the loop until cond(t) or 10 s: a bound on waiting for the
 * reload's event and its 100 ms settle timer, not a speed target. */
static int run_until(struct fx *f, struct tls_server *t, int (*cond)(const struct tls_server *, unsigned),
		     unsigned arg)
{
	uint64_t end = loop_clock_ms() + 10000;
	while (!cond(t, arg) && loop_clock_ms() < end)
		loop_once(f->loop, 50);
	return cond(t, arg);
}

static int reloads_at_least(const struct tls_server *t, unsigned n)
{
	return tls_server_reloads(t) >= n;
}

static int failures_at_least(const struct tls_server *t, unsigned n)
{
	return tls_server_reload_failures(t) >= n;
}

/* tls_check_pair: a good pair, and each refusal says what is wrong. */
static void test_check_pair(void **state)
{
	struct fx *f = *state;
	char err[512];
	write_pair(f, "good", NA1, 0);
	write_pair(f, "mismatch", NA1, 1);
	assert_int_equal(tls_check_pair(path(f, "good/tls.crt"), path(f, "good/tls.key"), err, sizeof(err)), 0);

	err[0] = '\0';
	assert_int_equal(tls_check_pair(path(f, "mismatch/tls.crt"), path(f, "mismatch/tls.key"), err, sizeof(err)),
			 -EINVAL);
	/* OpenSSL 3 refuses the key when it is used (SSL_CTX_use_PrivateKey_file:
	 * "key values mismatch"), before tls.c's own check_private_key: the
	 * message names the key file. */
	assert_non_null(strstr(err, path(f, "mismatch/tls.key")));
	assert_non_null(strstr(err, "mismatch"));

	err[0] = '\0';
	assert_int_equal(tls_check_pair(path(f, "none.crt"), path(f, "good/tls.key"), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, path(f, "none.crt"))); /* names the file */

	write_file(path(f, "junk.crt"), "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
	err[0] = '\0';
	assert_int_equal(tls_check_pair(path(f, "junk.crt"), path(f, "good/tls.key"), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, path(f, "junk.crt")));

	/* A certificate where the key should be. */
	err[0] = '\0';
	assert_int_equal(tls_check_pair(path(f, "good/tls.crt"), path(f, "good/tls.crt"), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, path(f, "good/tls.crt")));
	/* OpenSSL's error queue is left empty for the next caller. */
	assert_int_equal(ERR_peek_error(), 0);
}

/* A missing directory is an error naming it; a missing pair is not ready
 * until it appears (kubelet mounts the Secret), then it loads. */
static void test_missing_then_appears(void **state)
{
	struct fx *f = *state;
	char err[512] = "";
	assert_null(tls_server_new(f->loop, path(f, "nodir/tls.crt"), path(f, "nodir/tls.key"), err, sizeof(err)));
	assert_non_null(strstr(err, path(f, "nodir")));

	struct tls_server *t = tls_server_new(f->loop, path(f, "tls.crt"), path(f, "tls.key"), err, sizeof(err));
	assert_non_null(t);
	assert_false(tls_server_ready(t));
	assert_int_equal(tls_server_not_after(t), 0);
	/* Not ready: the transport refuses connections. */
	const struct http_transport *tr = tls_server_transport(t);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	assert_null(tr->open(tr->ctx, sv[0]));
	close(sv[0]);
	close(sv[1]);

	write_pair(f, "..v1", NA1, 0);
	kubelet_swap(f, "..v1");
	assert_true(run_until(f, t, reloads_at_least, 1));
	assert_true(tls_server_ready(t));
	assert_int_equal(tls_server_not_after(t), NA1);
	assert_int_equal(tls_server_reload_failures(t), 0);
	tls_server_free(t);
}

/* ..data swapped to a new pair: reloaded; swapped to a pair that does not
 * load: refused once, the old pair kept (and its notAfter); another event
 * in the directory does not retry the same refused files. */
static void test_reload(void **state)
{
	struct fx *f = *state;
	char err[512] = "";
	write_pair(f, "..v1", NA1, 0);
	kubelet_swap(f, "..v1");
	struct tls_server *t = tls_server_new(f->loop, path(f, "tls.crt"), path(f, "tls.key"), err, sizeof(err));
	assert_non_null(t);
	assert_true(tls_server_ready(t));
	assert_int_equal(tls_server_not_after(t), NA1);
	assert_int_equal(tls_server_reloads(t), 0); /* the first load is no reload */

	write_pair(f, "..v2", NA2, 0);
	kubelet_swap(f, "..v2");
	assert_true(run_until(f, t, reloads_at_least, 1));
	assert_int_equal(tls_server_reloads(t), 1);
	assert_int_equal(tls_server_not_after(t), NA2);

	write_pair(f, "..v3", NA1, 1);
	kubelet_swap(f, "..v3");
	assert_true(run_until(f, t, failures_at_least, 1));
	assert_true(tls_server_ready(t));
	assert_int_equal(tls_server_not_after(t), NA2);
	assert_int_equal(tls_server_reloads(t), 1);

	write_file(path(f, "unrelated"), "x");
	uint64_t end = loop_clock_ms() + 500;
	while (loop_clock_ms() < end)
		loop_once(f->loop, 50);
	assert_int_equal(tls_server_reload_failures(t), 1);

	/* Fixed again: loads. */
	write_pair(f, "..v4", NA1, 0);
	kubelet_swap(f, "..v4");
	assert_true(run_until(f, t, reloads_at_least, 2));
	assert_int_equal(tls_server_not_after(t), NA1);
	tls_server_free(t);
}

/* ---- the transport ------------------------------------------------------ */

struct side {
	SSL *cli;
	void *srv;
	int sv[2];
};

static SSL_CTX *client_ctx(const char *ca, const unsigned char *alpn, unsigned alpn_len)
{
	SSL_CTX *c = SSL_CTX_new(TLS_client_method());
	assert_non_null(c);
	assert_int_equal(SSL_CTX_load_verify_locations(c, ca, NULL), 1);
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
	if (alpn)
		assert_int_equal(SSL_CTX_set_alpn_protos(c, alpn, alpn_len), 0);
	return c;
}

static void side_open(struct side *s, const struct http_transport *tr, SSL_CTX *c)
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s->sv), 0);
	s->srv = tr->open(tr->ctx, s->sv[0]);
	assert_non_null(s->srv);
	s->cli = SSL_new(c);
	assert_non_null(s->cli);
	SSL_set_fd(s->cli, s->sv[1]);
	SSL_set_connect_state(s->cli);
}

/* Drives both ends until the client's handshake is done and the server
 * has read "ping"; 0, or the server's read error. */
static ssize_t side_handshake(struct side *s, const struct http_transport *tr)
{
	char buf[64];
	int sent = 0;
	for (int round = 0; round < 200; round++) {
		if (!sent) {
			size_t w;
			if (SSL_write_ex(s->cli, "ping", 4, &w) == 1)
				sent = 1;
			else if (SSL_get_error(s->cli, 0) == SSL_ERROR_SSL)
				return -EPROTO;
		}
		int want = 0;
		ssize_t r = tr->read(s->srv, s->sv[0], buf, sizeof(buf), &want);
		if (r > 0) {
			assert_int_equal(r, 4);
			assert_memory_equal(buf, "ping", 4);
			return 0;
		}
		if (r != -EAGAIN)
			return r;
	}
	fail_msg("no handshake after 200 rounds");
	return -1;
}

static int64_t peer_not_after(SSL *cli)
{
	X509 *x = SSL_get0_peer_certificate(cli);
	assert_non_null(x);
	struct tm tm;
	assert_int_equal(ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm), 1);
	return (int64_t)timegm(&tm);
}

static void side_close(struct side *s, const struct http_transport *tr)
{
	tr->close(s->srv);
	SSL_free(s->cli);
	close(s->sv[0]);
	close(s->sv[1]);
}

/* A real handshake: the client verifies the certificate, ALPN picks
 * http/1.1 out of h2 and http/1.1, data both ways (writev's pieces arrive
 * whole), close_notify on close; a client offering only h2 still gets a
 * session, with no ALPN. */
static void test_handshake(void **state)
{
	struct fx *f = *state;
	char err[512] = "";
	write_pair(f, "..v1", NA1, 0);
	kubelet_swap(f, "..v1");
	struct tls_server *t = tls_server_new(f->loop, path(f, "tls.crt"), path(f, "tls.key"), err, sizeof(err));
	assert_non_null(t);
	const struct http_transport *tr = tls_server_transport(t);

	static const unsigned char both[] = "\x02h2\x08http/1.1", h2[] = "\x02h2";
	SSL_CTX *c = client_ctx(path(f, "..v1/tls.crt"), both, sizeof(both) - 1);
	struct side s;
	side_open(&s, tr, c);
	assert_int_equal(side_handshake(&s, tr), 0);
	assert_int_equal(SSL_get_verify_result(s.cli), X509_V_OK);
	const unsigned char *proto;
	unsigned plen;
	SSL_get0_alpn_selected(s.cli, &proto, &plen);
	assert_int_equal(plen, 8);
	assert_memory_equal(proto, "http/1.1", 8);
	assert_int_equal(peer_not_after(s.cli), NA1);

	struct iovec iov[3] = {{"HTTP/1.1 200 OK\r\n", 17}, {"\r\n", 2}, {"pong", 4}};
	int want = 0;
	assert_int_equal(tr->writev(s.srv, s.sv[0], iov, 3, &want), 23);
	char buf[64];
	size_t got = 0, n;
	while (got < 23 && SSL_read_ex(s.cli, buf + got, sizeof(buf) - got, &n) == 1)
		got += n;
	assert_int_equal(got, 23);
	assert_memory_equal(buf, "HTTP/1.1 200 OK\r\n\r\npong", 23);
	assert_int_equal(tr->pending(s.srv), 0);
	side_close(&s, tr);
	SSL_CTX_free(c);

	c = client_ctx(path(f, "..v1/tls.crt"), h2, sizeof(h2) - 1);
	side_open(&s, tr, c);
	assert_int_equal(side_handshake(&s, tr), 0);
	SSL_get0_alpn_selected(s.cli, &proto, &plen);
	assert_int_equal(plen, 0);
	side_close(&s, tr);
	SSL_CTX_free(c);
	assert_int_equal(tls_server_handshake_failures(t), 0);
	tls_server_free(t);
}

/* A plaintext HTTP client on the TLS port: the read fails (-EPROTO) and
 * is counted as a failed handshake. */
static void test_plaintext_client(void **state)
{
	struct fx *f = *state;
	char err[512] = "";
	write_pair(f, "..v1", NA1, 0);
	kubelet_swap(f, "..v1");
	struct tls_server *t = tls_server_new(f->loop, path(f, "tls.crt"), path(f, "tls.key"), err, sizeof(err));
	assert_non_null(t);
	const struct http_transport *tr = tls_server_transport(t);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	void *conn = tr->open(tr->ctx, sv[0]);
	assert_non_null(conn);
	const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_int_equal(write(sv[1], req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	char buf[64];
	int want = 0;
	assert_int_equal(tr->read(conn, sv[0], buf, sizeof(buf), &want), -EPROTO);
	assert_int_equal(tls_server_handshake_failures(t), 1);
	assert_int_equal(ERR_peek_error(), 0);
	tr->close(conn);
	close(sv[0]);
	close(sv[1]);
	tls_server_free(t);
}

/* A connection opened before a reload finishes its handshake with the
 * pair it opened with; one opened after gets the new pair. */
static void test_open_keeps_pair(void **state)
{
	struct fx *f = *state;
	char err[512] = "";
	write_pair(f, "..v1", NA1, 0);
	kubelet_swap(f, "..v1");
	struct tls_server *t = tls_server_new(f->loop, path(f, "tls.crt"), path(f, "tls.key"), err, sizeof(err));
	assert_non_null(t);
	const struct http_transport *tr = tls_server_transport(t);
	SSL_CTX *c1 = client_ctx(path(f, "..v1/tls.crt"), NULL, 0);
	struct side old;
	side_open(&old, tr, c1);

	write_pair(f, "..v2", NA2, 0);
	kubelet_swap(f, "..v2");
	assert_true(run_until(f, t, reloads_at_least, 1));

	assert_int_equal(side_handshake(&old, tr), 0);
	assert_int_equal(peer_not_after(old.cli), NA1);
	side_close(&old, tr);
	SSL_CTX_free(c1);

	SSL_CTX *c2 = client_ctx(path(f, "..v2/tls.crt"), NULL, 0);
	struct side cur;
	side_open(&cur, tr, c2);
	assert_int_equal(side_handshake(&cur, tr), 0);
	assert_int_equal(peer_not_after(cur.cli), NA2);
	side_close(&cur, tr);
	SSL_CTX_free(c2);
	tls_server_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_check_pair, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_then_appears, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handshake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plaintext_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_keeps_pair, setup, teardown),
	};
	return cmocka_run_group_tests_name("webhook tls", tests, NULL, NULL);
}
