/* SPDX-License-Identifier: MIT */
/*
 * hash_record.h — from one NDJSON record to Dynamo block hashes: the logic
 * behind kv-hash(1).
 *
 * A record is hashable when it holds a token array:
 *   - the key named by opts->tokens_key, if set; otherwise
 *   - "tokens", else "token_ids" (the first one present wins).
 * Token arrays are flat lists of integers in [0, 2^32), or bigram pair
 * lists [[t0,t1],[t1,t2],...] (SGLang EAGLE), which are flattened to
 * t0,t1,t2,... (the first pair's head, then every pair's tail) and count as
 * an EAGLE layout.
 *
 * Records kv-decode writes that carry no tokens are "not hashable" (return
 * 1), not bad: any record with a "rec" key other than "event", and events
 * whose "type" is not "BlockStored", when they hold no token array.
 * A record without a "rec" key and without a token array is bad data.
 *
 * Per-record settings (unless opts->record_overrides is 0):
 *   block_size        integer in [1, 2^32): replaces opts->block_size
 *   lora_name         string: replaces opts->lora ("" = no LoRA); null or
 *                     absent: opts->lora applies
 *   cache_namespace   string: replaces opts->ns ("" = none); null/absent:
 *                     cache_salt is tried, then opts->ns applies
 *   cache_salt        as cache_namespace (kv-decode's SGLang salt)
 *   token_layout      "bigram" → EAGLE windows (eagle mode AUTO only)
 *   is_eagle          true → EAGLE windows (eagle mode AUTO only)
 *
 * Always read (data, not a setting): block_mm_infos, Dynamo's per-block
 * multimodal info: an array whose element i is null or
 * {"mm_objects":[{"mm_hash":u64, ...}, ...]} for block i. A block's
 * mm_hash values are appended to its hashed bytes (kvp_hash_block);
 * elements past the last full block are ignored, blocks past the end of
 * the array have none. mm_hash may be a decimal or 0x-hex string.
 *
 * Buffers in struct kvp_hashrec are reused across records and grow to the
 * largest record seen (bounded by the caller's line limit). Nothing here
 * prints.
 */
#ifndef KVP_HASH_RECORD_H
#define KVP_HASH_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "events/event_reader.h"

struct json_object;

enum kvp_eagle_mode {
	KVP_EAGLE_AUTO = 0, /* per record: bigram layout or is_eagle:true */
	KVP_EAGLE_ALWAYS,
	KVP_EAGLE_NEVER,
};

struct kvp_hashrec_opts {
	uint32_t block_size; /* 0: every record must carry block_size */
	const char *lora;    /* NULL or "": none */
	const char *ns;      /* cache namespace; NULL or "": none */
	uint64_t seed;       /* base seed, normally KVP_HASH_SEED */
	uint64_t chain_seed; /* normally KVP_HASH_SEED */
	enum kvp_eagle_mode eagle;
	int record_overrides;   /* honour the per-record keys above */
	const char *tokens_key; /* NULL: "tokens", then "token_ids" */
	int partial_tail;       /* engine schemes that take it: hash a
	                         * trailing short block (kv-hash
	                         * --partial-tail) */
	int ignore_offsets;     /* kv-hash --block-offsets ignore */
};

/* Sets the defaults: seeds 1337, EAGLE auto, record overrides on. */
void kvp_hashrec_opts_init(struct kvp_hashrec_opts *o);

struct kvp_hashrec {
	/* results of the last successful kvp_hashrec_run() */
	uint32_t *tokens;
	size_t n_tokens;
	uint64_t *local; /* block (local) hashes */
	uint64_t *seq;   /* sequence hashes */
	size_t n_blocks;
	uint32_t block_size; /* effective values used */
	int eagle;
	uint64_t seed; /* local-hash seed after LoRA/namespace salting */
	/* n_blocks digests of 64 lowercase hex digits each, written after the
	 * local hashes as an array of strings under local_key + "_sha256";
	 * NULL: none (set by kvp_erec_apply() under sglang-mm) */
	const char *sha_hex;
	/* block_offsets of the last record (n_blocks entries) or NULL when
	 * it is dense; n_chunks: the full chunks of its tokens, all hashed */
	const uint64_t *offsets;
	size_t n_chunks;
	/* private */
	uint64_t *off;
	size_t off_cap;
	uint64_t *gather;
	size_t gather_cap;
	size_t *inv;
	size_t inv_cap;
	size_t tok_cap, blk_cap;
	struct kvp_event_reader_blockmm mm; /* block_mm_infos */
	const char *fast_key; /* tokens read from the text, not from json-c */
	int raw_ok;           /* the line may be copied as is */
	size_t close;         /* offset of the line's closing brace */
	char *strip;          /* the line with the token array emptied */
	size_t strip_cap;
	struct json_tokener *tok; /* created on first use */
	struct json_object *rec;  /* record of the last kvp_hashrec_line() */
};

void kvp_hashrec_init(struct kvp_hashrec *r);
/* Room for n blocks in r->local and r->seq. Returns 0 or -1 with d set. */
int kvp_hashrec_grow(struct kvp_hashrec *r, size_t n, struct kvp_diag *d);
void kvp_hashrec_fini(struct kvp_hashrec *r);

/* Checks r->offsets (a sparse record's, if any) against n_chunks hashed
 * chunks. Returns 0, or -1 with d set (file:line added by the caller). */
int kvp_hashrec_offsets_check(const struct kvp_hashrec *r, size_t n_chunks,
                              struct kvp_diag *d);

/*
 * Hashes one record (borrowed). Returns 0 (results in r), 1 when the record
 * is a kvpipe record without tokens (see above; r is unchanged), or -1
 * with d set (bad token, bad or missing block size, missing key, wrong
 * type, out of memory).
 */
int kvp_hashrec_run(struct kvp_hashrec *r, const struct kvp_hashrec_opts *o,
                    const struct json_object *rec, struct kvp_diag *d);

/*
 * The same for a raw NDJSON line (len bytes, no newline; it must stay
 * unchanged until kvp_hashrec_write_line()). Lines that are strictly valid
 * JSON with a flat token array take a fast path that reads the tokens
 * directly from the text; anything else is parsed with json-c and handed
 * to kvp_hashrec_run(), so results and messages are the same either way.
 * The parsed record is kept in r until the next call. On -1, d->col may
 * hold a column (JSON syntax errors).
 */
int kvp_hashrec_line(struct kvp_hashrec *r, const struct kvp_hashrec_opts *o,
                     const char *line, size_t len, struct kvp_diag *d);

/*
 * Writes one output record with w: the members of rec (borrowed; NULL for
 * none) in their order, except keys named local_key or seq_key, followed
 * by local_key and seq_key holding r's hashes (seq_key NULL: no sequence
 * array, as kv-hash --scheme writes). With r NULL, rec is copied
 * unchanged. Every integer of rec is copied exactly (kvp_jw_json).
 */
struct kvp_jw;
void kvp_hashrec_write(struct kvp_jw *w, const struct json_object *rec,
                       const struct kvp_hashrec *r, const char *local_key,
                       const char *seq_key);

/*
 * Default name of the local-hash array for the record of the last
 * kvp_hashrec_line() call: "tokens_hash" for kv-decode event records (whose
 * "block_hashes" are the engine's own ids, kept as they are), else
 * "block_hashes".
 */
const char *kvp_hashrec_local_key(const struct kvp_hashrec *r);

/*
 * Writes the record of the last kvp_hashrec_line() call: rc is its return
 * value, only_hashes drops the record's own members. The result is the
 * same as kvp_hashrec_write()'s; when the line was compact, plain JSON
 * it is copied byte for byte instead of re-serialized.
 */
void kvp_hashrec_write_line(struct kvp_jw *w, const struct kvp_hashrec *r,
                            int rc, const char *line, const char *local_key,
                            const char *seq_key, int only_hashes);

#endif
