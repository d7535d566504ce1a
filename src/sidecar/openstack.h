/* openstack: the instance in the layout of OpenStack's metadata service
 * (Nova), for cloudbase-init on Windows, cloud-init's OpenStack datasource,
 * Ignition's and Talos' openstack platforms.
 *
 * /openstack lists the versions; /openstack/<version>/ its files:
 * meta_data.json (uuid = the instance id, name and hostname = the VM name,
 * public_keys and keys from the SSH keys, the custom keys under "meta"),
 * user_data (404 when none, as Nova), vendor_data.json (the vendor-data in
 * its "cloud-init" key), network_data.json, and from 2013-04-04 the
 * password (password.c). */
#ifndef IMDS_OPENSTACK_H
#define IMDS_OPENSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "instance.h"

struct openstack {
	struct instance *inst;
	struct blob *meta;        /* meta_data.json as rendered for gen */
	uint64_t gen;
	struct blob *vendor_src;  /* the vendor-data vendor_json was made of (a reference) */
	struct blob *vendor_json;
};

/* Renders meta_data.json once.  0 or -ENOMEM. */
int os_open(struct openstack *os, struct instance *in);
void os_close(struct openstack *os);

/* Route versions: "latest" or a YYYY-MM-DD date; the password from
 * 2013-04-04 on. */
int os_version_ok(const char *v, size_t n);
int os_password_version_ok(const char *v, size_t n);

struct call;
/* Handlers; c->self is the struct openstack, c->ver the version. */
void os_versions(struct call *c);
void os_files(struct call *c);
void os_meta_data(struct call *c);
void os_user_data(struct call *c);
void os_vendor_data(struct call *c);
void os_network_data(struct call *c);

#endif
