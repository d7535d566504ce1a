#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# Only the VM reaches the server.  In KubeVirt's masquerade pod: a
# neighbour on the pod's eth0 side that routes 169.254.169.254 through the
# pod gets no answer from the sidecar (KubeVirt's PREINBOUND hands it to the
# guest); a second host on the VM's bridge (a port that is not the VM's
# tap, masquerade-style via 10.0.2.1) gets nothing, ARP or TCP, while the
# VM is served beside it from its first request on; and with the pod's
# default all.arp_ignore=0 the kernel never answers ARP for
# 169.254.169.254 (per-device settings and the steering).  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

ARP_PROBE=$REPO/tests/lib/arp_probe.py
NS_OTHER=$NS_TAG-other

if ! ns_setup || ! node_link 1400 || ! launcher_masquerade; then
	not_ok "launcher pod (masquerade) set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi
expect_eq "pod netns starts with all.arp_ignore 0" 0 "$(sysctl_pod all/arp_ignore)"
# A second host on the bridge, on a tap of its own that is not the VM's,
# there before the VM says anything.
tap_add tap1 k6t-eth0 1400 && guest_attach "$NS_OTHER" tap1 masquerade 52:54:00:aa:bb:cc 10.0.2.3
guest_attach "$NS_VM" tap0 masquerade

# The node's side, from before the sidecar's first start to the end: no
# packet for 169.254.169.254 (or its IPv6 addresses) leaves the pod.
node_capture_start
imds_start IMDS_INTERFACES=default:masquerade:tap0
imds_wait_serving 1 10
t0=$(now_ms)
out=$(guest_get "$NS_VM" /healthz 2>&1)
t1=$(now_ms)
if [[ $out == OK ]] && ((t1 - t0 < 900)); then
	ok "the VM's first request served in $((t1 - t0)) ms beside a foreign port"
else
	not_ok "the VM's first request served at once" "$out, $((t1 - t0)) ms" "$(imds_log_tail)"
fi

# The node (the pod's eth0 neighbour) sends to 169.254.169.254 via the pod.
ip -n "$NS_NODE" route add 169.254.169.254/32 via "$POD_IP" dev cali0 2>/dev/null ||
	ip -n "$NS_NODE" route add 169.254.169.254/32 dev cali0
before=$(grep -c ' GET ' "$IMDS_LOG")
if out=$(in_node curl -sS --max-time 2 http://169.254.169.254/healthz 2>&1); then
	not_ok "a neighbour via the pod's eth0 gets no answer" "$out"
else
	ok "a neighbour via the pod's eth0 gets no answer (${out#curl: (* })"
fi
expect_eq "... and the server never saw its request" "$before" "$(grep -c ' GET ' "$IMDS_LOG")"

if out=$(GUEST_TIMEOUT=2 guest_get "$NS_OTHER" /healthz 2>&1); then
	not_ok "another host on the bridge gets nothing" "$out"
else
	ok "another host on the bridge gets nothing (${out#curl: (* })"
fi
if ip netns exec "$NS_OTHER" curl -s --max-time 2 -o /dev/null http://10.0.2.1:9/ 2>/dev/null; [[ $? == 7 ]]; then
	ok "... while its path to the gateway works (refused by the pod on port 9)"
else
	not_ok "... while its path to the gateway works"
fi
out=$(ip netns exec "$NS_OTHER" "$PY" "$ARP_PROBE" eth0 169.254.169.254 --sender-ip 10.0.2.3 --count 2 --timeout 1)
if grep -q '"replies": 0' <<<"$out"; then ok "... and no ARP reply for 169.254.169.254"; else not_ok "... and no ARP reply for 169.254.169.254" "$out"; fi
out=$(guest_get "$NS_VM" /v1/meta-data 2>&1)
if grep -q instance-id <<<"$out"; then ok "the VM is still served"; else not_ok "the VM is still served" "$out" "$(imds_log_tail)"; fi

# The kernel's own ARP answers for 169.254.169.254 are off: stop the
# responder and ask from a link-local address on the VM's port.
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
expect_eq "per-device: veth-imds arp_ignore 8; the bridge and all.* untouched" "0 8 0" \
	"$(sysctl_pod k6t-eth0/arp_ignore) $(sysctl_pod veth-imds/arp_ignore) $(sysctl_pod all/arp_ignore)"
# (the node's own request to .254 via the pod, from its address 192.168.100.1,
# and whatever answer it got, are the node's: counted out)
node_capture_check "from the VM or the other host on the bridge, served or not" "not host 192.168.100.1"
if imds_log_clean; then ok "server log free of sanitizer reports"; else not_ok "server log free of sanitizer reports"; fi
tap_done
