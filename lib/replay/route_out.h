/* SPDX-License-Identifier: MIT */
/*
 * route_out.h — route-score's output (docs/spec/route-score.md §6.2,
 * kvpipe-records(5) route-score section): per request one decision record
 * (NDJSON), a text explanation or Dynamo's scheduler debug lines
 * (lib/llm/src/kv_router/scheduler.rs); at the end one summary record
 * (NDJSON), a summary line (text) or nothing (log).
 *
 * Every format goes through one writer (common/jsonw.h), as iproute2's
 * json_print serves both its JSON and its text: one decision is one
 * record, written with one fwrite (and flushed when the writer is
 * unbuffered).
 *
 * Ownership: struct kvp_rout only borrows the struct kvp_jw (the caller
 * owns its FILE, flushes and closes it and checks for write errors);
 * the records passed in are borrowed for the duration of the call.
 * Nothing here prints to stderr, exits or keeps state between calls.
 */
#ifndef KVP_ROUTE_OUT_H
#define KVP_ROUTE_OUT_H

#include <stdint.h>

#include "common/jsonw.h"
#include "replay/route_input.h"
#include "replay/truth.h"
#include "replay/route_trace.h"
#include "route/router.h"

/* Counters of the input side, kept by the caller (route-score's reader),
 * for the summary. */
struct kvp_rout_input {
	uint64_t gap_records;   /* upstream {"rec":"gap"} records */
	uint64_t stale_records; /* upstream {"rec":"stale"} records */
	uint64_t errors;        /* bad records reported */
	uint64_t errors_hidden; /* of those, not shown (the error cap) */
};

/* In the order of the --format names ndjson, text, log, dynamo-trace,
 * dynamo-request-trace. */
enum kvp_rout_format {
	KVP_ROUT_NDJSON = 0,
	KVP_ROUT_TEXT = 1,
	KVP_ROUT_LOG = 2,
	KVP_ROUT_DYNAMO_TRACE = 3, /* route_trace.h; no summary record */
	KVP_ROUT_DYNAMO_REQUEST_TRACE = 4, /* its request_end wrapper */
};

struct kvp_rout {
	struct kvp_jw *jw;   /* every format writes here: records, or free
	                        text (kvp_jw_text) one decision at a time */
	int format;          /* enum kvp_rout_format */
	uint32_t block_size; /* router block size, quoted by the text format */
	/* how the caller's user sets the block size, for the text format's
	 * hints (route-score: "--block-size"); NULL: "the block size" */
	const char *block_size_hint;
	/* the run's counters, for the text format's "why 0" line (may be
	 * NULL) */
	const struct kvp_route_stats *stats;
	/* NDJSON: brief decision records (request id, ts, chosen worker,
	 * overlap, logit, and the policy/rejection/wait keys when the
	 * decision has them; no per-candidate arrays) */
	int brief;
	/* the input side's counters, for the summary (may be NULL) */
	const struct kvp_rout_input *input;
	/* the engine model (lab.h; 0: none): decisions get
	 * predicted_cached_tokens and engine_cached_tokens, the summary the
	 * engine's totals and cache_truth (from truth, kept by the caller;
	 * may be NULL) */
	int engine_model;
	const struct kvp_truth *truth;
	/* NDJSON: candidates carry Dynamo's score intermediates */
	int score_parts;
	/* the options the trace and the score parts quote (route_trace.h;
	 * trace.ro NULL: neither is written) */
	struct kvp_trace_ctx trace;
	/* the cache-reuse funnel: every decision written is counted in it,
	 * and the summary carries it (NULL: neither) */
	struct kvp_funnel *funnel;
};

/* Writes the decision for request `in` in o->format. */
void kvp_rout_decision(const struct kvp_rout *o, const struct kvp_rin *in,
                       const struct kvp_decision *dc);

/* Writes the summary of r's counters in o->format; truncated_stores and
 * records_ignored are the caller's counts (stores whose tokens ran short,
 * records that were not route-score input). */
void kvp_rout_summary(const struct kvp_rout *o, struct kvp_router *r,
                      uint64_t truncated_stores, uint64_t records_ignored);

/* Policy lab (policy.h): the mrc records (each live candidate, then the
 * fleet; NDJSON only; nothing without --mrc's router option). */
void kvp_rout_mrc(const struct kvp_rout *o, struct kvp_router *r);

/* The last routed request's simulated cache events (bounded caches with
 * events kept) as Dynamo RouterEvent records, kv-normalize's shape, on w. */
void kvp_rout_sim_events(struct kvp_jw *w, struct kvp_router *r);

#endif
