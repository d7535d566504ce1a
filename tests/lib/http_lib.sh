# http_lib.sh — helpers shared by tests/integration/http_*.sh (sourced after
# tap.sh and server.sh).  Responses are compared whole and byte for byte: the
# status line, every header in order, the body.  Only the value of the Date
# header is masked as "X", after its format (IMF-fixdate) has been checked.
# Forking is slow on small CI machines, so the helpers stay in bash builtins
# where they can.
#
#   want STATUS_LINE CTYPE BODY [HEADER...]
#       the exact response the server must send: status line, Date,
#       Content-Type (none when CTYPE is -), Content-Length of BODY, then the
#       HEADER lines in order (e.g. "Connection: close", "Allow: GET, HEAD"),
#       and with WANT_ETAG=1 the ETag of BODY last on a 200 that is not
#       text/plain (NOETAG among the headers: none).
#       BODY is =TEXT for literal bytes (use $'..' for \n) or a file.
#   want_head ...  the same, as the answer to HEAD: the GET head, no body
#   want_to FILE   appends the last want's bytes to FILE (pipelined answers)
#   curl_is NAME CURL-ARGS...
#       one request with curl, ok when the response is exactly the last want;
#       the body received is left in $GOT_BODY
#   raw OUT PORT STEP...      tests/lib/http_raw.py, its report into R_* vars
#   raw_is NAME PORT STEP...  ok when every step succeeded and the bytes
#                             received are exactly the last want
#   raw_is_file NAME FILE PORT STEP...   the same against the bytes of FILE
#   same NAME WANT GOT     ok when the files are identical (cmp)
#   within NAME LO HI V    ok when LO <= V <= HI (decimals allowed)
#   scen SCENARIO ARGS...  tests/lib/http_scenarios.py, report into variables
#   serve ENV...   server_start, and if the server dies (ASan), the next
#                  request reports the crash and restarts it on the same port
# shellcheck shell=bash
# shellcheck disable=SC2034  # R_*, DIFF, SRV_STATUS... are results for the suites

HTTP_RAW=$TESTS_LIB/http_raw.py
HTTP_SCEN=$TESTS_LIB/http_scenarios.py
N_FILE=0
CR=$'\r'
DATE_RE="^Date: (Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-3][0-9] (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) 20[0-9]{2} [0-2][0-9]:[0-5][0-9]:[0-6][0-9] GMT$CR\$"

# tmpf: sets F to a new file name under $TEST_TMP (no fork).
tmpf() {
	N_FILE=$((N_FILE + 1))
	F=$TEST_TMP/f.$N_FILE
}

# bytes: the length in bytes of $1.
bytes() {
	local LC_ALL=C
	BYTES=${#1}
}

# etag_of FILE: the sidecar's ETag of those bytes (src/core/blob.c blob_hash)
etag_of() {
	"$PY" -c '
import sys
d = open(sys.argv[1], "rb").read()
M = (1 << 64) - 1
h = 0xcbf29ce484222325
for b in d:
    h = ((h ^ b) * 0x100000001b3) & M
h ^= (len(d) * 0x9e3779b97f4a7c15) & M
h ^= h >> 30; h = (h * 0xbf58476d1ce4e5b9) & M
h ^= h >> 27; h = (h * 0x94d049bb133111eb) & M
h ^= h >> 31
print("\"%016x\"" % (h or 1))' "$1"
}

_want() { # head_only STATUS CTYPE BODY HEADER...
	local head_only=$1 status=$2 ctype=$3 body=$4 len h etag=0
	shift 4
	# The sidecar's 200 data answers end with an ETag of their body: with
	# WANT_ETAG=1 a 200 that is not text/plain (healthz, the OpenStack
	# lists, the password) gets it, unless NOETAG is among the headers.
	if [[ ${WANT_ETAG:-0} == 1 && $status == "HTTP/1.1 200 OK" && $ctype != text/plain ]]; then
		etag=1
		for h in "$@"; do [[ $h == NOETAG ]] && etag=0; done
	fi
	W_BODY='' W_BFILE=''
	if [[ "$body" == =* ]]; then
		W_BODY=${body#=}
		bytes "$W_BODY"
		len=$BYTES
	else
		W_BFILE=$body
		len=$(stat -c %s "$body")
	fi
	W_HEAD="$status$CR"$'\n'"Date: X$CR"$'\n'
	[[ "$ctype" == - ]] || W_HEAD+="Content-Type: $ctype$CR"$'\n'
	W_HEAD+="Content-Length: $len$CR"$'\n'
	for h in "$@"; do [[ $h == NOETAG ]] || W_HEAD+="$h$CR"$'\n'; done
	if ((etag)); then
		local bf=$W_BFILE
		if [[ -z $bf ]]; then
			bf=$TEST_TMP/etag.body # not tmpf: the caller may hold $F
			printf '%s' "$W_BODY" >"$bf"
		fi
		W_HEAD+="ETag: $(etag_of "$bf")$CR"$'\n'
	fi
	W_HEAD+="$CR"$'\n'
	if ((head_only)); then
		W_BODY='' W_BFILE=''
	fi
}
want() { _want 0 "$@"; }
want_head() { _want 1 "$@"; }

want_to() {
	printf '%s%s' "$W_HEAD" "$W_BODY" >>"$1"
	[[ -z "$W_BFILE" ]] || cat "$W_BFILE" >>"$1"
}

# Shows where two files differ, readably for text and binary alike.
show_diff() {
	local w=$1 g=$2
	echo "cmp: $(cmp "$w" "$g" 2>&1)"
	echo "want ($(stat -c %s "$w") bytes): $(head -c 600 "$w" | cat -v | tr '\n' '|')"
	echo "got  ($(stat -c %s "$g") bytes): $(head -c 600 "$g" | cat -v | tr '\n' '|')"
}

same() {
	if cmp -s "$2" "$3"; then
		ok "$1"
	else
		not_ok "$1" "$(show_diff "$2" "$3")"
	fi
}

curl_is() {
	local name=$1 h got_head got_body="" why=""
	shift
	revive
	tmpf
	h=$F.h
	GOT_BODY=$F.b
	if ! curl -s -S --max-time 5 -D "$h" -o "$GOT_BODY" "$@" 2>"$F.err"; then
		not_ok "$name" "curl $* failed: $(<"$F.err")"
		return
	fi
	IFS= read -r -d '' got_head <"$h"
	local line2=${got_head#*$'\n'}
	line2=${line2%%$'\n'*}
	if [[ "$line2" =~ $DATE_RE ]]; then
		got_head=${got_head/"$line2"/"Date: X$CR"}
	else
		why="the second header line is not a well-formed Date: $line2"
	fi
	if [[ -z "$why" && "$got_head" != "$W_HEAD" ]]; then
		why="head differs"
	fi
	if [[ -z "$why" ]]; then
		if [[ -n "$W_BFILE" ]]; then
			cmp -s "$W_BFILE" "$GOT_BODY" || why="body differs from $W_BFILE: $(cmp "$W_BFILE" "$GOT_BODY" 2>&1)"
		else
			# Content-Length matched, so a NUL cutting the read short
			# shows up as a length difference here.
			IFS= read -r -d '' got_body <"$GOT_BODY"
			[[ "$got_body" == "$W_BODY" ]] || why="body differs"
		fi
	fi
	if [[ -z "$why" ]]; then
		ok "$name"
	else
		not_ok "$name" "$why" "want head: $(printf '%s' "$W_HEAD" | cat -v | tr '\n' '|')" \
			"got head:  $(cat -v "$h" | tr '\n' '|')" \
			"want body: $(if [[ -n "$W_BFILE" ]]; then head -c 300 "$W_BFILE"; else printf '%s' "$W_BODY"; fi | cat -v | head -c 300)" \
			"got body:  $(head -c 300 "$GOT_BODY" | cat -v)"
	fi
}

raw() {
	local out=$1 rep
	shift
	revive
	unset "${!R_t@}"
	R_ok=0 R_err="http_raw.py failed" R_closed=0 R_first=-1 R_n=0 R_codes=""
	rep=$("$PY" "$HTTP_RAW" -o "$out" "$@") && eval "$rep"
	[[ -e "$out" ]] || : >"$out"
}

raw_is_file() {
	local name=$1 wantf=$2 got
	shift 2
	tmpf
	got=$F.raw
	raw "$got" "$@"
	if [[ "$R_ok" != 1 ]]; then
		not_ok "$name" "$R_err" "$(show_diff "$wantf" "$got")"
	else
		same "$name" "$wantf" "$got"
	fi
}

raw_is() {
	local name=$1
	shift
	tmpf
	want_to "$F.want"
	raw_is_file "$name" "$F.want" "$@"
}

# dec6 V: DEC = V * 10^6 as an integer (V a decimal such as -1.25 or 300).
dec6() {
	[[ "$1" =~ ^(-?)([0-9]*)(\.([0-9]*))?$ && -n "${BASH_REMATCH[2]}${BASH_REMATCH[4]}" ]] || return 1
	local i=${BASH_REMATCH[2]:-0} f=${BASH_REMATCH[4]}000000
	DEC=$((10#$i * 1000000 + 10#${f:0:6}))
	[[ -z "${BASH_REMATCH[1]}" ]] || DEC=$((-DEC))
}

# minus A B: DIFF = A - B, as a decimal string.
minus() {
	local a b d sign=""
	if ! dec6 "$1"; then DIFF="?"; return; fi
	a=$DEC
	if ! dec6 "$2"; then DIFF="?"; return; fi
	b=$DEC
	d=$((a - b))
	((d < 0)) && sign=- d=$((-d))
	printf -v DIFF '%s%d.%06d' "$sign" $((d / 1000000)) $((d % 1000000))
}

within() {
	local lo hi v
	if dec6 "$2" && lo=$DEC && dec6 "$3" && hi=$DEC && dec6 "$4" && v=$DEC && ((lo <= v && v <= hi)); then
		ok "$1 ($4)"
	else
		not_ok "$1" "want $2 <= value <= $3, got '$4'"
	fi
}

scen() {
	local rep
	rep=$("$PY" "$HTTP_SCEN" "$@") || {
		not_ok "scenario $1 ran to its end" "$rep"
		return 1
	}
	eval "$rep"
}

# stop_within SECONDS: SIGTERM the server and wait for it at most SECONDS;
# SRV_STATUS gets its exit status (or "hung", after a SIGKILL).
stop_within() {
	kill -TERM "$SRV_PID" 2>/dev/null
	exited_within "$1"
}

# exited_within SECONDS: wait (without a signal) at most SECONDS for the
# server to exit; SRV_STATUS as above.
exited_within() {
	local i
	for ((i = 0; i < $1 * 20; i++)); do
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$SRV_PID" 2>/dev/null; then
		kill -KILL "$SRV_PID"
		wait "$SRV_PID" 2>/dev/null
		SRV_STATUS=hung
	else
		SRV_STATUS=0
		wait "$SRV_PID" || SRV_STATUS=$?
	fi
	SRV_PID=
	server_log_clean
}

# serve ENV...: server_start, remembering how, for revive.
serve() {
	SRV_ENV=("$@")
	server_start "$@"
}

# revive: if the server started by serve has died (an ASan abort), report it
# once and start it again on the same port, so that one crash fails the test
# that caused it (and those that trigger it again), not every later one.
revive() {
	[[ -n "${SRV_PID:-}" && -n "${SRV_ENV+set}" ]] || return 0
	kill -0 "$SRV_PID" 2>/dev/null && return 0
	local st=0 port=$SRV_PORT
	wait "$SRV_PID" 2>/dev/null || st=$?
	SRV_PID=
	if ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$SRV_LOG"; then
		not_ok "the server is still running (it exited with status $st)" "$(tail -n 20 "$SRV_LOG")"
	fi
	server_log_clean
	server_start "${SRV_ENV[@]}" -- --listen "$SRV_AT:$port"
}

# alive NAME: ok while the server runs (an ASan report aborts it).
alive() {
	if kill -0 "$SRV_PID" 2>/dev/null; then
		ok "$1"
	else
		not_ok "$1" "the server died:" "$(tail -n 30 "$SRV_LOG")"
	fi
}
