/* pod: the imds-server sidecar injected into a virt-launcher pod
 * (src/webhook/pod.h) over fixtures of KubeVirt 1.8/1.9's pods
 * (wh_fixture.h): native and plain sidecars, --network-mode agent, QoS
 * and quantities, missing parents, keys and meta-data, user-data
 * sources, vendor-data, the VM's name, the skips and every denial naming
 * its annotation, IMDS_INTERFACES; each patch applied and read back, a
 * second pass clean.  Moved from test_wh_admission.c. */
#include "wh_fixture.h"
#include "pod.h"
#include "wh_review.h"

/* ---- pods -------------------------------------------------------------- */

/* What --network-mode adds (docs/webhook.md, --network-mode): in agent mode
 * the imds-node emptyDir (disk-backed) at /run/imds-node, IMDS_NET_MODE, and
 * what holds compute until the guard is in place: the native sidecar's
 * startupProbe, or an `imds-server await` init container last among the
 * init containers; in pod mode none of it. */
static void check_network_mode(struct json_object *orig, struct json_object *pod, struct json_object *c,
			       const struct admission_config *cfg)
{
	struct json_object *oi = at(orig, "spec", "initContainers", NULL);
	struct json_object *ni = at(pod, "spec", "initContainers", NULL);
	size_t noi = oi ? json_object_array_length(oi) : 0, nni = ni ? json_object_array_length(ni) : 0;
	if (!cfg->agent_network) {
		assert_null(env_of(c, "IMDS_NET_MODE"));
		assert_null(volume_of(pod, "imds-node"));
		assert_null(mount_path(c, "imds-node"));
		assert_null(at(c, "startupProbe", NULL));
		assert_int_equal(nni, noi + (cfg->native_sidecar ? 1 : 0));
		return;
	}
	assert_string_equal(env_value(c, "IMDS_NET_MODE"), "agent");
	assert_null(env_of(c, "IMDS_AGENT_SOCKET")); /* the sidecar's default: /run/imds-node/agent.sock */
	assert_string_equal(mount_path(c, "imds-node"), "/run/imds-node");
	struct json_object *want_vol = json_tokener_parse("{\"name\":\"imds-node\",\"emptyDir\":{\"sizeLimit\":\"1Mi\"}}");
	assert_true(json_eq(volume_of(pod, "imds-node"), want_vol));
	json_object_put(want_vol);
	if (cfg->native_sidecar) {
		struct json_object *want_probe = json_tokener_parse(
			"{\"exec\":{\"command\":[\"/imds-server\",\"probe\"]},\"periodSeconds\":1,"
			"\"failureThreshold\":120,\"timeoutSeconds\":2}");
		assert_true(json_eq(at(c, "startupProbe", NULL), want_probe));
		json_object_put(want_probe);
		assert_int_equal(nni, noi + 1);
		return;
	}
	/* container mode: no probe (main containers do not wait for one
	 * another's); the await init container, appended after KubeVirt's
	 * own, is the sidecar in everything but its name and command. */
	assert_null(at(c, "startupProbe", NULL));
	assert_int_equal(nni, noi + 1);
	struct json_object *w = json_object_array_get_idx(ni, nni - 1);
	assert_string_equal(sat(at(w, "name", NULL)), "imds-await");
	struct json_object *want_cmd = json_tokener_parse("[\"/imds-server\",\"await\"]");
	assert_true(json_eq(at(w, "command", NULL), want_cmd));
	json_object_put(want_cmd);
	assert_null(at(w, "restartPolicy", NULL));
	struct json_object *cw = dup(w), *cc = dup(c);
	json_object_object_del(cw, "name");
	json_object_object_del(cw, "command");
	json_object_object_del(cc, "name");
	json_object_object_del(cc, "command");
	assert_true(json_eq(cw, cc));
	json_object_put(cw);
	json_object_put(cc);
}

/* The fields every injected pod has, whatever the fixture. */
static void check_common(struct json_object *review, struct answer *a, const struct admission_config *cfg)
{
	struct json_object *orig = at(review, "request", "object", NULL), *pod = a->object;
	const char *list;
	size_t idx;
	struct json_object *c = sidecar_of(pod, &list, &idx);

	/* compute stays containers[0]; everything that was there stays in order. */
	assert_string_equal(sat(at(pod, "spec", "containers", "0", "name", NULL)), "compute");
	struct json_object *oc = at(orig, "spec", "containers", NULL), *oi = at(orig, "spec", "initContainers", NULL);
	for (size_t i = 0; i < json_object_array_length(oc); i++)
		assert_true(json_eq(json_object_array_get_idx(oc, i), at(pod, "spec", "containers", NULL) ? json_object_array_get_idx(at(pod, "spec", "containers", NULL), i) : NULL));
	for (size_t i = 0; oi && i < json_object_array_length(oi); i++)
		assert_true(json_eq(json_object_array_get_idx(oi, i), json_object_array_get_idx(at(pod, "spec", "initContainers", NULL), i)));
	if (cfg->native_sidecar) {
		assert_string_equal(list, "initContainers");
		assert_int_equal(idx, oi ? json_object_array_length(oi) : 0); /* appended */
		assert_string_equal(sat(at(c, "restartPolicy", NULL)), "Always");
	} else {
		assert_string_equal(list, "containers");
		assert_int_equal(idx, json_object_array_length(oc)); /* appended, never index 0 */
		assert_true(idx > 0);
		assert_null(at(c, "restartPolicy", NULL));
	}

	assert_string_equal(sat(at(c, "image", NULL)), cfg->imds_image);
	assert_string_equal(sat(at(c, "command", "0", NULL)), "/imds-server");
	assert_string_equal(sat(at(c, "command", "1", NULL)), "run");
	assert_int_equal(json_object_array_length(at(c, "command", NULL)), 2);

	/* pod: root with exactly three capabilities, everything else dropped.
	 * agent: the launcher's user, no capability at all, Pod Security
	 * restricted (tests/integration/webhook_psa.sh judges it). */
	struct json_object *sc = at(c, "securityContext", NULL);
	struct json_object *want_sc = json_tokener_parse(
		cfg->agent_network
			? "{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":[\"ALL\"]},\"privileged\":false,"
			  "\"readOnlyRootFilesystem\":true,\"runAsGroup\":107,\"runAsNonRoot\":true,\"runAsUser\":107,"
			  "\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}"
			: "{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"add\":[\"NET_ADMIN\",\"NET_RAW\","
			  "\"NET_BIND_SERVICE\"],\"drop\":[\"ALL\"]},\"privileged\":false,\"readOnlyRootFilesystem\":true,"
			  "\"runAsNonRoot\":false,\"runAsUser\":0}");
	assert_true(json_eq(sc, want_sc));
	json_object_put(want_sc);
	check_network_mode(orig, pod, c, cfg);

	/* Identity from the downward API: the pod has no name at CREATE. */
	assert_string_equal(sat(at(env_of(c, "IMDS_NAMESPACE"), "valueFrom", "fieldRef", "fieldPath", NULL)),
			    "metadata.namespace");
	assert_string_equal(sat(at(env_of(c, "IMDS_POD_NAME"), "valueFrom", "fieldRef", "fieldPath", NULL)),
			    "metadata.name");
	assert_string_equal(sat(at(env_of(c, "IMDS_SA_NAME"), "valueFrom", "fieldRef", "fieldPath", NULL)),
			    "spec.serviceAccountName");
	/* Placement from the node's topology labels the API server copies
	 * onto the pod at binding; absent, the fieldRef resolves to "". */
	assert_string_equal(sat(at(env_of(c, "IMDS_AVAILABILITY_ZONE"), "valueFrom", "fieldRef", "fieldPath", NULL)),
			    "metadata.labels['topology.kubernetes.io/zone']");
	assert_string_equal(sat(at(env_of(c, "IMDS_REGION"), "valueFrom", "fieldRef", "fieldPath", NULL)),
			    "metadata.labels['topology.kubernetes.io/region']");
	assert_string_equal(env_value(c, "IMDS_TOKEN_PATH"), "/var/run/secrets/tokens/token");
	assert_string_equal(env_value(c, "IMDS_VENDOR_DATA_FILE"), "/var/run/imds/podinfo/vendor-data");
	assert_string_equal(env_value(c, "IMDS_NETWORK_CONFIG_FILE"), "/var/run/imds/podinfo/network-config");
	assert_string_equal(env_value(c, "IMDS_NETWORK_STATUS_FILE"), "/var/run/imds/podinfo/network-status");
	assert_string_equal(mount_path(c, "imds-token"), "/var/run/secrets/tokens");
	assert_string_equal(mount_path(c, "imds-podinfo"), "/var/run/imds/podinfo");
	/* No user data in the environment, ever. */
	assert_null(env_of(c, "IMDS_USER_DATA"));

	/* Multus' network-status through the downward API, never required. */
	struct json_object *items = at(volume_of(pod, "imds-podinfo"), "downwardAPI", "items", NULL);
	assert_non_null(items);
	int ns = 0;
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *it = json_object_array_get_idx(items, i);
		if (strcmp(sat(at(it, "path", NULL)), "network-status") == 0) {
			assert_string_equal(sat(at(it, "fieldRef", "fieldPath", NULL)),
					    "metadata.annotations['k8s.v1.cni.cncf.io/network-status']");
			ns++;
		}
	}
	assert_int_equal(ns, 1);
	/* The lifecycle events' sources (issue 31), each once, in the same folder:
	 * KubeVirt's names (descheduler.go:41, types.go:1175, :1419). */
	static const char *const lc[][2] = {
		{"eviction-in-progress", "metadata.annotations['descheduler.alpha.kubernetes.io/eviction-in-progress']"},
		{"eviction-strategy", "metadata.annotations['imds.kubevirt.io/eviction-strategy']"},
		{"migration-job-uid", "metadata.labels['kubevirt.io/migrationJobUID']"},
		{"migration-target-ready", "metadata.annotations['kubevirt.io/migration-target-ready-timestamp']"},
		{"maintenance", "metadata.annotations['imds.kubevirt.io/maintenance']"},
	};
	for (size_t k = 0; k < sizeof(lc) / sizeof(lc[0]); k++) {
		int seen = 0;
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			struct json_object *it = json_object_array_get_idx(items, i);
			if (strcmp(sat(at(it, "path", NULL)), lc[k][0]) == 0) {
				assert_string_equal(sat(at(it, "fieldRef", "fieldPath", NULL)), lc[k][1]);
				seen++;
			}
		}
		if (seen != 1)
			fail_msg("podinfo item %s: %d times, want once", lc[k][0], seen);
	}
	assert_string_equal(env_value(c, "IMDS_LIFECYCLE_DIR"), "/var/run/imds/podinfo");

	assert_string_equal(sat(at(pod, "metadata", "annotations", "imds.kubevirt.io/injected", NULL)), "true");
	/* The pod's own annotations are all still there, unchanged. */
	json_object_object_foreach(at(orig, "metadata", "annotations", NULL), k, v)
	{
		assert_true(json_eq(v, at(pod, "metadata", "annotations", k, NULL)));
	}
	/* Volumes kept in order, ours appended. */
	struct json_object *ov = at(orig, "spec", "volumes", NULL);
	for (size_t i = 0; ov && i < json_object_array_length(ov); i++)
		assert_true(json_eq(json_object_array_get_idx(ov, i), json_object_array_get_idx(at(pod, "spec", "volumes", NULL), i)));
	assert_non_null(volume_of(pod, "imds-token"));
}

static struct json_object *inject(const char *name, const struct admission_config *cfg, struct answer *a)
{
	struct json_object *review = fixture(name);
	run_review(cfg, review, a);
	if (a->res.outcome != ADM_PATCHED)
		fail_msg("%s: %s (%s)", name, admission_outcome_name(a->res.outcome), a->res.reason);
	check_common(review, a, cfg);
	assert_second_pass_clean(cfg, review, a->object);
	return review;
}

static void test_pod_kv18_native(void **state)
{
	(void)state;
	struct answer a;
	struct json_object *review = inject("pod-kv18", &NATIVE, &a);
	struct json_object *c = sidecar_of(a.object, NULL, NULL);
	assert_string_equal(env_value(c, "IMDS_VM_NAME"), "testvm");
	assert_string_equal(env_value(c, "IMDS_USER_DATA_FILE"), "/var/run/imds/podinfo/user-data");
	assert_null(env_of(c, "IMDS_INSTANCE_ID"));
	assert_null(env_of(c, "IMDS_BRIDGE_NAME"));
	/* guest-console-log (already a native sidecar) stays before ours, first
	 * as KubeVirt v1.8.4 renders it (tests/fixtures/kubevirt-v1.8.4; the
	 * fixture had it last). */
	assert_string_equal(sat(at(a.object, "spec", "initContainers", "0", "name", NULL)), "guest-console-log");
	assert_string_equal(sat(at(a.object, "spec", "initContainers", "3", "name", NULL)), "imds-server");
	/* Token: API server's audience, 3600 s, one source. */
	struct json_object *src = at(volume_of(a.object, "imds-token"), "projected", "sources", NULL);
	assert_int_equal(json_object_array_length(src), 1);
	assert_string_equal(sat(at(src, "0", "serviceAccountToken", "path", NULL)), "token");
	assert_int_equal(json_object_get_int(at(src, "0", "serviceAccountToken", "expirationSeconds", NULL)), 3600);
	assert_null(at(src, "0", "serviceAccountToken", "audience", NULL));
	/* Burstable: requests and a memory limit only. */
	assert_string_equal(sat(at(c, "resources", "requests", "cpu", NULL)), "10m");
	assert_string_equal(sat(at(c, "resources", "requests", "memory", NULL)), "16Mi");
	assert_string_equal(sat(at(c, "resources", "limits", "memory", NULL)), "32Mi");
	assert_null(at(c, "resources", "limits", "cpu", NULL));
	/* The user-data is untouched, byte for byte, and never in the log line. */
	const char *ud = sat(at(review, "request", "object", "metadata", "annotations", "imds.kubevirt.io/user-data", NULL));
	assert_string_equal(ud, sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/user-data", NULL)));
	assert_null(strstr(a.res.reason, "cloud-config"));
	assert_null(strstr(a.res.reason, "ssh-ed25519"));
	assert_int_equal(a.res.kind, ADM_KIND_POD);
	/* Exact operations: annotation, three volumes (token, podinfo, state), the container. */
	assert_int_equal(json_object_array_length(a.patch), 5);
	assert_string_equal(env_value(c, "IMDS_STATE_DIR"), "/var/run/imds/state");
	assert_null(env_of(c, "IMDS_SSH_KEYS_DIR"));
	assert_null(env_of(c, "IMDS_META_DATA_FILE"));
	assert_true(has_op_path(a.patch, "add", "/metadata/annotations/imds.kubevirt.io~1injected"));
	assert_true(has_op_path(a.patch, "add", "/spec/volumes/-"));
	assert_true(has_op_path(a.patch, "add", "/spec/initContainers/-"));
	answer_free(&a);
	json_object_put(review);
}

static void test_pod_plain_container(void **state)
{
	(void)state;
	struct answer a;
	struct json_object *review = inject("pod-kv18", &PLAIN, &a);
	assert_true(has_op_path(a.patch, "add", "/spec/containers/-"));
	/* Init containers untouched in plain mode. */
	assert_true(json_eq(at(review, "request", "object", "spec", "initContainers", NULL),
			    at(a.object, "spec", "initContainers", NULL)));
	answer_free(&a);
	json_object_put(review);
	review = inject("pod-minimal", &PLAIN, &a);
	assert_null(at(a.object, "spec", "initContainers", NULL));
	answer_free(&a);
	json_object_put(review);
}

/* --network-mode agent over every injectable pod fixture, in both sidecar
 * modes (check_common checks what the mode adds); the name clashes denied;
 * the log reason says the mode. */
static void test_pod_agent_mode(void **state)
{
	(void)state;
	static const char *const pods[] = {"pod-kv18", "pod-kv19-imagevolume", "pod-guaranteed", "pod-guaranteed-kv19",
					   "pod-secret", "pod-configmap", "pod-minimal", "pod-label-vmname",
					   "pod-keys-meta", "pod-userdata-200k"};
	const struct admission_config *cfgs[] = {&AGENT_NATIVE, &AGENT_PLAIN};
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
			struct answer a;
			struct json_object *review = inject(pods[i], cfgs[k], &a);
			assert_non_null(strstr(a.res.reason, ", agent network"));
			/* Guaranteed stays Guaranteed: the await container too has
			 * requests equal to limits. */
			if (strncmp(pods[i], "pod-guaranteed", 14) == 0 && !cfgs[k]->native_sidecar) {
				struct json_object *ni = at(a.object, "spec", "initContainers", NULL);
				struct json_object *w = json_object_array_get_idx(ni, json_object_array_length(ni) - 1);
				assert_true(json_eq(at(w, "resources", "requests", NULL), at(w, "resources", "limits", NULL)));
			}
			answer_free(&a);
			json_object_put(review);
		}
	/* pod-minimal has no initContainers: container mode creates the list. */
	struct answer a;
	struct json_object *review = inject("pod-minimal", &AGENT_PLAIN, &a);
	assert_true(has_op_path(a.patch, "add", "/spec/initContainers"));
	assert_true(has_op_path(a.patch, "add", "/spec/containers/-"));
	answer_free(&a);
	json_object_put(review);
	review = inject("pod-minimal", &NATIVE, &a);
	assert_null(strstr(a.res.reason, "agent"));
	answer_free(&a);
	json_object_put(review);

	/* A volume named imds-node, or a container named imds-await, already
	 * there: denied, naming it (the API server would refuse the duplicate). */
	review = fixture("pod-kv18");
	json_object_array_add(at(review, "request", "object", "spec", "volumes", NULL),
			      json_tokener_parse("{\"name\":\"imds-node\",\"emptyDir\":{}}"));
	run_review(&AGENT_NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_DENIED);
	assert_non_null(strstr(sat(at(a.resp, "response", "status", "message", NULL)), "imds-node"));
	answer_free(&a);
	run_review(&NATIVE, review, &a); /* pod mode does not use the name */
	assert_int_equal(a.res.outcome, ADM_PATCHED);
	answer_free(&a);
	json_object_put(review);
	review = fixture("pod-kv18");
	json_object_array_add(at(review, "request", "object", "spec", "initContainers", NULL),
			      json_tokener_parse("{\"name\":\"imds-await\",\"image\":\"x\"}"));
	run_review(&AGENT_PLAIN, review, &a);
	assert_int_equal(a.res.outcome, ADM_DENIED);
	assert_non_null(strstr(sat(at(a.resp, "response", "status", "message", NULL)), "imds-await"));
	answer_free(&a);
	json_object_put(review);
}

static void test_pod_kv19_audiences(void **state)
{
	(void)state;
	struct answer a;
	struct json_object *review = inject("pod-kv19-imagevolume", &NATIVE, &a);
	struct json_object *c = sidecar_of(a.object, NULL, NULL);
	assert_string_equal(env_value(c, "IMDS_VM_NAME"), "web-01");
	assert_string_equal(env_value(c, "IMDS_INSTANCE_ID"), "i-0a1b2c3d4e5f");
	assert_string_equal(env_value(c, "IMDS_BRIDGE_NAME"), "k6t-eth0");
	/* ImageVolume layout: only guest-console-log before us. */
	assert_int_equal(json_object_array_length(at(a.object, "spec", "initContainers", NULL)), 2);
	struct json_object *src = at(volume_of(a.object, "imds-token"), "projected", "sources", NULL);
	/* " sts.amazonaws.com ,https://vault...,sts.amazonaws.com": trimmed, deduplicated;
	 * "token" gets the first, each gets its own directory. */
	assert_int_equal(json_object_array_length(src), 3);
	assert_string_equal(sat(at(src, "0", "serviceAccountToken", "path", NULL)), "token");
	assert_string_equal(sat(at(src, "0", "serviceAccountToken", "audience", NULL)), "sts.amazonaws.com");
	assert_string_equal(sat(at(src, "1", "serviceAccountToken", "path", NULL)), "sts.amazonaws.com/token");
	assert_string_equal(sat(at(src, "1", "serviceAccountToken", "audience", NULL)), "sts.amazonaws.com");
	assert_string_equal(sat(at(src, "2", "serviceAccountToken", "path", NULL)),
			    "https%3A%2F%2Fvault.example.com%3A8200%2Fv1%2Fauth%2Fkubernetes/token");
	assert_string_equal(sat(at(src, "2", "serviceAccountToken", "audience", NULL)),
			    "https://vault.example.com:8200/v1/auth/kubernetes");
	for (int i = 0; i < 3; i++) {
		char k[16];
		snprintf(k, sizeof(k), "%d", i);
		assert_int_equal(json_object_get_int(at(src, k, "serviceAccountToken", "expirationSeconds", NULL)), 7200);
	}
	answer_free(&a);
	json_object_put(review);

	/* Audiences that would collide with kubelet's `..data` or with the
	 * default `token` file get directories the sidecar maps the same way. */
	review = fixture("pod-kv18");
	set_ann(review, "imds.kubevirt.io/token-audience", "token,..data,.x,a b%");
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_DENIED); /* "a b%": a space */
	answer_free(&a);
	set_ann(review, "imds.kubevirt.io/token-audience", "token,..data,.x,a%b");
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_PATCHED);
	src = at(volume_of(a.object, "imds-token"), "projected", "sources", NULL);
	assert_int_equal(json_object_array_length(src), 5);
	assert_string_equal(sat(at(src, "0", "serviceAccountToken", "audience", NULL)), "token");
	assert_string_equal(sat(at(src, "1", "serviceAccountToken", "path", NULL)), "%74oken/token");
	assert_string_equal(sat(at(src, "2", "serviceAccountToken", "path", NULL)), "%2E.data/token");
	assert_string_equal(sat(at(src, "3", "serviceAccountToken", "path", NULL)), "%2Ex/token");
	assert_string_equal(sat(at(src, "4", "serviceAccountToken", "path", NULL)), "a%25b/token");
	answer_free(&a);
	json_object_put(review);
}

static void test_pod_guaranteed(void **state)
{
	(void)state;
	static const char *const names[] = {"pod-guaranteed", "pod-guaranteed-kv19"};
	for (int n = 0; n < 2; n++) {
		for (int mode = 0; mode < 2; mode++) {
			struct answer a;
			struct json_object *review = inject(names[n], mode ? &PLAIN : &NATIVE, &a);
			struct json_object *c = sidecar_of(a.object, NULL, NULL);
			assert_string_equal(sat(at(c, "resources", "limits", "cpu", NULL)), "10m");
			assert_string_equal(sat(at(c, "resources", "limits", "memory", NULL)), "16Mi");
			assert_true(json_eq(at(c, "resources", "limits", NULL), at(c, "resources", "requests", NULL)));
			assert_non_null(strstr(a.res.reason, "Guaranteed"));
			answer_free(&a);
			json_object_put(review);
		}
	}
}

/* A minimal launcher pod with the given cpu/memory on compute (NULL: absent). */
static struct json_object *pod_with(const char *req_cpu, const char *req_mem, const char *lim_cpu, const char *lim_mem)
{
	struct json_object *review = fixture("pod-minimal");
	struct json_object *res = json_object_new_object(), *req = json_object_new_object(),
			   *lim = json_object_new_object();
	if (req_cpu)
		set(req, "cpu", json_object_new_string(req_cpu));
	if (req_mem)
		set(req, "memory", json_object_new_string(req_mem));
	if (lim_cpu)
		set(lim, "cpu", json_object_new_string(lim_cpu));
	if (lim_mem)
		set(lim, "memory", json_object_new_string(lim_mem));
	set(res, "requests", req);
	set(res, "limits", lim);
	set(at(review, "request", "object", "spec", "containers", "0", NULL), "resources", res);
	return review;
}

static void test_pod_qos_quantities(void **state)
{
	(void)state;
	static const struct {
		const char *rc, *rm, *lc, *lm;
		int guaranteed;
	} cases[] = {
		{"2", "2Gi", "2", "2Gi", 1},
		{"2000m", "2048Mi", "2", "2Gi", 1},     /* the same quantities, other spellings */
		{"0.5", "1G", "500m", "1000M", 1},
		{"1e3", "1k", "1000", "1000", 1},        /* decimal exponent */
		{NULL, NULL, "4", "8Gi", 1},             /* limits only: requests default to them */
		{"1", "2Gi", "2", "2Gi", 0},             /* cpu request below the limit */
		{"2", "1Gi", "2", "2Gi", 0},
		{"2", "2Gi", NULL, "2Gi", 0},            /* no cpu limit */
		{"2", "2Gi", "2", NULL, 0},
		{NULL, NULL, NULL, NULL, 0},             /* BestEffort */
		{"2", "2Gi", "0", "2Gi", 0},
		{"2", "2Gi", "two", "2Gi", 0},           /* unparsable: not Guaranteed */
		{"2", "2Gi", "2", "2Gj", 0},
		{"1m", "1", "0.001", "1", 1},
		{"100n", "1Ei", "0.0000001", "1024Pi", 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *review = pod_with(cases[i].rc, cases[i].rm, cases[i].lc, cases[i].lm);
		struct answer a;
		run_review(&NATIVE, review, &a);
		assert_int_equal(a.res.outcome, ADM_PATCHED);
		struct json_object *c = sidecar_of(a.object, NULL, NULL);
		int g = at(c, "resources", "limits", "cpu", NULL) != NULL;
		if (g != cases[i].guaranteed)
			fail_msg("case %zu: guaranteed %d, want %d", i, g, cases[i].guaranteed);
		answer_free(&a);
		json_object_put(review);
	}
	/* One init container that is not Guaranteed makes the pod Burstable. */
	struct json_object *review = fixture("pod-guaranteed");
	struct json_object *inits = at(review, "request", "object", "spec", "initContainers", NULL);
	set(at(json_object_array_get_idx(inits, 0), "resources", "requests", NULL), "cpu", json_object_new_string("5m"));
	struct answer a;
	run_review(&NATIVE, review, &a);
	assert_null(at(sidecar_of(a.object, NULL, NULL), "resources", "limits", "cpu", NULL));
	answer_free(&a);
	json_object_put(review);
	/* Pod-level resources: the containers share the pod's budget. */
	review = fixture("pod-guaranteed");
	set(at(review, "request", "object", "spec", NULL), "resources",
	    json_tokener_parse("{\"limits\":{\"cpu\":\"4\",\"memory\":\"4Gi\"}}"));
	run_review(&NATIVE, review, &a);
	assert_null(at(sidecar_of(a.object, NULL, NULL), "resources", NULL));
	answer_free(&a);
	json_object_put(review);
}

static void test_pod_missing_parents(void **state)
{
	(void)state;
	struct answer a;
	struct json_object *review = inject("pod-minimal", &NATIVE, &a);
	/* No volumes, no initContainers: each added whole. */
	assert_true(has_op_path(a.patch, "add", "/spec/volumes"));
	assert_true(has_op_path(a.patch, "add", "/spec/initContainers"));
	assert_false(has_op_path(a.patch, "add", "/spec/volumes/-"));
	assert_int_equal(json_object_array_length(at(a.object, "spec", "volumes", NULL)), 3);
	assert_int_equal(json_object_array_length(at(a.object, "spec", "initContainers", NULL)), 1);
	assert_int_equal(json_object_array_length(at(a.object, "spec", "containers", NULL)), 1);
	answer_free(&a);
	json_object_put(review);
	/* JSON null where Go leaves a nil slice: treated as absent. */
	review = fixture("pod-minimal");
	set(at(review, "request", "object", "spec", NULL), "volumes", NULL);
	set(at(review, "request", "object", "spec", NULL), "initContainers", NULL);
	run_review(&NATIVE, review, &a);
	assert_true(has_op_path(a.patch, "add", "/spec/volumes"));
	assert_true(has_op_path(a.patch, "add", "/spec/initContainers"));
	answer_free(&a);
	json_object_put(review);
}

/* SSH keys: the whole Secret, read-only, and where the sidecar looks;
 * custom meta-data: a downward-API file. */
static void test_pod_keys_meta_data(void **state)
{
	(void)state;
	struct answer a;
	struct json_object *review = inject("pod-keys-meta", &NATIVE, &a);
	struct json_object *c = sidecar_of(a.object, NULL, NULL);
	assert_string_equal(env_value(c, "IMDS_SSH_KEYS_DIR"), "/var/run/imds/ssh-keys");
	assert_string_equal(mount_path(c, "imds-ssh-keys"), "/var/run/imds/ssh-keys");
	struct json_object *v = volume_of(a.object, "imds-ssh-keys");
	assert_string_equal(sat(at(v, "secret", "secretName", NULL)), "vm-ssh-keys");
	assert_null(at(v, "secret", "items", NULL));
	assert_null(at(v, "secret", "optional", NULL));
	assert_string_equal(env_value(c, "IMDS_META_DATA_FILE"), "/var/run/imds/podinfo/meta-data");
	struct json_object *items = at(volume_of(a.object, "imds-podinfo"), "downwardAPI", "items", NULL);
	int found = 0;
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *it = json_object_array_get_idx(items, i);
		const char *pth = json_object_get_string(json_object_object_get(it, "path"));
		found |= pth && strcmp(pth, "meta-data") == 0;
	}
	assert_true(found);
	/* The state folder: writable, an emptyDir. */
	assert_string_equal(mount_path(c, "imds-state"), "/var/run/imds/state");
	assert_non_null(at(volume_of(a.object, "imds-state"), "emptyDir", NULL));
	/* The annotation, four volumes (token, podinfo, ssh keys, state), the container. */
	assert_int_equal(json_object_array_length(a.patch), 6);
	answer_free(&a);
	json_object_put(review);
}

static void test_pod_user_data_sources(void **state)
{
	(void)state;
	struct answer a;
	/* Secret beats ConfigMap beats inline. */
	struct json_object *review = inject("pod-secret", &NATIVE, &a);
	struct json_object *c = sidecar_of(a.object, NULL, NULL);
	assert_string_equal(env_value(c, "IMDS_USER_DATA_FILE"),
			    "/var/run/imds/user-data-secret/userdata:/var/run/imds/user-data-secret/user-data");
	assert_string_equal(mount_path(c, "imds-user-data"), "/var/run/imds/user-data-secret");
	struct json_object *v = volume_of(a.object, "imds-user-data");
	assert_string_equal(sat(at(v, "secret", "secretName", NULL)), "testvm-userdata");
	assert_null(at(v, "secret", "items", NULL));
	assert_null(at(v, "secret", "optional", NULL));
	assert_null(at(v, "configMap", NULL));
	answer_free(&a);
	json_object_put(review);

	review = inject("pod-configmap", &NATIVE, &a);
	c = sidecar_of(a.object, NULL, NULL);
	assert_string_equal(env_value(c, "IMDS_USER_DATA_FILE"), "/var/run/imds/user-data-configmap/user-data");
	assert_string_equal(mount_path(c, "imds-user-data"), "/var/run/imds/user-data-configmap");
	v = volume_of(a.object, "imds-user-data");
	assert_string_equal(sat(at(v, "configMap", "name", NULL)), "testvm-cm");
	assert_string_equal(sat(at(v, "configMap", "items", "0", "key", NULL)), "user-data");
	assert_string_equal(sat(at(v, "configMap", "items", "0", "path", NULL)), "user-data");
	answer_free(&a);
	json_object_put(review);
}

static void test_pod_200k_user_data(void **state)
{
	(void)state;
	struct answer a;
	struct json_object *review = inject("pod-userdata-200k", &NATIVE, &a);
	const char *want = sat(at(review, "request", "object", "metadata", "annotations", "imds.kubevirt.io/user-data", NULL));
	struct json_object *got = at(a.object, "metadata", "annotations", "imds.kubevirt.io/user-data", NULL);
	assert_true(strlen(want) >= 200 * 1024);
	assert_int_equal(json_object_get_string_len(got), strlen(want));
	assert_memory_equal(json_object_get_string(got), want, strlen(want));
	/* The patch does not carry it: it stays in the annotation. */
	size_t plen;
	const char *p = json_object_to_json_string_length(a.patch, JSON_C_TO_STRING_PLAIN, &plen);
	assert_true(plen < 8192);
	assert_null(strstr(p, "payload"));
	assert_true(strlen(a.res.reason) < sizeof(a.res.reason));
	assert_null(strstr(a.res.reason, "cloud-config"));
	answer_free(&a);
	json_object_put(review);
}

static void test_pod_vendor_data(void **state)
{
	(void)state;
	struct admission_config cfg = NATIVE;
	cfg.vendor_data = "#cloud-config\nruncmd: [\"echo \\\"cluster\\\"\"]\n# ✓\n";
	struct answer a;
	struct json_object *review2;
	/* No vendor-data of its own: the cluster's, as an annotation. */
	struct json_object *review = inject("pod-kv18", &cfg, &a);
	assert_true(has_op_path(a.patch, "add", "/metadata/annotations/imds.kubevirt.io~1vendor-data"));
	assert_string_equal(sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/vendor-data", NULL)),
			    cfg.vendor_data);
	answer_free(&a);
	json_object_put(review);
	/* Its own wins. */
	review = inject("pod-kv19-imagevolume", &cfg, &a);
	assert_false(has_op_path(a.patch, "add", "/metadata/annotations/imds.kubevirt.io~1vendor-data"));
	assert_string_equal(sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/vendor-data", NULL)),
			    "#cloud-config\npackages: [htop]\n");
	answer_free(&a);
	json_object_put(review);
	/* An empty setting is none. */
	cfg.vendor_data = "";
	review = inject("pod-kv18", &cfg, &a);
	assert_false(has_op_path(a.patch, "add", "/metadata/annotations/imds.kubevirt.io~1vendor-data"));
	answer_free(&a);
	json_object_put(review);
	/* A vendor-data file that turned bad after start: denied, named,
	 * rather than mangled into U+FFFD by the API server. */
	cfg.vendor_data = "bad \xc3\x28 utf-8";
	review = fixture("pod-kv18");
	run_review(&cfg, review, &a);
	assert_int_equal(a.res.outcome, ADM_DENIED);
	assert_non_null(strstr(sat(at(a.resp, "response", "status", "message", NULL)), "--vendor-data-file"));
	answer_free(&a);
	/* ...but only for pods that would get it. */
	review2 = fixture("pod-kv19-imagevolume");
	run_review(&cfg, review2, &a);
	assert_int_equal(a.res.outcome, ADM_PATCHED);
	answer_free(&a);
	json_object_put(review2);
	json_object_put(review);
	/* Past the 256 KiB annotation budget with the 200 KiB user-data: denied, named. */
	char *big = malloc(100 * 1024 + 1);
	memset(big, 'v', 100 * 1024);
	big[100 * 1024] = '\0';
	cfg.vendor_data = big;
	review = fixture("pod-userdata-200k");
	run_review(&cfg, review, &a);
	assert_int_equal(a.res.outcome, ADM_DENIED);
	assert_non_null(strstr(sat(at(a.resp, "response", "status", "message", NULL)), "imds.kubevirt.io/vendor-data"));
	answer_free(&a);
	json_object_put(review);
	free(big);
}

static void test_pod_vm_name_sources(void **state)
{
	(void)state;
	struct answer a;
	/* A standalone VMI's pod without kubevirt.io/domain: the label. */
	struct json_object *review = inject("pod-label-vmname", &NATIVE, &a);
	assert_string_equal(env_value(sidecar_of(a.object, NULL, NULL), "IMDS_VM_NAME"), "standalone");
	answer_free(&a);
	json_object_put(review);
	/* The annotation wins over the label. */
	review = fixture("pod-minimal");
	set_ann(review, "kubevirt.io/domain", "from-annotation");
	run_review(&NATIVE, review, &a);
	assert_string_equal(env_value(sidecar_of(a.object, NULL, NULL), "IMDS_VM_NAME"), "from-annotation");
	answer_free(&a);
	json_object_put(review);
	/* Neither: denied with a clear message. */
	review = fixture("hostile-pod-no-vm-name");
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_DENIED);
	const char *msg = sat(at(a.resp, "response", "status", "message", NULL));
	assert_non_null(strstr(msg, "kubevirt.io/domain"));
	assert_non_null(strstr(msg, "vm.kubevirt.io/name"));
	answer_free(&a);
	json_object_put(review);
}

struct skipcase {
	const char *fixture;
	const char *why;
};

static void test_pod_skips(void **state)
{
	(void)state;
	static const struct skipcase cases[] = {
		{"pod-no-annotations", "not opted in"},
		{"hostile-pod-last-applied-only", "not opted in"}, /* the words inside a string, and "True" */
		{"pod-not-launcher", "not a virt-launcher pod"},
		{"pod-update", "UPDATE is never patched"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *review = fixture(cases[i].fixture);
		struct answer a;
		run_review(&NATIVE, review, &a);
		assert_int_equal(a.res.http_status, 200);
		assert_int_equal(a.res.outcome, ADM_SKIPPED);
		if (!strstr(a.res.reason, cases[i].why))
			fail_msg("%s: reason '%s'", cases[i].fixture, a.res.reason);
		answer_free(&a);
		json_object_put(review);
	}
	/* Variants of an opted-in pod that must not be patched. */
	static const char *const variants[] = {"enabled-yes", "enabled-TRUE", "injected", "init-imds",
					       "plain-imds", "delete", "connect", "launcher-label-other"};
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		struct json_object *review = fixture("pod-kv18");
		struct json_object *spec = at(review, "request", "object", "spec", NULL);
		const char *v = variants[i];
		if (!strcmp(v, "enabled-yes"))
			set_ann(review, "imds.kubevirt.io/enabled", "yes");
		else if (!strcmp(v, "enabled-TRUE"))
			set_ann(review, "imds.kubevirt.io/enabled", "TRUE");
		else if (!strcmp(v, "injected"))
			set_ann(review, "imds.kubevirt.io/injected", "true");
		else if (!strcmp(v, "init-imds"))
			set(json_object_array_get_idx(at(spec, "initContainers", NULL), 1), "name", json_object_new_string("imds-server"));
		else if (!strcmp(v, "plain-imds"))
			set(json_object_array_get_idx(at(spec, "containers", NULL), 1), "name", json_object_new_string("imds-server"));
		else if (!strcmp(v, "delete") || !strcmp(v, "connect")) {
			set(at(review, "request", NULL), "operation", json_object_new_string(!strcmp(v, "delete") ? "DELETE" : "CONNECT"));
			set(at(review, "request", NULL), "object", NULL); /* a DELETE carries oldObject only */
		} else
			set(at(review, "request", "object", "metadata", "labels", NULL), "kubevirt.io", json_object_new_string("hotplug-disk"));
		struct answer a;
		run_review(&NATIVE, review, &a);
		if (a.res.outcome != ADM_SKIPPED)
			fail_msg("%s: %s (%s)", v, admission_outcome_name(a.res.outcome), a.res.reason);
		answer_free(&a);
		json_object_put(review);
	}
}

struct denycase {
	const char *key, *value; /* annotation set on pod-kv18 */
	const char *names;       /* what the message must name */
};

static void test_pod_denials(void **state)
{
	(void)state;
	char long_aud[301], long_cm[260], long_id[256], nine[200];
	memset(long_aud, 'a', 300);
	long_aud[300] = '\0';
	memset(long_cm, 'c', 254);
	long_cm[254] = '\0';
	memset(long_id, 'i', 254);
	long_id[254] = '\0';
	snprintf(nine, sizeof(nine), "a1,a2,a3,a4,a5,a6,a7,a8,a9");
	const struct denycase cases[] = {
		{"imds.kubevirt.io/token-expiration", "10", "imds.kubevirt.io/token-expiration"},
		{"imds.kubevirt.io/token-expiration", "599", "imds.kubevirt.io/token-expiration"},
		{"imds.kubevirt.io/token-expiration", "86401", "imds.kubevirt.io/token-expiration"},
		{"imds.kubevirt.io/token-expiration", "", "imds.kubevirt.io/token-expiration"},
		{"imds.kubevirt.io/token-expiration", "1h", "imds.kubevirt.io/token-expiration"},
		{"imds.kubevirt.io/token-expiration", "-3600", "imds.kubevirt.io/token-expiration"},
		{"imds.kubevirt.io/token-expiration", "3600.5", "imds.kubevirt.io/token-expiration"},
		{"imds.kubevirt.io/token-expiration", "99999999999999999999", "imds.kubevirt.io/token-expiration"},
		{"imds.kubevirt.io/token-audience", "", "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", " , ", "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", "a,,b", "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", "a,", "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", "has space", "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", "caf\xc3\xa9", "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", "a\tb", "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", "..", "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", "a,.", "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", long_aud, "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/token-audience", nine, "imds.kubevirt.io/token-audience"},
		{"imds.kubevirt.io/user-data-secret", "", "imds.kubevirt.io/user-data-secret"},
		{"imds.kubevirt.io/user-data-secret", "Bad_Name", "imds.kubevirt.io/user-data-secret"},
		{"imds.kubevirt.io/user-data-secret", "-x", "imds.kubevirt.io/user-data-secret"},
		{"imds.kubevirt.io/user-data-secret", "x-", "imds.kubevirt.io/user-data-secret"},
		{"imds.kubevirt.io/user-data-secret", "a..b", "imds.kubevirt.io/user-data-secret"},
		{"imds.kubevirt.io/user-data-secret", "../etc", "imds.kubevirt.io/user-data-secret"},
		{"imds.kubevirt.io/user-data-configmap", "UPPER", "imds.kubevirt.io/user-data-configmap"},
		{"imds.kubevirt.io/user-data-configmap", long_cm, "imds.kubevirt.io/user-data-configmap"},
		{"imds.kubevirt.io/bridge-name", "", "imds.kubevirt.io/bridge-name"},
		{"imds.kubevirt.io/bridge-name", "k6t-0123456789ab", "imds.kubevirt.io/bridge-name"}, /* 16 */
		{"imds.kubevirt.io/bridge-name", "br/0", "imds.kubevirt.io/bridge-name"},
		{"imds.kubevirt.io/bridge-name", "br 0", "imds.kubevirt.io/bridge-name"},
		{"imds.kubevirt.io/bridge-name", "br:0", "imds.kubevirt.io/bridge-name"},
		{"imds.kubevirt.io/bridge-name", ".", "imds.kubevirt.io/bridge-name"},
		{"imds.kubevirt.io/bridge-name", "br\n0", "imds.kubevirt.io/bridge-name"},
		{"imds.kubevirt.io/instance-id", "", "imds.kubevirt.io/instance-id"},
		{"imds.kubevirt.io/instance-id", "i-1\x01", "imds.kubevirt.io/instance-id"},
		{"imds.kubevirt.io/instance-id", long_id, "imds.kubevirt.io/instance-id"},
		{"kubevirt.io/domain", "", "kubevirt.io/domain"},
		{"imds.kubevirt.io/session", "", "imds.kubevirt.io/session"},
		{"imds.kubevirt.io/session", "Required", "imds.kubevirt.io/session"},
		{"imds.kubevirt.io/session", "on", "imds.kubevirt.io/session"},
		{"imds.kubevirt.io/hop-limit", "", "imds.kubevirt.io/hop-limit"},
		{"imds.kubevirt.io/hop-limit", "0", "imds.kubevirt.io/hop-limit"},
		{"imds.kubevirt.io/hop-limit", "65", "imds.kubevirt.io/hop-limit"},
		{"imds.kubevirt.io/hop-limit", "01", "imds.kubevirt.io/hop-limit"},
		{"imds.kubevirt.io/hop-limit", "-1", "imds.kubevirt.io/hop-limit"},
		{"imds.kubevirt.io/hop-limit", "1.5", "imds.kubevirt.io/hop-limit"},
		{"imds.kubevirt.io/hop-limit", "100", "imds.kubevirt.io/hop-limit"},
		{"imds.kubevirt.io/ssh-keys-secret", "", "imds.kubevirt.io/ssh-keys-secret"},
		{"imds.kubevirt.io/ssh-keys-secret", "Keys", "imds.kubevirt.io/ssh-keys-secret"},
		{"imds.kubevirt.io/meta-data", "", "imds.kubevirt.io/meta-data"},
		{"imds.kubevirt.io/meta-data", "not json", "imds.kubevirt.io/meta-data"},
		{"imds.kubevirt.io/meta-data", "[]", "imds.kubevirt.io/meta-data"},
		{"imds.kubevirt.io/meta-data", "\"a\"", "imds.kubevirt.io/meta-data"},
		{"imds.kubevirt.io/meta-data", "{\"a\":1}", "imds.kubevirt.io/meta-data"},
		{"imds.kubevirt.io/meta-data", "{\"a\":null}", "imds.kubevirt.io/meta-data"},
		{"imds.kubevirt.io/meta-data", "{\"a\":{\"b\":\"c\"}}", "imds.kubevirt.io/meta-data"},
		{"imds.kubevirt.io/meta-data", "{\"a\":\"1\",\"a\":\"2\"}", "appears twice"},
		{"imds.kubevirt.io/meta-data", "{\"a\":\"1\",}", "imds.kubevirt.io/meta-data"},
		{"imds.kubevirt.io/meta-data", "{\"instance-id\":\"x\"}", "instance-id is set by the sidecar"},
		{"imds.kubevirt.io/meta-data", "{\"local-hostname\":\"x\"}", "local-hostname"},
		{"imds.kubevirt.io/meta-data", "{\"public-keys\":\"x\"}", "public-keys"},
		{"imds.kubevirt.io/meta-data", "{\"hostname\":\"x\"}", "hostname"},
		{"imds.kubevirt.io/meta-data", "{\"uuid\":\"x\"}", "uuid"},
		{"imds.kubevirt.io/meta-data", "{\"\\u0075uid\":\"x\"}", "uuid"}, /* escaped */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *review = fixture("pod-kv18");
		set_ann(review, cases[i].key, cases[i].value);
		struct answer a;
		run_review(&NATIVE, review, &a);
		if (a.res.outcome != ADM_DENIED)
			fail_msg("case %zu (%s=%.30s): %s (%s)", i, cases[i].key, cases[i].value,
				 admission_outcome_name(a.res.outcome), a.res.reason);
		assert_int_equal(a.res.http_status, 200);
		assert_false(json_object_get_boolean(at(a.resp, "response", "allowed", NULL)));
		assert_int_equal(json_object_get_int(at(a.resp, "response", "status", "code", NULL)), 400);
		const char *msg = sat(at(a.resp, "response", "status", "message", NULL));
		if (!strstr(msg, cases[i].names))
			fail_msg("case %zu: message '%s' does not name %s", i, msg, cases[i].names);
		/* The reason for the log names it too, and holds no user-data. */
		assert_non_null(strstr(a.res.reason, cases[i].names));
		assert_null(strstr(a.res.reason, "cloud-config"));
		answer_free(&a);
		json_object_put(review);
	}
	/* Limits that pass. */
	static const char *const fine[][2] = {
		{"imds.kubevirt.io/token-expiration", "600"},
		{"imds.kubevirt.io/token-expiration", "86400"},
		{"imds.kubevirt.io/token-audience", "a1,a2,a3,a4,a5,a6,a7,a8"},
		{"imds.kubevirt.io/bridge-name", "k6t-0123456789a"}, /* 15 */
		{"imds.kubevirt.io/user-data-secret", "a.b-c.d"},
		{"imds.kubevirt.io/instance-id", "i-\xc3\xa9t\xc3\xa9"},
		{"imds.kubevirt.io/ssh-keys-secret", "vm-keys"},
		{"imds.kubevirt.io/hop-limit", "1"},
		{"imds.kubevirt.io/hop-limit", "64"},
		{"imds.kubevirt.io/session", "optional"},
		{"imds.kubevirt.io/session", "required"},
		{"imds.kubevirt.io/meta-data", "{}"},
		{"imds.kubevirt.io/meta-data", " {\"role\": \"db\", \"Hostname-2\": \"\\u2603\"} "},
	};
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		struct json_object *review = fixture("pod-kv18");
		set_ann(review, fine[i][0], fine[i][1]);
		struct answer a;
		run_review(&NATIVE, review, &a);
		if (a.res.outcome != ADM_PATCHED)
			fail_msg("%s=%s: %s (%s)", fine[i][0], fine[i][1], admission_outcome_name(a.res.outcome),
				 a.res.reason);
		assert_second_pass_clean(&NATIVE, review, a.object);
		answer_free(&a);
		json_object_put(review);
	}
	/* A volume of ours already there: denied, not a doomed patch. */
	struct json_object *review = fixture("pod-kv18");
	set(json_object_array_get_idx(at(review, "request", "object", "spec", "volumes", NULL), 0), "name",
	    json_object_new_string("imds-token"));
	struct answer a;
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_DENIED);
	assert_non_null(strstr(sat(at(a.resp, "response", "status", "message", NULL)), "imds-token"));
	answer_free(&a);
	json_object_put(review);
}

static void test_pod_interfaces_env(void **state)
{
	(void)state;
	struct answer a;
	struct json_object *review = fixture("pod-kv18");
	/* absent: no env */
	run_review(&NATIVE, review, &a);
	assert_null(env_of(sidecar_of(a.object, NULL, NULL), "IMDS_INTERFACES"));
	answer_free(&a);
	static const char *const good[] = {"default:masquerade:tap0", "default:masquerade:tap0,br1:bridge:tap26578a32802,fast:sriov",
					   "", "#0:unknown",
					   /* an old VMI's pod, KubeVirt's ordinal scheme (net1) */
					   "default:masquerade:tap0,blue:bridge:tap1"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		set_ann(review, "imds.kubevirt.io/interfaces", good[i]);
		run_review(&NATIVE, review, &a);
		assert_int_equal(a.res.outcome, ADM_PATCHED);
		assert_string_equal(env_value(sidecar_of(a.object, NULL, NULL), "IMDS_INTERFACES"), good[i]);
		answer_free(&a);
	}
	static const char *const bad[] = {"default", "default:masquerade", "default:slirp", "a:passt:tap0",
					  "#1:passt", "default:bridge:tap01"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set_ann(review, "imds.kubevirt.io/interfaces", bad[i]);
		run_review(&NATIVE, review, &a);
		assert_int_equal(a.res.outcome, ADM_DENIED);
		assert_non_null(strstr(sat(at(a.resp, "response", "status", "message", NULL)), "imds.kubevirt.io/interfaces"));
		answer_free(&a);
	}
	json_object_put(review);
}

/* ---- pod_admit on a request directly ------------------------------------ */

#define LAUNCHER "\"labels\":{\"kubevirt.io\":\"virt-launcher\"}"
#define OPTED "\"annotations\":{\"imds.kubevirt.io/enabled\":\"true\"}"

/* What is skipped (the reason says why, nothing is patched) and what is
 * malformed or denied before any patch (the message names the member),
 * in the order pod_admit decides. */
static void test_pod_direct_gates(void **state)
{
	(void)state;
	static const struct {
		const char *op, *req, *reason;
		int err;
		const char *msg;
	} cases[] = {
		{"UPDATE", "{}", "UPDATE is never patched", 0, NULL},
		{"DELETE", "{}", "DELETE is never patched", 0, NULL},
		{"CREATE", "{\"object\":{\"metadata\":{" OPTED "}}}", "not a virt-launcher pod", 0, NULL},
		{"CREATE", "{\"object\":{\"metadata\":{\"labels\":{\"kubevirt.io\":\"virt-handler\"}," OPTED "}}}",
		 "not a virt-launcher pod", 0, NULL},
		{"CREATE", "{\"object\":{\"metadata\":{" LAUNCHER "}}}", "not opted in", 0, NULL},
		{"CREATE",
		 "{\"object\":{\"metadata\":{" LAUNCHER ",\"annotations\":{\"imds.kubevirt.io/enabled\":\"true\","
		 "\"imds.kubevirt.io/injected\":\"true\"}}}}",
		 "already injected", 0, NULL},
		{"CREATE",
		 "{\"object\":{\"metadata\":{" LAUNCHER "," OPTED "},\"spec\":{\"containers\":[{\"name\":\"compute\"}],"
		 "\"initContainers\":[{\"name\":\"imds-server\"}]}}}",
		 "already has an imds-server container", 0, NULL},
		{"CREATE", "{}", NULL, RV_BAD, "request.object: missing"},
		{"CREATE", "{\"object\":{\"metadata\":{\"labels\":[]}}}", NULL, RV_BAD,
		 "request.object.metadata.labels: must be an object"},
		{"CREATE", "{\"object\":{\"metadata\":{\"labels\":{\"kubevirt.io\":1}}}}", NULL, RV_BAD,
		 "request.object.metadata.labels.kubevirt.io: must be a string"},
		{"CREATE", "{\"object\":{\"metadata\":{" LAUNCHER "," OPTED "}}}", NULL, RV_BAD, "request.object.spec: missing"},
		{"CREATE", "{\"object\":{\"metadata\":{" LAUNCHER "," OPTED "},\"spec\":{}}}", NULL, RV_BAD,
		 "request.object.spec.containers: missing"},
		{"CREATE", "{\"object\":{\"metadata\":{" LAUNCHER "," OPTED "},\"spec\":{\"containers\":{}}}}", NULL, RV_BAD,
		 "request.object.spec.containers: must be an array"},
		{"CREATE",
		 "{\"object\":{\"metadata\":{" LAUNCHER "," OPTED "},\"spec\":{\"containers\":[{\"name\":\"compute\"}],"
		 "\"volumes\":[{\"name\":\"imds-token\"}]}}}",
		 NULL, RV_DENY, "the pod already has a volume named imds-token, which imds-server needs"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rvfx f;
		rvfx_open(&f, &NATIVE, cases[i].req);
		pod_admit(&f.a, 0, (struct str){cases[i].op, strlen(cases[i].op)});
		if (cases[i].err) {
			rvfx_failed(&f, cases[i].err, cases[i].msg);
		} else {
			rvfx_ok(&f);
			if (!strstr(f.res.reason, cases[i].reason))
				fail_msg("case %zu: reason '%s', want '%s'", i, f.res.reason, cases[i].reason);
		}
		if (patch_count(f.a.patch))
			fail_msg("case %zu: patched %s", i, rvfx_patch(&f));
		rvfx_close(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_kv18_native),
		cmocka_unit_test(test_pod_plain_container),
		cmocka_unit_test(test_pod_agent_mode),
		cmocka_unit_test(test_pod_kv19_audiences),
		cmocka_unit_test(test_pod_guaranteed),
		cmocka_unit_test(test_pod_qos_quantities),
		cmocka_unit_test(test_pod_missing_parents),
		cmocka_unit_test(test_pod_keys_meta_data),
		cmocka_unit_test(test_pod_user_data_sources),
		cmocka_unit_test(test_pod_200k_user_data),
		cmocka_unit_test(test_pod_vendor_data),
		cmocka_unit_test(test_pod_vm_name_sources),
		cmocka_unit_test(test_pod_skips),
		cmocka_unit_test(test_pod_denials),
		cmocka_unit_test(test_pod_interfaces_env),
		cmocka_unit_test(test_pod_direct_gates),
	};
	int failed = cmocka_run_group_tests_name("webhook pod", tests, NULL, NULL);
	admission_cleanup(&adm);
	return failed;
}
