#!/usr/bin/env bats
# route-score --engine-model (route-score(1) "Engine truth"): the cached
# tokens each engine will report, under vLLM's and SGLang's rules, and
# the comparison with the figure a request carries (cache_truth).
# Expected values are worked out by hand from the rules in the issue
# (27) and the man page; each test's comment shows the work. Requests
# bring block_hashes (local hashes) and input_length, so a request's
# blocks are named by their hashes: A = 1,2,3,4 is four blocks.
load test_helper

rs() { run --separate-stderr kvp route-score "$@"; }
field() { printf '%s\n' "$output" | jq -c "select(.rec==\"decision\") | $1"; }
fields() { field "$1" | paste -sd' '; }
summary() { printf '%s\n' "$output" | jq -c "select(.rec==\"summary\") | $1"; }

# rq ID TS ISL HASHES [EXTRA] — one request; EXTRA is appended as keys.
rq() {
	printf '{"request_id":"%s","ts_ms":%s,"input_length":%s,"block_hashes":[%s]%s}\n' \
		"$1" "$2" "$3" "$4" "${5:-}"
}
pd() { printf '{"type":"prefill_done","request_id":"%s"}\n' "$1"; }
fr() { printf '{"type":"free","request_id":"%s"}\n' "$1"; }
# the hashes 1..N, comma-separated
ids() { seq -s, 1 "$1"; }
# one worker, approximate mode, block size B, the rest as given
eng() {
	local bs=$1
	shift
	rs --block-size "$bs" --approx --workers 1 --brief "$@" "$IN"
}

setup() {
	IN="$BATS_TEST_TMPDIR/in.jsonl"
}

# --- what counts as cached -----------------------------------------------------

@test "a 640-token prompt fully cached reports 624 (the last block is recomputed); 641 reports 640" {
	# block size 16: 640 tokens are 40 full blocks; the whole blocks before
	# the last token are (640 - 1) / 16 = 39 → 39 × 16 = 624 (issue 27's
	# figure). 641 tokens: (641 - 1) / 16 = 40 blocks → 640, every full
	# block. 16 tokens: (16 - 1) / 16 = 0 → 0 however often it is sent.
	{
		rq a 0 640 "$(ids 40)"
		rq b 1 640 "$(ids 40)"
		rq c 2 641 "$(ids 40)"
		rq d 3 16 99
		rq e 4 16 99
	} >"$IN"
	for m in vllm sglang; do
		# sglang inserts at prefill end: each prefill_done before the next
		awk '{ print } /"request_id"/ { match($0, /"request_id":"[a-z]"/);
			print "{\"type\":\"prefill_done\",\"request_id\":\"" substr($0, RSTART + 14, 1) "\"}" }' \
			"$IN" >"$IN.$m"
		rs --block-size 16 --approx --workers 1 --brief --engine-model "$m" "$IN.$m"
		assert_success
		[ "$stderr" = "" ]
		[ "$(fields .predicted_cached_tokens)" = "0 624 640 0 0" ]
	done
}

@test "a Mooncake trace: the second 640-token request predicts 624, exact against the engine's figure" {
	# as above at block size 16; the requests carry the engine's own figure
	# (0, then 624), so cache_truth counts 2 exact.
	printf '{"timestamp":%s,"input_length":640,"output_length":1,"hash_ids":[%s],"cached_tokens":%s}\n' \
		0 "$(ids 40)" 0 5 "$(ids 40)" 624 >"$IN"
	rs --trace mooncake --block-size 16 --workers 1 --brief --engine-model vllm "$IN"
	assert_success
	[ "$(fields '[.predicted_cached_tokens, .engine_cached_tokens]')" = "[0,0] [624,624]" ]
	[ "$(summary .cache_truth)" = '{"requests":2,"exact":2,"over":0,"under":0,"mean_abs_error_tokens":0}' ]
}

# --- when blocks become hittable ----------------------------------------------

@test "8 concurrent sharers: vLLM 7 hit (scheduled = hittable), SGLang all miss until a prefill ends" {
	# 8 requests of one new 640-token prefix at the same time on one
	# worker (block size 16). vLLM makes s1's blocks hittable when it is
	# scheduled: s2..s8 find 39 of 40 blocks → 624 each. SGLang inserts
	# s1's prompt only when its prefill ends, and no prefill_done came:
	# all 8 miss. After s1's prefill_done a ninth request hits 624 on
	# both.
	for i in 1 2 3 4 5 6 7 8; do rq "s$i" 0 640 "$(ids 40)"; done >"$IN"
	{
		pd s1
		rq s9 1 640 "$(ids 40)"
	} >>"$IN"
	eng 16 --engine-model vllm
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 624 624 624 624 624 624 624 624" ]
	eng 16 --engine-model sglang
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 0 0 0 0 0 0 0 624" ]
}

@test "SGLang with simulated time: a prompt is hittable once its simulated prefill ends" {
	# block size 4, A = 4 blocks, 17 tokens: cached at most (17-1)/4 = 4
	# blocks = 16 tokens. Prefill at 1 token/s: A (ts 0) prefills 17
	# tokens, ending at 17,000 ms. B (ts 1,000) comes before: SGLang 0,
	# vLLM 16. C (ts 20,000) comes after: 16 on both.
	{
		rq A 0 17 1,2,3,4
		rq B 1000 17 1,2,3,4
		rq C 20000 17 1,2,3,4
	} >"$IN"
	eng 4 --engine-model sglang --prefill-tokens-per-s 1
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 0 16" ]
	eng 4 --engine-model vllm --prefill-tokens-per-s 1
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 16 16" ]
}

@test "SGLang without simulated time or prefill_done: a free inserts the prompt (the request finished)" {
	# A is never prefill_done, but its free caches it (SGLang caches a
	# finished request): A2 hits 4 blocks = 16 tokens. Without the free
	# nothing inserts A: A2 gets 0.
	{
		rq A 0 17 1,2,3,4
		fr A
		rq A2 1 17 1,2,3,4
	} >"$IN"
	eng 4 --engine-model sglang
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 16" ]
	grep -v free "$IN" >"$IN.nofree"
	rs --block-size 4 --approx --workers 1 --brief --engine-model sglang "$IN.nofree"
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 0" ]
}

# --- eviction order ------------------------------------------------------------

@test "vLLM frees a request's blocks in reverse order: the tail block is evicted first" {
	# capacity 5, block size 4. A = 1,2,3,4 runs and is freed: the free
	# queue gets 4,3,2,1 (head first). B = 7,8 needs 2 new blocks: 6 > 5
	# evicts the head, block 4. A2 = A again finds 1,2,3 = 12 tokens (a
	# forward order would have evicted block 1 and left 0).
	{
		rq A 0 17 1,2,3,4
		fr A
		rq B 1 9 7,8
		rq A2 2 17 1,2,3,4
	} >"$IN"
	eng 4 --engine-model vllm --capacity-blocks 5
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 0 12" ]
	[ "$(summary .engine.evictions)" = 1 ]
}

@test "SGLang evicts the least recently used unlocked leaf" {
	# capacity 8, block size 4. A = 1,2,3,4 then B = 5,6,7,8, each
	# prefilled and freed (A's path touched first, so older). C = 9 (isl
	# 5) allocates 1 block: 9 > 8 evicts the LRU leaf: A's block 4 (B's
	# leaf 8 is newer; A's 3 is not a leaf). A2 = A finds 1,2,3 = 12
	# tokens, locks them and allocates block 4 again: 6 in the tree + 2
	# allocated (C's, A2's) = 8 + 1 > 8 evicts the LRU unlocked leaf,
	# B's 8 (A's 3 is locked now). B2 = B finds 5,6,7 = 12; its own
	# allocation finds no unlocked leaf (3 and 7 are locked): 1 over.
	# 2 evictions in all.
	{
		rq A 0 17 1,2,3,4
		pd A
		fr A
		rq B 1 17 5,6,7,8
		pd B
		fr B
		rq C 2 5 9
		rq A2 3 17 1,2,3,4
		rq B2 4 17 5,6,7,8
	} >"$IN"
	eng 4 --engine-model sglang --capacity-blocks 8
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 0 0 12 12" ]
	[ "$(summary '[.engine.evictions, .engine.overflow_peak_blocks]')" = "[2,1]" ]
}

# bats test_tags=valgrind
@test "a running request's blocks survive eviction pressure (both engines)" {
	# capacity 4, block size 4. A = 1,2,3,4 is running (never freed; on
	# SGLang prefilled, so in the tree). B = 5,6,7,8 needs 4 more blocks:
	# 8 > 4 but nothing is evictable (A holds its 4, B its own), so the
	# cache runs 4 over (overflow_peak_blocks 4) and evicts nothing. C =
	# A's blocks still finds all 4 = 16 tokens. Had A been freed first,
	# B's blocks would have evicted A's: C gets 0.
	{
		rq A 0 17 1,2,3,4
		pd A
		rq B 1 17 5,6,7,8
		rq C 2 17 1,2,3,4
	} >"$IN"
	for m in vllm sglang; do
		eng 4 --engine-model "$m" --capacity-blocks 4
		assert_success
		[ "$(fields .predicted_cached_tokens)" = "0 0 16" ]
		[ "$(summary '[.engine.evictions, .engine.overflow_peak_blocks]')" = "[0,4]" ]
	done
	{
		rq A 0 17 1,2,3,4
		pd A
		fr A
		rq B 1 17 5,6,7,8
		rq C 2 17 1,2,3,4
	} >"$IN"
	for m in vllm sglang; do
		eng 4 --engine-model "$m" --capacity-blocks 4
		assert_success
		[ "$(fields .predicted_cached_tokens)" = "0 0 0" ]
		[ "$(summary .engine.evictions)" = 4 ]
	done
}

# --- SGLang HiCache host tier ----------------------------------------------------

# bats test_tags=valgrind
@test "HiCache: a device eviction keeps the host copy and a hit loads it back" {
	# capacity 4 device blocks, block size 4. A = 1,2,3,4 is inserted
	# (written through to the host) and freed; B = 5,6,7,8 allocates 4:
	# 8 > 4 evicts A's 4 leaves from the device. A2 = A: without a host
	# tier 0; with a 16-block host tier the match goes on into the host
	# (4 blocks = 16 tokens, loaded back: host_loaded_blocks 4), which
	# evicts B's 4 from the device (8 evictions in all).
	{
		rq A 0 17 1,2,3,4
		pd A
		fr A
		rq B 1 17 5,6,7,8
		pd B
		fr B
		rq A2 2 17 1,2,3,4
	} >"$IN"
	eng 4 --engine-model sglang --capacity-blocks 4
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 0 0" ]
	[ "$(summary '[.engine.evictions, .engine.host_loaded_blocks]')" = "[8,0]" ]
	eng 4 --engine-model sglang --capacity-blocks 4 --host-capacity-blocks 16
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 0 16" ]
	[ "$(summary '[.engine.evictions, .engine.host_loaded_blocks, .engine.host_capacity_blocks]')" = "[8,4,16]" ]
}

@test "HiCache: the host evicts its own LRU among blocks gone from the device" {
	# device 4, host 4, block size 4. A = 1,2,3,4 fills both tiers. B =
	# 5,6,7,8 evicts A from the device (A's host copies stay, host-only
	# now) and, at its insertion, each of B's blocks needs a host copy:
	# the host is full, so A's host-only leaves go, 4 then 3, 2, 1 (4 host
	# evictions). A2 = A finds nothing on either tier: 0.
	{
		rq A 0 17 1,2,3,4
		pd A
		fr A
		rq B 1 17 5,6,7,8
		pd B
		fr B
		rq A2 2 17 1,2,3,4
	} >"$IN"
	eng 4 --engine-model sglang --capacity-blocks 4 --host-capacity-blocks 4
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 0 0" ]
	[ "$(summary .engine.host_evictions)" = 4 ]
}

# --- resets -------------------------------------------------------------------------

# bats test_tags=valgrind
@test "a cleared record and a normalized AllBlocksCleared event empty the worker's engine cache" {
	# A = 1,2,3,4 is cached (16 tokens for A2) unless a reset comes
	# between: then A2 gets 0 on both engines.
	{
		rq A 0 17 1,2,3,4
		fr A
		rq A2 1 17 1,2,3,4
	} >"$IN"
	eng 4 --engine-model vllm
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "0 16" ]
	for clr in '{"type":"cleared","worker_id":0}' \
		'{"worker_id":0,"event":{"event_id":1,"dp_rank":0,"data":"cleared"}}'; do
		{
			rq A 0 17 1,2,3,4
			fr A
			printf '%s\n' "$clr"
			rq A2 1 17 1,2,3,4
		} >"$IN"
		for m in vllm sglang; do
			eng 4 --engine-model "$m"
			assert_success
			[ "$(fields .predicted_cached_tokens)" = "0 0" ]
			[ "$(summary .engine.clears)" = 1 ]
		done
	done
}

@test "dp ranks have their own caches; a cleared event empties only its rank" {
	# worker 7 with 2 ranks; A pinned to rank 0 then rank 1: both miss
	# (separate caches); both end. A cleared for rank 1, then A on rank 0
	# hits 16 and on rank 1 gets 0.
	pin() { printf ',"pinned":{"worker_id":7,"dp_rank":%s}' "$1"; }
	{
		echo '{"type":"worker","worker_id":7,"dp_size":2}'
		rq a 0 17 1,2,3,4 "$(pin 0)"
		rq b 1 17 1,2,3,4 "$(pin 1)"
		fr a
		fr b
		echo '{"type":"cleared","worker_id":7,"dp_rank":1}'
		rq c 2 17 1,2,3,4 "$(pin 0)"
		rq d 3 17 1,2,3,4 "$(pin 1)"
	} >"$IN"
	rs --block-size 4 --approx --brief --engine-model vllm "$IN"
	assert_success
	[ "$(fields '[.chosen.dp_rank, .predicted_cached_tokens]')" = "[0,0] [1,0] [0,16] [1,0]" ]
}

# --- the engine's figure ----------------------------------------------------------

@test "the engine's figure in each shape; SGLang's absent detail is 0" {
	# A then A2 = A (vLLM: 0, 16). The figure comes as cached_tokens,
	# usage.prompt_tokens_details.cached_tokens or meta_info.cached_tokens.
	# A "usage" without the detail: 0 under sglang (it omits the detail
	# when nothing was cached), no figure under vllm.
	{
		rq A 0 17 1,2,3,4 ',"usage":{"prompt_tokens":17}'
		fr A
		rq A2 1 17 1,2,3,4 ',"usage":{"prompt_tokens_details":{"cached_tokens":16}}'
		rq A3 2 17 1,2,3,4 ',"meta_info":{"cached_tokens":12}'
		rq A4 3 17 1,2,3,4 ',"meta_info":{"prompt_tokens":17}'
	} >"$IN"
	eng 4 --engine-model vllm
	assert_success
	[ "$(fields '[.predicted_cached_tokens, .engine_cached_tokens]')" = "[0,null] [16,16] [16,12] [16,null]" ]
	# over: 16 > 12; mean |error| over 2 requests (0 + 4) / 2 = 2
	[ "$(summary .cache_truth)" = '{"requests":2,"exact":1,"over":1,"under":0,"mean_abs_error_tokens":2}' ]
	eng 4 --engine-model sglang
	assert_success
	# sglang: A2..A4 are not inserted (no prefill_done) until A's free:
	# A's free inserts A; the figures 0, 16, 12, 0 (absent detail)
	[ "$(fields '[.predicted_cached_tokens, .engine_cached_tokens]')" = "[0,0] [16,16] [16,12] [16,0]" ]
	[ "$(summary '.cache_truth | [.requests, .exact, .over, .under]')" = "[4,2,2,0]" ]
}

@test "the prediction never reads the engine's figure: the same with, without and with wrong figures" {
	# The run of the HiCache test with every request carrying a figure
	# (a wrong one, 999), and without any: the predictions are the same.
	body() {
		rq A 0 17 1,2,3,4 "$1"
		pd A
		fr A
		rq B 1 17 5,6,7,8 "$1"
		pd B
		fr B
		rq A2 2 17 1,2,3,4 "$1"
	}
	body "" >"$IN"
	eng 4 --engine-model sglang --capacity-blocks 4 --host-capacity-blocks 16
	assert_success
	without=$(fields .predicted_cached_tokens)
	[ "$(summary .cache_truth.requests)" = 0 ]
	body ',"cached_tokens":999' >"$IN"
	eng 4 --engine-model sglang --capacity-blocks 4 --host-capacity-blocks 16
	assert_success
	[ "$(fields .predicted_cached_tokens)" = "$without" ]
	[ "$without" = "0 0 16" ]
	[ "$(summary '.cache_truth | [.requests, .under]')" = "[3,3]" ]
}

@test "without --engine-model the output is the same as before, figures or not" {
	# no new keys, and a request's figure changes nothing
	{
		rq A 0 17 1,2,3,4
		rq A2 1 17 1,2,3,4
	} >"$IN"
	rs --block-size 4 --approx --workers 1 "$IN"
	assert_success
	plain=$output
	sed 's/}$/,"cached_tokens":5,"usage":{"prompt_tokens_details":{"cached_tokens":3}}}/' "$IN" >"$IN.fig"
	rs --block-size 4 --approx --workers 1 "$IN.fig"
	assert_success
	[ "$output" = "$plain" ]
	run jq -s 'map(has("predicted_cached_tokens") or has("engine") or has("cache_truth")) | any' <<<"$output"
	[ "$output" = false ]
}

@test "text format: the engine line per decision and the summary line" {
	{
		rq A 0 17 1,2,3,4 ',"cached_tokens":0'
		rq A2 1 17 1,2,3,4 ',"cached_tokens":12'
	} >"$IN"
	rs --block-size 4 --approx --workers 1 --format text --engine-model vllm "$IN"
	assert_success
	[[ "$output" == *"  engine vllm: predicted 0 cached tokens, reported 0 (exact)"* ]]
	[[ "$output" == *"  engine vllm: predicted 16 cached tokens, reported 12"* ]]
	[[ "$output" == *"cache truth over 2 requests: 1 exact, 1 over, 0 under, mean |error| 2.0 tokens"* ]]
}

# --- every policy, events, workers ---------------------------------------------

@test "every --policy and several workers: each decision predicts from its chosen worker's cache" {
	# 4 workers, A sent 3 times: the first visit of a worker predicts 0,
	# a later one on the same worker 16. Whatever the policy picks, the
	# prediction is 16 exactly when the worker was chosen before.
	{
		rq A 0 17 1,2,3,4
		rq A2 1 17 1,2,3,4
		rq A3 2 17 1,2,3,4
	} >"$IN"
	for p in dynamo round-robin random least-loaded sglang-cache-aware prodstack-kvaware prodstack-loadaware; do
		rs --block-size 4 --approx --workers 4 --brief --policy "$p" --engine-model vllm "$IN"
		assert_success
		run jq -r -s '[.[] | select(.rec == "decision")] | . as $d
			| [range(length) | . as $i | ($d[$i].chosen.worker_id) as $w
			   | ([$d[:$i][] | select(.chosen.worker_id == $w)] | length > 0) as $seen
			   | ($d[$i].predicted_cached_tokens == (if $seen then 16 else 0 end))] | all' <<<"$output"
		[ "$output" = true ]
	done
}

@test "with events: the router's index is the events', the engine caches are --capacity-blocks' size" {
	# Worker 1 stored A's blocks (events); the router sends A there
	# (overlap 4) but the engine model has seen no request on it yet: 0.
	# A2 then predicts 16. --capacity-blocks with events needs
	# --engine-model (it sizes the engine caches only).
	{
		echo '{"type":"worker","worker_id":0}'
		echo '{"type":"stored","worker_id":1,"event_id":1,"blocks":[{"block_hash":11,"tokens_hash":1},{"block_hash":12,"tokens_hash":2},{"block_hash":13,"tokens_hash":3},{"block_hash":14,"tokens_hash":4}]}'
		rq A 0 17 1,2,3,4
		rq A2 1 17 1,2,3,4
	} >"$IN"
	rs --block-size 4 --brief --engine-model vllm --capacity-blocks 8 "$IN"
	assert_success
	[ "$(fields '[.chosen.worker_id, .overlap_blocks, .predicted_cached_tokens]')" = "[1,4,0] [1,4,16]" ]
	[ "$(summary '[.engine.capacity_blocks, has("evictions")]')" = "[8,false]" ]
	rs --block-size 4 --brief --capacity-blocks 8 "$IN"
	assert_failure 2
	[ "${stderr%%$'\n'*}" = "route-score: --capacity-blocks needs --approx or --trace mooncake" ]
}

# --- bad input, bad options ---------------------------------------------------------

@test "a bad engine figure is bad data; -k goes on" {
	{
		rq A 0 17 1,2,3,4 ',"cached_tokens":"x"'
		rq B 1 17 1,2,3,4 ',"usage":5'
		rq C 2 17 1,2,3,4
	} >"$IN"
	eng 4 --engine-model vllm
	assert_failure 1
	[ "$stderr" = "route-score: $IN:1: cached_tokens: expected an integer, got a string" ]
	[ "$(fields .request_id)" = "" ]
	eng 4 --engine-model vllm -k
	assert_failure 1
	[ "$(printf '%s\n' "$stderr" | head -2)" = "route-score: $IN:1: cached_tokens: expected an integer, got a string
route-score: $IN:2: usage: expected an object" ]
	[ "$(fields .request_id)" = '"C"' ]
}

@test "option errors: --host-capacity-blocks needs sglang, an unknown engine, replicas" {
	rq A 0 17 1,2,3,4 >"$IN"
	rs --block-size 4 --approx --workers 1 --host-capacity-blocks 4 "$IN"
	assert_failure 2
	[ "${stderr%%$'\n'*}" = "route-score: --host-capacity-blocks needs --engine-model sglang" ]
	rs --block-size 4 --approx --workers 1 --engine-model vllm --host-capacity-blocks 4 "$IN"
	assert_failure 2
	rs --block-size 4 --approx --workers 1 --engine-model trt "$IN"
	assert_failure 2
	[ "${stderr%%$'\n'*}" = "route-score: --engine-model: unknown engine 'trt' (choices: none, vllm, sglang)" ]
	rs --block-size 4 --workers 1 --engine-model vllm --replicas 2 "$IN"
	assert_failure 2
	[ "${stderr%%$'\n'*}" = "route-score: --engine-model models one router; it does not combine with --replicas" ]
	[ "$output" = "" ]
}

@test "with events and engine figures: the index's error and the model's, and which dominates" {
	# Worker 1 stored A's 4 blocks (events), so the router's index
	# figure is min(4, (17-1)/4 = 4) × 4 = 16 for both requests; the
	# model predicts 0 then 16 (it saw no request on worker 1 before).
	# Engine figures 0, 16: the model is exact twice; the index is 16
	# over once: mean |error| 16 / 2 = 8 → the index dominates.
	# Engine figures 16, 16 (a cache warm from before the capture): the
	# index is exact twice, the model 16 under once → the model
	# dominates.
	st='{"type":"stored","worker_id":1,"event_id":1,"blocks":[{"block_hash":11,"tokens_hash":1},{"block_hash":12,"tokens_hash":2},{"block_hash":13,"tokens_hash":3},{"block_hash":14,"tokens_hash":4}]}'
	{
		echo "$st"
		rq A 0 17 1,2,3,4 ',"cached_tokens":0'
		rq A2 1 17 1,2,3,4 ',"cached_tokens":16'
	} >"$IN"
	rs --block-size 4 --brief --engine-model vllm "$IN"
	assert_success
	[ "$(summary .cache_truth)" = '{"requests":2,"exact":2,"over":0,"under":0,"mean_abs_error_tokens":0,"index":{"exact":1,"over":1,"under":0,"mean_abs_error_tokens":8},"dominant":"index"}' ]
	rs --block-size 4 --format text --engine-model vllm "$IN"
	assert_success
	[[ "$output" == *"; the index's overlap: 1 exact, mean |error| 8.0 tokens; the index's error dominates (missed events, gaps or tiers)"* ]]
	{
		echo "$st"
		rq A 0 17 1,2,3,4 ',"cached_tokens":16'
		rq A2 1 17 1,2,3,4 ',"cached_tokens":16'
	} >"$IN"
	rs --block-size 4 --brief --engine-model vllm "$IN"
	assert_success
	[ "$(summary '[.cache_truth.under, .cache_truth.index.exact, .cache_truth.dominant]')" = '[1,2,"model"]' ]
}

@test "kv-diff: --fail-if gates on the cache truth of two runs" {
	# The 8 sharers (then s9 after s1's prefill) carrying vLLM's figures:
	# 0, then 624 for s2..s9. The vllm run predicts them all: 9 of 9
	# exact. The sglang run predicts 0 for s1..s8 and 624 for s9: s1 and
	# s9 exact, 2/9; mean |error| 7 × 624 / 9 = 485.33.
	for i in 1 2 3 4 5 6 7 8; do
		rq "s$i" 0 640 "$(ids 40)" ",\"cached_tokens\":$([ "$i" = 1 ] && echo 0 || echo 624)"
	done >"$IN"
	{
		pd s1
		rq s9 1 640 "$(ids 40)" ',"cached_tokens":624'
	} >>"$IN"
	kvp route-score --block-size 16 --approx --workers 1 --brief --engine-model vllm "$IN" >"$BATS_TEST_TMPDIR/v.ndjson"
	kvp route-score --block-size 16 --approx --workers 1 --brief --engine-model sglang "$IN" >"$BATS_TEST_TMPDIR/s.ndjson"
	run -1 --separate-stderr kvp kv-diff "$BATS_TEST_TMPDIR/v.ndjson" "$BATS_TEST_TMPDIR/s.ndjson" \
		--fail-if 'cache_truth_exact_fraction_new < 0.5'
	[ "$stderr" = "kv-diff: --fail-if 'cache_truth_exact_fraction_new < 0.5' holds" ]
	run jq -c 'select(.rec == "summary") | [.cache_truth_requests_base, .cache_truth_requests_new,
		.cache_truth_exact_fraction_base, (.cache_truth_exact_fraction_new * 9 | round),
		(.cache_truth_mean_abs_error_new * 3 | round), .changed]' <<<"$output"
	# 485.33 × 3 = 1456
	[ "$output" = "[9,9,1,2,1456,0]" ]
	run -0 --separate-stderr kvp kv-diff "$BATS_TEST_TMPDIR/v.ndjson" "$BATS_TEST_TMPDIR/v.ndjson" \
		--fail-if 'cache_truth_exact_fraction_new < 0.5'
	[ "$stderr" = "" ]
	# without the figures the cache truth keys stay out of the summary
	sed 's/,"cached_tokens":[0-9]*//' "$IN" >"$IN.nofig"
	kvp route-score --block-size 16 --approx --workers 1 --brief --engine-model vllm "$IN.nofig" >"$BATS_TEST_TMPDIR/n.ndjson"
	run -0 --separate-stderr kvp kv-diff "$BATS_TEST_TMPDIR/n.ndjson" "$BATS_TEST_TMPDIR/n.ndjson"
	[ "$(jq -c 'select(.rec == "summary") | [has("cache_truth_requests_base"), has("balance_new")]' <<<"$output")" = "[false,true]" ]
}

@test "kv-report: a router vs engine panel, only when decisions carry both figures" {
	# 8 sharers on one worker, vLLM's figures (0, then 624 × 7): the vllm
	# run is exact 8/8; the sglang run predicts 0 for all, exact only s1:
	# 1/8 = 0.125, 7 under, mean |error| 7 × 624 / 8 = 546.0; its worst
	# requests are s2.. at 0 predicted, 624 reported, −624.
	for i in 1 2 3 4 5 6 7 8; do
		rq "s$i" 0 640 "$(ids 40)" ",\"cached_tokens\":$([ "$i" = 1 ] && echo 0 || echo 624)"
	done >"$IN"
	d=$BATS_TEST_TMPDIR
	kvp route-score --block-size 16 --approx --workers 1 --engine-model vllm "$IN" >"$d/v.ndjson"
	kvp route-score --block-size 16 --approx --workers 1 --engine-model sglang "$IN" >"$d/s.ndjson"
	run -0 --separate-stderr kvp kv-report --label "vllm=$d/v.ndjson" --label "sglang=$d/s.ndjson" -o "$d/r.html"
	[ "$stderr" = "" ]
	rows=$(sed 's/<\/tr>/&\n/g' "$d/r.html" | grep '<tr class="truth">' | sed -e 's/<\/td><td[^>]*>/|/g' -e 's/<[^>]*>//g')
	[ "$rows" = "vllm|8|8|1.000|0|0|0.0
sglang|8|1|0.125|0|7|546.0" ]
	worst=$(sed 's/<\/tr>/&\n/g' "$d/r.html" | sed -n '/truth-worst/,/<\/table>/p' | grep '<td class="id">' | head -1 | sed -e 's/<\/td><td[^>]*>/|/g' -e 's/<[^>]*>//g')
	[ "$worst" = '&quot;s2&quot;|0|624|−624' ]
	# without the figures: no panel
	sed 's/,"cached_tokens":[0-9]*//' "$IN" >"$IN.nofig"
	kvp route-score --block-size 16 --approx --workers 1 --engine-model vllm "$IN.nofig" >"$d/n.ndjson"
	run -0 kvp kv-report "$d/n.ndjson" -o "$d/n.html"
	run grep -c 'router-vs-engine' "$d/n.html"
	[ "$output" = 0 ]
}
