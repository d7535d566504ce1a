#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# DNS at 169.254.169.254 (issue 32): where the node's resolver is
# 169.254.169.254 (GKE's metadata server answers DNS there), a guest given
# that nameserver (KubeVirt's DHCP and passt hand the guest the pod's
# nameservers) must resolve as it would without the sidecar.  Only the
# service's own TCP port is steered and guarded; the rest of .254 is the
# pod's to route.  For the masquerade and the bridge launcher
# (tests/lib/netns.sh), with a resolver on the "node" side at .254:53, UDP
# and TCP: the guest's queries are answered by the node before the sidecar,
# while it serves, after it was killed (tables and plumbing left) and after
# veth-imds flapped (the kernel writes the address's entry in table local
# again; the sidecar moves it away); a process of the pod (passt's DNS
# forwarding) resolves there too (masquerade's pod: bridge binding leaves
# the pod no route); the guest is still served on port 80, a
# process of the pod still refused; and the node sees nothing for .254 but
# DNS — no TCP to port 80, no ARP for it.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=../lib/dns.sh
. "$(dirname "$0")/../lib/dns.sh"

DNS_DIAG=(imds_log_tail 5)

# One launcher: MODE masquerade | bridge.
suite() {
	local mode=$1 gmode ifs launcher out
	case $mode in
	masquerade) gmode=masquerade launcher=launcher_masquerade ifs=default:masquerade:tap0 ;;
	bridge) gmode=bridge launcher=launcher_bridge ifs=default:bridge:tap0 ;;
	esac
	if ! ns_setup || ! node_link 1400 || ! "$launcher" || ! guest_attach "$NS_VM" tap0 "$gmode" || ! dns_node; then
		not_ok "$mode: launcher, guest and the node's resolver at $SVC set up"
		return 1
	fi
	check_resolves "$mode: without the sidecar, the guest's DNS at $SVC is the node's" "$mode-before" "$NS_VM"
	node_capture_start
	imds_start "IMDS_INTERFACES=$ifs"
	if imds_wait_serving 1 10 && out=$(guest_get "$NS_VM" /healthz) && [[ $out == OK ]]; then
		ok "$mode: the guest is served on $SVC:80"
	else
		not_ok "$mode: the guest is served on $SVC:80" "$out" "$(imds_log_tail)"
	fi
	check_resolves "$mode: with the sidecar serving, the guest's DNS is still the node's" "$mode-serving" "$NS_VM"
	# A process of the pod, by the pod's own routes (passt forwards its
	# guest's DNS so, with the same eth0 and routes as masquerade's pod).
	# Bridge binding leaves the pod no route of its own (eth0 is a dummy).
	[[ $mode == masquerade ]] &&
		check_resolves "$mode: a process of the pod (as passt's DNS forwarding) resolves at the node's $SVC" "$mode-pod" "$NS_POD"
	expect_eq "$mode: the kernel's 'local $SVC' entry moved out of table local" 0 "$(local_entries)"
	# ip(8) names the protocol from /etc/protocols (netbase), else "ipproto-6":
	# a minimal Debian root has no netbase (fresh-check's minbase)
	expect_eq "$mode: ... into table 169254, behind 'to $SVC ipproto tcp dport 80'" "1 1" \
		"$(in_pod ip -4 route show table 169254 | grep -c "^local $SVC dev veth-imds") $(in_pod ip -4 rule show | grep -cE "to $SVC ipproto (tcp|(ipproto-)?6) dport 80 lookup 169254")"
	if r=$(pod_refused); then ok "$mode: a process of the pod is still refused port 80 at once ($r)"; else not_ok "$mode: a process of the pod is still refused port 80 at once" "$r"; fi
	# A flap of veth-imds: the kernel writes table local's entry again.
	in_pod ip link set veth-imds down
	in_pod ip link set veth-imds up
	for _ in $(seq 100); do [[ $(local_entries) == 0 ]] && guest_get "$NS_VM" /healthz >/dev/null 2>&1 && break; sleep 0.02; done
	expect_eq "$mode: veth-imds flapped: table local's entry moved away again" 0 "$(local_entries)"
	check_resolves "$mode: after the flap, the guest's DNS is the node's" "$mode-flap" "$NS_VM"
	out=$(guest_get "$NS_VM" /healthz 2>&1)
	expect_eq "$mode: after the flap, the guest is served" OK "$out"
	# Dead (SIGKILL: no cleanup; tables, rules and plumbing stay).
	kill -KILL "$IMDS_PID"
	wait "$IMDS_PID" 2>/dev/null
	IMDS_PID=
	check_resolves "$mode: sidecar killed, the guest's DNS is still the node's" "$mode-dead" "$NS_VM"
	out=$(GUEST_TIMEOUT=1 guest_get "$NS_VM" /healthz 2>&1)
	if [[ $out != OK ]]; then ok "$mode: sidecar killed, port 80 is not answered by anyone"; else not_ok "$mode: sidecar killed, port 80 is not answered by anyone" "$out"; fi
	local n
	n=$(node_capture_count)
	local other
	other=$(tcpdump -n -r "$(node_capture_file cali0)" 'not port 53' 2>/dev/null | wc -l)
	if ((n > 0)) && [[ $other == 0 ]]; then
		ok "$mode: the node saw DNS for $SVC ($n packets) and nothing else for it: no port 80, no ARP"
	else
		not_ok "$mode: the node saw DNS for $SVC and nothing else for it" "$n packets, $other not DNS" \
			"$(tcpdump -n -r "$(node_capture_file cali0)" 'not port 53' 2>/dev/null | head -5)"
	fi
	if imds_log_clean; then ok "$mode: server log free of sanitizer reports"; else not_ok "$mode: server log free of sanitizer reports" "$(grep -A20 -E 'Sanitizer|runtime error' "$IMDS_LOG" | head -40)"; fi
}

# A fresh set of namespaces for the next launcher.
reset_netns() {
	local ns p
	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	BG_PIDS=()
	for ns in "${NS_ALL[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	NS_ALL=()
	NS_TAG=${NS_TAG}b
	NS_NODE=$NS_TAG-node NS_POD=$NS_TAG-pod NS_VM=$NS_TAG-vm
	[[ -s "$IMDS_LOG" ]] && cat "$IMDS_LOG" >>"$NET_TMP/earlier.log"
	: >"$IMDS_LOG"
}

[[ ${NET_DNS_ONLY:-} == bridge ]] || suite masquerade
reset_netns
suite bridge
tap_done
