#!/usr/bin/env bash
# make bench: imds-server beside nginx from Debian, in the same run.
# Server pinned to one core, wrk to the other, rate limit off.  Prints:
#   requests/s and p50/p99 at 1, 10, 100 connections for /v1/meta-data and
#   /v1/identity; VmHWM of both servers after the run; the static binary's
#   size; exec-to-first-accepted-connection time.
# Beside both, the floor (bench/floor.c): an epoll loop answering canned
# bytes with no parsing at all, the very bytes imds-server answered (its
# head and body), so wrk's own work is the same for both.  Then, at 100
# connections, what ETags (If-None-Match -> 304) and session tokens
# (X-Metadata-Token) cost.
# Beside them h2o from Debian when installed (make bench installs it).
# Anchors (issue "The metadata HTTP server"): binary <= 200 KiB, VmHWM
# <= 1 MiB at 100 connections, throughput >= nginx on every row, start-up
# <= 5 ms; and (issue 34) the image's binary >= 0.95x the floor and ahead of
# h2o on every row.  BENCH_SECONDS (default 1) sets each wrk run's length,
# BENCH_ROUNDS (default 9) the rounds of each row: the servers take turns in
# each round, a row prints each server's median req/s, and each ratio is the
# median of the round's own ratios (this VM's speed moves by 30 % from one
# ten seconds to the next; a ratio of runs a second apart does not).
# The first table: imds-server polling before it sleeps (IMDS_BUSY_POLL_US=
# BENCH_BUSY_POLL_US, default 50; docs/sidecar.md) and the floor likewise
# (--busy-poll, the same bound and rule); the second: both as shipped, the
# poll off, from the same rounds; a third the servers' CPU per answer in
# those rounds (poll off: at 10 and 100 connections wrk's core is the limit
# here, and this is what a faster client would see); a fourth what the poll
# costs in CPU.
# As root the rows run with a PM QoS request of 0 us held on
# /dev/cpu_dma_latency (idle vCPUs poll rather than halt, as under
# cyclictest): at 1 connection a round trip is mostly the wake-up of an
# idle vCPU (~0.1 ms on this kind of VM, bench/README.md), which falls on
# every server alike and hides their own work; the header says which.
# Then, as root, the network figures (bench/net_bench.sh), the node agent's
# (bench/node_bench.sh: a pod's start to served, 1 and 110 pods, memory per
# pod) and the webhook's
# (bench/webhook_bench.sh); `bench/run.sh server` runs only the first part.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
SECS=${BENCH_SECONDS:-1}
ROUNDS=${BENCH_ROUNDS:-9}
# the busy poll's bound for the first table, imds-server's and the floor's
# alike (the sidecar's default is off: docs/sidecar.md "Busy poll")
POLL_US=${BENCH_BUSY_POLL_US:-50}
PY=/usr/bin/python3
# shellcheck source=nginx.sh
. bench/nginx.sh

make --no-print-directory static >/dev/null
BIN=$REPO/build/static/imds-server
WORK=$(mktemp -d "${TMPDIR:-/tmp}/imds-bench.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

ncpu=$(nproc)
SRV_CPU=0
CLI_CPU=$((ncpu > 1 ? 1 : 0))
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- imds-server, as shipped (its busy poll on), and with the poll off
mkdir -p "$WORK/tokens"
echo "eyJhbGciOiJSUzI1NiJ9.e30.c2ln" >"$WORK/tokens/token"
imds_start() { # port [VAR=value...]
	local port=$1
	shift
	env "$@" IMDS_NAMESPACE=default IMDS_VM_NAME=benchvm IMDS_POD_NAME=virt-launcher-benchvm-abcde \
		IMDS_SA_NAME=default IMDS_TOKEN_PATH="$WORK/tokens/token" IMDS_RATE_LIMIT=0 \
		taskset -c "$SRV_CPU" "$BIN" serve --listen "127.0.0.1:$port" 2>/dev/null &
	PIDS+=($!)
}
IPORT=$(free_port)
imds_start "$IPORT" IMDS_BUSY_POLL_US="$POLL_US"
IPID=${PIDS[-1]}
I0PORT=$(free_port)
imds_start "$I0PORT" IMDS_BUSY_POLL_US=0
I0PID=${PIDS[-1]}

# --- nginx serving the same bytes from files
NPORT=$(free_port)
mkdir -p "$WORK/www/v1"
sleep 0.2
curl -sf "http://127.0.0.1:$IPORT/v1/meta-data" >"$WORK/www/v1/meta-data"
curl -sf -H 'Metadata: true' "http://127.0.0.1:$IPORT/v1/identity" >"$WORK/www/v1/identity"
nginx_conf "$WORK/nginx" "server {
        listen 127.0.0.1:$NPORT;
        root $WORK/www;
        default_type text/plain;
    }"
taskset -c "$SRV_CPU" nginx -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" &
NPID=$!
PIDS+=("$NPID")
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$NPORT/v1/meta-data" >/dev/null && break; sleep 0.1; done

# --- h2o from Debian, when installed (make bench installs it): the fastest
# general server packaged here, one thread on the server's core, no log
HPORT='' HPID=''
if command -v h2o >/dev/null; then
	HPORT=$(free_port)
	mkdir -p "$WORK/h2o"
	{
		# as root h2o would switch to nobody, who cannot read $WORK (0700)
		((EUID == 0)) && echo "user: root"
		printf 'listen:\n  host: 127.0.0.1\n  port: %s\nnum-threads: 1\n' "$HPORT"
		printf 'error-log: %s\nhosts:\n  default:\n    paths:\n      /:\n        file.dir: %s\n' \
			"$WORK/h2o/error.log" "$WORK/www"
	} >"$WORK/h2o/h2o.conf"
	taskset -c "$SRV_CPU" h2o -c "$WORK/h2o/h2o.conf" >"$WORK/h2o/out.log" 2>&1 &
	HPID=$!
	PIDS+=("$HPID")
	for _ in $(seq 50); do curl -sf "http://127.0.0.1:$HPORT/v1/meta-data" >/dev/null && break; sleep 0.1; done
	curl -sf "http://127.0.0.1:$HPORT/v1/meta-data" >/dev/null ||
		{ echo "bench: h2o did not start: $(cat "$WORK/h2o/error.log" "$WORK/h2o/out.log")" >&2; exit 1; }
fi

# --- the floor, one per path, answering imds-server's own bytes (head and
# body, as one answer of it came on the wire): wrk then parses the same
# bytes from both, and the ratio is the servers' work alone
gcc -std=c17 -O2 -Wall -Wextra -Werror -o "$WORK/floor" bench/floor.c
"$PY" - "$IPORT" "$WORK" <<'PYEOF'
import socket, sys
port, work = int(sys.argv[1]), sys.argv[2]
for path, hdr in (("/v1/meta-data", ""), ("/v1/identity", "Metadata: true\r\n")):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (path, hdr)).encode())
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(65536)
    head, body = got.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    while len(body) < n:
        body += s.recv(65536)
    s.close()
    assert head.startswith(b"HTTP/1.1 200 "), head
    open(work + "/raw" + path.replace("/", "_"), "wb").write(head + b"\r\n\r\n" + body)
PYEOF
declare -A FPORT F0PORT F0PID
for path in /v1/meta-data /v1/identity; do
	FPORT[$path]=$(free_port)
	taskset -c "$SRV_CPU" "$WORK/floor" "${FPORT[$path]}" --raw "$WORK/raw${path//\//_}" --busy-poll "$POLL_US" &
	PIDS+=($!)
	F0PORT[$path]=$(free_port)
	taskset -c "$SRV_CPU" "$WORK/floor" "${F0PORT[$path]}" --raw "$WORK/raw${path//\//_}" &
	F0PID[$path]=$!
	PIDS+=($!)
done
for _ in $(seq 50); do curl -sf "http://127.0.0.1:${F0PORT[/v1/identity]}/" >/dev/null && break; sleep 0.1; done
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$I0PORT/v1/meta-data" >/dev/null && break; sleep 0.1; done

# task_ns PID -> ns on a CPU of all the process's threads (schedstat)
task_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
# wrk_row URL CONNS [HEADER...] -> "rps p50 p99 cpu": cpu is the server's
# CPU per answer in us when WRK_PID names it (its threads' time on a CPU
# over the run, divided by the answers), else "-"
wrk_row() {
	local out url=$1 conns=$2 h hdrs=() c0=0 cpu=-
	shift 2
	for h in "$@"; do [[ -n $h ]] && hdrs+=(-H "$h"); done
	[[ -n ${WRK_PID:-} ]] && c0=$(task_ns "$WRK_PID")
	out=$(taskset -c "$CLI_CPU" wrk -t1 -c"$conns" -d"${SECS}s" --latency "${hdrs[@]}" "$url")
	if [[ -n ${WRK_PID:-} ]]; then
		cpu=$(awk -v a="$c0" -v b="$(task_ns "$WRK_PID")" '/requests in/ { if ($1 > 0) printf "%.2f", (b - a) / 1000 / $1 }' <<<"$out")
	fi
	local rps p50 p99
	rps=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' <<<"$out")
	p50=$(awk '$1=="50%" {print $2}' <<<"$out")
	p99=$(awk '$1=="99%" {print $2}' <<<"$out")
	echo "$rps $p50 $p99 ${cpu:--}"
}

# median_round "rps p50 p99"... -> the round with the median req/s
median_round() { printf '%s\n' "$@" | sort -n -k1,1 | awk '{ r[NR] = $0 } END { print r[int((NR + 1) / 2)] }'; }
# paired_ratio "A-rounds" "B-rounds" [FIELD] -> the median of A_k / B_k
# over the rounds k (each round's FIELD, by default the first: req/s), e.g.
# "1.02x"; "-" without B
paired_ratio() {
	[[ -n $2 ]] || { echo -; return; }
	local f=${3:-1}
	paste -d' ' <(cut -d' ' -f"$f" <<<"$1") <(cut -d' ' -f"$f" <<<"$2") | { grep -v -- - || true; } |
		awk '$2 > 0 { print $1 / $2 }' | sort -g |
		awk '{ r[NR] = $0 } END { if (NR) printf "%.2fx", (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2; else print "-" }'
}

hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

pmqos="vCPUs halt when idle (no PM QoS: /dev/cpu_dma_latency not writable)"
if ((EUID == 0)) && exec {PMQOS}>/dev/cpu_dma_latency 2>/dev/null; then
	printf 0 >&"$PMQOS"
	pmqos="PM QoS 0 us held: idle vCPUs poll"
fi
printf '\nkubevirt-imds benchmark (%s, %d cores, %ss per run, median of %d rounds; server on cpu %d, wrk on cpu %d; %s)\n\n' \
	"$(date -u +%FT%TZ)" "$ncpu" "$SECS" "$ROUNDS" "$SRV_CPU" "$CLI_CPU" "$pmqos"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2fx", a / b; else print "-" }'; }
printf '%-14s %5s | %10s %9s %9s | %10s %9s %9s | %10s %10s | %10s %10s %10s\n' path conns "imds req/s" p50 p99 \
	"nginx rq/s" p50 p99 "h2o rq/s" "floor rq/s" "imds/nginx" "imds/h2o" "imds/floor"
declare -A I100 NOPOLL CPU
# median_field N "rounds" -> the median of field N over the rounds
median_field() { cut -d' ' -f"$1" <<<"$2" | { grep -v -- - || true; } | sort -g | awk '{ r[NR] = $0 } END { print NR ? r[int((NR + 1) / 2)] : "-" }'; }
low_floor='' low_h2o=''
lowest() { awk -v r="${1%x}" -v m="$2" 'BEGIN { print (m == "" || r + 0 < m + 0) ? r : m }'; }
for path in /v1/meta-data /v1/identity; do
	for c in 1 10 100; do
		hdr=
		[[ $path == /v1/identity ]] && hdr='Metadata: true'
		# ROUNDS rounds, the six servers in turn in each, so that a burst of
		# load elsewhere on the machine falls on all of them
		ri=() rn=() rh=() rf=() ri0=() rf0=()
		for ((k = 0; k < ROUNDS; k++)); do
			ri+=("$(wrk_row "http://127.0.0.1:$IPORT$path" "$c" "$hdr")")
			rf+=("$(wrk_row "http://127.0.0.1:${FPORT[$path]}$path" "$c" "$hdr")")
			[[ -n $HPORT ]] && rh+=("$(WRK_PID=$HPID wrk_row "http://127.0.0.1:$HPORT$path" "$c" "$hdr")")
			rn+=("$(WRK_PID=$NPID wrk_row "http://127.0.0.1:$NPORT$path" "$c" "$hdr")")
			ri0+=("$(WRK_PID=$I0PID wrk_row "http://127.0.0.1:$I0PORT$path" "$c" "$hdr")")
			rf0+=("$(WRK_PID=${F0PID[$path]} wrk_row "http://127.0.0.1:${F0PORT[$path]}$path" "$c" "$hdr")")
		done
		read -r ir i50 i99 _ < <(median_round "${ri[@]}")
		read -r nr n50 n99 _ < <(median_round "${rn[@]}")
		hr=-
		[[ -n $HPORT ]] && read -r hr _ _ < <(median_round "${rh[@]}")
		read -r fr _ _ < <(median_round "${rf[@]}")
		all_i=$(printf '%s\n' "${ri[@]}") all_h=''
		[[ -n $HPORT ]] && all_h=$(printf '%s\n' "${rh[@]}")
		rfl=$(paired_ratio "$all_i" "$(printf '%s\n' "${rf[@]}")")
		rh2=$(paired_ratio "$all_i" "$all_h")
		printf '%-14s %5d | %10s %9s %9s | %10s %9s %9s | %10s %10s | %10s %10s %10s\n' "$path" "$c" "$ir" "$i50" "$i99" \
			"$nr" "$n50" "$n99" "$hr" "$fr" "$(paired_ratio "$all_i" "$(printf '%s\n' "${rn[@]}")")" "$rh2" "$rfl"
		[[ $c == 100 ]] && I100[$path]="$ir $fr $nr"
		low_floor=$(lowest "$rfl" "$low_floor")
		[[ $rh2 == - ]] || low_h2o=$(lowest "$rh2" "$low_h2o")
		read -r i0r _ _ < <(median_round "${ri0[@]}")
		read -r f0r _ _ < <(median_round "${rf0[@]}")
		all_i0=$(printf '%s\n' "${ri0[@]}")
		all_f0=$(printf '%s\n' "${rf0[@]}") all_n=$(printf '%s\n' "${rn[@]}")
		NOPOLL[$path $c]="$i0r $f0r $(paired_ratio "$all_i0" "$all_f0") $(paired_ratio "$all_i0" "$all_h") $(paired_ratio "$all_i" "$all_i0")"
		# the server's CPU per answer, poll off: what a client that is not
		# the limit would see (the median of each server's rounds; the
		# ratios are the median of the rounds' floor/imds and h2o/imds)
		h0=-
		[[ -n $HPORT ]] && h0=$(median_field 4 "$all_h")
		CPU[$path $c]="$(median_field 4 "$all_i0") $(median_field 4 "$all_f0") $h0 $(median_field 4 "$all_n") $(paired_ratio "$all_f0" "$all_i0" 4) $(paired_ratio "$all_h" "$all_i0" 4)"
	done
done
printf '%-44s %6.2fx   anchor >= 0.95x\n' "lowest imds/floor over the rows above" "$low_floor"
if [[ -n $low_h2o ]]; then
	printf '%-44s %6.2fx   anchor > 1.00x\n' "lowest imds/h2o over the rows above" "$low_h2o"
else
	echo "(no h2o here: make bench installs Debian's h2o for its column)"
fi

# --- the same rounds, both servers with the poll off: the server's own work
printf '\n%-14s %5s | %12s %12s | %10s %10s | %16s\n' "poll off" conns "imds req/s" "floor rq/s" \
	"imds/floor" "imds/h2o" "poll on/off imds"
for path in /v1/meta-data /v1/identity; do
	for c in 1 10 100; do
		read -r a b r1 r2 r3 <<<"${NOPOLL[$path $c]}"
		printf '%-14s %5d | %12s %12s | %10s %10s | %16s\n' "$path" "$c" "$a" "$b" "$r1" "$r2" "$r3"
	done
done

# --- the same rounds, the server's CPU per answer (poll off): where wrk's
# core is the limit (10 and 100 connections here) the req/s above are
# wrk's, and this is the servers' own cost; floor/imds >= 1 means imds spent
# no more than the floor per answer
printf '\n%-14s %5s | %9s %9s %9s %9s | %11s %11s\n' "us CPU/answer" conns imds floor h2o nginx \
	"floor/imds" "h2o/imds"
for path in /v1/meta-data /v1/identity; do
	for c in 1 10 100; do
		read -r a b h n r1 r2 <<<"${CPU[$path $c]}"
		printf '%-14s %5d | %9s %9s %9s %9s | %11s %11s\n' "$path" "$c" "$a" "$b" "$h" "$n" "$r1" "$r2"
	done
done

# --- what the poll costs: the server's CPU time per answer (schedstat, ns
# on a CPU), requests 1 ms apart on one connection (a guest's pace: the
# window stays shut) and back to back on one connection for SECS (it opens)
sparse_cpu() { # port pid -> us of CPU per answer, 1000 requests 1 ms apart
	local before after
	before=$(task_ns "$2")
	"$PY" - "$1" <<'PYEOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
for _ in range(1000):
    s.sendall(b"GET /v1/meta-data HTTP/1.1\r\nHost: x\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(65536)
    head, body = got.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    while len(body) < n:
        body += s.recv(65536)
    time.sleep(0.001)
PYEOF
	after=$(task_ns "$2")
	awk -v a="$before" -v b="$after" 'BEGIN { printf "%.1f", (b - a) / 1000 / 1000 }'
}
busy_cpu() { # port pid -> us of CPU per answer, wrk 1 connection for SECS
	local before after n
	before=$(task_ns "$2")
	n=$(taskset -c "$CLI_CPU" wrk -t1 -c1 -d"${SECS}s" "http://127.0.0.1:$1/v1/meta-data" | awk '/requests in/ {print $1}')
	after=$(task_ns "$2")
	awk -v a="$before" -v b="$after" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / 1000 / n }'
}
printf '\n%-44s %12s %12s\n' "CPU per answer (us), /v1/meta-data" "poll on" "poll off"
printf '%-44s %12s %12s\n' "1,000 requests 1 ms apart, one connection" "$(sparse_cpu "$IPORT" "$IPID")" "$(sparse_cpu "$I0PORT" "$I0PID")"
printf '%-44s %12s %12s\n' "back to back, one connection, ${SECS}s" "$(busy_cpu "$IPORT" "$IPID")" "$(busy_cpu "$I0PORT" "$I0PID")"

# --- ETags and sessions at 100 connections, beside the plain rows above
etag=$(curl -sfI "http://127.0.0.1:$IPORT/v1/meta-data" | tr -d '\r' | sed -n 's/^ETag: //Ip')
tok=$(curl -sf -X PUT -H 'X-Metadata-Token-TTL-Seconds: 21600' "http://127.0.0.1:$IPORT/v1/session")
printf '\n%-48s | %10s %9s %9s | %10s %10s %10s\n' "100 connections" "imds req/s" p50 p99 "vs plain" "vs floor" "vs nginx"
extra_row() { # label path plain-path header...
	local label=$1 path=$2 base=$3 r50 r99 rr pr fr nr
	shift 3
	read -r rr r50 r99 _ < <(SECS=$((SECS * 3)) wrk_row "http://127.0.0.1:$IPORT$path" 100 "$@")
	read -r pr fr nr <<<"${I100[$base]}"
	printf '%-48s | %10s %9s %9s | %10s %10s %10s\n' "$label" "$rr" "$r50" "$r99" \
		"$(ratio "$rr" "$pr")" "$(ratio "$rr" "$fr")" "$(ratio "$rr" "$nr")"
}
# the same request bytes with a header the server ignores: what a header costs
extra_row "/v1/meta-data, X-Other: (a header of that size)" /v1/meta-data /v1/meta-data 'X-Other: "0123456789abcdef"'
extra_row "/v1/meta-data, If-None-Match: current -> 304" /v1/meta-data /v1/meta-data "If-None-Match: $etag"
extra_row "/v1/meta-data, If-None-Match: another -> 200" /v1/meta-data /v1/meta-data 'If-None-Match: "0000"'
extra_row "/v1/identity with a session token" /v1/identity /v1/identity 'Metadata: true' "X-Metadata-Token: $tok"

ih=$(hwm "$IPID")
nh=$(hwm "$NPID")
size=$(stat -c %s "$BIN")

# exec -> first accepted connection, static binary, median of 21 starts.
startup=$("$PY" - "$BIN" "$WORK" <<'PYEOF'
import os, socket, subprocess, sys, time
bin_, work = sys.argv[1], sys.argv[2]
env = dict(os.environ, IMDS_NAMESPACE="default", IMDS_VM_NAME="benchvm",
           IMDS_TOKEN_PATH=work + "/tokens/token")
times = []
for _ in range(21):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    t0 = time.perf_counter()
    p = subprocess.Popen([bin_, "serve", "--listen", "127.0.0.1:%d" % port], env=env,
                         stderr=subprocess.DEVNULL)
    while True:
        c = socket.socket()
        try:
            c.connect(("127.0.0.1", port))
            break
        except OSError:
            c.close()
    times.append((time.perf_counter() - t0) * 1000)
    c.close()
    p.terminate(); p.wait()
times.sort()
print("%.2f" % times[len(times) // 2])
PYEOF
)

printf '\n%-34s %12s %12s %s\n' measure imds-server nginx anchor
printf '%-34s %9s KiB %9s KiB %s\n' "VmHWM after the run" "$ih" "$nh" "imds <= 1024 KiB"
printf '%-34s %9s KiB %12s %s\n' "static binary size" "$((size / 1024))" "-" "<= 200 KiB"
printf '%-34s %10s ms %12s %s\n' "exec to first accepted connection" "$startup" "-" "<= 5 ms"

[[ -n ${PMQOS:-} ]] && exec {PMQOS}>&-
[[ "${1:-all}" == server ]] && exit 0
cleanup
trap - EXIT
if ((EUID == 0)); then
	bench/net_bench.sh
	bench/node_bench.sh
else
	echo "(network figures skipped: bench/net_bench.sh needs root for network namespaces)"
fi
bench/webhook_bench.sh
