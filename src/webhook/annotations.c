#include "annotations.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jbuild.h"
#include "jview.h"
#include "k8s_names.h"
#include "review.h"
#include "sbuf.h"

/* imds.kubevirt.io/meta-data: a JSON object of strings, none of them a key
 * the sidecar writes itself, each name once. */
static void check_meta_data(struct review *a, struct str v)
{
	static const char *const reserved[] = {"instance-id", "local-hostname", "public-keys",
					       "hostname",    "uuid",           NULL};
	struct jv j = {.max_depth = 2, .max_nodes = 2 * META_DATA_MAX_KEYS + 2};
	char err[128];
	int pr = jv_parse(&j, v.p, v.n, err, sizeof(err));
	if (pr == -E2BIG) {
		rv_fail(a, RV_DENY, "%s: more than %d keys", ANN_META_DATA, META_DATA_MAX_KEYS);
		goto out;
	}
	if (pr == -ENOMEM) {
		rv_fail(a, RV_NOMEM, "out of memory");
		goto out;
	}
	if (pr < 0) {
		rv_fail(a, RV_DENY, "%s: not JSON (%s); want an object of strings", ANN_META_DATA, err);
		goto out;
	}
	if (jv_type(&j, 0) != JV_OBJECT) {
		rv_fail(a, RV_DENY, "%s: want a JSON object of strings", ANN_META_DATA);
		goto out;
	}
	for (uint32_t k = jv_first(&j, 0); k != JV_NONE; k = jv_next(&j, 0, k)) {
		const char *name;
		size_t n;
		char q[64];
		if (jv_str(&j, k, &name, &n) < 0) {
			rv_fail(a, RV_NOMEM, "out of memory");
			goto out;
		}
		struct str key = {name, n};
		if (jv_type(&j, k + 1) != JV_STRING) {
			rv_fail(a, RV_DENY, "%s: the value of %s is not a string", ANN_META_DATA,
			     rv_shown(key, q, sizeof(q)));
			goto out;
		}
		for (const char *const *r = reserved; *r; r++) {
			if (str_is(key, *r)) {
				rv_fail(a, RV_DENY, "%s: %s is set by the sidecar itself", ANN_META_DATA, *r);
				goto out;
			}
		}
		for (uint32_t e = jv_first(&j, 0); e != k; e = jv_next(&j, 0, e)) {
			if (jv_str_eq(&j, e, name, n)) {
				rv_fail(a, RV_DENY, "%s: %s appears twice", ANN_META_DATA,
				     rv_shown(key, q, sizeof(q)));
				goto out;
			}
		}
	}
out:
	jv_free(&j);
}

void ann_check_data(struct review *a, uint32_t anns, const char *where)
{
	char q[64];
	struct str pk = rv_str(a, anns, ANN_PASSWORD_KEY, where);
	if (pk.p && (!k8s_secret_key_ok(pk) || !rv_str(a, anns, ANN_SSH_KEYS_SECRET, where).p))
		rv_fail(a, RV_DENY, "%s: %s must be a key of the Secret %s names", ANN_PASSWORD_KEY,
		     rv_shown(pk, q, sizeof(q)), ANN_SSH_KEYS_SECRET);
	struct str sf = rv_str(a, anns, ANN_SERIAL_FORM, where);
	if (sf.p && !str_is(sf, "nocloud") && !str_is(sf, "nocloud-net"))
		rv_fail(a, RV_DENY, "%s: want nocloud or nocloud-net, got %s", ANN_SERIAL_FORM,
		     rv_shown(sf, q, sizeof(q)));
	struct str fam = rv_str(a, anns, ANN_IP_FAMILY, where);
	if (fam.p && !str_is(fam, "IPv4") && !str_is(fam, "IPv6"))
		rv_fail(a, RV_DENY, "%s: want IPv4 or IPv6, got %s", ANN_IP_FAMILY,
			rv_shown(fam, q, sizeof(q)));
	struct str dc = rv_str(a, anns, ANN_DMI_CHASSIS, where);
	if (dc.p && !str_is(dc, "true") && !str_is(dc, "false"))
		rv_fail(a, RV_DENY, "%s: want true or false, got %s", ANN_DMI_CHASSIS, rv_shown(dc, q, sizeof(q)));
	struct str v = rv_str(a, anns, ANN_META_DATA, where);
	if (v.p)
		check_meta_data(a, v);
	v = rv_str(a, anns, ANN_SSH_KEYS_SECRET, where);
	if (v.p && !k8s_dns1123_subdomain(v))
		rv_fail(a, RV_DENY, "%s: %s is not a Secret name (DNS-1123 subdomain)", ANN_SSH_KEYS_SECRET,
		     rv_shown(v, q, sizeof(q)));
}

void ann_warn_vm_own(struct review *a, uint32_t anns, uint32_t tanns)
{
	char list[160];
	struct sbuf b = SBUF_INIT(list, sizeof(list));
	size_t n = 0, more = 0;
	const size_t plen = strlen(ANN);
	for (uint32_t k = jv_first(a->v, anns); k != JV_NONE; k = jv_next(a->v, anns, k)) {
		struct str key = rv_jstring(a, k);
		if (a->err)
			return;
		if (key.n <= plen || memcmp(key.p, ANN, plen) != 0)
			continue;
		if (tanns != JV_NONE) {
			int on_template = 0;
			for (uint32_t tk = jv_first(a->v, tanns); tk != JV_NONE && !on_template;
			     tk = jv_next(a->v, tanns, tk))
				on_template = jv_str_eq(a->v, tk, key.p, key.n);
			if (on_template)
				continue;
		}
		char q[64];
		size_t before = b.len;
		if (n)
			sbuf_puts(&b, ", ");
		sbuf_puts(&b, rv_clean(key, 0, q, sizeof(q)));
		if (b.overflow || b.len > 100) {
			b.len = before;
			b.p[before] = '\0';
			b.overflow = 0;
			more++;
			continue;
		}
		n++;
	}
	if (n == 0)
		return;
	/* One warning, under RV_WARNING_MAX: at most 100 bytes of names. */
	char tail[32] = "";
	if (more)
		snprintf(tail, sizeof(tail), " and %zu more", more);
	rv_warn(a, "imds.kubevirt.io: %s%s %s on the VirtualMachine's own metadata; KubeVirt copies only "
		   "spec.template.metadata.annotations to the VMI and its pod: move %s there",
		list, tail, n + more == 1 ? "is" : "are", n + more == 1 ? "it" : "them");
}

static const char *const eviction_known[] = {"LiveMigrate", "LiveMigrateIfPossible", "External",
					     "None", NULL};

int ann_eviction_known(const char *s)
{
	for (const char *const *k = eviction_known; *k; k++)
		if (strcmp(s, *k) == 0)
			return 1;
	return 0;
}

void ann_record_eviction(struct review *a, uint32_t spec, uint32_t anns)
{
	static const char path[] = "/metadata/annotations/imds.kubevirt.io~1eviction-strategy";
	const char *const *known = eviction_known;
	struct str es = rv_str(a, spec, "evictionStrategy", "request.object.spec");
	struct str old = rv_str(a, anns, ANN_EVICTION_STRATEGY, "request.object.metadata.annotations");
	if (a->err)
		return;
	const char *rec = NULL;
	for (const char *const *k = known; es.p && *k && !rec; k++)
		if (str_is(es, *k))
			rec = *k;
	/* None set: the cluster's default applies (virt-controller reads it
	 * when it decides on an eviction), as the operator told us. */
	if (!es.p && a->cfg->default_eviction)
		rec = a->cfg->default_eviction;
	if (!rec) {
		/* None set (the cluster's default applies, which the webhook cannot
		 * read), or a value KubeVirt's own validation refuses: a value a
		 * user wrote would mislead the sidecar. */
		if (old.p)
			rv_remove(a, path);
		return;
	}
	if (old.p && str_is(old, rec))
		return;
	rv_add(a, path, jb_str(rec));
}
