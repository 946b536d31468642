#!/usr/bin/env bats
# route-score as a policy lab (route-score(1) "Comparing policies"): the
# peer policies, bounded caches (--capacity-blocks, --emit-events), --mrc,
# simulated time and the summary's load balance; kv-hash --to-mooncake
# into route-score. Expected values are worked out by hand (the comments
# show the work) or come from tests/lru_model.py, an independent Python
# model that re-simulates an LRU cache at each capacity.
load test_helper

rs() { run --separate-stderr kvp route-score "$@"; }
field() { printf '%s\n' "$output" | jq -c "select(.rec==\"decision\") | $1"; }
fields() { field "$1" | paste -sd' '; }
summary() { printf '%s\n' "$output" | jq -c "select(.rec==\"summary\") | $1"; }

# mc TS INPUT_LENGTH OUTPUT_LENGTH IDS — one Mooncake trace line.
mc() {
	printf '{"timestamp":%s,"input_length":%s,"output_length":%s,"hash_ids":[%s]}\n' "$1" "$2" "$3" "$4"
}

setup() {
	IN="$BATS_TEST_TMPDIR/in.jsonl"
	MC="$FIX/mooncake/synthetic_trace_head500.jsonl"
}

# The 6-request trace of the capacity case (block size 4).
hand_trace() {
	mc 0 12 1 1,2,3
	mc 1 16 1 1,2,4,5
	mc 2 12 1 1,2,3
	mc 3 16 1 1,2,4,5
	mc 4 4 1 6
	mc 5 16 1 1,2,4,5
}

# --- bounded caches ----------------------------------------------------------

@test "capacity 4: LRU order by hand → overlaps 0 2 2 3 0 3, 9 evictions, hit_blocks 10" {
	# Blocks named by their hash_ids prefix's last id (1 = [1], 3 = [1,2,3],
	# 4 = [1,2,4], 5 = [1,2,4,5]); cache listed most recent first. Each
	# request touches its blocks deepest first, root last; an insert over 4
	# evicts the least recent (last in the list).
	#   r1 1,2,3     miss      touch 3,2,1            → 1 2 3
	#   r2 1,2,4,5   hit 1,2   +5; +4 evicts 3         → 1 2 4 5    (1 ev.)
	#   r3 1,2,3     hit 1,2   +3 evicts 5            → 1 2 3 4    (2)
	#   r4 1,2,4,5   hit 1,2,4 +5 evicts 4; +4 evicts 3 → 1 2 4 5   (4)
	#   r5 6         miss      +6 evicts 5            → 6 1 2 4    (5)
	#   r6 1,2,4,5   hit 1,2,4 +5 evicts 4, +4 evicts 2, +2 evicts 1,
	#                          +1 evicts 6            → 1 2 4 5    (9)
	hand_trace >"$IN"
	rs --trace mooncake --block-size 4 --workers 1 --capacity-blocks 4 "$IN"
	assert_success
	[ "$(fields .overlap_blocks)" = "0 2 2 3 0 3" ]
	[ "$(summary '[.hit_blocks, .hashed_blocks, .evictions, .capacity_blocks, .index_pairs]')" = '[10,19,9,4,4]' ]
	# without a capacity nothing is evicted: r3 hits 1,2,3, r6 1,2,4,5
	rs --trace mooncake --block-size 4 --workers 1 --approx --ttl 0 "$IN"
	assert_success
	[ "$(fields .overlap_blocks)" = "0 2 3 4 0 4" ]
	[ "$(summary 'has("evictions")')" = false ]
}

@test "capacity 4: --emit-events writes each request's net stores and evictions as RouterEvents" {
	# From the LRU order above: r1 stores 1,2,3; r2 stores 4,5 (parent 2)
	# and removes 3; r3 stores 3, removes 5; r4 stores 5 (parent 4) and
	# removes 3 (4 was evicted and touched again: held before and after,
	# so no event); r5 stores 6 (root), removes 5; r6 stores 5, removes 6
	# (1, 2 and 4 came back within the request).
	hand_trace >"$IN"
	ev="$BATS_TEST_TMPDIR/ev.ndjson"
	rs --trace mooncake --block-size 4 --workers 1 --capacity-blocks 4 --emit-events "$ev" "$IN"
	assert_success
	run jq -c '.event.data | to_entries[0] | [.key, ([.value.blocks[]?.tokens_hash] + (.value.block_hashes // []) | length)]' "$ev"
	[ "$(printf '%s\n' "$output" | paste -sd' ')" = '["stored",3] ["stored",2] ["removed",1] ["stored",1] ["removed",1] ["stored",1] ["removed",1] ["stored",1] ["removed",1] ["stored",1] ["removed",1]' ]
	run jq -c '[.event.event_id, (.event.data.stored.blocks // [] | map(.tokens_hash))]' "$ev"
	[ "$(printf '%s\n' "$output" | paste -sd' ')" = '[1,[1,2,3]] [2,[4,5]] [3,[]] [4,[3]] [5,[]] [6,[5]] [7,[]] [8,[6]] [9,[]] [10,[5]] [11,[]]' ]
	# r4's removal is r3's stored block 3; r6's is r5's block 6
	run jq -s -c '[.[6].event.data.removed.block_hashes[0] == .[3].event.data.stored.blocks[0].block_hash, .[10].event.data.removed.block_hashes[0] == .[7].event.data.stored.blocks[0].block_hash, .[7].event.data.stored.parent_hash]' "$ev"
	[ "$output" = '[true,true,null]' ]
	# fed back into route-score, the events rebuild the 4 blocks cleanly
	rs --block-size 4 "$ev"
	assert_success
	[ "$(summary '[.events, .applied, .skipped, .unknown_removals, [.workers[].tree_size]]')" = '[11,11,{"stale":0,"gap":0,"parent_not_found":0,"self_reference":0},0,[4]]' ]
}

@test "capacity 64 on the Mooncake excerpt (sglang-cache-aware, 4 workers): hits, evictions and events match the Python LRU model" {
	ev="$BATS_TEST_TMPDIR/ev.ndjson"
	rs --trace mooncake --workers 4 --capacity-blocks 64 --emit-events "$ev" --policy sglang-cache-aware "$MC"
	assert_success
	field '.chosen.worker_id' >"$BATS_TEST_TMPDIR/assign"
	model=$(/usr/bin/python3 "$KVP_ROOT/tests/lru_model.py" sim "$MC" "$BATS_TEST_TMPDIR/assign" 64)
	[ "$(fields .overlap_blocks)" = "$(printf '%s' "$model" | jq -r '.hits["64"] | join(" ")')" ]
	[ "$(summary .evictions)" = "$(printf '%s' "$model" | jq '.evictions["64"]')" ]
	[ "$(/usr/bin/python3 "$KVP_ROOT/tests/lru_model.py" events "$ev")" = "$(printf '%s' "$model" | jq -c -S '.final["64"]')" ]
	# and route-score reads its own events back: same tree sizes, no anomaly
	sizes=$(summary '[.workers[].tree_size]')
	rs --block-size 512 "$ev"
	assert_success
	[ "$(summary '[.workers[].tree_size]')" = "$sizes" ]
	[ "$(summary '[.skipped.parent_not_found, .skipped.stale, .unknown_removals, .duplicate_store]')" = '[0,0,0,0]' ]
}

@test "--emit-events: a write error or an unwritable path is trouble (exit 2), the decisions still written" {
	hand_trace >"$IN"
	rs --trace mooncake --block-size 4 --workers 1 --capacity-blocks 4 --emit-events /dev/full "$IN"
	assert_failure 2
	[[ "$stderr" == *"/dev/full: write error"* ]]
	[ "$(field .rec | wc -l)" = 6 ]
	rs --trace mooncake --block-size 4 --workers 1 --capacity-blocks 4 --emit-events "$BATS_TEST_TMPDIR/no/such/dir" "$IN"
	assert_failure 2
	[[ "$stderr" == *"no/such/dir"* ]]
	[ "$output" = "" ]
}

@test "--capacity-blocks needs --approx or --trace mooncake; --emit-events needs --capacity-blocks" {
	echo '{"type":"worker","worker_id":1}' >"$IN"
	rs --block-size 4 --capacity-blocks 8 "$IN"
	assert_failure 2
	[[ "$stderr" == *"--capacity-blocks needs --approx or --trace mooncake"* ]]
	rs --block-size 4 --approx --emit-events "$BATS_TEST_TMPDIR/e" "$IN"
	assert_failure 2
	[[ "$stderr" == *"--emit-events needs --capacity-blocks"* ]]
	rs --block-size 4 --approx --capacity-blocks 0 "$IN"
	assert_failure 2
}

# --- miss-ratio curves ---------------------------------------------------------

@test "--mrc, capacity case by hand: hits 10 at capacity 4 and 13 unbounded of 19" {
	# capacity 4: the hits of the LRU run above (0+2+2+3+0+3); unbounded:
	# every block seen before hits (r2 1,2; r3 1,2,3; r4 1,2,4,5; r6 the
	# same) = 13; the largest useful capacity is 8 (the deepest reuse)
	hand_trace >"$IN"
	rs --trace mooncake --block-size 4 --workers 1 --mrc "$IN"
	assert_success
	# 80% of the ceiling is 10.4 hits: capacity 4 has 10, 8 has 13 → 8
	run jq -c 'select(.rec=="mrc" and .scope=="worker") | [.accesses, (.points[] | select(.capacity_blocks==4) | .hits), .infinite.hits, .points[-1].capacity_blocks, .capacity_for_80pct]' <<<"$output"
	[ "$output" = '[19,10,13,8,8]' ]
}

@test "--mrc on the Mooncake excerpt (dynamo, 4 workers): every point, per worker and fleet, equals the Python model" {
	rs --trace mooncake --workers 4 --approx --mrc "$MC"
	assert_success
	out=$output
	field '.chosen.worker_id' >"$BATS_TEST_TMPDIR/assign"
	caps=$(printf '%s\n' "$out" | jq -r 'select(.rec=="mrc" and .scope=="fleet") | .points[].capacity_blocks' | paste -sd' ')
	# shellcheck disable=SC2086
	model=$(/usr/bin/python3 "$KVP_ROOT/tests/lru_model.py" sim "$MC" "$BATS_TEST_TMPDIR/assign" $caps inf)
	want_fleet=$(printf '%s' "$model" | jq -c --arg caps "$caps" '. as $m | [($caps | split(" "))[] | $m.fleet[.]] + [$m.fleet.inf]')
	got_fleet=$(printf '%s\n' "$out" | jq -c 'select(.rec=="mrc" and .scope=="fleet") | [.points[].hits] + [.infinite.hits]')
	[ "$got_fleet" = "$want_fleet" ]
	for w in 0 1 2 3; do
		got=$(printf '%s\n' "$out" | jq -c --argjson w $w 'select(.rec=="mrc" and .scope=="worker" and .worker_id==$w) | [.accesses, (.points | map({key: (.capacity_blocks|tostring), value: .hits}) | from_entries), .infinite.hits]')
		want=$(printf '%s' "$model" | jq -c --arg w $w --arg caps "$caps" '. as $m | [$m.accesses[$w], ([($caps | split(" "))[] | {key: ., value: ($m.workers[.][$w] // 0)}] | from_entries)] + [$m.workers.inf[$w] // 0]')
		# a worker's own points stop at its largest useful capacity
		want=$(jq -c --argjson g "$got" '.[1] |= with_entries(select(.key as $k | $g[1] | has($k)))' <<<"$want")
		[ "$got" = "$want" ]
	done
	# the largest useful capacity reaches the ceiling
	[ "$(printf '%s\n' "$out" | jq -c 'select(.rec=="mrc") | .points[-1].hits == .infinite.hits' | sort -u)" = true ]
}

# --- peer policies ---------------------------------------------------------------

@test "every --policy name is written in its decisions and the summary; an unknown one lists the choices" {
	for p in dynamo round-robin random least-loaded sglang-cache-aware prodstack-kvaware prodstack-loadaware; do
		rs --trace mooncake --workers 4 --approx --policy "$p" "$MC"
		assert_success
		[ "$(field .policy | sort -u)" = "\"$p\"" ]
		[ "$(summary .policy)" = "\"$p\"" ]
		[ "$(summary .routed)" = 500 ]
		# decisions keep Dynamo's keys under every policy
		[ "$(field '[has("candidates"), has("logit"), has("max_overlap"), (.candidates | length)]' | sort -u)" = '[true,true,true,4]' ]
	done
	rs --trace mooncake --workers 4 --policy fastest "$MC"
	assert_failure 2
	[[ "$stderr" == *round-robin* && "$stderr" == *prodstack-loadaware* ]]
}

@test "round-robin, 6 requests: request i → i-th worker in id order (workers declared 7, 3, 5)" {
	{
		echo '{"type":"worker","worker_id":7}'
		echo '{"type":"worker","worker_id":3}'
		echo '{"type":"worker","worker_id":5}'
		for i in 1 2 3 4 5 6; do echo "{\"type\":\"request\",\"request_id\":\"r$i\",\"block_hashes\":[$i]}"; done
	} >"$IN"
	rs --block-size 4 --policy round-robin "$IN"
	assert_success
	[ "$(fields .chosen.worker_id)" = "3 5 7 3 5 7" ]
	[ "$(summary '[.workers[].routed]')" = '[2,2,2]' ]
	# a query (commit false) still counts as request i: r2 → 5, not routed
	sed -i '5s/}$/,"commit":false}/' "$IN"
	rs --block-size 4 --policy round-robin "$IN"
	assert_success
	[ "$(fields .chosen.worker_id)" = "3 5 7 3 5 7" ]
	[ "$(summary '[.workers[].routed]')" = '[2,1,2]' ]
}

@test "least-loaded, 6 requests on 2 workers: fewest active blocks, ties to the lower id" {
	# active blocks (w0, w1) before each request → choice:
	#   r1 [1,2,3]   (0,0) tie → 0      r4 [6,7]      (3,2) → 1
	#   r2 [4]       (3,0)     → 1      r5 [8]        (3,4) → 0
	#   r3 [5]       (3,1)     → 1      r6 [1,2,3,9]  (4,4) tie → 0
	{
		mc 0 12 1 1,2,3
		mc 1 4 1 4
		mc 2 4 1 5
		mc 3 8 1 6,7
		mc 4 4 1 8
		mc 5 16 1 1,2,3,9
	} >"$IN"
	rs --trace mooncake --block-size 4 --workers 2 --policy least-loaded "$IN"
	assert_success
	[ "$(fields .chosen.worker_id)" = "0 1 1 1 0 0" ]
	[ "$(field '[.candidates[].active_blocks]' | tail -1)" = '[4,4]' ]
}

@test "sglang-cache-aware: the shortest queue once max - min active requests passes --balance-abs (and max > rel·min)" {
	# Six requests [1,2,3,4] (isl 16, bs 4), 2 workers, --balance-abs 2.
	# Active requests (w0, w1) before each → choice:
	#   r1 (0,0) balanced, no match → smallest tree, tie → 0
	#   r2 (1,0) diff 1       → match 4/4 = 1 > 0.3 → cache_hit 0
	#   r3 (2,0) diff 2 = abs: not over → cache_hit 0
	#   r4 (3,0) diff 3 > 2 and 3 > 1.5·0 → imbalanced → 1
	#   r5 (3,1) diff 2       → both trees match 4, lowest id → 0
	#   r6 (4,1) diff 3 > 2 and 4 > 1.5·1 → imbalanced → 1
	for i in 0 1 2 3 4 5; do mc $i 16 1 1,2,3,4; done >"$IN"
	rs --trace mooncake --block-size 4 --workers 2 --policy sglang-cache-aware --balance-abs 2 "$IN"
	assert_success
	[ "$(fields .chosen.worker_id)" = "0 0 0 1 0 1" ]
	[ "$(fields .policy_reason)" = '"smallest_tree" "cache_hit" "cache_hit" "imbalanced" "cache_hit" "imbalanced"' ]
	# --balance-rel 4: at r6, 4 > 4·1 fails → balanced → cache_hit 0
	rs --trace mooncake --block-size 4 --workers 2 --policy sglang-cache-aware --balance-abs 2 --balance-rel 4 "$IN"
	assert_success
	[ "$(fields .chosen.worker_id)" = "0 0 0 1 0 0" ]
	# --cache-threshold 1: a full match (rate 1) is not over it → the
	# smallest tree every time: r1 tie → 0, r2 the empty 1, then both
	# trees hold the same 4 blocks → 0
	rs --trace mooncake --block-size 4 --workers 2 --policy sglang-cache-aware --cache-threshold 1 "$IN"
	assert_success
	[ "$(fields .chosen.worker_id)" = "0 1 0 0 0 0" ]
}

@test "prodstack-kvaware: matched/prompt - beta·relative load, by hand" {
	# 3 requests [1,2] (isl 8, bs 4), 2 workers, --approx (the chosen
	# worker caches the blocks). beta 0.5: r2 w0 1 - 0.5·1/1 = 0.5 > w1 0
	# → 0; r3 w0 1 - 0.5·2/2 = 0.5 → 0. beta 2: r2 w0 1 - 2 = -1 < 0 → 1;
	# r3 both match: w0 1 - 2·1/1, w1 1 - 2·1/1, tie → 0.
	for i in 0 1 2; do mc $i 8 1 1,2; done >"$IN"
	rs --trace mooncake --block-size 4 --workers 2 --approx --policy prodstack-kvaware "$IN"
	assert_success
	[ "$(fields .chosen.worker_id)" = "0 0 0" ]
	rs --trace mooncake --block-size 4 --workers 2 --approx --policy prodstack-kvaware --beta 2 "$IN"
	assert_success
	[ "$(fields .chosen.worker_id)" = "0 1 0" ]
	# loadaware counts blocks: the same here (each request holds 2)
	rs --trace mooncake --block-size 4 --workers 2 --approx --policy prodstack-loadaware --beta 2 "$IN"
	assert_success
	[ "$(fields .chosen.worker_id)" = "0 1 0" ]
}

@test "random: seeded, reproducible, and --draw picks floor(u·n)" {
	rs --trace mooncake --workers 4 --policy random --sample-seed 7 "$MC"
	assert_success
	a=$(fields .chosen.worker_id)
	rs --trace mooncake --workers 4 --policy random --sample-seed 7 "$MC"
	[ "$(fields .chosen.worker_id)" = "$a" ]
	rs --trace mooncake --workers 4 --policy random --sample-seed 8 "$MC"
	[ "$(fields .chosen.worker_id)" != "$a" ]
	rs --trace mooncake --workers 4 --policy random --draw 0.6 "$MC"
	[ "$(field .chosen.worker_id | sort -u)" = 2 ]
}

@test "summary load balance: round-robin, 6 one-block requests on 4 workers" {
	# routed 2,2,1,1: max/mean = 2/1.5. Active blocks after each decision
	# (nothing is freed): w0 1,1,1,1,2,2 = 8; w1 0,1,1,1,1,2 = 6; w2 4;
	# w3 3; mean 21/4 → 8/5.25.
	for i in 1 2 3 4 5 6; do mc $i 4 1 $i; done >"$IN"
	rs --trace mooncake --block-size 4 --workers 4 --policy round-robin "$IN"
	assert_success
	[ "$(summary '.load_balance | [.routed_max_mean, .active_blocks_max_mean]')" = "[$(python3 -c 'print(2/1.5, 8/5.25, sep=",")')]" ]
}

# --- simulated time ------------------------------------------------------------------

@test "simulated time: FCFS prefill per worker, TTFT p50/p99 by hand" {
	# 1 worker, 1000 prefill tokens/s, 100 decode tokens/s, no cache:
	#   r1 t=0    prefill 0..1000    TTFT 1000, decodes alone: done 1100
	#   r2 t=500  waits, 1000..2000  TTFT 1500, decodes alone: done 2100
	#   r3 t=3000 (r1, r2 done)      TTFT 1000
	# nearest rank over [1000,1000,1500]: p50 1000, p99 1500
	{
		mc 0 1000 10 1,2
		mc 500 1000 10 3,4
		mc 3000 1000 10 5,6
	} >"$IN"
	rs --trace mooncake --workers 1 --prefill-tokens-per-s 1000 --decode-tokens-per-s 100 "$IN"
	assert_success
	[ "$(fields '.candidates[0].active_prefill_tokens')" = "0 1000 0" ]
	[ "$(fields '.candidates[0].active_blocks')" = "0 2 0" ]
	[ "$(summary '.simulated | [.completed, .ttft_requests, .ttft_p50_ms, .ttft_p99_ms]')" = '[2,3,1000,1500]' ]
	# off by default: load stays
	rs --trace mooncake --workers 1 "$IN"
	[ "$(fields '.candidates[0].active_blocks')" = "0 2 4" ]
	[ "$(summary 'has("simulated")')" = false ]
}

# --- kv-hash --to-mooncake ---------------------------------------------------------

@test "kv-hash --to-mooncake: dense ids in first-seen order, a fresh id for a partial block (by hand)" {
	# bs 4: r1 tokens 0..9 = blocks [0-3][4-7] + partial → 0 1 2; r2 0..7
	# → 0 1; r3 [0-3][100-103] → 0 (same prefix) 3 (new)
	printf '%s\n' '{"ts_ms":5,"tokens":[0,1,2,3,4,5,6,7,8,9],"osl":3}' \
		'{"timestamp":9,"tokens":[0,1,2,3,4,5,6,7]}' \
		'{"ts_ms":12,"tokens":[0,1,2,3,100,101,102,103],"output_length":2}' >"$IN"
	run --separate-stderr kvp kv-hash --to-mooncake --block-size 4 "$IN"
	assert_success
	[ "$output" = '{"timestamp":5,"input_length":10,"output_length":3,"hash_ids":[0,1,2]}
{"timestamp":9,"input_length":8,"output_length":0,"hash_ids":[0,1]}
{"timestamp":12,"input_length":8,"output_length":2,"hash_ids":[0,3]}' ]
	echo '{"tokens":[1,2,3,4]}' >"$IN"
	run --separate-stderr kvp kv-hash --to-mooncake --block-size 4 "$IN"
	assert_failure 1
	[[ "$stderr" == *"in.jsonl:1: missing key \"timestamp\" (or \"ts_ms\")"* ]]
	[ "$output" = "" ]
	run --separate-stderr kvp kv-hash --to-mooncake --detect "$IN"
	assert_failure 2
}

@test "kv-hash --to-mooncake | route-score --trace mooncake: the same overlaps as route-score on the token requests" {
	{
		echo '{"type":"request","request_id":"a","ts_ms":1,"tokens":[0,1,2,3,4,5,6,7,8,9]}'
		echo '{"type":"request","request_id":"b","ts_ms":2,"tokens":[0,1,2,3,4,5,6,7,50]}'
		echo '{"type":"request","request_id":"c","ts_ms":3,"tokens":[9,9,9,9,1,1,1,1]}'
		echo '{"type":"request","request_id":"d","ts_ms":4,"tokens":[0,1,2,3,4,5,6,7,8,9,10,11,12]}'
		echo '{"type":"request","request_id":"e","ts_ms":5,"tokens":[9,9,9,9,1,1,1,1,2,2,2,2]}'
		echo '{"type":"request","request_id":"f","ts_ms":6,"tokens":[0,1,2,3]}'
	} >"$IN"
	rs --block-size 4 --workers 2 --approx --ttl 0 "$IN"
	assert_success
	want=$(fields '[.chosen.worker_id, .overlap_blocks, .isl]')
	[ "$(fields .overlap_blocks)" != "0 0 0 0 0 0" ]
	set -o pipefail
	kvp kv-hash --to-mooncake --block-size 4 "$IN" >"$BATS_TEST_TMPDIR/mc.jsonl"
	rs --trace mooncake --block-size 4 --workers 2 --approx --ttl 0 "$BATS_TEST_TMPDIR/mc.jsonl"
	assert_success
	[ "$(fields '[.chosen.worker_id, .overlap_blocks, .isl]')" = "$want" ]
}

@test "--format text names the policy that chose (and SGLang's reason), not a lowest logit" {
	for i in 0 1 2; do mc $i 16 1 1,2,3,4; done >"$IN"
	rs --trace mooncake --block-size 4 --workers 2 --approx --policy round-robin --format text "$IN"
	assert_success
	[ "$(grep -c -- '-> worker .*: chosen by policy round-robin;' <<<"$output")" = 3 ]
	# r2 goes to 1 while 0 holds all 4 blocks
	grep -q 'NOT the max-overlap worker 0 (4 blocks): the policy outweighed 4 cached blocks' <<<"$output"
	rs --trace mooncake --block-size 4 --workers 2 --approx --policy sglang-cache-aware --format text "$IN"
	[ "$(grep -o 'chosen by policy [^;]*' <<<"$output" | paste -sd,)" = "chosen by policy sglang-cache-aware (smallest_tree),chosen by policy sglang-cache-aware (cache_hit),chosen by policy sglang-cache-aware (cache_hit)" ]
	# the summary's lab line: routed 3 of 3 on worker 0 → max/mean 2
	[ "$(tail -n 1 <<<"$output")" = "policy sglang-cache-aware: routed max/mean 2.000, active blocks max/mean 2.000" ]
}

@test "simulated time: a worker's decode rate is shared by its decoding requests, by hand" {
	# prefill off (instantaneous), 100 decode tokens/s per worker:
	#   r1 t=0    100 tokens; alone until 500, when it has 50
	#   r2 t=500  100 tokens; 50 tokens/s each: r1 done at 1500, r2 has
	#             50 then and finishes alone at 2000
	#   probes (no output, done at once) at 1400, 1600, 2100 see active
	#   blocks of r1 + r2 (4), r2 (2), nothing (0); a per-request rate
	#   would have freed r1 at 1000
	{
		mc 0 1024 100 1,2
		mc 500 1024 100 3,4
		mc 1400 1024 0 5,6
		mc 1600 1024 0 7,8
		mc 2100 1024 0 9,10
	} >"$IN"
	rs --trace mooncake --workers 1 --decode-tokens-per-s 100 "$IN"
	assert_success
	[ "$(fields '.candidates[0].active_blocks')" = "0 2 4 2 0" ]
	[ "$(summary '.simulated | [.completed, .ttft_p99_ms]')" = '[4,0]' ]
}

@test "--replicas does not combine with the policy lab's options (exit 2, named)" {
	for opt in "--policy round-robin" "--approx --capacity-blocks 4" "--mrc" "--prefill-tokens-per-s 1000"; do
		# shellcheck disable=SC2086
		run --separate-stderr kvp route-score --block-size 4 --workers 2 --replicas 2 $opt /dev/null
		assert_failure 2
		[[ "$stderr" == *"--replicas models Dynamo's router replicas; it does not combine with --policy, --capacity-blocks, --mrc or simulated time"* ]]
	done
	run --separate-stderr kvp route-score --block-size 4 --workers 2 --replicas 2 --policy dynamo /dev/null
	assert_success
}

@test "a trace with output lengths but no completion model: one warning, naming the first such line" {
	rs --trace mooncake --workers 4 --approx "$MC"
	assert_success
	[ "$(printf '%s\n' "$stderr" | grep -c 'warning')" -eq 1 ]
	[[ "$stderr" == "route-score: $MC:1: warning: the trace has output lengths but no completion model: requests never finish and TTFT is not measured (see --prefill-tokens-per-s)" ]]
	[ "$(summary '.simulated')" = null ]
	# simulated time is a completion model: no warning, requests finish
	rs --trace mooncake --workers 4 --approx --prefill-tokens-per-s 20000 --decode-tokens-per-s 2000 "$MC"
	assert_success
	[ -z "$stderr" ]
	[ "$(summary '.simulated.completed > 0')" = true ]
	# no output length, no warning; the first line with one is named
	{ jq -c 'del(.output_length)' "$MC" | head -2; sed -n 3p "$MC"; } >"$IN"
	rs --trace mooncake --workers 4 --approx "$IN"
	assert_success
	[[ "$stderr" == "route-score: $IN:3: warning: the trace has output lengths"* ]]
}
