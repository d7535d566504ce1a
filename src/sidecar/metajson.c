#include "metajson.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "utf8.h"

struct parser {
	const char *s;
	size_t n, i;
	char *o; /* the next free byte of the store */
	char *err;
	size_t errlen;
};

static int fail(struct parser *p, const char *what)
{
	snprintf(p->err, p->errlen, "%s at byte %zu", what, p->i);
	return -EINVAL;
}

static void ws(struct parser *p)
{
	while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
			       p->s[p->i] == '\r'))
		p->i++;
}

static int hex4(struct parser *p, uint32_t *v)
{
	if (p->n - p->i < 4)
		return -1;
	*v = 0;
	for (int k = 0; k < 4; k++) {
		int h = sbuf_hexval(p->s[p->i + (size_t)k]);
		if (h < 0)
			return -1;
		*v = *v << 4 | (uint32_t)h;
	}
	p->i += 4;
	return 0;
}

/* A string at p->i, decoded into the store (NUL-terminated). */
static int string(struct parser *p, const char **out, size_t *outlen)
{
	if (p->i >= p->n || p->s[p->i] != '"')
		return fail(p, "expected a string");
	p->i++;
	char *start = p->o;
	for (;;) {
		if (p->i >= p->n)
			return fail(p, "unterminated string");
		unsigned char c = (unsigned char)p->s[p->i];
		if (c == '"') {
			p->i++;
			break;
		}
		if (c < 0x20)
			return fail(p, "control character in a string");
		if (c != '\\') {
			*p->o++ = (char)c;
			p->i++;
			continue;
		}
		if (++p->i >= p->n)
			return fail(p, "unterminated escape");
		char e = p->s[p->i++];
		const char *simple = strchr("\"\\/bfnrt", e);
		if (e && simple) {
			static const char to[] = "\"\\/\b\f\n\r\t";
			*p->o++ = to[simple - "\"\\/bfnrt"];
			continue;
		}
		if (e != 'u')
			return fail(p, "bad escape");
		uint32_t cp, lo;
		if (hex4(p, &cp) < 0)
			return fail(p, "bad \\u escape");
		/* A lone surrogate reads as U+FFFD, as Go (the API server) and the
		 * webhook's reader take it: both sides see the same text. */
		if (cp >= 0xdc00 && cp <= 0xdfff)
			cp = 0xfffd;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			size_t at = p->i;
			if (p->n - p->i >= 6 && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
				p->i += 2;
				if (hex4(p, &lo) < 0)
					return fail(p, "bad \\u escape");
				if (lo >= 0xdc00 && lo <= 0xdfff) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				} else {
					cp = 0xfffd;
					p->i = at; /* the next escape stands on its own */
				}
			} else {
				cp = 0xfffd;
			}
		}
		p->o += utf8_put(cp, p->o);
	}
	*p->o++ = '\0';
	*out = start;
	*outlen = (size_t)(p->o - start - 1);
	return 0;
}

int metajson_parse(const char *s, size_t n, struct metajson *out, char *err, size_t errlen)
{
	struct parser p = {.s = s, .n = n, .err = err, .errlen = errlen};
	memset(out, 0, sizeof(*out));
	if (utf8_valid(s, n) < 0) {
		snprintf(err, errlen, "not UTF-8");
		return -EINVAL;
	}
	/* Decoding never lengthens a string (\uXXXX: 6 bytes in, 3 out at
	 * most; a pair 12 in, 4 out), and each string adds one NUL. */
	out->store = malloc(n + n / 2 + 2);
	out->kv = calloc(METAJSON_MAX_KEYS, sizeof(*out->kv));
	if (!out->store || !out->kv) {
		metajson_free(out);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p.o = out->store;
	int r;
	ws(&p);
	if (p.i >= p.n || s[p.i] != '{') {
		r = fail(&p, "expected a JSON object");
		goto bad;
	}
	p.i++;
	ws(&p);
	if (p.i < p.n && s[p.i] == '}') {
		p.i++;
	} else {
		for (;;) {
			struct metakv kv;
			ws(&p);
			if ((r = string(&p, &kv.k, &kv.kn)) < 0)
				goto bad;
			for (size_t j = 0; j < out->n; j++) {
				const struct metakv *e = &out->kv[j];
				if (e->k && e->kn == kv.kn && memcmp(e->k, kv.k, kv.kn) == 0) {
					snprintf(err, errlen, "key \"%.64s\" appears twice", kv.k);
					r = -EINVAL;
					goto bad;
				}
			}
			ws(&p);
			if (p.i >= p.n || s[p.i] != ':') {
				r = fail(&p, "expected ':'");
				goto bad;
			}
			p.i++;
			ws(&p);
			if (p.i >= p.n || s[p.i] != '"') {
				snprintf(err, errlen, "the value of \"%.64s\" is not a string", kv.k);
				r = -EINVAL;
				goto bad;
			}
			if ((r = string(&p, &kv.v, &kv.vn)) < 0)
				goto bad;
			if (out->n == METAJSON_MAX_KEYS) {
				snprintf(err, errlen, "more than %d keys", METAJSON_MAX_KEYS);
				r = -EINVAL;
				goto bad;
			}
			out->kv[out->n++] = kv;
			ws(&p);
			if (p.i < p.n && s[p.i] == ',') {
				p.i++;
				continue;
			}
			if (p.i < p.n && s[p.i] == '}') {
				p.i++;
				break;
			}
			r = fail(&p, "expected ',' or '}'");
			goto bad;
		}
	}
	ws(&p);
	if (p.i != p.n) {
		r = fail(&p, "text after the object");
		goto bad;
	}
	return 0;
bad:
	metajson_free(out);
	return r;
}

void metajson_free(struct metajson *m)
{
	free(m->kv);
	free(m->store);
	memset(m, 0, sizeof(*m));
}
