#include "ifaces.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[IFACES_NKINDS] = {
	[IFACES_MASQUERADE] = "masquerade", [IFACES_BRIDGE] = "bridge",
	[IFACES_MANAGEDTAP] = "managedtap", [IFACES_PASST] = "passt",
	[IFACES_SRIOV] = "sriov",           [IFACES_TAP] = "tap",
	[IFACES_UNKNOWN] = "unknown",
};

const char *ifaces_kind_name(enum ifaces_kind k)
{
	return (unsigned)k < IFACES_NKINDS ? kind_names[k] : "?";
}

int ifaces_kind_has_tap(enum ifaces_kind k)
{
	return k == IFACES_MASQUERADE || k == IFACES_BRIDGE || k == IFACES_MANAGEDTAP;
}

const char *ifaces_kind_unserved(enum ifaces_kind k)
{
	switch (k) {
	case IFACES_SRIOV:
		return "an SR-IOV VF is passed to the guest: its traffic never crosses the pod";
	case IFACES_TAP:
		return "the plugin's device (macvtap) takes the guest's frames past the pod";
	case IFACES_UNKNOWN:
		return "a binding plugin the webhook does not know (its --binding-plugin flag)";
	default:
		return NULL;
	}
}

static int name_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/* A field s[0..n) into out (cap bytes with the NUL): 0, or -EINVAL. */
static int field(const char *s, size_t n, char *out, size_t cap)
{
	if (n == 0 || n >= cap)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!name_byte(s[i]))
			return -EINVAL;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* "#<decimal index>", the webhook's stand-in for a name it could not use. */
static int index_name(const char *s, size_t n, char *out, size_t cap)
{
	if (n < 2 || n > 4 || s[0] != '#' || n >= cap)
		return -EINVAL;
	for (size_t i = 1; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static int kind_of(const char *s, size_t n, enum ifaces_kind *k)
{
	for (unsigned i = 0; i < IFACES_NKINDS; i++) {
		if (strlen(kind_names[i]) == n && memcmp(kind_names[i], s, n) == 0) {
			*k = (enum ifaces_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* A tap name as KubeVirt makes them: "tap" and 1..12 more name bytes. */
static int tap_name(const char *s, size_t n, char *out)
{
	if (n < 4 || n > IFACES_TAP_MAX || memcmp(s, "tap", 3) != 0)
		return -EINVAL;
	return field(s, n, out, IFACES_TAP_MAX + 1);
}

int ifaces_parse(const char *s, size_t len, struct ifaces *out, char *err, size_t errlen)
{
	size_t pos = 0;
	unsigned idx = 0;

	memset(out, 0, sizeof(*out));
	if (len > IFACES_TEXT_MAX) {
		snprintf(err, errlen, "longer than %d bytes", IFACES_TEXT_MAX);
		return -EINVAL;
	}
	if (len == 0)
		return 0;
	for (;;) {
		const char *e = s + pos;
		const char *comma = memchr(e, ',', len - pos);
		size_t n = comma ? (size_t)(comma - e) : len - pos;
		const char *f[3];
		size_t fl[3], nf = 0;
		struct ifaces_entry *ent;

		idx++;
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
				snprintf(err, errlen, "entry %u: more than three ':'-separated fields", idx);
				return -EINVAL;
			}
			fl[nf] = (size_t)(e + i - f[nf]);
			f[++nf] = e + i + 1;
		}
		fl[nf] = (size_t)(e + n - f[nf]);
		nf++;
		if (nf < 2) {
			snprintf(err, errlen, "entry %u: want NAME:KIND[:TAP], got '%.*s'", idx,
				 (int)(n > 40 ? 40 : n), e);
			return -EINVAL;
		}
		if (field(f[0], fl[0], ent->name, sizeof(ent->name)) &&
		    index_name(f[0], fl[0], ent->name, sizeof(ent->name))) {
			snprintf(err, errlen, "entry %u: bad interface name '%.*s'", idx,
				 (int)(fl[0] > 40 ? 40 : fl[0]), f[0]);
			return -EINVAL;
		}
		if (kind_of(f[1], fl[1], &ent->kind)) {
			snprintf(err, errlen, "entry %u (%s): unknown kind '%.*s'", idx, ent->name,
				 (int)(fl[1] > 20 ? 20 : fl[1]), f[1]);
			return -EINVAL;
		}
		if (ifaces_kind_has_tap(ent->kind) != (nf == 3)) {
			snprintf(err, errlen, "entry %u (%s): kind %s %s", idx, ent->name,
				 kind_names[ent->kind],
				 ifaces_kind_has_tap(ent->kind) ? "needs a tap" : "takes no tap");
			return -EINVAL;
		}
		if (nf == 3 && tap_name(f[2], fl[2], ent->tap)) {
			snprintf(err, errlen, "entry %u (%s): bad tap name '%.*s'", idx, ent->name,
				 (int)(fl[2] > 20 ? 20 : fl[2]), f[2]);
			return -EINVAL;
		}
		for (size_t j = 0; j < out->n; j++) {
			if (ent->tap[0] && strcmp(out->e[j].tap, ent->tap) == 0) {
				snprintf(err, errlen, "entry %u (%s): tap %s named twice", idx,
					 ent->name, ent->tap);
				return -EINVAL;
			}
		}
		out->n++;
		if (!comma)
			return 0;
		pos += n + 1;
		if (pos == len) {
			snprintf(err, errlen, "entry %u: empty (a trailing ',')", idx + 1);
			return -EINVAL;
		}
	}
}
