#!/usr/bin/env bash
# hack/coverage.sh — `make coverage`: line and branch coverage of src/ per
# folder, from a gcov build (build/coverage) driven by the unit tests and the
# integration suites that run the binaries (HTTP, cloud-init, network
# namespaces, webhook TLS and patches, a short soak).  The VM, apiserver and
# deployment suites are left out: they take minutes and add little the
# others do not reach.  Needs root (network namespaces).  Writes
# build/coverage/coverage.info and an HTML report in build/coverage/html.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
B=build/coverage
SUITES=${COVERAGE_SUITES:-http_api http_conn http_proto http_faults http_cli cloudinit net_caps \
net_isolation net_late_bridge net_linklocal net_masquerade net_restore webhook_tls webhook_patch soak}

make --no-print-directory VARIANT=coverage server webhook unit-bins >/dev/null || exit 1
find "$B" -name '*.gcda' -delete
LOG=$B/suites.log
: >"$LOG"
export IMDS_TEST_TMPDIR=${IMDS_TEST_TMPDIR:-$(mktemp -d)}
pass=0 fail=0
for t in "$B"/tests/test_*; do
	[[ -x $t && $t != *.d ]] || continue
	if "$t" >>"$LOG" 2>&1; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "unit $t failed" >&2; fi
done
for s in $SUITES; do
	out=$(IMDS_VARIANT=coverage IMDS_SERVER=$REPO/$B/imds-server SOAK_SECONDS=10 \
		bash "tests/integration/$s.sh" 2>&1)
	echo "$out" >>"$LOG"
	n=$(grep -c '^not ok' <<<"$out")
	if ((n)); then fail=$((fail + 1)); echo "$s: $n failed (see $LOG)" >&2; else pass=$((pass + 1)); fi
done
echo "coverage runs: $pass passed, $fail failed"

LC=(--rc lcov_branch_coverage=1 --quiet)
lcov "${LC[@]}" --capture --directory "$B" --base-directory "$REPO" -o "$B/all.info" 2>/dev/null
lcov "${LC[@]}" --extract "$B/all.info" "$REPO/src/*" -o "$B/coverage.info" 2>/dev/null
row() { # label info
	lcov --rc lcov_branch_coverage=1 --summary "$2" 2>&1 | awk -v l="$1" '
		/lines\.\.\.\.\.\.:/ { lines = $2 " (" substr($3, 2) " of " $5 ")" }
		/branches\.\.\.:/ { br = $2 " (" substr($3, 2) " of " $5 ")" }
		END { printf "%-13s %-28s %s\n", l, lines, br }'
}
printf '%-13s %-28s %s\n' folder lines branches
for d in core net sidecar webhook; do
	lcov "${LC[@]}" --extract "$B/coverage.info" "$REPO/src/$d/*" -o "$B/$d.info" 2>/dev/null
	row "src/$d" "$B/$d.info"
done
row "src/ total" "$B/coverage.info"
if command -v genhtml >/dev/null; then
	genhtml --branch-coverage --quiet -o "$B/html" "$B/coverage.info" >/dev/null 2>&1 &&
		echo "report: $B/html/index.html"
fi
exit $((fail > 0))
