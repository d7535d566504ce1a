/* nocloud: the instance in cloud-init's NoCloud layout, under the seed URL
 * the webhook writes into the VM's SMBIOS serial (/v1/).
 *
 * meta-data is YAML: instance-id, local-hostname, public-keys when there
 * are SSH keys, then the custom keys (quoted where a YAML reader would
 * change the value), rendered again only when the instance's meta-data
 * changed.  user-data, vendor-data and network-config are the configured
 * bytes, exactly, and 200 with an empty body when none: cloud-init retries
 * any non-2xx ten times and fails the datasource on a failed user-data. */
#ifndef IMDS_NOCLOUD_H
#define IMDS_NOCLOUD_H

#include <stdint.h>

#include "blob.h"
#include "instance.h"

struct nocloud {
	struct instance *inst;
	struct blob *meta;   /* meta-data as rendered for gen */
	uint64_t gen;
	int netcfg_asked;    /* a guest asked for network-config */
	int netcfg_told;     /* ... or the log said why it had no effect */
};

/* Renders meta-data once.  0 or -ENOMEM. */
int nocloud_open(struct nocloud *nc, struct instance *in);
void nocloud_close(struct nocloud *nc);

struct call;
/* Handlers; c->self is the struct nocloud. */
void nocloud_meta_data(struct call *c);
void nocloud_user_data(struct call *c);
void nocloud_vendor_data(struct call *c);
void nocloud_network_config(struct call *c);

#endif
