/* SPDX-License-Identifier: MIT */
/*
 * engine_rec.h — kv-hash --scheme on records: engine block hashes for the
 * records kvp_hashrec_line() read (hash_record.h), and the extra_keys
 * reader shared with --detect (detect.h).
 *
 * Inputs of a record (when the record overrides are on):
 *   extra_keys   vLLM's per-block extras as kv-decode writes them: an array
 *                aligned with the blocks whose element is null (None) or an
 *                array of text (LoRA name, salt, bare MM identifier),
 *                [text, int] (MM identifier and offset), {"bin":"hex"}
 *                (prompt-embeds digest) or int items. Replaces the LoRA
 *                name and salt below.
 *   lora_name    else opts->lora: vLLM's LoRA extra on every block, llm-d's
 *                model name
 *   cache_salt, cache_namespace   else opts->ns: vLLM's block-0 extra,
 *                SGLang's salted root
 *   lora_id      TensorRT-LLM's loraTaskId (else opts->lora if decimal)
 *   parent_block_hash   a store that continues an earlier one: the chain
 *                goes on from the parent's state. Self-verifying schemes
 *                take the u64 itself; the digest schemes need the parent
 *                to have been hashed earlier in the input (a 64-bit value
 *                cannot be chained from), else the record is bad.
 *   parent_block_hash_sha256   sglang, sglang-mm: the parent's full digest
 *                (64 hex digits), chained from directly; wins over
 *                parent_block_hash
 *   block_offsets  a sparse store (hash_record.h): the chain runs over every
 *                chunk of the tokens from the parent and block i publishes
 *                chunk block_offsets[i]'s value; an extra_keys array with
 *                one element per listed block is placed at the blocks'
 *                chunks, the skipped chunks taking the default extras
 *                (the LoRA name, and the salt on a root store's chunk 0)
 *   mm_spans     sglang-mm: the request's media spans, an array of
 *                [start, end, "sha256:" + 64 hex, offset] in raw token
 *                positions of the record's tokens (kvp_erec_spans_read)
 */
#ifndef KVP_ENGINE_REC_H
#define KVP_ENGINE_REC_H

#include "common/u64set.h"
#include "hash/engine_hash.h"
#include "hash/hash_record.h"

struct json_object;

/* Per-block extras read from a JSON extra_keys array. */
struct kvp_erec_extras {
	struct kvp_eextra *blk;
	size_t n_blk, blk_cap;
	struct kvp_eitem *it;
	size_t it_cap;
	uint8_t *bytes;
	size_t bytes_cap;
};

void kvp_erec_extras_fini(struct kvp_erec_extras *x);
/* Reads arr (borrowed; the items point into it). Returns 0 or -1. */
int kvp_erec_extras_read(struct kvp_erec_extras *x,
                         const struct json_object *arr, struct kvp_diag *d);

/* Reads an mm_spans array (see above) into *sp (grown as needed; *n
 * spans), checked against n_tok raw tokens. Returns 0 or -1 with d set. */
int kvp_erec_spans_read(const struct json_object *arr, size_t n_tok,
                        struct kvp_espan **sp, size_t *cap, size_t *n,
                        struct kvp_diag *d);

/* Parses 64 hex digits (either case) into d[32]. Returns 0 or -1. */
int kvp_erec_hex32(const char *s, size_t len, uint8_t d[32]);

/* The extras per chunk (per sub-block at a finer hash granularity) of a
 * sparse store. */
struct kvp_erec_sparse {
	struct kvp_eextra *blk;
	size_t n_blk, cap;
	struct kvp_eitem dflt[2]; /* LoRA name, salt */
};

/*
 * Spreads the n_listed extras of a sparse store's blocks (block i at
 * chunk off[i] < n_chunks) over n_chunks * sub entries (sub: sub-blocks
 * per chunk), defaults elsewhere: the LoRA name, with the salt too on
 * entry 0 of a root store (no parent). Returns 0 or -1 (memory).
 */
int kvp_erec_sparse_extras(struct kvp_erec_sparse *sp,
                           const struct kvp_eextra *listed, size_t n_listed,
                           const uint64_t *off, size_t n_chunks, size_t sub,
                           const char *lora, const char *salt, int root);

struct kvp_erec {
	struct kvp_eh eh;
	int64_t *tok;
	size_t tok_cap;
	struct kvp_edigest *dig;
	size_t dig_cap;
	struct kvp_erec_extras ex;
	struct kvp_u64set map; /* published u64 → index in pool */
	struct kvp_edigest *pool;
	size_t n_pool, pool_cap;
	struct kvp_espan *spans; /* sglang-mm */
	size_t spans_cap;
	struct kvp_erec_sparse sp; /* a sparse store's extras */
	char *hex; /* sglang-mm: the digests, 64 hex digits each */
	size_t hex_cap;
};

int kvp_erec_init(struct kvp_erec *e, enum kvp_scheme s, const char *seed,
                  struct kvp_diag *d);
void kvp_erec_fini(struct kvp_erec *e);

/*
 * Replaces r->local[0..r->n_blocks) (just filled by kvp_hashrec_line())
 * with the scheme's published values for the same record. Returns 0, or
 * -1 with d set.
 */
int kvp_erec_apply(struct kvp_erec *e, struct kvp_hashrec *r,
                   const struct kvp_hashrec_opts *o, struct kvp_diag *d);

#endif
