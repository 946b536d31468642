/* SPDX-License-Identifier: MIT */
/*
 * cands.c — the router's candidates (cands.h).
 */
#define _GNU_SOURCE 1 /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "common/kmap.h"
#include "common/util.h"
#include "route/cands.h"
#include "route/index.h"

void
kvp_cands_init(struct kvp_cands *cd)
{
	memset(cd, 0, sizeof(*cd));
	kvp_kmap_init(&cd->map);
	cd->dirty = 1; /* (the first order is made, empty or not) */
}

void
kvp_cands_fini(struct kvp_cands *cd)
{
	free(cd->v);
	free(cd->order);
	kvp_kmap_fini(&cd->map);
}

int64_t
kvp_cands_find(const struct kvp_cands *cd, uint64_t w, uint32_t rank)
{
	uint32_t v = kvp_kmap_get(&cd->map, rank, w);

	return v ? (int64_t)v - 1 : -1;
}

int64_t
kvp_cands_add(struct kvp_cands *cd, uint64_t w, uint32_t rank)
{
	int64_t c = kvp_cands_find(cd, w, rank);
	struct kvp_cand *v;

	if (c >= 0) {
		if (!cd->v[c].live) {
			cd->v[c].live = 1;
			cd->dirty = 1;
		}
		return c;
	}
	if (cd->n >= UINT32_MAX - 1 ||
	    kvp_grow(&cd->v, &cd->cap, cd->n + 1, sizeof(*cd->v)) != 0 ||
	    kvp_kmap_put(&cd->map, rank, w, (uint32_t)cd->n + 1, NULL) != 0)
		return -1;
	v = &cd->v[cd->n];
	memset(v, 0, sizeof(*v));
	v->worker_id = w;
	v->dp_rank = rank;
	v->live = 1;
	cd->dirty = 1;
	cd->hid_n = SIZE_MAX; /* its holder ids are still to look up */
	return (int64_t)cd->n++;
}

void
kvp_cands_kill(struct kvp_cands *cd, uint32_t ci)
{
	cd->v[ci].live = 0;
	cd->dirty = 1;
}

static int
cmp_cand(const void *a, const void *b, void *base)
{
	const struct kvp_cand *x =
	    &((const struct kvp_cand *)base)[*(const uint32_t *)a];
	const struct kvp_cand *y =
	    &((const struct kvp_cand *)base)[*(const uint32_t *)b];

	if (x->worker_id != y->worker_id)
		return x->worker_id < y->worker_id ? -1 : 1;
	if (x->dp_rank != y->dp_rank)
		return x->dp_rank < y->dp_rank ? -1 : 1;
	return 0;
}

const uint32_t *
kvp_cands_sorted(struct kvp_cands *cd, size_t *n)
{
	if (cd->dirty) {
		free(cd->order);
		cd->order = malloc((cd->n + 1) * sizeof(*cd->order));
		if (cd->order == NULL)
			return NULL;
		cd->norder = 0;
		for (size_t i = 0; i < cd->n; i++)
			if (cd->v[i].live)
				cd->order[cd->norder++] = (uint32_t)i;
		qsort_r(cd->order, cd->norder, sizeof(*cd->order), cmp_cand,
		        cd->v);
		cd->dirty = 0;
	}
	*n = cd->norder;
	return cd->order;
}

size_t
kvp_cands_nlive(const struct kvp_cands *cd)
{
	size_t n = 0;

	for (size_t i = 0; i < cd->n; i++)
		n += cd->v[i].live != 0;
	return n;
}

void
kvp_cands_refresh(struct kvp_cands *cd, struct kvp_index *ix)
{
	size_t nh = kvp_index_nholders(ix);

	if (nh == cd->hid_n)
		return;
	for (size_t i = 0; i < cd->n; i++) {
		struct kvp_cand *c = &cd->v[i];

		for (int t = 0; t < KVP_TIER_EXTERNAL; t++) {
			int64_t h;

			if (c->hid[t] != 0)
				continue;
			h = kvp_index_holder(ix, c->worker_id, c->dp_rank, t,
			                     0);
			if (h >= 0)
				c->hid[t] = (uint32_t)h + 1;
		}
	}
	cd->hid_n = nh;
}
