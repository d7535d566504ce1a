#!/usr/bin/env bash
# Only the VM reaches the server.  A neighbour on the pod's eth0 side that
# routes 169.254.169.254 through the pod gets no answer; a second host on
# the VM's bridge (its own port, masquerade-style via 10.0.2.1) gets
# nothing; the VM keeps being served.  And with the pod's default
# all.arp_ignore=0, the per-device settings alone keep the kernel from
# answering ARP for 169.254.169.254.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

ARP_PROBE=$REPO/tests/lib/arp_probe.py
NS_OTHER=$NS_TAG-other

if ! ns_setup || ! pod_eth0 || ! pod_bridge 1400 || ! vm_attach "$NS_VM" masquerade; then
	not_ok "network namespaces set up (needs root and iproute2)"
	tap_done
	exit 1
fi
expect_eq "pod netns starts with all.arp_ignore 0" 0 "$(sysctl_pod all/arp_ignore)"

imds_start
if imds_wait_serving 1 10 && guest_get "$NS_VM" /healthz >/dev/null; then
	ok "the VM is served"
else
	not_ok "the VM is served" "$(imds_log_tail)"
fi

# The node (the pod's eth0 neighbour) sends to 169.254.169.254 via the pod.
ip -n "$NS_NODE" route add 169.254.169.254/32 via 10.244.1.5 dev cali0
before=$(grep -c ' GET ' "$IMDS_LOG")
if out=$(in_node curl -sS --max-time 2 http://169.254.169.254/healthz 2>&1); then
	not_ok "a neighbour via the pod's eth0 gets no answer" "$out"
else
	ok "a neighbour via the pod's eth0 gets no answer (${out#curl: (* })"
fi
expect_eq "... and the server never saw its request" "$before" "$(grep -c ' GET ' "$IMDS_LOG")"

# A second host on the bridge, on a port of its own, using the gateway.
vm_attach "$NS_OTHER" masquerade 52:54:00:aa:bb:cc nb0 10.0.2.3
for _ in $(seq 100); do grep -q 'foreign bridge port' "$IMDS_LOG" && break; sleep 0.01; done
if out=$(GUEST_TIMEOUT=2 guest_get "$NS_OTHER" /healthz 2>&1); then
	not_ok "another MAC on the bridge gets nothing" "$out"
else
	ok "another MAC on the bridge gets nothing (${out#curl: (* })"
fi
if ip netns exec "$NS_OTHER" curl -s --max-time 2 -o /dev/null http://10.0.2.1:9/ 2>/dev/null; [[ $? == 7 ]]; then
	ok "... while its path to the gateway works (refused by the pod on port 9)"
else
	not_ok "... while its path to the gateway works"
fi
out=$(guest_get "$NS_VM" /v1/meta-data 2>&1)
if grep -q instance-id <<<"$out"; then ok "the VM is still served"; else not_ok "the VM is still served" "$out" "$(imds_log_tail)"; fi
ip netns del "$NS_OTHER"
for _ in $(seq 100); do grep -q 'bridge has only tap ports' <(tail -n 3 "$IMDS_LOG") && break; sleep 0.01; done
out=$(guest_get "$NS_VM" /v1/meta-data 2>&1)
if grep -q instance-id <<<"$out"; then ok "the VM is served after the other port left"; else not_ok "the VM is served after the other port left" "$out"; fi

# The kernel's own ARP answers for 169.254.169.254 are off per device:
# stop the responder and ask from a link-local address on the VM's port.
imds_stop
ip -n "$NS_VM" addr add 169.254.10.20/16 dev eth0
out=$(in_vm "$PY" "$ARP_PROBE" eth0 169.254.169.254 --sender-ip 169.254.10.20 --count 2 --timeout 1)
if grep -q '"replies": 0' <<<"$out"; then
	ok "with all.arp_ignore=0 the kernel does not answer ARP for 169.254.169.254"
else
	not_ok "with all.arp_ignore=0 the kernel does not answer ARP for 169.254.169.254" "$out"
fi
out=$(in_vm "$PY" "$ARP_PROBE" eth0 10.0.2.1 --sender-ip 10.0.2.2)
if grep -q '"replies": 1' <<<"$out"; then ok "... while it still answers for the gateway 10.0.2.1"; else not_ok "... while it still answers for the gateway 10.0.2.1" "$out"; fi
expect_eq "per-device: bridge arp_ignore 1, veth-imds 8, all.* untouched" "1 8 0" \
	"$(sysctl_pod k6t-eth0/arp_ignore) $(sysctl_pod veth-imds/arp_ignore) $(sysctl_pod all/arp_ignore)"
# Bridge-binding-like: a foreign port is on the bridge before the VM says
# anything, so only VM MACs pass the guard.  The Multus network-status
# file names the VM's MAC: its very first SYN is accepted (no 1 s TCP
# retransmit while the bridge's learning of the MAC reaches us).
NS_POD=$NS_TAG-pod2 NS_VM=$NS_TAG-vm2 NS_NODE=$NS_TAG-node2
ns_setup && pod_bridge 1400
vm_attach "$NS_TAG-other2" masquerade 52:54:00:aa:bb:cc nb0 10.0.2.3
in_vm sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
cat >"$NET_TMP/network-status" <<'JSON'
[{
    "name": "k8s-pod-network",
    "interface": "eth0",
    "ips": ["10.244.1.5"],
    "mac": "52:54:00:12:34:56",
    "default": true,
    "dns": {}
}]
JSON
imds_start IMDS_NETWORK_STATUS_FILE="$NET_TMP/network-status"
imds_wait_serving 1 10
vm_attach "$NS_VM" masquerade
t0=$(now_ms)
out=$(guest_get "$NS_VM" /healthz 2>&1)
t1=$(now_ms)
if [[ "$out" == OK ]] && ((t1 - t0 < 900)); then
	ok "network-status MAC: the VM's first request served in $((t1 - t0)) ms beside a foreign port"
else
	not_ok "network-status MAC: the VM's first request served at once" "$out, $((t1 - t0)) ms" "$(imds_log_tail)"
fi
if grep -q '1 VM MAC(s) from' "$IMDS_LOG"; then ok "network-status file read"; else not_ok "network-status file read" "$(imds_log_tail)"; fi
if out=$(GUEST_TIMEOUT=2 guest_get "$NS_TAG-other2" /healthz 2>&1); then
	not_ok "... and the foreign port still gets nothing" "$out"
else
	ok "... and the foreign port still gets nothing"
fi
imds_stop
if imds_log_clean; then ok "server log free of sanitizer reports"; else not_ok "server log free of sanitizer reports"; fi
tap_done
