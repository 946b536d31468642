#!/usr/bin/env bats
# route-score: docs/spec/route-score.md §6.5 tests 1–32 (1, 7 and 17 also in
# tests/unit/test_score.c), input/error handling, the Mooncake replay and
# the cross-check against tests/route_model.py. A § in a test name is a
# section of docs/spec/route-score.md.
# Expected values come from the spec (§1.6 vectors, §3 formulas, §6.5
# numbers) or, for the Mooncake hit rate and the random streams, from an
# independent Python computation.
load test_helper

L0=9143094415614847814
L1=12124091508212882195
L2=1088361764653601668
T12='[0,1,2,3,4,5,6,7,8,9,10,11]'

# stored W EID PARENT "EXT:LOCAL ..." [DP] — a typed store record.
stored() {
	local w=$1 eid=$2 parent=$3 blocks="" b dp=${5:-0}
	for b in $4; do
		blocks="$blocks${blocks:+,}{\"block_hash\":${b%%:*},\"tokens_hash\":${b#*:}}"
	done
	printf '{"type":"stored","worker_id":%s,"dp_rank":%s,"event_id":%s,"parent_hash":%s,"blocks":[%s]}\n' \
		"$w" "$dp" "$eid" "$parent" "$blocks"
}

req() { # ID TOKENS [extra json members]
	printf '{"type":"request","request_id":"%s","tokens":%s%s}\n' "$1" "$2" "${3:+,$3}"
}

rs() { run --separate-stderr kvp route-score "$@"; }

# field JQ — applied to the decision records of $output
field() { printf '%s\n' "$output" | jq -c "select(.rec==\"decision\") | $1"; }
summary() { printf '%s\n' "$output" | jq -c "select(.rec==\"summary\") | $1"; }

setup() {
	IN="$BATS_TEST_TMPDIR/in.ndjson"
}

# --- hashing (§6.5 1–7) ----------------------------------------------------

@test "§6.5 2: tokens 0..11 hash to L0,L1,L2 (stored by tokens_hash, matched from tokens)" {
	{ stored 1 1 null "1:$L0 2:$L1 3:$L2"; req r1 "$T12"; } >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '.candidates[0].overlap_blocks')" = 3 ]
	[ "$(field '.hashed_blocks')" = 3 ]
}

@test "§6.5 2: a store with tokens is hashed by the tool and matches pre-hashed L0,L1,L2" {
	{
		echo '{"type":"stored","worker_id":1,"event_id":1,"parent_hash":null,"block_hashes":[1,2,3],"tokens":[0,1,2,3,4,5,6,7,8,9,10,11]}'
		echo "{\"type\":\"request\",\"request_id\":\"r1\",\"block_hashes\":[\"$L0\",\"$L1\",\"$L2\"]}"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '.candidates[0].overlap_blocks')" = 3 ]
	[ "$(field '.isl')" = 12 ]
}

@test "§6.5 3: 13 tokens → 3 hashed blocks, isl 13, request_blocks 4" {
	{ echo '{"type":"worker","worker_id":1}'; req r1 '[0,1,2,3,4,5,6,7,8,9,10,11,12]'; } >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '[.hashed_blocks,.isl,.request_blocks]')" = '[3,13,4]' ]
}

# bats test_tags=valgrind
@test "§6.5 4: 3 tokens → no block, overlap 0, idle logit 0.75, warning no_full_block" {
	{ echo '{"type":"worker","worker_id":1}'; stored 2 1 null "5:$L0"; req r1 '[0,1,2]'; } >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '[.candidates[].overlap_blocks]')" = '[0,0]' ]
	[ "$(field '.candidates[0].logit')" = 0.75 ]
	[ "$(field '.warnings')" = '["no_full_block"]' ]
}

@test "§6.5 5: lora_name \"\" hashes like no LoRA; adapter-a → 6665157333201000639" {
	{
		stored 1 1 null "1:6665157333201000639"
		stored 2 1 null "2:$L0"
		req a '[0,1,2,3]' '"lora_name":"adapter-a"'
		req b '[0,1,2,3]' '"lora_name":""'
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '[.candidates[].overlap_blocks]')" = "$(printf '[1,0]\n[0,1]')" ]
	rs --block-size 4 --lora adapter-a "$IN"
	[ "$(field '[.candidates[].overlap_blocks]')" = "$(printf '[1,0]\n[0,1]')" ]
}

@test "§6.5 6: namespace tenant-a → 17009624042690211646; with adapter-a → 8269515957840517240" {
	{
		stored 1 1 null "1:17009624042690211646"
		stored 2 1 null "2:8269515957840517240"
		req a '[0,1,2,3]' '"cache_namespace":"tenant-a"'
		req b '[0,1,2,3]' '"cache_namespace":"tenant-a","lora_name":"adapter-a"'
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '[.candidates[].overlap_blocks]')" = "$(printf '[1,0]\n[0,1]')" ]
	{ stored 1 1 null "1:17009624042690211646"; req a '[0,1,2,3]'; } >"$IN"
	rs --block-size 4 --namespace tenant-a "$IN"
	[ "$(field '.candidates[0].overlap_blocks')" = 1 ]
}

# --- index (§6.5 8–16) ----------------------------------------------------------

# bats test_tags=valgrind
@test "§6.5 8: overlaps 3/1/0, --no-load logits 0/2/3 → W1" {
	{
		stored 1 1 null "1:$L0 2:$L1 3:$L2"
		stored 2 1 null "11:$L0"
		echo '{"type":"worker","worker_id":3}'
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 --no-load "$IN"
	assert_success
	[ -z "$stderr" ]
	[ "$(field '[.candidates[].overlap_blocks]')" = '[3,1,0]' ]
	[ "$(field '[.candidates[].logit]')" = '[0,2,3]' ]
	[ "$(field '.chosen')" = '{"worker_id":1,"dp_rank":0}' ]
	[ "$(summary '[.events,.applied,.requests,.routed]')" = '[2,2,1,1]' ]
}

@test "§6.5 9: W2 stores [L0, X≠L1] → overlap 1" {
	{ stored 2 1 null "11:$L0 12:777"; req r1 "$T12"; } >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '.candidates[0].overlap_blocks')" = 1 ]
}

@test "§6.5 10: unknown parent → store skipped, warning parent_not_found" {
	{ stored 1 1 null "1:$L0"; stored 1 2 555 "2:$L1"; req r1 "$T12"; } >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[[ "$stderr" == *"in.ndjson:2: warning: parent_not_found"* ]]
	[ "$(field '.candidates[0].overlap_blocks')" = 1 ]
	[ "$(summary '.skipped.parent_not_found')" = 1 ]
}

@test "§6.5 11: child store under parent 100 → overlap 2" {
	{ stored 1 1 null "100:$L0"; stored 1 2 100 "101:$L1"; req r1 "$T12"; } >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '.candidates[0].overlap_blocks')" = 2 ]
}

@test "§6.5 12: parents are per worker" {
	{ stored 2 1 null "100:$L0"; stored 1 1 100 "101:$L1"; req r1 "$T12"; } >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '[.candidates[] | [.worker_id,.overlap_blocks]]')" = '[[1,0],[2,1]]' ]
	[ "$(summary '.skipped.parent_not_found')" = 1 ]
}

@test "§6.5 13: mid-chain removal: contiguous 1/3, legacy 2/3" {
	{
		stored 1 1 null "1:$L0 2:$L1 3:$L2"
		stored 2 1 null "11:$L0 12:$L1 13:$L2"
		echo '{"type":"removed","worker_id":1,"event_id":2,"block_hashes":[2]}'
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '[.candidates[].overlap_blocks]')" = '[1,3]' ]
	rs --block-size 4 --score legacy "$IN"
	[ "$(field '[.candidates[].overlap_blocks]')" = '[2,3]' ]
}

@test "§6.5 14: removal of [999, 3]: warning for 999, block 3 still removed" {
	{
		stored 1 1 null "1:$L0 2:$L1 3:$L2"
		echo '{"type":"removed","worker_id":1,"event_id":2,"block_hashes":[999,3]}'
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[[ "$stderr" == *"warning: unknown_removal"* ]]
	[ "$(field '.candidates[0].overlap_blocks')" = 2 ]
	[ "$(summary '[.unknown_removals,.blocks_removed]')" = '[1,1]' ]
}

@test "§6.5 15: cleared (W1,dp0) keeps (W1,dp1); remove_worker drops both" {
	{
		stored 1 1 null "1:$L0" 0
		stored 1 1 null "1:$L0" 1
		stored 2 1 null "1:$L0"
		echo '{"type":"cleared","worker_id":1,"dp_rank":0,"event_id":2}'
		req r1 "$T12"
		echo '{"type":"remove_worker","worker_id":1}'
		req r2 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '[.candidates[] | [.worker_id,.dp_rank,.overlap_blocks]]')" = \
		"$(printf '[[1,0,0],[1,1,1],[2,0,1]]\n[[2,0,1]]')" ]
	[ "$(summary '.workers_removed')" = 2 ]
}

@test "§6.5 16: event ids: stale, gap applied / skipped / fail" {
	{
		for i in 1 2 3 4 5; do stored 1 $i null "$i:$((1000 + i))"; done
		stored 1 5 null "50:$L0"
		stored 1 4 null "40:$L0"
		stored 1 7 null "70:$L0"
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[[ "$stderr" == *"in.ndjson:6: warning: stale"* ]]
	[[ "$stderr" == *"in.ndjson:7: warning: stale"* ]]
	[[ "$stderr" == *"in.ndjson:8: warning: gap: worker 1 dp_rank 0: expected event_id 6, got 7 (applied)"* ]]
	[ "$(field '.candidates[0].overlap_blocks')" = 1 ]
	[ "$(summary '[.skipped.stale,.gaps]')" = '[2,1]' ]
	rs --block-size 4 --gaps skip "$IN"
	assert_success
	[ "$(field '.candidates[0].overlap_blocks')" = 0 ]
	[ "$(summary '.skipped.gap')" = 1 ]
	rs --block-size 4 --gaps fail "$IN"
	assert_failure 1
	[[ "$stderr" == *"in.ndjson:8: event_id gap: expected 6, got 7"* ]]
}

@test "§2.4: a cleared event resets the cursor (a restarted worker counts from 1 again)" {
	{
		stored 1 1 null "1:$L0"
		stored 1 2 1 "2:$L1"
		echo '{"type":"cleared","worker_id":1,"dp_rank":0,"event_id":3}'
		stored 1 1 null "10:$L0"
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ -z "$stderr" ]
	[ "$(field '.candidates[0].overlap_blocks')" = 1 ]
	[ "$(summary '[.skipped.stale,.gaps,.clears]')" = '[0,0,1]' ]
}

# --- cost (§6.5 18–20) -------------------------------------------------------------

# Worker A=1 holds the first 3 of 6 full blocks of tokens 0..99 (bs 16).
cost_input() {
	local b="" i j t
	for i in 0 1 2; do
		t=$(seq -s, $((i * 16)) $((i * 16 + 15)))
		b="$b${b:+,}{\"block_hash\":$((i + 1)),\"tokens\":[$t]}"
	done
	echo "{\"type\":\"stored\",\"worker_id\":1,\"event_id\":1,\"parent_hash\":null,\"blocks\":[$b]}"
	echo '{"type":"worker","worker_id":2}'
	[ -z "$1" ] || echo "$1"
	req r1 "[$(seq -s, 0 99)]"
}

@test "§6.5 18: bs 16, ISL 100: prefill 3.25 vs 6.25, new 6 → 9.25 vs 12.25 → A" {
	cost_input >"$IN"
	rs --block-size 16 "$IN"
	assert_success
	[ "$(field '[.candidates[] | [.overlap_blocks,.prefill_blocks,.new_blocks,.logit]]')" = \
		'[[3,3.25,6,9.25],[0,6.25,6,12.25]]' ]
	[ "$(field '.chosen.worker_id')" = 1 ]
}

@test "§6.5 19: A with 10 active decode blocks: 19.25 vs 12.25 → B; weight 4: 29 vs 31 → A" {
	cost_input '{"type":"load","worker_id":1,"dp_rank":0,"active_prefill_tokens":0,"active_decode_blocks":10}' >"$IN"
	rs --block-size 16 "$IN"
	[ "$(field '[.candidates[].logit]')" = '[19.25,12.25]' ]
	[ "$(field '.chosen.worker_id')" = 2 ]
	rs --block-size 16 --overlap-weight 4 "$IN"
	[ "$(field '[.candidates[].logit]')" = '[29,31]' ]
	[ "$(field '.chosen.worker_id')" = 1 ]
}

@test "§6.5 20: --overlap-weight 0 → logit = decode blocks; tie broken by lowest id" {
	cost_input >"$IN"
	rs --block-size 16 --overlap-weight 0 "$IN"
	[ "$(field '[.candidates[].logit]')" = '[6,6]' ]
	[ "$(field '[.tie_break, .chosen.worker_id]')" = '["lowest-id",1]' ]
}

# --- selection (§6.5 21–23) ---------------------------------------------------------

@test "§6.5 21: tie 7 vs 3 → 3 by lowest-id; tree-size 7:10, 3:50 → 7; tied lists both" {
	{
		b7="" b3=""
		for i in $(seq 1 10); do b7="$b7 $i:$((5000 + i))"; done
		for i in $(seq 1 50); do b3="$b3 $i:$((6000 + i))"; done
		stored 7 1 null "$b7"
		stored 3 1 null "$b3"
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 --no-load "$IN"
	[ "$(field '.chosen.worker_id')" = 3 ]
	[ "$(field '.tied')" = '[{"worker_id":3,"dp_rank":0},{"worker_id":7,"dp_rank":0}]' ]
	rs --block-size 4 --no-load --tie-break tree-size "$IN"
	[ "$(field '[.chosen.worker_id,.tie_break]')" = '[7,"tree-size"]' ]
	[ "$(field '[.candidates[].tree_size]')" = '[50,10]' ]
}

@test "§3.2: --tie-break random draws once per request, seeded, among the tied only" {
	{
		echo '{"type":"worker","worker_id":5}'
		echo '{"type":"worker","worker_id":6}'
		stored 7 1 null "1:$L0"
		for i in $(seq 1 12); do req "q$i" '[100,101,102,103]' '"commit":false'; done
	} >"$IN"
	rs --block-size 4 --no-load --tie-break random --seed 1 "$IN"
	assert_success
	[ "$(field '.tie_break' | sort -u)" = '"random"' ]
	[ "$(field '.chosen.worker_id' | sort -u | tr -d '\n')" = 567 ]
	a=$output
	rs --block-size 4 --no-load --tie-break random --seed 1 "$IN"
	[ "$output" = "$a" ]
	# --sample-seed is the documented name; --seed its old alias
	rs --block-size 4 --no-load --tie-break random --sample-seed 1 "$IN"
	[ "$output" = "$a" ]
	# u = 0.5 of 3 tied → index floor(1.5) = 1, the second in sorted order
	rs --block-size 4 --no-load --tie-break random --draw 0.5 "$IN"
	[ "$(field '.chosen.worker_id' | sort -u)" = 6 ]
}

# Logits {1:0, 2:3, 3:9} with --no-load: 9 pre-hashed blocks.
softmax_input() {
	stored 1 1 null "1:1 2:2 3:3 4:4 5:5 6:6 7:7 8:8 9:9"
	stored 2 1 null "1:1 2:2 3:3 4:4 5:5 6:6"
	echo '{"type":"worker","worker_id":3}'
	echo '{"type":"request","request_id":"r1","block_hashes":[1,2,3,4,5,6,7,8,9]}'
}

@test "§6.5 22: T=1, logits 0/3/9 → probs 0.479752/0.343757/0.176491; u 0.5 → 2, u 0.9 → 3" {
	softmax_input >"$IN"
	rs --block-size 4 --no-load --temperature 1 --draw 0.5 "$IN"
	assert_success
	[ "$(field '[.candidates[].logit]')" = '[0,3,9]' ]
	[ "$(field '[.candidates[].prob * 1000000 | round]')" = '[479752,343757,176491]' ]
	[ "$(field '[.chosen.worker_id,.u,.tie_break]')" = '[2,0.5,"softmax"]' ]
	rs --block-size 4 --no-load --temperature 1 --draw 0.9 "$IN"
	[ "$(field '.chosen.worker_id')" = 3 ]
	rs --block-size 4 --no-load --temperature 0.5 --draw 0.9 "$IN"
	[ "$(field '[.candidates[].prob * 1000000 | round]')" = '[606519,311397,82083]' ]
}

@test "§6.5 23: T>0 with equal logits → uniform; a single candidate is always chosen" {
	{ echo '{"type":"worker","worker_id":1,"dp_size":4}'; req r1 "$T12"; } >"$IN"
	rs --block-size 4 --temperature 2 "$IN"
	[ "$(field '[.candidates[].prob]')" = '[0.25,0.25,0.25,0.25]' ]
	{ echo '{"type":"worker","worker_id":9}'; for i in 1 2 3 4 5; do req "r$i" "$T12"; done; } >"$IN"
	rs --block-size 4 --temperature 5 "$IN"
	[ "$(field '.chosen.worker_id' | sort -u)" = 9 ]
	[ "$(field '.candidates[0].prob' | sort -u)" = 1 ]
}

# --- load (§6.5 24–25) ----------------------------------------------------------------

# bats test_tags=valgrind
@test "§6.5 24: own load: r1 → W1 (6 vs 6), r2 → W2 (9 vs 6), prefill_done r1, r3 → W1 (6 vs 9); free → idle" {
	{
		echo '{"type":"worker","worker_id":1}'
		echo '{"type":"worker","worker_id":2}'
		req r1 "$T12"
		req r2 "$T12"
		echo '{"type":"prefill_done","request_id":"r1"}'
		req r3 "$T12"
		for r in r1 r2 r3; do echo "{\"type\":\"free\",\"request_id\":\"$r\"}"; done
		req r4 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '[.request_id, .chosen.worker_id, [.candidates[].logit]]')" = "$(printf '%s\n' \
		'["r1",1,[6,6]]' '["r2",2,[9,6]]' '["r3",1,[6,9]]' '["r4",1,[6,6]]')" ]
	[ "$(field 'select(.request_id=="r2") | .candidates[0] | [.active_prefill_tokens,.active_blocks,.new_blocks]')" = '[12,3,0]' ]
	[ "$(field 'select(.request_id=="r4") | [.candidates[] | .active_blocks + .active_prefill_tokens]')" = '[0,0]' ]
}

@test "§6.5 24: --no-track-prefill and --no-assume-reuse change the load terms" {
	{ echo '{"type":"worker","worker_id":1}'; echo '{"type":"worker","worker_id":2}'; req r1 "$T12"; req r2 "$T12"; } >"$IN"
	rs --block-size 4 --no-track-prefill "$IN"
	# r2: W1 = 12/4 + 3 + 0 = 6, W2 = 3 + 0 + 3 = 6
	[ "$(field 'select(.request_id=="r2") | [.candidates[].logit]')" = '[6,6]' ]
	rs --block-size 4 --no-assume-reuse "$IN"
	# r2: W1 = 24/4 + 3 + 3 = 12
	[ "$(field 'select(.request_id=="r2") | [.candidates[].logit]')" = '[12,6]' ]
}

@test "§6.5 25: --approx --ttl 120: refresh at t=10 s, expired by t=131 s" {
	{
		echo '{"type":"worker","worker_id":1}'
		echo '{"type":"worker","worker_id":2}'
		req r1 "$T12" '"ts_ms":0'
		req r2 "$T12" '"ts_ms":10000'
		req q1 "$T12" '"ts_ms":125000,"commit":false'
		req q2 "$T12" '"ts_ms":131000,"commit":false'
	} >"$IN"
	rs --block-size 4 --approx --ttl 120 --no-load "$IN"
	assert_success
	[ "$(field '[.request_id, .chosen.worker_id, [.candidates[].overlap_blocks], .logit]')" = "$(printf '%s\n' \
		'["r1",1,[0,0],3]' '["r2",1,[3,0],0]' '["q1",1,[3,0],0]' '["q2",1,[0,0],3]')" ]
}

@test "--approx: a repeated id frees the earlier request's blocks under the new one: their hashes stay right" {
	# Worked by hand (cost: prefill blocks + decode blocks, each with the
	# worker's load; 512-token blocks). r (ids 1 2 3) goes to worker 0 at
	# 0 s (3 + 3 each), assumed till 1 s; x (7 8) to idle worker 1 at 2 s
	# (6 + 4 against 2 + 2). At 5 s r comes again with a fourth block:
	# worker 0 costs 7 + 4 (the first r's 3 blocks are a prefix of these
	# 4), worker 1 6 + 6, so worker 0 gets it. Its first 3 blocks were
	# found by their chain alone (the block table's pure mode); freeing the
	# first r frees their nodes (no assumption holds them any more) and
	# they are made again from their hashes. y (1 2 3) finds all 3 on
	# worker 0 (4 + 4 against 5 + 5).
	{
		echo '{"request_id":"r","timestamp":0,"input_length":1536,"hash_ids":[1,2,3]}'
		echo '{"request_id":"x","timestamp":2000,"input_length":1024,"hash_ids":[7,8]}'
		echo '{"request_id":"r","timestamp":5000,"input_length":2048,"hash_ids":[1,2,3,4]}'
		echo '{"request_id":"y","timestamp":5500,"input_length":1536,"hash_ids":[1,2,3]}'
	} >"$IN"
	rs --trace mooncake --workers 2 --approx --ttl 1 "$IN"
	assert_success
	[ "$stderr" = "route-score: $IN:3: warning: duplicate_request_id: an active request had the same id; it was freed first" ]
	[ "$(field '[.request_id, .chosen.worker_id, [.candidates[] | [.overlap_blocks, .logit]]]' | tr -d '\n')" = \
		'["r",0,[[0,6],[0,6]]]["x",1,[[0,10],[0,4]]]["r",0,[[0,11],[0,12]]]["y",0,[[3,8],[0,10]]]' ]
}

@test "§3.4: active requests expire 3600 s after routing (--request-expiry)" {
	{
		echo '{"type":"worker","worker_id":1}'
		echo '{"type":"worker","worker_id":2}'
		req r1 "$T12" '"ts_ms":0'
		req r2 "$T12" '"ts_ms":3600000'
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '[.request_id,.chosen.worker_id,[.candidates[].logit]]' | tr -d '\n')" = '["r1",1,[6,6]]["r2",1,[6,6]]' ]
	[ "$(summary '.requests_expired')" = 1 ]
	rs --block-size 4 --request-expiry 0 "$IN"
	[ "$(field '[.request_id,.chosen.worker_id,[.candidates[].logit]]' | tr -d '\n')" = '["r1",1,[6,6]]["r2",2,[9,6]]' ]
}

# --- Mooncake and misc (§6.5 26–32) -------------------------------------------------------

@test "§6.5 26: Mooncake hash_ids, bs 512, input_length 1300 → overlap 2, prefill 276, 3 blocks" {
	{ stored 1 1 null "46:46 47:47"; echo '{"hash_ids":[46,47,48],"input_length":1300,"timestamp":0}'; } >"$IN"
	rs --block-size 512 "$IN"
	assert_success
	[ "$(field '[.candidates[0].overlap_blocks, .candidates[0].prefill_tokens, .request_blocks, .request_id]')" = '[2,276,3,2]' ]
	# the same through --events/--requests with --trace mooncake
	stored 1 1 null "46:46 47:47" >"$BATS_TEST_TMPDIR/ev"
	echo '{"hash_ids":[46,47,48],"input_length":1300,"timestamp":0}' >"$BATS_TEST_TMPDIR/rq"
	rs --trace mooncake --events "$BATS_TEST_TMPDIR/ev" --requests "$BATS_TEST_TMPDIR/rq"
	assert_success
	[ "$(field '[.candidates[0].overlap_blocks, .candidates[0].prefill_tokens]')" = '[2,276]' ]
}

@test "§6.5 27: store block_size 8 under --block-size 4 → 0 blocks; short tokens → first block only" {
	{
		echo '{"type":"stored","worker_id":1,"event_id":1,"parent_hash":null,"block_size":8,"block_hashes":[1],"tokens":[0,1,2,3,4,5,6,7]}'
		echo '{"type":"stored","worker_id":2,"event_id":1,"parent_hash":null,"block_hashes":[1,2],"tokens":[0,1,2,3,4,5]}'
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[[ "$stderr" == *"in.ndjson:1: warning: block_size_mismatch"* ]]
	[ "$(field '[.candidates[].overlap_blocks]')" = '[0,1]' ]
	[ "$(summary '[.block_size_mismatch,.truncated_stores,.blocks_stored]')" = '[1,1,1]' ]
}

@test "§6.5 28: dp_size 2, events only for dp 1 → (W1,0) 0, (W1,1) 3" {
	{ echo '{"type":"worker","worker_id":1,"dp_size":2}'; stored 1 1 null "1:$L0 2:$L1 3:$L2" 1; req r1 "$T12"; } >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '[.candidates[] | [.dp_rank,.overlap_blocks]]')" = '[[0,0],[1,3]]' ]
	[ "$(field '.chosen')" = '{"worker_id":1,"dp_rank":1}' ]
}

@test "§6.5 29: a store repeating a hash or containing its parent → self_reference" {
	{
		stored 1 1 null "1:$L0"
		stored 1 2 null "5:$L0 5:$L1"
		stored 1 3 1 "1:$L1"
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[[ "$stderr" == *"in.ndjson:2: warning: self_reference"* ]]
	[ "$(summary '.skipped.self_reference')" = 2 ]
	[ "$(field '.candidates[0].overlap_blocks')" = 1 ]
}

@test "§6.5 30: block hash -1 is 18446744073709551615 (removal by either form)" {
	{ stored 1 1 null "-1:$L0"; echo '{"type":"removed","worker_id":1,"event_id":2,"block_hashes":[18446744073709551615]}'; req r1 "$T12"; } >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '.candidates[0].overlap_blocks')" = 0 ]
	[ "$(summary '.blocks_removed')" = 1 ]
	{ stored 1 1 null "18446744073709551615:$L0"; echo '{"type":"removed","worker_id":1,"event_id":2,"block_hashes":["-1"]}'; } >"$IN"
	rs --block-size 4 "$IN"
	[ "$(summary '[.blocks_removed,.unknown_removals]')" = '[1,0]' ]
}

@test "§6.5 31: full hit with ISL a multiple of bs → prefill 0; clamp keeps it non-negative" {
	{ stored 1 1 null "1:$L0 2:$L1 3:$L2"; req r1 "$T12"; } >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '.candidates[0] | [.prefill_blocks,.logit,.decode_blocks]')" = '[0,3,3]' ]
	{ stored 1 1 null "1:1 2:2 3:3"; echo '{"type":"request","request_id":"x","hash_ids":[1,2,3],"input_length":5}'; } >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '.candidates[0] | [.prefill_blocks,.logit]')" = '[0,3]' ]
}

@test "§6.5 32: commit:false leaves loads alone; same seed → identical output; worker order irrelevant" {
	{
		echo '{"type":"worker","worker_id":1}'
		echo '{"type":"worker","worker_id":2}'
		req q1 "$T12" '"commit":false'
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '[.request_id,.commit,[.candidates[].active_blocks]]')" = "$(printf '%s\n' '["q1",false,[0,0]]' '["r1",true,[0,0]]')" ]
	[ "$(summary '[.queries,.routed]')" = '[1,1]' ]
	{
		echo '{"type":"worker","worker_id":2}'
		echo '{"type":"worker","worker_id":1}'
		for i in 1 2 3 4 5 6; do req "r$i" "$T12"; done
	} >"$BATS_TEST_TMPDIR/a"
	{
		echo '{"type":"worker","worker_id":1}'
		echo '{"type":"worker","worker_id":2}'
		for i in 1 2 3 4 5 6; do req "r$i" "$T12"; done
	} >"$BATS_TEST_TMPDIR/b"
	kvp route-score --block-size 4 --temperature 0.7 --seed 42 "$BATS_TEST_TMPDIR/a" >"$BATS_TEST_TMPDIR/a1"
	kvp route-score --block-size 4 --temperature 0.7 --seed 42 "$BATS_TEST_TMPDIR/a" >"$BATS_TEST_TMPDIR/a2"
	kvp route-score --block-size 4 --temperature 0.7 --seed 42 "$BATS_TEST_TMPDIR/b" >"$BATS_TEST_TMPDIR/b1"
	cmp "$BATS_TEST_TMPDIR/a1" "$BATS_TEST_TMPDIR/a2"
	cmp "$BATS_TEST_TMPDIR/a1" "$BATS_TEST_TMPDIR/b1"
	kvp route-score --block-size 4 --temperature 0.7 --seed 43 "$BATS_TEST_TMPDIR/a" >"$BATS_TEST_TMPDIR/c1"
	! cmp -s "$BATS_TEST_TMPDIR/a1" "$BATS_TEST_TMPDIR/c1"
}

# --- inputs, formats, errors ----------------------------------------------------------------

@test "kv-normalize RouterEvent shape with storage_tier host_pinned is reported, not credited, unless --tier-credit" {
	{
		echo "{\"worker_id\":1,\"storage_tier\":\"device\",\"residency_domain\":\"worker\",\"event\":{\"event_id\":0,\"data\":{\"stored\":{\"parent_hash\":null,\"start_position\":null,\"blocks\":[{\"block_hash\":1,\"tokens_hash\":$L0,\"mm_extra_info\":null}]}},\"dp_rank\":0},\"x\":{\"seq\":0,\"idx\":0,\"action\":\"pass\",\"kept\":1,\"excluded\":0}}"
		echo "{\"worker_id\":1,\"storage_tier\":\"host_pinned\",\"event\":{\"event_id\":1,\"data\":{\"stored\":{\"parent_hash\":null,\"blocks\":[{\"block_hash\":1,\"tokens_hash\":$L0},{\"block_hash\":2,\"tokens_hash\":$L1},{\"block_hash\":3,\"tokens_hash\":$L2}]}},\"dp_rank\":0}}"
		echo '{"rec":"filtered","reason":"ignored_event"}'
		req r1 "$T12"
	} >"$IN"
	rs --block-size 4 --no-load "$IN"
	assert_success
	[ "$(field '.candidates[0] | [.overlap_blocks,.host_overlap_blocks,.logit]')" = '[1,3,2]' ]
	[ "$(summary '.records_ignored')" = 1 ]
	# credit: 1 + 0.75·(3 − 1) = 2.5 → logit 3 − 2.5
	rs --block-size 4 --no-load --tier-credit "$IN"
	[ "$(field '.candidates[0].logit')" = 0.5 ]
	# --host-weight 0.5: credit 1 + 0.5·2 = 2 → logit 1
	rs --block-size 4 --no-load --tier-credit --host-weight 0.5 "$IN"
	[ "$(field '.candidates[0].logit')" = 1 ]
	# the same blocks on disk: default 0.25 → credit 1.5 → logit 1.5;
	# --disk-weight 1 → credit 3 → logit 0
	sed -i 's/"host_pinned"/"disk"/' "$IN"
	rs --block-size 4 --no-load --tier-credit "$IN"
	[ "$(field '.candidates[0].logit')" = 1.5 ]
	rs --block-size 4 --no-load --tier-credit --disk-weight 1 "$IN"
	[ "$(field '.candidates[0].logit')" = 0 ]
}

@test "RouterEvent removed and \"cleared\" variants" {
	{
		stored 1 1 null "1:$L0 2:$L1"
		echo '{"worker_id":1,"event":{"event_id":2,"data":{"removed":{"block_hashes":[2]}},"dp_rank":0}}'
		req r1 "$T12"
		echo '{"worker_id":1,"event":{"event_id":3,"data":"cleared","dp_rank":0}}'
		req r2 "$T12"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '.candidates[0].overlap_blocks')" = "$(printf '1\n0')" ]
	[ "$(summary '.clears')" = 1 ]
}

@test "mm-expand output: its block_hashes are primary; else routing_token_ids are hashed" {
	{
		stored 1 1 null "1:$L0 2:$L1"
		# block_hashes given: used as they are (tokens would hash to L0,L1,L2)
		echo "{\"id\":\"m1\",\"routing_token_ids\":$T12,\"block_size\":4,\"expanded_prompt_len\":10,\"block_hashes\":[$L0,7],\"sequence_hashes\":[1,2]}"
		# no block_hashes: routing_token_ids hashed at --block-size
		echo "{\"id\":\"m2\",\"routing_token_ids\":$T12,\"block_size\":4,\"expanded_prompt_len\":10}"
	} >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '[.request_id,.isl,.hashed_blocks,.candidates[0].overlap_blocks,.warnings]')" = "$(printf '%s\n' \
		'["m1",10,2,1,[]]' '["m2",10,3,2,[]]')" ]
	rs --block-size 2 "$IN"
	[ "$(field '.warnings' | tr -d '\n')" = '["block_size_mismatch"]["block_size_mismatch","no_overlap"]' ]
}

@test "--events/--requests merge by ts_ms, events first on ties" {
	{ stored 1 1 null "1:$L0" | sed 's/}$/,"ts_ms":5}/'; stored 1 2 1 "2:$L1" | sed 's/}$/,"ts_ms":10}/'; } >"$BATS_TEST_TMPDIR/ev"
	{ req a "$T12" '"ts_ms":4'; req b "$T12" '"ts_ms":5'; req c "$T12" '"ts_ms":9'; req d "$T12" '"ts_ms":10'; } >"$BATS_TEST_TMPDIR/rq"
	rs --block-size 4 --events "$BATS_TEST_TMPDIR/ev" --requests "$BATS_TEST_TMPDIR/rq"
	assert_success
	[ "$(field '[.request_id, .overlap_blocks]' | tr -d '\n')" = '["a",0]["b",1]["c",1]["d",2]' ]
}

@test "one of --events/--requests takes the other stream from FILE or stdin" {
	{ stored 1 1 null "1:$L0"; stored 1 2 1 "2:$L1"; } >"$BATS_TEST_TMPDIR/ev"
	{ req a "$T12"; } >"$BATS_TEST_TMPDIR/rq"
	# events piped in, requests named (no timestamps: events first)
	run --separate-stderr bash -c "$KVP_EXEC_PREFIX '$KVP_BIN/route-score' --block-size 4 --requests '$BATS_TEST_TMPDIR/rq' < '$BATS_TEST_TMPDIR/ev'"
	assert_success
	[ "$(field '[.request_id, .overlap_blocks]')" = '["a",2]' ]
	# requests piped in, events named; and FILE instead of stdin
	run --separate-stderr bash -c "$KVP_EXEC_PREFIX '$KVP_BIN/route-score' --block-size 4 --events '$BATS_TEST_TMPDIR/ev' < '$BATS_TEST_TMPDIR/rq'"
	assert_success
	[ "$(field '[.request_id, .overlap_blocks]')" = '["a",2]' ]
	rs --block-size 4 --events "$BATS_TEST_TMPDIR/ev" "$BATS_TEST_TMPDIR/rq"
	assert_success
	[ "$(field '[.request_id, .overlap_blocks]')" = '["a",2]' ]
	rs --block-size 4 --events - --requests - </dev/null
	assert_failure 2
	[[ "$stderr" == *"cannot both read standard input"* ]]
	rs --block-size 4 --events "$BATS_TEST_TMPDIR/ev" --requests "$BATS_TEST_TMPDIR/rq" "$BATS_TEST_TMPDIR/rq"
	assert_failure 2
}

@test "--format text explains the winner; --format log prints Dynamo's Formula lines" {
	{ stored 1 1 null "1:$L0 2:$L1 3:$L2"; stored 2 1 null "11:$L0"; req r1 "$T12"; } >"$IN"
	rs --block-size 4 --format text "$IN"
	assert_success
	[[ "$output" == *"request r1: isl 12, 3 blocks (3 hashed)"* ]]
	[[ "$output" == *"-> worker 1 dp 0: lowest logit 3.000; overlap 3 of 3 blocks"* ]]
	rs --block-size 4 --format log "$IN"
	assert_line --index 0 "Formula for worker_id=1 dp_rank=0 with 3 cached blocks: 3.000 = 1.0 * prefill_blocks + decode_blocks = 1.0 * 0.000 + 3.000"
	assert_line --index 1 "Formula for worker_id=2 dp_rank=0 with 1 cached blocks: 5.000 = 1.0 * prefill_blocks + decode_blocks = 1.0 * 2.000 + 3.000"
	assert_line --index 2 --partial "Selected worker: worker_id=1 dp_rank=0, logit: 3.000, cached blocks: 3, tree size: 3"
}

@test "pinned and allowed_workers restrict the candidates" {
	{ stored 1 1 null "1:$L0"; stored 2 1 null "1:$L0"; echo '{"type":"worker","worker_id":3}'
	  req a "$T12" '"allowed_workers":[2,3]'; req b "$T12" '"pinned":{"worker_id":3,"dp_rank":0}'; } >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(field '[.request_id,[.candidates[].worker_id],.chosen.worker_id,.tie_break]' | tr -d '\n')" = '["a",[2,3],2,"none"]["b",[3],3,"pinned"]' ]
}

@test "request ids: a repeated id frees the earlier request; free finds ids of every form" {
	# The ids, worked out by hand: line numbers stand for absent ids; "2"
	# and 2 are the same id, "02" another one.
	W='{"type":"worker","worker_id":1}'
	R='{"type":"request","tokens":'"$T12"'}'
	{ echo "$W"; echo "$R"; echo "${R%\}},\"request_id\":7}"
	  echo "${R%\}},\"request_id\":\"2\"}"
	  echo '{"type":"free","request_id":7}'; echo '{"type":"free","request_id":"2"}'
	  echo '{"type":"free","request_id":7}'; } >"$IN"
	rs --block-size 4 "$IN"
	assert_failure 1
	[ "$stderr" = "route-score: $IN:4: warning: duplicate_request_id: an active request had the same id; it was freed first
route-score: $IN:7: free: request not active" ]
	[ "$(field '.request_id' | tr '\n' ' ')" = '2 7 "2" ' ]
	[ "$(summary '[.routed, .workers[0].active_requests]')" = '[3,0]' ]
	# a free first: 2 goes, 3 and 5 stay
	{ echo "$W"; echo "$R"; echo "$R"; echo '{"type":"free","request_id":2}'; echo "$R"; } >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ -z "$stderr" ]
	[ "$(summary '.workers[0].active_requests')" = 2 ]
	rs --block-size 4 - <<<"$(printf '%s\n' "$W" "$R" '{"type":"free","request_id":"3"}')"
	assert_failure 1
	[ "$stderr" = "route-score: -:3: free: request not active" ]
	# "02" then 2: two requests
	{ echo "$W"; echo "${R%\}},\"request_id\":\"02\"}"; echo "${R%\}},\"request_id\":2}"; } >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ -z "$stderr" ]
	[ "$(summary '.workers[0].active_requests')" = 2 ]
}

# bats test_tags=valgrind
@test "bad records: FILE:LINE message, good records still written, exit 1; -k continues" {
	{ echo '{"type":"worker","worker_id":1}'; req r1 "$T12"; echo '{"type":"bogus"}'; echo '{nope'; req r2 "$T12"; } >"$IN"
	rs --block-size 4 "$IN"
	assert_failure 1
	[ "$stderr" = "route-score: $IN:3: unknown record type \"bogus\"" ]
	[ "$(field '.request_id')" = '"r1"' ]
	rs -k --block-size 4 "$IN"
	assert_failure 1
	[[ "$stderr" == *"$IN:4:2: invalid JSON"* ]]
	[ "$(field '.request_id' | tr -d '\n')" = '"r1""r2"' ]
	{ echo '{"type":"stored","worker_id":1,"blocks":[{"block_hash":"zz","tokens_hash":1}]}'; } >"$IN"
	rs --block-size 4 "$IN"
	assert_failure 1
	[[ "$stderr" == "route-score: $IN:1: block_hash"* ]]
	echo '{"type":"free","request_id":"nope"}' >"$IN"
	rs --block-size 4 "$IN"
	assert_failure 1
	[ "$stderr" = "route-score: $IN:1: free: request not active" ]
}

@test "usage and I/O trouble exit 2" {
	rs "$IN"
	assert_failure 2
	[[ "$stderr" == *"--block-size is required"* ]]
	rs --block-size 4 --tie-break nope
	assert_failure 2
	rs --block-size 4 /nonexistent/file
	assert_failure 2
	{ echo '{"type":"worker","worker_id":1}'; req r1 "$T12"; } >"$IN"
	rs --block-size 4 -o /dev/full "$IN"
	assert_failure 2
	[ -n "$stderr" ]
}

# --- Mooncake replay on the real trace excerpt -----------------------------------------------

@test "Mooncake trace, 1 worker, --approx --ttl 0: prefix hit rate equals the independent computation" {
	trace="$FIX/mooncake/synthetic_trace_head500.jsonl"
	want=$(/usr/bin/python3 - "$trace" <<'PY'
import json, sys
seen = set(); hit = tot = 0
for line in open(sys.argv[1]):
    ids = json.loads(line)["hash_ids"]
    k = 0
    while k < len(ids) and tuple(ids[:k + 1]) in seen:
        k += 1
    hit += k; tot += len(ids)
    for i in range(len(ids)):
        seen.add(tuple(ids[:i + 1]))
print(json.dumps([hit, tot, hit / tot], separators=(",", ":")))
PY
)
	rs --trace mooncake --workers 1 --approx --ttl 0 "$trace"
	assert_success
	[ "$(summary '[.hit_blocks,.hashed_blocks,.prefix_hit_rate]')" = "$want" ]
	[ "$(summary '.requests')" = 500 ]
}

@test "Mooncake trace, --workers 4 --approx: every request routed, hits never exceed reachable hits" {
	trace="$FIX/mooncake/synthetic_trace_head500.jsonl"
	rs --trace mooncake --workers 4 --approx "$trace"
	assert_success
	[ "$(summary '[.requests,.routed,([.workers[].routed]|add),(.hit_blocks <= .reachable_hit_blocks)]')" = '[500,500,500,true]' ]
	[ "$(field '.request_id' | head -1)" = 1 ]
}

# --- independent cross-check ----------------------------------------------------------

@test "cross-check against tests/route_model.py on random streams (temperature 0)" {
	for seed in 1 2 3 4 5; do
		for mode in contiguous legacy; do
			/usr/bin/python3 "$KVP_ROOT/tests/route_model.py" gen --seed "$seed" --score "$mode" >"$IN"
			kvp route-score --block-size 4 --score "$mode" "$IN" >"$BATS_TEST_TMPDIR/c.out" 2>/dev/null
			/usr/bin/python3 "$KVP_ROOT/tests/route_model.py" check --score "$mode" "$IN" "$BATS_TEST_TMPDIR/c.out" ||
				fail "seed $seed mode $mode disagrees"
		done
	done
}

@test "cross-check of approximate mode against tests/route_model.py: expiry, pruning, events mixed in or not" {
	# even seeds: requests without sequence_hashes and no events (the
	# router chains its own hashes); odd seeds: events and given hashes
	for seed in 1 2 3 4 5 6; do
		for mode in contiguous legacy; do
			/usr/bin/python3 "$KVP_ROOT/tests/route_model.py" gen --seed "$seed" --score "$mode" --approx >"$IN"
			for cfg in "5 1000000" "3 12" "0 9"; do
				set -- $cfg
				kvp route-score --block-size 4 --score "$mode" --approx --ttl "$1" \
					--approx-max-blocks "$2" "$IN" >"$BATS_TEST_TMPDIR/c.out" 2>/dev/null ||
					fail "seed $seed: route-score failed"
				/usr/bin/python3 "$KVP_ROOT/tests/route_model.py" check --score "$mode" \
					--approx "$1" "$2" "$IN" "$BATS_TEST_TMPDIR/c.out" ||
					fail "seed $seed mode $mode ttl $1 max $2 disagrees"
			done
		done
	done
}

@test "--approx after events: a block held through the engine's hash is still assumed under the router's own" {
	# Worked by hand (and agreed by tests/route_model.py). Worker 1
	# reports block 500 (tokens 7). r1 [7,8] goes to worker 1 (overlap
	# 1), which is assumed to hold the router's hashes of 7 and 7-8; at
	# most 1 assumed pair (--approx-max-blocks 1) prunes the older, 7,
	# and that drops worker 1 from the node. Worker 1 reports 500 again
	# (held again); r2 [7,8] goes to worker 1 (overlap 2) and assumes 7
	# once more, the cap prunes that pair at once, dropping worker 1
	# from the node again: q [7] sees overlap 0 on worker 1.
	{
		echo '{"type":"worker","worker_id":2}'
		echo '{"type":"stored","worker_id":1,"event_id":1,"parent_hash":null,"blocks":[{"block_hash":500,"tokens_hash":7}]}'
		echo '{"type":"request","request_id":"r1","block_hashes":[7,8],"input_length":8,"ts_ms":0}'
		echo '{"type":"stored","worker_id":1,"event_id":2,"parent_hash":null,"blocks":[{"block_hash":500,"tokens_hash":7}]}'
		echo '{"type":"request","request_id":"r2","block_hashes":[7,8],"input_length":8,"ts_ms":1000}'
		echo '{"type":"request","request_id":"q","block_hashes":[7],"input_length":4,"ts_ms":2000,"commit":false}'
	} >"$IN"
	rs --block-size 4 --approx --ttl 100 --approx-max-blocks 1 --no-load "$IN"
	assert_success
	[ "$(field '[.request_id, [.candidates[] | [.worker_id, .overlap_blocks]]]')" = "$(printf '%s\n' \
		'["r1",[[1,1],[2,0]]]' '["r2",[[1,2],[2,0]]]' '["q",[[1,0],[2,0]]]')" ]
	[ "$(summary '.approx_pruned')" = 2 ]
}

@test "--hash-strings writes worker ids as strings (Dynamo worker ids exceed 2^53)" {
	{ stored 7587888888888888888 1 null "1:$L0"; req r1 "$T12"; } >"$IN"
	rs --block-size 4 --hash-strings "$IN"
	assert_success
	[ "$(field '.chosen.worker_id')" = '"7587888888888888888"' ]
	rs --block-size 4 "$IN"
	[[ "$output" == *'"chosen":{"worker_id":7587888888888888888,"dp_rank":0}'* ]]
}

@test "--format text says why an overlap is 0" {
	{ stored 1 1 null "1:5"; req a '[0,1,2,3]'; req b '[0,1]'; } >"$IN"
	rs --block-size 4 --format text "$IN"
	assert_success
	assert_line "  why 0: no worker holds the first block (tokens_hash $L0); check --block-size, LoRA / namespace, and that tokens_hash comes from the same token ids"
	assert_line "  why 0: no full block (2 tokens, block size 4): nothing to match"
}

@test "per-request overrides of overlap_weight and temperature" {
	cost_input '{"type":"load","worker_id":1,"dp_rank":0,"active_prefill_tokens":0,"active_decode_blocks":10}' >"$IN"
	sed -i 's/"request_id":"r1"/"request_id":"r1","overrides":{"overlap_weight":4}/' "$IN"
	rs --block-size 16 --temperature 1 "$IN"
	assert_success
	# §6.5 19 numbers with W 4 from the request; T 1 from the option
	[ "$(field '[.overlap_weight,.temperature,[.candidates[].logit],.tie_break]')" = '[4,1,[29,31],"softmax"]' ]
	sed -i 's/"overrides":{"overlap_weight":4}/"overrides":{"overlap_weight":4,"temperature":0}/' "$IN"
	rs --block-size 16 --temperature 1 "$IN"
	[ "$(field '[.overlap_weight,.temperature,.chosen.worker_id,.tie_break]')" = '[4,0,1,"none"]' ]
}

@test "demo fixture (kv-normalize-shaped events, token requests): §3.1 by hand for the first request" {
	rs --block-size 4 "$FIX/route-score/demo.ndjson"
	assert_success
	# chat-a-turn2: ISL 25 → 6 hashed blocks; W1 holds 5, W2 2, W3 0; idle:
	# (25/4 − O) + 6 → 7.25, 10.25, 12.25
	[ "$(field 'select(.request_id=="chat-a-turn2") | [.hashed_blocks,[.candidates[].overlap_blocks],[.candidates[].logit],.chosen.worker_id]')" = \
		'[6,[5,2,0],[7.25,10.25,12.25],1]' ]
	# after W1 evicts the user blocks, only the 2 system blocks remain there
	[ "$(field 'select(.request_id=="chat-a-after-eviction") | [.candidates[].overlap_blocks]')" = '[2,2,0]' ]
	rs --block-size 4 --format text "$FIX/route-score/demo.ndjson"
	assert_success
	[[ "$output" == *"NOT the max-overlap worker 1 (2 blocks): load outweighed 2 cached blocks"* ]]
}

@test "pipeline: mm-expand output (rec mm_expand, hashes as strings) is routed on its block_hashes" {
	mm=$(sed -n 2p "$FIX/mm-expand/demo.ndjson" | kvp mm-expand --hash-strings)
	h0=$(jq -r '.block_hashes[0]' <<<"$mm")
	h1=$(jq -r '.block_hashes[1]' <<<"$mm")
	n=$(jq '.block_hashes | length' <<<"$mm")
	{
		echo "{\"type\":\"stored\",\"worker_id\":1,\"event_id\":1,\"parent_hash\":null,\"blocks\":[{\"block_hash\":1,\"tokens_hash\":\"$h0\"},{\"block_hash\":2,\"tokens_hash\":\"$h1\"}]}"
		echo '{"type":"worker","worker_id":2}'
		echo "$mm"
	} >"$IN"
	rs --block-size 16 "$IN"
	assert_success
	[ "$(field '[.request_id, .hashed_blocks, [.candidates[].overlap_blocks], .chosen.worker_id]')" = "[\"qwen-demo\",$n,[2,0],1]" ]
}

@test "--approx-max-blocks: over the cap the oldest blocks are pruned (to 80%)" {
	# r1 caches 3 blocks, r2 3 more: 6 > cap 5, pruned to 4 -> r1's oldest go.
	{ req r1 "$T12"; req r2 '[20,21,22,23,24,25,26,27,28,29,30,31]'; req r3 "$T12"; } >"$IN"
	rs --block-size 4 --workers 1 --approx --ttl 0 --no-load "$IN"
	assert_success
	[ "$(field 'select(.request_id=="r3") | .candidates[0].overlap_blocks')" = 3 ]
	[ "$(summary '.approx_pruned')" = 0 ]
	rs --block-size 4 --workers 1 --approx --ttl 0 --no-load --approx-max-blocks 5 "$IN"
	assert_success
	[ "$(field 'select(.request_id=="r3") | .candidates[0].overlap_blocks')" -lt 3 ]
	[ "$(summary '.approx_pruned')" -gt 0 ]
}

@test "warnings: three of a kind are printed, the rest counted in one line at exit" {
	# five stores whose parents were never stored: parent_not_found each
	for i in 1 2 3 4 5; do stored 7 "$i" "$((900 + i))" "$((100 + i)):$((200 + i))"; done >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(grep -c 'warning: parent_not_found' <<<"$stderr")" -eq 3 ]
	[[ "$stderr" == *'route-score: warning: 2 more "parent_not_found" warnings not shown'* ]]
}

@test "a request whose block_size differs: flagged in the decision, warned on stderr, counted in the summary" {
	# an mm-expand record made at block size 16, replayed at 4
	printf '{"rec":"mm_expand","id":"a","routing_token_ids":[1,2,3,4,5,6,7,8],"block_size":16}\n' >"$IN"
	rs --block-size 4 --workers 2 "$IN"
	assert_success
	[ "$(field '.warnings | index("block_size_mismatch") != null')" = true ]
	[ "$(summary '.block_size_mismatch')" = 1 ]
	[[ "$stderr" == *"in.ndjson:1: warning: block_size_mismatch: request a: its block_size differs from --block-size 4; hashed at 4"* ]]
}

@test "a run that routes nothing says why on stderr (no events and no --workers; --approx without --workers)" {
	rs --block-size 4 "$FIX/demo/requests.ndjson"
	assert_success
	[[ "$stderr" == *"route-score: warning: none of the 4 requests had a candidate worker: no events were read and --workers was not given"* ]]
	rs --trace mooncake --approx --block-size 512 "$FIX/mooncake/synthetic_trace_head500.jsonl"
	assert_success
	[[ "$stderr" == *"none of the 500 requests had a candidate worker: --approx learns only from requests it routes: give --workers N"* ]]
	# with workers, no warning
	rs --trace mooncake --approx --workers 4 --block-size 512 "$FIX/mooncake/synthetic_trace_head500.jsonl"
	assert_success
	[[ "$stderr" != *"candidate worker"* ]]
}

@test "a capture begun mid-run: stores with unknown parents are counted and explained; --orphans root indexes them" {
	# W1's first captured store names parent 555, stored before the capture
	# began; its child chains under it. The request's first two blocks
	# (L0, L1) are what the orphan and its child hold.
	{ stored 1 7 555 "1:$L0"; stored 1 8 1 "2:$L1"; req r1 "$T12"; } >"$IN"
	rs --block-size 4 --format text "$IN"
	assert_success
	assert_line "  why 0: no blocks indexed for any candidate: 2 stores skipped, parent unknown (the capture began mid-run: capture from the start with replay, or index them as new chains with --orphans root)"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(summary '[.skipped.parent_not_found, .orphans_rooted, .blocks_stored]')" = '[2,0,0]' ]
	[[ "$stderr" == *"in.ndjson:1: warning: parent_not_found: worker 1 dp_rank 0: parent 555 unknown; store skipped (capture began mid-run? see --orphans root)"* ]]
	rs --block-size 4 --orphans root "$IN"
	assert_success
	# the orphan starts a chain; its child then finds its parent
	[ "$(summary '[.skipped.parent_not_found, .orphans_rooted, .blocks_stored]')" = '[0,1,2]' ]
	[ "$(field '.candidates[0].overlap_blocks')" = 2 ]
	[[ "$stderr" != *"parent_not_found"* ]]
	rs --block-size 4 --orphans=bogus "$IN"
	assert_failure 2
	[[ "$stderr" == *"(choices: skip, root)"* ]]
}

# The router resolves a chained request's blocks through a memo of the
# nodes it found under each parent; a node made from a request's own
# sequence hashes must never stand there for the chain. Worked by hand
# (block size 4, 8 tokens: 2 blocks, cost = max((P + 8)/4 - overlap, 0)
# + active + new blocks): r1 brings block hashes [10, 20] with its own
# sequence hashes [10, 999] and goes to worker 0 (a tie at 2 + 2 = 4,
# lowest id). r2 brings the same block hashes and no sequence hashes, so
# its block 1 is the chain hash of 10 and 20 (spec §1), not 999: worker 0
# holds block 0 only (1 new block; assumed overlap 2 by local hashes;
# (8+8)/4 - 2 + 2 + 1 = 5), worker 1 nothing ((0+8)/4 + 0 + 2 = 4): worker
# 1. r3, the same again through the memo: worker 0 still 1 new block
# (5), worker 1 none ((8+8)/4 - 2 + 2 + 0 = 4).
@test "--approx: a chained request's blocks are never a request's own hashes under the same parent (the chain memo)" {
	{
		echo '{"type":"request","request_id":"r1","block_hashes":[10,20],"sequence_hashes":[10,999],"input_length":8}'
		echo '{"type":"request","request_id":"r2","block_hashes":[10,20],"input_length":8}'
		echo '{"type":"request","request_id":"r3","block_hashes":[10,20],"input_length":8}'
	} >"$IN"
	rs --block-size 4 --approx --workers 2 "$IN"
	assert_success
	[ "$stderr" = "" ]
	[ "$(field '[.request_id, .chosen.worker_id, [.candidates[] | [.overlap_blocks, .new_blocks, .logit]]]')" = \
		'["r1",0,[[0,2,4],[0,2,4]]]
["r2",1,[[2,1,5],[0,2,4]]]
["r3",1,[[2,1,5],[2,0,4]]]' ]
}

# Two tests route the 500-request Mooncake fixture as request records
# (base.ndjson) and with records $1 put first (start.ndjson) and half-way
# (half.ndjson), in the configurations of MC_CFGS: expiry, pruning, more
# workers than a flat index holds, ended requests.
MC_CFGS=("--workers 4 --ttl 20" "--workers 4 --ttl 0 --approx-max-blocks 300"
	"--workers 70 --ttl 20" "--workers 16 --ttl 60 --request-expiry 30")
mc_variants() {
	local base="$BATS_TEST_TMPDIR/base.ndjson"
	jq -c '{type: "request", request_id: input_line_number, hash_ids, input_length, ts_ms: .timestamp}' \
		"$KVP_ROOT/tests/fixtures/mooncake/synthetic_trace_head500.jsonl" >"$base"
	{ printf '%s\n' "$1"; cat "$base"; } >"$BATS_TEST_TMPDIR/start.ndjson"
	{ head -n 250 "$base"; printf '%s\n' "$1"; tail -n +251 "$base"; } >"$BATS_TEST_TMPDIR/half.ndjson"
}

# Routes the three with --approx and the options $1: F.out, and F.norm
# (F.out through the jq filter $2).
route_variants() {
	local f
	for f in base start half; do
		# shellcheck disable=SC2086
		kvp route-score --block-size 512 --approx $1 "$BATS_TEST_TMPDIR/$f.ndjson" \
			>"$BATS_TEST_TMPDIR/$f.out" 2>/dev/null || fail "$f $1: exit $?"
		jq -c "$2" "$BATS_TEST_TMPDIR/$f.out" >"$BATS_TEST_TMPDIR/$f.norm"
	done
	[ "$(grep -c '"rec":"decision"' "$BATS_TEST_TMPDIR/base.norm")" = 500 ] || fail "$1: not 500 decisions"
}

# The approximate index is flat (a holder mask per block node) until the
# first event; the radix tree takes over from there. Both must decide
# alike: the same trace routed flat, in the tree from the start (a clear
# event for a worker removed again at once moves it there before the first
# request), and moved there half-way. Expected: identical decisions and
# summaries (but index_bytes, and the counts of that event).
@test "--approx: the flat index and the radix tree decide alike (expiry, pruning, 70 workers, a move half-way)" {
	local cfg summ
	mc_variants '{"type":"cleared","worker_id":999,"ts_ms":0}
{"type":"remove_worker","worker_id":999,"ts_ms":0}'
	for cfg in "${MC_CFGS[@]}"; do
		route_variants "$cfg" \
			'if .rec == "summary" then del(.index_bytes, .events, .applied, .clears, .workers_removed) else . end'
		cmp -s "$BATS_TEST_TMPDIR/base.norm" "$BATS_TEST_TMPDIR/start.norm" || fail "$cfg: flat and tree differ"
		# what each configuration is there for did happen
		summ=$(jq -s -c '.[-1] | [.approx_expired > 0, .approx_pruned > 0, .index_pairs > 0, .requests_expired > 0]' \
			"$BATS_TEST_TMPDIR/base.out")
		case $cfg in
		*approx-max*) [ "$summ" = '[false,true,true,false]' ] || fail "$cfg: $summ"; continue ;; # a move drops pruned orphans
		*request-expiry*) [ "$summ" = '[true,false,true,true]' ] || fail "$cfg: $summ" ;;
		*) [ "$summ" = '[true,false,true,false]' ] || fail "$cfg: $summ" ;;
		esac
		cmp -s "$BATS_TEST_TMPDIR/base.norm" "$BATS_TEST_TMPDIR/half.norm" || fail "$cfg: moved half-way differs"
	done
}

# The block table finds a chained request's nodes by the chain memo alone
# while every node is in it ("pure mode", nodes.c), and by a map of
# sequence hashes once something needs that: here a query bringing hashes
# of its own (commit false, no timestamp: it changes no state), at the
# start or half-way, after nodes were freed by expiry, pruning and ended
# requests. Expected: the same decisions and summaries as the trace alone,
# but the query's decision and its counts (and the rates they divide).
@test "--approx: the chain memo alone and the map of hashes find the same nodes (the map begun at the start or half-way)" {
	local cfg
	mc_variants '{"type":"request","request_id":"q","commit":false,"block_hashes":[7,8],"sequence_hashes":[7,8],"input_length":1024}'
	for cfg in "${MC_CFGS[@]}"; do
		route_variants "$cfg" 'select(.request_id != "q") |
			if .rec == "summary" then del(.requests, .queries, .hashed_blocks, .request_blocks,
				.prefix_hit_rate, .reachable_hit_rate) else . end'
		# nodes were freed before the map was begun half-way
		[ "$(jq -s '.[-1] | .approx_expired + .approx_pruned + .requests_expired > 0' "$BATS_TEST_TMPDIR/base.out")" = true ] ||
			fail "$cfg: nothing was freed"
		cmp -s "$BATS_TEST_TMPDIR/base.norm" "$BATS_TEST_TMPDIR/start.norm" || fail "$cfg: the map from the start differs"
		cmp -s "$BATS_TEST_TMPDIR/base.norm" "$BATS_TEST_TMPDIR/half.norm" || fail "$cfg: the map begun half-way differs"
	done
}
