# server.sh — start and stop imds-server for a test (sourced).
#   server_start [VAR=value...] [-- serve-args...]
#       starts "$IMDS_SERVER serve --listen 127.0.0.1:0" with the identity of
#       a demo VM plus the given environment, waits until it serves, and sets
#       SRV_PID, SRV_PORT, SRV_URL (http://127.0.0.1:PORT), SRV_LOG.
#       IMDS_TEST_FAMILY=6: the same on [::1] (SRV_URL http://[::1]:PORT);
#       SRV_HOST (exported) is the address the clients connect to.
#   server_stop             SIGTERM, wait; sets SRV_STATUS to its exit status
# IMDS_SERVER defaults to build/debug/imds-server; tests/run.sh also runs
# every suite against the ASan build by setting it.
# shellcheck shell=bash

TESTS_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$TESTS_LIB/../.." && pwd)
IMDS_SERVER=${IMDS_SERVER:-$REPO/build/debug/imds-server}
# Debian's cloud-init is importable only by Debian's python.
PY=/usr/bin/python3
export IMDS_SERVER REPO PY

SRV_HOST=127.0.0.1 SRV_AT=127.0.0.1
if [[ ${IMDS_TEST_FAMILY:-4} == 6 ]]; then
	SRV_HOST=::1 SRV_AT='[::1]'
fi
export SRV_HOST
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/imds-test.XXXXXX")
SRV_PID=
trap 'server_cleanup' EXIT

server_cleanup() {
	[[ -n "$SRV_PID" ]] && kill -KILL "$SRV_PID" 2>/dev/null
	rm -rf "$TEST_TMP"
}

server_start() {
	local envs=() args=()
	while (($#)); do
		if [[ "$1" == -- ]]; then
			shift
			args=("$@")
			break
		fi
		envs+=("$1")
		shift
	done
	SRV_LOG=$TEST_TMP/server.$RANDOM.log
	env IMDS_NAMESPACE=default IMDS_VM_NAME=testvm IMDS_POD_NAME=virt-launcher-testvm-x7k2p \
		IMDS_SA_NAME=default IMDS_TOKEN_PATH="$TEST_TMP/tokens/token" "${envs[@]}" \
		"$IMDS_SERVER" serve --listen "$SRV_AT:0" "${args[@]}" 2>"$SRV_LOG" &
	SRV_PID=$!
	local i
	for ((i = 0; i < 200; i++)); do
		SRV_PORT=$(sed -n 's/.* on \(127\.0\.0\.1\|\[::1\]\):\([0-9]*\) .*/\2/p' "$SRV_LOG" 2>/dev/null | head -n1)
		[[ -n "$SRV_PORT" ]] && break
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.01
	done
	if [[ -z "$SRV_PORT" ]]; then
		echo "# server did not start:" >&2
		sed 's/^/#   /' "$SRV_LOG" >&2
		wait "$SRV_PID" 2>/dev/null
		SRV_PID=
		return 1
	fi
	# shellcheck disable=SC2034 # read by the suites
	SRV_URL=http://$SRV_AT:$SRV_PORT
}

server_stop() {
	[[ -n "$SRV_PID" ]] || return 0
	kill -TERM "$SRV_PID" 2>/dev/null
	# shellcheck disable=SC2034 # SRV_STATUS is read by the suites
	SRV_STATUS=0
	# shellcheck disable=SC2034
	wait "$SRV_PID" || SRV_STATUS=$?
	SRV_PID=
	server_log_clean
}

# A fake projected token: a real JWT layout with the given claims JSON.
make_jwt() {
	local claims=$1
	b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
	printf '%s.%s.%s' "$(printf '{"alg":"RS256","kid":"test"}' | b64url)" \
		"$(printf '%s' "$claims" | b64url)" "$(printf 'signature' | b64url)"
}

# Sanitizer reports in a server log fail the test that owns the server.
server_log_clean() {
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$SRV_LOG" 2>/dev/null; then
		not_ok "sanitizers quiet in $(basename "$SRV_LOG")" "$(grep -A20 -E 'Sanitizer|runtime error' "$SRV_LOG" | head -40)"
	fi
}
