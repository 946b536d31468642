/* SPDX-License-Identifier: MIT */
/*
 * policy.c — the table of peer policies (policy.h). What the policies
 * share is in policy_util.c, which they call (never this file, whose
 * table names them). Adding a policy: one lib/lab/policy_*.c file with
 * its struct kvp_policy_ops, one enum value (policy.h) and one row here.
 */
#include <string.h>

#include "lab/lab_internal.h"

const struct kvp_policy_ops *const kvp_policy_table[KVP_POLICY_COUNT] = {
    [KVP_POLICY_DYNAMO] = &kvp_policy_dynamo,
    [KVP_POLICY_ROUND_ROBIN] = &kvp_policy_rr,
    [KVP_POLICY_RANDOM] = &kvp_policy_random,
    [KVP_POLICY_LEAST_LOADED] = &kvp_policy_least,
    [KVP_POLICY_SGLANG] = &kvp_policy_sglang,
    [KVP_POLICY_PS_KVAWARE] = &kvp_policy_pskv,
    [KVP_POLICY_PS_LOADAWARE] = &kvp_policy_psload,
    [KVP_POLICY_TWO_TIER] = &kvp_policy_twotier,
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
	    "dynamo-two-tier-cost-fn",
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
	o->tt_cache_threshold = 0.5;
	o->tt_balance_abs = 32;
	o->tt_balance_rel = 1.1;
}
