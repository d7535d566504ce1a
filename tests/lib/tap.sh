# tap.sh — TAP output for the shell test suites (sourced).
#   ok NAME | not_ok NAME [DETAIL...] | skip NAME REASON
#   check NAME CMD...       ok when CMD exits 0; its output is shown on failure
#   expect_eq NAME WANT GOT
# tests/run.sh counts the lines; a suite exits non-zero if anything failed.
# shellcheck shell=bash

TAP_N=0
TAP_FAILED=0

ok() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $*"
}

not_ok() {
	local name=$1
	shift
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $name"
	local line
	for line in "$@"; do
		printf '%s\n' "$line" | sed 's/^/#   /'
	done
}

# A skip is only for a capability the machine truly lacks; it is counted.
skip() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1 # SKIP $2"
}

check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$name"
	else
		not_ok "$name" "command: $*" "$out"
	fi
}

expect_eq() {
	if [[ "$2" == "$3" ]]; then
		ok "$1"
	else
		not_ok "$1" "want: $(printf '%q' "$2")" "got:  $(printf '%q' "$3")"
	fi
}

tap_done() {
	echo "1..$TAP_N"
	((TAP_FAILED == 0))
}
