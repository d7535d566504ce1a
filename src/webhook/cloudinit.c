#include "cloudinit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "annotations.h"
#include "jview.h"
#include "k8s_names.h"
#include "patch.h"
#include "review.h"
#include "sbuf.h"

/* KubeVirt's instance type annotations (staging/src/kubevirt.io/api/core/
 * v1/types.go); the cluster one wins (cloud-init.go:124-129). */
#define ANN_KV_CLUSTER_INSTANCETYPE "kubevirt.io/cluster-instancetype-name"
#define ANN_KV_INSTANCETYPE "kubevirt.io/instancetype-name"

/* ---- reading the datasource -------------------------------------------- */

struct ci_data {
	struct str user, user_b64, user_secret, net, net_b64, net_secret;
	unsigned char *user_bytes, *net_bytes; /* decoded inline data (owned) */
	long user_len, net_len;                /* -1: none inline */
};

static void data_free(struct ci_data *d)
{
	free(d->user_bytes);
	free(d->net_bytes);
	d->user_bytes = d->net_bytes = NULL;
}

static struct str secret_ref(struct review *a, uint32_t src, const char *key, const char *where)
{
	uint32_t r = rv_member(a, src, key, JV_OBJECT, where);
	return rv_str(a, r, "name", where);
}

/* Inline bytes: the string as is, or base64 decoded; -1 and a denial
 * naming the field when the base64 does not decode. */
static long inline_bytes(struct review *a, struct str raw, struct str b64, unsigned char **out,
			 const char *field, const char *dtype, const char *what)
{
	*out = NULL;
	if (raw.n) {
		*out = malloc(raw.n ? raw.n : 1);
		if (!*out) {
			rv_fail(a, RV_NOMEM, "out of memory");
			return -1;
		}
		memcpy(*out, raw.p, raw.n);
		return (long)raw.n;
	}
	if (!b64.n)
		return -1;
	*out = malloc(b64.n / 4 * 3 + 3);
	if (!*out) {
		rv_fail(a, RV_NOMEM, "out of memory");
		return -1;
	}
	long n = sbuf_b64decode(b64.p, b64.n, *out);
	if (n < 0) /* KubeVirt's words (admitter:1735-1741, 1770-1776) */
		rv_fail(a, RV_DENY, "%s.%s.%s is not a valid base64 value.", field, dtype, what);
	return n;
}

/* One cloud-init datasource, checked as KubeVirt's admitter checks it
 * (vmi-create-admitter.go:1703-1807; the VM admitter the same on its
 * template, vms-admitter.go:221): one user data source and one network
 * data source at most, inline data up to 2048 bytes, at least one source.
 * field: "spec.volumes[1].cloudInitNoCloud" as KubeVirt names it. */
static void read_data(struct review *a, uint32_t src, const char *field, const char *dtype,
		      struct ci_data *d)
{
	const char *w = field;
	memset(d, 0, sizeof(*d));
	d->user_len = d->net_len = -1;
	d->user = rv_str(a, src, "userData", w);
	d->user_b64 = rv_str(a, src, "userDataBase64", w);
	d->user_secret = secret_ref(a, src, "secretRef", w);
	d->net = rv_str(a, src, "networkData", w);
	d->net_b64 = rv_str(a, src, "networkDataBase64", w);
	d->net_secret = secret_ref(a, src, "networkDataSecretRef", w);
	if (a->err)
		return;
	int nuser = (d->user.n > 0) + (d->user_b64.n > 0) + (d->user_secret.n > 0);
	int nnet = (d->net.n > 0) + (d->net_b64.n > 0) + (d->net_secret.n > 0);
	/* The base64 forms first, as the admitter: a bad one is its own cause. */
	unsigned char *ub = NULL, *nb = NULL;
	long ul = d->user_b64.n ? inline_bytes(a, (struct str){0}, d->user_b64, &ub, field, dtype,
					       "userDataBase64")
				: -1;
	long nl = d->net_b64.n ? inline_bytes(a, (struct str){0}, d->net_b64, &nb, field, dtype,
					      "networkDataBase64")
			       : -1;
	free(ub);
	free(nb);
	if (a->err)
		return;
	if (nuser > 1) {
		rv_fail(a, RV_DENY, "%s must have only one userdatasource set.", field);
		return;
	}
	if ((d->user.n ? (long)d->user.n : ul) > CI_INLINE_MAX) {
		rv_fail(a, RV_DENY,
			"%s userdata exceeds %d byte limit. Should use UserDataSecretRef for larger data.",
			field, CI_INLINE_MAX);
		return;
	}
	if (nnet > 1) {
		rv_fail(a, RV_DENY, "%s must have only one networkdata source set.", field);
		return;
	}
	if ((d->net.n ? (long)d->net.n : nl) > CI_INLINE_MAX) {
		rv_fail(a, RV_DENY,
			"%s networkdata exceeds %d byte limit. Should use NetworkDataSecretRef for larger data.",
			field, CI_INLINE_MAX);
		return;
	}
	if (nuser == 0 && nnet == 0) {
		rv_fail(a, RV_DENY, "%s must have at least one userdatasource or one networkdatasource set.",
			field);
		return;
	}
	char q[64];
	if (d->user_secret.n && !k8s_dns1123_subdomain(d->user_secret))
		rv_fail(a, RV_DENY, "%s.secretRef.name: %s is not a Secret name", field,
			rv_shown(d->user_secret, q, sizeof(q)));
	if (d->net_secret.n && !k8s_dns1123_subdomain(d->net_secret))
		rv_fail(a, RV_DENY, "%s.networkDataSecretRef.name: %s is not a Secret name", field,
			rv_shown(d->net_secret, q, sizeof(q)));
	if (a->err)
		return;
	d->user_len = inline_bytes(a, d->user, d->user_b64, &d->user_bytes, field, dtype, "userDataBase64");
	d->net_len = inline_bytes(a, d->net, d->net_b64, &d->net_bytes, field, dtype, "networkDataBase64");
}

/* ---- the VMI or template ----------------------------------------------- */

struct ci_vm {
	int idx;          /* of the first cloud-init volume; -1: none */
	int config_drive; /* it is cloudInitConfigDrive */
	struct str volume;
	struct ci_data d;
	struct str ssh[CI_MAX_SSH];
	size_t nssh;
	int ssh_idx[CI_MAX_SSH]; /* their places in accessCredentials */
	size_t ncred;            /* accessCredentials' length */
};

/* accessCredentials: the SSH key Secrets propagated to this datasource
 * (cloud-init.go:162-212: sshPublicKey with source.secret and
 * propagationMethod noCloud or configDrive; qemuGuestAgent never reaches
 * the disk). */
static void read_creds(struct review *a, uint32_t spec, const char *where, struct ci_vm *c)
{
	char w[160];
	snprintf(w, sizeof(w), "%s.accessCredentials", where);
	uint32_t creds = rv_member(a, spec, "accessCredentials", JV_ARRAY, where);
	const char *method = c->config_drive ? "configDrive" : "noCloud";
	size_t i = 0;
	for (uint32_t e = jv_first(a->v, creds); e != JV_NONE && !a->err; e = jv_next(a->v, creds, e), i++) {
		if (jv_type(a->v, e) != JV_OBJECT) {
			rv_fail(a, RV_BAD, "%s[%zu]: must be an object", w, i);
			return;
		}
		uint32_t ssh = rv_member(a, e, "sshPublicKey", JV_OBJECT, w);
		uint32_t pm = rv_member(a, ssh, "propagationMethod", JV_OBJECT, w);
		uint32_t m = rv_member(a, pm, method, JV_OBJECT, w);
		uint32_t src = rv_member(a, ssh, "source", JV_OBJECT, w);
		uint32_t sec = rv_member(a, src, "secret", JV_OBJECT, w);
		struct str name = rv_str(a, sec, "secretName", w);
		if (a->err || m == JV_NONE || !name.n)
			continue;
		char q[64];
		if (!k8s_dns1123_subdomain(name)) {
			rv_fail(a, RV_DENY, "%s[%zu].sshPublicKey.source.secret.secretName: %s is not a Secret name",
				w, i, rv_shown(name, q, sizeof(q)));
			return;
		}
		if (c->nssh == CI_MAX_SSH) {
			rv_fail(a, RV_DENY, "%s: more than %d SSH key Secrets for %s", w, CI_MAX_SSH, method);
			return;
		}
		c->ssh_idx[c->nssh] = (int)i;
		c->ssh[c->nssh++] = name;
	}
	c->ncred = i;
}

static void read_vm(struct review *a, uint32_t spec, const char *where, struct ci_vm *c)
{
	char w[160];
	snprintf(w, sizeof(w), "%s.volumes", where);
	memset(c, 0, sizeof(*c));
	c->idx = -1;
	c->d.user_len = c->d.net_len = -1;
	uint32_t vols = rv_member(a, spec, "volumes", JV_ARRAY, where);
	/* KubeVirt's field path: the review's path without "request.object." */
	const char *kvw = strncmp(where, "request.object.", 15) == 0 ? where + 15 : where;
	int i = 0;
	for (uint32_t e = jv_first(a->v, vols); e != JV_NONE && !a->err; e = jv_next(a->v, vols, e), i++) {
		if (jv_type(a->v, e) != JV_OBJECT) {
			rv_fail(a, RV_BAD, "%s[%d]: must be an object", w, i);
			return;
		}
		static const char *const types[] = {"cloudInitNoCloud", "cloudInitConfigDrive"};
		for (int t = 0; t < 2; t++) {
			uint32_t src = rv_member(a, e, types[t], JV_OBJECT, w);
			if (src == JV_NONE || a->err)
				continue;
			char field[200];
			snprintf(field, sizeof(field), "%s.volumes[%d].%s", kvw, i, types[t]);
			struct ci_data d;
			read_data(a, src, field, types[t], &d);
			if (c->idx < 0 && !a->err) {
				c->idx = i;
				c->config_drive = t;
				c->volume = rv_str(a, e, "name", w);
				c->d = d;
			} else {
				data_free(&d); /* only the first is used (cloud-init.go:133-158) */
			}
		}
	}
	if (c->idx >= 0 && !a->err)
		read_creds(a, spec, where, c);
}

static int same(const unsigned char *p, long n, struct str s)
{
	return p && s.p && (size_t)n == s.n && memcmp(p, s.p, s.n) == 0;
}

/* One rule (docs/annotations.md): the imds.kubevirt.io annotations win over
 * the volume for what the service serves; a difference is said, never
 * picked silently.  The disk, when kept, still gives the guest its own. */
static void warn_precedence(struct review *a, uint32_t anns, const struct ci_vm *c)
{
	const char *vt = c->config_drive ? "cloudInitConfigDrive" : "cloudInitNoCloud";
	char qv[64];
	const char *vn = rv_shown(c->volume, qv, sizeof(qv));
	struct str ud = rv_str(a, anns, ANN_USER_DATA, "annotations");
	struct str uds = rv_str(a, anns, ANN_USER_DATA_SECRET, "annotations");
	struct str udc = rv_str(a, anns, ANN_USER_DATA_CONFIGMAP, "annotations");
	int vol_user = c->d.user_len >= 0 || c->d.user_secret.n;
	if (vol_user && (uds.p || udc.p))
		rv_warn(a, "imds.kubevirt.io: %s and the %s volume %s both give user-data; the service serves "
			   "the annotation's",
			uds.p ? ANN_USER_DATA_SECRET : ANN_USER_DATA_CONFIGMAP, vt, vn);
	else if (vol_user && ud.p && !same(c->d.user_bytes, c->d.user_len, ud))
		rv_warn(a, "imds.kubevirt.io: %s differs from the user data of the %s volume %s; the service "
			   "serves the annotation's",
			ANN_USER_DATA, vt, vn);
	struct str nc = rv_str(a, anns, ANN_NETWORK_CONFIG, "annotations");
	int vol_net = c->d.net_len >= 0 || c->d.net_secret.n;
	if (vol_net && nc.p && !same(c->d.net_bytes, c->d.net_len, nc))
		rv_warn(a, "imds.kubevirt.io: %s differs from the network data of the %s volume %s; the service "
			   "serves the annotation's",
			ANN_NETWORK_CONFIG, vt, vn);
}

/* A config drive's network data is OpenStack's network_data.json: KubeVirt
 * writes whatever it is given (cloud-init.go:374-400), and cloud-init's
 * ConfigDrive reader then fails on it.  Said, not denied (KubeVirt
 * accepts it). */
static void warn_network_json(struct review *a, const struct ci_vm *c)
{
	if (!c->config_drive || c->d.net_len < 0)
		return;
	struct jv j = {.max_depth = 64, .max_nodes = 100000};
	char err[128];
	int r = jv_parse(&j, (const char *)c->d.net_bytes, (size_t)c->d.net_len, err, sizeof(err));
	if (r == -EINVAL || (r == 0 && jv_type(&j, 0) != JV_OBJECT)) {
		char qv[64];
		rv_warn(a, "imds.kubevirt.io: the network data of the cloudInitConfigDrive volume %s is not a "
			   "JSON object (%s); cloud-init's ConfigDrive reader will not use network_data.json",
			rv_shown(c->volume, qv, sizeof(qv)), r < 0 ? err : "another JSON value");
	}
	jv_free(&j);
}

static int put(struct json_object *o, const char *k, struct str v)
{
	if (!v.p)
		return 0;
	struct json_object *s = json_object_new_string_len(v.p, (int)v.n);
	return s ? json_object_object_add(o, k, s) : -1;
}

static int put_b64(struct json_object *o, const char *k, const unsigned char *p, long n)
{
	if (n < 0)
		return 0;
	char *b = malloc(patch_base64_len((size_t)n) + 1);
	if (!b)
		return -1;
	patch_base64(p, (size_t)n, b);
	int r = put(o, k, (struct str){b, strlen(b)});
	free(b);
	return r;
}

/* The data part of an earlier text of ours: kept when the volume is gone
 * because this webhook removed it (the opt-in) and is called again. */
static int carry(struct review *a, struct json_object *o, struct str old)
{
	struct jv j = {.max_depth = 2, .max_nodes = 64};
	char err[96];
	int r = -1;
	if (jv_parse(&j, old.p, old.n, err, sizeof(err)) < 0 || jv_type(&j, 0) != JV_OBJECT)
		goto out;
	static const char *const keep[] = {CI_KEY_SOURCE,      CI_KEY_VOLUME,
					   CI_KEY_USER_DATA,   CI_KEY_USER_DATA_SECRET,
					   CI_KEY_NETWORK_DATA, CI_KEY_NETWORK_DATA_SECRET,
					   CI_KEY_SSH_SECRETS};
	if (jv_get(&j, 0, CI_KEY_SOURCE) == JV_NONE)
		goto out;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		uint32_t v = jv_get(&j, 0, keep[i]);
		struct str s = {0};
		if (v == JV_NONE || jv_type(&j, v) != JV_STRING)
			continue;
		if (jv_str(&j, v, &s.p, &s.n) < 0 || put(o, keep[i], s) < 0) {
			rv_fail(a, RV_NOMEM, "out of memory");
			goto out;
		}
	}
	r = 0;
out:
	jv_free(&j);
	return r;
}

/* The disk-removal opt-in: the volume, its disk, and the SSH key
 * credentials propagated to it (KubeVirt's admitter requires the volume
 * for them, admitter:1516-1538), removed; the sidecar serves all of it. */
static void remove_disk(struct review *a, uint32_t spec, const struct ci_vm *c)
{
	char p[96];
	snprintf(p, sizeof(p), "/spec/volumes/%d", c->idx);
	rv_remove(a, p);
	uint32_t dom = rv_member(a, spec, "domain", JV_OBJECT, "request.object.spec");
	uint32_t dev = rv_member(a, dom, "devices", JV_OBJECT, "request.object.spec.domain");
	uint32_t disks = rv_member(a, dev, "disks", JV_ARRAY, "request.object.spec.domain.devices");
	int i = 0;
	for (uint32_t e = jv_first(a->v, disks); e != JV_NONE && !a->err; e = jv_next(a->v, disks, e), i++) {
		if (jv_type(a->v, e) != JV_OBJECT)
			continue;
		struct str n = rv_str(a, e, "name", "request.object.spec.domain.devices.disks[]");
		if (n.p && c->volume.p && n.n == c->volume.n && memcmp(n.p, c->volume.p, n.n) == 0) {
			snprintf(p, sizeof(p), "/spec/domain/devices/disks/%d", i);
			rv_remove(a, p);
			break;
		}
	}
	/* Highest index first: each removal leaves the lower ones in place. */
	for (size_t k = c->nssh; k-- > 0 && !a->err;) {
		snprintf(p, sizeof(p), "/spec/accessCredentials/%d", c->ssh_idx[k]);
		rv_remove(a, p);
	}
}

void ci_admit(struct review *a, uint32_t meta, uint32_t anns, uint32_t spec, const char *where, int vmi)
{
	char q[64];
	struct str disk = rv_str(a, anns, ANN_CLOUD_INIT_DISK, "annotations");
	if (disk.p && !str_is(disk, "keep") && !str_is(disk, "remove")) {
		rv_fail(a, RV_DENY, "%s: want keep or remove, got %s", ANN_CLOUD_INIT_DISK,
			rv_shown(disk, q, sizeof(q)));
		return;
	}
	struct ci_vm c;
	read_vm(a, spec, where, &c);
	if (a->err)
		goto out;
	if (c.idx >= 0) {
		warn_precedence(a, anns, &c);
		warn_network_json(a, &c);
	}
	if (!vmi || a->err)
		goto out;
	(void)meta;

	/* KubeVirt's identity: the firmware UUID (virt-api's mutator sets it
	 * on CREATE, before or after this webhook; called again after it
	 * changed the object, reinvocationPolicy IfNeeded, the text follows),
	 * spec.hostname, the instance type annotations. */
	uint32_t dom = rv_member(a, spec, "domain", JV_OBJECT, where);
	uint32_t fw = rv_member(a, dom, "firmware", JV_OBJECT, "spec.domain");
	struct str uuid = rv_str(a, fw, "uuid", "spec.domain.firmware");
	struct str host = rv_str(a, spec, "hostname", where);
	struct str it = rv_str(a, anns, ANN_KV_CLUSTER_INSTANCETYPE, "annotations");
	if (!it.n)
		it = rv_str(a, anns, ANN_KV_INSTANCETYPE, "annotations");
	struct str old = rv_str(a, anns, ANN_CLOUD_INIT, "annotations");
	if (a->err)
		goto out;
	if ((uuid.n && !k8s_identity_ok(uuid)) || (host.n && !k8s_identity_ok(host)) ||
	    (it.n && !k8s_identity_ok(it))) {
		rv_fail(a, RV_DENY, "%s: the firmware UUID, hostname and instance type must be UTF-8 of "
				    "1..253 bytes without control characters",
			where);
		goto out;
	}
	struct json_object *o = json_object_new_object();
	int bad = !o;
	if (o) {
		bad |= uuid.n && put(o, CI_KEY_UUID, uuid) < 0;
		bad |= host.n && put(o, CI_KEY_HOSTNAME, host) < 0;
		bad |= it.n && put(o, CI_KEY_INSTANCE_TYPE, it) < 0;
	}
	if (o && c.idx >= 0) {
		bad |= put(o, CI_KEY_SOURCE, (struct str){c.config_drive ? "configDrive" : "noCloud",
						      c.config_drive ? 11 : 7}) < 0;
		bad |= put(o, CI_KEY_VOLUME, c.volume) < 0;
		bad |= put_b64(o, CI_KEY_USER_DATA, c.d.user_bytes, c.d.user_len) < 0;
		bad |= c.d.user_secret.n && put(o, CI_KEY_USER_DATA_SECRET, c.d.user_secret) < 0;
		bad |= put_b64(o, CI_KEY_NETWORK_DATA, c.d.net_bytes, c.d.net_len) < 0;
		bad |= c.d.net_secret.n && put(o, CI_KEY_NETWORK_DATA_SECRET, c.d.net_secret) < 0;
		if (c.nssh) {
			char list[CI_MAX_SSH * 254];
			struct sbuf b = SBUF_INIT(list, sizeof(list));
			for (size_t k = 0; k < c.nssh; k++) {
				if (k)
					sbuf_putc(&b, ',');
				sbuf_put(&b, c.ssh[k].p, c.ssh[k].n);
			}
			bad |= put(o, CI_KEY_SSH_SECRETS, (struct str){list, strlen(list)}) < 0;
		}
	} else if (o && old.p && str_is(disk, "remove")) {
		bad |= carry(a, o, old) < 0;
	}
	if (bad || a->err) {
		json_object_put(o);
		if (!a->err)
			rv_fail(a, RV_NOMEM, "out of memory");
		goto out;
	}
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (!old.p || !str_is(old, text))
		rv_add(a, "/metadata/annotations/imds.kubevirt.io~1cloud-init", json_object_new_string(text));
	json_object_put(o);
	if (c.idx >= 0 && str_is(disk, "remove") && !a->err)
		remove_disk(a, spec, &c);
out:
	data_free(&c.d);
}

/* ---- the pod --------------------------------------------------------------- */

void ci_pod_free(struct ci_pod *p)
{
	free(p->store);
	memset(p, 0, sizeof(*p));
}

void ci_pod_read(struct review *a, struct str text, struct ci_pod *out)
{
	memset(out, 0, sizeof(*out));
	if (!text.p)
		return;
	out->present = 1;
	struct jv j = {.max_depth = 2, .max_nodes = 64};
	char err[128], q[64];
	if (jv_parse(&j, text.p, text.n, err, sizeof(err)) < 0 || jv_type(&j, 0) != JV_OBJECT) {
		rv_fail(a, RV_DENY, "%s: not a JSON object of strings (the webhook writes it on the VMI)",
			ANN_CLOUD_INIT);
		goto out;
	}
	out->store = malloc(text.n + 64); /* a NUL per value: at most 32 values */
	if (!out->store) {
		rv_fail(a, RV_NOMEM, "out of memory");
		goto out;
	}
	size_t used = 0;
	for (uint32_t k = jv_first(&j, 0); k != JV_NONE; k = jv_next(&j, 0, k)) {
		struct str key, v;
		if (jv_type(&j, k + 1) != JV_STRING || jv_str(&j, k, &key.p, &key.n) < 0 ||
		    jv_str(&j, k + 1, &v.p, &v.n) < 0) {
			rv_fail(a, RV_DENY, "%s: not a JSON object of strings (the webhook writes it on the VMI)",
				ANN_CLOUD_INIT);
			goto out;
		}
		/* Kept: the strings outlive j. */
		char *s = out->store + used;
		memcpy(s, v.p, v.n);
		s[v.n] = '\0';
		used += v.n + 1;
		struct str sv = {s, v.n};
		if (str_is(key, CI_KEY_SOURCE)) {
			out->source = 1;
			if (!str_is(sv, "noCloud") && !str_is(sv, "configDrive"))
				rv_fail(a, RV_DENY, "%s: source: want noCloud or configDrive, got %s", ANN_CLOUD_INIT,
					rv_shown(sv, q, sizeof(q)));
		} else if (str_is(key, CI_KEY_USER_DATA) || str_is(key, CI_KEY_NETWORK_DATA)) {
			/* As the sidecar reads it: canonical, padded, one line. */
			unsigned char *tmp = malloc(sv.n / 4 * 3 + 3);
			if (!tmp) {
				rv_fail(a, RV_NOMEM, "out of memory");
				goto out;
			}
			if (memchr(sv.p, '\n', sv.n) || memchr(sv.p, '\r', sv.n) ||
			    sbuf_b64decode(sv.p, sv.n, tmp) < 0)
				rv_fail(a, RV_DENY, "%s: %.*s is not base64", ANN_CLOUD_INIT, (int)key.n, key.p);
			free(tmp);
		} else if (str_is(key, CI_KEY_USER_DATA_SECRET) || str_is(key, CI_KEY_NETWORK_DATA_SECRET)) {
			if (!k8s_dns1123_subdomain(sv))
				rv_fail(a, RV_DENY, "%s: %s is not a Secret name", ANN_CLOUD_INIT,
					rv_shown(sv, q, sizeof(q)));
			if (str_is(key, CI_KEY_USER_DATA_SECRET))
				out->user_secret = sv;
			else
				out->net_secret = sv;
		} else if (str_is(key, CI_KEY_SSH_SECRETS)) {
			size_t i = 0;
			while (i <= sv.n && !a->err) {
				size_t e = i;
				while (e < sv.n && sv.p[e] != ',')
					e++;
				struct str one = {sv.p + i, e - i};
				if (!k8s_dns1123_subdomain(one) || out->nssh == CI_MAX_SSH)
					rv_fail(a, RV_DENY, "%s: sshSecrets: want up to %d Secret names, comma-separated",
						ANN_CLOUD_INIT, CI_MAX_SSH);
				else
					out->ssh[out->nssh++] = one;
				i = e + 1;
			}
		}
	}
out:
	jv_free(&j);
}
