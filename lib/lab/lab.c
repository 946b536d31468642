/* SPDX-License-Identifier: MIT */
/*
 * lab.c — the policy lab's hooks into the router (route_view.h: the
 * router calls them at fixed points of each decision): the policy's pick
 * and what it learns, the bounded caches, the stack distances, simulated
 * time, and the run totals the summary reports. See lab.h.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "lab/lab_internal.h"
#include "route/route_view.h"

static void lab_free(void *ctx);
static void lab_begin(void *ctx, struct kvp_router *r,
                      struct kvp_decision *dec);
static int lab_pick(void *ctx, struct kvp_router *r,
                    const struct kvp_request *q, const uint64_t *seq,
                    struct kvp_decision *dec);
static int lab_commit(void *ctx, struct kvp_router *r, uint32_t ci,
                      const struct kvp_request *q, const uint64_t *seq,
                      const struct kvp_decision *dec);

static const struct kvp_route_hooks lab_hooks = {lab_begin, lab_pick,
                                                 lab_commit, lab_free};

static struct kvp_lab *
lab_of(const struct kvp_router *r)
{
	return kvp_view_hooks_ctx(r, &lab_hooks);
}

static int
lab_init(struct kvp_lab *l, const struct kvp_policy_opts *o)
{
	l->o = *o;
	l->ops = kvp_policy_table[o->policy >= 0 && o->policy < KVP_POLICY_COUNT
	                              ? o->policy
	                              : KVP_POLICY_DYNAMO];
	if (l->ops->init != NULL && l->ops->init(l) != 0)
		return -1;
	if (o->capacity > 0 &&
	    (l->lru = kvp_lru_new(o->capacity, o->emit_events)) == NULL)
		return -1;
	if (o->mrc && (l->mrc = kvp_mrcs_new()) == NULL)
		return -1;
	if ((o->prefill_tps > 0 || o->decode_tps > 0) &&
	    (l->sim = kvp_simtime_new(o->prefill_tps, o->decode_tps)) == NULL)
		return -1;
	if (o->engine_model != KVP_ENGINE_NONE &&
	    (l->eng = kvp_engine_new(o->engine_model, o->engine_capacity,
	                             o->host_capacity, o->block_size)) == NULL)
		return -1;
	return 0;
}

int
kvp_lab_attach(struct kvp_router *r, const struct kvp_policy_opts *o)
{
	struct kvp_lab *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return -1;
	if (lab_init(l, o) != 0) {
		lab_free(l);
		return -1;
	}
	/* Dynamo's policy alone, without capacity or curves, does not read
	 * the request's sequence hashes */
	kvp_view_set_hooks(r, &lab_hooks, l,
	                   l->ops != &kvp_policy_dynamo || l->mrc != NULL ||
	                       l->lru != NULL || l->eng != NULL);
	return 0;
}

const struct kvp_policy_opts *
kvp_lab_opts(const struct kvp_router *r)
{
	const struct kvp_lab *l = lab_of(r);

	return l != NULL ? &l->o : NULL;
}

static void
lab_free(void *ctx)
{
	struct kvp_lab *l = ctx;

	if (l == NULL)
		return;
	if (l->ops != NULL && l->ops->fini != NULL)
		l->ops->fini(l);
	kvp_lru_free(l->lru);
	kvp_mrcs_free(l->mrc);
	kvp_simtime_free(l->sim);
	kvp_engine_free(l->eng);
	free(l->blk_sum);
	free(l);
}

static void
lab_begin(void *ctx, struct kvp_router *r, struct kvp_decision *dec)
{
	struct kvp_lab *l = ctx;

	dec->policy = l->ops->name;
	if (l->lru != NULL)
		kvp_lru_clear_events(l->lru);
	if (l->sim != NULL)
		kvp_simtime_advance(r, l->sim);
	if (l->eng != NULL) /* after simulated time: its prefills, its ends */
		kvp_engine_poll(l->eng, r);
}

/* The engine model's prediction for the chosen candidate (it reads the
 * engine's caches only, never a figure the request brings). */
static int
predict(struct kvp_lab *l, struct kvp_router *r, const struct kvp_request *q,
        const uint64_t *seq, struct kvp_decision *dec)
{
	if (l->eng == NULL || dec->chosen < 0)
		return 0;
	if (kvp_engine_oom(l->eng))
		return -1;
	dec->has_predicted = 1;
	dec->predicted_cached_tokens = kvp_engine_predict(
	    l->eng, kvp_view_cand(r, &dec->cand[dec->chosen]), q, seq);
	return 0;
}

static int
lab_pick(void *ctx, struct kvp_router *r, const struct kvp_request *q,
         const uint64_t *seq, struct kvp_decision *dec)
{
	struct kvp_lab *l = ctx;

	dec->policy = l->ops->name;
	if (q->pinned) { /* every policy honours a pin */
		kvp_view_pick(r, q, dec);
		return predict(l, r, q, seq, dec);
	}
	if (l->ops != &kvp_policy_dynamo)
		dec->temperature = 0; /* only Dynamo's pick samples */
	if (l->ops->pick(l, r, q, seq, dec) != 0)
		return -1;
	return predict(l, r, q, seq, dec);
}

/* Active blocks per candidate, summed over decisions (load balance). */
static int
sum_blocks(struct kvp_lab *l, const struct kvp_router *r)
{
	size_t old = l->capblk, n = kvp_view_ncands(r);

	if (n > l->capblk) {
		if (kvp_grow(&l->blk_sum, &l->capblk, n, sizeof(*l->blk_sum)) !=
		    0)
			return -1;
		memset(l->blk_sum + old, 0,
		       (l->capblk - old) * sizeof(*l->blk_sum));
	}
	for (uint32_t i = 0; i < n; i++)
		if (kvp_view_live(r, i))
			l->blk_sum[i] += kvp_view_blocks(r, i);
	return 0;
}

static int
lab_commit(void *ctx, struct kvp_router *r, uint32_t ci,
           const struct kvp_request *q, const uint64_t *seq,
           const struct kvp_decision *dec)
{
	struct kvp_lab *l = ctx;

	if (l->ops->commit != NULL && l->ops->commit(l, r, ci, q, seq) != 0)
		return -1;
	if (l->mrc != NULL && kvp_mrcs_record(l->mrc, ci, seq, q->n) != 0)
		return -1;
	if (l->lru != NULL && kvp_lru_record(r, l->lru, ci, q, seq) != 0)
		return -1;
	if (l->sim != NULL && kvp_simtime_schedule(r, l->sim, ci, q, dec) != 0)
		return -1;
	if (l->eng != NULL && kvp_engine_commit(l->eng, r, ci, q, seq) != 0)
		return -1;
	return sum_blocks(l, r);
}

const struct kvp_sim_event *
kvp_lab_sim_events(struct kvp_router *r, size_t *n)
{
	struct kvp_lab *l = lab_of(r);

	*n = 0;
	return l != NULL && l->lru != NULL ? kvp_lru_events(l->lru, n) : NULL;
}

/* max / mean of v over the live candidates. */
static double
max_mean(const struct kvp_router *r, const uint64_t *v, size_t nv,
         uint64_t *max)
{
	uint64_t sum = 0, n = 0;

	*max = 0;
	for (uint32_t i = 0; i < kvp_view_ncands(r); i++) {
		uint64_t x = i < nv ? v[i] : 0;

		if (!kvp_view_live(r, i))
			continue;
		sum += x;
		n++;
		if (x > *max)
			*max = x;
	}
	return sum ? (double)*max / ((double)sum / (double)n) : 0.0;
}

int
kvp_lab_run_totals(struct kvp_router *r, struct kvp_lab_totals *t)
{
	const struct kvp_lab *l = lab_of(r);
	size_t n = kvp_view_ncands(r);
	uint64_t *routed = malloc((n + 1) * sizeof(*routed));

	memset(t, 0, sizeof(*t));
	if (routed == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		routed[i] = kvp_view_routed(r, i);
	t->routed_max_mean = max_mean(r, routed, n, &t->routed_max);
	free(routed);
	if (l == NULL)
		return 0;
	t->blocks_max_mean = max_mean(
	    r, l->blk_sum, l->capblk < n ? l->capblk : n, &t->blocks_max);
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
kvp_lab_mrc(struct kvp_router *r, size_t k, struct kvp_mrc *out)
{
	const struct kvp_lab *l = lab_of(r);
	int64_t c;

	memset(out, 0, sizeof(*out));
	if (l == NULL || l->mrc == NULL)
		return -1;
	if (k == SIZE_MAX) {
		for (uint32_t i = 0; i < kvp_view_ncands(r); i++)
			if (kvp_view_live(r, i))
				kvp_mrcs_get(l->mrc, i, out);
		return 0;
	}
	if ((c = kvp_view_nth(r, k)) < 0)
		return -1;
	out->worker_id = kvp_view_worker(r, (uint32_t)c);
	out->dp_rank = kvp_view_rank(r, (uint32_t)c);
	kvp_mrcs_get(l->mrc, (uint32_t)c, out);
	return 0;
}

void
kvp_lab_clear(struct kvp_router *r, uint64_t worker_id, uint32_t dp_rank)
{
	struct kvp_lab *l = lab_of(r);

	if (l == NULL || l->eng == NULL)
		return;
	for (uint32_t i = 0; i < kvp_view_ncands(r); i++)
		if (kvp_view_worker(r, i) == worker_id &&
		    kvp_view_rank(r, i) == dp_rank)
			kvp_engine_clear(l->eng, r, i);
}

int
kvp_lab_engine_totals(const struct kvp_router *r, struct kvp_engine_totals *t)
{
	const struct kvp_lab *l = lab_of(r);

	memset(t, 0, sizeof(*t));
	if (l == NULL || l->eng == NULL)
		return 0;
	kvp_engine_totals(l->eng, t);
	return 1;
}
