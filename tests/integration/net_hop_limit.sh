#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# The hop limit (IMDS_HOP_LIMIT, default 1): every answer leaves the sidecar
# with that IP TTL, SYN-ACKs included.  A guest on the bridge is one link
# away and served; a workload the guest routes (a container, a nested
# cluster's pod: here a netns behind the guest, which forwards) gets no
# answer at 1 and is served at 2.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

NS_NEST=$NS_TAG-nest
if ! ns_setup || ! node_link 1400 || ! launcher_masquerade || ! guest_attach "$NS_VM" tap0 masquerade ||
	! ns_new "$NS_NEST"; then
	not_ok "network namespaces set up (needs root and iproute2)"
	tap_done
	exit 1
fi
# The guest routes for a workload of its own: 10.9.0.0/24 behind cni0.
ip -n "$NS_VM" link add cni0 type veth peer name eth0 netns "$NS_NEST"
ip -n "$NS_VM" addr add 10.9.0.1/24 dev cni0
ip -n "$NS_VM" link set cni0 up
in_vm sysctl -qw net.ipv4.ip_forward=1
ip -n "$NS_NEST" addr add 10.9.0.2/24 dev eth0
ip -n "$NS_NEST" link set eth0 up
ip -n "$NS_NEST" route add default via 10.9.0.1
# The pod reaches it through the guest (KubeVirt's masquerade would NAT it
# to the guest's address; the TTL is spent the same way: the guest forwards).
ip -n "$NS_POD" route add 10.9.0.0/24 via 10.0.2.2
# The answers leave veth-imds for the workload's address as for the guest's.

served() { # ns url -> "200", or "no answer" (connect timed out)
	local code
	code=$(ip netns exec "$1" curl -s -o /dev/null -w '%{http_code}' --connect-timeout 2 \
		--max-time 3 "${2:-http://169.254.169.254/healthz}" 2>/dev/null)
	[[ $code == 000 ]] && code="no answer"
	echo "$code"
}

# The node's side, from before the sidecar's first start to the end: no
# packet for 169.254.169.254 (or its IPv6 addresses) leaves the pod.
node_capture_start
for hops in default 1 2 64; do
	if [[ $hops == default ]]; then imds_start IMDS_INTERFACES=default:masquerade:tap0; else imds_start IMDS_INTERFACES=default:masquerade:tap0 IMDS_HOP_LIMIT="$hops"; fi
	want=$([[ $hops == default ]] && echo 1 || echo "$hops")
	if ! imds_wait_serving 1 10; then
		not_ok "hop limit $hops: serving" "$(imds_log_tail)"
		imds_stop
		continue
	fi
	# the sidecar's serving line (in agent mode the agent's says it too)
	expect_eq "hop limit $hops: logged" 1 "$(grep -c "imds-server info: net: .*hop limit $want\$" "$IMDS_LOG")"
	expect_eq "hop limit $hops: the guest one link away is served" 200 "$(served "$NS_VM")"
	if ((want == 1)); then
		# the SYN-ACK dies in the guest's forwarding: connect times out
		expect_eq "hop limit $hops: the workload the guest routes gets no answer" "no answer" \
			"$(served "$NS_NEST")"
	else
		expect_eq "hop limit $hops: the workload behind the guest is served" 200 "$(served "$NS_NEST")"
	fi
	imds_stop
	expect_eq "hop limit $hops: SIGTERM exit 0" 0 "$IMDS_STATUS"
done

# serve: the same on its listener.
for hops in 1 2; do
	ip netns exec "$NS_POD" env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm IMDS_HOP_LIMIT="$hops" \
		"$IMDS_SERVER" serve --listen 10.0.2.1:8080 >>"$NET_TMP/serve.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		[[ $(served "$NS_VM" http://10.0.2.1:8080/healthz) == 200 ]] && break
		sleep 0.05
	done
	got="$(served "$NS_VM" http://10.0.2.1:8080/healthz), $(served "$NS_NEST" http://10.0.2.1:8080/healthz)"
	kill "$pid"
	wait "$pid" 2>/dev/null
	want=$([[ $hops == 1 ]] && echo "200, no answer" || echo "200, 200")
	expect_eq "serve, hop limit $hops: the guest, the workload it routes" "$want" "$got"
done

node_capture_check "while the guest and the workload it routes asked (every hop limit, run and serve)"
for bad in 0 65 x; do
	out=$(in_pod env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm IMDS_HOP_LIMIT="$bad" \
		"$IMDS_SERVER" serve --listen 127.0.0.1:0 2>&1)
	st=$?
	expect_eq "IMDS_HOP_LIMIT=$bad: refused at start, naming it (exit 2)" "2 1" \
		"$st $(grep -c 'IMDS_HOP_LIMIT' <<<"$out")"
done
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
