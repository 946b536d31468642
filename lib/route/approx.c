/* SPDX-License-Identifier: MIT */
/*
 * approx.c — a TTL-fed index (Dynamo's ApproxKvIndexer): the chosen worker
 * is assumed to cache the request's blocks for ttl_ms; the table of
 * assumed (holder, block) pairs is pruned to 80 % when it outgrows max.
 * Expiry runs off request timestamps. Used for approximate mode (over the
 * router's own index) and for predict-on-route's side index (its own
 * index, whose overlap is max-ed with the event-fed one per worker).
 * See route_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "common/kmap.h"
#include "common/util.h"
#include "route/index.h"
#include "route/route_internal.h"
#include "route/router.h"

void
kvp_approx_init(struct kvp_approx *a, struct kvp_index *ix, uint64_t ttl_ms,
                uint64_t max, uint64_t *expired, uint64_t *pruned)
{
	memset(a, 0, sizeof(*a));
	a->ix = ix;
	a->ttl_ms = ttl_ms;
	a->max = max;
	a->expired = expired;
	a->pruned = pruned;
	kvp_kmap_init_sparse(&a->ttl); /* probed per block */
}

void
kvp_approx_fini(struct kvp_approx *a)
{
	free(a->slab);
	free(a->slabfree);
	free(a->q);
	kvp_kmap_fini(&a->ttl);
}

static void
ttl_drop(struct kvp_approx *a, uint32_t holder, uint64_t seq)
{
	uint32_t v = kvp_kmap_del(&a->ttl, holder, seq);
	size_t unknown;

	if (v == 0)
		return;
	if (kvp_grow(&a->slabfree, &a->capslabfree, a->nslabfree + 1,
	             sizeof(*a->slabfree)) == 0)
		a->slabfree[a->nslabfree++] = v - 1;
	(void)kvp_index_remove(a->ix, holder, &seq, 1, &unknown);
}

/* Pops queue entries: expired ones (exp <= now), or any while the table
 * is over its cap (then down to 80 %). */
void
kvp_approx_expire(struct kvp_approx *a, uint64_t now)
{
	uint64_t target = a->max - a->max / 5;
	int pruning = a->ttl.n > a->max;

	while (a->qhead < a->qtail) {
		struct kvp_ttl_ent *e = &a->q[a->qhead];
		uint32_t v;
		int valid;

		if (pruning && a->ttl.n <= target)
			pruning = 0;
		if (!pruning && (a->ttl_ms == 0 || e->exp > now))
			break;
		v = kvp_kmap_get(&a->ttl, e->holder, e->seq);
		valid = v != 0 && a->slab[v - 1] == e->exp;
		if (valid) {
			ttl_drop(a, e->holder, e->seq);
			if (pruning)
				(*a->pruned)++;
			else
				(*a->expired)++;
		}
		a->qhead++;
	}
	if (a->qhead == a->qtail)
		a->qhead = a->qtail = 0;
}

static int
queue_push(struct kvp_approx *a, uint32_t holder, uint64_t seq, uint64_t exp)
{
	if (a->qtail == a->qcap && a->qhead > 0) {
		memmove(a->q, a->q + a->qhead,
		        (a->qtail - a->qhead) * sizeof(*a->q));
		a->qtail -= a->qhead;
		a->qhead = 0;
	}
	if (kvp_grow(&a->q, &a->qcap, a->qtail + 1, sizeof(*a->q)) != 0)
		return -1;
	a->q[a->qtail++] = (struct kvp_ttl_ent){exp, seq, holder};
	return 0;
}

/* (holder, seq) now expires at exp. */
static int
ttl_touch(struct kvp_approx *a, uint32_t holder, uint64_t seq, uint64_t exp)
{
	uint32_t s, *v;
	int ins;

	if (a->nslabfree > 0) {
		s = a->slabfree[a->nslabfree - 1];
	} else {
		if (kvp_grow(&a->slab, &a->capslab, a->nslab + 1,
		             sizeof(*a->slab)) != 0)
			return -1;
		s = (uint32_t)a->nslab;
	}
	v = kvp_kmap_upsert(&a->ttl, holder, seq, s + 1, &ins);
	if (v == NULL)
		return -1;
	if (ins) {
		if (a->nslabfree > 0)
			a->nslabfree--;
		else
			a->nslab++;
	}
	if (!ins && a->slab[*v - 1] == exp)
		return 0; /* same expiry: its queue entry stands */
	a->slab[*v - 1] = exp;
	return queue_push(a, holder, seq, exp);
}

int
kvp_approx_record(struct kvp_approx *a, uint64_t w, uint32_t rank,
                  const struct kvp_request *q, const uint64_t *seq,
                  uint64_t now)
{
	int64_t h = kvp_index_holder(a->ix, w, rank, KVP_TIER_DEVICE, 1);
	uint64_t exp = now + a->ttl_ms;
	size_t added;
	int st;

	if (h < 0)
		return -1;
	st = kvp_index_store(a->ix, (uint32_t)h, 0, 0, seq, q->local, q->n,
	                     &added);
	if (st == KVP_STORE_NOMEM)
		return -1;
	if (st != KVP_STORE_OK && st != KVP_STORE_DUPLICATE)
		return 0; /* e.g. repeated hashes within the request */
	for (size_t i = 0; i < q->n; i++)
		if (ttl_touch(a, (uint32_t)h, seq[i], exp) != 0)
			return -1;
	kvp_approx_expire(a, now); /* size pruning */
	return 0;
}

uint32_t
kvp_side_overlap(const struct kvp_router *r, const struct kvp_cand *c)
{
	int64_t h = kvp_index_holder(r->side->ix, c->worker_id, c->dp_rank,
	                             KVP_TIER_DEVICE, 0);

	return h >= 0 ? r->side_scores[h] : 0;
}
