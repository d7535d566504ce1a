#!/usr/bin/env bash
# The webhook's discovery annotations (docs/annotations.md) through
# admission_cli, the real admission module: imds.kubevirt.io/serial-form
# (nocloud-net for Talos), imds.kubevirt.io/dmi-chassis (the chassis
# manufacturer systemd-imdsd's hardware database can match) and
# imds.kubevirt.io/password-key (to the sidecar as IMDS_PASSWORD_KEY).
# Each patch is applied with python3-jsonpatch and read back
# (tests/lib/discovery_check.py); a patched object comes back unpatched.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/lib/tap.sh
source tests/lib/tap.sh

PY=/usr/bin/python3
VARIANT=${IMDS_VARIANT:-debug}
CLI=${ADMISSION_CLI:-build/$VARIANT/tests/admission_cli}
if [[ ! -x "$CLI" ]]; then
	not_ok "admission_cli built at $CLI (make VARIANT=$VARIANT unit-bins)"
	tap_done
	exit 1
fi
out=$("$PY" tests/lib/discovery_check.py "$CLI" tests/fixtures/webhook 2>&1)
st=$?
seen=0
while IFS= read -r line; do
	case "$line" in
	PASS\|*) ok "${line#PASS|}"; seen=1 ;;
	FAIL\|*)
		rest=${line#FAIL|}
		not_ok "${rest%%|*}" "${rest#*|}"
		seen=1 ;;
	esac
done <<<"$out"
((st != 0 && seen == 0)) && not_ok "discovery_check.py ran" "$out"
tap_done
