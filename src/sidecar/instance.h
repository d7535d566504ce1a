/* instance: the one model of the VM that every layout renders.
 *
 * What a cloud knows of its instance — id, hostname, SSH keys, user-data,
 * vendor-data, network-config, custom meta-data, the posted password — held
 * once, each from its source: the configuration, a data file (re-read when
 * it changed, one stat per use), the SSH keys folder.  Byte sources are
 * blobs, whose digest is their ETag; the derived meta-data (keys and custom
 * keys) carries a generation that moves only when one of its sources
 * changed, so a layout renders its view again only then (Firecracker's
 * mmds: one store, a view per client). */
#ifndef IMDS_INSTANCE_H
#define IMDS_INSTANCE_H

#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "config.h"
#include "dfile.h"
#include "lifecycle.h"
#include "metajson.h"
#include "netstatus.h"
#include "password.h"
#include "sshkeys.h"

/* A custom meta-data key as the layouts may use it. */
enum inst_custom_use {
	INST_CUSTOM_ALL = 0,     /* every layout */
	INST_CUSTOM_RESERVED,    /* one of ours: left out everywhere (logged) */
	INST_CUSTOM_NOCLOUD,     /* NoCloud only: OpenStack's "meta" has ours */
};

/* The meta-data a layout renders: keys and custom keys, and the
 * generation of this content (it moves when either source changed). */
struct inst_meta {
	const struct sshkeys *keys;
	const struct metajson *custom;              /* parsed; n 0 when none */
	const enum inst_custom_use *custom_use;     /* one per custom key */
	uint64_t gen;
};

/* The pod's interfaces (Multus network-status) and the generation of
 * this content.  ipv4: the default network's first IPv4, the address the
 * cluster reaches the VM at (NULL: not known). */
struct inst_net {
	const struct netstatus *ns;
	const char *ipv4;
	uint64_t gen;
};

struct instance {
	const struct imds_config *cfg;
	char iid[600];             /* IMDS_INSTANCE_ID, or <namespace>-<vmName> */
	const char *hostname;      /* the VM name */
	const char *instance_type; /* IMDS_INSTANCE_TYPE, or "kubevirt" */
	struct blob *user_inline;  /* IMDS_USER_DATA */
	struct dfile user, vendor, netcfg;
	struct sshkeys keys;       /* IMDS_SSH_KEYS_DIR */
	struct dfile custom;       /* IMDS_META_DATA_FILE */
	struct blob *custom_seen;  /* the custom bytes the meta was parsed from */
	struct metajson custom_kv;
	enum inst_custom_use custom_use[METAJSON_MAX_KEYS];
	uint64_t meta_gen;
	struct dfile netstatus;    /* IMDS_NETWORK_STATUS_FILE: may appear late */
	struct blob *ns_seen;      /* the bytes ns was parsed from */
	struct netstatus ns;
	uint64_t net_gen;
	struct password pw;        /* posted by the guest (password.c) */
	struct lifecycle life;     /* IMDS_LIFECYCLE_DIR: what is about to happen (lifecycle.c) */
};

/* Opens every source.  0, or -errno with a message naming the setting. */
int inst_open(struct instance *in, const struct imds_config *cfg, char *err, size_t errlen);
void inst_close(struct instance *in);

/* The current bytes of a source (borrowed; NULL: none configured). */
struct blob *inst_user_data(struct instance *in);
struct blob *inst_vendor_data(struct instance *in);
struct blob *inst_network_config(struct instance *in);

/* The keys and custom keys, re-read first when their sources changed (one
 * lstat and one stat). */
struct inst_meta inst_meta(struct instance *in);
/* The pod's interfaces, re-read first when the network-status file
 * changed (one stat).  A document that does not parse leaves none, logged
 * once per change. */
struct inst_net inst_net(struct instance *in);

#endif
