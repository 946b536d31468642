#!/bin/sh
# gen-decisions.sh N [MOVE] — N decision records as route-score writes them
# without the per-candidate arrays (timestamps 3 ms apart, 16 workers,
# overlap i%7 of 8+i%9 blocks). With MOVE, every MOVE-th request goes to
# worker 99 instead (a "new" stream for kv-diff).
exec awk -v n="$1" -v move="${2:-0}" 'BEGIN {
	for (i = 1; i <= n; i++) {
		w = (move > 0 && i % move == 0) ? 99 : i % 16
		printf "{\"rec\":\"decision\",\"request_id\":%d,\"ts_ms\":%d,\"commit\":true,\"isl\":%d,\"request_blocks\":%d,\"hashed_blocks\":%d,\"chosen\":{\"worker_id\":%d,\"dp_rank\":0},\"overlap_blocks\":%d,\"logit\":%.4f,\"temperature\":0,\"overlap_weight\":1,\"tie_break\":\"none\",\"max_overlap\":{\"worker_id\":0,\"dp_rank\":0,\"blocks\":%d},\"non_max_overlap\":false,\"blocks_lost\":0,\"warnings\":[]}\n", i, i * 3, (8 + i % 9) * 512, 8 + i % 9, 8 + i % 9, w, i % 7, 17 + (i % 13) / 8, i % 7
	}
}'
