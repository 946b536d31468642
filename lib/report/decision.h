/* SPDX-License-Identifier: MIT */
/*
 * decision.h — reads route-score's decision records (full or brief) for
 * kv-diff and kv-report: the fields both tools compare and chart, and
 * nothing else. A line is scanned in place (common/jscan); a line the
 * scanner declines is parsed with json-c, re-serialized and scanned again,
 * so the two paths agree on every field.
 *
 * Fields read (kvpipe-records(5), route-score): rec, request_id, ts_ms,
 * chosen {worker_id, dp_rank} or null, overlap_blocks, request_blocks,
 * hashed_blocks, logit, tie_break, max_overlap {blocks}, non_max_overlap,
 * blocks_lost, and, when present, policy, rejected (boolean), ttft_ms,
 * predicted_cached_tokens, engine_cached_tokens and
 * candidates [{worker_id, dp_rank, active_blocks}]; a summary's workers
 * and simulated {ttft_p50_ms, ttft_p99_ms}. A decision whose
 * chosen is null, or whose rejected is true, is a rejection. Other keys
 * are skipped; records whose rec is not "decision" are reported as
 * KVP_DECISION_OTHER (the summary as KVP_DECISION_SUMMARY) with no field
 * read. Dynamo's decision traces read as decisions: a line whose first key
 * is "schema", "dynamo.router.decision.v1" (a bare trace, no id) or
 * "dynamo.request.trace.v1" (a request_end record carrying one under
 * request.routing_decision, with request.request_id; any other event, or
 * none, is KVP_DECISION_OTHER); see kvpipe-records(5). Dynamo's replay
 * rows (dynamo.replay --per-request-jsonl) read as decisions too: a line
 * whose first key is "session_id", "uuid", "admission_count" or
 * "arrival_time_ms" (or any line, with replay_rows set) and that carries
 * reused_input_tokens (see decision.c).
 */
#ifndef KVP_DECISION_H
#define KVP_DECISION_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

enum kvp_decision_kind {
	KVP_DECISION_DECISION = 0,
	KVP_DECISION_SUMMARY = 1,
	KVP_DECISION_OTHER = 2,
};

struct kvp_decision_cand {
	uint64_t worker_id;
	uint64_t dp_rank;
	uint64_t active_blocks;
};

/* The cost's knobs a decision may carry (a trace's weights; a decision
 * record's overlap_weight and temperature as prefill_load_scale and
 * router_temperature), in this order: kvp_decision_knobs names them. */
#define KVP_DECISION_N_KNOBS 8
extern const char *const kvp_decision_knobs[KVP_DECISION_N_KNOBS];

/* Spans point into the scanned text (the caller's line, or the parser's
 * own copy after a fallback): valid until the next kvp_decision_parse(). A
 * span with p == NULL is absent. */
struct kvp_decision_span {
	const char *p;
	size_t n;
};

struct kvp_decision_rec {
	int kind;
	struct kvp_decision_span id;        /* request_id as JSON text */
	struct kvp_decision_span tie_break; /* string contents */
	struct kvp_decision_span policy;    /* string contents */
	int has_ts, has_logit, has_ttft, has_max;
	double ts_ms, logit, ttft_ms;
	/* a summary's simulated TTFT percentiles ("simulated") */
	int has_sim;
	double sim_p50, sim_p99;
	int chosen;   /* a worker was chosen */
	int rejected; /* chosen null, or rejected true */
	int non_max;
	uint64_t worker_id, dp_rank;
	uint64_t overlap, request_blocks, hashed_blocks, blocks_lost;
	uint64_t max_overlap;
	/* route-score --engine-model: predicted_cached_tokens and
	 * engine_cached_tokens, when present */
	int has_pred, has_engine;
	uint64_t pred, engine;
	/* a decision's candidates (only when the parser was asked for them),
	 * or a summary's workers (active_blocks then holds "routed") */
	struct kvp_decision_cand *cand;
	size_t n_cand;
	/* the knobs present (bit k: knob[k]) */
	unsigned knobs;
	double knob[KVP_DECISION_N_KNOBS];
	/* a fingerprint of the candidates' (worker_id, dp_rank, device
	 * overlap), in record order, when the decision lists them */
	int has_fp;
	uint64_t cand_fp;
	/* a Dynamo replay row: reused_input_tokens and input_length (the
	 * hit rate is then reused / input tokens); no_overlap when the row
	 * has no router overlap (overlap_blocks is then not compared);
	 * id_ordinal when it has no request_id (kvp_decision_ordinal_id) */
	int replay_row, no_overlap, id_ordinal;
	uint64_t reused, input_tokens;
};

/* A Dynamo replay report's summary figures (its --report-json: the
 * "summary" object, or the whole object in the flat form); bit k of has
 * says field k is present, in kvp_replay_fields order. */
#define KVP_REPLAY_N_FIELDS 8
extern const char *const kvp_replay_fields[KVP_REPLAY_N_FIELDS];
struct kvp_replay_summary {
	unsigned has;
	double v[KVP_REPLAY_N_FIELDS];
};
enum {
	KVP_REPLAY_NUM_REQUESTS,
	KVP_REPLAY_COMPLETED,
	KVP_REPLAY_REUSED_RATIO,
	KVP_REPLAY_FIRST_REUSED_RATIO,
	KVP_REPLAY_MEAN_TTFT,
	KVP_REPLAY_MEDIAN_TTFT,
	KVP_REPLAY_P99_TTFT,
	KVP_REPLAY_MEAN_E2E,
};

struct kvp_decision_parser {
	int want_candidates;
	struct kvp_decision_cand *cand;
	size_t cand_cap;
	char *copy; /* the re-serialized line after a fallback */
	size_t copy_cap;
	struct json_tokener *tok;
	uintmax_t fallbacks; /* lines the scanner declined */
	int replay_rows;     /* every object is a replay row (a report's) */
};

void kvp_decision_parser_init(struct kvp_decision_parser *p,
                              int want_candidates);
void kvp_decision_parser_fini(struct kvp_decision_parser *p);

/* Reads one line into *d. Returns KVP_OK, KVP_BAD (d->msg says why: not
 * JSON, not an object, a field of the wrong type) or KVP_FAIL (out of
 * memory). */
int kvp_decision_parse(struct kvp_decision_parser *p, const char *line,
                       size_t len, struct kvp_decision_rec *d,
                       struct kvp_diag *dg);

/* A replay row without request_id is named by its position n: its line
 * number in a per-request file, its 1-based index in a report's
 * per_request, as route-score names a Mooncake trace's id-less lines by
 * their line number: d->id becomes n's decimal text, in buf (valid while
 * buf is). Does nothing unless d->id_ordinal. */
void kvp_decision_ordinal_id(struct kvp_decision_rec *d, uint64_t n,
                             char buf[24]);

/* The hit-rate terms of a decision: overlap and request blocks, or for a
 * replay row reused and input tokens. */
void kvp_decision_hit_terms(const struct kvp_decision_rec *d, uint64_t *num,
                            uint64_t *den);

/* ---- Dynamo's replay report JSON, a whole file (kvpipe-records(5)) ----
 * json.dumps(indent=2) writes it over many lines, the first one "{"
 * alone: kvp_replay_doc_starts() says a file's first line opens one
 * (that, or an object whose first key is one of the report's: coverage,
 * per_request, planner, summary, completed_requests, num_requests);
 * the caller appends that line and every later one, then finishes: the
 * summary figures are read, and the per_request rows (when the report
 * holds them) are handed out one by one as plain JSON text for
 * kvp_decision_parse(). */
struct json_object;
struct kvp_replay_doc {
	int active; /* lines are being collected, or rows handed out */
	int ready;  /* finished: rows handed out */
	char *buf;
	size_t len, cap;
	struct json_object *root, *rows;
	size_t next, n_rows;
	struct kvp_replay_summary sum;
};

int kvp_replay_doc_starts(const char *line, size_t len);
/* KVP_OK or KVP_FAIL (out of memory). */
int kvp_replay_doc_append(struct kvp_replay_doc *doc, const char *line,
                          size_t len);
/* Parses the collected text: KVP_OK, KVP_BAD (dg says why: not JSON, not
 * an object, or an object with none of the summary's figures and no
 * per_request rows) or KVP_FAIL. */
int kvp_replay_doc_finish(struct kvp_replay_doc *doc, struct kvp_diag *dg);
/* The next per_request row as JSON text (valid until the next call):
 * 1, or 0 after the last. *index gets its position (0-based). */
int kvp_replay_doc_next(struct kvp_replay_doc *doc, const char **line,
                        size_t *len, size_t *index);
void kvp_replay_doc_fini(struct kvp_replay_doc *doc);

#endif
