#!/bin/sh
# Compressed input benchmark: kv-decode on the generated capture (the one
# bench-kv-decode.sh uses, 200,000 events), plain, zstd- and gzip-compressed
# (best of 3 each, in one run). The input layer decodes on a second thread,
# so on a machine with a free core the ratio stays near 1.
# Bar (issue "A new user's first hour"): .zst at most 1.3x the plain time.
set -e
cd "$(dirname "$0")/.."
. bench/timing.sh
: "${KVP_BIN:=$PWD/build/bin}"
: "${BENCH_TMP:=$(mktemp -d)}"
N=${KVP_BENCH_EVENTS:-200000}
cap=$BENCH_TMP/kv-capture.jsonl
[ -s "$cap" ] || /usr/bin/python3 bench/gen-kv-capture.py "$N" >"$cap"
zstd -q -f -c "$cap" >"$cap.zst"
gzip -1 -c "$cap" >"$cap.gz"

# The outputs must be the same before the times mean anything.
"$KVP_BIN/kv-decode" "$cap" | cksum >"$BENCH_TMP/sum.plain"
"$KVP_BIN/kv-decode" "$cap.zst" | cksum >"$BENCH_TMP/sum.zst"
"$KVP_BIN/kv-decode" "$cap.gz" | cksum >"$BENCH_TMP/sum.gz"
cmp -s "$BENCH_TMP/sum.plain" "$BENCH_TMP/sum.zst" || {
	echo "kv-decode: .zst output differs from plain" >&2
	exit 1
}
cmp -s "$BENCH_TMP/sum.plain" "$BENCH_TMP/sum.gz" || {
	echo "kv-decode: .gz output differs from plain" >&2
	exit 1
}

t_plain=$(best_time 3 sh -c "'$KVP_BIN/kv-decode' '$cap' >/dev/null")
t_zst=$(best_time 3 sh -c "'$KVP_BIN/kv-decode' '$cap.zst' >/dev/null")
t_gz=$(best_time 3 sh -c "'$KVP_BIN/kv-decode' '$cap.gz' >/dev/null")
r_zst=$(ratio "$t_zst" "$t_plain")
r_gz=$(ratio "$t_gz" "$t_plain")
echo "kv-decode on compressed input: $N events"
echo "  plain  $(wc -c <"$cap") bytes  ${t_plain}s"
echo "  .zst   $(wc -c <"$cap.zst") bytes  ${t_zst}s  -> ${r_zst}x the plain time"
echo "  .gz    $(wc -c <"$cap.gz") bytes  ${t_gz}s  -> ${r_gz}x the plain time"
if [ "$(echo "$r_zst <= 1.3" | bc -l)" = 1 ]; then
	echo "  bar (.zst <= 1.3x plain): met"
else
	echo "  bar (.zst <= 1.3x plain): NOT met"
fi
