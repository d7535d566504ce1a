/* The fixture harness of the webhook's admission tests (test_wh_admission,
 * test_wh_pod, test_wh_serial, test_wh_vmnet): reviews that look like what
 * KubeVirt 1.8/1.9 and the API server send (tests/fixtures/webhook, or
 * $IMDS_FIXTURES), run through admission_handle() as the webhook runs
 * them, every patch applied (a small RFC 6902 add/replace/remove here;
 * the integration suite uses python3-jsonpatch) and the result read back
 * field by field; a second application changes nothing. */
#ifndef IMDS_TEST_WH_FIXTURE_H
#define IMDS_TEST_WH_FIXTURE_H

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
__attribute__((unused)) static struct admission adm = ADMISSION_INIT;

__attribute__((unused)) static const struct admission_config NATIVE = {.imds_image = IMAGE, .native_sidecar = 1};

__attribute__((unused)) static const struct admission_config PLAIN = {.imds_image = IMAGE, .native_sidecar = 0};

/* --network-mode agent, in each sidecar mode */
__attribute__((unused)) static const struct admission_config AGENT_NATIVE = {.imds_image = IMAGE, .native_sidecar = 1, .agent_network = 1};

__attribute__((unused)) static const struct admission_config AGENT_PLAIN = {.imds_image = IMAGE, .native_sidecar = 0, .agent_network = 1};

/* ---- fixtures and JSON helpers ----------------------------------------- */

static inline char *read_all(const char *path, size_t *len)
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

static inline char *fixture_text(const char *name, size_t *len)
{
	const char *dir = getenv("IMDS_FIXTURES") ? getenv("IMDS_FIXTURES") : "tests/fixtures/webhook";
	char path[512];
	*len = 0; /* gcc 12 cannot see that fail_msg() does not return */
	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	char *s = read_all(path, len);
	if (!s)
		fail_msg("cannot read fixture %s (run from the repository root or set IMDS_FIXTURES)", path);
	return s;
}

static inline struct json_object *fixture(const char *name)
{
	size_t n;
	char *s = fixture_text(name, &n);
	struct json_object *o = json_tokener_parse(s);
	free(s);
	assert_non_null(o);
	return o;
}

/* o[k1][k2]...; a key of digits indexes an array. */
static inline struct json_object *at(struct json_object *o, ...)
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

static inline struct json_object *dup(struct json_object *o)
{
	struct json_object *c = NULL;
	if (o)
		assert_int_equal(json_object_deep_copy(o, &c, NULL), 0);
	return c;
}

static inline const char *sat(struct json_object *o)
{
	return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

static inline void set(struct json_object *parent, const char *key, struct json_object *v)
{
	assert_non_null(parent);
	json_object_object_add(parent, key, v); /* takes v */
}

static inline void set_ann(struct json_object *review, const char *key, const char *value)
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

static inline int b64val(char c)
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
static inline char *b64decode(const char *s, size_t *outlen)
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
static inline int apply_op(struct json_object *doc, struct json_object *op)
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
static inline struct json_object *parse_body(const struct admission_result *res)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = json_tokener_parse_ex(tok, res->body, (int)res->body_len);
	assert_int_equal(json_tokener_get_error(tok), json_tokener_success);
	assert_int_equal(json_tokener_get_parse_end(tok), res->body_len);
	json_tokener_free(tok);
	assert_non_null(o);
	return o;
}

static inline void run(const struct admission_config *cfg, const char *body, size_t len, struct json_object *review,
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

static inline void answer_free(struct answer *a)
{
	admission_result_free(&a->res);
	json_object_put(a->resp);
	json_object_put(a->patch);
	json_object_put(a->object);
}

static inline void run_review(const struct admission_config *cfg, struct json_object *review, struct answer *a)
{
	size_t n;
	const char *s = json_object_to_json_string_length(review, JSON_C_TO_STRING_PLAIN, &n);
	run(cfg, s, n, review, a);
}

/* The patched object through the webhook again: allowed, no patch. */
static inline void assert_second_pass_clean(const struct admission_config *cfg, struct json_object *review,
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
static inline struct json_object *sidecar_of(struct json_object *pod, const char **list, size_t *idx)
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

static inline struct json_object *env_of(struct json_object *c, const char *name)
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

static inline const char *env_value(struct json_object *c, const char *name)
{
	return sat(at(env_of(c, name), "value", NULL));
}

static inline struct json_object *volume_of(struct json_object *pod, const char *name)
{
	struct json_object *vols = at(pod, "spec", "volumes", NULL), *found = NULL;
	for (size_t i = 0; vols && i < json_object_array_length(vols); i++)
		if (strcmp(sat(at(json_object_array_get_idx(vols, i), "name", NULL)), name) == 0) {
			assert_null(found);
			found = json_object_array_get_idx(vols, i);
		}
	return found;
}

static inline const char *mount_path(struct json_object *c, const char *vol)
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

static inline int json_eq(struct json_object *a, struct json_object *b)
{
	return json_object_equal(a, b);
}

static inline int has_op_path(struct json_object *patch, const char *op, const char *path)
{
	for (size_t i = 0; i < json_object_array_length(patch); i++) {
		struct json_object *e = json_object_array_get_idx(patch, i);
		if (strcmp(sat(at(e, "op", NULL)), op) == 0 && strcmp(sat(at(e, "path", NULL)), path) == 0)
			return 1;
	}
	return 0;
}

#endif
