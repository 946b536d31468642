/* SPDX-License-Identifier: MIT */
/*
 * route_hash.h — the router's sequence-hash chain (common/blockhash.h:
 * Dynamo's XXH3 sequence hashes): the router chains sequence hashes with
 * kvp_route_chain() when a pre-hashed request brings none. Records that
 * bring token ids are hashed a stage up (replay/rec_hash.h).
 */
#ifndef KVP_ROUTE_HASH_H
#define KVP_ROUTE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Sequence hashes of local[0..n): seq[0] = local[0], then each the chain
 * hash of its parent and its local hash (seed KVP_HASH_SEED). */
void kvp_route_chain(const uint64_t *local, size_t n, uint64_t *seq);
/* The same for seq[from..n), seq[from - 1] known. */
void kvp_route_chain_from(const uint64_t *local, size_t from, size_t n,
                          uint64_t *seq);

#endif
