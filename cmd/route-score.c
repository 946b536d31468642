/* SPDX-License-Identifier: MIT */
/*
 * route-score — replay Dynamo's KV-router decision offline.
 *
 * Reads router events (kv-normalize output, Dynamo RouterEvent JSON or
 * kvpipe's typed records) and requests (token ids, mm-expand output,
 * pre-hashed blocks, Mooncake trace lines) from one NDJSON stream, in file
 * order, or from --events and --requests merged by timestamp. Applies the
 * events to a prefix index and writes, per request, one decision record
 * with every candidate's overlap, load and cost, then a summary record.
 * Bad records: "route-score: FILE:LINE: msg", exit 1 (-k continues).
 */
#include <argp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/diag.h"
#include "common/jsonw.h"
#include "common/ndjson.h"
#include "common/sniff.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "fe/merge.h"
#include "kvpipe.h"
#include "route/index.h"
#include "lab/policy.h"
#include "replay/config.h"
#include "replay/rec_hash.h"
#include "replay/route_input.h"
#include "replay/front.h"
#include "replay/route_out.h"
#include "replay/route_src.h"
#include "replay/route_step.h"
#include "route/router.h"

enum {
	OPT_BLOCK_SIZE = 256,
	OPT_OVERLAP_WEIGHT,
	OPT_TEMPERATURE,
	OPT_SEED,
	OPT_TIE_BREAK,
	OPT_NO_LOAD,
	OPT_NO_TRACK_PREFILL,
	OPT_NO_ASSUME_REUSE,
	OPT_APPROX,
	OPT_TTL,
	OPT_APPROX_MAX,
	OPT_SCORE,
	OPT_GAPS,
	OPT_LORA,
	OPT_NAMESPACE,
	OPT_FORMAT,
	OPT_EVENTS,
	OPT_REQUESTS,
	OPT_TRACE,
	OPT_WORKERS,
	OPT_TIER_CREDIT,
	OPT_HOST_WEIGHT,
	OPT_DISK_WEIGHT,
	OPT_DRAW,
	OPT_REQUEST_EXPIRY,
	OPT_ORPHANS,
	OPT_SCALE,
	OPT_CREDIT,
	OPT_CREDIT_DECAY,
	OPT_LOAD_AWARE,
	OPT_SELECTION,
	OPT_DECODE_THR,
	OPT_PREFILL_THR,
	OPT_PREFILL_FRAC,
	OPT_TOTAL_KV_BLOCKS,
	OPT_MAX_BATCHED,
	OPT_QUEUE_THR,
	OPT_QUEUE_POLICY,
	OPT_SESSION_TTL,
	OPT_REPLICAS,
	OPT_REPLICA_SYNC,
	OPT_ROUTER_REPLICA_SYNC,
	OPT_PREDICTED_TTL,
	OPT_TRACK_OUTPUT,
	/* policy lab */
	OPT_POLICY,
	OPT_BALANCE_ABS,
	OPT_BALANCE_REL,
	OPT_CACHE_THRESHOLD,
	OPT_BETA,
	OPT_CAPACITY,
	OPT_EMIT_EVENTS,
	OPT_MRC,
	OPT_PREFILL_TPS,
	OPT_DECODE_TPS,
	OPT_BRIEF,
	OPT_MAX_ACTIVE,
};

struct opts {
	struct kvp_cli cli;
	struct kvp_replay_opts r;
};

/* How route-score spells the options the replay's rules name. */
static const char *const flags[KVP_RF_COUNT] = {
    [KVP_RF_BLOCK_SIZE] = "--block-size",
    [KVP_RF_DECODE_THR] = "--active-decode-blocks-threshold",
    [KVP_RF_TOTAL_KV_BLOCKS] = "--total-kv-blocks",
    [KVP_RF_PREFILL_FRAC] = "--active-prefill-tokens-threshold-frac",
    [KVP_RF_QUEUE_THR] = "--router-queue-threshold",
    [KVP_RF_MAX_BATCHED] = "--max-num-batched-tokens",
    [KVP_RF_PREDICTED_TTL] = "--predicted-ttl",
    [KVP_RF_APPROX] = "--approx",
    [KVP_RF_FILE] = "FILE",
    [KVP_RF_EVENTS] = "--events",
    [KVP_RF_REQUESTS] = "--requests",
    [KVP_RF_CAPACITY] = "--capacity-blocks",
    [KVP_RF_MOONCAKE] = "--trace mooncake",
    [KVP_RF_EMIT_EVENTS] = "--emit-events",
    [KVP_RF_REPLICAS] = "--replicas",
    [KVP_RF_POLICY] = "--policy",
    [KVP_RF_MRC] = "--mrc",
    [KVP_RF_WORKERS] = "--workers",
    [KVP_RF_ORPHANS_ROOT] = "--orphans root",
};

static const struct argp_option options[] = {
    {"block-size", OPT_BLOCK_SIZE, "N", 0,
     "Router KV block size in tokens (required; 512 with --trace mooncake)", 1},
    {"kv-block-size", 0, NULL, OPTION_ALIAS, NULL, 1},
    {"router-prefill-load-scale", OPT_SCALE, "W", 0,
     "Scale of the adjusted prefill term (default 1.0)", 1},
    {"overlap-weight", OPT_OVERLAP_WEIGHT, "W", 0,
     "Deprecated --router-prefill-load-scale; 0 also drops the credit", 1},
    {"router-kv-overlap-score-weight", 0, NULL, OPTION_ALIAS | OPTION_HIDDEN,
     NULL, 1},
    {"router-kv-overlap-score-credit", OPT_CREDIT, "C", 0,
     "Credit per device-overlap block (default 1.0)", 1},
    {"router-kv-overlap-score-credit-decay", OPT_CREDIT_DECAY, "D", 0,
     "Decay of the device credit with excess active prefill (default 0)", 1},
    {"load-aware", OPT_LOAD_AWARE, NULL, 0,
     "Dynamo's preset: load only (credit 0, no KV reuse assumed)", 1},
    {"router-selection-policy", OPT_SELECTION, "POLICY", 0,
     "default (scale*prefill + decode) or lmetric (prefill*(decode+1))", 1},
    {"temperature", OPT_TEMPERATURE, "T", 0,
     "Softmax temperature; 0 (default) picks the lowest logit", 1},
    {"sample-seed", OPT_SEED, "S", 0,
     "Seed of the sampling PRNG (default 0; kv-hash's seed option is a "
     "hash seed)",
     1},
    {"seed", 0, NULL, OPTION_ALIAS | OPTION_HIDDEN, NULL, 1},
    {"tie-break", OPT_TIE_BREAK, "HOW", 0,
     "lowest-id (default), tree-size, random or reservoir", 1},
    {"no-load", OPT_NO_LOAD, NULL, 0,
     "Ignore load: rank by overlap only (P = D = N = 0)", 1},
    {"no-track-prefill", OPT_NO_TRACK_PREFILL, NULL, 0,
     "Own decisions add no active prefill tokens", 1},
    {"no-assume-reuse", OPT_NO_ASSUME_REUSE, NULL, 0,
     "Active requests never share blocks", 1},
    {"approx", OPT_APPROX, NULL, 0,
     "Approximate mode: the chosen worker is assumed to cache the "
     "request's blocks",
     1},
    {"ttl", OPT_TTL, "SECONDS", 0,
     "Approximate-mode block lifetime (default 120; 0 = never expire)", 1},
    {"approx-max-blocks", OPT_APPROX_MAX, "N", 0,
     "Approximate-mode size cap; pruned to 80% (default 1048576)", 1},
    {"score", OPT_SCORE, "HOW", 0,
     "Overlap: contiguous (default) or legacy (classic per-node count)", 1},
    {"gaps", OPT_GAPS, "HOW", 0,
     "event_id gaps: apply (default, warn), skip or fail", 1},
    {"orphans", OPT_ORPHANS, "HOW", 0,
     "A store whose parent is unknown (the capture began mid-run): skip "
     "(default, as Dynamo) or root (index it as a new chain)",
     1},
    {"lora", OPT_LORA, "NAME", 0,
     "LoRA name for token-bearing records without lora_name", 1},
    {"namespace", OPT_NAMESPACE, "NS", 0,
     "Cache namespace for token-bearing records without cache_namespace", 1},
    {"format", OPT_FORMAT, "FMT", 0, "ndjson (default), text or log", 1},
    {"brief", OPT_BRIEF, NULL, 0,
     "Brief decision records: request id, ts, chosen worker, overlap, "
     "logit (no per-candidate arrays)",
     1},
    {"events", OPT_EVENTS, "FILE", 0,
     "An event stream (repeatable), merged with the others by timestamp", 1},
    {"requests", OPT_REQUESTS, "FILE", 0,
     "A request stream (repeatable), merged with the others by timestamp", 1},
    {"trace", OPT_TRACE, "FORMAT", 0,
     "mooncake: every line is a Mooncake trace request", 1},
    {"workers", OPT_WORKERS, "N", 0,
     "Declare workers 0..N-1 (dp rank 0) as candidates", 1},
    {"tier-credit", OPT_TIER_CREDIT, NULL, 0,
     "Credit host/disk-tier overlap beyond the device overlap", 1},
    {"host-weight", OPT_HOST_WEIGHT, "W", 0,
     "Credit per host-tier block (default 0.75)", 1},
    {"router-host-cache-hit-weight", 0, NULL, OPTION_ALIAS, NULL, 1},
    {"disk-weight", OPT_DISK_WEIGHT, "W", 0,
     "Credit per disk-tier block (default 0.25)", 1},
    {"router-disk-cache-hit-weight", 0, NULL, OPTION_ALIAS, NULL, 1},
    {"request-expiry", OPT_REQUEST_EXPIRY, "SECONDS", 0,
     "Active requests expire this long after routing (default 3600; 0 = "
     "never)",
     1},
    {"max-active-blocks", OPT_MAX_ACTIVE, "N", 0,
     "Active requests hold at most N blocks in all; the oldest are released "
     "first (default 4194304; 0 = no cap)",
     1},
    {"draw", OPT_DRAW, "U", 0,
     "Use U in [0,1) instead of the PRNG draw (what-if, tests)", 1},
    {NULL, 0, NULL, 0, "Dynamo admission and replicas (off by default):", 2},
    {"active-decode-blocks-threshold", OPT_DECODE_THR, "F", 0,
     "Overloaded above F*--total-kv-blocks active blocks", 2},
    {"active-prefill-tokens-threshold", OPT_PREFILL_THR, "N", 0,
     "Overloaded above N active prefill tokens", 2},
    {"active-prefill-tokens-threshold-frac", OPT_PREFILL_FRAC, "F", 0,
     "Overloaded above F*--max-num-batched-tokens prefill tokens", 2},
    {"total-kv-blocks", OPT_TOTAL_KV_BLOCKS, "N", 0,
     "Each worker's KV cache size in blocks (for the decode threshold)", 2},
    {"max-num-batched-tokens", OPT_MAX_BATCHED, "N", 0,
     "Each worker's max_num_batched_tokens (for the fractions)", 2},
    {"router-queue-threshold", OPT_QUEUE_THR, "F", 0,
     "Queue requests while every worker has over "
     "F*--max-num-batched-tokens prefill tokens",
     2},
    {"router-queue-policy", OPT_QUEUE_POLICY, "POLICY", 0,
     "Queue order: fcfs (default) or wspt (shortest ISL first)", 2},
    {"router-session-affinity-ttl-secs", OPT_SESSION_TTL, "SECONDS", 0,
     "Keep a session_id on its worker; idle bindings expire", 2},
    {"replicas", OPT_REPLICAS, "N", 0,
     "N router replicas (round robin, or the request's replica key)", 2},
    {"replica-sync", OPT_REPLICA_SYNC, "on|off", 0,
     "Replicas share their decisions' load (default off)", 2},
    {"router-replica-sync", OPT_ROUTER_REPLICA_SYNC, NULL, 0,
     "Same as --replica-sync on", 2},
    {"predicted-ttl", OPT_PREDICTED_TTL, "SECONDS", 0,
     "Predict-on-route: a side index of decisions, max overlap per worker", 2},
    {"router-predicted-ttl-secs", 0, NULL, OPTION_ALIAS, NULL, 2},
    {"track-output-blocks", OPT_TRACK_OUTPUT, NULL, 0,
     "Active requests hold their output blocks (output_length / osl)", 2},
    {"router-track-output-blocks", 0, NULL, OPTION_ALIAS, NULL, 2},
    {NULL, 0, NULL, 0, "Comparing policies (route-score(1)):", 3},
    {"policy", OPT_POLICY, "NAME", 0,
     "dynamo (default), round-robin, random, least-loaded, "
     "sglang-cache-aware, prodstack-kvaware or prodstack-loadaware",
     3},
    {"balance-abs", OPT_BALANCE_ABS, "N", 0,
     "sglang-cache-aware: imbalanced when max - min active requests > N "
     "(default 64)",
     3},
    {"balance-rel", OPT_BALANCE_REL, "R", 0,
     "sglang-cache-aware: ... and max > R * min (default 1.5)", 3},
    {"cache-threshold", OPT_CACHE_THRESHOLD, "F", 0,
     "sglang-cache-aware: follow the longest match when matched/prompt > F "
     "(default 0.3), else the smallest tree",
     3},
    {"beta", OPT_BETA, "B", 0,
     "prodstack-*: score = matched/prompt - B * relative load (default 0.5)",
     3},
    {"capacity-blocks", OPT_CAPACITY, "N", 0,
     "Each worker's cache holds N blocks, evicted LRU (with --approx or "
     "--trace mooncake; replaces the TTL)",
     3},
    {"emit-events", OPT_EMIT_EVENTS, "FILE", 0,
     "With --capacity-blocks: write the caches' stores and evictions to "
     "FILE as RouterEvent records",
     3},
    {"mrc", OPT_MRC, NULL, 0,
     "Write mrc records: hit rate at every power-of-two capacity per "
     "worker and fleet (LRU stack distances)",
     3},
    {"prefill-tokens-per-s", OPT_PREFILL_TPS, "R", 0,
     "Simulated time: each worker prefills R tokens/s (default off)", 3},
    {"decode-tokens-per-s", OPT_DECODE_TPS, "R", 0,
     "Simulated time: each worker decodes R tokens/s, shared by its "
     "requests (default off)",
     3},
    {0},
};

static double
opt_nonneg(struct argp_state *st, const char *opt, const char *arg)
{
	double v = kvp_opt_double(st, opt, arg);

	if (!(v >= 0))
		argp_error(st, "%s: must be >= 0", opt);
	return v;
}

static double
opt_seconds_ms(struct argp_state *st, const char *opt, const char *arg)
{
	return (double)kvp_opt_u64(st, opt, arg, UINT64_MAX / 1000) * 1000;
}

/* Dynamo's cost-model, admission and replica options. */
/* lint: table-driven */
static error_t
parse_dynamo(int key, char *arg, struct argp_state *st)
{
	static const char *const sel[] = {"default", "lmetric", NULL};
	static const char *const qpol[] = {"fcfs", "wspt", NULL};
	static const char *const onoff[] = {"off", "on", NULL};
	struct kvp_replay_opts *o = &((struct opts *)st->input)->r;
	struct kvp_route_opts *ro = &o->ro;

	switch (key) {
	case OPT_SCALE:
		ro->overlap_weight =
		    opt_nonneg(st, "--router-prefill-load-scale", arg);
		break;
	case OPT_CREDIT:
		ro->credit =
		    opt_nonneg(st, "--router-kv-overlap-score-credit", arg);
		break;
	case OPT_CREDIT_DECAY:
		ro->credit_decay = opt_nonneg(
		    st, "--router-kv-overlap-score-credit-decay", arg);
		break;
	case OPT_LOAD_AWARE:
		o->load_aware = 1;
		break;
	case OPT_SELECTION:
		ro->selection = kvp_opt_keyword(st, "--router-selection-policy",
		                                "policy", arg, sel);
		break;
	case OPT_DECODE_THR:
		ro->decode_thr =
		    opt_nonneg(st, "--active-decode-blocks-threshold", arg);
		ro->has_decode_thr = 1;
		break;
	case OPT_PREFILL_THR:
		ro->prefill_thr = kvp_opt_u64(
		    st, "--active-prefill-tokens-threshold", arg, UINT64_MAX);
		ro->has_prefill_thr = 1;
		break;
	case OPT_PREFILL_FRAC:
		ro->prefill_frac = opt_nonneg(
		    st, "--active-prefill-tokens-threshold-frac", arg);
		ro->has_prefill_frac = 1;
		break;
	case OPT_TOTAL_KV_BLOCKS:
		ro->total_kv_blocks =
		    kvp_opt_u64(st, "--total-kv-blocks", arg, UINT64_MAX);
		break;
	case OPT_MAX_BATCHED:
		ro->max_batched_tokens = kvp_opt_u64(
		    st, "--max-num-batched-tokens", arg, UINT64_MAX);
		break;
	case OPT_QUEUE_THR:
		o->queue_thr = opt_nonneg(st, "--router-queue-threshold", arg);
		o->fo.queue = 1;
		break;
	case OPT_QUEUE_POLICY:
		o->fo.policy = kvp_opt_keyword(st, "--router-queue-policy",
		                               "policy", arg, qpol);
		break;
	case OPT_SESSION_TTL:
		ro->session_ttl_ms = (uint64_t)opt_seconds_ms(
		    st, "--router-session-affinity-ttl-secs", arg);
		break;
	case OPT_REPLICAS:
		o->fo.replicas = kvp_opt_u64(st, "--replicas", arg, 1024);
		if (o->fo.replicas == 0)
			argp_error(st, "--replicas: must be > 0");
		break;
	case OPT_REPLICA_SYNC:
		o->fo.sync = kvp_opt_keyword(st, "--replica-sync", "setting",
		                             arg, onoff);
		break;
	case OPT_ROUTER_REPLICA_SYNC:
		o->fo.sync = 1;
		break;
	case OPT_PREDICTED_TTL:
		ro->predicted_ttl_ms =
		    (uint64_t)opt_seconds_ms(st, "--predicted-ttl", arg);
		if (ro->predicted_ttl_ms == 0)
			argp_error(st, "--predicted-ttl: must be > 0");
		break;
	case OPT_TRACK_OUTPUT:
		ro->track_output_blocks = 1;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Adds a --events or --requests stream. */
static void
add_stream(struct argp_state *st, struct opts *o, const char *path, int req)
{
	struct kvp_diag d;

	if (kvp_replay_add_stream(&o->r, path, req, &d) != 0)
		argp_error(st, "%s", d.msg);
}

/* The policy lab's options; 1 if key was one. */
static int
parse_lab(int key, char *arg, struct argp_state *st, struct opts *o)
{
	struct kvp_policy_opts *p = &o->r.pol;

	switch (key) {
	case OPT_POLICY:
		p->policy = kvp_opt_keyword(st, "--policy", "policy", arg,
		                            kvp_policy_names());
		return 1;
	case OPT_BALANCE_ABS:
		p->balance_abs =
		    kvp_opt_u64(st, "--balance-abs", arg, UINT64_MAX);
		return 1;
	case OPT_BALANCE_REL:
		p->balance_rel = opt_nonneg(st, "--balance-rel", arg);
		return 1;
	case OPT_CACHE_THRESHOLD:
		p->cache_threshold = opt_nonneg(st, "--cache-threshold", arg);
		if (p->cache_threshold > 1)
			argp_error(st, "--cache-threshold: must be in [0, 1]");
		return 1;
	case OPT_BETA:
		p->beta = opt_nonneg(st, "--beta", arg);
		return 1;
	case OPT_CAPACITY:
		p->capacity =
		    kvp_opt_u64(st, "--capacity-blocks", arg, UINT32_MAX);
		if (p->capacity == 0)
			argp_error(st, "--capacity-blocks: must be > 0");
		return 1;
	case OPT_EMIT_EVENTS:
		o->r.emit_events = arg;
		return 1;
	case OPT_MRC:
		p->mrc = 1;
		return 1;
	case OPT_PREFILL_TPS:
		p->prefill_tps = opt_nonneg(st, "--prefill-tokens-per-s", arg);
		return 1;
	case OPT_DECODE_TPS:
		p->decode_tps = opt_nonneg(st, "--decode-tokens-per-s", arg);
		return 1;
	}
	return 0;
}

/* lint: table-driven */
static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	static const char *const scores[] = {"contiguous", "legacy", NULL};
	static const char *const gaps[] = {"apply", "skip", "fail", NULL};
	static const char *const fmts[] = {"ndjson", "text", "log", NULL};
	static const char *const traces[] = {"kvpipe", "mooncake", NULL};
	static const char *const orphans[] = {"skip", "root", NULL};
	struct opts *o = st->input;
	struct kvp_diag d;

	if (parse_lab(key, arg, st, o))
		return 0;
	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_BLOCK_SIZE:
		o->r.block_size = kvp_opt_block_size(st, arg);
		break;
	case OPT_OVERLAP_WEIGHT:
		/* Dynamo's deprecated weight: the scale, and at 0 no credit */
		o->r.ro.overlap_weight =
		    opt_nonneg(st, "--overlap-weight", arg);
		if (o->r.ro.overlap_weight == 0)
			o->r.ro.credit = 0;
		break;
	case OPT_TEMPERATURE:
		o->r.ro.temperature = opt_nonneg(st, "--temperature", arg);
		break;
	case OPT_SEED:
		o->r.ro.seed =
		    kvp_opt_u64(st, "--sample-seed", arg, UINT64_MAX);
		break;
	case OPT_TIE_BREAK: {
		static const char *const ties[] = {"lowest-id", "tree-size",
		                                   "random", "reservoir", NULL};

		o->r.ro.tie_break =
		    kvp_opt_keyword(st, "--tie-break", "rule", arg, ties);
		break;
	}
	case OPT_NO_LOAD:
		o->r.ro.no_load = 1;
		break;
	case OPT_NO_TRACK_PREFILL:
		o->r.ro.no_track_prefill = 1;
		break;
	case OPT_NO_ASSUME_REUSE:
		o->r.ro.no_assume_reuse = 1;
		break;
	case OPT_APPROX:
		o->r.ro.approx = 1;
		break;
	case OPT_TTL:
		o->r.ro.ttl_ms =
		    kvp_opt_u64(st, "--ttl", arg, UINT64_MAX / 1000) * 1000;
		break;
	case OPT_APPROX_MAX:
		o->r.ro.approx_max =
		    kvp_opt_u64(st, "--approx-max-blocks", arg, UINT32_MAX);
		if (o->r.ro.approx_max == 0)
			argp_error(st, "--approx-max-blocks: must be > 0");
		break;
	case OPT_SCORE:
		o->r.ro.legacy =
		    kvp_opt_keyword(st, "--score", "formula", arg, scores);
		break;
	case OPT_GAPS:
		o->r.ro.gaps =
		    kvp_opt_keyword(st, "--gaps", "policy", arg, gaps);
		break;
	case OPT_ORPHANS:
		o->r.ro.orphans_root =
		    kvp_opt_keyword(st, "--orphans", "policy", arg, orphans);
		break;
	case OPT_LORA:
		o->r.lora = arg;
		break;
	case OPT_NAMESPACE:
		o->r.ns = arg;
		break;
	case OPT_FORMAT:
		o->r.format =
		    kvp_opt_keyword(st, "--format", "format", arg, fmts);
		break;
	case OPT_BRIEF:
		o->r.brief = 1;
		break;
	case OPT_EVENTS:
	case OPT_REQUESTS:
		add_stream(st, o, arg, key == OPT_REQUESTS);
		break;
	case OPT_TRACE:
		o->r.mooncake =
		    kvp_opt_keyword(st, "--trace", "format", arg, traces);
		break;
	case OPT_WORKERS:
		o->r.workers = kvp_opt_u64(st, "--workers", arg, 1 << 20);
		break;
	case OPT_TIER_CREDIT:
		o->r.ro.tier_credit = 1;
		break;
	case OPT_HOST_WEIGHT:
		o->r.ro.host_weight = opt_nonneg(st, "--host-weight", arg);
		break;
	case OPT_DISK_WEIGHT:
		o->r.ro.disk_weight = opt_nonneg(st, "--disk-weight", arg);
		break;
	case OPT_REQUEST_EXPIRY:
		o->r.ro.request_expiry_ms =
		    kvp_opt_u64(st, "--request-expiry", arg,
		                UINT64_MAX / 1000) *
		    1000;
		break;
	case OPT_MAX_ACTIVE:
		o->r.ro.max_active_blocks =
		    kvp_opt_u64(st, "--max-active-blocks", arg, UINT64_MAX);
		break;
	case OPT_DRAW:
		o->r.ro.draw = opt_nonneg(st, "--draw", arg);
		if (o->r.ro.draw >= 1)
			argp_error(st, "--draw: must be in [0, 1)");
		o->r.ro.have_draw = 1;
		break;
	case ARGP_KEY_ARG:
		if (o->r.input != NULL)
			argp_error(st, "at most one input FILE");
		o->r.input = arg;
		break;
	case ARGP_KEY_END:
		if (kvp_replay_end(&o->r, &d) != 0)
			argp_error(st, "%s", d.msg);
		break;
	default:
		return parse_dynamo(key, arg, st);
	}
	return 0;
}

static struct argp_child children[] = {{&kvp_cli_argp, 0, NULL, 0}, {0}};
static const struct argp argp = {
    options,
    parse_opt,
    "[FILE]",
    "Replay Dynamo's KV-router decision offline: apply router events to a "
    "prefix index and score every candidate worker for each request.\v"
    "Cost: logit = W*max(0, (P + ISL)/bs - C*O) + D + N, lowest wins. "
    "See route-score(1) and kvpipe-records(5).",
    children,
    NULL,
    NULL};

/* ---- records ------------------------------------------------------------ */

#define WARN_CAP 3 /* per kind; the rest are counted */

struct ctx {
	struct opts *o;
	struct kvp_front f;
	struct kvp_router *r; /* the first replica (summary, warnings) */
	struct kvp_rec_hasher h;
	FILE *out;
	struct kvp_jw jw;
	struct kvp_rout ro;
	struct kvp_cli_merged at; /* the record read */
	uintmax_t warned[KVP_RW_COUNT];
	struct kvp_warncap wcap;
	uint64_t ignored, truncated;
	FILE *evout; /* policy lab: --emit-events */
	struct kvp_jw evjw;
	struct kvp_rout_input in;
};

/* "tool: FILE:LINE: warning: KIND: msg" for each warning of a step's
 * result, the first WARN_CAP of each kind (the rest are counted, and the
 * count printed at exit). Not through kvp_report(): a warned record is
 * applied, not bad, so it must not count as skipped in the -k totals. */
static void
warn(struct ctx *c, const struct kvp_rin *in, const struct kvp_route_step *st,
     int rc)
{
	int kinds[KVP_RW_COUNT];
	size_t n = kvp_replay_warnings(in, st, rc, kinds);
	char buf[200];

	for (size_t i = 0; i < n; i++) {
		if (!kvp_warncap_take(&c->wcap, kinds[i]))
			continue;
		kvp_replay_warning_text(&c->o->r, in, st, kinds[i], buf,
		                        sizeof(buf));
		kvp_warnx("%s:%ju: warning: %s: %s", c->at.name, c->at.line,
		          kvp_replay_warn_names()[kinds[i]], buf);
	}
}

/* A decision (the front's callback): warn, write. A queued request's
 * decision comes after the record that let it through. */
static void
emit_decision(void *arg, const struct kvp_rin *in,
              const struct kvp_route_step *st)
{
	struct ctx *c = arg;

	warn(c, in, st, 0);
	kvp_rout_decision(&c->ro, in, &st->dc);
	if (c->evout != NULL) /* policy lab */
		kvp_rout_sim_events(&c->evjw, c->r);
}

/* One (parsed) record: apply, warn; decisions are written by
 * emit_decision(). 0, or -1 (d set). */
static int
handle(void *arg, struct kvp_rin *in, struct kvp_diag *d)
{
	struct ctx *c = arg;
	struct kvp_route_step st;
	int rc;

	rc = kvp_front_apply(&c->f, &c->h, in, &st, d);
	switch (st.kind) {
	case KVP_RIN_IGNORED:
		c->ignored++;
		break;
	case KVP_RIN_GAP:
		c->in.gap_records++;
		break;
	case KVP_RIN_STALE:
		c->in.stale_records++;
		break;
	case KVP_RIN_EVENT:
		if (st.truncated)
			c->truncated++;
		warn(c, in, &st, rc);
		break;
	default: /* requests: emit_decision() writes their decisions */
		break;
	}
	return rc;
}

/* --emit-events FILE: opened before the run, closed after it. */
static int
emit_open(struct ctx *c)
{
	if (c->o->r.emit_events == NULL)
		return 0;
	c->evout = kvp_cli_open_file(c->o->r.emit_events);
	if (c->evout == NULL)
		return -1;
	kvp_jw_init(&c->evjw, c->evout, c->o->cli.hash_strings,
	            c->o->cli.unbuffered);
	return 0;
}

static int
emit_close(struct ctx *c)
{
	if (c->evout == NULL)
		return 0;
	kvp_jw_fini(&c->evjw);
	return kvp_cli_close_file(c->evout, c->o->r.emit_events);
}

int
main(int argc, char *argv[])
{
	struct opts o;
	struct ctx c;
	struct kvp_diag d;
	int status;

	memset(&o, 0, sizeof(o));
	memset(&c, 0, sizeof(c));
	c.wcap = (struct kvp_warncap){kvp_replay_warn_names(), c.warned,
	                              KVP_RW_COUNT, WARN_CAP};
	kvp_cli_begin(argc, argv);
	kvp_cli_uses("xxhash", kvp_hash_lib_version());
	kvp_cli_init(&o.cli);
	kvp_replay_opts_init(&o.r);
	o.r.flags = flags;
	argp_parse(&argp, argc, argv, 0, NULL, &o);

	c.o = &o;
	kvp_diag_clear(&d);
	if (kvp_replay_setup(&o.r, &c.f, emit_decision, &c, &c.h, &c.ro, &d) !=
	    0)
		kvp_errx(KVP_EXIT_TROUBLE, "%s", d.msg);
	c.r = kvp_front_router(&c.f, 0);
	c.out = kvp_cli_open_output(&o.cli);
	if (c.out == NULL) {
		kvp_front_fini(&c.f);
		return KVP_EXIT_TROUBLE;
	}
	kvp_jw_init(&c.jw, c.out, o.cli.hash_strings, o.cli.unbuffered);
	c.ro.jw = &c.jw;
	c.ro.input = &c.in;

	if (emit_open(&c) != 0) {
		kvp_front_fini(&c.f);
		return KVP_EXIT_TROUBLE;
	}
	status = kvp_cli_each_merged(&o.r, &o.cli, &c.jw, handle, &c, &c.at);
	c.in.errors = c.at.bad;
	if (o.cli.max_errors < c.in.errors)
		c.in.errors_hidden = c.in.errors - o.cli.max_errors;
	if (status != KVP_EXIT_TROUBLE) {
		const struct kvp_route_stats *s = kvp_router_stats(c.r);

		kvp_front_finish(&c.f);
		kvp_rout_mrc(&c.ro, c.r);
		kvp_rout_summary(&c.ro, c.r, c.truncated, c.ignored);
		if (kvp_replay_unrouted(&o.r, s, &d))
			kvp_warnx("warning: none of the %" PRIu64
			          " requests had a candidate worker: %s",
			          s->requests, d.msg);
	}
	kvp_warncap_end(&c.wcap);
	if (emit_close(&c) != 0)
		status = KVP_EXIT_TROUBLE;
	kvp_jw_fini(&c.jw);
	if (kvp_cli_close_output(c.out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	kvp_rec_hasher_fini(&c.h);
	kvp_front_fini(&c.f);
	return status;
}
