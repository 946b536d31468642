#!/bin/sh
# Runs every test: unit programs, bats suites, fuzz-corpus replay; prints one
# closing "N passed, N failed, N skipped" line over all of them and fails
# when a test failed or was skipped (the repository ships every fixture and
# make deps installs every tool, so nothing has a reason to skip). $1 is the
# build dir.
O=${1:-build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
st=0
make --no-print-directory O="$O" unit 2>&1 | tee -a "$log" || st=1
make --no-print-directory O="$O" bats BATS_FLAGS="${BATS_FLAGS:-}" BATS_FILES="${BATS_FILES:-tests/}" 2>&1 | tee -a "$log" || st=1
make --no-print-directory O="$O" fuzz-replay 2>&1 | tee -a "$log" || st=1
# unit + replay lines: "file: N passed, N failed"; bats: TAP "ok N name",
# "ok N name # skip [reason]", "not ok N name".
p=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
f=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' "$log" | awk '{s+=$1} END {print s+0}')
bs=$(grep -cE '^ok [0-9]+ .*# skip( |$)' "$log")
bp=$(($(grep -c '^ok ' "$log") - bs))
bf=$(grep -c '^not ok ' "$log")
# make's own exit status is lost in the pipes above; failures show as counts.
[ $((f + bf)) -eq 0 ] || st=1
grep -q '^make.*Error' "$log" && st=1
if [ "$bs" -gt 0 ]; then
	st=1
	echo "skipped (make check allows no skips):"
	grep -E '^ok [0-9]+ .*# skip( |$)' "$log"
fi
echo "$((p + bp)) passed, $((f + bf)) failed, $bs skipped"
exit $st
