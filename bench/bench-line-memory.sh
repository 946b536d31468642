#!/bin/sh
# bench-line-memory.sh — peak RSS against the longest line (issue 28 item
# 9): one line of about 62 MiB of small integers (under the default
# --max-line-bytes of 64 MiB) in each shape of bench/gen-long-lines.py, read
# by each NDJSON reader; prints peak RSS / line bytes. Bar: <= 8 for the
# readers (kv-decode, kv-normalize, kv-hash, kv-diff, kv-report,
# mm-expand, route-score), whether the streaming scanner or json-c's
# skeleton of the line (lib/common/jskel.h) reads it.
# KVP_LINE_MIB sets the line size.
set -e
cd "$(dirname "$0")/.."
: "${KVP_BIN:=$PWD/build/bin}"
if [ -z "$BENCH_TMP" ]; then
	BENCH_TMP=$(mktemp -d)
	trap 'rm -rf "$BENCH_TMP"' EXIT
fi
MIB=${KVP_LINE_MIB:-62}
d=$BENCH_TMP/lines
mkdir -p "$d"
/usr/bin/python3 bench/gen-long-lines.py "$d" "$MIB"
st=0

# run TOOL SHAPE ARGS...: one measurement line
run() {
	tool=$1 shape=$2
	shift 2
	f=$d/$shape.json
	/usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/$tool" "$@" "$f" >/dev/null 2>"$d/err" || true
	kb=$(tail -1 "$d/rss")
	r=$(echo "$kb * 1024 / $(wc -c <"$f")" | bc -l)
	if [ "$(echo "$r <= 8" | bc -l)" = 1 ]; then
		v="bar <= 8: met"
	else
		v="bar <= 8: NOT met"
		st=1
	fi
	printf '%-12s %-14s peak %7d KiB  %5.2fx the line  (%s)\n' "$tool" "$shape" "$kb" "$r" "$v"
}

echo "line: $MIB MiB of small integers"
for s in capture-extra tokens-only array truncated; do
	run kv-decode "$s"
done
for s in event-store event-extra tokens-only event-badtok event-seqarr array truncated; do
	run kv-normalize "$s" --block-size 16
done
run kv-hash tokens-only --block-size 16
run kv-diff decision "$d/decision.json"
run kv-report decision -o "$d/report.html"
for s in mm-request array truncated; do
	run mm-expand "$s"
done
for s in rs-request rs-declined array truncated; do
	run route-score "$s" --block-size 16 --workers 2
done
exit $st
