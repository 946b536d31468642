/* SPDX-License-Identifier: MIT */
/*
 * cands.h — private to lib/route/: the router's candidates (cands.c), one
 * per (worker_id, dp_rank) seen, dense indices never reused (a removed
 * worker's candidate is marked dead and comes back with its next event).
 *
 * cands.c owns struct kvp_cands: the table, its map, the sorted order of
 * the live ones and the cache of their index holder ids. A candidate's
 * record (struct kvp_cand) is a row other concerns fill in, each its own
 * fields: the load counters are load.c's, routed is the decision's
 * (router.c), the rest cands.c's.
 */
#ifndef KVP_ROUTE_CANDS_H
#define KVP_ROUTE_CANDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"
#include "route/index.h"

struct kvp_cand {
	uint64_t worker_id;
	uint32_t dp_rank;
	int live;
	/* load.c's: predicted load, and a `load` record's baseline */
	uint64_t active_prefill, active_blocks;
	uint64_t ext_prefill, ext_decode;
	uint64_t active_requests;
	uint64_t routed; /* router.c's */
	/* index holder ids per tier (device, host, disk), refreshed before
	 * each decision (kvp_cands_refresh): id + 1, 0 while absent */
	uint32_t hid[KVP_TIER_EXTERNAL];
};

struct kvp_cands {
	struct kvp_cand *v;
	size_t n, cap;
	struct kvp_kmap map; /* (rank, worker) → cand + 1 */
	uint32_t *order;     /* live candidates, sorted (kvp_cands_sort) */
	size_t norder;
	int dirty;    /* order is stale */
	size_t hid_n; /* index holders when hid was refreshed */
};

void kvp_cands_init(struct kvp_cands *cd);
void kvp_cands_fini(struct kvp_cands *cd);

static inline struct kvp_cand *
kvp_cands_at(struct kvp_cands *cd, uint32_t ci)
{
	return &cd->v[ci];
}

static inline const struct kvp_cand *
kvp_cands_at_c(const struct kvp_cands *cd, uint32_t ci)
{
	return &cd->v[ci];
}

/* Candidates made so far (live or not). */
static inline size_t
kvp_cands_count(const struct kvp_cands *cd)
{
	return cd->n;
}

/* The candidate of (w, rank), or -1. */
int64_t kvp_cands_find(const struct kvp_cands *cd, uint64_t w, uint32_t rank);
/* The candidate of (w, rank), made or brought back to life: its index, or
 * -1 on allocation failure. */
int64_t kvp_cands_add(struct kvp_cands *cd, uint64_t w, uint32_t rank);
/* Candidate ci leaves (its worker was removed). */
void kvp_cands_kill(struct kvp_cands *cd, uint32_t ci);
/* The live candidates sorted by (worker_id, dp_rank), *n of them; NULL on
 * allocation failure. */
const uint32_t *kvp_cands_sorted(struct kvp_cands *cd, size_t *n);
/* The live candidates. */
size_t kvp_cands_nlive(const struct kvp_cands *cd);
/* Looks up the candidates' holder ids in ix that are still unknown, once
 * ix has new holders or there are new candidates (holder ids are never
 * reused, so a found id stays right). */
void kvp_cands_refresh(struct kvp_cands *cd, struct kvp_index *ix);

#endif
