/* libFuzzer: review -> answer, through the real admission and patch
 * sources, in both sidecar modes (the second with cluster-wide
 * vendor-data).  Beyond "no crash, no leak": every answer is JSON of the
 * right shape, a patch is standard base64 of a JSON array of add/replace
 * operations on absolute pointers, and the log reason fits its buffer. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admission.h"
#include "ifaces.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct json_object *parse(const char *s, size_t n)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = tok ? json_tokener_parse_ex(tok, s, (int)n) : NULL;
	if (o && json_tokener_get_parse_end(tok) != n) {
		json_object_put(o);
		o = NULL;
	}
	if (tok)
		json_tokener_free(tok);
	return o;
}

static struct json_object *get(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static int b64(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static void check_patch(const char *s, size_t n)
{
	if (n == 0 || n % 4)
		abort();
	char *out = malloc(n / 4 * 3);
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		for (int k = 0; k < 4; k++) {
			int pad = s[i + k] == '=';
			if (pad && (i + 4 != n || k < 2 || (k == 2 && s[i + 3] != '=')))
				abort();
			v[k] = pad ? 0 : b64(s[i + k]);
			if (v[k] < 0)
				abort();
		}
		unsigned w = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
		out[o++] = (char)(w >> 16);
		if (s[i + 2] != '=')
			out[o++] = (char)(w >> 8);
		if (s[i + 3] != '=')
			out[o++] = (char)w;
	}
	struct json_object *p = parse(out, o);
	if (!p || !json_object_is_type(p, json_type_array) || json_object_array_length(p) == 0)
		abort();
	for (size_t i = 0; i < json_object_array_length(p); i++) {
		struct json_object *op = json_object_array_get_idx(p, i);
		const char *kind = json_object_get_string(get(op, "op"));
		const char *path = json_object_get_string(get(op, "path"));
		if (!kind || !path || path[0] != '/')
			abort();
		/* add and replace carry a value; remove (a user's stale
		 * imds.kubevirt.io/interfaces) none */
		if (strcmp(kind, "remove") == 0 ? get(op, "value") != NULL
						: (strcmp(kind, "add") && strcmp(kind, "replace")) || !get(op, "value"))
			abort();
	}
	json_object_put(p);
	free(out);
}

/* One for the process, reused as the webhook reuses it. */
static struct admission adm = ADMISSION_INIT;

static void one(const struct admission_config *cfg, const char *body, size_t n)
{
	struct admission_result res;
	admission_handle(&adm, cfg, body, n, &res);
	if (memchr(res.reason, '\0', sizeof(res.reason)) == NULL)
		abort();
	if (res.http_status == 500) { /* only out of memory */
		admission_result_free(&res);
		return;
	}
	if (!res.body || (res.http_status != 200 && res.http_status != 400 && res.http_status != 413))
		abort();
	struct json_object *r = parse(res.body, res.body_len);
	if (!r)
		abort();
	if (res.http_status != 200) {
		if (res.outcome != ADM_INVALID || !json_object_is_type(get(r, "message"), json_type_string))
			abort();
	} else {
		struct json_object *resp = get(r, "response");
		struct json_object *allowed = get(resp, "allowed");
		struct json_object *patch = get(resp, "patch");
		if (!json_object_is_type(get(resp, "uid"), json_type_string) ||
		    !json_object_is_type(allowed, json_type_boolean))
			abort();
		if ((res.outcome == ADM_PATCHED) != (patch != NULL) ||
		    (res.outcome == ADM_DENIED) == json_object_get_boolean(allowed))
			abort();
		if (patch)
			check_patch(json_object_get_string(patch), (size_t)json_object_get_string_len(patch));
		/* warnings: an array of strings, as many as the result says */
		struct json_object *w = get(resp, "warnings");
		if ((w != NULL) != (res.warnings > 0) ||
		    (w && (!json_object_is_type(w, json_type_array) || json_object_array_length(w) != res.warnings)))
			abort();
		for (size_t i = 0; w && i < json_object_array_length(w); i++)
			if (!json_object_is_type(json_object_array_get_idx(w, i), json_type_string))
				abort();
	}
	json_object_put(r);
	admission_result_free(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the plain configuration also knows one binding plugin of its own */
	static const struct ifc_plugin plugins[] = {{"ovs-tap", IFACES_MANAGEDTAP}, {"passt", IFACES_TAP}};
	static const struct admission_config native = {.imds_image = "img:1", .native_sidecar = 1};
	static const struct admission_config plain = {
		.imds_image = "img:1",
		.native_sidecar = 0,
		.vendor_data = "#cloud-config\nruncmd: [\"echo \\\"v\\\"\"]\n",
		.cpu = "1",
		.memory = "1Gi",
		.memory_limit = "2Gi",
		.plugins = plugins,
		.nplugins = 2,
	};
	/* An exactly sized copy: an over-read of the body is ASan's to see. */
	char *body = malloc(size ? size : 1);
	if (!body)
		return 0;
	memcpy(body, data, size);
	/* The same bytes as an imds.kubevirt.io/interfaces text: what the
	 * check accepts is within the caps, and a refusal says why. */
	char err[160] = "";
	if (ifc_check(body, size, err, sizeof(err)) == 0) {
		size_t commas = 0;
		for (size_t i = 0; i < size; i++)
			commas += body[i] == ',';
		if (size > IFACES_TEXT_MAX || (size && commas + 1 > IFACES_MAX) || memchr(body, ' ', size))
			abort();
	} else if (!err[0]) {
		abort();
	}
	one(&native, body, size);
	one(&plain, body, size);
	free(body);
	return 0;
}
