#!/usr/bin/env bats
# kv-hash: Dynamo block and sequence hashes added to token records.
# Expected hashes are copied from docs/spec/route-score.md §1.6 (R§1.6 in
# test names), docs/spec/kv-events.md §6.5 (E§6.5),
# tests/fixtures/engine-hashes/vectors.json, or computed independently with
# xxhsum -H3 (seed 0 only).
load test_helper

F="$FIX/kv-hash"

# R§1.6: tokens 0..11, bs 4
L0=9143094415614847814
L1=12124091508212882195
L2=1088361764653601668
S1=9510318385840434533
S2=16998148715716822651

# bats test_tags=valgrind
@test "R§1.6 vector: tokens 0..11, bs 4 → L0..L2 and S0..S2, u64 above 2^63 exact" {
	run -0 --separate-stderr kvp kv-hash --block-size 4 <<<'{"tokens":[0,1,2,3,4,5,6,7,8,9,10,11]}'
	assert_output "{\"tokens\":[0,1,2,3,4,5,6,7,8,9,10,11],\"block_hashes\":[$L0,$L1,$L2],\"sequence_hashes\":[$L0,$S1,$S2]}"
	[ -z "$stderr" ]
}

@test "a partial trailing block is dropped" {
	run -0 --separate-stderr kvp kv-hash --block-size 4 <<<'{"tokens":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14]}'
	assert_output "{\"tokens\":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14],\"block_hashes\":[$L0,$L1,$L2],\"sequence_hashes\":[$L0,$S1,$S2]}"
}

@test "block size larger than the input, and no tokens: empty hash arrays" {
	run -0 --separate-stderr kvp kv-hash --block-size 4 <<<$'{"tokens":[1,2,3]}\n{"tokens":[]}'
	assert_line --index 0 '{"tokens":[1,2,3],"block_hashes":[],"sequence_hashes":[]}'
	assert_line --index 1 '{"tokens":[],"block_hashes":[],"sequence_hashes":[]}'
}

@test "pass-through keeps every u64 exact; an existing block_hashes is replaced at the end" {
	run -0 --separate-stderr kvp kv-hash --block-size 4 <<<'{"block_hashes":[1],"a":18446744073709551615,"b":-9223372036854775808,"c":1.50,"d":{"e":[null,true]},"tokens":[1,2,3,4]}'
	assert_output '{"a":18446744073709551615,"b":-9223372036854775808,"c":1.50,"d":{"e":[null,true]},"tokens":[1,2,3,4],"block_hashes":[14643705804678351452],"sequence_hashes":[14643705804678351452]}'
}

@test "spaced JSON (json-c path) gives the same result as compact JSON" {
	run -0 --separate-stderr kvp kv-hash --block-size 4 <<<'{ "tokens": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], "x": 18446744073709551615 }'
	assert_output "{\"tokens\":[0,1,2,3,4,5,6,7,8,9,10,11],\"x\":18446744073709551615,\"block_hashes\":[$L0,$L1,$L2],\"sequence_hashes\":[$L0,$S1,$S2]}"
}

@test "--hash-strings writes hashes (and big pass-through integers) as strings" {
	run -0 --separate-stderr kvp kv-hash --hash-strings --block-size 4 <<<'{"x":18446744073709551615,"tokens":[0,1,2,3,4,5,6,7]}'
	assert_output "{\"x\":\"18446744073709551615\",\"tokens\":[0,1,2,3,4,5,6,7],\"block_hashes\":[\"$L0\",\"$L1\"],\"sequence_hashes\":[\"$L0\",\"$S1\"]}"
}

@test "fixtures engine-hashes/vectors.json: Dynamo range(32), bs 16" {
	local v="$FIX/engine-hashes/vectors.json"
	local want
	want=$(jq -c '.dynamo[0] | {block_hashes: .local_u64, sequence_hashes: .seq_u64}' "$v")
	run -0 --separate-stderr kvp kv-hash --only-hashes --hash-strings --block-size 16 < <(seq 0 31 | jq -s -c '{tokens: .}')
	assert_output "$want"
}

@test "R§1.6 LoRA and namespace seeds via options, tokens 0..3" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 --lora adapter-a <<<'{"tokens":[0,1,2,3]}'
	assert_output '{"block_hashes":[6665157333201000639],"sequence_hashes":[6665157333201000639]}'
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 --namespace tenant-a <<<'{"tokens":[0,1,2,3]}'
	assert_output '{"block_hashes":[17009624042690211646],"sequence_hashes":[17009624042690211646]}'
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 --lora adapter-a --namespace tenant-a <<<'{"tokens":[0,1,2,3]}'
	assert_output '{"block_hashes":[8269515957840517240],"sequence_hashes":[8269515957840517240]}'
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 --lora '' --namespace '' <<<'{"tokens":[0,1,2,3]}'
	assert_output "{\"block_hashes\":[$L0],\"sequence_hashes\":[$L0]}"
}

@test "E§6.5 per-record lora_name / cache_namespace / cache_salt, [1,2,3,4] bs 4" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 <<'EOF'
{"tokens":[1,2,3,4]}
{"tokens":[1,2,3,4],"lora_name":"adapter-a"}
{"tokens":[1,2,3,4],"cache_namespace":"tenant-a"}
{"tokens":[1,2,3,4],"cache_salt":"tenant-a"}
{"tokens":[1,2,3,4],"lora_name":"adapter-a","cache_namespace":"tenant-a"}
{"tokens":[1,2,3,4],"lora_name":"","cache_salt":null}
EOF
	assert_line --index 0 '{"block_hashes":[14643705804678351452],"sequence_hashes":[14643705804678351452]}'
	assert_line --index 1 '{"block_hashes":[11381080598872079209],"sequence_hashes":[11381080598872079209]}'
	assert_line --index 2 '{"block_hashes":[5738685477468498325],"sequence_hashes":[5738685477468498325]}'
	assert_line --index 3 '{"block_hashes":[5738685477468498325],"sequence_hashes":[5738685477468498325]}'
	assert_line --index 4 '{"block_hashes":[9967753091837871098],"sequence_hashes":[9967753091837871098]}'
	assert_line --index 5 '{"block_hashes":[14643705804678351452],"sequence_hashes":[14643705804678351452]}'
}

@test "record keys override options; null keeps the option; --no-record-overrides ignores them" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 2 --lora adapter-a <<'EOF'
{"tokens":[1,2,3,4],"lora_name":"","block_size":4}
{"tokens":[1,2,3,4],"lora_name":null,"block_size":4}
EOF
	assert_line --index 0 '{"block_hashes":[14643705804678351452],"sequence_hashes":[14643705804678351452]}'
	assert_line --index 1 '{"block_hashes":[11381080598872079209],"sequence_hashes":[11381080598872079209]}'
	run -0 --separate-stderr kvp kv-hash --only-hashes --no-record-overrides --block-size 4 --lora adapter-a <<<'{"tokens":[1,2,3,4],"lora_name":"","block_size":2}'
	assert_output '{"block_hashes":[11381080598872079209],"sequence_hashes":[11381080598872079209]}'
}

@test "E§6.5 EAGLE: --eagle, bigram layout (auto), bigram pairs, --eagle=never" {
	local eagle='"block_hashes":[5959138341449004422,13917772031453556700]'
	local plain='"block_hashes":[7369860969341005925,2046086924859723728]'
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 2 --eagle <<<'{"tokens":[10,11,12,13,14]}'
	assert_output --partial "{$eagle,"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 2 <<'EOF'
{"tokens":[10,11,12,13,14]}
{"tokens":[10,11,12,13,14],"token_layout":"bigram"}
{"tokens":[10,11,12,13,14],"is_eagle":true}
{"tokens":[[10,11],[11,12],[12,13],[13,14]]}
EOF
	assert_line --index 0 --partial "{$plain,"
	assert_line --index 1 --partial "{$eagle,"
	assert_line --index 2 --partial "{$eagle,"
	assert_line --index 3 --partial "{$eagle,"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 2 --eagle=never <<<'{"tokens":[10,11,12,13,14],"token_layout":"bigram"}'
	assert_output --partial "{$plain,"
	run -2 --separate-stderr kvp kv-hash --block-size 2 --eagle=sometimes
	[[ "$stderr" == *"--eagle"* ]]
}

@test "--seed 0 --chain-seed 0 agree with xxhsum -H3 (independent XXH3)" {
	xxh() { xxhsum -H3 | grep -oE '[0-9a-f]{16}' | head -1; }
	dec() { echo "ibase=16; ${1^^}" | bc; }
	le64() { local h=$1 o= i; for i in 14 12 10 8 6 4 2 0; do o+="\\x${h:$i:2}"; done; printf '%s' "$o"; }
	local a b s
	a=$(printf '\x01\0\0\0\x02\0\0\0\x03\0\0\0\x04\0\0\0' | xxh)
	b=$(printf '\x05\0\0\0\x06\0\0\0\x07\0\0\0\x08\0\0\0' | xxh)
	s=$(printf "$(le64 "$a")$(le64 "$b")" | xxh)
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 --seed 0 --chain-seed 0 <<<'{"tokens":[1,2,3,4,5,6,7,8]}'
	assert_output "{\"block_hashes\":[$(dec "$a"),$(dec "$b")],\"sequence_hashes\":[$(dec "$a"),$(dec "$s")]}"
}

@test "--chain-seed changes only the sequence hashes; --seed 1337 is the default" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 --seed 1337 --chain-seed 0x539 <<<'{"tokens":[0,1,2,3,4,5,6,7,8,9,10,11]}'
	assert_output "{\"block_hashes\":[$L0,$L1,$L2],\"sequence_hashes\":[$L0,$S1,$S2]}"
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 --chain-seed 0 <<<'{"tokens":[0,1,2,3,4,5,6,7,8,9,10,11]}'
	assert_output --regexp "^\{\"block_hashes\":\[$L0,$L1,$L2\],\"sequence_hashes\":\[$L0,[0-9]+,[0-9]+\]\}$"
	refute_output --partial "$S1"
}

# bats test_tags=valgrind
@test "kv-decode BlockStored events (E§6.5 F1, F3, salted) keep the engine's block_hashes and gain tokens_hash; other records copied" {
	run -0 --separate-stderr kvp kv-hash "$F/events.ndjson"
	[ "${#lines[@]}" -eq 6 ]
	assert_line --index 0 "$(sed -n 1p "$F/events.ndjson")"
	assert_line --index 1 --regexp '^\{"rec":"event","seq":0,.*"type":"BlockStored","block_hashes":\[11,12\],"parent_block_hash":null,"token_ids":\[10,11,12,13\],.*"hash_repr":"uint","tokens_hash":\[7369860969341005925,2046086924859723728\],"sequence_hashes":\[7369860969341005925,[0-9]+\]\}$'
	assert_line --index 2 "$(sed -n 3p "$F/events.ndjson")"
	assert_line --index 3 --regexp '"hash_repr":"uint","tokens_hash":\[5959138341449004422,13917772031453556700\],"sequence_hashes":\[5959138341449004422,[0-9]+\]\}$'
	assert_line --index 4 --regexp '"tokens_hash":\[5738685477468498325\],"sequence_hashes":\[5738685477468498325\]\}$'
	assert_line --index 5 "$(sed -n 6p "$F/events.ndjson")"
	[ -z "$stderr" ]
}

@test "--local-key keeps the engine's block_hashes; --only-hashes skips records without tokens" {
	run -0 --separate-stderr kvp kv-hash --local-key tokens_hash --sequence-key seq "$F/events.ndjson"
	assert_line --index 1 --regexp '"block_hashes":\[11,12\],.*"hash_repr":"uint","tokens_hash":\[7369860969341005925,2046086924859723728\],"seq":\[7369860969341005925,[0-9]+\]\}$'
	run -0 --separate-stderr kvp kv-hash --only-hashes "$F/events.ndjson"
	[ "${#lines[@]}" -eq 3 ]
	assert_line --index 2 '{"block_hashes":[5738685477468498325],"sequence_hashes":[5738685477468498325]}'
	run -2 --separate-stderr kvp kv-hash --local-key x --sequence-key x "$F/events.ndjson"
}

@test "a wide token (E§6.5 F4) is bad data naming the event line" {
	run -1 --separate-stderr kvp kv-hash "$F/wide.ndjson"
	[ -z "$output" ]
	assert_equal "$stderr" "kv-hash: $F/wide.ndjson:1: token_ids[1]: token id 4294967296 does not fit in u32 (wide token; see kv-normalize)"
}

@test "--tokens-key reads another key; missing key is bad data" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --tokens-key ids --block-size 4 <<<'{"ids":[0,1,2,3],"tokens":[9,9,9,9]}'
	assert_output "{\"block_hashes\":[$L0],\"sequence_hashes\":[$L0]}"
	run -1 --separate-stderr kvp kv-hash --tokens-key ids --block-size 4 <<<'{"tokens":[0,1,2,3]}'
	assert_equal "$stderr" 'kv-hash: -:1: missing key "ids"'
}

# bats test_tags=valgrind
@test "bad token: good records before it are written, then stop; exit 1" {
	run -1 --separate-stderr kvp kv-hash --block-size 4 <<'EOF'
{"tokens":[1,2,3,4]}
{"tokens":[1,-2,3,4]}
{"tokens":[1,2,3,4]}
EOF
	[ "${#lines[@]}" -eq 1 ]
	assert_equal "$stderr" 'kv-hash: -:2: tokens[1]: token id must not be negative (got -2)'
}

@test "each kind of bad token and block size is reported" {
	local l
	for l in '{"tokens":[1.0]}|tokens[0]: token id must be an integer, got double' \
		'{"tokens":["1"]}|tokens[0]: token id must be an integer, got string' \
		'{"tokens":[4294967296]}|tokens[0]: token id 4294967296 does not fit in u32 (wide token; see kv-normalize)' \
		'{"tokens":[18446744073709551615]}|tokens[0]: token id 18446744073709551615 does not fit in u32 (wide token; see kv-normalize)' \
		'{"tokens":[[1]]}|tokens[0]: bigram token lists need pairs of two token ids' \
		'{"tokens":7}|tokens: expected an array of token ids, got int' \
		'{"tokens":[1],"block_size":0}|block_size: must not be 0' \
		'{"tokens":[1],"block_size":4294967296}|block_size: 4294967296 does not fit in u32' \
		'{"tokens":[1],"lora_name":3}|lora_name: expected a string or null, got int' \
		'{"foo":1}|missing key "tokens" or "token_ids"' \
		'{"rec":"event","type":"BlockStored"}|missing key "tokens" or "token_ids"'; do
		run -1 --separate-stderr kvp kv-hash --block-size 4 <<<"${l%%|*}"
		assert_equal "$stderr" "kv-hash: -:1: ${l#*|}"
		[ -z "$output" ]
	done
	run -1 --separate-stderr kvp kv-hash <<<'{"tokens":[1]}'
	assert_equal "$stderr" 'kv-hash: -:1: no block size: give --block-size or a "block_size" key'
}

@test "-k: bad records are reported and skipped, every good record written, exit 1" {
	run -1 --separate-stderr kvp kv-hash -k --block-size 4 <<'EOF'
{"tokens":[0,1,2,3]}
{"tokens":[1,-2,3,4]}
{"tokens":[0,1,2,3] x
{"foo":1}

{"tokens":[0,1,2,3,4,5,6,7],"block_size":4}
EOF
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 "{\"tokens\":[0,1,2,3],\"block_hashes\":[$L0],\"sequence_hashes\":[$L0]}"
	assert_line --index 1 "{\"tokens\":[0,1,2,3,4,5,6,7],\"block_size\":4,\"block_hashes\":[$L0,$L1],\"sequence_hashes\":[$L0,$S1]}"
	[ "$(grep -c . <<<"$stderr")" -eq 4 ] # three errors, the -k totals line
	[[ "$stderr" == *"kv-hash: 5 records in, 2 written, 3 skipped, 3 errors (0 not shown)" ]]
	[[ "$stderr" == *"kv-hash: -:2: tokens[1]"* ]]
	[[ "$stderr" == *"kv-hash: -:3:"*"invalid JSON"* ]]
	[[ "$stderr" == *'kv-hash: -:4: missing key'* ]]
}

@test "empty input: no output, exit 0" {
	run -0 --separate-stderr kvp kv-hash --block-size 4 </dev/null
	[ -z "$output" ] && [ -z "$stderr" ]
	run -0 --separate-stderr kvp kv-hash --block-size 4 <<<$'\n  \n'
	[ -z "$output" ] && [ -z "$stderr" ]
}

@test "CRLF line ends and a last line without newline are accepted" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 < <(printf '{"tokens":[0,1,2,3]}\r\n{"tokens":[0,1,2,3]}')
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 1 "{\"block_hashes\":[$L0],\"sequence_hashes\":[$L0]}"
	[[ "$output" != *$'\r'* ]]
}

@test "an over-long line is bad data; -k skips it" {
	local long
	long="{\"tokens\":[$(seq -s, 0 99)]}"
	run -1 --separate-stderr kvp kv-hash --max-line-bytes 100 --block-size 4 < <(printf '%s\n' '{"tokens":[0,1,2,3]}' "$long")
	[ "${#lines[@]}" -eq 1 ]
	assert_equal "$stderr" 'kv-hash: -:2: line too long (over 100 bytes; see --max-line-bytes)'
	run -1 --separate-stderr kvp kv-hash -k --max-line-bytes 100 --block-size 4 < <(printf '%s\n' "$long" '{"tokens":[0,1,2,3]}')
	[ "${#lines[@]}" -eq 1 ]
}

@test "several files: line numbers per file; -o writes to a file" {
	printf '{"tokens":[0,1,2,3]}\n' >"$BATS_TEST_TMPDIR/a"
	printf '{"tokens":[0,1,2,3]}\n{"tokens":[-1]}\n' >"$BATS_TEST_TMPDIR/b"
	run -1 --separate-stderr kvp kv-hash --block-size 4 -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	[ -z "$output" ]
	assert_equal "$stderr" "kv-hash: $BATS_TEST_TMPDIR/b:2: tokens[0]: token id must not be negative (got -1)"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/out")" -eq 2 ]
}

@test "missing input file → exit 2" {
	run -2 --separate-stderr kvp kv-hash --block-size 4 /nonexistent/x.ndjson
	assert_equal "$stderr" 'kv-hash: /nonexistent/x.ndjson: No such file or directory'
}

@test "output to /dev/full → exit 2 with a message" {
	run -2 --separate-stderr kvp kv-hash --block-size 4 -o /dev/full <<<'{"tokens":[0,1,2,3]}'
	[[ "$stderr" == "kv-hash: write error on /dev/full"* ]]
}

@test "usage errors exit 2: --block-size 0, bad seed" {
	run -2 --separate-stderr kvp kv-hash --block-size 0
	[[ "$stderr" == *"--block-size"* ]]
	run -2 --separate-stderr kvp kv-hash --seed x
	[[ "$stderr" == *"--seed"* ]]
	run -2 --separate-stderr kvp kv-hash --block-size 4294967296
	[ -z "$output" ]
}

@test "tokens: null falls back to token_ids; reformatted events hash the same" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 <<<'{"tokens":null,"token_ids":[0,1,2,3]}'
	assert_output "{\"block_hashes\":[$L0],\"sequence_hashes\":[$L0]}"
	local compact spaced
	compact=$(kvp kv-hash "$F/events.ndjson")
	spaced=$(sed 's/,"/, "/g; s/":/": /g' "$F/events.ndjson" | kvp kv-hash)
	assert_equal "$spaced" "$compact"
}

@test "block_mm_infos: E§6.5 mm_hash 99; docs/spec/mm-expand.md §7.5 test 18 (hashes {5,3} sorted)" {
	run -0 --separate-stderr kvp kv-hash --only-hashes --block-size 4 <<'EOF2'
{"tokens":[10,20,30,40,1,2,3,4],"block_mm_infos":[{"mm_objects":[{"mm_hash":99,"offsets":[]}]}]}
{"tokens":[1,2,3,4],"block_mm_infos":[{"mm_objects":[{"mm_hash":"5"},{"mm_hash":"0x3"}]},{"mm_objects":[{"mm_hash":1}]}]}
{"tokens":[1,2,3,4],"block_mm_infos":[null]}
EOF2
	assert_line --index 0 --regexp '^\{"block_hashes":\[10803746751693390359,14643705804678351452\],"sequence_hashes":\[10803746751693390359,[0-9]+\]\}$'
	assert_line --index 1 '{"block_hashes":[11530720033157309043],"sequence_hashes":[11530720033157309043]}'
	assert_line --index 2 '{"block_hashes":[14643705804678351452],"sequence_hashes":[14643705804678351452]}'
	run -1 --separate-stderr kvp kv-hash --block-size 4 <<<'{"tokens":[1,2,3,4],"block_mm_infos":[{"mm_objects":[{"mm_hash":-1.5}]}]}'
	assert_equal "$stderr" 'kv-hash: -:1: block_mm_infos[0].mm_objects[0].mm_hash: expected an integer, got a floating-point number'
	run -1 --separate-stderr kvp kv-hash --block-size 4 <<<'{"tokens":[1,2,3,4],"block_mm_infos":{}}'
	assert_equal "$stderr" 'kv-hash: -:1: block_mm_infos: expected an array, got object'
}

@test "a write error stops kv-hash at once: later records are not read (exit 2, one message)" {
	# 20000 records fill more than the 64 KiB output buffer; the bad last
	# line would be reported if kv-hash went on reading after the error.
	seq 20000 | sed 's/.*/{"tokens":[&,1,2,3]}/' >"$BATS_TEST_TMPDIR/in"
	echo '{bad' >>"$BATS_TEST_TMPDIR/in"
	run --separate-stderr sh -c '"$KVP_BIN/kv-hash" --block-size 4 "$0" >/dev/full' "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 2 ]
	[ "$output" = "" ]
	[[ "$stderr" == "kv-hash: write error on stdout: No space left on device" ]]
}

@test "an output key already present as null is replaced, not written twice" {
	# found by fuzz_hash_record: the raw-copy path kept "sequence_hashes":null
	# and then appended the computed key (L0, R§1.6)
	run --separate-stderr kvp kv-hash --block-size 4 <<<'{"tokens":[0,1,2,3],"sequence_hashes":null,"block_hashes":null}'
	assert_success
	assert_output '{"tokens":[0,1,2,3],"block_hashes":[9143094415614847814],"sequence_hashes":[9143094415614847814]}'
}
