/* SPDX-License-Identifier: MIT */
/*
 * policy_sglang.c — SGLang's cache-aware router (sgl-router): an
 * approximate tree per worker, fed only by the router's own decisions,
 * and a switch to the shortest queue when the load is imbalanced.
 *
 *   loads: active requests per candidate (the router's running count)
 *   imbalanced: max − min > balance_abs and max > balance_rel · min
 *     → the candidate with the fewest active requests (reason
 *       "imbalanced")
 *   else: the longest prefix match over every worker's tree; if
 *     matched·bs / isl > cache_threshold → that worker ("cache_hit"),
 *     else the worker with the smallest tree ("smallest_tree").
 *   The chosen worker's tree then holds the request's blocks.
 *
 * SGLang matches characters of the prompt; here the unit is a full block
 * (sequence hashes), so a worker's tree is its set of sequence hashes:
 * prefix-closed (a request adds its whole chain), so the match is found by
 * binary search. Ties go to the lowest (worker_id, dp_rank). The tree is
 * never pruned (SGLang's max_tree_size eviction is not modelled).
 */
#include <stdlib.h>

#include "common/kmap.h"
#include "common/util.h"
#include "lab/lab_internal.h"
#include "route/route_view.h"

struct sg_state {
	struct kvp_kmap tree; /* (cand, seq) → 1 */
	uint64_t *size;       /* per cand */
	size_t capsize;
};

static int
init(struct kvp_lab *l)
{
	struct sg_state *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return -1;
	kvp_kmap_init(&s->tree);
	l->pstate = s;
	return 0;
}

static void
fini(struct kvp_lab *l)
{
	struct sg_state *s = l->pstate;

	if (s == NULL)
		return;
	kvp_kmap_fini(&s->tree);
	free(s->size);
	free(s);
}

static uint64_t
tree_size(const struct sg_state *s, uint32_t ci)
{
	return ci < s->capsize ? s->size[ci] : 0;
}

/* Shortest queue when imbalanced; returns 1 if it chose. */
static int
pick_imbalanced(const struct kvp_lab *l, struct kvp_router *r,
                struct kvp_decision *dec)
{
	const struct kvp_policy_opts *o = &l->o;
	uint64_t lo = UINT64_MAX, hi = 0;
	long arg = 0;

	for (size_t i = 0; i < dec->ncand; i++) {
		uint64_t ld =
		    kvp_view_requests(r, kvp_view_cand(r, &dec->cand[i]));

		if (ld < lo) {
			lo = ld;
			arg = (long)i;
		}
		if (ld > hi)
			hi = ld;
	}
	if (!(hi - lo > o->balance_abs &&
	      (double)hi > o->balance_rel * (double)lo))
		return 0;
	dec->chosen = arg;
	dec->policy_reason = "imbalanced";
	return 1;
}

static int
pick(struct kvp_lab *l, struct kvp_router *r, const struct kvp_request *q,
     const uint64_t *seq, struct kvp_decision *dec)
{
	const struct sg_state *s = l->pstate;
	size_t best = 0;
	long arg = 0, small = 0;

	kvp_policy_max_overlap(dec);
	if (pick_imbalanced(l, r, dec))
		return 0;
	for (size_t i = 0; i < dec->ncand; i++) {
		uint32_t ci = kvp_view_cand(r, &dec->cand[i]);
		size_t m = kvp_kmap_prefix(&s->tree, ci, seq, q->n);

		if (m > best) {
			best = m;
			arg = (long)i;
		}
		if (tree_size(s, ci) <
		    tree_size(s, kvp_view_cand(r, &dec->cand[small])))
			small = (long)i;
	}
	if (q->isl > 0 &&
	    (double)best * kvp_router_block_size(r) / (double)q->isl >
	        l->o.cache_threshold) {
		dec->chosen = arg;
		dec->policy_reason = "cache_hit";
	} else {
		dec->chosen = small;
		dec->policy_reason = "smallest_tree";
	}
	return 0;
}

static int
commit(struct kvp_lab *l, struct kvp_router *r, uint32_t ci,
       const struct kvp_request *q, const uint64_t *seq)
{
	struct sg_state *s = l->pstate;
	size_t old = s->capsize;

	(void)r;
	if (ci >= s->capsize) {
		if (kvp_grow(&s->size, &s->capsize, ci + 1, sizeof(*s->size)))
			return -1;
		for (size_t i = old; i < s->capsize; i++)
			s->size[i] = 0;
	}
	for (size_t i = 0; i < q->n; i++) {
		int ins;

		if (kvp_kmap_upsert(&s->tree, ci, seq[i], 1, &ins) == NULL)
			return -1;
		s->size[ci] += ins != 0;
	}
	return 0;
}

const struct kvp_policy_ops kvp_policy_sglang = {"sglang-cache-aware", init,
                                                 fini, pick, commit};
