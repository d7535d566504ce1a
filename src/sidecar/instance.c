#include "instance.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

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

int inst_open(struct instance *in, const struct imds_config *cfg, char *err, size_t errlen)
{
	memset(in, 0, sizeof(*in));
	in->cfg = cfg;
	in->hostname = cfg->vm_name;
	/* A type a client can always read: Talos retries a missing one for
	 * minutes (its openstack platform, instance-type). */
	in->instance_type = cfg->instance_type ? cfg->instance_type : "kubevirt";
	if (cfg->instance_id)
		snprintf(in->iid, sizeof(in->iid), "%s", cfg->instance_id);
	else
		snprintf(in->iid, sizeof(in->iid), "%s-%s", cfg->ns, cfg->vm_name);
	if (cfg->user_data && !cfg->user_data_file) {
		in->user_inline = blob_new(cfg->user_data, strlen(cfg->user_data));
		if (!in->user_inline) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	int r;
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
}

struct blob *inst_user_data(struct instance *in)
{
	/* The file wins over the inline variable. */
	return in->cfg->user_data_file ? dfile_get(&in->user) : in->user_inline;
}

struct blob *inst_vendor_data(struct instance *in)
{
	return dfile_get(&in->vendor);
}

struct blob *inst_network_config(struct instance *in)
{
	return dfile_get(&in->netcfg);
}

struct inst_meta inst_meta(struct instance *in)
{
	int keys = sshkeys_refresh(&in->keys);
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
	return (struct inst_meta){&in->keys, &in->custom_kv, in->custom_use, in->meta_gen};
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
