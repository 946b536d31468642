#!/bin/sh
# bench-policies.sh — route-score --policy (issue 11's bar): every peer
# policy replays the same generated Mooncake-like trace of 12,031 requests
# (bench/gen_route_score.py; the bundled excerpt has 500) over 16 workers
# (--approx, simulated time at 20,000 prefill and 2,000 decode tokens/s per worker so
# requests finish), bar < 1 s each; a table of prefix hit rate, load
# balance (max/mean of requests routed and of active blocks), simulated
# TTFT p50/p99 and time, with each policy's time as a ratio of the default
# dynamo policy's and of `jq -c .` over the same file, all measured in this
# run. Two more rows time the lab's other features on the dynamo policy:
# bounded caches with events (--capacity-blocks 256 --emit-events), and
# --mrc; three more (issue 27) the engine model (--engine-model vllm, and
# sglang with a host tier) against the same replay with plain
# --capacity-blocks 256, printing the ratio (bar <= 1.5x). Each run is timed both ways, best of 3: wall seconds and CPU
# seconds (user + system, /usr/bin/time); the bar is judged on CPU time,
# which other jobs on a shared machine do not inflate (route-score is
# single-threaded, so on an idle machine the two agree).
# Run by `make bench` (KVP_BIN, BENCH_TMP set); POSIX sh.
set -e
. bench/timing.sh
B="$KVP_BIN/route-score"
T="${BENCH_TMP:?}"
PY=/usr/bin/python3
N=12031

yesno() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo met; else echo NOT met; fi; }

# best_cpu N CMD... — best-of-N user + system seconds of a command.
best_cpu() {
	n=$1
	shift
	best=
	i=0
	while [ "$i" -lt "$n" ]; do
		/usr/bin/time -f '%U %S' -o "$T/cpu" "$@" || return 1
		c=$(awk '{ print $1 + $2 }' "$T/cpu")
		if [ -z "$best" ] || [ "$(echo "$c < $best" | bc -l)" = 1 ]; then best=$c; fi
		i=$((i + 1))
	done
	printf '%.4f\n' "$best"
}

$PY bench/gen_route_score.py mooncake $N >"$T/pol.jsonl"
tj=$(best_time 3 sh -c "jq -c . '$T/pol.jsonl' >/dev/null")
cj=$(best_cpu 3 sh -c "jq -c . '$T/pol.jsonl' >/dev/null")

# row NAME ARGS... — times one configuration and prints its table row.
row() {
	name=$1
	shift
	cmd="'$B' --trace mooncake --workers 16 $* '$T/pol.jsonl' >'$T/pol.out'"
	t=$(best_time 3 sh -c "$cmd")
	c=$(best_cpu 3 sh -c "$cmd")
	[ -n "$cdyn" ] || cdyn=$c
	tail -1 "$T/pol.out" | jq -r --arg n "$name" --arg t "$t" --arg c "$c" --arg rd "$(ratio "$c" "$cdyn")" \
		--arg rj "$(ratio "$c" "$cj")" --arg bar "$(yesno "$c < 1")" \
		'def r(k): . * k | round / k;
		 [$n, (.prefix_hit_rate | r(10000)), (.load_balance.routed_max_mean | r(1000)),
		  (.load_balance.active_blocks_max_mean | r(1000)),
		  (.simulated.ttft_p50_ms // "-" | if type == "number" then r(1) else . end),
		  (.simulated.ttft_p99_ms // "-" | if type == "number" then r(1) else . end),
		  $t, $c, $rd, $rj, $bar] | @tsv'
}

echo "$N requests, 16 workers (jq -c . on the same file: ${tj}s wall, ${cj}s CPU); ratios and the bar on CPU time"
printf '%s\n' "policy	hit_rate	routed_max/mean	blocks_max/mean	ttft_p50_ms	ttft_p99_ms	wall_s	cpu_s	cpu_vs_dynamo	cpu_vs_jq	bar_cpu<1s"
SIM="--prefill-tokens-per-s 20000 --decode-tokens-per-s 2000"
cdyn=
for p in dynamo round-robin random least-loaded sglang-cache-aware prodstack-kvaware prodstack-loadaware; do
	row "$p" --approx $SIM --policy "$p"
done
row "dynamo+capacity256+events" --capacity-blocks 256 $SIM --emit-events "'$T/pol.ev'"
row "dynamo+mrc" --approx $SIM --mrc
# Issue 27: the engine model against the same replay with plain bounded
# caches (bar: within 1.5x on CPU time).
row "dynamo+capacity256" --capacity-blocks 256 $SIM
cplain=$c
row "dynamo+capacity256+engine-vllm" --capacity-blocks 256 $SIM --engine-model vllm
cvllm=$c
row "dynamo+capacity256+engine-sglang+host1024" --capacity-blocks 256 $SIM --engine-model sglang --host-capacity-blocks 1024
csgl=$c
echo "engine model vs plain --capacity-blocks 256 (CPU, bar <= 1.5x): vllm $(ratio "$cvllm" "$cplain")x ($(yesno "$cvllm <= 1.5 * $cplain")), sglang+host $(ratio "$csgl" "$cplain")x ($(yesno "$csgl <= 1.5 * $cplain"))"
