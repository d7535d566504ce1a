/* netstatus: the pod's interfaces from Multus' network-status annotation
 * (k8s.v1.cni.cncf.io/network-status, a downward-API file), for the
 * layouts that describe the VM's network (OpenStack's network_data.json,
 * EC2's local-ipv4).
 *
 * The document is a JSON array of objects; of each, "name" (the network,
 * "namespace/nad" or the default network's), "interface" (the pod's),
 * "mac", the first IPv4 of "ips" and "default" are kept; every other member
 * is skipped whatever its value.  Strict RFC 8259 (what Multus writes; read
 * with the core's jview.h), an escaped lone surrogate refused, nesting
 * capped, fixed caps on what is kept: bytes in, a table out. */
#ifndef IMDS_NETSTATUS_H
#define IMDS_NETSTATUS_H

#include <stddef.h>
#include <stdint.h>

#define NETSTATUS_MAX_NICS 16
#define NETSTATUS_NAME_MAX 320  /* "namespace/name": 63 + 1 + 253 */
#define NETSTATUS_IFACE_MAX 64
#define NETSTATUS_DEPTH_MAX 32

struct netstatus_nic {
	char name[NETSTATUS_NAME_MAX + 1];    /* "" when absent */
	char iface[NETSTATUS_IFACE_MAX + 1];  /* "" when absent */
	uint8_t mac[6];
	int has_mac;
	char ipv4[16];                        /* dotted quad; "" when none */
	int is_default;
};

struct netstatus {
	unsigned n;
	struct netstatus_nic nic[NETSTATUS_MAX_NICS];
};

/* Parses s[0..n).  0, or -EINVAL (-ENOMEM) with the reason and its byte
 * offset in err (out is then empty).  An interface past NETSTATUS_MAX_NICS, a name or
 * interface longer than its cap, a "mac" that is not six hex pairs joined
 * by ':' or an "ips" entry that is not an address are refused: a partial
 * picture of the VM's network is worse than none. */
int netstatus_parse(const char *s, size_t n, struct netstatus *out, char *err, size_t errlen);

#endif
