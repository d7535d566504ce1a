#!/usr/bin/env bash
# The network half of the sidecar, measured in network namespaces (root), in
# launcher pods as tests/lib/netns.sh builds them (KubeVirt's masquerade and
# bridge binding); a veth stands in for the VM's tap, so the kernel's path
# alone is timed (no qemu, no tapwire):
#   - the tap appears -> first answered guest request (masquerade, link-local
#     and bridge-binding guests), RUNS times each; the clock starts before
#     the `ip` that creates the tap and puts it on the bridge;
#   - `ip link del veth-imds`, and `nft delete table netdev kubevirt_imds`
#     (another process wiping the steering) -> the guest is served again;
#   - the served path: wrk from the guest to 169.254.169.254 (steered at the
#     tap to the sidecar), beside the same server code reached without
#     steering, `imds-server serve` on the pod's 10.0.2.1 through the bridge
#     (the path masquerade guests took before the steering);
#   - ARP: one request's round trip from the guest (arping), and the
#     replies per second the responder sustains under a bounded flood;
#   - memory: VmHWM / VmRSS of `imds-server run` after all that.
# Prints one table.  IMDS_SERVER (default: the static build, as shipped),
# RUNS (default 5), FLOOD (requests, default 200000), SECS (wrk, default 3).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
IMDS_SERVER=${IMDS_SERVER:-$REPO/build/static/imds-server}
[[ -x "$IMDS_SERVER" ]] || IMDS_SERVER=$REPO/build/debug/imds-server
RUNS=${RUNS:-5}
FLOOD=${FLOOD:-200000}
SECS=${SECS:-3}
export IMDS_SERVER REPO
# shellcheck source=../tests/lib/netns.sh
. "$REPO/tests/lib/netns.sh"

mkdir -p build/bench
gcc -O2 -Wall -Werror -o build/bench/arp_flood bench/arp_flood.c || exit 1

# shellcheck source=stats.sh
. "$REPO/bench/stats.sh"

# topo MODE I: fresh namespaces, the launcher pod of MODE (masquerade and
# linklocal: masquerade binding; bridge: bridge binding), its tap not there
# yet; $NET_TMP/tap_up.sh makes it appear (a veth whose peer is the guest's
# eth0, addressed as the binding's DHCP would) and puts it on the bridge.
topo() {
	local mode=$1 i=$2 kind=masquerade
	NS_POD=$NS_TAG-p$i$mode NS_VM=$NS_TAG-v$i$mode NS_NODE=$NS_TAG-n$i$mode
	ns_setup && node_link 1500 || return 1
	if [[ $mode == bridge ]]; then
		kind=bridge
		launcher_bridge || return 1
	else
		launcher_masquerade || return 1
	fi
	ip -n "$NS_POD" link del tap0 || return 1
	[[ $mode == linklocal ]] && in_pod sysctl -qw net.ipv4.conf.all.arp_ignore=8
	IFACES=default:$kind:tap0
	{
		echo "ip -n $NS_POD link add tap0 mtu 1500 type veth peer name eth0 netns $NS_VM"
		echo "ip -n $NS_VM link set eth0 address 52:54:00:12:34:56 up"
		case $mode in
		masquerade)
			echo "ip -n $NS_VM addr add 10.0.2.2/24 dev eth0"
			echo "ip -n $NS_VM route add default via 10.0.2.1 dev eth0"
			;;
		linklocal) echo "ip -n $NS_VM addr add 169.254.10.20/16 dev eth0" ;;
		bridge)
			echo "ip -n $NS_VM addr add $POD_IP/32 dev eth0"
			echo "ip -n $NS_VM route add $POD_GW dev eth0 scope link"
			echo "ip -n $NS_VM route add default via $POD_GW dev eth0"
			# The gateway's entry given, not asked: this guest's first ARP
			# through a bridge port milliseconds old was lost (the kernel's
			# retry a second later showed in this row as 1 s), which no VM
			# meets (qemu opens its tap long after virt-handler bridged it);
			# the row times the sidecar steering a new tap.
			echo "ip -n $NS_VM neigh replace $POD_GW lladdr $(ip -n "$NS_NODE" -o link show cali0 | grep -o 'link/ether [^ ]*' | cut -d' ' -f2) dev eth0"
			;;
		esac
		echo "ip -n $NS_POD link set tap0 master k6t-eth0 up"
	} >"$NET_TMP/tap_up.sh"
}

untopo() {
	imds_stop
	ip netns del "$NS_VM" 2>/dev/null
	ip netns del "$NS_POD" 2>/dev/null
	ip netns del "$NS_NODE" 2>/dev/null
}

# wrk_row NS URL CONNS -> "rps p50 p99" (from the namespace NS)
wrk_row() {
	local out
	out=$(ip netns exec "$1" wrk -t1 -c"$3" -d"${SECS}s" --latency "$2")
	awk '/^Requests\/sec/ {r = $2} $1 == "50%" {p50 = $2} $1 == "99%" {p99 = $2}
		END {printf "%.0f %s %s\n", r, p50, p99}' <<<"$out"
}

served_ms() { sed -n 's/.*"served_ms": \([0-9.]*\).*/\1/p' <<<"$1"; }
# after_cmd_ms: served_ms less the time the timed command itself ran
after_cmd_ms() {
	sed -n 's/.*"served_ms": \([0-9.]*\), "cmd_ms": \([0-9.]*\).*/\1 \2/p' <<<"$1" |
		awk '{printf "%.1f", $1 - $2}'
}

declare -A appear appear_done restore restore_done wipe served ref
MODES=${MODES:-masquerade linklocal bridge}
for mode in $MODES; do
	appear[$mode]=""
	appear_done[$mode]=""
	restore[$mode]=""
	restore_done[$mode]=""
	wipe[$mode]=""
	for ((i = 1; i <= RUNS; i++)); do
		topo "$mode" "$i" || { echo "bench: netns setup failed (root?)" >&2; exit 1; }
		imds_start IMDS_INTERFACES="$IFACES"
		for _ in $(seq 500); do grep -q "waiting for the VM's tap" "$IMDS_LOG" && break; sleep 0.01; done
		out=$(in_vm "$PY" "$REPO/tests/lib/guest_wait.py" --limit 5 --cmd "bash $NET_TMP/tap_up.sh")
		appear[$mode]+=" $(served_ms "$out")"
		appear_done[$mode]+=" $(after_cmd_ms "$out")"
		sleep 0.2
		out=$(in_vm "$PY" "$REPO/tests/lib/guest_wait.py" --limit 5 --connect-timeout 0.05 \
			--cmd "ip -n $NS_POD link del veth-imds")
		restore[$mode]+=" $(served_ms "$out")"
		restore_done[$mode]+=" $(after_cmd_ms "$out")"
		sleep 0.2
		out=$(in_vm "$PY" "$REPO/tests/lib/guest_wait.py" --limit 5 --connect-timeout 0.05 \
			--cmd "ip netns exec $NS_POD nft delete table netdev kubevirt_imds")
		wipe[$mode]+=" $(served_ms "$out")"
		if [[ $i == "$RUNS" && $mode != linklocal ]]; then
			# the served path, and (masquerade) the same code without steering
			sleep 0.2
			for c in 1 100; do
				served[$mode,$c]=$(wrk_row "$NS_VM" http://169.254.169.254/v1/meta-data "$c")
			done
			if [[ $mode == masquerade ]]; then
				in_pod env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm IMDS_POD_NAME=virt-launcher-netvm-abcde \
					IMDS_SA_NAME=default IMDS_TOKEN_PATH="$NET_TMP/tokens/token" \
					IMDS_USER_DATA_FILE="$NET_TMP/data/user-data" "$IMDS_SERVER" serve \
					--listen 10.0.2.1:8080 >"$NET_TMP/ref.log" 2>&1 &
				REF_PID=$!
				for _ in $(seq 100); do in_vm curl -sf -o /dev/null http://10.0.2.1:8080/healthz && break; sleep 0.02; done
				for c in 1 100; do
					ref[$c]=$(wrk_row "$NS_VM" http://10.0.2.1:8080/v1/meta-data "$c")
				done
				kill "$REF_PID"
				wait "$REF_PID" 2>/dev/null
			fi
		fi
		if [[ $mode == linklocal && $i == "$RUNS" ]]; then
			# ARP round trip, then the flood, then memory.
			rtt=$(in_vm arping -c 4 -w 6 -I eth0 169.254.169.254 2>/dev/null |
				sed -n 's/.*  \([0-9.]*\)ms$/\1/p')
			# shellcheck disable=SC2086
			arp_rtt=$(stats $rtt)
			t0=$(awk '{print $14 + $15}' "/proc/$IMDS_PID/stat")
			read -r f_sent f_got f_secs f_rate < <(in_vm build/bench/arp_flood eth0 169.254.10.20 "$FLOOD")
			t1=$(awk '{print $14 + $15}' "/proc/$IMDS_PID/stat")
			f_cpu=$(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$f_got" \
				'BEGIN { printf "%.1f", n ? t / hz * 1e6 / n : 0 }')
			out=$(cloudinit_fetch "$NS_VM" 2>&1)
			grep -q '"ok": true' <<<"$out" && after_flood=ok || after_flood=FAILED
			hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$IMDS_PID/status")
			rss=$(awk '/^VmRSS/ {print $2}' "/proc/$IMDS_PID/status")
		fi
		untopo
	done
done

row() { printf '%-58s %s\n' "$1" "$2"; }
# wrk_fmt "rps p50 p99" -> "rps req/s, p50 X, p99 Y"
wrk_fmt() { awk '{printf "%s req/s, p50 %s, p99 %s", $1, $2, $3}' <<<"$1"; }
# shellcheck disable=SC2086
{
	echo "imds-server network benchmark ($(basename "$(dirname "$IMDS_SERVER")")/$(basename "$IMDS_SERVER"), $(nproc) CPU, Linux $(uname -r), $RUNS runs)"
	row "measure (times: median (min..max))" "value"
	for mode in $MODES; do
		row "tap appears -> guest served, $mode (ms)" "$(stats ${appear[$mode]})"
		row "  of which after \`ip\` finished building it" "$(stats ${appear_done[$mode]})"
		row "ip link del veth-imds -> served again, $mode (ms)" "$(stats ${restore[$mode]})"
		row "  of which after \`ip\` returned" "$(stats ${restore_done[$mode]})"
		row "steering table deleted by another process -> served, $mode (ms)" "$(stats ${wipe[$mode]})"
	done
	for c in 1 100; do
		m=${served[masquerade,$c]:-} r=${ref[$c]:-} b=${served[bridge,$c]:-}
		[[ $m ]] && row "guest -> 169.254.169.254/v1/meta-data, masquerade, $c conn" "$(wrk_fmt "$m")"
		[[ $r ]] && row "  the same code unsteered (serve on 10.0.2.1), $c conn" "$(wrk_fmt "$r")"
		[[ $m && $r ]] && row "  steered/unsteered req/s, $c conn" "$(awk -v a="${m%% *}" -v b="${r%% *}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
		[[ $b ]] && row "guest -> 169.254.169.254/v1/meta-data, bridge, $c conn" "$(wrk_fmt "$b")"
	done
	[[ " $MODES " == *" linklocal "* ]] || exit 0
	row "ARP request -> reply, guest's arping (ms)" "$arp_rtt"
	row "ARP flood: requests sent / replies" "$f_sent / $f_got in ${f_secs} s"
	row "ARP replies/s sustained" "$f_rate"
	row "responder CPU per reply (µs)" "$f_cpu"
	row "cloud-init fetch right after the flood" "$after_flood"
	row "VmHWM / VmRSS of run, responder up, after the flood (kB)" "$hwm / $rss"
}
