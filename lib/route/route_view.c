/* SPDX-License-Identifier: MIT */
/*
 * route_view.c — the router's hooks and the narrow view a layer above
 * reads (route_view.h): the one file of lib/route/ that serves lib/lab/.
 */
#include "route/route_view.h"

#include "route/route_internal.h"

void
kvp_view_set_hooks(struct kvp_router *r, const struct kvp_route_hooks *h,
                   void *ctx, int reads_seq)
{
	r->hk = h;
	r->hctx = ctx;
	r->hk_seq = reads_seq;
}

void *
kvp_view_hooks_ctx(const struct kvp_router *r, const struct kvp_route_hooks *h)
{
	return r->hk == h ? r->hctx : NULL;
}

size_t
kvp_view_ncands(const struct kvp_router *r)
{
	return r->ncands;
}

int
kvp_view_live(const struct kvp_router *r, uint32_t ci)
{
	return r->cands[ci].live;
}

uint64_t
kvp_view_worker(const struct kvp_router *r, uint32_t ci)
{
	return r->cands[ci].worker_id;
}

uint32_t
kvp_view_rank(const struct kvp_router *r, uint32_t ci)
{
	return r->cands[ci].dp_rank;
}

uint64_t
kvp_view_blocks(const struct kvp_router *r, uint32_t ci)
{
	return r->cands[ci].active_blocks + r->cands[ci].ext_decode;
}

uint64_t
kvp_view_requests(const struct kvp_router *r, uint32_t ci)
{
	return r->cands[ci].active_requests;
}

uint64_t
kvp_view_routed(const struct kvp_router *r, uint32_t ci)
{
	return r->cands[ci].routed;
}

uint32_t
kvp_view_cand(const struct kvp_router *r, const struct kvp_cand_score *s)
{
	return (uint32_t)kvp_router_cand_find(r, s->worker_id, s->dp_rank);
}

int64_t
kvp_view_nth(struct kvp_router *r, size_t k)
{
	(void)kvp_router_totals(r, NULL, 0); /* sorts r->order */
	if (r->order_dirty || k >= r->norder)
		return -1;
	return r->order[k];
}

uint64_t
kvp_view_qhash(const struct kvp_router *r)
{
	return r->qhash;
}

uint64_t
kvp_view_now(const struct kvp_router *r)
{
	return r->now;
}

void
kvp_view_pick(struct kvp_router *r, const struct kvp_request *q,
              struct kvp_decision *dec)
{
	kvp_score_pick(r, q, dec);
}

struct kvp_index *
kvp_view_index(struct kvp_router *r)
{
	return r->ix;
}

void
kvp_view_added(const struct kvp_router *r, uint32_t *slot, uint64_t *gen)
{
	*slot = r->added;
	*gen = r->reqs[r->added].gen;
}

int
kvp_view_req_live(const struct kvp_router *r, uint32_t slot, uint64_t gen)
{
	return r->reqs[slot].live && r->reqs[slot].gen == gen;
}

void
kvp_view_req_prefilled(struct kvp_router *r, uint32_t slot)
{
	struct kvp_active_req *a = &r->reqs[slot];

	if (!a->prefill_done) {
		r->cands[a->cand].active_prefill -= a->prefill;
		a->prefill_done = 1;
	}
}

void
kvp_view_req_release(struct kvp_router *r, uint32_t slot)
{
	kvp_load_release(r, slot);
}
