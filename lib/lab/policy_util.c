/* SPDX-License-Identifier: MIT */
/*
 * policy_util.c — what the peer policies (policy_*.c) share: the
 * max-overlap candidate and production-stack's score.
 */
#include "lab/lab_internal.h"
#include "route/route_view.h"

void
kvp_policy_max_overlap(struct kvp_decision *dec)
{
	long best = 0;

	for (size_t i = 1; i < dec->ncand; i++)
		if (dec->cand[i].overlap > dec->cand[best].overlap)
			best = (long)i;
	dec->max_overlap = best;
}

/* score = matched/prompt − β·load/max load (0 when every load is 0);
 * highest wins, ties to the lowest id. matched: device overlap in tokens,
 * at most the prompt. */
void
kvp_policy_ps_pick(const struct kvp_lab *l, struct kvp_router *r,
                   const struct kvp_request *q, struct kvp_decision *dec,
                   uint64_t (*loadfn)(const struct kvp_router *, uint32_t))
{
	uint64_t maxload = 0;
	double best = 0;

	for (size_t i = 0; i < dec->ncand; i++) {
		uint64_t ld = loadfn(r, kvp_view_cand(r, &dec->cand[i]));

		if (ld > maxload)
			maxload = ld;
	}
	for (size_t i = 0; i < dec->ncand; i++) {
		uint64_t m =
		    (uint64_t)dec->cand[i].overlap * kvp_router_block_size(r);
		uint64_t ld = loadfn(r, kvp_view_cand(r, &dec->cand[i]));
		double s = 0;

		if (m > q->isl)
			m = q->isl;
		if (q->isl > 0)
			s = (double)m / (double)q->isl;
		if (maxload > 0)
			s -= l->o.beta * ((double)ld / (double)maxload);
		if (dec->chosen < 0 || s > best) {
			dec->chosen = (long)i;
			best = s;
		}
	}
	kvp_policy_max_overlap(dec);
}
