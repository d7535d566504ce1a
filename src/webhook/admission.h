/* admission: AdmissionReview (admission.k8s.io/v1) in, AdmissionReview out.
 *
 * Bytes in, a response body out; no I/O, no logging.  Its only state is
 * what it reuses between reviews (the JSON view's buffers, the last patch).
 * The review is read with jview (a validating pass, no DOM); the patch is
 * built and written with json-c.
 * Pods (CREATE, label kubevirt.io=virt-launcher, opted in, not injected)
 * get the imds-server sidecar, its volumes and the injected annotation;
 * VirtualMachines (CREATE, UPDATE) and VirtualMachineInstances (CREATE:
 * KubeVirt refuses VMI spec changes on UPDATE) get the NoCloud DMI serial.
 * Everything else is allowed unchanged.  docs/webhook.md. */
#ifndef IMDS_ADMISSION_H
#define IMDS_ADMISSION_H

#include <stddef.h>

/* A real API server caps request bodies at 3 MiB. */
#define ADMISSION_MAX_BODY (3u << 20)
/* Nesting of the review; a virt-launcher pod with managedFields needs ~15. */
#define ADMISSION_MAX_DEPTH 64
/* JSON values and member names in one review (jview nodes, 24 bytes
 * each: 2.4 MB at most); a virt-launcher pod has ~800-1500. */
#define ADMISSION_MAX_VALUES 100000

#define ADMISSION_SERIAL "ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net"

struct admission_config {
	const char *imds_image;   /* required */
	int native_sidecar;       /* 1: initContainers entry with restartPolicy: Always (k8s 1.29+); 0: plain container */
	const char *vendor_data;  /* cluster-wide vendor-data (from --vendor-data-file), NULL if none */
	const char *cpu, *memory; /* sidecar requests (and limits when Guaranteed); NULL: "10m", "16Mi" */
	const char *memory_limit; /* limit for non-Guaranteed pods; NULL: "32Mi" */
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
};

/* Checks a configuration once at start-up (image set and sane, quantities
 * parse, memory <= memory_limit, vendor-data valid UTF-8 of at most
 * 256 KiB, the annotation limit).  0, or -EINVAL with a message. */
int admission_config_check(const struct admission_config *cfg, char *err, size_t errlen);

/* admission_handle() frees a review's patch after its answer is built: at
 * the next call or at admission_release(), which the webhook calls from
 * the loop's before-sleep hook (after the answer was written).
 * admission_cleanup() frees that and the reused JSON view (at exit). */
void admission_release(void);
void admission_cleanup(void);

/* body need not be NUL-terminated.  Always fills res; free it with
 * admission_result_free().  Not thread-safe (one JSON view is reused). */
void admission_handle(const struct admission_config *cfg, const char *body, size_t len,
		      struct admission_result *res);
/* Frees the body; NULL and a freed result are no-ops. */
void admission_result_free(struct admission_result *res);

const char *admission_kind_name(enum admission_kind k);       /* "pod", "vm", "vmi", "other" */
const char *admission_outcome_name(enum admission_outcome o); /* "patched", "skipped", "denied", "invalid" */

#endif
