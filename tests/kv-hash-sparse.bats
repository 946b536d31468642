#!/usr/bin/env bats
# kv-hash on vLLM's sparse stores (issue 29 §3; block_offsets, vllm#44488;
# kv-hash(1) "Sparse stores"): block i is hashed over chunk block_offsets[i]
# of the tokens, the chain running over every chunk as the engines chain.
#
# Expected values: Dynamo's local hashes from tests/fixtures/kv-normalize/
# dynhash.py and its sequence hashes from the same module's XXH3 (an
# independent Python model over libxxhash, the rule of kv-hash(1)); the
# engine schemes' values from the stores tests/fixtures/kv-hash/
# engine_capture.py --sparse builds with its own hashlib/pickle/CBOR model
# of each engine (vLLM's dense request chain, listed chunks published);
# the dense-vs-sparse checks compare two kv-hash runs by the rule "offsets
# [0,1,...] are the dense store"; error texts from the brief's rules.
load test_helper

NF="$FIX/kv-normalize"
th() { /usr/bin/python3 "$NF/dynhash.py" "$@"; }
cap() { /usr/bin/python3 "$FIX/kv-hash/engine_capture.py" "$@"; }
# seqh A B — Dynamo's sequence step: XXH3-64(A, B as u64 LE), seed 1337
seqh() {
	/usr/bin/python3 -c 'import sys, struct; sys.path.insert(0, sys.argv[1]); import dynhash
print(dynhash.xxh3(struct.pack("<QQ", int(sys.argv[2]), int(sys.argv[3])), 1337))' "$NF" "$1" "$2"
}

SCHEMES="vllm-sha256-cbor vllm-sha256 vllm-xxhash-cbor vllm-xxhash vllm-sha256-cbor-64bit sglang sglang-legacy trtllm-v1 llmd-fnv"

@test "dynamo: block i is chunk block_offsets[i]; the sequence chains over the skipped chunk too" {
	l0=$(th 10 11) l1=$(th 12 13) l2=$(th 14 15)
	[ "$l0" = 7369860969341005925 ] # docs/spec/kv-events.md §6.6 case 42
	s1=$(seqh "$l0" "$l1")
	s2=$(seqh "$s1" "$l2")
	run -0 --separate-stderr kvp kv-hash --only-hashes <<<'{"tokens":[10,11,12,13,14,15],"block_size":2,"block_offsets":[0,2]}'
	assert_output "{\"block_hashes\":[$l0,$l2],\"sequence_hashes\":[$l0,$s2]}"
	[ -z "$stderr" ]
	# any order, repeats allowed: each block names its chunk
	run -0 --separate-stderr kvp kv-hash --only-hashes <<<'{"tokens":[10,11,12,13,14,15],"block_size":2,"block_offsets":[2,1,2]}'
	assert_output "{\"block_hashes\":[$l2,$l1,$l2],\"sequence_hashes\":[$s2,$s1,$s2]}"
}

@test "dynamo: a kv-decode store keeps its block_hashes and gets tokens_hash of the listed chunks" {
	in='{"rec":"event","seq":0,"type":"BlockStored","block_hashes":[11,12],"parent_block_hash":null,"token_ids":[10,11,12,13,14,15],"block_size":2,"block_offsets":[0,2]}'
	l0=$(th 10 11) l2=$(th 14 15)
	s2=$(seqh "$(seqh "$l0" "$(th 12 13)")" "$l2")
	run -0 --separate-stderr kvp kv-hash <<<"$in"
	assert_output "${in%\}},\"tokens_hash\":[$l0,$l2],\"sequence_hashes\":[$l0,$s2]}"
	[ -z "$stderr" ]
}

@test "dynamo: block_mm_infos element i belongs to block i's chunk" {
	l2=$(th --mm 77 14 15)
	run -0 --separate-stderr kvp kv-hash --only-hashes --hash-strings <<<'{"tokens":[10,11,12,13,14,15],"block_size":2,"block_offsets":[0,2],"block_mm_infos":[null,{"mm_objects":[{"mm_hash":77}]}]}'
	[ "$(jq -c .block_hashes <<<"$output")" = "[\"$(th 10 11)\",\"$l2\"]" ]
	[ -z "$stderr" ]
}

@test "dense vs sparse: offsets [0,1,2] hash exactly like the dense store, under every scheme" {
	dense='{"tokens":[5,6,7,8,9,10],"block_size":2}'
	sparse='{"tokens":[5,6,7,8,9,10],"block_size":2,"block_offsets":[0,1,2]}'
	run -0 --separate-stderr kvp kv-hash --only-hashes <<<"$dense"
	want=$output
	[ "$(jq '.block_hashes | length' <<<"$want")" = 3 ]
	run -0 --separate-stderr kvp kv-hash --only-hashes <<<"$sparse"
	assert_output "$want"
	[ -z "$stderr" ]
	for s in $SCHEMES; do
		run -0 --separate-stderr kvp kv-hash --only-hashes --scheme "$s" <<<"$dense"
		want=$output
		run -0 --separate-stderr kvp kv-hash --only-hashes --scheme "$s" <<<"$sparse"
		assert_output "$want"
		[ -z "$stderr" ]
	done
}

@test "dense vs sparse: offsets [0,2] pick chunks 0 and 2 of the dense chain, under every scheme" {
	for s in $SCHEMES; do
		run -0 --separate-stderr kvp kv-hash --only-hashes --hash-strings --scheme "$s" <<<'{"tokens":[5,6,7,8,9,10],"block_size":2}'
		want=$(jq -c '{block_hashes: [.block_hashes[0], .block_hashes[2]]}' <<<"$output")
		run -0 --separate-stderr kvp kv-hash --only-hashes --hash-strings --scheme "$s" <<<'{"tokens":[5,6,7,8,9,10],"block_size":2,"block_offsets":[0,2]}'
		[ "$(jq -c . <<<"$output")" = "$want" ]
	done
}

@test "vllm: extra_keys listing the blocks are placed at their chunks, the skipped one gets the defaults" {
	# the LoRA name is the default extra of every chunk; listed extras
	# [lora], [lora] at chunks 0 and 2 are the dense store's extras
	run -0 --separate-stderr kvp kv-hash --only-hashes --hash-strings --scheme vllm-sha256-cbor --seed 0 <<<'{"tokens":[5,6,7,8,9,10],"block_size":2,"lora_name":"ad"}'
	want=$(jq -c '{block_hashes: [.block_hashes[0], .block_hashes[2]]}' <<<"$output")
	run -0 --separate-stderr kvp kv-hash --only-hashes --hash-strings --scheme vllm-sha256-cbor --seed 0 <<<'{"tokens":[5,6,7,8,9,10],"block_size":2,"lora_name":"ad","block_offsets":[0,2],"extra_keys":[["ad"],["ad"]]}'
	[ "$(jq -c . <<<"$output")" = "$want" ]
	# without the LoRA default the skipped chunk hashes with None: differs
	run -0 --separate-stderr kvp kv-hash --only-hashes --hash-strings --scheme vllm-sha256-cbor --seed 0 <<<'{"tokens":[5,6,7,8,9,10],"block_size":2,"block_offsets":[0,2],"extra_keys":[["ad"],["ad"]]}'
	[ "$(jq -c '.block_hashes[0]' <<<"$output")" = "$(jq -c '.block_hashes[0]' <<<"$want")" ]
	[ "$(jq -c '.block_hashes[1]' <<<"$output")" != "$(jq -c '.block_hashes[1]' <<<"$want")" ]
}

@test "engine schemes: kv-hash --scheme reproduces engine_capture.py's sparse stores, children of skipped chunks included" {
	for s in vllm-sha256-cbor vllm-sha256 vllm-xxhash-cbor vllm-xxhash sglang trtllm-v1 llmd-fnv; do
		case $s in
		sglang | trtllm-v1) seed=() ;;
		llmd-fnv) seed=(--seed=) ;;
		*) seed=(--seed 0) ;;
		esac
		cap "$s" "${seed[@]}" --sparse >"$BATS_TEST_TMPDIR/cap"
		run -0 --separate-stderr bash -c "'$KVP_BIN/kv-decode' '$BATS_TEST_TMPDIR/cap' | $KVP_EXEC_PREFIX '$KVP_BIN/kv-hash' --scheme $s ${seed[*]} --hash-strings"
		[ -z "$stderr" ]
		# 3 root stores of 2 listed blocks and 3 children of 1
		[ "$(jq -s -c 'map(select(.type == "BlockStored") | .block_offsets)' <<<"$output")" = '[[0,2],[1],[0,2],[1],[0,2],[1]]' ]
		[ "$(jq -s 'map(select(.type == "BlockStored") | select((.tokens_hash | map(tostring)) == (.block_hashes | map(tostring)))) | length' <<<"$output")" = 6 ]
	done
}

@test "--detect: MATCH on sparse stores for every scheme; read densely they mismatch" {
	for s in vllm-sha256-cbor vllm-sha256 vllm-xxhash-cbor vllm-xxhash sglang trtllm-v1 llmd-fnv; do
		case $s in
		sglang | trtllm-v1) seed=() ;;
		llmd-fnv) seed=(--seed=) ;;
		*) seed=(--seed 0) ;;
		esac
		cap "$s" "${seed[@]}" --sparse >"$BATS_TEST_TMPDIR/cap"
		run -0 --separate-stderr bash -c "'$KVP_BIN/kv-decode' '$BATS_TEST_TMPDIR/cap' | $KVP_EXEC_PREFIX '$KVP_BIN/kv-hash' --detect"
		[ -z "$stderr" ]
		# 6 stores, 9 published blocks (engine_capture.py --sparse)
		[ "$(jq -c '[.verdict, .scheme, .stores, .verified_stores, .verified_blocks, .mismatched_blocks, .unresolved_blocks]' <<<"$output")" = "[\"MATCH\",\"$s\",6,6,9,0,0]" ]
		run -0 --separate-stderr bash -c "'$KVP_BIN/kv-decode' '$BATS_TEST_TMPDIR/cap' | $KVP_EXEC_PREFIX '$KVP_BIN/kv-hash' --detect --block-offsets ignore"
		[ "$(jq -r .verdict <<<"$output")" != MATCH ]
	done
}

@test "--detect: sparse stores in reverse order and with a cache salt still MATCH" {
	cap vllm-sha256 --seed 42 --sparse --reverse >"$BATS_TEST_TMPDIR/cap"
	run -0 --separate-stderr bash -c "'$KVP_BIN/kv-decode' '$BATS_TEST_TMPDIR/cap' | '$KVP_BIN/kv-hash' --detect"
	[ "$(jq -c '[.verdict, .seed, .verified_stores, .verified_blocks]' <<<"$output")" = '["MATCH","42",6,9]' ]
	cap vllm-sha256-cbor --seed 0 --sparse --salt tenant-a >"$BATS_TEST_TMPDIR/cap"
	run -0 --separate-stderr bash -c "'$KVP_BIN/kv-decode' '$BATS_TEST_TMPDIR/cap' | '$KVP_BIN/kv-hash' --detect"
	[ "$(jq -c '[.verdict, .verified_stores, .verified_blocks]' <<<"$output")" = '["MATCH",6,9]' ]
}

@test "bad data: a count other than block_hashes', a chunk past the tokens (exit 1, file:line)" {
	printf '%s\n' '{"tokens":[1,2,3,4],"block_size":2}' \
		'{"rec":"event","type":"BlockStored","block_hashes":[1,2],"token_ids":[1,2,3,4],"block_size":2,"block_offsets":[0]}' \
		'{"tokens":[1,2,3,4,5],"block_size":2,"block_offsets":[0,2]}' \
		'{"tokens":[1,2,3,4],"block_size":2,"block_offsets":[4294967296]}' >"$BATS_TEST_TMPDIR/in"
	run -1 --separate-stderr kvp kv-hash --only-hashes "$BATS_TEST_TMPDIR/in"
	[ "$(jq -c '.block_hashes | length' <<<"$output")" = 2 ] # line 1 only
	[ "$stderr" = "kv-hash: $BATS_TEST_TMPDIR/in:2: block_offsets: 1 entries for 2 block hashes" ]
	run -1 --separate-stderr kvp kv-hash -k --only-hashes "$BATS_TEST_TMPDIR/in"
	[ "${#lines[@]}" = 1 ]
	[[ "$stderr" == *"in:2: block_offsets: 1 entries for 2 block hashes"* ]]
	[[ "$stderr" == *"in:3: block_offsets[1]: chunk 2 lies beyond the 5 tokens (2 full blocks of 2)"* ]]
	[[ "$stderr" == *"in:4: block_offsets[0]: does not fit in u32"* ]]
	# an engine scheme checks the same, and so does --detect
	run -1 --separate-stderr kvp kv-hash --scheme sglang --only-hashes <<<'{"tokens":[1,2,3,4,5],"block_size":2,"block_offsets":[0,2]}'
	[ "$output" = "" ]
	[ "$stderr" = "kv-hash: -:1: block_offsets[1]: chunk 2 lies beyond the 5 tokens (2 full blocks of 2)" ]
	run -1 --separate-stderr kvp kv-hash --detect <<<'{"rec":"event","type":"BlockStored","block_hashes":[1,2],"token_ids":[1,2,3,4,5],"block_size":2,"block_offsets":[0,2]}'
	[[ "$stderr" == *"-:1: block_offsets[1]: chunk 2 lies beyond the 5 tokens (2 full blocks of 2)"* ]]
	run -1 --separate-stderr kvp kv-hash --detect <<<'{"rec":"event","type":"BlockStored","block_hashes":[1,2],"token_ids":[1,2,3,4],"block_size":2,"block_offsets":[1]}'
	[[ "$stderr" == *"-:1: block_offsets: 1 entries for 2 block hashes"* ]]
}

@test "--block-offsets ignore: the record is hashed as a dense one; a bad mode is a usage error" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 2 <<<'{"tokens":[10,11,12,13,14,15]}'
	want=$output
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-offsets ignore <<<'{"tokens":[10,11,12,13,14,15],"block_size":2,"block_offsets":[0,2]}'
	assert_output "$want"
	assert_output --partial "[$(th 10 11),$(th 12 13),$(th 14 15)]"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-offsets use <<<'{"tokens":[10,11,12,13,14,15],"block_size":2,"block_offsets":[0,2]}'
	assert_output --partial "{\"block_hashes\":[$(th 10 11),$(th 14 15)],"
	run -2 --separate-stderr kvp kv-hash --block-offsets sparse <<<'{}'
	[ "$output" = "" ]
	[[ "$stderr" == *"--block-offsets: unknown mode 'sparse' (choices: use, ignore)"* ]]
}

@test "a null block_offsets is a dense store" {
	run -0 --separate-stderr kvp kv-hash --only-hashes <<<'{"tokens":[10,11,12,13],"block_size":2,"block_offsets":null}'
	assert_output --partial "{\"block_hashes\":[$(th 10 11),$(th 12 13)],"
}
