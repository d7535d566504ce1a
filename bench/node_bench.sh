#!/usr/bin/env bash
# The node agent (imds-node, docs/node.md) measured as the cluster runs it
# (root): the agent in the node's own namespace over a kubelet-style pods
# folder (tests/lib/podfolder.sh), each pod's `imds-server run` with
# IMDS_NET_MODE=agent as UID 107 with no capability, in its own netns and
# pod cgroup, as a launcher pod with a masquerade tap (tests/lib/netns.sh):
#   - one pod: the sidecar's start -> served ("net: ready N ms after start",
#     the sidecar's own clock: exec to the listeners it got from the agent),
#     RUNS times, a new pod each time;
#   - PODS pods (the kubelet's default maximum, 110) started back to back:
#     each one's start -> served, and the wall time from the first start to
#     the last served;
#   - the agent's memory: VmRSS idle and with PODS pods, per pod; VmHWM.
# Prints one table.  IMDS_SERVER (default: the static build, as shipped;
# imds-node beside it), RUNS (default 5), PODS (default 110).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
IMDS_SERVER=${IMDS_SERVER:-$REPO/build/static/imds-server}
[[ -x "$IMDS_SERVER" && -x "$(dirname "$IMDS_SERVER")/imds-node" ]] || IMDS_SERVER=$REPO/build/debug/imds-server
RUNS=${RUNS:-5}
PODS=${PODS:-110}
export IMDS_SERVER REPO
# shellcheck source=../tests/lib/netns.sh
. "$REPO/tests/lib/netns.sh"
# shellcheck source=../tests/lib/podfolder.sh
. "$REPO/tests/lib/podfolder.sh"

# shellcheck source=stats.sh
. "$REPO/bench/stats.sh"
kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

# pod UID NS: a launcher pod (masquerade, its tap on the bridge) with no
# guest on the tap, and its sidecar started
pod() {
	local uid=$1
	NS_POD=$2 NS_NODE=$2-n
	ns_new "$NS_POD" && ns_new "$NS_NODE" && node_link 1400 && launcher_masquerade || return 1
	sidecar_start "$uid" "$NS_POD" "$NET_TMP/pod-$uid.log" IMDS_INTERFACES=default:masquerade:tap0
}
# ready_ms LOG: the sidecar's "ready N ms after start", waiting up to 60 s
ready_ms() {
	wait_for_line "$1" 'net: ready [0-9]+ ms after start' 60 || return 1
	sed -nE 's/.*net: ready ([0-9]+) ms after start.*/\1/p' "$1" | head -1
}
uid_of() { printf '5e1f0000-0000-4000-8000-%012d' "$1"; }

if [[ ! -x "$IMDS_NODE" ]]; then
	echo "node_bench: $IMDS_NODE not built (make)" >&2
	exit 1
fi
agent_start "$NET_TMP/agent.log"
sleep 0.3
rss0=$(kb "$AGENT_PID" VmRSS)

one=()
for ((r = 0; r < RUNS; r++)); do
	u=$(uid_of "$r")
	pod "$u" "$NS_TAG-o$r" || { echo "node_bench: pod set-up failed" >&2; exit 1; }
	ms=$(ready_ms "$NET_TMP/pod-$u.log") || { echo "node_bench: pod $u not served: $(tail -3 "$NET_TMP/pod-$u.log")" >&2; exit 1; }
	one+=("$ms")
	kill -TERM "$SIDECAR_PID" 2>/dev/null
	wait "$SIDECAR_PID" 2>/dev/null
	rm -rf "${PODS_DIR:?}/$u"
	ip netns del "$NS_TAG-o$r"
	ip netns del "$NS_TAG-o$r-n"
done
wait_for_line "$NET_TMP/agent.log" "pod $u: its folder is gone" 10

# PODS pods: set up first (namespaces, launchers), then the sidecars back to back
for ((i = 0; i < PODS; i++)); do
	NS_POD=$NS_TAG-m$i NS_NODE=$NS_TAG-m$i-n
	if ! { ns_new "$NS_POD" && ns_new "$NS_NODE" && node_link 1400 && launcher_masquerade; }; then
		echo "node_bench: pod $i set-up failed" >&2
		exit 1
	fi
done
t0=$(now_ms)
for ((i = 0; i < PODS; i++)); do
	u=$(uid_of $((1000 + i)))
	sidecar_start "$u" "$NS_TAG-m$i" "$NET_TMP/pod-$u.log" IMDS_INTERFACES=default:masquerade:tap0
done
many=()
for ((i = 0; i < PODS; i++)); do
	u=$(uid_of $((1000 + i)))
	ms=$(ready_ms "$NET_TMP/pod-$u.log") || { echo "node_bench: pod $u not served: $(tail -3 "$NET_TMP/pod-$u.log")" >&2; exit 1; }
	many+=("$ms")
done
wall=$(($(now_ms) - t0))
sleep 0.5
rss1=$(kb "$AGENT_PID" VmRSS)
hwm=$(kb "$AGENT_PID" VmHWM)
npods=$(grep -c 'serving [0-9]* tap(s)' "$NET_TMP/agent.log")

echo
echo "node agent ($(basename "$(dirname "$IMDS_SERVER")") build, $(nproc) CPU(s)): sidecar start -> served, ms"
printf '  %-44s %s\n' "1 pod, median (min..max) of $RUNS" "$(stats "${one[@]}")"
printf '  %-44s %s, p99 %s\n' "$PODS pods started back to back, each" "$(stats "${many[@]}")" "$(p99 "${many[@]}")"
printf '  %-44s %s ms\n' "$PODS pods: first start -> last served" "$wall"
echo "node agent memory"
printf '  %-44s %s kB\n' "VmRSS idle" "$rss0"
printf '  %-44s %s kB (VmHWM %s kB)\n' "VmRSS with $PODS pods" "$rss1" "$hwm"
printf '  %-44s %s kB\n' "per pod" "$(awk -v a="$rss0" -v b="$rss1" -v n="$PODS" 'BEGIN {printf "%.1f", (b - a) / n}')"
printf '  %-44s %s\n' "pods the agent said it serves" "$npods"
