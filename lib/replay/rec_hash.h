/* SPDX-License-Identifier: MIT */
/*
 * rec_hash.h — route-score's block hashing of records (common/blockhash.h:
 * Dynamo's XXH3 local and sequence hashes). Records that bring token ids
 * (requests, stores; route_input.h) are hashed here, between parsing and
 * applying (route_step.h).
 *
 * struct kvp_rec_hasher owns the hash arrays: a hashed record's rq.local
 * and rq.seq, or ev.local, point into them until the next call.
 * block_size must be the parser's. Nothing here prints.
 */
#ifndef KVP_REC_HASH_H
#define KVP_REC_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

struct kvp_rin;

struct kvp_rec_hasher {
	uint32_t block_size;
	uint64_t *local, *seq;
	size_t caplocal, capseq;
};

void kvp_rec_hasher_init(struct kvp_rec_hasher *h, uint32_t block_size);
void kvp_rec_hasher_fini(struct kvp_rec_hasher *h);

/* Hashes the token ids a record brings (in->tokens; nothing to do when
 * NULL) with the record's seed and no multimodal info: a request's full
 * blocks become in->rq.local, rq.seq and rq.n; a stored event's blocks
 * marked in in->from_tokens get their local hashes in in->ev.local (the
 * others keep theirs). Returns 0, or -1 on allocation failure with d
 * set. */
int kvp_rec_hash(struct kvp_rec_hasher *h, struct kvp_rin *in,
                 struct kvp_diag *d);

#endif
