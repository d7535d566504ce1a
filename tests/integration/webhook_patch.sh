#!/usr/bin/env bash
# The webhook's admission logic, end to end without TLS: every fixture in
# tests/fixtures/webhook goes through admission_cli (the real admission
# module), python3-jsonpatch applies the answer's patch, and
# tests/lib/jsonpatch_check.py checks the result field by field; then the
# patched object goes through the webhook again and must come back
# unpatched.  Malformed bodies at the end.
#   ADMISSION_CLI   the driver (default build/$IMDS_VARIANT/tests/admission_cli,
#                   which `make VARIANT=... unit-bins` builds)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/lib/tap.sh
source tests/lib/tap.sh

PY=/usr/bin/python3
FIX=tests/fixtures/webhook
VARIANT=${IMDS_VARIANT:-debug}
WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/webhook-patch.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

CLI=${ADMISSION_CLI:-build/$VARIANT/tests/admission_cli}
if [[ ! -x "$CLI" ]]; then
	not_ok "admission_cli built at $CLI (make VARIANT=$VARIANT unit-bins)"
	tap_done
	exit 1
fi

# Runs the checker and turns its PASS/FAIL lines into TAP.
checked() { # label checker-args...
	local label=$1 line out
	shift
	out=$("$PY" tests/lib/jsonpatch_check.py "$@" 2>&1)
	local st=$? seen=0
	while IFS= read -r line; do
		case "$line" in
		PASS\|*) ok "$label: ${line#PASS|}"; seen=1 ;;
		FAIL\|*)
			local rest=${line#FAIL|}
			not_ok "$label: ${rest%%|*}" "${rest#*|}"; seen=1 ;;
		esac
	done <<<"$out"
	if ((st != 0 && seen == 0)); then
		not_ok "$label: checker ran" "$out"
	fi
}

# One fixture: answer, check, then the second application.
run() { # fixture expect [--deny NAME] [cli and checker options...]
	local fx=$1 expect=$2 deny=""
	shift 2
	if [[ "${1:-}" == --deny ]]; then
		deny=$2
		shift 2
	fi
	local opts=("$@") label="$fx${*:+ ($*)}"
	local cli_opts=() chk_opts=()
	while (($#)); do
		case "$1" in
		--container) cli_opts+=(--container); chk_opts+=(--mode container); shift ;;
		--agent) cli_opts+=(--agent); chk_opts+=(--network-mode agent); shift ;;
		--warn) chk_opts+=("$1" "$2"); shift 2 ;;
		*) cli_opts+=("$1" "$2"); chk_opts+=("$1" "$2"); shift 2 ;;
		esac
	done
	local resp=$WORK/resp.json meta=$WORK/meta again=$WORK/again.json
	rm -f "$again"
	if ! "$CLI" "${cli_opts[@]}" <"$FIX/$fx.json" >"$resp" 2>"$meta"; then
		not_ok "$label: admission_cli ran" "$(cat "$meta")"
		return
	fi
	expect_eq "$label: HTTP 200, $expect" "status=200 outcome=$expect" \
		"$(sed -n 's/^\(status=[0-9]*\) kind=[a-z]* \(outcome=[a-z]*\).*/\1 \2/p' "$meta")"
	local args=("$FIX/$fx.json" "$resp" --expect "$expect" "${chk_opts[@]}")
	[[ -n "$deny" ]] && args+=(--deny-names "$deny")
	[[ "$expect" == patched ]] && args+=(--emit-review "$again")
	checked "$label" "${args[@]}"
	if [[ "$expect" == patched ]]; then
		if [[ ! -s "$again" ]]; then
			not_ok "$label: second application" "no patched review was written"
			return
		fi
		"$CLI" "${cli_opts[@]}" <"$again" >"$resp" 2>"$meta"
		expect_eq "$label: second application is allowed with no patch" "status=200 outcome=skipped" \
			"$(sed -n 's/^\(status=[0-9]*\) kind=[a-z]* \(outcome=[a-z]*\).*/\1 \2/p' "$meta")"
		checked "$label: again" "$again" "$resp" --expect skipped "${chk_opts[@]}"
	fi
	: "${opts[@]}"
}

printf '#cloud-config\npackages: [qemu-guest-agent]\n# cluster-wide: Grüße ✓\n' >"$WORK/vendor-data"

# Virt-launcher pods as KubeVirt 1.8 and 1.9 render them.
run pod-kv18 patched
run pod-kv18 patched --container
run pod-kv18 patched --vendor-data-file "$WORK/vendor-data"
run pod-kv19-imagevolume patched
run pod-kv19-imagevolume patched --vendor-data-file "$WORK/vendor-data"
run pod-guaranteed patched
run pod-guaranteed patched --container --cpu 20m --memory 24Mi
run pod-guaranteed-kv19 patched
run pod-secret patched
run pod-configmap patched --container
run pod-minimal patched
run pod-minimal patched --container --vendor-data-file "$WORK/vendor-data"
run pod-label-vmname patched
run pod-userdata-200k patched
run pod-keys-meta patched
run pod-keys-meta patched --container
# --network-mode agent (issue 29): the sidecar unprivileged, the imds-node folder, the probe or imds-await.
run pod-kv18 patched --agent
run pod-kv18 patched --container --agent
run pod-guaranteed patched --agent
run pod-guaranteed patched --container --agent
run pod-secret patched --container --agent
run pod-minimal patched --container --agent
run pod-keys-meta patched --agent
# Pods it does not concern.
run pod-no-annotations skipped
run hostile-pod-last-applied-only skipped
run pod-not-launcher skipped
run pod-update skipped
# Opted in with an invalid setting.
run pod-bad-expiration denied --deny imds.kubevirt.io/token-expiration
run hostile-pod-no-vm-name denied --deny kubevirt.io/domain
run pod-bad-meta-data denied --deny imds.kubevirt.io/meta-data
run pod-bad-ssh-keys-secret denied --deny imds.kubevirt.io/ssh-keys-secret
run vm-bad-meta-data denied --deny imds.kubevirt.io/meta-data
run vmi-reserved-meta-data denied --deny imds.kubevirt.io/meta-data
# VirtualMachines and VirtualMachineInstances.
run vm-no-firmware patched
run vm-serial patched
run vm-own-annotation patched --warn 'imds.kubevirt.io/enabled is on the VirtualMachine'"'"'s own metadata'
run vm-update patched
run vm-nocloud-serial skipped
run vm-last-applied-only skipped
run vmi-standalone patched
run vmi-serial patched
run vmi-update skipped

# Malformed bodies: an answer, never a crash.
malformed() { # label want-status file
	local st
	"$CLI" <"$3" >"$WORK/resp.json" 2>"$WORK/meta"
	st=$?
	expect_eq "malformed: $1 -> HTTP $2" "0 status=$2" "$st $(grep -o '^status=[0-9]*' "$WORK/meta")"
}
: >"$WORK/empty"
malformed "empty body" 400 "$WORK/empty"
head -c 5000 "$FIX/pod-kv18.json" >"$WORK/trunc"
malformed "truncated review" 400 "$WORK/trunc"
"$PY" -c 'import sys; sys.stdout.write("[" * 10000 + "]" * 10000)' >"$WORK/deep"
malformed "nesting 10000 deep" 400 "$WORK/deep"
"$PY" - "$FIX/pod-kv18.json" "$WORK/max" "$WORK/over" <<'EOF'
import sys
body = open(sys.argv[1], "rb").read().rstrip()
open(sys.argv[2], "wb").write(body + b" " * ((3 << 20) - len(body)))
open(sys.argv[3], "wb").write(body + b" " * ((3 << 20) + 1 - len(body)))
EOF
malformed "3 MiB exactly is answered" 200 "$WORK/max"
malformed "3 MiB + 1" 413 "$WORK/over"
sed 's/"uid": "3f9c2a1e-8b7d-4e6f-9a0b-1c2d3e4f5a01"/"uid": 42/' "$FIX/pod-kv18.json" >"$WORK/uid"
malformed "uid not a string" 400 "$WORK/uid"
sed 's/"kind": "Pod"/"kind": "Deployment"/' "$FIX/pod-minimal.json" >"$WORK/foreign"
malformed "a foreign kind" 400 "$WORK/foreign"

tap_done
