/* SPDX-License-Identifier: MIT */
/*
 * policy_random.c — uniform random: one draw u per request, as the
 * router's (router.h: SplitMix64 seeded with seed XOR XXH3_64(id)), or the
 * what-if draw; candidate floor(u·count).
 */
#include "route/route_internal.h"
#include "route/score.h"

static int
pick(struct kvp_router *r, const struct kvp_request *q, const uint64_t *seq,
     struct kvp_decision *dec)
{
	uint64_t st = r->o.seed ^ r->qhash;
	size_t k;

	(void)q;
	(void)seq;
	dec->drew = 1;
	dec->u = r->o.have_draw
	             ? r->o.draw
	             : (double)(kvp_splitmix64(&st) >> 11) * 0x1.0p-53;
	k = (size_t)(dec->u * (double)dec->ncand);
	dec->chosen = (long)(k < dec->ncand ? k : dec->ncand - 1);
	kvp_policy_max_overlap(r, dec);
	return 0;
}

const struct kvp_policy_ops kvp_policy_random = {"random", NULL, NULL, pick,
                                                 NULL};
