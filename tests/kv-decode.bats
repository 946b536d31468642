#!/usr/bin/env bats
# kv-decode: docs/spec/kv-events.md §6.5 fixtures F1-F4 and §6.6 tests 2-21 (the
# decode parts), §5/§6.1 inputs, and error paths. Expected values are the
# spec's (a § in a test name is a section of docs/spec/kv-events.md). Inputs
# are either the spec's hex or built with Debian's python3-msgpack through
# tests/fixtures/kv-decode/mk.py (an encoder independent of kvpipe's
# decoder); gen.py + check.py compare every field kv-decode prints with what
# the generator encoded.
load test_helper

F1=93cb00000000000000009198ab426c6f636b53746f726564920b0cc0940a0b0c0d02c0a3475055c000
F2=93cb3ff80000000000009183a474797065ac426c6f636b52656d6f766564ac626c6f636b5f68617368657391ffa66d656469756da347505501
F3=93cb00000000000000009198ab426c6f636b53746f726564921516c094920a0b920b0c920c0d920d0e02c0c0c000
F4=93cb00000000000000009198ab426c6f636b53746f726564910bc0920acf000000010000000002c0a347505581aa63616368655f73616c74a874656e616e742d6100

mk() { /usr/bin/python3 "$FIX/kv-decode/mk.py" "$1"; }

# dec EXPR [ARGS] — builds input with mk.py and decodes it from a file
dec() {
	local expr=$1
	shift
	mk "$expr" >"$BATS_TEST_TMPDIR/in"
	run --separate-stderr kvp kv-decode "$@" "$BATS_TEST_TMPDIR/in"
}

# ---- §6.5 wire fixtures ------------------------------------------------------

# bats test_tags=valgrind
@test "F1: array-form store decodes exactly (§6.5 F1, §6.3 key order)" {
	hex2bin "$F1" >"$BATS_TEST_TMPDIR/f1"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/f1"
	assert_success
	assert_output '{"rec":"event","seq":0,"topic":"","source":null,"ts":0,"dp_rank":0,"worker_id":0,"idx":0,"enc":"array","type":"BlockStored","block_hashes":[11,12],"parent_block_hash":null,"token_ids":[10,11,12,13],"token_layout":"flat","wide_tokens":0,"block_size":2,"lora_id":null,"lora_name":null,"medium":"GPU","cache_salt":null,"session_id":null,"extra_keys":null,"group_idx":null,"kv_cache_spec_kind":null,"kv_cache_spec_sliding_window":null,"locality":null,"hash_repr":"uint","source_kind":null}'
	[ -z "$stderr" ]
}

@test "F2: map-form removal of hash -1, rank 1, ts 1.5 (§6.5 F2, §6.6 16)" {
	hex2bin "$F2" >"$BATS_TEST_TMPDIR/f2"
	run --separate-stderr kvp kv-decode --in raw "$BATS_TEST_TMPDIR/f2"
	assert_success
	assert_output '{"rec":"event","seq":0,"topic":"","source":null,"ts":1.5,"dp_rank":1,"worker_id":0,"idx":0,"enc":"map","type":"BlockRemoved","block_hashes":[18446744073709551615],"medium":"GPU","group_idx":null,"kv_cache_spec_kind":null,"locality":null,"hash_repr":"int","kv_cache_spec_sliding_window":null,"source_kind":null}'
}

@test "F3: EAGLE bigram store flattens to 5 tokens (§6.5 F3, §6.6 19)" {
	hex2bin "$F3" >"$BATS_TEST_TMPDIR/f3"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/f3"
	assert_success
	assert_output --partial '"block_hashes":[21,22],"parent_block_hash":null,"token_ids":[10,11,12,13,14],"token_layout":"bigram","wide_tokens":0,"block_size":2,'
}

@test "F4: SGLang metadata map at position 7 and a wide token (§6.5 F4, §6.6 9, 21)" {
	hex2bin "$F4" >"$BATS_TEST_TMPDIR/f4"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/f4"
	assert_success
	assert_output --partial '"block_hashes":[11],"parent_block_hash":null,"token_ids":[10,4294967296],"token_layout":"flat","wide_tokens":1,"block_size":2,"lora_id":null,"lora_name":null,"medium":"GPU","cache_salt":"tenant-a","session_id":null,'
}

@test "F1 through capture JSONL: seq, topic, source and worker_id come from the line (§5)" {
	printf '{"source":"live","recv_ts":1.25,"topic":"kv-events","seq":7,"payload_len":41,"payload_b64":"%s","worker_id":42,"endpoint":"tcp://a:5557"}\n' "$(b64 "$F1")" >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/c"
	assert_success
	assert_output --partial '{"rec":"event","seq":7,"topic":"kv-events","source":"live","ts":0,"dp_rank":0,"worker_id":42,"idx":0,'
	assert_output --partial '"source_kind":null,"x_capture":{"recv_ts":1.25,"endpoint":"tcp://a:5557"}}'
}

# ---- §6.6 2: frames --------------------------------------------------------------

@test "6.6-2: seq frames of 0, 4 or 16 bytes are frame errors; -k goes on (§6.2.1)" {
	dec '[frames("t", b"", raw(batch([C()]))), frames("t", b"\0"*4, raw(batch([C()]))), frames("t", b"\0"*16, raw(batch([C()]))), live(9, batch([C()]))]' -k
	assert_failure 1
	assert_line --index 0 '{"rec":"error","seq":null,"stage":"frame","idx":null,"msg":"sequence frame has 0 bytes; needs 8"}'
	assert_line --index 1 --partial '"msg":"sequence frame has 4 bytes; needs 8"'
	assert_line --index 2 --partial '"msg":"sequence frame has 16 bytes; needs 8"'
	assert_line --index 3 --partial '"rec":"event","seq":9,"topic":"kv-events","source":null,'
	[ "${#lines[@]}" -eq 4 ]
	[[ "${stderr_lines[0]}" == "kv-decode: $BATS_TEST_TMPDIR/in:@0: sequence frame has 0 bytes; needs 8" ]]
}

@test "6.6-2: messages of 2 or 4 frames are frame errors; 4 with an empty first frame is replay" {
	dec '[frames("t", be64(1)), frames("t", be64(1), raw(batch([C()])), b"x"), frames("", "kv", be64(5), raw(batch([C()])))]' -k
	assert_failure 1
	assert_line --index 0 --partial '"stage":"frame","idx":null,"msg":"message has 2 frame(s)'
	assert_line --index 1 --partial '"stage":"frame","idx":null,"msg":"message has 4 frame(s)'
	assert_line --index 2 --partial '"rec":"event","seq":5,"topic":"kv","source":"replay",'
}

@test "6.6-2: seq 2^64-1 decodes; the replay end marker (seq 2^64-1, empty payload) is skipped (§1)" {
	dec '[live(2**64-1, batch([C()])), frames("", be64(2**64-1), b"")]'
	assert_success
	assert_output --partial '{"rec":"event","seq":18446744073709551615,'
	[ "${#lines[@]}" -eq 1 ]
}

@test "frames: an empty payload with a normal seq is an error (§1)" {
	dec 'frames("t", be64(3), b"")'
	assert_failure 1
	assert_output '{"rec":"error","seq":3,"stage":"frame","idx":null,"msg":"empty payload"}'
}

@test "frames: a truncated message at end of input is an error" {
	dec 'live(1, batch([C()]))[:-3]'
	assert_failure 1
	assert_output --partial '"msg":"truncated message at end of input"'
}

# ---- §6.6 3-6: envelopes -------------------------------------------------------------

# bats test_tags=valgrind
@test "6.6-3: a 2-element envelope gives dp_rank null; --strict rejects it" {
	dec 'raw([0.0, [C()]])'
	assert_success
	assert_output --partial '"dp_rank":null,'
	dec 'raw([0.0, [C()]])' --strict
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"envelope","idx":null,"msg":"envelope array has 2 elements; Dynamo (--strict) decodes exactly [ts, events, dp_rank]"}'
}

@test "6.6-3: a nil rank is null, rank -1 stays -1; --dp-rank fills a missing rank (§6.1)" {
	dec '[raw(batch([C()], rank=None)), raw(batch([C()], rank=-1)), raw([0.0, [C()]])]' --dp-rank 3
	assert_success
	assert_line --index 0 --partial '"dp_rank":3,'
	assert_line --index 1 --partial '"dp_rank":-1,'
	assert_line --index 2 --partial '"dp_rank":3,'
}

@test "6.6-3: extra envelope elements are counted (x_envelope_extra); --strict rejects them (§6.2.2)" {
	dec 'raw([0.0, [C()], 0, "x", 5])' --batches
	assert_success
	assert_line --index 0 --partial '"n_events":1,'
	assert_line --index 0 --partial '"x_envelope_extra":2}'
	assert_line --index 1 --partial '"x_envelope_extra":2}'
	dec 'raw([0.0, [C()], 0, "x"])' --strict
	assert_failure 1
}

@test "6.6-4: a map envelope {ts, events, data_parallel_rank} is accepted" {
	dec 'raw({"ts": 2.5, "events": [C()], "data_parallel_rank": 1})'
	assert_success
	assert_output --partial '"ts":2.5,"dp_rank":1,'
	dec 'raw({"ts": 2.5, "events": [C()], "attn_dp_rank": 4})'
	assert_output --partial '"dp_rank":4,'
	dec 'raw({"ts": 2.5, "events": [C()]})' --strict
	assert_failure 1
	assert_output --partial '"stage":"envelope"'
}

@test "6.6-5: an integer ts is accepted and printed as a number" {
	dec 'raw(batch([C()], ts=1700000000))'
	assert_success
	assert_output --partial '"ts":1700000000,'
}

@test "6.6-6: an empty events array gives no event; --batches still prints the batch (§6.3)" {
	dec 'cap(4, batch([], ts=1.5, rank=0))'
	assert_success
	assert_output ''
	dec 'cap(4, batch([], ts=1.5, rank=0))' --batches
	assert_success
	# mk.py's cap() adds recv_ts: the batch record carries x_capture too
	assert_output '{"rec":"batch","seq":4,"ts":1.5,"dp_rank":0,"n_events":0,"bytes":12,"topic":"kv-events","worker_id":0,"enc":"array","x_capture":{"recv_ts":1700000000.25}}'
}

@test "envelope errors: not an array or map, ts not a number, events not an array, rank beyond i32" {
	dec '[raw(5), raw(["x", []]), raw([0.0, 3]), raw(batch([], rank=2**40))]' -k --in raw
	assert_failure 1
	assert_line --index 0 --partial '"stage":"envelope","idx":null,"msg":"batch is a integer, not an array or a map"'
	assert_line --index 1 --partial '"msg":"envelope ts: expected a number, got string"'
	assert_line --index 2 --partial '"msg":"envelope events: expected an array, got integer"'
	assert_line --index 3 --partial '"msg":"envelope dp_rank: does not fit in i32"'
}

# ---- §6.6 7: gaps -------------------------------------------------------------------

@test "6.6-7: seq 3 then 5 gives gap(expected 4, got 5); then seq 4 is stale" {
	dec '[cap(3, batch([C()])), cap(5, batch([C()])), cap(4, batch([C()]))]'
	assert_success
	assert_line --index 1 '{"rec":"gap","stream":"kv-events:0:0","expected":4,"got":5,"topic":"kv-events","dp_rank":0,"worker_id":0}'
	assert_line --index 3 '{"rec":"stale","stream":"kv-events:0:0","expected":6,"got":4,"topic":"kv-events","dp_rank":0,"worker_id":0}'
	assert_line --index 4 --partial '"rec":"event","seq":4,'
	[ "${#lines[@]}" -eq 5 ]
}

@test "gaps are per stream (topic + dp_rank + worker); --drop-stale; --gap-at-start" {
	dec '[cap(3, batch([C()], rank=0)), cap(7, batch([C()], rank=1)), cap(4, batch([C()], rank=0), worker_id=2), cap(4, batch([C()], rank=0)), cap(4, batch([C()], rank=0))]' --drop-stale
	assert_success
	refute_output --partial '"rec":"gap"'
	assert_line --index 4 --partial '"rec":"stale","stream":"kv-events:0:0","expected":5,"got":4,'
	[ "${#lines[@]}" -eq 5 ]
	dec 'cap(3, batch([C()]))' --gap-at-start
	assert_line --index 0 --partial '"rec":"gap","stream":"kv-events:0:0","expected":0,"got":3,'
}

# ---- §6.6 8-11: layouts ------------------------------------------------------------------

@test "6.6-8: old SGLang store [tag, hashes, parent, tokens, bs, lora_id] gives medium null" {
	dec 'raw(batch([S([-5], None, [1, 2], 2, None)]))'
	assert_success
	assert_output --partial '"block_hashes":[18446744073709551611],'
	assert_output --partial '"block_size":2,"lora_id":null,"lora_name":null,"medium":null,'
}

@test "6.6-9: a vLLM store of 8 elements carries lora_name at position 7" {
	dec 'raw(batch([S([1], None, [1, 2], 2, 3, "GPU", "adapter-a")]))'
	assert_success
	assert_output --partial '"lora_id":3,"lora_name":"adapter-a","medium":"GPU","cache_salt":null,"session_id":null,'
	dec 'raw(batch([S([1], None, [1, 2], 2, None, "GPU", {"cache_salt": "s", "session_id": "x", "foo": 1})]))'
	assert_output --partial '"lora_name":null,"medium":"GPU","cache_salt":"s","session_id":"x",'
	assert_output --partial '"x_unknown_keys":["metadata.foo"]'
}

@test "6.6-10: tail nil, 3, full_attention gives group 3 and kind; a kind-only tail gives kind only" {
	dec 'raw(batch([S([1], None, [1, 2], 2, None, "GPU", None, None, None, 3, "full_attention"), S([1], None, [1, 2], 2, None, "GPU", None, None, "full_attention")]))'
	assert_success
	assert_line --index 0 --partial '"group_idx":3,"kv_cache_spec_kind":"full_attention","kv_cache_spec_sliding_window":null,'
	assert_line --index 1 --partial '"group_idx":null,"kv_cache_spec_kind":"full_attention","kv_cache_spec_sliding_window":null,'
}

@test "tail: vLLM group, kind, window (legacy order); Dynamo's fixed 5 slots; surplus counted (§2.3)" {
	dec 'raw(batch([S([1], None, [1], 1, None, "GPU", None, [None], 0, "sliding_window", 1024), S([1], None, [1], 1, None, "GPU", None, None, 2, "full_attention", None, "REMOTE", "kvbm", "x"), S([1], None, [1], 1, None, None, None, None, 1, [[7]], 2, 3)]))'
	assert_success
	assert_line --index 0 --partial '"extra_keys":[null],"group_idx":0,"kv_cache_spec_kind":"sliding_window","kv_cache_spec_sliding_window":1024,"locality":null,'
	assert_line --index 1 --partial '"group_idx":2,"kv_cache_spec_kind":"full_attention","kv_cache_spec_sliding_window":null,"locality":"REMOTE","hash_repr":"uint","source_kind":"kvbm","x_surplus":1}'
	assert_line --index 2 --partial '"group_idx":1,"kv_cache_spec_kind":null,"kv_cache_spec_sliding_window":2,"locality":null,"hash_repr":"uint","source_kind":null,"block_mm_infos":[[7]],"x_surplus":1}'
}

@test "6.6-11: a map store with shuffled and unknown keys decodes and lists the unknown ones" {
	dec 'raw(batch([{"medium": "", "foo": [1], "token_ids": [5, 6], "session_id": "abc", "block_size": 2, "type": "BlockStored", "parent_block_hash": 9, "block_hashes": [10], "bar": None}]))'
	assert_success
	assert_output --partial '"enc":"map","type":"BlockStored","block_hashes":[10],"parent_block_hash":9,"token_ids":[5,6],'
	assert_output --partial '"medium":"","cache_salt":null,"session_id":"abc",'
	assert_output --partial '"x_unknown_keys":["foo","bar"]}'
}

@test "map store: a missing required key is an error (§2.3)" {
	dec 'raw(batch([M("BlockStored", block_hashes=[1], token_ids=[1]), M("BlockRemoved", medium="GPU")]))' -k
	assert_failure 1
	assert_line --index 0 '{"rec":"error","seq":0,"stage":"event","idx":0,"msg":"missing key \"block_size\""}'
	assert_line --index 1 '{"rec":"error","seq":0,"stage":"event","idx":1,"msg":"missing key \"block_hashes\""}'
}

# ---- §6.6 12-15: tags ------------------------------------------------------------------------

@test "6.6-12: missing type, tag Foo, empty array, FF are event errors; with -k good events around them survive" {
	dec 'cap(1, batch([{"block_hashes": [1]}, ["Foo"], [], C(), -1]))' -k
	assert_failure 1
	assert_line --index 0 '{"rec":"error","seq":1,"stage":"event","idx":0,"msg":"event map has no \"type\" key"}'
	assert_line --index 1 '{"rec":"error","seq":1,"stage":"event","idx":1,"msg":"unknown event tag \"Foo\""}'
	assert_line --index 2 '{"rec":"error","seq":1,"stage":"event","idx":2,"msg":"empty event array (no tag)"}'
	assert_line --index 3 --partial '"idx":3,"enc":"array","type":"AllBlocksCleared"'
	assert_line --index 4 '{"rec":"error","seq":1,"stage":"event","idx":4,"msg":"event is a negative integer, not an array or a map"}'
	[ "${stderr_lines[1]}" = "kv-decode: $BATS_TEST_TMPDIR/in:1: seq 1, event 1: unknown event tag \"Foo\"" ]
}

@test "6.6-12: --strict rejects the whole batch with one error record (Dynamo)" {
	dec '[cap(1, batch([C(), ["Foo"], C()])), cap(2, batch([C()]))]' --strict -k
	assert_failure 1
	assert_line --index 0 '{"rec":"error","seq":1,"stage":"batch","idx":1,"msg":"event 1: unknown event tag \"Foo\"; whole batch rejected (--strict)"}'
	assert_line --index 1 --partial '"rec":"event","seq":2,'
	[ "${#lines[@]}" -eq 2 ]
}

@test "6.6-12: FF FF FF as a payload is a msgpack error (trailing bytes)" {
	dec 'cap(1, b"\xff\xff\xff")'
	assert_failure 1
	assert_output '{"rec":"error","seq":1,"stage":"msgpack","idx":null,"msg":"trailing bytes: the batch ends at offset 1 of 3"}'
}

@test "6.6-13: Ignored decodes in array and map form" {
	dec 'raw(batch([["Ignored", 1, 2], {"type": "Ignored", "x": 1}]))'
	assert_success
	assert_line --index 0 '{"rec":"event","seq":0,"topic":"","source":null,"ts":0,"dp_rank":0,"worker_id":0,"idx":0,"enc":"array","type":"Ignored"}'
	assert_line --index 1 '{"rec":"event","seq":0,"topic":"","source":null,"ts":0,"dp_rank":0,"worker_id":0,"idx":1,"enc":"map","type":"Ignored"}'
}

@test "6.6-14: AllBlocksCleared in array form, map form, with source_kind and with a surplus element" {
	dec 'raw(batch([C(), M("AllBlocksCleared"), C("kvbm"), C(None, 5), M("AllBlocksCleared", source_kind="g", z=1)]))'
	assert_success
	assert_line --index 0 --partial '"enc":"array","type":"AllBlocksCleared","source_kind":null}'
	assert_line --index 1 --partial '"enc":"map","type":"AllBlocksCleared","source_kind":null}'
	assert_line --index 2 --partial '"type":"AllBlocksCleared","source_kind":"kvbm"}'
	assert_line --index 3 --partial '"type":"AllBlocksCleared","source_kind":null,"x_surplus":1}'
	assert_line --index 4 --partial '"source_kind":"g","x_unknown_keys":["z"]}'
}

@test "6.6-15: BlockRemoved [tag, [11]] has medium null" {
	dec 'raw(batch([R([11])]))'
	assert_success
	assert_output --partial '"type":"BlockRemoved","block_hashes":[11],"medium":null,"group_idx":null,'
}

# ---- §6.6 16-18: hashes ------------------------------------------------------------------------

@test "6.6-16: a 0xd3 hash -909903196730214601 is 17536840876979337015" {
	mk 'raw(batch([R([-909903196730214601])]))' | od -An -tx1 | tr -d ' \n' | grep -q d3f3
	dec 'raw(batch([R([-909903196730214601])]))'
	assert_success
	assert_output --partial '"block_hashes":[17536840876979337015],'
	assert_output --partial '"hash_repr":"int"'
}

@test "6.6-17: a u64 hash above 2^63 prints exactly; --hash-strings quotes it" {
	dec 'raw(batch([S([16285693708553954570], 18446744073709551615, [1], 1)]))'
	assert_success
	assert_output --partial '"block_hashes":[16285693708553954570],"parent_block_hash":18446744073709551615,'
	dec 'raw(batch([S([16285693708553954570], None, [1], 1)]))' --hash-strings
	assert_output --partial '"seq":"0",'
	assert_output --partial '"block_hashes":["16285693708553954570"],'
}

@test "6.6-18: bin hashes: 32 bytes → 1736447835066146335, 01 02 03 → 66051, empty → error" {
	dec 'raw(batch([R([bytes(range(32)), b"\x01\x02\x03"]), R([b""]), S([5], b"\x01\x02\x03", [1], 1)]))' -k
	assert_failure 1
	assert_line --index 0 --partial '"block_hashes":[1736447835066146335,66051],'
	assert_line --index 0 --partial '"hash_repr":"bin"'
	assert_line --index 1 '{"rec":"error","seq":0,"stage":"event","idx":1,"msg":"block_hashes[0]: empty bin hash"}'
	assert_line --index 2 --partial '"block_hashes":[5],"parent_block_hash":66051,'
	assert_line --index 2 --partial '"hash_repr":"mixed"'
}

@test "hashes of a wrong type are errors" {
	dec 'raw(batch([R(["ab"]), S([1], 1.5, [1], 1)]))' -k
	assert_failure 1
	assert_line --index 0 --partial '"msg":"block_hashes[0]: expected an integer or bin hash, got string"'
	assert_line --index 1 --partial '"msg":"parent_block_hash: expected an integer or bin hash, got float"'
}

# ---- §6.6 19-21: tokens ------------------------------------------------------------------------

@test "6.6-20: a 1-element bigram pair is an error; a 3-element pair's extra is ignored" {
	dec 'raw(batch([S([1], None, [[1, 2], [2]], 2), S([1], None, [[1, 2], [2, 3, 99]], 2)]))' -k
	assert_failure 1
	assert_line --index 0 '{"rec":"error","seq":0,"stage":"event","idx":0,"msg":"token_ids[1]: bigram pair has 1 element(s), needs 2"}'
	assert_line --index 1 --partial '"token_ids":[1,2,3],"token_layout":"bigram",'
}

@test "6.6-21: a negative token id is an error; 2^32 counts as wide" {
	dec 'raw(batch([S([1], None, [1, -2], 2), S([1], None, [2**32, 2**64-1, 7], 2)]))' -k
	assert_failure 1
	assert_line --index 0 '{"rec":"error","seq":0,"stage":"event","idx":0,"msg":"token_ids[1]: negative token id -2"}'
	assert_line --index 1 --partial '"token_ids":[4294967296,18446744073709551615,7],"token_layout":"flat","wide_tokens":2,'
}

@test "6.2.6: an empty token list is flat" {
	dec 'raw(batch([S([1], None, [], 2)]))'
	assert_success
	assert_output --partial '"token_ids":[],"token_layout":"flat","wide_tokens":0,'
}

@test "6.2.7: block_size and group_idx must fit u32, lora_id i64" {
	dec 'raw(batch([S([1], None, [1], 2**32), S([1], None, [1], 1, 2**63), S([1], None, [1], 1, None, None, None, None, 2**32, "full_attention"), S([1], None, [1], -1), S([1], None, [1], 1, -5)]))' -k
	assert_failure 1
	assert_line --index 0 --partial '"msg":"block_size: 4294967296 does not fit in u32"'
	assert_line --index 1 --partial '"msg":"lora_id: 9223372036854775808 does not fit in i64"'
	assert_line --index 2 --partial '"msg":"group_idx: 4294967296 does not fit in u32"'
	assert_line --index 3 --partial '"msg":"block_size: -1 is negative"'
	assert_line --index 4 --partial '"lora_id":-5,'
}

@test "extra_keys render as JSON; bin items as {\"bin\":hex}" {
	dec 'raw(batch([S([1, 2], None, [1, 2], 1, None, "GPU", None, [None, ["a" * 4, ["img", 3], b"\xbe\xef"]])]))'
	assert_success
	assert_output --partial '"extra_keys":[null,["aaaa",["img",3],{"bin":"beef"}]],'
}

@test "strings: invalid UTF-8 becomes \\ufffd (§6.3)" {
	# python3-msgpack cannot pack a str with invalid UTF-8: build it by hand,
	# [0, [["BlockRemoved", [1], "G\xffU"]], 0]
	hex2bin '930091' >"$BATS_TEST_TMPDIR/u"
	printf '\x93\xacBlockRemoved\x91\x01\xa3G\xffU\x00' >>"$BATS_TEST_TMPDIR/u"
	run --separate-stderr kvp kv-decode --in raw "$BATS_TEST_TMPDIR/u"
	assert_success
	assert_output --partial '"medium":"G\ufffdU",'
}

# ---- field by field against the generator ----------------------------------------------------------

# bats test_tags=valgrind
@test "generated vLLM/SGLang capture: every field matches what gen.py encoded (jsonl, frames, raw)" {
	/usr/bin/python3 "$FIX/kv-decode/gen.py" "$BATS_TEST_TMPDIR/g" 40 7
	run --separate-stderr kvp kv-decode -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/g/capture.jsonl"
	assert_success
	run /usr/bin/python3 "$FIX/kv-decode/check.py" "$BATS_TEST_TMPDIR/g/expected.jsonl" "$BATS_TEST_TMPDIR/out"
	assert_success
	assert_output --regexp ' 0 mismatches$'
	kvp kv-decode --worker-id 1 "$BATS_TEST_TMPDIR/g/frames.bin" >"$BATS_TEST_TMPDIR/out2"
	run /usr/bin/python3 "$FIX/kv-decode/check.py" "$BATS_TEST_TMPDIR/g/expected.jsonl" "$BATS_TEST_TMPDIR/out2" worker_id
	assert_success
	kvp kv-decode "$BATS_TEST_TMPDIR/g/stream.bin" >"$BATS_TEST_TMPDIR/out3"
	run /usr/bin/python3 "$FIX/kv-decode/check.py" "$BATS_TEST_TMPDIR/g/expected.jsonl" "$BATS_TEST_TMPDIR/out3" worker_id seq
	assert_success
}

# ---- inputs ------------------------------------------------------------------------------------------

@test "raw: several concatenated batches get seq 0, 1, 2; a batch larger than a read chunk works" {
	dec '[raw(batch([C()])), raw(batch([S([1], None, list(range(40000)), 40000)])), raw(batch([C()]))]'
	assert_success
	assert_line --index 0 --partial '"seq":0,'
	assert_line --index 1 --partial '"seq":1,'
	assert_line --index 2 --partial '"seq":2,'
	[ "${#lines[@]}" -eq 3 ]
}

@test "raw: truncated msgpack is reported at its byte offset; earlier batches are written" {
	n=$(mk 'len(raw(batch([C()])))') # python3-msgpack's size of one batch
	dec '[raw(batch([C()])), raw(batch([C()]))[:-2]]'
	assert_failure 1
	assert_line --index 0 --partial '"rec":"event","seq":0,'
	assert_line --index 1 --regexp '^\{"rec":"error","seq":null,"stage":"msgpack","idx":null,"msg":"truncated msgpack: '
	[[ "$stderr" == "kv-decode: $BATS_TEST_TMPDIR/in:@$n: truncated msgpack: "* ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
	dec 'raw(batch([C()]))[:1]'
	assert_failure 1
	assert_output --partial '"msg":"truncated msgpack: array header at offset 0 claims 3 elements, but only 0 bytes remain"'
}

@test "raw: a header claiming 2^32-1 elements in a 20-byte file is an error, not an allocation" {
	printf '\xdd\xff\xff\xff\xff%015d' 0 >"$BATS_TEST_TMPDIR/h"
	run --separate-stderr kvp kv-decode --in raw "$BATS_TEST_TMPDIR/h"
	assert_failure 1
	[[ "$stderr" == *":@0: implausible msgpack: array header at offset 0 claims 4294967295 elements, but only 15 bytes remain" ]]
	hex2bin 93cb0000000000000000dd7fffffff >"$BATS_TEST_TMPDIR/h2"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/h2"
	assert_failure 1
	assert_output --partial '"stage":"msgpack"'
}

@test "raw: invalid byte 0xc1 and over-deep nesting are errors" {
	printf '\x93\xc1' >"$BATS_TEST_TMPDIR/x"
	run --separate-stderr kvp kv-decode --in raw "$BATS_TEST_TMPDIR/x"
	assert_failure 1
	assert_output --partial '"msg":"invalid msgpack: byte 0xc1 at offset 1"'
	mk 'raw(batch([C()], 0.0, 0, eval("["*40 + "]"*40)))' >"$BATS_TEST_TMPDIR/deep"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/deep"
	assert_failure 1
	assert_output --partial 'nested deeper than 32 levels'
}

@test "--in forces a format; auto-detection picks jsonl, frames and raw" {
	dec 'raw(batch([C()]))' --in jsonl
	assert_failure 1
	assert_output --partial '"stage":"line"'
	run --separate-stderr kvp kv-decode --in yaml /dev/null
	assert_failure 2
	[[ "$stderr" == *"--in: unknown format 'yaml'"* ]]
}

@test "several files: --worker-id by position; once for all; a mismatched count is a usage error" {
	mk 'raw(batch([C()]))' >"$BATS_TEST_TMPDIR/a"
	mk 'live(1, batch([C()]))' >"$BATS_TEST_TMPDIR/b"
	run --separate-stderr kvp kv-decode --worker-id 7 --worker-id 9 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_success
	assert_line --index 0 --partial '"worker_id":7,'
	assert_line --index 1 --partial '"worker_id":9,'
	run --separate-stderr kvp kv-decode --worker-id 5 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_line --index 1 --partial '"worker_id":5,'
	run --separate-stderr kvp kv-decode --worker-id 1 --worker-id 2 --worker-id 3 "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	assert_failure 2
	[ -z "$output" ]
}

@test "capture: a line's worker_id wins over --worker-id" {
	dec '[cap(1, batch([C()]), worker_id=3), cap(1, batch([C()]))]' --worker-id 8
	assert_success
	assert_line --index 0 --partial '"worker_id":3,'
	assert_line --index 1 --partial '"worker_id":8,'
}

# ---- error paths ----------------------------------------------------------------------------------------

@test "empty input: no output, exit 0" {
	run --separate-stderr kvp kv-decode </dev/null
	assert_success
	assert_output ''
	[ -z "$stderr" ]
}

@test "capture: CRLF line ends and a last line without newline are accepted" {
	mk '[cap(1, batch([C()])).replace("\n", "\r\n"), cap(2, batch([C()])).rstrip("\n")]' >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/c"
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 1 --partial '"seq":2,'
}

@test "capture: an over-long line is an error; -k goes on with the next" {
	mk '[cap(1, batch([C()])), cap(2, batch([S([1], None, list(range(300)), 300)])), cap(3, batch([C()]))]' >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr kvp kv-decode -k --max-line-bytes 300 "$BATS_TEST_TMPDIR/c"
	assert_failure 1
	assert_line --index 1 '{"rec":"error","seq":null,"stage":"line","idx":null,"msg":"line too long (over 300 bytes; see --max-line-bytes)"}'
	assert_line --index 2 --partial '"rec":"gap","stream":"kv-events:0:0","expected":2,"got":3,'
	assert_line --index 3 --partial '"seq":3,'
	[ "$stderr" = "kv-decode: $BATS_TEST_TMPDIR/c:2: line too long (over 300 bytes; see --max-line-bytes)
kv-decode: 3 records in, 2 written, 1 skipped, 1 errors (0 not shown)" ]
}

@test "capture: bad base64 is an error naming the offset" {
	printf '{"seq":1,"topic":"t","payload_b64":"kwA*"}\n' >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/c"
	assert_failure 1
	assert_output '{"rec":"error","seq":1,"stage":"line","idx":null,"msg":"payload_b64: invalid base64: character '"'*'"' at offset 4"}'
	[ "$stderr" = "kv-decode: $BATS_TEST_TMPDIR/c:1: seq 1: payload_b64: invalid base64: character '*' at offset 4" ]
}

@test "capture: payload_len must match the decoded payload (§5)" {
	n=$(mk 'len(raw(batch([C()])))') # python3-msgpack's size of the payload
	dec 'cap(1, batch([C()]), payload_len=99)'
	assert_failure 1
	assert_output '{"rec":"error","seq":1,"stage":"line","idx":null,"msg":"payload_len is 99 but payload_b64 decodes to '"$n"' bytes"}'
}

@test "capture: invalid JSON and a missing seq are line errors" {
	printf '{"seq":\n{"payload_b64":"kAA="}\n' >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr kvp kv-decode -k "$BATS_TEST_TMPDIR/c"
	assert_failure 1
	assert_line --index 0 --partial '"stage":"line"'
	assert_line --index 1 '{"rec":"error","seq":null,"stage":"line","idx":null,"msg":"missing key \"seq\""}'
}

@test "-k with mixed good and bad lines: exit 1, every good record out; without -k stop at the first" {
	mk '[cap(1, batch([C()])), "garbage\n", cap(2, batch([C()])), cap(3, b"\xc1"), cap(4, batch([C()]))]' >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr kvp kv-decode -k "$BATS_TEST_TMPDIR/c"
	assert_failure 1
	[ "$(grep -c '"rec":"event"' <<<"$output")" -eq 3 ]
	[ "$(grep -c '"rec":"error"' <<<"$output")" -eq 2 ]
	[ "${#stderr_lines[@]}" -eq 3 ] # two errors, the -k totals line
	[ "${stderr_lines[2]}" = "kv-decode: 5 records in, 3 written, 2 skipped, 2 errors (0 not shown)" ]
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/c"
	assert_failure 1
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --partial '"seq":1,'
	assert_line --index 1 --partial '"rec":"error"'
}

@test "a missing file exits 2 with a message" {
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/nope"
	assert_failure 2
	[[ "$stderr" == "kv-decode: $BATS_TEST_TMPDIR/nope: No such file or directory" ]]
}

@test "output to /dev/full exits 2 with a message" {
	hex2bin "$F1" >"$BATS_TEST_TMPDIR/f1"
	run --separate-stderr kvp kv-decode -o /dev/full "$BATS_TEST_TMPDIR/f1"
	assert_failure 2
	[[ "$stderr" == *"write error on /dev/full"* ]]
}

@test "capture: payload_b64 with a JSON escape (\\/) or a nested decoy key still decodes (fast path falls back)" {
	b=$(b64 "$F1")
	esc=${b//\//\\/}
	printf '{"x":{"payload_b64":"AAAA"},"seq":1,"payload_b64":"%s"}\n{"seq":2,"payload_b64":"%s"}\n' "$b" "$esc" >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/c"
	assert_success
	assert_line --index 0 --partial '"seq":1,"topic":"","source":null,"ts":0,"dp_rank":0,"worker_id":0,"idx":0,"enc":"array","type":"BlockStored","block_hashes":[11,12],'
	assert_line --index 0 --partial '"x_capture":{"x":{"payload_b64":"AAAA"}}}'
	assert_line --index 1 --partial '"seq":2,'
	assert_line --index 1 --partial '"block_hashes":[11,12],'
}

@test "capture: invalid JSON after the payload reports the column of the original line" {
	printf '{"seq":1,"payload_b64":"%s", x}\n' "$(b64 "$F1")" >"$BATS_TEST_TMPDIR/c"
	off=$(grep -bo ' x}' "$BATS_TEST_TMPDIR/c" | cut -d: -f1) # 0-based offset of " x"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/c"
	assert_failure 1
	[ "$stderr" = "kv-decode: $BATS_TEST_TMPDIR/c:1:$((off + 2)): invalid JSON: quoted object property name expected" ]
}

@test "standard input: raw msgpack and frames are auto-detected" {
	hex2bin "$F2" | {
		run --separate-stderr kvp kv-decode
		assert_success
		assert_output --partial '"block_hashes":[18446744073709551615],'
	}
	mk 'live(3, batch([C()]))' | {
		run --separate-stderr kvp kv-decode -
		assert_success
		assert_output --partial '"seq":3,"topic":"kv-events",'
	}
}

@test "demo capture: two workers, a gap on worker 1, a clear on worker 2" {
	run --separate-stderr kvp kv-decode "$FIX/demo/capture.jsonl"
	assert_success
	[ "$(grep -c '"rec":"event"' <<<"$output")" -eq 8 ]
	assert_line --partial '{"rec":"gap","stream":"kv-events:0:1","expected":3,"got":4,'
	assert_line --partial '"worker_id":2,"idx":0,"enc":"map","type":"AllBlocksCleared"'
}

@test "token ids print exactly at every digit-count boundary" {
	dec 'raw(batch([S([1], None, [0, 9, 10, 99, 100, 99999, 100000, 999999, 10**6, 10**7 - 1, 10**7, 10**8, 10**9 - 1, 10**9, 2**32 - 1, 2**32, 10**10 - 1, 10**10, 10**11, 10**15 + 7, 10**19 - 1, 10**19, 2**64 - 1], 1)]))'
	assert_success
	assert_output --partial '"token_ids":[0,9,10,99,100,99999,100000,999999,1000000,9999999,10000000,100000000,999999999,1000000000,4294967295,4294967296,9999999999,10000000000,100000000000,1000000000000007,9999999999999999999,10000000000000000000,18446744073709551615],'
}

@test "--max-line-bytes also bounds raw batches and frames" {
	dec '[raw(batch([C()])), raw(batch([S([1], None, list(range(300)), 300)])), raw(batch([C()]))]' --max-line-bytes 200
	assert_failure 1
	assert_line --index 0 --partial '"type":"AllBlocksCleared"'
	assert_line --index 1 --partial '"stage":"msgpack","idx":null,"msg":"batch at offset '
	[ "${#lines[@]}" -eq 2 ]
	dec '[live(1, batch([C()])), frames("t", be64(2), raw(batch([S([1], None, list(range(300)), 300)]))), live(3, batch([C()]))]' -k --max-line-bytes 200
	assert_failure 1
	assert_line --index 1 '{"rec":"error","seq":2,"stage":"frame","idx":null,"msg":"frame larger than 200 bytes (--max-line-bytes)"}'
	assert_line --index 3 --partial '"seq":3,'
}

@test "kv-capture's lost lines are passed over; the missing seqs show as a gap" {
	# a capture of seqs 0 and 3 with kv-capture's lost line for 1..2 between
	p=$(head -1 "$FIX/demo/capture.jsonl" | jq -r .payload_b64)
	{
		printf '{"source":"live","topic":"t","seq":0,"payload_b64":"%s"}\n' "$p"
		printf '{"rec":"lost","stream":"tcp://h:1","from":1,"to":2,"recv_ts":1.5}\n'
		printf '{"source":"live","topic":"t","seq":3,"payload_b64":"%s"}\n' "$p"
	} >"$BATS_TEST_TMPDIR/cap.jsonl"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/cap.jsonl"
	assert_success
	[ "$(grep -c '"rec":"event"' <<<"$output")" -eq 2 ]
	grep -q '"rec":"gap".*"expected":1,"got":3' <<<"$output" || fail "$output"
	[ -z "$stderr" ]
}

@test "issue 28.8: a restart line resets the stream's seq tracking: a restart record, not stale" {
	# seqs 0 1 2 on topics t and u, then a restart of t (worker 0): seq 0
	# of t is its new run; u's seq 1 again is still stale
	p=$(head -1 "$FIX/demo/capture.jsonl" | jq -r .payload_b64)
	{
		for s in 0 1 2; do
			printf '{"topic":"t","seq":%d,"payload_b64":"%s"}\n' "$s" "$p"
			printf '{"topic":"u","seq":%d,"payload_b64":"%s"}\n' "$s" "$p"
		done
		printf '{"rec":"restart","stream":"tcp://h:1","topic":"t","last_seq":2,"first_seq":0,"epoch":2,"recv_ts":1.5}\n'
		printf '{"topic":"t","seq":0,"payload_b64":"%s"}\n' "$p"
		printf '{"topic":"u","seq":1,"payload_b64":"%s"}\n' "$p"
		printf '{"topic":"t","seq":1,"payload_b64":"%s"}\n' "$p"
	} >"$BATS_TEST_TMPDIR/cap.jsonl"
	run --separate-stderr kvp kv-decode --drop-stale "$BATS_TEST_TMPDIR/cap.jsonl"
	assert_success
	[ -z "$stderr" ] || fail "$stderr"
	n=$(head -1 "$FIX/demo/capture.jsonl" | kvp kv-decode | wc -l)
	[ "$(grep -c '"rec":"event"' <<<"$output")" -eq $((8 * n)) ] || fail "$output"
	rank=$(head -1 "$FIX/demo/capture.jsonl" | kvp kv-decode | jq -r '.dp_rank' | head -1)
	diff <(grep -v '"rec":"event"' <<<"$output") - <<EOF || fail "$output"
{"rec":"restart","stream":"t:$rank:0","expected":3,"got":0,"topic":"t","dp_rank":$rank,"worker_id":0}
{"rec":"stale","stream":"u:$rank:0","expected":3,"got":1,"topic":"u","dp_rank":$rank,"worker_id":0}
EOF
	# a restart of another worker resets nothing here; a bad one is a line error
	printf '{"rec":"restart","topic":"t","worker_id":9}\n{"topic":"t","seq":1,"payload_b64":"%s"}\n' "$p" >"$BATS_TEST_TMPDIR/w.jsonl"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/cap.jsonl" "$BATS_TEST_TMPDIR/w.jsonl"
	assert_success
	[ "$(grep -c '"rec":"restart"' <<<"$output")" -eq 1 ]
	[ "$(grep -c '"rec":"stale"' <<<"$output")" -eq 2 ] || fail "$(grep -v '"rec":"event"' <<<"$output")"
	printf '{"rec":"restart","topic":7}\n' >"$BATS_TEST_TMPDIR/bad.jsonl"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/bad.jsonl"
	assert_failure 1
	[ "$(jq -r .stage <<<"$output")" = line ]
	[[ "$stderr" == *"bad.jsonl:1: "*'"topic" is not a string'* ]] || fail "$stderr"
}

# ---- issue 15: hostile inputs ------------------------------------------------

# kwCQAA== is msgpack [0, [], 0] (93 00 90 00), by hand.
@test "issue 15: 200,000 distinct streams decode in linear time (the old scan took about a minute)" {
	awk 'BEGIN { for (i = 0; i < 200000; i++)
		printf "{\"topic\":\"t%d\",\"seq\":1,\"payload_b64\":\"kwCQAA==\"}\n", i
		printf "{\"topic\":\"t5\",\"seq\":3,\"payload_b64\":\"kwCQAA==\"}\n" }' >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr timeout 30 "$KVP_BIN/kv-decode" "$BATS_TEST_TMPDIR/c"
	assert_success
	# stream t5 is still known: seq 3 after 1 is a gap (expected 2)
	assert_output '{"rec":"gap","stream":"t5:0:0","expected":2,"got":3,"topic":"t5","dp_rank":0,"worker_id":0}'
}

@test "issue 15: a topic over 4096 bytes is a line error; 4096 is accepted" {
	t4096=$(printf '%04096d' 0)
	printf '{"topic":"%s","seq":0,"payload_b64":"kwCQAA=="}\n{"topic":"%s1","seq":0,"payload_b64":"kwCQAA=="}\n' "$t4096" "$t4096" >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/c"
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"line","idx":null,"msg":"\"topic\" is 4097 bytes; at most 4096 are accepted"}'
	[ "$stderr" = "kv-decode: $BATS_TEST_TMPDIR/c:2: seq 0: \"topic\" is 4097 bytes; at most 4096 are accepted" ]
}

@test "issue 15: a topic frame over 4096 bytes is a frame error" {
	# frames: count 3; topic (4097 x 'a'), seq (8 bytes), payload [0, [], 0]
	{
		printf '\0\0\0\3\0\0\020\001'
		head -c 4097 /dev/zero | tr '\0' a
		printf '\0\0\0\010\0\0\0\0\0\0\0\0\0\0\0\004\223\0\220\0'
	} >"$BATS_TEST_TMPDIR/f"
	run --separate-stderr kvp kv-decode --in frames "$BATS_TEST_TMPDIR/f"
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"frame","idx":null,"msg":"topic frame is 4097 bytes; at most 4096 are accepted"}'
}

@test "issue 15: a 30 MB raw batch of nils decodes in at most 4x its size (no msgpack-c object tree)" {
	# dd 01c9c380: an array of 30,000,000 elements, all nil (c0): the
	# envelope's ts is nil, one envelope error (the old unpacker used
	# about 735 MB building a tree of it)
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(b"\xdd\x01\xc9\xc3\x80" + b"\xc0" * 30000000)' >"$BATS_TEST_TMPDIR/nils"
	run --separate-stderr /usr/bin/time -f %M -o "$BATS_TEST_TMPDIR/rss" "$KVP_BIN/kv-decode" --in raw "$BATS_TEST_TMPDIR/nils"
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"envelope","idx":null,"msg":"envelope ts: expected a number, got nil"}'
	rss=$(tail -1 "$BATS_TEST_TMPDIR/rss")
	# 4 x 30,000,005 bytes = 117,188 KiB
	[ "$rss" -le 117188 ] || { echo "peak RSS $rss KiB" >&2; false; }
}

@test "issue 15: an extra capture member over 4096 bytes goes once on the batch record; events get its size" {
	mk 'raw(batch([C(), C()]))' >"$BATS_TEST_TMPDIR/p"
	big=$(printf '%05000d' 0)
	printf '{"seq":1,"payload_b64":"%s","note":"%s"}\n{"seq":2,"payload_b64":"%s","note":"x"}\n' \
		"$(base64 -w0 "$BATS_TEST_TMPDIR/p")" "$big" "$(base64 -w0 "$BATS_TEST_TMPDIR/p")" >"$BATS_TEST_TMPDIR/c"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/c"
	assert_success
	# {"note":"<5000 zeros>"} is 5011 bytes (by hand: 2 + 6 + 1 + 5002)
	assert_line --index 0 --partial '"idx":0,"enc":"array","type":"AllBlocksCleared","source_kind":null,"x_capture_bytes":5011}'
	assert_line --index 1 --partial '"idx":1,"enc":"array","type":"AllBlocksCleared","source_kind":null,"x_capture_bytes":5011}'
	assert_line --index 2 --partial '"idx":0,"enc":"array","type":"AllBlocksCleared","source_kind":null,"x_capture":{"note":"x"}}'
	[ "${#lines[@]}" -eq 4 ]
	[ "$(wc -c <"$BATS_TEST_TMPDIR/c")" -gt 5000 ]
	[ "${#output}" -lt 2000 ]
	run --separate-stderr kvp kv-decode --batches "$BATS_TEST_TMPDIR/c"
	assert_success
	assert_line --index 0 '{"rec":"batch","seq":1,"ts":0,"dp_rank":0,"n_events":2,"bytes":'"$(wc -c <"$BATS_TEST_TMPDIR/p")"',"topic":"","worker_id":0,"enc":"array","x_capture":{"note":"'"$big"'"}}'
	assert_line --index 1 --partial '"x_capture_bytes":5011}'
}

@test "issue 15: without -k a batch of many bad events stops at the first (one error record); -k writes them all" {
	# an envelope [0, [100,000 x -1], 0]: every event is a negative integer
	/usr/bin/python3 -c 'import sys, struct; sys.stdout.buffer.write(b"\x93\x00\xdc" + struct.pack(">H", 60000) + b"\xff" * 60000 + b"\x00")' >"$BATS_TEST_TMPDIR/bad"
	run --separate-stderr kvp kv-decode --in raw "$BATS_TEST_TMPDIR/bad"
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"event","idx":0,"msg":"event is a negative integer, not an array or a map"}'
	[ "${#stderr_lines[@]}" -eq 1 ]
	run --separate-stderr kvp kv-decode -k --max-errors 2 --in raw "$BATS_TEST_TMPDIR/bad"
	assert_failure 1
	[ "${#lines[@]}" -eq 60000 ]
	assert_line --index 59999 '{"rec":"error","seq":0,"stage":"event","idx":59999,"msg":"event is a negative integer, not an array or a map"}'
}

@test "issue 15: without -k a bad event ends the run; events after it in the batch are not written" {
	mk 'raw(batch([C(), -1, C()]))' >"$BATS_TEST_TMPDIR/p"
	run --separate-stderr kvp kv-decode "$BATS_TEST_TMPDIR/p"
	assert_failure 1
	assert_line --index 0 --partial '"idx":0,"enc":"array","type":"AllBlocksCleared"'
	assert_line --index 1 '{"rec":"error","seq":0,"stage":"event","idx":1,"msg":"event is a negative integer, not an array or a map"}'
	[ "${#lines[@]}" -eq 2 ]
}

# Issue 28 item 9: json-c built the whole tree of a line, 37 times its
# size (a 62 MiB line of small integers peaked at 2.3 GB).
@test "issue 28: a 16 MiB capture line of small integers peaks under 8x its size; x_capture as written" {
	d=$BATS_TEST_TMPDIR
	# one AllBlocksCleared at ts 1.5
	long_line "$d/x" '{"seq":0,"topic":"kv-events","payload_b64":"kss/+AAAAAAAAJGSsEFsbEJsb2Nrc0NsZWFyZWTA","x":[' '],"y":[true,null,"s",2.5]}' 16
	run -0 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/kv-decode" --batches "$d/x"
	rss_within 8 "$d/x" "$d/rss" kv-decode
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -c '[.rec, (.x_capture.x | length), (.x_capture.x | add), .x_capture.y]' <<<"${lines[0]}")" = '["batch",8388608,8388608,[true,null,"s",2.5]]' ]
	# x_capture's length: {"x":[ + 8388608 ones and their commas + the rest
	[ "$(jq -c '[.rec, .type, .x_capture_bytes]' <<<"${lines[1]}")" = '["event","AllBlocksCleared",16777247]' ]
}

@test "issue 28: 16 MiB capture lines that are wrong say so as before, under 8x their size" {
	d=$BATS_TEST_TMPDIR
	long_line "$d/a" '{"token_ids":[' ']}' 16
	run -1 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/kv-decode" "$d/a"
	rss_within 8 "$d/a" "$d/rss" kv-decode
	[[ "$stderr" == "kv-decode: $d/a:1: missing key \"seq\""* ]]
	long_line "$d/b" '[' ']' 16
	run -1 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/kv-decode" "$d/b"
	rss_within 8 "$d/b" "$d/rss" kv-decode
	[[ "$stderr" == "kv-decode: $d/b:1:1: record: expected a JSON object"* ]]
	long_line "$d/c" '{"seq":0,"payload_b64":"","x":[' '' 16
	run -1 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/kv-decode" "$d/c"
	rss_within 8 "$d/c" "$d/rss" kv-decode
	[[ "$stderr" == "kv-decode: $d/c:1:$(($(wc -c <"$d/c"))): invalid JSON: unexpected end of line"* ]]
}
