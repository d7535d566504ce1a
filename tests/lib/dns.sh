# dns.sh — a resolver on the node side at 169.254.169.254 (GKE's metadata
# server answers DNS there) and a guest's queries to it, for the suites that
# check a guest's DNS at .254 stays the node's (issue 32): net_dns.sh (the
# sidecar plumbing its pod) and node_agent.sh (the agent plumbing it).
# Sourced after netns.sh; root.
#
#   dns_node                     the resolver in NS_NODE on .254:53, UDP and TCP
#                                (tests/lib/dns_probe.py), .254 on the node's lo
#   resolves TAG NETNS           udp and tcp queries to .254 from NETNS, each
#                                answered 192.0.2.53 by the node (its log names
#                                the query); echoes what happened
#   check_resolves NAME TAG NETNS  resolves as one TAP check; on failure its
#                                output and that of the command DNS_DIAG (an
#                                array, e.g. (imds_log_tail 5)) as diagnostics
#   local_entries                the kernel's "local 169.254.169.254" entries in
#                                NS_POD's table local (0 where the plumbing moved
#                                it to table 169254)
# shellcheck shell=bash

DNS=$REPO/tests/lib/dns_probe.py
SVC=169.254.169.254

dns_node() {
	ip -n "$NS_NODE" addr add "$SVC/32" dev lo || return 1
	: >"$NET_TMP/dns.log"
	ip netns exec "$NS_NODE" "$PY" "$DNS" serve "$SVC" "$NET_TMP/dns.log" >"$NET_TMP/dns.out" 2>&1 &
	BG_PIDS+=($!)
	wait_ready "$NET_TMP/dns.out" "the resolver"
}

resolves() {
	local ns=$2 p out n0 n1 bad=0
	for p in udp tcp; do
		n0=$(grep -c "^$p .* $p-$1\.example$" "$NET_TMP/dns.log")
		out=$(ip netns exec "$ns" "$PY" "$DNS" query "$SVC" "$p" "$p-$1.example" 2>&1)
		n1=$(grep -c "^$p .* $p-$1\.example$" "$NET_TMP/dns.log")
		echo "$p: $out (node saw $((n1 - n0)))"
		[[ $out == 192.0.2.53 ]] && ((n1 > n0)) || bad=1
	done
	return $bad
}

DNS_DIAG=(true)
check_resolves() {
	local r
	if r=$(resolves "$2" "$3"); then ok "$1 ($(tr '\n' ' ' <<<"$r"))"; else not_ok "$1" "$r" "$("${DNS_DIAG[@]}")"; fi
}

local_entries() { in_pod ip -4 route show table local | grep -c "local $SVC "; }
