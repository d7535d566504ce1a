#include "admission.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "annotations.h"
#include "k8s_names.h"
#include "patch.h"
#include "pod.h"
#include "quantity.h"
#include "review.h"
#include "sbuf.h"
#include "serial.h"

#define UID_MAX 256

/* ---- the review ------------------------------------------------------- */

/* A string member for the log line, or "" (never a failure). */
static struct str loose_str(struct review *a, uint32_t obj, const char *key)
{
	uint32_t v = jv_get(a->v, obj, key);
	struct str s = {"", 0};
	if (v != JV_NONE && jv_type(a->v, v) == JV_STRING && jv_str(a->v, v, &s.p, &s.n) < 0)
		s = (struct str){"", 0};
	return s;
}

static void describe(struct review *a, uint32_t req, uint32_t obj)
{
	struct str ns = loose_str(a, req, "namespace"), name = loose_str(a, req, "name");
	if (name.n == 0)
		name = loose_str(a, jv_get(a->v, obj, "metadata"), "generateName");
	char cn[64], cs[64];
	snprintf(a->whatbuf, sizeof(a->whatbuf), "%s %s/%s", admission_kind_name(a->res->kind),
		 rv_clean(ns, 0, cs, sizeof(cs)), rv_clean(name, 0, cn, sizeof(cn)));
	a->what = a->whatbuf;
}

static void dispatch(struct review *a, struct str *uid)
{
	const uint32_t root = 0;
	if (jv_type(a->v, root) != JV_OBJECT) {
		rv_fail(a, RV_BAD, "the body is not a JSON object");
		return;
	}
	struct str api = rv_str(a, root, "apiVersion", "review");
	struct str kind = rv_str(a, root, "kind", "review");
	if (a->err)
		return;
	if (!str_is(api, "admission.k8s.io/v1") || !str_is(kind, "AdmissionReview")) {
		rv_fail(a, RV_BAD, "want apiVersion admission.k8s.io/v1, kind AdmissionReview");
		return;
	}
	uint32_t req = rv_member(a, root, "request", JV_OBJECT, "review");
	if (a->err)
		return;
	if (req == JV_NONE) {
		rv_fail(a, RV_BAD, "request: missing");
		return;
	}
	*uid = rv_str(a, req, "uid", "request");
	if (a->err)
		return;
	if (!uid->p || uid->n == 0 || uid->n > UID_MAX) {
		rv_fail(a, RV_BAD, "request.uid: want a string of 1..%d bytes", UID_MAX);
		uid->p = NULL;
		return;
	}
	uint32_t gvk = rv_member(a, req, "kind", JV_OBJECT, "request");
	struct str g = rv_str(a, gvk, "group", "request.kind");
	struct str k = rv_str(a, gvk, "kind", "request.kind");
	struct str op = rv_str(a, req, "operation", "request");
	if (a->err)
		return;
	if (gvk == JV_NONE || !k.p) {
		rv_fail(a, RV_BAD, "request.kind: missing");
		return;
	}
	/* Kubernetes always writes group; "" is the core group. */
	int core = !g.p || g.n == 0, kv = str_is(g, "kubevirt.io");
	if (core && str_is(k, "Pod"))
		a->res->kind = ADM_KIND_POD;
	else if (kv && str_is(k, "VirtualMachine"))
		a->res->kind = ADM_KIND_VM;
	else if (kv && str_is(k, "VirtualMachineInstance"))
		a->res->kind = ADM_KIND_VMI;
	else {
		char q1[64], q2[64];
		rv_fail(a, RV_BAD, "request.kind: %s in group %s is not handled here (Pod, VirtualMachine, VirtualMachineInstance)",
		     rv_shown(k, q1, sizeof(q1)), rv_shown(g, q2, sizeof(q2)));
		return;
	}
	if (!str_is(op, "CREATE") && !str_is(op, "UPDATE") && !str_is(op, "DELETE") &&
	    !str_is(op, "CONNECT")) {
		rv_fail(a, RV_BAD, "request.operation: want CREATE, UPDATE, DELETE or CONNECT");
		return;
	}
	describe(a, req, jv_get(a->v, req, "object"));
	if (a->res->kind == ADM_KIND_POD)
		pod_admit(a, req, op);
	else
		serial_admit(a, req, op, a->res->kind == ADM_KIND_VM);
}

/* ---- responses -------------------------------------------------------- */

static void set_body(struct admission_result *res, char *buf, size_t len)
{
	res->body = buf;
	res->body_len = len;
}

static void respond_error(struct admission_result *res, int status, const char *code, const char *msg)
{
	size_t cap = 64 + strlen(code) + 6 * strlen(msg);
	char *buf = malloc(cap);
	res->http_status = status;
	res->outcome = ADM_INVALID;
	if (!buf)
		return;
	struct sbuf b = SBUF_INIT(buf, cap);
	sbuf_puts(&b, "{\"error\":\"");
	sbuf_puts(&b, code);
	sbuf_puts(&b, "\",\"message\":\"");
	sbuf_json_escape(&b, msg, strlen(msg));
	sbuf_puts(&b, "\"}");
	set_body(res, buf, b.len);
}

/* The AdmissionReview answer: allowed with an optional patch, or denied
 * with a 400 status naming the annotation. */
static int respond_review(struct review *a, struct str uid, const char *patch, size_t plen)
{
	int deny = a->err == RV_DENY;
	size_t cap = 256 + 6 * uid.n + (patch ? patch_base64_len(plen) : 0) + (deny ? 6 * strlen(a->msg) : 0) +
		     a->nwarn * (6 * RV_WARNING_MAX + 4);
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	struct sbuf b = SBUF_INIT(buf, cap);
	sbuf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		      "\"response\":{\"uid\":\"");
	sbuf_json_escape(&b, uid.p, uid.n);
	sbuf_putc(&b, '"');
	if (a->nwarn) {
		/* admission.k8s.io/v1 AdmissionResponse.warnings (Kubernetes 1.19+) */
		sbuf_puts(&b, ",\"warnings\":[");
		for (size_t i = 0; i < a->nwarn; i++) {
			sbuf_puts(&b, i ? ",\"" : "\"");
			sbuf_json_escape(&b, a->warn[i], strlen(a->warn[i]));
			sbuf_putc(&b, '"');
		}
		sbuf_putc(&b, ']');
	}
	if (deny) {
		sbuf_puts(&b, ",\"allowed\":false,\"status\":{\"status\":\"Failure\",\"code\":400,"
			      "\"reason\":\"BadRequest\",\"message\":\"");
		sbuf_json_escape(&b, a->msg, strlen(a->msg));
		sbuf_puts(&b, "\"}}}");
	} else if (patch) {
		sbuf_puts(&b, ",\"allowed\":true,\"patchType\":\"JSONPatch\",\"patch\":\"");
		size_t need = patch_base64_len(plen);
		if (!b.overflow && b.len + need + 1 < b.cap) {
			patch_base64(patch, plen, b.p + b.len);
			b.len += need;
		} else {
			b.overflow = 1;
		}
		sbuf_puts(&b, "\"}}");
	} else {
		sbuf_puts(&b, ",\"allowed\":true}}");
	}
	if (b.overflow) { /* cap is computed above; cannot happen */
		free(buf);
		return -ENOMEM;
	}
	a->res->http_status = 200;
	a->res->warnings = a->nwarn;
	set_body(a->res, buf, b.len);
	return 0;
}

/* The defaults, in one place: cfg with every optional setting filled. */
static struct admission_config with_defaults(const struct admission_config *cfg)
{
	struct admission_config c = *cfg;
	if (!c.cpu)
		c.cpu = ADMISSION_DEFAULT_CPU;
	if (!c.memory)
		c.memory = ADMISSION_DEFAULT_MEMORY;
	if (!c.memory_limit)
		c.memory_limit = ADMISSION_DEFAULT_MEMORY_LIMIT;
	return c;
}

void admission_release(struct admission *adm)
{
	patch_free(adm->last_patch);
	adm->last_patch = NULL;
}

void admission_cleanup(struct admission *adm)
{
	admission_release(adm);
	jv_free(&adm->view);
}

/* The answer for a review that was read (or failed to parse): the
 * AdmissionReview for allowed and denied, a JSON error for the rest. */
static void answer(struct review *a, struct str uid)
{
	struct admission_result *res = a->res;
	if (a->err == RV_OK || a->err == RV_DENY) {
		size_t plen = 0;
		const char *pj = NULL;
		if (a->err == RV_OK && patch_count(a->patch)) {
			pj = patch_json(a->patch, &plen);
			if (!pj)
				a->err = RV_NOMEM;
		}
		if (a->err == RV_OK || a->err == RV_DENY) {
			if (respond_review(a, uid, pj, plen) < 0) {
				a->err = RV_NOMEM;
			} else {
				res->outcome = a->err == RV_DENY ? ADM_DENIED : pj ? ADM_PATCHED : ADM_SKIPPED;
				if (a->err == RV_DENY)
					rv_set_reason(res, "%s: denied: %s", a->what, a->msg);
				else if (!res->reason[0])
					rv_set_reason(res, "%s: allowed", a->what);
			}
		}
	}
	if (a->err == RV_BAD) {
		respond_error(res, 400, "bad_review", a->msg);
		rv_set_reason(res, "%s: malformed: %s", a->what, a->msg);
	} else if (a->err == RV_NOMEM) {
		free(res->body);
		res->body = NULL;
		res->body_len = 0;
		respond_error(res, 500, "internal", "out of memory");
		rv_set_reason(res, "%s: out of memory", a->what);
	}
}

void admission_handle(struct admission *adm, const struct admission_config *cfg, const char *body,
		      size_t len, struct admission_result *res)
{
	struct admission_config c = with_defaults(cfg);
	struct review a = {.cfg = &c, .res = res, .what = "review", .v = &adm->view};
	struct str uid = {0};

	admission_release(adm); /* the previous review's, if nobody did yet */
	memset(res, 0, sizeof(*res));
	res->kind = ADM_KIND_OTHER;
	if (len > ADMISSION_MAX_BODY) {
		respond_error(res, 413, "too_large", "the AdmissionReview is larger than 3 MiB");
		rv_set_reason(res, "review: body of %zu bytes, past 3 MiB", len);
		return;
	}
	if (len == 0) {
		respond_error(res, 400, "bad_review", "empty body (want an AdmissionReview)");
		rv_set_reason(res, "review: empty body");
		return;
	}
	char jerr[160];
	int r = jv_parse(&adm->view, body, len, jerr, sizeof(jerr));
	if (r == -E2BIG) {
		respond_error(res, 413, "too_large", "the AdmissionReview has too many JSON values");
		rv_set_reason(res, "review: more than %d JSON values and member names", ADMISSION_MAX_VALUES);
	} else {
		if (r < 0)
			rv_fail(&a, r == -ENOMEM ? RV_NOMEM : RV_BAD, "not JSON: %s", jerr);
		else if (!(a.patch = patch_new()))
			rv_fail(&a, RV_NOMEM, "out of memory");
		else
			dispatch(&a, &uid);
		answer(&a, uid);
	}
	/* Freed after the answer has left (admission_release() from the loop's
	 * before-sleep hook, or the next review): frees that no API server
	 * needs to wait for. */
	adm->last_patch = a.patch;
	/* The view's buffers are as large as the largest review so far: do
	 * not keep a few MiB for the sake of the next one. */
	if (len > (256u << 10) || adm->view.cap > 16384)
		jv_free(&adm->view);
}

void admission_result_free(struct admission_result *res)
{
	if (!res)
		return;
	free(res->body);
	res->body = NULL;
	res->body_len = 0;
}

const char *admission_kind_name(enum admission_kind k)
{
	switch (k) {
	case ADM_KIND_POD:
		return "pod";
	case ADM_KIND_VM:
		return "vm";
	case ADM_KIND_VMI:
		return "vmi";
	default:
		return "other";
	}
}

const char *admission_outcome_name(enum admission_outcome o)
{
	switch (o) {
	case ADM_PATCHED:
		return "patched";
	case ADM_SKIPPED:
		return "skipped";
	case ADM_DENIED:
		return "denied";
	default:
		return "invalid";
	}
}

static int quantity_ok(const char *name, const char *v, struct qty *q, char *err, size_t errlen)
{
	if (!v || qty_parse(v, strlen(v), q) < 0 || q->m == 0) {
		snprintf(err, errlen, "%s: '%.40s' is not a positive Kubernetes quantity", name,
			 v ? v : "");
		return -EINVAL;
	}
	return 0;
}

int admission_config_check(const struct admission_config *cfg, char *err, size_t errlen)
{
	const char *img = cfg->imds_image;
	if (!img || !*img || strlen(img) > 1024) {
		snprintf(err, errlen, "imds image: required (--imds-image or IMDS_IMAGE)");
		return -EINVAL;
	}
	for (const char *c = img; *c; c++) {
		if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
			snprintf(err, errlen, "imds image: '%.100s' contains whitespace or control bytes", img);
			return -EINVAL;
		}
	}
	struct admission_config c = with_defaults(cfg);
	struct qty cpu, mem, lim;
	if (quantity_ok("sidecar cpu", c.cpu, &cpu, err, errlen) < 0 ||
	    quantity_ok("sidecar memory", c.memory, &mem, err, errlen) < 0 ||
	    quantity_ok("sidecar memory limit", c.memory_limit, &lim, err, errlen) < 0)
		return -EINVAL;
	__int128 m, l;
	if (qty_nano(&mem, &m) < 0 || qty_nano(&lim, &l) < 0 || m > l) {
		snprintf(err, errlen, "sidecar memory: the request must not exceed the memory limit");
		return -EINVAL;
	}
	if (cfg->default_eviction && !ann_eviction_known(cfg->default_eviction)) {
		snprintf(err, errlen, "default eviction strategy: '%.100s' is not LiveMigrate, "
			 "LiveMigrateIfPossible, External or None", cfg->default_eviction);
		return -EINVAL;
	}
	if (cfg->vendor_data) {
		size_t n = strlen(cfg->vendor_data);
		/* Room for it next to the pod's own annotations (256 KiB in all). */
		if (n > ADMISSION_VENDOR_DATA_MAX) {
			snprintf(err, errlen, "vendor-data: %zu bytes, past the %u this webhook allows (pod annotations total 256 KiB)",
				 n, ADMISSION_VENDOR_DATA_MAX);
			return -EINVAL;
		}
		if (!k8s_utf8_ok(cfg->vendor_data, n)) {
			snprintf(err, errlen, "vendor-data: not valid UTF-8 (annotations are JSON strings)");
			return -EINVAL;
		}
	}
	return 0;
}
