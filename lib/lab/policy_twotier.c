/* SPDX-License-Identifier: MIT */
/*
 * policy_twotier.c — Dynamo's dynamo-two-tier-cost-fn worker-selection
 * policy (its builtin router plugin, a port of sgl-router's
 * cache_aware_zmq), over the candidates as the router scored them:
 *
 *   rows: the eligible candidates in (worker_id, dp_rank) order; per row
 *     the device overlap O, the host-tier blocks beyond it H (the host
 *     tier's prefix past O: kvpipe's tiers are prefixes from the root)
 *     and the active requests A (the router's running count)
 *   overlap of a row: O + host_cache_weight·H (weight 0 by default:
 *     device only, as upstream)
 *   1. load tier: max A − min A > balance_abs_threshold and
 *      max A > balance_rel_threshold · min A → the first row with the
 *      least A ("load")
 *   2. cache tier: else, if max overlap / request_blocks >
 *      cache_threshold (strictly; request_blocks = ceil(ISL/bs), 0 gives
 *      ratio 0) → of the rows at the max overlap, the first with the
 *      least A ("cache")
 *   3. else the first row with the least A ("least_loaded")
 *
 * "First" is candidate order: Dynamo resolves ties on row order, which
 * its host leaves unspecified; kvpipe's rows are sorted. The deciding
 * tier is the decision's policy_reason.
 */
#include "lab/lab_internal.h"
#include "route/route_view.h"

/* The host-tier blocks beyond the device prefix. */
static double
host_beyond(const struct kvp_cand_score *s)
{
	return s->host_overlap > s->overlap
	           ? (double)(s->host_overlap - s->overlap)
	           : 0.0;
}

double
kvp_policy_twotier_overlap(const struct kvp_policy_opts *o,
                           const struct kvp_cand_score *s)
{
	return (double)s->overlap + o->tt_host_weight * host_beyond(s);
}

/* The first of the rows (all, or only those at overlap max when
 * only_max) with the fewest active requests. */
static long
least_loaded(struct kvp_lab *l, struct kvp_router *r,
             const struct kvp_decision *dec, int only_max, double max)
{
	uint64_t lo = UINT64_MAX;
	long arg = -1;

	for (size_t i = 0; i < dec->ncand; i++) {
		uint64_t a =
		    kvp_view_requests(r, kvp_view_cand(r, &dec->cand[i]));

		if (only_max &&
		    kvp_policy_twotier_overlap(&l->o, &dec->cand[i]) != max)
			continue;
		if (arg < 0 || a < lo) {
			lo = a;
			arg = (long)i;
		}
	}
	return arg;
}

static int
pick(struct kvp_lab *l, struct kvp_router *r, const struct kvp_request *q,
     const uint64_t *seq, struct kvp_decision *dec)
{
	const struct kvp_policy_opts *o = &l->o;
	uint64_t lo = UINT64_MAX, hi = 0;
	double max = 0, ratio;

	(void)q;
	(void)seq;
	kvp_policy_max_overlap(dec);
	if (dec->ncand == 0)
		return 0;
	for (size_t i = 0; i < dec->ncand; i++) {
		uint64_t a =
		    kvp_view_requests(r, kvp_view_cand(r, &dec->cand[i]));
		double ov = kvp_policy_twotier_overlap(o, &dec->cand[i]);

		lo = a < lo ? a : lo;
		hi = a > hi ? a : hi;
		max = i == 0 || ov > max ? ov : max;
	}
	if (hi - lo > o->tt_balance_abs &&
	    (double)hi > o->tt_balance_rel * (double)lo) {
		dec->chosen = least_loaded(l, r, dec, 0, 0);
		dec->policy_reason = "load";
		return 0;
	}
	ratio =
	    dec->request_blocks == 0 ? 0.0 : max / (double)dec->request_blocks;
	if (ratio > o->tt_cache_threshold) {
		dec->chosen = least_loaded(l, r, dec, 1, max);
		dec->policy_reason = "cache";
		return 0;
	}
	dec->chosen = least_loaded(l, r, dec, 0, 0);
	dec->policy_reason = "least_loaded";
	return 0;
}

const struct kvp_policy_ops kvp_policy_twotier = {"dynamo-two-tier-cost-fn",
                                                  NULL, NULL, pick, NULL};
