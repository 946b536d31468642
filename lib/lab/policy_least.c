/* SPDX-License-Identifier: MIT */
/*
 * policy_least.c — least-loaded: the candidate with the fewest active
 * blocks (its active requests' distinct blocks plus a `load` record's
 * baseline, as the candidate rows show them); ties to the lowest id.
 */
#include "lab/lab_internal.h"
#include "route/route_view.h"

static int
pick(struct kvp_lab *l, struct kvp_router *r, const struct kvp_request *q,
     const uint64_t *seq, struct kvp_decision *dec)
{
	(void)l;
	(void)r;
	(void)q;
	(void)seq;
	dec->chosen = 0;
	for (size_t i = 1; i < dec->ncand; i++)
		if (dec->cand[i].active_blocks <
		    dec->cand[dec->chosen].active_blocks)
			dec->chosen = (long)i;
	kvp_policy_max_overlap(dec);
	return 0;
}

const struct kvp_policy_ops kvp_policy_least = {"least-loaded", NULL, NULL,
                                                pick, NULL};
