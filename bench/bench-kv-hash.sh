#!/bin/sh
# bench-kv-hash.sh — issue 3's two bars, both measured against a baseline
# taken in the same run:
#  (1) lib/hash over 100 MB of u32 tokens: >= 1 GB/s of token bytes on one
#      core; also printed as a fraction of raw XXH3 over the same bytes;
#  (2) kv-hash as a filter >= 4x faster than `jq -c .` on the same NDJSON.
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

LIB="$KVP_BIN/../libkvpipe.a"
RECORDS=${KVH_RECORDS:-8000}
TOKENS=${KVH_TOKENS:-2000}
st=0

# shellcheck disable=SC2046
cc -O2 -I. -Ilib -o "$BENCH_TMP/hashbench" bench/hashbench.c "$LIB" \
	$(pkg-config --cflags --libs libxxhash)

echo "-- (1) hashing 100 MB of tokens with lib/hash (one core, best of 3)"
for bs in 16 64; do
	"$BENCH_TMP/hashbench" speed 100 "$bs" >"$BENCH_TMP/speed"
	lib=$(sed -n 's/^lib //p' "$BENCH_TMP/speed")
	blk=$(sed -n 's/^xxh3_blocks //p' "$BENCH_TMP/speed")
	flat=$(sed -n 's/^xxh3_flat //p' "$BENCH_TMP/speed")
	pct_blk=$(printf '%.0f' "$(echo "100 * $lib / $blk" | bc -l)")
	pct_flat=$(printf '%.0f' "$(echo "100 * $lib / $flat" | bc -l)")
	if [ "$(echo "$lib >= 1" | bc -l)" = 1 ]; then ok=met; else ok="NOT met"; st=1; fi
	echo "block size $bs: kvp_hash_tokens $lib GB/s (local + sequence hashes);" \
		"raw XXH3 on the same $bs-token blocks $blk GB/s ($pct_blk% of it);" \
		"raw XXH3 in one call $flat GB/s ($pct_flat%)"
	echo "  bar >= 1 GB/s: $ok"
done

echo "-- (2) kv-hash vs jq -c . over $RECORDS records of $TOKENS tokens"
in="$BENCH_TMP/tokens.ndjson"
"$BENCH_TMP/hashbench" gen "$RECORDS" "$TOKENS" >"$in"
mb=$(printf '%.0f' "$(echo "$(wc -c <"$in") / 1000000" | bc -l)")
t_jq=$(best_time 2 sh -c "jq -c . '$in' >/dev/null")
t_kh=$(best_time 3 sh -c "'$KVP_BIN/kv-hash' --block-size 16 '$in' >/dev/null")
r=$(ratio "$t_jq" "$t_kh")
if [ "$(echo "$r >= 4" | bc -l)" = 1 ]; then ok=met; else ok="NOT met"; st=1; fi
echo "input $mb MB: jq -c . ${t_jq}s, kv-hash --block-size 16 ${t_kh}s:" \
	"kv-hash is ${r}x faster"
echo "  bar >= 4x: $ok"

# For information: Python-style spaced JSON (", " separators) takes the
# json-c path instead of the fast one.
"$BENCH_TMP/hashbench" gen "$((RECORDS / 4))" "$TOKENS" sp >"$in"
t_jq=$(best_time 1 sh -c "jq -c . '$in' >/dev/null")
t_kh=$(best_time 1 sh -c "'$KVP_BIN/kv-hash' --block-size 16 '$in' >/dev/null")
echo "info: spaced JSON ($((RECORDS / 4)) records): jq ${t_jq}s, kv-hash" \
	"${t_kh}s ($(ratio "$t_jq" "$t_kh")x; json-c path, no bar)"
rm -f "$in"
exit $st
