#!/usr/bin/env bats
# kv-diff and kv-report on Dynamo's offline replay output (dynamo.replay
# --per-request-jsonl rows and --report-json), docs/spec/dynamo-replay.md §4.
# Inputs: tests/fixtures/dynamo-replay/ (see its README for the table of
# values). Every expected number is worked out by hand from that table
# (the spec's worked example, §4.5):
#
#   pairs: rows have no request_id, so row k is named k and pairs with
#     kvpipe's request k: 4 pairs. Request 3: kvpipe worker 0 overlap 3,
#     Dynamo worker 1 overlap 1 -> changed 1, overlap_changed 1.
#   hit rate: kvpipe (0+2+3+1)/(4+4+4+2) = 6/14; Dynamo reused/input
#     (0+32+16+8)/(64+64+64+32) = 56/224 = 0.25.
#   blocks lost (Dynamo): best 3 - selected 1 = 2 (request 3).
#   balance: kvpipe w0 2, w1 2 -> 1; Dynamo w0 1, w1 3 -> 3/(4/2) = 1.5.
#   reuse, --block-size 16: kvpipe tokens 0*16, 2*16, 3*16, pred 20 =
#     0, 32, 48, 20 vs reused 0, 32, 16, 8: 4 compared, 2 equal (0.5),
#     mean |diff| (0+0+32+12)/4 = 11, sum new - base = 56 - 100 = -44.
#     Without --block-size only request 4 (predicted 20 vs 8): 1, 0, 12,
#     -12.
#   Dynamo's router vs its engine (cache truth, NEW side): reported vs
#     reused 0/0, 32/32, 16/16, 16/8: 4, 3 exact (0.75), mean |diff| 2.
load test_helper

F="$FIX/dynamo-replay"

# summary FILE...: kv-diff's summary record for the arguments.
summary_of() {
	kvp kv-diff "$@" | tail -n 1
}

# bats test_tags=valgrind
@test "per-request rows against kvpipe's decisions: pairing, changes, hit rates, reuse" {
	run -0 --separate-stderr kvp kv-diff --block-size 16 "$F/kvpipe.ndjson" "$F/per-request.jsonl"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 '{"rec":"diff","request_id":3,"changes":["worker","overlap"],"base":{"chosen":{"worker_id":0,"dp_rank":0},"overlap_blocks":3,"rejected":false},"new":{"chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":1,"rejected":false}}'
	s=${lines[1]}
	[ "$(jq -c '[.requests, .changed, .overlap_changed, .differing, .only_base, .only_new]' <<<"$s")" = '[4,1,1,1,0,0]' ]
	jq -e '(.hit_rate_base - 6/14 | fabs) < 1e-12 and .hit_rate_new == 0.25' <<<"$s" >/dev/null || fail "$s"
	[ "$(jq -c '[.lost_overlap_base, .lost_overlap_new, .balance_base, .balance_new]' <<<"$s")" = '[0,2,1,1.5]' ]
	[ "$(jq -c '[.reuse_requests, .reuse_exact_fraction, .reuse_mean_abs_tokens, .reuse_tokens_delta]' <<<"$s")" = '[4,0.5,11,-44]' ]
	[ "$(jq -c '[.cache_truth_requests_base, .cache_truth_requests_new, .cache_truth_exact_fraction_new, .cache_truth_mean_abs_error_new]' <<<"$s")" = '[0,4,0.75,2]' ]
}

@test "without --block-size only a decision's predicted_cached_tokens is compared" {
	run -0 --separate-stderr summary_of "$F/kvpipe.ndjson" "$F/per-request.jsonl"
	[ -z "$stderr" ]
	[ "$(jq -c '[.reuse_requests, .reuse_exact_fraction, .reuse_mean_abs_tokens, .reuse_tokens_delta]' <<<"$output")" = '[1,0,12,-12]' ]
	# the pairing does not depend on it
	[ "$(jq -c '[.requests, .changed, .overlap_changed]' <<<"$output")" = '[4,1,1]' ]
}

@test "the reuse keys are absent without a replay row; default output unchanged" {
	run -0 --separate-stderr summary_of "$F/kvpipe.ndjson" "$F/kvpipe.ndjson"
	[ -z "$stderr" ]
	jq -e 'has("reuse_requests") | not' <<<"$output" >/dev/null || fail "$output"
	[ "$(jq -c '[.requests, .changed]' <<<"$output")" = '[4,0]' ]
}

@test "the report JSON, pretty or on one line, is read whole: its rows are the run" {
	want=$(summary_of --block-size 16 "$F/kvpipe.ndjson" "$F/per-request.jsonl")
	run -0 --separate-stderr summary_of --block-size 16 "$F/kvpipe.ndjson" "$F/report.json"
	[ -z "$stderr" ]
	assert_equal "$output" "$want"
	jq -c . "$F/report.json" >"$BATS_TEST_TMPDIR/one.json"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/one.json")" -eq 1 ]
	run -0 --separate-stderr summary_of --block-size 16 "$F/kvpipe.ndjson" "$BATS_TEST_TMPDIR/one.json"
	[ -z "$stderr" ]
	assert_equal "$output" "$want"
	# on either side
	run -0 --separate-stderr summary_of "$F/report.json" "$F/kvpipe.ndjson"
	[ -z "$stderr" ]
	[ "$(jq -c '[.requests, .changed, .cache_truth_requests_base]' <<<"$output")" = '[4,1,4]' ]
}

@test "a flat report (no per_request) has no decisions: every kvpipe request is only in BASE" {
	run -0 --separate-stderr kvp kv-diff "$F/kvpipe.ndjson" "$F/report-flat.json"
	[ -z "$stderr" ]
	[ "$(grep -c '"rec":"only"' <<<"$output")" -eq 4 ]
	[ "$(tail -n 1 <<<"$output" | jq -c '[.requests, .only_base, .requests_new]')" = '[0,4,0]' ]
}

@test "older rows: the worker is decode_worker_idx, the overlap is not compared" {
	run -0 --separate-stderr kvp kv-diff "$F/kvpipe.ndjson" "$F/per-request-old.jsonl"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 2 ]
	# request 3: worker 0 vs 1; its overlap (3 vs none) is not a change
	[ "$(jq -c '[.request_id, .changes]' <<<"${lines[0]}")" = '[3,["worker"]]' ]
	s=${lines[1]}
	[ "$(jq -c '[.requests, .changed, .overlap_changed, .lost_overlap_new]' <<<"$s")" = '[4,1,0,0]' ]
	# hit rate in tokens all the same; no router figure: no cache truth
	jq -e '.hit_rate_new == 0.25 and (has("cache_truth_requests_new") | not)' <<<"$s" >/dev/null || fail "$s"
}

@test "rows are named by their position: a missing row shifts the pairing" {
	sed 2d "$F/per-request.jsonl" >"$BATS_TEST_TMPDIR/three.jsonl"
	run -0 --separate-stderr kvp kv-diff "$F/kvpipe.ndjson" "$BATS_TEST_TMPDIR/three.jsonl"
	[ -z "$stderr" ]
	# rows 1, 3, 4 are named 1, 2, 3: 2 is kvpipe w1 ov 2 vs w1 ov 1
	# (overlap), 3 is w0 ov 3 vs w1 ov 1 (worker, overlap); 4 only in BASE
	[ "$(jq -sc '[.[] | select(.rec != "summary") | [.request_id, .changes // .stream]]' <<<"$output")" = '[[2,["overlap"]],[3,["worker","overlap"]],[4,"base"]]' ]
	[ "$(tail -n 1 <<<"$output" | jq -c '[.requests, .changed, .overlap_changed, .only_base]')" = '[3,1,2,1]' ]
}

@test "a row's request_id pairs by id" {
	jq -c '.request_id = "r\(.arrival_time_ms)"' "$F/per-request.jsonl" >"$BATS_TEST_TMPDIR/ids.jsonl"
	jq -c '.request_id = "r\(.arrival_time_ms)"' "$F/per-request.jsonl" | tac >"$BATS_TEST_TMPDIR/rev.jsonl"
	# the same rows in reverse order: duplicate ids ("r0") pair in order,
	# the rest by id; nothing changes but the duplicate pair's order
	run -0 --separate-stderr summary_of "$BATS_TEST_TMPDIR/ids.jsonl" "$BATS_TEST_TMPDIR/rev.jsonl"
	[ -z "$stderr" ]
	# r0 twice: rows 1, 2 vs rows 2, 1 -> both pairs differ (w0 ov 0 vs w1 ov 2)
	[ "$(jq -c '[.requests, .changed, .overlap_changed, .only_base, .only_new]' <<<"$output")" = '[4,2,2,0,0]' ]
}

@test "--fail-if gates on the reuse fields" {
	run -1 --separate-stderr kvp kv-diff --block-size 16 --fail-if 'reuse_exact_fraction < 0.9' "$F/kvpipe.ndjson" "$F/per-request.jsonl"
	[ "${#lines[@]}" -eq 2 ]
	[ "$stderr" = "kv-diff: --fail-if 'reuse_exact_fraction < 0.9' holds" ]
	run -0 --separate-stderr kvp kv-diff --block-size 16 --fail-if 'reuse_tokens_delta < -44' "$F/kvpipe.ndjson" "$F/per-request.jsonl"
	[ -z "$stderr" ]
}

@test "--block-size 0 is a usage error" {
	run -2 --separate-stderr kvp kv-diff --block-size 0 "$F/kvpipe.ndjson" "$F/per-request.jsonl"
	[ -z "$output" ]
	[[ "$stderr" == *"--block-size: must be at least 1"* ]]
}

@test "bad data: a truncated report, a row of the wrong type; -k goes on" {
	d=$BATS_TEST_TMPDIR
	head -n 20 "$F/report.json" >"$d/cut.json"
	run -1 --separate-stderr kvp kv-diff "$F/kvpipe.ndjson" "$d/cut.json"
	[ -z "$output" ]
	[[ "$stderr" == "kv-diff: $d/cut.json:1:"* ]] || fail "$stderr"
	jq '.per_request[1].reused_input_tokens = "many"' "$F/report.json" >"$d/bad.json"
	run -1 --separate-stderr kvp kv-diff "$F/kvpipe.ndjson" "$d/bad.json"
	[ -z "$output" ]
	[ "$stderr" = "kv-diff: $d/bad.json:1: per_request[1]: decision: \"reused_input_tokens\" has the wrong type" ]
	run -1 --separate-stderr kvp kv-diff -k "$F/kvpipe.ndjson" "$d/bad.json"
	[ "${stderr_lines[0]}" = "kv-diff: $d/bad.json:1: per_request[1]: decision: \"reused_input_tokens\" has the wrong type" ]
	# rows 1, 3, 4 read, still named 1, 3, 4: 3 pairs (request 3 the one
	# change, as in the whole file), request 2 only in BASE
	[ "$(tail -n 1 <<<"$output" | jq -c '[.requests, .changed, .differing, .only_base]')" = '[3,1,1,1]' ]
	# the same in the per-request file: line 2 bad, lines 3 and 4 keep
	# their names
	sed '2s/"reused_input_tokens":32/"reused_input_tokens":"many"/' "$F/per-request.jsonl" >"$d/bad.jsonl"
	run -1 --separate-stderr kvp kv-diff -k "$F/kvpipe.ndjson" "$d/bad.jsonl"
	[ "${stderr_lines[0]}" = "kv-diff: $d/bad.jsonl:2: decision: \"reused_input_tokens\" has the wrong type" ]
	[ "$(tail -n 1 <<<"$output" | jq -c '[.requests, .changed, .differing, .only_base]')" = '[3,1,1,1]' ]
	# a pretty-printed object that is no report is not silently empty
	printf '{\n  "rec": "decision"\n}\n' >"$d/other.json"
	run -1 --separate-stderr kvp kv-diff "$F/kvpipe.ndjson" "$d/other.json"
	[ -z "$output" ]
	[ "$stderr" = "kv-diff: $d/other.json:1: not a Dynamo replay report: no summary figure and no per_request rows" ]
	sed '3s/"input_length":64/"input_length":-1/' "$F/per-request.jsonl" >"$d/neg.jsonl"
	run -1 --separate-stderr kvp kv-diff "$F/kvpipe.ndjson" "$d/neg.jsonl"
	[ "$stderr" = "kv-diff: $d/neg.jsonl:3: decision: \"input_length\" has the wrong type" ]
}

# summary_rows FILE: kv-report's summary table rows as "cell|cell|...".
summary_rows() {
	grep '<tr class="run">' "$1" | sed -e 's/<\/td><td[^>]*>/|/g' -e 's/<[^>]*>//g'
}

# bats test_tags=valgrind
@test "kv-report: a replay's rows and its report as runs beside kvpipe's" {
	d=$BATS_TEST_TMPDIR
	run -0 --separate-stderr kvp kv-report "$F/kvpipe.ndjson" "$F/per-request.jsonl" "$F/report.json" "$F/report-flat.json" -o "$d/r.html"
	[ -z "$output" ]
	[ -z "$stderr" ]
	run summary_rows "$d/r.html"
	[ "${#lines[@]}" -eq 4 ]
	# kvpipe: hit 6/14 = 0.429, reachable the same (no blocks lost)
	assert_line --index 0 'dynamo|4|4|0|0.429|0.429|0|0|1.00|–|–'
	# rows: 56/224 = 0.250 in tokens (reachable the same); non-max 1,
	# lost 2 (request 3); balance 1.5; TTFT 10, 20, 30, 40: p50 the 2nd
	# (20), p99 the 4th (40), each within a logarithmic bin (12%)
	for k in 1 2; do
		IFS='|' read -r -a c <<<"${lines[$k]}"
		assert_equal "${c[*]:1:8}" '4 4 0 0.250 0.250 1 2 1.50'
		awk -v p50="${c[9]}" -v p99="${c[10]}" 'BEGIN { exit !(p50 > 20 / 1.13 && p50 < 20 * 1.13 && p99 > 40 / 1.13 && p99 < 40 * 1.13) }' ||
			fail "TTFT p50 ${c[9]} p99 ${c[10]}"
	done
	assert_line --index 1 --regexp '^per-request\.jsonl\|'
	assert_line --index 2 --regexp '^report\.json\|'
	# the flat report: no decisions; its median and p99 TTFT, exact
	assert_line --index 3 'report-flat.json|0|0|0|0.000|0.000|0|0|0.00|25.0|39.7'
	# the reports' own figures, as written in them
	rows=$(grep '<tr class="replay-run">' "$d/r.html" | sed -e 's/<\/td><td[^>]*>/|/g' -e 's/<[^>]*>//g')
	assert_equal "$rows" 'report.json|4|4|0.250|0.250|25.0|25.0|39.7|35.0
report-flat.json|4|4|0.250|0.250|25.0|25.0|39.7|35.0'
	grep -q 'Dynamo replay runs (rows of dynamo.replay): hit rate = reused input tokens / input tokens' "$d/r.html"
}

@test "kv-report: the disagreement table shows a row in tokens; no replay table without a report" {
	d=$BATS_TEST_TMPDIR
	run -0 --separate-stderr kvp kv-report --label K="$F/kvpipe.ndjson" --label D="$F/per-request.jsonl"
	[ -z "$stderr" ]
	rows=$(grep '<tr id="req-' <<<"$output" | sed -e 's/<\/td><td[^>]*>/|/g' -e 's/<br>/ /g' -e 's/<[^>]*>//g')
	# only request 3 differs (worker 0 overlap 3 vs worker 1 overlap 1)
	assert_equal "$rows" '1|3|worker 0 · dp 0 overlap 3 of 4 logit 5|worker 1 · dp 0 overlap 1 reused 16 of 64 tokens (max 3) not the max overlap'
	[[ "$output" != *'Dynamo replay reports'* ]]
	# a kvpipe-only page has neither the table nor the note
	run -0 --separate-stderr kvp kv-report "$F/kvpipe.ndjson"
	[[ "$output" != *'Dynamo replay'* ]]
}

@test "kv-report: a truncated report is bad data naming line 1" {
	head -n 20 "$F/report.json" >"$BATS_TEST_TMPDIR/cut.json"
	run -1 --separate-stderr kvp kv-report "$F/kvpipe.ndjson" "$BATS_TEST_TMPDIR/cut.json"
	[ -z "$output" ]
	[[ "$stderr" == "kv-report: $BATS_TEST_TMPDIR/cut.json:1:"* ]] || fail "$stderr"
}

@test "kv-report in a real browser: a page with replay runs renders its charts without overlaps" {
	d=$BATS_TEST_TMPDIR
	kvp kv-report --label "Dynamo replay=$F/report.json" "$F/kvpipe.ndjson" "$F/per-request-old.jsonl" "$F/report.json" -o "$d/r.html"
	{ cat "$d/r.html"; printf '<script>\n'; cat "$KVP_ROOT/tests/report_probe.js"; printf '</script>\n'; } >"$d/probe.html"
	export HOME="$d" XDG_CONFIG_HOME="$d" XDG_CACHE_HOME="$d"
	timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$d/profile" \
		--window-size=1280,2400 --dump-dom "file://$d/probe.html" 2>/dev/null >"$d/dom.html"
	sed -n '/<pre id="probe">/,/<\/pre>/p' "$d/dom.html" | sed 's/<[^>]*>//g' >"$d/probe.txt"
	# the four charts (hit rate, routed, active, overlap), none with
	# overlapping texts
	[ "$(grep -c '^chart .* overlaps 0$' "$d/probe.txt")" -eq 4 ] || fail "$(cat "$d/probe.txt")"
	# the replay table rendered: its row is in the DOM Chromium built
	grep -q '<tr class="replay-run"><td>Dynamo replay</td><td>4</td>' "$d/dom.html"
}
