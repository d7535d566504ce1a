#include "ifaces.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/sha.h>

void ifc_tap_secondary(const char *net, size_t n, char out[IFACES_TAP_MAX + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)net, n, md);
	memcpy(out, "tap", 3);
	/* 11 hex digits: KubeVirt's maxIfaceNameLen (15 minus "-nic") */
	for (size_t i = 3; i < IFACES_TAP_HASHED_LEN; i++)
		out[i] = hex[(md[(i - 3) / 2] >> ((i - 3) % 2 ? 0 : 4)) & 0xf];
	out[IFACES_TAP_HASHED_LEN] = '\0';
}

/* ---- binding plugins ------------------------------------------------- */

/* Where each default comes from (docs/webhook.md): passt and macvtap are
 * the plugin names of KubeVirt's user guide and its own tests
 * (pkg/libvmi/network.go); l2bridge is OVN-Kubernetes' managedTap binding
 * of primary user-defined networks. */
static const struct {
	const char *name;
	enum ifaces_kind kind;
} builtin[] = {
	{"passt", IFACES_PASST},
	{"macvtap", IFACES_TAP},
	{"l2bridge", IFACES_MANAGEDTAP},
};

int ifc_plugin_parse(const char *arg, struct ifc_plugin *out, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	if (!eq) {
		snprintf(err, errlen, "--binding-plugin: '%.80s' is not NAME=KIND", arg);
		return -EINVAL;
	}
	size_t n = (size_t)(eq - arg);
	if (!ifaces_name_ok(arg, n)) {
		snprintf(err, errlen, "--binding-plugin: '%.80s': the name must be 1..%d of [A-Za-z0-9._-]", arg,
			 IFACES_NAME_MAX);
		return -EINVAL;
	}
	enum ifaces_kind k;
	if (ifaces_kind_parse(eq + 1, strlen(eq + 1), &k) < 0 || !binding_table[k].plugin) {
		snprintf(err, errlen,
			 "--binding-plugin: '%.80s': KIND must be managedtap, passt, tap, masquerade or bridge", arg);
		return -EINVAL;
	}
	memcpy(out->name, arg, n);
	out->name[n] = '\0';
	out->kind = k;
	return 0;
}

enum ifaces_kind ifc_plugin_kind(const struct ifc_plugin *list, size_t n, const char *name, size_t len,
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
	return IFACES_UNKNOWN;
}

/* ---- the check of the annotation -------------------------------------- */

int ifc_check(const char *s, size_t n, char *err, size_t errlen)
{
	struct ifaces parsed;
	return ifaces_parse_strict(s, n, &parsed, err, errlen);
}
