/* SPDX-License-Identifier: MIT */
/*
 * route_view.h — the router as a layer above sees it (the policy lab,
 * lib/lab/): the hooks it installs, and a narrow view of the router's
 * state: candidates by index (dense, never reused), this decision's
 * request, the index, and the active request a decision just committed.
 * Nothing else of struct kvp_router is reachable from above.
 *
 * Hooks (as libarchive's formats register their callbacks): the router
 * calls them at fixed points of each decision, and never names the lab.
 *   begin   the clock moved to this decision's request (route_begin)
 *   pick    picks instead of the router's own draw and pick; NULL: the
 *           router's (kvp_view_pick)
 *   commit  after the chosen candidate's load is recorded
 *   fini    when the router is freed (it owns ctx from then on)
 * Any may be NULL. Without hooks the router is Dynamo's: dec->policy
 * "dynamo".
 */
#ifndef KVP_ROUTE_VIEW_H
#define KVP_ROUTE_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "route/index.h"
#include "route/router.h"

struct kvp_route_hooks {
	void (*begin)(void *ctx, struct kvp_router *r,
	              struct kvp_decision *dec);
	int (*pick)(void *ctx, struct kvp_router *r,
	            const struct kvp_request *q, const uint64_t *seq,
	            struct kvp_decision *dec);
	int (*commit)(void *ctx, struct kvp_router *r, uint32_t ci,
	              const struct kvp_request *q, const uint64_t *seq,
	              const struct kvp_decision *dec);
	void (*fini)(void *ctx);
};

/* Installs h with ctx (one set per router; a second call replaces the
 * first, whose fini is not called). reads_seq: pick or commit read the
 * request's sequence hashes (the router then writes the ones it owes
 * before they run). */
void kvp_view_set_hooks(struct kvp_router *r, const struct kvp_route_hooks *h,
                        void *ctx, int reads_seq);
/* The ctx installed with h, or NULL when r's hooks are not h. */
void *kvp_view_hooks_ctx(const struct kvp_router *r,
                         const struct kvp_route_hooks *h);

/* ---- candidates (index ci < kvp_view_ncands) ----------------------------- */
size_t kvp_view_ncands(const struct kvp_router *r);
int kvp_view_live(const struct kvp_router *r, uint32_t ci);
uint64_t kvp_view_worker(const struct kvp_router *r, uint32_t ci);
uint32_t kvp_view_rank(const struct kvp_router *r, uint32_t ci);
/* its active blocks, with a `load` record's decode baseline */
uint64_t kvp_view_blocks(const struct kvp_router *r, uint32_t ci);
uint64_t kvp_view_requests(const struct kvp_router *r, uint32_t ci);
uint64_t kvp_view_routed(const struct kvp_router *r, uint32_t ci);
/* The candidate of a scored entry of this decision (dec->cand[i]). */
uint32_t kvp_view_cand(const struct kvp_router *r,
                       const struct kvp_cand_score *s);
/* The k-th live candidate in (worker_id, dp_rank) order, or -1. */
int64_t kvp_view_nth(struct kvp_router *r, size_t k);

/* ---- this decision --------------------------------------------------------
 */
/* XXH3_64 of the request's id (the PRNG's per-request seed). */
uint64_t kvp_view_qhash(const struct kvp_router *r);
/* The router's clock: the latest request timestamp seen (ms). */
uint64_t kvp_view_now(const struct kvp_router *r);
/* The router's own draw and pick (Dynamo's), over dec->cand. */
void kvp_view_pick(struct kvp_router *r, const struct kvp_request *q,
                   struct kvp_decision *dec);
/* The router's index (a bounded cache keeps it in step). */
struct kvp_index *kvp_view_index(struct kvp_router *r);

/* ---- active requests ------------------------------------------------------
 */
/* The slot and generation of the request the decision just committed. */
void kvp_view_added(const struct kvp_router *r, uint32_t *slot, uint64_t *gen);
/* 1 while slot holds the active request of generation gen. */
int kvp_view_req_live(const struct kvp_router *r, uint32_t slot, uint64_t gen);
/* Its prefill is done (its tokens leave the candidate's prefill load). */
void kvp_view_req_prefilled(struct kvp_router *r, uint32_t slot);
/* It ends (as a free record would end it). */
void kvp_view_req_release(struct kvp_router *r, uint32_t slot);
/* 0: gone; 1: active; 2: active, its prefill done. */
int kvp_view_req_state(const struct kvp_router *r, uint32_t slot, uint64_t gen);
/* Grows with every release and prefill (poll the states on a change). */
uint64_t kvp_view_req_changes(const struct kvp_router *r);

#endif
