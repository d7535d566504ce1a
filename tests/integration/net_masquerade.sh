#!/usr/bin/env bash
# `imds-server run` in a pod netns with KubeVirt's masquerade layout: the
# guest (10.0.2.2/24) reaches 169.254.169.254 through its gateway 10.0.2.1
# on k6t-eth0.  Real cloud-init from the guest; identity and token; the
# pod's Calico-style routes untouched; restart-safe and init-then-run
# without duplicates; SIGTERM leaves the bridge as it was.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

if ! ns_setup || ! pod_eth0 || ! pod_bridge 1400 || ! vm_attach "$NS_VM" masquerade; then
	not_ok "network namespaces set up (needs root and iproute2)"
	tap_done
	exit 1
fi

routes_main0=$(in_pod ip -4 route show table main)
sys0="$(sysctl_pod all/rp_filter) $(sysctl_pod all/arp_ignore)"
# What a guest or KubeVirt could notice of the bridge: MAC, MTU, flags, state.
bridge_state() { in_pod ip -o link show k6t-eth0 | sed 's/^[0-9]*: //; s/\\ *link/ link/'; }
bridge0=$(bridge_state)
ports0=$(in_pod ip -o link show master k6t-eth0 | awk '{print $2}' | grep -v veth-imds | sort | tr '\n' ' ')
mac_of() { in_pod cat "/sys/class/net/$1/address"; }

# count_plumbing: "veth addresses rules routes" — what must never be duplicated.
count_plumbing() {
	echo "$(in_pod ip -o link show | grep -c 'veth-imds') \
$(in_pod ip -4 -o addr show | grep -c '169\.254\.169\.254/32') \
$(in_pod ip -4 rule show | grep -c 'from 169\.254\.169\.254 lookup 169254') \
$(in_pod ip -4 route show table 169254 | grep -c '^169\.254\.0\.0/16 dev veth-imds')"
}

imds_start
if imds_wait_serving 1 10; then
	ok "run: serving on the bridge"
else
	not_ok "run: serving on the bridge" "$(imds_log_tail)"
fi

out=$(cloudinit_fetch "$NS_VM" 2>&1)
st=$?
if ((st == 0)) && grep -q '"ok": true' <<<"$out" && grep -q '"instance_id": "default-netvm"' <<<"$out"; then
	ok "cloud-init NoCloudNet get_data() from the guest via 10.0.2.1"
else
	not_ok "cloud-init NoCloudNet get_data() from the guest via 10.0.2.1" "status $st" "$out" "$(imds_log_tail)"
fi

out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
if grep -q '"vmName":"netvm"' <<<"$out"; then
	ok "/v1/identity from the guest"
else
	not_ok "/v1/identity from the guest" "$out"
fi
out=$(guest_get "$NS_VM" /v1/token -H 'Metadata: true' 2>&1)
if grep -q '"token":"eyJ' <<<"$out"; then
	ok "/v1/token from the guest"
else
	not_ok "/v1/token from the guest" "$out"
fi

expect_eq "veth-imds MTU is the bridge's" 1400 "$(in_pod cat /sys/class/net/veth-imds/mtu)"
expect_eq "veth-imds-br MTU is the bridge's" 1400 "$(in_pod cat /sys/class/net/veth-imds-br/mtu)"
expect_eq "bridge MTU unchanged" 1400 "$(in_pod cat /sys/class/net/k6t-eth0/mtu)"
expect_eq "veth-imds arp_ignore 8 (per device)" 8 "$(sysctl_pod veth-imds/arp_ignore)"
expect_eq "pod main routing table unchanged" "$routes_main0" "$(in_pod ip -4 route show table main)"
# The node answers on 192.168.100.1, reached by the pod via its default route.
ip netns exec "$NS_NODE" "$PY" -m http.server --bind 192.168.100.1 8081 >/dev/null 2>&1 &
# Python starts slowly on a loaded machine: wait up to 10 s for the node.
for _ in $(seq 200); do in_pod curl -s -o /dev/null --max-time 1 http://192.168.100.1:8081/ && break; sleep 0.05; done
expect_eq "bridge MAC unchanged by our port" "$bridge0" "$(bridge_state)"
if in_pod curl -s -o /dev/null --max-time 2 http://192.168.100.1:8081/ &&
	in_pod ip route get 169.254.1.1 | grep -q 'dev eth0'; then
	ok "Calico-style default via 169.254.1.1 dev eth0 still works"
else
	not_ok "Calico-style default via 169.254.1.1 dev eth0 still works" "$(in_pod ip route; in_pod ip rule)"
fi
expect_eq "all.rp_filter and all.arp_ignore untouched" "$sys0" \
	"$(sysctl_pod all/rp_filter) $(sysctl_pod all/arp_ignore)"
expect_eq "plumbing present once" "2 1 1 1" "$(count_plumbing)"

veth_mac=$(mac_of veth-imds)
imds_stop
expect_eq "SIGTERM: exit status 0" 0 "$IMDS_STATUS"
expect_eq "SIGTERM: bridge untouched (MAC, MTU, state)" "$bridge0" "$(bridge_state)"
expect_eq "SIGTERM: bridge ports untouched" "$ports0" \
	"$(in_pod ip -o link show master k6t-eth0 | awk '{print $2}' | grep -v veth-imds | sort | tr '\n' ' ')"
expect_eq "SIGTERM: plumbing left for the next start" "2 1 1 1" "$(count_plumbing)"

# Started again: the plumbing is reused as it is (same veth, no writes).
imds_start
if imds_wait_serving 1 10 && out=$(guest_get "$NS_VM" /v1/meta-data) && grep -q 'instance-id' <<<"$out"; then
	ok "second run serves"
else
	not_ok "second run serves" "$(imds_log_tail)"
fi
expect_eq "second run: same veth-imds (reused)" "$veth_mac" "$(mac_of veth-imds)"
expect_eq "second run: nothing duplicated" "2 1 1 1" "$(count_plumbing)"
if ! grep -q 'restored plumbing' "$IMDS_LOG"; then
	ok "second run: no plumbing write needed"
else
	not_ok "second run: no plumbing write needed" "$(imds_log_tail)"
fi
imds_stop

# init, then run: same result.
ip -n "$NS_POD" link del veth-imds
out=$(ip netns exec "$NS_POD" env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm "$IMDS_SERVER" init 2>&1)
st=$?
expect_eq "init: exit 0" 0 "$st"
expect_eq "init: plumbing present once" "2 1 1 1" "$(count_plumbing)"
out2=$(ip netns exec "$NS_POD" env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm "$IMDS_SERVER" init 2>&1)
expect_eq "init twice: nothing duplicated" "2 1 1 1" "$(count_plumbing)"
if grep -q '(0 change(s))' <<<"$out2"; then
	ok "init twice: second changes nothing"
else
	not_ok "init twice: second changes nothing" "$out" "$out2"
fi
imds_start
if imds_wait_serving 1 10 && out=$(cloudinit_fetch "$NS_VM" 2>&1) && grep -q '"ok": true' <<<"$out"; then
	ok "run after init: cloud-init fetch"
else
	not_ok "run after init: cloud-init fetch" "$out" "$(imds_log_tail)"
fi
expect_eq "run after init: nothing duplicated" "2 1 1 1" "$(count_plumbing)"
imds_stop

out=$(ip netns exec "$NS_POD" env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm IMDS_BRIDGE_NAME=nosuch \
	"$IMDS_SERVER" init 2>&1)
st=$?
if ((st == 1)) && grep -q 'no bridge nosuch' <<<"$out"; then
	ok "init without the bridge: message and exit 1"
else
	not_ok "init without the bridge: message and exit 1" "status $st" "$out"
fi

if imds_log_clean; then ok "server log free of sanitizer reports"; else not_ok "server log free of sanitizer reports" "$(grep -A20 -E 'Sanitizer|runtime error' "$IMDS_LOG" | head -40)"; fi
tap_done
