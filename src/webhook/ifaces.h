/* ifaces: the webhook's side of the annotation imds.kubevirt.io/interfaces,
 * which tells the sidecar how KubeVirt wires each of the VM's NICs.  The
 * format, the kinds and their meaning, the writer and the reader are the
 * shared binding table's (src/core/binding.h); here is what only the
 * webhook does: the tap name of a secondary network (sha256, OpenSSL),
 * the --binding-plugin flags, and the check of the text on a pod.
 *
 * Pure: bytes in, bytes out, no allocation.  The review side (reading a
 * VM's or VMI's spec) is vmnet.c.  docs/annotations.md. */
#ifndef IMDS_WH_IFACES_H
#define IMDS_WH_IFACES_H

#include <stddef.h>

#include "binding.h"

/* --binding-plugin flags the webhook keeps */
#define IFC_MAX_PLUGINS 32

/* The tap of a secondary Multus network named net: "tap" and the first 11
 * hex digits of sha256(net) (IFACES_TAP_HASHED_LEN bytes), NUL-terminated
 * in out. */
void ifc_tap_secondary(const char *net, size_t n, char out[IFACES_TAP_MAX + 1]);

/* A network binding plugin and the kind of NIC it makes:
 * --binding-plugin NAME=KIND. */
struct ifc_plugin {
	char name[IFACES_NAME_MAX + 1];
	enum ifaces_kind kind;
};
/* Parses NAME=KIND (NAME as ifaces_name_ok; KIND a row of the binding
 * table that a plugin may name: managedtap, passt, tap, masquerade or
 * bridge): 0, or -EINVAL with a message in err. */
int ifc_plugin_parse(const char *arg, struct ifc_plugin *out, char *err, size_t errlen);
/* The kind of plugin name: the last of list[0..n) with that name, else the
 * built-ins (passt=passt, macvtap=tap, l2bridge=managedtap), else
 * IFACES_UNKNOWN.  *known is 0 for IFACES_UNKNOWN from no entry at all. */
enum ifaces_kind ifc_plugin_kind(const struct ifc_plugin *list, size_t n, const char *name, size_t len,
				 int *known);

/* Checks the text of the annotation on a pod: exactly what this webhook
 * writes on the VMI (ifaces_parse_strict).  The empty text is a VM with
 * no interface.  0, or -EINVAL with what is wrong in err. */
int ifc_check(const char *s, size_t n, char *err, size_t errlen);

#endif
