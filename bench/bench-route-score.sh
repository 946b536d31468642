#!/bin/sh
# bench-route-score.sh — route-score benchmarks (issue 5's bar):
#  (a) index microbenchmark (bench/bench_index.c, one core): block
#      operations/s (store + remove + match; bar >= 5M) and bytes per
#      indexed (block, holder) pair (bar <= 64);
#  (b) full replay of a generated Mooncake-like trace, 12,000 requests over
#      16 workers (--approx), bar < 1 s; baseline `jq -c .` on the same file;
#  (c) 100k kv-normalize-shaped events + 10k requests: events/s and
#      decisions/s, baseline `jq -c .` on the same file.
# Issue 11 (speed) and 15.8 (memory):
#  (d) --brief on (b)'s replay: jq/route-score speed ratio, bar >= 6;
#      (d0) its input and output side alone, (d1) a floor under its
#      routing (bench/floor_route.c);
#  (e) --brief on (c)'s stream: jq/route-score speed ratio, bar >= 4;
#  (f) full records on (b) and (c): route-score writes them at least as
#      fast as `jq -c .` re-serializes that same output (ratio >= 1);
#  (g) one Mooncake line of 1,000,000 ids: peak memory over the line size
#      (bar <= 14; the json-c path, forced by an unknown key, for scale).
# Issue 30:
#  (h) --format dynamo-trace on (b)'s replay: its CPU time against the
#      full NDJSON records', both to /dev/null, bar within 1.5x.
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

# (d)-(g). The machine may be shared: these ratios compare CPU time
# (user + system, best of 3), which other load disturbs less than wall time.
best_cpu() {
	n=$1
	shift
	b=
	for i in $(seq "$n"); do
		t=$(/usr/bin/time -f '%U %S' "$@" 2>&1 >/dev/null | tail -1 | awk '{ printf "%.3f", $1 + $2 }')
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
	done
	# at least 1 ms: /usr/bin/time counts in 10 ms ticks
	if [ "$(echo "$b < 0.001" | bc -l)" = 1 ]; then b=0.001; fi
	echo "$b"
}
# (d) runs take tens of ms: /usr/bin/time's 10 ms ticks are too coarse.
# bench/cputime.py counts each run's CPU time to the microsecond (wait4),
# jq's and route-score's runs taking turns, both writing to /dev/null
# (route-score's records are written once more, untimed, for (d1)).
$PY bench/cputime.py /dev/null 10 jq -c . "$T/mc.jsonl" -- \
	"$B" --trace mooncake --workers 16 --approx --brief "$T/mc.jsonl" >"$T/d.cpu"
cj=$(sed -n 1p "$T/d.cpu") cbb=$(sed -n 2p "$T/d.cpu")
"$B" --trace mooncake --workers 16 --approx --brief "$T/mc.jsonl" >"$T/mcb.out"
for i in 1 2 3 4 5 6 7 8 9 10; do cat "$T/mc.jsonl"; done >"$T/mc10.jsonl"
cin=$(best_cpu 3 sh -c "exec '$B' --trace mooncake --brief '$T/mc10.jsonl' >/dev/null 2>&1")
cj10=$(best_cpu 3 jq -c . "$T/mc10.jsonl")
echo "    (d0) input and output side alone, the trace 10 times with no worker (read, hash, write each brief decision): ${cin}s CPU; jq -c . ${cj10}s; jq/route-score $(ratio "$cj10" "$cin"); the rest of (d) is the router's decision logic (approx TTL and load tracking)"
echo "(d) --brief Mooncake replay, 12000 requests, 16 workers: ${cbb}s CPU ($(wc -c <"$T/mcb.out") bytes out; full records $(wc -c <"$T/mc.out")); jq -c . ${cj}s; jq/route-score speed ratio $(ratio "$cj" "$cbb") (bar >= 6: $(yesno "$cj / $cbb >= 6"))"
# (d1) a floor under (d): only the per-block table work approximate-mode
# routing cannot avoid, with ideal tables and (d)'s own decisions given
# (bench/floor_route.c); with (d0)'s input and output side, the most a
# design keeping that state in hash tables could reach here.
${CC:-cc} -O2 -std=gnu11 -o "$T/floor_route" bench/floor_route.c
jq -r 'select(.rec == "decision") | .chosen.worker_id' "$T/mcb.out" >"$T/fl.w"
jq -r '"\(.timestamp) \(.hash_ids | length) \(.hash_ids | join(" "))"' "$T/mc.jsonl" |
	paste -d ' ' "$T/fl.w" - >"$T/fl.txt"
"$T/floor_route" 120000 <"$T/fl.txt" >"$T/fl.out"
fw=$(sed -n 's/^floor_ms=//p' "$T/fl.out")
fc=$(sed -n 's/^first_ms=//p' "$T/fl.out")
fio=$(printf '%.4f' "$(echo "$fw / 1000 + $cin / 10" | bc -l)")
echo "    (d1) floor of (d)'s routing: the per-block table work alone, ideal tables, decisions given: ${fw} ms warm (${fc} ms on first touch); with (d0)'s input and output, ${fio}s: jq/floor $(ratio "$cj" "$fio") is the most a hash-table design could reach here; (d) spends $(printf '%.1f' "$(echo "($cbb - $cin / 10) * 1000 / $fw" | bc -l)")x the floor's time on routing"
cq=$(best_cpu 3 jq -c . "$T/st.ndjson")
ccb=$(best_cpu 3 sh -c "exec '$B' --block-size 16 --brief '$T/st.ndjson' >/dev/null 2>&1")
echo "(e) --brief mixed stream, 100000 events + 10000 requests: ${ccb}s CPU; jq -c . ${cq}s; jq/route-score speed ratio $(ratio "$cq" "$ccb") (bar >= 4: $(yesno "$cq / $ccb >= 4"))"
cb=$(best_cpu 3 sh -c "exec '$B' --trace mooncake --workers 16 --approx '$T/mc.jsonl' >'$T/mc.out'")
cjo=$(best_cpu 3 jq -c . "$T/mc.out")
cc=$(best_cpu 3 sh -c "exec '$B' --block-size 16 '$T/st.ndjson' >'$T/st.out' 2>/dev/null")
cjs=$(best_cpu 3 jq -c . "$T/st.out")
echo "(f) full records: Mooncake ${cb}s CPU to write $(wc -c <"$T/mc.out") bytes, jq -c . over them ${cjo}s, ratio $(ratio "$cjo" "$cb") (bar >= 1: $(yesno "$cjo >= $cb")); stream ${cc}s, jq ${cjs}s, ratio $(ratio "$cjs" "$cc") (bar >= 1: $(yesno "$cjs >= $cc"))"
# (h) CPU to microseconds (bench/cputime.py, the two formats taking
# turns, both to /dev/null: the formats' own cost, not the file system's
# for 2.3x the bytes)
$PY bench/cputime.py /dev/null 10 "$B" --trace mooncake --workers 16 --approx "$T/mc.jsonl" -- \
	"$B" --trace mooncake --workers 16 --approx --format dynamo-trace "$T/mc.jsonl" >"$T/h.cpu" 2>/dev/null
chn=$(sed -n 1p "$T/h.cpu") cht=$(sed -n 2p "$T/h.cpu")
"$B" --trace mooncake --workers 16 --approx --format dynamo-trace "$T/mc.jsonl" >"$T/mct.out" 2>/dev/null
echo "(h) --format dynamo-trace, Mooncake replay: ${cht}s CPU for $(wc -l <"$T/mct.out") dynamo.router.decision.v1 objects ($(wc -c <"$T/mct.out") bytes); NDJSON records ${chn}s ($(wc -c <"$T/mc.out") bytes); trace/ndjson time ratio $(ratio "$cht" "$chn") (bar <= 1.5: $(yesno "$cht <= 1.5 * $chn"))"
$PY -c 'import json; print(json.dumps({"timestamp": 0, "input_length": 512000000, "output_length": 1, "hash_ids": list(range(1000000))}))' >"$T/big.jsonl"
sed 's/^{/{"zz":1,/' "$T/big.jsonl" >"$T/big-slow.jsonl"
kb=$(/usr/bin/time -f '%M' "$B" --trace mooncake --workers 2 --brief -o /dev/null "$T/big.jsonl" 2>&1 | tail -1)
ks=$(/usr/bin/time -f '%M' "$B" --trace mooncake --workers 2 --brief -o /dev/null "$T/big-slow.jsonl" 2>&1 | tail -1)
sz=$(wc -c <"$T/big.jsonl")
echo "(g) one Mooncake line of 1000000 ids ($sz bytes): peak RSS ${kb} KB = $(printf '%.1f' "$(echo "$kb * 1024 / $sz" | bc -l)")x the line (bar <= 14: $(yesno "$kb * 1024 <= 14 * $sz")); the same line through json-c (an unknown key) ${ks} KB = $(printf '%.1f' "$(echo "$ks * 1024 / $sz" | bc -l)")x"
