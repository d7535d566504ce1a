#!/usr/bin/env bash
# The VM's own cloud-init, served as KubeVirt's disk gives it (issue 30):
# every case of tests/fixtures/kubevirt-cloudinit (files KubeVirt v1.8.4's
# own pkg/cloud-init wrote; README.md there) through the webhook's
# admission code (admission_cli: the VMI, then its launcher pod) and
# `imds-server serve` with the sidecar's environment as the webhook builds
# it (tests/lib/sidecar_env.py), compared file by file: user and network
# data byte for byte, meta-data field for field, the identity in the
# NoCloud, OpenStack and EC2 layouts; a case KubeVirt denies is denied with
# KubeVirt's message.  One check per case, named by the case
# (tests/lib/kvci.py says how each is made).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh

VARIANT=${IMDS_VARIANT:-debug}
CLI=$REPO/build/$VARIANT/tests/admission_cli
SERVER=${IMDS_SERVER:-$REPO/build/$VARIANT/imds-server}
PY=/usr/bin/python3
WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/kubevirt-cloudinit.XXXXXX")
trap '[[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"' EXIT

for b in "$CLI" "$SERVER"; do
	if [[ ! -x "$b" ]]; then
		not_ok "built: $b (make VARIANT=$VARIANT server unit-bins)"
		tap_done
		exit 1
	fi
done

mapfile -t CASES < <("$PY" tests/lib/kvci.py list)
if ((${#CASES[@]} != 17)); then
	not_ok "17 cases in tests/fixtures/kubevirt-cloudinit" "found ${#CASES[@]}"
fi
for c in "${CASES[@]}"; do
	what="served as KubeVirt's disk gives it"
	[[ -f tests/fixtures/kubevirt-cloudinit/$c.error.txt ]] && what="denied with KubeVirt's message"
	if out=$("$PY" tests/lib/kvci.py check "$c" --admission-cli "$CLI" --server "$SERVER" \
		--work "$WORK/$c" 2>&1); then
		ok "$c: $what"
	else
		not_ok "$c: $what" "$out"
	fi
done
tap_done
