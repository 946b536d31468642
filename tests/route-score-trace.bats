#!/usr/bin/env bats
# route-score and Dynamo's current router, both ways (issue 30): the
# router policy config (--router-policy-config, Dynamo's worker_selection
# YAML), dynamo-two-tier-cost-fn, --format dynamo-trace
# (dynamo.router.decision.v1), --score-parts and the summary's funnel.
# bs = 4; requests are pre-hashed (local hashes, ISL 4 per block); worker
# 1 holds local blocks 100, 200, worker 2 nothing. Expected values are
# worked out by hand in the comments from Dynamo's selector source
# (selector.rs worker_score_parts / finish_decision_trace,
# two_tier_cost_fn.rs, worker_selection_config.rs):
#   raw = (P + ISL)/bs; credit = C·f·O (+ tiers); adjusted = max(0, raw −
#   credit); logit = W·adjusted + (D + N) + w_req·active_requests
load test_helper

rs() { run --separate-stderr kvp route-score "$@"; }
dec() { printf '%s\n' "$output" | jq -c "select(.rec==\"decision\") | $1"; }
summ() { printf '%s\n' "$output" | jq -c "select(.rec==\"summary\") | $1"; }

setup() {
	IN="$BATS_TEST_TMPDIR/in.ndjson"
	Y="$BATS_TEST_TMPDIR/policy.yaml"
	printf '%s\n' '{"type":"worker","worker_id":2}' \
		'{"type":"stored","worker_id":1,"event_id":1,"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":100},{"block_hash":2,"tokens_hash":200}]}' \
		'{"type":"request","request_id":"r1","block_hashes":[100,200,300]}' \
		'{"type":"request","request_id":"r2","block_hashes":[100,200,400]}' >"$IN"
}

two_tier_yaml() {
	cat >"$Y" <<-EOF
	# Dynamo's documented shape
	worker_selection:
	  aggregated: smg
	  instances:
	    - name: smg
	      type: dynamo-two-tier-cost-fn
	      parameters:
	        cache_threshold: ${1:-0.5}
	        balance_abs_threshold: 32
	        balance_rel_threshold: 1.1
	EOF
}

# --- --format dynamo-trace -------------------------------------------------

# r1 (ISL 12, 3 blocks): w1 O 2: raw 3, credit 2, adjusted 1, decode 0 + 3,
# logit 4; w2: raw 3, adjusted 3, decode 3, logit 6 → w1, nobody above its
# overlap: max_overlap w1, avoidable 0. r1 adds P 12 − 2·4 = 4, D 3 on w1.
# r2: w1 raw (4 + 12)/4 = 4, adjusted 2, decode 3 + 1 = 4, logit 6, one
# active request; w2 logit 6; the tie goes to the lowest id (w1).
# The fixture holds both objects, written by hand (its README).
@test "dynamo-trace: one dynamo.router.decision.v1 object per decision, byte for byte" {
	rs --block-size 4 --format dynamo-trace "$IN"
	assert_success
	[ -z "$stderr" ]
	[ "$output" = "$(cat "$KVP_ROOT/tests/fixtures/dynamo-trace/two-requests.jsonl")" ]
}

# The field order of Dynamo's RoutingDecisionTrace and
# RoutingDecisionCandidate as selector.rs builds them (two_tier and
# preferred_taint_multiplier absent: None).
@test "dynamo-trace: Dynamo's field names in Dynamo's order" {
	rs --block-size 4 --format dynamo-trace "$IN"
	assert_success
	[ "$(printf '%s\n' "$output" | head -1 | jq -c 'keys_unsorted')" = \
		'["schema","worker_type","policy","selection_reason","candidate_scope","block_size","request_blocks","track_prefill_tokens","selected_worker_id","selected_dp_rank","max_overlap_worker_id","max_overlap_dp_rank","avoidable_prefill_token_equivalents","overlap_score_credit","overlap_score_credit_decay","prefill_load_scale","host_cache_hit_weight","disk_cache_hit_weight","shared_cache_multiplier","decode_active_request_weight","router_temperature","candidates"]' ]
	[ "$(printf '%s\n' "$output" | head -1 | jq -c '.candidates[0] | keys_unsorted')" = \
		'["worker_id","dp_rank","eligible","selected","max_overlap","total_cost_blocks","effective_overlap_blocks","device_overlap_blocks","host_overlap_blocks","disk_overlap_blocks","shared_beyond_device_blocks","raw_prefill_blocks","active_prefill_tokens","prefill_cost_blocks","decode_cost_blocks","active_requests","active_request_cost_blocks","overlap_credit_blocks","overlap_credit_decay","effective_overlap_score_credit","adjusted_prefill_blocks","base_score_blocks","decode_overlap_formula","raw_cached_tokens"]' ]
}

# W 2 (prefill_load_scale): r1 w2 logit 2·3 + 3 = 9, w1 2·1 + 3 = 5:
# w1 chosen. A load on w1 (P 40 → raw (40 + 12)/4 = 13, adjusted 11,
# logit 2·11 + 3 = 25) sends r1 to w2: max_overlap w1 (2 > 0), avoidable
# (2 − 0)·4 = 8 tokens. Temperature > 0: "temperature_sample".
@test "dynamo-trace: the weights in force, the avoidable prefill, the selection reason" {
	{ printf '%s\n' '{"type":"load","worker_id":1,"active_prefill_tokens":40}'; cat "$IN"; } >"$BATS_TEST_TMPDIR/load"
	rs --block-size 4 --format dynamo-trace --router-prefill-load-scale 2 \
		--router-decode-active-request-weight 0.5 "$BATS_TEST_TMPDIR/load"
	assert_success
	[ "$(printf '%s\n' "$output" | head -1 | jq -c '[.selected_worker_id,.max_overlap_worker_id,.avoidable_prefill_token_equivalents,.prefill_load_scale,.decode_active_request_weight,[.candidates[].total_cost_blocks]]')" = \
		'[2,1,8,2,0.5,[25,9]]' ]
	printf '%s\n' "$output" | head -1 | grep -q '"avoidable_prefill_token_equivalents":8.0,'
	rs --block-size 4 --format dynamo-trace --temperature 0.5 "$IN"
	assert_success
	[ "$(printf '%s\n' "$output" | jq -r .selection_reason | sort -u)" = temperature_sample ]
}

# Dynamo traces no pinned selection ("no choice to explain"); and a
# trace stream has no summary record.
@test "dynamo-trace: nothing for a pinned request, no summary" {
	printf '%s\n' '{"type":"request","request_id":"r3","block_hashes":[100],"pinned":{"worker_id":2}}' >>"$IN"
	rs --block-size 4 --format dynamo-trace "$IN"
	assert_success
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 2 ]
	[ "$(printf '%s\n' "$output" | jq -r .schema | sort -u)" = dynamo.router.decision.v1 ]
}

# --- --router-policy-config -------------------------------------------------

# Two-tier: r1 loads 0, 0; max overlap 2 (w1), 2/3 > 0.5 → the cache tier,
# w1. r2: loads 1 (w1), 0: spread 1, no load tier; 2/3 > 0.5 → w1 again.
# With cache_threshold 0.7: 2/3 is not > 0.7 → the least loaded: r1 w1
# (0, 0: the first row), r2 w2 (0 < 1).
@test "--router-policy-config: dynamo-two-tier-cost-fn's tiers in the decisions" {
	two_tier_yaml
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_success
	[ -z "$stderr" ]
	[ "$(dec '[.policy,.policy_reason,.chosen.worker_id]')" = \
		'["dynamo-two-tier-cost-fn","cache",1]
["dynamo-two-tier-cost-fn","cache",1]' ]
	two_tier_yaml 0.7
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_success
	[ "$(dec '[.policy_reason,.chosen.worker_id]')" = \
		'["least_loaded",1]
["least_loaded",2]' ]
}

@test "--policy dynamo-two-tier-cost-fn: the shorthand with Dynamo's defaults" {
	two_tier_yaml
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	local viayaml=$output
	rs --block-size 4 --policy dynamo-two-tier-cost-fn "$IN"
	assert_success
	[ "$output" = "$viayaml" ]
}

# The two-tier trace: the policy's name and branch, its parameters, the
# candidates' costs 0 and its overlap ranking (2 and 0 blocks).
@test "dynamo-trace: a two-tier decision carries two_tier and the rows' overlaps" {
	two_tier_yaml
	rs --block-size 4 --router-policy-config "$Y" --format dynamo-trace "$IN"
	assert_success
	[ "$(printf '%s\n' "$output" | head -1 | jq -c '[.policy,.selection_reason,.two_tier,[.candidates[]|[.two_tier_overlap_blocks,.total_cost_blocks,.overlap_credit_decay]]]')" = \
		'["dynamo-two-tier-cost-fn","two_tier_cache",{"tier":"cache","cache_threshold":0.5,"balance_abs_threshold":32,"balance_rel_threshold":1.1,"host_cache_weight":0,"matchable_blocks":3},[[2,0,1],[0,0,1]]]' ]
}

# The stage: --worker-type prefill takes worker_selection.prefill; the
# aggregated stage names "default" (the built-in cost) or nothing.
@test "--router-policy-config: the instance of --worker-type's stage; default is the built-in" {
	cat >"$Y" <<-EOF
	worker_selection:
	  aggregated: default
	  prefill: tt
	  instances:
	    - name: tt
	      type: dynamo-two-tier-cost-fn
	EOF
	rs --block-size 4 --router-policy-config "$Y" --brief "$IN"
	assert_success
	[ "$(dec '.policy' | sort -u)" = '"dynamo"' ]
	rs --block-size 4 --router-policy-config "$Y" --worker-type prefill --brief "$IN"
	assert_success
	[ "$(dec '.policy' | sort -u)" = '"dynamo-two-tier-cost-fn"' ]
	rs --block-size 4 --router-policy-config "$Y" --worker-type prefill --format dynamo-trace "$IN"
	assert_success
	[ "$(printf '%s\n' "$output" | jq -r .worker_type | sort -u)" = prefill ]
}

# dynamo-default-cost-fn's parameters are the built-in cost's knobs:
# prefill_load_scale 2 gives the same bytes as --router-prefill-load-scale 2.
@test "--router-policy-config: dynamo-default-cost-fn parameters set the cost's knobs" {
	cat >"$Y" <<-EOF
	worker_selection:
	  aggregated: d
	  instances:
	    - {name: d, type: dynamo-default-cost-fn, parameters: {prefill_load_scale: 2, decode_active_request_weight: 1}}
	EOF
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_success
	local viayaml=$output
	rs --block-size 4 --router-prefill-load-scale 2 --router-decode-active-request-weight 1 "$IN"
	[ "$output" = "$viayaml" ]
}

@test "--router-policy-config: an unknown policy type is an error naming it" {
	cat >"$Y" <<-EOF
	worker_selection:
	  aggregated: x
	  instances:
	    - name: x
	      type: dynamo-learned-choice
	EOF
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_failure 2
	[ -z "$output" ]
	[ "$stderr" = "route-score: $Y:5: worker_selection instance 'x' has unknown policy type 'dynamo-learned-choice' (route-score models dynamo-default-cost-fn and dynamo-two-tier-cost-fn)" ]
}

# Dynamo's checks: unknown keys (deny_unknown_fields), bounds, the
# reserved name, a stage naming nothing; adaptive mode is not modelled.
@test "--router-policy-config: Dynamo's checks, file:line messages, exit 2" {
	printf 'worker_selection:\n  aggregated: t\n  instances:\n    - name: t\n      type: dynamo-two-tier-cost-fn\n      parameters:\n        cache_affinity_threshold: 0.3\n' >"$Y"
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_failure 2
	[ "$stderr" = "route-score: $Y:7: dynamo-two-tier-cost-fn parameters: unknown key 'cache_affinity_threshold'" ]
	printf 'worker_selection:\n  aggregated: t\n  instances:\n    - name: t\n      type: dynamo-two-tier-cost-fn\n      parameters: {cache_threshold: 2.0}\n' >"$Y"
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_failure 2
	[[ "$stderr" == "route-score: $Y:6: cache_threshold must be a finite number between 0.0 and 1.0, not '2.0'" ]]
	printf 'worker_selection:\n  aggregated: t\n  instances:\n    - name: t\n      type: dynamo-two-tier-cost-fn\n      parameters: {balance_rel_threshold: 0.9}\n' >"$Y"
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_failure 2
	[[ "$stderr" == *"balance_rel_threshold must be a finite number greater than or equal to 1.0"* ]]
	printf 'worker_selection:\n  aggregated: nope\n' >"$Y"
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_failure 2
	[ "$stderr" = "route-score: $Y:2: worker_selection aggregated 'nope' does not name a configured instance" ]
	printf 'worker_selection:\n  instances:\n    - {name: default, type: dynamo-two-tier-cost-fn}\n' >"$Y"
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_failure 2
	[[ "$stderr" == *"name 'default' is reserved"* ]]
	printf 'worker_selection:\n  aggregated: t\n  instances:\n    - name: t\n      type: dynamo-two-tier-cost-fn\n      parameters:\n        adaptive: {}\n' >"$Y"
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_failure 2
	[[ "$stderr" == *"$Y:7: parameters: adaptive mode is not modelled"* ]]
	printf 'worker_selection: [\n' >"$Y"
	rs --block-size 4 --router-policy-config "$Y" "$IN"
	assert_failure 2
	[[ "$stderr" == "route-score: $Y:2: YAML: "* ]]
	rs --block-size 4 --router-policy-config "$BATS_TEST_TMPDIR/none.yaml" "$IN"
	assert_failure 2
	[ "$stderr" = "route-score: $BATS_TEST_TMPDIR/none.yaml: No such file or directory" ]
}

# --- --score-parts and the funnel --------------------------------------------

# The intermediates, Dynamo's names, after the usual keys: r1 w1 raw 3,
# credit 2, adjusted 1, cost 1, decode 3; raw cached 2·4 = 8 tokens.
@test "--score-parts: candidates carry the intermediates; without it, the usual bytes" {
	rs --block-size 4 --score-parts "$IN"
	assert_success
	[ "$(dec '.candidates[0] | [.active_requests,.effective_overlap_blocks,.raw_prefill_blocks,.overlap_credit_decay,.effective_overlap_score_credit,.overlap_credit_blocks,.adjusted_prefill_blocks,.prefill_cost_blocks,.decode_cost_blocks,.active_request_cost_blocks,.decode_overlap_formula,.raw_cached_tokens]' | head -1)" = \
		'[0,2,3,1,1,2,1,1,3,0,false,8]' ]
	local parts=$output
	rs --block-size 4 "$IN"
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="decision") | .candidates[0] | keys_unsorted | length')" != \
		"$(printf '%s\n' "$parts" | jq -c 'select(.rec=="decision") | .candidates[0] | keys_unsorted | length')" ]
}

# Dynamo's cache-reuse funnel over committed decisions: r1, r2 → w1
# (raw 8 = the best eligible: kv-optimal). r3 [100,200,500]: w1 P 8, D 4
# (r2 added one block), N 1: raw (8 + 12)/4 = 5, adjusted 3, logit 8; w2 6
# → w2, raw 0 against the best 8. A query (commit false) is not counted.
# decisions 3, optimal 2, ISL 36, best 8·3 = 24, chosen 8 + 8 + 0 = 16.
@test "summary: dynamo_funnel counts router_decisions_total and decision_kv_optimal_total" {
	printf '%s\n' '{"type":"request","request_id":"r3","block_hashes":[100,200,500]}' \
		'{"type":"request","request_id":"q","block_hashes":[100,200],"commit":false}' >>"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(dec '.chosen.worker_id' | paste -sd,)" = 1,1,2,1 ]
	[ "$(summ .dynamo_funnel)" = \
		'{"router_decisions_total":3,"decision_kv_optimal_total":2,"isl_tokens_total":36,"max_raw_cached_tokens_total":24,"selected_raw_cached_tokens_total":16}' ]
}

# --- traces read back: kv-diff, kv-report --------------------------------------

# Dynamo's wrapper: the request_end record of its request trace
# (dynamo.request.trace.v1) carries request_id and the trace as
# routing_decision; the fixture wraps two-requests.jsonl by hand.
@test "dynamo-request-trace: Dynamo's request_end wrapper, byte for byte" {
	head -4 "$IN" >"$BATS_TEST_TMPDIR/two"
	rs --block-size 4 --format dynamo-request-trace "$BATS_TEST_TMPDIR/two"
	assert_success
	[ "$output" = "$(cat "$KVP_ROOT/tests/fixtures/dynamo-trace/request-end.jsonl")" ]
}

# The round trip: route-score's traces against its own decisions pair by
# request id and nothing changed; both sides read r1 w1 overlap 2, r2 w1
# overlap 2 (see the fixture's comments above).
@test "kv-diff: a trace stream in Dynamo's wrapper against route-score's decisions: 0 changed" {
	head -4 "$IN" >"$BATS_TEST_TMPDIR/two"
	kvp route-score --block-size 4 "$BATS_TEST_TMPDIR/two" >"$BATS_TEST_TMPDIR/base"
	run --separate-stderr kvp kv-diff --fail-if 'changed>0' "$BATS_TEST_TMPDIR/base" \
		"$KVP_ROOT/tests/fixtures/dynamo-trace/request-end.jsonl"
	assert_success
	[ -z "$stderr" ]
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="summary") | [.requests,.changed,.only_base,.only_new,.lost_overlap_new]')" = '[2,0,0,0,0]' ]
}

# A changed knob shows: prefill_load_scale 0 (W 0, credit 0) makes every
# logit D + N: r1 3, 3, a tie to w1; r2: w1 3 + 1 = 4 against w2 3 → w2,
# overlap 0 where the base had 2: one request changed, 2 blocks lost.
@test "kv-diff: a trace stream whose decision differs is counted; --fail-if gates on it" {
	head -4 "$IN" >"$BATS_TEST_TMPDIR/two"
	kvp route-score --block-size 4 --format dynamo-request-trace --overlap-weight 0 \
		"$BATS_TEST_TMPDIR/two" >"$BATS_TEST_TMPDIR/new"
	run --separate-stderr kvp kv-diff --fail-if 'changed>0' \
		"$KVP_ROOT/tests/fixtures/dynamo-trace/request-end.jsonl" "$BATS_TEST_TMPDIR/new"
	assert_failure 1
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="summary") | [.requests,.changed,.lost_overlap_new]')" = '[2,1,2]' ]
}

# Sampled traces (DYN_ROUTER_DECISION_TRACE_SAMPLE_RATE) pair with the
# sampled subset only: r2 alone pairs with r2, r1 is base-only; a
# request_end without routing_decision (a pinned request) is no decision.
@test "kv-diff: a sampled trace pairs with its subset; a request_end without a trace is skipped" {
	head -4 "$IN" >"$BATS_TEST_TMPDIR/two"
	kvp route-score --block-size 4 "$BATS_TEST_TMPDIR/two" >"$BATS_TEST_TMPDIR/base"
	{ sed -n 2p "$KVP_ROOT/tests/fixtures/dynamo-trace/request-end.jsonl"
	  echo '{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":9,"request":{"request_id":"r9"}}'; } >"$BATS_TEST_TMPDIR/sampled"
	run --separate-stderr kvp kv-diff "$BATS_TEST_TMPDIR/base" "$BATS_TEST_TMPDIR/sampled"
	assert_success
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="summary") | [.requests,.changed,.only_base,.only_new]')" = '[1,0,1,0]' ]
}

# Bare trace objects carry no request id: two bare streams pair in order.
@test "kv-diff, kv-report: bare dynamo.router.decision.v1 streams read as decisions" {
	F="$KVP_ROOT/tests/fixtures/dynamo-trace/two-requests.jsonl"
	run --separate-stderr kvp kv-diff "$F" "$F"
	assert_success
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="summary") | [.requests,.changed]')" = '[2,0]' ]
	run --separate-stderr kvp kv-report -o "$BATS_TEST_TMPDIR/r.html" "$F"
	assert_success
	[ -z "$stderr" ]
	grep -q '<svg' "$BATS_TEST_TMPDIR/r.html"
}

# --- kv-diff --classify -------------------------------------------------------

# A knob: the fixture's traces carry overlap_score_credit 1.0 and
# prefill_load_scale 1.0; --overlap-weight 0 writes 0.0 for both. r2
# changed (see above); the first differing knob in Dynamo's trace order is
# overlap_score_credit. Against route-score's NDJSON decisions (which carry
# overlap_weight as prefill_load_scale, and temperature) the common knob
# that differs is prefill_load_scale.
@test "kv-diff --classify: a knob that differs is named" {
	head -4 "$IN" >"$BATS_TEST_TMPDIR/two"
	kvp route-score --block-size 4 --format dynamo-request-trace --overlap-weight 0 \
		"$BATS_TEST_TMPDIR/two" >"$BATS_TEST_TMPDIR/new"
	run --separate-stderr kvp kv-diff --classify --fail-if 'knob_changed>0' \
		"$KVP_ROOT/tests/fixtures/dynamo-trace/request-end.jsonl" "$BATS_TEST_TMPDIR/new"
	assert_failure 1
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="diff") | [.request_id,.cause,.knob]')" = '["r2","knob","overlap_score_credit"]' ]
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="summary") | [.index_diverged,.load_diverged,.knob_changed]')" = '[0,0,1]' ]
	kvp route-score --block-size 4 --overlap-weight 0 "$BATS_TEST_TMPDIR/two" >"$BATS_TEST_TMPDIR/new.ndjson"
	run --separate-stderr kvp kv-diff --classify \
		"$KVP_ROOT/tests/fixtures/dynamo-trace/request-end.jsonl" "$BATS_TEST_TMPDIR/new.ndjson"
	assert_success
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="diff") | [.cause,.knob]')" = '["knob","prefill_load_scale"]' ]
}

# The index: without worker 1's store every overlap is 0; r1 (w1 and w2
# at 3 + 3 = 6, a tie) stays on w1 with overlap 0 instead of 2: the
# candidates' overlaps differ. The load: a load record on w1 (P 40: at
# W 1, (40 + 12)/4 − 2 = 11, + 3 = 14 against w2's 6) sends r1 to w2 with
# the same overlaps (2, 0) on both sides; r2 follows (w1 14 again, w2
# (12 + 12)/4 + 3 + 3 = 12): two load divergences.
@test "kv-diff --classify: the index diverged, or only the load" {
	head -4 "$IN" >"$BATS_TEST_TMPDIR/two"
	kvp route-score --block-size 4 "$BATS_TEST_TMPDIR/two" >"$BATS_TEST_TMPDIR/base"
	sed 2d "$BATS_TEST_TMPDIR/two" >"$BATS_TEST_TMPDIR/nostore"
	kvp route-score --block-size 4 --workers 2 "$BATS_TEST_TMPDIR/nostore" >"$BATS_TEST_TMPDIR/idx" 2>/dev/null
	run --separate-stderr kvp kv-diff --classify "$BATS_TEST_TMPDIR/base" "$BATS_TEST_TMPDIR/idx"
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="diff") | [.request_id,.cause]' | head -1)" = '["r1","index"]' ]
	{ printf '%s\n' '{"type":"load","worker_id":1,"active_prefill_tokens":40}'; cat "$BATS_TEST_TMPDIR/two"; } >"$BATS_TEST_TMPDIR/loaded"
	kvp route-score --block-size 4 "$BATS_TEST_TMPDIR/loaded" >"$BATS_TEST_TMPDIR/ld"
	run --separate-stderr kvp kv-diff --classify --format text "$BATS_TEST_TMPDIR/base" "$BATS_TEST_TMPDIR/ld"
	assert_success
	assert_line --partial '"r1"'
	[[ "$(printf '%s\n' "$output" | grep '"r1"')" == *"worker overlap (load)" ]]
	assert_line --regexp '^  load_diverged +2$'
	# without --classify: the same records and summary as before
	run --separate-stderr kvp kv-diff "$BATS_TEST_TMPDIR/base" "$BATS_TEST_TMPDIR/ld"
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="diff") | has("cause")' | sort -u)" = false ]
	[ "$(printf '%s\n' "$output" | jq -c 'select(.rec=="summary") | has("load_diverged")')" = false ]
}

# Dynamo's sampling (selector.rs sampled_request): a request is traced
# when xxh3_64(request_id) / (2^64 - 1) < rate, every one at 1, none at 0.
# The expected ids come from libxxhash itself (tests/fixtures/kv-normalize/
# dynhash.py's ctypes binding), not from route-score.
@test "--trace-sample-rate: the requests Dynamo samples, by XXH3 of the id" {
	for i in $(seq 0 39); do printf '{"type":"request","request_id":"req-%d","block_hashes":[100]}\n' "$i"; done >"$BATS_TEST_TMPDIR/r"
	want=$(python3 - <<-'PY'
	import ctypes
	lib = ctypes.CDLL("libxxhash.so.0")
	lib.XXH3_64bits.restype = ctypes.c_uint64
	lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
	ids = ["req-%d" % i for i in range(40)]
	print(",".join(i for i in ids if lib.XXH3_64bits(i.encode(), len(i)) / float(2**64 - 1) < 0.3))
	PY
	)
	[ -n "$want" ] && [ "$want" != "$(seq -s, -f 'req-%g' 0 39)" ] # some, not all
	rs --block-size 4 --workers 2 --format dynamo-request-trace --trace-sample-rate 0.3 "$BATS_TEST_TMPDIR/r"
	assert_success
	[ -z "$stderr" ]
	[ "$(printf '%s\n' "$output" | jq -r 'select(.request.routing_decision) | .request.request_id' | paste -sd,)" = "$want" ]
	[ "$(printf '%s\n' "$output" | wc -l)" = 40 ] # every request_end is written
	rs --block-size 4 --workers 2 --format dynamo-trace --trace-sample-rate 0.3 "$BATS_TEST_TMPDIR/r"
	assert_success
	[ "$(printf '%s\n' "$output" | wc -l)" = "$(printf '%s\n' "$want" | tr , '\n' | wc -l)" ]
	rs --block-size 4 --workers 2 --format dynamo-trace --trace-sample-rate 0 "$BATS_TEST_TMPDIR/r"
	assert_success
	[ -z "$output" ]
	rs --block-size 4 --workers 2 --format dynamo-trace "$BATS_TEST_TMPDIR/r"
	[ "$(printf '%s\n' "$output" | wc -l)" = 40 ]
	rs --block-size 4 --workers 2 --trace-sample-rate 1.5 "$BATS_TEST_TMPDIR/r"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"--trace-sample-rate"* ]]
}
