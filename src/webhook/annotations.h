/* annotations: the names of the annotations the webhook reads and writes
 * (the interface with users and with KubeVirt; docs/annotations.md), and
 * the checks a pod and a VM or VMI share. */
#ifndef IMDS_WH_ANNOTATIONS_H
#define IMDS_WH_ANNOTATIONS_H

#include <stdint.h>

struct review;

#define ANN "imds.kubevirt.io/"
#define ANN_ENABLED ANN "enabled"
#define ANN_INJECTED ANN "injected"
#define ANN_USER_DATA ANN "user-data"
#define ANN_USER_DATA_SECRET ANN "user-data-secret"
#define ANN_USER_DATA_CONFIGMAP ANN "user-data-configmap"
#define ANN_VENDOR_DATA ANN "vendor-data"
#define ANN_NETWORK_CONFIG ANN "network-config"
#define ANN_INSTANCE_ID ANN "instance-id"
#define ANN_TOKEN_AUDIENCE ANN "token-audience"
#define ANN_TOKEN_EXPIRATION ANN "token-expiration"
#define ANN_BRIDGE_NAME ANN "bridge-name"
#define ANN_SERIAL_FORM ANN "serial-form"
#define ANN_DMI_CHASSIS ANN "dmi-chassis"
#define ANN_IP_FAMILY ANN "ip-family"
#define ANN_PASSWORD_KEY ANN "password-key"
#define ANN_SSH_KEYS_SECRET ANN "ssh-keys-secret"
#define ANN_META_DATA ANN "meta-data"
#define ANN_HOP_LIMIT ANN "hop-limit"
#define ANN_SESSION ANN "session"
#define ANN_INTERFACES ANN "interfaces"
/* Lifecycle events (docs/sidecar.md): the VMI's spec.evictionStrategy,
 * written by the webhook at the VMI's CREATE; an operator's announcement. */
#define ANN_EVICTION_STRATEGY ANN "eviction-strategy"
#define ANN_MAINTENANCE ANN "maintenance"
/* KubeVirt's, read by the sidecar through the downward API:
 * pkg/virt-controller/watch/descheduler/descheduler.go:41,
 * staging/src/kubevirt.io/api/core/v1/types.go:1175 and :1419. */
#define ANN_EVICTION_IN_PROGRESS "descheduler.alpha.kubernetes.io/eviction-in-progress"
#define LABEL_MIGRATION_JOB "kubevirt.io/migrationJobUID"
#define ANN_MIGRATION_TARGET_READY "kubevirt.io/migration-target-ready-timestamp"
#define ANN_CLOUD_INIT ANN "cloud-init"
#define ANN_CLOUD_INIT_DISK ANN "cloud-init-disk"
#define ANN_NETWORK_STATUS "k8s.v1.cni.cncf.io/network-status"
#define ANN_DOMAIN "kubevirt.io/domain"
#define LABEL_LAUNCHER "kubevirt.io"
#define LABEL_VM_NAME "vm.kubevirt.io/name"
/* The node's placement, copied onto the pod at binding (pod.c). */
#define LABEL_TOPO_ZONE "topology.kubernetes.io/zone"
#define LABEL_TOPO_REGION "topology.kubernetes.io/region"

/* The sidecar's bound on custom meta-data keys (src/sidecar/metajson.h). */
#define META_DATA_MAX_KEYS 256

/* The annotations a VM or VMI is checked for before its pod exists (the
 * pod's admission checks them again), so a mistake shows at `kubectl
 * apply`: meta-data (a JSON object of strings, no reserved key, each key
 * once), the SSH keys Secret's name, the password key (a key of that
 * Secret), the serial's form and the chassis switch.  anns may be JV_NONE. */
void ann_check_data(struct review *a, uint32_t anns, const char *where);

/* A VirtualMachine's own imds.kubevirt.io/... annotations that its template
 * lacks: KubeVirt copies only the template's to the VMI (and the VMI's to
 * the pod), so they reach no sidecar.  One admission warning naming them
 * and where to move them.  anns, tanns may be JV_NONE. */
void ann_warn_vm_own(struct review *a, uint32_t anns, uint32_t tanns);

/* 1 when s is an evictionStrategy KubeVirt accepts (LiveMigrate,
 * LiveMigrateIfPossible, External, None). */
int ann_eviction_known(const char *s);

/* A VMI's CREATE: its spec.evictionStrategy recorded as
 * imds.kubevirt.io/eviction-strategy, which KubeVirt copies to the launcher
 * pod, where the sidecar reads it (the pod itself does not carry the
 * strategy).  Without one, the cluster's default (a->cfg->default_eviction,
 * from --default-eviction-strategy) when the operator gave it; without
 * either, or with a value KubeVirt refuses, a user's annotation is removed.
 * anns may be JV_NONE only when the VMI has no annotations (not opted in). */
void ann_record_eviction(struct review *a, uint32_t spec, uint32_t anns);

#endif
