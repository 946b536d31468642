/* SPDX-License-Identifier: MIT */
/*
 * policy.h — route-score as a policy lab: which peer policy picks the
 * worker (Dynamo's cost by default, or SGLang's, production-stack's and
 * the plain baselines), bounded per-worker caches (LRU), miss-ratio curves
 * (Mattson's stack distances) and simulated time. The options live in
 * struct kvp_route_opts (router.h) as one member, `pol`.
 *
 * Policies (kvp_policy_names order; the table is in policy.c, each policy
 * in its own lib/route/policy_*.c file):
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
 *
 * Nothing here prints. Accessors borrow the router.
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
};

void kvp_policy_opts_init(struct kvp_policy_opts *o);

/* NULL-terminated names in enum order (for option parsing). */
const char *const *kvp_policy_names(void);

struct kvp_router;

struct kvp_route_opts;
/* The options the router was made with. */
const struct kvp_route_opts *kvp_router_opts(const struct kvp_router *r);

/* ---- simulated cache events (--emit-events) ----------------------------- */

struct kvp_sim_event {
	int removed; /* 0: stored */
	uint64_t worker_id;
	uint32_t dp_rank;
	uint64_t event_id; /* per (worker, rank), from 1 */
	int has_parent;
	uint64_t parent;
	const uint64_t *ext;   /* block hashes (sequence hashes) */
	const uint64_t *local; /* stored: tokens_hash */
	size_t n;
};

/* The cache events of the last routed request (valid until the next
 * call on r); *n gets their number. */
const struct kvp_sim_event *kvp_router_sim_events(struct kvp_router *r,
                                                  size_t *n);

/* ---- run totals --------------------------------------------------------- */

struct kvp_lab_totals {
	int capacity_on, simtime_on;
	uint64_t evictions;
	uint64_t ttft_n;
	double ttft_p50_ms, ttft_p99_ms, ttft_mean_ms;
	uint64_t completed; /* requests the simulated time finished */
	/* balance over live candidates: max / mean (0 when the mean is 0) */
	double routed_max_mean, blocks_max_mean;
	uint64_t routed_max; /* requests routed to the busiest candidate */
	uint64_t blocks_max; /* its active blocks summed over decisions */
};

/* Fills t (sorts the TTFT samples). 0, or -1 on allocation failure. */
int kvp_router_lab_totals(struct kvp_router *r, struct kvp_lab_totals *t);

/* ---- miss-ratio curves (--mrc) ------------------------------------------ */

#define KVP_MRC_BUCKETS 40 /* capacities 2^0 .. 2^39 */

struct kvp_mrc {
	uint64_t worker_id; /* fleet: unused */
	uint32_t dp_rank;
	uint64_t accesses;                 /* blocks sent */
	uint64_t cold;                     /* first sight: never a hit */
	uint64_t hits_le[KVP_MRC_BUCKETS]; /* hits at capacity 2^k */
	int nbuckets; /* largest useful capacity 2^(n−1) */
};

/* Curve of the k-th live candidate in (worker_id, dp_rank) order (k <
 * kvp_router_ncandidates), or of the fleet when k is SIZE_MAX. 0, or -1
 * if k is out of range. */
int kvp_router_mrc(struct kvp_router *r, size_t k, struct kvp_mrc *out);

#endif
