#!/usr/bin/env bash
# Masquerade with Istio's sidecar (sidecar.istio.io/inject: "true"):
# KubeVirt's Istio NAT variant plus Istio's own rules — the first PREROUTING
# rule takes every TCP connection the guest makes on k6t-eth0 to Envoy's
# :15001, and every inbound TCP connection goes to :15006 (tests/lib/netns.sh
# launcher_istio, from istio-iptables' golden files; Envoy is a passthrough
# proxy).  First the simulation is shown to capture: the guest's other
# traffic goes through the proxy.  Then the guest's connection to
# 169.254.169.254 reaches the sidecar directly — never the proxy, with the
# guest's own address, the hop limit intact — while Envoy (UID 1337) and any
# other process of the pod get nothing.  Before the sidecar ever steered
# the tap, the guest's .254 goes to Envoy, whose upstream connection the
# fallback refuses in the pod.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

ISTIO_LOG=$NET_TMP/istio.log
if ! ns_setup || ! node_link 1400 || ! launcher_istio || ! guest_attach "$NS_VM" tap0 masquerade; then
	not_ok "launcher pod (masquerade + Istio) and guest set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi
first=$(in_pod nft -a list chain ip nat PREROUTING | grep -m1 'iifname\|jump\|redirect')
if [[ $first == *'iifname "k6t-eth0"'*ISTIO_REDIRECT* ]]; then ok "Istio's first PREROUTING rule takes k6t-eth0 to ISTIO_REDIRECT"; else not_ok "Istio's first PREROUTING rule" "$first"; fi

ip netns exec "$NS_NODE" "$PY" -m http.server --bind 192.168.100.1 8081 >/dev/null 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 200); do in_node curl -s -o /dev/null --max-time 1 http://192.168.100.1:8081/ && break; sleep 0.05; done
if in_vm curl -s -o /dev/null --max-time 3 http://192.168.100.1:8081/ &&
	grep -q 'conn outbound 10.0.2.2:[0-9]* -> 192.168.100.1:8081' "$ISTIO_LOG"; then
	ok "the simulation captures: the guest's connection to the node went through Envoy's :15001"
else
	not_ok "the simulation captures: the guest's connection to the node went through Envoy's :15001" "$(cat "$ISTIO_LOG")" "$(in_pod nft list table ip nat)"
fi

# Before the sidecar steers the tap (its fallback only: a sidecar that
# died before the tap appeared), the guest's .254 goes the Istio way:
# Envoy's upstream connection is refused inside the pod.
imds_start IMDS_INTERFACES=default:masquerade:tap9
imds_wait_serving 1 3 # it never serves: tap9 does not exist; the fallback is in
node_capture_start cali0
if out=$(GUEST_TIMEOUT=3 guest_get "$NS_VM" /v1/meta-data 2>&1) && [[ $out == *instance-id* ]]; then
	not_ok "tap not steered: the guest gets no metadata" "$out"
else
	ok "tap not steered: the guest gets no metadata (${out:0:60})"
fi
if grep -q 'conn outbound 10.0.2.2:[0-9]* -> 169.254.169.254:80' "$ISTIO_LOG" && grep -q 'upstream 169.254.169.254:80' "$ISTIO_LOG"; then
	ok "... its connection went to Envoy, whose upstream to 169.254.169.254 failed in the pod"
else
	not_ok "... its connection went to Envoy, whose upstream to 169.254.169.254 failed in the pod" "$(cat "$ISTIO_LOG")"
fi
expect_eq "... the node saw nothing for 169.254.169.254" 0 "$(node_capture_count)"
imds_stop
: >"$ISTIO_LOG.before"
cat "$ISTIO_LOG" >>"$ISTIO_LOG.before"

node_capture_start cali0
imds_start IMDS_INTERFACES=default:masquerade:tap0
if imds_wait_serving 1 10; then ok "run: serving tap0"; else not_ok "run: serving tap0" "$(imds_log_tail)"; fi
n0=$(grep -c '169.254.169.254' "$ISTIO_LOG")
out=$(cloudinit_fetch "$NS_VM" 2>&1)
if grep -q '"ok": true' <<<"$out" && grep -q '"retries": 0' <<<"$out"; then ok "cloud-init get_data() from the guest, no retries"; else not_ok "cloud-init get_data() from the guest" "$out" "$(imds_log_tail)"; fi
out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' -H 'X-Test: 1' 2>&1)
if grep -q '"vmName":"netvm"' <<<"$out"; then ok "/v1/identity from the guest"; else not_ok "/v1/identity from the guest" "$out"; fi
out=$(guest_get "$NS_VM" /v1/token -H 'Metadata: true' 2>&1)
if grep -q '"token":"eyJ' <<<"$out"; then ok "/v1/token from the guest"; else not_ok "/v1/token from the guest" "$out"; fi
expect_eq "Envoy saw none of the guest's connections to 169.254.169.254" "$n0" "$(grep -c '169.254.169.254' "$ISTIO_LOG")"
expect_eq "the sidecar saw the guest's own address, never Envoy's (127.0.0.6, the pod IP)" 0 \
	"$(grep -E ' GET /' "$IMDS_LOG" | grep -vc '^[^ ]* 10\.0\.2\.2 ')"
# Envoy itself (UID 1337, exempt from Istio's redirects) and root
declare -A who=([1337]=Envoy [107]="KubeVirt's containers" [0]=root)
for u in 1337 107 0; do
	if r=$(pod_refused "$u"); then
		ok "a process of the pod as UID $u (${who[$u]}) is refused at once ($r)"
	else
		not_ok "a process of the pod as UID $u (${who[$u]}) is refused at once" "$r"
	fi
done
# The guest's other traffic is still Istio's.
if in_vm curl -s -o /dev/null --max-time 3 http://192.168.100.1:8081/ &&
	(($(grep -c 'conn outbound 10.0.2.2:[0-9]* -> 192.168.100.1:8081' "$ISTIO_LOG") >= 2)); then
	ok "the guest's other connections still go through Envoy"
else
	not_ok "the guest's other connections still go through Envoy" "$(cat "$ISTIO_LOG")"
fi
expect_eq "the node saw nothing for 169.254.169.254 while served" 0 "$(node_capture_count)"
imds_stop
expect_eq "SIGTERM: exit 0" 0 "$IMDS_STATUS"
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
