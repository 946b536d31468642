#!/usr/bin/env bats
# kv-report: an HTML report of decision streams. Inputs: the hand-made
# streams of tests/fixtures/kv-report/ (see its README) and real
# route-score replays of the Mooncake sample. Expected numbers, by hand:
#
#   a: 4 decisions, r3 rejected: routed 3, rejected 1; hit rate
#      (4+10+0+1)/(10+10+5+5) = 15/30 = 0.500; reachable (max overlaps;
#      r3 has none) (6+10+0+1)/30 = 17/30 = 0.567; non-max 1 (r1), blocks
#      lost 2; routed w0 1, w1 2, w2 0 (summary's workers): balance
#      2/(3/3) = 2.00; no ttft_ms: TTFT cells "–"
#   b: labelled by its policy "p-b"; routed 4, rejected 0; hit
#      (0+10+5+1)/30 = 16/30 = 0.533; reachable (6+10+5+1)/30 = 22/30 =
#      0.733; non-max 1, lost 6; routed w0 2, w1 2: balance 1.00; ttft_ms
#      100, 200, 300, 400: p50 is the 2nd value (200), p99 the 4th (400),
#      each read back within one logarithmic bin (12%)
#   disagreements (overlap a vs b): r3 0 vs 5, r1 4 vs 0, r4 1 vs 1 but
#      worker 1 vs 0, r2 none: rows r3, r1, r4
load test_helper

F="$FIX/kv-report"

# summary_rows FILE: the summary table's rows as "cell|cell|...".
summary_rows() {
	grep '<tr class="run">' "$1" | sed -e 's/<\/td><td[^>]*>/|/g' -e 's/<[^>]*>//g'
}

# bats test_tags=valgrind
@test "summary table: the hand-worked numbers of two runs" {
	run -0 --separate-stderr kvp kv-report "$F/a.ndjson" "$F/b.ndjson" -o "$BATS_TEST_TMPDIR/r.html"
	[ -z "$output" ]
	[ -z "$stderr" ]
	run summary_rows "$BATS_TEST_TMPDIR/r.html"
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 'a.ndjson|4|3|1|0.500|0.567|1|2|2.00|–|–'
	assert_line --index 1 --regexp '^p-b\|4\|4\|0\|0\.533\|0\.733\|1\|6\|1\.00\|[0-9.]+\|[0-9.]+$'
	IFS='|' read -r -a c <<<"${lines[1]}"
	awk -v p50="${c[9]}" -v p99="${c[10]}" 'BEGIN { exit !(p50 > 200 / 1.13 && p50 < 200 * 1.13 && p99 > 400 / 1.13 && p99 < 400 * 1.13) }' ||
		fail "TTFT p50 ${c[9]} p99 ${c[10]} not within a bin of 200 and 400"
}

@test "the disagreement table: r3, r1, r4 with each run's choice" {
	run -0 --separate-stderr kvp kv-report --label A="$F/a.ndjson" --label B="$F/b.ndjson"
	rows=$(grep '<tr id="req-' <<<"$output" | sed -e 's/<\/td><td[^>]*>/|/g' -e 's/<br>/ /g' -e 's/<[^>]*>//g')
	[ "$(wc -l <<<"$rows")" -eq 3 ]
	[ "$(sed -n 1p <<<"$rows")" = '1|&quot;r3&quot;|rejected overlap 0 of 5 tie-break none|worker 0 · dp 0 overlap 5 of 5 (max 5)' ]
	[ "$(sed -n 2p <<<"$rows" | cut -d'|' -f2)" = '&quot;r1&quot;' ]
	[ "$(sed -n 3p <<<"$rows" | cut -d'|' -f2)" = '&quot;r4&quot;' ]
	[[ "$output" == *'<th>A</th><th>B</th>'* ]]
	[[ "$output" == *'<a href="#req-1">'* ]]
}

@test "self-contained: no script, no external reference; one <svg> per chart" {
	run -0 --separate-stderr kvp kv-report "$F/a.ndjson" "$F/b.ndjson"
	! grep -qiE '<script|<link|<img|<iframe|src=|@import|url\(' <<<"$output"
	! grep -qE 'https?://' <<<"$(grep -v 'xmlns=' <<<"$output")"
	[ "$(grep -o '<svg' <<<"$output" | wc -l)" -eq 4 ]
	for c in hit-rate routed active overlap; do
		grep -q "id=\"chart-$c\"" <<<"$output" || fail "no $c chart"
	done
}

@test "escaping: a hostile request id, label and title render as text" {
	evil='</script><svg onload=alert(1)>'
	for s in a b; do
		jq -c --arg e "$evil" 'if .request_id == "r3" then .request_id = $e else . end' "$F/$s.ndjson" >"$BATS_TEST_TMPDIR/$s.ndjson"
	done
	run -0 --separate-stderr kvp kv-report --title "<b>T</b> & \"q\"" \
		--label "$evil=$BATS_TEST_TMPDIR/a.ndjson" "$BATS_TEST_TMPDIR/b.ndjson"
	[[ "$output" != *'<svg onload'* ]]
	[[ "$output" != *'</script>'* ]]
	[[ "$output" != *'<b>T</b>'* ]]
	[[ "$output" == *'&quot;&lt;/script&gt;&lt;svg onload=alert(1)&gt;&quot;'* ]]
	[[ "$output" == *'<title>&lt;b&gt;T&lt;/b&gt; &amp; &quot;q&quot;</title>'* ]]
	[[ "$output" == *'<td>&lt;/script&gt;&lt;svg onload=alert(1)&gt;</td>'* ]]
	[ "$(grep -o '<svg' <<<"$output" | wc -l)" -eq 4 ]
}

@test "invalid UTF-8 and control bytes in a label become U+FFFD" {
	run -0 --separate-stderr kvp kv-report --label $'x\xff\x01y='"$F/a.ndjson"
	[[ "$output" == *$'<td>x\xef\xbf\xbd\xef\xbf\xbdy</td>'* ]]
}

@test "--format svg --chart NAME: one standalone SVG" {
	for c in hit-rate routed active overlap; do
		run -0 --separate-stderr kvp kv-report --format svg --chart "$c" "$F/a.ndjson" "$F/b.ndjson"
		assert_line --index 0 '<?xml version="1.0" encoding="UTF-8"?>'
		[[ "${lines[1]}" == '<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="chart-'"$c"'"'* ]]
		[ "$(grep -o '<svg' <<<"$output" | wc -l)" -eq 1 ]
		[[ "$output" == *'</svg>' ]]
	done
	run -2 --separate-stderr kvp kv-report --format svg "$F/a.ndjson"
	[[ "$stderr" == "kv-report: --format svg needs --chart NAME"* ]]
	run -2 --separate-stderr kvp kv-report --format svg --chart pie "$F/a.ndjson"
	[[ "$stderr" == "kv-report: --chart: unknown chart 'pie'"* ]]
}

@test "bad input: FILE:LINE and exit 1, no report; -k reports and goes on" {
	printf '%s\n{"rec":"decision",\n' "$(head -n1 "$F/a.ndjson")" >"$BATS_TEST_TMPDIR/bad.ndjson"
	run -1 --separate-stderr kvp kv-report "$BATS_TEST_TMPDIR/bad.ndjson" -o "$BATS_TEST_TMPDIR/r.html"
	[[ "$stderr" == *"bad.ndjson:2:"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/r.html" ]
	run -1 --separate-stderr kvp kv-report -k "$BATS_TEST_TMPDIR/bad.ndjson" -o "$BATS_TEST_TMPDIR/r.html"
	[ "$(summary_rows "$BATS_TEST_TMPDIR/r.html" | cut -d'|' -f2)" = 1 ]
	run -2 --separate-stderr kvp kv-report /nonexistent
	run -2 --separate-stderr kvp kv-report
}

# gen N: N decisions with timestamps, 16 workers, overlap i%7 of 8+i%9.
gen() {
	awk -v n="$1" 'BEGIN { for (i = 1; i <= n; i++)
		printf "{\"rec\":\"decision\",\"request_id\":%d,\"ts_ms\":%d,\"request_blocks\":%d,\"chosen\":{\"worker_id\":%d,\"dp_rank\":0},\"overlap_blocks\":%d,\"logit\":1.5,\"max_overlap\":{\"worker_id\":0,\"dp_rank\":0,\"blocks\":%d},\"non_max_overlap\":false,\"blocks_lost\":0}\n", i, i * 3, 8 + i % 9, i % 16, i % 7, i % 7 }'
}

@test "1,000,000 decisions: bounded output size and memory" {
	gen 10000 | kvp kv-report - -o "$BATS_TEST_TMPDIR/small.html"
	gen 1000000 | /usr/bin/time -f '%M' -o "$BATS_TEST_TMPDIR/rss" "$KVP_BIN/kv-report" - -o "$BATS_TEST_TMPDIR/big.html"
	small=$(wc -c <"$BATS_TEST_TMPDIR/small.html")
	big=$(wc -c <"$BATS_TEST_TMPDIR/big.html")
	[ "$big" -lt 100000 ] || fail "report of 1e6 decisions is $big bytes"
	[ "$big" -lt $((small * 2)) ] || fail "grew from $small to $big bytes"
	[ "$(cat "$BATS_TEST_TMPDIR/rss")" -lt 32768 ] || fail "max RSS $(cat "$BATS_TEST_TMPDIR/rss") KB"
	# the hit rate of i%7 over 8+i%9 is known exactly: sum over one period
	# of 63 (lcm 7, 9) is 189 / 756 = 0.25, and 1e6 = 15873 * 63 + 1
	assert_equal "$(summary_rows "$BATS_TEST_TMPDIR/big.html" | cut -d'|' -f2,5)" '1000000|0.250'
}

# The Mooncake sample replayed under three policies (real route-score
# output); each run is labelled by its records' policy.
replay3() {
	local t="$FIX/mooncake/synthetic_trace_head500.jsonl" d=$1 p
	for p in dynamo sglang-cache-aware round-robin; do
		kvp route-score --trace mooncake --workers 4 --approx --policy "$p" "$t" >"$d/$p.ndjson"
	done
	kvp kv-report --title "Mooncake sample: three policies" "$d/dynamo.ndjson" \
		"$d/sglang-cache-aware.ndjson" "$d/round-robin.ndjson" -o "$d/report.html"
}

@test "Mooncake replay: the dynamo row matches route-score's own summary" {
	replay3 "$BATS_TEST_TMPDIR"
	want=$(tail -n1 "$BATS_TEST_TMPDIR/dynamo.ndjson" |
		jq -r '[.requests, .routed, .no_candidate, (.prefix_hit_rate * 1000 | round / 1000), (.reachable_hit_rate * 1000 | round / 1000), .non_max_overlap, .blocks_lost] | map(tostring) | join("|")')
	got=$(summary_rows "$BATS_TEST_TMPDIR/report.html" | sed -n 1p | cut -d'|' -f2-8 |
		awk -F'|' -v OFS='|' '{ $4 += 0; $5 += 0; print }')
	assert_equal "$got" "$want"
}

@test "real browser: headless Chromium renders the Mooncake report (screenshot and DOM)" {
	d=$BATS_TEST_TMPDIR
	replay3 "$d"
	export HOME="$d" XDG_CONFIG_HOME="$d" XDG_CACHE_HOME="$d"
	timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$d/profile" --screenshot="$d/shot.png" --window-size=1280,2400 \
		"file://$d/report.html" 2>/dev/null
	read -r w h colours < <(python3 "$KVP_ROOT/tests/png_info.py" "$d/shot.png")
	[ "$w" -eq 1280 ] && [ "$h" -eq 2400 ] || fail "screenshot is ${w}x$h"
	[ "$colours" -gt 50 ] || fail "screenshot looks blank ($colours colours)"
	timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$d/profile" \
		--dump-dom "file://$d/report.html" 2>/dev/null >"$d/dom.html"
	[ "$(grep -o '<svg' "$d/dom.html" | wc -l)" -eq 4 ]
	for c in hit-rate routed active overlap; do
		grep -q "id=\"chart-$c\"" "$d/dom.html" || fail "DOM lacks the $c chart"
	done
	[ "$(grep -o '<tr class="run">' "$d/dom.html" | wc -l)" -eq 3 ]
	grep -q '<td>dynamo</td>' "$d/dom.html"
	grep -q '<td>sglang-cache-aware</td>' "$d/dom.html"
	grep -q '<td>round-robin</td>' "$d/dom.html"
}

# Bidi controls, UTF-8: U+202E RLO, U+2067 RLI, U+200F RLM.
RLO=$'\xe2\x80\xae' RLI=$'\xe2\x81\xa7' RLM=$'\xe2\x80\x8f'

# bidi_ids DIR: DIR/a.ndjson and DIR/b.ndjson, the fixtures with request
# id r1 spelled r1<RLO>def.
bidi_ids() {
	local f
	for f in a b; do
		jq -c --arg c "$RLO" 'if .request_id == "r1" then .request_id = "r1\($c)def" else . end' \
			"$F/$f.ndjson" >"$1/$f.ndjson"
	done
}

@test "bidi controls in titles, labels and request ids are shown by name, never passed through" {
	d=$BATS_TEST_TMPDIR
	bidi_ids "$d"
	run -0 --separate-stderr kvp kv-report --title "T${RLO}def" --label "abc${RLI}def=$d/a.ndjson" \
		--label "x${RLM}y=$d/b.ndjson" -o "$d/r.html"
	# none of U+202A..E, U+2066..9, U+200E/F, U+061C in the page
	! LC_ALL=C grep -qP '\xe2\x80[\xaa-\xae\x8e\x8f]|\xe2\x81[\xa6-\xa9]|\xd8\x9c' "$d/r.html" ||
		fail "a bidi control reached the page"
	grep -q '<h1>T\[U+202E\]def</h1>' "$d/r.html"
	grep -q '<td>abc\[U+2067\]def</td>' "$d/r.html"
	grep -q '<td>x\[U+200F\]y</td>' "$d/r.html"
	grep -q '<a href="#req-[0-9]*">&quot;r1\[U+202E\]def&quot;</a>' "$d/r.html"
}

@test "long legend labels are cut to their slot with a tooltip of the whole label" {
	d=$BATS_TEST_TMPDIR
	run -0 --separate-stderr kvp kv-report --label "a-policy-with-a-rather-long-descriptive-name=$F/a.ndjson" \
		--label "p-b=$F/b.ndjson" -o "$d/r.html"
	grep -q '<g class="legend"><title>a-policy-with-a-rather-long-descriptive-name</title>' "$d/r.html"
	# 190 px at 12 px of DejaVu Sans's widths, the ellipsis included
	grep -q '<text x="102" y="14" font-size="12">a-policy-with-a-rather-long-d…</text>' "$d/r.html"
}

@test "real browser: bidi labels render in logical order and no two chart texts overlap" {
	d=$BATS_TEST_TMPDIR
	bidi_ids "$d"
	cp "$d/a.ndjson" "$d/c.ndjson"
	cp "$d/b.ndjson" "$d/e.ndjson"
	# four legend slots of 220 px in a row: a long label, the widest
	# letters, a bidi override, a bidi isolate
	kvp kv-report --title "T${RLO}def" --label "a-policy-with-a-rather-long-descriptive-name=$d/a.ndjson" \
		--label "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWW=$d/b.ndjson" --label "abc${RLO}def=$d/c.ndjson" \
		--label "xyz${RLI}def=$d/e.ndjson" -o "$d/r.html"
	{ cat "$d/r.html"; printf '<script>\n'; cat "$KVP_ROOT/tests/report_probe.js"; printf '</script>\n'; } >"$d/probe.html"
	export HOME="$d" XDG_CONFIG_HOME="$d" XDG_CACHE_HOME="$d"
	timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$d/profile" \
		--window-size=1280,2400 --dump-dom "file://$d/probe.html" 2>/dev/null >"$d/dom.html"
	sed -n '/<pre id="probe">/,/<\/pre>/p' "$d/dom.html" | sed 's/<[^>]*>//g' >"$d/probe.txt"
	# h1, the summary rows, the disagreement headers and the request id,
	# each legend: every "def" rendered left to right
	[ "$(grep -c '^order ' "$d/probe.txt")" -ge 10 ] || fail "$(cat "$d/probe.txt")"
	! grep '^order .* reversed' "$d/probe.txt" || fail "text rendered reversed"
	[ "$(grep -c '^chart .* overlaps 0$' "$d/probe.txt")" -eq 4 ] || fail "$(grep -v '^order' "$d/probe.txt")"
}

# events_rows FILE: the --events table's rows as "cell|cell|...".
events_rows() {
	sed -n '/<table class="events">/,/<\/table>/p' "$1" | grep '^<tr><td>' |
		sed -e 's/<\/td><td[^>]*>/|/g' -e 's/<[^>]*>//g'
}

@test "--events: the demo capture's events per type and worker, and its seq gap" {
	d=$BATS_TEST_TMPDIR
	kvp kv-decode "$FIX/demo/capture.jsonl" >"$d/dec.ndjson"
	# expected counts from jq and awk over the same records (independent
	# of the report's aggregation): per worker, events|stored|removed|
	# cleared|other|gaps|stale
	want=$(jq -r 'select(.rec=="event" or .rec=="gap") |
		"\(.worker_id) \(if .rec=="gap" then "gap" else .type end)"' "$d/dec.ndjson" |
		awk '{ w[$1]; t[$1" "$2]++; if ($2 != "gap") n[$1]++ }
		END { for (k in w) printf "worker %s · dp 0|%d|%d|%d|%d|0|%d|0\n", k, n[k],
			t[k" BlockStored"], t[k" BlockRemoved"], t[k" AllBlocksCleared"], t[k" gap"] }' | sort)
	run -0 --separate-stderr kvp kv-report --events "$d/dec.ndjson" -o "$d/ev.html"
	[ -z "$output" ] && [ -z "$stderr" ]
	assert_equal "$(events_rows "$d/ev.html" | grep '^worker' | sort)" "$want"
	# the demo capture skips one seq of worker 1
	[ "$(jq -r 'select(.rec=="gap") | .worker_id' "$d/dec.ndjson")" = 1 ]
	# worker 1's row holds the gap; the totals row sums the workers
	events_rows "$d/ev.html" | grep -q '^worker 1 · dp 0|.*|1|0$'
	[ "$(events_rows "$d/ev.html" | head -1)" = "all workers|8|5|2|1|0|1|0" ]
	# only the events section: two charts, no decision charts
	[ "$(grep -o '<svg' "$d/ev.html" | wc -l)" -eq 2 ]
	grep -q 'id="chart-events"' "$d/ev.html"
	grep -q 'id="chart-event-workers"' "$d/ev.html"
	grep -q 'events per second' "$d/ev.html"
}

@test "--events: kv-normalize's RouterEvents count the same types; with decisions the section follows the runs" {
	d=$BATS_TEST_TMPDIR
	kvp kv-decode "$FIX/demo/capture.jsonl" | kvp kv-normalize --block-size 4 >"$d/norm.ndjson"
	run -0 --separate-stderr kvp kv-report "$F/a.ndjson" --events "$d/norm.ndjson" -o "$d/r.html"
	# kv-normalize passes every event of the demo (5 stores, 2 removals,
	# 1 clear: the counts of the kv-decode test above)
	[ "$(events_rows "$d/r.html" | head -1 | cut -d'|' -f1-6)" = "all workers|8|5|2|1|0" ]
	[ "$(grep -o '<svg' "$d/r.html" | wc -l)" -eq 6 ]
	[ "$(grep -o '<tr class="run">' "$d/r.html" | wc -l)" -eq 1 ]
}

@test "--events: bad lines are FILE:LINE exit 1; --chart events needs --events (exit 2)" {
	d=$BATS_TEST_TMPDIR
	printf '{"rec":"event","type":"BlockStored","worker_id":1}\n{"x":1}\n' >"$d/bad.ndjson"
	run --separate-stderr kvp kv-report --events "$d/bad.ndjson" -o "$d/r.html"
	assert_failure 1
	[[ "$stderr" == *"bad.ndjson:2: not an event record"* ]]
	run --separate-stderr kvp kv-report -k --events "$d/bad.ndjson" -o "$d/r.html"
	assert_failure 1
	[ "$(events_rows "$d/r.html" | head -1)" = "all workers|1|1|0|0|0|0|0" ]
	run --separate-stderr kvp kv-report "$F/a.ndjson" --format svg --chart events
	assert_failure 2
	[[ "$stderr" == *"--chart events needs --events FILE"* ]]
	run --separate-stderr kvp kv-report --events "$d/bad.ndjson" --format svg --chart routed
	assert_failure 2
}

@test "brief records give the same summary row as full ones (hit rates, non-max, blocks lost)" {
	d=$BATS_TEST_TMPDIR
	t="$FIX/mooncake/synthetic_trace_head500.jsonl"
	kvp route-score --trace mooncake --workers 4 --approx "$t" >"$d/full.ndjson"
	kvp route-score --trace mooncake --workers 4 --approx --brief "$t" >"$d/brief.ndjson"
	run -0 --separate-stderr kvp kv-report --label full="$d/full.ndjson" -o "$d/f.html"
	run -0 --separate-stderr kvp kv-report --label full="$d/brief.ndjson" -o "$d/b.html"
	# columns 2-9: requests .. load balance
	assert_equal "$(summary_rows "$d/b.html" | cut -d'|' -f2-9)" "$(summary_rows "$d/f.html" | cut -d'|' -f2-9)"
	# and route-score's own summary agrees (the dynamo row test does the same for full records)
	[ "$(summary_rows "$d/b.html" | cut -d'|' -f3)" = "$(tail -n1 "$d/brief.ndjson" | jq .routed)" ]
}

@test "a rejected decision (route-score's reason string) counts as rejected" {
	d=$BATS_TEST_TMPDIR
	printf '%s\n' '{"rec":"decision","request_id":"a","request_blocks":4,"chosen":null,"overlap_blocks":0,"logit":null,"blocks_lost":0,"tie_count":0,"rejected":"AllEligibleWorkersOverloaded","overloaded":2}' \
		'{"rec":"decision","request_id":"b","request_blocks":4,"chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":2,"logit":1,"blocks_lost":1,"tie_count":1}' >"$d/r.ndjson"
	run -0 --separate-stderr kvp kv-report --label r="$d/r.ndjson" -o "$d/r.html"
	# 2 requests, 1 routed, 1 rejected; hit 2/8 = 0.250; reachable (2+1)/8 = 0.375; 1 non-max, 1 lost
	assert_equal "$(summary_rows "$d/r.html" | cut -d'|' -f2-8)" "2|1|1|0.250|0.375|1|1"
}

@test "simulated time: TTFT p50/p99 come from route-score's summary when decisions carry none" {
	d=$BATS_TEST_TMPDIR
	kvp route-score --trace mooncake --workers 4 --approx --prefill-tokens-per-s 20000 \
		--decode-tokens-per-s 2000 "$FIX/mooncake/synthetic_trace_head500.jsonl" >"$d/sim.ndjson"
	want=$(tail -n1 "$d/sim.ndjson" | jq -r '.simulated | "\(.ttft_p50_ms * 10 | round / 10)|\(.ttft_p99_ms * 10 | round / 10)"')
	run -0 --separate-stderr kvp kv-report "$d/sim.ndjson" -o "$d/r.html"
	got=$(summary_rows "$d/r.html" | cut -d'|' -f10-11 | awk -F'|' -v OFS='|' '{ $1 += 0; $2 += 0; print }')
	assert_equal "$got" "$want"
}
