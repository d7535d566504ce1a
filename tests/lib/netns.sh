# netns.sh — network-namespace topologies for the sidecar's network tests
# (sourced; needs root).  Every namespace is uniquely named and deleted on
# EXIT, even when the test fails or is interrupted.
#
#   node netns  ── cali0 ═══ eth0 ── pod netns ── k6t-eth0 (bridge) ── tap0 ═══ eth0 ── vm netns
#   (Calico-like host side:           (the virt-launcher pod:                     (the guest)
#    proxy ARP for 169.254.1.1)        default via 169.254.1.1)
#
#   ns_setup                 creates NS_NODE, NS_POD, NS_VM (names in those vars)
#   pod_eth0                 the pod's eth0 to the node, Calico-style
#   pod_bridge [MTU]         k6t-eth0 with 10.0.2.1/24 (masquerade gateway)
#   vm_attach NS MODE [MAC] [PORT]  a "guest" netns on the bridge through port PORT
#                            (default tap0: the tap KubeVirt would create);
#                            MODE masquerade (10.0.2.2/24 via 10.0.2.1) or
#                            linklocal (169.254.10.20/16, no gateway)
#   imds_start [VAR=value...]  imds-server run in the pod; IMDS_PID, IMDS_LOG
#   imds_wait_serving [N]    until the Nth "net: serving" line (default 1)
#   imds_stop                SIGTERM and wait
#   in_pod/in_vm/in_node CMD...
# shellcheck shell=bash

NETNS_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=${REPO:-$(cd "$NETNS_LIB/../.." && pwd)}
IMDS_SERVER=${IMDS_SERVER:-$REPO/build/debug/imds-server}
PY=/usr/bin/python3
NS_TAG=imds$$r$RANDOM
NS_NODE=$NS_TAG-node
NS_POD=$NS_TAG-pod
NS_VM=$NS_TAG-vm
NS_ALL=()
IMDS_PID=
IMDS_WRAP=() # e.g. (capsh ... --) to run the server under a wrapper
NET_TMP=$(mktemp -d "${IMDS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/imds-net.XXXXXX")
IMDS_LOG=$NET_TMP/imds.log
export IMDS_SERVER REPO PY

netns_cleanup() {
	local ns
	if [[ -n "$IMDS_PID" ]]; then
		kill -KILL "$IMDS_PID" 2>/dev/null
		wait "$IMDS_PID" 2>/dev/null
	fi
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

# The pod's eth0 as Calico builds it: a /32 address, the gateway
# 169.254.1.1 reached on-link, and the node answering ARP for it by proxy.
pod_eth0() {
	ip -n "$NS_NODE" link add cali0 type veth peer name eth0 netns "$NS_POD" || return 1
	ip -n "$NS_NODE" link set cali0 up
	ip -n "$NS_NODE" addr add 192.168.100.1/32 dev lo
	ip -n "$NS_NODE" route add 10.244.1.5/32 dev cali0
	# Proxy ARP answers only for targets the node would forward elsewhere:
	# a default route out of a dummy "uplink", and forwarding on.
	ip -n "$NS_NODE" link add uplink0 type veth peer name uplink1
	ip -n "$NS_NODE" link set uplink1 up
	ip -n "$NS_NODE" link set uplink0 up
	ip -n "$NS_NODE" route add default dev uplink0
	in_node sh -c 'echo 1 > /proc/sys/net/ipv4/conf/all/forwarding &&
		echo 1 > /proc/sys/net/ipv4/conf/cali0/proxy_arp'
	ip -n "$NS_POD" addr add 10.244.1.5/32 dev eth0
	ip -n "$NS_POD" link set eth0 up
	ip -n "$NS_POD" route add 169.254.1.1 dev eth0 scope link
	ip -n "$NS_POD" route add default via 169.254.1.1 dev eth0
}

pod_bridge() {
	local mtu=${1:-1400}
	ip -n "$NS_POD" link add k6t-eth0 type bridge || return 1
	ip -n "$NS_POD" link set k6t-eth0 mtu "$mtu"
	ip -n "$NS_POD" addr add 10.0.2.1/24 dev k6t-eth0
	ip -n "$NS_POD" link set k6t-eth0 up
}

# vm_attach NS MODE [MAC] [PORT] [IP]
vm_attach() {
	local ns=$1 mode=$2 mac=${3:-52:54:00:12:34:56} port=${4:-tap0} addr=${5:-}
	[[ " ${NS_ALL[*]} " == *" $ns "* ]] || ns_new "$ns" || return 1
	ip -n "$NS_POD" link add "$port" type veth peer name eth0 netns "$ns" || return 1
	local mtu
	mtu=$(ip -n "$NS_POD" -o link show k6t-eth0 | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
	ip -n "$NS_POD" link set "$port" mtu "${mtu:-1400}" master k6t-eth0 up
	ip -n "$ns" link set eth0 address "$mac" mtu "${mtu:-1400}" up
	case $mode in
	masquerade)
		ip -n "$ns" addr add "${addr:-10.0.2.2}/24" dev eth0
		ip -n "$ns" route add default via 10.0.2.1
		;;
	linklocal)
		ip -n "$ns" addr add "${addr:-169.254.10.20}/16" dev eth0
		;;
	*)
		echo "vm_attach: unknown mode $mode" >&2
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
	ip netns exec "$NS_POD" env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm \
		IMDS_POD_NAME=virt-launcher-netvm-abcde IMDS_SA_NAME=default \
		IMDS_TOKEN_PATH="$NET_TMP/tokens/token" \
		IMDS_USER_DATA_FILE="$NET_TMP/data/user-data" "$@" \
		"${IMDS_WRAP[@]}" "$IMDS_SERVER" run >>"$IMDS_LOG" 2>&1 &
	IMDS_PID=$!
}

# imds_wait_serving [N] [TIMEOUT_S]: until the log has N "net: serving" lines.
imds_wait_serving() {
	local want=${1:-1} t=${2:-10} i
	for ((i = 0; i < t * 100; i++)); do
		(($(grep -c 'net: serving' "$IMDS_LOG") >= want)) && return 0
		kill -0 "$IMDS_PID" 2>/dev/null || return 1
		sleep 0.01
	done
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

# Sanitizer reports in the server log fail the suite.
imds_log_clean() {
	! cat "$NET_TMP/earlier.log" "$IMDS_LOG" 2>/dev/null |
		grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:'
}

# guest_get NS PATH [curl args...]: one HTTP GET to 169.254.169.254 from a guest.
guest_get() {
	local ns=$1 path=$2
	shift 2
	ip netns exec "$ns" curl -sS --max-time "${GUEST_TIMEOUT:-3}" "$@" \
		"http://169.254.169.254$path"
}

# cloudinit_fetch NS: Debian's cloud-init NoCloudNet get_data() from the guest.
cloudinit_fetch() {
	ip netns exec "$1" "$PY" "$REPO/tests/lib/cloudinit_client.py" \
		--serial 'ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net' --mode datasource
}

sysctl_pod() { in_pod cat "/proc/sys/net/ipv4/conf/$1"; }

now_ms() { date +%s%3N; }
