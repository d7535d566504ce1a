#include "admission.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "audience.h"
#include "jview.h"
#include "patch.h"
#include "sbuf.h"
#include "utf8.h"

#define ANN "imds.kubevirt.io/"
#define ANN_ENABLED ANN "enabled"
#define ANN_INJECTED ANN "injected"
#define ANN_USER_DATA ANN "user-data"
#define ANN_USER_DATA_SECRET ANN "user-data-secret"
#define ANN_USER_DATA_CONFIGMAP ANN "user-data-configmap"
#define ANN_VENDOR_DATA ANN "vendor-data"
#define ANN_NETWORK_CONFIG ANN "network-config"
#define ANN_INSTANCE_ID ANN "instance-id"
#define ANN_TOKEN_AUDIENCE ANN "token-audience"
#define ANN_TOKEN_EXPIRATION ANN "token-expiration"
#define ANN_BRIDGE_NAME ANN "bridge-name"
#define ANN_SSH_KEYS_SECRET ANN "ssh-keys-secret"
#define ANN_META_DATA ANN "meta-data"
#define ANN_HOP_LIMIT ANN "hop-limit"
#define ANN_SESSION ANN "session"
#define ANN_NETWORK_STATUS "k8s.v1.cni.cncf.io/network-status"
#define ANN_DOMAIN "kubevirt.io/domain"
#define LABEL_LAUNCHER "kubevirt.io"
#define LABEL_VM_NAME "vm.kubevirt.io/name"

#define CONTAINER_NAME "imds-server"
#define VOL_TOKEN "imds-token"
#define VOL_PODINFO "imds-podinfo"
#define VOL_USER_DATA "imds-user-data"
#define VOL_SSH_KEYS "imds-ssh-keys"
#define VOL_STATE "imds-state"
/* Where the sidecar looks (src/sidecar/config.h, docs/sidecar.md). */
#define TOKEN_DIR "/var/run/secrets/tokens"
#define PODINFO_DIR "/var/run/imds/podinfo"
#define SECRET_DIR "/var/run/imds/user-data-secret"
#define CONFIGMAP_DIR "/var/run/imds/user-data-configmap"
#define SSH_KEYS_DIR "/var/run/imds/ssh-keys"
#define STATE_DIR "/var/run/imds/state"
/* The sidecar's bound (src/sidecar/metajson.h). */
#define META_DATA_MAX_KEYS 256

#define EXPIRATION_MIN 600 /* the API server's own floor for projected tokens */
#define EXPIRATION_MAX 86400
#define EXPIRATION_DEFAULT 3600
#define MAX_AUDIENCES 8
/* Kubernetes' TotalAnnotationSizeLimitB: keys plus values. */
#define ANNOTATIONS_MAX (256u << 10)
#define UID_MAX 256
/* The cluster-wide vendor-data goes into an annotation beside the pod's own. */
#define VENDOR_DATA_MAX (192u << 10)

enum { A_OK = 0, A_BAD, A_DENY, A_NOMEM };

struct str {
	const char *p; /* NULL: absent */
	size_t n;
};

struct adm {
	const struct admission_config *cfg;
	const char *cpu, *memory, *memory_limit;
	struct admission_result *res;
	int err;       /* the first A_* failure; later ones keep its message */
	char msg[512]; /* what the failure says: HTTP 400 body or status.message */
	struct patch *patch;
	struct jv *v; /* the review */
	const char *what; /* "pod default/virt-launcher-vm1-", for the reason */
	char whatbuf[160];
};

__attribute__((format(printf, 3, 4))) static void fail(struct adm *a, int err, const char *fmt, ...)
{
	if (a->err)
		return;
	a->err = err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
	va_end(ap);
}

/* The log line's reason, cut to fit: a truncated reason is fine. */
__attribute__((format(printf, 2, 3))) static void set_reason(struct admission_result *res,
							      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3))) static void reason(struct adm *a, const char *fmt, ...)
{
	char buf[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	set_reason(a->res, "%s: %s", a->what, buf);
}

static int str_is(struct str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.p && s.n == n && memcmp(s.p, lit, n) == 0;
}

/* ---- reading the review: every member we read is type-checked -------- */

static const char *type_name(enum jv_type t)
{
	switch (t) {
	case JV_OBJECT:
		return "an object";
	case JV_ARRAY:
		return "an array";
	case JV_STRING:
		return "a string";
	case JV_BOOL:
		return "a boolean";
	case JV_NUMBER:
		return "a number";
	default:
		return "null";
	}
}

/* obj.key when it has type t; JV_NONE when obj is JV_NONE or the member is
 * absent or null (Go's encoder writes null for nil maps and slices).  Any
 * other type makes the review malformed. */
static uint32_t member(struct adm *a, uint32_t obj, const char *key, enum jv_type t,
		       const char *where)
{
	uint32_t v = jv_get(a->v, obj, key);
	if (v == JV_NONE || jv_type(a->v, v) == JV_NULL)
		return JV_NONE;
	if (jv_type(a->v, v) != t) {
		fail(a, A_BAD, "%s.%s: must be %s", where, key, type_name(t));
		return JV_NONE;
	}
	return v;
}

/* The decoded bytes of string node i. */
static struct str jstring(struct adm *a, uint32_t i)
{
	struct str s = {0};
	if (jv_str(a->v, i, &s.p, &s.n) < 0) {
		fail(a, A_NOMEM, "out of memory");
		s.p = NULL;
		s.n = 0;
	}
	return s;
}

static struct str mstr(struct adm *a, uint32_t obj, const char *key, const char *where)
{
	uint32_t v = member(a, obj, key, JV_STRING, where);
	if (v == JV_NONE)
		return (struct str){0};
	return jstring(a, v);
}

/* ---- checks on annotation values -------------------------------------- */

static int utf8_ok(const char *s, size_t n)
{
	return utf8_valid(s, n) == 0;
}

/* What the sidecar accepts for IMDS_VM_NAME and IMDS_INSTANCE_ID
 * (src/sidecar/config.c): UTF-8, at most 253 bytes, no control bytes. */
static int identity_ok(struct str s)
{
	if (s.n == 0 || s.n > 253 || !utf8_ok(s.p, s.n))
		return 0;
	for (size_t i = 0; i < s.n; i++)
		if ((unsigned char)s.p[i] < 0x20 || s.p[i] == 0x7f)
			return 0;
	return 1;
}

/* A Secret or ConfigMap name: a DNS-1123 subdomain. */
static int dns1123_subdomain(struct str s)
{
	if (s.n == 0 || s.n > 253)
		return 0;
	size_t label = 0;
	for (size_t i = 0; i < s.n; i++) {
		char c = s.p[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (c == '.') {
			if (label == 0 || s.p[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!alnum && c != '-')
			return 0;
		if (c == '-' && label == 0)
			return 0;
		label++;
	}
	return label > 0 && s.p[s.n - 1] != '-';
}

/* A Linux interface name, as dev_valid_name() takes it. */
static int ifname_ok(struct str s)
{
	if (s.n == 0 || s.n > 15 || str_is(s, ".") || str_is(s, ".."))
		return 0;
	for (size_t i = 0; i < s.n; i++) {
		unsigned char c = (unsigned char)s.p[i];
		if (c <= 0x20 || c == 0x7f || c == '/' || c == ':')
			return 0;
	}
	return 1;
}

/* A configuration value for a message: printable ASCII only, cut at 40
 * bytes, in quotes when quote.  Only ever called on names and the settings
 * annotations, never on user-data, vendor-data or network-config. */
static const char *clean(struct str s, int quote, char *buf, size_t cap)
{
	struct sbuf b = SBUF_INIT(buf, cap);
	if (quote)
		sbuf_putc(&b, '\'');
	for (size_t i = 0; i < s.n && i < 40; i++) {
		unsigned char c = (unsigned char)s.p[i];
		sbuf_putc(&b, (char)(c >= 0x20 && c < 0x7f ? c : '?'));
	}
	if (s.n > 40)
		sbuf_puts(&b, "...");
	if (quote)
		sbuf_putc(&b, '\'');
	return buf;
}

static const char *shown(struct str s, char *buf, size_t cap)
{
	return clean(s, 1, buf, cap);
}

/* ---- resource quantities ---------------------------------------------- */

/* value = m * 10^e10 * 2^e2: exact, so "1" and "1000m" compare equal. */
struct qty {
	__int128 m;
	int e10, e2;
};

static int qty_parse(const char *s, size_t n, struct qty *q)
{
	size_t i = 0, sig = 0;
	int frac = -1, any = 0;
	memset(q, 0, sizeof(*q));
	if (i < n && s[i] == '+')
		i++;
	for (; i < n; i++) {
		if (s[i] == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (s[i] < '0' || s[i] > '9')
			break;
		any = 1;
		/* Leading zeros cost nothing; 30 significant digits fit. */
		if ((q->m || s[i] != '0') && ++sig > 30)
			return -1;
		q->m = q->m * 10 + (s[i] - '0');
		if (frac >= 0)
			frac++;
	}
	if (!any)
		return -1;
	if (frac > 0)
		q->e10 -= frac;
	const char *suf = s + i;
	size_t sn = n - i;
	static const struct {
		const char *s;
		int e10, e2;
	} sufs[] = {
		{"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},   {"k", 3, 0},    {"M", 6, 0},
		{"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},   {"Ki", 0, 10},  {"Mi", 0, 20},
		{"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
	};
	for (size_t k = 0; k < sizeof(sufs) / sizeof(sufs[0]); k++) {
		if (strlen(sufs[k].s) == sn && memcmp(sufs[k].s, suf, sn) == 0) {
			q->e10 += sufs[k].e10;
			q->e2 += sufs[k].e2;
			return 0;
		}
	}
	/* A decimal exponent: e3, E-2, e+6. */
	if (sn >= 2 && (suf[0] == 'e' || suf[0] == 'E')) {
		size_t j = 1;
		int neg = 0, e = 0;
		if (suf[j] == '+' || suf[j] == '-')
			neg = suf[j++] == '-';
		if (j == sn)
			return -1;
		for (; j < sn; j++) {
			if (suf[j] < '0' || suf[j] > '9' || e > 1000)
				return -1;
			e = e * 10 + (suf[j] - '0');
		}
		q->e10 += neg ? -e : e;
		return 0;
	}
	return -1;
}

/* m * 2^a * 5^b with m coprime to 10: one form per value. */
static void qty_norm(const struct qty *q, __int128 *m, int *a, int *b)
{
	*m = q->m;
	*a = q->e10 + q->e2;
	*b = q->e10;
	if (*m == 0) {
		*a = *b = 0;
		return;
	}
	while (*m % 2 == 0) {
		*m /= 2;
		(*a)++;
	}
	while (*m % 5 == 0) {
		*m /= 5;
		(*b)++;
	}
}

static int qty_eq(const struct qty *x, const struct qty *y)
{
	__int128 mx, my;
	int ax, bx, ay, by;
	qty_norm(x, &mx, &ax, &bx);
	qty_norm(y, &my, &ay, &by);
	return mx == my && ax == ay && bx == by;
}

/* In nano-units, truncated; -1 when out of range (only for configuration). */
static int qty_nano(const struct qty *q, __int128 *out)
{
	__int128 v = q->m;
	int e = q->e10 + 9;
	for (; e > 0; e--)
		if (__builtin_mul_overflow(v, 10, &v))
			return -1;
	for (; e < 0; e++)
		v /= 10;
	for (int k = 0; k < q->e2; k++)
		if (__builtin_mul_overflow(v, 2, &v))
			return -1;
	*out = v;
	return 0;
}

/* A quantity of a resources map: 1 and q filled, 0 absent, -1 unparsable.
 * The API server writes quantities as strings; a JSON number is accepted
 * on input, so take integers too. */
static int res_qty(struct adm *a, uint32_t map, const char *name, struct qty *q)
{
	uint32_t v = jv_get(a->v, map, name);
	if (v == JV_NONE || jv_type(a->v, v) == JV_NULL)
		return 0;
	if (jv_type(a->v, v) == JV_STRING) {
		struct str s = jstring(a, v);
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
static int container_guaranteed(struct adm *a, uint32_t c)
{
	uint32_t res = member(a, c, "resources", JV_OBJECT, "container");
	uint32_t lim = member(a, res, "limits", JV_OBJECT, "container.resources");
	uint32_t req = member(a, res, "requests", JV_OBJECT, "container.resources");
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

/* ---- building patch values --------------------------------------------
 * Each builder takes the references it is given; if any is NULL (a failed
 * constructor) or an insertion fails, it releases all of them and returns
 * NULL, so a tree is built in one expression and checked once. */

static struct json_object *jset(struct json_object *o, const char *k, struct json_object *v)
{
	if (o && v && json_object_object_add(o, k, v) == 0)
		return o; /* o owns v now */
	json_object_put(o);
	json_object_put(v);
	return NULL;
}

static struct json_object *jpush(struct json_object *arr, struct json_object *v)
{
	if (arr && v && json_object_array_add(arr, v) == 0)
		return arr; /* arr owns v now */
	json_object_put(arr);
	json_object_put(v);
	return NULL;
}

/* jobj("k1", v1, "k2", v2, ..., JEND): a typed sentinel, since a bare
 * NULL may be a plain int in a variadic call. */
#define JEND ((const char *)0)
static struct json_object *jobj(const char *k, ...)
{
	struct json_object *o = json_object_new_object();
	va_list ap;
	va_start(ap, k);
	for (; k; k = va_arg(ap, const char *))
		o = jset(o, k, va_arg(ap, struct json_object *));
	va_end(ap);
	return o;
}

/* jarr(n, v1, ..., vn) */
static struct json_object *jarr(int n, ...)
{
	struct json_object *arr = json_object_new_array();
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		arr = jpush(arr, va_arg(ap, struct json_object *));
	va_end(ap);
	return arr;
}

static struct json_object *jstr(const char *s)
{
	return json_object_new_string(s);
}

static struct json_object *jstrn(struct str s)
{
	return json_object_new_string_len(s.p, (int)s.n);
}

static struct json_object *field_ref(const char *path)
{
	return jobj("fieldRef", jobj("apiVersion", jstr("v1"), "fieldPath", jstr(path), JEND), JEND);
}

static struct json_object *env_value(const char *name, struct json_object *v)
{
	return jobj("name", jstr(name), "value", v, JEND);
}

static struct json_object *env_field(const char *name, const char *path)
{
	return jobj("name", jstr(name), "valueFrom", field_ref(path), JEND);
}

static struct json_object *mount(const char *vol, const char *path)
{
	return jobj("name", jstr(vol), "mountPath", jstr(path), "readOnly", json_object_new_boolean(1),
		    JEND);
}

/* A downward-API item: the file holds the annotation's value, and is
 * empty while the annotation is absent (Multus' network-status arrives
 * after scheduling, through a status update; kubelet rewrites the file). */
static struct json_object *podinfo_item(const char *file, const char *annotation)
{
	char fp[128];
	snprintf(fp, sizeof(fp), "metadata.annotations['%s']", annotation);
	return jobj("path", jstr(file), "fieldRef",
		    jobj("apiVersion", jstr("v1"), "fieldPath", jstr(fp), JEND), JEND);
}

static int add(struct adm *a, const char *path, struct json_object *v)
{
	if (patch_add(a->patch, path, v) < 0) {
		fail(a, A_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

static int replace(struct adm *a, const char *path, struct json_object *v)
{
	if (patch_replace(a->patch, path, v) < 0) {
		fail(a, A_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* ---- pods ------------------------------------------------------------- */

enum ud_source { UD_INLINE, UD_SECRET, UD_CONFIGMAP };

struct pod {
	uint32_t anns, spec, containers, inits, volumes; /* nodes of the review */
	unsigned expiration;
	struct str aud[MAX_AUDIENCES];
	char audir[MAX_AUDIENCES][256];
	size_t naud;
	enum ud_source ud;
	struct str secret, configmap, instance_id, bridge, vm_name, ssh_secret;
	int meta_data;       /* imds.kubevirt.io/meta-data is set (and valid) */
	struct str hop_limit; /* 1..64, as written */
	struct str session;   /* optional or required */
	int add_vendor_data; /* the cluster-wide vendor-data goes in an annotation */
	int guaranteed;
	int pod_resources; /* spec.resources: pod-level resources own the budget */
};

/* An annotation of the pod as a string; a value of another type is a
 * malformed review. */
static struct str ann(struct adm *a, uint32_t anns, const char *key)
{
	return mstr(a, anns, key, "request.object.metadata.annotations");
}

static void parse_audiences(struct adm *a, struct pod *p, struct str v)
{
	char q[64];
	if (v.n == 0) {
		fail(a, A_DENY, "%s: empty (want comma-separated audiences)", ANN_TOKEN_AUDIENCE);
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
			fail(a, A_DENY, "%s: an empty entry in %s (want comma-separated audiences)",
			     ANN_TOKEN_AUDIENCE, shown(v, q, sizeof(q)));
			return;
		}
		int dup = 0;
		for (size_t k = 0; k < p->naud; k++)
			dup |= p->aud[k].n == e.n && memcmp(p->aud[k].p, e.p, e.n) == 0;
		if (!dup) {
			if (p->naud == MAX_AUDIENCES) {
				fail(a, A_DENY, "%s: more than %d audiences", ANN_TOKEN_AUDIENCE,
				     MAX_AUDIENCES);
				return;
			}
			/* One directory per audience, named as the sidecar looks
			 * it up (audience_dir() keeps clear of `..data` and of the
			 * default `token`); a path component is at most NAME_MAX. */
			char *dir = p->audir[p->naud];
			int r = audience_dir(e.p, e.n, dir, sizeof(p->audir[0]));
			if (r == -ENOSPC) {
				fail(a, A_DENY, "%s: audience %s is too long", ANN_TOKEN_AUDIENCE,
				     shown(e, q, sizeof(q)));
				return;
			}
			if (r < 0) {
				fail(a, A_DENY,
				     "%s: audience %s must be printable ASCII without spaces",
				     ANN_TOKEN_AUDIENCE, shown(e, q, sizeof(q)));
				return;
			}
			p->aud[p->naud++] = e;
		}
		i = j + 1;
	}
}

/* imds.kubevirt.io/meta-data: a JSON object of strings, none of them a key
 * the sidecar writes itself, each name once. */
static void check_meta_data(struct adm *a, struct str v)
{
	static const char *const reserved[] = {"instance-id", "local-hostname", "public-keys",
					       "hostname",    "uuid",           NULL};
	struct jv j = {.max_depth = 2, .max_nodes = 2 * META_DATA_MAX_KEYS + 2};
	char err[128];
	int pr = jv_parse(&j, v.p, v.n, err, sizeof(err));
	if (pr == -E2BIG) {
		fail(a, A_DENY, "%s: more than %d keys", ANN_META_DATA, META_DATA_MAX_KEYS);
		goto out;
	}
	if (pr == -ENOMEM) {
		fail(a, A_NOMEM, "out of memory");
		goto out;
	}
	if (pr < 0) {
		fail(a, A_DENY, "%s: not JSON (%s); want an object of strings", ANN_META_DATA, err);
		goto out;
	}
	if (jv_type(&j, 0) != JV_OBJECT) {
		fail(a, A_DENY, "%s: want a JSON object of strings", ANN_META_DATA);
		goto out;
	}
	for (uint32_t k = jv_first(&j, 0); k != JV_NONE; k = jv_next(&j, 0, k)) {
		const char *name;
		size_t n;
		char q[64];
		if (jv_str(&j, k, &name, &n) < 0) {
			fail(a, A_NOMEM, "out of memory");
			goto out;
		}
		struct str key = {name, n};
		if (jv_type(&j, k + 1) != JV_STRING) {
			fail(a, A_DENY, "%s: the value of %s is not a string", ANN_META_DATA,
			     shown(key, q, sizeof(q)));
			goto out;
		}
		for (const char *const *r = reserved; *r; r++) {
			if (str_is(key, *r)) {
				fail(a, A_DENY, "%s: %s is set by the sidecar itself", ANN_META_DATA, *r);
				goto out;
			}
		}
		for (uint32_t e = jv_first(&j, 0); e != k; e = jv_next(&j, 0, e)) {
			if (jv_str_eq(&j, e, name, n)) {
				fail(a, A_DENY, "%s: %s appears twice", ANN_META_DATA,
				     shown(key, q, sizeof(q)));
				goto out;
			}
		}
	}
out:
	jv_free(&j);
}

/* The annotations a VM or VMI is checked for before its pod exists (the
 * pod's admission checks them again): a mistake shows at `kubectl apply`. */
static void check_data_annotations(struct adm *a, uint32_t anns, const char *where)
{
	char q[64];
	struct str v = mstr(a, anns, ANN_META_DATA, where);
	if (v.p)
		check_meta_data(a, v);
	v = mstr(a, anns, ANN_SSH_KEYS_SECRET, where);
	if (v.p && !dns1123_subdomain(v))
		fail(a, A_DENY, "%s: %s is not a Secret name (DNS-1123 subdomain)", ANN_SSH_KEYS_SECRET,
		     shown(v, q, sizeof(q)));
}

static void pod_settings(struct adm *a, struct pod *p, uint32_t labels)
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
			fail(a, A_DENY, "%s: want whole seconds in %d..%d, got %s", ANN_TOKEN_EXPIRATION,
			     EXPIRATION_MIN, EXPIRATION_MAX, shown(v, q, sizeof(q)));
			return;
		}
		p->expiration = e;
	}

	v = ann(a, p->anns, ANN_TOKEN_AUDIENCE);
	if (v.p)
		parse_audiences(a, p, v);

	p->secret = ann(a, p->anns, ANN_USER_DATA_SECRET);
	if (p->secret.p && !dns1123_subdomain(p->secret))
		fail(a, A_DENY, "%s: %s is not a Secret name (DNS-1123 subdomain)", ANN_USER_DATA_SECRET,
		     shown(p->secret, q, sizeof(q)));
	p->configmap = ann(a, p->anns, ANN_USER_DATA_CONFIGMAP);
	if (p->configmap.p && !dns1123_subdomain(p->configmap))
		fail(a, A_DENY, "%s: %s is not a ConfigMap name (DNS-1123 subdomain)",
		     ANN_USER_DATA_CONFIGMAP, shown(p->configmap, q, sizeof(q)));
	/* Secret > ConfigMap > the inline annotation. */
	p->ud = p->secret.p ? UD_SECRET : p->configmap.p ? UD_CONFIGMAP : UD_INLINE;

	check_data_annotations(a, p->anns, "request.object.metadata.annotations");
	p->hop_limit = ann(a, p->anns, ANN_HOP_LIMIT);
	if (p->hop_limit.p) {
		unsigned h = 0;
		int ok = p->hop_limit.n > 0 && p->hop_limit.n <= 2 && p->hop_limit.p[0] != '0';
		for (size_t i = 0; ok && i < p->hop_limit.n; i++) {
			ok = p->hop_limit.p[i] >= '0' && p->hop_limit.p[i] <= '9';
			h = h * 10 + (unsigned)(p->hop_limit.p[i] - '0');
		}
		if (!ok || h < 1 || h > 64)
			fail(a, A_DENY, "%s: want an IP TTL in 1..64, got %s", ANN_HOP_LIMIT,
			     shown(p->hop_limit, q, sizeof(q)));
	}
	p->session = ann(a, p->anns, ANN_SESSION);
	if (p->session.p && !str_is(p->session, "optional") && !str_is(p->session, "required"))
		fail(a, A_DENY, "%s: want optional or required, got %s", ANN_SESSION,
		     shown(p->session, q, sizeof(q)));
	p->ssh_secret = ann(a, p->anns, ANN_SSH_KEYS_SECRET);
	p->meta_data = ann(a, p->anns, ANN_META_DATA).p != NULL;

	p->instance_id = ann(a, p->anns, ANN_INSTANCE_ID);
	if (p->instance_id.p && !identity_ok(p->instance_id))
		fail(a, A_DENY, "%s: want UTF-8 of 1..253 bytes without control characters",
		     ANN_INSTANCE_ID);

	p->bridge = ann(a, p->anns, ANN_BRIDGE_NAME);
	if (p->bridge.p && !ifname_ok(p->bridge))
		fail(a, A_DENY,
		     "%s: %s is not an interface name (1..15 bytes, no '/', ':' or whitespace)",
		     ANN_BRIDGE_NAME, shown(p->bridge, q, sizeof(q)));

	/* The VM's name: virt-controller sets kubevirt.io/domain on every
	 * launcher pod; vm.kubevirt.io/name is there even for a standalone VMI. */
	const char *src = ANN_DOMAIN;
	p->vm_name = ann(a, p->anns, ANN_DOMAIN);
	if (!p->vm_name.p) {
		src = LABEL_VM_NAME;
		p->vm_name = mstr(a, labels, LABEL_VM_NAME, "request.object.metadata.labels");
	}
	if (!a->err && !p->vm_name.p)
		fail(a, A_DENY,
		     "cannot tell the VM's name: the pod has neither the annotation %s nor the label %s",
		     ANN_DOMAIN, LABEL_VM_NAME);
	else if (!a->err && !identity_ok(p->vm_name))
		fail(a, A_DENY, "%s: the VM's name must be UTF-8 of 1..253 bytes without control characters",
		     src);

	v = ann(a, p->anns, ANN_VENDOR_DATA);
	p->add_vendor_data = !v.p && a->cfg->vendor_data && a->cfg->vendor_data[0];
	/* The file is re-read when it changes, so check it where it is used:
	 * the API server would turn invalid UTF-8 into U+FFFD without a word. */
	if (p->add_vendor_data && !a->err) {
		size_t n = strlen(a->cfg->vendor_data);
		if (n > VENDOR_DATA_MAX || !utf8_ok(a->cfg->vendor_data, n))
			fail(a, A_DENY,
			     "%s: the cluster-wide vendor-data (--vendor-data-file) is not valid UTF-8 of at most %u bytes",
			     ANN_VENDOR_DATA, VENDOR_DATA_MAX);
	}
}

/* Kubernetes refuses a pod whose annotations (keys + values) pass 256 KiB;
 * say so here, naming the cause, rather than let virt-controller retry. */
static void check_annotation_size(struct adm *a, struct pod *p)
{
	size_t total = 0;
	for (uint32_t k = jv_first(a->v, p->anns); k != JV_NONE; k = jv_next(a->v, p->anns, k)) {
		if (jv_type(a->v, k + 1) != JV_STRING) {
			fail(a, A_BAD, "request.object.metadata.annotations: values must be strings");
			return;
		}
		/* Decoded lengths, as the API server counts them. */
		total += a->v->nodes[k].n + a->v->nodes[k + 1].n;
	}
	total += strlen(ANN_INJECTED) + 4;
	if (p->add_vendor_data)
		total += strlen(ANN_VENDOR_DATA) + strlen(a->cfg->vendor_data);
	if (total > ANNOTATIONS_MAX)
		fail(a, A_DENY,
		     "%s: with the sidecar's annotations%s the pod's annotations would take %zu bytes, past Kubernetes' limit of %u",
		     p->add_vendor_data ? ANN_VENDOR_DATA : ANN_INJECTED,
		     p->add_vendor_data ? " and the cluster-wide vendor-data" : "", total,
		     ANNOTATIONS_MAX);
}

static struct json_object *token_volume(struct pod *p)
{
	struct json_object *sources = json_object_new_array();
	/* "token": the first audience, or the API server's when none is named. */
	struct json_object *dflt = jobj("path", jstr("token"), "expirationSeconds",
					json_object_new_int64(p->expiration), JEND);
	if (p->naud)
		dflt = jset(dflt, "audience", jstrn(p->aud[0]));
	sources = jpush(sources, jobj("serviceAccountToken", dflt, JEND));
	for (size_t i = 0; i < p->naud; i++) {
		char path[300];
		snprintf(path, sizeof(path), "%s/token", p->audir[i]);
		sources = jpush(sources,
				jobj("serviceAccountToken",
				     jobj("audience", jstrn(p->aud[i]), "expirationSeconds",
					  json_object_new_int64(p->expiration), "path", jstr(path), JEND),
				     JEND));
	}
	return jobj("name", jstr(VOL_TOKEN), "projected", jobj("sources", sources, JEND), JEND);
}

static struct json_object *podinfo_volume(struct pod *p)
{
	struct json_object *items = json_object_new_array();
	if (p->ud == UD_INLINE)
		items = jpush(items, podinfo_item("user-data", ANN_USER_DATA));
	items = jpush(items, podinfo_item("vendor-data", ANN_VENDOR_DATA));
	items = jpush(items, podinfo_item("network-config", ANN_NETWORK_CONFIG));
	items = jpush(items, podinfo_item("network-status", ANN_NETWORK_STATUS));
	if (p->meta_data)
		items = jpush(items, podinfo_item("meta-data", ANN_META_DATA));
	return jobj("name", jstr(VOL_PODINFO), "downwardAPI", jobj("items", items, JEND), JEND);
}

static struct json_object *user_data_volume(struct pod *p)
{
	/* Not optional: a VM whose named user-data is missing should not boot
	 * without it; the pod waits and its events say why. */
	if (p->ud == UD_SECRET)
		/* The whole Secret: the key is userdata or user-data and we
		 * cannot look inside; the sidecar tries both. */
		return jobj("name", jstr(VOL_USER_DATA), "secret",
			    jobj("secretName", jstrn(p->secret), JEND), JEND);
	return jobj("name", jstr(VOL_USER_DATA), "configMap",
		    jobj("name", jstrn(p->configmap), "items",
			 jarr(1, jobj("key", jstr("user-data"), "path", jstr("user-data"), JEND)), JEND),
		    JEND);
}

/* The whole Secret, read-only: each key a file of public keys. */
static struct json_object *ssh_keys_volume(struct pod *p)
{
	return jobj("name", jstr(VOL_SSH_KEYS), "secret",
		    jobj("secretName", jstrn(p->ssh_secret), JEND), JEND);
}

/* What outlives a restart of the sidecar (the posted password): the pod's
 * own disk, a few bytes of it. */
static struct json_object *state_volume(void)
{
	return jobj("name", jstr(VOL_STATE), "emptyDir", jobj("sizeLimit", jstr("1Mi"), JEND), JEND);
}

static struct json_object *resources(struct adm *a, struct pod *p)
{
	/* Guaranteed stays Guaranteed only if every container has limits
	 * equal to requests, ours too (the CPU manager pins only then). */
	if (p->guaranteed)
		return jobj("requests",
			    jobj("cpu", jstr(a->cpu), "memory", jstr(a->memory), JEND), "limits",
			    jobj("cpu", jstr(a->cpu), "memory", jstr(a->memory), JEND), JEND);
	return jobj("requests", jobj("cpu", jstr(a->cpu), "memory", jstr(a->memory), JEND), "limits",
		    jobj("memory", jstr(a->memory_limit), JEND), JEND);
}

static struct json_object *sidecar(struct adm *a, struct pod *p)
{
	const char *udfile = p->ud == UD_SECRET      ? SECRET_DIR "/userdata:" SECRET_DIR "/user-data"
			     : p->ud == UD_CONFIGMAP ? CONFIGMAP_DIR "/user-data"
						     : PODINFO_DIR "/user-data";
	struct json_object *env = jarr(
		9, env_field("IMDS_NAMESPACE", "metadata.namespace"),
		/* At CREATE the pod has generateName and no name; the
		 * fieldRef resolves when the container starts. */
		env_field("IMDS_POD_NAME", "metadata.name"),
		env_field("IMDS_SA_NAME", "spec.serviceAccountName"),
		env_value("IMDS_VM_NAME", jstrn(p->vm_name)),
		env_value("IMDS_TOKEN_PATH", jstr(TOKEN_DIR "/token")),
		env_value("IMDS_USER_DATA_FILE", jstr(udfile)),
		env_value("IMDS_VENDOR_DATA_FILE", jstr(PODINFO_DIR "/vendor-data")),
		env_value("IMDS_NETWORK_CONFIG_FILE", jstr(PODINFO_DIR "/network-config")),
		env_value("IMDS_NETWORK_STATUS_FILE", jstr(PODINFO_DIR "/network-status")));
	if (p->instance_id.p)
		env = jpush(env, env_value("IMDS_INSTANCE_ID", jstrn(p->instance_id)));
	if (p->bridge.p)
		env = jpush(env, env_value("IMDS_BRIDGE_NAME", jstrn(p->bridge)));
	if (p->hop_limit.p)
		env = jpush(env, env_value("IMDS_HOP_LIMIT", jstrn(p->hop_limit)));
	if (p->session.p)
		env = jpush(env, env_value("IMDS_SESSION", jstrn(p->session)));
	if (p->ssh_secret.p)
		env = jpush(env, env_value("IMDS_SSH_KEYS_DIR", jstr(SSH_KEYS_DIR)));
	if (p->meta_data)
		env = jpush(env, env_value("IMDS_META_DATA_FILE", jstr(PODINFO_DIR "/meta-data")));
	env = jpush(env, env_value("IMDS_STATE_DIR", jstr(STATE_DIR)));

	struct json_object *mounts =
		jarr(2, mount(VOL_TOKEN, TOKEN_DIR), mount(VOL_PODINFO, PODINFO_DIR));
	if (p->ud != UD_INLINE)
		mounts = jpush(mounts,
			       mount(VOL_USER_DATA, p->ud == UD_SECRET ? SECRET_DIR : CONFIGMAP_DIR));
	if (p->ssh_secret.p)
		mounts = jpush(mounts, mount(VOL_SSH_KEYS, SSH_KEYS_DIR));
	/* the one writable mount (the root filesystem is read-only) */
	mounts = jpush(mounts, jobj("name", jstr(VOL_STATE), "mountPath", jstr(STATE_DIR), JEND));

	/* Root with exactly the three capabilities the network half needs (docs/sidecar.md): Kubernetes has
	 * no ambient capabilities, so a non-root user could not use them.
	 * Container-level settings override the launcher pod's runAsNonRoot. */
	struct json_object *sc = jobj(
		"allowPrivilegeEscalation", json_object_new_boolean(0), "capabilities",
		jobj("add", jarr(3, jstr("NET_ADMIN"), jstr("NET_RAW"), jstr("NET_BIND_SERVICE")),
		     "drop", jarr(1, jstr("ALL")), JEND),
		"privileged", json_object_new_boolean(0), "readOnlyRootFilesystem",
		json_object_new_boolean(1), "runAsNonRoot", json_object_new_boolean(0), "runAsUser",
		json_object_new_int64(0), JEND);

	struct json_object *c = jobj("name", jstr(CONTAINER_NAME), "image", jstr(a->cfg->imds_image),
				     "command", jarr(2, jstr("/imds-server"), jstr("run")), "env", env,
				     JEND);
	/* With pod-level resources (spec.resources) the containers share the
	 * pod's budget; requests of ours could exceed what is left. */
	if (!p->pod_resources)
		c = jset(c, "resources", resources(a, p));
	if (a->cfg->native_sidecar)
		c = jset(c, "restartPolicy", jstr("Always"));
	c = jset(c, "securityContext", sc);
	c = jset(c, "volumeMounts", mounts);
	return c;
}

/* Every element an object with a string name; 1 when one is named name. */
static int has_named(struct adm *a, uint32_t arr, const char *name, const char *where)
{
	int found = 0;
	size_t i = 0;
	for (uint32_t e = jv_first(a->v, arr); e != JV_NONE && !a->err; e = jv_next(a->v, arr, e), i++) {
		if (jv_type(a->v, e) != JV_OBJECT) {
			fail(a, A_BAD, "%s[%zu]: must be an object", where, i);
			break;
		}
		struct str s = mstr(a, e, "name", where);
		found |= str_is(s, name);
	}
	return found;
}

static int all_guaranteed(struct adm *a, uint32_t arr)
{
	for (uint32_t e = jv_first(a->v, arr); e != JV_NONE; e = jv_next(a->v, arr, e))
		if (!container_guaranteed(a, e))
			return 0;
	return 1;
}

static void pod_patch(struct adm *a, struct pod *p)
{
	/* Opted in, so metadata.annotations exists: add keys to it. */
	if (add(a, "/metadata/annotations/imds.kubevirt.io~1injected", jstr("true")) < 0)
		return;
	if (p->add_vendor_data &&
	    add(a, "/metadata/annotations/imds.kubevirt.io~1vendor-data", jstr(a->cfg->vendor_data)) < 0)
		return;

	struct json_object *vols[5];
	size_t nv = 0;
	vols[nv++] = token_volume(p);
	vols[nv++] = podinfo_volume(p);
	if (p->ud != UD_INLINE)
		vols[nv++] = user_data_volume(p);
	if (p->ssh_secret.p)
		vols[nv++] = ssh_keys_volume(p);
	vols[nv++] = state_volume();
	if (p->volumes == JV_NONE) {
		struct json_object *arr = json_object_new_array();
		for (size_t i = 0; i < nv; i++)
			arr = jpush(arr, vols[i]);
		if (add(a, "/spec/volumes", arr) < 0)
			return;
	} else {
		for (size_t i = 0; i < nv; i++)
			if (add(a, "/spec/volumes/-", vols[i]) < 0) {
				while (++i < nv)
					json_object_put(vols[i]);
				return;
			}
	}

	struct json_object *c = sidecar(a, p);
	/* Appended, never inserted: compute stays containers[0] (KubeVirt and
	 * kubectl rely on it), and a native sidecar starts after the init
	 * containers before it, which are short. */
	if (!a->cfg->native_sidecar)
		add(a, "/spec/containers/-", c);
	else if (p->inits != JV_NONE)
		add(a, "/spec/initContainers/-", c);
	else
		add(a, "/spec/initContainers", jarr(1, c));
}

static void pod_admit(struct adm *a, uint32_t req, struct str op)
{
	const char *W = "request.object";
	if (!str_is(op, "CREATE")) {
		/* Pods cannot gain containers or volumes on UPDATE; a patch
		 * would make the API server refuse virt-controller's syncs. */
		reason(a, "%.*s is never patched", (int)op.n, op.p);
		return;
	}
	uint32_t obj = member(a, req, "object", JV_OBJECT, "request");
	if (obj == JV_NONE && !a->err)
		fail(a, A_BAD, "request.object: missing");
	uint32_t meta = member(a, obj, "metadata", JV_OBJECT, W);
	uint32_t labels = member(a, meta, "labels", JV_OBJECT, "request.object.metadata");
	struct pod p = {.anns = JV_NONE, .spec = JV_NONE, .containers = JV_NONE, .inits = JV_NONE,
			.volumes = JV_NONE};
	p.anns = member(a, meta, "annotations", JV_OBJECT, "request.object.metadata");
	struct str launcher = mstr(a, labels, LABEL_LAUNCHER, "request.object.metadata.labels");
	/* The opt-in is read from the parsed map, never from the raw text:
	 * kubectl's last-applied-configuration holds the same words in a string. */
	struct str enabled = ann(a, p.anns, ANN_ENABLED);
	struct str injected = ann(a, p.anns, ANN_INJECTED);
	if (a->err)
		return;
	if (!str_is(launcher, "virt-launcher")) {
		reason(a, "not a virt-launcher pod");
		return;
	}
	if (!str_is(enabled, "true")) {
		reason(a, "not opted in");
		return;
	}
	if (str_is(injected, "true")) {
		reason(a, "already injected");
		return;
	}
	p.spec = member(a, obj, "spec", JV_OBJECT, W);
	if (p.spec == JV_NONE && !a->err)
		fail(a, A_BAD, "request.object.spec: missing");
	p.containers = member(a, p.spec, "containers", JV_ARRAY, "request.object.spec");
	if (p.containers == JV_NONE && !a->err)
		fail(a, A_BAD, "request.object.spec.containers: missing");
	p.inits = member(a, p.spec, "initContainers", JV_ARRAY, "request.object.spec");
	p.volumes = member(a, p.spec, "volumes", JV_ARRAY, "request.object.spec");
	if (a->err)
		return;
	int c1 = has_named(a, p.containers, CONTAINER_NAME, "request.object.spec.containers");
	int c2 = has_named(a, p.inits, CONTAINER_NAME, "request.object.spec.initContainers");
	if (a->err)
		return;
	if (c1 || c2) {
		reason(a, "already has an %s container", CONTAINER_NAME);
		return;
	}
	static const char *const ours[] = {VOL_TOKEN, VOL_PODINFO, VOL_USER_DATA};
	for (size_t i = 0; i < 3; i++)
		if (has_named(a, p.volumes, ours[i], "request.object.spec.volumes") && !a->err)
			fail(a, A_DENY, "the pod already has a volume named %s, which %s needs", ours[i],
			     CONTAINER_NAME);
	if (a->err)
		return;

	pod_settings(a, &p, labels);
	if (!a->err)
		check_annotation_size(a, &p);
	if (a->err)
		return;

	uint32_t pres = member(a, p.spec, "resources", JV_OBJECT, "request.object.spec");
	p.pod_resources = pres != JV_NONE && a->v->nodes[pres].n > 0;
	p.guaranteed = all_guaranteed(a, p.containers) && all_guaranteed(a, p.inits);
	if (a->err)
		return;

	pod_patch(a, &p);
	if (a->err)
		return;
	reason(a, "injected %s (%s%s%s%s)", CONTAINER_NAME,
	       a->cfg->native_sidecar ? "native sidecar" : "container",
	       p.pod_resources ? ", pod-level resources" : p.guaranteed ? ", Guaranteed" : "",
	       p.ud == UD_SECRET ? ", user-data Secret" : p.ud == UD_CONFIGMAP ? ", user-data ConfigMap" : "",
	       p.add_vendor_data ? ", cluster vendor-data" : "");
}

/* ---- VirtualMachines and VirtualMachineInstances ----------------------- */

static int opted_in(struct adm *a, uint32_t meta, const char *where)
{
	uint32_t anns = member(a, meta, "annotations", JV_OBJECT, where);
	char w[96];
	snprintf(w, sizeof(w), "%s.annotations", where);
	return str_is(mstr(a, anns, ANN_ENABLED, w), "true");
}

static void serial_admit(struct adm *a, uint32_t req, struct str op, int vm)
{
	if (!str_is(op, "CREATE") && !str_is(op, "UPDATE")) {
		reason(a, "%.*s is never patched", (int)op.n, op.p);
		return;
	}
	if (!vm && str_is(op, "UPDATE")) {
		/* A VMI's spec is fixed once created: virt-api refuses spec
		 * changes on UPDATE from anyone but KubeVirt ("update of VMI
		 * object is restricted"), and a running domain is never
		 * re-rendered.  A patch here could only break a user's label
		 * edit; a VM's template (UPDATE included) is where it counts. */
		reason(a, "UPDATE of a VMI is never patched");
		return;
	}
	struct str sub = mstr(a, req, "subResource", "request");
	if (sub.n) {
		char q[64];
		reason(a, "subresource %s is never patched", shown(sub, q, sizeof(q)));
		return;
	}
	/* An UPDATE carries object and oldObject: the new one is object. */
	uint32_t obj = member(a, req, "object", JV_OBJECT, "request");
	if (obj == JV_NONE && !a->err)
		fail(a, A_BAD, "request.object: missing");
	uint32_t meta = member(a, obj, "metadata", JV_OBJECT, "request.object");
	int in = opted_in(a, meta, "request.object.metadata");
	if (vm && !in) {
		/* The VM's template is where the VMI's annotations come from;
		 * the VM's own metadata is accepted too. */
		uint32_t spec = member(a, obj, "spec", JV_OBJECT, "request.object");
		uint32_t tmpl = member(a, spec, "template", JV_OBJECT, "request.object.spec");
		uint32_t tmeta = member(a, tmpl, "metadata", JV_OBJECT, "request.object.spec.template");
		in = opted_in(a, tmeta, "request.object.spec.template.metadata");
	}
	if (a->err)
		return;
	if (!in) {
		reason(a, "not opted in");
		return;
	}
	/* The VMI's annotations come from the VM's template. */
	if (vm) {
		uint32_t spec = member(a, obj, "spec", JV_OBJECT, "request.object");
		uint32_t tmpl = member(a, spec, "template", JV_OBJECT, "request.object.spec");
		uint32_t tmeta = member(a, tmpl, "metadata", JV_OBJECT, "request.object.spec.template");
		uint32_t tanns = member(a, tmeta, "annotations", JV_OBJECT,
					"request.object.spec.template.metadata");
		check_data_annotations(a, tanns, "request.object.spec.template.metadata.annotations");
	} else {
		uint32_t anns = member(a, meta, "annotations", JV_OBJECT, "request.object.metadata");
		check_data_annotations(a, anns, "request.object.metadata.annotations");
	}
	if (a->err)
		return;

	static const char *const vm_path[] = {"spec", "template", "spec", "domain", "firmware"};
	static const char *const vmi_path[] = {"spec", "domain", "firmware"};
	const char *const *path = vm ? vm_path : vmi_path;
	size_t depth = vm ? 5 : 3;
	char ptr[128], where[128] = "request.object";
	struct sbuf pb = SBUF_INIT(ptr, sizeof(ptr));
	uint32_t cur = obj;
	for (size_t i = 0; i < depth; i++) {
		uint32_t next = member(a, cur, path[i], JV_OBJECT, where);
		if (a->err)
			return;
		patch_pointer_token(&pb, path[i], strlen(path[i]));
		if (next == JV_NONE) {
			/* Create the missing parents in one add: {"domain":{"firmware":{"serial":..}}} */
			struct json_object *v = jobj("serial", jstr(ADMISSION_SERIAL), JEND);
			for (size_t k = depth - 1; k > i; k--)
				v = jobj(path[k], v, JEND);
			if (add(a, ptr, v) == 0)
				reason(a, "serial set (created %s)", path[i]);
			return;
		}
		size_t wl = strlen(where);
		snprintf(where + wl, sizeof(where) - wl, ".%s", path[i]);
		cur = next;
	}
	struct str s = mstr(a, cur, "serial", where);
	if (a->err)
		return;
	sbuf_puts(&pb, "/serial");
	if (!s.p) {
		if (add(a, ptr, jstr(ADMISSION_SERIAL)) == 0)
			reason(a, "serial set");
		return;
	}
	if (s.n == 0) {
		if (replace(a, ptr, jstr(ADMISSION_SERIAL)) == 0)
			reason(a, "serial set (was empty)");
		return;
	}
	if (memmem(s.p, s.n, "ds=nocloud", 10)) {
		reason(a, "serial already has ds=nocloud");
		return;
	}
	/* cloud-init takes the last ds= token: the user's serial (or the UUID
	 * virt-api's own mutator fills in) survives in front of ours. */
	size_t n = s.n + 1 + strlen(ADMISSION_SERIAL);
	char *joined = malloc(n + 1);
	if (!joined) {
		fail(a, A_NOMEM, "out of memory");
		return;
	}
	memcpy(joined, s.p, s.n);
	joined[s.n] = ' ';
	memcpy(joined + s.n + 1, ADMISSION_SERIAL, strlen(ADMISSION_SERIAL) + 1);
	if (replace(a, ptr, json_object_new_string_len(joined, (int)n)) == 0)
		reason(a, "ds=nocloud appended to the serial");
	free(joined);
}

/* ---- the review ------------------------------------------------------- */

/* A string member for the log line, or "" (never a failure). */
static struct str loose_str(struct adm *a, uint32_t obj, const char *key)
{
	uint32_t v = jv_get(a->v, obj, key);
	struct str s = {"", 0};
	if (v != JV_NONE && jv_type(a->v, v) == JV_STRING && jv_str(a->v, v, &s.p, &s.n) < 0)
		s = (struct str){"", 0};
	return s;
}

static void describe(struct adm *a, uint32_t req, uint32_t obj)
{
	struct str ns = loose_str(a, req, "namespace"), name = loose_str(a, req, "name");
	if (name.n == 0)
		name = loose_str(a, jv_get(a->v, obj, "metadata"), "generateName");
	char cn[64], cs[64];
	snprintf(a->whatbuf, sizeof(a->whatbuf), "%s %s/%s", admission_kind_name(a->res->kind),
		 clean(ns, 0, cs, sizeof(cs)), clean(name, 0, cn, sizeof(cn)));
	a->what = a->whatbuf;
}

static void review(struct adm *a, struct str *uid)
{
	const uint32_t root = 0;
	if (jv_type(a->v, root) != JV_OBJECT) {
		fail(a, A_BAD, "the body is not a JSON object");
		return;
	}
	struct str api = mstr(a, root, "apiVersion", "review");
	struct str kind = mstr(a, root, "kind", "review");
	if (a->err)
		return;
	if (!str_is(api, "admission.k8s.io/v1") || !str_is(kind, "AdmissionReview")) {
		fail(a, A_BAD, "want apiVersion admission.k8s.io/v1, kind AdmissionReview");
		return;
	}
	uint32_t req = member(a, root, "request", JV_OBJECT, "review");
	if (a->err)
		return;
	if (req == JV_NONE) {
		fail(a, A_BAD, "request: missing");
		return;
	}
	*uid = mstr(a, req, "uid", "request");
	if (a->err)
		return;
	if (!uid->p || uid->n == 0 || uid->n > UID_MAX) {
		fail(a, A_BAD, "request.uid: want a string of 1..%d bytes", UID_MAX);
		uid->p = NULL;
		return;
	}
	uint32_t gvk = member(a, req, "kind", JV_OBJECT, "request");
	struct str g = mstr(a, gvk, "group", "request.kind");
	struct str k = mstr(a, gvk, "kind", "request.kind");
	struct str op = mstr(a, req, "operation", "request");
	if (a->err)
		return;
	if (gvk == JV_NONE || !k.p) {
		fail(a, A_BAD, "request.kind: missing");
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
		fail(a, A_BAD, "request.kind: %s in group %s is not handled here (Pod, VirtualMachine, VirtualMachineInstance)",
		     shown(k, q1, sizeof(q1)), shown(g, q2, sizeof(q2)));
		return;
	}
	if (!str_is(op, "CREATE") && !str_is(op, "UPDATE") && !str_is(op, "DELETE") &&
	    !str_is(op, "CONNECT")) {
		fail(a, A_BAD, "request.operation: want CREATE, UPDATE, DELETE or CONNECT");
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
static int respond_review(struct adm *a, struct str uid, const char *patch, size_t plen)
{
	int deny = a->err == A_DENY;
	size_t cap = 256 + 6 * uid.n + (patch ? patch_base64_len(plen) : 0) + (deny ? 6 * strlen(a->msg) : 0);
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	struct sbuf b = SBUF_INIT(buf, cap);
	sbuf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		      "\"response\":{\"uid\":\"");
	sbuf_json_escape(&b, uid.p, uid.n);
	if (deny) {
		sbuf_puts(&b, "\",\"allowed\":false,\"status\":{\"status\":\"Failure\",\"code\":400,"
			      "\"reason\":\"BadRequest\",\"message\":\"");
		sbuf_json_escape(&b, a->msg, strlen(a->msg));
		sbuf_puts(&b, "\"}}}");
	} else if (patch) {
		sbuf_puts(&b, "\",\"allowed\":true,\"patchType\":\"JSONPatch\",\"patch\":\"");
		size_t need = patch_base64_len(plen);
		if (!b.overflow && b.len + need + 1 < b.cap) {
			patch_base64(patch, plen, b.p + b.len);
			b.len += need;
		} else {
			b.overflow = 1;
		}
		sbuf_puts(&b, "\"}}");
	} else {
		sbuf_puts(&b, "\",\"allowed\":true}}");
	}
	if (b.overflow) { /* cap is computed above; cannot happen */
		free(buf);
		return -ENOMEM;
	}
	a->res->http_status = 200;
	set_body(a->res, buf, b.len);
	return 0;
}

/* One view for the process, its buffers reused review after review (the
 * event loop is single-threaded; admission_cleanup() frees them). */
static struct jv view = {.max_depth = ADMISSION_MAX_DEPTH, .max_nodes = ADMISSION_MAX_VALUES};

/* The last review's patch, freed after its answer has left
 * (admission_release() from the loop's before-sleep hook, or the next
 * review): frees that no API server needs to wait for. */
static struct patch *last_patch;

void admission_release(void)
{
	patch_free(last_patch);
	last_patch = NULL;
}

void admission_cleanup(void)
{
	admission_release();
	jv_free(&view);
}

void admission_handle(const struct admission_config *cfg, const char *body, size_t len,
		      struct admission_result *res)
{
	struct adm a = {.cfg = cfg, .res = res, .what = "review", .v = &view};
	struct str uid = {0};

	admission_release(); /* the previous review's, if nobody did yet */
	memset(res, 0, sizeof(*res));
	res->kind = ADM_KIND_OTHER;
	a.cpu = cfg->cpu ? cfg->cpu : "10m";
	a.memory = cfg->memory ? cfg->memory : "16Mi";
	a.memory_limit = cfg->memory_limit ? cfg->memory_limit : "32Mi";

	if (len > ADMISSION_MAX_BODY) {
		respond_error(res, 413, "too_large", "the AdmissionReview is larger than 3 MiB");
		set_reason(res, "review: body of %zu bytes, past 3 MiB", len);
		return;
	}
	if (len == 0) {
		respond_error(res, 400, "bad_review", "empty body (want an AdmissionReview)");
		set_reason(res, "review: empty body");
		return;
	}
	char jerr[160];
	int r = jv_parse(&view, body, len, jerr, sizeof(jerr));
	if (r == -E2BIG) {
		respond_error(res, 413, "too_large", "the AdmissionReview has too many JSON values");
		set_reason(res, "review: more than %d JSON values and member names", ADMISSION_MAX_VALUES);
		goto done;
	}
	if (r < 0) {
		fail(&a, r == -ENOMEM ? A_NOMEM : A_BAD, "not JSON: %s", jerr);
		goto out;
	}
	a.patch = patch_new();
	if (!a.patch) {
		fail(&a, A_NOMEM, "out of memory");
		goto out;
	}
	review(&a, &uid);

out:
	if (a.err == A_OK || a.err == A_DENY) {
		size_t plen = 0;
		const char *pj = NULL;
		if (a.err == A_OK && patch_count(a.patch)) {
			pj = patch_json(a.patch, &plen);
			if (!pj)
				a.err = A_NOMEM;
		}
		if (!a.err || a.err == A_DENY) {
			if (respond_review(&a, uid, pj, plen) < 0) {
				a.err = A_NOMEM;
			} else {
				res->outcome = a.err == A_DENY ? ADM_DENIED : pj ? ADM_PATCHED : ADM_SKIPPED;
				if (a.err == A_DENY)
					set_reason(res, "%s: denied: %s", a.what, a.msg);
				else if (!res->reason[0])
					set_reason(res, "%s: allowed", a.what);
			}
		}
	}
	if (a.err == A_BAD) {
		respond_error(res, 400, "bad_review", a.msg);
		set_reason(res, "%s: malformed: %s", a.what, a.msg);
	} else if (a.err == A_NOMEM) {
		free(res->body);
		res->body = NULL;
		res->body_len = 0;
		respond_error(res, 500, "internal", "out of memory");
		set_reason(res, "%s: out of memory", a.what);
	}
done:
	last_patch = a.patch;
	/* The view's buffers are as large as the largest review so far: do
	 * not keep a few MiB for the sake of the next one. */
	if (len > (256u << 10) || view.cap > 16384)
		jv_free(&view);
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
	struct qty cpu, mem, lim;
	if (quantity_ok("sidecar cpu", cfg->cpu ? cfg->cpu : "10m", &cpu, err, errlen) < 0 ||
	    quantity_ok("sidecar memory", cfg->memory ? cfg->memory : "16Mi", &mem, err, errlen) < 0 ||
	    quantity_ok("sidecar memory limit", cfg->memory_limit ? cfg->memory_limit : "32Mi", &lim,
			err, errlen) < 0)
		return -EINVAL;
	__int128 m, l;
	if (qty_nano(&mem, &m) < 0 || qty_nano(&lim, &l) < 0 || m > l) {
		snprintf(err, errlen, "sidecar memory: the request must not exceed the memory limit");
		return -EINVAL;
	}
	if (cfg->vendor_data) {
		size_t n = strlen(cfg->vendor_data);
		/* Room for it next to the pod's own annotations (256 KiB in all). */
		if (n > VENDOR_DATA_MAX) {
			snprintf(err, errlen, "vendor-data: %zu bytes, past the %u this webhook allows (pod annotations total 256 KiB)",
				 n, VENDOR_DATA_MAX);
			return -EINVAL;
		}
		if (!utf8_ok(cfg->vendor_data, n)) {
			snprintf(err, errlen, "vendor-data: not valid UTF-8 (annotations are JSON strings)");
			return -EINVAL;
		}
	}
	return 0;
}
