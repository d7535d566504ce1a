#include "binding.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* One row per binding.  The reasons are what the sidecar logs for an
 * interface it cannot serve (docs/sidecar.md, "Bindings"). */
const struct binding binding_table[IFACES_NKINDS] = {
	[IFACES_MASQUERADE] = {"masquerade", BINDING_TAP, 1, NULL},
	[IFACES_BRIDGE] = {"bridge", BINDING_TAP, 1, NULL},
	[IFACES_MANAGEDTAP] = {"managedtap", BINDING_TAP, 1, NULL},
	[IFACES_PASST] = {"passt", BINDING_LOOPBACK, 1, NULL},
	[IFACES_SRIOV] = {"sriov", BINDING_NONE, 0,
			  "an SR-IOV VF is passed to the guest: its traffic never crosses the pod"},
	[IFACES_TAP] = {"tap", BINDING_NONE, 1,
			"the plugin's device (macvtap) takes the guest's frames past the pod"},
	[IFACES_UNKNOWN] = {"unknown", BINDING_NONE, 0,
			    "a binding plugin the webhook does not know (its --binding-plugin flag)"},
};

const char *ifaces_kind_name(enum ifaces_kind k)
{
	return (unsigned)k < IFACES_NKINDS ? binding_table[k].kind : "?";
}

int ifaces_kind_parse(const char *s, size_t n, enum ifaces_kind *k)
{
	for (unsigned i = 0; i < IFACES_NKINDS; i++) {
		if (strlen(binding_table[i].kind) == n && memcmp(binding_table[i].kind, s, n) == 0) {
			*k = (enum ifaces_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

int ifaces_kind_has_tap(enum ifaces_kind k)
{
	return (unsigned)k < IFACES_NKINDS && binding_table[k].path == BINDING_TAP;
}

int ifaces_kind_in_pod(enum ifaces_kind k)
{
	return (unsigned)k < IFACES_NKINDS && binding_table[k].path != BINDING_NONE;
}

const char *ifaces_kind_unserved(enum ifaces_kind k)
{
	return (unsigned)k < IFACES_NKINDS ? binding_table[k].unserved : "not a binding";
}

static int name_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

int ifaces_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > IFACES_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!name_byte(s[i]))
			return 0;
	return 1;
}

/* "#<decimal index>", the webhook's stand-in for a name it could not use:
 * 1..3 digits, or (strict) exactly the entry's own index. */
static int index_name_ok(const char *s, size_t n, size_t idx, int strict)
{
	if (strict) {
		char want[24];
		int w = snprintf(want, sizeof(want), "#%zu", idx);
		return w > 0 && (size_t)w == n && memcmp(s, want, n) == 0;
	}
	if (n < 2 || n > 4 || s[0] != '#')
		return 0;
	for (size_t i = 1; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* "tap" + a decimal N from 1, no leading zero, at most 3 digits (N counts
 * a VMI's secondary networks; the annotation has at most IFACES_MAX
 * entries): the tap of a secondary network in KubeVirt's ordinal scheme
 * (pod interface net<N>). */
static int tap_ordinal(const char *s, size_t n)
{
	if (n < 4 || n > 6 || s[3] < '1' || s[3] > '9')
		return 0;
	for (size_t i = 4; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* A tap name: "tap" and 1..12 more name bytes, so at most the kernel's
 * IFACES_TAP_MAX; strict: tap0, tap<N> or "tap" + 11 lowercase hex
 * digits. */
static int tap_ok(const char *s, size_t n, int strict)
{
	if (n < 4 || n > IFACES_TAP_MAX || memcmp(s, "tap", 3) != 0)
		return 0;
	for (size_t i = 3; i < n; i++)
		if (!name_byte(s[i]))
			return 0;
	if (!strict || (n == 4 && s[3] == '0') || tap_ordinal(s, n))
		return 1;
	if (n != IFACES_TAP_HASHED_LEN)
		return 0;
	for (size_t i = 3; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int shown(size_t n, size_t most)
{
	return (int)(n > most ? most : n);
}

static int parse(const char *s, size_t len, struct ifaces *out, int strict, char *err,
		 size_t errlen)
{
	size_t pos = 0, idx = 0;

	memset(out, 0, sizeof(*out));
	if (len > IFACES_TEXT_MAX) {
		snprintf(err, errlen, "%zu bytes: longer than %d bytes", len, IFACES_TEXT_MAX);
		return -EINVAL;
	}
	if (len == 0)
		return 0;
	for (;; idx++) {
		const char *e = s + pos;
		const char *comma = memchr(e, ',', len - pos);
		size_t n = comma ? (size_t)(comma - e) : len - pos;
		const char *f[3];
		size_t fl[3], nf = 0;
		struct ifaces_entry *ent;

		if (out->n == IFACES_MAX) {
			snprintf(err, errlen, "more than %d entries", IFACES_MAX);
			return -EINVAL;
		}
		ent = &out->e[out->n];
		/* Split NAME:KIND[:TAP]. */
		f[0] = e;
		for (size_t i = 0; i < n; i++) {
			if (e[i] != ':')
				continue;
			if (nf == 2) {
				snprintf(err, errlen,
					 "entry %zu: want NAME:KIND[:TAP], got more than three ':'-separated fields",
					 idx);
				return -EINVAL;
			}
			fl[nf] = (size_t)(e + i - f[nf]);
			f[++nf] = e + i + 1;
		}
		fl[nf] = (size_t)(e + n - f[nf]);
		nf++;
		if (nf < 2) {
			snprintf(err, errlen, "entry %zu: want NAME:KIND[:TAP], got '%.*s'", idx, shown(n, 40),
				 e);
			return -EINVAL;
		}
		if (!ifaces_name_ok(f[0], fl[0]) &&
		    !(fl[0] <= IFACES_NAME_MAX && index_name_ok(f[0], fl[0], idx, strict))) {
			if (strict)
				snprintf(err, errlen,
					 "entry %zu: bad interface name '%.*s' (1..%d of [A-Za-z0-9._-], or #%zu)",
					 idx, shown(fl[0], 40), f[0], IFACES_NAME_MAX, idx);
			else
				snprintf(err, errlen, "entry %zu: bad interface name '%.*s'", idx,
					 shown(fl[0], 40), f[0]);
			return -EINVAL;
		}
		memcpy(ent->name, f[0], fl[0]);
		ent->name[fl[0]] = '\0';
		if (ifaces_kind_parse(f[1], fl[1], &ent->kind)) {
			snprintf(err, errlen, "entry %zu (%s): unknown kind '%.*s'", idx, ent->name,
				 shown(fl[1], 20), f[1]);
			return -EINVAL;
		}
		if (ifaces_kind_has_tap(ent->kind) != (nf == 3)) {
			snprintf(err, errlen, "entry %zu (%s): kind %s %s", idx, ent->name,
				 ifaces_kind_name(ent->kind),
				 ifaces_kind_has_tap(ent->kind) ? "needs a tap" : "takes no tap");
			return -EINVAL;
		}
		if (nf == 3) {
			if (!tap_ok(f[2], fl[2], strict)) {
				snprintf(err, errlen, "entry %zu (%s): bad tap name '%.*s'%s", idx, ent->name,
					 shown(fl[2], 20), f[2],
					 strict ? " (KubeVirt's are tap0, tap<N> or tap and 11 lowercase hex digits)"
						: "");
				return -EINVAL;
			}
			memcpy(ent->tap, f[2], fl[2]);
			ent->tap[fl[2]] = '\0';
		}
		for (size_t j = 0; j < out->n; j++) {
			if (ent->tap[0] && strcmp(out->e[j].tap, ent->tap) == 0) {
				snprintf(err, errlen, "entry %zu (%s): tap %s named twice", idx, ent->name,
					 ent->tap);
				return -EINVAL;
			}
		}
		out->n++;
		if (!comma)
			return 0;
		pos += n + 1;
		if (pos == len) {
			snprintf(err, errlen, "entry %zu: empty (a trailing ',')", idx + 1);
			return -EINVAL;
		}
	}
}

int ifaces_parse(const char *s, size_t len, struct ifaces *out, char *err, size_t errlen)
{
	return parse(s, len, out, 0, err, errlen);
}

int ifaces_parse_strict(const char *s, size_t len, struct ifaces *out, char *err, size_t errlen)
{
	return parse(s, len, out, 1, err, errlen);
}

void ifaces_append(struct sbuf *b, size_t index, const char *name, size_t n, enum ifaces_kind k,
		   const char *tap)
{
	if (b->len)
		sbuf_putc(b, ',');
	if (ifaces_name_ok(name, n))
		sbuf_put(b, name, n);
	else
		sbuf_printf(b, "#%zu", index);
	sbuf_putc(b, ':');
	sbuf_puts(b, ifaces_kind_name(k));
	if (ifaces_kind_has_tap(k) && tap) {
		sbuf_putc(b, ':');
		sbuf_puts(b, tap);
	}
}
