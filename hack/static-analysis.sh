#!/usr/bin/env bash
# hack/static-analysis.sh — cppcheck and clang-tidy over src/, as `make lint`
# and `make test` (tests/run.sh) run them; prints TAP, exits 1 on a finding.
#
# Each file is analysed with the include folders its program sees: core files
# with src/core only, the network half's (src/net) with src/core and src/net,
# the sidecar's with src/core, src/net and src/sidecar, the node agent's with
# src/core, src/net and src/node, the webhook's with src/core, src/webhook and
# json-c.  clang-tidy's checks and
# the reasons for what is left out are in .clang-tidy; cppcheck runs its
# warning, performance and portability checks (its style checks flag the
# netlink request buffers, written through their nlmsghdr, as unused).
# Suppressions are inline, each with its reason.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
LLHTTP_INC=${LLHTTP_INC:-/usr/share/include/llhttp}
JSONC_INC=$(pkg-config --cflags-only-I json-c 2>/dev/null | sed 's/^-I//; s/ .*//')
JSONC_INC=${JSONC_INC:-/usr/include/json-c}
DEFS=(-D_GNU_SOURCE -DLLHTTP_STRICT_MODE=1 '-DIMDS_VERSION="lint"')
n=0 failed=0
tap() { # ok name [detail]
	n=$((n + 1))
	if (($1 == 0)); then
		echo "ok $n - $2"
	else
		failed=1
		echo "not ok $n - $2"
		[[ -n ${3:-} ]] && while IFS= read -r l; do echo "#   $l"; done <<<"$3"
	fi
}
incs() { # folder -> include flags
	case $1 in
	core) echo "-Isrc/core" ;;
	net) echo "-Isrc/core -Isrc/net" ;;
	sidecar) echo "-Isrc/core -Isrc/net -Isrc/sidecar" ;;
	webhook) echo "-Isrc/core -Isrc/webhook -isystem $JSONC_INC" ;;
	node) echo "-Isrc/core -Isrc/net -Isrc/node" ;;
	esac
}

for tool in cppcheck clang-tidy; do
	command -v "$tool" >/dev/null || { tap 1 "$tool installed (hack/install-deps.sh lint)"; }
done
((failed)) && exit 1

t0=$SECONDS
out=""
for d in core net sidecar webhook node; do
	# shellcheck disable=SC2046 # word splitting of the flags is wanted
	out+=$(cppcheck --quiet --enable=warning,performance,portability --inline-suppr \
		--error-exitcode=1 --std=c11 "${DEFS[@]}" $(incs "$d" | sed 's/-isystem /-I/') \
		-I"$LLHTTP_INC" "src/$d" 2>&1) || true
done
findings=$(grep -cE '^src/.*: (error|warning|performance|portability):' <<<"$out")
tap "$findings" "cppcheck clean on src/ ($(find src -name '*.c' | wc -l) files, $((SECONDS - t0)) s)" "$out"

t0=$SECONDS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tidy_one() { # file -> its findings in $tmp
	local f=$1 d=${1#src/}
	d=${d%%/*}
	# shellcheck disable=SC2046 # word splitting of the flags is wanted
	clang-tidy -quiet "$f" -- -std=c17 "${DEFS[@]}" $(incs "$d") -isystem "$LLHTTP_INC" \
		>"$tmp/${f//\//_}.out" 2>/dev/null
}
running=0
for f in $(find src -name '*.c' | sort); do
	if ((running >= $(nproc))); then
		wait -n
		running=$((running - 1))
	fi
	tidy_one "$f" &
	running=$((running + 1))
done
wait
out=$(cat "$tmp"/*.out)
findings=$(grep -cE '^/?.*\.[ch]:[0-9]+:[0-9]+: (error|warning):' <<<"$out")
tap "$findings" "clang-tidy clean on src/ (bugprone, clang-analyzer, cert; $((SECONDS - t0)) s)" \
	"$(grep -E '(error|warning):' <<<"$out" | head -40)"
echo "1..$n"
exit "$failed"
