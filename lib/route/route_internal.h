/* SPDX-License-Identifier: MIT */
/*
 * route_internal.h — private to lib/route/ (never included elsewhere): the
 * router's state, shared by the modules that implement router.h, and the
 * functions they call in each other.
 *
 *   router.c       state, candidates, the decision (kvp_router_route)
 *   score.c        one candidate's score; the draw and the pick
 *   load.c         active requests: the router's own load prediction
 *   event_apply.c  events and event-id cursors
 *   approx.c       approximate (TTL) mode
 *
 * Candidates are dense indices into r->cands, never reused (a removed
 * worker's candidates are marked dead and come back on the next event).
 */
#ifndef KVP_ROUTE_INTERNAL_H
#define KVP_ROUTE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"
#include "route/index.h"
#include "route/router.h"

struct kvp_cand {
	uint64_t worker_id;
	uint32_t dp_rank;
	int live;
	uint64_t active_prefill, active_blocks;
	uint64_t ext_prefill, ext_decode; /* a `load` record's baseline */
	uint64_t routed, active_requests;
};

struct kvp_cursor { /* last applied event_id of one (worker, rank) */
	uint64_t last;
	int has;
};

struct kvp_active_req {
	uint64_t idhash;
	uint64_t gen; /* distinguishes reuses of the slot */
	uint32_t cand;
	int live;
	int prefill_done;
	uint64_t prefill;
	uint64_t *seqs;
	size_t n;
};

struct kvp_req_exp { /* request expiry queue */
	uint64_t at;
	uint64_t gen;
	uint32_t slot;
};

struct kvp_ttl_ent { /* approx-mode expiry queue */
	uint64_t exp;
	uint64_t seq;
	uint32_t holder;
};

struct kvp_router {
	struct kvp_route_opts o;
	struct kvp_index *ix;
	struct kvp_route_stats st;
	uint64_t now; /* latest request timestamp seen (ms) */

	/* candidates (router.c) */
	struct kvp_cand *cands;
	size_t ncands, capcands;
	struct kvp_kmap cmap; /* (rank, worker) → cand + 1 */
	uint32_t *order;      /* live candidates, sorted */
	size_t norder;
	int order_dirty;

	/* event-id cursors (event_apply.c) */
	struct kvp_cursor *curs;
	size_t ncurs, capcurs;
	struct kvp_kmap curmap; /* (rank, worker) → cursor + 1 */

	/* active requests (load.c) */
	struct kvp_kmap load; /* (cand, seq) → refcount */
	struct kvp_active_req *reqs;
	size_t nreqs, capreqs;
	uint32_t *reqfree;
	size_t nreqfree, capreqfree;
	struct kvp_kmap reqmap; /* (0, xxh3(id)) → req + 1 */
	uint64_t unique;        /* no_assume_reuse hash source */
	uint64_t gen;
	struct kvp_req_exp *eq;
	size_t eqhead, eqtail, eqcap;
	uint64_t held_blocks;   /* blocks of the live active requests */
	size_t nlive;           /* live active requests */
	struct kvp_req_exp *aq; /* routing order, for max_active_blocks */
	size_t aqhead, aqtail, aqcap;

	/* approximate mode (approx.c) */
	struct kvp_kmap ttl; /* (holder, seq) → slab + 1 */
	uint64_t *slab;
	size_t nslab, capslab;
	uint32_t *slabfree;
	size_t nslabfree, capslabfree;
	struct kvp_ttl_ent *q;
	size_t qhead, qtail, qcap;

	/* per-decision scratch (router.c, score.c) */
	uint32_t *scores; /* per holder: kvp_index_match() */
	size_t capscores;
	struct kvp_cand_score *cs;
	size_t capcs;
	double *lg, *pr;
	size_t caplg, cappr;
	uint64_t *seqbuf;
	size_t capseq;
};

/* router.c: the candidate of (w, rank), or -1. */
int64_t kvp_router_cand_find(const struct kvp_router *r, uint64_t w,
                             uint32_t rank);

/* score.c: scores candidate ci for request q (seq: its sequence hashes)
 * with overlap weight w, from r->scores (kvp_index_match() already run). */
void kvp_score_candidate(const struct kvp_router *r, uint32_t ci,
                         const struct kvp_request *q, const uint64_t *seq,
                         double w, struct kvp_cand_score *s);
/* score.c: the draw (when T > 0 or the tie-break is random), the
 * max-overlap candidate and the chosen one, over r->cs[0..dec->ncand). */
void kvp_score_pick(struct kvp_router *r, const struct kvp_request *q,
                    struct kvp_decision *dec);

/* load.c: records request q as active on candidate c with prefill tokens
 * and its sequence hashes; *dup is set when an active request with the
 * same id was released first. 0, or -1 on allocation failure. */
int kvp_load_add(struct kvp_router *r, uint32_t c, const struct kvp_request *q,
                 uint64_t prefill, const uint64_t *seq, int *dup);
/* load.c: releases the active request in slot. */
void kvp_load_release(struct kvp_router *r, uint32_t slot);
/* load.c: releases requests routed request_expiry_ms or more before now. */
void kvp_load_expire(struct kvp_router *r);
/* load.c: blocks of seq[0..n) that candidate c's active requests do not
 * hold already. */
uint64_t kvp_load_new_blocks(const struct kvp_router *r, uint32_t c,
                             const uint64_t *seq, size_t n);

/* approx.c: drops expired entries (and prunes over the size cap). */
void kvp_approx_expire(struct kvp_router *r);
/* approx.c: candidate c is assumed to cache request q's blocks. 0, or -1
 * on allocation failure. */
int kvp_approx_record(struct kvp_router *r, uint32_t c,
                      const struct kvp_request *q, const uint64_t *seq);

#endif
