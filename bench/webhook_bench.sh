#!/usr/bin/env bash
# The webhook under load: a ~20 KB opted-in virt-launcher pod review over
# TLS keep-alive at 1 and 50 connections (reviews/s, p50, p99), the cost of
# a full handshake, and VmHWM.  Anchors (issue "The admission webhook"):
# p99 <= 1 ms at 50 connections; VmHWM <= 10 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
SECS=${BENCH_SECONDS:-5}
PY=/usr/bin/python3
# shellcheck source=../tests/lib/certs.sh
. tests/lib/certs.sh

make --no-print-directory all >/dev/null
WH=$REPO/build/debug/imds-webhook
WORK=$(mktemp -d "${TMPDIR:-/tmp}/imds-whbench.XXXXXX")
WPID=
trap '[[ -n "$WPID" ]] && kill "$WPID" 2>/dev/null; rm -rf "$WORK"' EXIT
ncpu=$(nproc)
SRV_CPU=0
CLI_CPU=$((ncpu > 1 ? 1 : 0))

certs_ca "$WORK/ca"
certs_leaf "$WORK/ca" "$WORK/tls" ec 0A01
# ~20 KB: the KubeVirt 1.8 launcher pod fixture with 6 KB of inline user-data.
"$PY" - tests/fixtures/webhook/pod-kv18.json "$WORK/review.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
ann = r["request"]["object"]["metadata"].setdefault("annotations", {})
ann["imds.kubevirt.io/user-data"] = "#cloud-config\n" + "".join(
    "# padding line %04d to make a realistic user-data annotation\n" % i for i in range(190))
json.dump(r, open(sys.argv[2], "w"), separators=(",", ":"))
PYEOF
size=$(stat -c %s "$WORK/review.json")
cat >"$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$WORK/review.json", "rb")
wrk.body = f:read("*a")
f:close()
LUA

taskset -c "$SRV_CPU" "$WH" --listen 127.0.0.1:0 --tls-cert-file "$WORK/tls/tls.crt" \
	--tls-key-file "$WORK/tls/tls.key" --imds-image registry.example/imds-server:bench \
	2>"$WORK/wh.log" &
WPID=$!
PORT=
for _ in $(seq 200); do
	PORT=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$WORK/wh.log" 2>/dev/null | head -n1)
	[[ -n "$PORT" ]] && break
	sleep 0.01
done
[[ -n "$PORT" ]] || { cat "$WORK/wh.log"; exit 1; }
# The answer must really be a patch, or the figures measure an error path.
"$PY" -c '
import json, ssl, sys, urllib.request
c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE
req = urllib.request.Request(sys.argv[1], data=open(sys.argv[2], "rb").read(), headers={"Content-Type": "application/json"})
r = json.load(urllib.request.urlopen(req, context=c))["response"]
sys.exit(0 if r.get("patchType") == "JSONPatch" else "no patch in the answer: %r" % r)' \
	"https://127.0.0.1:$PORT/mutate" "$WORK/review.json"

printf '\nimds-webhook benchmark (%s, review %d bytes, %ss per run; webhook on cpu %d, wrk on cpu %d)\n\n' \
	"$(date -u +%FT%TZ)" "$size" "$SECS" "$SRV_CPU" "$CLI_CPU"
printf '%-28s %11s %9s %9s   %s\n' "TLS keep-alive" "reviews/s" p50 p99 anchor
for c in 1 50; do
	out=$(taskset -c "$CLI_CPU" wrk -t1 -c"$c" -d"${SECS}s" --latency -s "$WORK/post.lua" \
		"https://127.0.0.1:$PORT/mutate")
	rps=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' <<<"$out")
	p50=$(awk '$1=="50%" {print $2}' <<<"$out")
	p99=$(awk '$1=="99%" {print $2}' <<<"$out")
	non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
	printf '%-28s %11s %9s %9s   %s%s\n' "$c connection(s)" "$rps" "$p50" "$p99" \
		"$([[ $c == 50 ]] && echo 'p99 <= 1 ms')" "${non2xx:+  (non-2xx: $non2xx)}"
done
# Open loop: what the API server does (requests arrive on their own
# schedule); 50 connections sharing 200 reviews/s, far past any real
# cluster's pod creation rate.  The client is Python (asyncio + ssl): its
# own overhead is inside these figures.
read -r sent o50 o99 omax < <(taskset -c "$CLI_CPU" "$PY" bench/openloop.py "$PORT" "$WORK/review.json" 50 200 "$SECS")
printf '%-28s %11s %7sms %7sms   %s\n' "50 conns, open loop 200/s" "$sent sent" "$o50" "$o99" "p99 <= 1 ms (max ${omax} ms)"
# Sequential full handshakes (no session reuse), client on the other core:
# the median wall time is the handshake's cost on the server's side.
hs=$(taskset -c "$CLI_CPU" "$PY" - "$PORT" <<'PYEOF'
import socket, ssl, statistics, sys, time
c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE
ts = []
for _ in range(300):
    t0 = time.perf_counter()
    s = c.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
    ts.append((time.perf_counter() - t0) * 1000)
    s.close()
print("%.3f ms median wall time (p90 %.3f ms, 300 sequential)" % (statistics.median(ts), sorted(ts)[269]))
PYEOF
)
printf '%-28s %s\n' "full handshake (ECDSA P-256)" "${hs:-?}"
printf '%-28s %8s KiB   %s\n' "VmHWM after the run" "$(awk '/VmHWM/ {print $2}' "/proc/$WPID/status")" "<= 10240 KiB"
