#include "instance.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sbuf.h"

/* Keys the sidecar writes itself (the webhook refuses them in the
 * annotation; a file that has them anyway loses them, logged). */
static int reserved_key(const struct metakv *kv)
{
	static const char *const names[] = {"instance-id", "local-hostname", "public-keys",
					    "hostname",    "uuid",           NULL};
	for (const char *const *r = names; *r; r++)
		if (strlen(*r) == kv->kn && memcmp(*r, kv->k, kv->kn) == 0)
			return 1;
	return 0;
}

/* Parses the custom bytes in in->custom_seen.  Said in the log only when
 * they are new (changed), not at every keys change. */
static void parse_custom(struct instance *in, int changed)
{
	metajson_free(&in->custom_kv);
	memset(&in->custom_kv, 0, sizeof(in->custom_kv));
	const struct blob *cu = in->custom_seen;
	char err[200];
	if (cu && cu->len && metajson_parse(cu->data, cu->len, &in->custom_kv, err, sizeof(err)) < 0) {
		memset(&in->custom_kv, 0, sizeof(in->custom_kv));
		if (changed)
			log_error("meta-data: IMDS_META_DATA_FILE is not a JSON object of strings (%s); "
				  "custom keys left out", err);
	}
	for (size_t i = 0; i < in->custom_kv.n; i++) {
		const struct metakv *kv = &in->custom_kv.kv[i];
		in->custom_use[i] = INST_CUSTOM_ALL;
		if (reserved_key(kv)) {
			in->custom_use[i] = INST_CUSTOM_RESERVED;
			if (changed)
				log_error("meta-data: key '%s' of IMDS_META_DATA_FILE is reserved, ignored",
					  kv->k);
		} else if (strcmp(kv->k, "namespace") == 0 || strcmp(kv->k, "vmName") == 0) {
			in->custom_use[i] = INST_CUSTOM_NOCLOUD;
		}
	}
}

const char *inst_ci(const struct instance *in, const char *key)
{
	for (size_t i = 0; i < in->ci.n; i++)
		if (strcmp(in->ci.kv[i].k, key) == 0)
			return in->ci.kv[i].v;
	return NULL;
}

/* An inline datum of IMDS_CLOUD_INIT: its bytes (NULL: absent). */
static int ci_inline(struct instance *in, const char *key, struct blob **out, char *err, size_t errlen)
{
	const char *b64 = inst_ci(in, key);
	*out = NULL;
	if (!b64)
		return 0;
	size_t n = strlen(b64);
	unsigned char *buf = malloc(n / 4 * 3 + 3);
	long len = buf ? sbuf_b64decode(b64, n, buf) : -1;
	if (len >= 0)
		*out = blob_new((const char *)buf, (size_t)len);
	free(buf);
	if (len < 0) {
		snprintf(err, errlen, "IMDS_CLOUD_INIT: %s is not base64", key);
		return -EINVAL;
	}
	if (!*out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* A datum from the volume's Secret: the first key of names that exists.  A
 * Secret without either key gives nothing until it has one (KubeVirt's
 * launcher fails when neither the user nor the network key is there,
 * cloud-init.go:239-241; the service serves what there is, logged). */
static int ci_secret(struct instance *in, struct dfile *f, const char *what, const char *sub,
		     const char *k1, const char *k2, char *err, size_t errlen)
{
	char paths[2 * 4200];
	snprintf(paths, sizeof(paths), "%s/%s/%s:%s/%s/%s", in->cfg->cloud_init_dir, sub, k1,
		 in->cfg->cloud_init_dir, sub, k2);
	char e[512];
	int r = dfile_open(f, what, paths, e, sizeof(e));
	if (r == -ENOENT) {
		log_error("cloud-init: the %s Secret has neither key %s nor %s: nothing served until it has "
			  "one (KubeVirt's launcher would not start)",
			  sub, k1, k2);
		return 0;
	}
	if (r < 0)
		snprintf(err, errlen, "%s", e);
	return r;
}

/* The VM's own cloud-init and KubeVirt's identity from IMDS_CLOUD_INIT,
 * which the webhook wrote on the VMI (docs/sidecar.md). */
static int ci_open(struct instance *in, char *err, size_t errlen)
{
	const struct imds_config *cfg = in->cfg;
	if (!cfg->cloud_init)
		return 0;
	char why[200];
	if (metajson_parse(cfg->cloud_init, strlen(cfg->cloud_init), &in->ci, why, sizeof(why)) < 0) {
		memset(&in->ci, 0, sizeof(in->ci));
		snprintf(err, errlen, "IMDS_CLOUD_INIT: not a JSON object of strings (%s)", why);
		return -EINVAL;
	}
	const char *src = inst_ci(in, "source");
	if (!src)
		return 0;
	if (strcmp(src, "noCloud") == 0) {
		in->ci_source = INST_CI_NOCLOUD;
	} else if (strcmp(src, "configDrive") == 0) {
		in->ci_source = INST_CI_CONFIGDRIVE;
	} else {
		snprintf(err, errlen, "IMDS_CLOUD_INIT: source: want noCloud or configDrive, got '%.40s'", src);
		return -EINVAL;
	}
	/* 0 bytes: KubeVirt writes user-data even when the volume has only
	 * network data (cloud-init.go:630-646). */
	in->ci_empty = blob_new("", 0);
	if (!in->ci_empty) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int r;
	if ((r = ci_inline(in, "userData", &in->ci_user_inline, err, errlen)) < 0 ||
	    (r = ci_inline(in, "networkData", &in->ci_net_inline, err, errlen)) < 0)
		return r;
	int secrets = inst_ci(in, "userDataSecret") || inst_ci(in, "networkDataSecret") ||
		      inst_ci(in, "sshSecrets");
	if (secrets && !cfg->cloud_init_dir) {
		snprintf(err, errlen, "IMDS_CLOUD_INIT: names Secrets, but IMDS_CLOUD_INIT_DIR is not set");
		return -EINVAL;
	}
	if (inst_ci(in, "userDataSecret") &&
	    (r = ci_secret(in, &in->ci_user, "IMDS_CLOUD_INIT (userDataSecret)", "user-data", "userdata",
			   "userData", err, errlen)) < 0)
		return r;
	if (inst_ci(in, "networkDataSecret") &&
	    (r = ci_secret(in, &in->ci_net, "IMDS_CLOUD_INIT (networkDataSecret)", "network-data",
			   "networkdata", "networkData", err, errlen)) < 0)
		return r;
	const char *ssh = inst_ci(in, "sshSecrets");
	unsigned nssh = 0;
	for (const char *p = ssh; p && *p; p++)
		nssh += *p == ',';
	if (ssh && *ssh && cikeys_open(&in->cikeys, cfg->cloud_init_dir, nssh + 1) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* KubeVirt's identity (pkg/cloud-init/cloud-init.go:113-158, 411-419;
 * pkg/util/net/dns/sanitize.go:33-44). */
static void identity(struct instance *in)
{
	const struct imds_config *cfg = in->cfg;
	const char *fw = inst_ci(in, "uuid");
	const char *host = inst_ci(in, "hostname");
	if (host && *host) {
		snprintf(in->host, sizeof(in->host), "%s", host);
	} else {
		size_t n = strcspn(cfg->vm_name, ".");
		snprintf(in->host, sizeof(in->host), "%.*s", (int)(n > 63 ? 63 : n), cfg->vm_name);
	}
	in->hostname = in->host;
	in->vm_ns = cfg->ns;
	in->vm_name = cfg->vm_name;
	in->pod_name = cfg->pod_name;
	in->sa_name = cfg->sa_name;
	in->token_path = cfg->token_path;
	in->zone = cfg->zone;
	in->region = cfg->region;
	in->password_key = cfg->password_key;
	in->netcfg_given = cfg->network_config_file != NULL;
	for (size_t i = 0; cfg->have_ifaces && i < cfg->ifaces.n; i++)
		if (strcmp(cfg->ifaces.e[i].tap, "tap0") == 0) {
			in->pod_nic_bridged = cfg->ifaces.e[i].kind == IFACES_BRIDGE ||
					      cfg->ifaces.e[i].kind == IFACES_MANAGEDTAP;
			break;
		}
	/* A type a client can always read: Talos retries a missing one for
	 * minutes (its openstack platform, instance-type). */
	const char *it = inst_ci(in, "instanceType");
	in->instance_type = cfg->instance_type ? cfg->instance_type : it && *it ? it : "kubevirt";
	in->instance_type_known = cfg->instance_type || (it && *it);
	if (cfg->instance_id)
		snprintf(in->iid, sizeof(in->iid), "%s", cfg->instance_id);
	else if (fw && *fw)
		snprintf(in->iid, sizeof(in->iid), "%s", fw);
	else
		snprintf(in->iid, sizeof(in->iid), "%s-%s", cfg->ns, cfg->vm_name);
	snprintf(in->uuid, sizeof(in->uuid), "%s", in->iid);
	if (cfg->instance_id)
		snprintf(in->openstack_iid, sizeof(in->openstack_iid), "%s", cfg->instance_id);
	else
		snprintf(in->openstack_iid, sizeof(in->openstack_iid), "%.290s.%.290s", cfg->vm_name, cfg->ns);
}

int inst_open(struct instance *in, const struct imds_config *cfg, char *err, size_t errlen)
{
	memset(in, 0, sizeof(*in));
	in->cfg = cfg;
	int r = ci_open(in, err, errlen);
	if (r < 0)
		return r;
	identity(in);
	if (cfg->user_data && !cfg->user_data_file) {
		in->user_inline = blob_new(cfg->user_data, strlen(cfg->user_data));
		if (!in->user_inline) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	if ((r = dfile_open(&in->user, "IMDS_USER_DATA_FILE", cfg->user_data_file, err, errlen)) < 0 ||
	    (r = dfile_open(&in->vendor, "IMDS_VENDOR_DATA_FILE", cfg->vendor_data_file, err, errlen)) <
		    0 ||
	    (r = dfile_open(&in->netcfg, "IMDS_NETWORK_CONFIG_FILE", cfg->network_config_file, err,
			    errlen)) < 0 ||
	    (r = dfile_open(&in->custom, "IMDS_META_DATA_FILE", cfg->meta_data_file, err, errlen)) < 0 ||
	    (r = sshkeys_open(&in->keys, cfg->ssh_keys_dir, err, errlen)) < 0 ||
	    (r = password_open(&in->pw, cfg->state_dir, err, errlen)) < 0 ||
	    (r = lc_open(&in->life, cfg->lifecycle_dir, err, errlen)) < 0)
		return r;
	in->custom_seen = cfg->meta_data_file ? blob_ref(dfile_get(&in->custom)) : NULL;
	parse_custom(in, 1);
	in->meta_gen = 1;
	/* Multus writes network-status after the pod starts: a file that is not
	 * there yet is read when it comes (dfile_get). */
	char nerr[256];
	r = dfile_open(&in->netstatus, "IMDS_NETWORK_STATUS_FILE", cfg->network_status_file, nerr,
		       sizeof(nerr));
	if (r < 0 && r != -ENOENT)
		log_error("%s", nerr);
	in->net_gen = 1;
	return 0;
}

void inst_close(struct instance *in)
{
	dfile_close(&in->user);
	dfile_close(&in->vendor);
	dfile_close(&in->netcfg);
	dfile_close(&in->custom);
	sshkeys_close(&in->keys);
	metajson_free(&in->custom_kv);
	blob_unref(in->custom_seen);
	blob_unref(in->user_inline);
	dfile_close(&in->netstatus);
	blob_unref(in->ns_seen);
	password_close(&in->pw);
	lc_close(&in->life);
	in->custom_seen = in->user_inline = in->ns_seen = NULL;
	dfile_close(&in->ci_user);
	dfile_close(&in->ci_net);
	blob_unref(in->ci_user_inline);
	blob_unref(in->ci_net_inline);
	blob_unref(in->ci_empty);
	in->ci_user_inline = in->ci_net_inline = in->ci_empty = NULL;
	cikeys_close(&in->cikeys);
	metajson_free(&in->ci);
	memset(&in->ci, 0, sizeof(in->ci));
}

struct blob *inst_user_data(struct instance *in)
{
	/* The file wins over the inline variable; both over the volume
	 * (docs/annotations.md, "Precedence"). */
	if (in->cfg->user_data_file)
		return dfile_get(&in->user);
	if (in->user_inline || !in->ci_source)
		return in->user_inline;
	if (in->ci_user.ncand) {
		struct blob *b = dfile_get(&in->ci_user);
		return b ? b : in->ci_empty;
	}
	return in->ci_user_inline ? in->ci_user_inline : in->ci_empty;
}

/* The volume's network data, whichever its format. */
static struct blob *ci_net(struct instance *in)
{
	if (in->ci_net.ncand)
		return dfile_get(&in->ci_net);
	return in->ci_net_inline;
}

struct blob *inst_openstack_network_data(struct instance *in)
{
	if (in->ci_source != INST_CI_CONFIGDRIVE || in->cfg->network_config_file)
		return NULL;
	struct blob *b = ci_net(in);
	return b && b->len ? b : NULL;
}

struct blob *inst_vendor_data(struct instance *in)
{
	return dfile_get(&in->vendor);
}

struct blob *inst_network_config(struct instance *in)
{
	if (in->cfg->network_config_file)
		return dfile_get(&in->netcfg);
	/* A config drive's network data is OpenStack's JSON, not NoCloud's
	 * network-config: served as network_data.json only. */
	return in->ci_source == INST_CI_NOCLOUD ? ci_net(in) : NULL;
}

struct inst_meta inst_meta(struct instance *in)
{
	int keys = sshkeys_refresh(&in->keys);
	keys |= in->cikeys.root ? cikeys_refresh(&in->cikeys) : 0;
	struct blob *cu = in->cfg->meta_data_file ? dfile_get(&in->custom) : NULL;
	int custom = cu != in->custom_seen;
	if (keys || custom) {
		if (custom) {
			blob_unref(in->custom_seen);
			in->custom_seen = cu ? blob_ref(cu) : NULL;
			parse_custom(in, 1);
		}
		in->meta_gen++;
	}
	return (struct inst_meta){&in->keys, &in->cikeys, &in->custom_kv, in->custom_use, in->meta_gen};
}

struct inst_net inst_net(struct instance *in)
{
	struct blob *b = dfile_get(&in->netstatus);
	if (b != in->ns_seen) {
		char err[160];
		blob_unref(in->ns_seen);
		in->ns_seen = b ? blob_ref(b) : NULL;
		in->ns.n = 0;
		if (b && b->len && netstatus_parse(b->data, b->len, &in->ns, err, sizeof(err)) < 0)
			log_error("network-status: IMDS_NETWORK_STATUS_FILE is not a Multus "
				  "network-status document (%s); no interfaces are described", err);
		in->net_gen++;
	}
	const char *ipv4 = NULL;
	for (unsigned i = 0; i < in->ns.n && !ipv4; i++)
		if (in->ns.nic[i].is_default && in->ns.nic[i].ipv4[0])
			ipv4 = in->ns.nic[i].ipv4;
	return (struct inst_net){&in->ns, ipv4, in->net_gen};
}
