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
 *
 * The options' rules (presets, checks across options, the block size
 * given to every part, which results are warnings) are the replay's
 * (lib/replay/config.h); the loop is fe/merge.h's.
 */
#include <argp.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/diag.h"
#include "common/input.h"
#include "common/jsonw.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "fe/merge.h"
#include "fe/optab.h"
#include "kvpipe.h"
#include "lab/policy.h"
#include "replay/config.h"
#include "replay/front.h"
#include "replay/rec_hash.h"
#include "replay/route_input.h"
#include "replay/route_out.h"
#include "replay/route_src.h"
#include "replay/route_step.h"
#include "replay/truth.h"
#include "route/router.h"

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
    [KVP_RF_ENGINE_MODEL] = "--engine-model",
    [KVP_RF_HOST_CAPACITY] = "--host-capacity-blocks",
};

/* The options route-score parses itself (KVP_OT_OWN, .max). */
enum { OWN_OVERLAP = 1, OWN_EVENTS, OWN_REQUESTS, OWN_POLICY };

/* The table's entries, each in braces: an option (how its value is kept,
 * then its doc), an alias of the option above, a group's heading. */
#define F(field) offsetof(struct opts, field)
#define OPT(name, arg, group, how, doc) .a = {name, 0, arg, 0, doc, group}, how
#define ALIAS(name, flags, group)                                              \
	.a = {name, 0, NULL, OPTION_ALIAS | (flags), NULL, group}
#define GROUP(doc, group) .a = {NULL, 0, NULL, 0, doc, group}
#define OWN(what) .kind = KVP_OT_OWN, .max = what
#define FLAG(f) .kind = KVP_OT_FLAG, .off = F(f)
#define STR(f) .kind = KVP_OT_STR, .off = F(f)
#define WORD(f, what_, w)                                                      \
	.kind = KVP_OT_WORD, .off = F(f), .what = what_, .words = w
#define U64(f, m, ...) .kind = KVP_OT_U64, .off = F(f), .max = m, __VA_ARGS__
#define SIZE(f, m, ...) .kind = KVP_OT_SIZE, .off = F(f), .max = m, __VA_ARGS__
#define MS(f) .kind = KVP_OT_MS, .off = F(f)
#define MS_D(f, ...) .kind = KVP_OT_MS_D, .off = F(f), __VA_ARGS__
#define NONNEG(f, ...) .kind = KVP_OT_NONNEG, .off = F(f), __VA_ARGS__
#define BLOCK_SIZE(f) .kind = KVP_OT_BLOCK_SIZE, .off = F(f)

static const char *const sel[] = {"default", "lmetric", NULL};
static const char *const ties[] = {"lowest-id", "tree-size", "random",
                                   "reservoir", NULL};
static const char *const scores[] = {"contiguous", "legacy", NULL};
static const char *const gaps[] = {"apply", "skip", "fail", NULL};
static const char *const orphans[] = {"skip", "root", NULL};
static const char *const fmts[] = {
    "ndjson", "text", "log", "dynamo-trace", "dynamo-request-trace", NULL};
static const char *const wtypes[] = {"aggregated", "prefill", "decode", NULL};
static const char *const traces[] = {"kvpipe", "mooncake", NULL};
static const char *const qpol[] = {"fcfs", "wspt", NULL};
static const char *const onoff[] = {"off", "on", NULL};
/* kvp_engine_names() (lab.h), in enum kvp_engine_model order */
static const char *const engines[] = {"none", "vllm", "sglang", NULL};

static const struct kvp_optab ropts[] = {
    {OPT("block-size", "N", 1, BLOCK_SIZE(r.block_size),
         "Router KV block size in tokens (required; 512 with --trace "
         "mooncake; a named /dump file gives its own)")},
    {ALIAS("kv-block-size", 0, 1)},
    {OPT("router-prefill-load-scale", "W", 1, NONNEG(r.ro.overlap_weight),
         "Scale of the adjusted prefill term (default 1.0)")},
    {OPT("overlap-weight", "W", 1, OWN(OWN_OVERLAP),
         "Deprecated --router-prefill-load-scale; 0 also drops the credit")},
    {ALIAS("router-kv-overlap-score-weight", OPTION_HIDDEN, 1)},
    {OPT("router-kv-overlap-score-credit", "C", 1, NONNEG(r.ro.credit),
         "Credit per device-overlap block (default 1.0)")},
    {OPT("router-kv-overlap-score-credit-decay", "D", 1,
         NONNEG(r.ro.credit_decay),
         "Decay of the device credit with excess active prefill (default 0)")},
    {OPT("load-aware", NULL, 1, FLAG(r.load_aware),
         "Dynamo's preset: load only (credit 0, no KV reuse assumed)")},
    {OPT("router-selection-policy", "POLICY", 1,
         WORD(r.ro.selection, "policy", sel),
         "default (scale*prefill + decode) or lmetric (prefill*(decode+1))")},
    {OPT("router-temperature", "T", 1, NONNEG(r.ro.temperature),
         "Softmax temperature; 0 (default) picks the lowest logit")},
    {ALIAS("temperature", 0, 1)},
    {OPT("router-decode-active-request-weight", "W", 1,
         NONNEG(r.ro.request_weight),
         "Cost per active request of the candidate (default 0)")},
    {OPT("router-shared-cache-multiplier", "M", 1,
         NONNEG(r.ro.shared_multiplier),
         "Credit per shared-cache block beyond the device prefix (default 0; "
         "no shared cache is modelled, the term is 0)")},
    {OPT("worker-type", "TYPE", 1, WORD(r.ro.worker_type, "type", wtypes),
         "The pool routed: aggregated (default), prefill or decode")},
    {OPT("router-policy-config", "FILE", 1, STR(r.policy_config),
         "Dynamo's worker_selection YAML: the instance --worker-type's stage "
         "selects")},
    {OPT("score-parts", NULL, 1, FLAG(r.score_parts),
         "Candidates carry Dynamo's score intermediates")},
    {OPT("trace-sample-rate", "R", 1,
         NONNEG(r.trace_sample_rate, .check = KVP_OT_LE1),
         "The dynamo-trace formats trace the requests Dynamo samples at R "
         "(XXH3 of the request id; default 1: every one)")},
    {OPT("sample-seed", "S", 1, U64(r.ro.seed, UINT64_MAX),
         "Seed of the sampling PRNG (default 0; kv-hash's seed option is a "
         "hash seed)")},
    {ALIAS("seed", OPTION_HIDDEN, 1)},
    {OPT("tie-break", "HOW", 1, WORD(r.ro.tie_break, "rule", ties),
         "lowest-id (default), tree-size, random or reservoir")},
    {OPT("no-load", NULL, 1, FLAG(r.ro.no_load),
         "Ignore load: rank by overlap only (P = D = N = 0)")},
    {OPT("no-track-prefill", NULL, 1, FLAG(r.ro.no_track_prefill),
         "Own decisions add no active prefill tokens")},
    {OPT("no-assume-reuse", NULL, 1, FLAG(r.ro.no_assume_reuse),
         "Active requests never share blocks")},
    {OPT("approx", NULL, 1, FLAG(r.ro.approx),
         "Approximate mode: the chosen worker is assumed to cache the "
         "request's blocks")},
    {OPT("ttl", "SECONDS", 1, MS(r.ro.ttl_ms),
         "Approximate-mode block lifetime (default 120; 0 = never expire)")},
    {OPT("approx-max-blocks", "N", 1,
         U64(r.ro.approx_max, UINT32_MAX, .check = KVP_OT_POS),
         "Approximate-mode size cap; pruned to 80% (default 1048576)")},
    {OPT("score", "HOW", 1, WORD(r.ro.legacy, "formula", scores),
         "Overlap: contiguous (default) or legacy (classic per-node count)")},
    {OPT("gaps", "HOW", 1, WORD(r.ro.gaps, "policy", gaps),
         "event_id gaps: apply (default, warn), skip or fail")},
    {OPT("orphans", "HOW", 1, WORD(r.ro.orphans_root, "policy", orphans),
         "A store whose parent is unknown (the capture began mid-run): skip "
         "(default, as Dynamo) or root (index it as a new chain)")},
    {OPT("lora", "NAME", 1, STR(r.lora),
         "LoRA name for token-bearing records without lora_name")},
    {OPT("namespace", "NS", 1, STR(r.ns),
         "Cache namespace for token-bearing records without cache_namespace")},
    {OPT("format", "FMT", 1, WORD(r.format, "format", fmts),
         "ndjson (default), text, log, dynamo-trace or dynamo-request-trace")},
    {OPT("brief", NULL, 1, FLAG(r.brief),
         "Brief decision records: request id, ts, chosen worker, overlap, "
         "logit (no per-candidate arrays)")},
    {OPT("events", "FILE", 1, OWN(OWN_EVENTS),
         "An event stream (repeatable), merged with the others by timestamp")},
    {OPT("requests", "FILE", 1, OWN(OWN_REQUESTS),
         "A request stream (repeatable), merged with the others by timestamp")},
    {OPT("trace", "FORMAT", 1, WORD(r.mooncake, "format", traces),
         "mooncake: every line is a Mooncake trace request")},
    {OPT("workers", "N", 1, U64(r.workers, 1 << 20),
         "Declare workers 0..N-1 (dp rank 0) as candidates")},
    {OPT("tier-credit", NULL, 1, FLAG(r.ro.tier_credit),
         "Credit host/disk-tier overlap beyond the device overlap")},
    {OPT("host-weight", "W", 1, NONNEG(r.ro.host_weight),
         "Credit per host-tier block (default 0.75)")},
    {ALIAS("router-host-cache-hit-weight", 0, 1)},
    {OPT("disk-weight", "W", 1, NONNEG(r.ro.disk_weight),
         "Credit per disk-tier block (default 0.25)")},
    {ALIAS("router-disk-cache-hit-weight", 0, 1)},
    {OPT("request-expiry", "SECONDS", 1, MS(r.ro.request_expiry_ms),
         "Active requests expire this long after routing (default 3600; 0 = "
         "never)")},
    {OPT(
        "max-active-blocks", "N", 1, U64(r.ro.max_active_blocks, UINT64_MAX),
        "Active requests hold at most N blocks in all; the oldest are released "
        "first (default 4194304; 0 = no cap)")},
    {OPT("draw", "U", 1,
         NONNEG(r.ro.draw, .check = KVP_OT_LT1, .set = F(r.ro.have_draw)),
         "Use U in [0,1) instead of the PRNG draw (what-if, tests)")},
    {GROUP("Dynamo admission and replicas (off by default):", 2)},
    {OPT("active-decode-blocks-threshold", "F", 2,
         NONNEG(r.ro.decode_thr, .set = F(r.ro.has_decode_thr)),
         "Overloaded above F*--total-kv-blocks active blocks")},
    {OPT("active-prefill-tokens-threshold", "N", 2,
         U64(r.ro.prefill_thr, UINT64_MAX, .set = F(r.ro.has_prefill_thr)),
         "Overloaded above N active prefill tokens")},
    {OPT("active-prefill-tokens-threshold-frac", "F", 2,
         NONNEG(r.ro.prefill_frac, .set = F(r.ro.has_prefill_frac)),
         "Overloaded above F*--max-num-batched-tokens prefill tokens")},
    {OPT("total-kv-blocks", "N", 2, U64(r.ro.total_kv_blocks, UINT64_MAX),
         "Each worker's KV cache size in blocks (for the decode threshold)")},
    {OPT("max-num-batched-tokens", "N", 2,
         U64(r.ro.max_batched_tokens, UINT64_MAX),
         "Each worker's max_num_batched_tokens (for the fractions)")},
    {OPT("router-queue-threshold", "F", 2,
         NONNEG(r.queue_thr, .set = F(r.fo.queue)),
         "Queue requests while every worker has over "
         "F*--max-num-batched-tokens prefill tokens")},
    {OPT("router-queue-policy", "POLICY", 2, WORD(r.fo.policy, "policy", qpol),
         "Queue order: fcfs (default) or wspt (shortest ISL first)")},
    {OPT("router-session-affinity-ttl-secs", "SECONDS", 2,
         MS_D(r.ro.session_ttl_ms),
         "Keep a session_id on its worker; idle bindings expire")},
    {OPT("replicas", "N", 2, SIZE(r.fo.replicas, 1024, .check = KVP_OT_POS),
         "N router replicas (round robin, or the request's replica key)")},
    {OPT("replica-sync", "on|off", 2, WORD(r.fo.sync, "setting", onoff),
         "Replicas share their decisions' load (default off)")},
    {OPT("router-replica-sync", NULL, 2, FLAG(r.fo.sync),
         "Same as --replica-sync on")},
    {OPT(
        "predicted-ttl", "SECONDS", 2,
        MS_D(r.ro.predicted_ttl_ms, .check = KVP_OT_POS),
        "Predict-on-route: a side index of decisions, max overlap per worker")},
    {ALIAS("router-predicted-ttl-secs", 0, 2)},
    {OPT("track-output-blocks", NULL, 2, FLAG(r.ro.track_output_blocks),
         "Active requests hold their output blocks (output_length / osl)")},
    {ALIAS("router-track-output-blocks", 0, 2)},
    {GROUP("Comparing policies (route-score(1)):", 3)},
    {OPT("policy", "NAME", 3, OWN(OWN_POLICY),
         "dynamo (default), round-robin, random, least-loaded, "
         "sglang-cache-aware, prodstack-kvaware, prodstack-loadaware or "
         "dynamo-two-tier-cost-fn")},
    {OPT("balance-abs", "N", 3, U64(r.pol.balance_abs, UINT64_MAX),
         "sglang-cache-aware: imbalanced when max - min active requests > N "
         "(default 64)")},
    {OPT("balance-rel", "R", 3, NONNEG(r.pol.balance_rel),
         "sglang-cache-aware: ... and max > R * min (default 1.5)")},
    {OPT("cache-threshold", "F", 3,
         NONNEG(r.pol.cache_threshold, .check = KVP_OT_LE1),
         "sglang-cache-aware: follow the longest match when matched/prompt > F "
         "(default 0.3), else the smallest tree")},
    {OPT("beta", "B", 3, NONNEG(r.pol.beta),
         "prodstack-*: score = matched/prompt - B * relative load (default "
         "0.5)")},
    {OPT("capacity-blocks", "N", 3,
         U64(r.pol.capacity, UINT32_MAX, .check = KVP_OT_POS),
         "Each worker's cache holds N blocks, evicted LRU (with --approx or "
         "--trace mooncake; replaces the TTL)")},
    {OPT("emit-events", "FILE", 3, STR(r.emit_events),
         "With --capacity-blocks: write the caches' stores and evictions to "
         "FILE as RouterEvent records")},
    {OPT("mrc", NULL, 3, FLAG(r.pol.mrc),
         "Write mrc records: hit rate at every power-of-two capacity per "
         "worker and fleet (LRU stack distances)")},
    {OPT("engine-model", "ENGINE", 3,
         WORD(r.pol.engine_model, "engine", engines),
         "Predict what each engine will report cached: none (default), "
         "vllm or sglang (caches sized by --capacity-blocks)")},
    {OPT("host-capacity-blocks", "N", 3,
         U64(r.pol.host_capacity, UINT32_MAX, .check = KVP_OT_POS),
         "--engine-model sglang: a write-through host tier (HiCache) of N "
         "blocks per worker")},
    {OPT("prefill-tokens-per-s", "R", 3, NONNEG(r.pol.prefill_tps),
         "Simulated time: each worker prefills R tokens/s (default off)")},
    {OPT("decode-tokens-per-s", "R", 3, NONNEG(r.pol.decode_tps),
         "Simulated time: each worker decodes R tokens/s, shared by its "
         "requests (default off)")},
};

#define NOPTS (sizeof(ropts) / sizeof(ropts[0]))

static struct argp_option options[NOPTS + 1]; /* from ropts, at start */

/* The options of the table that are route-score's own to parse. */
static void
parse_own(struct argp_state *st, struct opts *o, const struct kvp_optab *e,
          const char *arg)
{
	struct kvp_diag d;

	switch (e->max) {
	case OWN_OVERLAP:
		o->r.ro.overlap_weight =
		    kvp_opt_double(st, "--overlap-weight", arg);
		if (!(o->r.ro.overlap_weight >= 0))
			argp_error(st, "--overlap-weight: must be >= 0");
		if (o->r.ro.overlap_weight == 0)
			o->r.ro.credit = 0;
		break;
	case OWN_EVENTS:
	case OWN_REQUESTS:
		if (kvp_replay_add_stream(&o->r, arg, e->max == OWN_REQUESTS,
		                          &d) != 0)
			argp_error(st, "%s", d.msg);
		break;
	case OWN_POLICY:
		o->r.pol.policy = kvp_opt_keyword(st, "--policy", "policy", arg,
		                                  kvp_policy_names());
		break;
	}
}

/* Without --block-size, a named event input whose first line is a Dynamo
 * standalone-indexer /dump gives the block size (route-score(1)); standard
 * input cannot be read twice. Exits 1 when dumps disagree. */
static void
block_size_from_dump(struct opts *o)
{
	struct kvp_replay_opts *r = &o->r;
	const char *paths[KVP_REPLAY_MAX_STREAMS + 1];
	int n = 0, found = 0;

	if (r->block_size != 0 || r->mooncake)
		return;
	for (int i = 0; i < r->nstreams; i++)
		if (!r->is_req[i])
			paths[n++] = r->streams[i];
	if (r->nev == 0 && r->input != NULL)
		paths[n++] = r->input;
	for (int i = 0; i < n; i++) {
		struct kvp_diag d;
		struct kvp_input *in;
		uint32_t bs = 0;
		int rc;

		/* a file that cannot be read is reported by the run itself,
		 * after the option checks */
		if (strcmp(paths[i], "-") == 0 ||
		    (in = kvp_input_open(paths[i], &d)) == NULL)
			continue;
		rc = kvp_rin_dump_block_size(kvp_input_file(in),
		                             o->cli.max_line, &bs, &d);
		kvp_input_close(in);
		if (rc < 0 && d.msg[0] == '\0')
			continue; /* a read error: the same */
		if (rc < 0)
			kvp_errx(KVP_EXIT_DATA, "%s: %s",
			         kvp_cli_input_name(paths[i]), d.msg);
		if (rc > 0 && found && bs != r->block_size)
			kvp_errx(KVP_EXIT_DATA,
			         "%s: its dump's block_size %" PRIu32
			         " differs from the first dump's %" PRIu32,
			         kvp_cli_input_name(paths[i]), bs,
			         r->block_size);
		if (rc > 0) {
			r->block_size = bs;
			found = 1;
		}
	}
}

/* --router-policy-config FILE: "route-score: FILE:LINE: msg", exit 2. */
static void
policy_config(struct opts *o)
{
	struct kvp_diag d;
	long line;

	if (o->r.policy_config == NULL ||
	    kvp_replay_policy_config(&o->r, o->r.policy_config, &line, &d) == 0)
		return;
	if (line > 0)
		kvp_errx(KVP_EXIT_TROUBLE, "%s:%ld: %s", o->r.policy_config,
		         line, d.msg);
	kvp_errx(KVP_EXIT_TROUBLE, "%s: %s", o->r.policy_config, d.msg);
}

static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	const struct kvp_optab *e = kvp_optab_find(ropts, NOPTS, key);
	struct opts *o = st->input;
	struct kvp_diag d;

	if (e != NULL) {
		if (e->kind == KVP_OT_OWN)
			parse_own(st, o, e, arg);
		else
			kvp_optab_parse(st, e, o, arg);
		return 0;
	}
	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case ARGP_KEY_ARG:
		if (o->r.input != NULL)
			argp_error(st, "at most one input FILE");
		o->r.input = arg;
		break;
	case ARGP_KEY_END: /* the rules between options: replay/config.h */
		block_size_from_dump(o);
		policy_config(o);
		if (kvp_replay_end(&o->r, &d) != 0)
			argp_error(st, "%s", d.msg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
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
	int osl_said; /* kvp_replay_osl_unmodelled() */
	FILE *evout;  /* policy lab: --emit-events */
	struct kvp_jw evjw;
	struct kvp_rout_input in;
	struct kvp_truth truth;   /* --engine-model: cache_truth */
	struct kvp_funnel funnel; /* the summary's dynamo_funnel */
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
	kvp_truth_add(&c->truth, in, &st->dc);
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
		if (kvp_replay_osl_unmodelled(&c->o->r, in, &c->osl_said))
			kvp_warnx(
			    "%s:%ju: warning: %s", c->at.name, c->at.line,
			    "the trace has output lengths but no completion "
			    "model: requests never finish and TTFT is not "
			    "measured (see --prefill-tokens-per-s)");
		break;
	}
	return rc;
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
	kvp_optab_init(ropts, NOPTS, options);
	argp_parse(&argp, argc, argv, 0, NULL, &o);
	c.o = &o;
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
	c.truth.model = o.r.pol.engine_model;
	c.truth.bs = o.r.block_size;
	c.ro.truth = &c.truth;
	c.ro.funnel = &c.funnel;

	if (o.r.emit_events != NULL) { /* policy lab: the caches' events */
		c.evout = kvp_cli_open_file(o.r.emit_events);
		if (c.evout == NULL) {
			kvp_front_fini(&c.f);
			return KVP_EXIT_TROUBLE;
		}
		kvp_jw_init(&c.evjw, c.evout, o.cli.hash_strings,
		            o.cli.unbuffered);
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
	if (c.evout != NULL) {
		kvp_jw_fini(&c.evjw);
		if (kvp_cli_close_file(c.evout, o.r.emit_events) != 0)
			status = KVP_EXIT_TROUBLE;
	}
	kvp_jw_fini(&c.jw);
	if (kvp_cli_close_output(c.out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	kvp_rec_hasher_fini(&c.h);
	kvp_front_fini(&c.f);
	return status;
}
