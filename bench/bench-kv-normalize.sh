#!/bin/sh
# bench-kv-normalize.sh — kv-normalize over synthetic kv-decode event records
# (stores with 1-2 blocks of 16 tokens, some salted, some with wide
# multimodal tokens; removals; periodic clears; 8 workers x 2 ranks; block
# hashes drawn from a bounded pool), against `jq -c .` over the same file in
# the same run. Bars (issue 4): >= 200,000 events, >= 4x jq's speed, and
# max RSS flat as the input doubles.
set -e
: "${KVP_BIN:?}" "${BENCH_TMP:?}"
. "$(dirname "$0")/timing.sh"

gen() { # gen N SEED > file
	awk -v n="$1" -v seed="$2" 'BEGIN {
		srand(seed); pool = 40000
		for (i = 0; i < n; i++) {
			w = int(rand() * 8); r = int(rand() * 2); x = rand()
			head = sprintf("{\"rec\":\"event\",\"seq\":%d,\"topic\":\"kv-events\",\"source\":\"live\",\"ts\":1.5,\"dp_rank\":%d,\"worker_id\":%d,\"idx\":0,\"enc\":\"map\",", i, r, w + 1000)
			if (x < 0.55) {
				nb = 1 + int(rand() * 2); hs = ""; toks = ""
				for (b = 0; b < nb; b++) {
					hs = hs (b ? "," : "") sprintf("%.0f", int(rand() * pool) * 2654435761 + 17)
					for (t = 0; t < 16; t++)
						toks = toks (b || t ? "," : "") int(rand() * 150000)
				}
				if (rand() < 0.05) toks = toks ",4294967296"
				par = rand() < 0.5 ? "null" : sprintf("%.0f", int(rand() * pool) * 2654435761 + 17)
				salt = rand() < 0.1 ? "\"tenant-" int(rand() * 4) "\"" : "null"
				printf "%s\"type\":\"BlockStored\",\"block_hashes\":[%s],\"parent_block_hash\":%s,\"token_ids\":[%s],\"token_layout\":\"flat\",\"wide_tokens\":0,\"block_size\":16,\"lora_id\":null,\"lora_name\":null,\"medium\":\"GPU\",\"cache_salt\":%s,\"session_id\":null,\"extra_keys\":null,\"group_idx\":0,\"kv_cache_spec_kind\":\"full_attention\",\"kv_cache_spec_sliding_window\":null,\"locality\":null,\"hash_repr\":\"uint\"}\n", head, hs, par, toks, salt
			} else if (x < 0.995) {
				printf "%s\"type\":\"BlockRemoved\",\"block_hashes\":[%.0f],\"medium\":\"GPU\",\"group_idx\":0,\"kv_cache_spec_kind\":null,\"locality\":null,\"hash_repr\":\"uint\"}\n", head, int(rand() * pool) * 2654435761 + 17
			} else {
				printf "%s\"type\":\"AllBlocksCleared\",\"source_kind\":null}\n", head
			}
		}
	}'
}

N=${BENCH_EVENTS:-200000}
gen "$N" 1 >"$BENCH_TMP/norm-1x.ndjson"
gen $((N * 2)) 2 >"$BENCH_TMP/norm-2x.ndjson"
IN=$BENCH_TMP/norm-1x.ndjson
echo "input: $N events, $(wc -c <"$IN") bytes"; echo

# The output must be complete and correct-shaped before timing means anything.
"$KVP_BIN/kv-normalize" --block-size 16 "$IN" >"$BENCH_TMP/norm.out" 2>/dev/null
[ "$(wc -l <"$BENCH_TMP/norm.out")" -eq "$N" ] || { echo "FAIL: output count"; exit 1; }

t_jq=$(best_time 2 sh -c "jq -c . <'$IN' >/dev/null")
t_kv=$(best_time 3 sh -c "'$KVP_BIN/kv-normalize' --block-size 16 <'$IN' >/dev/null 2>&1")
r=$(ratio "$t_jq" "$t_kv")
echo "jq -c .:       ${t_jq} s"
echo "kv-normalize:  ${t_kv} s  ($(echo "$N / $t_kv" | bc) events/s)"
ok=yes
[ "$(echo "$r >= 4" | bc -l)" = 1 ] || ok=no
echo "speed ratio: ${r}x jq (bar: >= 4x): $ok"

m1=$(/usr/bin/time -f %M "$KVP_BIN/kv-normalize" --block-size 16 "$BENCH_TMP/norm-1x.ndjson" 2>&1 >/dev/null | tail -1)
m2=$(/usr/bin/time -f %M "$KVP_BIN/kv-normalize" --block-size 16 "$BENCH_TMP/norm-2x.ndjson" 2>&1 >/dev/null | tail -1)
echo "max RSS: $N events ${m1} KiB, $((N * 2)) events ${m2} KiB"
flat=yes
# Flat: doubling the input may not grow the peak by more than 25%.
[ "$m2" -le $((m1 + m1 / 4)) ] || flat=no
echo "memory flat as input doubles (bar: <= +25%): $flat"
[ "$ok" = yes ] && [ "$flat" = yes ]
