/* config: the sidecar's settings, from the environment (docs/sidecar.md,
 * "Configuration").  Strings point into the environment; nothing is copied. */
#ifndef IMDS_CONFIG_H
#define IMDS_CONFIG_H

#include <stddef.h>

#include "http.h"
#include "binding.h"

#define IMDS_DEFAULT_LISTEN "169.254.169.254:80"
#define IMDS_DEFAULT_TOKEN_PATH "/var/run/secrets/tokens/token"
#define IMDS_DEFAULT_RATE 100
/* The bound of the loop's poll before it sleeps (loop_set_busy_poll), us:
 * off unless asked for (docs/sidecar.md "Busy poll": polling sidecars took
 * CPU from the work beside them, measured by two full test runs). */
#define IMDS_DEFAULT_BUSY_POLL_US 0
/* One link: a guest on the bridge is served, anything it routes is not. */
#define IMDS_DEFAULT_HOP_LIMIT 1
/* The one request with a body: POST .../password (at most 1,024 bytes, else
 * 400).  The HTTP core refuses larger bodies with 413 before reading them. */
#define IMDS_MAX_BODY 4096

struct imds_config {
	const char *listen_addr;
	const char *ns, *vm_name, *pod_name, *sa_name;
	const char *instance_id;         /* NULL: <namespace>-<vmName> */
	const char *token_path;
	const char *user_data;           /* inline; the file wins */
	const char *user_data_file;
	const char *vendor_data_file;
	const char *network_config_file;
	const char *bridge_name;         /* NULL: the taps of every k6t-* bridge */
	int have_ifaces;                 /* IMDS_INTERFACES was set */
	struct ifaces ifaces;            /* ... and what it says (the webhook's) */
	const char *network_status_file; /* Multus network-status (downward API) */
	const char *ssh_keys_dir;        /* a Secret of OpenSSH public keys */
	const char *meta_data_file;      /* custom meta-data, a JSON object of strings */
	const char *state_dir;           /* survives restarts (emptyDir): the password */
	const char *password_key;        /* the SSH keys entry cloudbase-init encrypts to */
	const char *instance_type;       /* NULL: "kubevirt" */
	const char *zone, *region;       /* placement, when known */
	const char *lifecycle_dir;       /* the pod's lifecycle files (lifecycle.h) */
	const char *cloud_init;          /* the VM's own cloud-init and KubeVirt's identity (JSON) */
	const char *cloud_init_dir;      /* its Secrets: user-data/, network-data/, ssh/<i>/ */
	unsigned rate_limit;             /* req/s, burst equal; 0 = off */
	unsigned hop_limit;              /* IP TTL of every answer, 1..64 */
	unsigned busy_poll_us;           /* the loop's poll before it sleeps, 0 = off */
	int session_required;            /* IMDS_SESSION=required */
	struct http_limits limits;
};

/* Reads and checks every variable.  0, or -EINVAL with a one-line message
 * naming the variable in err (main prints it and exits 2). */
int config_from_env(struct imds_config *c, char *err, size_t errlen);
/* Only what `init` uses: the network variables (IMDS_INTERFACES,
 * IMDS_BRIDGE_NAME, IMDS_LISTEN_ADDR) and, when present, the identity that
 * names veth-imds's MAC.  Same errors. */
int config_net_from_env(struct imds_config *c, char *err, size_t errlen);
/* A whole unsigned number in [min, max]; 0 or -EINVAL. */
int config_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);

#endif
