#!/usr/bin/env bats
# kv-normalize: docs/spec/kv-events.md §6.6 tests 1, 13, 22-40 plus options,
# capacity/fallback, error paths and a round-trip property test. A § in a
# test name is a section of docs/spec/kv-events.md.
#
# Expected values come from the spec: tokens_hash vectors of §6.5 and
# docs/spec/route-score.md §1.6 where they exist; otherwise from
# fixtures/kv-normalize/dynhash.py, an independent Python implementation of
# the §3.2 formula over libxxhash (ctypes), cross-checked against the same
# §6.5 vectors in the first test. Event ids, actions and kept/excluded counts
# follow §3-§4 and §6.4 by hand.
load test_helper

NF="$FIX/kv-normalize"
W2P32=4294967296 # 2^32: the smallest wide token id

th() { /usr/bin/python3 "$NF/dynhash.py" "$@"; }

# rec TYPE FIELDS — a kv-decode event record (§6.3) for worker $W, rank $R,
# seq $S, idx $I (defaults 0); FIELDS are the type fields, comma-separated.
# x.ts_ms of the out_* records below: $TSMS, by default 1500 (the "ts" of
# 1.5 s written by rec, in ms).
rec() {
	printf '{"rec":"event","seq":%s,"topic":"kv-events","source":"live","ts":1.5,"dp_rank":%s,"worker_id":%s,"idx":%s,"enc":"map","type":"%s"%s}\n' \
		"${S:-0}" "${R:-0}" "${W:-0}" "${I:-0}" "$1" "${2:+,$2}"
}
# store HASHES PARENT TOKENS BS [FIELDS] — medium from $MED (a JSON value).
store() {
	rec BlockStored "\"block_hashes\":[$1],\"parent_block_hash\":$2,\"token_ids\":[$3],\"token_layout\":\"${LAYOUT:-flat}\",\"block_size\":$4${MED:+,\"medium\":$MED}${5:+,$5}"
}
rem() { rec BlockRemoved "\"block_hashes\":[$1]${MED:+,\"medium\":$MED}${2:+,$2}"; }
clr() { rec AllBlocksCleared '"source_kind":null'; }

blk() { printf '{"block_hash":%s,"tokens_hash":%s,"mm_extra_info":null}' "$1" "$2"; }
# out_stored EID PARENT BLOCKS [ACTION KEPT EXCLUDED] — tier from $TIER.
out_stored() {
	printf '{"worker_id":%s,"storage_tier":"%s","residency_domain":"worker","event":{"event_id":%s,"data":{"stored":{"parent_hash":%s,"start_position":null,"blocks":[%s]}},"dp_rank":%s},"x":{"seq":%s,"idx":%s,"action":"%s","kept":%s,"excluded":%s,"ts_ms":%s}}\n' \
		"${W:-0}" "${TIER:-device}" "$1" "$2" "$3" "${R:-0}" "${S:-0}" "${I:-0}" "${4:-pass}" "${5:-0}" "${6:-0}" "${TSMS:-1500}"
}
# out_removed EID HASHES [ACTION KEPT EXCLUDED]
out_removed() {
	printf '{"worker_id":%s,"storage_tier":"%s","residency_domain":"worker","event":{"event_id":%s,"data":{"removed":{"block_hashes":[%s]}},"dp_rank":%s},"x":{"seq":%s,"idx":%s,"action":"%s","kept":%s,"excluded":%s,"ts_ms":%s}}\n' \
		"${W:-0}" "${TIER:-device}" "$1" "$2" "${R:-0}" "${S:-0}" "${I:-0}" "${3:-pass}" "${4:-0}" "${5:-0}" "${TSMS:-1500}"
}
out_cleared() {
	printf '{"worker_id":%s,"storage_tier":"device","residency_domain":"worker","event":{"event_id":%s,"data":"cleared","dp_rank":%s},"x":{"seq":%s,"idx":%s,"action":"pass","kept":0,"excluded":0,"ts_ms":%s}}\n' \
		"${W:-0}" "$1" "${R:-0}" "${S:-0}" "${I:-0}" "${TSMS:-1500}"
}
# out_filtered TYPE REASON
out_filtered() {
	printf '{"rec":"filtered","seq":%s,"idx":%s,"worker_id":%s,"dp_rank":%s,"event_type":"%s","reason":"%s"}\n' \
		"${S:-0}" "${I:-0}" "${W:-0}" "${R:-0}" "$1" "$2"
}

norm() { kvp kv-normalize "$@"; }

# ---------------------------------------------------------------------------

# bats test_tags=valgrind
@test "§6.6-1: F1 (store [11,12], tokens 10..13) at kv_block_size 2 → 2 blocks with the §6.5 hashes" {
	# The independent helper reproduces the §6.5 vectors it is used for.
	[ "$(th 10 11)" = 7369860969341005925 ]
	[ "$(th 12 13)" = 2046086924859723728 ]
	[ "$(th --lora adapter-a --ns tenant-a 1 2 3 4)" = 9967753091837871098 ]
	[ "$(th --mm 99 10 20 30 40)" = 10803746751693390359 ]
	in=$(MED='"GPU"' store 11,12 null 10,11,12,13 2)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$(out_stored 0 null "$(blk 11 7369860969341005925),$(blk 12 2046086924859723728)" pass 2 0)"
	[ -z "$stderr" ]
}

# bats test_tags=valgrind
@test "§6.6-13: Ignored → filtered ignored_event, no event id spent" {
	in=$(I=0 rec Ignored; I=1 store 11 null 10,11 2)
	exp=$(I=0 out_filtered Ignored ignored_event; I=1 out_stored 0 null "$(blk 11 7369860969341005925)" pass 1 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-22: event block_size 64 with kv_block_size 16 → Stored with 0 blocks plus a warning" {
	in=$(store 1,2 null "$(seq -s, 1 128)" 64)
	run -0 --separate-stderr norm --block-size 16 <<<"$in"
	assert_output "$(out_stored 0 null '' pass 2 0)"
	[[ "$stderr" == *"-:1: warning: block not published: block size must be 16 tokens, event has 64"* ]]
}

@test "§6.6-22: the block-size warning is printed at most 3 times, then counted" {
	in=$(for i in 1 2 3 4 5; do store "$i" null 1,2 2; done)
	run -0 --separate-stderr norm --block-size 4 <<<"$in"
	[ "${#lines[@]}" -eq 5 ]
	[ "$(grep -c 'block size must be' <<<"$stderr")" -eq 3 ]
	[[ "$stderr" == *'2 more "block size" warnings not shown'* ]]
}

@test "§6.6-23: 2 hashes with 1.5 blocks of tokens → 1 block; EAGLE with exactly n*bs tokens → n-1 blocks" {
	in=$(store 11,12 null 10,11,12 2; LAYOUT=bigram S=1 store 21,22 null 10,11,12,13 2)
	exp=$(out_stored 0 null "$(blk 11 7369860969341005925)" pass 2 0
		S=1 out_stored 1 null "$(blk 21 5959138341449004422)" pass 2 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
	[[ "$stderr" == *"-:1: warning: block not published: token_ids too short: need 4, got 3"* ]]
	[[ "$stderr" == *"-:2: warning: block not published: token_ids too short: need 5, got 4"* ]]
}

@test "§6.6-19: F3-like bigram store (5 tokens, EAGLE) at bs 2 → the §6.5 EAGLE hashes" {
	in=$(LAYOUT=bigram store 21,22 null 10,11,12,13,14 2)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$(out_stored 0 null "$(blk 21 5959138341449004422),$(blk 22 13917772031453556700)" pass 2 0)"
}

@test "§6.6-24: a duplicate hash, or parent == a block hash → empty removal (dup_rejected) with a warning" {
	in=$(store 11,11 null 10,11,12,13 2; S=1 store 11 11 10,11 2)
	exp=$(out_removed 0 '' dup_rejected 2 0; S=1 out_removed 1 '' dup_rejected 1 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
	[ "$(grep -c 'self-referencing block detected' <<<"$stderr")" -eq 2 ]
}

@test "§6.6-25: medium GPU/CPU/\"\"/absent → device/host_pinned/device/device; cpu and FS dropped (unknown_medium)" {
	in=$(MED='"GPU"' I=0 store 11 null 10,11 2
		MED='"CPU"' I=1 store 11 null 10,11 2
		MED='""' I=2 store 11 null 10,11 2
		I=3 store 11 null 10,11 2
		MED='"cpu"' I=4 store 11 null 10,11 2
		MED='"FS"' I=5 rem 11
		MED='"CPU_TIER2"' I=6 rem 11
		MED='"SHARED"' I=7 rem 11)
	b=$(blk 11 7369860969341005925)
	exp=$(I=0 out_stored 0 null "$b" pass 1 0
		I=1 TIER=host_pinned out_stored 1 null "$b" pass 1 0
		I=2 out_stored 2 null "$b" pass 1 0
		I=3 out_stored 3 null "$b" pass 1 0
		I=4 out_filtered BlockStored unknown_medium
		I=5 out_filtered BlockRemoved unknown_medium
		I=6 TIER=disk out_removed 4 11 pass 1 0
		I=7 TIER=external out_removed 5 11 pass 1 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-25: --legacy-medium maps cpu and FS to the device tier" {
	in=$(MED='"cpu"' store 11 null 10,11 2; MED='"FS"' S=1 rem 11)
	exp=$(out_stored 0 null "$(blk 11 7369860969341005925)" pass 1 0; S=1 out_removed 1 11 pass 1 0)
	run -0 --separate-stderr norm --block-size 2 --legacy-medium <<<"$in"
	assert_output "$exp"
}

@test "§6.6-26: locality REMOTE (or unknown) → dropped; LOCAL → kept" {
	in=$(I=0 store 11 null 10,11 2 '"locality":"REMOTE"'
		I=1 rem 11 '"locality":"ELSEWHERE"'
		I=2 store 11 null 10,11 2 '"locality":"LOCAL"')
	exp=$(I=0 out_filtered BlockStored non_local_locality
		I=1 out_filtered BlockRemoved non_local_locality
		I=2 out_stored 0 null "$(blk 11 7369860969341005925)" pass 1 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-27: kinds and groups: mamba filtered, unlearned group 1 filtered, group 0 passes, learning is per rank" {
	b=$(blk 11 7369860969341005925)
	in=$(I=0 store 11 null 10,11 2 '"kv_cache_spec_kind":"mamba"'
		I=1 store 11 null 10,11 2 '"group_idx":1'
		I=2 store 11 null 10,11 2 '"group_idx":0'
		I=3 store 11 null 10,11 2 '"group_idx":1,"kv_cache_spec_kind":"full_attention"'
		I=4 store 11 null 10,11 2 '"group_idx":1'
		I=5 R=1 store 11 null 10,11 2 '"group_idx":1'
		I=6 store 11 null 10,11 2 '"group_idx":2,"kv_cache_spec_kind":"sliding_window"'
		I=7 rem 11 '"group_idx":2'
		I=8 rem 11 '"group_idx":3,"kv_cache_spec_kind":"mla_attention"'
		I=9 rem 11 '"group_idx":3'
		I=10 store 11 null 10,11 2 '"kv_cache_spec_kind":"brand_new_kind"')
	exp=$(I=0 out_filtered BlockStored non_main_attention_kind
		I=1 out_filtered BlockStored unlearned_group_idx
		I=2 out_stored 0 null "$b" pass 1 0
		I=3 out_stored 1 null "$b" pass 1 0
		I=4 out_stored 2 null "$b" pass 1 0
		I=5 R=1 out_filtered BlockStored unlearned_group_idx
		I=6 out_filtered BlockStored non_main_attention_kind
		I=7 out_filtered BlockRemoved non_main_attention_group
		I=8 out_removed 3 11 pass 1 0
		I=9 out_filtered BlockRemoved unlearned_group_idx
		I=10 out_filtered BlockStored unknown_kind)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
	[[ "$stderr" == *'unknown kv_cache_spec_kind "brand_new_kind"'* ]]
}

@test "§6.6-28: a salted parent's unsalted child hashes with the namespace (seed 1948188790972764086)" {
	in=$(store 100 null 1,2,3,4 4 '"cache_salt":"tenant-a"'
		S=1 store 101 100 0,1,2,3 4
		S=2 store 102 null 0,1,2,3 4)
	exp=$(out_stored 0 null "$(blk 100 5738685477468498325)" pass 1 0
		S=1 out_stored 1 100 "$(blk 101 17009624042690211646)" pass 1 0
		S=2 out_stored 2 null "$(blk 102 9143094415614847814)" pass 1 0)
	run -0 --separate-stderr norm --block-size 4 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-28: the same hash salted under two namespaces, then an unsalted child → filtered ambiguous" {
	in=$(store 200 null 1,2,3,4 4 '"cache_salt":"tenant-a"'
		S=1 store 200 null 1,2,3,4 4 '"cache_salt":"tenant-b"'
		S=2 store 201 200 0,1,2,3 4
		S=3 R=1 store 201 200 0,1,2,3 4)
	exp=$(out_stored 0 null "$(blk 200 5738685477468498325)" pass 1 0
		S=1 out_stored 1 null "$(blk 200 "$(th --ns tenant-b 1 2 3 4)")" pass 1 0
		S=2 out_filtered BlockStored ambiguous_cache_namespace
		S=3 R=1 out_stored 0 200 "$(blk 201 "$(th 0 1 2 3)")" pass 1 0)
	run -0 --separate-stderr norm --block-size 4 <<<"$in"
	assert_output "$exp"
}

@test "§3.1: namespaces: unsalted re-store makes a hash ambiguous; removal forgets; clear forgets the rank" {
	in=$(store 300 null 1,2,3,4 4 '"cache_salt":"tenant-a"'
		S=1 store 300 null 1,2,3,4 4
		S=2 store 301 300 0,1,2,3 4
		S=3 store 310 null 1,2,3,4 4 '"cache_salt":"tenant-a"'
		S=4 rem 310
		S=5 store 311 310 0,1,2,3 4
		S=6 store 320 null 1,2,3,4 4 '"cache_salt":"tenant-a"'
		S=7 clr
		S=8 store 321 320 0,1,2,3 4)
	exp=$(out_stored 0 null "$(blk 300 5738685477468498325)" pass 1 0
		S=1 out_stored 1 null "$(blk 300 14643705804678351452)" pass 1 0
		S=2 out_filtered BlockStored ambiguous_cache_namespace
		S=3 out_stored 2 null "$(blk 310 5738685477468498325)" pass 1 0
		S=4 out_removed 3 310 pass 1 0
		S=5 out_stored 4 310 "$(blk 311 9143094415614847814)" pass 1 0
		S=6 out_stored 5 null "$(blk 320 5738685477468498325)" pass 1 0
		S=7 out_cleared 6
		S=8 out_stored 7 320 "$(blk 321 9143094415614847814)" pass 1 0)
	run -0 --separate-stderr norm --block-size 4 <<<"$in"
	assert_output "$exp"
}

@test "§2.6: a namespace from extra_keys (dynamo-cache-salt:, after skipping the LoRA name) equals cache_salt" {
	in=$(store 100 null 1,2,3,4 4 '"lora_name":"adapter-a","extra_keys":[["adapter-a","dynamo-cache-salt:tenant-a"]]'
		S=1 store 101 null 1,2,3,4 4 '"extra_keys":[["tenant-a"]]')
	exp=$(out_stored 0 null "$(blk 100 9967753091837871098)" pass 1 0
		S=1 out_stored 1 null "$(blk 101 14643705804678351452)" pass 1 0)
	run -0 --separate-stderr norm --block-size 4 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-29: LoRA adapter-a and namespace tenant-a hash exactly as in §6.5; lora_name \"\" equals no LoRA" {
	in=$(I=0 store 1 null 1,2,3,4 4 '"lora_name":"adapter-a"'
		I=1 store 2 null 1,2,3,4 4 '"cache_salt":"tenant-a"'
		I=2 store 3 null 1,2,3,4 4 '"lora_name":"adapter-a","cache_salt":"tenant-a"'
		I=3 store 4 null 1,2,3,4 4 '"lora_name":""'
		I=4 store 5 null 1,2,3,4 4 '"lora_name":null,"cache_salt":""')
	exp=$(I=0 out_stored 0 null "$(blk 1 11381080598872079209)" pass 1 0
		I=1 out_stored 1 null "$(blk 2 5738685477468498325)" pass 1 0
		I=2 out_stored 2 null "$(blk 3 9967753091837871098)" pass 1 0
		I=3 out_stored 3 null "$(blk 4 14643705804678351452)" pass 1 0
		I=4 out_stored 4 null "$(blk 5 14643705804678351452)" pass 1 0)
	run -0 --separate-stderr norm --block-size 4 <<<"$in"
	assert_output "$exp"
}

# ---- §4: wide tokens and exclusion -------------------------------------------

@test "§6.6-30: 3-block store with a wide token in block 1 keeps block 0; blocks 1, 2 are excluded" {
	in=$(store 31,32,33 null "1,2,3,$W2P32,5,6" 2
		S=1 store 41 32 7,8 2
		S=2 store 42 33 7,8 2
		S=3 store 43 31 7,8 2)
	exp=$(out_stored 0 null "$(blk 31 "$(th 1 2)")" truncated 1 2
		S=1 out_removed 1 '' excluded 0 1
		S=2 out_removed 2 '' excluded 0 1
		S=3 out_stored 3 31 "$(blk 43 "$(th 7 8)")" pass 1 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
	[ -z "$stderr" ]
}

# bats test_tags=valgrind
@test "§6.6-30: a wide token in block 0 → an empty removal (the event id is still spent)" {
	in=$(store 31,32 null "$W2P32,2,3,4" 2; S=1 store 51 null 1,2 2)
	exp=$(out_removed 0 '' excluded 0 2; S=1 out_stored 1 null "$(blk 51 "$(th 1 2)")" pass 1 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-31: a text child of an excluded parent → empty removal; its hashes are excluded; so is a grandchild" {
	in=$(store 31 null "$W2P32,2" 2
		S=1 store 41,42 31 7,8,9,10 2
		S=2 store 51 42 1,2 2
		S=3 rem 51,42)
	exp=$(out_removed 0 '' excluded 0 1
		S=1 out_removed 1 '' excluded 0 2
		S=2 out_removed 2 '' excluded 0 1
		S=3 out_removed 3 '' excluded 0 2)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-32: EAGLE bs 2, wide token at index 2 → block 0's window [t0,t1,t2] is excluded too; without EAGLE block 0 is kept" {
	in=$(LAYOUT=bigram store 31,32 null "1,2,$W2P32,4,5" 2
		S=1 store 41,42 null "1,2,$W2P32,4" 2)
	exp=$(out_removed 0 '' excluded 0 2
		S=1 out_stored 1 null "$(blk 41 "$(th 1 2)")" truncated 1 1)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "§4 rule 3: EAGLE truncation keeps k*bs+1 tokens; a wide token only in a short last window is left to conversion" {
	in=$(LAYOUT=bigram store 31,32,33 null "1,2,3,4,5,$W2P32,7" 2
		S=1 store 41,42 null "1,2,$W2P32" 2)
	exp=$(out_stored 0 null "$(blk 31 "$(th 1 2 3)"),$(blk 32 "$(th 3 4 5)")" truncated 2 1
		S=1 out_stored 1 null "$(blk 41 "$(th 1 2)")" pass 2 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
	[[ "$stderr" == *"-:2: warning: block not published: token_ids too short: need 4, got 3"* ]]
}

@test "§6.6-33: removal of [indexed A, excluded B] → removed [A], B forgotten; removal of [B] only → empty removal" {
	in=$(store 1 null 1,2 2
		S=1 store 2 1 "$W2P32,2" 2
		S=2 rem 1,2
		S=3 rem 2
		S=4 store 3 null "$W2P32,2" 2
		S=5 rem 3)
	exp=$(out_stored 0 null "$(blk 1 "$(th 1 2)")" pass 1 0
		S=1 out_removed 1 '' excluded 0 1
		S=2 out_removed 2 1 truncated 1 1
		S=3 out_removed 3 2 pass 1 0
		S=4 out_removed 4 '' excluded 0 1
		S=5 out_removed 5 '' excluded 0 1)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "choice: a tracked hash re-stored by a text store is forgotten, so its later removal reaches the index" {
	in=$(store 2 null "$W2P32,2" 2; S=1 store 2 null 5,6 2; S=2 rem 2)
	exp=$(out_removed 0 '' excluded 0 1
		S=1 out_stored 1 null "$(blk 2 "$(th 5 6)")" pass 1 0
		S=2 out_removed 2 2 pass 1 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-34: AllBlocksCleared, then a store whose parent is the old excluded B → passes unchanged" {
	in=$(store 2 null "$W2P32,2" 2; S=1 clr; S=2 store 5 2 7,8 2)
	exp=$(out_removed 0 '' excluded 0 1; S=1 out_cleared 1; S=2 out_stored 2 2 "$(blk 5 "$(th 7 8)")" pass 1 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-35: isolation by worker, rank and tier" {
	in=$(W=1 store 2 null "$W2P32,2" 2
		W=1 R=1 S=1 store 5 2 7,8 2
		W=2 S=2 store 6 2 7,8 2
		W=1 MED='"CPU_PINNED"' S=3 store 7 2 7,8 2
		W=1 MED='"CPU_PINNED"' S=4 store 8 null "$W2P32,8" 2
		W=1 S=5 store 9 2 7,8 2)
	exp=$(W=1 out_removed 0 '' excluded 0 1
		W=1 R=1 S=1 out_stored 0 2 "$(blk 5 "$(th 7 8)")" pass 1 0
		W=2 S=2 out_stored 0 2 "$(blk 6 "$(th 7 8)")" pass 1 0
		W=1 TIER=host_pinned S=3 out_stored 1 2 "$(blk 7 "$(th 7 8)")" pass 1 0
		W=1 TIER=host_pinned S=4 out_removed 2 '' excluded 0 1
		W=1 S=5 out_removed 3 '' excluded 0 1)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
}

@test "§6.6-36: a duplicate-hash store with wide tokens passes untouched → dup_rejected with a warning; nothing excluded" {
	in=$(store 31,31 null "$W2P32,2,3,4" 2; S=1 store 41 31 7,8 2)
	exp=$(out_removed 0 '' dup_rejected 2 0; S=1 out_stored 1 31 "$(blk 41 "$(th 7 8)")" pass 1 0)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$exp"
	[[ "$stderr" == *"-:1: warning: self-referencing block detected"* ]]
}

@test "§6.6-37: capacity 4: the 5th id → fallback (one warning); parent stores dropped, parentless truncated, removals pass; clear recovers; other ranks unaffected" {
	in=$(S=0 store 1,2,3 null "$W2P32,1,2,3,4,5" 2
		S=1 store 4 null "$W2P32,1" 2
		S=2 store 5 null "$W2P32,1" 2
		S=3 store 6 100 1,2 2
		S=4 store 7,8 null "1,2,$W2P32,3" 2
		S=5 rem 1,99
		S=6 store 9 7 1,2 2
		R=1 S=7 store 10 null "$W2P32,1" 2
		R=1 S=8 store 11 10 1,2 2
		S=9 clr
		S=10 store 12 100 1,2 2
		S=11 store 13 null "$W2P32,1" 2
		S=12 store 14 13 1,2 2
		S=13 rem 2)
	b12=$(blk 12 "$(th 1 2)")
	exp=$(S=0 out_removed 0 '' excluded 0 3
		S=1 out_removed 1 '' excluded 0 1
		S=2 out_removed 2 '' excluded 0 1
		S=3 out_removed 3 '' fallback_dropped 0 1
		S=4 out_stored 4 null "$(blk 7 "$(th 1 2)")" truncated 1 1
		S=5 out_removed 5 99 truncated 1 1
		S=6 out_removed 6 '' fallback_dropped 0 1
		R=1 S=7 out_removed 0 '' excluded 0 1
		R=1 S=8 out_removed 1 '' excluded 0 1
		S=9 out_cleared 7
		S=10 out_stored 8 100 "$b12" pass 1 0
		S=11 out_removed 9 '' excluded 0 1
		S=12 out_removed 10 '' excluded 0 1
		S=13 out_removed 11 2 pass 1 0)
	run -0 --separate-stderr norm --block-size 2 --exclusion-capacity 4 <<<"$in"
	assert_output "$exp"
	[ "$(grep -c 'fallback' <<<"$stderr")" -eq 1 ]
	[[ "$stderr" == *"-:3: warning: worker_id 0 dp_rank 0: more than 4 excluded block ids; fallback until AllBlocksCleared"* ]]
}

@test "§6.7: --fallback-exclusions drop forgets tracked ids on entering fallback (removals then pass whole)" {
	in=$(store 1,2,3,4 null "$W2P32,1,2,3,4,5,6,7" 2
		S=1 store 5 null "$W2P32,1" 2
		S=2 rem 1,99)
	exp=$(out_removed 0 '' excluded 0 4
		S=1 out_removed 1 '' excluded 0 1
		S=2 out_removed 2 1,99 pass 2 0)
	run -0 --separate-stderr norm --block-size 2 --exclusion-capacity 4 --fallback-exclusions drop <<<"$in"
	assert_output "$exp"
}

@test "§6.7: a fallback warning is printed again when a rank re-enters fallback after a clear" {
	in=$(store 1,2 null "$W2P32,1,2,3" 2; S=1 clr; S=2 store 3,4 null "$W2P32,1,2,3" 2)
	run -0 --separate-stderr norm --block-size 2 --exclusion-capacity 1 <<<"$in"
	[ "$(grep -c 'fallback' <<<"$stderr")" -eq 2 ]
}

@test "§6.7: --clear-scope event-tier resets only the device tier; all-tiers (default) resets every tier" {
	in=$(MED='"CPU"' store 2 null "$W2P32,2" 2; S=1 clr; MED='"CPU"' S=2 store 5 2 7,8 2)
	run -0 --separate-stderr norm --block-size 2 --clear-scope event-tier <<<"$in"
	assert_line --index 2 "$(TIER=host_pinned S=2 out_removed 2 '' excluded 0 1)"
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_line --index 2 "$(TIER=host_pinned S=2 out_stored 2 2 "$(blk 5 "$(th 7 8)")" pass 1 0)"
}

@test "§6.6-38: an empty Removed for a worker never seen before → emitted, no error" {
	in=$(W=77 rem '')
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$(W=77 out_removed 0 '' pass 0 0)"
	[ -z "$stderr" ]
}

@test "§6.6-39: narrow pad values (1000000 <= v < 2^32) are not excluded and hash normally" {
	in=$(store 1,2 null 1000000,1000001,4294967295,7 2)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$(out_stored 0 null "$(blk 1 "$(th 1000000 1000001)"),$(blk 2 "$(th 4294967295 7)")" pass 2 0)"
}

@test "§6.6-40: u32-only truncates at the first wide block without descendant tracking" {
	in=$(store 31,32 null "1,2,$W2P32,4" 2
		S=1 store 41 32 7,8 2
		S=2 store 51 null "$W2P32,2" 2
		S=3 rem 32)
	exp=$(out_stored 0 null "$(blk 31 "$(th 1 2)")" truncated 1 1
		S=1 out_stored 1 32 "$(blk 41 "$(th 7 8)")" pass 1 0
		S=2 out_removed 2 '' excluded 0 1
		S=3 out_removed 3 32 pass 1 0)
	run -0 --separate-stderr norm --block-size 2 --mm-exclusion u32-only <<<"$in"
	assert_output "$exp"
}

@test "§6.6-21: --mm-exclusion off: a wide token is an error (exit 1, FILE:LINE); -k continues" {
	in=$(store 1 null 1,2 2; S=1 store 2 null "1,$W2P32" 2; S=2 store 3 null 1,2 2)
	run -1 --separate-stderr norm --block-size 2 --mm-exclusion off <<<"$in"
	assert_output "$(out_stored 0 null "$(blk 1 "$(th 1 2)")" pass 1 0)"
	[[ "$stderr" == "kv-normalize: -:2: token_ids[1]: wide token id 4294967296 does not fit in u32"* ]]
	run -1 --separate-stderr norm --block-size 2 --mm-exclusion off -k <<<"$in"
	assert_output "$(out_stored 0 null "$(blk 1 "$(th 1 2)")" pass 1 0
		S=2 out_stored 1 null "$(blk 3 "$(th 1 2)")" pass 1 0)"
}

@test "§6.4-4: --mm-exclusion off --narrow maps wide ids to 0xFFFFFFFF (or --wide-sentinel) and hashes them" {
	in=$(store 1 null "1,$W2P32" 2)
	run -0 --separate-stderr norm --block-size 2 --mm-exclusion off --narrow <<<"$in"
	assert_output "$(out_stored 0 null "$(blk 1 "$(th 1 4294967295)")" pass 1 0)"
	run -0 --separate-stderr norm --block-size 2 --mm-exclusion off --narrow --wide-sentinel 7 <<<"$in"
	assert_output "$(out_stored 0 null "$(blk 1 "$(th 1 7)")" pass 1 0)"
	run -2 --separate-stderr norm --block-size 2 --narrow <<<"$in"
	[[ "$stderr" == *"--narrow needs --mm-exclusion off"* ]]
}

# ---- event ids, ranks, workers ------------------------------------------------

@test "§3.2: event ids count per (worker, rank) from --first-event-id; --event-id seq uses the batch seq" {
	in=$(S=10 store 1 null 1,2 2; S=10 I=1 R=1 rem 1; S=11 W=5 clr; S=12 rem 1)
	b=$(blk 1 "$(th 1 2)")
	exp=$(S=10 out_stored 7 null "$b" pass 1 0; S=10 I=1 R=1 out_removed 7 1 pass 1 0
		S=11 W=5 out_cleared 7; S=12 out_removed 8 1 pass 1 0)
	run -0 --separate-stderr norm --block-size 2 --first-event-id 7 <<<"$in"
	assert_output "$exp"
	exp=$(S=10 out_stored 10 null "$b" pass 1 0; S=10 I=1 R=1 out_removed 10 1 pass 1 0
		S=11 W=5 out_cleared 11; S=12 out_removed 12 1 pass 1 0)
	run -0 --separate-stderr norm --block-size 2 --event-id seq <<<"$in"
	assert_output "$exp"
}

@test "§6.6-3: dp_rank -1 → 4294967295 with a warning; null rank → --dp-rank; --force-worker-id replaces the record's" {
	in=$(R=-1 rem 1; R=null S=1 rem 2)
	exp=$(R=4294967295 out_removed 0 1 pass 1 0; R=3 S=1 out_removed 0 2 pass 1 0)
	run -0 --separate-stderr norm --block-size 2 --dp-rank 3 <<<"$in"
	assert_output "$exp"
	[[ "$stderr" == *"-:1: warning: dp_rank -1 is negative; cast to u32 4294967295"* ]]
	run -0 --separate-stderr norm --block-size 2 --force-worker-id 18446744073709551615 <<<"$(rem 1)"
	assert_output "$(W=18446744073709551615 out_removed 0 1 pass 1 0)"
}

@test "u64 hashes: values above 2^63, negative i64 and string forms are exact; --hash-strings quotes hashes" {
	in=$(store 16285693708553954570,-1 '"0x10"' 1,2,3,4 2)
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$(out_stored 0 16 "$(blk 16285693708553954570 "$(th 1 2)"),$(blk 18446744073709551615 "$(th 3 4)")" pass 2 0)"
	run -0 --separate-stderr norm --block-size 2 --hash-strings <<<"$in"
	[[ "$output" == '{"worker_id":"0",'*'"parent_hash":"16",'*'"block_hash":"16285693708553954570","tokens_hash":"'"$(th 1 2)"'"'* ]]
}

# ---- multimodal ------------------------------------------------------------------

@test "§3.2: mm hashes from extra_keys (64-hex digest) are appended sorted; [identifier, offset] uses hash_mm_identifier" {
	hex99=0000000000000063$(printf '0%.0s' $(seq 48))
	in=$(store 1,2 null 10,20,30,40,1,2,3,4 4 "\"extra_keys\":[[\"$hex99\"],[[\"opaque-renderer-image-0\",0],\"not-a-digest\"]]")
	mm1='{"mm_objects":[{"mm_hash":99,"offsets":[]}]}'
	mm2='{"mm_objects":[{"mm_hash":14437604544409538977,"offsets":[]}]}'
	b1='{"block_hash":1,"tokens_hash":10803746751693390359,"mm_extra_info":'$mm1'}'
	b2='{"block_hash":2,"tokens_hash":'$(th --mm 14437604544409538977 1 2 3 4)',"mm_extra_info":'$mm2'}'
	run -0 --separate-stderr norm --block-size 4 <<<"$in"
	assert_output "$(out_stored 0 null "$b1,$b2" pass 2 0)"
}

@test "§3.2: --image-token-id substitutes pad_value per run and hashes without mm (frontend hash 71881790567603244)" {
	in=$(store 1 null 10,20,151655,151655 4 '"block_mm_infos":[{"mm_objects":[{"mm_hash":9533257059414191570,"offsets":[]}]}]')
	mm='{"mm_objects":[{"mm_hash":9533257059414191570,"offsets":[]}]}'
	run -0 --separate-stderr norm --block-size 4 --image-token-id 151655 <<<"$in"
	assert_output "$(out_stored 0 null '{"block_hash":1,"tokens_hash":71881790567603244,"mm_extra_info":'"$mm"'}' pass 1 0)"
	# Without the option the native path hashes the placeholder tokens plus the mm hash.
	run -0 --separate-stderr norm --block-size 4 <<<"$in"
	assert_output "$(out_stored 0 null '{"block_hash":1,"tokens_hash":'"$(th --mm 9533257059414191570 10 20 151655 151655)"',"mm_extra_info":'"$mm"'}' pass 1 0)"
}

@test "§3.2: image and video runs map to mm objects in order; an ambiguous mixed block falls back to the native path" {
	mmi='"block_mm_infos":[{"mm_objects":[{"mm_hash":1,"offsets":[]},{"mm_hash":2,"offsets":[]}]}]'
	in=$(store 1 null 10,7,7,8,8,11 6 "$mmi"; S=1 store 2 null 7,7,8,8,7,7 6 "$mmi")
	# pad_value(h) = 1000000 + (h & (2^30-1)) (§4).
	mm='{"mm_objects":[{"mm_hash":1,"offsets":[]},{"mm_hash":2,"offsets":[]}]}'
	exp=$(out_stored 0 null '{"block_hash":1,"tokens_hash":'"$(th 10 1000001 1000001 1000002 1000002 11)"',"mm_extra_info":'"$mm"'}' pass 1 0
		S=1 out_stored 1 null '{"block_hash":2,"tokens_hash":'"$(th --mm 1 --mm 2 7 7 8 8 7 7)"',"mm_extra_info":'"$mm"'}' pass 1 0)
	run -0 --separate-stderr norm --block-size 6 --image-token-id 7 --video-token-id 8 <<<"$in"
	assert_output "$exp"
}

# ---- input handling and errors ------------------------------------------------------

@test "kv-decode's batch and error records are skipped, gap and stale ones passed on unchanged; blank lines and CRLF are fine" {
	in=$(printf '{"rec":"batch","seq":0}\n\n{"rec":"gap","stream":"x","expected":4,"got":5}\r\n{"rec":"error","msg":"x"}\n{"rec":"stale","stream":"x","last":9,"got":3}\n'; rem 1 | tr -d '\n'; printf '\r\n')
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	assert_output "$(printf '%s\n' '{"rec":"gap","stream":"x","expected":4,"got":5}' '{"rec":"stale","stream":"x","last":9,"got":3}'; out_removed 0 1 pass 1 0)"
	# A KvRecorder file holds router events only.
	run -0 --separate-stderr norm --block-size 2 --format kvrecorder <<<"$in"
	assert_output '{"timestamp":1500,"event":{"worker_id":0,"storage_tier":"device","residency_domain":"worker","event":{"event_id":0,"data":{"removed":{"block_hashes":[1]}},"dp_rank":0}}}'
}

@test "bad records: not an event, missing keys, wrong types → FILE:LINE message, exit 1, good records kept" {
	printf '%s\n' "$(rem 1)" '{"rec":"decision"}' > "$BATS_TEST_TMPDIR/a.ndjson"
	run -1 --separate-stderr norm --block-size 2 "$BATS_TEST_TMPDIR/a.ndjson"
	assert_output "$(out_removed 0 1 pass 1 0)"
	[ "$stderr" = "kv-normalize: $BATS_TEST_TMPDIR/a.ndjson:2: rec: expected \"event\" (a kv-decode record), got \"decision\"" ]

	bad=(
		'{"seq":0}|missing key "rec"'
		"$(rec BlockStored '"block_hashes":[1],"token_ids":[1,2]')|missing key \"block_size\""
		"$(rec BlockStored '"block_hashes":"1","token_ids":[1,2],"block_size":2')|block_hashes: expected an array"
		"$(rec BlockStored '"block_hashes":[1],"token_ids":[1,-2],"block_size":2')|token_ids[1]: must not be negative"
		"$(rec BlockStored '"block_hashes":[1.5],"token_ids":[1,2],"block_size":2')|block_hashes[0]: expected an integer"
		"$(rec BlockStored '"block_hashes":[1],"token_ids":[1,2],"block_size":4294967296')|block_size: 4294967296 does not fit in u32"
		"$(rec BlockStored '"block_hashes":[1],"token_ids":[1,2],"block_size":2,"token_layout":"pairs"')|token_layout: expected"
		"$(rec BlockStored '"block_hashes":[1],"token_ids":[1,2],"block_size":2,"medium":5')|medium: expected a string"
		"$(rec BlockStored '"block_hashes":[1],"token_ids":[1,2],"block_size":2,"extra_keys":{}')|extra_keys: expected an array or null"
		"$(rec BlockRemoved '"block_hashes":[1],"group_idx":-1')|group_idx: must not be negative"
		"$(rec Foo '')|type: expected BlockStored"
		'{"rec":"event","seq":0,"idx":0,"worker_id":0,"dp_rank":"0","type":"AllBlocksCleared"}|dp_rank: expected an integer or null'
		'{"rec":"event","seq":0,"idx":0,"dp_rank":0,"type":"AllBlocksCleared"}|missing key "worker_id"'
		'{"rec":"event","seq":0,"idx":0,"worker_id":0,"dp_rank":4294967296,"type":"AllBlocksCleared"}|dp_rank: 4294967296 does not fit'
		'{"rec":"event",|invalid JSON'
		'[1,2]|'
	)
	for c in "${bad[@]}"; do
		run -1 --separate-stderr norm --block-size 2 <<<"${c%|*}"
		[ -z "$output" ] || fail "stdout for: ${c%|*}"
		[[ "$stderr" == "kv-normalize: -:1"*"${c##*|}"* ]] || fail "got '$stderr' for '${c%|*}'"
	done
}

@test "-k reports each bad record, keeps every good one, exits 1" {
	in=$(rem 1; echo '{"rec":"nope"}'; S=1 rem 2; echo 'garbage'; S=2 rem 3)
	run -1 --separate-stderr norm --block-size 2 -k <<<"$in"
	assert_output "$(out_removed 0 1 pass 1 0; S=1 out_removed 1 2 pass 1 0; S=2 out_removed 2 3 pass 1 0)"
	[ "$(grep -c '^kv-normalize: -:[24]:' <<<"$stderr")" -eq 2 ]
}

@test "--max-errors caps printed record errors; --unbuffered and -o write the same records" {
	in=$(for i in 1 2 3 4; do echo '{"rec":"nope"}'; done; rem 1)
	run -1 --separate-stderr norm --block-size 2 -k --max-errors 2 <<<"$in"
	assert_output "$(I=0 S=0 out_removed 0 1 pass 1 0)"
	[ "$(grep -c 'rec: expected' <<<"$stderr")" -eq 2 ]
	run -0 --separate-stderr norm --block-size 2 --unbuffered -o "$BATS_TEST_TMPDIR/o.ndjson" <<<"$(rem 1)"
	[ -z "$output" ]
	[ "$(cat "$BATS_TEST_TMPDIR/o.ndjson")" = "$(out_removed 0 1 pass 1 0)" ]
}

@test "empty input → no output, exit 0; a last line without newline is read" {
	run -0 --separate-stderr norm --block-size 2 </dev/null
	[ -z "$output" ] && [ -z "$stderr" ]
	run -0 --separate-stderr norm --block-size 2 < <(rem 1 | tr -d '\n')
	assert_output "$(out_removed 0 1 pass 1 0)"
}

@test "several input files share one normalizer state (event ids continue)" {
	rem 1 >"$BATS_TEST_TMPDIR/1.ndjson"
	rem 2 >"$BATS_TEST_TMPDIR/2.ndjson"
	run -0 --separate-stderr norm --block-size 2 "$BATS_TEST_TMPDIR/1.ndjson" "$BATS_TEST_TMPDIR/2.ndjson"
	assert_output "$(out_removed 0 1 pass 1 0; out_removed 1 2 pass 1 0)"
}

@test "usage and I/O trouble: no --block-size, bad option values, missing file, /dev/full → exit 2" {
	run -2 --separate-stderr norm </dev/null
	[[ "$stderr" == *"--block-size is required"* ]] && [ -z "$output" ]
	run -2 --separate-stderr norm --block-size 0 </dev/null
	run -2 --separate-stderr norm --block-size 2 --mm-exclusion maybe </dev/null
	[[ "$stderr" == *"--mm-exclusion: unknown mode"*"(choices: engine-owned, u32-only, off)"* ]]
	run -2 --separate-stderr norm --block-size 2 --event-id random </dev/null
	run -2 --separate-stderr norm --block-size 2 --exclusion-capacity -1 </dev/null
	run -2 --separate-stderr norm --block-size 2 --fallback-exclusions maybe </dev/null
	run -2 --separate-stderr norm --block-size 2 --clear-scope rank </dev/null
	run -2 --separate-stderr norm --block-size 2 --image-token-id 4294967296 </dev/null
	run -2 --separate-stderr norm --block-size 2 "$BATS_TEST_TMPDIR/none.ndjson"
	[[ "$stderr" == *"none.ndjson: No such file or directory"* ]]
	run -2 --separate-stderr norm --block-size 2 -o /dev/full <<<"$(rem 1)"
	[[ "$stderr" == *"write error"* ]]
}

# ---- round trip against an independent model ------------------------------------------

@test "property: random stores/removals/clears (no wide tokens) → live (worker, rank, tier, hash) equals a naive model's" {
	for seed in 1 2 3 4 5 6; do
		/usr/bin/python3 "$NF/model.py" gen "$seed" >"$BATS_TEST_TMPDIR/in.ndjson"
		kvp kv-normalize --block-size 4 "$BATS_TEST_TMPDIR/in.ndjson" >"$BATS_TEST_TMPDIR/out.ndjson" 2>/dev/null ||
			fail "seed $seed: kv-normalize exited $?"
		run /usr/bin/python3 "$NF/model.py" check "$BATS_TEST_TMPDIR/in.ndjson" "$BATS_TEST_TMPDIR/out.ndjson"
		[ "$status" -eq 0 ] || fail "seed $seed: $output"
	done
}

# ---- pipeline ---------------------------------------------------------------------

F1=93cb00000000000000009198ab426c6f636b53746f726564920b0cc0940a0b0c0d02c0a3475055c000
F2=93cb3ff80000000000009183a474797065ac426c6f636b52656d6f766564ac626c6f636b5f68617368657391ffa66d656469756da347505501
F3=93cb00000000000000009198ab426c6f636b53746f726564921516c094920a0b920b0c920c0d920d0e02c0c0c000
F4=93cb00000000000000009198ab426c6f636b53746f726564910bc0920acf000000010000000002c0a347505581aa63616368655f73616c74a874656e616e742d6100

# capture SEQ HEX — one capture-format line (spec §5).
capture() {
	printf '{"source":"live","recv_ts":1.0,"topic":"kv-events","seq":%s,"payload_len":%s,"payload_b64":"%s"}\n' \
		"$1" $((${#2} / 2)) "$(b64 "$2")"
}

pipeline() {
	bash -c 'set -o pipefail; $KVP_EXEC_PREFIX "$KVP_BIN/kv-decode" "$1" |
		$KVP_EXEC_PREFIX "$KVP_BIN/kv-normalize" --block-size 2 "${@:2}"' _ "$@"
}

@test "pipeline: kv-decode | kv-normalize on the §6.5 fixtures F1-F4 (set -o pipefail)" {
	export KVP_BIN KVP_EXEC_PREFIX
	# seqs are contiguous per rank so kv-decode reports no gaps.
	{ capture 1 $F1; capture 1 $F2; capture 2 $F3; capture 3 $F4; } >"$BATS_TEST_TMPDIR/cap.jsonl"
	# F1: store [11,12], tokens 10..13, bs 2, rank 0 (§6.6-1). F2: map-form
	# removal of hash -1, rank 1 (§6.6-16). F3: bigram store [21,22], tokens
	# 10..14, EAGLE (§6.6-19). F4: salted store [11] with tokens [10, 2^32]:
	# engine-owned exclusion of its only block (window [10, 2^32]) → empty
	# removal, id 2 on rank 0.
	# Batch times (x.ts_ms): F2's batch says 1.5 s, the others 0.
	exp=$(TSMS=0 S=1 out_stored 0 null "$(blk 11 7369860969341005925),$(blk 12 2046086924859723728)" pass 2 0
		S=1 R=1 out_removed 0 18446744073709551615 pass 1 0
		TSMS=0 S=2 out_stored 1 null "$(blk 21 5959138341449004422),$(blk 22 13917772031453556700)" pass 2 0
		TSMS=0 S=3 out_removed 2 '' excluded 0 1)
	run -0 --separate-stderr pipeline "$BATS_TEST_TMPDIR/cap.jsonl"
	assert_output "$exp"
	# Pre-Stage-1 routers fail on F4's wide token; --narrow hashes the sentinel
	# with the tenant-a namespace seed.
	run -1 --separate-stderr pipeline "$BATS_TEST_TMPDIR/cap.jsonl" --mm-exclusion off
	[ "${#lines[@]}" -eq 3 ]
	[[ "$stderr" == *"kv-normalize: -:"*": token_ids[1]: wide token id 4294967296"* ]]
	run -0 --separate-stderr pipeline "$BATS_TEST_TMPDIR/cap.jsonl" --mm-exclusion off --narrow
	assert_line --index 3 "$(TSMS=0 S=3 out_stored 2 null "$(blk 11 "$(th --ns tenant-a 10 4294967295)")" pass 1 0)"
}

@test "pipeline: kv-decode | kv-normalize | route-score: filtered records are skipped, F1's blocks are found" {
	export KVP_BIN KVP_EXEC_PREFIX
	IGN=93cb00000000000000009191a749676e6f72656400 # [0.0, [["Ignored"]], 0]
	{ capture 0 $IGN; capture 1 $F1; } >"$BATS_TEST_TMPDIR/cap.jsonl"
	echo '{"type":"request","request_id":"r1","tokens":[10,11,12,13]}' >"$BATS_TEST_TMPDIR/req.ndjson"
	run -0 --separate-stderr bash -c 'set -o pipefail
		{ $KVP_EXEC_PREFIX "$KVP_BIN/kv-decode" "$1" |
			$KVP_EXEC_PREFIX "$KVP_BIN/kv-normalize" --block-size 2; cat "$2"; } |
		$KVP_EXEC_PREFIX "$KVP_BIN/route-score" --block-size 2 --no-load' _ \
		"$BATS_TEST_TMPDIR/cap.jsonl" "$BATS_TEST_TMPDIR/req.ndjson"
	# F1 stored both blocks of tokens 10..13 on (worker 0, rank 0): overlap 2.
	[[ "${lines[0]}" == '{"rec":"decision","request_id":"r1",'*'"chosen":{"worker_id":0,"dp_rank":0},"overlap_blocks":2,'* ]]
}

@test "--kv-block-size is an alias of --block-size" {
	"$KVP_BIN/kv-decode" "$KVP_ROOT/tests/fixtures/demo/capture.jsonl" >"$BATS_TEST_TMPDIR/ev"
	run -0 --separate-stderr kvp kv-normalize --block-size 4 "$BATS_TEST_TMPDIR/ev"
	want=$output
	run -0 --separate-stderr kvp kv-normalize --kv-block-size 4 "$BATS_TEST_TMPDIR/ev"
	[ -n "$output" ]
	[ "$output" = "$want" ]
}

@test "--worker-id, the old name of --force-worker-id, still works with a warning" {
	run -0 --separate-stderr norm --block-size 2 --worker-id 7 <<<"$(rem 1)"
	assert_output "$(W=7 out_removed 0 1 pass 1 0)"
	[[ "$stderr" == *"warning: --worker-id is now --force-worker-id"* ]]
}

# Issue 15: the namespace map had no cap. Capacity 3 = 2 hashes + 1
# namespace (by hand); tokens_hash values from dynhash.py.
@test "issue 15: --namespace-capacity: past it, one warning; untracked parents filter their unsalted children; clear recovers" {
	in=$(store 100,101 null 1,2,3,4,5,6,7,8 4 '"cache_salt":"tenant-a"'
		S=1 store 102 101 0,1,2,3 4
		S=2 store 103 102 0,1,2,3 4
		S=3 store 104 100 0,1,2,3 4
		S=4 store 105 null 1,2,3,4 4 '"cache_salt":"tenant-b"'
		S=5 store 106 105 0,1,2,3 4
		S=6 store 107 null 1,2,3,4 4
		S=7 clr
		S=8 store 108 null 1,2,3,4 4 '"cache_salt":"tenant-a"'
		S=9 store 109 108 0,1,2,3 4)
	a0123=$(th --ns tenant-a 0 1 2 3)
	exp=$(out_stored 0 null "$(blk 100 "$(th --ns tenant-a 1 2 3 4)"),$(blk 101 "$(th --ns tenant-a 5 6 7 8)")" pass 2 0
		S=1 out_stored 1 101 "$(blk 102 "$a0123")" pass 1 0
		S=2 out_filtered BlockStored untracked_cache_namespace
		S=3 out_stored 2 100 "$(blk 104 "$a0123")" pass 1 0
		S=4 out_stored 3 null "$(blk 105 "$(th --ns tenant-b 1 2 3 4)")" pass 1 0
		S=5 out_filtered BlockStored untracked_cache_namespace
		S=6 out_stored 4 null "$(blk 107 "$(th 1 2 3 4)")" pass 1 0
		S=7 out_cleared 5
		S=8 out_stored 6 null "$(blk 108 "$(th --ns tenant-a 1 2 3 4)")" pass 1 0
		S=9 out_stored 7 108 "$(blk 109 "$a0123")" pass 1 0)
	run -0 --separate-stderr norm --block-size 4 --namespace-capacity 3 <<<"$in"
	assert_output "$exp"
	[ "$stderr" = "kv-normalize: -:2: warning: worker_id 0 dp_rank 0: more than 3 cache-namespace entries; namespace fallback until AllBlocksCleared (unsalted stores whose parent is untracked are filtered)" ]
	# drop: the map is forgotten, so 104 (child of 100) is filtered too
	run -0 --separate-stderr norm --block-size 4 --namespace-capacity 3 --fallback-namespaces drop <<<"$in"
	assert_line --index 3 "$(S=3 out_filtered BlockStored untracked_cache_namespace)"
	# the default capacity is large: nothing is filtered
	run -0 --separate-stderr norm --block-size 4 <<<"$in"
	refute_output --partial untracked_cache_namespace
	[ -z "$stderr" ]
}

# Issue 28 item 10: the (worker, rank) streams had no cap (about 460 bytes
# each, 1.2 KB with a namespace). Capacity 2: (0,0) and (1,0) are tracked,
# (2,0), (0,1) and (3,0) are not; the tracked ones keep their counters.
@test "issue 28: --stream-capacity: past it, one warning; events of new streams filtered as untracked_stream" {
	in=$(S=0 rem 1
		S=1 W=1 rem 2
		S=2 W=2 rem 3
		S=3 rem 4
		S=4 R=1 rem 5
		S=5 W=1 clr
		S=6 W=3 clr)
	exp=$(S=0 out_removed 0 1 pass 1 0
		S=1 W=1 out_removed 0 2 pass 1 0
		S=2 W=2 out_filtered BlockRemoved untracked_stream
		S=3 out_removed 1 4 pass 1 0
		S=4 R=1 out_filtered BlockRemoved untracked_stream
		S=5 W=1 out_cleared 1
		S=6 W=3 out_filtered AllBlocksCleared untracked_stream)
	run -0 --separate-stderr norm --block-size 2 --stream-capacity 2 <<<"$in"
	assert_output "$exp"
	[ "$stderr" = "kv-normalize: -:3: warning: worker_id 2 dp_rank 0: more than 2 (worker, rank) streams; the events of this and every further new stream are filtered (untracked_stream)" ]
	# the default capacity is large: nothing is filtered
	run -0 --separate-stderr norm --block-size 2 <<<"$in"
	refute_output --partial untracked_stream
	[ -z "$stderr" ]
	run -2 --separate-stderr norm --block-size 2 --stream-capacity x </dev/null
}

@test "issue 28: 100,000 streams under --stream-capacity 16384 take the memory of 16,384" {
	awk 'BEGIN { for (i = 0; i < 100000; i++) printf "{\"rec\":\"event\",\"seq\":0,\"topic\":\"kv-events\",\"source\":\"live\",\"ts\":1.5,\"dp_rank\":0,\"worker_id\":%d,\"idx\":0,\"enc\":\"map\",\"type\":\"BlockStored\",\"block_hashes\":[1],\"parent_block_hash\":null,\"token_ids\":[1,2],\"token_layout\":\"flat\",\"block_size\":2,\"cache_salt\":\"t\"}\n", i }' >"$BATS_TEST_TMPDIR/in"
	head -n 16384 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/in16k"
	run -0 --separate-stderr /usr/bin/time -f '%M' -o "$BATS_TEST_TMPDIR/rss16k" "$KVP_BIN/kv-normalize" --block-size 2 "$BATS_TEST_TMPDIR/in16k"
	run -0 --separate-stderr /usr/bin/time -f '%M' -o "$BATS_TEST_TMPDIR/rss" "$KVP_BIN/kv-normalize" --block-size 2 --stream-capacity 16384 "$BATS_TEST_TMPDIR/in"
	[ "$(grep -c untracked_stream <<<"$output")" -eq $((100000 - 16384)) ]
	# about 1.2 KB per stream with a namespace: 100,000 tracked would be
	# over 100 MB more
	a=$(tail -1 "$BATS_TEST_TMPDIR/rss16k") b=$(tail -1 "$BATS_TEST_TMPDIR/rss")
	[ "$b" -le $((a * 5 / 4 + 2048)) ] || fail "max RSS $b KB; $a KB for the 16,384 streams alone"
}

@test "issue 15: --namespace-capacity and --fallback-namespaces reject bad values" {
	run -2 --separate-stderr norm --block-size 2 --namespace-capacity -1 </dev/null
	run -2 --separate-stderr norm --block-size 2 --fallback-namespaces maybe </dev/null
	[[ "$stderr" == *"keep"*"drop"* ]]
}

# Issue 28 item 9: a record the fast path declined went whole through
# json-c, about 40 times its size (a 62 MiB line: 2.6 GB) just to say
# what is wrong with it.
@test "issue 28: 16 MiB lines of small integers: the json-c path's messages, under 8x the line" {
	d=$BATS_TEST_TMPDIR
	head='{"rec":"event","seq":0,"idx":0,"worker_id":1,"type":"BlockStored","block_hashes":[1],"block_size":4,"token_ids":['
	long_line "$d/a" '{"token_ids":[' ']}' 16
	long_line "$d/b" "$head" ',-1]}' 16
	long_line "$d/c" '{"rec":"event","seq":[' '],"idx":0}' 16
	long_line "$d/e" '[' ']' 16
	long_line "$d/f" "$head" '' 16
	for x in a:'missing key "rec"' b:'token_ids[8388608]: must not be negative (got -1)' \
		c:'seq: expected an integer, got array' e:'record: expected a JSON object'; do
		f=$d/${x%%:*}
		run -1 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/kv-normalize" --block-size 4 "$f"
		rss_within 8 "$f" "$d/rss" kv-normalize
		[[ "${stderr%%$'\n'*}" == "kv-normalize: $f:1"*": ${x#*:}" ]] || fail "$stderr"
	done
	run -1 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/kv-normalize" --block-size 4 "$d/f"
	rss_within 8 "$d/f" "$d/rss" kv-normalize
	[[ "${stderr%%$'\n'*}" == "kv-normalize: $d/f:1:$(wc -c <"$d/f"): invalid JSON: unexpected end of line" ]] || fail "$stderr"
}

@test "issue 28: a 16 MiB record the fast path declines (an escape) is read right, under 8x the line" {
	d=$BATS_TEST_TMPDIR
	# lora_name "caf\u00e9" sends the record to json-c, which gets the
	# skeleton: token_ids read by the scanner, [] in its place
	long_line "$d/a" '{"rec":"event","seq":0,"idx":0,"worker_id":1,"type":"BlockStored","block_hashes":[1],"block_size":4,"lora_name":"caf\u00e9","x":[1,{"a":2}],"token_ids":[' ']}' 16
	run -0 --separate-stderr /usr/bin/time -f %M -o "$d/rss" "$KVP_BIN/kv-normalize" --block-size 4 "$d/a"
	rss_within 8 "$d/a" "$d/rss" kv-normalize
	printf '%s\n' '{"rec":"event","seq":0,"idx":0,"worker_id":1,"type":"BlockStored","block_hashes":[1],"block_size":4,"lora_name":"caf\u00e9","token_ids":[1,1,1,1]}' >"$d/small"
	run -0 --separate-stderr kvp kv-normalize --block-size 4 "$d/small"
	want=$output
	run -0 --separate-stderr "$KVP_BIN/kv-normalize" --block-size 4 "$d/a"
	assert_output "$want"
}
