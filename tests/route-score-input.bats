#!/usr/bin/env bats
# route-score's input side and brief output: --brief, the fast path
# (agreement with the json-c path, memory on a huge Mooncake line), strict
# timestamps and input_length, kv-decode gap records carried through
# kv-normalize, the time merge of any number of streams (kv-normalize's
# x.ts_ms and Dynamo's KvRecorder format), --max-active-blocks, errors in
# the summary and the first failed write.
# Expected values are worked out by hand from the records (each test says
# how) or come from the sample capture's own contents.
load test_helper

T12='[0,1,2,3,4,5,6,7,8,9,10,11]'
L0=9143094415614847814
L1=12124091508212882195
L2=1088361764653601668
EX="$KVP_ROOT/examples"

rs() { run --separate-stderr kvp route-score "$@"; }
field() { printf '%s\n' "$output" | jq -c "select(.rec==\"decision\") | $1"; }
summary() { printf '%s\n' "$output" | jq -c "select(.rec==\"summary\") | $1"; }

setup() {
	IN="$BATS_TEST_TMPDIR/in.ndjson"
}

# events.ndjson from the sample capture, as in the README
events() {
	kvp kv-decode "$EX/capture.jsonl" | kvp kv-normalize --block-size 4 "$@"
}

# bats test_tags=valgrind
@test "--brief: request id, ts, blocks, policy, chosen worker, overlap, logit, blocks lost, ties; no per-candidate arrays" {
	# worker 1 holds L0 L1 L2, worker 2 only L0; the request's 12 tokens are
	# 3 blocks. By hand (docs/spec/route-score.md §3.1, W 1): worker 1
	# logit = max(0, 12/4 - 3) + 3 decode blocks = 3; worker 2:
	# (3 - 1) + 3 = 5; worker 1 wins.
	{
		echo "{\"type\":\"stored\",\"worker_id\":1,\"event_id\":1,\"blocks\":[{\"block_hash\":1,\"tokens_hash\":$L0},{\"block_hash\":2,\"tokens_hash\":$L1},{\"block_hash\":3,\"tokens_hash\":$L2}]}"
		echo "{\"type\":\"stored\",\"worker_id\":2,\"event_id\":1,\"blocks\":[{\"block_hash\":4,\"tokens_hash\":$L0}]}"
		echo "{\"type\":\"request\",\"request_id\":\"r1\",\"ts_ms\":7,\"tokens\":$T12}"
		echo "{\"request_id\":5,\"tokens\":$T12}"
	} >"$IN"
	rs --block-size 4 --brief "$IN"
	assert_success
	# worker 1 is the max-overlap worker too (0 blocks lost); one candidate
	# has the lowest logit (tie_count 1)
	assert_line --index 0 '{"rec":"decision","request_id":"r1","ts_ms":7,"request_blocks":3,"policy":"dynamo","chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":3,"logit":3,"blocks_lost":0,"tie_count":1}'
	# The second request (an integer id, no ts): r1's 3 blocks are active on
	# worker 1 and are the same blocks, so 0 new ones: 0 prefill + 3 decode
	# = 3; worker 2 again (3 - 1) + 3 = 5.
	assert_line --index 1 '{"rec":"decision","request_id":5,"request_blocks":3,"policy":"dynamo","chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":3,"logit":3,"blocks_lost":0,"tie_count":1}'
	[ "$(summary '[.requests, .routed, .hit_blocks]')" = '[2,2,6]' ]
	# the full record has the same values, and more keys
	rs --block-size 4 "$IN"
	[ "$(field '[.request_id, .chosen.worker_id, .overlap_blocks, .logit]' | tr -d '\n')" = '["r1",1,3,3][5,1,3,3]' ]
	[ "$(field '.candidates | length' | tr -d '\n')" = 22 ]
}

@test "--brief over the Mooncake fixture: one brief decision per request, the same picks as the full records" {
	rs --trace mooncake --workers 16 --approx "$FIX/mooncake/synthetic_trace_head500.jsonl"
	assert_success
	full=$(field '[.request_id, .ts_ms, .chosen, .overlap_blocks, .logit]')
	fsum=$(summary '.')
	rs --trace mooncake --workers 16 --approx --brief "$FIX/mooncake/synthetic_trace_head500.jsonl"
	assert_success
	[ "$(field '[.request_id, .ts_ms, .chosen, .overlap_blocks, .logit]')" = "$full" ]
	[ "$(field 'keys_unsorted' | sort -u)" = '["rec","request_id","ts_ms","request_blocks","policy","chosen","overlap_blocks","logit","blocks_lost","tie_count"]' ]
	[ "$(field '.request_id' | wc -l)" = 500 ]
	[ "$(summary '.')" = "$fsum" ]
}

@test "--brief records are the full records' members of their keys, byte for byte (the one-piece head and the key-by-key writer)" {
	# jq renders the full records' members independently of route_out.c;
	# line-number ids take the one-piece head, string ids the other writer
	f="$FIX/mooncake/synthetic_trace_head500.jsonl"
	sed '1,250s/^{/{"request_id":"s",/' "$f" | awk '{ sub(/"s"/, "\"s" NR "\""); print }' >"$IN"
	for opt in "" --hash-strings --track-output-blocks; do
		set -- $opt
		rs --trace mooncake --workers 16 --approx "$@" "$IN"
		assert_success
		want=$(field '{rec, request_id, ts_ms, request_blocks, policy, chosen,
			overlap_blocks, logit, blocks_lost, tie_count} +
			(if .output_blocks then {output_blocks} else {} end)')
		rs --trace mooncake --workers 16 --approx "$@" --brief "$IN"
		assert_success
		[ "$(printf '%s\n' "$output" | grep '^{"rec":"decision"')" = "$want" ] ||
			fail "--brief $opt differs from the full records"
	done
	[ "$(field '.request_id' | sed -n '1p;251p' | tr -d '\n')" = '"s1"251' ]
}

@test "the fast path and the json-c path agree (a line with an unknown key goes to json-c)" {
	export PYTHONHASHSEED=0
	python3 "$KVP_ROOT/bench/gen_route_score.py" stream 3000 300 >"$IN"
	# an extra member makes the fast scanner decline every line; json-c
	# ignores it; sed, not jq, so 64-bit hashes stay exact
	sed 's/^{/{"zz":1,/' "$IN" >"$BATS_TEST_TMPDIR/slow.ndjson"
	rs --block-size 16 "$IN"
	assert_success
	fast=$output
	rs --block-size 16 "$BATS_TEST_TMPDIR/slow.ndjson"
	assert_success
	[ "$output" = "$fast" ]
	# Mooncake lines and kv-normalize output (with x.ts_ms), likewise
	sed 's/^{/{"zz":1,/' "$FIX/mooncake/synthetic_trace_head500.jsonl" >"$BATS_TEST_TMPDIR/mc.jsonl"
	rs --trace mooncake --workers 4 --approx "$FIX/mooncake/synthetic_trace_head500.jsonl"
	fast=$output
	rs --trace mooncake --workers 4 --approx "$BATS_TEST_TMPDIR/mc.jsonl"
	[ "$output" = "$fast" ]
	events >"$BATS_TEST_TMPDIR/ev"
	sed 's/^{"worker_id"/{"zz":1,"worker_id"/' "$BATS_TEST_TMPDIR/ev" >"$BATS_TEST_TMPDIR/ev.slow"
	rs --block-size 4 --events "$BATS_TEST_TMPDIR/ev" --requests "$EX/requests.ndjson"
	fast=$output
	rs --block-size 4 --events "$BATS_TEST_TMPDIR/ev.slow" --requests "$EX/requests.ndjson"
	[ "$output" = "$fast" ]
}

@test "a Mooncake line of 1,000,000 ids: the json-c path's skeleton costs no more than the fast path" {
	python3 -c 'import json; print(json.dumps({"timestamp": 0, "input_length": 512000000, "output_length": 1, "hash_ids": list(range(1000000))}))' >"$IN"
	# an unknown key sends the same line to json-c, whose whole tree took
	# 17-34x the line (issue 15.8); its skeleton (hash_ids read by the
	# scanner, issue 28.9) holds no more than the fast path, and both keep
	# the same router state (the ids, their sequence hashes and the load)
	sed 's/^{/{"zz":1,/' "$IN" >"$BATS_TEST_TMPDIR/slow.jsonl"
	run --separate-stderr /usr/bin/time -f '%M' "$KVP_BIN/route-score" --trace mooncake --workers 2 --brief -o "$BATS_TEST_TMPDIR/out" "$IN"
	assert_success
	fast=$(printf '%s\n' "$stderr" | tail -1)
	run --separate-stderr /usr/bin/time -f '%M' "$KVP_BIN/route-score" --trace mooncake --workers 2 --brief -o "$BATS_TEST_TMPDIR/out.slow" "$BATS_TEST_TMPDIR/slow.jsonl"
	assert_success
	slow=$(printf '%s\n' "$stderr" | tail -1)
	[ "$((slow * 10))" -le "$((fast * 11))" ] || fail "fast $fast KiB, json-c path $slow KiB"
	cmp "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/out.slow"
	[ "$(jq -c 'select(.rec=="decision") | .overlap_blocks' "$BATS_TEST_TMPDIR/out")" = 0 ]
}

# Issue 28 item 9: a line the fast path declines went whole through json-c,
# about 40 times its size, to be read or to say what is wrong with it.
@test "issue 28: 16 MiB request lines the fast path declines: read and refused as json-c does, under 8x the line" {
	d=$BATS_TEST_TMPDIR
	# request_id "r\u0041" (an escape) sends the line to json-c, which gets
	# the skeleton: tokens read by the scanner, [] in their place
	long_line "$d/a" '{"type":"request","request_id":"r\u0041","x":[1,{"a":2}],"tokens":[' ']}' 16
	long_line "$d/b" '{"type":"request","request_id":"r\u0041","tokens":[' ',4294967296]}' 16
	long_line "$d/c" '{"type":"request","request_id":"r\u0041","hash_ids":[' ',"x"]}' 16
	long_line "$d/e" '[' ']' 16
	long_line "$d/f" '{"type":"request","request_id":"r","tokens":[' '' 16
	run -0 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/route-score" --block-size 16 --workers 2 "$d/a"
	rss_within 8 "$d/a" "$d/rss" route-score
	# the decision, worked out: 8,388,608 tokens (16 MiB of "1,") are
	# 524,288 blocks of 16, none held by either worker; id "r\u0041" is "rA"
	run -0 jq -c 'select(.rec=="decision") | [.request_id, .request_blocks, .overlap_blocks]' <<<"$output"
	assert_output '["rA",524288,0]'
	n=8388608 # the ones in each 16 MiB line: 16 * 2^20 / 2
	for x in b:"tokens[$n]: token id 4294967296 does not fit in u32" \
		c:"hash_ids[$n]: string is not a decimal or 0x-hex integer" e:'record: expected a JSON object'; do
		f=$d/${x%%:*}
		run -1 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/route-score" --block-size 16 --workers 2 "$f"
		rss_within 8 "$f" "$d/rss" route-score
		[[ "${stderr%%$'\n'*}" == "route-score: $f:1"*": ${x#*:}" ]] || fail "$stderr"
	done
	run -1 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/route-score" --block-size 16 --workers 2 "$d/f"
	rss_within 8 "$d/f" "$d/rss" route-score
	[[ "${stderr%%$'\n'*}" == "route-score: $d/f:1:$(wc -c <"$d/f"): invalid JSON: unexpected end of line" ]] || fail "$stderr"
}

@test "timestamps that are not times are bad data: 1e999, -5, \"soon\" (ts_ms and Mooncake's timestamp)" {
	for v in 1e999 -5 '"soon"' '[1]'; do
		printf '{"type":"worker","worker_id":1}\n{"request_id":"a","ts_ms":%s,"tokens":%s}\n' "$v" "$T12" >"$IN"
		rs --block-size 4 "$IN"
		assert_failure 1
		[[ "$stderr" == *"in.ndjson:2: ts_ms: expected a non-negative"* ]]
		[ "$(summary '.requests')" = 0 ]
		printf '{"timestamp":%s,"input_length":512,"hash_ids":[1]}\n' "$v" >"$IN"
		rs --trace mooncake --workers 1 "$IN"
		assert_failure 1
		[[ "$stderr" == *"in.ndjson:1: timestamp: expected a non-negative"* ]]
	done
	# a router event's x.ts_ms too
	printf '{"worker_id":1,"event":{"data":"cleared"},"x":{"ts_ms":-5}}\n' >"$IN"
	rs --block-size 4 "$IN"
	assert_failure 1
	[[ "$stderr" == *"in.ndjson:1: x.ts_ms: expected a non-negative"* ]]
	# integers, decimal strings and fractions of ms are times
	printf '{"request_id":"a","ts_ms":"12","tokens":%s}\n{"request_id":"b","ts_ms":13.9,"tokens":%s}\n' "$T12" "$T12" >"$IN"
	rs --block-size 4 --workers 1 --brief "$IN"
	assert_success
	[ "$(field '.ts_ms' | tr -d '\n')" = 1213 ]
}

@test "input_length whose load arithmetic would overflow is bad data, named" {
	for v in 18446744073709551615 1099511627777; do
		printf '{"timestamp":0,"input_length":%s,"hash_ids":[1,2]}\n' "$v" >"$IN"
		rs --trace mooncake --workers 2 "$IN"
		assert_failure 1
		[ "$stderr" = "route-score: $IN:1: input_length: $v tokens is over the limit of 2^40 (1099511627776)" ]
		[ "$(summary '[.requests, .errors]')" = '[0,1]' ]
	done
	# 2^40 itself is allowed: ceil(2^40 / 512) = 2147483648 request blocks
	printf '{"timestamp":0,"input_length":1099511627776,"hash_ids":[1,2]}\n' >"$IN"
	rs --trace mooncake --workers 2 "$IN"
	assert_success
	[ "$(field '.request_blocks')" = 2147483648 ]
	printf '{"expanded_prompt_len":1099511627777,"routing_token_ids":[1,2,3,4]}\n' >"$IN"
	rs --block-size 4 --workers 1 "$IN"
	assert_failure 1
	[[ "$stderr" == *"expanded_prompt_len: 1099511627777 tokens is over the limit"* ]]
}

@test "the sample capture's seq gap reaches route-score's summary through kv-normalize (README pipeline)" {
	# examples/capture.jsonl skips seq 3 of stream kv-events:0:1 (kv-decode:
	# expected 3, got 4); kv-normalize renumbers event ids, so only the gap
	# record carries it
	run --separate-stderr bash -c "set -o pipefail; $KVP_EXEC_PREFIX '$KVP_BIN/kv-decode' '$EX/capture.jsonl' | $KVP_EXEC_PREFIX '$KVP_BIN/kv-normalize' --block-size 4 | $KVP_EXEC_PREFIX '$KVP_BIN/route-score' --block-size 4 --requests '$EX/requests.ndjson'"
	assert_success
	[ "$(summary '[.gaps, .gap_records, .stale_records, .routed]')" = '[1,1,0,4]' ]
	run --separate-stderr bash -c "set -o pipefail; $KVP_EXEC_PREFIX '$KVP_BIN/kv-decode' '$EX/capture.jsonl' | $KVP_EXEC_PREFIX '$KVP_BIN/kv-normalize' --block-size 4 | $KVP_EXEC_PREFIX '$KVP_BIN/route-score' --block-size 4 --requests '$EX/requests.ndjson' --format text"
	assert_success
	[[ "$output" == *" 1 gaps, "* ]]
	# a stale record is counted too
	printf '{"rec":"stale","stream":"s","last":9,"got":3}\n{"rec":"gap","stream":"s","expected":4,"got":6}\n' >"$IN"
	rs --block-size 4 "$IN"
	assert_success
	[ "$(summary '[.gaps, .gap_records, .stale_records, .records_ignored]')" = '[1,1,1,0]' ]
}

# Requests timed against the sample capture. Its events (kv-normalize's
# x.ts_ms): worker 1 stores blocks B0 B1 of req-1's tokens at ...250 and B2
# B3 at ...500; worker 2 is cleared at ...1250 and stores B0 B1 at ...1500.
timed_requests() {
	tok=$(jq -c '.tokens' "$EX/requests.ndjson" | head -1)
	printf '{"request_id":"t0","ts_ms":1767225600100,"tokens":%s}\n' "$tok"
	printf '{"request_id":"t1","ts_ms":1767225600300,"tokens":%s}\n' "$tok"
	printf '{"request_id":"t2","ts_ms":1767225600500,"tokens":%s}\n' "$tok"
	printf '{"request_id":"t3","ts_ms":1767225601600,"tokens":%s}\n' "$tok"
}

# By hand: t0 comes before every event (no candidate); t1 after worker 1's
# first store (overlap 2); t2 ties with its second store, and events go
# first (4); t3 sees worker 1 with 4 blocks and worker 2 with 2.
WANT='["t0",null,[]]["t1",2,[2]]["t2",4,[4]]["t3",4,[4,2]]'
merged() { field '[.request_id, .max_overlap.blocks, [.candidates[].overlap_blocks]]' | tr -d '\n'; }

# bats test_tags=valgrind
@test "a capture and a request file merge by timestamp (events first on ties)" {
	events >"$BATS_TEST_TMPDIR/ev"
	timed_requests >"$BATS_TEST_TMPDIR/rq"
	rs --block-size 4 --events "$BATS_TEST_TMPDIR/ev" --requests "$BATS_TEST_TMPDIR/rq"
	assert_success
	[ "$(merged)" = "$WANT" ]
	# the events piped in
	run --separate-stderr bash -c "$KVP_EXEC_PREFIX '$KVP_BIN/route-score' --block-size 4 --requests '$BATS_TEST_TMPDIR/rq' < '$BATS_TEST_TMPDIR/ev'"
	assert_success
	[ "$(merged)" = "$WANT" ]
	# as one stream in file order (no merge), every event precedes t0
	cat "$BATS_TEST_TMPDIR/ev" "$BATS_TEST_TMPDIR/rq" >"$IN"
	rs --block-size 4 "$IN"
	[ "$(field '.max_overlap.blocks' | tr -d '\n')" = 4444 ]
}

@test "any number of --events and --requests streams merge stably; stdin is one of them" {
	events >"$BATS_TEST_TMPDIR/ev"
	timed_requests >"$BATS_TEST_TMPDIR/rq"
	grep '"worker_id":1,' "$BATS_TEST_TMPDIR/ev" >"$BATS_TEST_TMPDIR/ev1"
	grep -v '"worker_id":1,' "$BATS_TEST_TMPDIR/ev" >"$BATS_TEST_TMPDIR/ev2"
	head -2 "$BATS_TEST_TMPDIR/rq" >"$BATS_TEST_TMPDIR/rq1"
	tail -2 "$BATS_TEST_TMPDIR/rq" >"$BATS_TEST_TMPDIR/rq2"
	rs --block-size 4 --requests "$BATS_TEST_TMPDIR/rq2" --events "$BATS_TEST_TMPDIR/ev2" \
		--requests "$BATS_TEST_TMPDIR/rq1" --events "$BATS_TEST_TMPDIR/ev1"
	assert_success
	[ "$(merged)" = "$WANT" ]
	[ "$(summary '[.events, .gaps]')" = '[8,1]' ]
	run --separate-stderr bash -c "$KVP_EXEC_PREFIX '$KVP_BIN/route-score' --block-size 4 --events '$BATS_TEST_TMPDIR/ev1' --requests '$BATS_TEST_TMPDIR/rq1' --requests '$BATS_TEST_TMPDIR/rq2' --events - < '$BATS_TEST_TMPDIR/ev2'"
	assert_success
	[ "$(merged)" = "$WANT" ]
	# equal times: request streams keep the order they were given in
	printf '{"request_id":"a","ts_ms":5,"hash_ids":[1]}\n' >"$BATS_TEST_TMPDIR/ra"
	printf '{"request_id":"b","ts_ms":5,"hash_ids":[1]}\n' >"$BATS_TEST_TMPDIR/rb"
	rs --block-size 4 --workers 1 --brief --events /dev/null --requests "$BATS_TEST_TMPDIR/rb" --requests "$BATS_TEST_TMPDIR/ra"
	[ "$(field '.request_id' | tr -d '\n')" = '"b""a"' ]
}

# bats test_tags=valgrind
@test "kv-normalize --format kvrecorder: Dynamo's KvRecorder lines, which route-score replays alike" {
	events --format kvrecorder >"$BATS_TEST_TMPDIR/ev"
	# line 1 by hand: the first store of the capture at its batch time 1.25 s
	# past 1767225600 (1767225600250 ms), RouterEvent without "x"
	run -0 jq -c 'keys_unsorted, .timestamp, (.event | keys_unsorted)' "$BATS_TEST_TMPDIR/ev"
	assert_line --index 0 '["timestamp","event"]'
	assert_line --index 1 1767225600250
	assert_line --index 2 '["worker_id","storage_tier","residency_domain","event"]'
	[ "$(wc -l <"$BATS_TEST_TMPDIR/ev")" = 8 ]
	timed_requests >"$BATS_TEST_TMPDIR/rq"
	rs --block-size 4 --events "$BATS_TEST_TMPDIR/ev" --requests "$BATS_TEST_TMPDIR/rq"
	assert_success
	[ "$(merged)" = "$WANT" ]
	[ "$(summary '[.events, .gap_records]')" = '[8,0]' ]
}

@test "--max-active-blocks: the oldest active requests are released first, and counted" {
	# Requests of 3, 2, 3 and 1 blocks on one worker, cap 5. By hand: after
	# the third 8 blocks are held, the first is released (5); after the
	# fourth 6, the second (4). active_blocks seen by each: 0, 3, 5, 5.
	printf '%s\n' '{"timestamp":0,"input_length":3,"hash_ids":[1,2,3]}' \
		'{"timestamp":1,"input_length":2,"hash_ids":[10,11]}' \
		'{"timestamp":2,"input_length":3,"hash_ids":[20,21,22]}' \
		'{"timestamp":3,"input_length":1,"hash_ids":[30]}' >"$IN"
	rs --trace mooncake --block-size 1 --workers 1 --max-active-blocks 5 "$IN"
	assert_success
	[ "$(field '.candidates[0].active_blocks' | tr -d '\n')" = 0355 ]
	[ "$(summary '[.requests_capped, .workers[0].active_requests]')" = '[2,2]' ]
	rs --trace mooncake --block-size 1 --workers 1 --max-active-blocks 0 "$IN"
	[ "$(field '.candidates[0].active_blocks' | tr -d '\n')" = 0358 ]
	[ "$(summary '[.requests_capped, .workers[0].active_requests]')" = '[0,4]' ]
}

@test "errors are counted in the summary, those past --max-errors too" {
	{ echo '{"type":"worker","worker_id":1}'; echo 'nope'; echo '{"request_id":"a"}'; echo '[1]'; echo "{\"request_id\":\"b\",\"tokens\":$T12}"; } >"$IN"
	rs --block-size 4 -k --max-errors 1 "$IN"
	assert_failure 1
	[ "$(summary '[.errors, .errors_not_shown, .routed]')" = '[3,2,1]' ]
	[[ "$stderr" == *"3 errors (2 not shown)"* ]]
}

@test "a failed write stops the run at once (-k does not read on)" {
	# 3000 decisions fill the stdio buffer long before the bad last line
	python3 -c 'import json
for i in range(3000): print(json.dumps({"request_id": i, "hash_ids": [i]}))
print("bad")' >"$IN"
	rs --block-size 4 --workers 1 -k -o /dev/full "$IN"
	assert_failure 2
	[[ "$stderr" != *"in.ndjson:3001"* ]]
	[[ "$stderr" == *"/dev/full"* || "$stderr" == *"No space left"* ]]
}

# The parsers of --events and --requests live in one growable array: a
# long line read after the second source opened must not use the first
# one's old buffers (a use after free under make asan before 47099a2).
@test "issue 28: long declined lines in --events and --requests both read (the skeleton bound per line)" {
	d=$BATS_TEST_TMPDIR
	long_line "$d/req" '{"type":"request","request_id":"r\u0041","tokens":[' ']}' 1
	long_line "$d/ev" '{"type":"worker","worker_id":7,"x\u0041":[' ']}' 1
	run -0 --separate-stderr "$KVP_BIN/route-score" --block-size 16 --events "$d/ev" --requests "$d/req"
	# worked out: 524,288 ones are 32,768 blocks of 16; worker 7 (declared
	# by the event line) is the only candidate and holds none of them
	run -0 jq -c 'select(.rec=="decision") | [.request_id, .request_blocks, .overlap_blocks, .chosen.worker_id]' <<<"$output"
	assert_output '["rA",32768,0,7]'
}
