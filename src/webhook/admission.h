/* admission: AdmissionReview (admission.k8s.io/v1) in, AdmissionReview out.
 *
 * Bytes in, a response body out; no I/O, no logging.  Its only state is
 * what it reuses between reviews (the JSON view's buffers, the last patch),
 * held in a struct admission the caller owns.  This module is the envelope:
 * the review's kind and operation, the answer and the configuration check.
 * The review is read with jview (a validating pass, no DOM) through
 * review.h; pods go to pod.c (the sidecar), VirtualMachines (CREATE,
 * UPDATE) and VirtualMachineInstances (CREATE: KubeVirt refuses VMI spec
 * changes on UPDATE) to serial.c (the NoCloud DMI serial); the patch is
 * built with json-c.  Everything else is allowed unchanged.
 * docs/webhook.md. */
#ifndef IMDS_ADMISSION_H
#define IMDS_ADMISSION_H

#include <stddef.h>

#include "jview.h"

struct patch;
struct ifc_plugin;

/* A real API server caps request bodies at 3 MiB. */
#define ADMISSION_MAX_BODY (3u << 20)
/* Nesting of the review; a virt-launcher pod with managedFields needs ~15. */
#define ADMISSION_MAX_DEPTH 64
/* JSON values and member names in one review (jview nodes, 24 bytes
 * each: 2.4 MB at most); a virt-launcher pod has ~800-1500. */
#define ADMISSION_MAX_VALUES 100000

#define ADMISSION_SERIAL "ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net"
/* imds.kubevirt.io/serial-form: nocloud-net (Talos); discovery.h. */
#define ADMISSION_SERIAL_NET "ds=nocloud-net;s=http://169.254.169.254/v1/"
/* imds.kubevirt.io/ip-family: IPv6 (an IPv6-only VM); discovery.h. */
#define ADMISSION_SERIAL6 "ds=nocloud;s=http://[fd00:ec2::254]/v1/;dsmode=net"
#define ADMISSION_SERIAL6_NET "ds=nocloud-net;s=http://[fd00:ec2::254]/v1/"
/* imds.kubevirt.io/dmi-chassis: the chassis manufacturer; discovery.h. */
#define ADMISSION_CHASSIS_VENDOR "kubevirt-imds"

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

/* What one caller reuses from review to review; fields are private.
 * Start from ADMISSION_INIT; admission_cleanup() frees it. */
struct admission {
	struct jv view;           /* the parsed review, its buffers reused */
	struct patch *last_patch; /* the last review's, until its answer has left */
};
#define ADMISSION_INIT {.view = {.max_depth = ADMISSION_MAX_DEPTH, .max_nodes = ADMISSION_MAX_VALUES}}

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

/* Checks a configuration once at start-up (image set and sane, quantities
 * parse, memory <= memory_limit, vendor-data valid UTF-8 of at most
 * 256 KiB, the annotation limit).  0, or -EINVAL with a message. */
int admission_config_check(const struct admission_config *cfg, char *err, size_t errlen);

/* admission_handle() frees a review's patch after its answer is built: at
 * the next call or at admission_release(), which the webhook calls from
 * the loop's before-sleep hook (after the answer was written).
 * admission_cleanup() frees that and the reused JSON view (at exit). */
void admission_release(struct admission *adm);
void admission_cleanup(struct admission *adm);

/* cfg passed admission_config_check(); body need not be NUL-terminated.
 * Always fills res; free it with admission_result_free().  One call at a
 * time per struct admission. */
void admission_handle(struct admission *adm, const struct admission_config *cfg, const char *body,
		      size_t len, struct admission_result *res);
/* Frees the body; NULL and a freed result are no-ops. */
void admission_result_free(struct admission_result *res);

const char *admission_kind_name(enum admission_kind k);       /* "pod", "vm", "vmi", "other" */
const char *admission_outcome_name(enum admission_outcome o); /* "patched", "skipped", "denied", "invalid" */

#endif
