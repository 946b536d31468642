/* SPDX-License-Identifier: MIT */
/*
 * agg.h — kv-report's streaming aggregation of one decision stream (one
 * run), in memory bounded by constants and the rolling window, whatever
 * the input length:
 *  - totals: decisions, routed, rejected, sum(overlap_blocks),
 *    sum(request_blocks), sum(max_overlap.blocks), non-max choices, blocks
 *    lost, routed per worker (for balance = busiest / mean);
 *  - a fixed number of time buckets (KVP_AGG_BUCKETS): when a decision
 *    falls past the last one, neighbouring buckets merge and the bucket
 *    width doubles. Time is ts_ms when the first decision has one, else
 *    the decision's position. Each bucket holds its decisions' overlap and
 *    request blocks, the rolling hit rate (over the last `window`
 *    decisions) at its last decision, routed requests per worker and the
 *    peak active_blocks per worker (from full records' candidates);
 *  - the overlap histogram: overlap_blocks / request_blocks in
 *    KVP_AGG_HIST equal bins (the last one closed);
 *  - simulated TTFT (ttft_ms, when decisions carry it) in logarithmic bins
 *    (KVP_AGG_TTFT_PER_DECADE per decade from 0.01 ms): p50 and p99 are
 *    read back to within one bin (about 12%);
 *  - router vs engine: decisions carrying predicted_cached_tokens and
 *    engine_cached_tokens, how many agree, and the few that differ most.
 * Per-worker series keep the first KVP_AGG_WORKERS workers seen; later
 * workers are summed into one "other" series.
 * A Dynamo replay row (decision.h) counts in tokens: its reused and input
 * tokens stand for the overlap and request blocks (and for the reachable
 * overlap: a row has no best figure in tokens); non-max choices and blocks
 * lost stay the router's, in blocks.
 */
#ifndef KVP_AGG_H
#define KVP_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"
#include "report/decision.h"

#define KVP_AGG_BUCKETS 96
#define KVP_AGG_WORKERS 12
#define KVP_AGG_HIST 20
#define KVP_AGG_TTFT_PER_DECADE 20
#define KVP_AGG_TTFT_BINS (KVP_AGG_TTFT_PER_DECADE * 10)

/* A fixed number of time buckets over a stream of increasing times: when
 * a time falls past the last bucket, the width doubles and the caller's
 * halve(ctx) merges bucket 2i and 2i+1 into i (shared by the decision and
 * the event aggregations). Times before the first one count as the first
 * one. The first width is 1 unless the caller set one before the first
 * time. */
struct kvp_agg_tline {
	int started, n; /* n: highest bucket used + 1 */
	double t0, width;
};

/* The bucket of time t, among nb. */
int kvp_agg_tline_at(struct kvp_agg_tline *tl, double t, int nb,
                     void (*halve)(void *ctx), void *ctx);
/* The end of bucket i on the time axis. */
double kvp_agg_tline_end(const struct kvp_agg_tline *tl, int i);

struct kvp_agg_bucket {
	uint64_t n, overlap, request_blocks;
	double roll; /* rolling hit rate at the last decision, if has_roll */
	int has_roll;
	uint64_t routed[KVP_AGG_WORKERS + 1]; /* [KVP_AGG_WORKERS]: other */
	uint64_t active[KVP_AGG_WORKERS + 1]; /* peak active blocks */
};

#define KVP_AGG_WORST 10
#define KVP_AGG_ID_MAX 64 /* bytes of a request id's JSON text kept */

struct kvp_agg_worst {
	char id[KVP_AGG_ID_MAX];
	size_t id_len;
	uint64_t pred, engine;
	uint64_t err; /* |pred - engine| */
};

struct kvp_agg_truth {
	uint64_t n, exact, over, under, abs_err;
	struct kvp_agg_worst worst[KVP_AGG_WORST]; /* largest err first */
	size_t n_worst;
};

struct kvp_agg {
	/* totals */
	uint64_t decisions, routed, rejected, overlap, request_blocks;
	uint64_t max_overlap, non_max, blocks_lost;
	int has_candidates; /* full records: active blocks known */
	/* time buckets */
	int time_is_ts;
	double t_last;
	struct kvp_agg_tline tl;
	struct kvp_agg_bucket b[KVP_AGG_BUCKETS];
	/* workers */
	struct kvp_kmap wmap; /* (dp_rank, worker_id) -> index + 1 */
	uint64_t *w_routed;
	size_t n_workers, cap_workers;
	uint64_t panel_wid[KVP_AGG_WORKERS], panel_dp[KVP_AGG_WORKERS];
	size_t n_panel;
	int other_used;
	/* histograms */
	uint64_t hist[KVP_AGG_HIST];
	uint64_t ttft[KVP_AGG_TTFT_BINS];
	uint64_t n_ttft;
	int has_sim; /* the summary's simulated TTFT p50 / p99 */
	double sim_p50, sim_p99;
	/* rolling window */
	uint64_t *ring; /* pairs: overlap, request_blocks */
	size_t window, ring_pos, ring_n;
	uint64_t roll_overlap, roll_blocks;
	/* the run's policy, from the first decision that names one */
	char policy[64];
	/* router vs engine (route-score --engine-model): decisions with both
	 * cached-token figures, and the KVP_AGG_WORST largest differences
	 * (the earliest first among equals) */
	struct kvp_agg_truth truth;
	/* Dynamo replay: rows counted in tokens; its report's figures */
	int token_units, has_replay;
	struct kvp_replay_summary replay;
};

/* window: decisions in the rolling hit rate (>= 1). KVP_OK or KVP_FAIL. */
int kvp_agg_init(struct kvp_agg *a, size_t window);
void kvp_agg_fini(struct kvp_agg *a);

/* Adds a decision (other records are ignored). KVP_OK or KVP_FAIL. */
int kvp_agg_add(struct kvp_agg *a, const struct kvp_decision_rec *d);

/* A Dynamo replay report's summary figures for the run; its median and
 * p99 TTFT stand in for decisions' ttft_ms as a summary's do. */
void kvp_agg_replay(struct kvp_agg *a, const struct kvp_replay_summary *sum);

/* Derived values. */
double kvp_agg_hit_rate(const struct kvp_agg *a);
double kvp_agg_reachable_rate(const struct kvp_agg *a);
double kvp_agg_balance(const struct kvp_agg *a);
/* The q-quantile (0 < q < 1) of ttft_ms, or -1 without TTFT data;
 * without ttft_ms in decisions, the summary's simulated p50 (q <= 0.5)
 * or p99 (q > 0.5), exact. */
double kvp_agg_ttft(const struct kvp_agg *a, double q);
/* End of bucket i on the time axis (ms, or decisions). */
double kvp_agg_bucket_end(const struct kvp_agg *a, int i);

#endif
