/* SPDX-License-Identifier: MIT */
/*
 * policy_pskv.c — vLLM production-stack's kvaware router:
 * score = matched/prompt − β·relative load, the load being the
 * candidate's active requests (policy.c: kvp_policy_ps_pick).
 */
#include "lab/lab_internal.h"
#include "route/route_view.h"

static uint64_t
requests(const struct kvp_router *r, uint32_t ci)
{
	return kvp_view_requests(r, ci);
}

static int
pick(struct kvp_lab *l, struct kvp_router *r, const struct kvp_request *q,
     const uint64_t *seq, struct kvp_decision *dec)
{
	(void)seq;
	kvp_policy_ps_pick(l, r, q, dec, requests);
	return 0;
}

const struct kvp_policy_ops kvp_policy_pskv = {"prodstack-kvaware", NULL, NULL,
                                               pick, NULL};
