/* SPDX-License-Identifier: MIT */
/*
 * route_internal.h — private to lib/route/ (never included elsewhere): the
 * router, a composition of sub-states each owned by its own files, and
 * the functions of the decision that its files call in each other.
 *
 *   member   header      owner (the only files that reach its fields)
 *   cd       cands.h     cands.c       candidates
 *   cur      (below)     event_apply.c event-id cursors
 *   nodes    nodes.h     nodes.c       the block table
 *   ld       load.h      load.c        held blocks, per-candidate load
 *   rq       reqs.h      reqs.c        active requests
 *   ap, side approx.h    approx.c      approximate mode, predict-on-route
 *   ss       session.h   session.c     session affinity
 *   sc       scratch.h   scratch.c, router.c, score.c   the decision's
 *   hk       route_view.h route_view.c the hooks a layer above installed
 * The router-wide fields (o, ix, ar, st, now, oom) are read by all and
 * written by the decision, the event path and the clock. Other files pass
 * a member's address to its owner's functions; tests/lint/owners.sh checks
 * that no file reaches a member's fields but its owners.
 *
 * Call order (no cycle, tests/lint/call-cycles.sh): router.c calls
 * score.c, load.c, session.c, approx.c, cands.c, scratch.c, nodes.c;
 * load.c calls reqs.c, session.c, scratch.c, cands.c, nodes.c;
 * event_apply.c calls cands.c and approx.c; route_view.c calls the rest.
 */
#ifndef KVP_ROUTE_INTERNAL_H
#define KVP_ROUTE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"
#include "route/approx.h"
#include "route/cands.h"
#include "route/index.h"
#include "route/load.h"
#include "route/nodes.h"
#include "route/reqs.h"
#include "route/router.h"
#include "route/scratch.h"
#include "route/session.h"

struct kvp_cursor { /* last applied event_id of one (worker, rank) */
	uint64_t last;
	int has;
};

struct kvp_cursors { /* event_apply.c */
	struct kvp_cursor *v;
	size_t n, cap;
	struct kvp_kmap map; /* (rank, worker) → cursor + 1 */
};

struct kvp_route_hooks; /* route_view.h */

struct kvp_hooks_slot {                  /* route_view.c */
	const struct kvp_route_hooks *h; /* NULL: none */
	void *ctx;
	int seq; /* they read the request's sequence hashes */
};

struct kvp_router {
	struct kvp_route_opts o;
	struct kvp_index *ix;
	struct kvp_route_stats st;
	uint64_t now;         /* latest request timestamp seen (ms) */
	struct kvp_arena *ar; /* the sub-states' big tables (bigmem.h) */
	int oom; /* an allocation failed where none could be reported (the
	            next decision reports it) */

	struct kvp_cands cd;
	struct kvp_cursors cur;
	struct kvp_nodes nodes;
	struct kvp_load ld;
	struct kvp_reqs rq;
	struct kvp_approx ap;
	struct kvp_approx *side; /* NULL: off */
	struct kvp_sessions ss;
	struct kvp_scratch sc;
	struct kvp_hooks_slot hk;
};

/* event_apply.c: the cursors. */
void kvp_cursors_init(struct kvp_cursors *cu);
void kvp_cursors_fini(struct kvp_cursors *cu);
/* (w, rank)'s cursor goes (its worker was removed). */
void kvp_cursors_forget(struct kvp_cursors *cu, uint64_t w, uint32_t rank);

/* score.c: scores candidate ci for request q with overlap weight w, from
 * r->sc.scores and r->sc.ids (kvp_index_match() already run). */
void kvp_score_candidate(const struct kvp_router *r, uint32_t ci,
                         const struct kvp_request *q, double w,
                         struct kvp_cand_score *s);
/* score.c: the draw (when T > 0 or the tie-break is random), the
 * max-overlap candidate and the chosen one, over r->sc.cs[0..dec->ncand). */
void kvp_score_pick(struct kvp_router *r, const struct kvp_request *q,
                    struct kvp_decision *dec);
/* score.c: candidate c's overlap on a tier (the device tier's is the max
 * with the side index's, when predict-on-route is on). */
uint32_t kvp_score_overlap(const struct kvp_router *r, const struct kvp_cand *c,
                           int tier);
/* score.c: candidate c's overlap in the side index (r->sc.side_scores). */
uint32_t kvp_score_side_overlap(const struct kvp_router *r,
                                const struct kvp_cand *c);

/* Debug builds (KVP_DEBUG): every sub-state's invariants (router.c). */
void kvp_router_check(const struct kvp_router *r);

#endif
