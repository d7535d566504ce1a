#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# Something removes part of the plumbing while the guest is being served:
# the sidecar sees it on its rtnetlink or nf_tables subscription and
# restores it; the guest is served again within 1 s, and nothing ends up
# duplicated.  Both guest kinds: link-local (all.arp_ignore=8: the responder
# must come back too) and masquerade.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

# breaks MODE NAME COMMAND: runs COMMAND in the pod while the guest keeps
# asking; the guest must be served again within 1 s.
breaks() {
	local mode=$1 name=$2 cmd=$3 out ms
	out=$(in_vm "$PY" "$REPO/tests/lib/guest_wait.py" --limit 3 --connect-timeout 0.05 \
		--cmd "ip netns exec $NS_POD $cmd")
	ms=$(sed -n 's/.*"served_ms": \([0-9.]*\).*/\1/p' <<<"$out")
	if [[ -n "$ms" ]] && "$PY" -c "import sys; sys.exit(0 if $ms < 1000 else 1)"; then
		ok "$mode: after '$name' served again in ${ms} ms"
	else
		not_ok "$mode: after '$name' served again within 1 s" "$out" "$(imds_log_tail)"
	fi
	# The plumbing is whole again (give the last event a moment).
	local i
	for ((i = 0; i < 100; i++)); do [[ "$(count_plumbing)" == "2 1 1 1 4" ]] && break; sleep 0.01; done
	expect_eq "$mode: after '$name' plumbing whole, nothing duplicated" "2 1 1 1 4" "$(count_plumbing)"
}

for mode in ${NET_MODES:-linklocal masquerade}; do
	NS_POD=$NS_TAG-pod-$mode NS_VM=$NS_TAG-vm-$mode NS_NODE=$NS_TAG-node-$mode
	if ! ns_setup || ! node_link 1400 || ! launcher_masquerade || ! guest_attach "$NS_VM" tap0 "$mode"; then
		not_ok "launcher pod and guest set up (needs root, iproute2, nftables)"
		tap_done
		exit 1
	fi
	[[ $mode == linklocal ]] && in_pod sysctl -qw net.ipv4.conf.all.arp_ignore=8
	# the node's side, while the guest asks through every break below
	node_capture_start
	imds_start IMDS_INTERFACES=default:masquerade:tap0
	if imds_wait_serving 1 10 && guest_get "$NS_VM" /healthz >/dev/null; then
		ok "$mode: served"
	else
		not_ok "$mode: served" "$(imds_log_tail)"
	fi
	mac=$(in_pod cat /sys/class/net/veth-imds/address)
	breaks "$mode" "ip link del veth-imds" "ip link del veth-imds"
	expect_eq "$mode: recreated veth-imds keeps its MAC (guests' ARP caches stay right)" "$mac" \
		"$(in_pod cat /sys/class/net/veth-imds/address)"
	breaks "$mode" "ip addr del 169.254.169.254/32 dev veth-imds" "ip addr del 169.254.169.254/32 dev veth-imds"
	breaks "$mode" "ip link set veth-imds-br master k6t-eth0" "ip link set veth-imds-br master k6t-eth0"
	breaks "$mode" "ip link set veth-imds down" "ip link set veth-imds down"
	breaks "$mode" "ip rule del pref 1000" "ip rule del pref 1000"
	breaks "$mode" "ip route flush table 169254" "ip route flush table 169254"
	breaks "$mode" "ip link del veth-imds-br" "ip link del veth-imds-br"
	breaks "$mode" "nft delete table netdev kubevirt_imds" "nft delete table netdev kubevirt_imds"
	breaks "$mode" "nft flush ruleset" "nft flush ruleset"
	expect_eq "$mode: veth-imds-br is no bridge port again" "" "$(in_pod ip -o link show master k6t-eth0 | grep -o veth-imds-br)"
	n=$(grep -c 'restored plumbing' "$IMDS_LOG")
	m=$(grep -c 'changed by another process' "$IMDS_LOG")
	if ((n >= 7 && m >= 2)); then ok "$mode: $n plumbing restorations and $m rule reprogrammings logged"; else not_ok "$mode: restorations logged" "$n $m" "$(imds_log_tail 30)"; fi
	imds_stop
	expect_eq "$mode: SIGTERM exit 0" 0 "$IMDS_STATUS"
	node_capture_check "from the $mode guest through every break and restore"
done
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
