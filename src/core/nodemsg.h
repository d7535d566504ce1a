/* nodemsg: the messages between the sidecar and the node agent (imds-node),
 * one SOCK_SEQPACKET record each, at most NODEMSG_MAX bytes, text lines:
 *
 *   sidecar -> agent            agent -> sidecar
 *   imds-node 1 config          imds-node 1 guard <generation>
 *   vm <namespace> <name>       imds-node 1 listeners <generation> <count>
 *   port <1..65535>               (count descriptors with SCM_RIGHTS, 1..3)
 *   hops <1..64>                imds-node 1 refused <reason>
 *   [bridge <name>]
 *   [interfaces <IMDS_INTERFACES>]
 *   [serving <ifindex> <count>]  imds-node 1 serving <what>
 *
 * Every line ends with '\n'; the lines come in this order, each once; a
 * message with anything else is refused with a reason naming the line.
 * The agent reads IMDS_INTERFACES with the sidecar's own reader
 * (ifaces_parse), so a pod is served the same in either mode.  `serving`:
 * the listeners a sidecar already holds (from an agent that restarted since),
 * bound to veth-imds's ifindex: the agent passes a new set only when
 * veth-imds changed (a second bind of the same address would fail).  The
 * agent's `serving`: what it serves the pod now, in its own log's words
 * ("tap0 (default, masquerade)", "nothing: waiting for the VM's tap(s)"),
 * sent whenever that changes; the sidecar keeps it for `diag`.  Both sides
 * link this one module: docs/design.md, "The protocol". */
#ifndef IMDS_NODEMSG_H
#define IMDS_NODEMSG_H

#include <stddef.h>
#include <stdint.h>

#include "binding.h"

#define NODEMSG_VERSION 1u
#define NODEMSG_MAX (IFACES_TEXT_MAX + 512)
#define NODEMSG_NS_MAX 63u    /* a namespace: a DNS label */
#define NODEMSG_NAME_MAX 253u /* a VM's name: a DNS subdomain */
#define NODEMSG_BRIDGE_MAX 15u/* an interface name */
#define NODEMSG_REASON_MAX 255u
#define NODEMSG_FDS_MAX 3u    /* 169.254.169.254, fd00:ec2::254, fe80::a9fe:a9fe */

enum nodemsg_type {
	NODEMSG_CONFIG = 1,
	NODEMSG_GUARD,
	NODEMSG_LISTENERS,
	NODEMSG_REFUSED,
	NODEMSG_SERVING
};

struct nodemsg {
	enum nodemsg_type type;
	/* config */
	char ns[NODEMSG_NS_MAX + 1], name[NODEMSG_NAME_MAX + 1];
	unsigned port, hops;
	int have_bridge, have_ifaces;
	char bridge[NODEMSG_BRIDGE_MAX + 1];
	char ifaces[IFACES_TEXT_MAX + 1];
	int have_serving;
	unsigned serving_if, serving_n;
	/* guard, listeners */
	uint64_t generation;
	unsigned nfds;
	/* refused: why; serving: what (printable, 1..NODEMSG_REASON_MAX) */
	char reason[NODEMSG_REASON_MAX + 1];
};

/* m into out[0..cap): the length, or -ENOSPC / -EINVAL (a field the reader
 * would refuse). */
int nodemsg_encode(const struct nodemsg *m, char *out, size_t cap);
/* One record: 0, -EPROTO (another version: err says which), or -EINVAL with
 * err naming the line at fault. */
int nodemsg_decode(const char *buf, size_t len, struct nodemsg *m, char *err, size_t errlen);
const char *nodemsg_type_name(enum nodemsg_type t);

#endif
