#!/usr/bin/env bash
# The whole test suite, as `make test` runs it:
#   builds (debug, ASan+UBSan, static musl, libFuzzer), then runs
#   - cppcheck and clang-tidy over src/ (hack/static-analysis.sh),
#   - unit tests (cmocka) in the debug and the ASan build,
#   - integration suites (tests/integration/*.sh) against the ASan server, or
#     the builds a suite's "# imds-variants:" header names (the HTTP ones over
#     IPv6 as well),
#   - every fuzz target for a bounded time over its committed corpus,
# and ends with one line: "N passed, N failed[, N skipped]".
# Options (environment): FUZZ_SECONDS (default 60 for the HTTP request
# path, a quarter of it for the smaller parsers), TESTS (a regex of suite
# names to run, e.g. TESTS='unit|http'), FUZZ_JOBS (fuzz targets run at
# once, default 2).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_JOBS=${FUZZ_JOBS:-2}
TESTS=${TESTS:-.}
OUT=$REPO/build/test-results
rm -rf "$OUT"
mkdir -p "$OUT"

pass=0 fail=0 skipped=0
failed_names=()
failed_why=() # each failure's first diagnostic lines, for the summary: CI keeps only the tail

# Counts the TAP lines of a suite's output and echoes them, prefixed.
record() {
	local suite=$1 log=$2 status=$3 line n_fail=0 wi=-1 wn=0
	while IFS= read -r line; do
		case "$line" in
		"#"*) ;;
		*) wi=-1 ;;
		esac
		case "$line" in
		"not ok "*"# SKIP"* | "ok "*"# SKIP"*)
			# "ok N - <name> # SKIP <why>": both, as "<name>: <why>"
			local name=${line#* - } why=${line##*# SKIP}
			skipped=$((skipped + 1)); echo "  [skip] $suite: ${name%% # SKIP*}:${why}" ;;
		"ok "*)
			pass=$((pass + 1)); echo "  [ ok ] $suite: ${line#ok * - }" ;;
		"not ok "*)
			fail=$((fail + 1)); n_fail=$((n_fail + 1))
			failed_names+=("$suite: ${line#not ok * - }")
			wi=$((${#failed_names[@]} - 1)) wn=0
			failed_why[wi]=
			echo "  [FAIL] $suite: ${line#not ok * - }" ;;
		"#"*)
			((n_fail)) && echo "         $line"
			if ((wi >= 0 && wn++ < 12)); then
				failed_why[wi]+="      ${line:0:200}"$'\n'
			fi ;;
		esac
	done <"$log"
	# A suite that died without saying why still counts as a failure.
	if ((status != 0 && n_fail == 0)); then
		fail=$((fail + 1))
		failed_names+=("$suite: exited with status $status")
		failed_why[${#failed_names[@]} - 1]=$(tail -n 8 "$log" | cut -c1-200 | sed 's/^/      /')$'\n'
		echo "  [FAIL] $suite: exited with status $status; last lines:"
		tail -n 15 "$log" | sed 's/^/         /'
	fi
}

run_suite() { # name cmd...
	local name=$1
	shift
	[[ "$name" =~ $TESTS ]] || return 0
	local log
	log="$OUT/$(echo "$name" | tr '/: ' '___').log"
	echo "== $name"
	local t0=$SECONDS
	"$@" >"$log" 2>&1
	local st=$?
	record "$name" "$log" "$st"
	echo "   ($((SECONDS - t0)) s, log: ${log#"$REPO"/})"
	stage_add $((SECONDS - t0))
}

# Seconds per stage, printed at the end (CI's budget is 90 min on 2 cores).
declare -A STAGE_S=()
STAGES=()
STAGE=
stage() { STAGE=$1; STAGES+=("$1"); STAGE_S[$1]=0; }
stage_add() { STAGE_S[$STAGE]=$((STAGE_S[$STAGE] + $1)); }

build() { # name make-args...
	local name=$1
	shift
	local log="$OUT/build-$name.log"
	echo "== build $name"
	local t0=$SECONDS
	# Two jobs a core: the five builds took 151 s one file at a time, 106 s
	# so on CI's two cores (a compile waits on the disk now and then).
	if make -j"$(($(nproc) * 2))" --no-print-directory "$@" >"$log" 2>&1; then
		pass=$((pass + 1)); echo "  [ ok ] build $name ($((SECONDS - t0)) s)"
	else
		fail=$((fail + 1)); failed_names+=("build $name")
		echo "  [FAIL] build $name"; tail -n 30 "$log" | sed 's/^/         /'
	fi
	stage_add $((SECONDS - t0))
}

unit_suite() { # variant
	local bin st=0
	for bin in build/"$1"/tests/test_*; do
		[[ -x "$bin" ]] || continue
		echo "# $bin"
		CMOCKA_MESSAGE_OUTPUT=TAP "$bin" || st=1
	done
	return $st
}

fuzz_one() { # target seconds
	local t=$1 secs=$2 corpus="tests/fuzz/corpus/${1#fuzz_}"
	# New inputs and any finding go to a folder of this run's results, never
	# to the working directory (libFuzzer's default for crash files); the
	# committed corpus is read-only here.
	local work="$OUT/fuzz-$t" log="$OUT/$t.fuzz.log"
	rm -rf "$work"
	mkdir -p "$work/new"
	if [[ ! -d "$corpus" ]]; then
		echo "not ok 1 - $t: no seed corpus at $corpus"
		return 1
	fi
	if "build/fuzz/fuzz/$t" -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 \
		-print_final_stats=1 -artifact_prefix="$work/" "$work/new" "$corpus" >"$log" 2>&1; then
		local runs
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "ok 1 - $t: ${runs:-?} runs in ${secs}s, no crash"
		rm -rf "$work"
		return 0
	fi
	local seed finding
	seed=$(sed -n 's/^INFO: Seed: *//p' "$log" | head -n1)
	finding=$(find "$work" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
		-o -name 'timeout-*' -o -name 'oom-*' \) | head -n1)
	echo "not ok 1 - $t: crash, leak or timeout"
	echo "# seed: ${seed:-?} (run again: build/fuzz/fuzz/$t -seed=${seed:-N} -max_total_time=$secs $corpus)"
	if [[ -n $finding ]]; then
		echo "# input: ${finding#"$REPO"/} ($(stat -c %s "$finding") bytes, base64 $(head -c 512 "$finding" | base64 -w0))"
		echo "# reproduce: build/fuzz/fuzz/$t ${finding#"$REPO"/}"
	fi
	echo "# inputs this run added: ${work#"$REPO"/}/new ($(find "$work/new" -type f | wc -l) files); log: ${log#"$REPO"/}"
	grep -A30 -E 'ERROR|runtime error|SUMMARY|outlived' "$log" | head -60 | sed 's/^/# /'
	return 1
}

echo "kubevirt-imds test suite ($(date -u +%FT%TZ))"
stage build
build debug all
build debug-tests VARIANT=debug unit-bins
build asan asan
build static static
build fuzz fuzz

export IMDS_TEST_TMPDIR=$OUT
stage lint
run_suite "lint/static-analysis" hack/static-analysis.sh
stage unit
for v in debug asan; do
	run_suite "unit/$v" unit_suite "$v"
done
for v in debug asan; do
	stage "integration ($v)"
	for s in tests/integration/*.sh; do
		[[ -e "$s" ]] || continue
		n=$(basename "$s" .sh)
		# Each suite runs in the builds its header names ("# imds-variants:
		# debug asan"); by default in the ASan+UBSan one only: the two builds
		# serve the same bytes by the same code, the shipped binary is
		# neither (static musl -Os), and a second run of a suite that checks
		# no build-specific figure took ~6 minutes and found nothing the ASan
		# run would not (issue 34 item 6).  Those that judge something of the
		# build itself name both (soak: VmRSS growth, judged in debug only;
		# deploy_release: each build's --version; vm_boot: its scenarios
		# split between the builds).  Those that drive no binary of the build
		# say "debug".
		want=$(sed -n '2,12s/^# imds-variants: \([a-z ]*\).*/\1/p' "$s" | head -1)
		[[ " ${want:-asan} " == *" $v "* ]] || continue
		run_suite "$n/$v" env IMDS_SERVER="$REPO/build/$v/imds-server" IMDS_VARIANT="$v" bash "$s"
	done
	# the HTTP suites over IPv6 too ([::1]; tests/lib/server.sh), in one build
	[[ $v == asan ]] || continue
	for n in http_api http_proto http_conn http_wait; do
		run_suite "$n/$v-ipv6" env IMDS_SERVER="$REPO/build/$v/imds-server" IMDS_VARIANT="$v" \
			IMDS_TEST_FAMILY=6 bash "tests/integration/$n.sh"
	done
done
stage fuzz
# Two targets at a time (CI has 2 cores; each target is one process): the
# same seconds per target, half the stage. Each one's TAP goes to its own
# file, recorded in name order once all are done; the stage's time is the
# wall clock, each target's its own.
fuzz_jobs=()
for f in build/fuzz/fuzz/fuzz_*; do
	[[ -x "$f" ]] || continue
	t=$(basename "$f")
	[[ "fuzz/$t" =~ $TESTS ]] || continue
	fuzz_jobs+=("$t")
done
t_fuzz=$SECONDS
running=0
for t in "${fuzz_jobs[@]}"; do
	secs=$((FUZZ_SECONDS / 4))
	[[ "$t" == fuzz_http ]] && secs=$FUZZ_SECONDS
	((secs > 0)) || secs=1
	if ((running >= FUZZ_JOBS)); then
		wait -n
		running=$((running - 1))
	fi
	(
		t0=$SECONDS
		fuzz_one "$t" "$secs" >"$OUT/fuzz_$t.log" 2>&1
		echo "$? $((SECONDS - t0))" >"$OUT/fuzz_$t.rc"
	) &
	running=$((running + 1))
done
wait
for t in "${fuzz_jobs[@]}"; do
	echo "== fuzz/$t"
	read -r st secs <"$OUT/fuzz_$t.rc" 2>/dev/null || { st=1 secs="?"; }
	record "fuzz/$t" "$OUT/fuzz_$t.log" "$st"
	echo "   ($secs s, log: build/test-results/fuzz_$t.log)"
done
stage_add $((SECONDS - t_fuzz))

echo
line="stage times:"
[[ -n ${IMDS_INSTALL_SECONDS:-} ]] && line+=" install ${IMDS_INSTALL_SECONDS} s,"
for s in "${STAGES[@]}"; do line+=" $s ${STAGE_S[$s]} s,"; done
echo "$line total $SECONDS s"
if ((fail)); then
	echo "failed:"
	for i in "${!failed_names[@]}"; do
		printf '  %s\n%s' "${failed_names[i]}" "${failed_why[i]:-}"
	done
fi
summary="$pass passed, $fail failed"
((skipped)) && summary+=", $skipped skipped"
echo "$summary"
((fail == 0))
