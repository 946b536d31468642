#!/bin/sh
# tests/fuzz/run.sh SECONDS OUT [TARGET...] — `make fuzz-run`: runs each
# libFuzzer target of build/fuzz (all of them by default) for SECONDS on a
# scratch copy of its corpus under OUT/corpus (the repository's corpora are
# never written), with UBSan halting on the first report. Crash, timeout
# and leak inputs go to OUT/crashes/TARGET/ (emptied when that target runs
# again: copy findings out, or into tests/fuzz/corpus/TARGET/ once fixed);
# each target's log is OUT/TARGET.log. tests/fuzz/TARGET.options adds
# libFuzzer flags (such as -max_len for a target whose seed corpus holds
# one large file). Prints one line per target (execs/s from libFuzzer's
# final stats, cov and ft from its last status line) and exits 1 if any
# target found something.
set -u
secs=$1
out=$2
shift 2
[ $# -gt 0 ] || set -- build/fuzz/fuzz_*
mkdir -p "$out/corpus" "$out/crashes"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
st=0
printf '%-18s %8s %10s %8s %8s %7s  %s\n' target seconds execs/s cov ft corpus result
for t in "$@"; do
	n=$(basename "$t")
	case $n in *.*) continue ;; esac # the .d dependency files
	t=build/fuzz/$n
	[ -x "$t" ] || { echo "$n: not built (make fuzz)" >&2; st=1; continue; }
	c=$out/corpus/$n
	rm -rf "$c" "$out/crashes/$n" # a rerun starts afresh: keep findings elsewhere
	mkdir -p "$c" "$out/crashes/$n"
	[ -d "tests/fuzz/corpus/$n" ] && cp tests/fuzz/corpus/"$n"/* "$c"/ 2>/dev/null
	# tests/fuzz/TARGET.options: extra libFuzzer flags, one line
	opts=$(cat "tests/fuzz/$n.options" 2>/dev/null || true)
	# shellcheck disable=SC2086
	"$t" -max_total_time="$secs" -timeout=25 -print_final_stats=1 $opts \
		-artifact_prefix="$out/crashes/$n/" "$c" >"$out/$n.log" 2>&1
	rc=$?
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$n.log" | tail -1)
	cov=$(grep -E '^#[0-9]+' "$out/$n.log" | tail -1 | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(grep -E '^#[0-9]+' "$out/$n.log" | tail -1 | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	found=$(ls "$out/crashes/$n" | wc -l)
	if [ "$rc" -eq 0 ] && [ "$found" -eq 0 ]; then
		res=clean
	else
		res="FOUND (exit $rc, $found input(s) in $out/crashes/$n; log $out/$n.log)"
		st=1
	fi
	printf '%-18s %8s %10s %8s %8s %7s  %s\n' "$n" "$secs" "${eps:-?}" "${cov:-?}" "${ft:-?}" \
		"$(ls "$c" | wc -l)" "$res"
done
exit $st
