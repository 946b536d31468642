/* SPDX-License-Identifier: MIT */
/*
 * disagree.h — kv-report's "where runs disagree most": decisions of the
 * same request (same request_id text) across runs are joined in a
 * bounded pool, and the top N by overlap difference (max - min over the
 * runs; a different chosen worker breaks ties) are kept. Runs replayed
 * from one trace list requests in the same order, so a request's
 * decisions arrive close together when the runs are read in lockstep; a
 * request still incomplete when the pool is full is evicted (and scored
 * over the runs it has, when two or more). Memory: KVP_DIS_POOL entries
 * plus N, whatever the input length.
 */
#ifndef KVP_DISAGREE_H
#define KVP_DISAGREE_H

#include <stddef.h>
#include <stdint.h>

#include "report/decision.h"

#define KVP_REPORT_MAX_RUNS 8
#define KVP_DIS_ID_MAX 120
#define KVP_DIS_POOL 4096
#define KVP_DIS_MAX_TOP 1000

struct kvp_dis_run {
	int present, chosen, rejected, non_max, has_logit, has_max;
	uint64_t worker_id, dp_rank, overlap, max_overlap, request_blocks;
	int row, no_overlap; /* a Dynamo replay row: reused of input tokens */
	uint64_t reused, input_tokens;
	double logit;
	char tie_break[16];
};

struct kvp_dis_ent {
	uint64_t hash, seq;
	int used, n_present, next; /* next: hash chain (-1 ends) */
	size_t id_len;             /* the id's full length */
	char id[KVP_DIS_ID_MAX];   /* its first bytes */
	double score;
	struct kvp_dis_run run[KVP_REPORT_MAX_RUNS];
};

struct kvp_dis {
	int n_runs;
	size_t top_max, n_top;
	struct kvp_dis_ent *pool; /* KVP_DIS_POOL */
	int *heads;               /* 2 * KVP_DIS_POOL hash chains */
	size_t hand, n_used;
	uint64_t seq, evicted, compared;
	struct kvp_dis_ent *top; /* top_max, unsorted until kvp_dis_finish */
};

int kvp_dis_init(struct kvp_dis *s, int n_runs, size_t top);
void kvp_dis_fini(struct kvp_dis *s);
/* Adds run r's decision (other records are ignored). */
void kvp_dis_add(struct kvp_dis *s, int r, const struct kvp_decision_rec *d);
/* Scores what is left in the pool and sorts the top (largest first). */
void kvp_dis_finish(struct kvp_dis *s);

#endif
