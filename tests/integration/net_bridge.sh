#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# Bridge binding on the pod network and a managedTap plugin, built as
# KubeVirt builds them (tests/lib/netns.sh launcher_bridge,
# launcher_managedtap): the CNI's eth0 renamed eth0-nic and bridged to the
# node, the pod IP (and its IPv6 link-local) kept on a dummy eth0 in the
# pod, the guest given that same IP and the pod's MAC, as KubeVirt does.  First the kernel facts that make these bindings hard (E2: the
# guest's SYN to .254 is a martian in the pod, since its source is local
# there; the node's proxy ARP answers for .254 at once, proxy_delay 0),
# then the sidecar serving them anyway: a guest with KubeVirt's DHCP routes
# (its gateway is the node), one that also has a link-local route (it ARPs
# for .254), the OVN-K-style UDN guest; strict reverse-path filtering in
# the pod changes nothing; the node never sees a packet or an ARP for .254;
# a process of the pod and a host on the node's side get nothing.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

ARP_PROBE=$REPO/tests/lib/arp_probe.py
NODE_LOG=$NET_TMP/node-http.log

if ! ns_setup || ! node_link 1450 || ! launcher_bridge || ! guest_attach "$NS_VM" tap0 bridge-ll "$POD_MAC"; then
	not_ok "launcher pod (bridge binding) and guest set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi
nic=$(in_pod ip -d -o link show eth0-nic)
if [[ $nic == *"master k6t-eth0"* ]] && in_pod bridge -d link show dev eth0-nic | grep -q 'learning off' &&
	[[ -z $(in_pod ip -4 -o addr show dev eth0-nic) ]] &&
	[[ $(in_pod ip -4 -o addr show dev eth0 | awk '{print $4}') == "$POD_IP/32" ]] &&
	[[ $(in_pod cat /sys/class/net/eth0/address) == "$POD_MAC" ]] &&
	[[ $(in_pod ip -6 -o addr show dev eth0 | awk '{print $4}') == "$POD_LL6/64" ]] &&
	[[ $(in_pod ip -4 -o addr show dev k6t-eth0 | awk '{print $4}') == 169.254.75.10/32 ]] &&
	[[ $(sysctl_pod all/arp_ignore) == 1 ]]; then
	ok "launcher as KubeVirt builds it: eth0-nic bridged (learning off, no address), pod MAC, IP and link-local on a dummy eth0, 169.254.75.10/32 on k6t-eth0, all.arp_ignore 1"
else
	not_ok "launcher as KubeVirt builds it" "$nic" "$(in_pod ip -o addr)" "$(sysctl_pod all/arp_ignore)"
fi

# The node answers HTTP on 169.254.169.254 as a cloud node's own metadata
# service would: whatever reaches it is a leak (and is logged).
ip -n "$NS_NODE" addr add 169.254.169.254/32 dev lo
ip netns exec "$NS_NODE" "$PY" -m http.server --bind 169.254.169.254 80 >"$NODE_LOG" 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 200); do in_node curl -s -o /dev/null --max-time 1 http://169.254.169.254/ && break; sleep 0.05; done

# --- the kernel facts, with no sidecar: pinned here ----------------------------------
# The guest's ARP for .254 (its link-local route) goes out eth0-nic and the
# node's proxy ARP answers at once (Calico's proxy_delay 0).
out=$(in_vm "$PY" "$ARP_PROBE" eth0 169.254.169.254 --sender-ip "$POD_IP" --count 1 --timeout 1)
if grep -q '"replies": 1' <<<"$out" && grep -q '"from_mac": "ee:\|"from_mac": ' <<<"$out" &&
	! grep -q '"from_mac": "02:a9:fe' <<<"$out"; then
	ok "no sidecar: the node answers the guest's ARP for 169.254.169.254 by proxy ($(sed -n 's/.*"from_mac": "\([^"]*\)".*/\1/p' <<<"$out"))"
else
	not_ok "no sidecar: the node answers the guest's ARP for 169.254.169.254 by proxy" "$out"
fi
# ...and the guest's .254 goes to its gateway, the node: the node's own
# metadata service answers (a cloud node's IMDS, in production).
out=$(GUEST_TIMEOUT=2 guest_get "$NS_VM" /etc-hostname 2>&1)
if grep -q 'GET /etc-hostname' "$NODE_LOG"; then
	ok "no sidecar: the guest's request reaches the node's 169.254.169.254"
else
	not_ok "no sidecar: the guest's request reaches the node's 169.254.169.254" "$out" "$(cat "$NODE_LOG")"
fi
# E2: even a frame addressed to the pod's own stack is a martian there,
# its source being the pod's own address.  A plain listener in the pod on
# an address of the bridge, asked by the guest with the bridge's MAC.
in_pod sysctl -qw net.ipv4.conf.all.log_martians=0
ip -n "$NS_POD" addr add 169.254.75.20/32 dev k6t-eth0
ip netns exec "$NS_POD" "$PY" -m http.server --bind 169.254.75.20 80 >/dev/null 2>&1 &
plain=$!
for _ in $(seq 100); do in_pod ss -ltn | grep -q '169.254.75.20:80' && break; sleep 0.02; done
ip -n "$NS_VM" neigh replace 169.254.75.20 lladdr "$(in_pod cat /sys/class/net/k6t-eth0/address)" dev eth0 nud permanent
ip -n "$NS_VM" route add 169.254.75.20/32 dev eth0
if out=$(in_vm curl -sS --max-time 2 -o /dev/null http://169.254.75.20/ 2>&1); then
	not_ok "E2: the guest's SYN, sourced from the pod's own IP, is dropped in the pod as a martian" "$out"
else
	ok "E2: the guest's SYN, sourced from the pod's own IP, is dropped in the pod as a martian"
fi
kill "$plain"
wait "$plain" 2>/dev/null
ip -n "$NS_VM" route del 169.254.75.20/32 dev eth0
ip -n "$NS_VM" neigh del 169.254.75.20 dev eth0
ip -n "$NS_POD" addr del 169.254.75.20/32 dev k6t-eth0
: >"$NODE_LOG"
in_vm ip neigh flush dev eth0

# --- the sidecar --------------------------------------------------------------------
node_capture_start cali0
imds_start IMDS_INTERFACES=default:bridge:tap0
if imds_wait_serving 1 10; then ok "run: serving tap0 (bridge)"; else not_ok "run: serving tap0 (bridge)" "$(imds_log_tail)"; fi
# the guest has the link-local route: it ARPs for .254 itself
out=$(cloudinit_fetch "$NS_VM" 2>&1)
if grep -q '"ok": true' <<<"$out" && grep -q '"retries": 0' <<<"$out"; then
	ok "guest with a link-local route (ARPs for .254): cloud-init get_data(), no retries"
else
	not_ok "guest with a link-local route: cloud-init get_data()" "$out" "$(imds_log_tail)"
fi
veth_mac=$(in_pod cat /sys/class/net/veth-imds/address)
expect_eq "... it learned veth-imds's MAC for 169.254.169.254 (the node's proxy ARP never saw the request)" "$veth_mac" \
	"$(in_vm ip neigh show 169.254.169.254 | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')"
# the guest as KubeVirt's DHCP configures it: .254 via its gateway, the node
ip -n "$NS_VM" route del 169.254.0.0/16 dev eth0
in_vm ip neigh flush dev eth0
out=$(cloudinit_fetch "$NS_VM" 2>&1)
if grep -q '"ok": true' <<<"$out" && grep -q '"retries": 0' <<<"$out"; then
	ok "guest with KubeVirt's DHCP routes (.254 via the node): cloud-init get_data(), no retries"
else
	not_ok "guest with KubeVirt's DHCP routes: cloud-init get_data()" "$out" "$(imds_log_tail)"
fi
out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
if grep -q '"vmName":"netvm"' <<<"$out"; then ok "/v1/identity from the guest"; else not_ok "/v1/identity from the guest" "$out"; fi
out=$(guest_get "$NS_VM" /v1/token -H 'Metadata: true' 2>&1)
if grep -q '"token":"eyJ' <<<"$out"; then ok "/v1/token from the guest"; else not_ok "/v1/token from the guest" "$out"; fi
expect_eq "the guest's source (the pod IP) reaches the sidecar as its alias 192.0.0.x" 0 \
	"$(grep -E ' GET /v1/' "$IMDS_LOG" | grep -vc '^[^ ]* 192\.0\.0\.1[2-9][0-9] ')"
# strict reverse-path filtering, as hardened nodes set it
in_pod sysctl -qw net.ipv4.conf.all.rp_filter=1
out=$(guest_get "$NS_VM" /v1/meta-data 2>&1)
if grep -q 'instance-id' <<<"$out"; then ok "all.rp_filter=1 in the pod: still served"; else not_ok "all.rp_filter=1 in the pod: still served" "$out"; fi
in_pod sysctl -qw net.ipv4.conf.all.rp_filter=0
if r=$(pod_refused); then
	ok "a process of the pod is refused at once ($r)"
else
	not_ok "a process of the pod is refused at once" "$r"
fi
# a host on the node's side asks the pod for .254 (routing it to the pod IP)
ip -n "$NS_NODE" route replace 169.254.169.254/32 via "$POD_IP" dev cali0 2>/dev/null ||
	ip -n "$NS_NODE" route replace 169.254.169.254/32 dev cali0
ip -n "$NS_NODE" addr del 169.254.169.254/32 dev lo
before=$(grep -c ' GET ' "$IMDS_LOG")
if out=$(in_node curl -sS --max-time 2 http://169.254.169.254/healthz 2>&1); then
	not_ok "the node's side gets no answer from the pod" "$out"
else
	ok "the node's side gets no answer from the pod (${out#curl: (* })"
fi
expect_eq "... and the sidecar never saw its request" "$before" "$(grep -c ' GET ' "$IMDS_LOG")"
n=$(node_capture_count)
# the node's own requests are the only .254 packets on cali0: count the
# guest's (source the pod IP, or ARP from the guest's MAC, the pod's: the
# dummy that also has it is down and sends nothing)
guest_pkts=$(tcpdump -n -e -r "$(node_capture_file cali0)" 2>/dev/null | grep -c " $POD_MAC > ")
expect_eq "the node saw no frame of the guest's for 169.254.169.254 (ARP or IP) while the sidecar ran" 0 "$guest_pkts"
expect_eq "the node's HTTP server on 169.254.169.254 got nothing while the sidecar ran" 0 "$(grep -c 'GET' "$NODE_LOG")"
imds_stop
expect_eq "SIGTERM: exit 0" 0 "$IMDS_STATUS"
# The guest's ARP for .254 above was answered by the responder, which counts
# it: the sidecar's in its stop line (pod mode), the agent's in /metrics.
if [[ $IMDS_NET_MODE_TEST == agent ]]; then
	arp=$(agent_metric imds_node_arp_replies_total)
	if [[ -n $arp ]] && ((arp >= 1)); then ok "the responder's ARP replies counted (imds-node's imds_node_arp_replies_total $arp)"; else not_ok "the responder's ARP replies counted (imds-node's imds_node_arp_replies_total)" "'$arp'"; fi
else
	expect_eq "the responder's ARP replies counted (stop line)" 1 "$(grep -cE 'stopped \([1-9][0-9]* ARP replies' "$IMDS_LOG")"
fi
echo "# node capture while the sidecar ran: $n packets, the node's own request to the pod (dropped by the bridge table before the guest)"

# The sidecar gone: the fallback keeps the guest's .254 inside the pod (the
# bridge table drops it before eth0-nic).
ip -n "$NS_NODE" route del 169.254.169.254/32 2>/dev/null
ip -n "$NS_NODE" addr add 169.254.169.254/32 dev lo
in_pod nft delete table netdev kubevirt_imds
in_vm ip neigh flush dev eth0
node_capture_start cali0
if out=$(GUEST_TIMEOUT=2 guest_get "$NS_VM" /etc-hostname 2>&1); then
	not_ok "sidecar gone, steering gone: the guest's .254 does not leave the pod" "$out"
else
	ok "sidecar gone, steering gone: the guest's .254 does not leave the pod"
fi
expect_eq "... the node saw none of it" "0 0" "$(node_capture_count) $(grep -c 'GET' "$NODE_LOG")"

# --- managedTap (OVN-K primary UDN) --------------------------------------------------
NS_POD=$NS_TAG-pod2 NS_VM=$NS_TAG-vm2 NS_NODE=$NS_TAG-node2
if ! ns_setup || ! node_link 1400 || ! launcher_managedtap || ! guest_attach "$NS_VM" tap0 udn; then
	not_ok "launcher pod (managedTap on ovn-udn1) and guest set up"
else
	if [[ -z $(in_pod ip -4 -o addr show dev k6t-ovn-udn1) ]] &&
		[[ $(in_pod ip -4 -o addr show dev ovn-udn1 | awk '{print $4}') == "$UDN_IP/24" ]]; then
		ok "managedTap launcher: no fake IP on k6t-ovn-udn1, the UDN address on a dummy ovn-udn1"
	else
		not_ok "managedTap launcher" "$(in_pod ip -4 -o addr)"
	fi
	node_capture_start udn0
	imds_start IMDS_INTERFACES=default:managedtap:tap0
	if imds_wait_serving 1 10 && out=$(cloudinit_fetch "$NS_VM" 2>&1) && grep -q '"ok": true' <<<"$out"; then
		ok "managedTap guest (.254 via OVN's router): cloud-init get_data()"
	else
		not_ok "managedTap guest: cloud-init get_data()" "${out:-}" "$(imds_log_tail)"
	fi
	expect_eq "managedTap: the UDN's router saw nothing for 169.254.169.254" 0 "$(node_capture_count)"
	imds_stop
fi
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
