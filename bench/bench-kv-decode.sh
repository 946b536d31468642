#!/bin/sh
# kv-decode benchmark: a generated capture of 200,000 BlockStored events (128
# tokens each, full-width hashes) decoded by kv-decode, by the Python
# reference bench/kv-decode-ref.py (python3-msgpack + json, what operators
# write today) and, as a floor, re-serialized by `jq -c .`. All in one run.
# Bar (issue 2): kv-decode >= 6x faster than the Python reference.
set -e
cd "$(dirname "$0")/.."
. bench/timing.sh
: "${KVP_BIN:=$PWD/build/bin}"
: "${BENCH_TMP:=$(mktemp -d)}"
N=${KVP_BENCH_EVENTS:-200000}
cap=$BENCH_TMP/kv-capture.jsonl
[ -s "$cap" ] || /usr/bin/python3 bench/gen-kv-capture.py "$N" >"$cap"
bytes=$(wc -c <"$cap")

t_c=$(best_time 3 sh -c "'$KVP_BIN/kv-decode' '$cap' >/dev/null")
t_py=$(best_time 1 sh -c "/usr/bin/python3 bench/kv-decode-ref.py <'$cap' >/dev/null")
t_jq=$(best_time 1 sh -c "jq -c . '$cap' >/dev/null")
# Peak memory: independent of input size (compare a quarter of the input).
rss_full=n/a
rss_q=n/a
if [ -x /usr/bin/time ]; then
	head -n $(($(wc -l <"$cap") / 4)) "$cap" >"$BENCH_TMP/kv-quarter.jsonl"
	rss_full=$(/usr/bin/time -f %M "$KVP_BIN/kv-decode" -o /dev/null "$cap" 2>&1 >/dev/null | tail -1)
	rss_q=$(/usr/bin/time -f %M "$KVP_BIN/kv-decode" -o /dev/null "$BENCH_TMP/kv-quarter.jsonl" 2>&1 >/dev/null | tail -1)
fi
eps=$(printf '%.0f' "$(echo "$N / $t_c" | bc -l)")
r_py=$(ratio "$t_py" "$t_c")
r_jq=$(ratio "$t_jq" "$t_c")
echo "kv-decode: $N events ($bytes bytes of capture JSONL)"
echo "  kv-decode          ${t_c}s  ($eps events/s)"
echo "  python reference   ${t_py}s  -> kv-decode is ${r_py}x faster"
echo "  jq -c . (floor)    ${t_jq}s  -> kv-decode is ${r_jq}x faster"
echo "  peak RSS: ${rss_full} KiB (full input), ${rss_q} KiB (a quarter)"
if [ "$(echo "$r_py >= 6" | bc -l)" = 1 ]; then
	echo "  bar (>= 6x the Python reference): met"
else
	echo "  bar (>= 6x the Python reference): NOT met"
fi
