#!/bin/sh
# bench-kv-report.sh — issue 12's bars, measured in the same run:
#  (1) kv-report over 1,000,000 decisions: < 2 s, bounded memory (max RSS
#      printed; the report's size too);
#  (2) kv-diff over two 1,000,000-decision streams >= 4x faster than
#      `jq -c .` over the same bytes (both files).
# Run by `make bench` (KVP_BIN, BENCH_TMP set); standalone it builds its
# own temp dir.
set -e
cd "$(dirname "$0")/.."
: "${KVP_BIN:=$PWD/build/bin}"
if [ -z "$BENCH_TMP" ]; then
	BENCH_TMP=$(mktemp -d)
	trap 'rm -rf "$BENCH_TMP"' EXIT
fi
. bench/timing.sh

N=${KVR_DECISIONS:-1000000}
st=0
base="$BENCH_TMP/base.ndjson"
new="$BENCH_TMP/new.ndjson"
sh bench/gen-decisions.sh "$N" >"$base"
sh bench/gen-decisions.sh "$N" 10 >"$new"
mb=$(printf '%.0f' "$(echo "($(wc -c <"$base") + $(wc -c <"$new")) / 1000000" | bc -l)")

echo "-- (1) kv-report over $N decisions (best of 3)"
t=$(best_time 3 sh -c "'$KVP_BIN/kv-report' '$base' -o '$BENCH_TMP/r.html'")
/usr/bin/time -f '%M %U %S' -o "$BENCH_TMP/rss" "$KVP_BIN/kv-report" "$base" -o "$BENCH_TMP/r.html"
read -r rss usr sys <"$BENCH_TMP/rss"
size=$(wc -c <"$BENCH_TMP/r.html")
if [ "$(echo "$t < 2" | bc -l)" = 1 ]; then ok=met; else ok="NOT met"; st=1; fi
echo "kv-report ${t}s wall (CPU ${usr}s user + ${sys}s sys), max RSS ${rss} KB," \
	"report ${size} bytes; bar < 2 s: $ok"
t2=$(best_time 3 sh -c "'$KVP_BIN/kv-report' '$base' '$new' -o '$BENCH_TMP/r2.html'")
/usr/bin/time -f '%M' -o "$BENCH_TMP/rss" "$KVP_BIN/kv-report" "$base" "$new" -o "$BENCH_TMP/r2.html"
echo "two runs (2x$N decisions, disagreement table): ${t2}s, max RSS $(cat "$BENCH_TMP/rss") KB"

echo "-- (2) kv-diff vs jq -c . over two $N-decision streams ($mb MB)"
t_jq=$(best_time 1 sh -c "jq -c . '$base' '$new' >/dev/null")
t_kd=$(best_time 3 sh -c "'$KVP_BIN/kv-diff' '$base' '$new' >/dev/null")
r=$(ratio "$t_jq" "$t_kd")
if [ "$(echo "$r >= 4" | bc -l)" = 1 ]; then ok=met; else ok="NOT met"; st=1; fi
echo "jq -c . ${t_jq}s, kv-diff ${t_kd}s: ${r}x; bar >= 4x: $ok"
exit $st
