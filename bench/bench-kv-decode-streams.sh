#!/bin/sh
# kv-decode with many distinct streams (issue 15 item 3): captures of N and
# 2N one-batch streams (distinct topics), each batch an empty envelope
# [0, [], 0]. Seq tracking finds a stream through a hash table, so doubling
# the streams should at most double the time. Bar: 2N takes <= 2.2x N.
set -e
cd "$(dirname "$0")/.."
. bench/timing.sh
: "${KVP_BIN:=$PWD/build/bin}"
: "${BENCH_TMP:=$(mktemp -d)}"
N=${KVP_BENCH_STREAMS:-200000}
# kwCQAA== is msgpack [0, [], 0] (93 00 90 00), by hand
gen() {
	awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++)
		printf "{\"topic\":\"kv-events-%d\",\"seq\":0,\"payload_b64\":\"kwCQAA==\"}\n", i }'
}
gen "$N" >"$BENCH_TMP/streams-1.jsonl"
gen $((2 * N)) >"$BENCH_TMP/streams-2.jsonl"
t1=$(best_time 3 sh -c "'$KVP_BIN/kv-decode' '$BENCH_TMP/streams-1.jsonl' >/dev/null")
t2=$(best_time 3 sh -c "'$KVP_BIN/kv-decode' '$BENCH_TMP/streams-2.jsonl' >/dev/null")
r=$(ratio "$t2" "$t1")
rss1=n/a
rss2=n/a
if [ -x /usr/bin/time ]; then
	rss1=$(/usr/bin/time -f %M "$KVP_BIN/kv-decode" -o /dev/null "$BENCH_TMP/streams-1.jsonl" 2>&1 >/dev/null | tail -1)
	rss2=$(/usr/bin/time -f %M "$KVP_BIN/kv-decode" -o /dev/null "$BENCH_TMP/streams-2.jsonl" 2>&1 >/dev/null | tail -1)
fi
echo "kv-decode distinct streams: $N vs $((2 * N)) one-batch streams"
echo "  $N streams        ${t1}s  peak RSS ${rss1} KiB"
echo "  $((2 * N)) streams        ${t2}s  peak RSS ${rss2} KiB"
echo "  time ratio (2x streams): ${r}x"
if [ "$(echo "$r <= 2.2" | bc -l)" = 1 ]; then
	echo "  bar (2x the streams -> <= 2.2x the time): met"
else
	echo "  bar (2x the streams -> <= 2.2x the time): NOT met"
fi
