#!/usr/bin/env bash
# The network half of the sidecar, measured in network namespaces (root):
#   - bridge appears -> first answered guest request (masquerade and
#     link-local guests), RUNS times each; the clock starts before the
#     `ip -batch` that creates the bridge and enslaves the tap;
#   - `ip link del veth-imds` -> the guest is served again;
#   - ARP: one request's round trip from the guest (arping), and the
#     replies per second the responder sustains under a bounded flood;
#   - memory: VmHWM / VmRSS of `imds-server run` after all that.
# Prints one table.  IMDS_SERVER (default: the static build, as shipped),
# RUNS (default 5), FLOOD (requests, default 200000).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
IMDS_SERVER=${IMDS_SERVER:-$REPO/build/static/imds-server}
[[ -x "$IMDS_SERVER" ]] || IMDS_SERVER=$REPO/build/debug/imds-server
RUNS=${RUNS:-5}
FLOOD=${FLOOD:-200000}
export IMDS_SERVER REPO
# shellcheck source=../tests/lib/netns.sh
. "$REPO/tests/lib/netns.sh"

mkdir -p build/bench
gcc -O2 -Wall -Werror -o build/bench/arp_flood bench/arp_flood.c || exit 1

# stats V...: "median (min..max)" of numbers
stats() {
	printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {
		if (NR == 0) { print "n/a"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.1f (%.1f..%.1f)", m, v[1], v[NR] }'
}

# topo MODE I: fresh namespaces; the guest's NIC exists, its tap is not
# on a bridge yet (no bridge exists).
topo() {
	local mode=$1 i=$2
	NS_POD=$NS_TAG-p$i$mode NS_VM=$NS_TAG-v$i$mode NS_NODE=$NS_TAG-n$i$mode
	ns_setup && pod_eth0 || return 1
	ip -n "$NS_POD" link add tap0 type veth peer name eth0 netns "$NS_VM"
	ip -n "$NS_POD" link set tap0 mtu 1400 up
	ip -n "$NS_VM" link set eth0 address 52:54:00:12:34:56 mtu 1400 up
	if [[ $mode == masquerade ]]; then
		ip -n "$NS_VM" addr add 10.0.2.2/24 dev eth0
		ip -n "$NS_VM" route add default via 10.0.2.1 dev eth0
	else
		ip -n "$NS_VM" addr add 169.254.10.20/16 dev eth0
		in_pod sysctl -qw net.ipv4.conf.all.arp_ignore=8
	fi
	cat >"$NET_TMP/bridge.batch" <<'EOF'
link add k6t-eth0 type bridge
link set k6t-eth0 mtu 1400
addr add 10.0.2.1/24 dev k6t-eth0
link set tap0 master k6t-eth0
link set k6t-eth0 up
EOF
}

untopo() {
	imds_stop
	ip netns del "$NS_VM" 2>/dev/null
	ip netns del "$NS_POD" 2>/dev/null
	ip netns del "$NS_NODE" 2>/dev/null
}

served_ms() { sed -n 's/.*"served_ms": \([0-9.]*\).*/\1/p' <<<"$1"; }
# after_cmd_ms: served_ms less the time the timed command itself ran
after_cmd_ms() {
	sed -n 's/.*"served_ms": \([0-9.]*\), "cmd_ms": \([0-9.]*\).*/\1 \2/p' <<<"$1" |
		awk '{printf "%.1f", $1 - $2}'
}

declare -A appear appear_done restore restore_done
for mode in masquerade linklocal; do
	appear[$mode]=""
	appear_done[$mode]=""
	restore[$mode]=""
	restore_done[$mode]=""
	for ((i = 1; i <= RUNS; i++)); do
		topo "$mode" "$i" || { echo "bench: netns setup failed (root?)" >&2; exit 1; }
		imds_start
		for _ in $(seq 300); do grep -q 'waiting for bridge' "$IMDS_LOG" && break; sleep 0.01; done
		out=$(in_vm "$PY" "$REPO/tests/lib/guest_wait.py" --limit 5 \
			--cmd "ip -n $NS_POD -batch $NET_TMP/bridge.batch")
		appear[$mode]+=" $(served_ms "$out")"
		appear_done[$mode]+=" $(after_cmd_ms "$out")"
		sleep 0.2
		out=$(in_vm "$PY" "$REPO/tests/lib/guest_wait.py" --limit 5 --connect-timeout 0.05 \
			--cmd "ip -n $NS_POD link del veth-imds")
		restore[$mode]+=" $(served_ms "$out")"
		restore_done[$mode]+=" $(after_cmd_ms "$out")"
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

# shellcheck disable=SC2086
{
	echo "imds-server network benchmark ($(basename "$(dirname "$IMDS_SERVER")")/$(basename "$IMDS_SERVER"), $(nproc) CPU, Linux $(uname -r), $RUNS runs)"
	printf '%-58s %s\n' "measure (times: median (min..max))" "value"
	printf '%-58s %s\n' "bridge appears -> guest served, masquerade (ms)" "$(stats ${appear[masquerade]})"
	printf '%-58s %s\n' "  of which after \`ip\` finished building it" "$(stats ${appear_done[masquerade]})"
	printf '%-58s %s\n' "bridge appears -> guest served, link-local (ms)" "$(stats ${appear[linklocal]})"
	printf '%-58s %s\n' "  of which after \`ip\` finished building it" "$(stats ${appear_done[linklocal]})"
	printf '%-58s %s\n' "ip link del veth-imds -> served again, masquerade (ms)" "$(stats ${restore[masquerade]})"
	printf '%-58s %s\n' "  of which after \`ip\` returned" "$(stats ${restore_done[masquerade]})"
	printf '%-58s %s\n' "ip link del veth-imds -> served again, link-local (ms)" "$(stats ${restore[linklocal]})"
	printf '%-58s %s\n' "  of which after \`ip\` returned" "$(stats ${restore_done[linklocal]})"
	printf '%-58s %s\n' "ARP request -> reply, guest's arping (ms)" "$arp_rtt"
	printf '%-58s %s\n' "ARP flood: requests sent / replies" "$f_sent / $f_got in ${f_secs} s"
	printf '%-58s %s\n' "ARP replies/s sustained (FDB check per request)" "$f_rate"
	printf '%-58s %s\n' "responder CPU per reply (µs)" "$f_cpu"
	printf '%-58s %s\n' "cloud-init fetch right after the flood" "$after_flood"
	printf '%-58s %s\n' "VmHWM / VmRSS of run, responder up, after the flood (kB)" "$hwm / $rss"
}
