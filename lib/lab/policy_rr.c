/* SPDX-License-Identifier: MIT */
/*
 * policy_rr.c — round-robin: request i (0-based, every request in input
 * order, queries and unroutable ones included) goes to candidate
 * i mod count, candidates in (worker_id, dp_rank) order.
 */
#include "lab/lab_internal.h"
#include "route/route_view.h"

static int
pick(struct kvp_lab *l, struct kvp_router *r, const struct kvp_request *q,
     const uint64_t *seq, struct kvp_decision *dec)
{
	(void)l;
	(void)q;
	(void)seq;
	/* kvp_router_stats(r)->requests already counts this request */
	dec->chosen = (long)((kvp_router_stats(r)->requests - 1) % dec->ncand);
	kvp_policy_max_overlap(dec);
	return 0;
}

const struct kvp_policy_ops kvp_policy_rr = {"round-robin", NULL, NULL, pick,
                                             NULL};
