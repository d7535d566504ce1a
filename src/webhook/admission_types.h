/* admission_types: what one admission is given and what it answers, the
 * types the envelope (admission.c) and every module that writes a review's
 * answer (review.h and the modules under it) share, below them all. */
#ifndef IMDS_ADMISSION_TYPES_H
#define IMDS_ADMISSION_TYPES_H

#include <stddef.h>

struct ifc_plugin;

/* The cluster-wide vendor-data goes into an annotation beside the pod's own
 * (256 KiB for all of them). */
#define ADMISSION_VENDOR_DATA_MAX (192u << 10)

#define ADMISSION_DEFAULT_CPU "10m"
#define ADMISSION_DEFAULT_MEMORY "16Mi"
#define ADMISSION_DEFAULT_MEMORY_LIMIT "32Mi"

struct admission_config {
	const char *imds_image;   /* required */
	int native_sidecar;       /* 1: initContainers entry with restartPolicy: Always (k8s 1.29+); 0: plain container */
	/* --network-mode agent: the network half is the node agent's (imds-node),
	 * the sidecar runs unprivileged (docs/webhook.md, --network-mode);
	 * 0: pod, the sidecar plumbs its pod as root with NET_ADMIN/NET_RAW */
	int agent_network;
	const char *vendor_data;  /* cluster-wide vendor-data (from --vendor-data-file), NULL if none */
	const char *cpu, *memory; /* sidecar requests (and limits when Guaranteed); NULL: the defaults above */
	const char *memory_limit; /* limit for non-Guaranteed pods; NULL: the default above */
	/* --binding-plugin NAME=KIND, in flag order (a later one wins), before
	 * the built-ins of ifaces.h; may be NULL with nplugins 0 */
	const struct ifc_plugin *plugins;
	size_t nplugins;
	/* --default-eviction-strategy: the cluster's (the KubeVirt CR's
	 * spec.configuration.evictionStrategy), recorded for a VMI that sets
	 * none; NULL: none recorded (the webhook cannot read the CR) */
	const char *default_eviction;
};

enum admission_kind { ADM_KIND_POD, ADM_KIND_VM, ADM_KIND_VMI, ADM_KIND_OTHER };
enum admission_outcome { ADM_PATCHED, ADM_SKIPPED, ADM_DENIED, ADM_INVALID };

struct admission_result {
	int http_status;               /* 200; 400/413 for malformed reviews; 500 out of memory */
	enum admission_kind kind;
	enum admission_outcome outcome;
	char *body;                    /* malloc'd: an AdmissionReview, or {"error":..,"message":..} */
	size_t body_len;
	char reason[256];              /* for the log; never user-data */
	size_t warnings;               /* response.warnings in body */
};

#endif
