#!/usr/bin/env bats
# kv-diff: two decision streams compared, --fail-if as an exit status.
# Inputs are the hand-made streams in tests/fixtures/kv-diff/ (see its
# README); every expected number below is worked out by hand from them:
#
#   base:       overlap 4+2+0+5 = 11 of 10+10+5+5 = 30 blocks: hit 11/30;
#               r3 rejected (1); blocks_lost 1; routed w0 1, w1 2, w2 0
#               (summary workers 0..2): balance = max/mean = 2/(3/3) = 2
#   one-change: r2 on w0 instead of w1, same overlap: hit 11/30, routed
#               w0 2, w1 1, w2 0: balance 2; changed 1 of 4 = 0.25
#   worse:      r1 overlap 1 (lost 3), r4 rejected: hit (1+2+0+0)/30 = 0.1,
#               delta 0.1 - 11/30 = -0.2666...; rejected 2 (delta 1);
#               lost 3+1 = 4 (delta 3); routed w0 1, w1 1, w2 0: balance
#               1/(2/3) = 1.5 (delta -0.5); chosen worker differs for r4
#               only: changed 1, 0.25; differing r1 (overlap) and r4
#               (worker, overlap, rejected): 2
#   missing:    r1, r5 (new), r2, r3; no r4: 3 paired, r5 only in NEW,
#               r4 only in BASE; hit (4+0+2+0)/(10+2+10+5) = 6/27
load test_helper

F="$FIX/kv-diff"

# close VALUE WANT: |VALUE - WANT| < 1e-12 (jq does the arithmetic).
close() {
	jq -en --argjson v "$1" --argjson w "$2" '($v - $w) | fabs < 1e-12' >/dev/null ||
		fail "got $1, want $2"
}

# bats test_tags=valgrind
@test "identical streams: exit 0, no diff records, one summary with zero deltas" {
	run -0 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/base.ndjson"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 1 ]
	s=${lines[0]}
	[ "$(jq -r .rec <<<"$s")" = summary ]
	[ "$(jq -c '[.requests, .changed, .changed_fraction, .hit_rate_delta, .rejected_delta, .lost_overlap_delta, .balance_delta]' <<<"$s")" = "[4,0,0,0,0,0,0]" ]
	close "$(jq .hit_rate_base <<<"$s")" "$(jq -n '11/30')"
	[ "$(jq .balance_base <<<"$s")" = 2 ]
}

@test "summary keys: the issue's list, in order, first" {
	run -0 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/one-change.ndjson"
	keys=$(tail -n1 <<<"$output" | jq -c 'keys_unsorted[0:10]')
	[ "$keys" = '["rec","requests","changed","changed_fraction","hit_rate_base","hit_rate_new","hit_rate_delta","rejected_delta","lost_overlap_delta","balance_delta"]' ]
}

# bats test_tags=valgrind
@test "one changed choice: one diff record naming the worker change, fraction 0.25" {
	run -0 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/one-change.ndjson"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 '{"rec":"diff","request_id":"r2","changes":["worker"],"base":{"chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":2,"rejected":false},"new":{"chosen":{"worker_id":0,"dp_rank":0},"overlap_blocks":2,"rejected":false}}'
	s=${lines[1]}
	[ "$(jq -c '[.requests, .changed, .changed_fraction, .differing, .hit_rate_delta, .balance_delta]' <<<"$s")" = "[4,1,0.25,1,0,0]" ]
}

@test "a worse run: hit rate, rejection, lost overlap and balance deltas" {
	run -0 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/worse.ndjson"
	[ "${#lines[@]}" -eq 3 ]
	assert_line --index 0 --partial '"request_id":"r1","changes":["overlap"]'
	assert_line --index 1 --partial '"request_id":"r4","changes":["worker","overlap","rejected"]'
	assert_line --index 1 --partial '"new":{"chosen":null,"overlap_blocks":0,"rejected":true}'
	s=${lines[2]}
	[ "$(jq -c '[.changed, .changed_fraction, .differing, .rejected_delta, .lost_overlap_delta, .balance_delta, .overlap_changed, .rejection_changed]' <<<"$s")" = "[1,0.25,2,1,3,-0.5,2,1]" ]
	close "$(jq .hit_rate_new <<<"$s")" 0.1
	close "$(jq .hit_rate_delta <<<"$s")" "$(jq -n '0.1 - 11/30')"
}

@test "a missing request and an extra one are both reported, never dropped" {
	run -0 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/missing.ndjson"
	[ "${#lines[@]}" -eq 3 ]
	assert_line --index 0 '{"rec":"only","request_id":"r5","stream":"new","new":{"chosen":{"worker_id":2,"dp_rank":0},"overlap_blocks":0,"rejected":false}}'
	assert_line --index 1 '{"rec":"only","request_id":"r4","stream":"base","base":{"chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":5,"rejected":false}}'
	s=${lines[2]}
	[ "$(jq -c '[.requests, .only_base, .only_new, .requests_base, .requests_new, .changed]' <<<"$s")" = "[3,1,1,4,4,0]" ]
	close "$(jq .hit_rate_new <<<"$s")" "$(jq -n '6/27')"
}

@test "no request_id: decisions pair by order" {
	strip() { jq -c 'select(.rec == "decision") | del(.request_id)' "$1"; }
	run -0 --separate-stderr kvp kv-diff <(strip "$F/base.ndjson") <(strip "$F/one-change.ndjson")
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --partial '{"rec":"diff","index":2,"changes":["worker"]'
}

@test "duplicate request ids pair in order" {
	base=$'{"rec":"decision","request_id":7,"request_blocks":1,"chosen":{"worker_id":0},"overlap_blocks":0}\n{"rec":"decision","request_id":7,"request_blocks":1,"chosen":{"worker_id":1},"overlap_blocks":0}'
	new=$'{"rec":"decision","request_id":7,"request_blocks":1,"chosen":{"worker_id":0},"overlap_blocks":0}\n{"rec":"decision","request_id":7,"request_blocks":1,"chosen":{"worker_id":2},"overlap_blocks":0}'
	run -0 --separate-stderr kvp kv-diff <(echo "$base") <(echo "$new")
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --partial '"request_id":7,"changes":["worker"],"base":{"chosen":{"worker_id":1,'
}

@test "spaced JSON (json-c path) reads the same as compact JSON" {
	run -0 --separate-stderr kvp kv-diff <(jq . -c "$F/base.ndjson" | sed 's/,/ , /g') "$F/worse.ndjson"
	want=$(kvp kv-diff "$F/base.ndjson" "$F/worse.ndjson")
	[ "$output" = "$want" ]
}

# Every operator, once holding (exit 1, the expression named on stderr) and
# once not (exit 0), over base vs worse: hit_rate_delta -0.2667,
# rejected_delta 1, changed_fraction 0.25, lost_overlap_delta 3.
@test "--fail-if <: holds → exit 1 and stderr names it; does not hold → exit 0" {
	run -1 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/worse.ndjson" --fail-if 'hit_rate_delta < -0.2'
	[ "$stderr" = "kv-diff: --fail-if 'hit_rate_delta < -0.2' holds" ]
	[ "$(tail -n1 <<<"$output" | jq -r .rec)" = summary ]
	run -0 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/worse.ndjson" --fail-if 'hit_rate_delta < -0.3'
	[ -z "$stderr" ]
}

@test "--fail-if <= > >= == !=" {
	B="$F/base.ndjson" W="$F/worse.ndjson"
	run -1 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'rejected_delta <= 1'
	run -0 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'rejected_delta <= 0'
	run -1 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'changed_fraction > 0.2'
	run -0 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'changed_fraction > 0.25'
	run -1 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'changed_fraction >= 0.25'
	run -0 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'changed_fraction >= 0.26'
	run -1 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'lost_overlap_delta == 3'
	run -0 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'lost_overlap_delta == 2'
	run -1 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'lost_overlap_delta != 2'
	run -0 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'lost_overlap_delta != 3'
	run -1 --separate-stderr kvp kv-diff "$B" "$W" --fail-if '0 < rejected_delta'
}

@test "--fail-if && || and parentheses; repeated --fail-if: any holding fails" {
	B="$F/base.ndjson" W="$F/worse.ndjson"
	run -0 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'rejected_delta > 0 && changed > 1'
	run -1 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'rejected_delta > 0 || changed > 1'
	run -1 --separate-stderr kvp kv-diff "$B" "$W" --fail-if '(changed > 1 || rejected_delta > 0) && only_new == 0'
	run -1 --separate-stderr kvp kv-diff "$B" "$W" --fail-if 'changed > 5' --fail-if 'rejected_delta > 0'
	[ "$stderr" = "kv-diff: --fail-if 'rejected_delta > 0' holds" ]
	run -0 --separate-stderr kvp kv-diff "$B" "$F/base.ndjson" --fail-if 'hit_rate_delta < -0.005' --fail-if 'changed_fraction > 0.05' --fail-if 'rejected_delta > 0'
}

@test "a malformed --fail-if: exit 2 before reading, the position named, nothing on stdout" {
	run -2 --separate-stderr kvp kv-diff "$F/base.ndjson" /nonexistent --fail-if 'hit_rate_delta <'
	[ -z "$output" ]
	assert_equal "${stderr%%$'\n'*}" "kv-diff: --fail-if 'hit_rate_delta <': position 17: expected a field name or a number at the end"
	run -2 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/base.ndjson" --fail-if 'hit_rate < 0'
	assert_equal "${stderr%%$'\n'*}" "kv-diff: --fail-if 'hit_rate < 0': position 1: unknown field at 'hit_rate < 0'"
	run -2 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/base.ndjson" --fail-if 'changed 5'
	assert_equal "${stderr%%$'\n'*}" "kv-diff: --fail-if 'changed 5': position 9: expected a comparison operator (< <= > >= == !=) at '5'"
	run -2 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/base.ndjson" --fail-if 'changed > 1 junk'
	assert_equal "${stderr%%$'\n'*}" "kv-diff: --fail-if 'changed > 1 junk': position 13: expected '&&', '||' or the end at 'junk'"
	run -2 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/base.ndjson" --fail-if '(changed > 1'
	assert_equal "${stderr%%$'\n'*}" "kv-diff: --fail-if '(changed > 1': position 13: expected ')' at the end"
}

@test "--fail-if: parentheses nested past 32 are a usage error, not a stack overflow" {
	local open close
	open=$(printf '%.0s(' $(seq 32)) close=$(printf '%.0s)' $(seq 32))
	run -1 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/worse.ndjson" --fail-if "${open}rejected_delta > 0${close}"
	open=$(printf '%.0s(' $(seq 40000)) close=$(printf '%.0s)' $(seq 40000))
	run -2 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/base.ndjson" --fail-if "${open}changed > 1${close}"
	[ -z "$output" ]
	assert_equal "${stderr%%$'\n'*}" "kv-diff: --fail-if '$(printf '%.0s(' $(seq 60))...': position 33: parentheses nested deeper than 32 at '(((((((((((('"
}

@test "--format text: one row per difference, then the summary table" {
	run -0 --separate-stderr kvp kv-diff --format text "$F/base.ndjson" "$F/missing.ndjson"
	assert_line --index 0 --regexp '^request +base +overlap +new +overlap +changes$'
	assert_line --index 1 --regexp '^"r5" +- +- +2\.0 +0 +only in new$'
	assert_line --index 2 --regexp '^"r4" +1\.0 +5 +- +- +only in base$'
	assert_line --regexp '^  changed_fraction +0\.000000$'
	assert_line --regexp '^  only_base +1$'
}

@test "BASE from stdin; a bad line is exit 1 with FILE:LINE, -k skips it" {
	run -0 --separate-stderr kvp kv-diff - "$F/base.ndjson" <"$F/base.ndjson"
	bad=$(sed '2s/.*/{"rec":"decision","request_id":"r2","overlap_blocks":"x"}/' "$F/base.ndjson")
	run -1 --separate-stderr kvp kv-diff <(echo "$bad") "$F/base.ndjson"
	[ -z "$output" ]
	[[ "$stderr" == *':2: decision: "overlap_blocks" has the wrong type'* ]]
	run -1 --separate-stderr kvp kv-diff -k <(echo "$bad") "$F/base.ndjson"
	assert_line --index 0 --partial '"request_id":"r2","stream":"new"'
}

@test "usage errors: one file, three files, both stdin → exit 2" {
	run -2 --separate-stderr kvp kv-diff "$F/base.ndjson"
	[ -z "$output" ]
	run -2 --separate-stderr kvp kv-diff "$F/base.ndjson" "$F/base.ndjson" "$F/base.ndjson"
	run -2 --separate-stderr kvp kv-diff - -
	[[ "$stderr" == "kv-diff: BASE and NEW cannot both be stdin"* ]]
}
