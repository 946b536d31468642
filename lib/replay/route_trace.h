/* SPDX-License-Identifier: MIT */
/*
 * route_trace.h — Dynamo's own decision records, written from a replay's
 * decisions (kvpipe-records(5), route-score(1)):
 *
 *  - the dynamo.router.decision.v1 trace Dynamo's selector emits with
 *    DYN_ROUTER_DECISION_TRACE_ENABLED=1 (route-score --format
 *    dynamo-trace): one object per decision that chose a worker without
 *    a pin, fields in Dynamo's order, numbers as Rust's serde_json
 *    writes them (floats always with a '.' or an exponent: 1.0, 0.75,
 *    1e16; integers as integers);
 *  - the score intermediates a candidate record carries with
 *    --score-parts (Dynamo's names);
 *  - the cache-reuse funnel (router_decisions_total,
 *    decision_kv_optimal_total and the raw cached prefixes they compare)
 *    the summary carries.
 *
 * The raw cached prefix of a candidate is its device, host and disk
 * blocks as Dynamo counts them (device + host beyond it + disk beyond
 * both: kvpipe's tiers are prefixes from the root, so the sum is the
 * longest of the three) times the block size.
 */
#ifndef KVP_ROUTE_TRACE_H
#define KVP_ROUTE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "lab/policy.h"
#include "replay/route_input.h"
#include "route/router.h"

/* Formats finite v into b as Rust's f64 Display (ryu's shortest
 * round-trip digits, serde_json's form: 1.0, 0.001234, 1.234e33,
 * 1e-7); returns the length. */
size_t kvp_trace_format_f64(char b[40], double v);

/* What the trace needs beside the decision: the replay's options and the
 * sample rate (Dynamo's DYN_ROUTER_DECISION_TRACE_SAMPLE_RATE: a request
 * is traced when XXH3-64 of its id, over 2^64 - 1, is below it; 1 traces
 * every one). */
struct kvp_trace_ctx {
	const struct kvp_route_opts *ro;
	const struct kvp_policy_opts *pol;
	double sample_rate;
};

/* Whether Dynamo's sampling at t->sample_rate traces the request in. */
int kvp_trace_sampled(const struct kvp_trace_ctx *t, const struct kvp_rin *in);

/* Writes the dynamo.router.decision.v1 object of decision dc (nothing
 * for a pinned or rejected request) as one record on w. */
void kvp_trace_decision(struct kvp_jw *w, const struct kvp_trace_ctx *t,
                        const struct kvp_rin *in,
                        const struct kvp_decision *dc);

/* Writes Dynamo's request_end record (its request trace,
 * dynamo.request.trace.v1, the wrapper its decision traces travel in):
 * schema, event_type, event_time_unix_ms (the request's ts_ms, 0
 * without), request {request_id (as the decision record writes it),
 * request_received_ms (with a ts_ms), routing_decision (the trace; absent
 * for a pinned or rejected request, as Dynamo leaves it None)}. */
void kvp_trace_request_end(struct kvp_jw *w, const struct kvp_trace_ctx *t,
                           const struct kvp_rin *in,
                           const struct kvp_decision *dc);

/* Appends candidate s's score intermediates as members of the open
 * candidate object (--score-parts). */
void kvp_trace_score_parts(struct kvp_jw *w, const struct kvp_trace_ctx *t,
                           const struct kvp_cand_score *s);

/* The cache-reuse funnel of a replay, over its committed decisions that
 * chose a worker (Dynamo counts tracked requests only). */
struct kvp_funnel {
	uint64_t decisions;           /* router_decisions_total */
	uint64_t kv_optimal;          /* decision_kv_optimal_total: the chosen
	                                 worker's raw prefix is the best eligible */
	uint64_t isl_tokens;          /* F0: the prompts' tokens */
	uint64_t max_raw_tokens;      /* F2: best eligible raw cached prefix */
	uint64_t selected_raw_tokens; /* F1: the chosen worker's */
};

void kvp_funnel_add(struct kvp_funnel *f, const struct kvp_rin *in,
                    const struct kvp_decision *dc, uint32_t block_size);
/* The summary's "dynamo_funnel" member (f NULL: nothing). */
void kvp_funnel_write(struct kvp_jw *w, const struct kvp_funnel *f);

#endif
