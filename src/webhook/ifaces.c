#include "ifaces.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/sha.h>

static const char *const kind_names[] = {
	[IFC_MASQUERADE] = "masquerade", [IFC_BRIDGE] = "bridge", [IFC_MANAGEDTAP] = "managedtap",
	[IFC_PASST] = "passt",           [IFC_SRIOV] = "sriov",   [IFC_TAP] = "tap",
	[IFC_UNKNOWN] = "unknown",
};
#define NKINDS (sizeof(kind_names) / sizeof(kind_names[0]))

const char *ifc_kind_name(enum ifc_kind k)
{
	return (size_t)k < NKINDS ? kind_names[k] : "unknown";
}

int ifc_kind_parse(const char *s, size_t n, enum ifc_kind *k)
{
	for (size_t i = 0; i < NKINDS; i++) {
		if (strlen(kind_names[i]) == n && memcmp(kind_names[i], s, n) == 0) {
			*k = (enum ifc_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

int ifc_kind_has_tap(enum ifc_kind k)
{
	return k == IFC_MASQUERADE || k == IFC_BRIDGE || k == IFC_MANAGEDTAP;
}

int ifc_kind_in_pod(enum ifc_kind k)
{
	return ifc_kind_has_tap(k) || k == IFC_PASST;
}

static int name_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
	       c == '_' || c == '-';
}

int ifc_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > IFC_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!name_byte((unsigned char)s[i]))
			return 0;
	return 1;
}

void ifc_tap_secondary(const char *net, size_t n, char out[IFC_TAP_MAX + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)net, n, md);
	memcpy(out, "tap", 3);
	/* 11 hex digits: KubeVirt's maxIfaceNameLen (15 minus "-nic") */
	for (size_t i = 0; i < 11; i++)
		out[3 + i] = hex[(md[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
	out[IFC_TAP_MAX] = '\0';
}

void ifc_append(struct sbuf *b, size_t index, const char *name, size_t n, enum ifc_kind k, const char *tap)
{
	if (b->len)
		sbuf_putc(b, ',');
	if (ifc_name_ok(name, n))
		sbuf_put(b, name, n);
	else
		sbuf_printf(b, "#%zu", index);
	sbuf_putc(b, ':');
	sbuf_puts(b, ifc_kind_name(k));
	if (ifc_kind_has_tap(k) && tap) {
		sbuf_putc(b, ':');
		sbuf_puts(b, tap);
	}
}

/* ---- binding plugins ------------------------------------------------- */

/* Where each default comes from (docs/webhook.md): passt and macvtap are
 * the plugin names of KubeVirt's user guide and its own tests
 * (pkg/libvmi/network.go); l2bridge is OVN-Kubernetes' managedTap binding
 * of primary user-defined networks. */
static const struct {
	const char *name;
	enum ifc_kind kind;
} builtin[] = {
	{"passt", IFC_PASST},
	{"macvtap", IFC_TAP},
	{"l2bridge", IFC_MANAGEDTAP},
};

int ifc_plugin_parse(const char *arg, struct ifc_plugin *out, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	if (!eq) {
		snprintf(err, errlen, "--binding-plugin: '%.80s' is not NAME=KIND", arg);
		return -EINVAL;
	}
	size_t n = (size_t)(eq - arg);
	if (!ifc_name_ok(arg, n)) {
		snprintf(err, errlen, "--binding-plugin: '%.80s': the name must be 1..%d of [A-Za-z0-9._-]", arg,
			 IFC_NAME_MAX);
		return -EINVAL;
	}
	enum ifc_kind k;
	if (ifc_kind_parse(eq + 1, strlen(eq + 1), &k) < 0 || k == IFC_SRIOV || k == IFC_UNKNOWN) {
		snprintf(err, errlen,
			 "--binding-plugin: '%.80s': KIND must be managedtap, passt, tap, masquerade or bridge", arg);
		return -EINVAL;
	}
	memcpy(out->name, arg, n);
	out->name[n] = '\0';
	out->kind = k;
	return 0;
}

enum ifc_kind ifc_plugin_kind(const struct ifc_plugin *list, size_t n, const char *name, size_t len,
			      int *known)
{
	*known = 1;
	for (size_t i = n; i-- > 0;)
		if (strlen(list[i].name) == len && memcmp(list[i].name, name, len) == 0)
			return list[i].kind;
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (strlen(builtin[i].name) == len && memcmp(builtin[i].name, name, len) == 0)
			return builtin[i].kind;
	*known = 0;
	return IFC_UNKNOWN;
}

/* ---- the check of the annotation -------------------------------------- */

static int tap_ok(const char *s, size_t n)
{
	if (n == 4 && memcmp(s, "tap0", 4) == 0)
		return 1;
	if (n != IFC_TAP_MAX || memcmp(s, "tap", 3) != 0)
		return 0;
	for (size_t i = 3; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* #<index>, the entry's own index in decimal without leading zeros */
static int index_name_ok(const char *s, size_t n, size_t index)
{
	char want[24];
	int w = snprintf(want, sizeof(want), "#%zu", index);
	return w > 0 && (size_t)w == n && memcmp(s, want, n) == 0;
}

int ifc_check(const char *s, size_t n, char *err, size_t errlen)
{
	if (n > IFC_MAX_LEN) {
		snprintf(err, errlen, "%zu bytes, past %d", n, IFC_MAX_LEN);
		return -EINVAL;
	}
	if (n == 0)
		return 0;
	size_t index = 0, i = 0;
	while (i <= n) {
		size_t j = i;
		while (j < n && s[j] != ',')
			j++;
		if (index == IFC_MAX_ENTRIES) {
			snprintf(err, errlen, "more than %d entries", IFC_MAX_ENTRIES);
			return -EINVAL;
		}
		/* NAME:KIND[:TAP] within s[i..j) */
		const char *f[4];
		size_t fl[4], nf = 0, k = i;
		while (nf < 4) {
			size_t e = k;
			while (e < j && s[e] != ':')
				e++;
			f[nf] = s + k;
			fl[nf++] = e - k;
			if (e == j)
				break;
			k = e + 1;
		}
		enum ifc_kind kind;
		if (nf < 2 || nf > 3) {
			snprintf(err, errlen, "entry %zu: want NAME:KIND or NAME:KIND:TAP", index);
			return -EINVAL;
		}
		if (!ifc_name_ok(f[0], fl[0]) && !index_name_ok(f[0], fl[0], index)) {
			snprintf(err, errlen, "entry %zu: the name must be 1..%d of [A-Za-z0-9._-] or #%zu", index,
				 IFC_NAME_MAX, index);
			return -EINVAL;
		}
		if (ifc_kind_parse(f[1], fl[1], &kind) < 0) {
			snprintf(err, errlen,
				 "entry %zu: the kind must be masquerade, bridge, managedtap, passt, sriov, tap or unknown",
				 index);
			return -EINVAL;
		}
		if (ifc_kind_has_tap(kind) != (nf == 3)) {
			snprintf(err, errlen, "entry %zu: %s %s", index, kind_names[kind],
				 ifc_kind_has_tap(kind) ? "needs a tap" : "takes no tap");
			return -EINVAL;
		}
		if (nf == 3 && !tap_ok(f[2], fl[2])) {
			snprintf(err, errlen, "entry %zu: the tap must be tap0 or tap and 11 lowercase hex digits",
				 index);
			return -EINVAL;
		}
		index++;
		i = j + 1;
	}
	return 0;
}
