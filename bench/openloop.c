/* openloop: open-loop HTTPS POST load, the way an API server calls a
 * webhook.  CONNS keep-alive TLS connections share a fixed total RATE of
 * requests per second with exponential (Poisson) gaps: requests are due on
 * their own schedule whether or not the server kept up, and each latency is
 * taken from the moment the request was due (no coordinated omission: a
 * request that waited for a free connection counts its wait).
 *
 *   openloop HOST PORT PATH BODY_FILE CONNS RATE SECONDS
 *
 * Prints one line: "due done errors p50_ms p99_ms p999_ms max_ms".  The
 * first half second is a warm-up and is not counted.  Every answer must be
 * HTTP 200 with a Content-Length body; anything else counts as an error.
 * Exit 0 when no request failed.
 *
 * The client polls (epoll_wait with no timeout) instead of sleeping: it owns
 * its core, and in this VM a wake-up from idle costs ~0.1 ms, which is the
 * load generator's cost, not the webhook's.  The webhook sleeps as it does
 * in production, so its own wake-ups are in the figures. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define MAXC 1024
#define WARMUP_NS 500000000ll

struct cn {
	int fd;
	SSL *ssl;
	int busy;
	int64_t due;       /* when the request in flight was due */
	size_t sent;       /* bytes of the request written */
	char in[65536];    /* the answer so far */
	size_t in_len;
};

static struct cn conns[MAXC];
static int nconns;
static char *req;
static size_t req_len;
static int64_t *lat; /* ns, counted requests */
static size_t nlat, cap_lat;
static long errors, done_n;
static int64_t t_start, t_end;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "openloop: %s: %s\n", what, errno ? strerror(errno) : "failed");
	ERR_print_errors_fp(stderr);
	exit(2);
}

/* A queue of due times waiting for a free connection. */
static int64_t *queue;
static size_t q_head, q_len, q_cap;

static void q_push(int64_t due)
{
	if (q_len == q_cap) {
		size_t nc = q_cap ? q_cap * 2 : 1024;
		int64_t *nq = malloc(nc * sizeof(*nq));
		if (!nq)
			die("out of memory");
		for (size_t i = 0; i < q_len; i++)
			nq[i] = queue[(q_head + i) % (q_cap ? q_cap : 1)];
		free(queue);
		queue = nq;
		q_cap = nc;
		q_head = 0;
	}
	queue[(q_head + q_len) % q_cap] = due;
	q_len++;
}

static int64_t q_pop(void)
{
	int64_t v = queue[q_head];
	q_head = (q_head + 1) % q_cap;
	q_len--;
	return v;
}

static void record(int64_t due, int ok)
{
	int64_t t = now_ns();
	if (due < t_start + WARMUP_NS || due >= t_end)
		return;
	done_n++;
	if (!ok) {
		errors++;
		return;
	}
	if (nlat == cap_lat) {
		cap_lat = cap_lat ? cap_lat * 2 : 4096;
		lat = realloc(lat, cap_lat * sizeof(*lat));
		if (!lat)
			die("out of memory");
	}
	lat[nlat++] = t - due;
}

static void want(int ep, struct cn *c, uint32_t ev)
{
	struct epoll_event e = {.events = ev, .data.ptr = c};
	if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e) < 0)
		die("epoll_ctl");
}

/* Writes what it can of the request; 1 when all of it is out. */
static int pump_write(int ep, struct cn *c)
{
	while (c->sent < req_len) {
		size_t put = 0;
		int r = SSL_write_ex(c->ssl, req + c->sent, req_len - c->sent, &put);
		if (r == 1) {
			c->sent += put;
			continue;
		}
		int e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_WRITE) {
			want(ep, c, EPOLLIN | EPOLLOUT);
			return 0;
		}
		if (e == SSL_ERROR_WANT_READ)
			return 0;
		die("SSL_write");
	}
	want(ep, c, EPOLLIN);
	return 1;
}

static void start(int ep, struct cn *c, int64_t due)
{
	c->busy = 1;
	c->due = due;
	c->sent = 0;
	c->in_len = 0;
	pump_write(ep, c);
}

/* An answer is complete when its head and Content-Length bytes are in:
 * 1 done (ok in *ok), 0 more to read. */
static int answer_complete(struct cn *c, int *ok)
{
	char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
	if (!end)
		return 0;
	size_t head = (size_t)(end - c->in) + 4;
	char *cl = memmem(c->in, head, "\r\nContent-Length:", 17);
	if (!cl)
		cl = memmem(c->in, head, "\r\ncontent-length:", 17);
	if (!cl) {
		*ok = 0;
		return 1;
	}
	size_t body = strtoul(cl + 17, NULL, 10);
	if (c->in_len < head + body)
		return 0;
	*ok = c->in_len == head + body && strncmp(c->in, "HTTP/1.1 200 ", 13) == 0;
	return 1;
}

static void on_readable(int ep, struct cn *c)
{
	for (;;) {
		if (!c->busy) {
			/* Nothing asked: drain what the server sent (close_notify). */
			char tmp[256];
			size_t got;
			int r = SSL_read_ex(c->ssl, tmp, sizeof(tmp), &got);
			if (r != 1) {
				int e = SSL_get_error(c->ssl, r);
				if (e == SSL_ERROR_WANT_READ)
					return;
				fprintf(stderr, "openloop: connection closed by the server\n");
				exit(2);
			}
			continue;
		}
		if (c->sent < req_len && !pump_write(ep, c))
			return;
		if (c->in_len == sizeof(c->in)) {
			fprintf(stderr, "openloop: answer larger than %zu bytes\n", sizeof(c->in));
			exit(2);
		}
		size_t got = 0;
		int r = SSL_read_ex(c->ssl, c->in + c->in_len, sizeof(c->in) - c->in_len, &got);
		if (r != 1) {
			int e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ)
				return;
			if (e == SSL_ERROR_WANT_WRITE) {
				want(ep, c, EPOLLIN | EPOLLOUT);
				return;
			}
			fprintf(stderr, "openloop: the server closed a connection mid-answer\n");
			exit(2);
		}
		c->in_len += got;
		int ok = 0;
		if (answer_complete(c, &ok)) {
			record(c->due, ok);
			c->busy = 0;
			if (q_len)
				start(ep, c, q_pop());
			else
				return;
		}
	}
}

static void connect_all(SSL_CTX *ctx, const char *host, int port, int ep)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "openloop: HOST must be an IPv4 address\n");
		exit(2);
	}
	for (int i = 0; i < nconns; i++) {
		struct cn *c = &conns[i];
		c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			die("connect");
		int one = 1;
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->ssl = SSL_new(ctx);
		if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1 || SSL_connect(c->ssl) != 1)
			die("TLS handshake");
		/* Non-blocking from here on. */
		int fl = fcntl(c->fd, F_GETFL);
		if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0)
			die("O_NONBLOCK");
		struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e) < 0)
			die("epoll_ctl");
	}
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct_ms(double p)
{
	if (!nlat)
		return NAN;
	size_t i = (size_t)ceil(p * (double)nlat) - 1;
	if (i >= nlat)
		i = nlat - 1;
	return (double)lat[i] / 1e6;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
		die(path);
	fclose(f);
	*len = (size_t)n;
	return b;
}

int main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: openloop HOST PORT PATH BODY_FILE CONNS RATE SECONDS\n");
		return 2;
	}
	const char *host = argv[1], *path = argv[3];
	int port = atoi(argv[2]);
	nconns = atoi(argv[5]);
	double rate = atof(argv[6]), secs = atof(argv[7]);
	if (nconns < 1 || nconns > MAXC || rate <= 0 || secs <= 0.5) {
		fprintf(stderr, "openloop: CONNS 1..%d, RATE > 0, SECONDS > 0.5\n", MAXC);
		return 2;
	}
	size_t blen;
	char *body = slurp(argv[4], &blen);
	req = malloc(blen + 512);
	if (!req)
		die("out of memory");
	int h = snprintf(req, 512,
			 "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
			 "Accept: application/json\r\nContent-Length: %zu\r\n\r\n",
			 path, host, port, blen);
	memcpy(req + h, body, blen);
	req_len = (size_t)h + blen;
	free(body);

	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		die("SSL_CTX_new");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); /* a bench against our own key */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	connect_all(ctx, host, port, ep);

	/* Exponential gaps from a fixed seed: the same schedule every run. */
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	t_start = now_ns();
	t_end = t_start + (int64_t)(secs * 1e9);
	int64_t next = t_start;
	long due_n = 0;
	int rr = 0;
	for (;;) {
		int64_t t = now_ns();
		while (next <= t && next < t_end) {
			if (next >= t_start + WARMUP_NS)
				due_n++;
			int k = -1;
			for (int j = 0; j < nconns; j++) {
				int idx = (rr + j) % nconns; /* spread over the connections */
				if (!conns[idx].busy) {
					k = idx;
					break;
				}
			}
			if (k >= 0) {
				rr = k + 1;
				start(ep, &conns[k], next);
			} else {
				q_push(next);
			}
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			double u = ((double)(seed >> 11) + 0.5) / 9007199254740992.0;
			next += (int64_t)(-log(u) / rate * 1e9);
		}
		int inflight = q_len > 0;
		for (int j = 0; j < nconns && !inflight; j++)
			inflight = conns[j].busy;
		if (next >= t_end && !inflight)
			break;
		if (t > t_end + 5000000000ll) {
			fprintf(stderr, "openloop: answers still missing 5 s after the end\n");
			return 2;
		}
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, 0);
		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			struct cn *c = evs[i].data.ptr;
			if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				on_readable(ep, c);
			else if ((evs[i].events & EPOLLOUT) && c->busy && c->sent < req_len)
				pump_write(ep, c);
		}
	}
	qsort(lat, nlat, sizeof(*lat), cmp64);
	printf("%ld %ld %ld %.3f %.3f %.3f %.3f\n", due_n, done_n, errors, pct_ms(0.50), pct_ms(0.99),
	       pct_ms(0.999), nlat ? (double)lat[nlat - 1] / 1e6 : NAN);
	return errors ? 1 : 0;
}
