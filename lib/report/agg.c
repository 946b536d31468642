/* SPDX-License-Identifier: MIT */
/*
 * agg.c — streaming aggregation of one run for kv-report.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "kvpipe.h"
#include "report/agg.h"

int
kvp_agg_init(struct kvp_agg *a, size_t window)
{
	memset(a, 0, sizeof *a);
	kvp_kmap_init(&a->wmap);
	a->window = window > 0 ? window : 1;
	a->ring = calloc(a->window * 2, sizeof *a->ring);
	return a->ring != NULL ? KVP_OK : KVP_FAIL;
}

void
kvp_agg_fini(struct kvp_agg *a)
{
	kvp_kmap_fini(&a->wmap);
	free(a->w_routed);
	free(a->ring);
	memset(a, 0, sizeof *a);
}

static void
merge_into(struct kvp_agg_bucket *dst, const struct kvp_agg_bucket *x,
           const struct kvp_agg_bucket *y)
{
	struct kvp_agg_bucket m = *x;
	int k;

	m.n += y->n;
	m.overlap += y->overlap;
	m.request_blocks += y->request_blocks;
	if (y->has_roll) {
		m.roll = y->roll;
		m.has_roll = 1;
	}
	for (k = 0; k <= KVP_AGG_WORKERS; k++) {
		m.routed[k] += y->routed[k];
		if (y->active[k] > m.active[k])
			m.active[k] = y->active[k];
	}
	*dst = m;
}

int
kvp_agg_tline_at(struct kvp_agg_tline *tl, double t, int nb,
                 void (*halve)(void *), void *ctx)
{
	double idx;

	if (!tl->started) {
		tl->t0 = t;
		if (!(tl->width > 0))
			tl->width = 1;
		tl->started = 1;
	}
	if (t < tl->t0)
		t = tl->t0;
	while ((idx = floor((t - tl->t0) / tl->width)) >= nb) {
		halve(ctx);
		tl->n = (tl->n + 1) / 2;
		tl->width *= 2;
	}
	if ((int)idx + 1 > tl->n)
		tl->n = (int)idx + 1;
	return (int)idx;
}

double
kvp_agg_tline_end(const struct kvp_agg_tline *tl, int i)
{
	return tl->t0 + (i + 1) * tl->width;
}

/* Halves the resolution: bucket i takes buckets 2i and 2i+1. */
static void
coarsen(void *ctx)
{
	struct kvp_agg *a = ctx;
	int i;

	for (i = 0; i < KVP_AGG_BUCKETS / 2; i++)
		merge_into(&a->b[i], &a->b[2 * i], &a->b[2 * i + 1]);
	memset(&a->b[KVP_AGG_BUCKETS / 2], 0,
	       sizeof a->b[0] * (KVP_AGG_BUCKETS - KVP_AGG_BUCKETS / 2));
}

static struct kvp_agg_bucket *
bucket_at(struct kvp_agg *a, double t)
{
	return &a->b[kvp_agg_tline_at(&a->tl, t, KVP_AGG_BUCKETS, coarsen, a)];
}

/* The worker's index among all workers and its panel slot. */
static int
worker(struct kvp_agg *a, uint64_t wid, uint64_t dp, size_t *slot)
{
	int ins;
	uint32_t *v = kvp_kmap_upsert(&a->wmap, (uint32_t)dp, wid,
	                              (uint32_t)a->n_workers + 1, &ins);
	size_t k;

	if (v == NULL)
		return KVP_FAIL;
	if (ins) {
		if (kvp_grow(&a->w_routed, &a->cap_workers, a->n_workers + 1,
		             sizeof *a->w_routed) != 0)
			return KVP_FAIL;
		a->w_routed[a->n_workers++] = 0;
		if (a->n_panel < KVP_AGG_WORKERS) {
			a->panel_wid[a->n_panel] = wid;
			a->panel_dp[a->n_panel++] = dp;
		}
	}
	*slot = KVP_AGG_WORKERS;
	for (k = 0; k < a->n_panel; k++)
		if (a->panel_wid[k] == wid && a->panel_dp[k] == dp)
			*slot = k;
	if (*slot == KVP_AGG_WORKERS)
		a->other_used = 1;
	return (int)(*v - 1);
}

static void
roll(struct kvp_agg *a, const struct kvp_decision_rec *d,
     struct kvp_agg_bucket *b)
{
	uint64_t *e = &a->ring[a->ring_pos * 2];

	if (a->ring_n == a->window) {
		a->roll_overlap -= e[0];
		a->roll_blocks -= e[1];
	} else
		a->ring_n++;
	e[0] = d->overlap;
	e[1] = d->request_blocks;
	a->roll_overlap += e[0];
	a->roll_blocks += e[1];
	a->ring_pos = (a->ring_pos + 1) % a->window;
	if (a->roll_blocks > 0) {
		b->roll = (double)a->roll_overlap / (double)a->roll_blocks;
		b->has_roll = 1;
	}
}

static void
add_ttft(struct kvp_agg *a, double ms)
{
	double x = ms > 0.01 ? log10(ms / 0.01) * KVP_AGG_TTFT_PER_DECADE : 0;
	int k = x >= KVP_AGG_TTFT_BINS ? KVP_AGG_TTFT_BINS - 1 : (int)x;

	a->ttft[k]++;
	a->n_ttft++;
}

static int
add_candidates(struct kvp_agg *a, const struct kvp_decision_rec *d,
               struct kvp_agg_bucket *b)
{
	size_t k, slot;

	for (k = 0; k < d->n_cand; k++) {
		if (worker(a, d->cand[k].worker_id, d->cand[k].dp_rank, &slot) <
		    0)
			return KVP_FAIL;
		if (d->cand[k].active_blocks > b->active[slot])
			b->active[slot] = d->cand[k].active_blocks;
	}
	a->has_candidates |= d->n_cand > 0;
	return KVP_OK;
}

/* Router vs engine: the counts, and d among the worst when it differs
 * more than the least of them (kept sorted, largest first). */
static void
add_truth(struct kvp_agg_truth *t, const struct kvp_decision_rec *d)
{
	uint64_t e =
	    d->pred > d->engine ? d->pred - d->engine : d->engine - d->pred;
	struct kvp_agg_worst *w;
	size_t k;

	t->n++;
	t->exact += e == 0;
	t->over += d->pred > d->engine;
	t->under += d->pred < d->engine;
	t->abs_err += e;
	if (e == 0 || (t->n_worst == KVP_AGG_WORST &&
	               e <= t->worst[KVP_AGG_WORST - 1].err))
		return;
	if (t->n_worst < KVP_AGG_WORST)
		t->n_worst++;
	for (k = t->n_worst - 1; k > 0 && t->worst[k - 1].err < e; k--)
		t->worst[k] = t->worst[k - 1];
	w = &t->worst[k];
	w->id_len = d->id.p == NULL            ? 0
	            : d->id.n < KVP_AGG_ID_MAX ? d->id.n
	                                       : KVP_AGG_ID_MAX;
	if (w->id_len > 0)
		memcpy(w->id, d->id.p, w->id_len);
	w->pred = d->pred;
	w->engine = d->engine;
	w->err = e;
}

static void
totals(struct kvp_agg *a, const struct kvp_decision_rec *d)
{
	a->decisions++;
	a->rejected += d->rejected != 0;
	a->overlap += d->overlap;
	a->request_blocks += d->request_blocks;
	/* brief records carry blocks_lost, not max_overlap */
	a->max_overlap +=
	    d->has_max ? d->max_overlap : d->overlap + d->blocks_lost;
	a->non_max += d->non_max || d->blocks_lost > 0;
	a->blocks_lost += d->blocks_lost;
	if (d->request_blocks > 0) {
		uint64_t k = d->overlap * KVP_AGG_HIST / d->request_blocks;

		a->hist[k >= KVP_AGG_HIST ? KVP_AGG_HIST - 1 : k]++;
	}
	if (d->has_ttft)
		add_ttft(a, d->ttft_ms);
	if (d->has_pred && d->has_engine)
		add_truth(&a->truth, d);
	if (a->policy[0] == '\0' && d->policy.p != NULL) {
		size_t n = d->policy.n < sizeof a->policy - 1
		               ? d->policy.n
		               : sizeof a->policy - 1;

		memcpy(a->policy, d->policy.p, n);
		a->policy[n] = '\0';
	}
}

int
kvp_agg_add(struct kvp_agg *a, const struct kvp_decision_rec *d)
{
	struct kvp_agg_bucket *b;
	size_t slot;
	double t;
	int w;

	if (d->kind == KVP_DECISION_SUMMARY) { /* its workers list, its TTFT */
		size_t k;

		if (d->has_sim) {
			a->has_sim = 1;
			a->sim_p50 = d->sim_p50;
			a->sim_p99 = d->sim_p99;
		}

		for (k = 0; k < d->n_cand; k++)
			if (worker(a, d->cand[k].worker_id, d->cand[k].dp_rank,
			           &slot) < 0)
				return KVP_FAIL;
		return KVP_OK;
	}
	if (d->kind != KVP_DECISION_DECISION)
		return KVP_OK;
	if (d->replay_row) { /* in tokens (agg.h) */
		struct kvp_decision_rec tk = *d;

		tk.replay_row = 0;
		tk.overlap = d->reused;
		tk.request_blocks = d->input_tokens;
		tk.has_max = 1;
		tk.max_overlap = d->reused;
		a->token_units = 1;
		return kvp_agg_add(a, &tk);
	}
	if (a->decisions == 0)
		a->time_is_ts = d->has_ts;
	t = a->time_is_ts ? (d->has_ts ? d->ts_ms : a->t_last)
	                  : (double)a->decisions;
	a->t_last = t;
	totals(a, d);
	b = bucket_at(a, t);
	b->n++;
	b->overlap += d->overlap;
	b->request_blocks += d->request_blocks;
	roll(a, d, b);
	if (add_candidates(a, d, b) != KVP_OK)
		return KVP_FAIL;
	if (!d->chosen || d->rejected)
		return KVP_OK;
	a->routed++;
	if ((w = worker(a, d->worker_id, d->dp_rank, &slot)) < 0)
		return KVP_FAIL;
	a->w_routed[w]++;
	b->routed[slot]++;
	return KVP_OK;
}

void
kvp_agg_replay(struct kvp_agg *a, const struct kvp_replay_summary *sum)
{
	const unsigned p50 = 1u << KVP_REPLAY_MEDIAN_TTFT,
	               p99 = 1u << KVP_REPLAY_P99_TTFT;

	a->replay = *sum;
	a->has_replay = 1;
	if ((sum->has & p50) && (sum->has & p99)) {
		a->has_sim = 1;
		a->sim_p50 = sum->v[KVP_REPLAY_MEDIAN_TTFT];
		a->sim_p99 = sum->v[KVP_REPLAY_P99_TTFT];
	}
}

double
kvp_agg_hit_rate(const struct kvp_agg *a)
{
	return a->request_blocks
	           ? (double)a->overlap / (double)a->request_blocks
	           : 0.0;
}

double
kvp_agg_reachable_rate(const struct kvp_agg *a)
{
	return a->request_blocks
	           ? (double)a->max_overlap / (double)a->request_blocks
	           : 0.0;
}

double
kvp_agg_balance(const struct kvp_agg *a)
{
	uint64_t max = 0, sum = 0;
	size_t k;

	for (k = 0; k < a->n_workers; k++) {
		sum += a->w_routed[k];
		if (a->w_routed[k] > max)
			max = a->w_routed[k];
	}
	return sum ? (double)max * (double)a->n_workers / (double)sum : 0.0;
}

double
kvp_agg_ttft(const struct kvp_agg *a, double q)
{
	uint64_t need, seen = 0;
	int k;

	if (a->n_ttft == 0)
		return a->has_sim ? (q <= 0.5 ? a->sim_p50 : a->sim_p99) : -1;
	need = (uint64_t)ceil(q * (double)a->n_ttft);
	if (need == 0)
		need = 1;
	for (k = 0; k < KVP_AGG_TTFT_BINS; k++) {
		seen += a->ttft[k];
		if (seen >= need)
			break;
	}
	/* the bin's geometric middle */
	return 0.01 * pow(10, (k + 0.5) / KVP_AGG_TTFT_PER_DECADE);
}

double
kvp_agg_bucket_end(const struct kvp_agg *a, int i)
{
	return kvp_agg_tline_end(&a->tl, i);
}
