/* SPDX-License-Identifier: MIT */
/*
 * mrc.c — miss-ratio curves in one pass (--mrc): Mattson's LRU stack
 * distances over the blocks each candidate was sent, in the bounded
 * cache's touch order (a request's blocks deepest first, root last).
 *
 * A block's depth at a request's arrival is 1 + the number of distinct
 * blocks touched since its last touch; it is in an LRU cache of capacity C
 * iff depth <= C (LRU's inclusion property), for every C at once. The
 * prefix match stops at the first missing block, so block i of a request
 * hits at C iff max(depth_0..depth_i) <= C: that prefix maximum is
 * histogrammed by ceil(log2), which gives the hits at every power of two.
 *
 * Depths come from a Fenwick tree over touch times (1 at the latest touch
 * of each block): O(log n) per block. Times are renumbered when the array
 * fills and at most half its marks are live, so memory follows the
 * distinct blocks, not the run length.
 */
#include <stdlib.h>
#include <string.h>

#include "common/kmap.h"
#include "common/util.h"
#include "lab/lab_internal.h"

#define INF_DEPTH UINT64_MAX

struct mrc_w {
	uint32_t *fen;   /* Fenwick tree over times [0, cap) */
	uint64_t *owner; /* block touched at each time */
	uint8_t *mark;   /* time is its block's latest touch */
	size_t t, cap, live;
	uint64_t accesses, cold, maxd;
	uint64_t hist[KVP_MRC_BUCKETS];
};

struct kvp_mrcs {
	struct kvp_kmap last; /* (cand, seq) → latest time + 1 */
	struct mrc_w *w;
	size_t capw;
	uint64_t *depth; /* per request scratch */
	size_t capdepth;
};

struct kvp_mrcs *
kvp_mrcs_new(void)
{
	struct kvp_mrcs *m = calloc(1, sizeof(*m));

	if (m != NULL)
		kvp_kmap_init(&m->last);
	return m;
}

void
kvp_mrcs_free(struct kvp_mrcs *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->capw; i++) {
		free(m->w[i].fen);
		free(m->w[i].owner);
		free(m->w[i].mark);
	}
	free(m->w);
	free(m->depth);
	kvp_kmap_fini(&m->last);
	free(m);
}

static void
fen_add(struct mrc_w *w, size_t i, int d)
{
	for (; i < w->cap; i |= i + 1)
		w->fen[i] = (uint32_t)((int64_t)w->fen[i] + d);
}

/* Marks in times [0, i]. */
static uint64_t
fen_sum(const struct mrc_w *w, size_t i)
{
	uint64_t s = 0;

	for (size_t k = i + 1; k > 0; k &= k - 1)
		s += w->fen[k - 1];
	return s;
}

static void
fen_build(struct mrc_w *w)
{
	for (size_t i = 0; i < w->cap; i++)
		w->fen[i] = w->mark[i];
	for (size_t i = 0; i < w->cap; i++) {
		size_t p = i | (i + 1);

		if (p < w->cap)
			w->fen[p] += w->fen[i];
	}
}

/* Room for one more time: renumber the live marks, or double. */
static int
make_room(struct kvp_mrcs *m, uint32_t ci, struct mrc_w *w)
{
	size_t j = 0, ncap = w->cap ? w->cap : 1024;

	if (w->t < w->cap)
		return 0;
	if (w->cap == 0 || w->live * 2 > w->cap) {
		uint32_t *f = realloc(w->fen, 2 * ncap * sizeof(*f));
		uint64_t *o = f ? realloc(w->owner, 2 * ncap * sizeof(*o)) : 0;
		uint8_t *k = o ? realloc(w->mark, 2 * ncap) : NULL;

		if (f)
			w->fen = f;
		if (o)
			w->owner = o;
		if (k == NULL)
			return -1;
		w->mark = k;
		memset(w->mark + w->cap, 0, 2 * ncap - w->cap);
		w->cap = 2 * ncap;
	}
	for (size_t i = 0; i < w->t; i++) {
		if (!w->mark[i])
			continue;
		w->mark[i] = 0;
		w->owner[j] = w->owner[i];
		w->mark[j] = 1;
		if (kvp_kmap_put(&m->last, ci, w->owner[j], (uint32_t)j + 1,
		                 NULL) != 0)
			return -1;
		j++;
	}
	w->t = j;
	fen_build(w);
	return 0;
}

static int
bucket(uint64_t d)
{
	int b = 0;

	while (b < KVP_MRC_BUCKETS - 1 && ((uint64_t)1 << b) < d)
		b++;
	return b;
}

static int
touch(struct kvp_mrcs *m, uint32_t ci, struct mrc_w *w, uint64_t seq)
{
	uint32_t v = kvp_kmap_get(&m->last, ci, seq);

	if (v != 0) {
		w->mark[v - 1] = 0;
		fen_add(w, v - 1, -1);
		w->live--;
	}
	if (make_room(m, ci, w) != 0 ||
	    kvp_kmap_put(&m->last, ci, seq, (uint32_t)w->t + 1, NULL) != 0)
		return -1;
	w->owner[w->t] = seq;
	w->mark[w->t] = 1;
	fen_add(w, w->t, 1);
	w->t++;
	w->live++;
	return 0;
}

static struct mrc_w *
worker(struct kvp_mrcs *m, uint32_t ci)
{
	size_t old = m->capw;

	if (ci >= m->capw) {
		if (kvp_grow(&m->w, &m->capw, (size_t)ci + 1, sizeof(*m->w)))
			return NULL;
		memset(m->w + old, 0, (m->capw - old) * sizeof(*m->w));
	}
	return &m->w[ci];
}

int
kvp_mrcs_record(struct kvp_mrcs *m, uint32_t ci, const uint64_t *seq, size_t n)
{
	struct mrc_w *w = worker(m, ci);
	uint64_t pmax = 0;

	if (w == NULL ||
	    kvp_grow(&m->depth, &m->capdepth, n + 1, sizeof(*m->depth)) != 0)
		return -1;
	/* depths at arrival, before any of the request's touches */
	for (size_t i = 0; i < n; i++) {
		uint32_t v = kvp_kmap_get(&m->last, ci, seq[i]);

		m->depth[i] = v ? fen_sum(w, w->t - 1) - fen_sum(w, v - 1) + 1
		                : INF_DEPTH;
	}
	for (size_t i = 0; i < n; i++) {
		if (m->depth[i] > pmax)
			pmax = m->depth[i];
		w->accesses++;
		if (pmax == INF_DEPTH) {
			w->cold++;
			continue;
		}
		w->hist[bucket(pmax)]++;
		if (pmax > w->maxd)
			w->maxd = pmax;
	}
	for (size_t i = n; i-- > 0;)
		if (touch(m, ci, w, seq[i]) != 0)
			return -1;
	return 0;
}

void
kvp_mrcs_get(const struct kvp_mrcs *m, uint32_t ci, struct kvp_mrc *out)
{
	const struct mrc_w *w;
	uint64_t cum = 0;
	int nb;

	if (ci >= m->capw)
		return;
	w = &m->w[ci];
	nb = w->maxd ? bucket(w->maxd) + 1 : 1;
	out->accesses += w->accesses;
	out->cold += w->cold;
	for (int b = 0; b < KVP_MRC_BUCKETS; b++) {
		cum += w->hist[b];
		out->hits_le[b] += cum;
	}
	if (nb > out->nbuckets)
		out->nbuckets = nb;
}
