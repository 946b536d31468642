#!/usr/bin/env bats
# mm-expand: docs/spec/mm-expand.md §7.5 end-to-end tests 20-28 (expected values
# copied from the spec, which computed them with an independent Python
# reference), EXIF with the real oriented JPEGs of tests/fixtures/images
# (stored sizes from tests/fixtures/README.md), fallbacks, error paths.
# Hashes are compared exactly: hex from the spec -> decimal with printf %u;
# JSON is read with Python (exact integers), never with jq (doubles).
load test_helper

MMFIX="$FIX/mm-expand"
IMG="$FIX/images"

# u64 HEX -> decimal
u() { printf '%u' "0x$1"; }
# jf KEY: the value of KEY in the first output record, compact JSON
jf() {
	printf '%s\n' "$output" | sed -n 1p |
		/usr/bin/python3 -c 'import json,sys
print(json.dumps(json.loads(sys.stdin.read())[sys.argv[1]], separators=(",",":")))' "$1"
}
# jhex KEY: a u64 array as space-separated 16-digit hex
jhex() {
	printf '%s\n' "$output" | sed -n 1p |
		/usr/bin/python3 -c 'import json,sys
print(" ".join("%016x" % x for x in json.loads(sys.stdin.read())[sys.argv[1]]))' "$1"
}
# rep N V: JSON list items "V,V,...,V" (N times)
rep() {
	local i s=""
	for ((i = 0; i < $1; i++)); do s+="$2,"; done
	printf '%s' "${s%,}"
}
expand() { run --separate-stderr kvp mm-expand "$@"; }

Q25CFG='"preprocessor_config":{"min_pixels":3136,"max_pixels":12845056}'
T20='{"id":"t20","family":"qwen2_vl",'$Q25CFG',"token_ids":[10,11,151655,12],"block_size":4,"images":[{"url":"https://example.com/a.png","width":56,"height":56}]}'

# bats test_tags=valgrind
@test "test 20: Qwen2.5 repeated pad, block and sequence hashes" {
	expand <<<"$T20"
	assert_success
	[ -z "$stderr" ]
	assert_equal "$(jf status)" '"exact"'
	assert_equal "$(jf reason)" 'null'
	assert_equal "$(jf layout)" '"repeated_pad"'
	assert_equal "$(jf image_token_counts)" '[4]'
	assert_equal "$(jf mm_hashes_hex)" '["432b06447698eaf0"]'
	assert_equal "$(jf mm_hashes)" "[$(u 432b06447698eaf0)]"
	assert_equal "$(jf mm_hash_source)" '["url"]'
	assert_equal "$(jf pad_values)" '[916991280]'
	assert_equal "$(jf routing_token_ids)" '[10,11,916991280,916991280,916991280,916991280,12,0]'
	assert_equal "$(jf expanded_prompt_len)" '7'
	assert_equal "$(jhex block_hashes)" '72bff3acd8fb641a 5abcea3bd7ce27da'
	assert_equal "$(jhex sequence_hashes)" '72bff3acd8fb641a b462923ce57bda5e'
	assert_equal "$(jf num_blocks)" '2'
	assert_equal "$(jf complete_blocks)" '1'
	assert_equal "$(jf block_seed)" '1337'
	# u64 written exactly as digits
	assert_output --partial "\"block_hashes\":[$(u 72bff3acd8fb641a),$(u 5abcea3bd7ce27da)]"
}

@test "test 20: chain seed 1337" {
	expand --chain-seed 1337 <<<"$T20"
	assert_success
	assert_equal "$(jhex sequence_hashes)" '72bff3acd8fb641a ba11fc9dbbe80d24'
	assert_equal "$(jf chain_seed)" '1337'
}

# bats test_tags=valgrind
@test "test 21: Kimi-K3 wrapper with the bytes:1000 dims tokenizer" {
	expand --tokenizer bytes:1000 <<<'{"family":"kimi_k3","token_ids":[1,163605,2],"block_size":16,"images":[{"url":"https://example.com/b.png","width":56,"height":56}]}'
	assert_success
	assert_equal "$(jf image_token_counts)" '[4]'
	assert_equal "$(jf layout)" '"kimi_k3"'
	assert_equal "$(jf dims_texts)" '["image 56x56"]'
	assert_equal "$(jf routing_token_ids)" "[1,163602,1105,1109,1097,1103,1101,1032,1053,1054,1120,1053,1054,163603,$(rep 4 645903668),163604,2,$(rep 12 0)]"
	assert_equal "$(jf expanded_prompt_len)" '20'
	assert_equal "$(jhex block_hashes)" '1c604c0d5194a679 3a9ac55307fc483f'
	assert_equal "$(jhex sequence_hashes)" '1c604c0d5194a679 b54ce5fe567ce0ca'
	expand --chain-seed 1337 <<<'{"family":"kimi_k3","token_ids":[1,163605,2],"block_size":16,"images":[{"url":"https://example.com/b.png","width":56,"height":56}]}'
	assert_equal "$(jhex sequence_hashes)" '1c604c0d5194a679 1636991cbf7ef0aa'
}

@test "test 22: two images, K2.5 repeated pad, explicit mm_hash" {
	expand <<<'{"model":"moonshotai/Kimi-K2.5","token_ids":[7,163605,8,163605],"block_size":4,"images":[{"mm_hash":"0000000000001234","width":28,"height":28},{"mm_hash":22136,"width":56,"height":56}]}'
	assert_success
	assert_equal "$(jf family)" '"kimi_k25"'
	assert_equal "$(jf image_token_counts)" '[1,4]'
	assert_equal "$(jf routing_token_ids)" '[7,1004660,8,1022136,1022136,1022136,1022136,0]'
	assert_equal "$(jf expanded_prompt_len)" '7'
	assert_equal "$(jf mm_hash_source)" '["explicit","explicit"]'
	assert_equal "$(jhex block_hashes)" '44a9978427ee3676 2717c1f2e1670418'
	assert_equal "$(jhex sequence_hashes)" '44a9978427ee3676 73a77befe93644a1'
}

@test "test 23: Dynamo routing.rs shape: placeholder 99, counts 2 and 3, BOS 1" {
	expand <<<'{"family":"qwen2_vl","placeholder_token_id":99,"bos_token_id":1,"token_ids":[10,99,11,99,12],"block_size":4,"images":[{"mm_hash":"0x1234","width":28,"height":28,"token_count":2},{"mm_hash":"0x5678","width":28,"height":28,"token_count":3}]}'
	assert_success
	assert_equal "$(jf routing_token_ids)" '[1,10,1004660,1004660,11,1022136,1022136,1022136,12,0,0,0]'
	assert_equal "$(jf expanded_prompt_len)" '9'
	assert_equal "$(jhex block_hashes)" 'a40aae3653137897 b4d0d39887b61165 b3f626420dee4ba2'
	assert_equal "$(jhex sequence_hashes)" 'a40aae3653137897 55f539cf4a879aba 99ec7d2a6c1f801b'
}

@test "test 24: LLaVA-1.5: 576 pads, BOS 1 prepended" {
	expand <<<'{"model":"llava-hf/llava-1.5-7b-hf","token_ids":[3148,32000,29871],"block_size":16,"images":[{"url":"https://example.com/a.png","width":640,"height":480}]}'
	assert_success
	assert_equal "$(jf family)" '"llava"'
	assert_equal "$(jf image_token_counts)" '[576]'
	assert_equal "$(jf expanded_prompt_len)" '579'
	assert_equal "$(jf num_blocks)" '37'
	h=($(jhex block_hashes)) s=($(jhex sequence_hashes))
	assert_equal "${#h[@]}" 37
	assert_equal "${h[0]}" b9badf81f0f9b4f6
	assert_equal "${h[36]}" ee9d430b7d064e44
	assert_equal "${s[36]}" a3cb60d44433f844
	# "bos_token_id": false turns the family BOS off
	expand <<<'{"model":"llava-hf/llava-1.5-7b-hf","bos_token_id":false,"token_ids":[3148,32000,29871],"block_size":16,"images":[{"url":"https://example.com/a.png","width":640,"height":480}]}'
	assert_equal "$(jf expanded_prompt_len)" '578'
}

@test "test 25: EXIF orientation 6 swaps the K3 dims text only under exif_transposed" {
	rec='{"family":"kimi_k3","token_ids":[163605],"images":[{"url":"https://x/y.jpg","width":4000,"height":3000,"exif_orientation":ORI}]POL}'
	r=${rec/ORI/6}
	expand <<<"${r/POL/}"
	assert_equal "$(jf dims_texts)" '["image 4000x3000"]'
	assert_equal "$(jf image_token_counts)" '[15444]'
	expand <<<"${r/POL/,\"dims_policy\":\"encoded\"}"
	assert_equal "$(jf dims_texts)" '["image 4000x3000"]'
	expand <<<"${r/POL/,\"dims_policy\":\"exif_transposed\"}"
	assert_equal "$(jf dims_texts)" '["image 3000x4000"]'
	assert_equal "$(jf image_dims)" '[[3000,4000]]'
	assert_equal "$(jf image_token_counts)" '[15444]'
	for o in 2 3 4 1 0 9; do
		r=${rec/ORI/$o}
		expand <<<"${r/POL/,\"dims_policy\":\"exif_transposed\"}"
		assert_equal "$(jf dims_texts)" '["image 4000x3000"]'
	done
	# outside 1..8: reported as invalid, never echoed (issue 15)
	for o in 9 65535; do
		r=${rec/ORI/$o}
		expand <<<"${r/POL/}"
		assert_equal "$(jf image_orientations)" '["invalid"]'
	done
	r=${rec/ORI/0}
	expand <<<"${r/POL/}"
	assert_equal "$(jf image_orientations)" '[0]'
	# --policy sets the default; a record's dims_policy wins
	r=${rec/ORI/8}
	expand --policy exif_transposed <<<"${r/POL/}"
	assert_equal "$(jf dims_texts)" '["image 3000x4000"]'
	expand --policy exif_transposed <<<"${r/POL/,\"dims_policy\":\"encoded\"}"
	assert_equal "$(jf dims_texts)" '["image 4000x3000"]'
}

@test "EXIF: real oriented JPEGs (Landscape 5-8 stored 1200x1800, display 1800x1200)" {
	for f in Landscape_1 Landscape_3 Landscape_5 Landscape_6 Landscape_8 Portrait_0 Portrait_1 Portrait_6; do
		printf '{"id":"%s","family":"kimi_k3","dims_policy":"exif_transposed","token_ids":[163605],"images":[{"path":"%s/%s.jpg"}]}\n' "$f" "$IMG" "$f"
	done >"$BATS_TEST_TMPDIR/in.ndjson"
	expand "$BATS_TEST_TMPDIR/in.ndjson"
	assert_success
	got=$(printf '%s\n' "$output" | /usr/bin/python3 -c 'import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r["id"], r["image_orientations"][0], r["dims_texts"][0], r["image_token_counts"][0])')
	# K3 1800x1200: ceil(1800/28) * ceil(1200/28) = 65 * 43 = 2795;
	# Portrait_0's tag is 0 (tests/fixtures/README.md): invalid, no swap
	assert_equal "$got" "Landscape_1 1 image 1800x1200 2795
Landscape_3 3 image 1800x1200 2795
Landscape_5 5 image 1800x1200 2795
Landscape_6 6 image 1800x1200 2795
Landscape_8 8 image 1800x1200 2795
Portrait_0 invalid image 1200x1800 2795
Portrait_1 1 image 1200x1800 2795
Portrait_6 6 image 1200x1800 2795"
	# encoded policy: stored (header) dims
	expand <<<"{\"family\":\"kimi_k3\",\"token_ids\":[163605],\"images\":[{\"path\":\"$IMG/Landscape_6.jpg\"}]}"
	assert_equal "$(jf dims_texts)" '["image 1200x1800"]'
	assert_equal "$(jf image_orientations)" '[6]'
}

@test "path images: mm_hash is XXH3-64 of the file bytes (mm_hash_source file_bytes)" {
	want=$(xxhsum -H3 "$IMG/Portrait_1.jpg" | sed 's/.* = //; s/ .*//')
	[ ${#want} -eq 16 ] || want=$(xxhsum -H3 "$IMG/Portrait_1.jpg" | cut -d' ' -f1 | sed 's/^XXH3_//')
	expand <<<"{\"family\":\"qwen3_vl\",\"token_ids\":[151655],\"images\":[{\"path\":\"$IMG/Portrait_1.jpg\"}]}"
	assert_success
	assert_equal "$(jf mm_hash_source)" '["file_bytes"]'
	assert_equal "$(jf mm_hashes_hex)" "[\"$want\"]"
	assert_equal "$(jf image_dims)" '[[1200,1800]]'
	# a url given with the path names the image: url hash, file dims
	expand <<<"{\"family\":\"qwen3_vl\",\"token_ids\":[151655],\"images\":[{\"url\":\"https://example.com/a.png\",\"path\":\"$IMG/Portrait_1.jpg\"}]}"
	assert_equal "$(jf mm_hashes_hex)" '["432b06447698eaf0"]'
	assert_equal "$(jf mm_hash_source)" '["url"]'
	assert_equal "$(jf image_dims)" '[[1200,1800]]'
}

@test "data: URLs: dims from the decoded header, mm_hash of the whole URL" {
	# PNG signature + IHDR 1024x768 (CRC zero: never checked)
	png=$(b64 89504e470d0a1a0a0000000d494844520000040000000300080200000000000000)
	url="data:image/png;base64,$png"
	want=$(printf '%s' "$url" | xxhsum -H3 | sed 's/.* = //')
	expand <<<"{\"family\":\"qwen3_vl\",\"token_ids\":[5,151655],\"block_size\":4,\"images\":[{\"url\":\"$url\"}]}"
	assert_success
	assert_equal "$(jf image_dims)" '[[1024,768]]'
	assert_equal "$(jf image_token_counts)" '[768]'
	assert_equal "$(jf mm_hashes_hex)" "[\"$want\"]"
	assert_equal "$(jf mm_hash_source)" '["url"]'
}

@test "test 26: fallbacks keep token_ids and hash complete blocks only" {
	expand <<<'{"family":"kimi_k3","token_ids":[1,163605,163605],"block_size":2,"images":[{"url":"https://example.com/b.png","width":56,"height":56}]}'
	assert_success
	assert_equal "$(jf status)" '"fallback"'
	assert_equal "$(jf reason)" '"placeholder_count_mismatch"'
	assert_equal "$(jf routing_token_ids)" '[1,163605,163605]'
	assert_equal "$(jf expanded_prompt_len)" 'null'
	assert_equal "$(jf mm_hashes)" 'null'
	assert_equal "$(jf pad_values)" 'null'
	assert_equal "$(jf num_blocks)" '1'
	assert_equal "$(jf complete_blocks)" '1'

	expand <<<'{"family":"qwen2_vl","token_ids":[10,11,151655,12,13],"block_size":4,"images":[]}'
	assert_equal "$(jf reason)" '"no_images"'
	assert_equal "$(jhex block_hashes)" '36fff48ced92fcc8'
	assert_equal "$(jf routing_token_ids)" '[10,11,151655,12,13]'
}

@test "test 26: every fallback reason code" {
	img='{"url":"https://example.com/a.png","width":56,"height":56}'
	while read -r want rec; do
		expand <<<"$rec"
		assert_success
		assert_equal "$(jf reason)" "\"$want\""
		assert_equal "$(jf status)" '"fallback"'
	done <<EOF
user_uuid {"family":"kimi_k25","token_ids":[163605],"images":[{"url":"https://example.com/a.png","width":56,"height":56,"uuid":"u1"}]}
mm_processor_kwargs {"family":"kimi_k25","token_ids":[163605],"mm_processor_kwargs":{"x":1},"images":[$img]}
dims_unresolved {"family":"kimi_k25","token_ids":[163605],"images":[{"url":"https://example.com/a.png"}]}
block_size_zero {"family":"kimi_k25","token_ids":[163605],"block_size":0,"images":[$img]}
non_image_media {"family":"kimi_k25","token_ids":[163605],"other_media":1,"images":[$img]}
unsupported_model {"model":"meta-llama/Llama-4-Scout-17B-16E","token_ids":[200092],"images":[$img]}
unsupported_model {"model_type":"llava_next","token_ids":[32000],"images":[$img]}
unsupported_model {"family":"gemma3","token_ids":[1],"images":[$img]}
too_long {"family":"kimi_k25","token_ids":[163605],"images":[{"url":"https://example.com/a.png","width":56,"height":56,"token_count":1048577}]}
EOF
	# null or {} mm_processor_kwargs is fine
	for k in null '{}'; do
		expand <<<"{\"family\":\"kimi_k25\",\"token_ids\":[163605],\"mm_processor_kwargs\":$k,\"images\":[$img]}"
		assert_equal "$(jf status)" '"exact"'
	done
	# block_size 0: no blocks at all
	expand <<<"{\"family\":\"kimi_k25\",\"token_ids\":[163605],\"block_size\":0,\"images\":[$img]}"
	assert_equal "$(jf block_hashes)" '[]'
}

@test "test 26: K3 layout_unresolved when a control token is not one id" {
	rec='{"family":"kimi_k3","token_ids":[163605],"images":[{"url":"https://example.com/a.png","width":56,"height":56}]}'
	expand --special-tokens "$MMFIX/specials-no-begin.json" <<<"$rec"
	assert_success
	assert_equal "$(jf reason)" '"layout_unresolved"'
	assert_output --partial 'media_begin|> encoded to 15 ids; expected exactly one'
	# a repeated-pad family needs no layout
	expand --special-tokens "$MMFIX/specials-no-begin.json" <<<"${rec/kimi_k3/kimi_k25}"
	assert_equal "$(jf status)" '"exact"'
	# tokenizer_config-style added_tokens_decoder
	expand --special-tokens "$MMFIX/specials-k3.json" <<<"$rec"
	assert_equal "$(jf status)" '"exact"'
	expand --special-tokens none <<<"$rec"
	assert_equal "$(jf reason)" '"layout_unresolved"'
}

@test "K3 with a tiktoken vocabulary: dims text is BPE-encoded (6 ids for 1024x768)" {
	expand --tokenizer "tiktoken:$MMFIX/tiny.tiktoken" <<<'{"family":"kimi_k3","token_ids":[1,163605,2],"block_size":64,"images":[{"url":"https://example.com/a.png","width":1024,"height":768}]}'
	assert_success
	assert_equal "$(jf image_token_counts)" '[1036]'
	# image=1003 " "=32 102=1005 4=52 x=120 768=1007 (ranks in tiny.tiktoken)
	assert_output --partial '"routing_token_ids":[1,163602,1003,32,1005,52,120,1007,163603,916991280,'
	# 1 + (1 + 6 + 1 + 1036 + 1) + 1
	assert_equal "$(jf expanded_prompt_len)" '1047'
	assert_equal "$(jf num_blocks)" '17'
	assert_equal "$(jf complete_blocks)" '16'
	# explicit dims_token_ids override the tokenizer
	expand <<<'{"family":"kimi_k3","token_ids":[163605],"images":[{"url":"https://example.com/a.png","width":1024,"height":768,"dims_token_ids":[7,8]}]}'
	assert_output --partial '"routing_token_ids":[163602,7,8,163603,916991280,'
}

@test "test 27: --encode with the Kimi split and a hand-written vocabulary" {
	printf '%s\n' '{"id":1,"text":"image 1024x768"}' '{"id":2,"text":"image 4000x3000"}' \
		'{"id":3,"text":"<|media_begin|>image","allow_special":true}' '{"id":4,"text":"<|media_begin|>"}' >"$BATS_TEST_TMPDIR/t.ndjson"
	expand --encode --tokenizer "tiktoken:$MMFIX/tiny.tiktoken" "$BATS_TEST_TMPDIR/t.ndjson"
	assert_success
	assert_line --index 0 '{"rec":"tokens","id":1,"n_tokens":6,"token_ids":[1003,32,1005,52,120,1007]}'
	# 400|0|x|300|0 -> 1009 48 120 1011 48
	assert_line --index 1 '{"rec":"tokens","id":2,"n_tokens":7,"token_ids":[1003,32,1009,48,120,1011,48]}'
	assert_line --index 2 '{"rec":"tokens","id":3,"n_tokens":2,"token_ids":[163602,1003]}'
	# specials not allowed: ordinary text, never the special id
	assert_line --index 3 --partial '"n_tokens":'
	[[ "${lines[3]}" != *163602* ]]
}

@test "--encode: runs of 100,000 letters (over PCRE2's default 32 KiB JIT stack) are one piece" {
	# tiny.tiktoken has every byte (b -> rank b) and no "ab": 100,000 "ab"
	# pairs are one piece of 200,000 letters -> 200,000 ids, 97 98 ...
	/usr/bin/python3 -c 'import json; print(json.dumps({"id":1,"text":"ab"*100000})); print(json.dumps({"id":2,"text":"A"*100000}))' >"$BATS_TEST_TMPDIR/long.ndjson"
	# shellcheck disable=SC2086
	run --separate-stderr timeout 60 $KVP_EXEC_PREFIX "$KVP_BIN/mm-expand" --encode --tokenizer "tiktoken:$MMFIX/tiny.tiktoken" "$BATS_TEST_TMPDIR/long.ndjson"
	assert_success
	[ -z "$stderr" ]
	got=$(printf '%s\n' "$output" | /usr/bin/python3 -c 'import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r["id"], r["n_tokens"], r["token_ids"]==[97,98]*100000 or r["token_ids"]==[65]*100000)')
	assert_equal "$got" "1 200000 True
2 100000 True"
}

@test "tokenizer files: a duplicate rank names both lines, an empty vocabulary is refused (exit 2)" {
	printf 'YQ== 0\nYg== 1\nYw== 1\n' >"$BATS_TEST_TMPDIR/dup.tiktoken"
	expand --tokenizer "tiktoken:$BATS_TEST_TMPDIR/dup.tiktoken" <<<"$T20"
	assert_failure 2
	assert_output ''
	assert_equal "$stderr" "mm-expand: --tokenizer: $BATS_TEST_TMPDIR/dup.tiktoken: line 3: duplicate rank 1 (also on line 2)"
	printf '\n\n' >"$BATS_TEST_TMPDIR/empty.tiktoken"
	for f in "$BATS_TEST_TMPDIR/empty.tiktoken" /dev/null; do
		expand --encode --tokenizer "tiktoken:$f" <<<'{"id":1,"text":"a"}'
		assert_failure 2
		assert_output ''
		assert_equal "$stderr" "mm-expand: --tokenizer: $f: no tokens: empty vocabulary"
	done
}

@test "test 28: same url twice gives identical pad runs; bits above 30 collide" {
	expand <<<'{"family":"kimi_k25","token_ids":[163605,9,163605],"images":[{"url":"https://example.com/a.png","width":28,"height":28},{"url":"https://example.com/a.png","width":28,"height":28}]}'
	assert_equal "$(jf routing_token_ids)" "[916991280,9,916991280,$(rep 13 0)]"
	expand <<<'{"family":"kimi_k25","token_ids":[163605],"images":[{"mm_hash":"0x40000005","width":28,"height":28}]}'
	a=$(jf routing_token_ids)
	expand <<<'{"family":"kimi_k25","token_ids":[163605],"images":[{"mm_hash":5,"width":28,"height":28}]}'
	assert_equal "$(jf routing_token_ids)" "$a"
	assert_equal "$a" "[1000005,$(rep 15 0)]"
}

@test "LoRA and namespace change the block seed (spec §7.5 test 17)" {
	expand <<<'{"family":"kimi_k25","lora_name":"my-lora","token_ids":[1,2,3,4],"block_size":4,"images":[]}'
	assert_equal "$(jf block_seed)" '12827409268353072861'
	assert_equal "$(jhex block_hashes)" 'd97c824a0d4bdab1'
	expand <<<'{"family":"kimi_k25","cache_namespace":"tenant","token_ids":[1,2,3,4],"block_size":4,"images":[]}'
	assert_equal "$(jf block_seed)" '5412409220464433485'
	expand <<<'{"family":"kimi_k25","cache_salt":"tenant","token_ids":[1,2,3,4],"block_size":4,"images":[]}'
	assert_equal "$(jf block_seed)" '5412409220464433485'
}

@test "image problems are per-record fallbacks with a detail" {
	head -c 64 "$IMG/Landscape_6.jpg" >"$BATS_TEST_TMPDIR/trunc.jpg"
	printf 'not an image' >"$BATS_TEST_TMPDIR/junk.jpg"
	while read -r want rec; do
		expand <<<"$rec"
		assert_success
		[ -z "$stderr" ]
		assert_equal "$(jf reason)" '"dims_unresolved"'
		assert_output --partial "${want//_/ }"
	done <<EOF
No_such_file_or_directory {"family":"kimi_k25","token_ids":[163605],"images":[{"path":"$BATS_TEST_TMPDIR/missing.jpg"}]}
corrupt_or_truncated_jpeg_header {"family":"kimi_k25","token_ids":[163605],"images":[{"path":"$BATS_TEST_TMPDIR/trunc.jpg"}]}
not_a_JPEG,_PNG,_GIF,_BMP_or_WebP_image {"family":"kimi_k25","token_ids":[163605],"images":[{"path":"$BATS_TEST_TMPDIR/junk.jpg"}]}
invalid_base64:_character_'*'_at_offset_5 {"family":"kimi_k25","token_ids":[163605],"images":[{"url":"data:image/png;base64,iVBO*w0KGgo="}]}
not_a_JPEG,_PNG,_GIF,_BMP_or_WebP_image {"family":"kimi_k25","token_ids":[163605],"images":[{"url":"data:text/plain;base64,aGVsbG8="}]}
never_fetches {"family":"kimi_k25","token_ids":[163605],"images":[{"url":"https://example.com/a.png"}]}
EOF
}

# bats test_tags=valgrind
@test "a hostile JPEG header (DHT counts summing to 4080) is refused before stb_image reads it" {
	# tests/fixtures/mm-expand/dht_counts_4080.jpg: 44 bytes, SOI and a DHT
	# whose sixteen counts are 0xff (16 * 255 = 4080 codes; a table holds 256)
	jpg="$MMFIX/dht_counts_4080.jpg"
	[ "$(stat -c %s "$jpg")" = 44 ]
	for img in "{\"path\":\"$jpg\"}" "{\"url\":\"data:image/jpeg;base64,$(base64 -w0 "$jpg")\"}"; do
		expand <<<"{\"family\":\"kimi_k25\",\"token_ids\":[163605],\"images\":[$img]}"
		assert_success
		[ -z "$stderr" ]
		assert_equal "$(jf reason)" '"dims_unresolved"'
		assert_output --partial 'corrupt JPEG header: DHT code counts sum to 4080, over 256'
	done
}

@test "an image path naming a FIFO, a device or a directory is not a regular file (a FIFO never blocks)" {
	mkfifo "$BATS_TEST_TMPDIR/fifo.jpg"
	for p in "$BATS_TEST_TMPDIR/fifo.jpg" /dev/null "$BATS_TEST_TMPDIR"; do
		# shellcheck disable=SC2086
		run --separate-stderr timeout 10 $KVP_EXEC_PREFIX "$KVP_BIN/mm-expand" <<<"{\"family\":\"kimi_k25\",\"token_ids\":[163605],\"images\":[{\"path\":\"$p\"}]}"
		assert_success
		[ -z "$stderr" ]
		assert_equal "$(jf reason)" '"dims_unresolved"'
		assert_equal "$(jf detail)" "\"images[0]: $p: not a regular file\""
	done
}

@test "--max-image-pixels refuses large images from the header" {
	rec="{\"family\":\"kimi_k25\",\"token_ids\":[163605],\"images\":[{\"path\":\"$IMG/Landscape_1.jpg\"}]}"
	expand --max-image-pixels 2159999 <<<"$rec"
	assert_equal "$(jf reason)" '"dims_unresolved"'
	assert_output --partial '1800x1200 = 2160000 pixels, over the limit of 2159999'
	expand --max-image-pixels 2160000 <<<"$rec"
	assert_equal "$(jf status)" '"exact"'
	expand --max-image-bytes 1000 <<<"$rec"
	assert_output --partial 'over the image size limit'
}

@test "malformed records: FILE:LINE message, exit 1, good records still written; -k goes on" {
	good='{"id":"g","family":"kimi_k25","token_ids":[163605],"images":[{"mm_hash":5,"width":28,"height":28}]}'
	printf '%s\n' "$good" '{"id":"b","images":[]}' "$good" '{"token_ids":[1,4294967296]}' '{"token_ids":[1],"images":[{"width":3}]}' 'nope' "$good" >"$BATS_TEST_TMPDIR/in.ndjson"
	expand "$BATS_TEST_TMPDIR/in.ndjson"
	assert_failure 1
	assert_equal "${#lines[@]}" 1
	assert_equal "$stderr" "mm-expand: $BATS_TEST_TMPDIR/in.ndjson:2: missing key \"token_ids\" (or \"tokens\")"
	expand -k "$BATS_TEST_TMPDIR/in.ndjson"
	assert_failure 1
	assert_equal "${#lines[@]}" 3
	[[ "$stderr" == *"in.ndjson:4: token_ids[1]: 4294967296 does not fit in u32"* ]]
	[[ "$stderr" == *"in.ndjson:5: images[0]: width and height go together"* ]]
	[[ "$stderr" == *"in.ndjson:6:"*"invalid JSON"* ]]
}

# bats test_tags=valgrind
@test "I/O trouble and usage errors exit 2" {
	expand /nonexistent/in.ndjson
	assert_failure 2
	[[ "$stderr" == "mm-expand: /nonexistent/in.ndjson:"* ]]
	run --separate-stderr kvp mm-expand -o /dev/full <<<"$T20"
	assert_failure 2
	[ -n "$stderr" ]
	expand --tokenizer foo:1 </dev/null
	assert_failure 2
	expand --tokenizer tiktoken:/nonexistent/tiktoken.model </dev/null
	assert_failure 2
	[[ "$stderr" == *"/nonexistent/tiktoken.model"* ]]
	expand --policy sideways </dev/null
	assert_failure 2
	expand --pattern '(' </dev/null
	assert_failure 2
	expand --special-tokens /nonexistent.json </dev/null
	assert_failure 2
	expand --block-size -1 </dev/null
	assert_failure 2
}

@test "--hash-strings writes u64 hashes as strings; empty input is fine" {
	expand --hash-strings <<<"$T20"
	assert_success
	assert_output --partial "\"block_hashes\":[\"$(u 72bff3acd8fb641a)\",\"$(u 5abcea3bd7ce27da)\"]"
	assert_output --partial "\"mm_hashes\":[\"$(u 432b06447698eaf0)\"]"
	expand </dev/null
	assert_success
	assert_output ''
}

@test "EAGLE windows and --block-size default" {
	expand <<<'{"family":"kimi_k25","is_eagle":true,"token_ids":[1,2,3,4,5,6,7,8,9],"block_size":4,"images":[]}'
	assert_equal "$(jhex block_hashes)" '1a92ffa9004c0851 1ac55a72d61806e3'
	assert_equal "$(jf is_eagle)" 'true'
	expand --block-size 2 <<<'{"family":"kimi_k25","token_ids":[1,2,3,4,5],"images":[]}'
	assert_equal "$(jf num_blocks)" '2'
}

@test "EXIF in PNG eXIf and WebP EXIF chunks (hand-built headers, orientation 6)" {
	# tests/fuzz/corpus/fuzz_image/{png_exif,webp_vp8x_exif}: 640x480 PNG and
	# 4096x3072 WebP VP8X, each with a big-endian TIFF IFD0 Orientation = 6
	for f in png_exif:png:480x640 webp_vp8x_exif:webp:3072x4096; do
		IFS=: read -r file mime want <<<"$f"
		url="data:image/$mime;base64,$(base64 -w0 "$KVP_ROOT/tests/fuzz/corpus/fuzz_image/$file")"
		expand <<<"{\"family\":\"kimi_k3\",\"dims_policy\":\"exif_transposed\",\"token_ids\":[163605],\"images\":[{\"url\":\"$url\"}]}"
		assert_success
		assert_equal "$(jf image_orientations)" '[6]'
		assert_equal "$(jf dims_texts)" "[\"image $want\"]"
	done
}

@test "demo requests: one Kimi-K3 (data: URL PNG 1024x768) and one Qwen2.5-VL" {
	expand "$MMFIX/demo.ndjson"
	assert_success
	assert_equal "${#lines[@]}" 2
	# §3.4: 1024x768 is 1036 tokens for K3 and 999 for Qwen2.5 (3136/12845056)
	assert_equal "$(jf image_token_counts)" '[1036]'
	assert_equal "$(jf dims_texts)" '["image 1024x768"]'
	# 5 tokens - placeholder + begin + 14 dims bytes + content + 1036 + end
	assert_equal "$(jf expanded_prompt_len)" '1057'
	output=${lines[1]}
	assert_equal "$(jf image_token_counts)" '[999]'
	assert_equal "$(jf expanded_prompt_len)" '1005'
}

@test "kv-hash over routing_token_ids agrees with mm-expand's block and sequence hashes" {
	run bash -c "'$KVP_BIN/mm-expand' '$MMFIX/demo.ndjson' | '$KVP_BIN/kv-hash' --tokens-key routing_token_ids --local-key kvh_local --sequence-key kvh_seq --chain-seed 0 | /usr/bin/python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r[\"id\"], len(r[\"block_hashes\"]), r[\"block_hashes\"] == r[\"kvh_local\"], r[\"sequence_hashes\"] == r[\"kvh_seq\"])'"
	assert_success
	assert_output "k3-demo 17 True True
qwen-demo 63 True True"
}

@test "--dims-tokenizer is an alias of --tokenizer" {
	run -0 --separate-stderr kvp mm-expand --tokenizer bytes:1000 "$KVP_ROOT/tests/fixtures/mm-expand/demo.ndjson"
	want=$output
	run -0 --separate-stderr kvp mm-expand --dims-tokenizer bytes:1000 "$KVP_ROOT/tests/fixtures/mm-expand/demo.ndjson"
	[ -n "$output" ]
	[ "$output" = "$want" ]
	run -0 --separate-stderr kvp mm-expand --dims-tokenizer bytes:2000 "$KVP_ROOT/tests/fixtures/mm-expand/demo.ndjson"
	[ "$output" != "$want" ]
}

# ---- videos (issue 29 §1) ----------------------------------------------------
# Grids: the issue's examples (its text gives them); the rest from
# tests/fixtures/mm-expand/video_ref.py, an independent Python reference
# written from the issue's rules (grid, timestamp texts, and a tiktoken-style
# BPE over the same vocabulary file), run here beside the binary.
VREF="$MMFIX/video_ref.py"
VTOK="tiktoken:$MMFIX/video.tiktoken"
# the timestamp text "<0.5 seconds>" in video.tiktoken, by hand: "<" 60,
# "0" 48, "." 46, "5" 53, " seconds" merged lowest rank first
# (" s" 256, "ec" 258, "on" 259, "ds" 261, "onds" 265, " sec" 266: no
# " seconds") into " sec" 266 + "onds" 265, ">" 62; the split keeps the
# "0." (263) and "<0" (270) merges out, and a longest-match encoder would
# take " seco" (268) + "nds" (269) instead
TS05="60,48,46,53,266,265,62"
vid() { printf '{"family":"qwen3_vl","token_ids":[151656],"videos":[{"frames":%s,"width":%s,"height":%s,"fps":2,"mm_hash":5}]}' "$1" "$2" "$3"; }

# bats test_tags=valgrind
@test "videos: the issue's grids under both budget rules" {
	while read -r f w h rhe legacy; do
		for rule in round-half-even legacy-ceil; do
			want=$rhe
			[ "$rule" = legacy-ceil ] && want=$legacy
			expand --tokenizer "$VTOK" --video-resize "$rule" <<<"$(vid "$f" "$w" "$h")"
			assert_success
			assert_equal "$(jf status)" '"exact"'
			assert_equal "$(jf video_grids)" "[[$want]]"
			IFS=, read -r t gh gw <<<"$want"
			assert_equal "$(jf video_token_counts)" "[$((t * gh * gw / 4))]"
			# the reference agrees
			assert_equal "$(/usr/bin/python3 "$VREF" grid "$f" "$w" "$h" "$rule")" "$t $gh $gw"
		done
	done <<EOF
4 426 240 2,16,26 2,16,26
30 1280 720 15,42,76 15,42,76
31 1920 1080 16,42,74 16,42,74
32 1920 1080 16,40,72 16,40,72
5 3760 1120 3,70,236 3,76,256
5 2304 2240 3,140,144 3,138,142
EOF
}

@test "videos: round-half-even is the default; a record's video_resize wins" {
	expand --tokenizer "$VTOK" <<<"$(vid 5 3760 1120)"
	assert_equal "$(jf video_grids)" '[[3,70,236]]'
	rec='{"family":"qwen3_vl","video_resize":"legacy-ceil","token_ids":[151656],"videos":[{"frames":5,"width":3760,"height":1120,"fps":2,"mm_hash":5}]}'
	expand --tokenizer "$VTOK" <<<"$rec"
	assert_equal "$(jf video_grids)" '[[3,76,256]]'
	expand --tokenizer "$VTOK" --video-resize legacy-ceil <<<"${rec/legacy-ceil/round-half-even}"
	assert_equal "$(jf video_grids)" '[[3,70,236]]'
	# one frame: refused by round-half-even, 1,4,4 under legacy-ceil
	expand --tokenizer "$VTOK" <<<"$(vid 1 64 64)"
	assert_equal "$(jf reason)" '"dims_unresolved"'
	[[ "$(jf detail)" == *"1 frame(s) of 64x64: fewer frames than the temporal patch"* ]]
	expand --tokenizer "$VTOK" --video-resize legacy-ceil <<<"$(vid 1 64 64)"
	assert_equal "$(jf video_grids)" '[[1,4,4]]'
	expand --video-resize nearest <<<"$(vid 2 64 64)"
	assert_failure 2
	[[ "$stderr" == *"round-half-even"*"legacy-ceil"* ]]
}

# bats test_tags=valgrind
@test "videos: 2 frames of 32x32 at 1 fps -> 1,4,4: <0.5 seconds>, vision_start, 4 pads, vision_end" {
	P=1000005
	assert_equal "$(/usr/bin/python3 "$VREF" bpe "$MMFIX/video.tiktoken" '<0.5 seconds>' | tr ' ' ,)" "$TS05"
	assert_equal "$(/usr/bin/python3 "$VREF" times 2 1)" '<0.5 seconds>'
	for toks in '[7,151656,8]' '[7,151652,151656,151653,8]'; do
		expand --tokenizer "$VTOK" <<<"{\"family\":\"qwen3_vl\",\"token_ids\":$toks,\"block_size\":4,\"videos\":[{\"frames\":2,\"width\":32,\"height\":32,\"fps\":1,\"mm_hash\":5}]}"
		assert_success
		assert_equal "$(jf status)" '"exact"'
		assert_equal "$(jf video_grids)" '[[1,4,4]]'
		assert_equal "$(jf video_token_counts)" '[4]'
		assert_equal "$(jf video_pad_values)" "[$P]"
		assert_equal "$(jf video_timestamps)" '[["<0.5 seconds>"]]'
		assert_equal "$(jf expanded_prompt_len)" '15'
		assert_equal "$(jf routing_token_ids)" "[7,$TS05,151652,$P,$P,$P,$P,151653,8,0]"
	done
	# Qwen3.5: its own ids
	expand --tokenizer "$VTOK" <<<'{"model":"Qwen/Qwen3.5-27B","token_ids":[248053,248057,248054],"videos":[{"frames":2,"width":32,"height":32,"fps":1,"mm_hash":5}]}'
	assert_equal "$(jf family)" '"qwen3_5"'
	assert_equal "$(jf routing_token_ids)" "[$TS05,248053,$P,$P,$P,$P,248054,0,0,0]"
}

@test "videos: without --tokenizer the timestamps cannot be encoded: fallback expansion_failed" {
	expand <<<"$(vid 2 32 32)"
	assert_success
	assert_equal "$(jf status)" '"fallback"'
	assert_equal "$(jf reason)" '"expansion_failed"'
	assert_equal "$(jf detail)" '"videos[0]: timestamp texts need a tokenizer and none was given"'
	assert_equal "$(jf routing_token_ids)" '[151656]'
	assert_equal "$(jf video_grids)" 'null'
	# the bytes: stand-in, when asked for, encodes them as for K3's dims;
	# 2 frames at 2 fps: (0 + 0.5) / 2 = 0.25, which rounds half to even
	expand --tokenizer bytes:1000 <<<"$(vid 2 32 32)"
	assert_equal "$(jf status)" '"exact"'
	assert_equal "$(/usr/bin/python3 "$VREF" times 2 2)" '<0.2 seconds>'
	assert_equal "$(jf video_timestamps)" '[["<0.2 seconds>"]]'
	assert_equal "$(jf routing_token_ids)" '[1060,1048,1046,1050,1032,1115,1101,1099,1111,1110,1100,1115,1062,151652,1000005,1000005,1000005,1000005,151653,0,0,0,0,0,0,0,0,0,0,0,0,0]'
}

@test "videos: timestamps: frame index round(t * fps), pairs averaged, last frame repeated" {
	rec='{"family":"qwen3_vl","token_ids":[151656],"videos":[{"width":64,"height":64,"fps":29.97,"timestamps":[0,0.5,1.0,1.5,2.0],"mm_hash":5}]}'
	expand --tokenizer "$VTOK" <<<"$rec"
	assert_equal "$(jf video_frames)" '[5]'
	assert_equal "$(jf video_grids)" '[[3,4,4]]'
	want=$(/usr/bin/python3 "$VREF" times 5 29.97 0 0.5 1.0 1.5 2.0 | /usr/bin/python3 -c 'import json,sys; print(json.dumps([sys.stdin.read().split("\n")[:-1]],separators=(",",":")))')
	assert_equal "$want" '[["<0.3 seconds>","<1.3 seconds>","<2.0 seconds>"]]'
	assert_equal "$(jf video_timestamps)" "$want"
	# --pattern qwen splits digits one by one ("12" is a merge of the file)
	rec='{"family":"qwen3_vl","token_ids":[151656],"videos":[{"frames":2,"width":64,"height":64,"fps":2,"timestamps":[12.25,12.75],"mm_hash":5}]}'
	expand --tokenizer "$VTOK" --pattern qwen <<<"$rec"
	assert_equal "$(jf video_timestamps)" '[["<12.5 seconds>"]]'
	[[ "$(jf routing_token_ids)" == "[60,49,50,46,53,266,265,62,151652,"* ]]
	expand --tokenizer "$VTOK" <<<"$rec"
	[[ "$(jf routing_token_ids)" == "[60,271,46,53,266,265,62,151652,"* ]]
}

# a tiny video made with ffmpeg's CLI: 2 s of 64x48 at 5 fps
mkvideo() {
	ffmpeg -nostdin -v error -y -f lavfi -i testsrc=size=64x48:rate=5 -t 2 "$@"
}

@test "videos: a file read with FFmpeg: 10 frames of 64x48 at 5 fps -> 5,4,4" {
	V="$BATS_TEST_TMPDIR/v.mp4"
	mkvideo -pix_fmt yuv420p "$V"
	want=$(xxhsum -H3 "$V" | sed 's/.* = //')
	times=$(/usr/bin/python3 "$VREF" times 10 5 | /usr/bin/python3 -c 'import json,sys; print(json.dumps([sys.stdin.read().split("\n")[:-1]],separators=(",",":")))')
	expand --tokenizer "$VTOK" <<<"{\"family\":\"qwen3_vl\",\"token_ids\":[1,151652,151656,151653,2],\"videos\":[{\"path\":\"$V\"}]}"
	assert_success
	assert_equal "$(jf status)" '"exact"'
	assert_equal "$(jf video_dims)" '[[64,48]]'
	assert_equal "$(jf video_frames)" '[10]'
	assert_equal "$(jf video_fps)" '[5]'
	assert_equal "$(jf video_grids)" "[[$(/usr/bin/python3 "$VREF" grid 10 64 48 round-half-even | tr ' ' ,)]]"
	assert_equal "$(jf video_grids)" '[[5,4,4]]'
	assert_equal "$(jf video_timestamps)" "$times"
	assert_equal "$(jf video_mm_hash_source)" '["file_bytes"]'
	assert_equal "$(jf video_mm_hashes)" "[$(u "$want")]"
	# 1 + 5 groups of (7 + 1 + 4 + 1) + 1
	assert_equal "$(jf expanded_prompt_len)" '67'
	# explicit metadata wins over the file's
	expand --tokenizer "$VTOK" <<<"{\"family\":\"qwen3_vl\",\"token_ids\":[151656],\"videos\":[{\"path\":\"$V\",\"frames\":2,\"fps\":1}]}"
	assert_equal "$(jf video_grids)" '[[1,4,4]]'
	assert_equal "$(jf video_dims)" '[[64,48]]'
}

@test "videos: Matroska (no frame count: packets counted), a data: URL, refusals" {
	V="$BATS_TEST_TMPDIR/v.mkv"
	mkvideo "$V"
	expand --tokenizer "$VTOK" <<<"{\"family\":\"qwen3_vl\",\"token_ids\":[151656],\"videos\":[{\"path\":\"$V\"}]}"
	assert_equal "$(jf video_frames)" '[10]'
	assert_equal "$(jf video_grids)" '[[5,4,4]]'
	url="data:video/x-matroska;base64,$(base64 -w0 "$V")"
	printf '{"family":"qwen3_vl","token_ids":[151656],"videos":[{"url":"%s"}]}\n' "$url" >"$BATS_TEST_TMPDIR/r.ndjson"
	expand --tokenizer "$VTOK" "$BATS_TEST_TMPDIR/r.ndjson"
	assert_equal "$(jf video_grids)" '[[5,4,4]]'
	assert_equal "$(jf video_mm_hash_source)" '["url"]'
	assert_equal "$(jf video_mm_hashes)" "[$(u "$(printf '%s' "$url" | xxhsum -H3 | sed 's/.* = //')")]"
	expand --tokenizer "$VTOK" --max-video-bytes 100 <<<"{\"family\":\"qwen3_vl\",\"token_ids\":[151656],\"videos\":[{\"path\":\"$V\"}]}"
	assert_equal "$(jf reason)" '"dims_unresolved"'
	[[ "$(jf detail)" == *"over the video size limit of 100"* ]]
	expand --tokenizer "$VTOK" <<<"{\"family\":\"qwen3_vl\",\"token_ids\":[151656],\"videos\":[{\"path\":\"$IMG/../mm-expand/tiny.tiktoken\"}]}"
	assert_equal "$(jf reason)" '"dims_unresolved"'
	[[ "$(jf detail)" == *"not a video FFmpeg reads"* ]]
	expand --tokenizer "$VTOK" <<<'{"family":"qwen3_vl","token_ids":[151656],"videos":[{"url":"https://example.com/v.mp4"}]}'
	assert_equal "$(jf reason)" '"dims_unresolved"'
	assert_equal "$(jf detail)" '"videos[0]: no width/height given and no path or data: URL to read it from (mm-expand never fetches http(s) URLs)"'
	# the URL names the video when its metadata is given
	expand --tokenizer "$VTOK" <<<'{"family":"qwen3_vl","token_ids":[151656],"videos":[{"url":"https://example.com/v.mp4","frames":2,"width":32,"height":32,"fps":1}]}'
	assert_equal "$(jf video_mm_hash_source)" '["url"]'
}

@test "videos: fallbacks and malformed videos" {
	m='"frames":2,"width":32,"height":32,"fps":1,"mm_hash":5'
	while read -r want rec; do
		expand --tokenizer "$VTOK" <<<"$rec"
		assert_success
		assert_equal "$(jf reason)" "\"$want\""
		assert_equal "$(jf status)" '"fallback"'
	done <<EOF
non_image_media {"family":"qwen2_vl","token_ids":[151656],"videos":[{$m}]}
placeholder_count_mismatch {"family":"qwen3_vl","token_ids":[151656,151656],"videos":[{$m}]}
user_uuid {"family":"qwen3_vl","token_ids":[151656],"videos":[{$m,"uuid":"u"}]}
dims_unresolved {"family":"qwen3_vl","token_ids":[151656],"videos":[{"frames":2,"width":32,"height":32,"fps":1}]}
dims_unresolved {"family":"qwen3_vl","token_ids":[151656],"videos":[{"frames":2,"width":20,"height":32,"fps":1,"mm_hash":5}]}
EOF
	while IFS='|' read -r msg rec; do
		expand <<<"$rec"
		assert_failure 1
		[[ "$stderr" == *"$msg"* ]] || fail "$stderr"
	done <<EOF
videos[0]: 3 timestamps for 2 frames|{"family":"qwen3_vl","token_ids":[151656],"videos":[{$m,"timestamps":[0,1,2]}]}
videos[0]: fps: expected a positive number|{"family":"qwen3_vl","token_ids":[151656],"videos":[{"frames":2,"fps":-1}]}
videos[0]: timestamps[1]: not a time in seconds|{"family":"qwen3_vl","token_ids":[151656],"videos":[{"timestamps":[0,-1]}]}
videos: expected an array|{"family":"qwen3_vl","token_ids":[151656],"videos":{}}
EOF
}

@test "videos and images in one request: each placeholder its own" {
	expand --tokenizer "$VTOK" <<<'{"family":"qwen3_vl","token_ids":[151652,151655,151653,151656],"images":[{"url":"https://example.com/a.png","width":32,"height":32}],"videos":[{"frames":2,"width":32,"height":32,"fps":1,"mm_hash":5}]}'
	assert_equal "$(jf status)" '"exact"'
	assert_equal "$(jf image_token_counts)" '[64]'
	assert_equal "$(jf video_token_counts)" '[4]'
	assert_equal "$(jf expanded_prompt_len)" "$((3 + 64 - 1 + 13))"
}

@test "videos: FFmpeg opens nothing by name: an ffconcat list or HLS playlist naming others is refused" {
	V="$BATS_TEST_TMPDIR/v.mp4"
	mkvideo -pix_fmt yuv420p "$V"
	printf 'ffconcat version 1.0\nfile %s\n' "$V" >"$BATS_TEST_TMPDIR/list.txt"
	printf '#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n%s\n#EXT-X-ENDLIST\n' "$V" >"$BATS_TEST_TMPDIR/p.m3u8"
	for f in list.txt p.m3u8; do
		expand --tokenizer "$VTOK" <<<"{\"family\":\"qwen3_vl\",\"token_ids\":[151656],\"videos\":[{\"path\":\"$BATS_TEST_TMPDIR/$f\"}]}"
		assert_success
		assert_equal "$(jf reason)" '"dims_unresolved"'
		[[ "$(jf detail)" == *"$f: not a video FFmpeg reads"* ]] || fail "$(jf detail)"
	done
}

# Issue 28 item 9: json-c's tree of a request's token ids took about 48
# times the line (a 62 MiB line: 3.1 GB).
@test "issue 28: 16 MiB request lines: expanded and refused as json-c does, under 8x the line" {
	d=$BATS_TEST_TMPDIR
	m='"model":"Qwen/Qwen2.5-VL-7B-Instruct","block_size":16'
	long_line "$d/a" '{"id":"r\u0041",'"$m"',"x":[1,{"a":2}],"token_ids":[' ']}' 16
	long_line "$d/b" '{"id":"r",'"$m"',"token_ids":[' ',4294967296]}' 16
	long_line "$d/c" '{"id":"r",'"$m"',"tokens":[' ',-1],"token_ids":[1]}' 16
	long_line "$d/e" '[' ']' 16
	long_line "$d/f" '{"id":"r",'"$m"',"token_ids":[' '' 16
	run -0 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/mm-expand" "$d/a"
	rss_within 8 "$d/a" "$d/rss" mm-expand
	# worked out: 8,388,608 ids of 1 (16 MiB of "1,"), no media, so the
	# routing ids are the prompt's and there are 524,288 blocks of 16
	run -0 jq -c '[.id, (.routing_token_ids | length), (.routing_token_ids | unique), (.block_hashes | length)]' <<<"$output"
	assert_output '["rA",8388608,[1],524288]'
	n=8388608 # the ones in each 16 MiB line: 16 * 2^20 / 2
	for x in b:"token_ids[$n]: 4294967296 does not fit in u32" \
		c:"tokens[$n]: must not be negative (got -1)" e:'record: expected a JSON object'; do
		f=$d/${x%%:*}
		run -1 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/mm-expand" "$f"
		rss_within 8 "$f" "$d/rss" mm-expand
		[[ "${stderr%%$'\n'*}" == "mm-expand: $f:1"*": ${x#*:}" ]] || fail "$stderr"
	done
	run -1 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/mm-expand" "$d/f"
	rss_within 8 "$d/f" "$d/rss" mm-expand
	[[ "${stderr%%$'\n'*}" == "mm-expand: $d/f:1:$(wc -c <"$d/f"): invalid JSON: unexpected end of line" ]] || fail "$stderr"
}
