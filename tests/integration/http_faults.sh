#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# http_faults: what a hostile or clumsy client does to both servers.
#  - descriptors exhausted (a soft nofile below the connections held): the
#    server must not spin on a listener it cannot accept from, logs the
#    episode once, and serves again as soon as descriptors come free;
#  - a client that writes a whole over-cap body before it reads (Python's
#    http.client): the server answers 413 and drains the rest before it
#    closes (lingering close), so the client reads the answer instead of a
#    connection reset.
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/certs.sh
source "$(dirname "$0")/../lib/certs.sh"

VARIANT=${IMDS_VARIANT:-debug}
WH=$REPO/build/$VARIANT/imds-webhook
FC=$REPO/tests/lib/fault_clients.py
NOFILE=32
HOLD=80
HOLDER=
WPID=
trap '[[ -n "$HOLDER" ]] && kill -KILL "$HOLDER" 2>/dev/null; [[ -n "$WPID" ]] && kill -KILL "$WPID" 2>/dev/null; server_cleanup' EXIT

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# hold_and_measure NAME PID PORT LOG PROBE...: HOLD silent connections against
# a server limited to NOFILE descriptors; CPU over 3 s, one log line, then
# the time from releasing them to the first answer of PROBE.
hold_and_measure() {
	local name=$1 pid=$2 port=$3 log=$4 ready t0 t1 i start elapsed
	shift 4
	ready=$TEST_TMP/ready.$RANDOM
	"$PY" "$FC" hold "$port" "$HOLD" "$ready" &
	HOLDER=$!
	for ((i = 0; i < 200; i++)); do
		[[ -s "$ready" ]] && break
		sleep 0.05
	done
	if [[ ! -s "$ready" ]]; then
		not_ok "$name: $HOLD clients connected"
		return
	fi
	sleep 0.5
	t0=$(ticks "$pid")
	sleep 3
	t1=$(ticks "$pid")
	local used=$((t1 - t0)) hz
	hz=$(getconf CLK_TCK)
	if ((used * 100 <= 10 * hz * 3)); then
		ok "$name: $HOLD clients held under nofile $NOFILE: $used CPU ticks in 3 s (at most 10%; a spinning loop takes ~$((3 * hz)))"
	else
		not_ok "$name: $HOLD clients held under nofile $NOFILE: $used CPU ticks in 3 s (want at most 10% of $((3 * hz)))"
	fi
	expect_eq "$name: descriptor exhaustion logged once for the episode" 1 \
		"$(grep -c 'pausing accept' "$log")"
	kill -TERM "$HOLDER" 2>/dev/null
	wait "$HOLDER" 2>/dev/null
	HOLDER=
	start=$(date +%s%N)
	local served=
	for ((i = 0; i < 30; i++)); do
		if "$@" >/dev/null 2>&1; then
			served=1
			break
		fi
		sleep 0.1
	done
	elapsed=$((($(date +%s%N) - start) / 1000000))
	if [[ -n "$served" ]] && ((elapsed < 1000)); then
		ok "$name: serving again ${elapsed} ms after the clients let go"
	else
		not_ok "$name: serving again within 1 s after the clients let go (${elapsed} ms, served=${served:-no})"
	fi
	check "$name: the end of the episode is logged" grep -q 'accepting again' "$log"
	check "$name: still running" kill -0 "$pid"
}

echo "# imds-server serve under nofile $NOFILE"
wrap=$TEST_TMP/lownofile
printf '#!/bin/bash\nulimit -n %s || exit 1\nexec %q "$@"\n' "$NOFILE" "$IMDS_SERVER" >"$wrap"
chmod +x "$wrap"
REAL_SERVER=$IMDS_SERVER
IMDS_SERVER=$wrap
if server_start IMDS_HEADER_TIMEOUT_MS=60000 IMDS_IDLE_TIMEOUT_MS=60000 IMDS_RATE_LIMIT=0; then
	expect_eq "the server's nofile limit is $NOFILE (hard = soft)" "$NOFILE" \
		"$(awk '/Max open files/ {print $4}' "/proc/$SRV_PID/limits")"
	hold_and_measure "imds-server" "$SRV_PID" "$SRV_PORT" "$SRV_LOG" \
		curl -sf --max-time 0.5 "$SRV_URL/v1/meta-data"
	server_stop
	expect_eq "imds-server exits cleanly after the episode" 0 "$SRV_STATUS"
else
	not_ok "imds-server started under nofile $NOFILE"
fi
IMDS_SERVER=$REAL_SERVER

echo "# the soft nofile limit is raised to the hard one at start"
if server_start -- ; then
	soft=$(awk '/Max open files/ {print $4}' "/proc/$SRV_PID/limits")
	hard=$(awk '/Max open files/ {print $5}' "/proc/$SRV_PID/limits")
	expect_eq "imds-server: soft nofile = hard nofile" "$hard" "$soft"
	server_stop
fi

echo "# lingering close: the whole body first, then the answer"
if server_start IMDS_RATE_LIMIT=0; then
	for size in 65536 1048576 4194304; do
		expect_eq "imds-server: GET with a $size-byte body written in full before reading: 413" \
			"413 body_not_allowed" "$("$PY" "$FC" writefirst "$SRV_PORT" GET /v1/meta-data "$size")"
	done
	expect_eq "imds-server: POST with a 1 MiB body written in full before reading: 413" \
		"413 body_not_allowed" "$("$PY" "$FC" writefirst "$SRV_PORT" POST /v1/user-data 1048576)"
	check "imds-server: answers normally after the lingering closes" \
		curl -sf --max-time 2 "$SRV_URL/v1/meta-data"
	server_stop
	expect_eq "imds-server: clean exit" 0 "$SRV_STATUS"
fi

echo "# imds-webhook: the same two faults over TLS"
if [[ ! -x "$WH" ]]; then
	not_ok "imds-webhook built at $WH"
	tap_done
	exit 1
fi
certs_ca "$TEST_TMP/ca"
certs_leaf "$TEST_TMP/ca" "$TEST_TMP/pair" ec 0A01
wh_start() { # [nofile]
	WLOG=$TEST_TMP/webhook.$RANDOM.log
	local pre=()
	# shellcheck disable=SC2016 # expanded by the inner bash
	[[ -n "${1:-}" ]] && pre=(bash -c 'ulimit -n "$0" || exit 1; exec "$@"' "$1")
	"${pre[@]}" "$WH" --listen 127.0.0.1:0 --tls-cert-file "$TEST_TMP/pair/tls.crt" \
		--tls-key-file "$TEST_TMP/pair/tls.key" --imds-image registry.example/imds-server:test \
		2>"$WLOG" &
	WPID=$!
	WPORT=
	for _ in $(seq 300); do
		WPORT=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$WLOG" | head -n1)
		[[ -n "$WPORT" ]] && break
		sleep 0.01
	done
	[[ -n "$WPORT" ]]
}
wh_stop() {
	kill -TERM "$WPID" 2>/dev/null
	WSTATUS=0
	wait "$WPID" || WSTATUS=$?
	WPID=
}
if wh_start; then
	for size in 4194304 6291456; do
		expect_eq "imds-webhook: POST /mutate with a $size-byte body written in full before reading: 413" \
			"413 body_too_large" \
			"$("$PY" "$FC" writefirst "$WPORT" POST /mutate "$size" --tls "$TEST_TMP/ca/ca.crt")"
	done
	check "imds-webhook: healthz after the lingering closes" \
		curl -sf --max-time 2 --cacert "$TEST_TMP/ca/ca.crt" "https://127.0.0.1:$WPORT/healthz"
	soft=$(awk '/Max open files/ {print $4}' "/proc/$WPID/limits")
	hard=$(awk '/Max open files/ {print $5}' "/proc/$WPID/limits")
	expect_eq "imds-webhook: soft nofile = hard nofile" "$hard" "$soft"
	wh_stop
	expect_eq "imds-webhook: clean exit" 0 "$WSTATUS"
else
	not_ok "imds-webhook started" "$(cat "$WLOG")"
fi
if wh_start "$NOFILE"; then
	hold_and_measure "imds-webhook" "$WPID" "$WPORT" "$WLOG" \
		curl -sf --max-time 0.5 --cacert "$TEST_TMP/ca/ca.crt" "https://127.0.0.1:$WPORT/healthz"
	wh_stop
	expect_eq "imds-webhook exits cleanly after the episode" 0 "$WSTATUS"
else
	not_ok "imds-webhook started under nofile $NOFILE" "$(cat "$WLOG")"
fi
for f in "$TEST_TMP"/webhook.*.log; do
	if grep -q -E 'AddressSanitizer|runtime error|LeakSanitizer' "$f"; then
		not_ok "webhook log free of sanitizer reports" "$(head -20 "$f")"
	fi
done
tap_done
