#!/bin/sh
# bench-policies.sh — route-score --policy (issue 11's bar): every peer
# policy replays the same generated Mooncake-like trace of 12,031 requests
# (bench/gen_route_score.py; the bundled excerpt has 500) over 16 workers
# (--approx, simulated time at 20,000 prefill and 50 decode tokens/s so
# requests finish), bar < 1 s each; a table of prefix hit rate, load
# balance (max/mean of requests routed and of active blocks), simulated
# TTFT p50/p99 and time, with each policy's time as a ratio of the default
# dynamo policy's and of `jq -c .` over the same file, all measured in this
# run. Two more rows time the lab's other features on the dynamo policy:
# bounded caches with events (--capacity-blocks 256 --emit-events), and
# --mrc.
# Run by `make bench` (KVP_BIN, BENCH_TMP set); POSIX sh.
set -e
. bench/timing.sh
B="$KVP_BIN/route-score"
T="${BENCH_TMP:?}"
PY=/usr/bin/python3
N=12031

yesno() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo met; else echo NOT met; fi; }

$PY bench/gen_route_score.py mooncake $N >"$T/pol.jsonl"
tj=$(best_time 3 sh -c "jq -c . '$T/pol.jsonl' >/dev/null")

# row NAME ARGS... — times one configuration and prints its table row.
row() {
	name=$1
	shift
	t=$(best_time 3 sh -c "'$B' --trace mooncake --workers 16 $* '$T/pol.jsonl' >'$T/pol.out'")
	[ -n "$tdyn" ] || tdyn=$t
	tail -1 "$T/pol.out" | jq -r --arg n "$name" --arg t "$t" --arg rd "$(ratio "$t" "$tdyn")" \
		--arg rj "$(ratio "$t" "$tj")" --arg bar "$(yesno "$t < 1")" \
		'def r(k): . * k | round / k;
		 [$n, (.prefix_hit_rate | r(10000)), (.load_balance.routed_max_mean | r(1000)),
		  (.load_balance.active_blocks_max_mean | r(1000)),
		  (.simulated.ttft_p50_ms // "-" | if type == "number" then r(1) else . end),
		  (.simulated.ttft_p99_ms // "-" | if type == "number" then r(1) else . end),
		  $t, $rd, $rj, $bar] | @tsv'
}

echo "$N requests, 16 workers (jq -c . on the same file: ${tj}s)"
printf '%s\n' "policy	hit_rate	routed_max/mean	blocks_max/mean	ttft_p50_ms	ttft_p99_ms	time_s	vs_dynamo	vs_jq	bar_<1s"
SIM="--prefill-tokens-per-s 20000 --decode-tokens-per-s 50"
tdyn=
for p in dynamo round-robin random least-loaded sglang-cache-aware prodstack-kvaware prodstack-loadaware; do
	row "$p" --approx $SIM --policy "$p"
done
row "dynamo+capacity256+events" --capacity-blocks 256 $SIM --emit-events "'$T/pol.ev'"
row "dynamo+mrc" --approx $SIM --mrc
