#include "netstatus.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sbuf.h"
#include "utf8.h"

struct parser {
	const char *s;
	size_t n, i;
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

/* A string at p->i.  With out, decoded there and NUL-terminated (at most
 * cap bytes before the NUL, else "too long"); without, only checked. */
static int string(struct parser *p, char *out, size_t cap, size_t *outlen)
{
	size_t o = 0;
	if (p->i >= p->n || p->s[p->i] != '"')
		return fail(p, "expected a string");
	p->i++;
	for (;;) {
		if (p->i >= p->n)
			return fail(p, "unterminated string");
		unsigned char c = (unsigned char)p->s[p->i];
		char buf[4];
		size_t bl;
		if (c == '"') {
			p->i++;
			break;
		}
		if (c < 0x20)
			return fail(p, "control character in a string");
		if (c >= 0x80) {
			uint32_t cp;
			bl = utf8_next((const unsigned char *)p->s + p->i, p->n - p->i, &cp);
			if (!bl)
				return fail(p, "invalid UTF-8 in a string");
			memcpy(buf, p->s + p->i, bl);
			p->i += bl;
		} else if (c != '\\') {
			buf[0] = (char)c;
			bl = 1;
			p->i++;
		} else {
			if (++p->i >= p->n)
				return fail(p, "unterminated escape");
			char e = p->s[p->i++];
			static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
			const char *simple = e ? strchr(from, e) : NULL;
			if (simple) {
				buf[0] = to[simple - from];
				bl = 1;
			} else if (e == 'u') {
				uint32_t cp, lo;
				if (hex4(p, &cp) < 0)
					return fail(p, "bad \\u escape");
				if (cp >= 0xdc00 && cp <= 0xdfff)
					return fail(p, "lone low surrogate");
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
						return fail(p, "lone high surrogate");
					p->i += 2;
					if (hex4(p, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
						return fail(p, "bad surrogate pair");
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				}
				bl = utf8_put(cp, buf);
			} else {
				return fail(p, "bad escape");
			}
		}
		if (out) {
			if (o + bl > cap)
				return fail(p, "string too long");
			memcpy(out + o, buf, bl);
		}
		o += bl;
	}
	if (out)
		out[o] = '\0';
	if (outlen)
		*outlen = o;
	return 0;
}

/* A number (RFC 8259 §6), only checked. */
static int number(struct parser *p)
{
	size_t i = p->i;
	if (i < p->n && p->s[i] == '-')
		i++;
	if (i < p->n && p->s[i] == '0') {
		i++;
	} else if (i < p->n && p->s[i] >= '1' && p->s[i] <= '9') {
		while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	} else {
		return fail(p, "bad number");
	}
	if (i < p->n && p->s[i] == '.') {
		size_t d = ++i;
		while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
		if (i == d)
			return fail(p, "bad fraction");
	}
	if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
		i++;
		if (i < p->n && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		size_t d = i;
		while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
		if (i == d)
			return fail(p, "bad exponent");
	}
	p->i = i;
	return 0;
}

static int literal(struct parser *p, const char *w)
{
	size_t l = strlen(w);
	if (p->n - p->i < l || memcmp(p->s + p->i, w, l) != 0)
		return fail(p, "unexpected character");
	p->i += l;
	return 0;
}

/* Any value, only checked. */
static int skip(struct parser *p, unsigned depth)
{
	if (depth > NETSTATUS_DEPTH_MAX)
		return fail(p, "nested too deep");
	ws(p);
	if (p->i >= p->n)
		return fail(p, "expected a value");
	char c = p->s[p->i];
	int r;
	if (c == '"')
		return string(p, NULL, 0, NULL);
	if (c == 't')
		return literal(p, "true");
	if (c == 'f')
		return literal(p, "false");
	if (c == 'n')
		return literal(p, "null");
	if (c != '{' && c != '[')
		return number(p);
	char close = c == '{' ? '}' : ']';
	p->i++;
	ws(p);
	if (p->i < p->n && p->s[p->i] == close) {
		p->i++;
		return 0;
	}
	for (;;) {
		ws(p);
		if (c == '{') {
			if ((r = string(p, NULL, 0, NULL)) < 0)
				return r;
			ws(p);
			if (p->i >= p->n || p->s[p->i] != ':')
				return fail(p, "expected ':'");
			p->i++;
		}
		if ((r = skip(p, depth + 1)) < 0)
			return r;
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (p->i < p->n && p->s[p->i] == close) {
			p->i++;
			return 0;
		}
		return fail(p, c == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

/* "aa:bb:cc:dd:ee:ff", either case. */
static int parse_mac(const char *s, size_t n, uint8_t mac[6])
{
	if (n != 17)
		return -1;
	for (size_t k = 0; k < 6; k++) {
		int a = sbuf_hexval(s[3 * k]), b = sbuf_hexval(s[3 * k + 1]);
		if (a < 0 || b < 0 || (k < 5 && s[3 * k + 2] != ':'))
			return -1;
		mac[k] = (uint8_t)(a << 4 | b);
	}
	return 0;
}

static int ips(struct parser *p, struct netstatus_nic *nic)
{
	int r;
	if (p->i >= p->n || p->s[p->i] != '[')
		return fail(p, "\"ips\" is not an array");
	p->i++;
	ws(p);
	if (p->i < p->n && p->s[p->i] == ']') {
		p->i++;
		return 0;
	}
	for (;;) {
		char a[64];
		unsigned char bin[16];
		ws(p);
		size_t at = p->i;
		if ((r = string(p, a, sizeof(a) - 1, NULL)) < 0)
			return r;
		if (inet_pton(AF_INET, a, bin) == 1) {
			/* inet_pton takes dotted quads only: at most 15 bytes */
			size_t al = strlen(a);
			if (!nic->ipv4[0] && al < sizeof(nic->ipv4))
				memcpy(nic->ipv4, a, al + 1);
		} else if (inet_pton(AF_INET6, a, bin) != 1) {
			p->i = at;
			return fail(p, "an \"ips\" entry is not an IP address");
		}
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (p->i < p->n && p->s[p->i] == ']') {
			p->i++;
			return 0;
		}
		return fail(p, "expected ',' or ']'");
	}
}

static int nic(struct parser *p, struct netstatus_nic *out)
{
	int r;
	memset(out, 0, sizeof(*out));
	if (p->i >= p->n || p->s[p->i] != '{')
		return fail(p, "expected an object");
	p->i++;
	ws(p);
	if (p->i < p->n && p->s[p->i] == '}') {
		p->i++;
		return 0;
	}
	for (;;) {
		char key[16];
		size_t kl = 0;
		ws(p);
		size_t at = p->i;
		/* A key we keep is short; a longer one is only checked. */
		if (string(p, key, sizeof(key) - 1, &kl) < 0) {
			p->i = at;
			if ((r = string(p, NULL, 0, NULL)) < 0)
				return r;
			key[0] = '\0';
		}
		ws(p);
		if (p->i >= p->n || p->s[p->i] != ':')
			return fail(p, "expected ':'");
		p->i++;
		ws(p);
		at = p->i;
		if (strcmp(key, "name") == 0) {
			if ((r = string(p, out->name, NETSTATUS_NAME_MAX, NULL)) < 0)
				return r;
		} else if (strcmp(key, "interface") == 0) {
			if ((r = string(p, out->iface, NETSTATUS_IFACE_MAX, NULL)) < 0)
				return r;
		} else if (strcmp(key, "mac") == 0) {
			char m[32];
			size_t ml;
			if ((r = string(p, m, sizeof(m) - 1, &ml)) < 0)
				return r;
			if (parse_mac(m, ml, out->mac) < 0) {
				p->i = at;
				return fail(p, "\"mac\" is not six hex pairs joined by ':'");
			}
			out->has_mac = 1;
		} else if (strcmp(key, "ips") == 0) {
			if ((r = ips(p, out)) < 0)
				return r;
		} else if (strcmp(key, "default") == 0) {
			if (p->i < p->n && p->s[p->i] == 't') {
				if ((r = literal(p, "true")) < 0)
					return r;
				out->is_default = 1;
			} else if (literal(p, "false") < 0) {
				return fail(p, "\"default\" is not true or false");
			}
		} else if ((r = skip(p, 2)) < 0) {
			return r;
		}
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (p->i < p->n && p->s[p->i] == '}') {
			p->i++;
			return 0;
		}
		return fail(p, "expected ',' or '}'");
	}
}

int netstatus_parse(const char *s, size_t n, struct netstatus *out, char *err, size_t errlen)
{
	struct parser p = {s, n, 0, err, errlen};
	int r = 0;
	out->n = 0;
	ws(&p);
	if (p.i >= p.n || s[p.i] != '[') {
		r = fail(&p, "expected a JSON array");
		goto out;
	}
	p.i++;
	ws(&p);
	if (p.i < p.n && s[p.i] == ']') {
		p.i++;
	} else {
		for (;;) {
			ws(&p);
			if (out->n == NETSTATUS_MAX_NICS) {
				r = fail(&p, "more interfaces than the sidecar keeps");
				goto out;
			}
			if ((r = nic(&p, &out->nic[out->n])) < 0)
				goto out;
			out->n++;
			ws(&p);
			if (p.i < p.n && s[p.i] == ',') {
				p.i++;
				continue;
			}
			if (p.i < p.n && s[p.i] == ']') {
				p.i++;
				break;
			}
			r = fail(&p, "expected ',' or ']'");
			goto out;
		}
	}
	ws(&p);
	if (p.i != p.n)
		r = fail(&p, "text after the array");
out:
	if (r < 0)
		out->n = 0;
	return r;
}
