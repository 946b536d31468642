/* SPDX-License-Identifier: MIT */
/*
 * policy_dynamo.c — the default policy: Dynamo's cost and sampling
 * (score.h), unchanged.
 */
#include "lab/lab_internal.h"
#include "route/route_view.h"

static int
pick(struct kvp_lab *l, struct kvp_router *r, const struct kvp_request *q,
     const uint64_t *seq, struct kvp_decision *dec)
{
	(void)seq;
	(void)l;
	kvp_view_pick(r, q, dec);
	return 0;
}

const struct kvp_policy_ops kvp_policy_dynamo = {"dynamo", NULL, NULL, pick,
                                                 NULL};
