/* ec2: the instance in the layout of AWS's instance metadata service, for
 * afterburn (Fedora CoreOS, Flatcar), Talos' openstack platform, systemd's
 * imdsd, cloudbase-init's EC2Service, AWS SDKs and cloud-init's EC2
 * readers.
 *
 * A version is one table of its parts (EC2_PARTS below): dynamic/,
 * meta-data/ and user-data; GET /<version>/ lists the parts that are there
 * (bare names, as EC2's: user-data only when there is some) and imds.c's
 * route rows are expanded from it, so a part, its listing entry and its
 * route cannot drift.
 * /<version>/meta-data/ is a tree of listings (one name a line, a folder
 * with a trailing '/') and leaves, one table (ec2.c's tree) whose
 * listings are derived from its rows: hostname, instance-id, instance-type,
 * local-hostname, local-ipv4 (when the network-status names the pod's
 * address), placement/availability-zone and placement/region (when
 * configured), public-keys/ as "N=<name>" with public-keys/N/openssh-key
 * (the accessCredentials' keys first), and the lifecycle's (events.c):
 * events/maintenance/{history,scheduled}, spot/instance-action while a
 * termination is pending.
 * /<version>/user-data is the user-data (404 when none, as EC2), and
 * /<version>/dynamic/ a tree of the same kind (ec2.c's dynamic): its one
 * leaf instance-identity/document, a JSON document.  A listed name is
 * always there: cloud-init's crawler fails on one that is not.
 * Sessions: IMDSv2's headers are EC2's dialect (ec2_session) of
 * session.c's table of tokens. */
#ifndef IMDS_EC2_H
#define IMDS_EC2_H

#include <stddef.h>

#include "instance.h"
#include "session.h"
#include "sshkeys.h"

struct ec2 {
	struct instance *inst;
	/* The answer being sent: the longest is the public-keys listing
	 * (every key's name) or one key. */
	char out[SSHKEYS_MAX * 272 + SSHKEY_LINE_MAX];
};

void ec2_open(struct ec2 *e, struct instance *in);

/* The one table of a version's parts, sorted (GET /<version>/ lists them
 * in this order): its id, its name, its handler, LEAF (the route
 * /{v}/<name>) or TREE (that and /{v}/<name>/ with anything after it, the
 * handler's c->rest the path under it), and the condition it is listed on
 * (ec2.c's, NULL: always).  ec2.c derives the version's listing from it, imds.c its route
 * rows (EC2_ROUTES). */
#define EC2_PARTS(X)                                                   \
	X(dynamic, "dynamic", ec2_dynamic, TREE, NULL)                 \
	X(meta, "meta-data", ec2_meta_data, TREE, NULL)                \
	/* as EC2: listed only when there is some */                  \
	X(user, "user-data", ec2_user_data, LEAF, has_user_data)

/* The route rows of the parts (httproute.h), every one gated (IMDS_SESSION=
 * required), for a table whose owner has a member ec2: the includer
 * defines AT(member), as for OPENSTACK_ROUTES (imds.c). */
#define EC2_ROUTE_LEAF(name, fn)
#define EC2_ROUTE_TREE(name, fn) \
	{HTTPROUTE_READ, HTTPROUTE_GATED, "/{v}/" name "/*", ec2_version_ok, fn, AT(ec2)},
#define EC2_ROUTE(id, name, fn, kind, has)                                            \
	{HTTPROUTE_READ, HTTPROUTE_GATED, "/{v}/" name, ec2_version_ok, fn, AT(ec2)}, \
		EC2_ROUTE_##kind(name, fn)
#define EC2_ROUTES EC2_PARTS(EC2_ROUTE)

/* Route versions: "latest", "1.0" or a YYYY-MM-DD date. */
int ec2_version_ok(const char *v, size_t n);

/* The i-th path of the meta-data tree (a leaf or a folder), of the
 * dynamic tree, the i-th part of a version; NULL past the last: for the
 * tests that hold each table to its listings. */
const char *ec2_tree_path(size_t i);
const char *ec2_dynamic_path(size_t i);
const char *ec2_part_name(size_t i);

/* IMDSv2: PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds,
 * the token presented as X-aws-ec2-metadata-token. */
extern const struct session_dialect ec2_session;

struct call;
/* PUT /latest/api/token: session_open in EC2's dialect; c->self is the
 * struct sessions. */
void ec2_token(struct call *c);
/* Handlers; c->self is the struct ec2, c->ver the version, c->rest the
 * path under meta-data/ or dynamic/.  ec2_root lists the version's parts. */
void ec2_versions(struct call *c);
void ec2_root(struct call *c);
void ec2_meta_data(struct call *c);
void ec2_user_data(struct call *c);
void ec2_dynamic(struct call *c);

#endif
