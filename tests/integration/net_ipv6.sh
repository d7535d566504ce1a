#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# IPv6 (issue 22): the service on fd00:ec2::254 (AWS's, routed through the
# guest's gateway) and fe80::a9fe:a9fe (OpenStack's, on the VM's link)
# beside 169.254.169.254, in launcher pods as tests/lib/netns.sh builds
# them with a dual-stack Calico node (NODE_V6=1: the pod's fd00:10:244:1::5,
# its default via fe80::ecee:eeff:feee:eeee).
#   masquerade: KubeVirt's fd10:0:2::1/120 on k6t-eth0, its ip6 nat rules,
#     IPv6 forwarding; a dual-stack guest served on all three addresses the
#     same answers; its solicitation answered by the sidecar's responder
#     (the kernel's own answers on veth-imds dropped), the answers' hop
#     limit 1; an IPv6-only guest, and one with only its link-local
#     address; Debian's cloud-init NoCloudNet reads its data from an IPv6
#     seed (http://[fd00:ec2::254]/v1/); another host on the bridge gets no
#     advertisement and no answer, the node routing fd00:ec2::254 to the pod
#     none from the sidecar, a process of the pod is refused at once (a TCP
#     reset: an ICMPv6 error left it waiting 1 s), and the node's side sees
#     nothing of it all; served again within 1 s after veth-imds is deleted.
#   bridge binding, built as KubeVirt builds it: the pod's IPv6 (link-local
#     and the /128) on the dummy eth0, the VM's guest with the pod's MAC and
#     addresses; the hazard first (a plain pod listener's SYN-ACK to the
#     pod's /128 is routed into the pod), then that guest served the same on
#     all three addresses (our listener is bound to veth-imds), a second
#     NIC's guest too; another port of fd00:ec2::254 refused at once for
#     both (the pod's /128 aliased: the kernel's reset no longer routed into
#     the pod); the node sees nothing.
#   IPv6 off in the pod (disable_ipv6): said once, IPv4 served.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

NS_V6ONLY=$NS_TAG-v6
NS_LL=$NS_TAG-ll
NS_OTHER=$NS_TAG-other
G6=fd00:ec2::254
L6=fe80::a9fe:a9fe

# tcp_count NS COUNTER: the namespace's counter now (nstat's absolute value;
# -s: nstat's history file, shared by every namespace, left alone)
tcp_count() { ip netns exec "$1" nstat -asz "$2" | awk -v c="$2" '$1 == c {print $2}'; }

# get NS URL [curl args...]: the body, or curl's error
get() {
	local ns=$1 url=$2
	shift 2
	ip netns exec "$ns" curl -sS -g --max-time "${GUEST_TIMEOUT:-3}" "$@" "$url" 2>&1
}

export NODE_V6=1
if ! ns_setup || ! node_link 1400 || ! launcher_masquerade || ! guest_attach "$NS_VM" tap0 dual; then
	not_ok "dual-stack launcher pod (masquerade) and guest set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi
expect_eq "launcher as KubeVirt builds it for IPv6: fd10:0:2::1/120 on k6t-eth0, IPv6 forwarding, ip6 nat" \
	"fd10:0:2::1/120 1 fd10:0:2::2" \
	"$(in_pod ip -6 -o addr show dev k6t-eth0 scope global | awk '{print $4}') $(in_pod sysctl -n net.ipv6.conf.all.forwarding) $(in_pod nft list chain ip6 nat KUBEVIRT_PREINBOUND | grep -o 'dnat to [^ ]*' | cut -d' ' -f3)"
# Further guests on their own taps, all of them the VM's NICs for the sidecar.
# Each host an address of its own: the pod resolves a guest's address out of
# veth-imds to every tap, and two hosts answering for fd10:0:2::2 raced its
# neighbour entry (the dual-stack guest's answer reset by the other host,
# ~1 run in 3 under load). A real pod's taps are all one VM's.
tap_add tap1 k6t-eth0 1400 && GUEST_IF=eth0 GUEST_ADDR6=fd10:0:2::4 guest_attach "$NS_V6ONLY" tap1 masquerade6 52:54:00:12:34:61
tap_add tap2 k6t-eth0 1400 && guest_attach "$NS_LL" tap2 ll6 52:54:00:12:34:62
# ... and a host on the bridge that is not the VM's (no steering on tap3).
tap_add tap3 k6t-eth0 1400 && guest_attach "$NS_OTHER" tap3 masquerade6 52:54:00:aa:bb:cc
ip -n "$NS_OTHER" -6 addr flush dev eth0 scope global
ip -n "$NS_OTHER" -6 addr add fd10:0:2::3/120 dev eth0 nodad
ip -n "$NS_OTHER" -6 route replace default via fd10:0:2::1

node_capture_start
imds_start IMDS_INTERFACES=default:masquerade:tap0,net1:masquerade:tap1,net2:masquerade:tap2
# (agent mode: the sidecar says how many listeners the agent passed; which
# they are, the pod's listening sockets say, each bound to veth-imds)
serving3() {
	if [[ $IMDS_NET_MODE_TEST == agent ]]; then
		grep -q 'serving 169.254.169.254:80 and IPv6 on 3 listener(s) from the node agent' "$IMDS_LOG" &&
			[[ "$(in_pod ss -Hltn | awk '{print $4}' | sort | tr '\n' ' ')" == "169.254.169.254%veth-imds:80 [$G6]%veth-imds:80 [$L6]%veth-imds:80 " ]]
	else
		grep -q "serving 169.254.169.254, \[$G6\], \[$L6\]:80" "$IMDS_LOG"
	fi
}
if imds_wait_serving 1 10 && serving3; then
	ok "run: serving 169.254.169.254, [$G6] and [$L6]"
else
	not_ok "run: serving 169.254.169.254, [$G6] and [$L6]" "$(imds_log_tail)" "$(in_pod ss -Hltn)"
fi
# the guests' link-local addresses finish duplicate address detection
for _ in $(seq 300); do
	[[ -z $(in_vm ip -6 addr show tentative)$(ip netns exec "$NS_LL" ip -6 addr show tentative) ]] && break
	sleep 0.01
done

id4=$(get "$NS_VM" http://169.254.169.254/v1/identity -H 'Metadata: true')
id6=$(get "$NS_VM" "http://[$G6]/v1/identity" -H 'Metadata: true')
idl=$(get "$NS_VM" "http://[$L6%eth0]/v1/identity" -H 'Metadata: true')
if [[ $id4 == *'"vmName":"netvm"'* && $id6 == "$id4" && $idl == "$id4" ]]; then
	ok "dual-stack guest: /v1/identity the same on 169.254.169.254, [$G6] and [$L6%eth0]"
else
	not_ok "dual-stack guest: /v1/identity the same on all three" "v4: $id4" "global: $id6" "link-local: $idl" "$(imds_log_tail)"
fi
for p in /v1/meta-data /openstack/latest/meta_data.json /latest/meta-data/instance-id; do
	a=$(get "$NS_VM" "http://169.254.169.254$p")
	b=$(get "$NS_VM" "http://[$G6]$p")
	if [[ -n $a && $a == "$b" ]]; then ok "the same $p over IPv6"; else not_ok "the same $p over IPv6" "v4: $a" "v6: $b"; fi
done
expect_eq "the sidecar saw the guest's own IPv6 addresses (fd10:0:2::2, its link-local)" 2 \
	"$(grep -E ' GET /v1/identity ' "$IMDS_LOG" | grep -cE '^[^ ]+ (fd10:0:2::2|fe80::5054:ff:fe12:3456) ')"
mac=$(in_pod cat /sys/class/net/veth-imds/address)
expect_eq "the guest's neighbour entry for $L6 is veth-imds's MAC" "$mac" \
	"$(in_vm ip -6 neigh show "$L6" dev eth0 | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')"
n_drop=$(in_pod nft list chain ip6 kubevirt_imds input | grep -o 'packets [0-9]*' | awk '{print $2}')
if ((n_drop >= 1)); then
	ok "the kernel's own answers to the steered solicitations are dropped ($n_drop solicitation(s) kept from it)"
else
	not_ok "the kernel's own answers to the steered solicitations are dropped" "$(in_pod nft list table ip6 kubevirt_imds)"
fi
# the answers' hop limit: a capture in the guest of a SYN-ACK from the service
ip netns exec "$NS_VM" tcpdump -n -v -l -c 1 -i eth0 "src host $G6 and ip6[6] = 6 and ip6[53] & 0x12 = 0x12" \
	>"$NET_TMP/synack.txt" 2>/dev/null &
TD=$!
sleep 0.3
get "$NS_VM" "http://[$G6]/healthz" >/dev/null
wait "$TD"
if grep -q 'hlim 1,' "$NET_TMP/synack.txt"; then
	ok "the SYN-ACK leaves with hop limit 1 (IMDS_HOP_LIMIT as IPV6_UNICAST_HOPS)"
else
	not_ok "the SYN-ACK leaves with hop limit 1" "$(cat "$NET_TMP/synack.txt")"
fi

out=$(get "$NS_V6ONLY" "http://[$G6]/v1/identity" -H 'Metadata: true')
if [[ $out == "$id4" ]]; then ok "IPv6-only guest (fd10:0:2::4/120 via fd10:0:2::1) served on [$G6]"; else not_ok "IPv6-only guest served on [$G6]" "$out" "$(imds_log_tail)"; fi
out=$(ip netns exec "$NS_V6ONLY" "$PY" "$REPO/tests/lib/cloudinit_client.py" \
	--serial "ds=nocloud;s=http://[$G6]/v1/;dsmode=net" --mode datasource 2>&1)
if grep -q '"ok": true' <<<"$out" && grep -q '"instance_id": "default-netvm"' <<<"$out"; then
	ok "cloud-init's NoCloudNet get_data() from the IPv6-only guest, seed http://[$G6]/v1/"
else
	not_ok "cloud-init's NoCloudNet get_data() from the IPv6-only guest, seed http://[$G6]/v1/" "$out"
fi
out=$(get "$NS_LL" "http://[$L6%eth0]/v1/identity" -H 'Metadata: true')
if [[ $out == "$id4" ]]; then ok "a guest with only its link-local address served on [$L6%eth0]"; else not_ok "a guest with only its link-local address served on [$L6%eth0]" "$out" "$(imds_log_tail)"; fi

# refusals
before=$(grep -c ' GET ' "$IMDS_LOG")
out=$(GUEST_TIMEOUT=2 get "$NS_OTHER" "http://[$G6]/healthz")
if [[ $out == OK ]]; then not_ok "another host on the bridge gets nothing on [$G6]" "$out"; else ok "another host on the bridge gets nothing on [$G6] (${out#curl: (* })"; fi
ip netns exec "$NS_OTHER" ip -6 neigh flush dev eth0
out=$(GUEST_TIMEOUT=2 get "$NS_OTHER" "http://[$L6%eth0]/healthz")
if [[ $out == OK ]]; then not_ok "... nor on [$L6]" "$out"; else ok "... nor on [$L6] (${out#curl: (* })"; fi
expect_eq "... and no advertisement for $L6 reached it" "" \
	"$(ip netns exec "$NS_OTHER" ip -6 neigh show "$L6" | grep lladdr)"
t0=$(now_ms)
r=$(ip netns exec "$NS_POD" curl -sS -g -o /dev/null --max-time 3 "http://[$G6]/healthz" 2>&1)
st=$?
ms=$(($(now_ms) - t0))
if ((st == 7 && ms < 1000)); then
	ok "a process of the pod is refused at once on [$G6] ($ms ms: ${r#curl: })"
else
	not_ok "a process of the pod is refused at once on [$G6]" "curl exit $st after $ms ms: $r"
fi
cap=$(node_capture_count)
expect_eq "the node's side saw no packet for $G6 or $L6, nor a solicitation for them" 0 "$cap"
[[ $cap == 0 ]] || node_capture_show | sed 's/^/# /'
pod_ll=$(in_pod ip -6 -o addr show dev eth0 scope link | awk '{print $4}' | cut -d/ -f1)
ip -n "$NS_NODE" -6 route add "$G6/128" via "$pod_ll" dev cali0
out=$(ip netns exec "$NS_NODE" curl -sS -g --max-time 2 "http://[$G6]/healthz" 2>&1)
# (KubeVirt's PREINBOUND hands what comes in on eth0 to the guest, as for IPv4)
if [[ $out == OK ]]; then not_ok "the node (routing $G6 to the pod) is not answered by the sidecar" "$out"; else ok "the node (routing $G6 to the pod) is not answered by the sidecar (${out#curl: (* })"; fi
expect_eq "... and the sidecar saw none of those requests" "$before" "$(grep -c ' GET ' "$IMDS_LOG")"

# restore
t0=$(now_ms)
in_pod ip link del veth-imds
served=""
for _ in $(seq 300); do
	[[ $(GUEST_TIMEOUT=0.2 get "$NS_VM" "http://[$G6]/healthz") == OK ]] && served=$(($(now_ms) - t0)) && break
	sleep 0.005
done
if [[ -n $served ]] && ((served < 1000)); then
	ok "veth-imds deleted: the guest served again on [$G6] after $served ms"
else
	not_ok "veth-imds deleted: the guest served again on [$G6] within 1 s" "${served:-never}" "$(imds_log_tail)"
fi
expect_eq "IPv6 plumbing restored once: fd00:ec2::254/128, fe80::a9fe:a9fe/64, two rules, the table's route" "1 1 2 1" \
	"$(in_pod ip -6 -o addr show dev veth-imds | grep -c "$G6/128") $(in_pod ip -6 -o addr show dev veth-imds | grep -c "$L6/64") $(in_pod ip -6 rule show | grep -c 'lookup 169254') $(in_pod ip -6 route show table 169254 | grep -c '^default dev veth-imds')"
# The responder answered the solicitations: in pod mode the sidecar's, which
# counts them in its stop line; in agent mode the agent's, which counts them in
# /metrics (all its pods: this one alone so far), while the pod is served and
# still once its sidecar has gone (the pod let go, its count kept).
if [[ $IMDS_NET_MODE_TEST == agent ]]; then
	na_live=$(agent_metric imds_node_ndp_replies_total)
	imds_stop
	for _ in $(seq 100); do # the agent lets the pod go when its sidecar's socket closes
		[[ $(agent_metric imds_node_pods_connected) == 0 ]] && break
		sleep 0.02
	done
	na_gone=$(agent_metric imds_node_ndp_replies_total)
	if [[ -n $na_live ]] && ((na_live >= 1 && na_gone == na_live)); then
		ok "the responder answered the solicitations (imds-node's imds_node_ndp_replies_total $na_live, kept when the pod went)"
	else
		not_ok "the responder answered the solicitations (imds-node's imds_node_ndp_replies_total, kept when the pod went)" \
			"served: '${na_live}', gone: '${na_gone}'" "$(imds_log_tail)"
	fi
else
	imds_stop
	expect_eq "the responder answered the solicitations (stop line)" 1 \
		"$(grep -cE 'stopped \([0-9]+ ARP replies, [1-9][0-9]* neighbour advertisements' "$IMDS_LOG")"
fi

# bridge binding: a second pod, as KubeVirt builds it (tests/lib/netns.sh
# _bridged_pod): the dummy eth0 holds the pod's MAC and its IPv6, link-local
# and fd00:10:244:1::5/128, and the VM's guest (tap0) has the pod's MAC, so
# its EUI-64 link-local is the dummy's, and is configured with the pod's
# addresses (bridge-dual).  Those are the only equal addresses here, as in
# a real pod (the dummy, down and NOARP, answers no solicitation); the
# guest of a second NIC (tap1) has addresses of its own.
netns_reset() { # fresh names for a second pod
	NS_NODE=$NS_TAG-node2 NS_POD=$NS_TAG-pod2 NS_VM=$NS_TAG-vm2
}
netns_reset
NS_VM2=$NS_TAG-vm2b
if ns_setup && node_link 1400 && launcher_bridge && guest_attach "$NS_VM" tap0 bridge-dual "$POD_MAC" &&
	tap_add tap1 k6t-eth0 1400 && guest_attach "$NS_VM2" tap1 bridge6 52:54:00:12:34:63; then
	d6=$(in_pod ip -6 -o addr show dev eth0 | awk '{print $4, $6}' | sort | tr '\n' ' ')
	loc=$(in_pod ip -6 route show table local | grep -cE "^local ($POD_IP6|$POD_LL6) dev eth0 ")
	if [[ $d6 == "$POD_IP6/128 global $POD_LL6/64 link " && $loc == 2 &&
		$(in_pod cat /sys/class/net/eth0/address) == "$POD_MAC" &&
		$(in_pod cat /sys/class/net/eth0/flags) == 0x82 &&
		$(in_pod cat /sys/class/net/eth0-nic/address) != "$POD_MAC" ]]; then
		ok "bridge launcher as KubeVirt: the dummy eth0 (down, NOARP) has the pod's MAC, $POD_LL6/64 and $POD_IP6/128, both local to the pod; eth0-nic another MAC (the bridge's)"
	else
		not_ok "bridge launcher as KubeVirt: the pod's IPv6 on the dummy" "$d6" "local: $loc" "$(in_pod ip -d link show eth0)"
	fi
	for _ in $(seq 300); do [[ -z $(in_vm ip -6 addr show tentative)$(ip netns exec "$NS_VM2" ip -6 addr show tentative) ]] && break; sleep 0.01; done
	expect_eq "the guest with the pod's MAC: its link-local is the dummy's" "$POD_LL6/64" \
		"$(in_vm ip -6 -o addr show dev eth0 scope link | awk '{print $4}')"

	# The hazard, with no sidecar (the IPv6 side of net_bridge's E2): a plain
	# listener of the pod on an address of the bridge, asked by the guest from
	# the pod's /128, answers into the pod itself: its SYN-ACK's route is the
	# dummy's local entry (table local, rule 0), the pod resets it, the guest
	# retransmits and times out.  From the guest's link-local (the dummy's as
	# well) the same listener answers: a link-local destination routes by
	# the interface the SYN came in on.
	ip -n "$NS_POD" -6 addr add fd00:75::20/128 dev k6t-eth0 nodad
	ip netns exec "$NS_POD" "$PY" -m http.server --bind :: 8080 >/dev/null 2>&1 &
	plain=$!
	for _ in $(seq 100); do in_pod ss -ltn | grep -q ':8080 ' && break; sleep 0.02; done
	ip -n "$NS_VM" -6 neigh replace fd00:75::20 lladdr "$(in_pod cat /sys/class/net/k6t-eth0/address)" dev eth0 nud permanent
	ip -n "$NS_VM" -6 route add fd00:75::20/128 dev eth0
	syn0=$(tcp_count "$NS_VM" TcpExtTCPSynRetrans) rst0=$(tcp_count "$NS_POD" TcpOutRsts)
	out=$(GUEST_TIMEOUT=2 get "$NS_VM" "http://[fd00:75::20]:8080/" -o /dev/null)
	st=$?
	syn=$(($(tcp_count "$NS_VM" TcpExtTCPSynRetrans) - syn0)) rst=$(($(tcp_count "$NS_POD" TcpOutRsts) - rst0))
	if [[ $st != 0 || $out == *"timed out"* ]] && ((syn >= 1 && rst >= 1)); then
		ok "hazard: a pod listener not bound to a link, asked from the pod's $POD_IP6, answers into the pod (${out#curl: (* }; $syn SYN retransmitted, the pod reset $rst of its own SYN-ACKs)"
	else
		not_ok "hazard: a pod listener not bound to a link answers into the pod" "curl $st: $out" "SYN retransmits $syn, pod resets $rst"
	fi
	brll=$(in_pod ip -6 -o addr show dev k6t-eth0 scope link | awk '{print $4}' | cut -d/ -f1)
	out=$(GUEST_TIMEOUT=2 get "$NS_VM" "http://[$brll%eth0]:8080/" -o /dev/null -w '%{http_code}')
	expect_eq "... the same listener asked from the guest's link-local (the dummy's too): answered" 200 "$out"
	kill "$plain"
	wait "$plain" 2>/dev/null
	ip -n "$NS_VM" -6 route del fd00:75::20/128 dev eth0
	ip -n "$NS_POD" -6 addr del fd00:75::20/128 dev k6t-eth0

	node_capture_start
	imds_start IMDS_INTERFACES=default:bridge:tap0,net1:bridge:tap1
	imds_wait_serving 1 10
	syn0=$(tcp_count "$NS_VM" TcpExtTCPSynRetrans)
	id4=$(get "$NS_VM" http://169.254.169.254/v1/identity -H 'Metadata: true')
	id6=$(get "$NS_VM" "http://[$G6]/v1/identity" -H 'Metadata: true')
	idl=$(get "$NS_VM" "http://[$L6%eth0]/v1/identity" -H 'Metadata: true')
	syn=$(($(tcp_count "$NS_VM" TcpExtTCPSynRetrans) - syn0))
	if [[ $id4 == *'"vmName":"netvm"'* && $id6 == "$id4" && $idl == "$id4" && $syn == 0 ]]; then
		ok "bridge binding, the guest with the pod's MAC and addresses: /v1/identity the same on 169.254.169.254, [$G6] and [$L6%eth0], no SYN retransmitted"
	else
		not_ok "bridge binding, the guest with the pod's MAC and addresses: served on all three" "v4: $id4" "global: $id6" "link-local: $idl" "SYN retransmits: $syn" "$(imds_log_tail)"
	fi
	for p in /v1/meta-data /openstack/latest/meta_data.json; do
		a=$(get "$NS_VM" "http://169.254.169.254$p")
		b=$(get "$NS_VM" "http://[$G6]$p")
		c=$(get "$NS_VM" "http://[$L6%eth0]$p")
		if [[ -n $a && $a == "$b" && $a == "$c" ]]; then ok "... the same $p on the three"; else not_ok "... the same $p on the three" "$a" "$b" "$c"; fi
	done
	expect_eq "... the sidecar saw it as 192.0.0.x and 64:ff9b:1::c000:80 (the pod's IPv4 and /128 aliased) and $POD_LL6" "1 1 1" \
		"$(for re in '192\.0\.0\.1[2-9][0-9]' '64:ff9b:1::c000:80' "$POD_LL6"; do grep -E ' GET /v1/identity ' "$IMDS_LOG" | grep -cE "^[^ ]+ $re "; done | tr '\n' ' ' | sed 's/ $//')"
	out=$(get "$NS_VM2" "http://[$G6]/v1/identity" -H 'Metadata: true')
	out2=$(get "$NS_VM2" "http://[$L6%eth0]/v1/identity" -H 'Metadata: true')
	if [[ $out == "$id4" && $out2 == "$id4" ]]; then
		ok "the other NIC's guest (tap1, addresses of its own) served the same on [$G6] and [$L6%eth0]"
	else
		not_ok "the other NIC's guest served on [$G6] and [$L6]" "$out" "$out2" "$(imds_log_tail)"
	fi
	# The pod's kernel, not our listener, answers another port of the
	# service address: a reset to the pod's /128 would follow the dummy's
	# local entry into the pod (the guest timing out, 3 SYNs) were that
	# source not aliased on the way in; it is refused at once as tap1's is.
	t0=$(now_ms)
	out=$(GUEST_TIMEOUT=2 get "$NS_VM" "http://[$G6]:81/")
	t1=$(now_ms)
	out2=$(GUEST_TIMEOUT=2 get "$NS_VM2" "http://[$G6]:81/")
	t2=$(now_ms)
	if [[ $out == *"connect"* && $out2 == *"connect"* ]] && ((t1 - t0 < 500 && t2 - t1 < 500)); then
		ok "port 81 of [$G6] from the pod's $POD_IP6 refused at once ($((t1 - t0)) ms), as from tap1's guest ($((t2 - t1)) ms)"
	else
		not_ok "port 81 of [$G6] refused at once, from the pod's $POD_IP6 and from tap1's guest" "$out ($((t1 - t0)) ms)" "$out2 ($((t2 - t1)) ms)"
	fi
	expect_eq "bridge binding: the node's side saw nothing of it (no packet for $G6 or $L6, no solicitation for them)" 0 "$(node_capture_count)"
	imds_stop
else
	not_ok "bridge binding pod with IPv6 set up"
fi

# IPv6 off in the pod
NS_NODE=$NS_TAG-node3 NS_POD=$NS_TAG-pod3 NS_VM=$NS_TAG-vm3
export NODE_V6=0
if ns_setup && in_pod sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
	node_link 1400 && launcher_masquerade && guest_attach "$NS_VM" tap0 masquerade; then
	imds_start IMDS_INTERFACES=default:masquerade:tap0
	imds_wait_serving 1 10
	expect_eq "IPv6 off in the pod: said once" 1 "$(grep -c 'IPv6 is off in the pod' "$IMDS_LOG")"
	expect_eq "... and 169.254.169.254 served" OK "$(get "$NS_VM" http://169.254.169.254/healthz)"
	imds_stop
else
	not_ok "a pod with IPv6 off set up"
fi
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports" "$(imds_log_tail)"; fi
tap_done
