/* binding: how KubeVirt binds each of a VM's NICs, as one table both
 * programs share, and the wire format that carries it from the webhook to
 * the sidecar: the VMI annotation imds.kubevirt.io/interfaces, which the
 * sidecar reads as IMDS_INTERFACES.
 *
 *   default:masquerade:tap0,br1:bridge:tap26578a32802,fast:sriov
 *
 * One entry per interface of spec.domain.devices.interfaces, in spec
 * order, separated by ',', fields by ':': NAME:KIND[:TAP].
 *   NAME  the interface's name when it is [A-Za-z0-9._-]{1,63}, else
 *         #<index> (its index in the spec, from 0)
 *   KIND  a row of binding_table: masquerade, bridge, managedtap, passt,
 *         sriov, tap, unknown
 *   TAP   the tap KubeVirt creates for the NIC, exactly for the kinds whose
 *         row says BINDING_TAP: tap0 on the primary network, "tap" + the
 *         first 11 hex digits of sha256(network name) on a secondary Multus
 *         network (KubeVirt's pkg/network/namescheme/networknamescheme.go
 *         GenerateHashedInterfaceName gives pod<11 hex>,
 *         pkg/network/link/names.go GenerateTapDeviceName "tap" +
 *         podIfaceName[3:]), or tap<N> in a pod of KubeVirt's older
 *         ordinal scheme (net<N>, N from 1 over the secondary Multus
 *         networks in spec order: networknamescheme.go:111-123), which
 *         VMIs from before the hashed names and their migration targets
 *         keep (pkg/network/pod/annotations/generator.go:93-113).
 * Errors name the entry by that same index ("entry 0" is interfaces[0]).
 *
 * Adding a binding is a value of enum ifaces_kind and its row in
 * binding_table (binding.c): the webhook's writer and checker, the
 * sidecar's reader and its plan all go by the row.  docs/design.md,
 * "The network half".  Pure: bytes in, a table out, no allocation. */
#ifndef IMDS_BINDING_H
#define IMDS_BINDING_H

#include <stddef.h>

#include "sbuf.h"

#define IFACES_MAX 64       /* entries */
#define IFACES_NAME_MAX 63  /* a NAME's bytes */
#define IFACES_TEXT_MAX 4096
/* The longest interface name the kernel takes: IFNAMSIZ (16, with its NUL)
 * - 1, include/uapi/linux/if.h; dev_valid_name() refuses longer.  The
 * reader's bound on TAP. */
#define IFACES_TAP_MAX 15
/* The longest tap KubeVirt makes: "tap" + 11 hex digits (maxIfaceNameLen
 * = 11 in networknamescheme.go: "max kernel interface name len (15) -
 * length("-nic")"), 14 bytes: what the webhook writes and checks. */
#define IFACES_TAP_HASHED_LEN 14

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

/* How the guest's packets for 169.254.169.254 reach the service. */
enum binding_path {
	BINDING_TAP,      /* through the NIC's tap in the pod: steered to veth-imds */
	BINDING_LOOPBACK, /* passt connects from the pod: over the pod's loopback */
	BINDING_NONE,     /* they never cross the pod: not served */
};

struct binding {
	const char *kind;     /* KIND in the wire format */
	enum binding_path path;
	int plugin;           /* a --binding-plugin NAME=KIND may name it */
	const char *unserved; /* BINDING_NONE: why, for the sidecar's log */
};

extern const struct binding binding_table[IFACES_NKINDS];

const char *ifaces_kind_name(enum ifaces_kind k); /* "?" past the table */
/* 0 and *k, or -EINVAL for anything but a row's KIND. */
int ifaces_kind_parse(const char *s, size_t n, enum ifaces_kind *k);
/* KubeVirt creates a tap for it, the entry carries TAP, the sidecar steers
 * it (BINDING_TAP). */
int ifaces_kind_has_tap(enum ifaces_kind k);
/* The guest's packets to the service cross the pod (BINDING_TAP or
 * BINDING_LOOPBACK): the sidecar can serve it. */
int ifaces_kind_in_pod(enum ifaces_kind k);
/* Why a kind cannot be served, or NULL when it can. */
const char *ifaces_kind_unserved(enum ifaces_kind k);

/* [A-Za-z0-9._-]{1,IFACES_NAME_MAX} */
int ifaces_name_ok(const char *s, size_t n);

struct ifaces_entry {
	char name[IFACES_NAME_MAX + 1];
	enum ifaces_kind kind;
	char tap[IFACES_TAP_MAX + 1]; /* "" when the kind has none */
};

struct ifaces {
	size_t n;
	struct ifaces_entry e[IFACES_MAX];
};

/* The reader (the sidecar's): parses s[0..len) into out.  NAME as
 * ifaces_name_ok or #<1..3 digits>; TAP "tap" and 1..12 more name bytes
 * (any name the kernel takes, IFACES_TAP_MAX), no tap named twice.  0, or
 * -EINVAL with a message naming the entry and what is wrong in err.  An
 * empty text is an empty table. */
int ifaces_parse(const char *s, size_t len, struct ifaces *out, char *err, size_t errlen);
/* The checker (the webhook's, of the text it wrote on the VMI): as
 * ifaces_parse, and the text is exactly what ifaces_append writes: an
 * index name is the entry's own (#0 for entry 0, no leading zeros), a TAP
 * is tap0, "tap" + 11 lowercase hex digits (IFACES_TAP_HASHED_LEN) or
 * tap<N> (N decimal from 1, no leading zero). */
int ifaces_parse_strict(const char *s, size_t len, struct ifaces *out, char *err, size_t errlen);

/* The writer: appends entry index to b (with the ',' before it when b is
 * not empty): the name when ifaces_name_ok, else #index, the kind, and tap
 * when the kind has one (tap may be NULL otherwise).  Overflow is b's to
 * report. */
void ifaces_append(struct sbuf *b, size_t index, const char *name, size_t n, enum ifaces_kind k,
		   const char *tap);

#endif
