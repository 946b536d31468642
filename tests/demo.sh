#!/bin/sh
# make demo: the main pipeline on bundled sample data
# (tests/fixtures/demo/, made by make-capture.py).
set -eu
cd "$(dirname "$0")/.."
B=${O:-build}/bin
D=tests/fixtures/demo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

say() { printf '\n## %s\n' "$*"; }

say "kv-decode: one record per engine event in a two-worker capture (note the seq gap)"
# --hash-strings: Debian's jq 1.6 would round u64 hashes above 2^53.
"$B/kv-decode" --hash-strings "$D/capture.jsonl" |
	jq -c 'if .rec == "event"
	       then {rec, worker_id, seq, type, blocks: ((.block_hashes // []) | length),
	             parent_block_hash}
	       else . end'

say "kv-decode | kv-normalize --block-size 4: the RouterEvents Dynamo's router would index"
"$B/kv-decode" "$D/capture.jsonl" | "$B/kv-normalize" --block-size 4 >"$tmp/events.ndjson"
# A RouterEvent is shown by its event id, data and action; kvpipe's own
# records (here kv-decode's gap, passed on) as they are.
"$B/kv-decode" "$D/capture.jsonl" | "$B/kv-normalize" --block-size 4 --hash-strings |
	jq -c 'if has("rec") then .
	       else {worker_id, event_id: .event.event_id,
	             data: (.event.data | if type == "object" and has("stored")
	                    then {stored: [.stored.blocks[].tokens_hash]} else . end),
	             action: .x.action} end'

say "route-score: which worker would the router pick for each request, and why"
"$B/route-score" --block-size 4 --requests "$D/requests.ndjson" --format text \
	<"$tmp/events.ndjson"

say "kv-hash: Dynamo's block and sequence hashes (tokens 0..11, block size 4)"
echo '{"tokens":[0,1,2,3,4,5,6,7,8,9,10,11]}' | "$B/kv-hash" --block-size 4

say "mm-expand: a Kimi-K3 and a Qwen2.5-VL request expanded to routing tokens"
"$B/mm-expand" tests/fixtures/mm-expand/demo.ndjson |
	jq -c '{id, status, reason, family, layout, image_token_counts, dims_texts,
	        mm_hashes_hex, expanded_prompt_len, num_blocks}'

say "kv-diff and kv-report: the Mooncake sample replayed under three policies"
# Simulated time, so that requests finish and TTFT is measured: each
# worker prefills 20,000 tokens/s and decodes 2,000 tokens/s, the order of
# an 8B model on one H100 under vLLM (route-score(1), "Simulated time").
T=tests/fixtures/mooncake/synthetic_trace_head500.jsonl
R=${O:-build}/demo
SIM="--prefill-tokens-per-s 20000 --decode-tokens-per-s 2000"
mkdir -p "$R"
for p in dynamo sglang-cache-aware round-robin; do
	# shellcheck disable=SC2086 # $SIM is two options
	"$B/route-score" --trace mooncake --workers 4 --approx --policy "$p" $SIM "$T" >"$R/$p.ndjson"
	tail -n 1 "$R/$p.ndjson" | jq -c --arg p "$p" \
		'{policy: $p, prefix_hit_rate, ttft_p50_ms: .simulated.ttft_p50_ms,
		  ttft_p99_ms: .simulated.ttft_p99_ms}'
done
"$B/kv-diff" --format text "$R/dynamo.ndjson" "$R/sglang-cache-aware.ndjson" | sed -n '/^summary/,$p'
"$B/kv-report" --title "Mooncake sample (500 requests, 4 workers, simulated time): three policies" \
	"$R/dynamo.ndjson" "$R/sglang-cache-aware.ndjson" "$R/round-robin.ndjson" -o "$R/report.html"
echo
echo "report: $(cd "$R" && pwd)/report.html"
