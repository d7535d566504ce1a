/* ifaces: the text of the annotation imds.kubevirt.io/interfaces, which
 * tells the sidecar how KubeVirt wires each of the VM's NICs.
 *
 * One entry per interface of spec.domain.devices.interfaces, in spec order,
 * separated by ',': NAME:KIND or NAME:KIND:TAP.
 *   NAME  the interface's name when it is [A-Za-z0-9._-]{1,63}, else #<index>
 *   KIND  masquerade, bridge, managedtap, passt, sriov, tap, unknown
 *   TAP   the tap KubeVirt creates for the NIC, for masquerade, bridge and
 *         managedtap only: tap0 on the primary network (pod, or a Multus
 *         network with default: true), "tap" + the first 11 hex digits of
 *         sha256(network name) on a secondary Multus network (KubeVirt:
 *         namescheme.GenerateHashedInterfaceName gives pod<11 hex>,
 *         link.GenerateTapDeviceName "tap" + podIfaceName[3:])
 * e.g. default:masquerade:tap0,br1:bridge:tap26578a32802,fast:sriov
 * At most IFC_MAX_ENTRIES entries and IFC_MAX_LEN bytes.
 *
 * Pure: bytes in, bytes out, no allocation.  The review side (reading a
 * VM's or VMI's spec) is vmnet.c.  docs/annotations.md. */
#ifndef IMDS_WH_IFACES_H
#define IMDS_WH_IFACES_H

#include <stddef.h>

#include "sbuf.h"

#define IFC_MAX_ENTRIES 64
#define IFC_MAX_LEN 4096
#define IFC_NAME_MAX 63
/* "tap" + 11 hex digits: 14 bytes, within the kernel's 15 */
#define IFC_TAP_MAX 14
/* --binding-plugin flags the webhook keeps */
#define IFC_MAX_PLUGINS 32

enum ifc_kind {
	IFC_MASQUERADE,
	IFC_BRIDGE,
	IFC_MANAGEDTAP,
	IFC_PASST,
	IFC_SRIOV,
	IFC_TAP,
	IFC_UNKNOWN,
};

/* "masquerade", ... "unknown" */
const char *ifc_kind_name(enum ifc_kind k);
/* 0 and *k, or -EINVAL for anything but the seven names. */
int ifc_kind_parse(const char *s, size_t n, enum ifc_kind *k);
/* KubeVirt creates a tap for it (and the entry carries TAP). */
int ifc_kind_has_tap(enum ifc_kind k);
/* The guest's packets to 169.254.169.254 cross the pod's network namespace
 * (masquerade, bridge, managedtap, passt): the sidecar can serve it. */
int ifc_kind_in_pod(enum ifc_kind k);

/* [A-Za-z0-9._-]{1,IFC_NAME_MAX} */
int ifc_name_ok(const char *s, size_t n);

/* The tap of a secondary Multus network named net: "tap" and the first 11
 * hex digits of sha256(net), NUL-terminated in out[IFC_TAP_MAX + 1]. */
void ifc_tap_secondary(const char *net, size_t n, char out[IFC_TAP_MAX + 1]);

/* Appends entry index to b (with the ',' before it when b is not empty):
 * the name or #index, the kind, and tap when the kind has one (tap may be
 * NULL otherwise).  Overflow is b's to report. */
void ifc_append(struct sbuf *b, size_t index, const char *name, size_t n, enum ifc_kind k, const char *tap);

/* A network binding plugin and the kind of NIC it makes:
 * --binding-plugin NAME=KIND. */
struct ifc_plugin {
	char name[IFC_NAME_MAX + 1];
	enum ifc_kind kind;
};
/* Parses NAME=KIND (NAME as ifc_name_ok; KIND one of managedtap, passt,
 * tap, masquerade, bridge): 0, or -EINVAL with a message in err. */
int ifc_plugin_parse(const char *arg, struct ifc_plugin *out, char *err, size_t errlen);
/* The kind of plugin name: the last of list[0..n) with that name, else the
 * built-ins (passt=passt, macvtap=tap, l2bridge=managedtap), else
 * IFC_UNKNOWN.  *known is 0 for IFC_UNKNOWN from no entry at all. */
enum ifc_kind ifc_plugin_kind(const struct ifc_plugin *list, size_t n, const char *name, size_t len,
			      int *known);

/* Checks the text of the annotation: well-formed entries as above (NAME
 * as ifc_name_ok or #<index> equal to the entry's index, a known KIND, TAP
 * exactly when the kind has one and then tap0 or tap + 11 lowercase hex),
 * at most IFC_MAX_ENTRIES and IFC_MAX_LEN bytes.  The empty text is a VM
 * with no interface.  0, or -EINVAL with what is wrong in err. */
int ifc_check(const char *s, size_t n, char *err, size_t errlen);

#endif
