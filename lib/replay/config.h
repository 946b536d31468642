/* SPDX-License-Identifier: MIT */
/*
 * config.h — a replay's options (struct kvp_replay_opts: route-score's, as
 * parsed) and the rules between them:
 *
 *  - the presets options imply: Dynamo's load-aware mode (no credit, no
 *    tier credit, no KV reuse assumed, load counted, own prefill tracked),
 *    bounded caches replacing approximate mode's TTL, a Mooncake trace's
 *    block size (512), one router replica by default;
 *  - every check across options (kvp_replay_add_stream, kvp_replay_end);
 *  - the settings the options give the replay's parts: the block size is
 *    held once, in o->block_size, and reaches the router (o->ro), the
 *    hasher, the output and each stream's parser only through
 *    kvp_replay_end(), kvp_replay_setup() and kvp_replay_add_input();
 *  - which results of a step (route_step.h, front.h) are warnings, and
 *    their words; why a run routed nothing.
 *
 * Messages name options the way the caller spells them: o->flags[i] for
 * enum kvp_replay_flag i (route-score: "--block-size", ...), or neutral
 * words when o->flags is NULL. Nothing here prints: a failed check
 * returns -1 with a struct kvp_diag filled.
 */
#ifndef KVP_REPLAY_CONFIG_H
#define KVP_REPLAY_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"
#include "lab/policy.h"
#include "replay/front.h"
#include "replay/rec_hash.h"
#include "replay/route_input.h"
#include "replay/route_out.h"
#include "replay/route_src.h"
#include "replay/route_step.h"
#include "route/router.h"

#define KVP_REPLAY_MAX_STREAMS 64

/* The options the rules' messages name. */
enum kvp_replay_flag {
	KVP_RF_BLOCK_SIZE,
	KVP_RF_DECODE_THR,
	KVP_RF_TOTAL_KV_BLOCKS,
	KVP_RF_PREFILL_FRAC,
	KVP_RF_QUEUE_THR,
	KVP_RF_MAX_BATCHED,
	KVP_RF_PREDICTED_TTL,
	KVP_RF_APPROX,
	KVP_RF_FILE, /* the one input named without an option */
	KVP_RF_EVENTS,
	KVP_RF_REQUESTS,
	KVP_RF_CAPACITY,
	KVP_RF_MOONCAKE, /* the option and value for a Mooncake trace */
	KVP_RF_EMIT_EVENTS,
	KVP_RF_REPLICAS,
	KVP_RF_POLICY,
	KVP_RF_MRC,
	KVP_RF_WORKERS,
	KVP_RF_ORPHANS_ROOT, /* the option and value rooting orphan stores */
	KVP_RF_ENGINE_MODEL,
	KVP_RF_HOST_CAPACITY,
	KVP_RF_COUNT
};

struct kvp_replay_opts {
	uint32_t block_size;      /* the one block size; 0: not given */
	struct kvp_route_opts ro; /* the router's; ro.block_size is set by
	                             kvp_replay_end() */
	struct kvp_policy_opts pol;
	struct kvp_front_opts fo;
	double queue_thr; /* × ro.max_batched_tokens: fo.queue_tokens */
	int load_aware;   /* Dynamo's load-aware preset */
	int format;       /* enum kvp_rout_format */
	int brief;
	int mooncake;     /* every line is a Mooncake trace request */
	uint64_t workers; /* workers 0..workers-1 declared */
	const char *lora; /* seed names for records without them */
	const char *ns;
	/* event and request streams, in the order given */
	const char *streams[KVP_REPLAY_MAX_STREAMS];
	int is_req[KVP_REPLAY_MAX_STREAMS];
	int nstreams, nev, nrq;
	const char *input;         /* the one input (NULL: none named) */
	const char *emit_events;   /* where the caches' events go (NULL: not
	                              kept) */
	const char *policy_config; /* Dynamo's router policy config file */
	int score_parts;           /* candidates carry the intermediates */
	double trace_sample_rate;  /* the traces' requests (1: every one) */
	const char *const *flags;  /* KVP_RF_COUNT names; NULL: neutral */
};

/* Defaults (the router's, the policy lab's). */
void kvp_replay_opts_init(struct kvp_replay_opts *o);

/* Adds an event stream, or a request stream (requests). 0, or -1 with d
 * set when KVP_REPLAY_MAX_STREAMS are in. */
int kvp_replay_add_stream(struct kvp_replay_opts *o, const char *path,
                          int requests, struct kvp_diag *d);

/*
 * Once every option is in: the presets, then the checks, in a fixed order
 * (the first failed one is reported). With only event streams or only
 * request streams, the other is o->input or standard input (so both
 * `events | route-score --requests R` and `requests | route-score --events
 * E` work); then o->input is NULL and the streams are all the input.
 * Standard input is read at most once. 0, or -1 with d set.
 */
int kvp_replay_end(struct kvp_replay_opts *o, struct kvp_diag *d);

/*
 * The replay's parts, from the options (after kvp_replay_end()): the front
 * (its routers, each with workers 0..o->workers-1 declared; decisions go to
 * emit(arg, ...)), the hasher, and the output's settings (format, brief,
 * the block size and how the caller names it, the first router's
 * counters); out's writer and input counters are the caller's to set.
 * 0, or -1 (out of memory) with d set; the caller frees f and h either way
 * (kvp_front_fini, kvp_rec_hasher_fini).
 */
int kvp_replay_setup(const struct kvp_replay_opts *o, struct kvp_front *f,
                     kvp_front_emit emit, void *arg, struct kvp_rec_hasher *h,
                     struct kvp_rout *out, struct kvp_diag *d);

/*
 * Dynamo's router policy config (its --router-policy-config YAML,
 * policy_yaml.c): the worker_selection instance o->ro.worker_type's stage
 * selects is applied (dynamo-two-tier-cost-fn: the policy and its
 * parameters; dynamo-default-cost-fn: the cost's knobs; none or
 * "default": nothing). The whole document is checked as Dynamo checks
 * it. 0, or -1 with d set and *line the file's line at fault (0: none).
 */
int kvp_replay_policy_config(struct kvp_replay_opts *o, const char *path,
                             long *line, struct kvp_diag *d);

/* Adds stream f to the merge with the options' parser settings (the block
 * size, Mooncake, the seed names); lines up to max bytes. 0, or -1 on
 * allocation failure. */
int kvp_replay_add_input(const struct kvp_replay_opts *o,
                         struct kvp_rin_merge *m, FILE *f, size_t max,
                         int requests);

/* ---- warnings ----------------------------------------------------------- */

enum kvp_replay_warn {
	KVP_RW_PARENT,
	KVP_RW_SELF,
	KVP_RW_STALE,
	KVP_RW_GAP,
	KVP_RW_UNKNOWN_REMOVE,
	KVP_RW_BLOCK_SIZE,
	KVP_RW_TRUNCATED,
	KVP_RW_DUP_REQUEST,
	KVP_RW_COUNT
};

/* The kinds' names ("parent_not_found", ...), by enum kvp_replay_warn. */
const char *const *kvp_replay_warn_names(void);

/*
 * The warnings record in's step result st gives, in the order they are
 * to be given: an event's (st from kvp_front_apply(); rc what it
 * returned) or a decision's (st from the front's emit callback; rc 0).
 * Other records give none. Fills kinds[] (room for KVP_RW_COUNT); returns how
 * many.
 */
size_t kvp_replay_warnings(const struct kvp_rin *in,
                           const struct kvp_route_step *st, int rc, int *kinds);

/* The words of warning kind for record in and its step st (without the
 * kind's name), into buf[0, n) (truncated). */
void kvp_replay_warning_text(const struct kvp_replay_opts *o,
                             const struct kvp_rin *in,
                             const struct kvp_route_step *st, int kind,
                             char *buf, size_t n);

/* 1 when record in is a Mooncake trace request with an output length
 * the replay has no completion model for (no simulated time): nothing
 * ends its active request, so each worker's load only grows, and no TTFT
 * is measured. 1 the first time only (*said, zeroed by the caller, is
 * set): the front end says so once per run. */
int kvp_replay_osl_unmodelled(const struct kvp_replay_opts *o,
                              const struct kvp_rin *in, int *said);

/* 1 when requests came and none had a candidate worker, with the likely
 * cause in d (s: the first router's counters at the end); else 0. */
int kvp_replay_unrouted(const struct kvp_replay_opts *o,
                        const struct kvp_route_stats *s, struct kvp_diag *d);

#endif
