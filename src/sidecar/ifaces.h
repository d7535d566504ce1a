/* ifaces: the VM's network interfaces as the webhook describes them
 * (IMDS_INTERFACES, from the VMI annotation imds.kubevirt.io/interfaces).
 *
 *   default:masquerade:tap0,br1:bridge:tap26578a32802,fast:sriov
 *
 * Entries are separated by ',', fields by ':': NAME:KIND[:TAP].  NAME is the
 * VMI interface name ([A-Za-z0-9._-], or #<index> when the webhook could not
 * use it), KIND how KubeVirt binds it, TAP the tap device KubeVirt creates
 * for it in the launcher pod (tap0 for the pod network, tap<11 hex> for a
 * Multus network: KubeVirt's pkg/network/link/names.go), present exactly for
 * the kinds that have one.  docs/sidecar.md, "Bindings", says what the
 * sidecar does with each kind.  Pure: bytes in, a table out. */
#ifndef IMDS_IFACES_H
#define IMDS_IFACES_H

#include <stddef.h>

#define IFACES_MAX 64
#define IFACES_NAME_MAX 63 /* the webhook's limit */
#define IFACES_TAP_MAX 15  /* IFNAMSIZ - 1 */
#define IFACES_TEXT_MAX 4096

enum ifaces_kind {
	IFACES_MASQUERADE, /* tap on a bridge, routed by the pod */
	IFACES_BRIDGE,     /* tap on a bridge with the pod NIC (the pod's own IP) */
	IFACES_MANAGEDTAP, /* a binding plugin KubeVirt gives a tap on a bridge */
	IFACES_PASST,      /* passt in the pod, no tap */
	IFACES_SRIOV,      /* a VF: nothing in the pod */
	IFACES_TAP,        /* a plugin whose device bypasses the pod (macvtap) */
	IFACES_UNKNOWN,    /* a plugin the webhook does not know */
	IFACES_NKINDS
};

struct ifaces_entry {
	char name[IFACES_NAME_MAX + 1];
	enum ifaces_kind kind;
	char tap[IFACES_TAP_MAX + 1]; /* "" when the kind has none */
};

struct ifaces {
	size_t n;
	struct ifaces_entry e[IFACES_MAX];
};

/* Parses s[0..len).  0, or -EINVAL with a message naming the entry and what
 * is wrong in err.  An empty text is an empty table. */
int ifaces_parse(const char *s, size_t len, struct ifaces *out, char *err, size_t errlen);

const char *ifaces_kind_name(enum ifaces_kind k);
/* Served through a tap the sidecar steers (masquerade, bridge, managedtap). */
int ifaces_kind_has_tap(enum ifaces_kind k);
/* Why a kind cannot be served, or NULL when it can. */
const char *ifaces_kind_unserved(enum ifaces_kind k);

#endif
