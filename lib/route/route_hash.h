/* SPDX-License-Identifier: MIT */
/*
 * route_hash.h — route-score's block hashing (common/blockhash.h:
 * Dynamo's XXH3 local and sequence hashes). Records that bring token ids
 * (requests, stores; route_input.h) are hashed here, between parsing and
 * applying (route_step.h); the router chains sequence hashes with
 * kvp_route_chain() when a pre-hashed request brings none.
 *
 * struct kvp_route_hasher owns the hash arrays: a hashed record's
 * rq.local and rq.seq, or ev.local, point into them until the next call.
 * block_size must be the parser's. Nothing here prints.
 */
#ifndef KVP_ROUTE_HASH_H
#define KVP_ROUTE_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

struct kvp_rin;

struct kvp_route_hasher {
	uint32_t block_size;
	uint64_t *local, *seq;
	size_t caplocal, capseq;
};

void kvp_route_hasher_init(struct kvp_route_hasher *h, uint32_t block_size);
void kvp_route_hasher_fini(struct kvp_route_hasher *h);

/* Hashes the token ids a record brings (in->tokens; nothing to do when
 * NULL) with the record's seed and no multimodal info: a request's full
 * blocks become in->rq.local, rq.seq and rq.n; a stored event's blocks
 * marked in in->from_tokens get their local hashes in in->ev.local (the
 * others keep theirs). Returns 0, or -1 on allocation failure with d
 * set. */
int kvp_route_hash_record(struct kvp_route_hasher *h, struct kvp_rin *in,
                          struct kvp_diag *d);

/* Sequence hashes of local[0..n): seq[0] = local[0], then each the chain
 * hash of its parent and its local hash (seed KVP_HASH_SEED). */
void kvp_route_chain(const uint64_t *local, size_t n, uint64_t *seq);
/* The same for seq[from..n), seq[from - 1] known. */
void kvp_route_chain_from(const uint64_t *local, size_t from, size_t n,
                          uint64_t *seq);

#endif
