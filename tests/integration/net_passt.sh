#!/usr/bin/env bash
# passt (core passtBinding or the plugin): KubeVirt adds only two sysctls
# to the pod (tests/lib/netns.sh launcher_passt); passt in the pod answers
# the guest's ARP and DHCP itself and carries each of its TCP flows over a
# socket of its own, connect()ed from the pod.  Here the real thing:
# Debian's passt package, as pasta (the same code, its guest a network
# namespace instead of a VM; the VM suite runs passt with qemu).  There is
# no tap and no bridge: the sidecar plumbs 169.254.169.254 on veth-imds at
# once and takes connections over the pod's loopback.  A process of the
# pod is indistinguishable from passt there (same loopback, same UID 107 in
# a real pod): it is served too, which docs/sidecar.md says.  Without the
# sidecar's plumbing passt's connection is refused in the pod, never routed
# out of eth0.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

if ! command -v pasta >/dev/null; then
	not_ok "pasta available (Debian's passt package)"
	tap_done
	exit 1
fi
# a dual-stack pod: passt gives its guest the pod's IPv6 as well
export NODE_V6=1
if ! ns_setup || ! node_link 1400 || ! launcher_passt; then
	not_ok "launcher pod (passt) set up"
	tap_done
	exit 1
fi
expect_eq "launcher as KubeVirt builds it: ping_group_range 107 107, unprivileged ports from 0" "107	107 0" \
	"$(in_pod cat /proc/sys/net/ipv4/ping_group_range) $(in_pod cat /proc/sys/net/ipv4/ip_unprivileged_port_start)"
# passt's guest: pasta in the pod, its tap in the guest netns; routes as
# passt's DHCP gives them (the pod's gateway).
ip netns exec "$NS_POD" pasta --runas 0 --config-net -f -I eth0 --netns "/run/netns/$NS_VM" \
	>"$NET_TMP/pasta.log" 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 200); do ip -n "$NS_VM" -4 addr show dev eth0 2>/dev/null | grep -q inet && break; sleep 0.02; done
ip -n "$NS_VM" route add "$POD_GW" dev eth0 scope link 2>/dev/null
ip -n "$NS_VM" route add default via "$POD_GW" 2>/dev/null
if in_vm ip -4 -o addr show dev eth0 | grep -q "$POD_IP"; then ok "pasta up: the guest has the pod's address"; else not_ok "pasta up" "$(cat "$NET_TMP/pasta.log")"; fi

# The node answers HTTP on 169.254.169.254 (a cloud node's IMDS): a leak
# would show there.
ip -n "$NS_NODE" addr add 169.254.169.254/32 dev lo
ip netns exec "$NS_NODE" "$PY" -m http.server --bind 169.254.169.254 80 >"$NET_TMP/node-http.log" 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 200); do in_node curl -s -o /dev/null --max-time 1 http://169.254.169.254/ && break; sleep 0.05; done
out=$(GUEST_TIMEOUT=3 guest_get "$NS_VM" /from-passt 2>&1)
if grep -q 'GET /from-passt' "$NET_TMP/node-http.log"; then
	ok "no sidecar: passt's connection for the guest goes out of the pod to the node's 169.254.169.254"
else
	not_ok "no sidecar: passt's connection goes out to the node" "$out" "$(cat "$NET_TMP/node-http.log")"
fi
: >"$NET_TMP/node-http.log"

node_capture_start cali0
imds_start IMDS_INTERFACES=default:passt
if imds_wait_serving 1 10 && grep -q 'serving .* to passt (over the pod.s loopback)' "$IMDS_LOG"; then
	ok "run: serving at once, no tap to wait for"
else
	not_ok "run: serving at once" "$(imds_log_tail)"
fi
out=$(cloudinit_fetch "$NS_VM" 2>&1)
if grep -q '"ok": true' <<<"$out" && grep -q '"retries": 0' <<<"$out"; then ok "the passt guest: cloud-init get_data(), no retries"; else not_ok "the passt guest: cloud-init get_data()" "$out" "$(imds_log_tail)"; fi
out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
if grep -q '"vmName":"netvm"' <<<"$out"; then ok "/v1/identity from the passt guest"; else not_ok "/v1/identity from the passt guest" "$out"; fi
out=$(guest_get "$NS_VM" /v1/token -H 'Metadata: true' 2>&1)
if grep -q '"token":"eyJ' <<<"$out"; then ok "/v1/token from the passt guest"; else not_ok "/v1/token from the passt guest" "$out"; fi
for _ in $(seq 200); do [[ -z $(in_vm ip -6 addr show tentative) ]] && break; sleep 0.01; done
out=$(in_vm curl -sS -g --max-time 3 -H 'Metadata: true' "http://[fd00:ec2::254]/v1/identity" 2>&1)
if grep -q '"vmName":"netvm"' <<<"$out"; then ok "/v1/identity from the passt guest over IPv6, [fd00:ec2::254]"; else not_ok "/v1/identity from the passt guest over IPv6" "$out" "$(cat "$NET_TMP/pasta.log")"; fi
# passt answers the guest's link-local neighbour discovery for its own
# gateway only and forwards no link-local traffic: fe80::a9fe:a9fe is not
# on the path of a passt guest (docs/sidecar.md)
out=$(in_vm curl -sS -g --max-time 2 "http://[fe80::a9fe:a9fe%eth0]/healthz" 2>&1)
if [[ $out == OK ]]; then not_ok "passt: fe80::a9fe:a9fe not reachable (as documented)" "answered"; else ok "passt: fe80::a9fe:a9fe not reachable through passt, as documented (${out#curl: (* })"; fi
out=$(ip netns exec "$NS_POD" setpriv --reuid=107 --regid=107 --clear-groups curl -s --max-time 2 http://169.254.169.254/healthz)
expect_eq "a process of the pod (UID 107, as passt) is served too: indistinguishable from passt" OK "$out"
expect_eq "the sidecar sees passt's connections from the pod itself (169.254.169.254, fd00:ec2::254)" 0 \
	"$(grep -E ' GET /' "$IMDS_LOG" | grep -vcE '^[^ ]* (169\.254\.169\.254|fd00:ec2::254) ')"
expect_eq "the node saw nothing for 169.254.169.254, its server no request" "0 0" \
	"$(node_capture_count) $(grep -c GET "$NET_TMP/node-http.log")"
# The sidecar dead and its plumbing gone: the fallback refuses passt's
# connection in the pod.
kill -KILL "$IMDS_PID"
wait "$IMDS_PID" 2>/dev/null
IMDS_PID=
ip -n "$NS_POD" link del veth-imds
node_capture_start cali0
out=$(GUEST_TIMEOUT=3 guest_get "$NS_VM" /after 2>&1)
expect_eq "sidecar dead, plumbing gone: passt's connection refused in the pod, nothing reaches the node" "0 0" \
	"$(node_capture_count) $(grep -c GET "$NET_TMP/node-http.log")"
imds_start IMDS_INTERFACES=default:passt
if imds_wait_serving 1 10 && out=$(guest_get "$NS_VM" /v1/meta-data 2>&1) && grep -q instance-id <<<"$out"; then
	ok "restarted: served again"
else
	not_ok "restarted: served again" "${out:-}" "$(imds_log_tail)"
fi
imds_stop
expect_eq "SIGTERM: exit 0" 0 "$IMDS_STATUS"
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
