/* SPDX-License-Identifier: MIT */
/*
 * lab_internal.h — private to lib/lab/ (never included elsewhere): the
 * lab's state and the functions its modules call in each other.
 *
 *   lab.c        the hooks it installs in the router (route_view.h), the
 *                run totals
 *   policy.c     the table of peer policies; policy_*.c one each, and
 *   policy_util.c what they share
 *   lru.c        bounded per-candidate caches
 *   mrc.c        LRU stack distances
 *   simtime.c    simulated time
 *   engine_model.c  the engines' own caches (what they report cached)
 *
 * The lab reads the router through route/route_view.h only: candidates
 * by index, this decision's scored candidates (dec->cand), the index,
 * and the active request just committed.
 */
#ifndef KVP_LAB_INTERNAL_H
#define KVP_LAB_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "lab/lab.h"
#include "lab/policy.h"
#include "route/router.h"

struct kvp_lab;

/* One peer policy. pick fills dec->chosen (and max_overlap, tie_break)
 * from dec->cand[0..dec->ncand), scored as Dynamo scores them; commit (may
 * be NULL) learns from a committed decision on candidate ci; init/fini
 * (may be NULL) own l->pstate. 0, or -1 on allocation failure. */
struct kvp_policy_ops {
	const char *name;
	int (*init)(struct kvp_lab *l);
	void (*fini)(struct kvp_lab *l);
	int (*pick)(struct kvp_lab *l, struct kvp_router *r,
	            const struct kvp_request *q, const uint64_t *seq,
	            struct kvp_decision *dec);
	int (*commit)(struct kvp_lab *l, struct kvp_router *r, uint32_t ci,
	              const struct kvp_request *q, const uint64_t *seq);
};

/* The table (policy.c), indexed by enum kvp_policy_id. */
extern const struct kvp_policy_ops *const kvp_policy_table[];
extern const struct kvp_policy_ops kvp_policy_dynamo, kvp_policy_rr,
    kvp_policy_random, kvp_policy_least, kvp_policy_sglang, kvp_policy_pskv,
    kvp_policy_psload, kvp_policy_twotier;

/* policy_util.c: dec->max_overlap (first of the largest overlap). */
void kvp_policy_max_overlap(struct kvp_decision *dec);
/* policy_util.c: production-stack's score, load per candidate from loadfn. */
void kvp_policy_ps_pick(const struct kvp_lab *l, struct kvp_router *r,
                        const struct kvp_request *q, struct kvp_decision *dec,
                        uint64_t (*loadfn)(const struct kvp_router *,
                                           uint32_t));

struct kvp_lru;     /* lru.c */
struct kvp_engine;  /* engine_model.c */
struct kvp_mrcs;    /* mrc.c */
struct kvp_simtime; /* simtime.c */

struct kvp_lab {
	struct kvp_policy_opts o;
	const struct kvp_policy_ops *ops;
	void *pstate; /* the policy's own */
	struct kvp_lru *lru;
	struct kvp_mrcs *mrc;
	struct kvp_simtime *sim;
	struct kvp_engine *eng;
	uint64_t *blk_sum; /* per candidate: active blocks summed over
	                      decisions (load balance) */
	size_t capblk;
};

/* lru.c: bounded per-candidate caches. */
struct kvp_lru *kvp_lru_new(uint64_t capacity, int keep_events);
void kvp_lru_free(struct kvp_lru *l);
int kvp_lru_record(struct kvp_router *r, struct kvp_lru *l, uint32_t ci,
                   const struct kvp_request *q, const uint64_t *seq);
uint64_t kvp_lru_evictions(const struct kvp_lru *l);
void kvp_lru_clear_events(struct kvp_lru *l);
const struct kvp_sim_event *kvp_lru_events(struct kvp_lru *l, size_t *n);

/* mrc.c: LRU stack distances per candidate. */
struct kvp_mrcs *kvp_mrcs_new(void);
void kvp_mrcs_free(struct kvp_mrcs *m);
int kvp_mrcs_record(struct kvp_mrcs *m, uint32_t ci, const uint64_t *seq,
                    size_t n);
/* Adds candidate ci's curve into out (zeroed by the caller). */
void kvp_mrcs_get(const struct kvp_mrcs *m, uint32_t ci, struct kvp_mrc *out);

/* simtime.c: requests complete in simulated time. */
struct kvp_simtime *kvp_simtime_new(double prefill_tps, double decode_tps);
void kvp_simtime_free(struct kvp_simtime *s);
void kvp_simtime_advance(struct kvp_router *r, struct kvp_simtime *s);
int kvp_simtime_schedule(struct kvp_router *r, struct kvp_simtime *s,
                         uint32_t ci, const struct kvp_request *q,
                         const struct kvp_decision *dec);
void kvp_simtime_totals(struct kvp_simtime *s, struct kvp_lab_totals *t);

/* engine_model.c: the engines' caches (--engine-model). model: enum
 * kvp_engine_model; capacities in blocks (0: unbounded, no host tier). */
struct kvp_engine *kvp_engine_new(int model, uint64_t capacity,
                                  uint64_t host_capacity, uint32_t block_size);
void kvp_engine_free(struct kvp_engine *E);
/* Applies the router's request changes (prefills, releases) since the
 * last call. */
void kvp_engine_poll(struct kvp_engine *E, const struct kvp_router *r);
/* The cached tokens candidate ci's engine will report for q. */
uint64_t kvp_engine_predict(struct kvp_engine *E, uint32_t ci,
                            const struct kvp_request *q, const uint64_t *seq);
/* q (just committed on ci) is scheduled on the engine. 0, or -1. */
int kvp_engine_commit(struct kvp_engine *E, struct kvp_router *r, uint32_t ci,
                      const struct kvp_request *q, const uint64_t *seq);
/* 1 after an allocation failure where none could be reported. */
int kvp_engine_oom(const struct kvp_engine *E);
void kvp_engine_clear(struct kvp_engine *E, struct kvp_router *r, uint32_t ci);
void kvp_engine_totals(const struct kvp_engine *E, struct kvp_engine_totals *t);

#endif
