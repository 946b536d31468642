/* SPDX-License-Identifier: MIT */
/*
 * mooncake_out.h — kv-hash --to-mooncake: requests with token ids and
 * timestamps become Mooncake trace lines (the FAST'25 trace format that
 * Dynamo's replay tools and route-score --trace mooncake read):
 *
 *   {"timestamp": ms, "input_length": tokens, "output_length": n,
 *    "hash_ids": [...]}
 *
 * hash_ids are dense ids, 0, 1, 2, ... in first-seen order, of the
 * request's sequence hashes (so equal ids mean equal prefixes, as in the
 * published traces), one per block of block_size tokens; a partial last
 * block gets a fresh id of its own (engines never share one), so there are
 * ceil(input_length / block_size) ids.
 *
 * The record's timestamp is "timestamp" or "ts_ms" (ms, required);
 * output_length is "output_length", "osl" or "max_tokens" (default 0).
 * Memory: one map entry per distinct sequence hash. Nothing here prints.
 */
#ifndef KVP_MOONCAKE_OUT_H
#define KVP_MOONCAKE_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/kmap.h"
#include "hash/hash_record.h"

struct json_object;
struct kvp_jw;

struct kvp_mooncake {
	struct kvp_kmap ids; /* (0, sequence hash) → id + 1 */
	uint64_t next;
	uint64_t *buf;
	size_t cap;
};

void kvp_mooncake_init(struct kvp_mooncake *m);
void kvp_mooncake_fini(struct kvp_mooncake *m);

/* Writes the trace line of rec (borrowed), hashed into r by
 * kvp_hashrec_run(). 0, or -1 with d set (no timestamp, bad value, out of
 * memory). */
int kvp_mooncake_write(struct kvp_mooncake *m, struct kvp_jw *w,
                       const struct json_object *rec,
                       const struct kvp_hashrec *r, struct kvp_diag *d);

#endif
