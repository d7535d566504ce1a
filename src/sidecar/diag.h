/* diag: `imds-server diag [--json]` (docs/sidecar.md, "Diagnostics"), run
 * with `kubectl exec -c imds-server -- /imds-server diag` in the sidecar's
 * own container (a scratch image: no shell, no nft, no ip).  It prints what
 * the sidecar serves (the layouts and the route table's paths), to which
 * interfaces (IMDS_INTERFACES parsed), the data it has (sizes, never the
 * content: no token, no user data), the state of its plumbing (read-only
 * netlink dumps: veth-imds, its addresses, the rule and the routes of our
 * table, the nf_tables tables present) and the running sidecar's own word:
 * its state and last errors, from a small status file it keeps in its
 * state directory (IMDS_STATE_DIR/status, rewritten atomically). */
#ifndef IMDS_DIAG_H
#define IMDS_DIAG_H

#include <stddef.h>

/* The file's name in the state directory. */
#define DIAG_STATUS_FILE "status"

/* The running sidecar's side (`run`).  Starts the file in state_dir (NULL:
 * no file, diag then says so) and rewrites it after every error line. */
void diag_status_start(const char *state_dir, const char *version);
/* The network half's state ("waiting", "serving", "retrying") and what it
 * serves ("tap0 (default, masquerade)"); rewrites the file when either
 * changed.  detail may be NULL. */
void diag_status_set(const char *state, const char *detail);

/* Agent mode (nodelink.c): what the node agent said, each a line of the
 * status file: "agent" (connected or not, since when), "guard" (in place:
 * its generation, when), "listen" (the listeners it passed: their addresses
 * and interface).  Rewrites the file when the value changed. */
enum diag_agent_key { DIAG_AGENT, DIAG_GUARD, DIAG_LISTEN };
void diag_status_agent(enum diag_agent_key k, const char *value);
/* The time now as the status file writes it ("2026-11-28T13:40:00Z"); ""
 * if it cannot be written. */
void diag_now_stamp(char out[32]);

/* The status file's reader (pure: bytes in, spans out).  Lines are "KEY
 * VALUE" (version, pid, started, updated, state, serving, errors_total,
 * agent, guard, listen; the last of a key wins) and "error VALUE" (in order, at most
 * DIAG_STATUS_MAX_ERRORS kept); anything else is skipped.  Each span points
 * into buf and holds no newline.  A fuzz target holds it to that. */
#define DIAG_STATUS_NKEYS 10
#define DIAG_STATUS_MAX_ERRORS 16
struct diag_span {
	const char *p; /* NULL: absent */
	size_t n;
};
struct diag_status {
	struct diag_span key[DIAG_STATUS_NKEYS]; /* in diag_status_keys' order */
	struct diag_span err[DIAG_STATUS_MAX_ERRORS];
	unsigned nerr;
};
extern const char *const diag_status_keys[DIAG_STATUS_NKEYS];
void diag_status_parse(const char *buf, size_t len, struct diag_status *out);

/* The subcommand: argv[1] is "diag".  Exit status 0 (printed), 2 (bad
 * arguments or configuration, one line naming it). */
int diag_main(int argc, char **argv, const char *version);

#endif
