/* SPDX-License-Identifier: MIT */
/*
 * normalize.h — Dynamo's ZMQ event conversion plus the Stage-1 multimodal
 * exclusion, as a stateful normalizer independent of I/O.
 *
 * Input: one engine event at a time (struct kvp_nev, usually filled from a
 * kv-decode record by event_reader.h), from any number
 * of (worker_id, dp_rank) streams interleaved. Output: one struct kvp_nout
 * per input event: a router event (KVP_NOUT_EVENT) or a filtered record
 * (KVP_NOUT_FILTERED, no event id spent). Rules, in order
 * (docs/spec/kv-events.md §6.4):
 *   1. resolve dp_rank (record rank, else the configured one; negative i32
 *      ranks are cast to u32 with a warning); drop Ignored, BlockInactive
 *      and third-party events (BlockTransferred);
 *   2. learn (dp_rank, group_idx) -> kind from stores; filter non-main kinds,
 *      unknown kinds, learned non-main groups and unlearned group_idx != 0;
 *      propagate cache namespaces per (worker, rank, hash) with Ambiguous
 *      detection;
 *   3. drop locality REMOTE/unknown and unknown media (or map them to device
 *      with legacy_medium);
 *   4. wide tokens: engine-owned exclusion (§4 rules 1-7), u32-only
 *      truncation (rule 8), or off (error, or narrow to a sentinel);
 *   5. event id from a per-(worker, rank) counter or the batch seq;
 *   6. conversion: duplicate check -> empty removal, block walk, tokens_hash.
 *
 * State per (worker, rank): learned kinds, namespace map, event counter,
 * exclusion sets per tier (open-addressing u64 sets) and the fallback flag
 * (the exclusion rules live in exclusion.c).
 * The namespace map holds at most ns_capacity entries per (worker, rank)
 * (map entries plus distinct namespaces); past it the stream is in the
 * namespace fallback until AllBlocksCleared, like the exclusion's: nothing
 * more is recorded (ns_fallback_drop also forgets the map), salted stores
 * hash with their own namespace, and an unsalted store whose parent is not
 * in the map is filtered as untracked_cache_namespace.
 * AllBlocksCleared frees that stream's namespace map and exclusion sets; the
 * counter and learned kinds survive (as in Dynamo). At most stream_capacity
 * (worker, rank) streams are tracked (each about 460 bytes, 1.2 KB with a
 * namespace); past it the normalizer is in the stream fallback for good
 * (nothing frees a stream): the tracked streams go on as before, and every
 * event of a stream not yet tracked is filtered as untracked_stream (its
 * counter, kinds and sets cannot be kept), the first one with
 * KVP_NW_STREAM_FALLBACK. Memory is bounded by the tracked state, not by
 * input length.
 *
 * Ownership: the normalizer owns its state; kvp_norm_process() borrows the
 * event (it is not modified) and fills an output whose arrays belong to the
 * normalizer and stay valid until the next call. Nothing here prints:
 * warnings are returned as flags in the output, data errors as -1 with a
 * diagnostic.
 */
#ifndef KVP_NORMALIZE_H
#define KVP_NORMALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

enum kvp_ev_type {
	KVP_EV_STORED,
	KVP_EV_REMOVED,
	KVP_EV_CLEARED,
	KVP_EV_IGNORED,
	KVP_EV_INACTIVE,    /* vLLM's BlockInactive: filtered */
	KVP_EV_THIRD_PARTY, /* BlockTransferred: filtered */
};

enum kvp_tier {
	KVP_TIER_DEVICE,
	KVP_TIER_HOST_PINNED,
	KVP_TIER_DISK,
	KVP_TIER_EXTERNAL,
	KVP_TIER_COUNT,
};

/* Wide token ids (Stage 1, docs/spec/kv-events.md §4). */
enum kvp_excl_mode {
	KVP_EXCL_ENGINE_OWNED, /* exclude, tracked per stream and tier */
	KVP_EXCL_U32_ONLY,     /* truncate at the first wide block */
	KVP_EXCL_OFF,          /* an error, or narrow to the sentinel */
};

enum kvp_id_mode {
	KVP_ID_COUNTER,
	KVP_ID_SEQ,
};

#define KVP_NORM_DEFAULT_CAPACITY ((size_t)1 << 20)
#define KVP_NORM_DEFAULT_STREAMS ((size_t)1 << 16)

struct kvp_norm_opts {
	uint32_t kv_block_size;
	enum kvp_excl_mode excl_mode;
	size_t capacity;   /* excluded ids per (worker, rank), all tiers */
	int legacy_medium; /* unknown medium -> device instead of drop */
	enum kvp_id_mode id_mode;
	uint64_t first_event_id;
	int narrow;        /* off mode: wide -> sentinel instead of error */
	uint32_t sentinel; /* narrowed value (default 0xFFFFFFFF) */
	int has_image_token, has_video_token;
	uint32_t image_token, video_token;
	uint32_t default_rank;  /* when the record has no dp_rank */
	int fallback_drop;      /* entering fallback forgets existing ids */
	size_t ns_capacity;     /* namespace entries per (worker, rank) */
	int ns_fallback_drop;   /* entering it forgets the namespace map */
	size_t stream_capacity; /* (worker, rank) streams tracked */
	int clear_event_tier;   /* clear resets only the event's tier */
	int ignore_offsets;     /* read sparse stores densely, as Dynamo */
};

void kvp_norm_opts_init(struct kvp_norm_opts *o);

/* One engine event. Arrays and strings are borrowed by the normalizer for
 * the duration of kvp_norm_process(). */
/* kv-decode records other than events that kv-normalize passes on. */
enum {
	KVP_NEV_EVENT = 0,
	KVP_NEV_GAP,     /* {"rec":"gap"} */
	KVP_NEV_STALE,   /* {"rec":"stale"} */
	KVP_NEV_RESTART, /* {"rec":"restart"} */
};

struct json_object;

struct kvp_nev {
	int skipped; /* not an event: KVP_NEV_GAP, _STALE, _RESTART or 0 */
	int has_ts;  /* the batch's "ts" (seconds), in ms */
	uint64_t ts_ms;
	uint64_t seq;
	int64_t idx;
	uint64_t worker_id;
	int has_rank;
	int64_t rank; /* as on the wire (may be negative) */
	enum kvp_ev_type type;

	const uint64_t *hashes;
	size_t n_hashes;
	int has_parent;
	uint64_t parent;
	const uint64_t *tokens; /* raw u64 token ids (stores) */
	size_t n_tokens;
	/* A sparse store: block i is the chunk offsets[i] of tokens (its
	 * window starts at offsets[i] * block_size); NULL: chunk i. */
	const uint64_t *offsets;
	size_t n_offsets;
	int eagle;
	uint64_t block_size;
	const char *lora_name; /* NULL or "" = none */
	const char *ns;        /* cache namespace; NULL or "" = none */
	int has_medium;
	const char *medium;
	int has_group;
	uint32_t group_idx;
	const char *kind;     /* NULL = absent */
	const char *locality; /* NULL = absent */
	/* Per-block multimodal hashes: block i has mm[mm_start[i] ..
	 * mm_start[i] + mm_count[i]); n_mm_blocks may be < n_hashes. */
	size_t n_mm_blocks;
	const size_t *mm_start, *mm_count;
	const uint64_t *mm;
	/* SGLang media events: block_hashes_sha256 (a json-c array of
	 * strings, borrowed) and a store's parent_block_hash_sha256; NULL:
	 * absent. Passed on unchanged in the output's "x". */
	const struct json_object *sha256_hashes;
	const char *sha256_parent;
};

enum kvp_nout_kind {
	KVP_NOUT_EVENT,
	KVP_NOUT_FILTERED,
};

enum kvp_ndata {
	KVP_ND_STORED,
	KVP_ND_REMOVED,
	KVP_ND_CLEARED,
};

enum kvp_action {
	KVP_ACT_PASS,
	KVP_ACT_TRUNCATED,
	KVP_ACT_EXCLUDED,
	KVP_ACT_DUP_REJECTED,
	KVP_ACT_FALLBACK_DROPPED,
};

/* Warning flags set in kvp_nout.warn. */
enum {
	KVP_NW_NEGATIVE_RANK = 1 << 0,
	KVP_NW_BLOCK_SIZE = 1 << 1, /* event block_size != kv_block_size */
	KVP_NW_TOO_SHORT = 1 << 2,  /* token_ids too short for a block */
	KVP_NW_SELF_REF = 1 << 3,   /* duplicate hash: empty removal */
	KVP_NW_FALLBACK = 1 << 4,   /* this (worker, rank) entered fallback */
	KVP_NW_UNKNOWN_KIND = 1 << 5,
	KVP_NW_NS_FALLBACK = 1 << 6,     /* namespace capacity reached */
	KVP_NW_STREAM_FALLBACK = 1 << 7, /* stream capacity reached */
};

struct kvp_nout {
	enum kvp_nout_kind kind;
	const char *reason; /* filtered: Dynamo's label (or kvpipe's) */
	uint64_t seq;
	int64_t idx;
	uint64_t worker_id;
	uint32_t dp_rank;
	enum kvp_ev_type in_type;
	unsigned warn;
	/* for warnings */
	uint64_t ev_block_size;
	size_t need_tokens, have_tokens;

	/* KVP_NOUT_EVENT */
	enum kvp_tier tier;
	uint64_t event_id;
	enum kvp_ndata data;
	int has_parent;
	uint64_t parent;
	size_t n_blocks; /* stored */
	uint64_t *block_hash, *tokens_hash;
	size_t *blk_mm_start, *blk_mm_count; /* into mm */
	uint64_t *mm;
	size_t n_removed; /* removed */
	uint64_t *removed;
	enum kvp_action action;
	size_t kept, excluded;
	int has_ts; /* the event's batch time, in ms */
	uint64_t ts_ms;
	const struct json_object *sha256_hashes; /* from kvp_nev */
	const char *sha256_parent;
};

struct kvp_norm;

/* Returns NULL on allocation failure. */
struct kvp_norm *kvp_norm_new(const struct kvp_norm_opts *o);
void kvp_norm_free(struct kvp_norm *n);

/*
 * Processes one event. Returns 0 with *out filled, -1 on a data error (a
 * wide token in off mode without narrowing) with d set (no state changed,
 * no event id spent), or -2 on allocation failure.
 */
int kvp_norm_process(struct kvp_norm *n, const struct kvp_nev *ev,
                     struct kvp_nout *out, struct kvp_diag *d);

/* Medium string -> tier: 0 with *tier set, or -1 for an unknown medium.
 * NULL and "" are the device tier. Case-sensitive, as Dynamo. */
int kvp_norm_tier(const char *medium, enum kvp_tier *tier);
const char *kvp_norm_tier_name(enum kvp_tier t);
const char *kvp_norm_action_name(enum kvp_action a);

/* Totals for tests and diagnostics. */
size_t kvp_norm_streams(const struct kvp_norm *n);
size_t kvp_norm_tracked(const struct kvp_norm *n); /* excluded ids */
size_t kvp_norm_ns_entries(const struct kvp_norm *n);

#endif
