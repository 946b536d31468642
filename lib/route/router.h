/* SPDX-License-Identifier: MIT */
/*
 * router.h — Dynamo's KV router, replayed offline (docs/spec/route-score.md
 * §2.4, §3): candidates, event-id cursors, the router's own load
 * prediction, approximate (TTL) mode and the decision for each request.
 * The cost function and the sampling it uses are in score.h.
 *
 * Randomness: SplitMix64 seeded per request with seed XOR XXH3_64(id, 0);
 * exactly one draw u = (next >> 11)·2^-53 per request when T > 0 or the
 * tie-break is random. Nothing depends on hash-table order.
 *
 * The router is split by concern (lib/route/route_internal.h holds the
 * state they share): router.c (state, candidates, the decision), score.c
 * (scoring and picking candidates), load.c (active requests), event_apply.c
 * (events and event-id cursors), approx.c (approximate mode).
 *
 * Nothing here prints. Functions returning int give 0, or -1 with a
 * struct kvp_diag filled.
 */
#ifndef KVP_ROUTER_H
#define KVP_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "route/index.h"

enum kvp_tie_break {
	KVP_TIE_LOWEST_ID = 0,
	KVP_TIE_TREE_SIZE = 1,
	KVP_TIE_RANDOM = 2,
	KVP_TIE_RESERVOIR = 3, /* Dynamo's current rule: reservoir sampling */
};

enum kvp_selection_policy {
	KVP_SELECT_DEFAULT = 0, /* scale·adjusted_prefill + decode */
	KVP_SELECT_LMETRIC = 1, /* adjusted_prefill·(decode + 1) */
};

/* The worker pool a router serves (Dynamo's worker_selection stages):
 * which instance of a policy config applies, the decision trace's
 * worker_type ("decode" for aggregated, as Dynamo's aggregated router
 * names its pool) and, for decode, the decode-overlap formula. */
enum kvp_worker_type {
	KVP_WORKER_AGGREGATED = 0,
	KVP_WORKER_PREFILL = 1,
	KVP_WORKER_DECODE = 2,
};

enum kvp_gaps {
	KVP_GAPS_APPLY = 0,
	KVP_GAPS_SKIP = 1,
	KVP_GAPS_FAIL = 2,
};

#define KVP_MAX_ACTIVE_BLOCKS (1ULL << 22) /* default max_active_blocks */

struct kvp_route_opts {
	uint32_t block_size;
	double overlap_weight; /* W = prefill_load_scale, default 1.0 */
	double credit;         /* C = overlap_score_credit, default 1.0 */
	double credit_decay;   /* overlap_score_credit_decay, default 0 */
	int selection;         /* enum kvp_selection_policy */
	double temperature;    /* default 0 */
	uint64_t seed;
	int tie_break;
	int gaps;
	int orphans_root;     /* a store whose parent is unknown starts a chain
	                         (default: skipped, as Dynamo's indexer does) */
	int no_load;          /* P = D = N = 0 */
	int no_track_prefill; /* own decisions add no prefill tokens */
	int no_assume_reuse;  /* request blocks never shared */
	int legacy;           /* classic non-contiguous overlap */
	int tier_credit;      /* credit host/disk overlap */
	double host_weight, disk_weight; /* 0.75, 0.25 */
	int approx;
	uint64_t ttl_ms;     /* approx TTL, default 120 s */
	uint64_t approx_max; /* approx size cap, default 2^20 */
	uint64_t
	    request_expiry_ms; /* active requests expire (3600 s; 0 never) */
	/* active requests hold at most this many blocks in all (oldest
	 * released first; default 2^22; 0: no cap) */
	uint64_t max_active_blocks;
	int have_draw; /* use draw instead of the PRNG (what-if) */
	double draw;
	/* ---- Dynamo's admission features (all off by default) ---- */
	uint64_t total_kv_blocks;    /* per worker, for the decode threshold */
	uint64_t max_batched_tokens; /* per worker, for the fractions */
	int has_decode_thr, has_prefill_thr, has_prefill_frac;
	double decode_thr; /* overloaded: active blocks > thr·total_kv_blocks */
	uint64_t prefill_thr; /* overloaded: prefill tokens > thr */
	double prefill_frac; /* overloaded: prefill > frac·max_batched_tokens */
	uint64_t session_ttl_ms;   /* session affinity idle TTL; 0 off */
	uint64_t predicted_ttl_ms; /* predict-on-route side index; 0 off */
	int track_output_blocks; /* active requests hold their output blocks */
	int load_aware; /* Dynamo's --load-aware: no cache state at all, so a
	                   routed request adds its whole ISL as prefill */
	/* ---- Dynamo's current cost knobs (score.h) ---- */
	double request_weight;    /* decode_active_request_weight, default 0 */
	double shared_multiplier; /* shared_cache_multiplier (no shared-cache
	                             hits are modelled: its term is 0) */
	int worker_type;          /* enum kvp_worker_type */
	int score_parts; /* fill the intermediates of struct kvp_cand_score
	                    (traces, --score-parts); else only what the
	                    logit needs (kvp_router_new sets it when
	                    request_weight or a decode pool need them) */
};

void kvp_route_opts_init(struct kvp_route_opts *o);

struct kvp_router;

struct kvp_router *kvp_router_new(const struct kvp_route_opts *o);
void kvp_router_free(struct kvp_router *r);
/* The router's index: its nodes, (block, holder) pairs and bytes. */
void kvp_router_index_totals(const struct kvp_router *r, size_t *nodes,
                             uint64_t *pairs, size_t *bytes);

/* Declares candidate (worker, rank). 0, or -1 on allocation failure. */
int kvp_router_add_candidate(struct kvp_router *r, uint64_t worker_id,
                             uint32_t dp_rank);
/* Removes every rank and tier of worker_id from candidates and index, and
 * forgets its active requests. Returns the number of ranks removed. */
size_t kvp_router_remove_worker(struct kvp_router *r, uint64_t worker_id);
size_t kvp_router_ncandidates(const struct kvp_router *r);

/* External load baseline for a candidate (a `load` record). */
int kvp_router_set_load(struct kvp_router *r, uint64_t worker_id,
                        uint32_t dp_rank, uint64_t prefill_tokens,
                        uint64_t decode_blocks);

/* ---- events ------------------------------------------------------------ */

enum kvp_event_kind {
	KVP_EV_STORED = 0,
	KVP_EV_REMOVED = 1,
	KVP_EV_CLEARED = 2,
};

struct kvp_event {
	int kind;
	uint64_t worker_id;
	uint32_t dp_rank;
	int tier;
	int has_event_id;
	uint64_t event_id;
	int has_parent;
	uint64_t parent;
	const uint64_t *ext;   /* stored: block_hash; removed: block_hashes */
	const uint64_t *local; /* stored: tokens_hash */
	size_t n;
};

struct kvp_event_result {
	int applied;       /* the event changed (or was let at) the index */
	int stale;         /* event_id <= last applied: ignored */
	int gap;           /* event_id > last + 1 */
	uint64_t expected; /* with gap: last + 1 */
	int store_status;  /* enum kvp_store_status, stored only */
	size_t unknown;    /* removed: hashes not held */
};

/* Event counters (the summary record). */
struct kvp_route_stats {
	uint64_t events, applied, stale, gaps, gap_skipped;
	uint64_t parent_not_found, self_reference, duplicate_store;
	uint64_t unknown_removals, block_size_mismatch;
	uint64_t blocks_stored, blocks_removed, clears, workers_removed;
	uint64_t requests, routed, queries, no_candidate;
	uint64_t non_max_overlap, blocks_lost;
	uint64_t hit_blocks, reachable_hit_blocks, request_blocks;
	uint64_t hashed_blocks, approx_expired, approx_pruned;
	uint64_t requests_expired;
	uint64_t requests_capped; /* released early: max_active_blocks */
	uint64_t orphans_rooted;  /* parent unknown, indexed from the root */
	/* Dynamo features */
	uint64_t rejected;                  /* all eligible overloaded */
	uint64_t queued, queued_at_end;     /* the router queue (queue.c) */
	uint64_t side_expired, side_pruned; /* predict-on-route side index */
};

/* Applies an event: cursor check (spec §2.4), then the index operation.
 * The (worker, rank) becomes a candidate. Returns 0, or -1 on allocation
 * failure or a gap under KVP_GAPS_FAIL (d says which). */
int kvp_router_apply(struct kvp_router *r, const struct kvp_event *ev,
                     struct kvp_event_result *res, struct kvp_diag *d);

/* ---- requests ----------------------------------------------------------- */

struct kvp_request {
	const char *id; /* bytes for the PRNG seed and the load table */
	size_t id_len;
	const uint64_t *local; /* full-block local hashes */
	const uint64_t *seq;   /* their sequence hashes (NULL: chained) */
	size_t n;
	uint64_t isl;
	int has_ts;
	uint64_t ts_ms;
	int has_osl;  /* output_length (Mooncake) or osl */
	uint64_t osl; /* output tokens (--track-output-blocks, simulated
	                 time) */
	int commit;   /* 0: query only */
	int has_weight, has_temperature;
	double weight, temperature;
	const uint64_t *allowed; /* worker ids; NULL: all */
	size_t n_allowed;
	int pinned;
	uint64_t pin_worker;
	uint32_t pin_rank;
	/* Dynamo features (route_input.c: "session_id", "replica",
	 * "output_length" / "osl") */
	const char *session_id; /* NULL: none */
	size_t session_len;
	int has_replica;
	uint64_t replica;
	int session_pinned; /* pinned by session affinity (router-internal) */
};

struct kvp_cand_score {
	uint64_t worker_id;
	uint32_t dp_rank;
	uint32_t overlap, host_overlap, disk_overlap;
	uint64_t tree_size;
	uint64_t active_prefill_tokens;
	uint64_t prefill_tokens; /* P + ISL − O·bs, saturating */
	double prefill_blocks;
	uint64_t active_blocks, new_blocks, decode_blocks;
	double logit;
	double prob;          /* T > 0 only */
	double credit_factor; /* overlap credit decay factor (1 without) */
	int tied;
	/* Dynamo's score intermediates (score.h; its names in comments),
	 * filled with the router's score_parts option only */
	uint64_t active_requests;  /* active_requests (0 with no_load) */
	double raw_prefill_blocks; /* (P + ISL)/bs */
	double eff_credit;         /* effective_overlap_score_credit: C·f */
	double credit_blocks;      /* overlap_credit_blocks */
	double prefill_cost;       /* prefill_cost_blocks: W·prefill_blocks */
	double request_cost;       /* active_request_cost_blocks */
	int decode_formula;        /* decode_overlap_formula */
};

enum {
	KVP_WARN_NO_FULL_BLOCK = 1,
	KVP_WARN_NO_CANDIDATES = 2,
	KVP_WARN_DUPLICATE_REQUEST = 4,
	KVP_WARN_NO_OVERLAP = 8,
};

struct kvp_decision {
	size_t ncand;
	struct kvp_cand_score *cand; /* sorted by (worker_id, dp_rank) */
	long chosen;                 /* index into cand, -1: none */
	long max_overlap;            /* index, -1: none */
	size_t ntied;
	double temperature, weight;
	int drew;
	double u;
	const char *tie_break; /* "none", "lowest-id", "tree-size",
	                          "random", "reservoir", "softmax", "pinned",
	                          "session" */
	uint64_t isl, request_blocks, hashed_blocks;
	unsigned warnings;
	/* Dynamo features (kvpipe-records(5)) */
	size_t tie_count;       /* candidates at the lowest cost (1 pinned) */
	const char *rejected;   /* NULL, "AllEligibleWorkersOverloaded",
	                           "PinnedWorkerOverloaded", "QueuedAtEnd" */
	size_t overloaded;      /* candidates filtered as overloaded */
	const char *affinity;   /* NULL, "bound" (session hit), "bind" */
	uint64_t output_blocks; /* --track-output-blocks: held until free */
	int queued;             /* waited in the router queue */
	int has_wait;
	uint64_t wait_ms;
	int has_replica;
	uint64_t replica;
	int credit_decay; /* candidates carry credit_factor */
	/* the policy lab */
	const char *policy;        /* the policy's name (policy.h) */
	const char *policy_reason; /* how it chose; NULL: nothing to say */
	/* the engine model: the cached tokens the chosen engine will report */
	int has_predicted;
	uint64_t predicted_cached_tokens;
};

/* Scores every eligible candidate, picks one and (if commit) records the
 * load and, in approx mode, the blocks. d->cand is owned by the router and
 * valid until the next call. Returns 0, or -1 (allocation failure, pinned
 * worker unknown). */
int kvp_router_route(struct kvp_router *r, const struct kvp_request *q,
                     struct kvp_decision *dec, struct kvp_diag *d);

/* 1 when q has an eligible (allowed, not overloaded) candidate and every
 * one has more than threshold_tokens active prefill tokens: Dynamo's
 * router queue holds the request (--router-queue-threshold). Requests
 * expired at the router's clock (kvp_router_tick) are released first. */
int kvp_router_queue_busy(struct kvp_router *r, const struct kvp_request *q,
                          double threshold_tokens);

/* Replica sync: request q (its sequence hashes seq), routed by another
 * replica to (w, rank) with `overlap` blocks cached, is added to r's load
 * as r's own decisions are. 0, or -1 on allocation failure. */
int kvp_router_add_external(struct kvp_router *r, const struct kvp_request *q,
                            const uint64_t *seq, uint64_t w, uint32_t rank,
                            uint32_t overlap);
/* Adds src's request counters and per-candidate routed counts into dst's
 * (the summary of several replicas). */
void kvp_router_absorb(struct kvp_router *dst, const struct kvp_router *src);
uint32_t kvp_router_block_size(const struct kvp_router *r);
/* Session affinity across replicas: another replica bound (or used) q's
 * session on (w, rank). A live conflicting binding is kept, otherwise the
 * binding is taken and its idle timer restarted (Dynamo's advisory
 * binding events). 0, or -1 on allocation failure. */
int kvp_router_session_observe(struct kvp_router *r,
                               const struct kvp_request *q, uint64_t w,
                               uint32_t rank);
/* After a free: 1 and the binding (session key, worker) whose request
 * ended, to restart the peers' idle timers with
 * kvp_router_session_touch(); 0 if none. */
int kvp_router_session_released(struct kvp_router *r, uint64_t *key,
                                uint64_t *w, uint32_t *rank);
int kvp_router_session_touch(struct kvp_router *r, uint64_t key, uint64_t w,
                             uint32_t rank);
/* Moves the router's clock to ts (ms) if later: lifecycle records with a
 * timestamp restart session idle timers there. */
void kvp_router_tick(struct kvp_router *r, uint64_t ts);

/* Lifecycle: 0, or -1 if the request is not active (d set). */
int kvp_router_prefill_done(struct kvp_router *r, const char *id, size_t id_len,
                            struct kvp_diag *d);
int kvp_router_free_request(struct kvp_router *r, const char *id, size_t id_len,
                            struct kvp_diag *d);

const struct kvp_route_stats *kvp_router_stats(const struct kvp_router *r);
struct kvp_route_stats *kvp_router_stats_mut(struct kvp_router *r);

/* The options the router was made with. */
const struct kvp_route_opts *kvp_router_opts(const struct kvp_router *r);

/* Per candidate totals for the summary, in candidate order. */
struct kvp_cand_total {
	uint64_t worker_id;
	uint32_t dp_rank;
	uint64_t routed;
	uint64_t tree_size;
	uint64_t active_requests;
};
size_t kvp_router_totals(struct kvp_router *r, struct kvp_cand_total *out,
                         size_t max);

#endif
