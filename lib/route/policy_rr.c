/* SPDX-License-Identifier: MIT */
/*
 * policy_rr.c — round-robin: committed request i (0-based, in input order)
 * goes to candidate i mod count, candidates in (worker_id, dp_rank) order.
 * A query takes the next one without moving the counter.
 */
#include <stdlib.h>

#include "route/route_internal.h"

struct rr_state {
	uint64_t next;
};

static int
init(struct kvp_router *r)
{
	r->lab->pstate = calloc(1, sizeof(struct rr_state));
	return r->lab->pstate ? 0 : -1;
}

static void
fini(struct kvp_router *r)
{
	free(r->lab->pstate);
}

static int
pick(struct kvp_router *r, const struct kvp_request *q, const uint64_t *seq,
     struct kvp_decision *dec)
{
	struct rr_state *s = r->lab->pstate;

	(void)seq;
	dec->chosen = (long)(s->next % dec->ncand);
	if (q->commit)
		s->next++;
	kvp_policy_max_overlap(r, dec);
	return 0;
}

const struct kvp_policy_ops kvp_policy_rr = {"round-robin", init, fini, pick,
                                             NULL};
