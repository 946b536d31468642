#!/bin/sh
# make bench: runs every bench/*.sh (each prints its own results, with
# ratios against a baseline measured in the same run). KVP_BIN is set.
set -e
cd "$(dirname "$0")/.."
: "${KVP_BIN:=$PWD/build/bin}"
export KVP_BIN
BENCH_TMP=$(mktemp -d)
export BENCH_TMP
trap 'rm -rf "$BENCH_TMP"' EXIT
st=0
for b in bench/bench-*.sh; do
	[ -f "$b" ] || continue
	echo "== $b"
	sh "$b" || st=1
done
exit $st
