/* SPDX-License-Identifier: MIT */
/*
 * policy.c — the table of peer policies (policy.h) and what they share:
 * the max-overlap candidate, the candidate behind a score row and
 * production-stack's score. Adding a policy: one lib/route/policy_*.c
 * file with its struct kvp_policy_ops, one enum value (policy.h) and one
 * row here.
 */
#include <string.h>

#include "route/policy.h"
#include "route/route_internal.h"
#include "route/router.h"

const struct kvp_policy_ops *const kvp_policy_table[KVP_POLICY_COUNT] = {
    [KVP_POLICY_DYNAMO] = &kvp_policy_dynamo,
    [KVP_POLICY_ROUND_ROBIN] = &kvp_policy_rr,
    [KVP_POLICY_RANDOM] = &kvp_policy_random,
    [KVP_POLICY_LEAST_LOADED] = &kvp_policy_least,
    [KVP_POLICY_SGLANG] = &kvp_policy_sglang,
    [KVP_POLICY_PS_KVAWARE] = &kvp_policy_pskv,
    [KVP_POLICY_PS_LOADAWARE] = &kvp_policy_psload,
};

const char *const *
kvp_policy_names(void)
{
	/* the policies' own names, in enum order (tests check they agree) */
	static const char *const names[KVP_POLICY_COUNT + 1] = {
	    "dynamo",
	    "round-robin",
	    "random",
	    "least-loaded",
	    "sglang-cache-aware",
	    "prodstack-kvaware",
	    "prodstack-loadaware",
	    NULL};

	return names;
}

void
kvp_policy_opts_init(struct kvp_policy_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->policy = KVP_POLICY_DYNAMO;
	o->balance_abs = 64;
	o->balance_rel = 1.5;
	o->cache_threshold = 0.3;
	o->beta = 0.5;
}

void
kvp_policy_max_overlap(struct kvp_router *r, struct kvp_decision *dec)
{
	long best = 0;

	for (size_t i = 1; i < dec->ncand; i++)
		if (r->cs[i].overlap > r->cs[best].overlap)
			best = (long)i;
	dec->max_overlap = best;
}

uint32_t
kvp_policy_cand(const struct kvp_router *r, size_t i)
{
	return (uint32_t)kvp_router_cand_find(r, r->cs[i].worker_id,
	                                      r->cs[i].dp_rank);
}

/* score = matched/prompt − β·load/max load (0 when every load is 0);
 * highest wins, ties to the lowest id. matched: device overlap in tokens,
 * at most the prompt. */
void
kvp_policy_ps_pick(struct kvp_router *r, const struct kvp_request *q,
                   struct kvp_decision *dec,
                   uint64_t (*loadfn)(const struct kvp_router *, uint32_t))
{
	uint64_t maxload = 0;
	double best = 0;

	for (size_t i = 0; i < dec->ncand; i++) {
		uint64_t l = loadfn(r, kvp_policy_cand(r, i));

		if (l > maxload)
			maxload = l;
	}
	for (size_t i = 0; i < dec->ncand; i++) {
		uint64_t m = (uint64_t)r->cs[i].overlap * r->o.block_size;
		uint64_t l = loadfn(r, kvp_policy_cand(r, i));
		double s = 0;

		if (m > q->isl)
			m = q->isl;
		if (q->isl > 0)
			s = (double)m / (double)q->isl;
		if (maxload > 0)
			s -= r->o.pol.beta * ((double)l / (double)maxload);
		if (dec->chosen < 0 || s > best) {
			dec->chosen = (long)i;
			best = s;
		}
	}
	kvp_policy_max_overlap(r, dec);
}
