#!/usr/bin/env bats
# SGLang's hashes beyond the text chain (issue 29 section 2): sgl-router's
# partial-tail parity cases (kv-hash --partial-tail), engine-owned
# multimodal page records (--scheme sglang-mm, --detect on media stores),
# and the tagged-map event shape through kv-decode and kv-normalize.
# Expected values: the parity cases are sgl-router's own fixture
# (tests/fixtures/sgl-router/kv_events_hash_parity.json, copied from
# sgl-project/sglang); the multimodal digests come from
# tests/sglang_mm_model.py, an independent hashlib model of the record
# layout; the capture is built by tests/fixtures/kv-decode/sglang_tagged.py
# from that model with python3-msgpack.
load test_helper

PAR="$FIX/sgl-router/kv_events_hash_parity.json"
TAG="$FIX/kv-decode/sglang_tagged.jsonl"
MODEL="$KVP_ROOT/tests/sglang_mm_model.py"
ID7="sha256:$(printf '07%.0s' {1..32})"
ID8="sha256:$(printf '08%.0s' {1..32})"

# parity MODE — one line per parity case: its record (MODE "in") or the
# hashes kv-hash must write for it (MODE "out", the fixture's i64 values
# as their u64 two's complement; MODE "full": the full pages only, the
# prefix the engine itself publishes).
parity() {
	/usr/bin/python3 - "$PAR" "$1" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1])):
    h = [x % 2**64 for x in c["expected_i64_hashes"]]
    if sys.argv[2] == "full":
        h = h[: len(c["tokens"]) // c["block_size"]]
    if sys.argv[2] == "in":
        print(json.dumps({"tokens": c["tokens"], "block_size": c["block_size"]}, separators=(",", ":")))
    else:
        print(json.dumps({"block_hashes": h}, separators=(",", ":")))
PY
}

# model JSON — the model's expected output for request JSON
model() { /usr/bin/python3 "$MODEL" "$1"; }

# spans — kv-decode records of the tagged capture with the request's
# media spans joined on (python, so that u64 hashes stay exact)
spans() {
	/usr/bin/python3 -c '
import json, sys
ident = "sha256:" + "07" * 32
for line in sys.stdin:
    r = json.loads(line)
    if r.get("type") == "BlockStored" and "block_hashes_sha256" in r and sys.argv[1] == "yes":
        r["mm_spans"] = [[0, 2, ident, 2]] if "parent_block_hash_sha256" in r else [[2, 4, ident, 0]]
    print(json.dumps(r, separators=(",", ":")))
' "$1"
}

@test "--partial-tail: every sgl-router parity case (5 tokens at 4 give two hashes, 7 at 3 three)" {
	parity in >"$BATS_TEST_TMPDIR/in"
	run -0 --separate-stderr kvp kv-hash --scheme sglang --partial-tail --only-hashes "$BATS_TEST_TMPDIR/in"
	assert_output "$(parity out)"
	[ -z "$stderr" ]
	# the two cases the issue names, spelled out
	run -0 --separate-stderr kvp kv-hash --scheme sglang --partial-tail --only-hashes <<<'{"tokens":[1,2,3,4,5],"block_size":4}'
	assert_output '{"block_hashes":[14958615928728313947,14659249496535324050]}'
	run -0 --separate-stderr kvp kv-hash --scheme sglang --partial-tail --only-hashes <<<'{"tokens":[100,200,300,400,500,600,700],"block_size":3}'
	assert_output '{"block_hashes":[11153674033977693392,12576927511125022251,7513319606423624955]}'
}

@test "without --partial-tail: full pages only, the engine's prefix of the parity hashes" {
	parity in >"$BATS_TEST_TMPDIR/in"
	run -0 --separate-stderr kvp kv-hash --scheme sglang --only-hashes "$BATS_TEST_TMPDIR/in"
	assert_output "$(parity full)"
	[ -z "$stderr" ]
}

@test "--partial-tail: other schemes refuse it (usage, exit 2)" {
	run -2 --separate-stderr kvp kv-hash --partial-tail --block-size 4 <<<'{"tokens":[1,2,3,4,5]}'
	[ -z "$output" ]
	[[ "$stderr" == *"--partial-tail needs --scheme sglang or sglang-mm"* ]]
	run -2 --separate-stderr kvp kv-hash --scheme vllm-sha256-cbor --partial-tail --block-size 4 <<<'{"tokens":[1,2,3,4,5]}'
	[[ "$stderr" == *"--partial-tail needs"* ]]
}

@test "--scheme sglang-mm: spans across page boundaries, item offsets, a second item" {
	local r="{\"tokens\":[1,2,9,9,9,3,9,4],\"block_size\":2,\"mm_spans\":[[2,5,\"$ID7\",3],[6,7,\"$ID8\",0]]}"
	run -0 --separate-stderr kvp kv-hash --scheme sglang-mm --only-hashes <<<"$r"
	assert_output "$(model "$r")"
	[ -z "$stderr" ]
	# the whole record is kept, the digests follow the local hashes
	run -0 --separate-stderr kvp kv-hash --scheme sglang-mm <<<"$r"
	assert_output --partial "\"mm_spans\":[[2,5,\"$ID7\",3],[6,7,\"$ID8\",0]],\"block_hashes\":["
	assert_output --partial '],"block_hashes_sha256":["'
}

@test "--scheme sglang-mm: text pages hash as sglang's; a moved item offset changes only its pages" {
	local t='{"tokens":[1,2,3,4,5,6],"block_size":2}' a b
	run -0 --separate-stderr kvp kv-hash --scheme sglang --only-hashes <<<"$t"
	a=$output
	run -0 --separate-stderr kvp kv-hash --scheme sglang-mm --only-hashes <<<"$t"
	assert_output "$(model "$t")"
	[[ "$output" == "${a%\}},\"block_hashes_sha256\":"* ]]
	a="{\"tokens\":[1,2,9,9,5,6],\"block_size\":2,\"mm_spans\":[[2,4,\"$ID7\",0]]}"
	b="{\"tokens\":[1,2,9,9,5,6],\"block_size\":2,\"mm_spans\":[[2,4,\"$ID7\",1]]}"
	run -0 --separate-stderr kvp kv-hash --scheme sglang-mm --only-hashes <<<"$b"
	assert_output "$(model "$b")"
	[ "$(model "$a" | jq -c '.block_hashes_sha256[0]')" = "$(model "$b" | jq -c '.block_hashes_sha256[0]')" ]
	[ "$(model "$a" | jq -c '.block_hashes_sha256[1]')" != "$(model "$b" | jq -c '.block_hashes_sha256[1]')" ]
}

@test "--scheme sglang-mm: EAGLE bigrams, cache_salt, LoRA and --partial-tail together" {
	local r="{\"tokens\":[1,2,9,9,9,3,9,4,5],\"block_size\":3,\"is_eagle\":true,\"eagle\":true,\"partial_tail\":true,\"cache_salt\":\"tenant-a\",\"lora_name\":\"adapter-a\",\"mm_spans\":[[2,5,\"$ID7\",3],[6,7,\"$ID8\",0]]}"
	run -0 --separate-stderr kvp kv-hash --scheme sglang-mm --partial-tail --only-hashes <<<"$r"
	assert_output "$(model "$r")"
	[ -z "$stderr" ]
}

@test "--scheme sglang-mm: parent_block_hash_sha256 continues the chain from a digest" {
	local whole="{\"tokens\":[1,2,9,9,9,9,3,4],\"block_size\":2,\"mm_spans\":[[2,6,\"$ID7\",0]]}" par tail
	par=$(model "$whole" | jq -r '.block_hashes_sha256[1]')
	tail="{\"tokens\":[9,9,3,4],\"block_size\":2,\"mm_spans\":[[0,2,\"$ID7\",2]],\"parent_block_hash_sha256\":\"$par\"}"
	run -0 --separate-stderr kvp kv-hash --scheme sglang-mm --only-hashes <<<"$tail"
	# the tail's digests are the whole request's last two
	assert_output --partial "\"block_hashes_sha256\":$(model "$whole" | jq -c '.block_hashes_sha256[2:]')"
	[ -z "$stderr" ]
}

@test "--scheme sglang-mm: bad spans and digests are bad data (exit 1, file:line)" {
	printf '%s\n' "{\"tokens\":[1,2],\"block_size\":2,\"mm_spans\":[[0,2,\"sha256:07\",0]]}" \
		"{\"tokens\":[1,2],\"block_size\":2,\"mm_spans\":[[0,3,\"$ID7\",0]]}" \
		"{\"tokens\":[1,2],\"block_size\":2,\"mm_spans\":[[1,2,\"$ID7\",0],[0,1,\"$ID7\",0]]}" \
		'{"tokens":[1,2],"block_size":2,"parent_block_hash_sha256":"abc"}' >"$BATS_TEST_TMPDIR/bad"
	run -1 --separate-stderr kvp kv-hash -k --scheme sglang-mm "$BATS_TEST_TMPDIR/bad"
	[ -z "$output" ]
	[[ "$stderr" == *"bad:1: "*"identity must be \"sha256:\" and 64 hex digits"* ]]
	[[ "$stderr" == *"bad:2: "*"within the 2 tokens"* ]]
	[[ "$stderr" == *"bad:3: "*"ordered, disjoint"* ]]
	[[ "$stderr" == *"bad:4: "*"parent_block_hash_sha256: expected 64 hex digits"* ]]
}

@test "kv-decode: SGLang's tagged-map events, digests as typed keys (not x_unknown_keys)" {
	run -0 --separate-stderr kvp kv-decode "$TAG"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 4 ]
	# the second store: salt, session, LoRA, both digests (values from
	# tests/sglang_mm_model.py through sglang_tagged.py)
	[ "${lines[1]}" = '{"rec":"event","seq":0,"topic":"kv-events","source":"live","ts":1700000000.5,"dp_rank":0,"worker_id":0,"idx":1,"enc":"map","type":"BlockStored","block_hashes":[5917498090136121705,3907808632954396340],"parent_block_hash":14324481514141012903,"token_ids":[9,9,3,4],"token_layout":"flat","wide_tokens":0,"block_size":2,"lora_id":null,"lora_name":"adapter-a","medium":"GPU","cache_salt":"tenant-a","session_id":"sess-1","extra_keys":null,"group_idx":null,"kv_cache_spec_kind":null,"kv_cache_spec_sliding_window":null,"locality":null,"hash_repr":"int","source_kind":null,"block_hashes_sha256":["0585fb8a82b5914623b0e33f57756f24a6a39e05ca0080255ed414483458d2ec","e43c9e1267b2969e4d84af38e5932c4b2712ed3de0c369f37cebf54a2ff23000"],"parent_block_hash_sha256":"9822a0a7465cf3827eee66aea133963513d393eac83449bbe64a987be0cb9537","x_capture":{"recv_ts":1700000000.75}}' ]
	# the text store carries no digest keys; the removal carries its digests
	[[ "${lines[2]}" != *sha256* ]]
	[[ "${lines[3]}" == *'"type":"BlockRemoved",'*'"block_hashes_sha256":["0585fb8a'*'"x_capture"'* ]]
	[[ "$output" != *x_unknown_keys* ]]
}

@test "kv-decode: the capture's digests are the independent model's" {
	run -0 --separate-stderr kvp kv-decode "$TAG"
	local want
	want=$(model "{\"tokens\":[1,2,9,9,9,9,3,4],\"block_size\":2,\"mm_spans\":[[2,6,\"$ID7\",0]],\"cache_salt\":\"tenant-a\",\"lora_name\":\"adapter-a\"}" | jq -c '.block_hashes_sha256')
	[ "$(jq -sc '[.[0].block_hashes_sha256, .[1].block_hashes_sha256] | add' <<<"$output")" = "$want" ]
}

@test "kv-decode: a malformed digest is a bad event (exit 1)" {
	/usr/bin/python3 "$FIX/kv-decode/mk.py" 'raw(batch([M("BlockStored", block_hashes=[1], parent_block_hash=None, token_ids=[1,2], block_size=2, block_hashes_sha256=["AB"*32])]))' >"$BATS_TEST_TMPDIR/in"
	run -1 --separate-stderr kvp kv-decode --in raw "$BATS_TEST_TMPDIR/in"
	[[ "$stderr" == *"block_hashes_sha256[0]: expected 64 lowercase hex digits"* ]]
	/usr/bin/python3 "$FIX/kv-decode/mk.py" 'raw(batch([M("BlockStored", block_hashes=[1], parent_block_hash=None, token_ids=[1,2], block_size=2, parent_block_hash_sha256=7)]))' >"$BATS_TEST_TMPDIR/in"
	run -1 --separate-stderr kvp kv-decode --in raw "$BATS_TEST_TMPDIR/in"
	[[ "$stderr" == *"parent_block_hash_sha256: expected 64 lowercase hex digits or nil, got"* ]]
}

@test "kv-normalize: the digests pass on under \"x\", the RouterEvent unchanged" {
	kvp kv-decode "$TAG" >"$BATS_TEST_TMPDIR/ev"
	run -0 --separate-stderr kvp kv-normalize --block-size 2 "$BATS_TEST_TMPDIR/ev"
	[ -z "$stderr" ]
	[[ "${lines[1]}" == *'"x":{"seq":0,"idx":1,"action":"pass","kept":2,"excluded":0,"ts_ms":1700000000500,"block_hashes_sha256":["0585fb8a82b5914623b0e33f57756f24a6a39e05ca0080255ed414483458d2ec","e43c9e1267b2969e4d84af38e5932c4b2712ed3de0c369f37cebf54a2ff23000"],"parent_block_hash_sha256":"9822a0a7465cf3827eee66aea133963513d393eac83449bbe64a987be0cb9537"}}' ]]
	[[ "${lines[2]}" == *'"ts_ms":1700000001500}}' ]]
	[[ "${lines[3]}" == *'"removed":{"block_hashes":[5917498090136121705,3907808632954396340]}'*'"block_hashes_sha256":["0585fb8a'* ]]
}

@test "kv-hash --scheme sglang-mm on the capture reproduces SGLang's hashes and digests" {
	kvp kv-decode "$TAG" | spans yes >"$BATS_TEST_TMPDIR/ev"
	run -0 --separate-stderr kvp kv-hash --scheme sglang-mm "$BATS_TEST_TMPDIR/ev"
	[ -z "$stderr" ]
	run /usr/bin/python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("type") == "BlockStored":
        print(r["block_hashes"] == r["tokens_hash"], r.get("block_hashes_sha256", r["tokens_hash_sha256"]) == r["tokens_hash_sha256"])
' <(kvp kv-hash --scheme sglang-mm "$BATS_TEST_TMPDIR/ev")
	assert_output $'True True\nTrue True\nTrue True'
}

@test "--detect: media stores verify with mm_spans (digests too), stay unresolved without" {
	kvp kv-decode "$TAG" | spans yes >"$BATS_TEST_TMPDIR/ev"
	run -0 --separate-stderr kvp kv-hash --detect "$BATS_TEST_TMPDIR/ev"
	assert_output --partial '"verdict":"MATCH","scheme":"sglang","seed":null,"block_size":2,"hash_granularity":2,"stores":3,"root_stores":2,"verified_stores":3,"verified_blocks":6,"unresolved_blocks":0,"mismatched_blocks":0,"mm_stores":2,"mm_verified_blocks":4,'
	[ -z "$stderr" ]
	kvp kv-decode "$TAG" | spans no >"$BATS_TEST_TMPDIR/ev"
	run -0 --separate-stderr kvp kv-hash --detect "$BATS_TEST_TMPDIR/ev"
	assert_output --partial '"verdict":"MATCH","scheme":"sglang","seed":null,"block_size":2,"hash_granularity":2,"stores":3,"root_stores":2,"verified_stores":1,"verified_blocks":2,"unresolved_blocks":4,"mismatched_blocks":0,"mm_stores":2,"mm_verified_blocks":0,'
	# a wrong identity: the 3 media pages no longer match; the first page
	# (text) still does, the second store chains from its parent digest
	kvp kv-decode "$TAG" | spans yes | sed 's/0707070707070707070707070707070707070707070707070707070707070707/0808080808080808080808080808080808080808080808080808080808080808/g' >"$BATS_TEST_TMPDIR/ev"
	run -0 --separate-stderr kvp kv-hash --detect "$BATS_TEST_TMPDIR/ev"
	assert_output --partial '"verdict":"MISMATCH-AFTER-MATCH","scheme":"sglang",'
	assert_output --partial '"verified_blocks":3,"unresolved_blocks":0,"mismatched_blocks":3,"mm_stores":2,"mm_verified_blocks":1,'

}

@test "--detect: records without digests give the same verdict record as before (no mm keys)" {
	kvp kv-decode "$TAG" | /usr/bin/python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r.get("type") == "BlockStored" and "block_hashes_sha256" not in r:
        print(json.dumps(r, separators=(",", ":")))
' >"$BATS_TEST_TMPDIR/ev"
	run -0 --separate-stderr kvp kv-hash --detect "$BATS_TEST_TMPDIR/ev"
	assert_output --partial '"verified_blocks":2,"unresolved_blocks":0,"mismatched_blocks":0,"differs":null,'
}
