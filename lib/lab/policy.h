/* SPDX-License-Identifier: MIT */
/*
 * policy.h — route-score as a policy lab: which peer policy picks the
 * worker (Dynamo's cost by default, or SGLang's, production-stack's and
 * the plain baselines), bounded per-worker caches (LRU), miss-ratio curves
 * (Mattson's stack distances) and simulated time. The options are the
 * lab's own (struct kvp_policy_opts), beside the router's; lab.h attaches
 * the lab to a router.
 *
 * Policies (kvp_policy_names order; the table is in policy.c, each policy
 * in its own lib/lab/policy_*.c file):
 *   dynamo              the router's cost (score.h), unchanged
 *   round-robin         request i (0-based, every request in input
 *                       order) goes to candidate i mod count, in
 *                       (worker_id, dp_rank) order
 *   random              one seeded draw u per request: candidate floor(u·n)
 *   least-loaded        fewest active blocks; ties: lowest id
 *   sglang-cache-aware  SGLang's router: if loads (active requests) are
 *                       imbalanced (max − min > balance_abs and max >
 *                       balance_rel·min) the shortest queue; else the
 *                       longest prefix match in its own approximate tree
 *                       (fed by its decisions) when matched/prompt >
 *                       cache_threshold, else the smallest tree
 *   prodstack-kvaware   argmax matched/prompt − β·requests_w/max requests
 *   prodstack-loadaware argmax matched/prompt − β·blocks_w/max blocks
 *                       (matched: the index's device overlap in tokens)
 *   dynamo-two-tier-cost-fn  Dynamo's two-tier worker-selection policy
 *                       (policy_twotier.c): the load tier, the cache tier
 *                       (strict threshold), else the least loaded
 *
 * Nothing here prints.
 */
#ifndef KVP_POLICY_H
#define KVP_POLICY_H

#include <stddef.h>
#include <stdint.h>

enum kvp_policy_id {
	KVP_POLICY_DYNAMO = 0,
	KVP_POLICY_ROUND_ROBIN,
	KVP_POLICY_RANDOM,
	KVP_POLICY_LEAST_LOADED,
	KVP_POLICY_SGLANG,
	KVP_POLICY_PS_KVAWARE,
	KVP_POLICY_PS_LOADAWARE,
	KVP_POLICY_TWO_TIER,
	KVP_POLICY_COUNT,
};

struct kvp_policy_opts {
	int policy;             /* enum kvp_policy_id */
	uint64_t balance_abs;   /* sglang: 64 */
	double balance_rel;     /* sglang: 1.5 */
	double cache_threshold; /* sglang: 0.3 */
	double beta;            /* prodstack: 0.5 */
	uint64_t capacity;      /* blocks per worker; 0: unbounded, no LRU */
	int emit_events;        /* keep LRU stores/evictions for the caller */
	int mrc;                /* stack distances for mrc records */
	double prefill_tps;     /* simulated time; 0: off */
	double decode_tps;
	/* the engine model (lab.h, enum kvp_engine_model): what the engines
	 * will report as cached; 0: none */
	int engine_model;
	uint64_t engine_capacity; /* device blocks per worker; 0: unbounded */
	uint64_t host_capacity;   /* sglang's host tier; 0: none */
	uint32_t block_size;      /* the router's, for the engine model */
	/* dynamo-two-tier-cost-fn's parameters (Dynamo's names) */
	double tt_cache_threshold; /* cache_threshold: 0.5 */
	uint64_t tt_balance_abs;   /* balance_abs_threshold: 32 */
	double tt_balance_rel;     /* balance_rel_threshold: 1.1 */
	double tt_host_weight;     /* host_cache_weight: 0 (device only) */
};

void kvp_policy_opts_init(struct kvp_policy_opts *o);

/* NULL-terminated names in enum order (for option parsing). */
const char *const *kvp_policy_names(void);

struct kvp_cand_score;

/* dynamo-two-tier-cost-fn's overlap of a scored candidate: its device
 * overlap + tt_host_weight · the host-tier blocks beyond it. */
double kvp_policy_twotier_overlap(const struct kvp_policy_opts *o,
                                  const struct kvp_cand_score *s);

#endif
