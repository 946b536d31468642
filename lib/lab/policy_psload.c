/* SPDX-License-Identifier: MIT */
/*
 * policy_psload.c — vLLM production-stack's loadaware router: the kvaware
 * score with the load measured in KV blocks (the candidate's active blocks
 * plus a `load` record's baseline) instead of requests.
 */
#include "lab/lab_internal.h"
#include "route/route_view.h"

static uint64_t
blocks(const struct kvp_router *r, uint32_t ci)
{
	return kvp_view_blocks(r, ci);
}

static int
pick(struct kvp_lab *l, struct kvp_router *r, const struct kvp_request *q,
     const uint64_t *seq, struct kvp_decision *dec)
{
	(void)seq;
	kvp_policy_ps_pick(l, r, q, dec, blocks);
	return 0;
}

const struct kvp_policy_ops kvp_policy_psload = {"prodstack-loadaware", NULL,
                                                 NULL, pick, NULL};
