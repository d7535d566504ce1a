/* vmnet: a VMI's interfaces as imds.kubevirt.io/interfaces and the
 * warnings for a VM's template (src/webhook/vmnet.h) over fixtures
 * (wh_fixture.h): bindings, names and their index, a user's value
 * overwritten, the caps, what cannot be served warned about.  Moved from
 * test_wh_admission.c. */
#include "wh_fixture.h"
#include "vmnet.h"
#include "wh_review.h"

/* ---- the patch module ---------------------------------------------------- */

static struct json_object *jb_like_iface(const char *name)
{
	struct json_object *o = json_object_new_object();
	set(o, "name", json_object_new_string(name));
	set(o, "masquerade", json_object_new_object());
	return o;
}

/* n entries "#<i>:masquerade:tap0" */
static void got_index_names(const char *got, size_t n)
{
	char want[IFACES_TEXT_MAX + 1];
	struct sbuf b = SBUF_INIT(want, sizeof(want));
	for (size_t i = 0; i < n; i++)
		ifaces_append(&b, i, "", 0, IFACES_MASQUERADE, "tap0");
	assert_non_null(got);
	assert_string_equal(got, want);
}

/* ---- imds.kubevirt.io/interfaces and the warnings (issue 24) --------- */

static size_t nwarn(struct answer *a)
{
	struct json_object *w = at(a->resp, "response", "warnings", NULL);
	size_t n = w ? json_object_array_length(w) : 0;
	assert_int_equal(n, a->res.warnings);
	return n;
}

static int warned(struct answer *a, const char *sub)
{
	struct json_object *w = at(a->resp, "response", "warnings", NULL);
	for (size_t i = 0; w && i < json_object_array_length(w); i++)
		if (strstr(json_object_get_string(json_object_array_get_idx(w, i)), sub))
			return 1;
	return 0;
}

/* vmi-standalone with these interfaces and networks (JSON, NULL: none). */
static struct json_object *vmi_with(const char *ifaces, const char *nets)
{
	struct json_object *review = fixture("vmi-standalone");
	struct json_object *spec = at(review, "request", "object", "spec", NULL);
	struct json_object *dev = at(spec, "domain", "devices", NULL);
	json_object_object_del(dev, "interfaces");
	json_object_object_del(spec, "networks");
	if (ifaces)
		set(dev, "interfaces", json_tokener_parse(ifaces));
	if (nets)
		set(spec, "networks", json_tokener_parse(nets));
	return review;
}

#define POD_NET "{\"name\":\"default\",\"pod\":{}}"

#define MASQ "{\"name\":\"default\",\"masquerade\":{}}"

static void test_vmi_interfaces(void **state)
{
	(void)state;
	static const struct {
		const char *what, *ifaces, *nets, *want; /* want NULL: no annotation written */
		size_t warnings;
		const char *says;
	} cases[] = {
		/* the rendered VMIs of ../shared/kubevirt-launcher-pods (KubeVirt v1.8.4) */
		{"01 masquerade", "[" MASQ "]", "[" POD_NET "]", "default:masquerade:tap0", 0, NULL},
		{"02 bridge", "[{\"name\":\"default\",\"bridge\":{}}]", "[" POD_NET "]", "default:bridge:tap0", 0, NULL},
		{"03 passt plugin", "[{\"name\":\"default\",\"binding\":{\"name\":\"passt\"}}]", "[" POD_NET "]",
		 "default:passt", 0, NULL},
		{"04 passt core", "[{\"name\":\"default\",\"passtBinding\":{}}]", "[" POD_NET "]", "default:passt", 0, NULL},
		{"06 Multus bridge", "[" MASQ ",{\"name\":\"br1\",\"bridge\":{}}]",
		 "[" POD_NET ",{\"name\":\"br1\",\"multus\":{\"networkName\":\"demo/br1\"}}]",
		 "default:masquerade:tap0,br1:bridge:tap26578a32802", 0, NULL},
		{"07 SR-IOV beside masquerade", "[" MASQ ",{\"name\":\"sriov\",\"sriov\":{}}]",
		 "[" POD_NET ",{\"name\":\"sriov\",\"multus\":{\"networkName\":\"demo/sriov-net\"}}]",
		 "default:masquerade:tap0,sriov:sriov", 0, NULL},
		/* none served: one warning per interface */
		{"SR-IOV only", "[{\"name\":\"fast\",\"sriov\":{}}]", "[{\"name\":\"fast\",\"multus\":{\"networkName\":\"s\"}}]",
		 "fast:sriov", 1, "interface \"fast\" (sriov): the VF bypasses the pod network"},
		{"macvtap plugin only", "[{\"name\":\"mv\",\"binding\":{\"name\":\"macvtap\"}}]",
		 "[{\"name\":\"mv\",\"multus\":{\"networkName\":\"macvtapnet\"}}]", "mv:tap", 1,
		 "interface \"mv\" (tap): its frames go straight to the node's network"},
		{"SR-IOV and macvtap", "[{\"name\":\"a\",\"sriov\":{}},{\"name\":\"b\",\"binding\":{\"name\":\"macvtap\"}}]",
		 "[{\"name\":\"a\",\"multus\":{\"networkName\":\"x\"}},{\"name\":\"b\",\"multus\":{\"networkName\":\"y\"}}]",
		 "a:sriov,b:tap", 2, "interface \"b\" (tap)"},
		{"slirp (removed in v1.3)", "[{\"name\":\"default\",\"slirp\":{}}]", "[" POD_NET "]", "default:unknown", 1,
		 "KubeVirt removed that binding in v1.3"},
		{"core passt (removed)", "[{\"name\":\"default\",\"passt\":{}}]", "[" POD_NET "]", "default:unknown", 1,
		 "removed that binding"},
		{"core macvtap (removed)", "[{\"name\":\"default\",\"macvtap\":{}}]", "[" POD_NET "]", "default:unknown", 1,
		 "removed that binding"},
		{"two bindings", "[{\"name\":\"default\",\"bridge\":{},\"masquerade\":{}}]", "[" POD_NET "]", "default:unknown",
		 1, "more than one binding"},
		{"no binding", "[{\"name\":\"default\"}]", "[" POD_NET "]", "default:unknown", 1, "no binding"},
		{"no network of that name", "[" MASQ "]", "[{\"name\":\"other\",\"pod\":{}}]", "default:unknown", 1,
		 "no network of that name"},
		/* an unknown plugin: always warned, naming the flag */
		{"unknown plugin beside masquerade", "[" MASQ ",{\"name\":\"x\",\"binding\":{\"name\":\"ovs-tap\"}}]",
		 "[" POD_NET ",{\"name\":\"x\",\"multus\":{\"networkName\":\"n\"}}]", "default:masquerade:tap0,x:unknown", 1,
		 "--binding-plugin ovs-tap=KIND"},
		{"unknown plugin alone", "[{\"name\":\"default\",\"binding\":{\"name\":\"ovs-tap\"}}]", "[" POD_NET "]",
		 "default:unknown", 2, "binding plugin is unknown to the webhook"},
		{"a plugin name no flag can carry", "[{\"name\":\"default\",\"binding\":{\"name\":\"a b\"}}]", "[" POD_NET "]",
		 "default:unknown", 2, "binding plugin 'a b' is unknown"},
		/* built-in plugin kinds and tap names */
		{"l2bridge (OVN-K primary UDN)", "[{\"name\":\"default\",\"binding\":{\"name\":\"l2bridge\"}}]", "[" POD_NET "]",
		 "default:managedtap:tap0", 0, NULL},
		{"Multus default network", "[{\"name\":\"d\",\"bridge\":{}}]",
		 "[{\"name\":\"d\",\"multus\":{\"networkName\":\"n\",\"default\":true}}]", "d:bridge:tap0", 0, NULL},
		{"Multus default: false", "[{\"name\":\"d\",\"bridge\":{}}]",
		 "[{\"name\":\"d\",\"multus\":{\"networkName\":\"n\",\"default\":false}}]", "d:bridge:tap18ac3e7343f" /* sha256sum of "d": 18ac3e7343f0... */, 0,
		 NULL},
		{"a name that is not [A-Za-z0-9._-]", "[{\"name\":\"a b\",\"masquerade\":{}}]",
		 "[{\"name\":\"a b\",\"pod\":{}}]", "#0:masquerade:tap0", 0, NULL},
		/* no interface */
		{"neither interfaces nor networks: KubeVirt's default comes", NULL, NULL, NULL, 0, NULL},
		{"empty lists alike", "[]", "[]", NULL, 0, NULL},
		{"networks without interfaces", "[]", "[" POD_NET "]", "", 1, "no network interface"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *review = vmi_with(cases[i].ifaces, cases[i].nets);
		struct answer a;
		run_review(&NATIVE, review, &a);
		if (a.res.outcome != ADM_PATCHED)
			fail_msg("%s: %s (%s)", cases[i].what, admission_outcome_name(a.res.outcome), a.res.reason);
		const char *got = sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/interfaces", NULL));
		if (cases[i].want ? !got || strcmp(got, cases[i].want) != 0 : got != NULL)
			fail_msg("%s: annotation '%s', want '%s'", cases[i].what, got ? got : "(none)",
				 cases[i].want ? cases[i].want : "(none)");
		if (nwarn(&a) != cases[i].warnings || (cases[i].says && !warned(&a, cases[i].says)))
			fail_msg("%s: %zu warnings, want %zu saying '%s': %s", cases[i].what, nwarn(&a), cases[i].warnings,
				 cases[i].says ? cases[i].says : "",
				 json_object_to_json_string(at(a.resp, "response", "warnings", NULL)));
		assert_second_pass_clean(&NATIVE, review, a.object);
		answer_free(&a);
		json_object_put(review);
	}
	/* autoattachPodInterface: false and no interface: an empty list */
	struct json_object *review = vmi_with(NULL, NULL);
	set(at(review, "request", "object", "spec", "domain", "devices", NULL), "autoattachPodInterface",
	    json_object_new_boolean(0));
	struct answer a;
	run_review(&NATIVE, review, &a);
	assert_string_equal(sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/interfaces", NULL)), "");
	assert_int_equal(nwarn(&a), 1);
	assert_true(warned(&a, "the VM has no network interface"));
	answer_free(&a);
	json_object_put(review);
}

static void test_vmi_interfaces_overwrite_and_caps(void **state)
{
	(void)state;
	struct answer a;
	/* a user's value is replaced; the right value is left as it is */
	struct json_object *review = vmi_with("[" MASQ "]", "[" POD_NET "]");
	set_ann(review, "imds.kubevirt.io/interfaces", "default:bridge:tap0");
	run_review(&NATIVE, review, &a);
	assert_true(has_op_path(a.patch, "add", "/metadata/annotations/imds.kubevirt.io~1interfaces"));
	assert_string_equal(sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/interfaces", NULL)),
			    "default:masquerade:tap0");
	answer_free(&a);
	set_ann(review, "imds.kubevirt.io/interfaces", "default:masquerade:tap0");
	run_review(&NATIVE, review, &a);
	assert_false(has_op_path(a.patch, "add", "/metadata/annotations/imds.kubevirt.io~1interfaces"));
	answer_free(&a);
	json_object_put(review);

	/* --binding-plugin: a flag teaches a plugin, and overrides a built-in */
	static const struct ifc_plugin plugins[] = {{"ovs-tap", IFACES_MANAGEDTAP}, {"passt", IFACES_TAP}};
	struct admission_config cfg = NATIVE;
	cfg.plugins = plugins;
	cfg.nplugins = 2;
	review = vmi_with("[{\"name\":\"default\",\"binding\":{\"name\":\"passt\"}},{\"name\":\"x\",\"binding\":{\"name\":\"ovs-tap\"}}]",
			  "[" POD_NET ",{\"name\":\"x\",\"multus\":{\"networkName\":\"n\"}}]");
	run_review(&cfg, review, &a);
	char tap[IFACES_TAP_MAX + 1], want[128];
	ifc_tap_secondary("x", 1, tap);
	snprintf(want, sizeof(want), "default:tap,x:managedtap:%s", tap);
	assert_string_equal(sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/interfaces", NULL)), want);
	assert_int_equal(nwarn(&a), 0);
	answer_free(&a);
	json_object_put(review);

	/* 64 interfaces with 63-byte names: past 4096 bytes, so every name
	 * becomes #<index>; 65 interfaces: no annotation, a user's removed */
	struct json_object *ifs = json_object_new_array(), *nets = json_object_new_array();
	for (int i = 0; i < 65; i++) {
		char name[64]; /* 63 bytes: two digits, then 61 zeros */
		memset(name, '0', 63);
		name[63] = '\0';
		name[0] = (char)('0' + i / 10);
		name[1] = (char)('0' + i % 10);
		json_object_array_add(ifs, jb_like_iface(name));
		json_object_array_add(nets, json_tokener_parse("{}"));
		set(json_object_array_get_idx(nets, (size_t)i), "name", json_object_new_string(name));
		set(json_object_array_get_idx(nets, (size_t)i), "pod", json_object_new_object());
	}
	json_object_array_del_idx(ifs, 64, 1);
	json_object_array_del_idx(nets, 64, 1);
	review = vmi_with(json_object_to_json_string(ifs), json_object_to_json_string(nets));
	run_review(&NATIVE, review, &a);
	got_index_names(sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/interfaces", NULL)), 64);
	answer_free(&a);
	json_object_put(review);
	json_object_array_add(ifs, jb_like_iface("extra"));
	json_object_array_add(nets, json_tokener_parse("{\"name\":\"extra\",\"pod\":{}}"));
	review = vmi_with(json_object_to_json_string(ifs), json_object_to_json_string(nets));
	set_ann(review, "imds.kubevirt.io/interfaces", "default:masquerade:tap0");
	run_review(&NATIVE, review, &a);
	assert_true(has_op_path(a.patch, "remove", "/metadata/annotations/imds.kubevirt.io~1interfaces"));
	assert_null(at(a.object, "metadata", "annotations", "imds.kubevirt.io/interfaces", NULL));
	assert_true(warned(&a, "65 interfaces, past the 64"));
	answer_free(&a);
	json_object_put(review);
	json_object_put(ifs);
	json_object_put(nets);

	/* 20 SR-IOV NICs: 20 warnings, 16 shown, the last says how many more */
	ifs = json_object_new_array();
	nets = json_object_new_array();
	for (int i = 0; i < 20; i++) {
		char name[16];
		snprintf(name, sizeof(name), "vf%d", i);
		struct json_object *itf = json_object_new_object(), *net = json_object_new_object();
		set(itf, "name", json_object_new_string(name));
		set(itf, "sriov", json_object_new_object());
		set(net, "name", json_object_new_string(name));
		set(net, "multus", json_tokener_parse("{\"networkName\":\"sriov-net\"}"));
		json_object_array_add(ifs, itf);
		json_object_array_add(nets, net);
	}
	review = vmi_with(json_object_to_json_string(ifs), json_object_to_json_string(nets));
	run_review(&NATIVE, review, &a);
	assert_int_equal(nwarn(&a), 16);
	assert_true(warned(&a, "interface \"vf14\" (sriov)"));
	assert_false(warned(&a, "interface \"vf15\""));
	assert_string_equal(json_object_get_string(json_object_array_get_idx(at(a.resp, "response", "warnings", NULL), 15)),
			    "imds.kubevirt.io: 5 more warnings not shown");
	answer_free(&a);
	json_object_put(review);
	json_object_put(ifs);
	json_object_put(nets);
}

static void test_vm_warnings(void **state)
{
	(void)state;
	struct answer a;
	/* the VM's template: warned, never annotated (the VMI is) */
	struct json_object *review = fixture("vm-no-firmware");
	struct json_object *tspec = at(review, "request", "object", "spec", "template", "spec", NULL);
	set(at(tspec, "domain", "devices", NULL), "interfaces", json_tokener_parse("[{\"name\":\"fast\",\"sriov\":{}}]"));
	set(tspec, "networks", json_tokener_parse("[{\"name\":\"fast\",\"multus\":{\"networkName\":\"sriov-net\"}}]"));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_PATCHED);
	assert_int_equal(nwarn(&a), 1);
	assert_true(warned(&a, "imds.kubevirt.io: interface \"fast\" (sriov): the VF bypasses the pod network; "
			       "the metadata service cannot be reached from it"));
	assert_null(at(a.object, "spec", "template", "metadata", "annotations", "imds.kubevirt.io/interfaces", NULL));
	assert_int_equal(json_object_array_length(a.patch), 1);
	answer_free(&a);
	/* UPDATE alike */
	set(at(review, "request", NULL), "operation", json_object_new_string("UPDATE"));
	run_review(&NATIVE, review, &a);
	assert_int_equal(nwarn(&a), 1);
	answer_free(&a);
	/* not opted in: no interface warning */
	set(at(review, "request", "object", "spec", "template", "metadata", "annotations", NULL), "imds.kubevirt.io/enabled",
	    json_object_new_string("false"));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	assert_int_equal(nwarn(&a), 0);
	answer_free(&a);
	json_object_put(review);

	/* annotations on the VM's own metadata, not on its template */
	review = fixture("vm-own-annotation");
	run_review(&NATIVE, review, &a);
	assert_int_equal(nwarn(&a), 1);
	assert_true(warned(&a, "imds.kubevirt.io: imds.kubevirt.io/enabled is on the VirtualMachine's own metadata; "
			       "KubeVirt copies only spec.template.metadata.annotations to the VMI and its pod: move it there"));
	answer_free(&a);
	/* several; one already on the template is not named; warned even when
	 * the VM does not opt in at all */
	struct json_object *own = at(review, "request", "object", "metadata", "annotations", NULL);
	set(own, "imds.kubevirt.io/enabled", json_object_new_string("false"));
	set(own, "imds.kubevirt.io/user-data", json_object_new_string("#cloud-config\n"));
	set(own, "imds.kubevirt.io/hop-limit", json_object_new_string("2"));
	set(own, "app.example/other", json_object_new_string("x"));
	struct json_object *tmeta = at(review, "request", "object", "spec", "template", "metadata", NULL);
	set(tmeta, "annotations", json_tokener_parse("{\"imds.kubevirt.io/hop-limit\":\"2\"}"));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	assert_int_equal(nwarn(&a), 1);
	assert_true(warned(&a, "imds.kubevirt.io/enabled, imds.kubevirt.io/user-data are on the VirtualMachine's own "
			       "metadata"));
	assert_false(warned(&a, "hop-limit"));
	answer_free(&a);
	/* many: the list is cut and counted */
	for (int i = 0; i < 12; i++) {
		char k[64];
		snprintf(k, sizeof(k), "imds.kubevirt.io/k%02d", i);
		set(own, k, json_object_new_string("v"));
	}
	run_review(&NATIVE, review, &a);
	assert_int_equal(nwarn(&a), 1);
	assert_true(warned(&a, " more are on the VirtualMachine's own metadata"));
	const char *w = json_object_get_string(json_object_array_get_idx(at(a.resp, "response", "warnings", NULL), 0));
	assert_true(strlen(w) < 256);
	answer_free(&a);
	json_object_put(review);
	/* a VMI's own annotations are what KubeVirt copies: no such warning */
	review = fixture("vmi-standalone");
	run_review(&NATIVE, review, &a);
	assert_int_equal(nwarn(&a), 0);
	answer_free(&a);
	json_object_put(review);
}

/* ---- vmnet_admit on a spec directly ------------------------------------- */

static void direct(const struct admission_config *cfg, const char *spec, int vmi, const char *patch,
		   size_t warnings, const char *says)
{
	char *text = NULL;
	assert_true(asprintf(&text, "{\"spec\":%s,\"anns\":{\"imds.kubevirt.io/enabled\":\"true\"}}", spec) > 0);
	struct rvfx f;
	rvfx_open(&f, cfg, text);
	vmnet_admit(&f.a, rvfx_at(&f, "spec", NULL), "request.object.spec", vmi ? rvfx_at(&f, "anns", NULL) : JV_NONE,
		    vmi);
	rvfx_ok(&f);
	if (strcmp(rvfx_patch(&f), patch) != 0)
		fail_msg("%s: patch %s, want %s", spec, rvfx_patch(&f), patch);
	if (f.a.nwarn != warnings)
		fail_msg("%s: %zu warnings, want %zu", spec, f.a.nwarn, warnings);
	if (says && (!f.a.nwarn || !strstr(f.a.warn[0], says)))
		fail_msg("%s: warning '%s' does not say '%s'", spec, f.a.nwarn ? f.a.warn[0] : "", says);
	rvfx_close(&f);
	free(text);
}

#define ANN_OP(v) "[{\"op\":\"add\",\"path\":\"/metadata/annotations/imds.kubevirt.io~1interfaces\",\"value\":\"" v "\"}]"

/* A VM's template (vmi 0) is warned about, never annotated; a VMI gets
 * the annotation; --binding-plugin teaches a plugin's kind (the last flag
 * of a name wins) and silences its warning; autoattachPodInterface: false
 * with no interface is a VM with none. */
static void test_vmnet_direct(void **state)
{
	(void)state;
	const char *sriov = "{\"domain\":{\"devices\":{\"interfaces\":[{\"name\":\"f\",\"sriov\":{}}]}},"
			    "\"networks\":[{\"name\":\"f\",\"multus\":{\"networkName\":\"s\"}}]}";
	direct(NULL, sriov, 0, "[]", 1, "interface \"f\" (sriov)");
	direct(NULL, sriov, 1, ANN_OP("f:sriov"), 1, "interface \"f\" (sriov)");
	direct(NULL, "{}", 1, "[]", 0, NULL);
	direct(NULL, "{\"domain\":{\"devices\":{\"autoattachPodInterface\":false}}}", 1, ANN_OP(""), 1,
	       "the VM has no network interface");
	direct(NULL, "{\"domain\":{\"devices\":{\"autoattachPodInterface\":true}}}", 1, "[]", 0, NULL);

	const char *plug = "{\"domain\":{\"devices\":{\"interfaces\":[{\"name\":\"p\",\"binding\":{\"name\":\"ovs\"}}]}},"
			   "\"networks\":[{\"name\":\"p\",\"pod\":{}}]}";
	direct(NULL, plug, 1, ANN_OP("p:unknown"), 2, "--binding-plugin ovs=KIND");
	struct ifc_plugin plugins[2] = {{"ovs", IFACES_TAP}, {"ovs", IFACES_BRIDGE}};
	struct admission_config cfg = {.plugins = plugins, .nplugins = 2};
	direct(&cfg, plug, 1, ANN_OP("p:bridge:tap0"), 0, NULL);
	cfg.nplugins = 1;
	direct(&cfg, plug, 1, ANN_OP("p:tap"), 1, "interface \"p\" (tap)");
}

/* Wrong JSON types: a malformed review naming the path under where. */
static void test_vmnet_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *msg;
	} bad[] = {
		{"{\"domain\":[]}", "request.object.spec.domain: must be an object"},
		{"{\"domain\":{\"devices\":\"x\"}}", "request.object.spec.domain.devices: must be an object"},
		{"{\"domain\":{\"devices\":{\"interfaces\":{}}}}", "request.object.spec.domain.devices.interfaces: must be an array"},
		{"{\"networks\":{}}", "request.object.spec.networks: must be an array"},
		{"{\"domain\":{\"devices\":{\"autoattachPodInterface\":\"no\"}}}",
		 "request.object.spec.domain.devices.autoattachPodInterface: must be a boolean"},
		{"{\"domain\":{\"devices\":{\"interfaces\":[{\"name\":\"a\",\"masquerade\":{}},\"b\"]}}}",
		 "request.object.spec.domain.devices.interfaces[1]: must be an object"},
		{"{\"domain\":{\"devices\":{\"interfaces\":[{\"name\":\"a\",\"masquerade\":{}}]}},\"networks\":[7]}",
		 "request.object.spec.networks: every element must be an object"},
		{"{\"domain\":{\"devices\":{\"interfaces\":[{\"name\":1,\"masquerade\":{}}]}}}", "interfaces[].name: must be a string"},
		{"{\"domain\":{\"devices\":{\"interfaces\":[{\"name\":\"a\",\"binding\":\"x\"}]}}}",
		 "interfaces[].binding: must be an object"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = NULL;
		assert_true(asprintf(&text, "{\"spec\":%s,\"anns\":{}}", bad[i].spec) > 0);
		struct rvfx f;
		rvfx_open(&f, NULL, text);
		vmnet_admit(&f.a, rvfx_at(&f, "spec", NULL), "request.object.spec", rvfx_at(&f, "anns", NULL), 1);
		rvfx_failed(&f, RV_BAD, bad[i].msg);
		assert_int_equal(patch_count(f.a.patch), 0);
		rvfx_close(&f);
		free(text);
	}
	/* The user's annotation not a string: named too. */
	struct rvfx f;
	rvfx_open(&f, NULL, "{\"spec\":{},\"anns\":{\"imds.kubevirt.io/interfaces\":[]}}");
	vmnet_admit(&f.a, rvfx_at(&f, "spec", NULL), "request.object.spec", rvfx_at(&f, "anns", NULL), 1);
	rvfx_failed(&f, RV_BAD, "request.object.metadata.annotations.imds.kubevirt.io/interfaces: must be a string");
	rvfx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vmi_interfaces),
		cmocka_unit_test(test_vmi_interfaces_overwrite_and_caps),
		cmocka_unit_test(test_vm_warnings),
		cmocka_unit_test(test_vmnet_direct),
		cmocka_unit_test(test_vmnet_malformed),
	};
	int failed = cmocka_run_group_tests_name("webhook vmnet", tests, NULL, NULL);
	admission_cleanup(&adm);
	return failed;
}
