#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
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
# fallback refuses in the pod.
# Then Istio's TPROXY capture (issue 32 item 3), in a dual-stack pod each:
# sidecar.istio.io/interceptionMode: TPROXY, and ambient's in-pod TPROXY
# (Istio 1.21-1.24), Istio's rules restored with iptables-nft
# (launcher_istio tproxy | ambient-tproxy).  TPROXY in mangle prerouting (-150)
# takes untracked segments too: the rules are shown live (their counters
# take the guest's and the node's TCP, both families), the guest is served on
# 169.254.169.254 and fd00:ec2::254 with the rules counting none of it and the
# proxy seeing none of it, because the steering marks the service's TCP
# with Istio's proxy mark 0x539 (src/net/steer.h STEER_MARK); a table of
# the test's clearing that mark hands the steered SYN to the proxy's :15006.
# And ambient's in-pod capture as Istio 1.25+ writes it (nat REDIRECT, the
# guest's TCP on k6t-eth0 to ztunnel's :15001): served with or without the
# mark, notrack alone keeping nat off.
# The TPROXY pod once more with the network half from the node agent
# (IMDS_NET_MODE=agent, imds-node; tests/lib/podfolder.sh).  (root; iptables-nft)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=../lib/podfolder.sh
. "$(dirname "$0")/../lib/podfolder.sh"

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

# ---- TPROXY: interceptionMode TPROXY, and ambient's in-pod TPROXY ----
# (launcher_istio tproxy | ambient-tproxy | ambient: Istio's rules restored with iptables-nft)
# A dual-stack pod and guest each; the node serves :8081 on 192.168.100.1
# and fd00:100::1, so the guest's other traffic has somewhere to go.
G6=fd00:ec2::254
N6=fd00:100::1
# next_pod TAG: the last pod, its guest and its node gone; the next named
next_pod() {
	local p ns
	imds_stop
	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for ns in "${NS_ALL[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	BG_PIDS=()
	NS_ALL=()
	NS_NODE=$NS_TAG-$1-node NS_POD=$NS_TAG-$1-pod NS_VM=$NS_TAG-$1-vm
}
get6() { ip netns exec "$NS_VM" curl -sS -g --max-time "${GUEST_TIMEOUT:-3}" "$@" 2>&1; }
# proxied WHAT LISTENER SRC DST: the guest's connection (made before) is in
# the proxy's log, taken by LISTENER from SRC to DST
proxied() {
	if grep -Eq "conn $2 $3:[0-9]+ -> $4\$" "$ISTIO_LOG"; then ok "$1"; else not_ok "$1" "$(cat "$ISTIO_LOG")"; fi
}
# tproxied CMD: the packets Istio's TPROXY rules to :15006 took, IPv4 and
# IPv6 (their counters), while CMD ran: "4 6"
tproxied() {
	local a b
	a=$(tproxy_count iptables) b=$(tproxy_count ip6tables)
	"$@" >/dev/null 2>&1
	echo "$(($(tproxy_count iptables) - a)) $(($(tproxy_count ip6tables) - b))"
}
# (TPROXY modes: the TPROXY rules to :15006 in mangle; ambient: the
# REDIRECT rules of istio-cni's ISTIO_PRERT in nat)
tproxy_count() {
	if [[ $CAP_MODE == ambient ]]; then
		in_pod "$1" -t nat -L ISTIO_PRERT -v -n -x | awk '/REDIRECT/ { n += $1 } END { print n + 0 }'
	else
		in_pod "$1" -t mangle -L -v -n -x | awk '/TPROXY redirect .*:15006/ { n += $1 } END { print n + 0 }'
	fi
}
nonzero() { [[ $1 =~ ^[1-9][0-9]*\ [1-9][0-9]*$ ]]; }

# tproxy_pod MODE WHAT [agent]: agent: the network half from imds-node
# (IMDS_NET_MODE=agent, the sidecar as UID 107 with no capability;
# tests/lib/podfolder.sh), whose steering is the same steer_build's
tproxy_pod() {
	local m=$1 what=$2 agent=${3:-} n0 out out6 r c0 r6
	CAP_MODE=$m
	next_pod "$m"
	if ! NODE_V6=1 ns_setup || ! NODE_V6=1 node_link 1400 || ! launcher_istio "$m" ||
		! guest_attach "$NS_VM" tap0 dual; then
		not_ok "$what: launcher pod (dual-stack masquerade + Istio's rules) and guest set up (needs root, iproute2, nftables, iptables)"
		return
	fi
	r=$(in_pod nft list chain ip mangle PREROUTING)
	if [[ $m == ambient ]]; then
		r=$(in_pod iptables -t nat -S ISTIO_PRERT; in_pod ip6tables -t nat -S ISTIO_PRERT)
		if (($(grep -c -- '-i k6t-eth0 -p tcp -j REDIRECT --to-ports 15001' <<<"$r") == 2)); then
			ok "$what: istio-cni's in-pod rules in table nat: k6t-eth0's TCP to :15001, IPv4 and IPv6"
		else
			not_ok "$what: istio-cni's in-pod rules in table nat" "$r"
		fi
	elif [[ $r == *'hook prerouting priority mangle'* ]] && in_pod iptables -t mangle -S | grep -q -- '-j TPROXY' &&
		in_pod ip6tables -t mangle -S | grep -q -- '-j TPROXY'; then
		ok "$what: Istio's TPROXY rules in table mangle, prerouting priority mangle (-150), IPv4 and IPv6"
	else
		not_ok "$what: Istio's TPROXY rules in table mangle" "$r"
	fi
	ip -n "$NS_NODE" -6 addr add "$N6/128" dev lo
	ip netns exec "$NS_NODE" "$PY" -m http.server --bind :: 8081 >/dev/null 2>&1 &
	BG_PIDS+=($!)
	for _ in $(seq 200); do in_node curl -s -o /dev/null --max-time 1 http://192.168.100.1:8081/ && break; sleep 0.05; done
	# The rules are live: the guest's TCP to the node and the node's to the
	# pod, each family, are taken by Istio's TPROXY rule.
	r=$(tproxied in_vm curl -s -o /dev/null --max-time 2 http://192.168.100.1:8081/)
	r6=$(tproxied in_vm curl -s -g -o /dev/null --max-time 2 "http://[$N6]:8081/")
	out="${r% *} ${r6#* }"
	if nonzero "$out"; then
		ok "$what: Istio's capture rule takes the guest's connections to the node (packets IPv4 IPv6: $out)"
	else
		not_ok "$what: Istio's capture rule takes the guest's connections to the node" "packets IPv4 IPv6: $out" "$(cat "$ISTIO_LOG")"
	fi
	# (ambient's nat inbound rule comes after KubeVirt's masquerade DNAT
	# here, its chain being the older: only TPROXY's is checked inbound)
	if [[ $m != ambient ]]; then
		r=$(tproxied in_node curl -s -o /dev/null --max-time 2 "http://$POD_IP:8080/")
		r6=$(tproxied in_node curl -s -g -o /dev/null --max-time 2 "http://[$POD_IP6]:8080/")
		out="${r% *} ${r6#* }"
		if nonzero "$out"; then
			ok "$what: ... and the node's connections to the pod's :8080 (packets IPv4 IPv6: $out)"
		else
			not_ok "$what: ... and the node's connections to the pod's :8080" "packets IPv4 IPv6: $out"
		fi
	fi
	if [[ $m == ambient ]]; then
		proxied "$what: ztunnel's :15001 relayed the guest's connection to the node" outbound 10.0.2.2 192.168.100.1:8081
		proxied "$what: ... and over IPv6" outbound fd10:0:2::2 "$N6:8081"
	fi
	if [[ $m == tproxy ]]; then
		# Envoy's side: its inbound listener had the node's connection; the
		# guest's went on to :15001 (kube-virt-interfaces' nat REDIRECT
		# after TPROXY's mark, IPv4) and through to the node.
		proxied "$what: the proxy's :15006 had the node's connection to the pod" inbound '[0-9.]+' "$POD_IP:8080"
		proxied "$what: the proxy relayed the guest's connection to the node" '(inbound|outbound)' 10.0.2.2 192.168.100.1:8081
	fi

	if [[ $agent ]]; then
		[[ -n $AGENT_PID ]] || agent_start "$NET_TMP/agent.log"
		[[ -s "$IMDS_LOG" ]] && cat "$IMDS_LOG" >>"$NET_TMP/earlier.log"
		sidecar_start 0b6f4c1e-1a2b-4c3d-8e9f-0000000000f1 "$NS_POD" "$IMDS_LOG" \
			IMDS_VM_NAME=netvm IMDS_INTERFACES=default:masquerade:tap0
		IMDS_PID=$SIDECAR_PID
		if wait_for_line "$IMDS_LOG" 'net: serving .* from the node agent' 15; then
			ok "$what: run: serving tap0 on the agent's listeners"
		else
			not_ok "$what: run: serving tap0 on the agent's listeners" "$(imds_log_tail)" "$(tail -n 5 "$NET_TMP/agent.log")"
		fi
	else
		imds_start IMDS_INTERFACES=default:masquerade:tap0
		if imds_wait_serving 1 10; then ok "$what: run: serving tap0"; else not_ok "$what: run: serving tap0" "$(imds_log_tail)"; fi
	fi
	n0=$(grep -cE '169\.254\.169\.254|fd00:ec2::254' "$ISTIO_LOG")
	c0="$(tproxy_count iptables) $(tproxy_count ip6tables)"
	out=$(cloudinit_fetch "$NS_VM" 2>&1)
	if grep -q '"ok": true' <<<"$out" && grep -q '"retries": 0' <<<"$out"; then
		ok "$what: cloud-init get_data() from the guest, no retries"
	else
		not_ok "$what: cloud-init get_data() from the guest" "$out" "$(imds_log_tail)" "$(cat "$ISTIO_LOG")"
	fi
	out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
	if grep -q '"vmName":"netvm"' <<<"$out"; then ok "$what: /v1/identity from the guest"; else not_ok "$what: /v1/identity from the guest" "$out"; fi
	out=$(get6 -H 'Metadata: true' "http://[$G6]/v1/identity")
	if grep -q '"vmName":"netvm"' <<<"$out"; then ok "$what: /v1/identity from the guest on [$G6]"; else not_ok "$what: /v1/identity from the guest on [$G6]" "$out"; fi
	expect_eq "$what: Istio's capture rules took none of the guest's packets to the service" "$c0" \
		"$(tproxy_count iptables) $(tproxy_count ip6tables)"
	expect_eq "$what: the proxy saw none of the guest's connections to the service" "$n0" \
		"$(grep -cE '169\.254\.169\.254|fd00:ec2::254' "$ISTIO_LOG")"
	expect_eq "$what: the sidecar saw the guest's own addresses (10.0.2.2, fd10:0:2::2), never the proxy's" "0 1 1" \
		"$(grep -E ' GET /' "$IMDS_LOG" | grep -vcE '^[^ ]* (10\.0\.2\.2|fd10:0:2::2) ') $(grep -E ' GET /' "$IMDS_LOG" | grep -qE '^[^ ]* 10\.0\.2\.2 ' && echo 1) $(grep -E ' GET /' "$IMDS_LOG" | grep -qE '^[^ ]* fd10:0:2::2 ' && echo 1)"
	# Still live while served: the guest's other connections are Istio's.
	r=$(tproxied in_vm curl -s -o /dev/null --max-time 2 http://192.168.100.1:8081/)
	r6=$(tproxied in_vm curl -s -g -o /dev/null --max-time 2 "http://[$N6]:8081/")
	out="${r% *} ${r6#* }"
	if nonzero "$out"; then
		ok "$what: while served, Istio's capture rule still takes the guest's other connections (packets: $out)"
	else
		not_ok "$what: while served, Istio's capture rule still takes the guest's other connections" "packets: $out"
	fi
	# What the sidecar's mark does: a table of the test's clearing it after
	# ours ran (priority -200, before mangle's -150) gives the steered SYN to
	# Istio's TPROXY rule, and the proxy's upstream is refused in the pod.
	in_pod nft -f - <<'NFT'
add table inet imds_test_unmark
add chain inet imds_test_unmark prerouting { type filter hook prerouting priority -200; }
add rule inet imds_test_unmark prerouting iifname "veth-imds" meta mark set 0
NFT
	out=$(GUEST_TIMEOUT=3 guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
	out6=$(GUEST_TIMEOUT=3 get6 -H 'Metadata: true' "http://[$G6]/v1/identity")
	if [[ $m == ambient ]]; then
		# nat REDIRECT never sees the untracked segment: the mark is not needed
		if [[ $out == *'"vmName":"netvm"'* && $out6 == *'"vmName":"netvm"'* ]] &&
			! grep -qE '169\.254\.169\.254|fd00:ec2::254' "$ISTIO_LOG"; then
			ok "$what: without the sidecar's mark still served, ztunnel seeing nothing (notrack alone keeps nat REDIRECT off)"
		else
			not_ok "$what: without the sidecar's mark still served" "$out" "$out6" "$(cat "$ISTIO_LOG")"
		fi
	elif [[ $out != *vmName* && $out6 != *vmName* ]] &&
		grep -Eq 'conn inbound 10\.0\.2\.2:[0-9]+ -> 169\.254\.169\.254:80$' "$ISTIO_LOG" &&
		grep -Eq 'conn inbound fd10:0:2::2:[0-9]+ -> fd00:ec2::254:80$' "$ISTIO_LOG"; then
		ok "$what: without the sidecar's mark, the steered connection goes to the proxy's :15006 (${out:0:50})"
	else
		not_ok "$what: without the sidecar's mark, the steered connection goes to the proxy's :15006" "$out" "$out6" "$(cat "$ISTIO_LOG")"
	fi
	in_pod nft delete table inet imds_test_unmark
	out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
	if grep -q '"vmName":"netvm"' <<<"$out"; then ok "$what: with it again, served"; else not_ok "$what: with it again, served" "$out"; fi
	imds_stop
	expect_eq "$what: SIGTERM: exit 0" 0 "$IMDS_STATUS"
}
tproxy_pod tproxy "TPROXY"
tproxy_pod ambient-tproxy "ambient in-pod TPROXY (Istio 1.21-1.24)"
tproxy_pod ambient "ambient in-pod REDIRECT (Istio 1.25+)"
tproxy_pod tproxy "TPROXY, agent mode" agent
agent_stop TERM

if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
