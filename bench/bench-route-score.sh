#!/bin/sh
# bench-route-score.sh — route-score benchmarks (issue 5's bar):
#  (a) index microbenchmark (bench/bench_index.c, one core): block
#      operations/s (store + remove + match; bar >= 5M) and bytes per
#      indexed (block, holder) pair (bar <= 64);
#  (b) full replay of a generated Mooncake-like trace, 12,000 requests over
#      16 workers (--approx), bar < 1 s; baseline `jq -c .` on the same file;
#  (c) 100k kv-normalize-shaped events + 10k requests: events/s and
#      decisions/s, baseline `jq -c .` on the same file.
# Run by `make bench` (KVP_BIN, BENCH_TMP set); POSIX sh.
set -e
. bench/timing.sh
B="$KVP_BIN/route-score"
T="${BENCH_TMP:?}"
PY=/usr/bin/python3
LIB="$KVP_BIN/../libkvpipe.a"

yesno() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo met; else echo NOT met; fi; }

# (a)
${CC:-cc} -O2 -std=gnu11 -I. -Ilib -o "$T/bench_index" bench/bench_index.c "$LIB" \
	$(pkg-config --libs json-c libxxhash) -lm
"$T/bench_index" 150000 >"$T/idx.txt"
ops=$(sed -n 's/^ops_per_sec=//p' "$T/idx.txt")
bpp=$(sed -n 's/^peak_bytes_per_pair=//p' "$T/idx.txt")
sed 's/^/  index: /' "$T/idx.txt"
echo "(a) index: $ops block ops/s (bar 5000000: $(yesno "$ops >= 5000000")); $bpp bytes per (block, holder) (bar 64: $(yesno "$bpp <= 64"))"

# (b)
$PY bench/gen_route_score.py mooncake 12000 >"$T/mc.jsonl"
tb=$(best_time 3 sh -c "'$B' --trace mooncake --workers 16 --approx '$T/mc.jsonl' >'$T/mc.out'")
tj=$(best_time 3 sh -c "jq -c . '$T/mc.jsonl' >/dev/null")
tail -1 "$T/mc.out" | jq -c '{requests, routed, prefix_hit_rate, reachable_hit_rate, index_pairs, index_bytes}' | sed 's/^/  replay summary: /'
echo "(b) Mooncake-like replay, 12000 requests, 16 workers: ${tb}s (bar < 1 s: $(yesno "$tb < 1")); jq -c . ${tj}s; route-score/jq time ratio $(ratio "$tb" "$tj")"

# (c)
$PY bench/gen_route_score.py stream 100000 10000 >"$T/st.ndjson"
tc=$(best_time 3 sh -c "'$B' --block-size 16 '$T/st.ndjson' >'$T/st.out' 2>/dev/null")
tq=$(best_time 3 sh -c "jq -c . '$T/st.ndjson' >/dev/null")
lines=$(wc -l <"$T/st.ndjson")
echo "(c) 100000 events + 10000 requests ($lines lines): ${tc}s = $(printf '%.0f' "$(echo "100000 / $tc" | bc -l)") events/s with $(printf '%.0f' "$(echo "10000 / $tc" | bc -l)") decisions/s interleaved; jq -c . ${tq}s; jq/route-score speed ratio $(ratio "$tq" "$tc")"
