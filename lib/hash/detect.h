/* SPDX-License-Identifier: MIT */
/*
 * detect.h — kv-hash --detect: which engine hash scheme, seed and block
 * size a captured stream of KV events uses, or why none fits (the usual
 * cause of a router's 0% cache hit rate). Design: docs/spec/engine-hashes.md
 * §7.
 *
 * Input: kv-decode event records; BlockStored events with token_ids are
 * kept per stream (topic, worker_id, dp_rank), everything else is ignored.
 * At the end each stream is checked:
 *   1. fingerprint priors (§7.2) order the candidates;
 *   2. every candidate (§7.3: scheme × seed × hash granularity) is screened
 *      on a few probe blocks (root stores, and any store for the
 *      self-verifying schemes);
 *   3. the candidates that pass are verified on every store through a
 *      parent map from published u64 to full chain state. A child store
 *      waits until its parent block is verified, so the result does not
 *      depend on the event order; children whose parent is never verified
 *      stay unresolved (never mismatched).
 * Verdicts: MATCH, MISMATCH-AFTER-MATCH, UNKNOWN-ROOT, UNRESOLVED,
 * BLOCK-SIZE (§7.6). Counts count block hashes in store events; a
 * re-stored block counts again.
 */
#ifndef KVP_DETECT_H
#define KVP_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "hash/engine_hash.h"

struct json_object;
struct kvp_jw;

struct kvp_detect_opts {
	const char *const *seeds; /* extra seed texts to try */
	size_t n_seeds;
	int has_expect; /* compare with the consumer's configuration */
	enum kvp_scheme expect_scheme;
	const char *expect_seed; /* "" for seedless schemes */
	uint32_t expect_bs;
	int seed_search;    /* brute-force decimal vLLM seeds */
	double max_seconds; /* bound of the seed search */
	unsigned threads;   /* seed-search threads (>= 1) */
	int ignore_offsets; /* read sparse stores densely, as Dynamo */
};

struct kvp_detect;

struct kvp_detect *kvp_detect_new(const struct kvp_detect_opts *o);
void kvp_detect_free(struct kvp_detect *dt);

/* Takes one record (borrowed). Returns 0 when kept, 1 when ignored, -1
 * with d set on a bad BlockStored event or out of memory. */
int kvp_detect_record(struct kvp_detect *dt, const struct json_object *rec,
                      struct kvp_diag *d);

/* One stream's result. */
struct kvp_verdict {
	const char *stream; /* "TOPIC worker W dp R" */
	const struct json_object *worker_id, *topic, *dp_rank; /* as read */
	const char *verdict;
	int has_scheme;
	enum kvp_scheme scheme;
	const char *seed; /* NULL: none or unknown */
	uint32_t block_size, granularity;
	uint64_t stores, root_stores, verified_stores;
	uint64_t verified_blocks, unresolved_blocks, mismatched_blocks;
	/* SGLang media stores (block_hashes_sha256) and, of the verified
	 * blocks, those whose full digest matched; written when mm_stores */
	uint64_t mm_stores, mm_verified_blocks;
	const char *differs; /* first field differing from the expectation */
	char note[512];
	char next[512];
	int searched; /* the seed search ran */
	int search_found;
	char search_seed[16];
	uint64_t search_count; /* seeds 0..count-1 fully tried */
	double search_seconds;
};

/* Checks every stream (the seed search included). Returns the number of
 * streams, or -1 with d set (out of memory). Results stay valid until
 * kvp_detect_free(). */
long kvp_detect_run(struct kvp_detect *dt, struct kvp_diag *d);
const struct kvp_verdict *kvp_detect_verdict(const struct kvp_detect *dt,
                                             size_t i);

/* Writes verdict v as a record (text 0) or the §7.6 text block. */
void kvp_detect_write(struct kvp_jw *w, const struct kvp_verdict *v, int text);

/* --cross-stream (§7.4): for each pair of streams, root stores with the
 * same first-block tokens and extras, same first hash or not. */
void kvp_detect_write_cross(struct kvp_jw *w, const struct kvp_detect *dt,
                            int text);

#endif
