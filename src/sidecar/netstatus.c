#include "netstatus.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jview.h"
#include "sbuf.h"

/* A refusal naming node i's place in the text. */
__attribute__((format(printf, 5, 6))) static int refuse(const struct jv *v, uint32_t i, char *err, size_t errlen,
							 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (w >= 0 && (size_t)w < errlen)
		snprintf(err + w, errlen - (size_t)w, " at byte %u", v->nodes[i].off);
	return -EINVAL;
}

/* String node i, decoded into out (at most cap bytes, then a NUL); its
 * length in *len. */
static int text(struct jv *v, uint32_t i, char *out, size_t cap, size_t *len, char *err, size_t errlen)
{
	const char *p;
	size_t n;
	if (jv_type(v, i) != JV_STRING)
		return refuse(v, i, err, errlen, "expected a string");
	if (v->nodes[i].n > cap)
		return refuse(v, i, err, errlen, "string too long");
	if (jv_str(v, i, &p, &n) < 0) {
		snprintf(err, errlen, "out of memory at byte %u", v->nodes[i].off);
		return -ENOMEM;
	}
	memcpy(out, p, n);
	out[n] = '\0';
	*len = n;
	return 0;
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

static int ips(struct jv *v, uint32_t arr, struct netstatus_nic *nic, char *err, size_t errlen)
{
	if (jv_type(v, arr) != JV_ARRAY)
		return refuse(v, arr, err, errlen, "\"ips\" is not an array");
	for (uint32_t e = jv_first(v, arr); e != JV_NONE; e = jv_next(v, arr, e)) {
		char a[64];
		unsigned char bin[16];
		size_t al = 0;
		int r = text(v, e, a, sizeof(a) - 1, &al, err, errlen);
		if (r == -EINVAL && jv_type(v, e) == JV_STRING)
			return refuse(v, e, err, errlen, "an \"ips\" entry is not an IP address");
		if (r < 0)
			return r;
		if (inet_pton(AF_INET, a, bin) == 1) {
			/* inet_pton takes dotted quads only: at most 15 bytes */
			al = strlen(a);
			if (!nic->ipv4[0] && al < sizeof(nic->ipv4))
				memcpy(nic->ipv4, a, al + 1);
		} else if (inet_pton(AF_INET6, a, bin) != 1) {
			return refuse(v, e, err, errlen, "an \"ips\" entry is not an IP address");
		}
	}
	return 0;
}

/* One interface: its members in order (a repeated one is read again). */
static int nic(struct jv *v, uint32_t obj, struct netstatus_nic *out, char *err, size_t errlen)
{
	int r = 0;
	size_t n = 0;
	memset(out, 0, sizeof(*out));
	if (jv_type(v, obj) != JV_OBJECT)
		return refuse(v, obj, err, errlen, "expected an object");
	for (uint32_t k = jv_first(v, obj); k != JV_NONE && r == 0; k = jv_next(v, obj, k)) {
		uint32_t val = k + 1;
		if (jv_str_eq(v, k, "name", 4)) {
			r = text(v, val, out->name, NETSTATUS_NAME_MAX, &n, err, errlen);
		} else if (jv_str_eq(v, k, "interface", 9)) {
			r = text(v, val, out->iface, NETSTATUS_IFACE_MAX, &n, err, errlen);
		} else if (jv_str_eq(v, k, "mac", 3)) {
			char m[32];
			r = text(v, val, m, sizeof(m) - 1, &n, err, errlen);
			if ((r == 0 && parse_mac(m, n, out->mac) < 0) ||
			    (r == -EINVAL && jv_type(v, val) == JV_STRING))
				return refuse(v, val, err, errlen, "\"mac\" is not six hex pairs joined by ':'");
			out->has_mac = 1;
		} else if (jv_str_eq(v, k, "ips", 3)) {
			r = ips(v, val, out, err, errlen);
		} else if (jv_str_eq(v, k, "default", 7)) {
			if (jv_type(v, val) != JV_BOOL)
				return refuse(v, val, err, errlen, "\"default\" is not true or false");
			if (v->nodes[val].flags & JV_F_TRUE)
				out->is_default = 1;
		}
	}
	return r;
}

int netstatus_parse(const char *s, size_t n, struct netstatus *out, char *err, size_t errlen)
{
	/* The interfaces' objects sit at depth 2; a member's value may nest
	 * NETSTATUS_DEPTH_MAX - 1 levels below its own. */
	struct jv v = {.max_depth = NETSTATUS_DEPTH_MAX + 1};
	int r;
	out->n = 0;
	if ((r = jv_parse(&v, s, n, err, errlen)) < 0) {
		size_t w = strlen(err);
		if (!strstr(err, " at byte ") && w < errlen)
			snprintf(err + w, errlen - w, " at byte %zu", v.err_off);
		goto out;
	}
	/* What Multus writes has none; the reader would take one as U+FFFD. */
	for (uint32_t i = 0; i < v.count; i++)
		if (v.nodes[i].type == JV_STRING && (v.nodes[i].flags & JV_F_LONE_SURROGATE)) {
			r = refuse(&v, i, err, errlen, "lone surrogate escape in the string");
			goto out;
		}
	if (jv_type(&v, 0) != JV_ARRAY) {
		r = refuse(&v, 0, err, errlen, "expected a JSON array");
		goto out;
	}
	for (uint32_t e = jv_first(&v, 0); e != JV_NONE; e = jv_next(&v, 0, e)) {
		if (out->n == NETSTATUS_MAX_NICS) {
			r = refuse(&v, e, err, errlen, "more interfaces than the sidecar keeps");
			goto out;
		}
		if ((r = nic(&v, e, &out->nic[out->n], err, errlen)) < 0)
			goto out;
		out->n++;
	}
out:
	jv_free(&v);
	if (r < 0)
		out->n = 0;
	return r;
}
