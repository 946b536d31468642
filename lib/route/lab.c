/* SPDX-License-Identifier: MIT */
/*
 * lab.c — the policy lab's hooks into the router (router.c calls them at
 * marked sites): the policy's pick and what it learns, the bounded caches,
 * the stack distances, simulated time, and the run totals the summary
 * reports. See policy.h and route_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "route/policy.h"
#include "route/route_internal.h"
#include "route/router.h"

int
kvp_lab_init(struct kvp_router *r)
{
	const struct kvp_policy_opts *o = &r->o.pol;
	struct kvp_lab *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return -1;
	r->lab = l;
	l->ops = kvp_policy_table[o->policy >= 0 && o->policy < KVP_POLICY_COUNT
	                              ? o->policy
	                              : KVP_POLICY_DYNAMO];
	if (l->ops->init != NULL && l->ops->init(r) != 0)
		return -1;
	if (o->capacity > 0 &&
	    (l->lru = kvp_lru_new(o->capacity, o->emit_events)) == NULL)
		return -1;
	if (o->mrc && (l->mrc = kvp_mrcs_new()) == NULL)
		return -1;
	if ((o->prefill_tps > 0 || o->decode_tps > 0) &&
	    (l->sim = kvp_simtime_new(o->prefill_tps, o->decode_tps)) == NULL)
		return -1;
	return 0;
}

void
kvp_lab_fini(struct kvp_router *r)
{
	struct kvp_lab *l = r->lab;

	if (l == NULL)
		return;
	if (l->ops->fini != NULL)
		l->ops->fini(r);
	kvp_lru_free(l->lru);
	kvp_mrcs_free(l->mrc);
	kvp_simtime_free(l->sim);
	free(l->blk_sum);
	free(l);
	r->lab = NULL;
}

void
kvp_lab_begin(struct kvp_router *r, struct kvp_decision *dec)
{
	dec->policy = r->lab->ops->name;
	if (r->lab->lru != NULL)
		kvp_lru_clear_events(r->lab->lru);
	if (r->lab->sim != NULL)
		kvp_simtime_advance(r, r->lab->sim);
}

int
kvp_lab_reads_seq(const struct kvp_router *r)
{
	const struct kvp_lab *l = r->lab;

	return l->ops != &kvp_policy_dynamo || l->mrc != NULL || l->lru != NULL;
}

int
kvp_lab_pick(struct kvp_router *r, const struct kvp_request *q,
             const uint64_t *seq, struct kvp_decision *dec)
{
	dec->policy = r->lab->ops->name;
	if (q->pinned) { /* every policy honours a pin */
		kvp_score_pick(r, q, dec);
		return 0;
	}
	if (r->lab->ops != &kvp_policy_dynamo)
		dec->temperature = 0; /* only Dynamo's pick samples */
	return r->lab->ops->pick(r, q, seq, dec);
}

/* Active blocks per candidate, summed over decisions (load balance). */
static int
sum_blocks(struct kvp_router *r)
{
	struct kvp_lab *l = r->lab;
	size_t old = l->capblk;

	if (r->ncands > l->capblk) {
		if (kvp_grow(&l->blk_sum, &l->capblk, r->ncands,
		             sizeof(*l->blk_sum)) != 0)
			return -1;
		memset(l->blk_sum + old, 0,
		       (l->capblk - old) * sizeof(*l->blk_sum));
	}
	for (size_t i = 0; i < r->ncands; i++)
		if (r->cands[i].live)
			l->blk_sum[i] +=
			    r->cands[i].active_blocks + r->cands[i].ext_decode;
	return 0;
}

int
kvp_lab_commit(struct kvp_router *r, uint32_t ci, const struct kvp_request *q,
               const uint64_t *seq, const struct kvp_decision *dec)
{
	struct kvp_lab *l = r->lab;

	if (l->ops->commit != NULL && l->ops->commit(r, ci, q, seq) != 0)
		return -1;
	if (l->mrc != NULL && kvp_mrcs_record(l->mrc, ci, seq, q->n) != 0)
		return -1;
	if (l->lru != NULL && kvp_lru_record(r, l->lru, ci, q, seq) != 0)
		return -1;
	if (l->sim != NULL && kvp_simtime_schedule(r, l->sim, ci, q, dec) != 0)
		return -1;
	return sum_blocks(r);
}

const struct kvp_sim_event *
kvp_router_sim_events(struct kvp_router *r, size_t *n)
{
	*n = 0;
	return r->lab->lru != NULL ? kvp_lru_events(r->lab->lru, n) : NULL;
}

/* max / mean of v over the live candidates. */
static double
max_mean(const struct kvp_router *r, const uint64_t *v, size_t nv,
         uint64_t *max)
{
	uint64_t sum = 0, n = 0;

	*max = 0;
	for (size_t i = 0; i < r->ncands; i++) {
		uint64_t x = i < nv ? v[i] : 0;

		if (!r->cands[i].live)
			continue;
		sum += x;
		n++;
		if (x > *max)
			*max = x;
	}
	return sum ? (double)*max / ((double)sum / (double)n) : 0.0;
}

int
kvp_router_lab_totals(struct kvp_router *r, struct kvp_lab_totals *t)
{
	struct kvp_lab *l = r->lab;
	uint64_t *routed = malloc((r->ncands + 1) * sizeof(*routed));

	memset(t, 0, sizeof(*t));
	if (routed == NULL)
		return -1;
	for (size_t i = 0; i < r->ncands; i++)
		routed[i] = r->cands[i].routed;
	t->routed_max_mean = max_mean(r, routed, r->ncands, &t->routed_max);
	free(routed);
	t->blocks_max_mean = max_mean(
	    r, l->blk_sum, l->capblk < r->ncands ? l->capblk : r->ncands,
	    &t->blocks_max);
	if (l->lru != NULL) {
		t->capacity_on = 1;
		t->evictions = kvp_lru_evictions(l->lru);
	}
	if (l->sim != NULL) {
		t->simtime_on = 1;
		kvp_simtime_totals(l->sim, t);
	}
	return 0;
}

int
kvp_router_mrc(struct kvp_router *r, size_t k, struct kvp_mrc *out)
{
	memset(out, 0, sizeof(*out));
	if (r->lab->mrc == NULL)
		return -1;
	if (k == SIZE_MAX) {
		for (size_t i = 0; i < r->ncands; i++)
			if (r->cands[i].live)
				kvp_mrcs_get(r->lab->mrc, (uint32_t)i, out);
		return 0;
	}
	(void)kvp_router_totals(r, NULL, 0); /* sorts r->order */
	if (r->order_dirty || k >= r->norder)
		return -1;
	out->worker_id = r->cands[r->order[k]].worker_id;
	out->dp_rank = r->cands[r->order[k]].dp_rank;
	kvp_mrcs_get(r->lab->mrc, r->order[k], out);
	return 0;
}

const struct kvp_route_opts *
kvp_router_opts(const struct kvp_router *r)
{
	return &r->o;
}
