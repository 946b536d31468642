/* SPDX-License-Identifier: MIT */
/*
 * policy_random.c — uniform random: one draw u per request, as the
 * router's (router.h: SplitMix64 seeded with seed XOR XXH3_64(id)), or the
 * what-if draw; candidate floor(u·count).
 */
#include "lab/lab_internal.h"
#include "route/route_view.h"
#include "route/score.h"

static int
pick(struct kvp_lab *l, struct kvp_router *r, const struct kvp_request *q,
     const uint64_t *seq, struct kvp_decision *dec)
{
	uint64_t st = kvp_router_opts(r)->seed ^ kvp_view_qhash(r);
	size_t k;

	(void)l;
	(void)q;
	(void)seq;
	dec->drew = 1;
	dec->u = kvp_router_opts(r)->have_draw
	             ? kvp_router_opts(r)->draw
	             : (double)(kvp_score_splitmix64(&st) >> 11) * 0x1.0p-53;
	k = (size_t)(dec->u * (double)dec->ncand);
	dec->chosen = (long)(k < dec->ncand ? k : dec->ncand - 1);
	kvp_policy_max_overlap(dec);
	return 0;
}

const struct kvp_policy_ops kvp_policy_random = {"random", NULL, NULL, pick,
                                                 NULL};
