#!/usr/bin/env bash
# diag_pod: diag.sh in pod mode (the sidecar plumbs its own pod as root; its
# own errors, the port taken by another process as the sidecar says it, the
# nf_tables tables it can read), a second pass of ~15 s beside diag.sh's
# agent mode.  (root)
set -uo pipefail
IMDS_TEST_NET_MODE=pod exec bash "$(dirname "$0")/diag.sh" "$@"
