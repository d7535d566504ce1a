#include "discovery.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "annotations.h"
#include "jbuild.h"
#include "patch.h"
#include "review.h"
#include "sbuf.h"

struct str disc_ann(struct review *a, uint32_t obj, int vm, const char *key)
{
	struct str v = {NULL, 0};
	if (vm) {
		uint32_t spec = rv_member(a, obj, "spec", JV_OBJECT, "request.object");
		uint32_t tmpl = rv_member(a, spec, "template", JV_OBJECT, "request.object.spec");
		uint32_t tmeta = rv_member(a, tmpl, "metadata", JV_OBJECT, "request.object.spec.template");
		uint32_t tanns = rv_member(a, tmeta, "annotations", JV_OBJECT,
					   "request.object.spec.template.metadata");
		v = rv_str(a, tanns, key, "request.object.spec.template.metadata.annotations");
	}
	if (!v.p) {
		uint32_t meta = rv_member(a, obj, "metadata", JV_OBJECT, "request.object");
		uint32_t anns = rv_member(a, meta, "annotations", JV_OBJECT, "request.object.metadata");
		v = rv_str(a, anns, key, "request.object.metadata.annotations");
	}
	return v;
}

const char *disc_serial(struct review *a, uint32_t obj, int vm)
{
	/* ann_check_data refused any other value before. */
	int net = str_is(disc_ann(a, obj, vm, ANN_SERIAL_FORM), "nocloud-net");
	if (str_is(disc_ann(a, obj, vm, ANN_IP_FAMILY), "IPv6"))
		return net ? DISC_SERIAL6_NET : DISC_SERIAL6;
	return net ? DISC_SERIAL_NET : DISC_SERIAL;
}

void disc_chassis(struct review *a, uint32_t obj, int vm)
{
	if (!str_is(disc_ann(a, obj, vm, ANN_DMI_CHASSIS), "true") || a->err)
		return;
	static const char *const vm_path[] = {"spec", "template", "spec", "domain", "chassis"};
	static const char *const vmi_path[] = {"spec", "domain", "chassis"};
	const char *const *path = vm ? vm_path : vmi_path;
	size_t depth = vm ? 5 : 3;
	char ptr[128], where[128] = "request.object";
	struct sbuf pb = SBUF_INIT(ptr, sizeof(ptr));
	uint32_t cur = obj;
	for (size_t i = 0; i < depth; i++) {
		uint32_t next = rv_member(a, cur, path[i], JV_OBJECT, where);
		if (a->err)
			return;
		patch_pointer_token(&pb, path[i], strlen(path[i]));
		if (next == JV_NONE) {
			/* The missing parents in one add: {"chassis":{"manufacturer":..}} */
			struct json_object *v =
				jb_obj("manufacturer", jb_str(DISC_CHASSIS_VENDOR), JB_END);
			for (size_t k = depth - 1; k > i; k--)
				v = jb_obj(path[k], v, JB_END);
			rv_add(a, ptr, v);
			return;
		}
		size_t wl = strlen(where);
		snprintf(where + wl, sizeof(where) - wl, ".%s", path[i]);
		cur = next;
	}
	struct str m = rv_str(a, cur, "manufacturer", where);
	if (a->err || m.n) /* the VM's own chassis manufacturer stays */
		return;
	sbuf_puts(&pb, "/manufacturer");
	if (m.p)
		rv_replace(a, ptr, jb_str(DISC_CHASSIS_VENDOR));
	else
		rv_add(a, ptr, jb_str(DISC_CHASSIS_VENDOR));
}
