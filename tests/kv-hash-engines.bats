#!/usr/bin/env bats
# kv-hash --scheme (engine block hashes) and --detect (which scheme a
# capture uses, docs/spec/engine-hashes.md §7). Expected hashes come from
# tests/fixtures/engine-hashes/vectors.json (read with jq) or from the
# captures built by tests/fixtures/kv-hash/engine_capture.py, an independent
# Python reference (hashlib, pickle, its own CBOR, xxhsum, CPython hash())
# packed with python3-msgpack; verdicts are checked against the way each
# capture was built.
load test_helper

V="$FIX/engine-hashes/vectors.json"
cap() { /usr/bin/python3 "$FIX/kv-hash/engine_capture.py" "$@"; }
R32='{"tokens":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31]}'

# vec NAME — the published u64 array of vLLM vector NAME, as JSON
vec() { jq -c --arg n "$1" '.vllm[] | select(.name == $n) | .published_u64 | map(tonumber? // .)' "$V" | tr -d '"'; }
pub() { jq -r --arg n "$1" '.vllm[] | select(.name == $n) | .published_u64 | join(",")' "$V"; }

@test "--scheme: the vLLM vectors V1, V6, V9, V10 (seed 0) and V7, V8 (default seed)" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-sha256-cbor --seed 0 <<<"$R32"
	assert_output "{\"block_hashes\":[$(pub V1)]}"
	[ -z "$stderr" ]
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-sha256 --seed 0 <<<"$R32"
	assert_output "{\"block_hashes\":[$(pub V6)]}"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-xxhash-cbor --seed 0 <<<"$R32"
	assert_output "{\"block_hashes\":[$(pub V9)]}"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-xxhash --seed 0 <<<"$R32"
	assert_output "{\"block_hashes\":[$(pub V10)]}"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-sha256-cbor <<<"$R32"
	assert_output "{\"block_hashes\":[$(pub V7)]}"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-sha256 <<<"$R32"
	assert_output "{\"block_hashes\":[$(pub V8)]}"
}

@test "--scheme vllm-sha256-cbor: LoRA and cache_salt from options and from the record (V3, V4, V5)" {
	local t48='[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47]'
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-sha256-cbor --seed 0 --namespace tenant-a <<<"{\"tokens\":$t48}"
	assert_output "{\"block_hashes\":[$(pub V3)]}"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-sha256-cbor --seed 0 --lora adapter-a <<<"{\"tokens\":$t48}"
	assert_output "{\"block_hashes\":[$(pub V4)]}"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-sha256-cbor --seed 0 <<<"{\"tokens\":$t48,\"lora_name\":\"adapter-a\",\"cache_salt\":\"tenant-a\"}"
	assert_output "{\"block_hashes\":[$(pub V5)]}"
	# extra_keys as kv-decode writes them replace lora_name / cache_salt
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-sha256-cbor --seed 0 <<<"{\"tokens\":$t48,\"extra_keys\":[[\"adapter-a\",\"tenant-a\"],[\"adapter-a\"],[\"adapter-a\"]]}"
	assert_output "{\"block_hashes\":[$(pub V5)]}"
}

@test "--scheme: SGLang (i64 as u64), legacy, TRT-LLM, llm-d, 64-bit legacy vectors" {
	local s1 l r1 f lg
	s1=$(jq -r '.sglang[0].published_i64 | map(tonumber | if . < 0 then . + 18446744073709551616 else . end) | join(",")' "$V")
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme sglang <<<"$R32"
	assert_output "{\"block_hashes\":[$(jq -r '.sglang[0].published_i64 | join(",")' "$V")]}"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme sglang-legacy <<<"$R32"
	# 2828489712818767170 and -2299187964520990307 = 2^64 - 2299187964520990307
	assert_output '{"block_hashes":[2828489712818767170,16147556109188561309]}'
	r1=$(jq -r '.trtllm[0].published_u64 | join(",")' "$V")
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme trtllm-v1 <<<"$R32"
	assert_output "{\"block_hashes\":[$r1]}"
	f=$(jq -r '.llmd_fnv[0].keys | join(",")' "$V")
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme llmd-fnv --lora Qwen/Qwen3-0.6B <<<"$R32"
	assert_output "{\"block_hashes\":[$f]}"
	lg=$(jq -r '.vllm_legacy_sha256_cbor_64bit.published_u64 | join(",")' "$V")
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme vllm-sha256-cbor-64bit --seed 0 <<<"$R32"
	assert_output "{\"block_hashes\":[$lg]}"
	[ -n "$s1" ]
}

@test "--scheme writes no sequence key; --local-key renames; the default scheme is dynamo" {
	run -0 --separate-stderr kvp kv-hash --block-size 16 --scheme vllm-sha256-cbor --seed 0 --local-key h <<<"$R32"
	assert_output --partial "\"h\":[$(pub V1)]}"
	refute_output --partial sequence_hashes
	run -0 --separate-stderr kvp kv-hash --block-size 16 --scheme dynamo <<<"$R32"
	assert_output --partial '"sequence_hashes":[15310707395893867146,13769157705258532664]'
}

@test "--scheme errors: unknown name, a seed for a seedless scheme (exit 2)" {
	run -2 --separate-stderr kvp kv-hash --scheme vllm
	[[ "$stderr" == *"--scheme: unknown scheme 'vllm'"* ]]
	run -2 --separate-stderr kvp kv-hash --scheme sglang --seed 0 --block-size 4 <<<'{"tokens":[1]}'
	[[ "$stderr" == *"takes no seed"* ]]
}

@test "--scheme on kv-decode events: a child store chains from its parent's full digest" {
	run -0 --separate-stderr bash -c "/usr/bin/python3 '$FIX/kv-hash/engine_capture.py' vllm-sha256-cbor --requests 1 | '$KVP_BIN/kv-decode' | '$KVP_BIN/kv-hash' --scheme vllm-sha256-cbor --seed 0 | jq -c 'select(.rec==\"event\") | .block_hashes == .tokens_hash'"
	assert_output $'true\ntrue'
}

@test "--scheme: a child whose parent was never hashed is a bad record (exit 1)" {
	run -1 --separate-stderr bash -c "/usr/bin/python3 '$FIX/kv-hash/engine_capture.py' vllm-sha256-cbor --requests 1 --no-roots | '$KVP_BIN/kv-decode' | '$KVP_BIN/kv-hash' --scheme vllm-sha256-cbor --seed 0"
	[[ "$stderr" == *"its store is not in the input"* ]]
}

# --- --detect ---------------------------------------------------------------

detect() { # detect 'CAPTURE ARGS' [KV-HASH ARGS...]
	local c=$1
	shift
	run --separate-stderr bash -c "$(printf '%s' "/usr/bin/python3 '$FIX/kv-hash/engine_capture.py' $c | '$KVP_BIN/kv-decode' | $KVP_EXEC_PREFIX '$KVP_BIN/kv-hash' --detect $*")"
}

@test "--detect: MATCH for every scheme, with the seed it was built with" {
	local s
	for s in vllm-sha256-cbor vllm-sha256 vllm-xxhash-cbor vllm-xxhash; do
		detect "$s --seed 0"
		[ "$status" -eq 0 ]
		assert_output --partial "\"verdict\":\"MATCH\",\"scheme\":\"$s\",\"seed\":\"0\",\"block_size\":4,\"hash_granularity\":4,\"stores\":6,\"root_stores\":3,\"verified_stores\":6,\"verified_blocks\":12,\"unresolved_blocks\":0,\"mismatched_blocks\":0"
	done
	detect "vllm-sha256-cbor --seed vllm-none-hash"
	assert_output --partial '"verdict":"MATCH","scheme":"vllm-sha256-cbor","seed":"vllm-none-hash"'
	for s in sglang sglang-legacy trtllm-v1; do
		detect "$s"
		assert_output --partial "\"verdict\":\"MATCH\",\"scheme\":\"$s\",\"seed\":null"
		assert_output --partial '"verified_blocks":12,"unresolved_blocks":0,"mismatched_blocks":0'
	done
	detect "llmd-fnv --seed="
	assert_output --partial '"verdict":"MATCH","scheme":"llmd-fnv","seed":""'
	[ -z "$stderr" ]
}

@test "--detect: SGLang with cache_salt (salted root), vLLM with cache_salt (block-0 extra)" {
	detect "sglang --salt tenant-a"
	assert_output --partial '"verdict":"MATCH","scheme":"sglang"'
	assert_output --partial '"verified_blocks":12,'
	detect "vllm-sha256 --salt tenant-a --seed 42"
	assert_output --partial '"verdict":"MATCH","scheme":"vllm-sha256","seed":"42"'
	assert_output --partial '"verified_blocks":12,'
}

@test "--detect: reversed event order verifies the same counts" {
	detect "vllm-sha256-cbor --seed 0"
	local fwd=$output
	detect "vllm-sha256-cbor --seed 0 --reverse"
	[ "$output" = "$fwd" ]
	detect "sglang --reverse"
	assert_output --partial '"verdict":"MATCH","scheme":"sglang"'
	assert_output --partial '"verified_stores":6,"verified_blocks":12,'
}

@test "--detect: root stores missing → UNRESOLVED, 0 mismatched" {
	detect "vllm-sha256-cbor --seed 0 --no-roots"
	[ "$status" -eq 0 ]
	assert_output --partial '"verdict":"UNRESOLVED","scheme":null,"seed":null,"block_size":4,"hash_granularity":null,"stores":3,"root_stores":0,"verified_stores":0,"verified_blocks":0,"unresolved_blocks":6,"mismatched_blocks":0'
	assert_output --partial 'reset_prefix_cache'
}

@test "--detect: an unknown seed → UNKNOWN-ROOT; --seed adds a candidate" {
	detect "vllm-sha256-cbor --seed 31337"
	assert_output --partial '"verdict":"UNKNOWN-ROOT","scheme":null'
	assert_output --partial 'PYTHONHASHSEED'
	detect "vllm-sha256-cbor --seed 31337" --seed 31337
	assert_output --partial '"verdict":"MATCH","scheme":"vllm-sha256-cbor","seed":"31337"'
}

@test "--expect: the matching configuration exits 0" {
	detect "vllm-sha256-cbor --seed 0" --expect vllm-sha256-cbor:0:4
	[ "$status" -eq 0 ]
	assert_output --partial '"differs":null'
	[ -z "$stderr" ]
}

@test "--expect: wrong seed and wrong block size (exit 1, field named on stderr and in the record)" {
	detect "vllm-sha256-cbor --seed 0" --expect vllm-sha256-cbor:vllm-none-hash:4
	[ "$status" -eq 1 ]
	assert_output --partial '"verdict":"MATCH"'
	assert_output --partial '"differs":"seed"'
	[[ "$stderr" == *"seed differs from --expect"* ]]
	detect "vllm-sha256-cbor --seed 0" --expect vllm-sha256-cbor:0:16
	[ "$status" -eq 1 ]
	assert_output --partial '"verdict":"BLOCK-SIZE"'
	assert_output --partial '"differs":"block_size"'
	[[ "$stderr" == *"block_size differs from --expect"* ]]
	detect "sglang" --expect vllm-sha256:0:4
	[ "$status" -eq 1 ]
	assert_output --partial '"differs":"scheme"'
}

@test "--format text: the human verdict with the next step" {
	detect "vllm-sha256-cbor --seed 0" --format text
	[ "$status" -eq 0 ]
	assert_line --index 0 'stream kv-events worker 0 dp0  MATCH'
	assert_line --index 1 '  scheme   vllm-sha256-cbor  seed "0"  block_size 4 (hash granularity 4)'
	assert_output --partial 'the engines run with PYTHONHASHSEED=0'
}

@test "--cross-stream: two pods with different seeds have different roots" {
	run --separate-stderr bash -c "(/usr/bin/python3 '$FIX/kv-hash/engine_capture.py' vllm-sha256-cbor --seed 0; /usr/bin/python3 '$FIX/kv-hash/engine_capture.py' vllm-sha256-cbor --seed 98765 --worker 1) | '$KVP_BIN/kv-decode' | '$KVP_BIN/kv-hash' --detect --cross-stream"
	[ "$status" -eq 0 ]
	assert_line --index 2 '{"rec":"cross_stream","stream_a":"kv-events worker 0 dp0","stream_b":"kv-events worker 1 dp0","verdict":"DIFFERENT-ROOT","compared":3,"same":0,"different":3}'
	run --separate-stderr bash -c "(/usr/bin/python3 '$FIX/kv-hash/engine_capture.py' vllm-sha256-cbor --seed 5; /usr/bin/python3 '$FIX/kv-hash/engine_capture.py' vllm-sha256-cbor --seed 5 --worker 1) | '$KVP_BIN/kv-decode' | '$KVP_BIN/kv-hash' --detect --cross-stream"
	assert_line --index 2 --partial '"verdict":"SAME-ROOT","compared":3,"same":3,"different":0}'
}

@test "--seed-search finds seed 4242 within its bound" {
	detect "vllm-sha256-cbor --seed 4242" --seed-search --max-seconds 20
	[ "$status" -eq 0 ]
	assert_output --partial '"verdict":"MATCH","scheme":"vllm-sha256-cbor","seed":"4242"'
	assert_output --partial '"seed_search":{"found":"4242","searched":4243,'
}

@test "--detect option errors (exit 2)" {
	run -2 --separate-stderr kvp kv-hash --expect vllm-sha256:0:16
	[[ "$stderr" == *"need --detect"* ]]
	run -2 --separate-stderr kvp kv-hash --detect --expect nope
	[[ "$stderr" == *"--expect"* ]]
	run -2 --separate-stderr kvp kv-hash --detect --scheme sglang
	[[ "$stderr" == *"drop --scheme"* ]]
}

# Expected values from an independent computation: Python's hashlib over
# the rule in docs/spec/engine-hashes.md §2.1 (LoRA), in the test.
sglang_lora_ref() { # sglang_lora_ref NTOK PAGE LORA [SALT]
	/usr/bin/python3 - "$@" <<'PY'
import hashlib, struct, sys
n, page, lora = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
salt = sys.argv[4] if len(sys.argv) > 4 else None
prior = hashlib.sha256(b"sglang-cache-salt-v1\0" + salt.encode()).digest() if salt else b""
seed = hashlib.sha256(b"sglang-kv-event-lora-v1\0" + lora.encode()).digest()
out = []
for i in range(n // page):
    prior = hashlib.sha256(prior + b"".join(struct.pack("<I", t) for t in range(i * page, (i + 1) * page))).digest()
    h = hashlib.sha256(seed + prior[:8]).digest()  # i64-BE(h) is the digest's first 8 bytes
    out.append(str(int.from_bytes(h[:8], "big")))
print('{"block_hashes":[%s]}' % ",".join(out))
PY
}

@test "sglang + LoRA: each published hash mixed with the adapter's seed (--lora, --lora-name, lora_name)" {
	local r32 r48
	r32=$(jq -cn '{tokens: [range(32)]}')
	r48=$(jq -cn '{tokens: [range(48)], lora_name: "adapter-a", cache_salt: "tenant-a"}')
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme sglang --lora adapter-a <<<"$r32"
	assert_output "$(sglang_lora_ref 32 16 adapter-a)"
	[ -z "$stderr" ]
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme sglang --lora-name adapter-a <<<"$r32"
	assert_output "$(sglang_lora_ref 32 16 adapter-a)"
	# the record's lora_name and cache_salt: salted root, then mixed
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme sglang <<<"$r48"
	assert_output "$(sglang_lora_ref 48 16 adapter-a tenant-a)"
	# without a LoRA name the values are S1's (unmixed)
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 16 --scheme sglang <<<"$r32"
	assert_output '{"block_hashes":[6738917275443968386,5080553031686747138]}'
}

@test "--detect: SGLang stores naming a LoRA match mixed (current) and unmixed (older SGLang)" {
	detect "sglang --lora adapter-a"
	assert_success
	assert_output --partial '"verdict":"MATCH","scheme":"sglang"'
	assert_output --partial '"verified_stores":6,"verified_blocks":12,"unresolved_blocks":0,"mismatched_blocks":0'
	detect "sglang --lora adapter-a --lora-unmixed"
	assert_success
	assert_output --partial '"verdict":"MATCH","scheme":"sglang"'
	assert_output --partial '"verified_stores":6,"verified_blocks":12,"unresolved_blocks":0,"mismatched_blocks":0'
	[ -z "$stderr" ]
}
