# netns.sh — virt-launcher pods as KubeVirt builds them, binding by binding,
# in network namespaces, for the sidecar's network tests (sourced; root).
# Every namespace is uniquely named and deleted on EXIT, even when the test
# fails or is interrupted.  The KubeVirt source each step follows is cited
# (kubevirt/kubevirt, pkg/network/...; ../shared/kubevirt-network.md has the
# facts); where this kernel lacks what KubeVirt uses, the stand-in is named.
#
#   node netns ── cali0 ═══ eth0 ── pod netns (the launcher) ── tap0 ~~tapwire~~ eth0 ── guest netns
#   (Calico-like: proxy ARP           (masquerade: k6t-eth0 + tap0 + nat;         (a netns playing the VM:
#    with proxy_delay 0)               bridge: eth0-nic + dummy eth0 + tap0 ...)    tapwire moves its frames
#                                                                                  through a real tap, as qemu)
#
#   ns_setup                      creates NS_NODE, NS_POD, NS_VM (names in those vars)
#   node_link                     the CNI's pod eth0 and the node behind it (Calico)
#   node_neighbour NS IP [N]      another pod on that node
#   launcher_masquerade [istio]   KubeVirt's masquerade binding (with Istio's variant)
#   launcher_istio [redirect|tproxy|ambient|ambient-tproxy]   launcher_masquerade istio +
#                                 Istio's own rules (sidecar REDIRECT or TPROXY, ambient's
#                                 in-pod REDIRECT or TPROXY) + a proxy
#   launcher_bridge               bridge binding on the pod network
#   launcher_managedtap           a managedTap plugin on an OVN-K primary UDN (ovn-udn1)
#   launcher_multus_bridge NET    masquerade on the pod network + Multus bridge network NET
#   launcher_passt | launcher_macvtap NET | launcher_sriov
#   pasta_start [TCP UDP] / pasta_stop   passt (as pasta) as libvirt runs it, every port forwarded
#   guest_attach NS TAP MODE [MAC] [ADDR]   the VM: MODE masquerade | bridge | bridge-ll |
#                                 bridge-dual | linklocal | udn | none; through tap TAP of the pod
#   imds_start [VAR=value...]     imds-server run in the pod; IMDS_PID, IMDS_LOG
#   imds_wait_serving [N]         until the Nth "net: serving" line (default 1)
#   imds_stop                     SIGTERM and wait
#   IMDS_NET_MODE_TEST            pod (run as root plumbs its pod) or agent: the
#                                 sidecar as the cluster runs it (UID 107, no
#                                 capability, IMDS_NET_MODE=agent, in its pod's
#                                 cgroup and folder) and one imds-node for the
#                                 suite (tests/lib/podfolder.sh), its lines in
#                                 IMDS_LOG; from the environment
#                                 (IMDS_TEST_NET_MODE), else the suite's header
#                                 line "# imds-net-mode: agent" (lines 2-12),
#                                 else pod
#   agent_metric NAME             agent mode: a sample of that imds-node's /metrics
#   node_capture_start / node_capture_count [FILTER]   tcpdump on the node for
#                                 169.254.169.254, its IPv6 addresses and
#                                 solicitations for them
#   node_capture_check WHAT [FILTER]   node_capture_count as a TAP line (0 or not ok)
#   count_plumbing / pod_refused  what the sidecar built; a process of the pod refused
#   wait_for_line FILE REGEX [S]  until FILE has a line matching REGEX
#   in_pod/in_vm/in_node CMD...
# shellcheck shell=bash

NETNS_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=${REPO:-$(cd "$NETNS_LIB/../.." && pwd)}
IMDS_SERVER=${IMDS_SERVER:-$REPO/build/debug/imds-server}
TAPWIRE=${TAPWIRE:-$REPO/build/debug/tests/tapwire}
PY=/usr/bin/python3
NS_TAG=imds$$r$RANDOM
NS_NODE=$NS_TAG-node
NS_POD=$NS_TAG-pod
NS_VM=$NS_TAG-vm
NS_ALL=()
BG_PIDS=() # tapwire, proxies, captures: killed on EXIT
IMDS_PID=
IMDS_WRAP=() # e.g. (capsh ... --) to run the server under a wrapper
TAPWIRE_NEXT=() # guest_attach: more "POD_NETNS TAP" pairs, the next on each SIGUSR1 (a migration)
TAPWIRE_PID=    # guest_attach: the last tapwire started
NET_TMP=$(mktemp -d "${IMDS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/imds-net.XXXXXX")
IMDS_LOG=$NET_TMP/imds.log
# The pod as the CNI gives it (Calico): one address, the gateway on-link.
POD_IP=10.244.1.5
POD_MAC=0a:58:0a:f4:01:05
POD_GW=169.254.1.1
# ... and with NODE_V6=1 its IPv6 as Calico gives it: one address /128, the
# default route via the host side's link-local (Calico's cali* MAC is
# ee:ee:ee:ee:ee:ee: fe80::ecee:eeff:feee:eeee).
POD_IP6=fd00:10:244:1::5
POD_GW6=fe80::ecee:eeff:feee:eeee
# The pod's link-local, its MAC's EUI-64 (the kernel's, whatever NODE_V6).
# shellcheck disable=SC2034 # read by the suites
POD_LL6=fe80::858:aff:fef4:105
export IMDS_SERVER REPO PY
# The network mode the suite runs the sidecar in (imds_start).
if [[ -n ${IMDS_TEST_NET_MODE:-} ]]; then
	IMDS_NET_MODE_TEST=$IMDS_TEST_NET_MODE
else
	# the header, as tests/run.sh reads "# imds-variants:"
	IMDS_NET_MODE_TEST=$(sed -n '2,12s/^# imds-net-mode: \([a-z]*\).*/\1/p' "$0" 2>/dev/null | head -1)
	IMDS_NET_MODE_TEST=${IMDS_NET_MODE_TEST:-pod}
fi
[[ $IMDS_NET_MODE_TEST == pod ]] || echo "# the sidecar's network mode: agent"
case $IMDS_NET_MODE_TEST in
pod | agent) ;;
*)
	echo "netns.sh: IMDS_TEST_NET_MODE: want pod or agent, got '$IMDS_NET_MODE_TEST'" >&2
	exit 2
	;;
esac

netns_cleanup() {
	local ns p
	if [[ -n "$IMDS_PID" ]]; then
		kill -KILL "$IMDS_PID" 2>/dev/null
		wait "$IMDS_PID" 2>/dev/null
	fi
	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for ns in "${NS_ALL[@]}"; do
		# Kill whatever a test left running in the namespace first.
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if [[ -n "${KEEP_NET_TMP:-}" ]]; then
		echo "# kept $NET_TMP"
	else
		rm -rf "$NET_TMP"
	fi
}
trap netns_cleanup EXIT
trap 'exit 130' INT TERM

ns_new() {
	ip netns add "$1" || return 1
	NS_ALL+=("$1")
	ip -n "$1" link set lo up
}

in_pod() { ip netns exec "$NS_POD" "$@"; }
in_vm() { ip netns exec "$NS_VM" "$@"; }
in_node() { ip netns exec "$NS_NODE" "$@"; }

ns_setup() {
	ns_new "$NS_NODE" && ns_new "$NS_POD" && ns_new "$NS_VM"
}

# A dummy link as KubeVirt makes them (nmstate TypeDummy): this kernel has
# no dummy driver, so a veth whose peer (<name>-d) stays down in the pod,
# flagged as the dummy driver flags its links (drivers/net/dummy.c
# dummy_setup: IFF_NOARP, IFF_MULTICAST off).  KubeVirt never sets it up
# (no State in netpod.go:393-401; nmstate/spec.go:209-213 sets up only
# "up" links).  NOARP is what makes an IPv6 address on it the pod's at
# once: no duplicate address detection, so it is valid and in table local
# though the link is down; on a plain veth, down, it stays tentative and
# is never local (checked on this kernel).
dummy_add() { # NAME MAC MTU
	ip -n "$NS_POD" link add "$1" address "$2" mtu "$3" type veth peer name "${1:0:12}-d" || return 1
	ip -n "$NS_POD" link set "$1" arp off multicast off
}

# The pod's eth0 as Calico's CNI builds it: a /32 address, the gateway
# 169.254.1.1 reached on-link, and the node answering ARP for it by proxy,
# at once (Calico sets proxy_delay 0 on cali*: cni-plugin dataplane_linux.go).
node_link() {
	local mtu=${1:-1500}
	ip -n "$NS_NODE" link add cali0 mtu "$mtu" type veth peer name eth0 mtu "$mtu" netns "$NS_POD" || return 1
	ip -n "$NS_NODE" link set cali0 up
	ip -n "$NS_NODE" addr add 192.168.100.1/32 dev lo
	ip -n "$NS_NODE" route add "$POD_IP/32" dev cali0
	# Proxy ARP answers only for targets the node would forward elsewhere:
	# a default route out of an "uplink", and forwarding on.
	ip -n "$NS_NODE" link add uplink0 type veth peer name uplink1
	ip -n "$NS_NODE" link set uplink1 up
	ip -n "$NS_NODE" link set uplink0 up
	ip -n "$NS_NODE" route add default dev uplink0
	in_node sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv4.conf.cali0.proxy_arp=1 \
		net.ipv4.neigh.cali0.proxy_delay=0
	ip -n "$NS_POD" link set eth0 address "$POD_MAC"
	ip -n "$NS_POD" addr add "$POD_IP/32" dev eth0
	ip -n "$NS_POD" link set eth0 up
	ip -n "$NS_POD" route add "$POD_GW" dev eth0 scope link
	ip -n "$NS_POD" route add default via "$POD_GW" dev eth0
	[[ ${NODE_V6:-0} == 1 ]] || return 0
	ip -n "$NS_NODE" link set cali0 addrgenmode none
	ip -n "$NS_NODE" link set cali0 address ee:ee:ee:ee:ee:ee
	ip -n "$NS_NODE" -6 addr add "$POD_GW6/64" dev cali0 nodad
	ip -n "$NS_NODE" -6 route add "$POD_IP6/128" dev cali0
	ip -n "$NS_NODE" -6 route add default dev uplink0
	in_node sysctl -qw net.ipv6.conf.all.forwarding=1
	ip -n "$NS_POD" -6 addr add "$POD_IP6/128" dev eth0 nodad
	ip -n "$NS_POD" -6 route add default via "$POD_GW6" dev eth0
}

# node_neighbour NS IP [N]: another pod on the same node, as Calico wires it
# (cali<N>, its eth0 IP/32, the gateway 169.254.1.1 answered by the node's
# proxy ARP): whatever it sends off-pod the node routes.
node_neighbour() {
	local ns=$1 ip=$2 c=cali${3:-1}
	ns_new "$ns" || return 1
	ip -n "$NS_NODE" link add "$c" type veth peer name eth0 netns "$ns" || return 1
	ip -n "$NS_NODE" link set "$c" up
	ip -n "$NS_NODE" route add "$ip/32" dev "$c"
	in_node sysctl -qw "net.ipv4.conf.$c.proxy_arp=1" "net.ipv4.neigh.$c.proxy_delay=0"
	ip -n "$ns" addr add "$ip/32" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add "$POD_GW" dev eth0 scope link
	ip -n "$ns" route add default via "$POD_GW" dev eth0
}

# tap_add NAME BRIDGE MTU: a VM tap as virt-handler creates it (nmstate
# spec.go createTap, through virt-chroot create-tap: kind tun, IFF_TAP,
# owned by 107), then set up as setupInterface does (MTU, master, up).
# Single-queue by default, as KubeVirt's: the tap is multi-queue only for
# more than one queue (cmd/virt-chroot/tap-device-maker.go:27-31), and the
# queues are the vCPUs only with spec.domain.devices.
# networkInterfaceMultiqueue: true (pkg/virt-launcher/virtwrap/converter/
# network/virtio-queues.go:32-45), for a virtio NIC (pkg/network/setup/
# netpod/netpod.go:406-413), else 0.  TAP_MQ=1 gives that multi-queue tap.
# Whoever opens the tap must ask for the same (the kernel refuses
# IFF_MULTI_QUEUE on a single-queue tap and the reverse with EINVAL):
# tapwire tries both; qemu's tap netdev opens a single queue unless given
# queues=N (tests/lib/vm.sh, VM_TAP_QUEUES).
tap_add() {
	local mq=''
	[[ ${TAP_MQ:-0} == 1 ]] && mq=multi_queue
	# shellcheck disable=SC2086 # mq is one word or none
	ip -n "$NS_POD" tuntap add dev "$1" mode tap $mq user 107 group 107 || return 1
	ip -n "$NS_POD" link set "$1" mtu "$3" master "$2" up
}

pod_mtu() { in_pod cat "/sys/class/net/$1/mtu"; }
pod_mac() { in_pod cat "/sys/class/net/$1/address"; }

# KubeVirt's masquerade binding (pkg/network/setup/netpod/netpod.go
# masqueradeBindingSpec, :415-470; applied by nmstate/spec.go Apply and
# setupInterface), then its NAT (netpod/masquerade/masquerade.go
# setupNATByFamily, :113-268, through the nft binary: driver/nft/nft.go).
# The pod's migration transport is unix (kubevirt.io/migrationTransportUnix
# on every launcher pod): no legacy migration-port returns.
launcher_masquerade() {
	local istio=${1:-} mtu
	mtu=$(pod_mtu eth0) || return 1
	ip -n "$NS_POD" link add k6t-eth0 type bridge || return 1
	ip -n "$NS_POD" link set k6t-eth0 address 02:00:00:00:00:00 mtu "$mtu" # link/mac.go:27
	ip -n "$NS_POD" addr add 10.0.2.1/24 dev k6t-eth0                     # gateway of 10.0.2.0/24
	ip -n "$NS_POD" link set k6t-eth0 up
	in_pod sysctl -qw net.ipv4.conf.k6t-eth0.route_localnet=1            # IP4RouteLocalNet
	tap_add tap0 k6t-eth0 "$mtu" || return 1
	in_pod sysctl -qw net.ipv4.ip_forward=1                              # setupLinuxStack
	# IPv6 when the pod has a global IPv6 (netpod.go:444-453, :302-304):
	# fd10:0:2::1/120 on the bridge, forwarding, the same NAT in ip6 nat with
	# ::1 and fd10:0:2::2 (masquerade.go:105-106).  KubeVirt's DHCPv6 gives the
	# guest fd10:0:2::2 and no route (dhcp/serverv6: an address only, no
	# router advertisement): its gateway comes from its own configuration
	# (KubeVirt's tests put fd10:0:2::1 in cloud-init network data).
	local v6=
	in_pod ip -6 -o addr show dev eth0 scope global | grep -q inet6 && v6=1
	if [[ $v6 ]]; then
		ip -n "$NS_POD" -6 addr add fd10:0:2::1/120 dev k6t-eth0 nodad
		in_pod sysctl -qw net.ipv6.conf.all.forwarding=1
	fi
	local dnat='{ 127.0.0.1 }' snat='{ 127.0.0.1 }'
	[[ $istio ]] && dnat="{ 127.0.0.1, $POD_IP }" && snat='{ 127.0.0.1, 127.0.0.6 }'
	{
		echo 'add table ip nat'
		echo 'add chain ip nat prerouting { type nat hook prerouting priority -100; }'
		echo 'add chain ip nat input { type nat hook input priority 100; }'
		echo 'add chain ip nat output { type nat hook output priority -100; }'
		echo 'add chain ip nat postrouting { type nat hook postrouting priority 100; }'
		echo 'add chain ip nat KUBEVIRT_PREINBOUND'
		echo 'add chain ip nat KUBEVIRT_POSTINBOUND'
		echo 'add rule ip nat postrouting ip saddr 10.0.2.2 counter masquerade'
		echo 'add rule ip nat prerouting iifname eth0 counter jump KUBEVIRT_PREINBOUND'
		echo 'add rule ip nat postrouting oifname k6t-eth0 counter jump KUBEVIRT_POSTINBOUND'
		if [[ $istio ]]; then
			# istio.ReservedPorts() skipped, NonProxiedPorts() (22) forwarded
			local r='{ 15000, 15001, 15004, 15006, 15008, 15009, 15020, 15021, 15053, 15090 }'
			echo "add rule ip nat output tcp dport $r ip saddr 127.0.0.1 counter return"
			echo "add rule ip nat KUBEVIRT_POSTINBOUND tcp dport $r ip saddr 127.0.0.1 counter return"
			echo 'add rule ip nat KUBEVIRT_PREINBOUND tcp dport { 22 } counter dnat to 10.0.2.2'
		else
			echo 'add rule ip nat KUBEVIRT_PREINBOUND counter dnat to 10.0.2.2'
		fi
		echo "add rule ip nat KUBEVIRT_POSTINBOUND ip saddr $snat counter snat to 10.0.2.1"
		echo "add rule ip nat output ip daddr $dnat counter dnat to 10.0.2.2"
		if [[ $v6 ]]; then
			echo 'add table ip6 nat'
			echo 'add chain ip6 nat prerouting { type nat hook prerouting priority -100; }'
			echo 'add chain ip6 nat input { type nat hook input priority 100; }'
			echo 'add chain ip6 nat output { type nat hook output priority -100; }'
			echo 'add chain ip6 nat postrouting { type nat hook postrouting priority 100; }'
			echo 'add chain ip6 nat KUBEVIRT_PREINBOUND'
			echo 'add chain ip6 nat KUBEVIRT_POSTINBOUND'
			echo 'add rule ip6 nat postrouting ip6 saddr fd10:0:2::2 counter masquerade'
			echo 'add rule ip6 nat prerouting iifname eth0 counter jump KUBEVIRT_PREINBOUND'
			echo 'add rule ip6 nat postrouting oifname k6t-eth0 counter jump KUBEVIRT_POSTINBOUND'
			echo 'add rule ip6 nat KUBEVIRT_PREINBOUND counter dnat to fd10:0:2::2'
			echo 'add rule ip6 nat KUBEVIRT_POSTINBOUND ip6 saddr { ::1 } counter snat to fd10:0:2::1'
			echo 'add rule ip6 nat output ip6 daddr { ::1 } counter dnat to fd10:0:2::2'
		fi
	} | in_pod nft -f -
}

# Istio's sidecar on a KubeVirt VM (sidecar.istio.io/inject: "true"): KubeVirt
# annotates the pod traffic.sidecar.istio.io/kubevirtInterfaces: k6t-eth0
# (pod/annotations/generator.go:83-88) and switches to the Istio NAT variant;
# istio-init then writes istio/tools/istio-iptables/pkg/capture/run.go's
# rules (testdata kube-virt-interfaces.golden with the sidecar's default
# includeInboundPorts "*": inbound-ports-wildcard.golden), here through
# iptables-nft's own table ip nat.  Envoy is tests/lib/istio_proxy.py, a
# passthrough to SO_ORIGINAL_DST on :15001 (outbound) and :15006 (inbound,
# from 127.0.0.6), as UID 1337; its log is $NET_TMP/istio.log.
#
# launcher_istio tproxy: the same pod with sidecar.istio.io/interceptionMode:
# TPROXY.  Inbound capture moves to table mangle (PREROUTING, priority -150,
# before any NAT): istio-iptables' rules restored with iptables-nft as it
# writes them, tools/istio-iptables/pkg/capture/testdata/
# inbound-ports-wildcard-tproxy.golden:3-21 (IPv4) and tproxy.golden:62-82
# (IPv6, less its test's exclude-interface lines 66-67), from run.go
# handleInboundPortsInclude (:89-156) and its TPROXY tail (:411-447): every
# TCP segment not to the loopback address, on any interface, is handed to
# a transparent socket on :15006 and marked 1337, and the mark is routed to
# lo (tools/common/tproxy/run_linux.go:31-90: `ip rule add fwmark 1337
# lookup 133`, `ip route add local default dev lo table 133`, and ::6/128 on
# lo, :103-124).  Its nat table keeps the outbound and kube-virt-interfaces
# rules of REDIRECT mode, without the inbound ones; the guest's SYN on
# k6t-eth0 meets the mangle rule first all the same (run.go puts no -i
# exception in mangle: shortCircuitKubeInternalInterface, :184-188, writes
# nat's).  The proxy is IP_TRANSPARENT (Istio gives it NET_ADMIN here).
# Restored with iptables-nft (Debian's iptables, nf_tables backend), as
# istio-iptables itself runs on an nftables node: the TPROXY, MARK, CONNMARK
# targets and owner/mark/conntrack matches through nft_compat (Linux 6.18
# here has xt_TPROXY, nft's tproxy and both socket matches built in; Istio's
# rules use none of the socket matches).  Istio's native nftables backend
# writes the same (tools/istio-nftables/pkg/capture/testdata/
# inbound-ports-wildcard-tproxy.golden:29,38: `tproxy ip to :15006`, `mark
# 1337 ... return` first in istio-inbound).
#
# launcher_istio ambient: ambient mode's in-pod capture as istio-cni writes
# it (since Istio 1.25: nat REDIRECT, marks 0x539/0x111) for a pod annotated
# istio.io/reroute-virtual-interfaces: k6t-eth0 (cni/pkg/nodeagent/net.go:47):
# cni/pkg/iptables/testdata/virtual_interfaces.golden (IPv4) and
# virtual_interfaces_ipv6.golden:27-50 (IPv6), with k6t-eth0 for its test's
# two interfaces, and `ip rule add fwmark 0x111/0xfff pref 32764 lookup 100`,
# `local 0.0.0.0/0 dev lo table 100` (cni/pkg/iptables/iptables_linux.go:
# 52-64, :118-133): the guest's TCP on k6t-eth0 to ztunnel's :15001, other
# inbound TCP to :15006, both in nat.
#
# launcher_istio ambient-tproxy: the same capture as istio-cni wrote it with
# TPROXY (Istio 1.21-1.24, the ambient-tproxy-redirection option; 1.25
# removed it, commit 382a07b88f7): cni/pkg/iptables/testdata/tproxy.golden at tag 1.24.0 (IPv4,
# whole) and tproxy_ipv6.golden:32-62 (IPv6): inbound TCP to ztunnel's
# :15006 (and :15008) by TPROXY with mark 0x111/0xfff unless the packet
# carries ztunnel's 0x539/0xfff, routed to lo by `ip rule add fwmark
# 0x111/0xfff pref 32764 lookup 100` and `local 0.0.0.0/0 dev lo table 100`
# (iptables_linux.go:50-62, :118-131 at 1.24.0).  1.24 had no virtual
# interfaces.  No Envoy in either ambient pod, so KubeVirt's plain
# masquerade; the stand-in for ztunnel marks its upstream sockets 0x539.
# shellcheck disable=SC2120 # the mode is optional
launcher_istio() {
	local mode=${1:-redirect} v6=
	if [[ $mode == ambient* ]]; then
		launcher_masquerade || return 1
	else
		launcher_masquerade istio || return 1
	fi
	in_pod ip -6 -o addr show dev eth0 scope global | grep -q inet6 && v6=1
	[[ $mode == ambient* ]] || in_pod nft -f - <<'NFT' || return 1
add chain ip nat PREROUTING { type nat hook prerouting priority -100; }
add chain ip nat OUTPUT { type nat hook output priority -100; }
add chain ip nat ISTIO_INBOUND
add chain ip nat ISTIO_REDIRECT
add chain ip nat ISTIO_IN_REDIRECT
add chain ip nat ISTIO_OUTPUT
add rule ip nat ISTIO_INBOUND tcp dport 15008 counter return
add rule ip nat ISTIO_REDIRECT meta l4proto tcp counter redirect to :15001
add rule ip nat ISTIO_IN_REDIRECT meta l4proto tcp counter redirect to :15006
add rule ip nat OUTPUT counter jump ISTIO_OUTPUT
add rule ip nat ISTIO_OUTPUT oifname lo ip saddr 127.0.0.6 counter return
add rule ip nat ISTIO_OUTPUT oifname lo ip daddr != 127.0.0.1 tcp dport != 15008 meta skuid 1337 counter jump ISTIO_IN_REDIRECT
add rule ip nat ISTIO_OUTPUT oifname lo meta skuid != 1337 counter return
add rule ip nat ISTIO_OUTPUT meta skuid 1337 counter return
add rule ip nat ISTIO_OUTPUT ip daddr 127.0.0.1 counter return
add rule ip nat ISTIO_OUTPUT counter jump ISTIO_REDIRECT
insert rule ip nat PREROUTING iifname k6t-eth0 counter jump ISTIO_REDIRECT
NFT
	local proxy_args=() caps=()
	case $mode in
	redirect)
		in_pod nft -f - <<'NFT' || return 1
add rule ip nat PREROUTING meta l4proto tcp counter jump ISTIO_INBOUND
add rule ip nat ISTIO_INBOUND tcp dport { 15020, 15021, 15090, 22 } counter return
add rule ip nat ISTIO_INBOUND meta l4proto tcp counter jump ISTIO_IN_REDIRECT
NFT
		;;
	tproxy)
		# the excluded ports as in REDIRECT mode, where run.go:119-124 puts them
		in_pod iptables-restore --noflush <<'IPT' || return 1
*mangle
-N ISTIO_DIVERT
-N ISTIO_TPROXY
-N ISTIO_INBOUND
-A ISTIO_DIVERT -j MARK --set-mark 1337
-A ISTIO_DIVERT -j ACCEPT
-A ISTIO_TPROXY ! -d 127.0.0.1/32 -p tcp -j TPROXY --tproxy-mark 1337/0xffffffff --on-port 15006
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A ISTIO_INBOUND -p tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 22 -j RETURN
-A ISTIO_INBOUND -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT
-A ISTIO_INBOUND -p tcp -j ISTIO_TPROXY
-A PREROUTING -p tcp -m mark --mark 1337 -j CONNMARK --save-mark
-A OUTPUT -p tcp -o lo -m mark --mark 1337 -j RETURN
-A OUTPUT ! -d 127.0.0.1/32 -p tcp -o lo -m owner --uid-owner 1337 -j MARK --set-mark 1338
-A OUTPUT ! -d 127.0.0.1/32 -p tcp -o lo -m owner --gid-owner 1337 -j MARK --set-mark 1338
-A OUTPUT -p tcp -m connmark --mark 1337 -j CONNMARK --restore-mark
-I ISTIO_INBOUND 1 -p tcp -m mark --mark 1337 -j RETURN
-I ISTIO_INBOUND 2 -p tcp -s 127.0.0.6/32 -i lo -j RETURN
-I ISTIO_INBOUND 3 -p tcp -i lo -m mark ! --mark 1338 -j RETURN
COMMIT
IPT
		in_pod ip rule add fwmark 1337 lookup 133 || return 1
		in_pod ip route add local 0.0.0.0/0 dev lo table 133 || return 1
		if [[ $v6 ]]; then
			in_pod ip6tables-restore --noflush <<'IPT' || return 1
*mangle
-N ISTIO_DIVERT
-N ISTIO_TPROXY
-N ISTIO_INBOUND
-A ISTIO_DIVERT -j MARK --set-mark 1337
-A ISTIO_DIVERT -j ACCEPT
-A ISTIO_TPROXY ! -d ::1/128 -p tcp -j TPROXY --tproxy-mark 1337/0xffffffff --on-port 15006
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A ISTIO_INBOUND -p tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 22 -j RETURN
-A ISTIO_INBOUND -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT
-A ISTIO_INBOUND -p tcp -j ISTIO_TPROXY
-A PREROUTING -p tcp -m mark --mark 1337 -j CONNMARK --save-mark
-A OUTPUT -p tcp -o lo -m mark --mark 1337 -j RETURN
-A OUTPUT ! -d ::1/128 -p tcp -o lo -m owner --uid-owner 1337 -j MARK --set-mark 1338
-A OUTPUT ! -d ::1/128 -p tcp -o lo -m owner --gid-owner 1337 -j MARK --set-mark 1338
-A OUTPUT -p tcp -m connmark --mark 1337 -j CONNMARK --restore-mark
-I ISTIO_INBOUND 1 -p tcp -m mark --mark 1337 -j RETURN
-I ISTIO_INBOUND 2 -p tcp -s ::6/128 -i lo -j RETURN
-I ISTIO_INBOUND 3 -p tcp -i lo -m mark ! --mark 1338 -j RETURN
COMMIT
IPT
			in_pod ip -6 rule add fwmark 1337 lookup 133 || return 1
			in_pod ip -6 route add local ::/0 dev lo table 133 || return 1
			in_pod ip -6 addr add ::6/128 dev lo || return 1
		fi
		proxy_args=(--transparent)
		;;
	ambient)
		in_pod iptables-restore --noflush <<'IPT' || return 1
*mangle
-N ISTIO_PRERT
-N ISTIO_OUTPUT
-A PREROUTING -j ISTIO_PRERT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_PRERT -m mark --mark 0x539/0xfff -j CONNMARK --set-xmark 0x111/0xfff
-A ISTIO_OUTPUT -m connmark --mark 0x111/0xfff -j CONNMARK --restore-mark --nfmask 0xffffffff --ctmask 0xffffffff
COMMIT
*nat
-N ISTIO_PRERT
-N ISTIO_OUTPUT
-A OUTPUT -j ISTIO_OUTPUT
-A PREROUTING -j ISTIO_PRERT
-A ISTIO_PRERT -i k6t-eth0 -p tcp -j REDIRECT --to-ports 15001
-A ISTIO_PRERT -i k6t-eth0 -p tcp -j RETURN
-A ISTIO_PRERT -s 169.254.7.127 -p tcp -m tcp -j ACCEPT
-A ISTIO_OUTPUT -d 169.254.7.127 -p tcp -m tcp -j ACCEPT
-A ISTIO_PRERT ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m mark ! --mark 0x539/0xfff -j REDIRECT --to-ports 15006
-A ISTIO_OUTPUT -p tcp -m mark --mark 0x111/0xfff -j ACCEPT
-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -o lo -j ACCEPT
-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -p tcp -m mark ! --mark 0x539/0xfff -j REDIRECT --to-ports 15001
COMMIT
IPT
		in_pod ip rule add fwmark 0x111/0xfff pref 32764 lookup 100 || return 1
		in_pod ip route add local 0.0.0.0/0 dev lo table 100 || return 1
		if [[ $v6 ]]; then
			in_pod ip6tables-restore --noflush <<'IPT' || return 1
*mangle
-N ISTIO_PRERT
-N ISTIO_OUTPUT
-A PREROUTING -j ISTIO_PRERT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_PRERT -m mark --mark 0x539/0xfff -j CONNMARK --set-xmark 0x111/0xfff
-A ISTIO_OUTPUT -m connmark --mark 0x111/0xfff -j CONNMARK --restore-mark --nfmask 0xffffffff --ctmask 0xffffffff
COMMIT
*nat
-N ISTIO_PRERT
-N ISTIO_OUTPUT
-A OUTPUT -j ISTIO_OUTPUT
-A PREROUTING -j ISTIO_PRERT
-A ISTIO_PRERT -i k6t-eth0 -p tcp -j REDIRECT --to-ports 15001
-A ISTIO_PRERT -i k6t-eth0 -p tcp -j RETURN
-A ISTIO_PRERT -s e9ac:1e77:90ca:399f:4d6d:ece2:2f9b:3164 -p tcp -m tcp -j ACCEPT
-A ISTIO_OUTPUT -d e9ac:1e77:90ca:399f:4d6d:ece2:2f9b:3164 -p tcp -m tcp -j ACCEPT
-A ISTIO_PRERT ! -d ::1/128 -p tcp ! --dport 15008 -m mark ! --mark 0x539/0xfff -j REDIRECT --to-ports 15006
-A ISTIO_OUTPUT -p tcp -m mark --mark 0x111/0xfff -j ACCEPT
-A ISTIO_OUTPUT ! -d ::1/128 -o lo -j ACCEPT
-A ISTIO_OUTPUT ! -d ::1/128 -p tcp -m mark ! --mark 0x539/0xfff -j REDIRECT --to-ports 15001
COMMIT
IPT
			in_pod ip -6 rule add fwmark 0x111/0xfff pref 32764 lookup 100 || return 1
			in_pod ip -6 route add local ::/0 dev lo table 100 || return 1
		fi
		proxy_args=(--mark 0x539)
		;;
	ambient-tproxy)
		in_pod iptables-restore --noflush <<'IPT' || return 1
*mangle
-N ISTIO_PRERT
-N ISTIO_OUTPUT
-A PREROUTING -j ISTIO_PRERT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_PRERT -m mark --mark 0x539/0xfff -j CONNMARK --set-xmark 0x111/0xfff
-A ISTIO_PRERT -s 169.254.7.127 -p tcp -m tcp -j ACCEPT
-A ISTIO_PRERT ! -d 127.0.0.1/32 -p tcp -i lo -j ACCEPT
-A ISTIO_PRERT -p tcp -m tcp --dport 15008 -m mark ! --mark 0x539/0xfff -j TPROXY --on-port 15008 --tproxy-mark 0x111/0xfff
-A ISTIO_PRERT -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A ISTIO_PRERT ! -d 127.0.0.1/32 -p tcp -m mark ! --mark 0x539/0xfff -j TPROXY --on-port 15006 --tproxy-mark 0x111/0xfff
-A ISTIO_OUTPUT -m connmark --mark 0x111/0xfff -j CONNMARK --restore-mark --nfmask 0xffffffff --ctmask 0xffffffff
COMMIT
*nat
-N ISTIO_OUTPUT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -d 169.254.7.127 -p tcp -m tcp -j ACCEPT
-A ISTIO_OUTPUT ! -o lo -p udp -m mark ! --mark 0x539/0xfff -m udp --dport 53 -j REDIRECT --to-port 15053
-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -p tcp --dport 53 -m mark ! --mark 0x539/0xfff -j REDIRECT --to-ports 15053
-A ISTIO_OUTPUT -p tcp -m mark --mark 0x111/0xfff -j ACCEPT
-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -o lo -j ACCEPT
-A ISTIO_OUTPUT ! -d 127.0.0.1/32 -p tcp -m mark ! --mark 0x539/0xfff -j REDIRECT --to-ports 15001
COMMIT
*raw
-N ISTIO_OUTPUT
-N ISTIO_PRERT
-A PREROUTING -j ISTIO_PRERT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -p udp -m mark --mark 0x539/0xfff -m udp --dport 53 -j CT --zone 1
-A ISTIO_PRERT -p udp -m mark ! --mark 0x539/0xfff -m udp --sport 53 -j CT --zone 1
COMMIT
IPT
		in_pod ip rule add fwmark 0x111/0xfff pref 32764 lookup 100 || return 1
		in_pod ip route add local 0.0.0.0/0 dev lo table 100 || return 1
		if [[ $v6 ]]; then
			in_pod ip6tables-restore --noflush <<'IPT' || return 1
*mangle
-N ISTIO_PRERT
-N ISTIO_OUTPUT
-A PREROUTING -j ISTIO_PRERT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_PRERT -m mark --mark 0x539/0xfff -j CONNMARK --set-xmark 0x111/0xfff
-A ISTIO_PRERT -s e9ac:1e77:90ca:399f:4d6d:ece2:2f9b:3164 -p tcp -m tcp -j ACCEPT
-A ISTIO_PRERT ! -d ::1/128 -p tcp -i lo -j ACCEPT
-A ISTIO_PRERT -p tcp -m tcp --dport 15008 -m mark ! --mark 0x539/0xfff -j TPROXY --on-port 15008 --tproxy-mark 0x111/0xfff
-A ISTIO_PRERT -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A ISTIO_PRERT ! -d ::1/128 -p tcp -m mark ! --mark 0x539/0xfff -j TPROXY --on-port 15006 --tproxy-mark 0x111/0xfff
-A ISTIO_OUTPUT -m connmark --mark 0x111/0xfff -j CONNMARK --restore-mark --nfmask 0xffffffff --ctmask 0xffffffff
COMMIT
*nat
-N ISTIO_OUTPUT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -d e9ac:1e77:90ca:399f:4d6d:ece2:2f9b:3164 -p tcp -m tcp -j ACCEPT
-A ISTIO_OUTPUT ! -o lo -p udp -m mark ! --mark 0x539/0xfff -m udp --dport 53 -j REDIRECT --to-port 15053
-A ISTIO_OUTPUT ! -d ::1/128 -p tcp --dport 53 -m mark ! --mark 0x539/0xfff -j REDIRECT --to-ports 15053
-A ISTIO_OUTPUT -p tcp -m mark --mark 0x111/0xfff -j ACCEPT
-A ISTIO_OUTPUT ! -d ::1/128 -o lo -j ACCEPT
-A ISTIO_OUTPUT ! -d ::1/128 -p tcp -m mark ! --mark 0x539/0xfff -j REDIRECT --to-ports 15001
COMMIT
*raw
-N ISTIO_OUTPUT
-N ISTIO_PRERT
-A PREROUTING -j ISTIO_PRERT
-A OUTPUT -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -p udp -m mark --mark 0x539/0xfff -m udp --dport 53 -j CT --zone 1
-A ISTIO_PRERT -p udp -m mark ! --mark 0x539/0xfff -m udp --sport 53 -j CT --zone 1
COMMIT
IPT
			in_pod ip -6 rule add fwmark 0x111/0xfff pref 32764 lookup 100 || return 1
			in_pod ip -6 route add local ::/0 dev lo table 100 || return 1
		fi
		proxy_args=(--transparent --mark 0x539)
		;;
	*)
		echo "launcher_istio: unknown mode $mode" >&2
		return 1
		;;
	esac
	[[ $mode == redirect ]] || caps=(--inh-caps=+net_admin --ambient-caps=+net_admin)
	: >"$NET_TMP/istio.log"
	# the script is read from a descriptor opened here, as root: UID 1337 may not
	# reach the checkout (a clone under /root, mode 0700, on a fresh machine)
	ip netns exec "$NS_POD" setpriv --reuid=1337 --regid=1337 --clear-groups "${caps[@]}" \
		"$PY" - "${proxy_args[@]}" <"$NETNS_LIB/istio_proxy.py" >>"$NET_TMP/istio.log" 2>&1 &
	BG_PIDS+=($!)
	wait_ready "$NET_TMP/istio.log" istio_proxy
}

# KubeVirt's bridge binding on the pod network (netpod.go
# bridgeBindingSpec, :333-404, in that order: bridge, the renamed pod NIC,
# tap, dummy; then setupLinuxStack's all.arp_ignore=1, :277-279).  Line
# numbers in pkg/network/ here are v1.8.4's (dfaa398f; the same in v1.9.0).
# The guest's MAC is the pod interface's (below): pass $POD_MAC to
# guest_attach for the VM as KubeVirt starts it.
launcher_bridge() {
	_bridged_pod eth0 k6t-eth0 eth0-nic tap0 169.254.75.10/32
}

# _bridged_pod PODIF BRIDGE NIC TAP [FAKEIP]: bridgeBindingSpec and
# managedTapSpec (netpod.go:472-527) share these steps.
# The dummy takes the pod interface's MAC, MTU, IPv4 and IPv6 as the status
# read them (netpod.go:393-401; :355-365 for the fake IP), and that status
# lists every address of the link, its link-local one included
# (driver/nmstate/status.go:88-95, readAddresses :129-142, unfiltered): so
# the dummy holds the pod's fe80:: address and, in dual stack, its global
# one (Calico's /128).  discover.go:58-61 blanks IPv6 only in the copy it
# caches for the VMI's reported IPs.  The guest gets the dummy's MAC, the
# pod's original, unless the VMI sets macAddress (domainspec/
# generators.go:89-95, the pod link being the dummy by then: podnic.go:51-58;
# DHCP the same, discoverbridge.go:48-52; v1.9.0 prefers the VMI status's
# MAC, the source pod's after a migration, :49-57): a guest's EUI-64
# link-local is then the dummy's.  eth0-nic takes the bridge's MAC
# (CopyMacFrom, netpod.go:371; nmstate/spec.go:50-59), never the pod's.
_bridged_pod() {
	local podif=$1 br=$2 nic=$3 tap=$4 fake=${5:-} mtu mac ips=() ips6=()
	mtu=$(pod_mtu "$podif") || return 1
	mac=$(pod_mac "$podif")
	mapfile -t ips < <(in_pod ip -4 -o addr show dev "$podif" | awk '{print $4}')
	mapfile -t ips6 < <(in_pod ip -6 -o addr show dev "$podif" | awk '{print $4}')
	ip -n "$NS_POD" link add "$br" type bridge || return 1
	[[ $fake ]] && ip -n "$NS_POD" addr add "$fake" dev "$br"
	ip -n "$NS_POD" link set "$br" up
	# The CNI's link: down, renamed, the bridge's MAC (CopyMacFrom), master,
	# every address deleted, up, port learning off (spec.go:163-227).
	ip -n "$NS_POD" link set "$podif" down
	ip -n "$NS_POD" link set "$podif" name "$nic"
	ip -n "$NS_POD" link set "$nic" address "$(pod_mac "$br")" master "$br"
	ip -n "$NS_POD" addr flush dev "$nic"
	ip -n "$NS_POD" link set "$nic" up
	in_pod bridge link set dev "$nic" learning off
	tap_add "$tap" "$br" "$mtu" || return 1
	# The pod keeps its MAC, IPv4 and IPv6 on a dummy named as the CNI's link was.
	dummy_add "$podif" "$mac" "$mtu" || return 1
	local ip
	for ip in "${ips[@]}"; do ip -n "$NS_POD" addr add "$ip" dev "$podif"; done
	for ip in "${ips6[@]}"; do ip -n "$NS_POD" -6 addr add "$ip" dev "$podif" || return 1; done
	[[ $fake || ${#ips[@]} -gt 0 ]] && in_pod sysctl -qw net.ipv4.conf.all.arp_ignore=1
	return 0
}

# A managedTap binding plugin (since v1.4; netpod.go:310-320, :472-527) on
# an OVN-Kubernetes primary user-defined network: the pod keeps eth0 (the
# cluster's default network, unused by the VM) and gets ovn-udn1 from the
# UDN (10.128.0.5/24 via 10.128.0.1, the node standing in for OVN's
# router); KubeVirt builds k6t-ovn-udn1, ovn-udn1-nic, tap0 and a dummy
# ovn-udn1 with the UDN address: no fake IP, no KubeVirt DHCP (OVN gives it).
UDN_IP=10.128.0.5 UDN_GW=10.128.0.1
launcher_managedtap() {
	ip -n "$NS_NODE" link add udn0 type veth peer name ovn-udn1 netns "$NS_POD" || return 1
	ip -n "$NS_NODE" addr add "$UDN_GW/24" dev udn0
	ip -n "$NS_NODE" link set udn0 up
	ip -n "$NS_POD" link set ovn-udn1 address 0a:58:0a:80:00:05
	ip -n "$NS_POD" addr add "$UDN_IP/24" dev ovn-udn1
	ip -n "$NS_POD" link set ovn-udn1 up
	_bridged_pod ovn-udn1 k6t-ovn-udn1 ovn-udn1-nic tap0
}

# KubeVirt's pod interface name for a Multus network: "pod" and 11 hex
# digits of sha256(network name) (namescheme/networknamescheme.go
# GenerateHashedInterfaceName); the tap is "tap" + the rest
# (link/names.go GenerateTapDeviceName), the bridge "k6t-" + the rest.
multus_hash() { printf %s "$1" | sha256sum | cut -c1-11; }

# The pod network with masquerade (interface 0) and a Multus network with
# bridge binding (interface 1), set up in that order as netpod.go does.
# The bridge CNI's NAD: its pod link joins br-<net> in the node netns, an
# L2 shared with NS_L2 (another host, 192.168.70.9/24).  Usually IPAM is
# empty (kubevirt-network.md 2.2): no address, no fake IP, no DHCP.
# MULTUS_ORDINAL=N: the pod of a VMI from before KubeVirt's hashed names
# (or its migration target, pkg/network/pod/annotations/generator.go:93-113):
# the pod interface is net<N> (namescheme/networknamescheme.go:111-123, N
# the network's place among the secondary Multus networks, from 1), and
# from it k6t-net<N>, net<N>-nic and tap<N> (link/names.go:34-50;
# netpod.go:645-664 picks that scheme when the pod has a net<N> link).
NS_L2=$NS_TAG-l2
launcher_multus_bridge() {
	local net=$1 h podif
	h=$(multus_hash "$net")
	podif=pod$h
	[[ ${MULTUS_ORDINAL:-} ]] && h=net$MULTUS_ORDINAL podif=net$MULTUS_ORDINAL
	launcher_masquerade || return 1
	ip -n "$NS_NODE" link add br-l2 type bridge && ip -n "$NS_NODE" link set br-l2 up
	ip -n "$NS_NODE" link add "l2$h" type veth peer name "$podif" netns "$NS_POD" || return 1
	ip -n "$NS_NODE" link set "l2$h" master br-l2 up
	ip -n "$NS_POD" link set "$podif" up
	ns_new "$NS_L2" || return 1
	ip -n "$NS_NODE" link add l2host type veth peer name eth0 netns "$NS_L2"
	ip -n "$NS_NODE" link set l2host master br-l2 up
	ip -n "$NS_L2" link set eth0 address 52:54:00:aa:bb:cc up
	ip -n "$NS_L2" addr add 192.168.70.9/24 dev eth0
	if [[ ${MULTUS_ORDINAL:-} ]]; then
		_bridged_pod "$podif" "k6t-$podif" "$podif-nic" "tap$MULTUS_ORDINAL"
	else
		_bridged_pod "$podif" "k6t-$h" "$h-nic" "tap$h"
	fi
}

# passt, core binding or plugin (netpod.go:305-307; the plugin's CNI,
# cmd/cniplugins/passt-binding/pkg/plugin/plugin.go:80-88): only two sysctls.
# Nothing else: passt itself runs in the pod (launched by libvirt).
launcher_passt() {
	in_pod sysctl -qw net.ipv4.ping_group_range='107 107' net.ipv4.ip_unprivileged_port_start=0
}

# pasta_start [TCP UDP]: passt as libvirt runs it for the pod network, as
# pasta (the same code; its guest NS_VM, a netns, where qemu's is a VM), in
# the pod; PASTA_PID, its log $NET_TMP/pasta.log; the guest's eth0 up with
# the pod's addresses and routes as passt's DHCP gives them.  With no
# `ports` on the VMI, KubeVirt's domain has a tcp and a udp <portForward>
# without ranges (pkg/virt-launcher/virtwrap/converter/network/passt.go:68-75
# at v1.9's d923fdb8; the plugin: cmd/sidecars/network-passt-binding/domain/
# configurator.go:228-235) and libvirt runs `passt --tcp-ports all
# --udp-ports all` (src/qemu/qemu_passt.c:294-295 at a8262cb3; --vhost-user
# at :210-211, which Debian 12's passt lacks).  pasta refuses "all" ("'all'
# port forwarding is only allowed for passt": conf.c in 7c7625d and since),
# so TCP and UDP default to PASST_ALL: what "all" binds, on the wildcard
# address, in either passt: every port below the ephemeral ones, which are
# >= 49152 in Debian 12's (0.0~git20230309.7c7625d: conf.c conf_ports,
# util.h PORT_EPHEMERAL_MIN) and ip_local_port_range (32768-60999) in
# passt since 2024 (fwd.c fwd_probe_ephemeral; "all" then takes
# 61000-65535 too).  A VMI with `ports: [80]` gets `--tcp-ports 80`: TCP 80.
# Every port is a socket or two per protocol (~110k in all): passt exits
# "Can't open enough sockets" at RLIMIT_NOFILE (conf.c, its enfile label).
# Where the hard limit is lower and cannot be raised (no CAP_SYS_RESOURCE),
# the well-known and registered ports up to 4096 and both edges of the
# ephemeral ranges stand in for "all": the ports the sidecar could meet.
PASST_ALL_FULL=1-49151,61000-65535
PASST_ALL=$PASST_ALL_FULL
PASST_NOFILE=1048576
if ! prlimit --nofile=$PASST_NOFILE:$PASST_NOFILE true 2>/dev/null; then
	PASST_NOFILE=$(ulimit -Hn)
	PASST_ALL=1-4096,32700-32767,49100-49151,61000-61100
fi
PASTA_PID=
pasta_start() {
	local tcp=${1:-$PASST_ALL} udp=${2:-$PASST_ALL} args
	args=(-t "$tcp")
	[[ $udp == none ]] || args+=(-u "$udp")
	ip netns exec "$NS_POD" prlimit --nofile="$PASST_NOFILE:$PASST_NOFILE" \
		pasta --runas 0 --config-net -f -I eth0 "${args[@]}" \
		--netns "/run/netns/$NS_VM" >"$NET_TMP/pasta.log" 2>&1 &
	PASTA_PID=$!
	BG_PIDS+=($!)
	for _ in $(seq 300); do ip -n "$NS_VM" -4 addr show dev eth0 2>/dev/null | grep -q inet && break; sleep 0.02; done
	ip -n "$NS_VM" route add "$POD_GW" dev eth0 scope link 2>/dev/null
	ip -n "$NS_VM" route add default via "$POD_GW" 2>/dev/null
	ip -n "$NS_VM" -4 -o addr show dev eth0 2>/dev/null | grep -q "$POD_IP"
}

# pasta_stop: passt killed (as libvirt does when the VM stops), its tap gone.
pasta_stop() {
	[[ -n $PASTA_PID ]] || return 0
	kill "$PASTA_PID" 2>/dev/null
	wait "$PASTA_PID" 2>/dev/null
	PASTA_PID=
	for _ in $(seq 200); do ip -n "$NS_VM" link show eth0 >/dev/null 2>&1 || break; sleep 0.01; done
}

# A macvtap binding plugin (domainAttachmentType: tap): the CNI moves a
# macvtap of the node's NIC into the pod as pod<hash>; KubeVirt adds nothing
# (netpod.go:310-320; domainspec/generators.go:109-118).
launcher_macvtap() {
	local net=$1 h
	h=$(multus_hash "$net")
	ip -n "$NS_NODE" link add phys0 type veth peer name phys1
	ip -n "$NS_NODE" link set phys0 up
	ip -n "$NS_NODE" link add link phys0 name "mvt$h" type macvtap mode bridge || return 1
	ip -n "$NS_NODE" link set "mvt$h" netns "$NS_POD"
	ip -n "$NS_POD" link set "mvt$h" name "pod$h"
	ip -n "$NS_POD" link set "pod$h" up
}

# SR-IOV: the VF goes to the guest as a PCI device; nothing in the pod netns
# (netpod.go:309, :674-676).
launcher_sriov() { :; }

# guest_attach NS TAP MODE [MAC] [ADDR]: the VM.  tapwire holds the pod's
# tap, as qemu would, and moves frames to the guest netns's eth0 (GUEST_IF
# names another, for a VM's second NIC).  TAPWIRE_NEXT=(POD TAP ...): the
# migration targets, each SIGUSR1 to TAPWIRE_PID moves the VM to the next
# (its output file then says "switched N").  MODE:
#   masquerade  10.0.2.2/24 via 10.0.2.1 (KubeVirt's DHCP: dhcp/masquerade.go)
#   bridge      the pod IP /32, 169.254.1.1 on-link, default via it (KubeVirt's
#               DHCP for bridge binding: the pod IP and option 121 with every
#               eth0 route, discoverbridge.go:37-85)
#   bridge-ll   bridge plus 169.254.0.0/16 dev eth0 (an old ZEROCONF route)
#   udn         the UDN address /24 via its gateway (OVN's DHCP)
#   linklocal   only 169.254.10.20/16 (or ADDR/16), no gateway
#   masquerade6 IPv6 only: fd10:0:2::2/120 (GUEST_ADDR6 another) via fd10:0:2::1 (as KubeVirt's tests
#               configure it); dual: masquerade and masquerade6
#   bridge6     IPv6 only, an address of its own on the pod network
#               (fd00:10:244:1::77/128) via the node's fe80::ecee:eeff:feee:eeee
#   bridge-dual bridge plus the pod's own IPv6, $POD_IP6/128 via the node's
#               link-local: bridge binding has no DHCPv6 (discover.go:58),
#               so a guest has it from its own configuration (cloud-init's
#               network data), as a dual-stack VM on the pod's addresses
#   ll6         IPv6 link-local only (the kernel's, from the MAC)
#   none        no address
guest_attach() {
	local ns=$1 tap=$2 mode=$3 mac=${4:-52:54:00:12:34:56} addr=${5:-} mtu i
	local eth=${GUEST_IF:-eth0}
	[[ " ${NS_ALL[*]} " == *" $ns "* ]] || ns_new "$ns" || return 1
	mtu=$(pod_mtu "$tap") || return 1
	: >"$NET_TMP/tapwire-$ns-$tap.out"
	"$TAPWIRE" "$NS_POD" "$tap" "$ns" "$eth" "${TAPWIRE_NEXT[@]}" >"$NET_TMP/tapwire-$ns-$tap.out" 2>&1 &
	# shellcheck disable=SC2034 # read by the suites
	TAPWIRE_PID=$!
	BG_PIDS+=($!)
	for ((i = 0; i < 300; i++)); do
		grep -q '^ready' "$NET_TMP/tapwire-$ns-$tap.out" && break
		sleep 0.01
	done
	grep -q '^ready' "$NET_TMP/tapwire-$ns-$tap.out" || {
		echo "tapwire: $(cat "$NET_TMP/tapwire-$ns-$tap.out")" >&2
		return 1
	}
	ip -n "$ns" link set "$eth" address "$mac" mtu "$mtu" up
	case $mode in
	masquerade)
		ip -n "$ns" addr add "${addr:-10.0.2.2}/24" dev "$eth"
		ip -n "$ns" route add default via 10.0.2.1
		;;
	bridge | bridge-ll)
		ip -n "$ns" addr add "${addr:-$POD_IP}/32" dev "$eth"
		ip -n "$ns" route add "$POD_GW" dev "$eth" scope link
		ip -n "$ns" route add default via "$POD_GW"
		[[ $mode != bridge-ll ]] || ip -n "$ns" route add 169.254.0.0/16 dev "$eth" scope link metric 1000
		;;
	udn)
		ip -n "$ns" addr add "${addr:-$UDN_IP}/24" dev "$eth"
		ip -n "$ns" route add default via "$UDN_GW"
		;;
	linklocal)
		ip -n "$ns" addr add "${addr:-169.254.10.20}/16" dev "$eth"
		;;
	masquerade6 | dual)
		if [[ $mode == dual ]]; then
			ip -n "$ns" addr add "${addr:-10.0.2.2}/24" dev "$eth"
			ip -n "$ns" route add default via 10.0.2.1
		fi
		ip -n "$ns" -6 addr add "${GUEST_ADDR6:-fd10:0:2::2}/120" dev "$eth" nodad
		ip -n "$ns" -6 route add default via fd10:0:2::1
		;;
	bridge6)
		ip -n "$ns" -6 addr add fd00:10:244:1::77/128 dev "$eth" nodad
		ip -n "$ns" -6 route add default via "$POD_GW6" dev "$eth"
		;;
	bridge-dual)
		ip -n "$ns" addr add "${addr:-$POD_IP}/32" dev "$eth"
		ip -n "$ns" route add "$POD_GW" dev "$eth" scope link
		ip -n "$ns" route add default via "$POD_GW"
		ip -n "$ns" -6 addr add "$POD_IP6/128" dev "$eth" nodad
		ip -n "$ns" -6 route add default via "$POD_GW6" dev "$eth"
		;;
	ll6 | none) ;;
	*)
		echo "guest_attach: unknown mode $mode" >&2
		return 1
		;;
	esac
}

# Identity and data for the server, as the webhook would mount them.
imds_data() {
	mkdir -p "$NET_TMP/data" "$NET_TMP/tokens"
	printf '%s' "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjQxMDI0NDQ4MDB9.c2ln" >"$NET_TMP/tokens/token"
	printf '#cloud-config\nhostname: netvm\n' >"$NET_TMP/data/user-data"
}

# shellcheck disable=SC2120 # arguments are optional
imds_start() {
	imds_data
	# One log per start; earlier ones are kept for imds_log_clean.
	[[ -s "$IMDS_LOG" ]] && cat "$IMDS_LOG" >>"$NET_TMP/earlier.log"
	: >"$IMDS_LOG"
	if [[ $IMDS_NET_MODE_TEST == agent ]]; then
		imds_start_agent "$@"
		return
	fi
	ip netns exec "$NS_POD" env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm \
		IMDS_POD_NAME=virt-launcher-netvm-abcde IMDS_SA_NAME=default \
		IMDS_TOKEN_PATH="$NET_TMP/tokens/token" \
		IMDS_USER_DATA_FILE="$NET_TMP/data/user-data" "$@" \
		"${IMDS_WRAP[@]}" "$IMDS_SERVER" run >>"$IMDS_LOG" 2>&1 &
	IMDS_PID=$!
}

# The pod's UID in agent mode: one per launcher netns (a UUID from its name),
# so a suite that builds pod after pod gives the agent one pod each.
imds_pod_uid() {
	local h
	h=$(printf "%s" "$NS_POD" | md5sum)
	echo "${h:0:8}-${h:8:4}-${h:12:4}-${h:16:4}-${h:20:12}"
}

# imds_start in agent mode: podfolder.sh's sidecar_exec (the pod's
# cgroup, its imds-node folder, UID 107 with no capability, IMDS_NET_MODE=
# agent) with the suite's identity and VAR=value...; the suite's imds-node is
# started on the first start, appending to IMDS_LOG (O_APPEND: each start's
# truncation starts its lines over with the sidecar's).
imds_start_agent() {
	local uid
	uid=$(imds_pod_uid)
	# the pod's folder and cgroup before the agent starts, as the kubelet's
	pod_folder "$uid" >/dev/null && pod_cgroup "$uid" >/dev/null || return 1
	chmod -R a+rX "$NET_TMP/data" "$NET_TMP/tokens"
	if [[ -z $AGENT_PID ]]; then
		agent_start "$IMDS_LOG" --metrics-addr 127.0.0.1:0 || return 1
		wait_for_line "$IMDS_LOG" 'health and metrics on 127\.0\.0\.1:[0-9]+ ' 5 || return 1
		AGENT_MPORT=$(sed -nE 's/.*health and metrics on 127\.0\.0\.1:([0-9]+) .*/\1/p' "$IMDS_LOG" | tail -1)
	fi
	sidecar_exec "$uid" "$NS_POD" "$IMDS_LOG" IMDS_NAMESPACE=default IMDS_VM_NAME=netvm \
		IMDS_POD_NAME=virt-launcher-netvm-abcde IMDS_SA_NAME=default \
		IMDS_TOKEN_PATH="$NET_TMP/tokens/token" \
		IMDS_USER_DATA_FILE="$NET_TMP/data/user-data" "$@" -- "${IMDS_WRAP[@]}" "$IMDS_SERVER" run || return 1
	IMDS_PID=$SIDECAR_PID
}

# agent_metric NAME: the value of sample NAME on the suite's imds-node's
# /metrics now (agent mode: imds_start_agent starts it with --metrics-addr),
# or nothing.
agent_metric() {
	curl -s --noproxy '*' --max-time 2 "http://127.0.0.1:${AGENT_MPORT:-1}/metrics" |
		awk -v k="$1" '$1 == k {print $2}'
}

# imds_wait_serving [N] [TIMEOUT_S]: until the log has N "net: serving" lines.
# Agent mode: N of the agent's "pod <UID>: serving" lines (said, as pod mode's,
# when the pod turns servable: its taps steered) and the sidecar's line that it
# serves on the agent's listeners (which it says once they are passed, taps
# or not), then imds_as_cluster.
imds_wait_serving() {
	local want=${1:-1} t=${2:-10} i re='net: serving'
	[[ $IMDS_NET_MODE_TEST == agent ]] && re='imds-node info: pod [^ ]*: serving '
	for ((i = 0; i < t * 100; i++)); do
		if (($(grep -cE "$re" "$IMDS_LOG") >= want)); then
			[[ $IMDS_NET_MODE_TEST == agent ]] || return 0
			wait_for_line "$IMDS_LOG" 'net: serving .* from the node agent' 2 && imds_as_cluster
			return
		fi
		kill -0 "$IMDS_PID" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# imds_as_cluster: in agent mode, the sidecar serves on the agent's listeners,
# as UID 107 with no capability at all (CapEff, CapPrm, CapBnd in /proc); else
# says what differs (in IMDS_LOG, which the suites show) and fails.
imds_as_cluster() {
	local caps u
	caps=$(caps_of "$IMDS_PID" 2>/dev/null)
	u=$(awk '/^Uid/ {print $2, $3, $4, $5}' "/proc/$IMDS_PID/status" 2>/dev/null)
	if [[ $caps == "0000000000000000 0000000000000000 0000000000000000" && $u == "107 107 107 107" ]] &&
		grep -q 'net: serving .* from the node agent' "$IMDS_LOG"; then
		return 0
	fi
	echo "netns.sh: not as the cluster runs it: Uid $u, CapEff CapPrm CapBnd $caps, $(grep -c 'from the node agent' "$IMDS_LOG") line(s) from the node agent" >>"$IMDS_LOG"
	return 1
}

# Sets IMDS_STATUS to the server's exit status (read by the suites).
# shellcheck disable=SC2034
imds_stop() {
	[[ -n "$IMDS_PID" ]] || return 0
	kill -TERM "$IMDS_PID" 2>/dev/null
	IMDS_STATUS=0
	wait "$IMDS_PID" || IMDS_STATUS=$?
	IMDS_PID=
}

# shellcheck disable=SC2120 # the line count is optional
imds_log_tail() {
	tail -n "${1:-20}" "$IMDS_LOG" | sed 's/^/#   /'
}

# Sanitizer reports in the server log fail the suite.  In agent mode the
# agent is stopped first (SIGTERM: what it reports at exit, LeakSanitizer's,
# is in the log then) and must have exited 0.
imds_log_clean() {
	if [[ $IMDS_NET_MODE_TEST == agent && -n $AGENT_PID ]]; then
		local st=0
		kill -TERM "$AGENT_PID" 2>/dev/null
		wait "$AGENT_PID" || st=$?
		AGENT_PID=
		if ((st != 0)); then
			echo "imds-node exited $st" >>"$IMDS_LOG"
			return 1
		fi
	fi
	! cat "$NET_TMP/earlier.log" "$IMDS_LOG" 2>/dev/null |
		grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|imds-node exited'
}

# guest_get NS PATH [curl args...]: one HTTP GET to 169.254.169.254 from a guest.
guest_get() {
	local ns=$1 path=$2
	shift 2
	ip netns exec "$ns" curl -sS --max-time "${GUEST_TIMEOUT:-3}" "$@" \
		"http://169.254.169.254$path"
}

# count_plumbing: the sidecar's plumbing in the pod, as counts: veth-imds
# links (2: the pair), 169.254.169.254/32 addresses, the policy rule, table
# 169254's route, our nf_tables tables (ip, ip6, bridge, and netdev when it steers
# taps).
count_plumbing() {
	echo "$(in_pod ip -o link show | grep -c 'veth-imds') \
$(in_pod ip -4 -o addr show | grep -c '169\.254\.169\.254/32') \
$(in_pod ip -4 rule show | grep -c 'from 169\.254\.169\.254 lookup 169254') \
$(in_pod ip -4 route show table 169254 | grep -c '^default dev veth-imds') \
$(in_pod nft list tables | grep -c kubevirt_imds)"
}

# pod_refused [UID]: a process of the pod (as UID, default root) asks for
# .254; succeeds when it was refused at once (curl could not connect, exit 7,
# within 1 s), not left to time out and not answered.  Echoes what happened.
# shellcheck disable=SC2120 # the UID is optional
pod_refused() {
	local u=${1:-0} t0 out st ms
	t0=$(now_ms)
	out=$(ip netns exec "$NS_POD" setpriv --reuid="$u" --regid="$u" --clear-groups \
		curl -sS -o /dev/null --max-time 3 http://169.254.169.254/healthz 2>&1)
	st=$?
	ms=$(($(now_ms) - t0))
	echo "curl exit $st after $ms ms: ${out:-answered}"
	[[ $st == 7 ]] && ((ms < 1000))
}

# cloudinit_fetch NS: Debian's cloud-init NoCloudNet get_data() from the guest.
cloudinit_fetch() {
	ip netns exec "$1" "$PY" "$REPO/tests/lib/cloudinit_client.py" \
		--serial 'ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net' --mode datasource
}

# wait_ready FILE WHAT: until a helper started in the background says "ready"
# in FILE (4 s at most), else says that WHAT did not start, with FILE.
wait_ready() {
	local i
	for ((i = 0; i < 200; i++)); do grep -qs '^ready' "$1" && return 0; sleep 0.02; done
	echo "$2 did not start: $(cat "$1" 2>&1)" >&2
	return 1
}

# node_capture_start [IF...]: tcpdump in the node netns, on every link the
# pod can reach the node by (default cali0), for anything to or from
# 169.254.169.254 (IPv4 or ARP); node_capture_count stops it and prints how
# many packets it saw.  --immediate-mode: without it the packet socket hands
# tcpdump its packets a block at a time (TPACKET_V3, a 1 s block timeout),
# and those of the last second before SIGINT were counted by the filter but
# never written (net_dns: "37 packets received by filter", 0 captured).
# shellcheck disable=SC2120 # the interfaces are optional
node_capture_start() {
	local ifs=("${@:-cali0}") i f
	NODE_CAPS=()
	for f in "${ifs[@]}"; do
		: >"$NET_TMP/$NS_NODE-$f.err"
		ip netns exec "$NS_NODE" tcpdump -n -l -U --immediate-mode -i "$f" -w "$NET_TMP/$NS_NODE-$f.pcap" \
			'host 169.254.169.254 or (arp and arp[24:4] = 0xa9fea9fe) or host fd00:ec2::254 or host fe80::a9fe:a9fe or (icmp6 and ip6[40] = 135 and (ip6[60:4] = 0x254 or ip6[60:4] = 0xa9fea9fe))' \
			2>"$NET_TMP/$NS_NODE-$f.err" &
		NODE_CAPS+=($!)
		BG_PIDS+=($!)
		for ((i = 0; i < 300; i++)); do
			grep -q 'listening on' "$NET_TMP/$NS_NODE-$f.err" && break
			sleep 0.01
		done
	done
	NODE_CAP_IFS=("${ifs[@]}")
}
# node_capture_count [FILTER]: FILTER (pcap) counts only the packets it
# matches, e.g. the pod's own frames where the node itself talked to the pod.
node_capture_count() {
	local p f n=0 c
	sleep 0.2 # what is in flight reaches the capture
	for p in "${NODE_CAPS[@]}"; do kill -INT "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	for f in "${NODE_CAP_IFS[@]}"; do
		c=$(tcpdump -n -r "$NET_TMP/$NS_NODE-$f.pcap" ${1:+"$1"} 2>/dev/null | wc -l)
		n=$((n + c))
	done
	echo "$n"
}
# node_capture_check WHAT [FILTER]: node_capture_count [FILTER] as a TAP
# line, ok at 0 packets, else not ok with the first of them.
node_capture_check() {
	local n
	n=$(node_capture_count "${2:-}")
	if [[ $n == 0 ]]; then
		ok "the node's side captured no packet for 169.254.169.254, fd00:ec2::254 or fe80::a9fe:a9fe $1 (0 packets)"
	else
		not_ok "the node's side captured no packet for 169.254.169.254, fd00:ec2::254 or fe80::a9fe:a9fe $1" \
			"$n packets" "$(node_capture_show)"
	fi
}
node_capture_show() {
	local f
	for f in "${NODE_CAP_IFS[@]}"; do tcpdump -n -r "$NET_TMP/$NS_NODE-$f.pcap" 2>/dev/null | head -n 5; done
}
# node_capture_file [IF]: the capture's file (after node_capture_count)
node_capture_file() { echo "$NET_TMP/$NS_NODE-${1:-cali0}.pcap"; }

sysctl_pod() { in_pod cat "/proc/sys/net/ipv4/conf/$1"; }

# wait_for_line FILE REGEX [TIMEOUT_S]: until FILE has a line matching REGEX.
wait_for_line() {
	local f=$1 re=$2 t=${3:-10} i
	for ((i = 0; i < t * 50; i++)); do
		grep -qE "$re" "$f" 2>/dev/null && return 0
		sleep 0.02
	done
	return 1
}

now_ms() { date +%s%3N; }

# Agent mode: the pods folder, the pods' cgroups and imds-node (a suite that
# sources podfolder.sh itself gets it once).
if [[ $IMDS_NET_MODE_TEST == agent ]]; then
	# shellcheck source=podfolder.sh
	. "$NETNS_LIB/podfolder.sh"
fi
