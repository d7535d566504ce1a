#!/usr/bin/env bash
# ?wait_for_change=true&last_etag=<hex>&timeout_sec=<s> against the real
# server: an answer at once when the tag differs, else held until the data
# changes (inotify on the files' folders, kubelet's ..data swap included) or
# the timeout; at most 64 waiters (503 + Retry-After past it), each one
# connection and nothing else; a waiter that goes away is forgotten; SIGTERM
# answers the waiters at once.
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/http_lib.sh
source "$(dirname "$0")/../lib/http_lib.sh"

D=$TEST_TMP/data
mkdir -p "$D/..1"
printf '#cloud-config\nhostname: one\n' >"$D/..1/user-data"
ln -s ..1 "$D/..data"
ln -s ..data/user-data "$D/user-data"
printf 'aaa.bbb.ccc' >"$TEST_TMP/token"
swap() { # the kubelet way: a new folder, ..data renamed over, the old one removed
	local n=$1 old
	mkdir -p "$D/..$n"
	printf '#cloud-config\nhostname: %s\n' "$n" >"$D/..$n/user-data"
	old=$(readlink "$D/..data")
	ln -sfn "..$n" "$D/..data_tmp"
	mv -T "$D/..data_tmp" "$D/..data"
	rm -rf "${D:?}/$old"
}
serve IMDS_USER_DATA_FILE="$D/user-data" IMDS_TOKEN_PATH="$TEST_TMP/token" IMDS_RATE_LIMIT=0 || exit 1
U=$SRV_URL
etag() { curl -s -D - -o /dev/null "$@" | sed -n 's/^ETag: "\(.*\)"\r$/\1/p'; }
W() { echo "wait_for_change=true&last_etag=$1&timeout_sec=${2:-10}"; }

E=$(etag "$U/v1/user-data")
out=$(curl -s -w ' %{http_code} %{time_total}' "$U/v1/user-data?$(W 0000000000000000)")
if [[ $out == *"hostname: one"*" 200 "* ]] && "$PY" -c "import sys; sys.exit(0 if ${out##* } < 0.5 else 1)"; then
	ok "another last_etag: the current data at once (${out##* } s)"
else
	not_ok "another last_etag: the current data at once" "$out"
fi

# One waiter, then a ..data swap: answered within 1 s of the change.
"$PY" - "$U/v1/user-data?$(W "$E" 20)" "$TEST_TMP/w1" <<'EOF' &
import sys, time, urllib.request
t0 = time.time()
with urllib.request.urlopen(sys.argv[1], timeout=30) as r:
    body = r.read().decode()
    tag = r.headers.get("ETag")
open(sys.argv[2], "w").write("%.6f %s %s" % (time.time(), tag, body.splitlines()[-1]))
EOF
WPID=$!
for _ in $(seq 100); do grep -q 'GET /v1/user-data' "$SRV_LOG" && break; sleep 0.02; done
sleep 1
t_change=$EPOCHREALTIME
swap two
wait "$WPID"
read -r t_ans tag last <"$TEST_TMP/w1"
ms=$(awk -v a="${t_change/,/.}" -v b="$t_ans" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
if [[ $last == "hostname: two" ]] && ((ms < 1000)); then
	ok "a waiter gets the new user-data ${ms} ms after the ..data swap (< 1 s)"
else
	not_ok "a waiter gets the new user-data within 1 s of the ..data swap" "$ms ms: $(cat "$TEST_TMP/w1")"
fi
expect_eq "its ETag is the new data's" "\"$(etag "$U/v1/user-data" | tr -d '"')\"" "$tag"
WAIT_MS=$ms

# The token file rewritten in place: a waiter on /v1/token wakes too.
T=$(etag -H 'Metadata: true' "$U/v1/token")
(curl -s -H 'Metadata: true' "$U/v1/token?$(W "$T" 20)" >"$TEST_TMP/w2") &
WPID=$!
sleep 0.5
printf 'xxx.yyy.zzz' >"$TEST_TMP/token"
wait "$WPID"
expect_eq "a waiter on /v1/token gets the rewritten token" '{"token":"xxx.yyy.zzz"}' "$(cat "$TEST_TMP/w2")"

# Nothing changes: the current data at the timeout.
E=$(etag "$U/v1/user-data")
out=$(curl -s -w ' %{http_code} %{time_total}' "$U/v1/user-data?$(W "$E" 1)")
if [[ $out == *"hostname: two"*" 200 "* ]] && "$PY" -c "import sys; t=${out##* }; sys.exit(0 if 0.95 < t < 2 else 1)"; then
	ok "no change: 200 with the current data at timeout_sec (${out##* } s)"
else
	not_ok "no change: 200 with the current data at timeout_sec" "$out"
fi

# 64 waiters at most: each holds one connection; the 65th gets 503.
c0=$(find "/proc/$SRV_PID/fd" -mindepth 1 | wc -l)
rss0=$(awk '/^VmRSS:/ {print $2}' "/proc/$SRV_PID/status")
pids=()
for i in $(seq 64); do
	curl -s -o "$TEST_TMP/m$i" "$U/v1/user-data?$(W "$E" 30)" &
	pids+=($!)
done
for _ in $(seq 200); do
	(($(find "/proc/$SRV_PID/fd" -mindepth 1 | wc -l) >= c0 + 64)) && break
	sleep 0.02
done
sleep 0.3
c1=$(find "/proc/$SRV_PID/fd" -mindepth 1 | wc -l)
rss1=$(awk '/^VmRSS:/ {print $2}' "/proc/$SRV_PID/status")
expect_eq "64 waiters: one descriptor each" 64 "$((c1 - c0))"
echo "# 64 waiters: VmRSS $rss0 -> $rss1 kB"
out=$(curl -s -D - "$U/v1/user-data?$(W "$E" 30)" | tr -d '\r')
if [[ $out == *"503 Service Unavailable"*"Retry-After: 1"*"too_many_waiters"* ]]; then
	ok "the 65th waiter: 503 with Retry-After"
else
	not_ok "the 65th waiter: 503 with Retry-After" "$out"
fi
expect_eq "a plain request is still served meanwhile" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$U/v1/meta-data")"
# Waiters that go away are forgotten: their places are free again.
kill "${pids[@]:0:10}" 2>/dev/null
wait "${pids[@]:0:10}" 2>/dev/null
sleep 0.3
expect_eq "10 waiters gone: 10 descriptors back" "$((c0 + 54))" "$(find "/proc/$SRV_PID/fd" -mindepth 1 | wc -l)"
out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$U/v1/user-data?$(W "$E" 1)")
expect_eq "a new waiter takes a freed place (200 at its timeout)" 200 "${out%% *}"

# SIGTERM answers the waiters at once, with what there is.
t0=$EPOCHREALTIME
server_stop
wait "${pids[@]:10}"
secs=$(awk -v a="${t0/,/.}" -v b="${EPOCHREALTIME/,/.}" 'BEGIN { printf "%.2f", b - a }')
n=0
for i in $(seq 11 64); do grep -q 'hostname: two' "$TEST_TMP/m$i" && n=$((n + 1)); done
expect_eq "SIGTERM: all 54 waiters answered with the data (${secs} s)" 54 "$n"
expect_eq "SIGTERM: exit 0" 0 "$SRV_STATUS"
echo "# wait for change: answered ${WAIT_MS} ms after a ..data swap"
tap_done
