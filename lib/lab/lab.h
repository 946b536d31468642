/* SPDX-License-Identifier: MIT */
/*
 * lab.h — the policy lab attached to a router (lab.c): the peer policy
 * that picks (policy.h), bounded per-worker caches (LRU) and their
 * simulated events, miss-ratio curves and simulated time, and the run
 * totals the summary reports. The lab reaches the router through its
 * hooks and narrow view (route/route_view.h) only.
 *
 * The functions taking a router need one with a lab attached (the totals
 * and curves of a router without one are empty). Nothing here prints.
 */
#ifndef KVP_LAB_H
#define KVP_LAB_H

#include <stddef.h>
#include <stdint.h>

#include "lab/policy.h"

struct kvp_router;

/* Attaches a lab with options o to r (its hooks, route_view.h): the
 * router owns it from then on and frees it with itself. 0, or -1 on
 * allocation failure (nothing attached). */
int kvp_lab_attach(struct kvp_router *r, const struct kvp_policy_opts *o);

/* The options of r's lab; NULL when r has none. */
const struct kvp_policy_opts *kvp_lab_opts(const struct kvp_router *r);

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
const struct kvp_sim_event *kvp_lab_sim_events(struct kvp_router *r, size_t *n);

/* ---- the engine model (--engine-model) --------------------------------- */

enum kvp_engine_model {
	KVP_ENGINE_NONE = 0,
	KVP_ENGINE_VLLM,
	KVP_ENGINE_SGLANG,
};

/* NULL-terminated names in enum order: "none", "vllm", "sglang". */
const char *const *kvp_engine_names(void);

struct kvp_engine_totals {
	uint64_t evictions;      /* device blocks evicted */
	uint64_t host_evictions; /* host copies evicted */
	uint64_t loaded_back;    /* host blocks loaded back to the device */
	uint64_t overflow;       /* the most blocks in use over the capacity
	                            (nothing evictable: every block held by
	                            running requests) */
	uint64_t clears;         /* caches emptied by cleared events */
};

/* The engine caches of (worker_id, dp_rank) on r are emptied (a cleared
 * record or event); nothing when r has no engine model or no such
 * candidate. */
void kvp_lab_clear(struct kvp_router *r, uint64_t worker_id, uint32_t dp_rank);

/* 1 and *t filled when r's lab has an engine model, else 0. */
int kvp_lab_engine_totals(const struct kvp_router *r,
                          struct kvp_engine_totals *t);

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
int kvp_lab_run_totals(struct kvp_router *r, struct kvp_lab_totals *t);

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
int kvp_lab_mrc(struct kvp_router *r, size_t k, struct kvp_mrc *out);

#endif
