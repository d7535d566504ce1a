#include "vmnet.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "annotations.h"
#include "ifaces.h"
#include "jbuild.h"
#include "jview.h"
#include "review.h"
#include "sbuf.h"

/* Why an interface cannot be served, for its warning. */
static const char *why_not(enum ifaces_kind k, const char *unknown_why)
{
	switch (k) {
	case IFACES_SRIOV:
		return "the VF bypasses the pod network; the metadata service cannot be reached from it";
	case IFACES_TAP:
		return "its frames go straight to the node's network, never through the pod; the metadata "
		       "service cannot be reached from it";
	default:
		return unknown_why;
	}
}

/* The members that choose a binding (KubeVirt's InterfaceBindingMethod and
 * binding); slirp, macvtap and passt were removed in KubeVirt 1.3 and are
 * refused by its admitter (pkg/network/admitter/discontinued.go). */
static const struct {
	const char *member;
	enum ifaces_kind kind;
} methods[] = {
	{"masquerade", IFACES_MASQUERADE}, {"bridge", IFACES_BRIDGE}, {"sriov", IFACES_SRIOV},
	{"passtBinding", IFACES_PASST},     {"binding", IFACES_UNKNOWN}, {"slirp", IFACES_UNKNOWN},
	{"macvtap", IFACES_UNKNOWN},        {"passt", IFACES_UNKNOWN},
};

struct nic {
	enum ifaces_kind kind;
	const char *why; /* for IFACES_UNKNOWN */
	char tap[IFACES_TAP_MAX + 1];
	struct str name;
};

/* The network of the interface's name: primary (pod, or Multus with
 * default: true) or a secondary Multus network (KubeVirt's
 * vmispec.IsSecondaryMultusNetwork).  -1 when there is none. */
static int network_of(struct review *a, uint32_t nets, struct str name, int *secondary, const char *where)
{
	for (uint32_t n = jv_first(a->v, nets); n != JV_NONE && !a->err; n = jv_next(a->v, nets, n)) {
		if (jv_type(a->v, n) != JV_OBJECT) {
			rv_fail(a, RV_BAD, "%s.networks: every element must be an object", where);
			return -1;
		}
		struct str nn = rv_str(a, n, "name", "networks[]");
		if (!nn.p || nn.n != name.n || memcmp(nn.p, name.p, name.n) != 0)
			continue;
		uint32_t multus = rv_member(a, n, "multus", JV_OBJECT, "networks[]");
		uint32_t dflt = rv_member(a, multus, "default", JV_BOOL, "networks[].multus");
		*secondary = multus != JV_NONE && !(dflt != JV_NONE && (a->v->nodes[dflt].flags & JV_F_TRUE));
		return a->err ? -1 : 0;
	}
	return -1;
}

static void classify(struct review *a, uint32_t e, uint32_t nets, struct nic *nic, const char *where)
{
	char q[64];
	nic->kind = IFACES_UNKNOWN;
	nic->why = "it names no binding KubeVirt still has";
	nic->tap[0] = '\0';
	size_t found = 0, which = 0;
	for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
		uint32_t v = jv_get(a->v, e, methods[m].member);
		if (v != JV_NONE && jv_type(a->v, v) != JV_NULL) {
			found++;
			which = m;
		}
	}
	if (found > 1) {
		nic->why = "it names more than one binding";
		return;
	}
	if (found == 0)
		return;
	nic->kind = methods[which].kind;
	if (strcmp(methods[which].member, "binding") == 0) {
		uint32_t b = rv_member(a, e, "binding", JV_OBJECT, "interfaces[]");
		struct str plugin = rv_str(a, b, "name", "interfaces[].binding");
		if (a->err)
			return;
		int known = 0;
		if (plugin.p)
			nic->kind = ifc_plugin_kind(a->cfg->plugins, a->cfg->nplugins, plugin.p, plugin.n, &known);
		if (!known) {
			char qn[64];
			const char *shown = rv_clean(nic->name, 0, qn, sizeof(qn));
			if (plugin.p && ifaces_name_ok(plugin.p, plugin.n))
				rv_warn(a,
					"imds.kubevirt.io: interface \"%s\": binding plugin \"%.*s\" is unknown to the webhook; "
					"name its kind with --binding-plugin %.*s=KIND (managedtap, passt, tap, masquerade or bridge)",
					shown, (int)plugin.n, plugin.p, (int)plugin.n, plugin.p);
			else
				rv_warn(a, "imds.kubevirt.io: interface \"%s\": binding plugin %s is unknown to the webhook",
					shown, rv_shown(plugin, q, sizeof(q)));
			nic->why = "its binding plugin is unknown to the webhook (--binding-plugin)";
		}
	} else if (nic->kind == IFACES_UNKNOWN) {
		nic->why = "KubeVirt removed that binding in v1.3";
	}
	if (!ifaces_kind_has_tap(nic->kind))
		return;
	int secondary = 0;
	if (network_of(a, nets, nic->name, &secondary, where) < 0) {
		if (!a->err) {
			nic->kind = IFACES_UNKNOWN;
			nic->why = "no network of that name";
		}
		return;
	}
	if (secondary)
		ifc_tap_secondary(nic->name.p, nic->name.n, nic->tap);
	else
		memcpy(nic->tap, "tap0", 5);
}

/* The annotation's text: names as they are, or every name as #<index>
 * when the text would pass IFACES_TEXT_MAX (64 entries of #<i> fit). */
static int format(const struct nic *nics, size_t n, char *buf, size_t cap, int by_index)
{
	struct sbuf b = SBUF_INIT(buf, cap);
	buf[0] = '\0'; /* no interface: the empty text (an sbuf writes its NUL on the first append) */
	for (size_t i = 0; i < n; i++)
		ifaces_append(&b, i, by_index ? "" : nics[i].name.p, by_index ? 0 : nics[i].name.n, nics[i].kind,
			   nics[i].tap);
	return b.overflow ? -1 : 0;
}

void vmnet_admit(struct review *a, uint32_t spec, const char *where, uint32_t anns, int vmi)
{
	char w1[128], w2[160];
	snprintf(w1, sizeof(w1), "%s.domain", where);
	snprintf(w2, sizeof(w2), "%s.domain.devices", where);
	uint32_t dom = rv_member(a, spec, "domain", JV_OBJECT, where);
	uint32_t dev = rv_member(a, dom, "devices", JV_OBJECT, w1);
	uint32_t ifs = rv_member(a, dev, "interfaces", JV_ARRAY, w2);
	uint32_t nets = rv_member(a, spec, "networks", JV_ARRAY, where);
	uint32_t auto_pod = rv_member(a, dev, "autoattachPodInterface", JV_BOOL, w2);
	struct str old = rv_str(a, anns, ANN_INTERFACES, "request.object.metadata.annotations");
	if (a->err)
		return;
	size_t nif = ifs == JV_NONE ? 0 : a->v->nodes[ifs].n;
	size_t nnet = nets == JV_NONE ? 0 : a->v->nodes[nets].n;
	int autoattach = auto_pod == JV_NONE || (a->v->nodes[auto_pod].flags & JV_F_TRUE);
	if (nif == 0 && nnet == 0 && autoattach)
		return; /* KubeVirt's default interface comes later */

	struct nic nics[IFACES_MAX];
	size_t served = 0, i = 0;
	for (uint32_t e = jv_first(a->v, ifs); e != JV_NONE; e = jv_next(a->v, ifs, e), i++) {
		if (jv_type(a->v, e) != JV_OBJECT) {
			rv_fail(a, RV_BAD, "%s.domain.devices.interfaces[%zu]: must be an object", where, i);
			return;
		}
		struct nic one = {.name = rv_str(a, e, "name", "interfaces[]")};
		if (!one.name.p)
			one.name = (struct str){"", 0};
		classify(a, e, nets, &one, where);
		if (a->err)
			return;
		served += ifaces_kind_in_pod(one.kind) ? 1u : 0u;
		if (i < IFACES_MAX) /* past it only counted: no annotation then */
			nics[i] = one;
	}
	nif = i; /* what was iterated (the same as the node's count) */
	if (served == 0) {
		if (nif == 0)
			rv_warn(a, "imds.kubevirt.io: the VM has no network interface; the metadata service cannot "
				   "be reached");
		for (size_t k = 0; k < nif && k < IFACES_MAX; k++) {
			char qn[64];
			rv_warn(a, "imds.kubevirt.io: interface \"%s\" (%s): %s",
				nics[k].name.n ? rv_clean(nics[k].name, 0, qn, sizeof(qn)) : "?",
				ifaces_kind_name(nics[k].kind), why_not(nics[k].kind, nics[k].why));
		}
	}
	if (!vmi)
		return;

	static const char path[] = "/metadata/annotations/imds.kubevirt.io~1interfaces";
	if (nif > IFACES_MAX) {
		rv_warn(a, "imds.kubevirt.io: %zu interfaces, past the %d the sidecar is told about: %s is not set",
			nif, IFACES_MAX, ANN_INTERFACES);
		if (old.p)
			rv_remove(a, path);
		return;
	}
	char text[IFACES_TEXT_MAX + 1];
	if (format(nics, nif, text, sizeof(text), 0) < 0)
		(void)format(nics, nif, text, sizeof(text), 1); /* fits: 64 x "#63:managedtap:tap<11>," */
	if (old.p && str_is(old, text))
		return;
	/* An opted-in VMI has metadata.annotations; "add" replaces a member. */
	rv_add(a, path, jb_str(text));
}
