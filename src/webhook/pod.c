#include "pod.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "annotations.h"
#include "audience.h"
#include "cloudinit.h"
#include "ifaces.h"
#include "jbuild.h"
#include "k8s_names.h"
#include "patch.h"
#include "quantity.h"
#include "review.h"
#include "sbuf.h"

#define CONTAINER_NAME "imds-server"
#define VOL_TOKEN "imds-token"
#define VOL_PODINFO "imds-podinfo"
#define VOL_USER_DATA "imds-user-data"
#define VOL_SSH_KEYS "imds-ssh-keys"
#define VOL_STATE "imds-state"
/* --network-mode agent (docs/webhook.md, --network-mode): the folder the
 * sidecar binds the node agent's socket in (the contract with src/node/:
 * IMDS_AGENT_SOCKET's default is NODE_DIR "/agent.sock"), and the init
 * container that holds the main containers until the guard is in place when
 * the sidecar is a plain container. */
#define VOL_NODE "imds-node"
#define NODE_DIR "/run/imds-node"
#define AWAIT_NAME "imds-await"
/* The launcher's user and group: KubeVirt's util.NonRootUID
 * (pkg/util/util.go:30), the pod's runAsUser and runAsGroup
 * (pkg/virt-controller/services/template.go:314-316, v1.8.4) and its fsGroup
 * always, so the sidecar reads the same volumes as UID 107. */
#define LAUNCHER_UID 107
/* The native sidecar's startupProbe, `imds-server probe`: every second, so
 * compute waits at most a second past "guard in place"; 120 failures (two
 * minutes: a new node pulling the agent's image, the agent's pod restarting)
 * before the kubelet restarts the sidecar; 2 s for an exec under a loaded
 * node (the probe reads one file). */
#define PROBE_PERIOD_S 1
#define PROBE_FAILURES 120
#define PROBE_TIMEOUT_S 2
/* Where the sidecar looks (src/core/config.h, docs/sidecar.md). */
#define TOKEN_DIR "/var/run/secrets/tokens"
#define PODINFO_DIR "/var/run/imds/podinfo"
#define SECRET_DIR "/var/run/imds/user-data-secret"
#define CONFIGMAP_DIR "/var/run/imds/user-data-configmap"
#define SSH_KEYS_DIR "/var/run/imds/ssh-keys"
#define STATE_DIR "/var/run/imds/state"
/* The VM's own cloud-init Secrets: user-data/, network-data/, ssh/<i>/ */
#define CLOUD_INIT_DIR "/var/run/imds/cloud-init"
#define VOL_CI_USER "imds-ci-user-data"
#define VOL_CI_NET "imds-ci-network-data"
#define VOL_CI_SSH "imds-ci-ssh-"

#define EXPIRATION_MIN 600 /* the API server's own floor for projected tokens */
#define EXPIRATION_MAX 86400
#define EXPIRATION_DEFAULT 3600
#define MAX_AUDIENCES 8
/* Kubernetes' TotalAnnotationSizeLimitB: keys plus values. */
#define ANNOTATIONS_MAX (256u << 10)

/* ---- resources ------------------------------------------------------- */

/* A quantity of a resources map: 1 and q filled, 0 absent, -1 unparsable.
 * The API server writes quantities as strings; a JSON number is accepted
 * on input, so take integers too. */
static int res_qty(struct review *a, uint32_t map, const char *name, struct qty *q)
{
	uint32_t v = jv_get(a->v, map, name);
	if (v == JV_NONE || jv_type(a->v, v) == JV_NULL)
		return 0;
	if (jv_type(a->v, v) == JV_STRING) {
		struct str s = rv_jstring(a, v);
		return !s.p || qty_parse(s.p, s.n, q) < 0 ? -1 : 1;
	}
	if (jv_type(a->v, v) == JV_NUMBER && (a->v->nodes[v].flags & JV_F_INTEGER)) {
		size_t n;
		const char *raw = jv_raw(a->v, v, &n);
		return qty_parse(raw, n, q) < 0 ? -1 : 1; /* "-1" is no quantity either */
	}
	return -1;
}

/* Kubernetes' ComputePodQOS for one container: limits for cpu and memory,
 * both > 0, and requests equal to them.  A missing request counts as
 * equal: the API server defaults requests from limits before admission. */
static int container_guaranteed(struct review *a, uint32_t c)
{
	uint32_t res = rv_member(a, c, "resources", JV_OBJECT, "container");
	uint32_t lim = rv_member(a, res, "limits", JV_OBJECT, "container.resources");
	uint32_t req = rv_member(a, res, "requests", JV_OBJECT, "container.resources");
	static const char *const names[] = {"cpu", "memory"};
	for (size_t i = 0; i < 2; i++) {
		struct qty l, r;
		if (res_qty(a, lim, names[i], &l) != 1 || l.m == 0)
			return 0;
		int have = res_qty(a, req, names[i], &r);
		if (have < 0 || (have == 1 && !qty_eq(&l, &r)))
			return 0;
	}
	return 1;
}

/* ---- the sidecar's parts ---------------------------------------------- */

static struct json_object *field_ref(const char *path)
{
	return jb_obj("fieldRef", jb_obj("apiVersion", jb_str("v1"), "fieldPath", jb_str(path), JB_END), JB_END);
}

static struct json_object *env_value(const char *name, struct json_object *v)
{
	return jb_obj("name", jb_str(name), "value", v, JB_END);
}

static struct json_object *env_field(const char *name, const char *path)
{
	return jb_obj("name", jb_str(name), "valueFrom", field_ref(path), JB_END);
}

static struct json_object *mount(const char *vol, const char *path)
{
	return jb_obj("name", jb_str(vol), "mountPath", jb_str(path), "readOnly", json_object_new_boolean(1),
		    JB_END);
}

/* A downward-API item: the file holds the annotation's value, and is
 * empty while the annotation is absent (Multus' network-status arrives
 * after scheduling, through a status update; kubelet rewrites the file). */
static struct json_object *podinfo_item(const char *file, const char *annotation)
{
	char fp[128];
	snprintf(fp, sizeof(fp), "metadata.annotations['%s']", annotation);
	return jb_obj("path", jb_str(file), "fieldRef",
		    jb_obj("apiVersion", jb_str("v1"), "fieldPath", jb_str(fp), JB_END), JB_END);
}

/* The same for a label. */
static struct json_object *podinfo_label(const char *file, const char *label)
{
	char fp[128];
	snprintf(fp, sizeof(fp), "metadata.labels['%s']", label);
	return jb_obj("path", jb_str(file), "fieldRef",
		    jb_obj("apiVersion", jb_str("v1"), "fieldPath", jb_str(fp), JB_END), JB_END);
}

enum ud_source { UD_INLINE, UD_SECRET, UD_CONFIGMAP };

struct pod {
	uint32_t anns, spec, containers, inits, volumes; /* nodes of the review */
	unsigned expiration;
	struct str aud[MAX_AUDIENCES];
	char audir[MAX_AUDIENCES][256];
	size_t naud;
	enum ud_source ud;
	struct str secret, configmap, instance_id, bridge, vm_name, ssh_secret, password_key;
	int meta_data;       /* imds.kubevirt.io/meta-data is set (and valid) */
	struct str hop_limit; /* 1..64, as written */
	struct str session;   /* optional or required */
	struct str interfaces; /* imds.kubevirt.io/interfaces, checked */
	int add_vendor_data; /* the cluster-wide vendor-data goes in an annotation */
	int guaranteed;
	int pod_resources;
	struct ci_pod ci;     /* imds.kubevirt.io/cloud-init (cloudinit.c) */
	struct str ci_text;
	int ci_user, ci_net;  /* user-data / network-config from the volume (no annotation gives them) */ /* spec.resources: pod-level resources own the budget */
};

/* An annotation of the pod as a string; a value of another type is a
 * malformed review. */
static struct str ann(struct review *a, uint32_t anns, const char *key)
{
	return rv_str(a, anns, key, "request.object.metadata.annotations");
}

static void parse_audiences(struct review *a, struct pod *p, struct str v)
{
	char q[64];
	if (v.n == 0) {
		rv_fail(a, RV_DENY, "%s: empty (want comma-separated audiences)", ANN_TOKEN_AUDIENCE);
		return;
	}
	size_t i = 0;
	while (i <= v.n) {
		size_t j = i;
		while (j < v.n && v.p[j] != ',')
			j++;
		struct str e = {v.p + i, j - i};
		while (e.n && (e.p[0] == ' ' || e.p[0] == '\t')) {
			e.p++;
			e.n--;
		}
		while (e.n && (e.p[e.n - 1] == ' ' || e.p[e.n - 1] == '\t'))
			e.n--;
		if (e.n == 0) {
			rv_fail(a, RV_DENY, "%s: an empty entry in %s (want comma-separated audiences)",
			     ANN_TOKEN_AUDIENCE, rv_shown(v, q, sizeof(q)));
			return;
		}
		int dup = 0;
		for (size_t k = 0; k < p->naud; k++)
			dup |= p->aud[k].n == e.n && memcmp(p->aud[k].p, e.p, e.n) == 0;
		if (!dup) {
			if (p->naud == MAX_AUDIENCES) {
				rv_fail(a, RV_DENY, "%s: more than %d audiences", ANN_TOKEN_AUDIENCE,
				     MAX_AUDIENCES);
				return;
			}
			/* One directory per audience, named as the sidecar looks
			 * it up (audience_dir() keeps clear of `..data` and of the
			 * default `token`); a path component is at most NAME_MAX. */
			char *dir = p->audir[p->naud];
			int r = audience_dir(e.p, e.n, dir, sizeof(p->audir[0]));
			if (r == -ENOSPC) {
				rv_fail(a, RV_DENY, "%s: audience %s is too long", ANN_TOKEN_AUDIENCE,
				     rv_shown(e, q, sizeof(q)));
				return;
			}
			if (r < 0) {
				rv_fail(a, RV_DENY,
				     "%s: audience %s must be printable ASCII without spaces",
				     ANN_TOKEN_AUDIENCE, rv_shown(e, q, sizeof(q)));
				return;
			}
			p->aud[p->naud++] = e;
		}
		i = j + 1;
	}
}

static void pod_settings(struct review *a, struct pod *p, uint32_t labels)
{
	char q[64];
	struct str v;

	p->expiration = EXPIRATION_DEFAULT;
	v = ann(a, p->anns, ANN_TOKEN_EXPIRATION);
	if (v.p) {
		unsigned e = 0;
		int ok = v.n > 0 && v.n <= 6;
		for (size_t i = 0; ok && i < v.n; i++) {
			ok = v.p[i] >= '0' && v.p[i] <= '9';
			e = e * 10 + (unsigned)(v.p[i] - '0');
		}
		if (!ok || e < EXPIRATION_MIN || e > EXPIRATION_MAX) {
			rv_fail(a, RV_DENY, "%s: want whole seconds in %d..%d, got %s", ANN_TOKEN_EXPIRATION,
			     EXPIRATION_MIN, EXPIRATION_MAX, rv_shown(v, q, sizeof(q)));
			return;
		}
		p->expiration = e;
	}

	v = ann(a, p->anns, ANN_TOKEN_AUDIENCE);
	if (v.p)
		parse_audiences(a, p, v);

	p->secret = ann(a, p->anns, ANN_USER_DATA_SECRET);
	if (p->secret.p && !k8s_dns1123_subdomain(p->secret))
		rv_fail(a, RV_DENY, "%s: %s is not a Secret name (DNS-1123 subdomain)", ANN_USER_DATA_SECRET,
		     rv_shown(p->secret, q, sizeof(q)));
	p->configmap = ann(a, p->anns, ANN_USER_DATA_CONFIGMAP);
	if (p->configmap.p && !k8s_dns1123_subdomain(p->configmap))
		rv_fail(a, RV_DENY, "%s: %s is not a ConfigMap name (DNS-1123 subdomain)",
		     ANN_USER_DATA_CONFIGMAP, rv_shown(p->configmap, q, sizeof(q)));
	/* Secret > ConfigMap > the inline annotation. */
	p->ud = p->secret.p ? UD_SECRET : p->configmap.p ? UD_CONFIGMAP : UD_INLINE;

	ann_check_data(a, p->anns, "request.object.metadata.annotations");
	p->hop_limit = ann(a, p->anns, ANN_HOP_LIMIT);
	if (p->hop_limit.p) {
		unsigned h = 0;
		int ok = p->hop_limit.n > 0 && p->hop_limit.n <= 2 && p->hop_limit.p[0] != '0';
		for (size_t i = 0; ok && i < p->hop_limit.n; i++) {
			ok = p->hop_limit.p[i] >= '0' && p->hop_limit.p[i] <= '9';
			h = h * 10 + (unsigned)(p->hop_limit.p[i] - '0');
		}
		if (!ok || h < 1 || h > 64)
			rv_fail(a, RV_DENY, "%s: want an IP TTL in 1..64, got %s", ANN_HOP_LIMIT,
			     rv_shown(p->hop_limit, q, sizeof(q)));
	}
	p->session = ann(a, p->anns, ANN_SESSION);
	if (p->session.p && !str_is(p->session, "optional") && !str_is(p->session, "required"))
		rv_fail(a, RV_DENY, "%s: want optional or required, got %s", ANN_SESSION,
		     rv_shown(p->session, q, sizeof(q)));
	/* Written on the VMI by this webhook (vmnet.c), copied to the pod by
	 * KubeVirt; the sidecar gets it unchanged. */
	p->interfaces = ann(a, p->anns, ANN_INTERFACES);
	if (p->interfaces.p) {
		char e[160];
		if (ifc_check(p->interfaces.p, p->interfaces.n, e, sizeof(e)) < 0)
			rv_fail(a, RV_DENY, "%s: %s (the webhook writes it on the VMI; remove it from the pod)",
				ANN_INTERFACES, e);
	}
	p->ssh_secret = ann(a, p->anns, ANN_SSH_KEYS_SECRET);
	p->meta_data = ann(a, p->anns, ANN_META_DATA).p != NULL;
	p->password_key = ann(a, p->anns, ANN_PASSWORD_KEY); /* checked by ann_check_data */

	/* The VM's own cloud-init: the annotations win over the volume
	 * (docs/annotations.md, "Precedence"). */
	p->ci_text = ann(a, p->anns, ANN_CLOUD_INIT);
	if (!a->err)
		ci_pod_read(a, p->ci_text, &p->ci);
	p->ci_user = p->ci.source && p->ud == UD_INLINE && !ann(a, p->anns, ANN_USER_DATA).p;
	p->ci_net = p->ci.source && !ann(a, p->anns, ANN_NETWORK_CONFIG).p;

	p->instance_id = ann(a, p->anns, ANN_INSTANCE_ID);
	if (p->instance_id.p && !k8s_identity_ok(p->instance_id))
		rv_fail(a, RV_DENY, "%s: want UTF-8 of 1..253 bytes without control characters",
		     ANN_INSTANCE_ID);

	p->bridge = ann(a, p->anns, ANN_BRIDGE_NAME);
	if (p->bridge.p && !k8s_ifname_ok(p->bridge))
		rv_fail(a, RV_DENY,
		     "%s: %s is not an interface name (1..15 bytes, no '/', ':' or whitespace)",
		     ANN_BRIDGE_NAME, rv_shown(p->bridge, q, sizeof(q)));

	/* The VM's name: virt-controller sets kubevirt.io/domain on every
	 * launcher pod; vm.kubevirt.io/name is there even for a standalone VMI. */
	const char *src = ANN_DOMAIN;
	p->vm_name = ann(a, p->anns, ANN_DOMAIN);
	if (!p->vm_name.p) {
		src = LABEL_VM_NAME;
		p->vm_name = rv_str(a, labels, LABEL_VM_NAME, "request.object.metadata.labels");
	}
	if (!a->err && !p->vm_name.p)
		rv_fail(a, RV_DENY,
		     "cannot tell the VM's name: the pod has neither the annotation %s nor the label %s",
		     ANN_DOMAIN, LABEL_VM_NAME);
	else if (!a->err && !k8s_identity_ok(p->vm_name))
		rv_fail(a, RV_DENY, "%s: the VM's name must be UTF-8 of 1..253 bytes without control characters",
		     src);

	v = ann(a, p->anns, ANN_VENDOR_DATA);
	p->add_vendor_data = !v.p && a->cfg->vendor_data && a->cfg->vendor_data[0];
	/* The file is re-read when it changes, so check it where it is used:
	 * the API server would turn invalid UTF-8 into U+FFFD without a word. */
	if (p->add_vendor_data && !a->err) {
		size_t n = strlen(a->cfg->vendor_data);
		if (n > ADMISSION_VENDOR_DATA_MAX || !k8s_utf8_ok(a->cfg->vendor_data, n))
			rv_fail(a, RV_DENY,
			     "%s: the cluster-wide vendor-data (--vendor-data-file) is not valid UTF-8 of at most %u bytes",
			     ANN_VENDOR_DATA, ADMISSION_VENDOR_DATA_MAX);
	}
}

/* Kubernetes refuses a pod whose annotations (keys + values) pass 256 KiB;
 * say so here, naming the cause, rather than let virt-controller retry. */
static void check_annotation_size(struct review *a, struct pod *p)
{
	size_t total = 0;
	for (uint32_t k = jv_first(a->v, p->anns); k != JV_NONE; k = jv_next(a->v, p->anns, k)) {
		if (jv_type(a->v, k + 1) != JV_STRING) {
			rv_fail(a, RV_BAD, "request.object.metadata.annotations: values must be strings");
			return;
		}
		/* Decoded lengths, as the API server counts them. */
		total += a->v->nodes[k].n + a->v->nodes[k + 1].n;
	}
	total += strlen(ANN_INJECTED) + 4;
	if (p->add_vendor_data)
		total += strlen(ANN_VENDOR_DATA) + strlen(a->cfg->vendor_data);
	if (total > ANNOTATIONS_MAX)
		rv_fail(a, RV_DENY,
		     "%s: with the sidecar's annotations%s the pod's annotations would take %zu bytes, past Kubernetes' limit of %u",
		     p->add_vendor_data ? ANN_VENDOR_DATA : ANN_INJECTED,
		     p->add_vendor_data ? " and the cluster-wide vendor-data" : "", total,
		     ANNOTATIONS_MAX);
}

static struct json_object *token_volume(struct pod *p)
{
	struct json_object *sources = json_object_new_array();
	/* "token": the first audience, or the API server's when none is named. */
	struct json_object *dflt = jb_obj("path", jb_str("token"), "expirationSeconds",
					json_object_new_int64(p->expiration), JB_END);
	if (p->naud)
		dflt = jb_set(dflt, "audience", jb_strn(p->aud[0]));
	sources = jb_push(sources, jb_obj("serviceAccountToken", dflt, JB_END));
	for (size_t i = 0; i < p->naud; i++) {
		char path[300];
		snprintf(path, sizeof(path), "%s/token", p->audir[i]);
		sources = jb_push(sources,
				jb_obj("serviceAccountToken",
				     jb_obj("audience", jb_strn(p->aud[i]), "expirationSeconds",
					  json_object_new_int64(p->expiration), "path", jb_str(path), JB_END),
				     JB_END));
	}
	return jb_obj("name", jb_str(VOL_TOKEN), "projected", jb_obj("sources", sources, JB_END), JB_END);
}

static struct json_object *podinfo_volume(struct pod *p)
{
	struct json_object *items = json_object_new_array();
	if (p->ud == UD_INLINE)
		items = jb_push(items, podinfo_item("user-data", ANN_USER_DATA));
	items = jb_push(items, podinfo_item("vendor-data", ANN_VENDOR_DATA));
	items = jb_push(items, podinfo_item("network-config", ANN_NETWORK_CONFIG));
	items = jb_push(items, podinfo_item("network-status", ANN_NETWORK_STATUS));
	if (p->meta_data)
		items = jb_push(items, podinfo_item("meta-data", ANN_META_DATA));
	/* The lifecycle events' sources (src/sidecar/lifecycle.h): kubelet
	 * rewrites the files when KubeVirt changes the pod's metadata. */
	items = jb_push(items, podinfo_item("eviction-in-progress", ANN_EVICTION_IN_PROGRESS));
	items = jb_push(items, podinfo_item("eviction-strategy", ANN_EVICTION_STRATEGY));
	items = jb_push(items, podinfo_label("migration-job-uid", LABEL_MIGRATION_JOB));
	items = jb_push(items, podinfo_item("migration-target-ready", ANN_MIGRATION_TARGET_READY));
	items = jb_push(items, podinfo_item("maintenance", ANN_MAINTENANCE));
	return jb_obj("name", jb_str(VOL_PODINFO), "downwardAPI", jb_obj("items", items, JB_END), JB_END);
}

static struct json_object *user_data_volume(struct pod *p)
{
	/* Not optional: a VM whose named user-data is missing should not boot
	 * without it; the pod waits and its events say why. */
	if (p->ud == UD_SECRET)
		/* The whole Secret: the key is userdata or user-data and we
		 * cannot look inside; the sidecar tries both. */
		return jb_obj("name", jb_str(VOL_USER_DATA), "secret",
			    jb_obj("secretName", jb_strn(p->secret), JB_END), JB_END);
	return jb_obj("name", jb_str(VOL_USER_DATA), "configMap",
		    jb_obj("name", jb_strn(p->configmap), "items",
			 jb_arr(1, jb_obj("key", jb_str("user-data"), "path", jb_str("user-data"), JB_END)), JB_END),
		    JB_END);
}

static struct json_object *secret_volume(const char *vol, struct str name)
{
	return jb_obj("name", jb_str(vol), "secret", jb_obj("secretName", jb_strn(name), JB_END), JB_END);
}

/* The whole Secret, read-only: each key a file of public keys. */
static struct json_object *ssh_keys_volume(struct pod *p)
{
	return jb_obj("name", jb_str(VOL_SSH_KEYS), "secret",
		    jb_obj("secretName", jb_strn(p->ssh_secret), JB_END), JB_END);
}

/* What outlives a restart of the sidecar (the posted password): the pod's
 * own disk, a few bytes of it. */
static struct json_object *state_volume(void)
{
	return jb_obj("name", jb_str(VOL_STATE), "emptyDir", jb_obj("sizeLimit", jb_str("1Mi"), JB_END), JB_END);
}

/* Disk-backed, not medium: Memory: a tmpfs would be a mount of its own that
 * the node agent, reading the kubelet's pod folder through a hostPath,
 * only sees with mount propagation (docs/design.md, "The protocol"). */
static struct json_object *node_volume(void)
{
	return jb_obj("name", jb_str(VOL_NODE), "emptyDir", jb_obj("sizeLimit", jb_str("1Mi"), JB_END), JB_END);
}

/* The sidecar's securityContext.  pod: root with exactly the three
 * capabilities the network half needs (docs/sidecar.md): Kubernetes has no
 * ambient capabilities, so a non-root user could not use them; container
 * settings override the launcher pod's runAsNonRoot.  Pod Security:
 * privileged only.  agent: the launcher's own user with nothing at all
 * (the agent binds port 80 and passes the listeners), which Pod Security's
 * restricted profile accepts (the seccomp profile set here, so a pod that
 * sets none at pod level does not lose restricted because of us). */
static struct json_object *security_context(struct review *a)
{
	if (!a->cfg->agent_network)
		return jb_obj("allowPrivilegeEscalation", json_object_new_boolean(0), "capabilities",
			      jb_obj("add", jb_arr(3, jb_str("NET_ADMIN"), jb_str("NET_RAW"), jb_str("NET_BIND_SERVICE")),
				     "drop", jb_arr(1, jb_str("ALL")), JB_END),
			      "privileged", json_object_new_boolean(0), "readOnlyRootFilesystem",
			      json_object_new_boolean(1), "runAsNonRoot", json_object_new_boolean(0), "runAsUser",
			      json_object_new_int64(0), JB_END);
	return jb_obj("allowPrivilegeEscalation", json_object_new_boolean(0), "capabilities",
		      jb_obj("drop", jb_arr(1, jb_str("ALL")), JB_END), "privileged", json_object_new_boolean(0),
		      "readOnlyRootFilesystem", json_object_new_boolean(1), "runAsGroup",
		      json_object_new_int64(LAUNCHER_UID), "runAsNonRoot", json_object_new_boolean(1), "runAsUser",
		      json_object_new_int64(LAUNCHER_UID), "seccompProfile",
		      jb_obj("type", jb_str("RuntimeDefault"), JB_END), JB_END);
}

static struct json_object *resources(struct review *a, struct pod *p)
{
	/* Guaranteed stays Guaranteed only if every container has limits
	 * equal to requests, ours too (the CPU manager pins only then). */
	if (p->guaranteed)
		return jb_obj("requests",
			    jb_obj("cpu", jb_str(a->cfg->cpu), "memory", jb_str(a->cfg->memory), JB_END), "limits",
			    jb_obj("cpu", jb_str(a->cfg->cpu), "memory", jb_str(a->cfg->memory), JB_END), JB_END);
	return jb_obj("requests", jb_obj("cpu", jb_str(a->cfg->cpu), "memory", jb_str(a->cfg->memory), JB_END), "limits",
		    jb_obj("memory", jb_str(a->cfg->memory_limit), JB_END), JB_END);
}

static struct json_object *sidecar(struct review *a, struct pod *p)
{
	const char *udfile = p->ud == UD_SECRET      ? SECRET_DIR "/userdata:" SECRET_DIR "/user-data"
			     : p->ud == UD_CONFIGMAP ? CONFIGMAP_DIR "/user-data"
						     : PODINFO_DIR "/user-data";
	struct json_object *env = jb_arr(
		5, env_field("IMDS_NAMESPACE", "metadata.namespace"),
		/* At CREATE the pod has generateName and no name; the
		 * fieldRef resolves when the container starts. */
		env_field("IMDS_POD_NAME", "metadata.name"),
		env_field("IMDS_SA_NAME", "spec.serviceAccountName"),
		env_value("IMDS_VM_NAME", jb_strn(p->vm_name)),
		env_value("IMDS_TOKEN_PATH", jb_str(TOKEN_DIR "/token")));
	/* Without them the sidecar serves the cloud-init volume's. */
	if (!p->ci_user)
		env = jb_push(env, env_value("IMDS_USER_DATA_FILE", jb_str(udfile)));
	env = jb_push(env, env_value("IMDS_VENDOR_DATA_FILE", jb_str(PODINFO_DIR "/vendor-data")));
	if (!p->ci_net)
		env = jb_push(env, env_value("IMDS_NETWORK_CONFIG_FILE", jb_str(PODINFO_DIR "/network-config")));
	env = jb_push(env, env_value("IMDS_NETWORK_STATUS_FILE", jb_str(PODINFO_DIR "/network-status")));
	if (p->ci.present)
		env = jb_push(env, env_value("IMDS_CLOUD_INIT", jb_strn(p->ci_text)));
	if (p->ci.source)
		env = jb_push(env, env_value("IMDS_CLOUD_INIT_DIR", jb_str(CLOUD_INIT_DIR)));
	if (p->instance_id.p)
		env = jb_push(env, env_value("IMDS_INSTANCE_ID", jb_strn(p->instance_id)));
	if (p->bridge.p)
		env = jb_push(env, env_value("IMDS_BRIDGE_NAME", jb_strn(p->bridge)));
	if (p->hop_limit.p)
		env = jb_push(env, env_value("IMDS_HOP_LIMIT", jb_strn(p->hop_limit)));
	if (p->session.p)
		env = jb_push(env, env_value("IMDS_SESSION", jb_strn(p->session)));
	if (p->interfaces.p)
		env = jb_push(env, env_value("IMDS_INTERFACES", jb_strn(p->interfaces)));
	if (p->ssh_secret.p)
		env = jb_push(env, env_value("IMDS_SSH_KEYS_DIR", jb_str(SSH_KEYS_DIR)));
	if (p->password_key.p)
		env = jb_push(env, env_value("IMDS_PASSWORD_KEY", jb_strn(p->password_key)));
	if (p->meta_data)
		env = jb_push(env, env_value("IMDS_META_DATA_FILE", jb_str(PODINFO_DIR "/meta-data")));
	env = jb_push(env, env_value("IMDS_STATE_DIR", jb_str(STATE_DIR)));
	env = jb_push(env, env_value("IMDS_LIFECYCLE_DIR", jb_str(PODINFO_DIR)));
	/* Placement: the node's topology labels, which the API server copies
	 * onto the pod at binding (PodTopologyLabels admission, feature gate
	 * PodTopologyLabelsAdmission: alpha 1.33, on by default from 1.35;
	 * kubernetes plugin/pkg/admission/podtopologylabels/admission.go:44).
	 * Bound before the kubelet starts a container; an absent label
	 * resolves to "", which the sidecar treats as unset (not served). */
	env = jb_push(env, env_field("IMDS_AVAILABILITY_ZONE", "metadata.labels['" LABEL_TOPO_ZONE "']"));
	env = jb_push(env, env_field("IMDS_REGION", "metadata.labels['" LABEL_TOPO_REGION "']"));

	struct json_object *mounts =
		jb_arr(2, mount(VOL_TOKEN, TOKEN_DIR), mount(VOL_PODINFO, PODINFO_DIR));
	if (p->ud != UD_INLINE)
		mounts = jb_push(mounts,
			       mount(VOL_USER_DATA, p->ud == UD_SECRET ? SECRET_DIR : CONFIGMAP_DIR));
	if (p->ssh_secret.p)
		mounts = jb_push(mounts, mount(VOL_SSH_KEYS, SSH_KEYS_DIR));
	if (p->ci_user && p->ci.user_secret.p)
		mounts = jb_push(mounts, mount(VOL_CI_USER, CLOUD_INIT_DIR "/user-data"));
	if (p->ci_net && p->ci.net_secret.p)
		mounts = jb_push(mounts, mount(VOL_CI_NET, CLOUD_INIT_DIR "/network-data"));
	for (size_t i = 0; i < p->ci.nssh; i++) {
		char v[48], d[64];
		snprintf(v, sizeof(v), VOL_CI_SSH "%zu", i);
		snprintf(d, sizeof(d), CLOUD_INIT_DIR "/ssh/%zu", i);
		mounts = jb_push(mounts, mount(v, d));
	}
	/* the writable mounts (the root filesystem is read-only) */
	mounts = jb_push(mounts, jb_obj("name", jb_str(VOL_STATE), "mountPath", jb_str(STATE_DIR), JB_END));
	if (a->cfg->agent_network) {
		env = jb_push(env, env_value("IMDS_NET_MODE", jb_str("agent")));
		mounts = jb_push(mounts, jb_obj("name", jb_str(VOL_NODE), "mountPath", jb_str(NODE_DIR), JB_END));
	}

	struct json_object *c = jb_obj("name", jb_str(CONTAINER_NAME), "image", jb_str(a->cfg->imds_image),
				     "command", jb_arr(2, jb_str("/imds-server"), jb_str("run")), "env", env,
				     JB_END);
	/* With pod-level resources (spec.resources) the containers share the
	 * pod's budget; requests of ours could exceed what is left. */
	if (!p->pod_resources)
		c = jb_set(c, "resources", resources(a, p));
	if (a->cfg->native_sidecar)
		c = jb_set(c, "restartPolicy", jb_str("Always"));
	/* A restartable init container's startupProbe holds every later init
	 * container and all the main containers until it passes: compute (and
	 * with it the VM's taps) starts only once the agent's guard is in
	 * place.  The image is scratch: the probe is the binary itself. */
	if (a->cfg->native_sidecar && a->cfg->agent_network)
		c = jb_set(c, "startupProbe",
			   jb_obj("exec", jb_obj("command", jb_arr(2, jb_str("/imds-server"), jb_str("probe")), JB_END),
				  "periodSeconds", json_object_new_int64(PROBE_PERIOD_S), "failureThreshold",
				  json_object_new_int64(PROBE_FAILURES), "timeoutSeconds",
				  json_object_new_int64(PROBE_TIMEOUT_S), JB_END));
	c = jb_set(c, "securityContext", security_context(a));
	c = jb_set(c, "volumeMounts", mounts);
	return c;
}

/* --sidecar-mode container with the agent: main containers start in spec
 * order without waiting for one another's probes, so a classic init
 * container holds them instead (init containers all finish before any main
 * container starts): the sidecar's own settings, `imds-server await`. */
static struct json_object *await_container(struct json_object *c)
{
	struct json_object *w = NULL;
	if (!c || json_object_deep_copy(c, &w, NULL) < 0)
		return NULL;
	w = jb_set(w, "name", jb_str(AWAIT_NAME));
	return jb_set(w, "command", jb_arr(2, jb_str("/imds-server"), jb_str("await")));
}

/* Every element an object with a string name; 1 when one is named name. */
static int has_named(struct review *a, uint32_t arr, const char *name, const char *where)
{
	int found = 0;
	size_t i = 0;
	for (uint32_t e = jv_first(a->v, arr); e != JV_NONE && !a->err; e = jv_next(a->v, arr, e), i++) {
		if (jv_type(a->v, e) != JV_OBJECT) {
			rv_fail(a, RV_BAD, "%s[%zu]: must be an object", where, i);
			break;
		}
		struct str s = rv_str(a, e, "name", where);
		found |= str_is(s, name);
	}
	return found;
}

static int all_guaranteed(struct review *a, uint32_t arr)
{
	for (uint32_t e = jv_first(a->v, arr); e != JV_NONE; e = jv_next(a->v, arr, e))
		if (!container_guaranteed(a, e))
			return 0;
	return 1;
}

static void pod_patch(struct review *a, struct pod *p)
{
	/* Opted in, so metadata.annotations exists: add keys to it. */
	if (rv_add(a, "/metadata/annotations/imds.kubevirt.io~1injected", jb_str("true")) < 0)
		return;
	if (p->add_vendor_data &&
	    rv_add(a, "/metadata/annotations/imds.kubevirt.io~1vendor-data", jb_str(a->cfg->vendor_data)) < 0)
		return;

	struct json_object *vols[6 + 2 + CI_MAX_SSH];
	size_t nv = 0;
	vols[nv++] = token_volume(p);
	vols[nv++] = podinfo_volume(p);
	if (p->ud != UD_INLINE)
		vols[nv++] = user_data_volume(p);
	if (p->ssh_secret.p)
		vols[nv++] = ssh_keys_volume(p);
	/* The whole Secrets, as KubeVirt's compute container mounts the
	 * access credentials (rendervolumes.go:350-377): the key is userdata
	 * or userData (networkdata or networkData), and a whole-Secret volume
	 * follows the Secret's changes (a subPath one would not). */
	if (p->ci_user && p->ci.user_secret.p)
		vols[nv++] = secret_volume(VOL_CI_USER, p->ci.user_secret);
	if (p->ci_net && p->ci.net_secret.p)
		vols[nv++] = secret_volume(VOL_CI_NET, p->ci.net_secret);
	for (size_t i = 0; i < p->ci.nssh; i++) {
		char v[48];
		snprintf(v, sizeof(v), VOL_CI_SSH "%zu", i);
		vols[nv++] = secret_volume(v, p->ci.ssh[i]);
	}
	vols[nv++] = state_volume();
	if (a->cfg->agent_network)
		vols[nv++] = node_volume();
	if (p->volumes == JV_NONE) {
		struct json_object *arr = json_object_new_array();
		for (size_t i = 0; i < nv; i++)
			arr = jb_push(arr, vols[i]);
		if (rv_add(a, "/spec/volumes", arr) < 0)
			return;
	} else {
		for (size_t i = 0; i < nv; i++)
			if (rv_add(a, "/spec/volumes/-", vols[i]) < 0) {
				while (++i < nv)
					json_object_put(vols[i]);
				return;
			}
	}

	struct json_object *c = sidecar(a, p);
	/* Appended, never inserted: compute stays containers[0] (KubeVirt and
	 * kubectl rely on it), and a native sidecar starts after the init
	 * containers before it, which are short. */
	if (!a->cfg->native_sidecar && a->cfg->agent_network) {
		struct json_object *w = await_container(c);
		if (rv_add(a, p->inits != JV_NONE ? "/spec/initContainers/-" : "/spec/initContainers",
			   p->inits != JV_NONE ? w : jb_arr(1, w)) < 0) {
			json_object_put(c);
			return;
		}
	}
	if (!a->cfg->native_sidecar)
		rv_add(a, "/spec/containers/-", c);
	else if (p->inits != JV_NONE)
		rv_add(a, "/spec/initContainers/-", c);
	else
		rv_add(a, "/spec/initContainers", jb_arr(1, c));
}

void pod_admit(struct review *a, uint32_t req, struct str op)
{
	const char *W = "request.object";
	if (!str_is(op, "CREATE")) {
		/* Pods cannot gain containers or volumes on UPDATE; a patch
		 * would make the API server refuse virt-controller's syncs. */
		rv_reason(a, "%.*s is never patched", (int)op.n, op.p);
		return;
	}
	uint32_t obj = rv_member(a, req, "object", JV_OBJECT, "request");
	if (obj == JV_NONE && !a->err)
		rv_fail(a, RV_BAD, "request.object: missing");
	uint32_t meta = rv_member(a, obj, "metadata", JV_OBJECT, W);
	uint32_t labels = rv_member(a, meta, "labels", JV_OBJECT, "request.object.metadata");
	struct pod p = {.anns = JV_NONE, .spec = JV_NONE, .containers = JV_NONE, .inits = JV_NONE,
			.volumes = JV_NONE};
	p.anns = rv_member(a, meta, "annotations", JV_OBJECT, "request.object.metadata");
	struct str launcher = rv_str(a, labels, LABEL_LAUNCHER, "request.object.metadata.labels");
	/* The opt-in is read from the parsed map, never from the raw text:
	 * kubectl's last-applied-configuration holds the same words in a string. */
	struct str enabled = ann(a, p.anns, ANN_ENABLED);
	struct str injected = ann(a, p.anns, ANN_INJECTED);
	if (a->err)
		return;
	if (!str_is(launcher, "virt-launcher")) {
		rv_reason(a, "not a virt-launcher pod");
		return;
	}
	if (!str_is(enabled, "true")) {
		rv_reason(a, "not opted in");
		return;
	}
	if (str_is(injected, "true")) {
		rv_reason(a, "already injected");
		return;
	}
	p.spec = rv_member(a, obj, "spec", JV_OBJECT, W);
	if (p.spec == JV_NONE && !a->err)
		rv_fail(a, RV_BAD, "request.object.spec: missing");
	p.containers = rv_member(a, p.spec, "containers", JV_ARRAY, "request.object.spec");
	if (p.containers == JV_NONE && !a->err)
		rv_fail(a, RV_BAD, "request.object.spec.containers: missing");
	p.inits = rv_member(a, p.spec, "initContainers", JV_ARRAY, "request.object.spec");
	p.volumes = rv_member(a, p.spec, "volumes", JV_ARRAY, "request.object.spec");
	if (a->err)
		return;
	int c1 = has_named(a, p.containers, CONTAINER_NAME, "request.object.spec.containers");
	int c2 = has_named(a, p.inits, CONTAINER_NAME, "request.object.spec.initContainers");
	if (a->err)
		return;
	if (c1 || c2) {
		rv_reason(a, "already has an %s container", CONTAINER_NAME);
		return;
	}
	if (a->cfg->agent_network && !a->cfg->native_sidecar &&
	    (has_named(a, p.containers, AWAIT_NAME, "request.object.spec.containers") ||
	     has_named(a, p.inits, AWAIT_NAME, "request.object.spec.initContainers")) &&
	    !a->err)
		rv_fail(a, RV_DENY, "the pod already has a container named %s, which %s needs", AWAIT_NAME,
			CONTAINER_NAME);
	static const char *const ours[] = {VOL_TOKEN, VOL_PODINFO, VOL_USER_DATA, VOL_NODE};
	for (size_t i = 0; i < 3 + (a->cfg->agent_network ? 1u : 0u) && !a->err; i++)
		if (has_named(a, p.volumes, ours[i], "request.object.spec.volumes") && !a->err)
			rv_fail(a, RV_DENY, "the pod already has a volume named %s, which %s needs", ours[i],
			     CONTAINER_NAME);
	if (a->err)
		return;

	pod_settings(a, &p, labels);
	if (!a->err)
		check_annotation_size(a, &p);
	if (a->err)
		goto done;

	uint32_t pres = rv_member(a, p.spec, "resources", JV_OBJECT, "request.object.spec");
	p.pod_resources = pres != JV_NONE && a->v->nodes[pres].n > 0;
	p.guaranteed = all_guaranteed(a, p.containers) && all_guaranteed(a, p.inits);
	if (a->err)
		goto done;

	pod_patch(a, &p);
	if (a->err)
		goto done;
	rv_reason(a, "injected %s (%s%s%s%s%s%s)", CONTAINER_NAME,
	       a->cfg->native_sidecar ? "native sidecar" : "container",
	       a->cfg->agent_network ? ", agent network" : "",
	       p.pod_resources ? ", pod-level resources" : p.guaranteed ? ", Guaranteed" : "",
	       p.ud == UD_SECRET ? ", user-data Secret" : p.ud == UD_CONFIGMAP ? ", user-data ConfigMap" : "",
	       p.add_vendor_data ? ", cluster vendor-data" : "",
	       p.ci.source ? ", the VM's cloud-init volume" : "");
done:
	ci_pod_free(&p.ci);
}
