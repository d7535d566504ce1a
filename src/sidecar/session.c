#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "answer.h"
#include "config.h"

struct session {
	char tok[SESSION_TOKEN_LEN + 1];
	uint64_t created_us, expires_us;
};

int session_init(struct sessions *ss)
{
	ss->used = 0;
	ss->s = calloc(SESSION_MAX, sizeof(*ss->s));
	return ss->s ? 0 : -ENOMEM;
}

void session_fini(struct sessions *ss)
{
	free(ss->s);
	ss->s = NULL;
	ss->used = 0;
}

int session_new(struct sessions *ss, unsigned ttl, uint64_t now_us, const char **tok)
{
	unsigned char rnd[32];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	/* A free (or expired) slot, the lowest first (so a check scans only as
	 * many slots as were ever in use at once), else the oldest session goes. */
	struct session *slot = &ss->s[0];
	for (unsigned i = 0; i < SESSION_MAX; i++) {
		struct session *s = &ss->s[i];
		if (s->expires_us <= now_us) {
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
	if ((unsigned)(slot - ss->s) >= ss->used)
		ss->used = (unsigned)(slot - ss->s) + 1;
	slot->created_us = now_us;
	slot->expires_us = now_us + (uint64_t)ttl * 1000000u;
	*tok = slot->tok;
	return 0;
}

/* 1 when t is a live session's token. */
static int known(const struct sessions *ss, const struct http_span *t, uint64_t now_us)
{
	if (t->n != SESSION_TOKEN_LEN)
		return 0;
	for (unsigned i = 0; i < ss->used; i++) {
		const struct session *s = &ss->s[i];
		if (s->expires_us <= now_us)
			continue;
		unsigned char diff = 0; /* the whole compare, whatever matches */
		for (size_t k = 0; k < SESSION_TOKEN_LEN; k++)
			diff |= (unsigned char)(s->tok[k] ^ t->p[k]);
		if (!diff)
			return 1;
	}
	return 0;
}

const struct session_dialect session_ours = SESSION_DIALECT(
	"x-metadata-token-ttl-seconds", "X-Metadata-Token-TTL-Seconds", "x-metadata-token");

int session_check(const struct sessions *ss, const struct http_request *req,
		  const struct session_dialect *const *d, size_t n)
{
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned count = 0;
		const struct http_span *t = http_req_header_n(req, d[i]->token, d[i]->token_len, &count);
		if (!t)
			continue;
		if (count > 1 || !known(ss, t, req->start_us))
			return -1;
		found = 1;
	}
	return found;
}

void session_open(struct call *c, const struct session_dialect *d)
{
	struct sessions *ss = c->self;
	const struct http_request *req = c->req;
	struct http_response *res = c->res;
	http_res_header(res, "Cache-Control", "no-store");
	if (answer_req_forwarded(req)) {
		/* A proxy cannot mint a session for whoever it relays (SSRF). */
		http_res_error(res, 403, "forbidden", "proxied requests cannot open a session");
		return;
	}
	int many;
	const struct http_span *h = answer_req_header(req, d->ttl, &many);
	char num[16];
	unsigned ttl = 0;
	if (!h || many || h->n == 0 || h->n >= sizeof(num) ||
	    (memcpy(num, h->p, h->n), num[h->n] = '\0',
	     config_parse_uint(num, 1, SESSION_TTL_MAX, &ttl) < 0)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "%s: want one whole number of seconds, 1..21600", d->ttl_echo);
		http_res_error(res, 400, "bad_ttl", msg);
		return;
	}
	const char *tok; /* in the table: it outlives the answer's write */
	if (session_new(ss, ttl, req->start_us, &tok) < 0) {
		http_res_error(res, 500, "internal", "no randomness for a session token");
		return;
	}
	http_res_header(res, d->ttl_echo, num);
	http_res_text(res, 200, "text/plain", tok, SESSION_TOKEN_LEN);
}

void session_serve(struct call *c)
{
	session_open(c, &session_ours);
}
