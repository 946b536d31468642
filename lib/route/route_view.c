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
	r->hk.h = h;
	r->hk.ctx = ctx;
	r->hk.seq = reads_seq;
}

void *
kvp_view_hooks_ctx(const struct kvp_router *r, const struct kvp_route_hooks *h)
{
	return r->hk.h == h ? r->hk.ctx : NULL;
}

size_t
kvp_view_ncands(const struct kvp_router *r)
{
	return kvp_cands_count(&r->cd);
}

int
kvp_view_live(const struct kvp_router *r, uint32_t ci)
{
	return kvp_cands_at_c(&r->cd, ci)->live;
}

uint64_t
kvp_view_worker(const struct kvp_router *r, uint32_t ci)
{
	return kvp_cands_at_c(&r->cd, ci)->worker_id;
}

uint32_t
kvp_view_rank(const struct kvp_router *r, uint32_t ci)
{
	return kvp_cands_at_c(&r->cd, ci)->dp_rank;
}

uint64_t
kvp_view_blocks(const struct kvp_router *r, uint32_t ci)
{
	const struct kvp_cand *c = kvp_cands_at_c(&r->cd, ci);

	return c->active_blocks + c->ext_decode;
}

uint64_t
kvp_view_requests(const struct kvp_router *r, uint32_t ci)
{
	return kvp_cands_at_c(&r->cd, ci)->active_requests;
}

uint64_t
kvp_view_routed(const struct kvp_router *r, uint32_t ci)
{
	return kvp_cands_at_c(&r->cd, ci)->routed;
}

uint32_t
kvp_view_cand(const struct kvp_router *r, const struct kvp_cand_score *s)
{
	return (uint32_t)kvp_cands_find(&r->cd, s->worker_id, s->dp_rank);
}

int64_t
kvp_view_nth(struct kvp_router *r, size_t k)
{
	size_t n;
	const uint32_t *order = kvp_cands_sorted(&r->cd, &n);

	if (order == NULL || k >= n)
		return -1;
	return order[k];
}

uint64_t
kvp_view_qhash(const struct kvp_router *r)
{
	return kvp_scratch_qhash(&r->sc);
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
	kvp_load_added(r, slot, gen);
}

int
kvp_view_req_live(const struct kvp_router *r, uint32_t slot, uint64_t gen)
{
	return kvp_load_live(r, slot, gen);
}

void
kvp_view_req_prefilled(struct kvp_router *r, uint32_t slot)
{
	kvp_load_prefilled(r, slot);
}

void
kvp_view_req_release(struct kvp_router *r, uint32_t slot)
{
	kvp_load_release(r, slot);
}

int
kvp_view_req_state(const struct kvp_router *r, uint32_t slot, uint64_t gen)
{
	return kvp_load_state(r, slot, gen);
}

uint64_t
kvp_view_req_changes(const struct kvp_router *r)
{
	return kvp_load_changes(r);
}
