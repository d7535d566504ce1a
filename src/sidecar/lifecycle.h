/* lifecycle: what is about to happen to the VM, and what just did.
 *
 * Derived from the launcher pod's own metadata, which the webhook hands the
 * sidecar through a downward-API volume (IMDS_LIFECYCLE_DIR), one file per
 * item (kubelet writes an empty file for an absent annotation or label):
 *   eviction-in-progress    the annotation descheduler.alpha.kubernetes.io/
 *                           eviction-in-progress that virt-controller puts on
 *                           the source pod while the VMI is marked for
 *                           evacuation (docs/sidecar.md, "Lifecycle events")
 *   eviction-strategy       imds.kubevirt.io/eviction-strategy, the VMI's
 *                           spec.evictionStrategy recorded by the webhook at
 *                           the VMI's admission (the pod does not carry it)
 *   migration-job-uid       the label kubevirt.io/migrationJobUID of a
 *                           migration target pod
 *   migration-target-ready  the annotation kubevirt.io/migration-target-
 *                           ready-timestamp, once the domain runs there
 *   maintenance             imds.kubevirt.io/maintenance: "migrate",
 *                           "terminate" or "" (an operator's announcement)
 * An eviction wins over the maintenance annotation, which wins over an
 * arrival.  Every layout (ours, GCE, Azure, EC2) renders the one state. */
#ifndef IMDS_LIFECYCLE_H
#define IMDS_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "dfile.h"

enum lc_state {
	LC_NONE = 0,
	LC_MIGRATE,    /* a live migration is coming */
	LC_TERMINATE,  /* the VM will be stopped where it is */
	LC_ARRIVED,    /* this pod is a migration's target, and the domain runs here */
};

enum lc_reason {
	LC_R_NONE = 0,
	LC_R_EVICTION,    /* the source pod's eviction-in-progress annotation */
	LC_R_MAINTENANCE, /* imds.kubevirt.io/maintenance */
	LC_R_MIGRATION,   /* the target pod's migration label and ready annotation */
};

#define LC_FILES 5
#define LC_UID_MAX 64

/* The inputs, as the files hold them (trimmed; "" when empty or absent). */
struct lc_inputs {
	const char *eviction, *strategy, *job_uid, *target_ready, *maintenance;
};

/* The derived state.  uid: the migration's UID ("" unless arrived). */
struct lc_view {
	enum lc_state state;
	enum lc_reason reason;
	char uid[LC_UID_MAX + 1];
	int64_t since;       /* unix seconds: when kubelet wrote the input that set it */
	uint64_t gen;        /* moves at every change of state, uid or since */
	char event_id[37];   /* a UUID stable for this (state, since, uid) */
	int acked;           /* the guest acknowledged the event (Azure's StartRequests) */
};

struct lifecycle {
	const char *dir; /* NULL: no source, always none */
	struct dfile f[LC_FILES];
	struct blob *seen[LC_FILES];
	struct lc_view v;
	int bad_maint_logged;
	char out[2048]; /* the answer being built (events.c): it outlives the handler */
};

/* Pure: the state the inputs say.  *bad set when maintenance holds a value
 * other than "", "none", "migrate" or "terminate" (then ignored). */
enum lc_state lc_derive(const struct lc_inputs *in, enum lc_reason *reason, int *bad);

/* Opens the files of dir (NULL: none; a missing file counts as empty). */
int lc_open(struct lifecycle *lc, const char *dir, char *err, size_t errlen);
void lc_close(struct lifecycle *lc);
/* The current state, the files re-checked first (one stat each). */
const struct lc_view *lc_get(struct lifecycle *lc);
/* Marks the current event acknowledged when id is its event_id: 0, or -1. */
int lc_ack(struct lifecycle *lc, const char *id, size_t n);

const char *lc_state_name(enum lc_state s);   /* "none", "migrate", ... */
const char *lc_reason_name(enum lc_reason r); /* "", "eviction", ... */

/* Dates: RFC 3339 (2026-11-27T15:04:05Z), RFC 1123 (Fri, 27 Nov 2026
 * 15:04:05 GMT, Azure's NotBefore) and EC2's events (27 Nov 2026 15:04:05
 * GMT, aws-node-termination-handler's "2 Jan 2006 15:04:05 GMT"). */
void lc_time_rfc3339(int64_t t, char out[64]);
void lc_time_rfc1123(int64_t t, char out[64]);
void lc_time_ec2(int64_t t, char out[64]);

#endif
