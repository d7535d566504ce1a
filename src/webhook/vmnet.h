/* vmnet: a VM's or VMI's network interfaces, as the sidecar needs to know
 * them (ifaces.h has the format).
 *
 * For a VMI (CREATE, opted in) it writes the annotation
 * imds.kubevirt.io/interfaces, replacing a value a user put there; KubeVirt
 * copies every VMI annotation to the launcher pod (but for kubectl.kubernetes.io/...
 * and the two observed-api-version keys: filterVMIAnnotationsForPod in
 * pkg/virt-controller/services/template.go), where pod.c hands it to the
 * sidecar as IMDS_INTERFACES.  For a VM's template and a VMI alike it
 * warns, never denies: when none of the interfaces can be served (SR-IOV,
 * tap plugins such as macvtap, unknown bindings, or no interface), and for
 * each binding plugin the webhook was not taught with --binding-plugin.
 *
 * A spec with neither interfaces nor networks (and autoattachPodInterface
 * not false) is left alone: KubeVirt adds its default pod interface (virt-
 * controller for a VM's VMI, virt-api's mutator for a standalone VMI,
 * pkg/network/vmispec/defaults.go), and the webhook sees the VMI again
 * after that mutator changed it (reinvocationPolicy: IfNeeded). */
#ifndef IMDS_WH_VMNET_H
#define IMDS_WH_VMNET_H

#include <stdint.h>

struct review;

/* spec: the VMI spec node (a VM's spec.template.spec); where: its path for
 * messages; anns: the VMI's annotations (JV_NONE for a VM); vmi: write the
 * annotation. */
void vmnet_admit(struct review *a, uint32_t spec, const char *where, uint32_t anns, int vmi);

#endif
