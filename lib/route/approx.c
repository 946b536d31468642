/* SPDX-License-Identifier: MIT */
/*
 * approx.c — approximate mode (Dynamo's ApproxKvIndexer): with no events,
 * the chosen worker is assumed to cache the request's blocks for ttl_ms;
 * the table of assumed (holder, block) pairs is pruned to 80 % when it
 * outgrows approx_max. Expiry runs off request timestamps (r->now).
 * See route_internal.h.
 */
#include <string.h>

#include "common/kmap.h"
#include "common/util.h"
#include "route/index.h"
#include "route/route_internal.h"
#include "route/router.h"

static void
ttl_drop(struct kvp_router *r, uint32_t holder, uint64_t seq)
{
	uint32_t v = kvp_kmap_del(&r->ttl, holder, seq);
	size_t unknown;

	if (v == 0)
		return;
	if (kvp_grow(&r->slabfree, &r->capslabfree, r->nslabfree + 1,
	             sizeof(*r->slabfree)) == 0)
		r->slabfree[r->nslabfree++] = v - 1;
	(void)kvp_index_remove(r->ix, holder, &seq, 1, &unknown);
}

/* Pops queue entries: expired ones (exp <= now), or any while the table
 * is over its cap (then down to 80 %). */
void
kvp_approx_expire(struct kvp_router *r)
{
	uint64_t target = r->o.approx_max - r->o.approx_max / 5;
	int pruning = r->ttl.n > r->o.approx_max;

	while (r->qhead < r->qtail) {
		struct kvp_ttl_ent *e = &r->q[r->qhead];
		uint32_t v;
		int valid;

		if (pruning && r->ttl.n <= target)
			pruning = 0;
		if (!pruning && (r->o.ttl_ms == 0 || e->exp > r->now))
			break;
		v = kvp_kmap_get(&r->ttl, e->holder, e->seq);
		valid = v != 0 && r->slab[v - 1] == e->exp;
		if (valid) {
			ttl_drop(r, e->holder, e->seq);
			if (pruning)
				r->st.approx_pruned++;
			else
				r->st.approx_expired++;
		}
		r->qhead++;
	}
	if (r->qhead == r->qtail)
		r->qhead = r->qtail = 0;
}

static int
queue_push(struct kvp_router *r, uint32_t holder, uint64_t seq, uint64_t exp)
{
	if (r->qtail == r->qcap && r->qhead > 0) {
		memmove(r->q, r->q + r->qhead,
		        (r->qtail - r->qhead) * sizeof(*r->q));
		r->qtail -= r->qhead;
		r->qhead = 0;
	}
	if (kvp_grow(&r->q, &r->qcap, r->qtail + 1, sizeof(*r->q)) != 0)
		return -1;
	r->q[r->qtail++] = (struct kvp_ttl_ent){exp, seq, holder};
	return 0;
}

/* (holder, seq) now expires at exp. */
static int
ttl_touch(struct kvp_router *r, uint32_t holder, uint64_t seq, uint64_t exp)
{
	uint32_t s, *v;
	int ins;

	if (r->nslabfree > 0) {
		s = r->slabfree[r->nslabfree - 1];
	} else {
		if (kvp_grow(&r->slab, &r->capslab, r->nslab + 1,
		             sizeof(*r->slab)) != 0)
			return -1;
		s = (uint32_t)r->nslab;
	}
	v = kvp_kmap_upsert(&r->ttl, holder, seq, s + 1, &ins);
	if (v == NULL)
		return -1;
	if (ins) {
		if (r->nslabfree > 0)
			r->nslabfree--;
		else
			r->nslab++;
	}
	if (!ins && r->slab[*v - 1] == exp)
		return 0; /* same expiry: its queue entry stands */
	r->slab[*v - 1] = exp;
	return queue_push(r, holder, seq, exp);
}

int
kvp_approx_record(struct kvp_router *r, uint32_t c, const struct kvp_request *q,
                  const uint64_t *seq)
{
	const struct kvp_cand *cd = &r->cands[c];
	int64_t h = kvp_index_holder(r->ix, cd->worker_id, cd->dp_rank,
	                             KVP_TIER_DEVICE, 1);
	uint64_t exp = r->now + r->o.ttl_ms;
	size_t added;
	int st;

	if (h < 0)
		return -1;
	st = kvp_index_store(r->ix, (uint32_t)h, 0, 0, seq, q->local, q->n,
	                     &added);
	if (st == KVP_STORE_NOMEM)
		return -1;
	if (st != KVP_STORE_OK && st != KVP_STORE_DUPLICATE)
		return 0; /* e.g. repeated hashes within the request */
	for (size_t i = 0; i < q->n; i++)
		if (ttl_touch(r, (uint32_t)h, seq[i], exp) != 0)
			return -1;
	kvp_approx_expire(r); /* size pruning */
	return 0;
}
