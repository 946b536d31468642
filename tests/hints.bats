#!/usr/bin/env bats
# Wrong-stage and wrong-format input: after the first record is rejected,
# the tool says what the input looks like and which tool reads it.
load test_helper

setup() {
	D=$BATS_TEST_TMPDIR
	cp "$FIX/demo/capture.jsonl" "$D/capture.jsonl"
	cd "$D"
}

@test "a capture into kv-normalize: decode it first, naming the file" {
	run --separate-stderr kvp kv-normalize --block-size 4 capture.jsonl
	[ "$status" -eq 1 ]
	[ "$output" = "" ]
	[[ "$stderr" == *"kv-normalize: capture.jsonl: this is a capture (payload_b64); decode it first: kv-decode capture.jsonl | kv-normalize"* ]]
}

@test "a Mooncake trace into kv-hash: route-score --trace mooncake reads it" {
	head -3 "$FIX/mooncake/synthetic_trace_head500.jsonl" >trace.jsonl
	run --separate-stderr kvp kv-hash --block-size 4 trace.jsonl
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"kv-hash: trace.jsonl: this is a Mooncake trace; route-score --trace mooncake reads it"* ]]
}

@test "router events into kv-normalize: route-score --events reads them" {
	kvp kv-decode capture.jsonl | kvp kv-normalize --block-size 4 >router.ndjson
	run --separate-stderr kvp kv-normalize --block-size 4 router.ndjson
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"router.ndjson: this is router events (kv-normalize output); it is already normalized: route-score --events router.ndjson reads it"* ]]
}

@test "a JSON array, pretty-printed JSON, a JPEG and msgpack bytes are named" {
	echo '[{"tokens":[1,2,3,4]}]' >arr.json
	run --separate-stderr kvp kv-hash --block-size 4 arr.json
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"arr.json: this is a JSON array, not one object per line; write one object per line first: jq -c '.[]' arr.json | kv-hash"* ]]
	printf '{\n  "tokens": [1, 2, 3, 4]\n}\n' >pretty.json
	run --separate-stderr kvp kv-hash --block-size 4 pretty.json
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"pretty.json: this is pretty-printed JSON, not one object per line; write one object per line first: jq -c . pretty.json | kv-hash"* ]]
	run --separate-stderr kvp kv-hash --block-size 4 "$FIX/images/Landscape_6.jpg"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"Landscape_6.jpg: this is a JPEG image; mm-expand reads images"* ]]
	printf '\x93\x00\x90\xc0\n' >batch.bin
	run --separate-stderr kvp kv-normalize --block-size 4 batch.bin
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"batch.bin: this is binary data (msgpack?), not NDJSON; kv-decode reads msgpack batches (kv-decode --in raw batch.bin)"* ]]
}

@test "no hint for a bad record of the right kind, nor for a bad record after the first" {
	echo '{"tokens":[1,"x"]}' >bad.ndjson
	run --separate-stderr kvp kv-hash --block-size 4 bad.ndjson
	[ "$status" -eq 1 ]
	[[ "$stderr" != *"this is"* ]]
	printf '{"tokens":[1,2,3,4]}\n[1]\n' >late.ndjson
	run --separate-stderr kvp kv-hash --block-size 4 late.ndjson
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"late.ndjson:2"* ]]
	[[ "$stderr" != *"this is"* ]]
}

@test "kv-decode output into route-score: normalize it first" {
	kvp kv-decode capture.jsonl >events.ndjson
	run --separate-stderr kvp route-score --block-size 4 --workers 2 events.ndjson
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"route-score: events.ndjson: this is kv-decode output (engine events); normalize it first: kv-normalize --block-size N events.ndjson | route-score"* ]]
	run --separate-stderr kvp route-score --block-size 4 --workers 2 capture.jsonl
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"route-score: capture.jsonl: this is a capture (payload_b64); decode and normalize it first: kv-decode capture.jsonl | kv-normalize"* ]]
}
