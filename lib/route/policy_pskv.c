/* SPDX-License-Identifier: MIT */
/*
 * policy_pskv.c — vLLM production-stack's kvaware router:
 * score = matched/prompt − β·relative load, the load being the
 * candidate's active requests (policy.c: kvp_policy_ps_pick).
 */
#include "route/route_internal.h"

static uint64_t
requests(const struct kvp_router *r, uint32_t ci)
{
	return r->cands[ci].active_requests;
}

static int
pick(struct kvp_router *r, const struct kvp_request *q, const uint64_t *seq,
     struct kvp_decision *dec)
{
	(void)seq;
	kvp_policy_ps_pick(r, q, dec, requests);
	return 0;
}

const struct kvp_policy_ops kvp_policy_pskv = {"prodstack-kvaware", NULL, NULL,
                                               pick, NULL};
