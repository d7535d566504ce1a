/* openstack: the instance in the layout of OpenStack's metadata service
 * (Nova), for cloudbase-init on Windows, cloud-init's OpenStack datasource,
 * Ignition's and Talos' openstack platforms.
 *
 * /openstack lists the versions; /openstack/<version>/ its files:
 * meta_data.json (uuid = the instance id, name and hostname = the VM name,
 * public_keys and keys from the SSH keys, the custom keys under "meta"),
 * user_data (404 when none, as Nova), vendor_data.json (the vendor-data in
 * its "cloud-init" key), network_data.json (a link per secondary network
 * of the pod, with DHCP where the network has an address), from 2013-04-04
 * the password (password.c), from 2016-10-06 vendor_data2.json (Nova's
 * dynamic vendor data: none here).
 *
 * The password: cloudbase-init encrypts the one it generates to the first
 * of list(set(keys)), an arbitrary one of several, and fails after it
 * changed the password when that key is not RSA.  With IMDS_PASSWORD_KEY
 * (imds.kubevirt.io/password-key) naming an entry of the SSH keys Secret,
 * this layout lists that entry's first ssh-rsa key alone; without it, an
 * ambiguous choice (several keys, or one not RSA) is logged. */
#ifndef IMDS_OPENSTACK_H
#define IMDS_OPENSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "instance.h"

/* The one table of a version's files, in Nova's order, each served from
 * its version on (NULL: every one), kept in that order: what a version
 * lists is the rows up to the first it does not serve.  A row: its id, its
 * name, that version, its handler, the methods it takes and the member of
 * imds.c's app its handler's state is.  openstack.c derives the listing and
 * a version predicate per row (openstack_serves_<id>) from it, imds.c its route
 * rows (OPENSTACK_ROUTES), so that a file, its listing and its route cannot drift. */
#define OPENSTACK_FILES(X)                                                                              \
	X(meta, "meta_data.json", NULL, openstack_meta_data, HTTPROUTE_READ, openstack)                 \
	X(user, "user_data", NULL, openstack_user_data, HTTPROUTE_READ, openstack)                      \
	X(vendor, "vendor_data.json", NULL, openstack_vendor_data, HTTPROUTE_READ, openstack)           \
	X(network, "network_data.json", NULL, openstack_network_data, HTTPROUTE_READ, openstack)        \
	/* GRIZZLY; the handler is password.c's */                                                      \
	X(password, "password", "2013-04-04", password_serve, HTTPROUTE_READ | HTTPROUTE_POST, inst.pw) \
	/* NEWTON_TWO */                                                                                \
	X(vendor2, "vendor_data2.json", "2016-10-06", openstack_vendor_data2, HTTPROUTE_READ, openstack)

#define OPENSTACK_FILES_MAX 8 /* rows of the table of files */

struct openstack {
	struct instance *inst;
	struct blob *meta;        /* meta_data.json as rendered for gen */
	uint64_t gen;
	struct blob *vendor_src;  /* the vendor-data vendor_json was made of (a reference) */
	struct blob *vendor_json;
	struct blob *net;         /* network_data.json as rendered for net_gen */
	uint64_t net_gen;
	unsigned net_links;       /* its links: none is served as 404 */
	/* Every file's name and '\n', in the table's order (openstack.c):
	 * a version's listing is a prefix of it, listing_len[its files]. */
	char listing[128];
	size_t listing_len[OPENSTACK_FILES_MAX + 1];
};

/* Renders meta_data.json once.  0 or -ENOMEM. */
int openstack_open(struct openstack *os, struct instance *in);
void openstack_close(struct openstack *os);

/* Route versions: "latest" or a YYYY-MM-DD date. */
int openstack_version_ok(const char *v, size_t n);
/* Per row of OPENSTACK_FILES: 1 when version v[0..n) serves that file. */
#define OPENSTACK_SERVES_DECL(id, ...) int openstack_serves_##id(const char *v, size_t n);
OPENSTACK_FILES(OPENSTACK_SERVES_DECL)
#undef OPENSTACK_SERVES_DECL

/* The route rows of the files (httproute.h), derived from OPENSTACK_FILES, for a
 * table whose owner has the members the rows name: the includer defines
 * AT(member), the member's offset in that owner (imds.c). */
#define OPENSTACK_ROUTE(id, name, since, fn, methods, state) \
	{(methods), 0, "/openstack/{v}/" name, openstack_serves_##id, fn, AT(state)},
#define OPENSTACK_ROUTES OPENSTACK_FILES(OPENSTACK_ROUTE)

/* The i-th file a version may list, NULL past the last: for the tests
 * that hold the listing to the routes. */
const char *openstack_file_name(size_t i);

struct call;
/* Handlers; c->self is the struct openstack, c->ver the version.  openstack_files
 * lists the version's files, derived from the one table of them. */
void openstack_versions(struct call *c);
void openstack_files(struct call *c);
void openstack_meta_data(struct call *c);
void openstack_user_data(struct call *c);
void openstack_vendor_data(struct call *c);
void openstack_vendor_data2(struct call *c);
void openstack_network_data(struct call *c);

#endif
