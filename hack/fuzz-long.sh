#!/usr/bin/env bash
# hack/fuzz-long.sh — each libFuzzer target for a long run, then the inputs
# that add coverage merged into its committed corpus (`make fuzz-long`).
#
#   hack/fuzz-long.sh [TARGET...]      default: every tests/fuzz/fuzz_*.c
#   FUZZ_LONG_SECONDS=600 (per target), FUZZ_NICE=19
#
# One target at a time (a run uses one core); the scratch corpus and logs go
# to tmp/fuzz-long/, and the merge keeps the inputs that reach new edges. A
# crash, leak or timeout is kept and reported, exit 1: fix it, add a
# regression test, run again. Prints per target: runs, runs/s, coverage
# (cov, ft) and the inputs added to tests/fuzz/corpus/.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
SECS=${FUZZ_LONG_SECONDS:-600}
OUT=tmp/fuzz-long
mkdir -p "$OUT"
make --no-print-directory fuzz >"$OUT/build.log" 2>&1 || { tail -n 30 "$OUT/build.log"; exit 1; }

targets=("$@")
if ((${#targets[@]} == 0)); then
	for f in tests/fuzz/fuzz_*.c; do
		t=$(basename "$f" .c)
		targets+=("${t#fuzz_}")
	done
fi

status=0
printf '%-10s %12s %8s %6s %7s %6s\n' target runs runs/s cov ft added
for t in "${targets[@]}"; do
	bin=build/fuzz/fuzz/fuzz_$t corpus=tests/fuzz/corpus/$t work=$OUT/$t
	[[ -x $bin ]] || { echo "no $bin" >&2; exit 1; }
	mkdir -p "$corpus" "$work"
	# the same options as tests/run.sh, for a longer time; new inputs go to $work
	if ! nice -n "${FUZZ_NICE:-19}" "$bin" -max_total_time="$SECS" -timeout=5 -rss_limit_mb=1024 \
		-print_final_stats=1 -artifact_prefix="$OUT/$t-" "$work" "$corpus" >"$OUT/$t.log" 2>&1; then
		echo "fuzz_$t: a finding, input kept as $(find "$OUT" -maxdepth 1 -name "$t-*" | head -n1)" >&2
		grep -A30 -E 'ERROR|runtime error|SUMMARY|invariant' "$OUT/$t.log" | head -40 >&2
		status=1
		continue
	fi
	before=$(find "$corpus" -type f | wc -l)
	# only inputs that reach new edges (not new hit counts of known ones)
	"$bin" -merge=1 -use_counters=0 "$corpus" "$work" >"$OUT/$t.merge.log" 2>&1
	after=$(find "$corpus" -type f | wc -l)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$t.log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$OUT/$t.log")
	read -r cov ft < <(grep -E '^#[0-9]+.*DONE' "$OUT/$t.log" | tail -n1 |
		sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1 \2/')
	printf '%-10s %12s %8s %6s %7s %6s\n' "$t" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "+$((after - before))"
done
exit "$status"
