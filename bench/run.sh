#!/usr/bin/env bash
# make bench: imds-server beside nginx from Debian, in the same run.
# Server pinned to one core, wrk to the other, rate limit off.  Prints:
#   requests/s and p50/p99 at 1, 10, 100 connections for /v1/meta-data and
#   /v1/identity; VmHWM of both servers after the run; the static binary's
#   size; exec-to-first-accepted-connection time.
# Beside both, the floor (bench/floor.c): an epoll loop answering canned
# bytes with no parsing at all.  Then, at 100 connections, what ETags
# (If-None-Match -> 304) and session tokens (X-Metadata-Token) cost.
# Anchors (issue "The metadata HTTP server"): binary <= 200 KiB, VmHWM
# <= 1 MiB at 100 connections, throughput >= nginx on every row, start-up
# <= 5 ms.  BENCH_SECONDS (default 5) sets each wrk run's length.
# Then, as root, the network figures (bench/net_bench.sh), the node agent's
# (bench/node_bench.sh: a pod's start to served, 1 and 110 pods, memory per
# pod) and the webhook's
# (bench/webhook_bench.sh); `bench/run.sh server` runs only the first part.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
SECS=${BENCH_SECONDS:-5}
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

# --- imds-server
IPORT=$(free_port)
mkdir -p "$WORK/tokens"
echo "eyJhbGciOiJSUzI1NiJ9.e30.c2ln" >"$WORK/tokens/token"
IMDS_NAMESPACE=default IMDS_VM_NAME=benchvm IMDS_POD_NAME=virt-launcher-benchvm-abcde \
	IMDS_SA_NAME=default IMDS_TOKEN_PATH="$WORK/tokens/token" IMDS_RATE_LIMIT=0 \
	taskset -c "$SRV_CPU" "$BIN" serve --listen "127.0.0.1:$IPORT" 2>/dev/null &
IPID=$!
PIDS+=("$IPID")

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

# --- the floor, one per body
gcc -std=c17 -O2 -Wall -Wextra -Werror -o "$WORK/floor" bench/floor.c
declare -A FPORT
for path in /v1/meta-data /v1/identity; do
	FPORT[$path]=$(free_port)
	taskset -c "$SRV_CPU" "$WORK/floor" "${FPORT[$path]}" "$WORK/www$path" &
	PIDS+=($!)
done
for _ in $(seq 50); do curl -sf "http://127.0.0.1:${FPORT[/v1/identity]}/" >/dev/null && break; sleep 0.1; done

# wrk_row URL CONNS [HEADER...] -> "rps p50 p99"
wrk_row() {
	local out url=$1 conns=$2 h hdrs=()
	shift 2
	for h in "$@"; do [[ -n $h ]] && hdrs+=(-H "$h"); done
	out=$(taskset -c "$CLI_CPU" wrk -t1 -c"$conns" -d"${SECS}s" --latency "${hdrs[@]}" "$url")
	local rps p50 p99
	rps=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' <<<"$out")
	p50=$(awk '$1=="50%" {print $2}' <<<"$out")
	p99=$(awk '$1=="99%" {print $2}' <<<"$out")
	echo "$rps $p50 $p99"
}

hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

printf '\nkubevirt-imds benchmark (%s, %d cores, %ss per run; server on cpu %d, wrk on cpu %d)\n\n' \
	"$(date -u +%FT%TZ)" "$ncpu" "$SECS" "$SRV_CPU" "$CLI_CPU"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
printf '%-14s %5s | %10s %9s %9s | %10s %9s %9s | %10s | %10s %10s\n' path conns "imds req/s" p50 p99 \
	"nginx rq/s" p50 p99 "floor rq/s" "imds/nginx" "imds/floor"
declare -A I100
for path in /v1/meta-data /v1/identity; do
	for c in 1 10 100; do
		hdr=
		[[ $path == /v1/identity ]] && hdr='Metadata: true'
		read -r ir i50 i99 < <(wrk_row "http://127.0.0.1:$IPORT$path" "$c" "$hdr")
		read -r nr n50 n99 < <(wrk_row "http://127.0.0.1:$NPORT$path" "$c" "$hdr")
		read -r fr _ _ < <(wrk_row "http://127.0.0.1:${FPORT[$path]}$path" "$c" "$hdr")
		printf '%-14s %5d | %10s %9s %9s | %10s %9s %9s | %10s | %10s %10s\n' "$path" "$c" "$ir" "$i50" "$i99" \
			"$nr" "$n50" "$n99" "$fr" "$(ratio "$ir" "$nr")" "$(ratio "$ir" "$fr")"
		[[ $c == 100 ]] && I100[$path]="$ir $fr $nr"
	done
done

# --- ETags and sessions at 100 connections, beside the plain rows above
etag=$(curl -sfI "http://127.0.0.1:$IPORT/v1/meta-data" | tr -d '\r' | sed -n 's/^ETag: //Ip')
tok=$(curl -sf -X PUT -H 'X-Metadata-Token-TTL-Seconds: 21600' "http://127.0.0.1:$IPORT/v1/session")
printf '\n%-48s | %10s %9s %9s | %10s %10s %10s\n' "100 connections" "imds req/s" p50 p99 "vs plain" "vs floor" "vs nginx"
extra_row() { # label path plain-path header...
	local label=$1 path=$2 base=$3 r50 r99 rr pr fr nr
	shift 3
	read -r rr r50 r99 < <(wrk_row "http://127.0.0.1:$IPORT$path" 100 "$@")
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
