#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2154  # R_* and scenario results are assigned by eval (http_lib.sh)
# http_cli: the command line and configuration of `imds-server serve`
# (errors are one stderr line naming the culprit, exit 2), serving as a
# non-root user, and the access log (one line per request, no secrets).
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/http_lib.sh
source "$(dirname "$0")/../lib/http_lib.sh"
WANT_ETAG=1 # the sidecar: its 200 data answers carry an ETag

MD=$'=instance-id: default-testvm\nlocal-hostname: testvm\n'
BASE_ENV=(PATH="$PATH" IMDS_NAMESPACE=default IMDS_VM_NAME=testvm
	IMDS_TOKEN_PATH="$TEST_TMP/tokens/token")
[[ -n "${ASAN_OPTIONS:-}" ]] && BASE_ENV+=(ASAN_OPTIONS="$ASAN_OPTIONS")
[[ -n "${UBSAN_OPTIONS:-}" ]] && BASE_ENV+=(UBSAN_OPTIONS="$UBSAN_OPTIONS")

# run_cmd ENV-ASSIGNMENTS... -- ARGS...: runs the server binary with exactly
# that environment (env -i), at most 5 s; RC, OUT, ERR (stderr lines in ERRL).
run_cmd() {
	local envs=()
	while (($#)) && [[ "$1" != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	tmpf
	env -i "${envs[@]}" timeout 5 "$IMDS_SERVER" "$@" >"$F.out" 2>"$F.err" </dev/null
	RC=$?
	OUT=$(<"$F.out")
	ERR=$(<"$F.err")
	mapfile -t ERRL <"$F.err"
}

# config_error NAME WORD ENV... -- ARGS...: exit 2, nothing on stdout, and
# exactly one stderr line, "imds-server: ..." naming WORD.
config_error() {
	local name=$1 word=$2
	shift 2
	run_cmd "$@"
	if [[ $RC == 2 && -z "$OUT" && ${#ERRL[@]} == 1 && "${ERRL[0]}" == "imds-server: "*"$word"* ]]; then
		ok "$name -> exit 2: ${ERRL[0]}"
	else
		not_ok "$name -> exit 2, one stderr line naming $word" "exit status: $RC" "stdout: $OUT" "stderr: $ERR"
	fi
}

echo "# configuration errors: one line naming the culprit, exit 2"
SERVE=(-- serve --listen 127.0.0.1:0)
config_error "IMDS_NAMESPACE unset" IMDS_NAMESPACE PATH="$PATH" IMDS_VM_NAME=testvm "${SERVE[@]}"
config_error "IMDS_NAMESPACE empty" IMDS_NAMESPACE PATH="$PATH" IMDS_NAMESPACE= IMDS_VM_NAME=testvm "${SERVE[@]}"
config_error "IMDS_VM_NAME unset" IMDS_VM_NAME PATH="$PATH" IMDS_NAMESPACE=default "${SERVE[@]}"
config_error "nothing set at all" IMDS_NAMESPACE PATH="$PATH" "${SERVE[@]}"
config_error "IMDS_RATE_LIMIT=abc" IMDS_RATE_LIMIT "${BASE_ENV[@]}" IMDS_RATE_LIMIT=abc "${SERVE[@]}"
config_error "IMDS_RATE_LIMIT=-1" IMDS_RATE_LIMIT "${BASE_ENV[@]}" IMDS_RATE_LIMIT=-1 "${SERVE[@]}"
config_error "IMDS_RATE_LIMIT=10x" IMDS_RATE_LIMIT "${BASE_ENV[@]}" IMDS_RATE_LIMIT=10x "${SERVE[@]}"
config_error "IMDS_RATE_LIMIT=99999999999 (overflows)" IMDS_RATE_LIMIT "${BASE_ENV[@]}" IMDS_RATE_LIMIT=99999999999 "${SERVE[@]}"
config_error "IMDS_USER_DATA_FILE a missing path" "IMDS_USER_DATA_FILE" "${BASE_ENV[@]}" IMDS_USER_DATA_FILE="$TEST_TMP/nope/user-data" "${SERVE[@]}"
if [[ "${ERRL[0]:-}" == *"$TEST_TMP/nope/user-data"* ]]; then
	ok "... and the line shows the path"
else
	not_ok "... and the line shows the path" "${ERRL[0]:-}"
fi
mkdir -p "$TEST_TMP/a-dir"
config_error "IMDS_USER_DATA_FILE a directory" IMDS_USER_DATA_FILE "${BASE_ENV[@]}" IMDS_USER_DATA_FILE="$TEST_TMP/a-dir" "${SERVE[@]}"
config_error "IMDS_VENDOR_DATA_FILE a missing path" IMDS_VENDOR_DATA_FILE "${BASE_ENV[@]}" IMDS_VENDOR_DATA_FILE=/nonexistent/vendor "${SERVE[@]}"
config_error "IMDS_NETWORK_CONFIG_FILE a directory" IMDS_NETWORK_CONFIG_FILE "${BASE_ENV[@]}" IMDS_NETWORK_CONFIG_FILE="$TEST_TMP/a-dir" "${SERVE[@]}"
config_error "IMDS_TOKEN_PATH relative" IMDS_TOKEN_PATH PATH="$PATH" IMDS_NAMESPACE=default IMDS_VM_NAME=testvm IMDS_TOKEN_PATH=tokens/token "${SERVE[@]}"
config_error "IMDS_HEADER_TIMEOUT_MS=5 (under 10)" IMDS_HEADER_TIMEOUT_MS "${BASE_ENV[@]}" IMDS_HEADER_TIMEOUT_MS=5 "${SERVE[@]}"
config_error "IMDS_MAX_CONNS=0" IMDS_MAX_CONNS "${BASE_ENV[@]}" IMDS_MAX_CONNS=0 "${SERVE[@]}"
config_error "IMDS_VM_NAME with a newline" IMDS_VM_NAME PATH="$PATH" IMDS_NAMESPACE=default IMDS_VM_NAME=$'a\nb' "${SERVE[@]}"
config_error "--listen nonsense" "nonsense" "${BASE_ENV[@]}" -- serve --listen nonsense
config_error "--listen 127.0.0.1:99999" "127.0.0.1:99999" "${BASE_ENV[@]}" -- serve --listen 127.0.0.1:99999
config_error "--listen 127.0.0.1 (no port)" "127.0.0.1" "${BASE_ENV[@]}" -- serve --listen 127.0.0.1
config_error "--listen 300.1.1.1:80" "300.1.1.1:80" "${BASE_ENV[@]}" -- serve --listen 300.1.1.1:80
config_error "IMDS_LISTEN_ADDR=bogus" "bogus" "${BASE_ENV[@]}" IMDS_LISTEN_ADDR=bogus -- serve

echo "# the command line"
run_cmd "${BASE_ENV[@]}" -- version
if [[ $RC == 0 && "$OUT" =~ ^imds-server\ [^[:space:]]+$ && -z "$ERR" ]]; then
	ok "imds-server version: exit 0, one line 'imds-server <version>' ($OUT)"
else
	not_ok "imds-server version: exit 0, one line 'imds-server <version>'" "exit $RC" "stdout: $OUT" "stderr: $ERR"
fi
V1=$OUT
run_cmd "${BASE_ENV[@]}" -- --version
expect_eq "imds-server --version: the same line, exit 0" "0 $V1" "$RC $OUT"
for args in "--help" "-h" "help" "serve --help"; do
	# shellcheck disable=SC2086
	run_cmd PATH="$PATH" -- $args
	if [[ $RC == 0 && "$OUT" == "usage: imds-server <command> [options]"* && "$OUT" == *"serve [--listen ADDR]"* && -z "$ERR" ]]; then
		ok "imds-server $args: usage on stdout, exit 0"
	else
		not_ok "imds-server $args: usage on stdout, exit 0" "exit $RC" "stdout: ${OUT:0:200}" "stderr: ${ERR:0:200}"
	fi
done
run_cmd "${BASE_ENV[@]}" -- frobnicate
if [[ $RC == 2 && -z "$OUT" && "${ERRL[0]:-}" == "imds-server: unknown command 'frobnicate'" ]]; then
	ok "unknown command: exit 2, 'imds-server: unknown command 'frobnicate'' then usage on stderr"
else
	not_ok "unknown command: exit 2 and a line naming it" "exit $RC" "stdout: $OUT" "stderr: $ERR"
fi
run_cmd "${BASE_ENV[@]}" --
expect_eq "no command: exit 2, usage on stderr" "2 usage: imds-server <command> [options]" "$RC ${ERRL[0]:-}"
run_cmd "${BASE_ENV[@]}" -- serve --bogus
expect_eq "serve --bogus: exit 2, 'unknown argument'" "2 imds-server serve: unknown argument '--bogus'" "$RC ${ERRL[0]:-}"

server_start IMDS_RATE_LIMIT=0 || exit 1
run_cmd "${BASE_ENV[@]}" -- serve --listen "127.0.0.1:$SRV_PORT"
if [[ $RC == 1 && ${#ERRL[@]} == 1 && "${ERRL[0]}" == *"127.0.0.1:$SRV_PORT"* ]]; then
	ok "--listen on a port in use: exit 1, one line naming the address (${ERRL[0]})"
else
	not_ok "--listen on a port in use: exit 1, one line naming the address" "exit $RC" "stderr: $ERR"
fi
server_stop

echo "# serve as a non-root user"
if [[ $(id -u) != 0 ]]; then
	server_start || exit 1
	expect_eq "running as uid $(id -u): the server's uid" "$(id -u)" "$(awk '/^Uid:/ { print $2 }' "/proc/$SRV_PID/status")"
	want "HTTP/1.1 200 OK" text/yaml "$MD"
	curl_is "non-root: GET /v1/meta-data" "$SRV_URL/v1/meta-data"
	server_stop
elif ! command -v setpriv >/dev/null; then
	skip "serve as uid 65534" "setpriv (util-linux) is not installed"
else
	cat >"$TEST_TMP/as-nobody" <<EOF
#!/bin/sh
exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$IMDS_SERVER" "\$@"
EOF
	chmod +x "$TEST_TMP/as-nobody"
	REAL_SERVER=$IMDS_SERVER
	IMDS_SERVER=$TEST_TMP/as-nobody
	if server_start; then
		expect_eq "setpriv --reuid=65534: the serving process runs as uid/gid 65534" "65534 65534 65534 65534|65534 65534 65534 65534" \
			"$(awk '/^Uid:/ { printf "%s %s %s %s|", $2, $3, $4, $5 } /^Gid:/ { printf "%s %s %s %s", $2, $3, $4, $5 }' "/proc/$SRV_PID/status")"
		expect_eq "... with no effective capabilities" 0000000000000000 "$(awk '/^CapEff:/ { print $2 }' "/proc/$SRV_PID/status")"
		want "HTTP/1.1 200 OK" text/yaml "$MD"
		curl_is "... and serve --listen 127.0.0.1:0 answers GET /v1/meta-data" "$SRV_URL/v1/meta-data"
		want "HTTP/1.1 200 OK" text/plain "=OK"
		curl_is "... and GET /healthz" "$SRV_URL/healthz"
		server_stop
		expect_eq "... and exits 0 on SIGTERM" 0 "$SRV_STATUS"
	else
		not_ok "setpriv --reuid=65534: serve --listen 127.0.0.1:0 starts"
	fi
	IMDS_SERVER=$REAL_SERVER
fi

echo "# the access log: one line per request, no token, no user-data"
mkdir -p "$TEST_TMP/tokens/secret-aud"
SECRET_JWT=$(make_jwt '{"sub":"LOGCHECK-TOKEN-CLAIM","exp":1767225600}')
printf '%s\n' "$SECRET_JWT" >"$TEST_TMP/tokens/token"
printf '%s\n' "$SECRET_JWT" >"$TEST_TMP/tokens/secret-aud/token"
UD_MARK="USERDATA-MARKER-7f3a9c"
printf '#cloud-config\n# %s\nhostname: logged\n' "$UD_MARK" >"$TEST_TMP/ud-log"
UD_LEN=$(stat -c %s "$TEST_TMP/ud-log")
serve IMDS_RATE_LIMIT=0 IMDS_USER_DATA_FILE="$TEST_TMP/ud-log" || exit 1
P=$SRV_PORT
tmpf
L=$F
raw "$L.1" "$P" 'send:GET /v1/meta-data HTTP/1.1\r\nHost: x\r\n\r\n' read:1 \
	'send:GET /v1/user-data HTTP/1.1\r\nHost: x\r\n\r\n' read:1 \
	'send:HEAD /v1/user-data HTTP/1.1\r\nHost: x\r\n\r\n' head:1 \
	'send:GET /v1/token HTTP/1.1\r\nHost: x\r\nMetadata: true\r\n\r\n' read:1 \
	'send:GET /v1/token?audience=secret-aud HTTP/1.1\r\nHost: x\r\nMetadata: true\r\n\r\n' read:1 \
	'send:GET /v1/token HTTP/1.1\r\nHost: x\r\n\r\n' read:1 \
	'send:POST /v1/identity HTTP/1.1\r\nHost: x\r\n\r\n' read:1 \
	'send:GET /latest/meta-data/nope HTTP/1.1\r\nHost: x\r\n\r\n' read:1 \
	'send:GET /openstack/latest/user_data HTTP/1.1\r\nHost: x\r\n\r\n' read:1 \
	'send:GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' read:1 eof:2
expect_eq "10 requests on one connection answered" "1 200x5 400x1 405x1 404x1 200x2" "$R_ok $R_codes"
raw "$L.2" "$P" 'send:GET /v1/meta-data HTTP/1.1\r\nHost : x\r\n\r\n' eof:2
seen=0
grep -qF "$SECRET_JWT" "$L.1" && grep -qF "$UD_MARK" "$L.1" && seen=1
expect_eq "(the token and the user-data were in the answers)" 1 "$seen"
stop_within 3
expect_eq "the server exits 0" 0 "$SRV_STATUS"
# Normalize the per-line time and duration; everything else must match.
mapfile -t got < <(grep -vF ' imds-server info: ' "$SRV_LOG" |
	sed -E 's/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z /T /; s/ [0-9]+us$/ Nus/')
wantl=(
	"T 127.0.0.1 GET /v1/meta-data 200 51 Nus"
	"T 127.0.0.1 GET /v1/user-data 200 $UD_LEN Nus"
	"T 127.0.0.1 HEAD /v1/user-data 200 0 Nus"
	"T 127.0.0.1 GET /v1/token 200 $((${#SECRET_JWT} + 58)) Nus"
	"T 127.0.0.1 GET /v1/token 200 $((${#SECRET_JWT} + 58)) Nus"
	"T 127.0.0.1 GET /v1/token 400 73 Nus"
	"T 127.0.0.1 POST /v1/identity 405 75 Nus"
	"T 127.0.0.1 GET /latest/meta-data/nope 404 47 Nus"
	"T 127.0.0.1 GET /openstack/latest/user_data 200 $UD_LEN Nus"
	"T 127.0.0.1 GET /v1/meta-data 200 51 Nus"
)
expect_eq "one access line per request: time, peer, method, path (no query), status, bytes, µs" \
	"$(printf '%s\n' "${wantl[@]}")" "$(printf '%s\n' "${got[@]:0:10}")"
if [[ "${got[10]:-}" =~ ^T\ 127\.0\.0\.1\ [^\ ]+\ [^\ ]+\ 400\ 57\ Nus$ && ${#got[@]} == 11 ]]; then
	ok "a malformed request ('Host : x') gets one line too, status 400 (${got[10]})"
else
	not_ok "a malformed request ('Host : x') gets one line too, status 400" "$(printf '%s\n' "${got[@]:10}")"
fi
bad=$(grep -cE -v '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z ' "$SRV_LOG")
expect_eq "every log line starts with an RFC 3339 UTC time" 0 "$bad"
expect_eq "the token never appears in the log" 0 "$(grep -cF "$SECRET_JWT" "$SRV_LOG")"
expect_eq "... nor any part of it (its payload)" 0 "$(grep -cF "$(cut -d. -f2 <<<"$SECRET_JWT")" "$SRV_LOG")"
expect_eq "the user-data never appears in the log" 0 "$(grep -cF "$UD_MARK" "$SRV_LOG")"
expect_eq "the audience asked for is not logged either (no query strings)" 0 "$(grep -cF "secret-aud" "$SRV_LOG")"

tap_done
