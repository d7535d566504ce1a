#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# A VM with two NICs: masquerade on the pod network, bridge binding on a
# Multus network (a bridge CNI NAD with no IPAM, shared with another host
# on its L2).  KubeVirt builds k6t-eth0/tap0 first, then k6t-<11 hex of the
# network name>/tap<same>, <same>-nic and a dummy pod<same>
# (tests/lib/netns.sh launcher_multus_bridge).  The guest is served on
# either NIC: through its gateway on the pod network, and by ARP for .254 on
# the Multus one; its ARP never reaches the Multus L2 (where a router or a
# proxy-ARP host would race the sidecar).  The host on that L2 gets nothing,
# ARP or TCP.  A VM whose only NIC is the Multus one is served; a pod
# admitted without IMDS_INTERFACES serves every k6t-* bridge's tap.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

ARP_PROBE=$REPO/tests/lib/arp_probe.py
NET=blue
H=$(multus_hash "$NET")
if ! ns_setup || ! node_link 1400 || ! launcher_multus_bridge "$NET" ||
	! guest_attach "$NS_VM" tap0 masquerade ||
	! GUEST_IF=eth1 guest_attach "$NS_VM" "tap$H" linklocal 52:54:00:12:34:57; then
	not_ok "launcher pod (masquerade + Multus bridge) and a two-NIC guest set up"
	tap_done
	exit 1
fi
expect_eq "KubeVirt's names for network '$NET': pod$H, k6t-$H, tap$H, $H-nic" \
	"k6t-$H tap$H $H-nic pod$H" \
	"$(for d in "k6t-$H" "tap$H" "$H-nic" "pod$H"; do in_pod test -e "/sys/class/net/$d" && printf '%s ' "$d"; done | sed 's/ $//')"
i0=$(in_pod cat /sys/class/net/k6t-eth0/ifindex)
i1=$(in_pod cat "/sys/class/net/k6t-$H/ifindex")
if ((i0 < i1)); then ok "created in KubeVirt's order: k6t-eth0 ($i0) before k6t-$H ($i1)"; else not_ok "created in KubeVirt's order" "$i0 $i1"; fi

node_capture_start br-l2
imds_start IMDS_INTERFACES="default:masquerade:tap0,$NET:bridge:tap$H"
if imds_wait_serving 1 10 && grep -q "serving .* to tap0 (default, masquerade), tap$H ($NET, bridge)" "$IMDS_LOG"; then
	ok "run: serving both taps"
else
	not_ok "run: serving both taps" "$(imds_log_tail)"
fi
# eth1's link-local /16 covers .254: first the pod network's way, by a host route
ip -n "$NS_VM" route add 169.254.169.254/32 via 10.0.2.1 dev eth0
out=$(guest_get "$NS_VM" /v1/meta-data 2>&1)
if grep -q instance-id <<<"$out"; then ok "served through the pod network NIC (via 10.0.2.1)"; else not_ok "served through the pod network NIC" "$out" "$(imds_log_tail)"; fi
ip -n "$NS_VM" route replace 169.254.169.254/32 dev eth1 scope link
out=$(cloudinit_fetch "$NS_VM" 2>&1)
if grep -q '"ok": true' <<<"$out" && grep -q '"retries": 0' <<<"$out"; then
	ok "served through the Multus NIC (link-local: ARP for .254): cloud-init get_data(), no retries"
else
	not_ok "served through the Multus NIC" "$out" "$(imds_log_tail)"
fi
expect_eq "... by the sidecar's ARP reply, with veth-imds's MAC" "$(in_pod cat /sys/class/net/veth-imds/address)" \
	"$(in_vm ip neigh show 169.254.169.254 dev eth1 | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')"
expect_eq "the sidecar saw each NIC's own address" "10.0.2.2 169.254.10.20" \
	"$(grep -E ' GET /v1/' "$IMDS_LOG" | awk '{print $2}' | sort -u | tr '\n' ' ' | sed 's/ $//')"
# The other host on the Multus L2.
out=$(ip netns exec "$NS_L2" "$PY" "$ARP_PROBE" eth0 169.254.169.254 --sender-ip 192.168.70.9 --count 2 --timeout 1)
if grep -q '"replies": 0' <<<"$out"; then ok "the host on the Multus L2 gets no ARP reply for 169.254.169.254"; else not_ok "the host on the Multus L2 gets no ARP reply" "$out"; fi
ip -n "$NS_L2" neigh replace 169.254.169.254 lladdr "$(in_pod cat /sys/class/net/veth-imds/address)" dev eth0 nud permanent
ip -n "$NS_L2" route add 169.254.169.254/32 dev eth0
if ip netns exec "$NS_L2" curl -s -o /dev/null --max-time 2 http://169.254.169.254/healthz; then
	not_ok "... nor an HTTP answer, even knowing veth-imds's MAC"
else
	ok "... nor an HTTP answer, even knowing veth-imds's MAC"
fi
# what the L2 saw from the guest: nothing for .254
g=$(node_capture_count)
guest_pkts=$(tcpdump -n -e -r "$(node_capture_file br-l2)" 2>/dev/null | grep -c ' 52:54:00:12:34:57 > ')
expect_eq "the Multus L2 saw no frame of the guest's for 169.254.169.254 (ARP or IP)" 0 "$guest_pkts"
# ... nor any frame from veth-imds: its MAC (02:a9:fe + 24 bits of a hash of
# the VM's name, the same in each of the VM's pods for a live migration) never
# reaches an L2 that VMs share, so two VMs with the same one could not clash.
mac=$(in_pod cat /sys/class/net/veth-imds/address)
expect_eq "the Multus L2 saw no frame from veth-imds ($mac)" 0 \
	"$(tcpdump -n -e -r "$(node_capture_file br-l2)" 2>/dev/null | grep -c " $mac > ")"
echo "# Multus L2 capture: $g packets for 169.254.169.254, all the other host's"
imds_stop

# Only the Multus NIC.
imds_start IMDS_INTERFACES="$NET:bridge:tap$H"
in_vm ip neigh flush dev eth1
if imds_wait_serving 1 10 && out=$(cloudinit_fetch "$NS_VM" 2>&1) && grep -q '"ok": true' <<<"$out"; then
	ok "a VM whose only served NIC is the Multus one"
else
	not_ok "a VM whose only served NIC is the Multus one" "${out:-}" "$(imds_log_tail)"
fi
if ! grep -q 'tap0' <(grep 'serving' "$IMDS_LOG"); then ok "... tap0 not steered then"; else not_ok "... tap0 not steered then" "$(grep serving "$IMDS_LOG")"; fi
imds_stop

# Admitted without IMDS_INTERFACES (the webhook never saw the VMI): every
# k6t-* bridge's tap, and a line saying so.
imds_start
if imds_wait_serving 1 10 && grep -q "IMDS_INTERFACES not set" "$IMDS_LOG" &&
	grep -q "serving .* to tap0, tap$H" "$IMDS_LOG"; then
	ok "without IMDS_INTERFACES: every k6t-* bridge's tap, said in the log"
else
	not_ok "without IMDS_INTERFACES: every k6t-* bridge's tap" "$(imds_log_tail)"
fi
imds_stop
imds_start IMDS_BRIDGE_NAME="k6t-$H"
if imds_wait_serving 1 10 && grep -q "serving .* to tap$H," "$IMDS_LOG"; then
	ok "IMDS_BRIDGE_NAME=k6t-$H: only that bridge's tap"
else
	not_ok "IMDS_BRIDGE_NAME=k6t-$H: only that bridge's tap" "$(imds_log_tail)"
fi
imds_stop
expect_eq "SIGTERM: exit 0" 0 "$IMDS_STATUS"
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
