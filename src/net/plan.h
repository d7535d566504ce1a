/* plan: what the kernel must hold for one VM's pod, written once.
 *
 * `run` (reconciling on every event) and `init` (one pass, then exit) and,
 * next, a node agent acting in each pod's network namespace, all take the
 * same steps: from the configuration, the service address, veth-imds's MAC
 * and the bindings (the shared table, binding.h); then dump the links, make
 * the plumbing right (plumb.h), pick the taps to steer, read the pod's own
 * addresses, and say what the ruleset must be (steer.h), which
 * plan_program commits in one nf_tables transaction.  Sockets (the
 * responder, the listeners) are the caller's: they belong to a process. */
#ifndef IMDS_PLAN_H
#define IMDS_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "binding.h"
#include "config.h"
#include "nl.h"
#include "plumb.h"
#include "steer.h"

/* The pod's side of the plan: fixed for the pod's life. */
struct plan_cfg {
	const struct ifaces *ifs; /* NULL: not told (every tap of bridge) */
	const char *bridge;       /* NULL: any k6t-* */
	uint8_t ip[4];            /* 169.254.169.254 */
	uint16_t port;
	uint16_t lport;           /* the listeners': port, or PLUMB_PASST_LPORT with passt */
	uint8_t vmac[6];          /* veth-imds's */
	int passt;                /* a NIC is served over the pod's loopback */
	size_t nwanted;           /* taps the webhook named */
};

/* From the configuration: 0, or -EINVAL with IMDS_LISTEN_ADDR's fault. */
int plan_cfg_init(struct plan_cfg *pc, const struct imds_config *cfg, char *err, size_t errlen);

/* The ruleset that holds before anything else exists: nothing steered,
 * .254 kept in the pod (steer.h's fallback), over what the kernel holds
 * (have, or NULL). */
void plan_fallback(const struct plan_cfg *pc, const struct steer_state *have, struct steer_state *out);

/* One pass: links (a buffer of PLUMB_MAX_LINKS, *nlinks set to the last
 * dump) fixed by plumb_ensure into ps, *want the ruleset for them, *changes
 * what was written.  0, or -errno with err saying which step. */
int plan_make(const struct plan_cfg *pc, struct nl_sock *req, struct plumb_state *ps,
	      struct nl_link *links, size_t *nlinks, struct steer_state *want, unsigned *changes,
	      char *err, size_t errlen);

/* Commits st in one transaction over nft, buf[0..cap) its batch: 0 or
 * -errno with err. */
int plan_program(struct nl_sock *nft, uint8_t *buf, size_t cap, const struct steer_state *st,
		 char *err, size_t errlen);

/* a and b say the same ruleset */
int plan_steer_eq(const struct steer_state *a, const struct steer_state *b);

/* What an event calls for, the same in the sidecar (run.c) and in the
 * agent (each pod's sockets, src/node/node.c): */
#define PLAN_EV_PASS 1u    /* a pass (plan_make) */
#define PLAN_EV_RULESET 2u /* and the ruleset written again: another process changed it */

/* One message of the rtnetlink event socket (nft 0), or of the nf_tables
 * one (nft 1; the kinds are told apart by the socket, not by the message:
 * nfnetlink's batch begin has rtnetlink's RTM_NEWLINK number): 0 or
 * PLAN_EV_*.  rtnetlink: links and addresses, any (taps and bridges come
 * and go, the pod's own addresses are aliased); rules and routes of
 * PLUMB_TABLE; and the kernel's "local 169.254.169.254" in table local,
 * which it writes again when veth-imds comes up and which must stay away
 * (plumb.h).  nf_tables: a change to STEER_TABLE by any socket but
 * own_portid (our own transaction's echo): PLAN_EV_PASS | PLAN_EV_RULESET. */
unsigned plan_event_relevant(const struct nl_msgview *m, int nft, uint32_t own_portid);

/* Reads the datagrams queued on event socket ev (nft as above; at most max,
 * each into buf[0..cap)): what they call for together.  Lost events
 * (-ENOBUFS: the kernel's queue overflowed) call for what any event of
 * that socket could; another read error too, and ends the read with *err
 * set to it (else 0) for the caller to log. */
unsigned plan_events_read(struct nl_sock *ev, int nft, uint32_t own_portid, uint8_t *buf,
			  size_t cap, unsigned max, int *err);

#endif
