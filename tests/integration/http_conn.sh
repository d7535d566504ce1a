#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2154  # R_* and scenario results are assigned by eval (http_lib.sh)
# http_conn: connections over time — head and idle timeouts, slow clients
# that must not delay others, 500 idle connections under a real cloud-init
# fetch, the connection cap, the rate limit, and SIGTERM draining a 16 MiB
# answer to a slow reader.  Timeouts are shortened to 300 ms where the test
# waits for them (IMDS_HEADER_TIMEOUT_MS, IMDS_IDLE_TIMEOUT_MS).
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/http_lib.sh
source "$(dirname "$0")/../lib/http_lib.sh"
WANT_ETAG=1 # the sidecar: its 200 data answers carry an ETag

J='application/json'
MD=$'=instance-id: default-testvm\nlocal-hostname: testvm\n'
GET_MD='GET /v1/meta-data HTTP/1.1\r\nHost: x\r\n\r\n'
HALF_MD='GET /v1/meta-data HTTP/1.1\r\nHost: x\r\n'
SHORT=(IMDS_HEADER_TIMEOUT_MS=300 IMDS_IDLE_TIMEOUT_MS=300 IMDS_RATE_LIMIT=0)
T408=$'={"error":"timeout","message":"request head not received in time"}\n'

echo "# head timeout (300 ms): 408, then close; idle timeout (300 ms)"
# No request completes on this server before its 408s: see the next server.
head -c 4194304 /dev/urandom >"$TEST_TMP/ud4m"
serve "${SHORT[@]}" IMDS_USER_DATA_FILE="$TEST_TMP/ud4m" || exit 1
want "HTTP/1.1 408 Request Timeout" "$J" "$T408" "Connection: close"
raw_is "half a head, then nothing: 408 and close" "$SRV_PORT" "send:$HALF_MD" eof:3
within "... the 408 comes after the 300 ms head timeout (s)" 0.25 1.5 "${R_first:-}"
minus "${R_t2:-9}" "${R_first:-0}"
within "... and the close right after it (s)" 0 0.1 "$DIFF"
raw_is "a head dripped a byte every 50 ms: 408 all the same (bytes do not extend the timeout)" "$SRV_PORT" \
	"drip:50:GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nX-Slow: $(printf 'a%.0s' {1..60})\r\n\r\n" eof:3
within "... the 408 comes at the head timeout, not later (s)" 0.25 1.5 "${R_first:-}"
alive "the server is still running after two 408s"
tmpf
: >"$F.empty"
raw_is_file "a connection that sends nothing is closed at the head timeout, silently" "$F.empty" "$SRV_PORT" eof:3
within "... after about 300 ms (s)" 0.25 1.5 "${R_t1:-}"
want "HTTP/1.1 200 OK" text/yaml "$MD"
raw_is "an idle keep-alive connection gets one answer, then is closed" "$SRV_PORT" "send:$GET_MD" read:1 eof:3
minus "${R_t3:-0}" "${R_t2:-9}"
within "... about 300 ms after the answer (s)" 0.25 1.5 "$DIFF"
tmpf
steps=()
for i in 1 2 3 4 5; do
	want "HTTP/1.1 200 OK" text/yaml "$MD"
	want_to "$F"
	steps+=("send:$GET_MD" read:1 sleep:0.15)
done
raw_is_file "a connection used every 150 ms stays open past the 300 ms idle timeout (5 requests, 0.75 s)" "$F" \
	"$SRV_PORT" "${steps[@]}"
# A client that stops reading holds a write; the idle timeout drops it.
if scen stopread "$SRV_PORT" /v1/user-data 0.8; then
	expect_eq "a client that stops reading a 4 MiB answer is cut off after the idle timeout" \
		"closed 1, short 1" "closed $closed, short $((body_len < 4194304))"
fi
want "HTTP/1.1 200 OK" text/yaml "$MD"
raw_is "... and the server goes on answering" "$SRV_PORT" "send:$GET_MD" read:1
server_stop

# A 408 after another client has come and gone: the core answers it with the
# request state of the last parsed request, which may belong to a freed
# connection (heap-use-after-free under ASan, wrong log fields otherwise).
serve "${SHORT[@]}" || exit 1
raw "$TEST_TMP/a.out" "$SRV_PORT" "send:$HALF_MD" eof:3 >/dev/null &
a_pid=$!
sleep 0.15
want "HTTP/1.1 200 OK" text/yaml "$MD" "Connection: close"
raw_is "another client's request during the stall: 200" "$SRV_PORT" \
	'send:GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' read:1 eof:1
wait "$a_pid"
want "HTTP/1.1 408 Request Timeout" "$J" "$T408" "Connection: close"
tmpf
want_to "$F"
same "408 to a stalled client after another client came and went: exact answer" "$F" "$TEST_TMP/a.out"
alive "the server is still running after that 408"
stop_within 3
mapfile -t l408 < <(grep -E ' 408 ' "$SRV_LOG")
expect_eq "exactly one access line for the 408" 1 "${#l408[@]}"
if [[ "${l408[0]:-}" =~ ^[0-9T:Z-]+\ ${SRV_HOST//./\\.}\ [^\ ]+\ [^\ ]+\ 408\ 66\ ([0-9]+)us$ ]]; then
	within "the 408 line: peer $SRV_HOST, 66 bytes, duration about the 300 ms head timeout (us)" 250000 1500000 "${BASH_REMATCH[1]}"
else
	not_ok "the 408 line: peer $SRV_HOST, 66 bytes, duration about the 300 ms head timeout (us)" "line: ${l408[0]:-}"
fi

echo "# slow clients delay no one (default 5 s timeouts)"
UD=$TEST_TMP/ud.yaml
printf '#cloud-config\nhostname: many-conns\nruncmd:\n  - [touch, /tmp/ok]\n' >"$UD"
# The 4 MiB answer is network-config, which cloud-init 22.4 never fetches.
serve IMDS_RATE_LIMIT=0 IMDS_USER_DATA_FILE="$UD" IMDS_NETWORK_CONFIG_FILE="$TEST_TMP/ud4m" || exit 1
if scen stall "$SRV_PORT" 50 /v1/network-config 10; then
	expect_eq "10 requests while 50 half heads stall, one drips and one leaves 4 MiB unread: all 200" "1" "$others_ok"
	within "... the slowest of them answered in under 100 ms (ms)" 0 100 "$others_max_ms"
	expect_eq "... and no stalled client was cut off to make room" "$stalled_total" "$stalled_open"
fi
want "HTTP/1.1 200 OK" text/yaml "$MD"
raw_is "after all that, a plain request: 200" "$SRV_PORT" "send:$GET_MD" read:1
alive "the server is still running"

echo "# 500 idle connections, then Debian's cloud-init fetches"
CI=$TEST_TMP/cloudinit.json
if scen hold "$SRV_PORT" silent:silent:200 idle:idle:200 half:half:100 --run-out "$CI" -- \
	"$PY" "$TESTS_LIB/cloudinit_client.py" --serial "ds=nocloud;s=$SRV_URL/v1/;dsmode=net" \
	--expect-userdata-file "$UD"; then
	expect_eq "500 connections held (200 silent, 200 keep-alive idle, 100 half heads): none closed" \
		"200 200 100" "$silent_open $idle_open $half_open"
	expect_eq "cloud-init's DataSourceNoCloudNet exits 0" 0 "$run_status"
	mapfile -t ci < <("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["ok"]); print(d["retries"]); print(d["elapsed_s"]); print(d["instance_id"])
print(d.get("userdata_matches")); print(d.get("local_hostname"))' "$CI" 2>&1)
	expect_eq "cloud-init: ok" True "${ci[0]:-}"
	expect_eq "cloud-init: no retries" 0 "${ci[1]:-}"
	within "cloud-init: the whole fetch in under 1 s (s)" 0 1 "${ci[2]:-}"
	expect_eq "cloud-init: instance-id" default-testvm "${ci[3]:-}"
	expect_eq "cloud-init: user-data byte-exact" True "${ci[4]:-}"
	expect_eq "cloud-init: local-hostname" testvm "${ci[5]:-}"
	expect_eq "... and the 500 connections are all still open afterwards" \
		"200 200 100" "$silent_open_after $idle_open_after $half_open_after"
fi
alive "the server is still running"
server_stop

echo "# the connection cap (IMDS_MAX_CONNS=50)"
serve IMDS_MAX_CONNS=50 IMDS_RATE_LIMIT=0 || exit 1
if scen hold "$SRV_PORT" idle:idle:60 --request /healthz; then
	expect_eq "60 keep-alive idle connections: the 10 oldest are closed" "1 2 3 4 5 6 7 8 9 10" "$idle_closed"
	expect_eq "a new request at the cap: 200" 200 "$req_status"
	expect_eq "... having closed the next-oldest idle one" "1 2 3 4 5 6 7 8 9 10 11" "$idle_closed_after"
fi
if scen hold "$SRV_PORT" silent:silent:30 idle:idle:30 --request /healthz; then
	expect_eq "30 silent then 30 idle connections: idle ones go first, oldest first" \
		"|1 2 3 4 5 6 7 8 9 10" "$silent_closed|$idle_closed"
	expect_eq "... a new request: 200, the next idle one closed, no silent one" \
		"200||1 2 3 4 5 6 7 8 9 10 11" "$req_status|$silent_closed_after|$idle_closed_after"
fi
if scen hold "$SRV_PORT" silent:silent:60 --request /healthz; then
	expect_eq "60 connections that sent nothing: the 10 oldest are closed" "1 2 3 4 5 6 7 8 9 10" "$silent_closed"
	expect_eq "... and a new request: 200" 200 "$req_status"
fi
want "HTTP/1.1 200 OK" text/yaml "$MD"
raw_is "after the cap scenarios, a plain request: 200" "$SRV_PORT" "send:$GET_MD" read:1
tmpf
for i in $(seq 1000); do printf '%b' 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'; done >"$F.1000"
raw "$F.out" "$SRV_PORT" "sendfile:$F.1000" read:1000
expect_eq "IMDS_RATE_LIMIT=0: 1000 requests at once, all answered 200" "1 200x1000" "$R_ok $R_codes"
server_stop

echo "# rate limit"
serve IMDS_RATE_LIMIT=5 || exit 1
RL=$'={"error":"rate_limited","message":"too many requests"}\n'
tmpf
SEVEN_WANT=$F
for i in 1 2 3 4 5; do
	want "HTTP/1.1 200 OK" text/yaml "$MD"
	want_to "$SEVEN_WANT"
done
for i in 1 2; do
	want "HTTP/1.1 429 Too Many Requests" "$J" "$RL" "Retry-After: 1"
	want_to "$SEVEN_WANT"
done
seven=$GET_MD$GET_MD$GET_MD$GET_MD$GET_MD$GET_MD$GET_MD
raw_is_file "IMDS_RATE_LIMIT=5: 7 requests at once: 5 answered, then 429 with Retry-After: 1 (exact)" "$SEVEN_WANT" \
	"$SRV_PORT" "send:$seven" read:7 quiet:0.05
sleep 1.05
raw_is_file "one second later the burst is back: again 5 answered, 2 refused" "$SEVEN_WANT" \
	"$SRV_PORT" "send:$seven" read:7
server_stop

# The same through curl, at 1/s so that slow process starts cannot refill it.
serve IMDS_RATE_LIMIT=1 || exit 1
want "HTTP/1.1 200 OK" text/plain "=OK"
curl_is "IMDS_RATE_LIMIT=1, curl: the first request is answered" "$SRV_URL/healthz"
want "HTTP/1.1 429 Too Many Requests" "$J" "$RL" "Retry-After: 1"
curl_is "... the second, at once: 429 with Retry-After: 1 (exact)" "$SRV_URL/healthz"
curl_is "... /v1/meta-data too: 429 (one bucket for every path)" "$SRV_URL/v1/meta-data"
sleep 1.05
want "HTTP/1.1 200 OK" text/plain "=OK"
curl_is "... and after the Retry-After second: answered again" "$SRV_URL/healthz"
server_stop

serve || exit 1
tmpf
for i in $(seq 150); do printf '%b' 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'; done >"$F.150"
raw "$F.out" "$SRV_PORT" "sendfile:$F.150" read:150
if [[ "$R_ok $R_codes" =~ ^1\ 200x([0-9]+)\ 429x([0-9]+)$ ]]; then
	within "default limit (100/s, burst 100): of 150 requests at once about 100 are answered" 100 105 "${BASH_REMATCH[1]}"
else
	not_ok "default limit (100/s, burst 100): of 150 requests at once about 100 are answered" "got: $R_ok $R_codes $R_err"
fi
kill -INT "$SRV_PID"
exited_within 3
expect_eq "SIGINT: exits 0 as well" 0 "$SRV_STATUS"

echo "# SIGTERM: finish what is in flight, refuse new connections, exit 0"
BIG=$TEST_TMP/ud16m
head -c 16777216 /dev/urandom >"$BIG"
serve IMDS_USER_DATA_FILE="$BIG" || exit 1
if scen slowread "$SRV_PORT" "$SRV_PID" /v1/user-data "$TEST_TMP/body16m"; then
	expect_eq "16 MiB user-data to a slow reader: 200" "HTTP/1.1 200 OK" "$status_line"
	expect_eq "... Content-Length 16777216, and all of it received after SIGTERM mid-way" \
		"16777216 16777216" "$content_length $body_len"
	expect_eq "... sha256 of what was received equals the file's" \
		"$(sha256sum <"$BIG" | cut -d' ' -f1)" "$body_sha256"
	within "... the transfer really was in flight at the signal (s of reading after it)" 0.3 30 "$read_after_signal_s"
	expect_eq "... a new connection after the signal is refused" 1 "$refused"
	expect_eq "... then the server closes the connection" 1 "$closed"
fi
exited_within 3
expect_eq "... and exits 0 by itself once the answer is out" 0 "$SRV_STATUS"

serve || exit 1
if scen drain "$SRV_PORT" "$SRV_PID" "$TEST_TMP/drain.out"; then
	expect_eq "SIGTERM closes an idle keep-alive connection at once" 1 "$idle_closed"
	within "... within 0.5 s (s)" 0 0.5 "$idle_closed_s"
	expect_eq "SIGTERM: new connections are refused" 1 "$refused"
	want "HTTP/1.1 200 OK" text/yaml "$MD" "Connection: close"
	tmpf
	want_to "$F"
	same "a head half-sent at SIGTERM is answered when the rest arrives (Connection: close)" "$F" "$TEST_TMP/drain.out"
	expect_eq "... and that connection is then closed" 1 "$b_closed"
fi
exited_within 3
expect_eq "the draining server exits 0 once that request is answered" 0 "$SRV_STATUS"


tap_done
