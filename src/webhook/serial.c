#include "serial.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "annotations.h"
#include "cloudinit.h"
#include "discovery.h"
#include "jbuild.h"
#include "patch.h"
#include "review.h"
#include "sbuf.h"
#include "vmnet.h"

static int opted_in(struct review *a, uint32_t meta, const char *where)
{
	uint32_t anns = rv_member(a, meta, "annotations", JV_OBJECT, where);
	char w[96];
	snprintf(w, sizeof(w), "%s.annotations", where);
	return str_is(rv_str(a, anns, ANN_ENABLED, w), "true");
}

void serial_admit(struct review *a, uint32_t req, struct str op, int vm)
{
	if (!str_is(op, "CREATE") && !str_is(op, "UPDATE")) {
		rv_reason(a, "%.*s is never patched", (int)op.n, op.p);
		return;
	}
	if (!vm && str_is(op, "UPDATE")) {
		/* A VMI's spec is fixed once created: virt-api refuses spec
		 * changes on UPDATE from anyone but KubeVirt ("update of VMI
		 * object is restricted"), and a running domain is never
		 * re-rendered.  A patch here could only break a user's label
		 * edit; a VM's template (UPDATE included) is where it counts. */
		rv_reason(a, "UPDATE of a VMI is never patched");
		return;
	}
	struct str sub = rv_str(a, req, "subResource", "request");
	if (sub.n) {
		char q[64];
		rv_reason(a, "subresource %s is never patched", rv_shown(sub, q, sizeof(q)));
		return;
	}
	/* An UPDATE carries object and oldObject: the new one is object. */
	uint32_t obj = rv_member(a, req, "object", JV_OBJECT, "request");
	if (obj == JV_NONE && !a->err)
		rv_fail(a, RV_BAD, "request.object: missing");
	uint32_t meta = rv_member(a, obj, "metadata", JV_OBJECT, "request.object");
	uint32_t anns = rv_member(a, meta, "annotations", JV_OBJECT, "request.object.metadata");
	int in = opted_in(a, meta, "request.object.metadata");
	uint32_t spec = rv_member(a, obj, "spec", JV_OBJECT, "request.object");
	uint32_t tmpl = JV_NONE, tmeta = JV_NONE, tanns = JV_NONE;
	if (vm) {
		/* The VM's template is where the VMI's annotations come from;
		 * the VM's own metadata is accepted too (for the serial). */
		tmpl = rv_member(a, spec, "template", JV_OBJECT, "request.object.spec");
		tmeta = rv_member(a, tmpl, "metadata", JV_OBJECT, "request.object.spec.template");
		tanns = rv_member(a, tmeta, "annotations", JV_OBJECT, "request.object.spec.template.metadata");
		in |= opted_in(a, tmeta, "request.object.spec.template.metadata");
		if (!a->err)
			ann_warn_vm_own(a, anns, tanns);
	}
	if (a->err)
		return;
	if (!in) {
		rv_reason(a, "not opted in");
		return;
	}
	/* The VMI's annotations come from the VM's template. */
	if (vm)
		ann_check_data(a, tanns, "request.object.spec.template.metadata.annotations");
	else
		ann_check_data(a, anns, "request.object.metadata.annotations");
	if (a->err)
		return;
	/* What the sidecar will serve through: warnings, and on a VMI the
	 * imds.kubevirt.io/interfaces annotation. */
	if (vm)
		vmnet_admit(a, rv_member(a, tmpl, "spec", JV_OBJECT, "request.object.spec.template"),
			    "request.object.spec.template.spec", JV_NONE, 0);
	else
		vmnet_admit(a, spec, "request.object.spec", anns, 1);
	if (!vm && !a->err)
		ann_record_eviction(a, spec, anns);
	if (a->err)
		return;
	/* The VM's own cloud-init and KubeVirt's identity (cloudinit.c). */
	if (vm)
		ci_admit(a, tmeta, tanns, rv_member(a, tmpl, "spec", JV_OBJECT, "request.object.spec.template"),
			 "request.object.spec.template.spec", 0);
	else
		ci_admit(a, meta, anns, spec, "request.object.spec", 1);
	if (a->err)
		return;

	static const char *const vm_path[] = {"spec", "template", "spec", "domain", "firmware"};
	static const char *const vmi_path[] = {"spec", "domain", "firmware"};
	const char *const *path = vm ? vm_path : vmi_path;
	size_t depth = vm ? 5 : 3;
	const char *want = disc_serial(a, obj, vm);
	disc_chassis(a, obj, vm);
	char ptr[128], where[128] = "request.object";
	struct sbuf pb = SBUF_INIT(ptr, sizeof(ptr));
	uint32_t cur = obj;
	for (size_t i = 0; i < depth; i++) {
		uint32_t next = rv_member(a, cur, path[i], JV_OBJECT, where);
		if (a->err)
			return;
		patch_pointer_token(&pb, path[i], strlen(path[i]));
		if (next == JV_NONE) {
			/* Create the missing parents in one add: {"domain":{"firmware":{"serial":..}}} */
			struct json_object *v = jb_obj("serial", jb_str(want), JB_END);
			for (size_t k = depth - 1; k > i; k--)
				v = jb_obj(path[k], v, JB_END);
			if (rv_add(a, ptr, v) == 0)
				rv_reason(a, "serial set (created %s)", path[i]);
			return;
		}
		size_t wl = strlen(where);
		snprintf(where + wl, sizeof(where) - wl, ".%s", path[i]);
		cur = next;
	}
	struct str s = rv_str(a, cur, "serial", where);
	if (a->err)
		return;
	sbuf_puts(&pb, "/serial");
	if (!s.p) {
		if (rv_add(a, ptr, jb_str(want)) == 0)
			rv_reason(a, "serial set");
		return;
	}
	if (s.n == 0) {
		if (rv_replace(a, ptr, jb_str(want)) == 0)
			rv_reason(a, "serial set (was empty)");
		return;
	}
	if (memmem(s.p, s.n, "ds=nocloud", 10)) {
		rv_reason(a, "serial already has ds=nocloud");
		return;
	}
	/* cloud-init takes the last ds= token: the user's serial (or the UUID
	 * virt-api's own mutator fills in) survives in front of ours. */
	size_t n = s.n + 1 + strlen(want);
	char *joined = malloc(n + 1);
	if (!joined) {
		rv_fail(a, RV_NOMEM, "out of memory");
		return;
	}
	memcpy(joined, s.p, s.n);
	joined[s.n] = ' ';
	memcpy(joined + s.n + 1, want, strlen(want) + 1);
	if (rv_replace(a, ptr, json_object_new_string_len(joined, (int)n)) == 0)
		rv_reason(a, "ds=nocloud appended to the serial");
	free(joined);
}
