/* SPDX-License-Identifier: MIT */
/*
 * route_hash.h — a request's blocks as the router hashes them
 * (common/blockhash.h: Dynamo's XXH3 local and sequence hashes): token-
 * bearing request records (route_input.h) are hashed here, between parsing
 * and routing (route_step.h), and the router chains sequence hashes with
 * kvp_route_chain() when a pre-hashed request brings none.
 *
 * struct kvp_route_hasher owns the hash arrays: a hashed request's
 * rq.local and rq.seq point into them until the next call. Nothing here
 * prints.
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

/* If in is a request whose tokens still need hashing (in->tokens set), sets
 * in->rq.local, rq.seq and rq.n to its full blocks' local and sequence
 * hashes (the record's seed, no multimodal info). Returns 0, or -1 on
 * allocation failure with d set. */
int kvp_route_hash_request(struct kvp_route_hasher *h, struct kvp_rin *in,
                           struct kvp_diag *d);

/* Sequence hashes of local[0..n): seq[0] = local[0], then each the chain
 * hash of its parent and its local hash (seed KVP_HASH_SEED). */
void kvp_route_chain(const uint64_t *local, size_t n, uint64_t *seq);

#endif
