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

#include "admission_types.h"
#include "jview.h"

struct patch;

/* A real API server caps request bodies at 3 MiB. */
#define ADMISSION_MAX_BODY (3u << 20)
/* Nesting of the review; a virt-launcher pod with managedFields needs ~15. */
#define ADMISSION_MAX_DEPTH 64
/* JSON values and member names in one review (jview nodes, 24 bytes
 * each: 2.4 MB at most); a virt-launcher pod has ~800-1500. */
#define ADMISSION_MAX_VALUES 100000

/* What one caller reuses from review to review; fields are private.
 * Start from ADMISSION_INIT; admission_cleanup() frees it. */
struct admission {
	struct jv view;           /* the parsed review, its buffers reused */
	struct patch *last_patch; /* the last review's, until its answer has left */
};
#define ADMISSION_INIT {.view = {.max_depth = ADMISSION_MAX_DEPTH, .max_nodes = ADMISSION_MAX_VALUES}}

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
