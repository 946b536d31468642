/* SPDX-License-Identifier: MIT */
/*
 * policy.c — the table of peer policies (policy.h) and what they share:
 * the max-overlap candidate, the candidate behind a score row and
 * production-stack's score. Adding a policy: one lib/lab/policy_*.c
 * file with its struct kvp_policy_ops, one enum value (policy.h) and one
 * row here.
 */
#include <string.h>

#include "lab/lab_internal.h"
#include "route/route_view.h"

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
kvp_policy_max_overlap(struct kvp_decision *dec)
{
	long best = 0;

	for (size_t i = 1; i < dec->ncand; i++)
		if (dec->cand[i].overlap > dec->cand[best].overlap)
			best = (long)i;
	dec->max_overlap = best;
}

/* score = matched/prompt − β·load/max load (0 when every load is 0);
 * highest wins, ties to the lowest id. matched: device overlap in tokens,
 * at most the prompt. */
void
kvp_policy_ps_pick(const struct kvp_lab *l, struct kvp_router *r,
                   const struct kvp_request *q, struct kvp_decision *dec,
                   uint64_t (*loadfn)(const struct kvp_router *, uint32_t))
{
	uint64_t maxload = 0;
	double best = 0;

	for (size_t i = 0; i < dec->ncand; i++) {
		uint64_t ld = loadfn(r, kvp_view_cand(r, &dec->cand[i]));

		if (ld > maxload)
			maxload = ld;
	}
	for (size_t i = 0; i < dec->ncand; i++) {
		uint64_t m =
		    (uint64_t)dec->cand[i].overlap * kvp_router_block_size(r);
		uint64_t ld = loadfn(r, kvp_view_cand(r, &dec->cand[i]));
		double s = 0;

		if (m > q->isl)
			m = q->isl;
		if (q->isl > 0)
			s = (double)m / (double)q->isl;
		if (maxload > 0)
			s -= l->o.beta * ((double)ld / (double)maxload);
		if (dec->chosen < 0 || s > best) {
			dec->chosen = (long)i;
			best = s;
		}
	}
	kvp_policy_max_overlap(dec);
}
