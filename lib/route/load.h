/* SPDX-License-Identifier: MIT */
/*
 * load.h — private to lib/route/: the load the router predicts from its
 * own decisions (load.c): which blocks each candidate's active requests
 * hold, and the per-candidate counters (struct kvp_cand's load fields).
 * load.c owns struct kvp_load and the load slots of the block table
 * (struct kvp_node lmask, rc1); it keeps the table of active requests
 * (reqs.h) through its functions.
 *
 * Candidate c holds block node id when bit c of the node's lmask is set
 * (c < 32), or bit c % 32 of masks (c / 32, id). Modes (load.c):
 *   rc_on      from the first release of a request holding nodes on: c's
 *              active requests holding id are counted, in the node's rc1
 *              while c is its one holder among candidates 0..31, else in
 *              rc (c, id). Till then nothing was released, the masks say
 *              all and rc is empty. Never unset.
 *   unchained  set once a request brought its own hashes (or
 *              no_assume_reuse): held sets need no longer be prefixes of
 *              chains. Never unset.
 *   held_ok    held32 is the held prefix of candidates 0..31 for the
 *              decision's blocks (kvp_load_held_all); only while chained.
 * Asserted in debug builds (kvp_load_check).
 */
#ifndef KVP_ROUTE_LOAD_H
#define KVP_ROUTE_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"
#include "route/router.h"

struct kvp_load {
	/* (cand / 32, node) → mask of the 32 cands holding it, for cands
	 * 32 and over; (cand, node) → holds, with rc_on */
	struct kvp_kmap masks, rc;
	int rc_on;
	int unchained;
	uint32_t held32[32];
	int held_ok;
	uint64_t changes; /* releases and prefills so far (the lab polls) */
};

/* Its maps' tables from arena ar (borrowed). */
void kvp_load_init(struct kvp_load *ld, struct kvp_arena *ar);
void kvp_load_fini(struct kvp_load *ld);

/* Records request q (hid: XXH3_64 of its id) as active on candidate c
 * with prefill tokens and its sequence hashes, of which c's score found
 * the first held held already (0: unknown); *dup is set when an active
 * request with the same id was released first. 0, or -1 on allocation
 * failure. */
int kvp_load_add(struct kvp_router *r, uint32_t c, const struct kvp_request *q,
                 uint64_t hid, uint64_t prefill, const uint64_t *seq,
                 size_t held, int *dup);
/* The output blocks request q holds while active (0 unless
 * track_output_blocks and q brings an output length). */
uint64_t kvp_load_output_blocks(const struct kvp_router *r,
                                const struct kvp_request *q);
/* Releases the active request in slot. */
void kvp_load_release(struct kvp_router *r, uint32_t slot);
/* Releases the active requests of candidate ci. */
void kvp_load_release_cand(struct kvp_router *r, uint32_t ci);
/* Releases requests routed request_expiry_ms or more before now. */
void kvp_load_expire(struct kvp_router *r);
/* ld->held32 for the decision's request (its n blocks' node ids), while
 * held sets are prefixes of chains (else held_ok stays unset). */
void kvp_load_held_all(struct kvp_router *r, const uint32_t *ids, size_t n);
/* Blocks of the decision's request (ids, n blocks) that candidate c's
 * active requests do not hold already. */
uint64_t kvp_load_new_blocks(const struct kvp_router *r, uint32_t c,
                             const uint32_t *ids, size_t n);
/* The request the decision just committed: its slot and generation; its
 * session binding (slot + 1). */
void kvp_load_added(const struct kvp_router *r, uint32_t *slot, uint64_t *gen);
void kvp_load_bind_session(struct kvp_router *r, uint32_t sess);
/* 1 while slot holds the active request of generation gen. */
int kvp_load_live(const struct kvp_router *r, uint32_t slot, uint64_t gen);
/* Slot's prefill is done: its tokens leave the candidate's prefill. */
void kvp_load_prefilled(struct kvp_router *r, uint32_t slot);
/* The request of generation gen in slot: 0 gone, 1 active, 2 active with
 * its prefill done. */
int kvp_load_state(const struct kvp_router *r, uint32_t slot, uint64_t gen);
/* How many releases and prefills there have been (a change says a
 * request's state may have moved). */
uint64_t kvp_load_changes(const struct kvp_router *r);
/* Debug builds (KVP_DEBUG): asserts the load's invariants. */
void kvp_load_check(const struct kvp_router *r);

#endif
