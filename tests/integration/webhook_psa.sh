#!/usr/bin/env bash
# Pod Security (issue 29): every launcher pod KubeVirt v1.8.4 renders
# (tests/fixtures/kubevirt-v1.8.4) sent through the real imds-webhook over
# TLS, the answer's patch applied (python3-jsonpatch), and the pod before and
# after judged by psa-check: the upstream evaluator the API server's
# PodSecurity admission plugin runs (k8s.io/pod-security-admission v0.32.3,
# tests/tools/psa-check, built by hack/build-psa-check.sh into the cache).
#   1. the rendered pods: baseline, not restricted; with the pod's seccomp
#      profile RuntimeDefault (KubeVirt CR seccompConfiguration): restricted
#   2. the default flags (no --network-mode: agent), native and container
#      sidecar: baseline stays baseline, restricted stays restricted
#   3. --network-mode pod, both sidecar modes: privileged only, for the
#      reasons the API server would give (the cost docs/webhook.md states)
#   4. a --network-mode that is neither is refused at start, naming the flag
# Each pod's level before and after is printed as a "#" line per mode.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
# shellcheck source=tests/lib/certs.sh
. tests/lib/certs.sh

VARIANT=${IMDS_VARIANT:-debug}
WH=$REPO/build/$VARIANT/imds-webhook
PY=/usr/bin/python3
FIX=tests/fixtures/kubevirt-v1.8.4
IMAGE=registry.example/kubevirt-imds/imds-server:test
WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/webhook-psa.XXXXXX")
WPID=''
cleanup() {
	[[ -n "$WPID" ]] && kill -KILL "$WPID" 2>/dev/null
	[[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"
}
trap cleanup EXIT

if [[ ! -x "$WH" ]]; then
	not_ok "imds-webhook built at $WH (make VARIANT=$VARIANT webhook)"
	tap_done
	exit 1
fi
if ! dir=$(hack/build-psa-check.sh 2>"$WORK/psa-build.log" | tail -n 1) || [[ ! -x $dir/psa-check ]]; then
	not_ok "psa-check built (hack/build-psa-check.sh)" "$(tail -n 20 "$WORK/psa-build.log")"
	tap_done
	exit 1
fi
PSA=$dir/psa-check
ok "psa-check built (k8s.io/pod-security-admission v0.32.3, $dir)"

PODS=()
for f in "$FIX"/*.pod.json; do
	f=${f##*/}
	PODS+=("${f%.pod.json}")
done
expect_eq "the ten rendered pods" 10 "${#PODS[@]}"

# level FILE: the strictest level psa-check allows (restricted, baseline or
# privileged); the forbidden text of each refused level in FILE.baseline and
# FILE.restricted.
level() {
	local f=$1 l out
	for l in restricted baseline; do
		out=$("$PSA" "$l" "$f" 2>"$f.$l.err")
		case $? in
		0) echo "$l"; return ;;
		1) printf '%s\n' "${out#"$f": forbidden: }" >"$f.$l" ;;
		*) echo "error: $(cat "$f.$l.err")"; return ;;
		esac
	done
	echo privileged
}

# --- 1. the rendered pods as KubeVirt makes them
declare -A BEFORE
for p in "${PODS[@]}"; do
	for v in plain seccomp; do
		f=$WORK/$p.$v.before.json
		"$PY" tests/lib/psa_pods.py pod "$FIX/$p.pod.json" "$f" "--$v"
		BEFORE[$p.$v]=$(level "$f")
	done
	expect_eq "$p as rendered: baseline" baseline "${BEFORE[$p.plain]}"
	expect_eq "$p with seccompProfile RuntimeDefault: restricted" restricted "${BEFORE[$p.seccomp]}"
done
# The one thing between baseline and restricted is the seccomp profile.
if grep -q '^seccompProfile (pod or containers ' "$WORK/${PODS[0]}.plain.before.json.restricted" &&
	! grep -q '), ' "$WORK/${PODS[0]}.plain.before.json.restricted"; then
	ok "${PODS[0]}: restricted refuses only for the seccomp profile"
else
	not_ok "${PODS[0]}: restricted refuses only for the seccomp profile" \
		"$(cat "$WORK/${PODS[0]}.plain.before.json.restricted")"
fi

# --- the webhook, one process per mode
certs_ca "$WORK/ca"
certs_leaf "$WORK/ca" "$WORK/tls" ec 2901

wh_start() { # flags...
	LOG=$WORK/webhook.$RANDOM.log
	"$WH" --listen 127.0.0.1:0 --tls-cert-file "$WORK/tls/tls.crt" --tls-key-file "$WORK/tls/tls.key" \
		--imds-image "$IMAGE" "$@" 2>"$LOG" &
	WPID=$!
	PORT=
	for _ in $(seq 500); do
		PORT=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$LOG" | head -n1)
		[[ -n "$PORT" ]] && return 0
		kill -0 "$WPID" 2>/dev/null || break
		sleep 0.01
	done
	return 1
}

wh_stop() {
	kill -TERM "$WPID" 2>/dev/null
	wait "$WPID" 2>/dev/null
	WPID=''
}

# mutate POD VARIANT OUT: the pod through the webhook, patched; 1 on failure
# with the reason in OUT.err.
mutate() {
	local p=$1 v=$2 out=$3 rv=$3.review.json resp=$3.response.json
	"$PY" tests/lib/psa_pods.py review "$FIX/$p.pod.json" "$rv" "--$v" ||
		return 1
	if ! curl -sS --fail-with-body --max-time 10 --cacert "$WORK/ca/ca.crt" -H 'Content-Type: application/json' \
		--data-binary "@$rv" "https://127.0.0.1:$PORT/mutate" -o "$resp" 2>"$out.err"; then
		cat "$resp" >>"$out.err" 2>/dev/null
		return 1
	fi
	"$PY" tests/lib/psa_pods.py apply "$rv" "$resp" "$out" 2>"$out.err"
}

# --- 2 and 3: the default network mode (no flag) and pod, each in each
# sidecar mode
for nm in default pod; do
	for sm in native container; do
		flags=(--sidecar-mode "$sm")
		[[ $nm == pod ]] && flags+=(--network-mode pod)
		mode="${flags[*]}"
		if ! wh_start "${flags[@]}"; then
			not_ok "webhook started ($mode)" "$(cat "$LOG")"
			continue
		fi
		# The default is agent, as the webhook says at start.
		want=agent
		[[ $nm == pod ]] && want=pod
		if grep -q "network mode $want)" "$LOG"; then
			ok "webhook started ($mode): network mode $want"
		else
			not_ok "webhook started ($mode): network mode $want" "$(cat "$LOG")"
		fi
		table=()
		for p in "${PODS[@]}"; do
			for v in plain seccomp; do
				f=$WORK/$p.$v.$nm.$sm.json
				name=$p
				[[ $v == seccomp ]] && name+=" with seccompProfile RuntimeDefault"
				if ! mutate "$p" "$v" "$f"; then
					not_ok "$name through the webhook ($mode): patched" "$(cat "$f.err")"
					continue
				fi
				after=$(level "$f")
				table+=("$p $v: ${BEFORE[$p.$v]} -> $after")
				if [[ $nm == default ]]; then
					expect_eq "$name ($mode): stays ${BEFORE[$p.$v]}" "${BEFORE[$p.$v]}" "$after"
				elif [[ $after != privileged ]]; then
					not_ok "$name ($mode): privileged only" "psa-check: $after"
				else
					# What the API server says when it refuses the pod
					# (baseline, and restricted for the seccomp variant).
					why_b=$(cat "$f.baseline")
					why_r=$(cat "$f.restricted")
					if [[ $why_b == *'non-default capabilities (container "imds-server" must not include "NET_ADMIN", "NET_RAW" in securityContext.capabilities.add)'* &&
						$why_r == *'runAsNonRoot != true (container "imds-server" must not set securityContext.runAsNonRoot=false)'* &&
						$why_r == *'runAsUser=0 (container "imds-server" must not set runAsUser=0)'* ]]; then
						ok "$name ($mode): privileged only (NET_ADMIN/NET_RAW; runAsUser=0, runAsNonRoot=false)"
					else
						not_ok "$name ($mode): privileged only, for the sidecar's capabilities and user" \
							"baseline: $why_b" "restricted: $why_r"
					fi
				fi
			done
		done
		wh_stop
		echo "# Pod Security level before -> after, $mode:"
		printf '#   %s\n' "${table[@]}"
	done
done

# --- 4. a network mode that is neither
out=$("$WH" --imds-image "$IMAGE" --network-mode host 2>&1)
st=$?
expect_eq "--network-mode host: exit 2" 2 "$st"
if [[ $out == *"--network-mode: 'host' is not pod or agent"* ]]; then
	ok "--network-mode host: the message names the flag and the choices"
else
	not_ok "--network-mode host: the message names the flag and the choices" "$out"
fi

tap_done
