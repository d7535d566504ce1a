#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# `imds-server run` in a launcher pod built exactly as KubeVirt builds the
# masquerade binding (k6t-eth0 02:00:00:00:00:00 10.0.2.1/24 with
# route_localnet, a multi-queue tap owned by 107, ip_forward=1, KubeVirt's
# `ip nat` ruleset; tests/lib/netns.sh), with a Calico node behind eth0.
# The guest (10.0.2.2/24 via 10.0.2.1) is served through its tap: real
# cloud-init, identity, token, and the sidecar sees the guest's own address.
# KubeVirt's NAT, forwarding, bridge and the pod's routes are left as they
# were.  A guest's packet to 169.254.169.254 never reaches the node: not
# while the tap is not steered yet (the fallback rules of a sidecar that
# died), not while the plumbing is restored, not after the sidecar died.
# Restart-safe; init then run without duplicates; SIGTERM leaves the rules.
# (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

IFS_ENV=IMDS_INTERFACES=default:masquerade:tap0
if ! ns_setup || ! node_link 1400 || ! launcher_masquerade || ! guest_attach "$NS_VM" tap0 masquerade; then
	not_ok "launcher pod (masquerade) and guest set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi

routes_main0=$(in_pod ip -4 route show table main)
nat0=$(in_pod nft list table ip nat | grep -v counter)
sys0="$(sysctl_pod all/rp_filter) $(sysctl_pod all/arp_ignore) $(in_pod sysctl -n net.ipv4.ip_forward) $(sysctl_pod k6t-eth0/route_localnet)"
bridge_state() { in_pod ip -o link show k6t-eth0 | sed 's/^[0-9]*: //; s/\\ *link/ link/'; }
bridge0=$(bridge_state)
mac_of() { in_pod cat "/sys/class/net/$1/address"; }
tapd=$(in_pod ip -d -o link show tap0)
# single-queue: KubeVirt's default (no networkInterfaceMultiqueue); the
# multi-queue tap is net_multus_ordinal's
if [[ $tapd == *"tun type tap"* && $tapd != *multi_queue* && $tapd == *"user 107"* ]]; then
	ok "launcher as KubeVirt builds it: tap0 is a single-queue tap owned by 107"
else
	not_ok "launcher as KubeVirt builds it: tap0 is a single-queue tap owned by 107" "$tapd"
fi

# count_plumbing: "veth addresses rules routes tables" — never duplicated.
node_capture_start
imds_start "$IFS_ENV"
if imds_wait_serving 1 10; then
	ok "run: serving tap0"
else
	not_ok "run: serving tap0" "$(imds_log_tail)"
fi

out=$(cloudinit_fetch "$NS_VM" 2>&1)
st=$?
if ((st == 0)) && grep -q '"ok": true' <<<"$out" && grep -q '"instance_id": "default-netvm"' <<<"$out"; then
	ok "cloud-init NoCloudNet get_data() from the guest"
else
	not_ok "cloud-init NoCloudNet get_data() from the guest" "status $st" "$out" "$(imds_log_tail)"
fi
out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
if grep -q '"vmName":"netvm"' <<<"$out"; then ok "/v1/identity from the guest"; else not_ok "/v1/identity from the guest" "$out"; fi
out=$(guest_get "$NS_VM" /v1/token -H 'Metadata: true' 2>&1)
if grep -q '"token":"eyJ' <<<"$out"; then ok "/v1/token from the guest"; else not_ok "/v1/token from the guest" "$out"; fi
expect_eq "the sidecar sees the guest's own address (no NAT on the path)" 0 \
	"$(grep -E ' GET /v1/' "$IMDS_LOG" | grep -vc '^[^ ]* 10\.0\.2\.2 ')"

expect_eq "veth-imds MTU is the tap's" 1400 "$(in_pod cat /sys/class/net/veth-imds/mtu)"
expect_eq "veth-imds-br is no bridge port" "" "$(in_pod ip -o link show master k6t-eth0 | grep -o 'veth-imds-br')"
expect_eq "veth-imds arp_ignore 8 (per device)" 8 "$(sysctl_pod veth-imds/arp_ignore)"
expect_eq "pod main routing table unchanged" "$routes_main0" "$(in_pod ip -4 route show table main)"
expect_eq "KubeVirt's nat table unchanged" "$nat0" "$(in_pod nft list table ip nat | grep -v counter)"
expect_eq "all.rp_filter, all.arp_ignore, ip_forward, k6t-eth0 route_localnet unchanged" "$sys0" \
	"$(sysctl_pod all/rp_filter) $(sysctl_pod all/arp_ignore) $(in_pod sysctl -n net.ipv4.ip_forward) $(sysctl_pod k6t-eth0/route_localnet)"
expect_eq "bridge unchanged (MAC 02:00:00:00:00:00, MTU, state)" "$bridge0" "$(bridge_state)"
# The node answers on 192.168.100.1: the guest's other traffic still goes
# out, masqueraded, as KubeVirt wants it.
ip netns exec "$NS_NODE" "$PY" -m http.server --bind 192.168.100.1 8081 >/dev/null 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 200); do in_vm curl -s -o /dev/null --max-time 1 http://192.168.100.1:8081/ && break; sleep 0.05; done
if in_vm curl -s -o /dev/null --max-time 2 http://192.168.100.1:8081/; then
	ok "the guest's other traffic still leaves through KubeVirt's masquerade"
else
	not_ok "the guest's other traffic still leaves through KubeVirt's masquerade" "$(in_pod nft list table ip nat)"
fi
if r=$(pod_refused); then
	ok "a process of the pod is refused at once ($r)"
else
	not_ok "a process of the pod is refused at once" "$r"
fi
expect_eq "plumbing present once" "2 1 1 1 4" "$(count_plumbing)"

# Never out of the pod: while the sidecar is dead (SIGKILL: no cleanup at
# all), with its plumbing gone too (as after a node's cleanup), and while a
# restarted sidecar restores it.  The guest keeps asking all along.
imds_poll() { # seconds: the guest asks once every 50 ms, 200 ms timeout each
	in_vm "$PY" - "$1" <<'PYEOF'
import socket, sys, time
end, served = time.monotonic() + float(sys.argv[1]), 0
while time.monotonic() < end:
    s = socket.socket(); s.settimeout(0.2)
    try:
        s.connect(("169.254.169.254", 80)); s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        served += s.recv(16).startswith(b"HTTP/1.1 200")
    except OSError:
        pass
    finally:
        s.close()
    time.sleep(0.05)
print(served)
PYEOF
}
kill -KILL "$IMDS_PID"
wait "$IMDS_PID" 2>/dev/null
IMDS_PID=
expect_eq "sidecar killed: the guest is not served (connections refused or dropped, 1 s)" 0 "$(imds_poll 1)"
in_pod nft delete table netdev kubevirt_imds
ip -n "$NS_POD" link del veth-imds
expect_eq "sidecar dead, steering and plumbing gone: still not served (1 s)" 0 "$(imds_poll 1)"
imds_start "$IFS_ENV"
served=$(imds_poll 2)
if ((served > 0)) && imds_wait_serving 1 5; then ok "sidecar restarted: the polling guest is served again ($served answers in 2 s)"; else not_ok "sidecar restarted: the polling guest is served again" "$served" "$(imds_log_tail)"; fi
for cmd in "ip link del veth-imds" "nft flush table netdev kubevirt_imds" "nft delete table ip kubevirt_imds" \
	"ip route flush table 169254"; do
	in_pod sh -c "$cmd"
	imds_poll 0.5 >/dev/null
done
n=$(node_capture_count)
if [[ $n == 0 ]]; then
	ok "the node saw no packet to or from 169.254.169.254 in all of the above"
else
	not_ok "the node saw no packet to or from 169.254.169.254 in all of the above" "$n packets" "$(node_capture_show)"
fi
for _ in $(seq 100); do [[ "$(count_plumbing)" == "2 1 1 1 4" ]] && break; sleep 0.02; done
expect_eq "everything restored, nothing duplicated" "2 1 1 1 4" "$(count_plumbing)"
if grep -q 'changed by another process: programming it again' "$IMDS_LOG"; then ok "a table changed by another process is programmed again"; else not_ok "a table changed by another process is programmed again" "$(imds_log_tail)"; fi

veth_mac=$(mac_of veth-imds)
imds_stop
expect_eq "SIGTERM: exit status 0" 0 "$IMDS_STATUS"
expect_eq "SIGTERM: bridge untouched" "$bridge0" "$(bridge_state)"
expect_eq "SIGTERM: plumbing and rules left for the next start" "2 1 1 1 4" "$(count_plumbing)"

# Started again: the plumbing is reused as it is (same veth, no writes).
imds_start "$IFS_ENV"
if imds_wait_serving 1 10 && out=$(guest_get "$NS_VM" /v1/meta-data) && grep -q 'instance-id' <<<"$out"; then
	ok "second run serves"
else
	not_ok "second run serves" "$(imds_log_tail)"
fi
expect_eq "second run: same veth-imds MAC (the VM's: derived from its identity)" "$veth_mac" "$(mac_of veth-imds)"
expect_eq "second run: nothing duplicated" "2 1 1 1 4" "$(count_plumbing)"
if ! grep -q 'restored plumbing' "$IMDS_LOG"; then ok "second run: no plumbing write needed"; else not_ok "second run: no plumbing write needed" "$(imds_log_tail)"; fi
imds_stop

# init (with only IMDS_INTERFACES: it needs nothing else), then run.
ip -n "$NS_POD" link del veth-imds
out=$(ip netns exec "$NS_POD" env -i IMDS_INTERFACES=default:masquerade:tap0 "$IMDS_SERVER" init 2>&1)
st=$?
expect_eq "init with only IMDS_INTERFACES: exit 0" 0 "$st"
expect_eq "init: plumbing present once" "2 1 1 1 4" "$(count_plumbing)"
if grep -q '1 tap(s) steered' <<<"$out"; then ok "init: steers tap0"; else not_ok "init: steers tap0" "$out"; fi
out2=$(ip netns exec "$NS_POD" env -i "$IMDS_SERVER" init 2>&1)
expect_eq "init twice: nothing duplicated" "2 1 1 1 4" "$(count_plumbing)"
if grep -q '(nothing to change)' <<<"$out2"; then ok "init twice: the second changes no link, address, rule or route"; else not_ok "init twice: the second changes nothing" "$out" "$out2"; fi
imds_start "$IFS_ENV"
if imds_wait_serving 1 10 && out=$(cloudinit_fetch "$NS_VM" 2>&1) && grep -q '"ok": true' <<<"$out"; then
	ok "run after init: cloud-init fetch"
else
	not_ok "run after init: cloud-init fetch" "$out" "$(imds_log_tail)"
fi
expect_eq "run after init: nothing duplicated" "2 1 1 1 4" "$(count_plumbing)"
imds_stop

out=$(ip netns exec "$NS_POD" env -i IMDS_INTERFACES='x:y' "$IMDS_SERVER" init 2>&1)
st=$?
if ((st == 2)) && grep -q "IMDS_INTERFACES: entry 0 (x): unknown kind 'y'" <<<"$out"; then
	ok "init with a bad IMDS_INTERFACES: message naming it, exit 2"
else
	not_ok "init with a bad IMDS_INTERFACES: message naming it, exit 2" "status $st" "$out"
fi
out=$(ip netns exec "$NS_POD" env -i IMDS_LISTEN_ADDR=10.0.0.1:80 "$IMDS_SERVER" init 2>&1)
st=$?
if ((st == 1)) && grep -q 'IMDS_LISTEN_ADDR' <<<"$out"; then ok "init: a listen address other than 169.254.169.254 refused, naming it"; else not_ok "init: a listen address other than 169.254.169.254 refused" "status $st" "$out"; fi

if imds_log_clean; then ok "server log free of sanitizer reports"; else not_ok "server log free of sanitizer reports" "$(grep -A20 -E 'Sanitizer|runtime error' "$IMDS_LOG" | head -40)"; fi
tap_done
