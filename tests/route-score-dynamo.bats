#!/usr/bin/env bats
# route-score: Dynamo's current cost model and the router features of
# docs/spec/route-score.md §3.3–3.4 (issue 11). bs = 4 throughout; requests are
# pre-hashed (block_hashes are local hashes, isl = 4 per block). Every
# expected value is worked out by hand in the comment above it, from
# Dynamo's docs (router-concepts.md, router-configuration.md,
# router-filtering.md) and the formulas of docs/spec/route-score.md §3.1:
#   logit = W·max(0, (P + ISL)/bs − C·f·O) + D + N   (default)
#   logit = max(0, (P + ISL)/bs − C·f·O)·(D + N + 1) (lmetric)
#   f = 1/(1 + decay·((P − P_min)/bs)/request_blocks)
load test_helper

rs() { run --separate-stderr kvp route-score "$@"; }
dec() { printf '%s\n' "$output" | jq -c "select(.rec==\"decision\") | $1"; }
summ() { printf '%s\n' "$output" | jq -c "select(.rec==\"summary\") | $1"; }

setup() {
	IN="$BATS_TEST_TMPDIR/in.ndjson"
	# worker 1 holds local blocks 100, 200; worker 2 holds nothing
	CACHE='{"type":"stored","worker_id":1,"event_id":1,"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":100},{"block_hash":2,"tokens_hash":200}]}'
}

two_requests() {
	printf '%s\n' '{"type":"worker","worker_id":2}' "$CACHE" \
		'{"type":"request","request_id":"r1","block_hashes":[100,200,300]}' \
		'{"type":"request","request_id":"r2","block_hashes":[100,200,400]}' >"$IN"
}

# --- cost model ----------------------------------------------------------

# r1 (ISL 12, 3 blocks): w1 O=2: 1·(12/4 − 2) + 0 + 3 = 4; w2: 3 + 3 = 6.
# r1 on w1 adds P = 12 − 2·4 = 4 tokens and D = 3 blocks.
# r2 shares r1's first two blocks (N = 1 on w1):
#   w1: (4+12)/4 − 2 = 2, + 3 + 1 = 6; w2: 3 + 0 + 3 = 6: a tie of 2.
@test "defaults: the current formula gives the classic logits; tie_count in every decision" {
	two_requests
	rs --block-size 4 "$IN"
	assert_success
	[ "$(dec '[.request_id,.chosen.worker_id,.tie_count,[.candidates[].logit]]')" = \
		'["r1",1,1,[4,6]]
["r2",1,2,[6,6]]' ]
}

# Dynamo's defaults (credit 1, decay 0, scale 1, default policy) multiply
# by exactly 1 and add 0: the same bytes as no options at all.
@test "defaults: explicit Dynamo defaults are byte-identical to none" {
	two_requests
	rs --block-size 4 "$IN"
	local plain=$output
	rs --block-size 4 --router-kv-overlap-score-credit 1 \
		--router-kv-overlap-score-credit-decay 0 --router-prefill-load-scale 1 \
		--router-selection-policy default --router-host-cache-hit-weight 0.75 \
		--router-disk-cache-hit-weight 0.25 "$IN"
	assert_success
	[ "$output" = "$plain" ]
}

# scale 2: r1 w1 2·1 + 3 = 5, w2 2·3 + 3 = 9 (the old name says the same).
@test "--router-prefill-load-scale 2 = --overlap-weight 2 = --router-kv-overlap-score-weight 2" {
	two_requests
	for o in --router-prefill-load-scale --overlap-weight --router-kv-overlap-score-weight; do
		rs --block-size 4 $o 2 "$IN"
		assert_success
		[ "$(dec 'select(.request_id=="r1") | [.candidates[].logit]')" = '[5,9]' ]
	done
}

# credit 0.5: r1 w1 12/4 − 0.5·2 = 2, + 3 = 5; w2 6.
@test "--router-kv-overlap-score-credit 0.5 halves the device credit" {
	two_requests
	rs --block-size 4 --router-kv-overlap-score-credit 0.5 "$IN"
	assert_success
	[ "$(dec 'select(.request_id=="r1") | [.candidates[].logit]')" = '[5,6]' ]
}

# decay 1 on r2: P_min = 0 (w2); w1 excess (4 − 0)/4 = 1 block, request 3
# blocks: f = 1/(1 + 1/3) = 0.75, credit 1.5: (16/4 − 1.5) + 3 + 1 = 6.5;
# w2 f = 1: 6. The tie of the defaults now goes to w2.
@test "--router-kv-overlap-score-credit-decay 1: credit ×0.75 at one third request of excess prefill" {
	two_requests
	rs --block-size 4 --router-kv-overlap-score-credit-decay 1 "$IN"
	assert_success
	[ "$(dec 'select(.request_id=="r2") | [.chosen.worker_id,[.candidates[]|[.logit,.credit_factor]]]')" = \
		'[2,[[6.5,0.75],[6,1]]]' ]
}

# lmetric: r1 w1 (3 − 2)·(0 + 3 + 1) = 4, w2 3·4 = 12;
# r2 w1 (4 − 2)·(3 + 1 + 1) = 10, w2 3·(3 + 1) = 12.
@test "--router-selection-policy lmetric: adjusted_prefill × (decode_blocks + 1)" {
	two_requests
	rs --block-size 4 --router-selection-policy lmetric "$IN"
	assert_success
	[ "$(dec '[.chosen.worker_id,[.candidates[].logit]]')" = '[1,[4,12]]
[1,[10,12]]' ]
}

# The deprecated weight 0 drops the credit (w1 and w2: 3·(3+1) = 12, a
# tie); the new scale 0 does not (lmetric has no scale: w1 (3−2)·4 = 4).
@test "--overlap-weight 0 also zeroes the credit, --router-prefill-load-scale 0 does not" {
	two_requests
	rs --block-size 4 --router-selection-policy lmetric --overlap-weight 0 "$IN"
	assert_success
	[ "$(dec 'select(.request_id=="r1") | [.tie_count,[.candidates[].logit]]')" = '[2,[12,12]]' ]
	rs --block-size 4 --router-selection-policy lmetric --router-prefill-load-scale 0 "$IN"
	assert_success
	[ "$(dec 'select(.request_id=="r1") | [.tie_count,[.candidates[].logit]]')" = '[1,[4,12]]' ]
}

# --load-aware: credit 0, no reuse, the whole ISL as prefill.
# r1: both 12/4 + 3 = 6, tie → w1 (lowest id), P = 12, D = 3 unshared.
# r2: w1 (12+12)/4 + 3 + 3 = 12; w2 6 → w2.
@test "--load-aware: load only" {
	two_requests
	rs --block-size 4 --load-aware "$IN"
	assert_success
	[ "$(dec '[.chosen.worker_id,.tie_count,[.candidates[].logit]]')" = '[1,2,[6,6]]
[2,1,[12,6]]' ]
}

# Three idle workers, one block: all logits 1 + 1 = 2, tie_count 3.
# Reservoir: the k-th tie replaces the pick when floor(u·k) = 0:
#   u 0.6: k=2 floor 1.2, k=3 floor 1.8: keeps worker 0;
#   u 0.4: k=2 floor 0.8 = 0 → 1, k=3 floor 1.2: worker 1;
#   u 0.2: k=2 0.4 → 1, k=3 0.6 → 2: worker 2.
@test "--tie-break reservoir: Dynamo's reservoir sampling over the tied candidates" {
	echo '{"type":"request","request_id":"x","block_hashes":[1]}' >"$IN"
	for pair in 0.6:0 0.4:1 0.2:2; do
		rs --block-size 4 --workers 3 --tie-break reservoir --draw "${pair%:*}" "$IN"
		assert_success
		[ "$(dec '[.tie_count,.tie_break,.chosen.worker_id]')" = "[3,\"reservoir\",${pair#*:}]" ]
	done
}

# With the PRNG: uniform over the tied (300 query-only requests, each
# worker expected 100 times; below 50 has probability < 1e-8), and the
# same seed gives the same picks.
@test "--tie-break reservoir with the PRNG: every tied worker is picked, reproducibly" {
	for i in $(seq 1 300); do
		echo "{\"type\":\"request\",\"request_id\":\"q$i\",\"block_hashes\":[1],\"commit\":false}"
	done >"$IN"
	rs --block-size 4 --workers 3 --tie-break reservoir --sample-seed 7 "$IN"
	assert_success
	local first=$output
	for w in 0 1 2; do
		n=$(dec ".chosen.worker_id" | grep -cx "$w")
		[ "$n" -ge 50 ]
	done
	rs --block-size 4 --workers 3 --tie-break reservoir --sample-seed 7 "$IN"
	[ "$output" = "$first" ]
}

# --- busy thresholds -----------------------------------------------------

# r1 (12 tokens) → w0 (tie), P(w0) = 12 > 3: overloaded, so r2 sees only w1;
# then both are overloaded: r3 rejected; r4 pinned to w0: pinned overload.
@test "busy thresholds: overloaded workers are filtered; all overloaded → rejected" {
	printf '%s\n' '{"type":"request","request_id":"r1","block_hashes":[1,2,3]}' \
		'{"type":"request","request_id":"r2","block_hashes":[4,5,6]}' \
		'{"type":"request","request_id":"r3","block_hashes":[7]}' \
		'{"type":"request","request_id":"r4","block_hashes":[8],"pinned":{"worker_id":0}}' >"$IN"
	rs --block-size 4 --workers 2 --active-prefill-tokens-threshold 3 "$IN"
	assert_success
	[ "$(dec '[.request_id,.chosen.worker_id,.overloaded,.rejected,[.candidates[].worker_id]]')" = \
		'["r1",0,null,null,[0,1]]
["r2",1,1,null,[1]]
["r3",null,2,"AllEligibleWorkersOverloaded",[]]
["r4",null,1,"PinnedWorkerOverloaded",[]]' ]
	[ "$(summ '[.rejected,.routed]')" = '[2,2]' ]
}

# frac 0.5 of 16 batched tokens = 8 < 12; decode 0.5 of 4 blocks = 2 < 3.
@test "busy thresholds: the fraction of max_num_batched_tokens and of the KV blocks" {
	printf '%s\n' '{"type":"request","request_id":"r1","block_hashes":[1,2,3]}' \
		'{"type":"request","request_id":"r2","block_hashes":[4,5,6]}' \
		'{"type":"request","request_id":"r3","block_hashes":[7]}' >"$IN"
	rs --block-size 4 --workers 2 --active-prefill-tokens-threshold-frac 0.5 --max-num-batched-tokens 16 "$IN"
	assert_success
	[ "$(dec '.chosen.worker_id')" = '0
1
null' ]
	rs --block-size 4 --workers 2 --active-decode-blocks-threshold 0.5 --total-kv-blocks 4 "$IN"
	assert_success
	[ "$(dec '.rejected')" = 'null
null
"AllEligibleWorkersOverloaded"' ]
	rs --block-size 4 --workers 2 --active-decode-blocks-threshold 0.5 "$IN"
	assert_failure 2
	[[ "$stderr" == *"--total-kv-blocks"* ]]
}

# --- queue -----------------------------------------------------------------

# threshold 0.5 × 16 = 8 tokens, one worker. r1 (12 tokens) is placed:
# P = 12 > 8. r2 (ts 1100) and r3 (ts 1200, 4 tokens) wait. free r1 at
# 1500: P = 0. fcfs places r2 (wait 1500−1100 = 400; P = 12 again), r3
# waits until prefill_done r2 at 1700 (wait 500). wspt places r3 first
# (wait 300; P = 4 ≤ 8) and then r2 (wait 400), both after the free.
@test "queue: requests wait while every worker is busy and are placed when load falls (fcfs, wspt)" {
	printf '%s\n' '{"type":"request","request_id":"r1","block_hashes":[1,2,3],"ts_ms":1000}' \
		'{"type":"request","request_id":"r2","block_hashes":[4,5,6],"ts_ms":1100}' \
		'{"type":"request","request_id":"r3","block_hashes":[7],"ts_ms":1200}' \
		'{"type":"free","request_id":"r1","ts_ms":1500}' \
		'{"type":"prefill_done","request_id":"r2","ts_ms":1700}' >"$IN"
	rs --block-size 4 --workers 1 --router-queue-threshold 0.5 --max-num-batched-tokens 16 "$IN"
	assert_success
	[ "$(dec '[.request_id,.queued,.wait_ms]')" = '["r1",null,null]
["r2",true,400]
["r3",true,500]' ]
	[ "$(summ '[.queued,.queued_at_end]')" = '[2,0]' ]
	rs --block-size 4 --workers 1 --router-queue-threshold 0.5 --max-num-batched-tokens 16 \
		--router-queue-policy wspt "$IN"
	assert_success
	[ "$(dec '[.request_id,.wait_ms]')" = '["r1",null]
["r3",300]
["r2",400]' ]
	rs --block-size 4 --workers 1 --router-queue-threshold 0.5 --max-num-batched-tokens 16 \
		--format text "$IN"
	assert_success
	[[ "$output" == *"request r2: "*"queued: waited 400 ms"* ]]
}

# --request-expiry 1: r1 (ts 0) expires at 1000. r2 (ts 500) waits; r3's
# arrival at 1500 moves the clock, r1 expires, r2 is placed (wait 1000)
# and fills the worker again, so r3 (newest) waits to the end (wait 0).
@test "queue: capacity freed by request expiry lets the queue move at the next arrival" {
	printf '%s\n' '{"type":"request","request_id":"r1","block_hashes":[1,2,3],"ts_ms":0}' \
		'{"type":"request","request_id":"r2","block_hashes":[4,5,6],"ts_ms":500}' \
		'{"type":"request","request_id":"r3","block_hashes":[7,8,9],"ts_ms":1500}' >"$IN"
	rs --block-size 4 --workers 1 --router-queue-threshold 0.5 --max-num-batched-tokens 16 \
		--request-expiry 1 "$IN"
	assert_success
	[ "$(dec '[.request_id,.chosen.worker_id,.wait_ms,.rejected]')" = '["r1",0,null,null]
["r2",0,1000,null]
["r3",null,0,"QueuedAtEnd"]' ]
}

# Without the prefill_done, r3 is still waiting at the end (clock 1500).
@test "queue: a request still waiting at the end is written as rejected QueuedAtEnd" {
	printf '%s\n' '{"type":"request","request_id":"r1","block_hashes":[1,2,3],"ts_ms":1000}' \
		'{"type":"request","request_id":"r2","block_hashes":[4,5,6],"ts_ms":1100}' \
		'{"type":"request","request_id":"r3","block_hashes":[7],"ts_ms":1200}' \
		'{"type":"free","request_id":"r1","ts_ms":1500}' >"$IN"
	rs --block-size 4 --workers 1 --router-queue-threshold 0.5 --max-num-batched-tokens 16 "$IN"
	assert_success
	[ "$(dec 'select(.request_id=="r3") | [.chosen,.rejected,.queued,.wait_ms]')" = '[null,"QueuedAtEnd",true,300]' ]
	[ "$(summ '[.requests,.queued_at_end]')" = '[3,1]' ]
}

# --- session affinity --------------------------------------------------------

# rA (block 300, no overlap, a tie) binds session s to w0. rB would go to
# w1 by overlap (w1: 0 + 0 + 2 = 2 vs w0 2 + ...) but is dispatched to w0.
# The last request ends at 3000 (rB) → idle until 13000: rC at 12999 is
# still bound; rC ends at 13000 → rD at 23001 finds the binding expired.
@test "--router-session-affinity-ttl-secs: a session stays on its worker until idle for the TTL" {
	printf '%s\n' '{"type":"worker","worker_id":0}' "$CACHE" \
		'{"type":"request","request_id":"rA","session_id":"s","block_hashes":[300],"ts_ms":1000}' \
		'{"type":"request","request_id":"rB","session_id":"s","block_hashes":[100,200],"ts_ms":2000}' \
		'{"type":"free","request_id":"rA","ts_ms":2500}' \
		'{"type":"free","request_id":"rB","ts_ms":3000}' \
		'{"type":"request","request_id":"rC","session_id":"s","block_hashes":[100,200],"ts_ms":12999}' \
		'{"type":"free","request_id":"rC","ts_ms":13000}' \
		'{"type":"request","request_id":"rD","session_id":"s","block_hashes":[100,200],"ts_ms":23001}' >"$IN"
	rs --block-size 4 --router-session-affinity-ttl-secs 10 "$IN"
	assert_success
	[ "$(dec '[.request_id,.chosen.worker_id,.affinity,.tie_break]')" = \
		'["rA",0,"bind","lowest-id"]
["rB",0,"bound","session"]
["rC",0,"bound","session"]
["rD",1,"bind","none"]' ]
	rs --block-size 4 "$IN"
	[ "$(dec '.chosen.worker_id')" = '0
1
1
1' ]
}

# rA binds s to w0; w0 is removed, so rB's binding is dropped and rB
# binds w1 (the only candidate left).
@test "session affinity: a binding whose worker is gone is dropped and rebound" {
	printf '%s\n' '{"type":"worker","worker_id":0}' '{"type":"worker","worker_id":1}' \
		'{"type":"request","request_id":"rA","session_id":"s","block_hashes":[1],"ts_ms":1000}' \
		'{"type":"remove_worker","worker_id":0}' \
		'{"type":"request","request_id":"rB","session_id":"s","block_hashes":[1],"ts_ms":2000}' \
		'{"type":"request","request_id":"rC","session_id":"s","block_hashes":[1],"ts_ms":3000}' >"$IN"
	rs --block-size 4 --router-session-affinity-ttl-secs 10 "$IN"
	assert_success
	[ "$(dec '[.chosen.worker_id,.affinity]')" = '[0,"bind"]
[1,"bind"]
[1,"bound"]' ]
}

# The same stream over two replicas (rA, rC on replica 0; rB, rD on 1):
# bindings are shared when made or used and idle timers restart on every
# replica when a request ends, so the decisions are the same as above.
@test "session affinity over replicas: bindings and idle timers are shared" {
	printf '%s\n' '{"type":"worker","worker_id":0}' "$CACHE" \
		'{"type":"request","request_id":"rA","session_id":"s","block_hashes":[300],"ts_ms":1000}' \
		'{"type":"request","request_id":"rB","session_id":"s","block_hashes":[100,200],"ts_ms":2000}' \
		'{"type":"free","request_id":"rA","ts_ms":2500}' \
		'{"type":"free","request_id":"rB","ts_ms":3000}' \
		'{"type":"request","request_id":"rC","session_id":"s","block_hashes":[100,200],"ts_ms":12999}' \
		'{"type":"free","request_id":"rC","ts_ms":13000}' \
		'{"type":"request","request_id":"rD","session_id":"s","block_hashes":[100,200],"ts_ms":23001}' >"$IN"
	rs --block-size 4 --replicas 2 --router-session-affinity-ttl-secs 10 "$IN"
	assert_success
	[ "$(dec '[.request_id,.replica,.chosen.worker_id,.affinity]')" = \
		'["rA",0,0,"bind"]
["rB",1,0,"bound"]
["rC",0,0,"bound"]
["rD",1,1,"bind"]' ]
}

# --- replicas ----------------------------------------------------------------

# Two idle workers, four 2-block requests a..d to replicas 0,1,0,1.
# Without sync replica 1 has not seen a on w0, so b ties and herds onto w0;
# c and d then see their own replica's request on w0 and go to w1.
# With sync b sees a's load on w0 (w0: 2+2+2 = 6 vs w1 4) and takes w1.
@test "--replicas 2: without sync the replicas herd onto one worker, with sync they do not" {
	for x in a:1,2 b:3,4 c:5,6 d:7,8; do
		echo "{\"type\":\"request\",\"request_id\":\"${x%%:*}\",\"block_hashes\":[${x#*:}]}"
	done >"$IN"
	rs --block-size 4 --workers 2 --replicas 2 "$IN"
	assert_success
	[ "$(dec '[.request_id,.replica,.chosen.worker_id]')" = '["a",0,0]
["b",1,0]
["c",0,1]
["d",1,1]' ]
	[ "$(summ '[.requests,.routed]')" = '[4,4]' ]
	rs --block-size 4 --workers 2 --replicas 2 --replica-sync on "$IN"
	assert_success
	[ "$(dec '[.request_id,.replica,.chosen.worker_id]')" = '["a",0,0]
["b",1,1]
["c",0,0]
["d",1,1]' ]
	rs --block-size 4 --workers 2 --replicas 2 --router-replica-sync "$IN"
	[ "$(dec '.chosen.worker_id' | tr '\n' ' ')" = '0 1 0 1 ' ]
}

# a → replica 0 → w0; free a reaches replica 0 (its owner) and, with sync,
# replica 1's copy: b then ties and goes to w0 either way; a free of an
# unknown id is bad data (exit 1) only because no replica holds it.
@test "--replicas: free reaches the replica that holds the request; unknown everywhere is bad data" {
	printf '%s\n' '{"type":"request","request_id":"a","block_hashes":[1,2]}' \
		'{"type":"free","request_id":"a"}' \
		'{"type":"request","request_id":"b","block_hashes":[3,4]}' \
		'{"type":"free","request_id":"zz"}' >"$IN"
	for sy in off on; do
		rs --block-size 4 --workers 2 --replicas 2 --replica-sync $sy "$IN"
		assert_failure 1
		[ "$(dec '[.replica,.chosen.worker_id,.tie_count]')" = '[0,0,2]
[1,0,2]' ]
		[[ "$stderr" == *"in.ndjson:4: free: request not active"* ]]
	done
}

@test "--replicas: the request's replica key picks the replica; out of range is bad data" {
	printf '%s\n' '{"type":"request","request_id":"a","block_hashes":[1],"replica":1}' \
		'{"type":"request","request_id":"b","block_hashes":[2],"replica":2}' >"$IN"
	rs --block-size 4 --workers 1 --replicas 2 "$IN"
	assert_failure 1
	[ "$(dec '.replica')" = 1 ]
	[[ "$stderr" == *"in.ndjson:2: replica 2"* ]]
}

# --- predict-on-route ------------------------------------------------------------

# --no-load, no events: without the side index every overlap is 0 (a tie
# of 2). With --predicted-ttl 5, r1 (ts 1000, → w0) is in the side index
# until 6000: r2 (ts 2000) sees 3 blocks on w0 (logit 0 vs 3); r2 refreshes
# them to 7000, and r3 at ts 7000 finds them expired.
@test "--predicted-ttl: decisions feed a side index; the overlap is the per-worker max; entries expire" {
	printf '%s\n' '{"type":"request","request_id":"r1","block_hashes":[1,2,3],"ts_ms":1000}' \
		'{"type":"request","request_id":"r2","block_hashes":[1,2,3],"ts_ms":2000}' \
		'{"type":"request","request_id":"r3","block_hashes":[1,2,3],"ts_ms":7000}' >"$IN"
	rs --block-size 4 --workers 2 --no-load "$IN"
	assert_success
	[ "$(dec '[.tie_count,[.candidates[].overlap_blocks]]')" = '[2,[0,0]]
[2,[0,0]]
[2,[0,0]]' ]
	rs --block-size 4 --workers 2 --no-load --predicted-ttl 5 "$IN"
	assert_success
	[ "$(dec '[.tie_count,[.candidates[].overlap_blocks]]')" = '[2,[0,0]]
[1,[3,0]]
[2,[0,0]]' ]
	[ "$(summ '.side_expired')" = 3 ]
	rs --block-size 4 --workers 2 --approx --predicted-ttl 5 "$IN"
	assert_failure 2
}

# With events: w1 holds 100, 200 (event-fed overlap 2). r1 [100,200,300]
# goes to w1 and puts all three in the side index, so r2's overlap on w1
# is max(2, 3) = 3 (2 without the side index); w0 stays 0.
@test "--predicted-ttl: the per-worker max of the event-fed and the side overlap" {
	printf '%s\n' '{"type":"worker","worker_id":0}' "$CACHE" \
		'{"type":"request","request_id":"r1","block_hashes":[100,200,300],"ts_ms":1000}' \
		'{"type":"request","request_id":"r2","block_hashes":[100,200,300],"ts_ms":1500}' >"$IN"
	rs --block-size 4 --no-load --predicted-ttl 5 "$IN"
	assert_success
	[ "$(dec '[.chosen.worker_id,[.candidates[].overlap_blocks]]')" = '[1,[0,2]]
[1,[0,3]]' ]
	rs --block-size 4 --no-load "$IN"
	[ "$(dec '[.candidates[].overlap_blocks]')" = '[0,2]
[0,2]' ]
}

# --- output blocks -----------------------------------------------------------

# r1: ISL 12, output_length 10: floor(22/4) − floor(12/4) = 2 output
# blocks, so r2 sees D = 3 + 2 = 5 (3 without the option). After free r1
# only r2's block is active; r3's osl 3: floor(7/4) − floor(4/4) = 0.
@test "--track-output-blocks: an active request holds its output blocks (output_length / osl)" {
	printf '%s\n' '{"type":"request","request_id":"r1","block_hashes":[1,2,3],"output_length":10}' \
		'{"type":"request","request_id":"r2","block_hashes":[4]}' \
		'{"type":"free","request_id":"r1"}' \
		'{"type":"request","request_id":"r3","block_hashes":[5],"osl":3}' >"$IN"
	rs --block-size 4 --workers 1 --track-output-blocks "$IN"
	assert_success
	[ "$(dec '[.output_blocks,.candidates[0].active_blocks]')" = '[2,0]
[null,5]
[null,1]' ]
	rs --block-size 4 --workers 1 "$IN"
	[ "$(dec '.candidates[0].active_blocks')" = '0
3
1' ]
}

@test "Dynamo's flag names --router-predicted-ttl-secs and --router-track-output-blocks are the same options" {
	printf '%s\n' '{"type":"request","request_id":"r1","block_hashes":[1,2,3],"ts_ms":1000,"output_length":10}' \
		'{"type":"request","request_id":"r2","block_hashes":[1,2,3],"ts_ms":2000}' >"$IN"
	rs --block-size 4 --workers 2 --no-load --predicted-ttl 5 --track-output-blocks "$IN"
	assert_success
	want=$output
	rs --block-size 4 --workers 2 --no-load --router-predicted-ttl-secs 5 --router-track-output-blocks "$IN"
	assert_success
	assert_equal "$output" "$want"
	# and they act: r2 sees r1's blocks through the side index, r1 holds
	# output blocks (the two tests above work the numbers out)
	[ "$(dec '[.output_blocks, .candidates[0].overlap_blocks]' | tr -d '\n')" = '[2,0][null,3]' ]
}
