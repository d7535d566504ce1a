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
#include "cikeys.h"
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
	const struct cikeys *cikeys; /* the accessCredentials' keys, numbered first */
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

/* Where the VM's own cloud-init came from (IMDS_CLOUD_INIT's source). */
enum inst_ci_source {
	INST_CI_NONE = 0,
	INST_CI_NOCLOUD,     /* a cloudInitNoCloud volume */
	INST_CI_CONFIGDRIVE, /* a cloudInitConfigDrive volume */
};

struct instance {
	const struct imds_config *cfg;
	/* KubeVirt's identity (docs/sidecar.md, "The VM's own cloud-init"):
	 * iid is NoCloud's and EC2's instance-id, uuid OpenStack's,
	 * openstack_iid OpenStack's instance_id; IMDS_INSTANCE_ID overrides all
	 * three. */
	char iid[600];             /* the firmware UUID, or <namespace>-<vmName> when unknown */
	char uuid[600];            /* the firmware UUID, or iid */
	char openstack_iid[600];   /* <vmName>.<namespace> */
	char host[256];
	const char *hostname;      /* spec.hostname, else the VM name up to its first '.' (63 at most) */
	struct metajson ci;        /* IMDS_CLOUD_INIT */
	enum inst_ci_source ci_source;
	struct blob *ci_user_inline, *ci_net_inline; /* decoded; NULL: not inline */
	struct blob *ci_empty;     /* the empty user-data of a volume without one */
	struct dfile ci_user, ci_net; /* from the volume's Secrets */
	struct cikeys cikeys;      /* accessCredentials (IMDS_CLOUD_INIT_DIR/ssh/<i>) */
	/* The pod and its node, as the layouts say them (a layout reads this
	 * model, never the configuration). */
	const char *vm_ns;         /* the VM's namespace */
	/* The pod's Kubernetes identity and its ServiceAccount token, for
	 * kube.c: the VM's name, the pod's, its ServiceAccount's, and the
	 * token's path (IMDS_TOKEN_PATH; its folder holds the audiences'). */
	const char *vm_name, *pod_name, *sa_name;
	const char *token_path;
	const char *zone, *region; /* the node's topology labels; NULL: unknown */
	/* The entry of the SSH keys whose first RSA key OpenStack lists alone
	 * (IMDS_PASSWORD_KEY); NULL: every key. */
	const char *password_key;
	/* The guest has the pod network's MAC: the NIC on tap0 is bound with
	 * bridge or managedTap (IMDS_INTERFACES; KubeVirt's discoverbridge.go
	 * gives the guest the pod interface's MAC); with masquerade or passt
	 * the guest's MAC is its own. */
	int pod_nic_bridged;
	int netcfg_given;          /* IMDS_NETWORK_CONFIG_FILE is set */
	const char *instance_type; /* IMDS_INSTANCE_TYPE, KubeVirt's instancetype, or "kubevirt" */
	int instance_type_known;   /* not the "kubevirt" stand-in */
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
/* A config drive volume's network data, OpenStack's network_data.json as
 * given (NULL: none; the layout renders its own). */
struct blob *inst_openstack_network_data(struct instance *in);
/* The value of key in IMDS_CLOUD_INIT, or NULL. */
const char *inst_ci(const struct instance *in, const char *key);

/* The keys and custom keys, re-read first when their sources changed (one
 * lstat and one stat). */
struct inst_meta inst_meta(struct instance *in);
/* The pod's interfaces, re-read first when the network-status file
 * changed (one stat).  A document that does not parse leaves none, logged
 * once per change. */
struct inst_net inst_net(struct instance *in);

#endif
