/* review: one AdmissionReview being answered — its parsed JSON, typed
 * reads of it, the sticky error, the patch under construction and the
 * reason for the log line.  pod.c and serial.c work through it.
 *
 * The first failure wins: rv_fail() after a failure keeps the first
 * message, so a caller checks a->err once after a run of reads. */
#ifndef IMDS_WH_REVIEW_H
#define IMDS_WH_REVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "admission_types.h"
#include "jview.h"
#include "str.h"

struct json_object;
struct patch;

enum rv_err {
	RV_OK = 0,
	RV_BAD,   /* a malformed review: HTTP 400 */
	RV_DENY,  /* a valid review refused: allowed=false with the message */
	RV_NOMEM, /* HTTP 500 */
};

/* Admission warnings (response.warnings): kubectl prints each as
 * "Warning: ..."; kept short, and few (the API server caps what it relays). */
#define RV_MAX_WARNINGS 16
#define RV_WARNING_MAX 256

struct review {
	const struct admission_config *cfg; /* every default filled in */
	struct admission_result *res;
	int err;       /* the first RV_* failure; later ones keep its message */
	char msg[512]; /* what the failure says: HTTP 400 body or status.message */
	struct patch *patch;
	struct jv *v; /* the review */
	const char *what; /* "pod default/virt-launcher-vm1-", for the reason */
	char whatbuf[160];
	char warn[RV_MAX_WARNINGS][RV_WARNING_MAX];
	size_t nwarn;         /* kept in warn[] */
	size_t warn_dropped;  /* past RV_MAX_WARNINGS; the last one kept says how many */
};

__attribute__((format(printf, 3, 4))) void rv_fail(struct review *a, int err, const char *fmt, ...);
/* An admission warning, cut to RV_WARNING_MAX - 1 bytes; printable ASCII
 * only (names in it go through rv_clean).  Allowed and denied answers
 * both carry them. */
__attribute__((format(printf, 2, 3))) void rv_warn(struct review *a, const char *fmt, ...);
/* The log line's reason, "<what>: <text>", cut to fit. */
__attribute__((format(printf, 2, 3))) void rv_reason(struct review *a, const char *fmt, ...);
__attribute__((format(printf, 2, 3))) void rv_set_reason(struct admission_result *res,
							  const char *fmt, ...);

/* obj.key when it has type t; JV_NONE when obj is JV_NONE or the member is
 * absent or null (Go's encoder writes null for nil maps and slices).  Any
 * other type makes the review malformed (RV_BAD naming where.key). */
uint32_t rv_member(struct review *a, uint32_t obj, const char *key, enum jv_type t,
		   const char *where);
/* The decoded bytes of string node i ({NULL, 0} and RV_NOMEM on failure). */
struct str rv_jstring(struct review *a, uint32_t i);
/* A string member: absent is {NULL, 0}; another type is RV_BAD. */
struct str rv_str(struct review *a, uint32_t obj, const char *key, const char *where);

/* A value for a message: printable ASCII only, cut at 40 bytes, in quotes
 * when quote (rv_shown: always).  Only for names and settings, never for
 * user-data, vendor-data or network-config. */
const char *rv_clean(struct str s, int quote, char *buf, size_t cap);
const char *rv_shown(struct str s, char *buf, size_t cap);

/* Patch operations; both take the reference to v.  0, or -1 with RV_NOMEM. */
int rv_add(struct review *a, const char *path, struct json_object *v);
int rv_replace(struct review *a, const char *path, struct json_object *v);
int rv_remove(struct review *a, const char *path);

#endif
