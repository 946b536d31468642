/* SPDX-License-Identifier: MIT */
/*
 * approx.c — a TTL-fed index (Dynamo's ApproxKvIndexer): the chosen worker
 * is assumed to cache the request's blocks for ttl_ms; the table of
 * assumed (holder, block) pairs is pruned to 80 % when it outgrows max.
 * Expiry runs off request timestamps. Used for approximate mode (over the
 * router's own index) and for predict-on-route's side index (its own
 * index, whose overlap is max-ed with the event-fed one per worker).
 *
 * The expiry queue holds one run per touch (a request's blocks whose
 * expiry changed), popped a block at a time; a block's table entry names
 * the run of its latest expiry, so older runs skip it. See
 * route_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "common/kmap.h"
#include "common/util.h"
#include "route/index.h"
#include "route/route_internal.h"
#include "route/router.h"

#define NIDS 0xffffffffu /* run ids: 1..NIDS */

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
	a->head_id = 1;
	kvp_kmap_init_sparse(&a->ttl); /* probed per block */
}

void
kvp_approx_fini(struct kvp_approx *a)
{
	free(a->runs);
	free(a->qs);
	kvp_kmap_fini(&a->ttl);
}

/* The id of the run k places after the head. */
static uint32_t
run_id(const struct kvp_approx *a, size_t k)
{
	return (uint32_t)(((uint64_t)a->head_id - 1 + k) % NIDS) + 1;
}

/* The queued run of id. */
static const struct kvp_ttl_run *
run_of(const struct kvp_approx *a, uint32_t id)
{
	return &a->runs[a->rhead + ((uint64_t)id + NIDS - a->head_id) % NIDS];
}

/* Pops the head run's next block: dropped from the index when the run is
 * still its expiry. Returns 1 if it was. */
static int
pop_block(struct kvp_approx *a)
{
	const struct kvp_ttl_run *run = &a->runs[a->rhead];
	uint64_t seq = a->qs[run->off + a->roff++];
	uint32_t *v = kvp_kmap_ref(&a->ttl, run->holder, seq);
	size_t unknown;

	if (v == NULL || *v != a->head_id)
		return 0;
	kvp_kmap_del_ref(&a->ttl, v);
	(void)kvp_index_remove(a->ix, run->holder, &seq, 1, &unknown);
	return 1;
}

/* Pops queued blocks: expired ones (exp <= now), or any while the table
 * is over its cap (then down to 80 %). */
void
kvp_approx_expire(struct kvp_approx *a, uint64_t now)
{
	uint64_t target = a->max - a->max / 5;
	int pruning = a->ttl.n > a->max;

	while (a->rhead < a->rtail) {
		const struct kvp_ttl_run *run = &a->runs[a->rhead];

		if (a->roff == run->n) {
			a->rhead++;
			a->head_id = run_id(a, 1);
			a->roff = 0;
			continue;
		}
		if (pruning && a->ttl.n <= target)
			pruning = 0;
		if (!pruning && (a->ttl_ms == 0 || run->exp > now))
			break;
		if (pop_block(a))
			(*(pruning ? a->pruned : a->expired))++;
	}
	if (a->rhead == a->rtail)
		a->rhead = a->rtail = a->qtail = 0;
}

/* Opens an empty run for holder h expiring at exp; -1 on allocation
 * failure. Queues full at their tail move their live part down first. */
static int
run_open(struct kvp_approx *a, uint32_t h, uint64_t exp, size_t n)
{
	size_t qhead = a->rhead < a->rtail ? a->runs[a->rhead].off : a->qtail;

	if (a->rtail == a->rcap && a->rhead > 0) {
		memmove(a->runs, a->runs + a->rhead,
		        (a->rtail - a->rhead) * sizeof(*a->runs));
		a->rtail -= a->rhead;
		a->rhead = 0;
	}
	if (a->qtail + n > a->qcap && qhead > 0) {
		memmove(a->qs, a->qs + qhead,
		        (a->qtail - qhead) * sizeof(*a->qs));
		a->qtail -= qhead;
		for (size_t i = a->rhead; i < a->rtail; i++)
			a->runs[i].off -= qhead;
	}
	if (kvp_grow(&a->runs, &a->rcap, a->rtail + 1, sizeof(*a->runs)) ||
	    kvp_grow(&a->qs, &a->qcap, a->qtail + n + 1, sizeof(*a->qs)))
		return -1;
	a->runs[a->rtail++] = (struct kvp_ttl_run){exp, a->qtail, 0, h};
	return 0;
}

/* (h, seq[0..n)) now expire at exp: each block whose expiry changes joins
 * a new run. */
static int
ttl_touch(struct kvp_approx *a, uint32_t h, const uint64_t *seq, size_t n,
          uint64_t exp)
{
	uint32_t id = run_id(a, a->rtail - a->rhead);
	struct kvp_ttl_run *run;

	if (run_open(a, h, exp, n) != 0)
		return -1;
	run = &a->runs[a->rtail - 1];
	for (size_t i = 0; i < n; i++) {
		int ins;
		uint32_t *v = kvp_kmap_upsert(&a->ttl, h, seq[i], id, &ins);

		if (v == NULL)
			return -1;
		if (!ins) {
			if (run_of(a, *v)->exp == exp)
				continue; /* same expiry: its run stands */
			*v = id;
		}
		a->qs[a->qtail++] = seq[i];
		run->n++;
	}
	if (run->n == 0)
		a->rtail--;
	return 0;
}

int
kvp_approx_record(struct kvp_approx *a, uint64_t w, uint32_t rank,
                  const struct kvp_request *q, const uint64_t *seq,
                  uint64_t now, uint32_t held)
{
	int64_t h = kvp_index_holder(a->ix, w, rank, KVP_TIER_DEVICE, 1);
	size_t added;
	int st;

	if (h < 0)
		return -1;
	if (q->seq != NULL) /* hashes of its own */
		a->mixed = 1;
	/* The held prefix's steps change nothing while every store came
	 * from its chain (a hash fixes its path): the walk skips them. */
	st = kvp_index_store_from(a->ix, (uint32_t)h, seq, q->local, q->n,
	                          a->mixed ? 0 : held, &added);
	if (st == KVP_STORE_NOMEM)
		return -1;
	if (st != KVP_STORE_OK && st != KVP_STORE_DUPLICATE)
		return 0; /* e.g. repeated hashes within the request */
	if (ttl_touch(a, (uint32_t)h, seq, q->n, now + a->ttl_ms) != 0)
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
