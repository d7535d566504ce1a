/* cloudinit: the VM's own cloud-init, as KubeVirt's disk gives it, carried
 * to the sidecar (docs/webhook.md, "The VM's own cloud-init").
 *
 * On a VMI (CREATE): the first cloudInitNoCloud / cloudInitConfigDrive
 * volume (KubeVirt uses only the first: pkg/cloud-init/cloud-init.go:
 * 133-158), the accessCredentials SSH keys of that datasource and
 * KubeVirt's identity (firmware UUID, hostname, instance type) are checked
 * as KubeVirt's admitter checks them and written, as a JSON object of
 * strings, into the annotation imds.kubevirt.io/cloud-init, which KubeVirt
 * copies to the launcher pod.  On a VM (CREATE, UPDATE): the same checks
 * and warnings on its template, no annotation.  On the pod: the annotation
 * read back (the Secrets to mount, the sidecar's environment). */
#ifndef IMDS_WH_CLOUDINIT_H
#define IMDS_WH_CLOUDINIT_H

#include <stddef.h>
#include <stdint.h>

#include "str.h"

struct review;

/* KubeVirt's cap on inline user data and network data (admitter:59-64). */
#define CI_INLINE_MAX 2048
/* accessCredentials Secrets carried for one datasource. */
#define CI_MAX_SSH 16
/* The annotation's keys (docs/annotations.md). */
#define CI_KEY_SOURCE "source"
#define CI_KEY_VOLUME "volume"
#define CI_KEY_UUID "uuid"
#define CI_KEY_HOSTNAME "hostname"
#define CI_KEY_INSTANCE_TYPE "instanceType"
#define CI_KEY_USER_DATA "userData"                 /* base64 of the bytes */
#define CI_KEY_USER_DATA_SECRET "userDataSecret"
#define CI_KEY_NETWORK_DATA "networkData"           /* base64 of the bytes */
#define CI_KEY_NETWORK_DATA_SECRET "networkDataSecret"
#define CI_KEY_SSH_SECRETS "sshSecrets"             /* Secret names, comma-separated */

/* spec: the VMI's spec (a VM's template spec); where: its path for
 * messages ("request.object.spec" or "...spec.template.spec"); meta, anns:
 * the VMI's (the template's) metadata and annotations; ns: the namespace.
 * vmi: write the annotation and, with the opt-in, remove the disk. */
void ci_admit(struct review *a, uint32_t meta, uint32_t anns, uint32_t spec, const char *where,
	      int vmi);

/* What the pod's sidecar needs from the annotation. */
struct ci_pod {
	int present;        /* the annotation is on the pod */
	int source;         /* it names a cloud-init volume */
	struct str user_secret, net_secret;
	struct str ssh[CI_MAX_SSH];
	size_t nssh;
	char *store;        /* owns the strings above */
};

/* Reads and checks the annotation's text (written by ci_admit, copied by
 * KubeVirt).  A text that is not what ci_admit writes is denied naming the
 * annotation.  ci_pod_free() after. */
void ci_pod_read(struct review *a, struct str text, struct ci_pod *out);
void ci_pod_free(struct ci_pod *p);


#endif
