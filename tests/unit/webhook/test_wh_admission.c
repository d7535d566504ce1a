/* admission + patch: the webhook's decisions over fixtures that look like
 * what KubeVirt 1.8/1.9 and the API server send (tests/fixtures/webhook),
 * every patch applied (a small RFC 6902 add/replace/remove here; the integration
 * suite uses python3-jsonpatch) and the result read back field by field;
 * a second application changes nothing; malformed bodies (every truncated
 * prefix, deep nesting, wrong types, 3 MiB + 1) get an answer.
 * Fixtures are read from $IMDS_FIXTURES or tests/fixtures/webhook. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admission.h"
#include "discovery.h"
#include "ifaces.h"
#include "patch.h"
#include "sbuf.h"

#define SERIAL DISC_SERIAL
#define IMAGE "registry.example/imds-server:v1"

/* One for the whole run, reused review after review as the webhook does. */
static struct admission adm = ADMISSION_INIT;
static const struct admission_config NATIVE = {.imds_image = IMAGE, .native_sidecar = 1};
static const struct admission_config PLAIN = {.imds_image = IMAGE, .native_sidecar = 0};
/* --network-mode agent, in each sidecar mode */
static const struct admission_config AGENT_NATIVE = {.imds_image = IMAGE, .native_sidecar = 1, .agent_network = 1};
static const struct admission_config AGENT_PLAIN = {.imds_image = IMAGE, .native_sidecar = 0, .agent_network = 1};

/* ---- fixtures and JSON helpers ----------------------------------------- */

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = (size_t)n;
	}
	return buf;
}

static char *fixture_text(const char *name, size_t *len)
{
	const char *dir = getenv("IMDS_FIXTURES") ? getenv("IMDS_FIXTURES") : "tests/fixtures/webhook";
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	char *s = read_all(path, len);
	if (!s)
		fail_msg("cannot read fixture %s (run from the repository root or set IMDS_FIXTURES)", path);
	return s;
}

static struct json_object *fixture(const char *name)
{
	size_t n;
	char *s = fixture_text(name, &n);
	struct json_object *o = json_tokener_parse(s);
	free(s);
	assert_non_null(o);
	return o;
}

/* o[k1][k2]...; a key of digits indexes an array. */
static struct json_object *at(struct json_object *o, ...)
{
	va_list ap;
	va_start(ap, o);
	for (const char *k; o && (k = va_arg(ap, const char *));) {
		if (json_object_is_type(o, json_type_array)) {
			size_t i = strtoul(k, NULL, 10);
			o = i < json_object_array_length(o) ? json_object_array_get_idx(o, i) : NULL;
		} else if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &o)) {
			o = NULL;
		}
	}
	va_end(ap);
	return o;
}

static struct json_object *dup(struct json_object *o)
{
	struct json_object *c = NULL;
	if (o)
		assert_int_equal(json_object_deep_copy(o, &c, NULL), 0);
	return c;
}

static const char *sat(struct json_object *o)
{
	return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

static void set(struct json_object *parent, const char *key, struct json_object *v)
{
	assert_non_null(parent);
	json_object_object_add(parent, key, v); /* takes v */
}

static void set_ann(struct json_object *review, const char *key, const char *value)
{
	struct json_object *meta = at(review, "request", "object", "metadata", NULL);
	struct json_object *anns = at(meta, "annotations", NULL);
	if (!anns) {
		anns = json_object_new_object();
		set(meta, "annotations", anns);
	}
	if (value)
		set(anns, key, json_object_new_string(value));
	else
		json_object_object_del(anns, key);
}

/* ---- running the webhook ----------------------------------------------- */

struct answer {
	struct admission_result res;
	struct json_object *resp; /* the parsed body */
	struct json_object *patch; /* decoded JSON Patch, or NULL */
	struct json_object *object; /* request.object with the patch applied */
};

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Strict standard base64 with padding. */
static char *b64decode(const char *s, size_t *outlen)
{
	size_t n = strlen(s);
	assert_int_equal(n % 4, 0);
	char *out = malloc(n / 4 * 3 + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		for (int k = 0; k < 4; k++) {
			v[k] = s[i + k] == '=' ? 0 : b64val(s[i + k]);
			assert_true(v[k] >= 0);
			if (s[i + k] == '=')
				assert_true(i + 4 == n && k >= 2);
		}
		unsigned w = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
		out[o++] = (char)(w >> 16);
		if (s[i + 2] != '=')
			out[o++] = (char)(w >> 8);
		if (s[i + 3] != '=')
			out[o++] = (char)w;
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

/* RFC 6902 add and replace, enough for our patches: the parent must
 * exist (so a patch that forgets to create /spec/volumes fails here). */
static int apply_op(struct json_object *doc, struct json_object *op)
{
	const char *kind = sat(at(op, "op", NULL)), *path = sat(at(op, "path", NULL));
	struct json_object *value = at(op, "value", NULL);
	if (!kind || !path || path[0] != '/')
		return -1;
	int is_add = strcmp(kind, "add") == 0, is_remove = strcmp(kind, "remove") == 0;
	if (!is_add && !is_remove && strcmp(kind, "replace") != 0)
		return -1;
	if (is_remove != (value == NULL))
		return -1;
	struct json_object *cur = doc;
	const char *p = path;
	char tok[1024];
	for (;;) {
		p++;
		size_t n = 0;
		for (; *p && *p != '/'; p++) {
			if (*p == '~') {
				p++;
				if (*p != '0' && *p != '1')
					return -1;
				tok[n++] = *p == '0' ? '~' : '/';
			} else {
				tok[n++] = *p;
			}
			if (n >= sizeof(tok) - 1)
				return -1;
		}
		tok[n] = '\0';
		if (*p == '/') {
			struct json_object *next = at(cur, tok, NULL);
			if (!next)
				return -1;
			cur = next;
			continue;
		}
		if (is_remove) { /* of an object member, which must exist */
			if (!json_object_is_type(cur, json_type_object) || !json_object_object_get_ex(cur, tok, NULL))
				return -1;
			json_object_object_del(cur, tok);
			return 0;
		}
		struct json_object *v = dup(value);
		if (json_object_is_type(cur, json_type_object)) {
			if (!is_add && !json_object_object_get_ex(cur, tok, NULL))
				return -1;
			json_object_object_add(cur, tok, v);
			return 0;
		}
		if (!json_object_is_type(cur, json_type_array))
			return -1;
		size_t len = json_object_array_length(cur);
		if (is_add && (strcmp(tok, "-") == 0 || strtoul(tok, NULL, 10) == len)) {
			json_object_array_add(cur, v);
			return 0;
		}
		size_t i = strtoul(tok, NULL, 10);
		if (!is_add && i < len) {
			json_object_array_put_idx(cur, i, v);
			return 0;
		}
		json_object_put(v);
		return -1; /* insertion in the middle: never produced by the webhook */
	}
}

/* The body by its length (it is NUL-terminated too, but that is not the contract). */
static struct json_object *parse_body(const struct admission_result *res)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = json_tokener_parse_ex(tok, res->body, (int)res->body_len);
	assert_int_equal(json_tokener_get_error(tok), json_tokener_success);
	assert_int_equal(json_tokener_get_parse_end(tok), res->body_len);
	json_tokener_free(tok);
	assert_non_null(o);
	return o;
}

static void run(const struct admission_config *cfg, const char *body, size_t len, struct json_object *review,
		struct answer *a)
{
	memset(a, 0, sizeof(*a));
	admission_handle(&adm, cfg, body, len, &a->res);
	assert_non_null(a->res.body);
	a->resp = parse_body(&a->res);
	if (a->res.http_status != 200) {
		assert_int_equal(a->res.outcome, ADM_INVALID);
		assert_non_null(sat(at(a->resp, "error", NULL)));
		assert_non_null(sat(at(a->resp, "message", NULL)));
		return;
	}
	assert_string_equal(sat(at(a->resp, "apiVersion", NULL)), "admission.k8s.io/v1");
	assert_string_equal(sat(at(a->resp, "kind", NULL)), "AdmissionReview");
	if (review)
		assert_string_equal(sat(at(a->resp, "response", "uid", NULL)),
				    sat(at(review, "request", "uid", NULL)));
	const char *p64 = sat(at(a->resp, "response", "patch", NULL));
	struct json_object *allowed = at(a->resp, "response", "allowed", NULL);
	assert_non_null(allowed);
	if (!p64) {
		assert_null(at(a->resp, "response", "patchType", NULL));
		assert_int_equal(a->res.outcome, json_object_get_boolean(allowed) ? ADM_SKIPPED : ADM_DENIED);
		return;
	}
	assert_int_equal(a->res.outcome, ADM_PATCHED);
	assert_true(json_object_get_boolean(allowed));
	assert_string_equal(sat(at(a->resp, "response", "patchType", NULL)), "JSONPatch");
	size_t plen;
	char *ptext = b64decode(p64, &plen);
	a->patch = json_tokener_parse(ptext);
	free(ptext);
	assert_non_null(a->patch);
	assert_true(json_object_is_type(a->patch, json_type_array));
	assert_true(json_object_array_length(a->patch) > 0);
	if (review) {
		a->object = dup(at(review, "request", "object", NULL));
		for (size_t i = 0; i < json_object_array_length(a->patch); i++)
			assert_int_equal(apply_op(a->object, json_object_array_get_idx(a->patch, i)), 0);
	}
}

static void answer_free(struct answer *a)
{
	admission_result_free(&a->res);
	json_object_put(a->resp);
	json_object_put(a->patch);
	json_object_put(a->object);
}

static void run_review(const struct admission_config *cfg, struct json_object *review, struct answer *a)
{
	size_t n;
	const char *s = json_object_to_json_string_length(review, JSON_C_TO_STRING_PLAIN, &n);
	run(cfg, s, n, review, a);
}

/* The patched object through the webhook again: allowed, no patch. */
static void assert_second_pass_clean(const struct admission_config *cfg, struct json_object *review,
				     struct json_object *patched)
{
	struct json_object *again = dup(review);
	set(at(again, "request", NULL), "object", dup(patched));
	struct answer b;
	run_review(cfg, again, &b);
	assert_int_equal(b.res.http_status, 200);
	if (b.res.outcome != ADM_SKIPPED)
		fail_msg("second application: %s (%s): %s", admission_outcome_name(b.res.outcome), b.res.reason,
			 b.patch ? json_object_to_json_string(b.patch) : "");
	assert_true(json_object_get_boolean(at(b.resp, "response", "allowed", NULL)));
	answer_free(&b);
	json_object_put(again);
}

/* The sidecar in the patched pod, and where it is. */
static struct json_object *sidecar_of(struct json_object *pod, const char **list, size_t *idx)
{
	static const char *const lists[] = {"containers", "initContainers"};
	struct json_object *found = NULL;
	int count = 0;
	for (int l = 0; l < 2; l++) {
		struct json_object *arr = at(pod, "spec", lists[l], NULL);
		for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
			const char *name = sat(at(json_object_array_get_idx(arr, i), "name", NULL));
			if (name && strcmp(name, "imds-server") == 0) {
				found = json_object_array_get_idx(arr, i);
				count++;
				if (list)
					*list = lists[l];
				if (idx)
					*idx = i;
			}
		}
	}
	assert_int_equal(count, 1);
	return found;
}

static struct json_object *env_of(struct json_object *c, const char *name)
{
	struct json_object *env = at(c, "env", NULL);
	struct json_object *found = NULL;
	for (size_t i = 0; env && i < json_object_array_length(env); i++) {
		struct json_object *e = json_object_array_get_idx(env, i);
		if (strcmp(sat(at(e, "name", NULL)), name) == 0) {
			assert_null(found); /* once */
			found = e;
		}
	}
	return found;
}

static const char *env_value(struct json_object *c, const char *name)
{
	return sat(at(env_of(c, name), "value", NULL));
}

static struct json_object *volume_of(struct json_object *pod, const char *name)
{
	struct json_object *vols = at(pod, "spec", "volumes", NULL), *found = NULL;
	for (size_t i = 0; vols && i < json_object_array_length(vols); i++)
		if (strcmp(sat(at(json_object_array_get_idx(vols, i), "name", NULL)), name) == 0) {
			assert_null(found);
			found = json_object_array_get_idx(vols, i);
		}
	return found;
}

static const char *mount_path(struct json_object *c, const char *vol)
{
	struct json_object *m = at(c, "volumeMounts", NULL);
	for (size_t i = 0; m && i < json_object_array_length(m); i++) {
		struct json_object *e = json_object_array_get_idx(m, i);
		if (strcmp(sat(at(e, "name", NULL)), vol) == 0) {
			/* read-only, but for the state folder and the agent's socket folder */
			assert_int_equal(json_object_get_boolean(at(e, "readOnly", NULL)),
					 strcmp(vol, "imds-state") != 0 && strcmp(vol, "imds-node") != 0);
			return sat(at(e, "mountPath", NULL));
		}
	}
	return NULL;
}

static int json_eq(struct json_object *a, struct json_object *b)
{
	return json_object_equal(a, b);
}

static int has_op_path(struct json_object *patch, const char *op, const char *path)
{
	for (size_t i = 0; i < json_object_array_length(patch); i++) {
		struct json_object *e = json_object_array_get_idx(patch, i);
		if (strcmp(sat(at(e, "op", NULL)), op) == 0 && strcmp(sat(at(e, "path", NULL)), path) == 0)
			return 1;
	}
	return 0;
}

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

/* ---- VirtualMachines and VirtualMachineInstances ------------------------ */

static const char *vm_serial(struct json_object *o, int vm)
{
	return vm ? sat(at(o, "spec", "template", "spec", "domain", "firmware", "serial", NULL))
		  : sat(at(o, "spec", "domain", "firmware", "serial", NULL));
}

struct serialcase {
	const char *fixture;
	int vm;
	enum admission_outcome outcome;
	const char *want; /* the serial after the patch */
	const char *op;   /* the one operation's op and path */
	const char *path;
};

static void test_serial(void **state)
{
	(void)state;
	static const struct serialcase cases[] = {
		{"vm-no-firmware", 1, ADM_PATCHED, SERIAL, "add", "/spec/template/spec/domain/firmware"},
		{"vm-serial", 1, ADM_PATCHED, "8e1c5a3f-6b2d-4a90-b7e1-2f3c4d5e6f70 " SERIAL, "replace",
		 "/spec/template/spec/domain/firmware/serial"},
		{"vm-own-annotation", 1, ADM_PATCHED, SERIAL, "add", "/spec/template/spec/domain/firmware/serial"},
		{"vm-update", 1, ADM_PATCHED, "ABC-123 " SERIAL, "replace", "/spec/template/spec/domain/firmware/serial"},
		{"vm-nocloud-serial", 1, ADM_SKIPPED, NULL, NULL, NULL},
		{"vm-last-applied-only", 1, ADM_SKIPPED, NULL, NULL, NULL},
		{"vmi-standalone", 0, ADM_PATCHED, SERIAL, "add", "/spec/domain/firmware"},
		{"vmi-serial", 0, ADM_PATCHED, "INV-0042 " SERIAL, "replace", "/spec/domain/firmware/serial"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *review = fixture(cases[i].fixture);
		struct answer a;
		run_review(&NATIVE, review, &a);
		if (a.res.outcome != cases[i].outcome)
			fail_msg("%s: %s (%s)", cases[i].fixture, admission_outcome_name(a.res.outcome), a.res.reason);
		assert_int_equal(a.res.kind, cases[i].vm ? ADM_KIND_VM : ADM_KIND_VMI);
		if (cases[i].want) {
			/* A VMI also gets imds.kubevirt.io/interfaces (issue 24):
			 * one masquerade NIC on the pod network in every fixture;
			 * and its spec.evictionStrategy (None in these fixtures,
			 * as KubeVirt's examples) as imds.kubevirt.io/eviction-strategy
			 * (issue 31); and imds.kubevirt.io/cloud-init (issue 30). */
			assert_int_equal(json_object_array_length(a.patch), cases[i].vm ? 1 : 4);
			assert_true(has_op_path(a.patch, cases[i].op, cases[i].path));
			assert_string_equal(vm_serial(a.object, cases[i].vm), cases[i].want);
			if (!cases[i].vm) {
				assert_true(has_op_path(a.patch, "add", "/metadata/annotations/imds.kubevirt.io~1interfaces"));
				assert_string_equal(sat(at(a.object, "metadata", "annotations", "imds.kubevirt.io/interfaces", NULL)),
						    "default:masquerade:tap0");
				assert_true(has_op_path(a.patch, "add",
							"/metadata/annotations/imds.kubevirt.io~1eviction-strategy"));
				assert_string_equal(sat(at(a.object, "metadata", "annotations",
							   "imds.kubevirt.io/eviction-strategy", NULL)),
						    "None");
			}
			/* firmware.uuid and the rest stay. */
			struct json_object *o = dup(a.object);
			if (!cases[i].vm) {
				json_object_object_del(at(o, "metadata", "annotations", NULL), "imds.kubevirt.io/interfaces");
				json_object_object_del(at(o, "metadata", "annotations", NULL),
						       "imds.kubevirt.io/eviction-strategy");
				json_object_object_del(at(o, "metadata", "annotations", NULL), "imds.kubevirt.io/cloud-init");
			}
			struct json_object *fw = cases[i].vm ? at(o, "spec", "template", "spec", "domain", "firmware", NULL)
							     : at(o, "spec", "domain", "firmware", NULL);
			json_object_object_del(fw, "serial");
			struct json_object *orig = dup(at(review, "request", "object", NULL));
			fw = cases[i].vm ? at(orig, "spec", "template", "spec", "domain", "firmware", NULL)
					 : at(orig, "spec", "domain", "firmware", NULL);
			if (fw)
				json_object_object_del(fw, "serial");
			else
				set(cases[i].vm ? at(orig, "spec", "template", "spec", "domain", NULL) : at(orig, "spec", "domain", NULL),
				    "firmware", json_object_new_object());
			assert_true(json_eq(o, orig));
			json_object_put(o);
			json_object_put(orig);
			/* Idempotent: a second pass (CREATE or UPDATE) changes nothing. */
			assert_second_pass_clean(&NATIVE, review, a.object);
			struct json_object *upd = dup(review);
			set(at(upd, "request", NULL), "operation", json_object_new_string("UPDATE"));
			set(at(upd, "request", NULL), "oldObject", dup(at(review, "request", "object", NULL)));
			assert_second_pass_clean(&NATIVE, upd, a.object);
			json_object_put(upd);
		}
		answer_free(&a);
		json_object_put(review);
	}
}

static void test_serial_variants(void **state)
{
	(void)state;
	struct answer a;
	struct json_object *review, *dom;

	/* An empty serial is none. */
	review = fixture("vmi-serial");
	set(at(review, "request", "object", "spec", "domain", "firmware", NULL), "serial", json_object_new_string(""));
	run_review(&NATIVE, review, &a);
	assert_true(has_op_path(a.patch, "replace", "/spec/domain/firmware/serial"));
	assert_string_equal(vm_serial(a.object, 0), SERIAL);
	answer_free(&a);
	json_object_put(review);

	/* JSON null firmware: created. */
	review = fixture("vmi-standalone");
	set(at(review, "request", "object", "spec", "domain", NULL), "firmware", NULL);
	run_review(&NATIVE, review, &a);
	assert_string_equal(vm_serial(a.object, 0), SERIAL);
	answer_free(&a);
	json_object_put(review);

	/* A VM opted in on its own metadata with no template at all: the
	 * whole chain of parents in one add. */
	review = fixture("vm-own-annotation");
	json_object_object_del(at(review, "request", "object", "spec", NULL), "template");
	run_review(&NATIVE, review, &a);
	assert_true(has_op_path(a.patch, "add", "/spec/template"));
	assert_string_equal(vm_serial(a.object, 1), SERIAL);
	answer_free(&a);
	json_object_put(review);

	/* UPDATE uses object, not oldObject. */
	review = fixture("vm-update");
	dom = at(review, "request", "oldObject", "spec", "template", "spec", "domain", "firmware", NULL);
	set(dom, "serial", json_object_new_string("OLD " SERIAL));
	run_review(&NATIVE, review, &a);
	assert_string_equal(vm_serial(a.object, 1), "ABC-123 " SERIAL);
	answer_free(&a);
	json_object_put(review);

	/* A VMI UPDATE is never patched, even without the serial: virt-api
	 * would refuse the spec change ("update of VMI object is restricted"). */
	review = fixture("vmi-standalone");
	set(at(review, "request", NULL), "operation", json_object_new_string("UPDATE"));
	set(at(review, "request", NULL), "oldObject", dup(at(review, "request", "object", NULL)));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	assert_non_null(strstr(a.res.reason, "UPDATE of a VMI"));
	answer_free(&a);
	json_object_put(review);

	/* Skipped: DELETE, a subresource, opted out on UPDATE. */
	review = fixture("vm-serial");
	set(at(review, "request", NULL), "operation", json_object_new_string("DELETE"));
	set(at(review, "request", NULL), "object", NULL);
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	answer_free(&a);
	json_object_put(review);
	review = fixture("vmi-standalone");
	set(at(review, "request", NULL), "subResource", json_object_new_string("status"));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	answer_free(&a);
	json_object_put(review);
	review = fixture("vmi-standalone");
	set_ann(review, "imds.kubevirt.io/enabled", "false");
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.outcome, ADM_SKIPPED);
	answer_free(&a);
	json_object_put(review);

	/* A serial that is not a string: malformed. */
	review = fixture("vmi-serial");
	set(at(review, "request", "object", "spec", "domain", "firmware", NULL), "serial", json_object_new_int(7));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.http_status, 400);
	assert_non_null(strstr(sat(at(a.resp, "message", NULL)), "serial"));
	answer_free(&a);
	json_object_put(review);
	/* domain not an object: malformed. */
	review = fixture("vm-serial");
	set(at(review, "request", "object", "spec", "template", "spec", NULL), "domain", json_object_new_string("x"));
	run_review(&NATIVE, review, &a);
	assert_int_equal(a.res.http_status, 400);
	answer_free(&a);
	json_object_put(review);
}

/* ---- every fixture ------------------------------------------------------ */

static const char *const all_fixtures[] = {
	"pod-kv18", "pod-kv19-imagevolume", "pod-guaranteed", "pod-guaranteed-kv19", "pod-secret",
	"pod-configmap", "pod-minimal", "pod-no-annotations", "pod-label-vmname", "hostile-pod-last-applied-only",
	"pod-not-launcher", "pod-update", "pod-bad-expiration", "hostile-pod-no-vm-name", "pod-userdata-200k",
	"vm-no-firmware", "vm-serial", "vm-nocloud-serial", "vm-own-annotation", "vm-last-applied-only",
	"vm-update", "vmi-standalone", "vmi-serial", "vmi-update",
};

static void test_all_fixtures_idempotent(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(all_fixtures) / sizeof(all_fixtures[0]); i++) {
		for (int mode = 0; mode < 2; mode++) {
			const struct admission_config *cfg = mode ? &PLAIN : &NATIVE;
			struct json_object *review = fixture(all_fixtures[i]);
			struct answer a;
			run_review(cfg, review, &a);
			assert_int_equal(a.res.http_status, 200);
			/* The raw fixture text gives the same answer as json-c's re-serialisation. */
			size_t n;
			char *raw = fixture_text(all_fixtures[i], &n);
			struct admission_result r2;
			admission_handle(&adm, cfg, raw, n, &r2);
			assert_int_equal(r2.outcome, a.res.outcome);
			assert_int_equal(r2.body_len, a.res.body_len);
			assert_memory_equal(r2.body, a.res.body, r2.body_len);
			admission_result_free(&r2);
			free(raw);
			if (a.res.outcome == ADM_PATCHED)
				assert_second_pass_clean(cfg, review, a.object);
			answer_free(&a);
			json_object_put(review);
		}
	}
}

/* ---- malformed input ---------------------------------------------------- */

static void expect_status(const char *body, size_t len, int status, const char *what)
{
	struct admission_result res;
	admission_handle(&adm, &NATIVE, body, len, &res);
	if (res.http_status != status)
		fail_msg("%s: HTTP %d, want %d (%s)", what, res.http_status, status, res.reason);
	assert_non_null(res.body);
	struct json_object *o = parse_body(&res); /* every answer, even an error, is JSON */
	if (status != 200) {
		assert_int_equal(res.outcome, ADM_INVALID);
		assert_non_null(sat(at(o, "error", NULL)));
		assert_non_null(sat(at(o, "message", NULL)));
		assert_true(res.reason[0] != '\0');
	}
	json_object_put(o);
	admission_result_free(&res);
}

#define S(lit) lit, sizeof(lit) - 1

static void test_malformed_table(void **state)
{
	(void)state;
	static const struct {
		const char *body;
		size_t len;
		const char *what;
	} bad[] = {
		{S(""), "empty"},
		{S(" "), "whitespace"},
		{S("null"), "null"},
		{S("[]"), "array"},
		{S("\"AdmissionReview\""), "string"},
		{S("42"), "number"},
		{S("{}"), "empty object"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{}}"), "v1beta1"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Review\",\"request\":{}}"), "wrong kind"},
		{S("{\"apiVersion\":1,\"kind\":\"AdmissionReview\"}"), "apiVersion number"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}"), "no request"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":null}"), "request null"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":[]}"), "request array"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}"), "no uid"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":42}}"), "uid number"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"\"}}"), "uid empty"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}"), "no kind"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":\"Pod\"}}"), "kind string"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"},\"operation\":\"CREATE\",\"object\":{}}}"), "foreign kind"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"kubevirt.io\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"object\":{}}}"), "Pod in kubevirt.io"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":7},\"operation\":\"CREATE\"}}"), "kind.kind number"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"PATCH\"}}"), "bad operation"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"}}}"), "no operation"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\"}}"), "pod CREATE, no object"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"object\":\"pod\"}}"), "object string"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"kubevirt.io\",\"version\":\"v1\",\"kind\":\"VirtualMachine\"},\"operation\":\"UPDATE\",\"object\":[]}}"), "vm object array"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}} x"), "trailing garbage"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}{}"), "two objects"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}\0"), "trailing NUL"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\0\",\"kind\":\"AdmissionReview\"}"), "NUL inside"},
		{S("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"\xff\"}}"), "invalid UTF-8"},
		{S("{'apiVersion':'admission.k8s.io/v1'}"), "single quotes"},
		{S("{\"a\":1,}"), "trailing comma"},
		{S("{\"a\":NaN}"), "NaN"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_status(bad[i].body, bad[i].len, 400, bad[i].what);

	/* Wrong types inside an opted-in pod, each a 400 naming the field. */
	static const struct {
		const char *where, *key, *json;
	} wrong[] = {
		{"metadata", "annotations", "[]"},
		{"metadata", "labels", "\"kubevirt.io=virt-launcher\""},
		{"", "metadata", "7"},
		{"", "spec", "[]"},
		{"spec", "containers", "{}"},
		{"spec", "initContainers", "\"x\""},
		{"spec", "volumes", "{}"},
		{"spec", "containers", "[7]"},
		{"spec", "containers", "[{\"name\":7}]"},
		{"spec", "resources", "[]"},
		{"annotations", "imds.kubevirt.io/enabled", "true"},
		{"annotations", "imds.kubevirt.io/token-expiration", "3600"},
		{"annotations", "imds.kubevirt.io/user-data", "{}"},
		{"labels", "kubevirt.io", "null"}, /* null: absent, so skipped, 200 */
	};
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		struct json_object *review = fixture("pod-kv18");
		struct json_object *obj = at(review, "request", "object", NULL), *parent = obj;
		if (!strcmp(wrong[i].where, "metadata"))
			parent = at(obj, "metadata", NULL);
		else if (!strcmp(wrong[i].where, "spec"))
			parent = at(obj, "spec", NULL);
		else if (!strcmp(wrong[i].where, "annotations"))
			parent = at(obj, "metadata", "annotations", NULL);
		else if (!strcmp(wrong[i].where, "labels"))
			parent = at(obj, "metadata", "labels", NULL);
		set(parent, wrong[i].key, json_tokener_parse(wrong[i].json));
		size_t n;
		const char *s = json_object_to_json_string_length(review, JSON_C_TO_STRING_PLAIN, &n);
		char what[128];
		snprintf(what, sizeof(what), "%s.%s = %s", wrong[i].where, wrong[i].key, wrong[i].json);
		expect_status(s, n, strcmp(wrong[i].json, "null") ? 400 : 200, what);
		json_object_put(review);
	}
	/* Container resources of the wrong type. */
	struct json_object *review = fixture("pod-kv18");
	set(at(review, "request", "object", "spec", "containers", "0", "resources", NULL), "limits",
	    json_tokener_parse("[\"cpu\"]"));
	size_t n;
	const char *s = json_object_to_json_string_length(review, JSON_C_TO_STRING_PLAIN, &n);
	expect_status(s, n, 400, "resources.limits array");
	json_object_put(review);
}

static void test_malformed_sizes(void **state)
{
	(void)state;
	/* Nesting 10000 deep: the reader's depth cap answers. */
	size_t depth = 10000;
	char *deep = malloc(2 * depth);
	memset(deep, '[', depth);
	memset(deep + depth, ']', depth);
	expect_status(deep, 2 * depth, 400, "nesting 10000 deep");
	/* Objects too: 65 levels inside a review. */
	struct sbuf b;
	char *buf = malloc(4096);
	b = (struct sbuf)SBUF_INIT(buf, 4096);
	sbuf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"x\":");
	for (int i = 0; i < 70; i++)
		sbuf_puts(&b, "{\"a\":");
	sbuf_puts(&b, "1");
	for (int i = 0; i < 70; i++)
		sbuf_putc(&b, '}');
	sbuf_puts(&b, "}}");
	assert_false(b.overflow);
	expect_status(buf, b.len, 400, "objects 72 deep");
	free(buf);
	free(deep);

	/* 3 MiB is answered; 3 MiB + 1 is 413, whatever it holds. */
	size_t n;
	char *fx = fixture_text("pod-kv18", &n);
	while (n && (fx[n - 1] == '\n' || fx[n - 1] == ' '))
		n--;
	char *big = malloc(ADMISSION_MAX_BODY + 1);
	memcpy(big, fx, n);
	memset(big + n, ' ', ADMISSION_MAX_BODY + 1 - n);
	expect_status(big, ADMISSION_MAX_BODY, 200, "3 MiB of review and spaces");
	expect_status(big, ADMISSION_MAX_BODY + 1, 413, "3 MiB + 1");
	memset(big, 'x', ADMISSION_MAX_BODY + 1);
	expect_status(big, ADMISSION_MAX_BODY + 1, 413, "3 MiB + 1 of junk");
	/* A flood of tiny values: 413 at the node cap. */
	big[0] = '[';
	size_t o = 1;
	for (size_t i = 0; i < ADMISSION_MAX_VALUES + 10; i++) {
		big[o++] = '0';
		big[o++] = ',';
	}
	big[o - 1] = ']';
	expect_status(big, o, 413, "too many values");
	/* Commas inside strings are not values. */
	o = 0;
	const char *head = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"x\":\"";
	memcpy(big, head, strlen(head));
	o = strlen(head);
	memset(big + o, ',', 2 * ADMISSION_MAX_VALUES);
	o += 2 * ADMISSION_MAX_VALUES;
	memcpy(big + o, "\"}", 2);
	o += 2;
	expect_status(big, o, 400, "commas in a string (no request)");
	free(big);
	free(fx);
}

/* The reader's string scan (UTF-8 checked, printable ASCII sixteen
 * bytes at a time) and its node cap, which no string content counts to. */
static void test_prepasses(void **state)
{
	(void)state;
	static const char head[] = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"x\":\"";
	char buf[256];
	struct admission_result res;
	/* A bad byte at every offset around the 8-byte steps is found, and
	 * the message names where. */
	for (size_t pad = 0; pad < 20; pad++) {
		static const char *const bad[] = {"\xff", "\xc3\x28", "\xe0\x80\x80", "\xed\xa0\x80",
						  "\xf4\x90\x80\x80", "\xc0\xaf", "\xe2\x82"};
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			int n = snprintf(buf, sizeof(buf), "%s%.*s%s\"}", head, (int)pad,
					 "aaaaaaaaaaaaaaaaaaaaaaaa", bad[k]);
			admission_handle(&adm, &NATIVE, buf, (size_t)n, &res);
			char want[64];
			snprintf(want, sizeof(want), "invalid UTF-8 at byte %zu", strlen(head) + pad);
			if (res.http_status != 400 || !strstr(res.body, want))
				fail_msg("pad %zu bad %zu: HTTP %d %s (want %s)", pad, k, res.http_status,
					 res.body, want);
			admission_result_free(&res);
		}
		/* Valid multi-byte text at the same offsets passes the check
		 * (and fails later only for having no request). */
		int n = snprintf(buf, sizeof(buf), "%s%.*s\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
				 head, (int)pad, "aaaaaaaaaaaaaaaaaaaaaaaa");
		admission_handle(&adm, &NATIVE, buf, (size_t)n, &res);
		assert_int_equal(res.http_status, 400);
		assert_null(strstr(res.body, "UTF-8"));
		admission_result_free(&res);
	}
	/* An escaped quote does not end a string: the commas after it are
	 * still inside, so this is no flood of values. */
	size_t cap = 4 * ADMISSION_MAX_VALUES + 256, o = 0;
	char *big = malloc(cap);
	assert_non_null(big);
	memcpy(big, head, strlen(head));
	o = strlen(head);
	memcpy(big + o, "\\\"", 2);
	o += 2;
	memset(big + o, ',', 2 * ADMISSION_MAX_VALUES);
	o += 2 * ADMISSION_MAX_VALUES;
	memcpy(big + o, "\"}", 2);
	o += 2;
	expect_status(big, o, 400, "escaped quote, commas still in the string");
	/* An escaped backslash does not escape the quote after it: the
	 * values that follow are counted (413 before any parse). */
	o = strlen(head);
	memcpy(big + o, "\\\\\",\"y\":[", 9);
	o += 9;
	for (size_t i = 0; i < ADMISSION_MAX_VALUES + 10; i++) {
		big[o++] = '0';
		big[o++] = ',';
	}
	memcpy(big + o - 1, "]}", 2);
	o += 1;
	expect_status(big, o, 413, "escaped backslash, then a flood of values");
	free(big);
}

static void test_truncated_prefixes(void **state)
{
	(void)state;
	static const char *const names[] = {"pod-kv18", "vm-serial", "vmi-standalone", "pod-minimal"};
	for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
		size_t n;
		char *s = fixture_text(names[f], &n);
		size_t full = n;
		while (full && (s[full - 1] == '\n' || s[full - 1] == ' '))
			full--;
		for (size_t len = 0; len < n; len++) {
			/* Exactly sized copies, so ASan sees any over-read. */
			char *p = malloc(len ? len : 1);
			memcpy(p, s, len);
			struct admission_result res;
			admission_handle(&adm, &NATIVE, p, len, &res);
			int want = len < full ? 400 : 200;
			if (res.http_status != want)
				fail_msg("%s: prefix of %zu bytes: HTTP %d, want %d", names[f], len, res.http_status, want);
			admission_result_free(&res);
			free(p);
		}
		free(s);
	}
}

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

static void test_config_check(void **state)
{
	(void)state;
	char err[256];
	struct admission_config c = NATIVE;
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), 0);
	c.cpu = "20m";
	c.memory = "32Mi";
	c.memory_limit = "32Mi";
	c.vendor_data = "#cloud-config\n# ✓\n";
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), 0);
	c.default_eviction = "LiveMigrateIfPossible";
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), 0);
	c.default_eviction = "liveMigrate"; /* KubeVirt's values are exact */
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "default eviction strategy: 'liveMigrate'"));
	c.default_eviction = NULL;
	static const struct {
		const char *image, *cpu, *memory, *limit, *vendor, *msg;
	} bad[] = {
		{NULL, NULL, NULL, NULL, NULL, "image"},
		{"", NULL, NULL, NULL, NULL, "image"},
		{"img with space", NULL, NULL, NULL, NULL, "image"},
		{"img", "ten", NULL, NULL, NULL, "cpu"},
		{"img", "0", NULL, NULL, NULL, "cpu"},
		{"img", NULL, "16Qi", NULL, NULL, "memory"},
		{"img", NULL, "64Mi", NULL, NULL, "memory"}, /* above the 32Mi default limit */
		{"img", NULL, NULL, "8Mi", NULL, "memory"},
		{"img", NULL, NULL, NULL, "bad \xc3\x28 utf-8", "vendor-data"},
		{"img", NULL, NULL, NULL, "surrogate \xed\xa0\x80", "vendor-data"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct admission_config b = {.imds_image = bad[i].image, .native_sidecar = 1, .cpu = bad[i].cpu,
					     .memory = bad[i].memory, .memory_limit = bad[i].limit,
					     .vendor_data = bad[i].vendor};
		err[0] = '\0';
		assert_int_equal(admission_config_check(&b, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].msg))
			fail_msg("case %zu: '%s' does not name %s", i, err, bad[i].msg);
	}
	char *huge = malloc(200 * 1024);
	memset(huge, 'v', 200 * 1024 - 1);
	huge[200 * 1024 - 1] = '\0';
	c.vendor_data = huge;
	assert_int_equal(admission_config_check(&c, err, sizeof(err)), -EINVAL);
	free(huge);
	/* The configured resources are what the sidecar gets. */
	c = NATIVE;
	c.cpu = "25m";
	c.memory = "20Mi";
	c.memory_limit = "40Mi";
	struct answer a;
	struct json_object *review = fixture("pod-kv18");
	run_review(&c, review, &a);
	struct json_object *sc = sidecar_of(a.object, NULL, NULL);
	assert_string_equal(sat(at(sc, "resources", "requests", "cpu", NULL)), "25m");
	assert_string_equal(sat(at(sc, "resources", "requests", "memory", NULL)), "20Mi");
	assert_string_equal(sat(at(sc, "resources", "limits", "memory", NULL)), "40Mi");
	answer_free(&a);
	json_object_put(review);
	assert_string_equal(admission_kind_name(ADM_KIND_VMI), "vmi");
	assert_string_equal(admission_outcome_name(ADM_DENIED), "denied");
	admission_result_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_kv18_native),
		cmocka_unit_test(test_pod_plain_container),
		cmocka_unit_test(test_pod_kv19_audiences),
		cmocka_unit_test(test_pod_guaranteed),
		cmocka_unit_test(test_pod_qos_quantities),
		cmocka_unit_test(test_pod_agent_mode),
		cmocka_unit_test(test_pod_missing_parents),
		cmocka_unit_test(test_pod_keys_meta_data),
		cmocka_unit_test(test_pod_user_data_sources),
		cmocka_unit_test(test_pod_200k_user_data),
		cmocka_unit_test(test_pod_vendor_data),
		cmocka_unit_test(test_pod_vm_name_sources),
		cmocka_unit_test(test_pod_skips),
		cmocka_unit_test(test_pod_denials),
		cmocka_unit_test(test_serial),
		cmocka_unit_test(test_serial_variants),
		cmocka_unit_test(test_all_fixtures_idempotent),
		cmocka_unit_test(test_malformed_table),
		cmocka_unit_test(test_malformed_sizes),
		cmocka_unit_test(test_prepasses),
		cmocka_unit_test(test_truncated_prefixes),
		cmocka_unit_test(test_vmi_interfaces),
		cmocka_unit_test(test_vmi_interfaces_overwrite_and_caps),
		cmocka_unit_test(test_vm_warnings),
		cmocka_unit_test(test_pod_interfaces_env),
		cmocka_unit_test(test_config_check),
	};
	int failed = cmocka_run_group_tests_name("webhook admission", tests, NULL, NULL);
	admission_cleanup(&adm);
	return failed;
}
