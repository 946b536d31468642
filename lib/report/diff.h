/* SPDX-License-Identifier: MIT */
/*
 * diff.h — kv-diff's model: pair two decision streams by request id
 * (falling back to order), say what changed, and sum both sides up.
 *
 * Pairing: a decision's key is its request_id's JSON text; the k-th
 * decision with an id in NEW pairs with the first unpaired decision with
 * the same id in BASE (duplicate ids pair in order). A decision without
 * request_id is keyed by its position among the stream's decisions
 * (1-based), so id-less streams pair in order. The BASE stream is held in
 * memory (about 150 bytes per decision plus its id); NEW is streamed.
 *
 * A pair differs when the chosen worker (worker_id, dp_rank), the overlap
 * or the rejection differs. The summary's hit rate is
 * sum(overlap_blocks) / sum(request_blocks) over each stream's decisions;
 * balance is the routed count of the busiest worker over the mean routed
 * count (workers: every chosen worker, plus a summary record's workers
 * list); deltas are NEW - BASE. Cache truth, per stream: the decisions
 * with both cached-token figures, the fraction of them predicted exactly
 * and the mean |predicted - engine| tokens.
 *
 * The cause of a differing pair (kv-diff --classify): "knob" when a knob
 * both decisions carry differs (the first such, in kvp_decision_knobs
 * order, is named), else "index" when both list candidates and their
 * (worker, rank, device overlap) differ, else "load" when both list them
 * (the same overlaps: only the load or the cost differed), else
 * "unknown". Counted whether or not they are written.
 *
 * Dynamo replay rows (decision.h): a pair's overlap is compared only when
 * both sides have one (a row without routing_history has none); a side's
 * hit rate sums a row's reused and input tokens. Reuse: a pair where one
 * side is a row is compared in tokens, each side's figure being its
 * reused_input_tokens (a row), else its predicted_cached_tokens, else
 * its overlap_blocks x block_size (kv-diff --block-size; unset: not
 * compared); reuse_tokens_delta sums NEW - BASE over the compared pairs.
 */
#ifndef KVP_DIFF_H
#define KVP_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "common/jsonw.h"
#include "common/kmap.h"
#include "report/decision.h"

/* One side of a pair, as written in diff records. */
struct kvp_diff_choice {
	int chosen, rejected;
	uint64_t worker_id, dp_rank, overlap;
	int no_overlap, row, has_tokens; /* a replay row's (decision.h) */
	uint64_t tokens; /* cached tokens, for the reuse comparison */
};

enum {
	KVP_DIFF_WORKER = 1,
	KVP_DIFF_OVERLAP = 2,
	KVP_DIFF_REJECTED = 4,
};

/* A record to write: a changed pair (changes != 0, both sides), or a
 * decision found in one stream only (only = "base" or "new"). */
struct kvp_diff_rec {
	const char *id; /* request_id JSON text, or NULL: index */
	size_t id_len;
	uint64_t index;
	unsigned changes;
	const char *only;
	struct kvp_diff_choice base, new;
	const char *cause; /* a changed pair's: "knob", "index", ... */
	const char *knob;  /* with "knob": its name */
};

struct kvp_diff_side {
	uint64_t decisions, rejected, overlap, request_blocks, blocks_lost;
	/* decisions with predicted and engine cached tokens (cache truth) */
	uint64_t truth, truth_exact, truth_abs;
	struct kvp_kmap workers; /* (dp_rank, worker_id) -> slot + 1 */
	uint64_t *routed;
	size_t n_workers, cap_workers;
	uint64_t ordinal; /* decisions seen, for id-less keys */
};

struct kvp_diff_ent;

struct kvp_diff {
	struct kvp_diff_ent *ents; /* BASE decisions in order */
	size_t n_ents, cap_ents;
	char *arena; /* their ids */
	size_t arena_len, arena_cap;
	uint32_t *slots; /* hash table over ents: index + 1 */
	size_t n_slots;
	struct kvp_diff_side side[2]; /* 0: BASE, 1: NEW */
	uint64_t paired, changed, differing, overlap_changed, rejection_changed,
	    only_base, only_new;
	uint64_t cause_index, cause_load, cause_knob; /* differing pairs */
	uint32_t block_size; /* kv-diff --block-size, or 0 */
	uint64_t reuse_n, reuse_exact, reuse_abs;
	double reuse_delta;
	size_t next_unmatched; /* kvp_diff_next_only_base() cursor */
};

void kvp_diff_init(struct kvp_diff *df);
void kvp_diff_fini(struct kvp_diff *df);

/* Adds a BASE record (a decision; a summary adds its workers; anything
 * else is ignored). KVP_OK or KVP_FAIL (out of memory). */
int kvp_diff_add_base(struct kvp_diff *df, const struct kvp_decision_rec *d);

/* Pairs a NEW record. Returns KVP_OK with *rec filled and *emit set when
 * a record should be written (a changed pair or a NEW-only decision), or
 * KVP_FAIL. rec->id points into d's text. */
int kvp_diff_add_new(struct kvp_diff *df, const struct kvp_decision_rec *d,
                     struct kvp_diff_rec *rec, int *emit);

/* After NEW: the next BASE decision that was never paired (1, *rec
 * filled), or 0 when there are no more. Counts them as only_base. */
int kvp_diff_next_only_base(struct kvp_diff *df, struct kvp_diff_rec *rec);

/* The summary fields: names, whether each is an integer, and values:
 * KVP_DIFF_N_BASE_FIELDS always, then KVP_DIFF_N_TRUTH (cache truth:
 * route-score --engine-model), written only when a decision of either
 * stream had both predicted_cached_tokens and engine_cached_tokens, then
 * KVP_DIFF_N_CLASSIFY (index_diverged, load_diverged, knob_changed),
 * written only with --classify, then KVP_DIFF_N_REUSE (reuse_requests,
 * reuse_exact_fraction, reuse_mean_abs_tokens, reuse_tokens_delta: a
 * Dynamo replay row's reused_input_tokens against the other side's
 * cached tokens, below), written only when a pair was compared so;
 * --fail-if may name any of them always (0 without). */
#define KVP_DIFF_N_BASE_FIELDS 22
#define KVP_DIFF_N_TRUTH 8
#define KVP_DIFF_N_CLASSIFY 3
#define KVP_DIFF_N_REUSE 4
#define KVP_DIFF_N_FIELDS 37
extern const char *const kvp_diff_fields[KVP_DIFF_N_FIELDS];
void kvp_diff_summary(const struct kvp_diff *df,
                      double vals[KVP_DIFF_N_FIELDS]);

/* Writers (ndjson, or text when text is set). */
void kvp_diff_write_rec(struct kvp_jw *w, const struct kvp_diff_rec *r,
                        int text, int classify);
/* classify: kv-diff --classify (the causes' fields are written). */
void kvp_diff_write_summary(struct kvp_jw *w,
                            const double vals[KVP_DIFF_N_FIELDS], int text,
                            int classify);
/* The text format's header line. */
void kvp_diff_write_header(struct kvp_jw *w);

#endif
