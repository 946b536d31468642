/* SPDX-License-Identifier: MIT */
/*
 * evagg.h — kv-report's streaming aggregation of event streams
 * (--events): kv-decode records (rec "event", "gap", "stale") and
 * kv-normalize's RouterEvent records (also wrapped in Dynamo's KvRecorder
 * lines, {"timestamp": ms, "event": RouterEvent}). Bounded by constants
 * and the number of workers, whatever the input length:
 *  - totals per event type (stored, removed, cleared, other), per worker
 *    (the same, plus seq gaps and stale batches);
 *  - KVP_AGG_BUCKETS time buckets (the shared kvp_agg_tline) of events per
 *    type and per worker (the first KVP_AGG_WORKERS workers seen; the
 *    rest summed as "other"), at least one second wide. Time is the
 *    record's ts (seconds) or timestamp (ms) when the first event has
 *    one, else its position.
 * Other kv-decode records (batch, error) and kv-normalize's filtered
 * records are counted as "other records"; a line that is neither is bad.
 */
#ifndef KVP_EVAGG_H
#define KVP_EVAGG_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/kmap.h"
#include "report/agg.h"

enum kvp_evagg_type {
	KVP_EVAGG_STORED,
	KVP_EVAGG_REMOVED,
	KVP_EVAGG_CLEARED,
	KVP_EVAGG_OTHER,
	KVP_EVAGG_COUNT
};

/* "stored", "removed", "cleared", "other" */
extern const char *const kvp_evagg_type_names[KVP_EVAGG_COUNT];

struct kvp_evagg_worker {
	uint64_t worker_id, dp_rank;
	uint64_t by_type[KVP_EVAGG_COUNT];
	uint64_t gaps, stale;
};

struct kvp_evagg_bucket {
	uint64_t by_type[KVP_EVAGG_COUNT];
	uint64_t by_worker[KVP_AGG_WORKERS + 1]; /* [KVP_AGG_WORKERS]: other */
};

struct kvp_evagg {
	uint64_t events, by_type[KVP_EVAGG_COUNT];
	uint64_t gaps, stale, other_records;
	int time_is_ts; /* times are ms */
	double t_last;
	struct kvp_agg_tline tl;
	struct kvp_evagg_bucket b[KVP_AGG_BUCKETS];
	struct kvp_kmap wmap; /* (dp_rank, worker_id) -> index + 1 */
	struct kvp_evagg_worker *w;
	size_t n_workers, cap_workers;
	int other_used; /* a worker past the first KVP_AGG_WORKERS */
	struct json_tokener *tok;
};

void kvp_evagg_init(struct kvp_evagg *a);
void kvp_evagg_fini(struct kvp_evagg *a);

/* Adds one line. KVP_OK, KVP_BAD (d says why) or KVP_FAIL (memory). */
int kvp_evagg_line(struct kvp_evagg *a, const char *line, size_t len,
                   struct kvp_diag *d);

#endif
