#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# The VM's tap appears after `run` started (virt-handler builds the pod's
# network once the compute container runs, after the native sidecar): the
# sidecar waits on rtnetlink events, with no deadline and no polling, has
# the fallback rules in from its first moment, and steers the tap within
# 100 ms of its appearance.  The tap going away and coming back (a
# relaunched setup) is followed too; SIGTERM while waiting is prompt.
# Agent mode: imds-node waits, steers and says so (its lines in IMDS_LOG,
# "pod <UID>: " where the sidecar says "net: "); the sidecar, waiting on its
# socket, must not wake either.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

if ! ns_setup || ! node_link 1400; then
	not_ok "network namespaces set up (needs root and iproute2)"
	tap_done
	exit 1
fi
# who says what of the network: the sidecar, or in agent mode the agent
says='net: '
[[ $IMDS_NET_MODE_TEST == agent ]] && says='imds-node info: pod [^ ]*: '
# The node's side, from before the sidecar's first start to the end: no
# packet for 169.254.169.254 (or its IPv6 addresses) leaves the pod.
node_capture_start
imds_start IMDS_INTERFACES=default:masquerade:tap0
for _ in $(seq 200); do grep -q 'waiting for the VM' "$IMDS_LOG" && break; sleep 0.01; done
if grep -qE "${says}waiting for the VM's tap\(s\): tap0" "$IMDS_LOG"; then ok "run: waits for tap0 and says so"; else not_ok "run: waits for tap0 and says so" "$(imds_log_tail)"; fi
if [[ $IMDS_NET_MODE_TEST == agent ]]; then
	if imds_as_cluster; then ok "agent mode: the sidecar as UID 107 with no capability, on the agent's listeners"; else not_ok "agent mode: the sidecar as UID 107 with no capability, on the agent's listeners" "$(imds_log_tail)"; fi
fi
expect_eq "run: the fallback rules are in before any tap (ip, ip6, bridge)" "table ip kubevirt_imds table ip6 kubevirt_imds table bridge kubevirt_imds" \
	"$(in_pod nft list tables | grep kubevirt_imds | tr '\n' ' ' | sed 's/ $//')"
sleep 2
if kill -0 "$IMDS_PID" 2>/dev/null; then ok "run: still running 2 s later (no deadline)"; else not_ok "run: still running 2 s later (no deadline)" "$(imds_log_tail)"; fi
# No polling while waiting: the process slept through those seconds.
ctx=$(awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$IMDS_PID/status")
sleep 1
ctx2=$(awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$IMDS_PID/status")
expect_eq "run: no wake-ups while waiting (1 s)" "$ctx" "$ctx2"

# KubeVirt's masquerade setup in one go; the clock from just before it.
steered_ms() { # prints ms from now until the tap's chain is programmed
	local t0 i
	t0=$(now_ms)
	launcher_masquerade >/dev/null 2>&1 || { echo fail; return; }
	local t1
	t1=$(now_ms)
	for ((i = 0; i < 500; i++)); do
		in_pod nft list chain netdev kubevirt_imds vm-tap0 >/dev/null 2>&1 && break
		sleep 0.005
	done
	echo "$(($(now_ms) - t1)) $((t1 - t0))"
}
read -r ms setup < <(steered_ms)
if [[ $ms =~ ^[0-9]+$ ]] && ((ms < 100)); then
	ok "tap0 steered ${ms} ms after KubeVirt's setup returned (< 100 ms; the setup itself took ${setup} ms)"
else
	not_ok "tap0 steered within 100 ms of its appearance" "$ms $setup" "$(imds_log_tail)"
fi
guest_attach "$NS_VM" tap0 masquerade
out=$(cloudinit_fetch "$NS_VM" 2>&1)
if grep -q '"ok": true' <<<"$out"; then ok "cloud-init fetch after the late tap"; else not_ok "cloud-init fetch after the late tap" "$out" "$(imds_log_tail)"; fi

# The tap (and bridge) going away and coming back.
kill "${BG_PIDS[-1]}" 2>/dev/null # the guest's tapwire
ip -n "$NS_POD" link del tap0
for _ in $(seq 200); do grep -q "the VM's tap(s) are gone" "$IMDS_LOG" && break; sleep 0.01; done
if grep -qE "${says}the VM's tap\(s\) are gone" "$IMDS_LOG" && kill -0 "$IMDS_PID" 2>/dev/null; then
	ok "tap deleted: back to waiting, still running"
else
	not_ok "tap deleted: back to waiting, still running" "$(imds_log_tail)"
fi
expect_eq "tap deleted: the netdev table is gone with it, the fallback stays" "table ip kubevirt_imds table ip6 kubevirt_imds table bridge kubevirt_imds" \
	"$(in_pod nft list tables | grep kubevirt_imds | tr '\n' ' ' | sed 's/ $//')"
ip -n "$NS_POD" link del k6t-eth0
in_pod nft delete table ip nat
ip netns del "$NS_VM"
ns_new "$NS_VM"
read -r ms setup < <(steered_ms)
guest_attach "$NS_VM" tap0 masquerade
out=$(guest_get "$NS_VM" /v1/meta-data 2>&1)
if grep -q instance-id <<<"$out" && [[ $ms =~ ^[0-9]+$ ]]; then ok "tap recreated: steered in ${ms} ms, served again"; else not_ok "tap recreated: served again" "$out" "$ms" "$(imds_log_tail)"; fi
imds_stop
expect_eq "SIGTERM: exit 0" 0 "$IMDS_STATUS"

# SIGTERM while still waiting: a clean, prompt exit.
imds_start IMDS_INTERFACES=default:masquerade:tap9
for _ in $(seq 200); do grep -q 'waiting for the VM' "$IMDS_LOG" && break; sleep 0.01; done
t0=$(now_ms)
imds_stop
expect_eq "SIGTERM while waiting: exit 0" 0 "$IMDS_STATUS"
if (($(now_ms) - t0 < 1000)); then ok "SIGTERM while waiting: prompt"; else not_ok "SIGTERM while waiting: prompt"; fi
node_capture_check "before the tap, with it, after it went and came back"
if imds_log_clean; then ok "server log free of sanitizer reports"; else not_ok "server log free of sanitizer reports"; fi
tap_done
