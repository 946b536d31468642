/* SPDX-License-Identifier: MIT */
/*
 * hash.h — Dynamo's router block hashing (XXH3-64), exact to the bit.
 *
 * Local block hash (tokens_hash): XXH3_64 over the block's tokens as
 * little-endian u32, then (if the block carries multimodal objects) their
 * mm hashes sorted ascending as little-endian u64, with seed
 *     1337 + XXH3_64(lora, 0) + XXH3_64(namespace, 1)      (wrapping)
 * where an empty or absent LoRA name / namespace adds nothing.
 * Sequence hash: seq[0] = local[0];
 *     seq[i] = XXH3_64(le64(seq[i-1]) || le64(local[i]), chain_seed).
 * Only full blocks are hashed; EAGLE mode hashes windows of block_size + 1
 * tokens with stride block_size ((n - 1) / bs blocks).
 *
 * Results are identical on big- and little-endian hosts. Nothing here
 * allocates except where stated.
 */
#ifndef KVP_HASH_H
#define KVP_HASH_H

#include <stddef.h>
#include <stdint.h>

#define KVP_HASH_SEED 1337u

/* XXH3_64 of bytes with a seed. */
uint64_t kvp_hash_bytes(const void *p, size_t len, uint64_t seed);

/* Local-hash seed from a base seed (normally KVP_HASH_SEED), a LoRA name and
 * a cache namespace. NULL or "" means absent. */
uint64_t kvp_hash_seed(uint64_t base, const char *lora, const char *ns);

/* Number of hashable blocks for n tokens (0 when bs == 0). */
size_t kvp_hash_block_count(size_t n, uint32_t bs, int eagle);

/* Local hash of one block of n tokens plus n_mm multimodal hashes (any
 * order; hashed sorted ascending, without modifying mm). */
uint64_t kvp_hash_block(const uint32_t *tokens, size_t n, uint64_t seed,
                        const uint64_t *mm, size_t n_mm);

/* One chain step. */
uint64_t kvp_hash_chain(uint64_t parent, uint64_t local, uint64_t chain_seed);

/* Incremental hasher: feed whole blocks (bs tokens, or bs + 1 in EAGLE
 * mode), get local and sequence hashes; no allocation. */
struct kvp_hasher {
	uint64_t seed;
	uint64_t chain_seed;
	uint64_t prev_seq;
	size_t n; /* blocks hashed so far */
};

void kvp_hasher_init(struct kvp_hasher *h, uint64_t seed, uint64_t chain_seed);
void kvp_hasher_block(struct kvp_hasher *h, const uint32_t *tokens, size_t n,
                      const uint64_t *mm, size_t n_mm, uint64_t *local,
                      uint64_t *seq);

/* Hashes every full block of tokens[0..n) into local[] and (if non-NULL)
 * seq[], which must hold kvp_hash_block_count(n, bs, eagle) values.
 * No multimodal info. Returns the block count. */
size_t kvp_hash_tokens(const uint32_t *tokens, size_t n, uint32_t bs, int eagle,
                       uint64_t seed, uint64_t chain_seed, uint64_t *local,
                       uint64_t *seq);

/* SGLang pad value protocol: 1_000_000 + (mm_hash & (2^30 - 1)). */
uint32_t kvp_pad_value(uint64_t mm_hash);

/* Dynamo's hash_mm_identifier: exactly 64 hex digits → the first 16 as a
 * u64; anything else → XXH3_64(bytes, seed 0). */
uint64_t kvp_hash_mm_identifier(const char *s, size_t len);

/* "MAJOR.MINOR.RELEASE" of the linked libxxhash, for --version. */
const char *kvp_hash_lib_version(void);

#endif
