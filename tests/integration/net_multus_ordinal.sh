#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# The pod of a VMI from before KubeVirt's hashed interface names, and of its
# migration targets (KubeVirt keeps the source pod's ordinal scheme:
# pkg/network/pod/annotations/generator.go:93-113): the Multus network's pod
# interface is net1 (namescheme/networknamescheme.go:111-123), so KubeVirt
# builds k6t-net1, net1-nic and tap1 (link/names.go:34-50), next to
# k6t-eth0/tap0 (tests/lib/netns.sh, MULTUS_ORDINAL=1).  The taps are
# multi-queue here, as for a VMI with networkInterfaceMultiqueue and 2 vCPUs
# (net_masquerade has the default single-queue one): the steering sits at
# the tap's netdev ingress, whatever its queues.  The guest is served on
# both NICs when IMDS_INTERFACES names tap1 (what the webhook's pod check
# now takes) and when it is absent (every k6t-* bridge's tap); the Multus L2
# sees nothing of the guest's for 169.254.169.254.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

NET=blue
if ! ns_setup || ! node_link 1400 || ! TAP_MQ=1 MULTUS_ORDINAL=1 launcher_multus_bridge "$NET" ||
	! guest_attach "$NS_VM" tap0 masquerade ||
	! GUEST_IF=eth1 guest_attach "$NS_VM" tap1 linklocal 52:54:00:12:34:57; then
	not_ok "launcher pod (masquerade + Multus bridge, ordinal names, multi-queue taps) and a two-NIC guest set up"
	tap_done
	exit 1
fi
expect_eq "KubeVirt's ordinal names for network '$NET': net1, k6t-net1, tap1, net1-nic" \
	"k6t-net1 tap1 net1-nic net1" \
	"$(for d in k6t-net1 tap1 net1-nic net1; do in_pod test -e "/sys/class/net/$d" && printf '%s ' "$d"; done | sed 's/ $//')"
mq=0
for t in tap0 tap1; do
	in_pod ip -d -o link show "$t" | grep -q multi_queue && mq=$((mq + 1))
done
expect_eq "both taps multi-queue (networkInterfaceMultiqueue)" 2 "$mq"

check_served() { # $1: what
	in_vm ip neigh flush dev eth1
	ip -n "$NS_VM" route replace 169.254.169.254/32 via 10.0.2.1 dev eth0
	local out
	out=$(guest_get "$NS_VM" /v1/meta-data 2>&1)
	if grep -q instance-id <<<"$out"; then ok "$1: served through tap0"; else not_ok "$1: served through tap0" "$out" "$(imds_log_tail)"; fi
	ip -n "$NS_VM" route replace 169.254.169.254/32 dev eth1 scope link
	out=$(cloudinit_fetch "$NS_VM" 2>&1)
	if grep -q '"ok": true' <<<"$out"; then
		ok "$1: served through tap1 (ARP for .254): cloud-init get_data()"
	else
		not_ok "$1: served through tap1" "$out" "$(imds_log_tail)"
	fi
}

node_capture_start br-l2
imds_start IMDS_INTERFACES="default:masquerade:tap0,$NET:bridge:tap1"
if imds_wait_serving 1 10 && grep -q "serving .* to tap0 (default, masquerade), tap1 ($NET, bridge)" "$IMDS_LOG"; then
	ok "IMDS_INTERFACES naming tap1: serving both taps"
else
	not_ok "IMDS_INTERFACES naming tap1: serving both taps" "$(imds_log_tail)"
fi
check_served "IMDS_INTERFACES naming tap1"
imds_stop

imds_start
if imds_wait_serving 1 10 && grep -q "IMDS_INTERFACES not set" "$IMDS_LOG" &&
	grep -q "serving .* to tap0, tap1" "$IMDS_LOG"; then
	ok "without IMDS_INTERFACES: every k6t-* bridge's tap, k6t-net1's tap1 too"
else
	not_ok "without IMDS_INTERFACES: every k6t-* bridge's tap" "$(imds_log_tail)"
fi
check_served "without IMDS_INTERFACES"
imds_stop
expect_eq "the Multus L2 saw no frame of the guest's for 169.254.169.254 (ARP or IP)" 0 \
	"$(tcpdump -n -e -r "$(node_capture_file br-l2)" 2>/dev/null | grep -c ' 52:54:00:12:34:57 > ')"
expect_eq "SIGTERM: exit 0" 0 "$IMDS_STATUS"
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
