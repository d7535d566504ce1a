#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# A guest with only a link-local address (169.254.10.20/16, no gateway)
# ARPs for 169.254.169.254 through its tap; with net.ipv4.conf.all.arp_ignore=8
# in the pod the kernel cannot answer, so only the sidecar's responder can.
# Real cloud-init succeeds; with the responder stopped it fails; a second
# host on the bridge on a port that is not the VM's tap gets no ARP reply and
# no answer; probes are answered per RFC 5227, announcements are not.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

ARP_PROBE=$REPO/tests/lib/arp_probe.py
NS_OTHER=$NS_TAG-other

if ! ns_setup || ! node_link 1400 || ! launcher_masquerade || ! guest_attach "$NS_VM" tap0 linklocal; then
	not_ok "launcher pod and link-local guest set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi
in_pod sysctl -qw net.ipv4.conf.all.arp_ignore=8

# The node's side, from before the sidecar's first start to the end: no
# packet for 169.254.169.254 (or its IPv6 addresses) leaves the pod.
node_capture_start
imds_start IMDS_INTERFACES=default:masquerade:tap0
if imds_wait_serving 1 10; then
	ok "run: serving"
else
	not_ok "run: serving" "$(imds_log_tail)"
fi

out=$(cloudinit_fetch "$NS_VM" 2>&1)
st=$?
if ((st == 0)) && grep -q '"ok": true' <<<"$out" && grep -q '"retries": 0' <<<"$out"; then
	ok "link-local guest: cloud-init get_data() succeeds, no retries"
else
	not_ok "link-local guest: cloud-init get_data() succeeds, no retries" "status $st" "$out" "$(imds_log_tail)"
fi
veth_mac=$(in_pod cat /sys/class/net/veth-imds/address)
expect_eq "guest learned veth-imds's MAC for 169.254.169.254" "$veth_mac" \
	"$(in_vm ip neigh show 169.254.169.254 | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')"
out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
if grep -q '"vmName":"netvm"' <<<"$out"; then ok "/v1/identity from the link-local guest"; else not_ok "/v1/identity from the link-local guest" "$out"; fi

# ARP semantics, with hand-made requests from the guest.
probe() { in_vm "$PY" "$ARP_PROBE" eth0 169.254.169.254 "$@"; }
out=$(probe --sender-ip 0.0.0.0)
if grep -q '"target_ip": "0.0.0.0"' <<<"$out" && grep -q "\"from_mac\": \"$veth_mac\"" <<<"$out"; then
	ok "RFC 5227 probe (sender 0.0.0.0) answered, to the prober, target IP 0.0.0.0"
else
	not_ok "RFC 5227 probe (sender 0.0.0.0) answered" "$out"
fi
out=$(probe --sender-ip 169.254.169.254 --timeout 0.5)
if grep -q '"replies": 0' <<<"$out"; then ok "gratuitous ARP (announcement) not answered"; else not_ok "gratuitous ARP (announcement) not answered" "$out"; fi
out=$(probe --unicast "$veth_mac")
if grep -q '"replies": 1' <<<"$out"; then ok "unicast re-validation to veth-imds answered"; else not_ok "unicast re-validation to veth-imds answered" "$out"; fi

# A second guest on its own bridge port (a tap that is not the VM's).
tap_add tap1 k6t-eth0 1400
guest_attach "$NS_OTHER" tap1 linklocal 52:54:00:aa:bb:cc 169.254.10.30
out=$(ip netns exec "$NS_OTHER" "$PY" "$ARP_PROBE" eth0 169.254.169.254 --count 3 --timeout 1)
if grep -q '"replies": 0' <<<"$out"; then ok "a MAC on another bridge port gets no ARP reply"; else not_ok "a MAC on another bridge port gets no ARP reply" "$out"; fi
out=$(ip netns exec "$NS_OTHER" "$PY" "$ARP_PROBE" eth0 169.254.169.254 --unicast "$veth_mac" --timeout 0.5)
if grep -q '"replies": 0' <<<"$out"; then ok "... nor to a unicast request"; else not_ok "... nor to a unicast request" "$out"; fi
# Even knowing veth-imds's MAC, its TCP gets nothing back (listener guard).
ip -n "$NS_OTHER" neigh replace 169.254.169.254 lladdr "$veth_mac" dev eth0 nud permanent
if out=$(GUEST_TIMEOUT=2 guest_get "$NS_OTHER" /v1/meta-data 2>&1); then
	not_ok "the other MAC's HTTP request gets no answer" "$out"
else
	ok "the other MAC's HTTP request gets no answer"
fi
out=$(guest_get "$NS_VM" /v1/meta-data 2>&1)
if grep -q 'instance-id' <<<"$out"; then ok "the VM is still served beside it"; else not_ok "the VM is still served beside it" "$out" "$(imds_log_tail)"; fi
ip netns del "$NS_OTHER"

# The kernel never answered (arp_ignore): with the responder gone, the same
# fetch fails even with a plain listener on the address.
imds_stop
in_vm ip neigh flush dev eth0
ip netns exec "$NS_POD" "$PY" -m http.server --bind 169.254.169.254 80 >/dev/null 2>&1 &
plain=$!
for _ in $(seq 100); do in_pod ss -ltn | grep -q '169.254.169.254:80' && break; sleep 0.02; done
out=$(GUEST_TIMEOUT=3 guest_get "$NS_VM" /v1/meta-data 2>&1)
st=$?
kill "$plain" 2>/dev/null
wait "$plain" 2>/dev/null
if ((st != 0)); then
	ok "responder stopped: the guest's request fails (nobody answers ARP)"
else
	not_ok "responder stopped: the guest's request fails" "$out"
fi
if in_vm ip neigh show 169.254.169.254 | grep -qE 'FAILED|INCOMPLETE'; then
	ok "responder stopped: guest's ARP for 169.254.169.254 unresolved"
else
	not_ok "responder stopped: guest's ARP for 169.254.169.254 unresolved" "$(in_vm ip neigh)"
fi
in_vm ip neigh flush dev eth0
imds_start IMDS_INTERFACES=default:masquerade:tap0
if imds_wait_serving 1 10 && out=$(cloudinit_fetch "$NS_VM" 2>&1) && grep -q '"ok": true' <<<"$out"; then
	ok "responder back: the fetch succeeds again"
else
	not_ok "responder back: the fetch succeeds again" "$out" "$(imds_log_tail)"
fi
expect_eq "pod all.arp_ignore is still the test's 8" 8 "$(sysctl_pod all/arp_ignore)"
imds_stop
node_capture_check "from the link-local guests, the responder running or stopped"
if imds_log_clean; then ok "server log free of sanitizer reports"; else not_ok "server log free of sanitizer reports" "$(grep -A20 -E 'Sanitizer|runtime error' "$NET_TMP"/*.log | head -40)"; fi
tap_done
