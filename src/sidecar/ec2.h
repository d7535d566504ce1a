/* ec2: the instance in the layout of AWS's instance metadata service, for
 * afterburn (Fedora CoreOS, Flatcar), Talos' openstack platform, systemd's
 * imdsd, cloudbase-init's EC2Service, AWS SDKs and cloud-init's EC2
 * readers.
 *
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
 * /<version>/dynamic/instance-identity/document a JSON document.  A listed
 * name is always there: cloud-init's crawler fails on one that is not.
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

/* Route versions: "latest", "1.0" or a YYYY-MM-DD date. */
int ec2_version_ok(const char *v, size_t n);

/* The i-th path of the meta-data tree (a leaf or a folder), NULL past the
 * last: for the tests that walk it. */
const char *ec2_tree_path(size_t i);

/* IMDSv2: PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds,
 * the token presented as X-aws-ec2-metadata-token. */
extern const struct session_dialect ec2_session;

struct call;
/* PUT /latest/api/token: session_open in EC2's dialect; c->self is the
 * struct sessions. */
void ec2_token(struct call *c);
/* Handlers; c->self is the struct ec2, c->ver the version, c->rest the
 * path under meta-data/ or dynamic/. */
void ec2_versions(struct call *c);
void ec2_root(struct call *c);
void ec2_meta_data(struct call *c);
void ec2_user_data(struct call *c);
void ec2_dynamic(struct call *c);

#endif
