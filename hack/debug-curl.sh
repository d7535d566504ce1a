#!/usr/bin/env bash
# hack/debug-curl.sh — ask a launcher pod's sidecar what its VM would get,
# the way the VM asks: frames steered to veth-imds from a port of the pod,
# not a connection from a process of the pod (which the sidecar refuses).
#
#   hack/debug-curl.sh (--pid PID | --netns NAME) [PATH] [curl args...]
#
# PID is any process of the launcher pod (on the node: the `compute`
# container's, e.g.
#   crictl inspect -o go-template --template '{{.info.pid}}' \
#     $(crictl ps -q --name compute --pod $(crictl pods -q --name virt-launcher-VM))
# ), NAME an `ip netns` name (the test suites').  PATH defaults to
# /v1/identity with 'Metadata: true'; curl arguments after it are passed on.
# Root on the node (nsenter, ip, nft).
#
# What it does, and undoes on exit: a throwaway network namespace (a
# stand-in guest, 192.0.2.10/32, TEST-NET-1) joined to the pod by a veth
# pair whose pod end, imds-dbg, gets a chain of its own (table netdev
# imds_debug: the sidecar's kubevirt_imds tables are not touched) that
# hands its frames for 169.254.169.254 to veth-imds-br exactly as the
# sidecar's steering does for the VM's taps, and one on veth-imds-br that
# hands the sidecar's answers to that address back (before the sidecar's own
# chain sends the rest to the VM), ARP for the stand-in included.  The
# stand-in guest then runs curl; the sidecar logs the request from
# 192.0.2.10.  Exit status: curl's.
set -euo pipefail

usage() {
	echo "usage: $0 (--pid PID | --netns NAME) [PATH] [curl args...]" >&2
	exit 2
}

target=()
case ${1:-} in
--pid)
	[[ ${2:-} =~ ^[0-9]+$ ]] || usage
	[[ -e /proc/$2/ns/net ]] || { echo "debug-curl: no process $2" >&2; exit 1; }
	target=(nsenter -t "$2" -n)
	link_ns=$2
	shift 2
	;;
--netns)
	[[ -n ${2:-} ]] || usage
	ip netns list | grep -qw -- "$2" || { echo "debug-curl: no network namespace $2" >&2; exit 1; }
	target=(ip netns exec "$2")
	link_ns=$2
	shift 2
	;;
*) usage ;;
esac
path=${1:-/v1/identity}
[[ $# -gt 0 ]] && shift
curl_args=("$@")
[[ ${#curl_args[@]} -eq 0 && $path == /v1/identity ]] && curl_args=(-H 'Metadata: true')
[[ $path == /* ]] || { echo "debug-curl: PATH must start with /: $path" >&2; exit 2; }

for c in ip nft curl nsenter; do
	command -v "$c" >/dev/null || { echo "debug-curl: $c is missing" >&2; exit 1; }
done
in_pod() { "${target[@]}" "$@"; }
if ! vmac=$(in_pod cat /sys/class/net/veth-imds/address 2>/dev/null); then
	echo "debug-curl: no veth-imds in that pod: is the sidecar running there?" >&2
	exit 1
fi

guest=imds-dbg-$$
dbg_mac=02:00:c0:00:02:0a # locally administered, 192.0.2.10
cleanup() {
	in_pod nft delete table netdev imds_debug 2>/dev/null || true
	in_pod ip link del imds-dbg 2>/dev/null || true
	in_pod ip neigh del 192.0.2.10 dev veth-imds 2>/dev/null || true
	ip netns del "$guest" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$guest"
ip -n "$guest" link set lo up
ip -n "$guest" link add eth0 address "$dbg_mac" type veth peer name imds-dbg
ip -n "$guest" link set imds-dbg netns "$link_ns"
in_pod ip link set imds-dbg up
in_pod nft -f - <<EOF
table netdev imds_debug {
	chain in {
		type filter hook ingress device "imds-dbg" priority -500;
		ip daddr 169.254.169.254 ether daddr set $vmac fwd to "veth-imds-br"
		arp operation request arp daddr ip 169.254.169.254 fwd to "veth-imds-br"
		ether daddr $vmac fwd to "veth-imds-br"
		drop
	}
	chain back {
		type filter hook ingress device "veth-imds-br" priority -510;
		ether daddr $dbg_mac fwd to "imds-dbg"
		arp daddr ip 192.0.2.10 fwd to "imds-dbg"
	}
}
EOF
ip -n "$guest" addr add 192.0.2.10/32 dev eth0
ip -n "$guest" link set eth0 up
ip -n "$guest" route add 169.254.169.254/32 dev eth0
ip netns exec "$guest" curl -sS --max-time 5 "${curl_args[@]}" "http://169.254.169.254$path"
