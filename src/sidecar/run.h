/* run: the network half of the sidecar (docs/sidecar.md) — `imds-server run`
 * (wait for the VM bridge, plumb, answer ARP, serve) and `init`. */
#ifndef IMDS_RUN_H
#define IMDS_RUN_H

#include "config.h"
#include "imds.h"
#include "loop.h"

/* Runs until SIGTERM/SIGINT drains the server; returns the exit status. */
int run_main(struct loop *l, struct imds_app *app, const struct imds_config *cfg);
/* One-shot plumbing; returns the exit status (0, or 1 with a message). */
int init_main(const struct imds_config *cfg);
/* Says once which of the webhook's interfaces are served and which cannot
 * be (the in-pod sidecar, and the sidecar in agent mode: it has the list). */
struct plan_cfg;
void run_tell_interfaces(const struct plan_cfg *pc);

#endif
