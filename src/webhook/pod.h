/* pod: a virt-launcher pod (CREATE, label kubevirt.io=virt-launcher, opted
 * in, not injected yet) gets the imds-server sidecar (a native sidecar or a
 * plain container), its volumes (the projected token, the downward-API
 * podinfo, user-data and SSH keys when named, the state emptyDir), the
 * annotations it needs and imds.kubevirt.io/injected.  Every annotation it
 * reads is checked first; a mistake denies the pod with a message naming
 * the annotation.  docs/webhook.md. */
#ifndef IMDS_WH_POD_H
#define IMDS_WH_POD_H

#include <stdint.h>

#include "str.h"

struct review;

/* req: the review's request node; op: its operation. */
void pod_admit(struct review *a, uint32_t req, struct str op);

#endif
