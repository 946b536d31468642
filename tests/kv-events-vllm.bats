#!/usr/bin/env bats
# The newer vLLM and Dynamo fields (issue 29 §3; docs/spec/kv-events.md §2.8,
# §6.4, docs/spec/route-score.md §2.5): medium STORAGE, sparse stores'
# block_offsets, BlockInactive, Mamba placeholder stores, the tolerated
# third-party fields, and Dynamo's standalone-indexer /dump in route-score.
#
# Inputs are built with Debian's python3-msgpack (tests/fixtures/kv-decode/
# mk.py, an encoder independent of kvpipe) or written as kv-decode records
# by hand. Expected decoded values are the values encoded; tokens_hash
# values come from tests/fixtures/kv-normalize/dynhash.py (an independent
# Python model of Dynamo's block hash over libxxhash) or the §6.5 vectors;
# event ids, filter reasons and overlaps follow the rules by hand.
load test_helper

NF="$FIX/kv-normalize"
W2P32=4294967296 # 2^32: the smallest wide token id

mk() { /usr/bin/python3 "$FIX/kv-decode/mk.py" "$1"; }
th() { /usr/bin/python3 "$NF/dynhash.py" "$@"; }

# dec EXPR [ARGS] — builds a raw batch file with mk.py and decodes it
dec() {
	local expr=$1
	shift
	mk "$expr" >"$BATS_TEST_TMPDIR/in"
	run --separate-stderr kvp kv-decode "$@" "$BATS_TEST_TMPDIR/in"
}

# The head every decoded event of a one-batch raw input has (seq 0, ts 0).
head_rec() {
	printf '{"rec":"event","seq":0,"topic":"","source":null,"ts":0,"dp_rank":0,"worker_id":0,"idx":%s,"enc":"%s","type":"%s"' "$1" "$2" "$3"
}

# rec TYPE FIELDS — a kv-decode event record for seq $S, idx $I (rank 0,
# worker 0, ts 1.5 s).
rec() {
	printf '{"rec":"event","seq":%s,"topic":"kv-events","source":"live","ts":1.5,"dp_rank":0,"worker_id":0,"idx":%s,"enc":"map","type":"%s"%s}\n' \
		"${S:-0}" "${I:-0}" "$1" "${2:+,$2}"
}
# store HASHES PARENT TOKENS BS [FIELDS]
store() {
	rec BlockStored "\"block_hashes\":[$1],\"parent_block_hash\":$2,\"token_ids\":[$3],\"token_layout\":\"flat\",\"block_size\":$4${5:+,$5}"
}
blk() { printf '{"block_hash":%s,"tokens_hash":%s,"mm_extra_info":null}' "$1" "$2"; }
# out_stored EID BLOCKS [ACTION KEPT EXCLUDED] — no parent; tier $TIER.
out_stored() {
	printf '{"worker_id":0,"storage_tier":"%s","residency_domain":"worker","event":{"event_id":%s,"data":{"stored":{"parent_hash":null,"start_position":null,"blocks":[%s]}},"dp_rank":0},"x":{"seq":%s,"idx":%s,"action":"%s","kept":%s,"excluded":%s,"ts_ms":1500}}\n' \
		"${TIER:-device}" "$1" "$2" "${S:-0}" "${I:-0}" "${3:-pass}" "${4:-0}" "${5:-0}"
}
out_filtered() {
	printf '{"rec":"filtered","seq":%s,"idx":%s,"worker_id":0,"dp_rank":0,"event_type":"%s","reason":"%s"}\n' \
		"${S:-0}" "${I:-0}" "$1" "$2"
}

# ---- kv-decode ---------------------------------------------------------------

@test "BlockInactive decodes in map and array form with BlockRemoved's keys" {
	dec 'raw(batch([M("BlockInactive", block_hashes=[5, 6], medium="GPU", group_idx=0), ["BlockInactive", [7]]]))'
	assert_success
	assert_line --index 0 "$(head_rec 0 map BlockInactive),\"block_hashes\":[5,6],\"medium\":\"GPU\",\"group_idx\":0,\"kv_cache_spec_kind\":null,\"locality\":null,\"hash_repr\":\"uint\",\"kv_cache_spec_sliding_window\":null,\"source_kind\":null}"
	assert_line --index 1 "$(head_rec 1 array BlockInactive),\"block_hashes\":[7],\"medium\":null,\"group_idx\":null,\"kv_cache_spec_kind\":null,\"locality\":null,\"hash_repr\":\"uint\",\"kv_cache_spec_sliding_window\":null,\"source_kind\":null}"
	[ "${#lines[@]}" -eq 2 ]
	[ -z "$stderr" ]
}

@test "BlockInactive: a map without block_hashes is an event error; --strict rejects its batch as Dynamo's decoder does" {
	dec 'raw(batch([M("BlockInactive", medium="GPU")]))'
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"event","idx":0,"msg":"missing key \"block_hashes\""}'
	dec 'raw(batch([S([11], None, [1, 2], 2), M("BlockInactive", block_hashes=[5])]))' --strict
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"batch","idx":1,"msg":"event 1: unknown event tag \"BlockInactive\" for Dynamo; whole batch rejected (--strict)"}'
}

@test "block_offsets of a sparse store is written after the fixed keys" {
	dec 'raw(batch([M("BlockStored", block_hashes=[11, 12], parent_block_hash=None, token_ids=[10, 11, 12, 13, 14, 15], block_size=2, block_offsets=[0, 2])]))'
	assert_success
	assert_output "$(head_rec 0 map BlockStored),\"block_hashes\":[11,12],\"parent_block_hash\":null,\"token_ids\":[10,11,12,13,14,15],\"token_layout\":\"flat\",\"wide_tokens\":0,\"block_size\":2,\"lora_id\":null,\"lora_name\":null,\"medium\":null,\"cache_salt\":null,\"session_id\":null,\"extra_keys\":null,\"group_idx\":null,\"kv_cache_spec_kind\":null,\"kv_cache_spec_sliding_window\":null,\"locality\":null,\"hash_repr\":\"uint\",\"source_kind\":null,\"block_offsets\":[0,2]}"
	[ -z "$stderr" ]
	# nil is a dense store: no key written
	dec 'raw(batch([M("BlockStored", block_hashes=[11], parent_block_hash=None, token_ids=[1, 2], block_size=2, block_offsets=None)]))'
	assert_success
	refute_output --partial block_offsets
}

@test "block_offsets: a count other than the hashes', a negative or a non-integer entry is an event error" {
	dec 'raw(batch([M("BlockStored", block_hashes=[11, 12], parent_block_hash=None, token_ids=[1, 2, 3, 4], block_size=2, block_offsets=[0])]))'
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"event","idx":0,"msg":"block_offsets: 1 entries for 2 block hashes"}'
	dec 'raw(batch([M("BlockStored", block_hashes=[11], parent_block_hash=None, token_ids=[1, 2], block_size=2, block_offsets=[-1])]))'
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"event","idx":0,"msg":"block_offsets[0]: -1 is negative"}'
	dec 'raw(batch([M("BlockStored", block_hashes=[11], parent_block_hash=None, token_ids=[1, 2], block_size=2, block_offsets="0")]))'
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"event","idx":0,"msg":"block_offsets: expected an array, got string"}'
}

@test "a Mamba placeholder store (token_ids empty, block_size 0) decodes" {
	dec 'raw(batch([M("BlockStored", block_hashes=[9], parent_block_hash=8, token_ids=[], block_size=0, medium="GPU", group_idx=1, kv_cache_spec_kind="mamba")]))'
	assert_success
	assert_output "$(head_rec 0 map BlockStored),\"block_hashes\":[9],\"parent_block_hash\":8,\"token_ids\":[],\"token_layout\":\"flat\",\"wide_tokens\":0,\"block_size\":0,\"lora_id\":null,\"lora_name\":null,\"medium\":\"GPU\",\"cache_salt\":null,\"session_id\":null,\"extra_keys\":null,\"group_idx\":1,\"kv_cache_spec_kind\":\"mamba\",\"kv_cache_spec_sliding_window\":null,\"locality\":null,\"hash_repr\":\"uint\",\"source_kind\":null}"
	[ -z "$stderr" ]
}

@test "third-party keys are tolerated whatever their value, listed in x_third_party and counted on stderr" {
	dec 'raw(batch([M("BlockStored", block_hashes=[11], parent_block_hash=None, token_ids=[1, 2], block_size=2, token_offset=4, component_id={"a": [1]}, snapshot_version="v7", foo=1), M("BlockRemoved", block_hashes=[11], token_offset=None), M("AllBlocksCleared", snapshot_version=3)]))'
	assert_success
	assert_line --index 0 --partial '"source_kind":null,"x_unknown_keys":["foo"],"x_third_party":["token_offset","component_id","snapshot_version"]}'
	assert_line --index 1 --partial '"type":"BlockRemoved","block_hashes":[11],'
	assert_line --index 1 --partial '"x_third_party":["token_offset"]}'
	assert_line --index 2 "$(head_rec 2 map AllBlocksCleared),\"source_kind\":null,\"x_third_party\":[\"snapshot_version\"]}"
	# counts: events carrying each field
	[ "$stderr" = "kv-decode: note: third-party fields tolerated (events): token_offset 2, component_id 1, snapshot_version 2" ]
}

# bats test_tags=valgrind
@test "BlockTransferred (a third-party tag) decodes as itself with the whole event in x_event, never an error" {
	dec 'raw(batch([M("BlockTransferred", block_hashes=[1], dst={"w": 2}), ["BlockTransferred", 1, [2, 3]], C()]))'
	assert_success
	assert_line --index 0 "$(head_rec 0 map BlockTransferred),\"x_event\":{\"type\":\"BlockTransferred\",\"block_hashes\":[1],\"dst\":{\"w\":2}},\"x_third_party\":[\"BlockTransferred\"]}"
	assert_line --index 1 "$(head_rec 1 array BlockTransferred),\"x_event\":[\"BlockTransferred\",1,[2,3]],\"x_third_party\":[\"BlockTransferred\"]}"
	assert_line --index 2 --partial '"type":"AllBlocksCleared"'
	[ "$stderr" = "kv-decode: note: third-party fields tolerated (events): BlockTransferred 2" ]
	# an unknown tag is still an event error (§6.6 12)
	dec 'raw(batch([["BlockMoved", 1]]))'
	assert_failure 1
	assert_output --partial '"msg":"unknown event tag \"BlockMoved\""'
}

@test "--strict: Dynamo's decoder knows no BlockTransferred, so its batch is rejected" {
	dec 'raw(batch([C(), M("BlockTransferred")]))' --strict
	assert_failure 1
	assert_output '{"rec":"error","seq":0,"stage":"batch","idx":1,"msg":"event 1: unknown event tag \"BlockTransferred\" for Dynamo; whole batch rejected (--strict)"}'
}

# ---- kv-normalize ------------------------------------------------------------

@test "medium STORAGE (vLLM's FS/OBJ tiers) is the disk tier; FS and OBJ are dropped as unknown media" {
	in=$(I=0 store 11 null 10,11 2 '"medium":"STORAGE"'; I=1 store 12 null 12,13 2 '"medium":"FS"'; I=2 store 13 null 12,13 2 '"medium":"OBJ"')
	exp=$(I=0 TIER=disk out_stored 0 "$(blk 11 7369860969341005925)" pass 1 0; I=1 out_filtered BlockStored unknown_medium; I=2 out_filtered BlockStored unknown_medium)
	run -0 --separate-stderr kvp kv-normalize --block-size 2 <<<"$in"
	assert_output "$exp"
	[ -z "$stderr" ]
}

# bats test_tags=valgrind
@test "sparse store: only the chunks block_offsets names are hashed; --block-offsets ignore pairs them in order as Dynamo" {
	# chunks of 2: [10,11] [12,13] [14,15]; blocks are chunks 0 and 2
	[ "$(th 10 11)" = 7369860969341005925 ] # §6.5
	h2=$(th 14 15)
	in=$(store 11,12 null 10,11,12,13,14,15 2 '"block_offsets":[0,2]')
	run -0 --separate-stderr kvp kv-normalize --block-size 2 <<<"$in"
	assert_output "$(out_stored 0 "$(blk 11 7369860969341005925),$(blk 12 "$h2")" pass 2 0)"
	[ -z "$stderr" ]
	run -0 --separate-stderr kvp kv-normalize --block-size 2 --block-offsets ignore <<<"$in"
	assert_output "$(out_stored 0 "$(blk 11 7369860969341005925),$(blk 12 2046086924859723728)" pass 2 0)"
	run -0 --separate-stderr kvp kv-normalize --block-size 2 --block-offsets=use <<<"$in"
	assert_output "$(out_stored 0 "$(blk 11 7369860969341005925),$(blk 12 "$h2")" pass 2 0)"
}

@test "sparse store: a chunk past token_ids stops the walk there, with Dynamo's short-tokens warning" {
	in=$(store 11,12 null 10,11,12,13 2 '"block_offsets":[1,2]')
	run -0 --separate-stderr kvp kv-normalize --block-size 2 <<<"$in"
	assert_output "$(out_stored 0 "$(blk 11 2046086924859723728)" pass 2 0)"
	[ "$stderr" = "kv-normalize: -:1: warning: block not published: token_ids too short: need 6, got 4" ]
}

@test "sparse store: a bad block_offsets in a record is a bad record (exit 1), others go on with -k" {
	in=$(I=0 store 11,12 null 10,11,12,13 2 '"block_offsets":[0]'; I=1 store 11 null 10,11 2)
	run -1 --separate-stderr kvp kv-normalize -k --block-size 2 <<<"$in"
	assert_output "$(I=1 out_stored 0 "$(blk 11 7369860969341005925)" pass 1 0)"
	assert_line --index 0 --partial '"idx":1,'
	[[ "$stderr" == "kv-normalize: -:1: block_offsets: 1 entries for 2 block hashes"* ]]
}

@test "sparse store exclusion: a wide token in a skipped chunk excludes nothing; in a listed chunk it excludes from there (§4 rule 3)" {
	in=$(store 11,12 null "1,2,3,$W2P32,5,6" 2 '"block_offsets":[0,2]')
	run -0 --separate-stderr kvp kv-normalize --block-size 2 <<<"$in"
	assert_output "$(out_stored 0 "$(blk 11 "$(th 1 2)"),$(blk 12 "$(th 5 6)")" pass 2 0)"
	# dense, chunk 1 (3, 2^32) is block 1: excluded with its descendants
	run -0 --separate-stderr kvp kv-normalize --block-size 2 --block-offsets ignore <<<"$in"
	assert_output "$(out_stored 0 "$(blk 11 "$(th 1 2)")" truncated 1 1)"
	in=$(store 11,12 null "1,2,3,4,$W2P32,6" 2 '"block_offsets":[0,2]')
	run -0 --separate-stderr kvp kv-normalize --block-size 2 <<<"$in"
	assert_output "$(out_stored 0 "$(blk 11 "$(th 1 2)")" truncated 1 1)"
}

@test "BlockInactive and BlockTransferred are filtered without spending an event id" {
	in=$(I=0 rec BlockInactive '"block_hashes":[5],"medium":"GPU"'; I=1 rec BlockTransferred '"x_event":{"type":"BlockTransferred"}'; I=2 store 11 null 10,11 2)
	exp=$(I=0 out_filtered BlockInactive inactive_event; I=1 out_filtered BlockTransferred third_party_event; I=2 out_stored 0 "$(blk 11 7369860969341005925)" pass 1 0)
	run -0 --separate-stderr kvp kv-normalize --block-size 2 <<<"$in"
	assert_output "$exp"
	[ -z "$stderr" ]
}

@test "Mamba placeholder stores: kind mamba is filtered (§3.1); without a kind, Dynamo's walk publishes no block and warns" {
	in=$(I=0 store 9 null "" 0 '"group_idx":1,"kv_cache_spec_kind":"mamba"'; I=1 store 9 null "" 0)
	exp=$(I=0 out_filtered BlockStored non_main_attention_kind; I=1 out_stored 0 "" pass 1 0)
	run -0 --separate-stderr kvp kv-normalize --block-size 2 <<<"$in"
	assert_output "$exp"
	[ "$stderr" = "kv-normalize: -:2: warning: block not published: block size must be 2 tokens, event has 0 (a placeholder store: no token ids)" ]
}

@test "third-party keys in kv-decode records do not change what kv-normalize writes" {
	plain=$(store 11 null 10,11 2)
	tp=$(store 11 null 10,11 2 '"token_offset":4,"x_third_party":["token_offset"]')
	run -0 --separate-stderr kvp kv-normalize --block-size 2 <<<"$tp"
	assert_output "$(out_stored 0 "$(blk 11 7369860969341005925)" pass 1 0)"
	want=$output
	run -0 --separate-stderr kvp kv-normalize --block-size 2 <<<"$plain"
	assert_output "$want"
}

@test "decode | normalize: a vLLM batch with every new field goes through at exit 0" {
	mk 'raw(batch([M("BlockStored", block_hashes=[11, 12], parent_block_hash=None, token_ids=[10, 11, 12, 13, 14, 15], block_size=2, medium="STORAGE", block_offsets=[0, 2], component_id="c"), M("BlockInactive", block_hashes=[11]), M("BlockTransferred"), M("BlockStored", block_hashes=[9], parent_block_hash=None, token_ids=[], block_size=0, group_idx=1, kv_cache_spec_kind="mamba")]))' >"$BATS_TEST_TMPDIR/b"
	run -0 --separate-stderr bash -c "'$KVP_BIN/kv-decode' '$BATS_TEST_TMPDIR/b' 2>/dev/null | '$KVP_BIN/kv-normalize' --block-size 2"
	[ "${#lines[@]}" -eq 4 ]
	assert_line --index 0 --partial '"storage_tier":"disk"'
	assert_line --index 0 --partial "$(blk 12 "$(th 14 15)")"
	assert_line --index 1 --partial '"reason":"inactive_event"'
	assert_line --index 2 --partial '"reason":"third_party_event"'
	assert_line --index 3 --partial '"reason":"non_main_attention_kind"'
}

# ---- route-score: Dynamo's standalone-indexer /dump --------------------------

# A RouterEvent storing block hash $2 with tokens_hash $3 on worker $1.
rev() {
	printf '{"worker_id":%s,"storage_tier":"device","residency_domain":"worker","event":{"event_id":%s,"data":{"stored":{"parent_hash":null,"start_position":null,"blocks":[{"block_hash":%s,"tokens_hash":%s,"mm_extra_info":null}]}},"dp_rank":0}}' "$1" "${4:-0}" "$2" "$3"
}
# tokens [1,2,3,4] at block size 4: 14643705804678351452 (§6.5)
T1234=14643705804678351452

decision() { grep '"rec":"decision"' <<<"$output" | grep -o '"chosen":[^}]*},"overlap_blocks":[0-9]*'; }

# bats test_tags=valgrind
@test "/dump {model:routing_group: {block_size, events}}: its events are applied and its block size taken" {
	printf '{"m:default":{"block_size":4,"events":[%s]},"m:other":{"block_size":4,"events":[%s]}}\n' \
		"$(rev 1 100 $T1234)" "$(rev 2 200 1)" >"$BATS_TEST_TMPDIR/dump.json"
	echo '{"request_id":"a","token_ids":[1,2,3,4,5]}' >"$BATS_TEST_TMPDIR/req"
	run -0 --separate-stderr kvp route-score --events "$BATS_TEST_TMPDIR/dump.json" --requests "$BATS_TEST_TMPDIR/req" --brief
	# worker 1 holds the request's first block; worker 2 holds nothing of it
	[ "$(decision)" = '"chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":1' ]
	assert_line --index 1 --partial '"rec":"summary","events":2,"applied":2,'
	[ -z "$stderr" ]
	run -0 --separate-stderr kvp route-score --block-size 4 --events "$BATS_TEST_TMPDIR/dump.json" --requests "$BATS_TEST_TMPDIR/req" --brief
	[ "$(decision)" = '"chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":1' ]
}

@test "/dump: a block_size other than --block-size is refused (exit 1), the entry's events not applied" {
	printf '{"m:default":{"block_size":4,"events":[%s]}}\n' "$(rev 1 100 $T1234)" >"$BATS_TEST_TMPDIR/dump.json"
	echo '{"request_id":"a","token_ids":[1,2,3,4,5,6,7,8]}' >"$BATS_TEST_TMPDIR/req"
	run -1 --separate-stderr kvp route-score --block-size 8 --events "$BATS_TEST_TMPDIR/dump.json" --requests "$BATS_TEST_TMPDIR/req" --brief
	[ "${#lines[@]}" -eq 1 ] # no decision: the request is never reached
	assert_line --index 0 --partial '{"rec":"summary","events":0,"applied":0,'
	assert_line --index 0 --partial '"errors":1,'
	[ "${stderr%%$'\n'*}" = "route-score: $BATS_TEST_TMPDIR/dump.json:1: dump entry \"m:default\": block_size 4 differs from the router's 8 (--block-size); its 1 event(s) are not applied" ]
	# piped in, the same
	run -1 --separate-stderr bash -c "'$KVP_BIN/route-score' --block-size 8 --requests '$BATS_TEST_TMPDIR/req' --brief <'$BATS_TEST_TMPDIR/dump.json'"
	[[ "$stderr" == "route-score: -:1: dump entry \"m:default\": block_size 4 differs from the router's 8 (--block-size)"* ]]
}

@test "/dump without --block-size: entries that disagree exit 1; standard input cannot give it (exit 2)" {
	printf '{"m:a":{"block_size":4,"events":[]},"m:b":{"block_size":16,"events":[]}}\n' >"$BATS_TEST_TMPDIR/dump.json"
	echo '{"request_id":"a","token_ids":[1,2,3,4]}' >"$BATS_TEST_TMPDIR/req"
	run -1 --separate-stderr kvp route-score --events "$BATS_TEST_TMPDIR/dump.json" --requests "$BATS_TEST_TMPDIR/req"
	[ -z "$output" ]
	[ "$stderr" = "route-score: $BATS_TEST_TMPDIR/dump.json: dump entries disagree on block_size (4 and 16)" ]
	run -2 --separate-stderr bash -c "'$KVP_BIN/route-score' --requests '$BATS_TEST_TMPDIR/req' <'$BATS_TEST_TMPDIR/dump.json'"
	[ -z "$output" ]
	[[ "$stderr" == "route-score: --block-size is required"* ]]
}

# bats test_tags=valgrind
@test "/dump: an entry holding \"error\" is a bad record; -k goes on with the next entry" {
	printf '{"m:a":{"error":"indexer dump failed"},"m:b":{"block_size":4,"events":[%s]}}\n' "$(rev 1 100 $T1234)" >"$BATS_TEST_TMPDIR/dump.json"
	echo '{"request_id":"a","token_ids":[1,2,3,4,5]}' >"$BATS_TEST_TMPDIR/req"
	run -1 --separate-stderr kvp route-score -k --block-size 4 --events "$BATS_TEST_TMPDIR/dump.json" --requests "$BATS_TEST_TMPDIR/req" --brief
	[ "$(decision)" = '"chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":1' ]
	[[ "$stderr" == "route-score: $BATS_TEST_TMPDIR/dump.json:1: dump entry \"m:a\": the indexer's dump failed: indexer dump failed"* ]]
}

# bats test_tags=valgrind
@test "the older dump, a JSON array of RouterEvents, gives what its events as NDJSON lines give" {
	{ printf '['; rev 1 100 $T1234 0; printf ','; rev 2 100 $T1234 0; printf ','; rev 2 101 7 1; printf ']\n'; } >"$BATS_TEST_TMPDIR/old.json"
	{ rev 1 100 $T1234 0; echo; rev 2 100 $T1234 0; echo; rev 2 101 7 1; echo; } >"$BATS_TEST_TMPDIR/lines.ndjson"
	printf '{"request_id":"a","token_ids":[1,2,3,4,5]}\n{"request_id":"b","token_ids":[1,2,3,4]}\n' >"$BATS_TEST_TMPDIR/req"
	run -0 --separate-stderr kvp route-score --block-size 4 --events "$BATS_TEST_TMPDIR/lines.ndjson" --requests "$BATS_TEST_TMPDIR/req"
	want=$output
	assert_line --partial '"overlap_blocks":1'
	run -0 --separate-stderr kvp route-score --block-size 4 --events "$BATS_TEST_TMPDIR/old.json" --requests "$BATS_TEST_TMPDIR/req"
	assert_output "$want"
	[ -z "$stderr" ]
	# an empty dump is no record at all
	echo '{}' >"$BATS_TEST_TMPDIR/empty.json"
	run -0 --separate-stderr kvp route-score --block-size 4 --events "$BATS_TEST_TMPDIR/empty.json" --requests "$BATS_TEST_TMPDIR/req" --brief
	assert_line --index 2 --partial '"rec":"summary","events":0,'
}

@test "/dump: a bad event inside is reported with its entry and index" {
	printf '{"m:a":{"block_size":4,"events":[%s,{"worker_id":1}]}}\n' "$(rev 1 100 $T1234)" >"$BATS_TEST_TMPDIR/dump.json"
	echo '{"request_id":"a","token_ids":[1,2,3,4,5]}' >"$BATS_TEST_TMPDIR/req"
	run -1 --separate-stderr kvp route-score --block-size 4 --events "$BATS_TEST_TMPDIR/dump.json" --requests "$BATS_TEST_TMPDIR/req" --brief
	[[ "$stderr" == "route-score: $BATS_TEST_TMPDIR/dump.json:1: dump entry \"m:a\" event 1: "* ]]
}
