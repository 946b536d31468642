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

#include "cli.h"
#include "diag.h"
#include "index.h"
#include "kvpipe.h"
#include "ndjson.h"
#include "route_input.h"
#include "score.h"

enum { FMT_NDJSON, FMT_TEXT, FMT_LOG };

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
};

struct opts {
	struct kvp_cli cli;
	struct kvp_route_opts ro;
	int have_bs;
	int format;
	int mooncake;
	uint64_t workers;
	const char *lora, *ns;
	const char *events, *requests, *input;
};

static const struct argp_option options[] = {
    {"block-size", OPT_BLOCK_SIZE, "N", 0,
     "Router KV block size in tokens (required; 512 with --trace mooncake)", 1},
    {"overlap-weight", OPT_OVERLAP_WEIGHT, "W", 0,
     "Weight of the prefill term (default 1.0; 0 also drops the credit)", 1},
    {"temperature", OPT_TEMPERATURE, "T", 0,
     "Softmax temperature; 0 (default) picks the lowest logit", 1},
    {"seed", OPT_SEED, "S", 0, "PRNG seed (default 0)", 1},
    {"tie-break", OPT_TIE_BREAK, "HOW", 0,
     "lowest-id (default), tree-size or random", 1},
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
    {"lora", OPT_LORA, "NAME", 0,
     "LoRA name for token-bearing records without lora_name", 1},
    {"namespace", OPT_NAMESPACE, "NS", 0,
     "Cache namespace for token-bearing records without cache_namespace", 1},
    {"format", OPT_FORMAT, "FMT", 0, "ndjson (default), text or log", 1},
    {"events", OPT_EVENTS, "FILE", 0,
     "Event stream, merged with --requests by ts_ms", 1},
    {"requests", OPT_REQUESTS, "FILE", 0,
     "Request stream, merged with --events by ts_ms", 1},
    {"trace", OPT_TRACE, "FORMAT", 0,
     "mooncake: every line is a Mooncake trace request", 1},
    {"workers", OPT_WORKERS, "N", 0,
     "Declare workers 0..N-1 (dp rank 0) as candidates", 1},
    {"tier-credit", OPT_TIER_CREDIT, NULL, 0,
     "Credit host/disk-tier overlap beyond the device overlap", 1},
    {"host-weight", OPT_HOST_WEIGHT, "W", 0,
     "Credit per host-tier block (default 0.75)", 1},
    {"disk-weight", OPT_DISK_WEIGHT, "W", 0,
     "Credit per disk-tier block (default 0.25)", 1},
    {"request-expiry", OPT_REQUEST_EXPIRY, "SECONDS", 0,
     "Active requests expire this long after routing (default 3600; 0 = "
     "never)",
     1},
    {"draw", OPT_DRAW, "U", 0,
     "Use U in [0,1) instead of the PRNG draw (what-if, tests)", 1},
    {0},
};

static int
pick(struct argp_state *st, const char *opt, const char *arg,
     const char *const *names)
{
	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(arg, names[i]) == 0)
			return i;
	argp_error(st, "%s: unknown value '%s'", opt, arg);
	return -1;
}

static double
opt_nonneg(struct argp_state *st, const char *opt, const char *arg)
{
	double v = kvp_opt_double(st, opt, arg);

	if (!(v >= 0))
		argp_error(st, "%s: must be >= 0", opt);
	return v;
}

static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	static const char *const ties[] = {"lowest-id", "tree-size", "random",
	                                   NULL};
	static const char *const scores[] = {"contiguous", "legacy", NULL};
	static const char *const gaps[] = {"apply", "skip", "fail", NULL};
	static const char *const fmts[] = {"ndjson", "text", "log", NULL};
	static const char *const traces[] = {"kvpipe", "mooncake", NULL};
	struct opts *o = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_BLOCK_SIZE:
		o->ro.block_size =
		    (uint32_t)kvp_opt_u64(st, "--block-size", arg, UINT32_MAX);
		if (o->ro.block_size == 0)
			argp_error(st, "--block-size: must be > 0");
		o->have_bs = 1;
		break;
	case OPT_OVERLAP_WEIGHT:
		o->ro.overlap_weight = opt_nonneg(st, "--overlap-weight", arg);
		break;
	case OPT_TEMPERATURE:
		o->ro.temperature = opt_nonneg(st, "--temperature", arg);
		break;
	case OPT_SEED:
		o->ro.seed = kvp_opt_u64(st, "--seed", arg, UINT64_MAX);
		break;
	case OPT_TIE_BREAK:
		o->ro.tie_break = pick(st, "--tie-break", arg, ties);
		break;
	case OPT_NO_LOAD:
		o->ro.no_load = 1;
		break;
	case OPT_NO_TRACK_PREFILL:
		o->ro.no_track_prefill = 1;
		break;
	case OPT_NO_ASSUME_REUSE:
		o->ro.no_assume_reuse = 1;
		break;
	case OPT_APPROX:
		o->ro.approx = 1;
		break;
	case OPT_TTL:
		o->ro.ttl_ms =
		    kvp_opt_u64(st, "--ttl", arg, UINT64_MAX / 1000) * 1000;
		break;
	case OPT_APPROX_MAX:
		o->ro.approx_max =
		    kvp_opt_u64(st, "--approx-max-blocks", arg, UINT32_MAX);
		if (o->ro.approx_max == 0)
			argp_error(st, "--approx-max-blocks: must be > 0");
		break;
	case OPT_SCORE:
		o->ro.legacy = pick(st, "--score", arg, scores);
		break;
	case OPT_GAPS:
		o->ro.gaps = pick(st, "--gaps", arg, gaps);
		break;
	case OPT_LORA:
		o->lora = arg;
		break;
	case OPT_NAMESPACE:
		o->ns = arg;
		break;
	case OPT_FORMAT:
		o->format = pick(st, "--format", arg, fmts);
		break;
	case OPT_EVENTS:
		o->events = arg;
		break;
	case OPT_REQUESTS:
		o->requests = arg;
		break;
	case OPT_TRACE:
		o->mooncake = pick(st, "--trace", arg, traces);
		break;
	case OPT_WORKERS:
		o->workers = kvp_opt_u64(st, "--workers", arg, 1 << 20);
		break;
	case OPT_TIER_CREDIT:
		o->ro.tier_credit = 1;
		break;
	case OPT_HOST_WEIGHT:
		o->ro.host_weight = opt_nonneg(st, "--host-weight", arg);
		break;
	case OPT_DISK_WEIGHT:
		o->ro.disk_weight = opt_nonneg(st, "--disk-weight", arg);
		break;
	case OPT_REQUEST_EXPIRY:
		o->ro.request_expiry_ms = kvp_opt_u64(st, "--request-expiry",
		                                      arg, UINT64_MAX / 1000) *
		                          1000;
		break;
	case OPT_DRAW:
		o->ro.draw = opt_nonneg(st, "--draw", arg);
		if (o->ro.draw >= 1)
			argp_error(st, "--draw: must be in [0, 1)");
		o->ro.have_draw = 1;
		break;
	case ARGP_KEY_ARG:
		if (o->input != NULL)
			argp_error(st, "at most one input FILE");
		o->input = arg;
		break;
	case ARGP_KEY_END:
		if (o->mooncake && !o->have_bs) {
			o->ro.block_size = 512;
			o->have_bs = 1;
		}
		if (!o->have_bs)
			argp_error(st, "--block-size is required (vLLM 16, "
			               "Mooncake 512)");
		/* With only one of --events/--requests, the other stream is
		 * FILE or standard input, so both `events | route-score
		 * --requests R` and `requests | route-score --events E` work.
		 */
		if (o->events != NULL && o->requests != NULL &&
		    o->input != NULL)
			argp_error(st, "FILE and --events with --requests "
			               "exclude each other");
		if (o->events != NULL && o->requests == NULL)
			o->requests = o->input ? o->input : "-";
		else if (o->requests != NULL && o->events == NULL)
			o->events = o->input ? o->input : "-";
		if (o->events != NULL)
			o->input = NULL;
		if (o->events != NULL && strcmp(o->events, "-") == 0 &&
		    strcmp(o->requests, "-") == 0)
			argp_error(st, "--events and --requests cannot both "
			               "read standard input");
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

/* ---- warnings -------------------------------------------------------------
 */

enum {
	W_PARENT,
	W_SELF,
	W_STALE,
	W_GAP,
	W_UNKNOWN_REMOVE,
	W_BS,
	W_TRUNC,
	W_DUP_REQ,
	W_NWARN
};

static const char *const warn_names[W_NWARN] = {"parent_not_found",
                                                "self_reference",
                                                "stale",
                                                "gap",
                                                "unknown_removal",
                                                "block_size_mismatch",
                                                "truncated",
                                                "duplicate_request_id"};

#define WARN_CAP 3

struct ctx {
	struct opts *o;
	struct kvp_router *r;
	struct kvp_rin_parser p;
	struct kvp_jw jw;
	FILE *out;
	const char *fname;
	uintmax_t line;
	uint64_t warned[W_NWARN];
	uint64_t ignored, truncated;
};

static void warn_at(struct ctx *c, int kind, const char *fmt, ...)
    KVP_PRINTF(3, 4);

static void
warn_at(struct ctx *c, int kind, const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	if (c->warned[kind]++ >= WARN_CAP)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s:%ju: warning: %s: %s%s\n", kvp_getprogname(),
	        c->fname, c->line, warn_names[kind], buf,
	        c->warned[kind] == WARN_CAP ? " (further ones not shown)" : "");
}

/* ---- output
 * ------------------------------------------------------------------ */

static void
write_id(struct ctx *c, const struct kvp_rin *in)
{
	kvp_jw_key(&c->jw, "request_id");
	if (in->id_json != NULL)
		kvp_jw_json(&c->jw, in->id_json);
	else
		kvp_jw_u64(&c->jw, in->line_id);
}

/* An integral value goes through the (faster) integer writer; the text is
 * the same as kvp_jw_double's. */
static void
num(struct kvp_jw *w, const char *key, double v)
{
	if (v >= 0 && v < 9007199254740992.0 && v == (double)(uint64_t)v)
		kvp_jw_kv_u64(w, key, (uint64_t)v);
	else
		kvp_jw_kv_double(w, key, v);
}

static void
write_wr(struct kvp_jw *w, uint64_t wid, uint32_t rank)
{
	kvp_jw_obj_begin(w);
	kvp_jw_kv_hash(w, "worker_id", wid);
	kvp_jw_kv_u64(w, "dp_rank", rank);
	kvp_jw_obj_end(w);
}

static void
write_decision(struct ctx *c, const struct kvp_rin *in,
               const struct kvp_decision *dc)
{
	struct kvp_jw *w = &c->jw;
	const struct kvp_cand_score *ch =
	    dc->chosen >= 0 ? &dc->cand[dc->chosen] : NULL;
	const struct kvp_cand_score *mx =
	    dc->max_overlap >= 0 ? &dc->cand[dc->max_overlap] : NULL;

	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "decision");
	write_id(c, in);
	if (in->has_ts)
		kvp_jw_kv_u64(w, "ts_ms", in->ts_ms);
	kvp_jw_kv_bool(w, "commit", in->rq.commit);
	kvp_jw_kv_u64(w, "isl", dc->isl);
	kvp_jw_kv_u64(w, "request_blocks", dc->request_blocks);
	kvp_jw_kv_u64(w, "hashed_blocks", dc->hashed_blocks);
	kvp_jw_key(w, "chosen");
	if (ch != NULL)
		write_wr(w, ch->worker_id, ch->dp_rank);
	else
		kvp_jw_null(w);
	kvp_jw_kv_u64(w, "overlap_blocks", ch ? ch->overlap : 0);
	kvp_jw_key(w, "logit");
	if (ch != NULL)
		kvp_jw_double(w, ch->logit);
	else
		kvp_jw_null(w);
	num(w, "temperature", dc->temperature);
	num(w, "overlap_weight", dc->weight);
	if (dc->drew)
		kvp_jw_kv_double(w, "u", dc->u);
	kvp_jw_kv_str(w, "tie_break", dc->tie_break);
	kvp_jw_key(w, "tied");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < dc->ncand; i++)
		if (dc->cand[i].tied && dc->ntied > 1)
			write_wr(w, dc->cand[i].worker_id, dc->cand[i].dp_rank);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "max_overlap");
	if (mx != NULL) {
		kvp_jw_obj_begin(w);
		kvp_jw_kv_hash(w, "worker_id", mx->worker_id);
		kvp_jw_kv_u64(w, "dp_rank", mx->dp_rank);
		kvp_jw_kv_u64(w, "blocks", mx->overlap);
		kvp_jw_obj_end(w);
	} else {
		kvp_jw_null(w);
	}
	kvp_jw_kv_bool(w, "non_max_overlap",
	               ch && mx && ch->overlap < mx->overlap);
	kvp_jw_kv_u64(w, "blocks_lost",
	              ch && mx ? mx->overlap - ch->overlap : 0);
	kvp_jw_key(w, "candidates");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < dc->ncand; i++) {
		const struct kvp_cand_score *s = &dc->cand[i];

		kvp_jw_obj_begin(w);
		kvp_jw_kv_hash(w, "worker_id", s->worker_id);
		kvp_jw_kv_u64(w, "dp_rank", s->dp_rank);
		kvp_jw_kv_u64(w, "overlap_blocks", s->overlap);
		kvp_jw_kv_u64(w, "host_overlap_blocks", s->host_overlap);
		kvp_jw_kv_u64(w, "disk_overlap_blocks", s->disk_overlap);
		kvp_jw_kv_u64(w, "tree_size", s->tree_size);
		kvp_jw_kv_u64(w, "active_prefill_tokens",
		              s->active_prefill_tokens);
		kvp_jw_kv_u64(w, "prefill_tokens", s->prefill_tokens);
		num(w, "prefill_blocks", s->prefill_blocks);
		kvp_jw_kv_u64(w, "active_blocks", s->active_blocks);
		kvp_jw_kv_u64(w, "new_blocks", s->new_blocks);
		kvp_jw_kv_u64(w, "decode_blocks", s->decode_blocks);
		num(w, "logit", s->logit);
		if (dc->temperature > 0)
			num(w, "prob", s->prob);
		kvp_jw_obj_end(w);
	}
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "warnings");
	kvp_jw_arr_begin(w);
	if (dc->warnings & KVP_WARN_NO_FULL_BLOCK)
		kvp_jw_str(w, "no_full_block");
	if (in->flags & KVP_RIN_BLOCK_SIZE_MISMATCH)
		kvp_jw_str(w, "block_size_mismatch");
	if (dc->warnings & KVP_WARN_NO_CANDIDATES)
		kvp_jw_str(w, "no_candidates");
	if (dc->warnings & KVP_WARN_NO_OVERLAP)
		kvp_jw_str(w, "no_overlap");
	if (dc->warnings & KVP_WARN_DUPLICATE_REQUEST)
		kvp_jw_str(w, "duplicate_request_id");
	kvp_jw_arr_end(w);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

static void
id_text(const struct kvp_rin *in, char *buf, size_t len)
{
	size_t n = in->rq.id_len < len - 1 ? in->rq.id_len : len - 1;

	memcpy(buf, in->rq.id, n);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
}

static void
write_text(struct ctx *c, const struct kvp_rin *in,
           const struct kvp_decision *dc)
{
	FILE *f = c->out;
	char id[80];
	const struct kvp_cand_score *ch, *mx;

	id_text(in, id, sizeof(id));
	fprintf(f,
	        "request %s: isl %" PRIu64 ", %" PRIu64 " blocks (%" PRIu64
	        " hashed), W %g, T %g%s\n",
	        id, dc->isl, dc->request_blocks, dc->hashed_blocks, dc->weight,
	        dc->temperature, in->rq.commit ? "" : ", query only");
	if (dc->chosen < 0) {
		fprintf(f, "  no candidate worker%s\n\n",
		        dc->warnings & KVP_WARN_NO_FULL_BLOCK
		            ? " (and no full block)"
		            : "");
		return;
	}
	fprintf(f, "    %-20s %4s %7s %6s %10s %6s %6s %10s%s\n", "worker",
	        "dp", "overlap", "tree", "prefill", "active", "new", "logit",
	        dc->temperature > 0 ? "     prob" : "");
	for (size_t i = 0; i < dc->ncand; i++) {
		const struct kvp_cand_score *s = &dc->cand[i];

		fprintf(f,
		        "  %c %-20" PRIu64 " %4u %7u %6" PRIu64
		        " %10.3f %6" PRIu64 " %6" PRIu64 " %10.3f",
		        (long)i == dc->chosen ? '*' : ' ', s->worker_id,
		        s->dp_rank, s->overlap, s->tree_size, s->prefill_blocks,
		        s->active_blocks, s->new_blocks, s->logit);
		if (dc->temperature > 0)
			fprintf(f, " %8.6f", s->prob);
		fputc('\n', f);
	}
	ch = &dc->cand[dc->chosen];
	mx = &dc->cand[dc->max_overlap];
	fprintf(f, "  -> worker %" PRIu64 " dp %u: ", ch->worker_id,
	        ch->dp_rank);
	if (strcmp(dc->tie_break, "pinned") == 0)
		fprintf(f, "pinned by the request");
	else if (strcmp(dc->tie_break, "softmax") == 0)
		fprintf(f, "sampled at T %g with u %.6f (p %.6f)",
		        dc->temperature, dc->u, ch->prob);
	else
		fprintf(f, "lowest logit %.3f", ch->logit);
	if (dc->ntied > 1)
		fprintf(f, ", tied with %zu other candidate(s), broken by %s",
		        dc->ntied - 1, dc->tie_break);
	fprintf(f, "; overlap %u of %" PRIu64 " blocks", ch->overlap,
	        dc->hashed_blocks);
	if (ch->overlap < mx->overlap)
		fprintf(f,
		        "; NOT the max-overlap worker %" PRIu64
		        " (%u blocks): load outweighed %u cached blocks",
		        mx->worker_id, mx->overlap, mx->overlap - ch->overlap);
	fputc('\n', f);
	if (dc->warnings & KVP_WARN_NO_FULL_BLOCK) {
		fprintf(f,
		        "  why 0: no full block (%" PRIu64
		        " tokens, block size %u): nothing to match\n",
		        dc->isl, c->o->ro.block_size);
	} else if (dc->warnings & KVP_WARN_NO_OVERLAP) {
		uint64_t indexed = 0;

		for (size_t i = 0; i < dc->ncand; i++)
			indexed += dc->cand[i].tree_size;
		if (indexed == 0)
			fprintf(f, "  why 0: no blocks indexed for any "
			           "candidate (no store events seen)\n");
		else
			fprintf(f,
			        "  why 0: no worker holds the first block "
			        "(tokens_hash %" PRIu64
			        "); check --block-size, LoRA / namespace, "
			        "and that tokens_hash comes from the same "
			        "token ids\n",
			        in->rq.local[0]);
	}
	fputc('\n', f);
	if (c->o->cli.unbuffered)
		fflush(f);
}

/* Dynamo's scheduler debug lines (lib/llm/src/kv_router/scheduler.rs). */
static void
write_log(struct ctx *c, const struct kvp_rin *in,
          const struct kvp_decision *dc)
{
	FILE *f = c->out;
	char id[80];

	id_text(in, id, sizeof(id));
	for (size_t i = 0; i < dc->ncand; i++) {
		const struct kvp_cand_score *s = &dc->cand[i];

		fprintf(f,
		        "Formula for worker_id=%" PRIu64
		        " dp_rank=%u with %u cached blocks: %.3f = %.1f * "
		        "prefill_blocks + decode_blocks = %.1f * %.3f + "
		        "%.3f\n",
		        s->worker_id, s->dp_rank, s->overlap, s->logit,
		        dc->weight, dc->weight, s->prefill_blocks,
		        (double)s->decode_blocks);
	}
	if (dc->chosen >= 0) {
		const struct kvp_cand_score *ch = &dc->cand[dc->chosen];

		fprintf(f,
		        "Selected worker: worker_id=%" PRIu64
		        " dp_rank=%u, logit: %.3f, cached blocks: %u, tree "
		        "size: %" PRIu64 ", total blocks: %" PRIu64
		        " (request %s)\n",
		        ch->worker_id, ch->dp_rank, ch->logit, ch->overlap,
		        ch->tree_size, dc->request_blocks, id);
	} else {
		fprintf(f, "No worker available (request %s)\n", id);
	}
	if (c->o->cli.unbuffered)
		fflush(f);
}

static void
write_summary(struct ctx *c)
{
	const struct kvp_route_stats *s = kvp_router_stats(c->r);
	struct kvp_index *ix = kvp_router_index(c->r);
	size_t n = kvp_router_ncandidates(c->r);
	struct kvp_cand_total *t = calloc(n + 1, sizeof(*t));
	struct kvp_jw *w = &c->jw;

	if (t != NULL)
		n = kvp_router_totals(c->r, t, n);
	else
		n = 0;
	if (c->o->format == FMT_LOG) {
		free(t);
		return;
	}
	if (c->o->format == FMT_TEXT) {
		fprintf(c->out,
		        "summary: %" PRIu64 " requests, %" PRIu64
		        " routed; events %" PRIu64 " (%" PRIu64
		        " applied, %" PRIu64 " stale, %" PRIu64
		        " gaps, %" PRIu64 " parent not found); prefix hit "
		        "rate %.6f (reachable %.6f); non-max-overlap %" PRIu64
		        "\n",
		        s->requests, s->routed, s->events, s->applied, s->stale,
		        s->gaps, s->parent_not_found,
		        s->hashed_blocks
		            ? (double)s->hit_blocks / (double)s->hashed_blocks
		            : 0.0,
		        s->hashed_blocks ? (double)s->reachable_hit_blocks /
		                               (double)s->hashed_blocks
		                         : 0.0,
		        s->non_max_overlap);
		free(t);
		return;
	}
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "summary");
	kvp_jw_kv_u64(w, "events", s->events);
	kvp_jw_kv_u64(w, "applied", s->applied);
	kvp_jw_key(w, "skipped");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "stale", s->stale);
	kvp_jw_kv_u64(w, "gap", s->gap_skipped);
	kvp_jw_kv_u64(w, "parent_not_found", s->parent_not_found);
	kvp_jw_kv_u64(w, "self_reference", s->self_reference);
	kvp_jw_obj_end(w);
	kvp_jw_kv_u64(w, "gaps", s->gaps);
	kvp_jw_kv_u64(w, "duplicate_store", s->duplicate_store);
	kvp_jw_kv_u64(w, "block_size_mismatch", s->block_size_mismatch);
	kvp_jw_kv_u64(w, "truncated_stores", c->truncated);
	kvp_jw_kv_u64(w, "unknown_removals", s->unknown_removals);
	kvp_jw_kv_u64(w, "blocks_stored", s->blocks_stored);
	kvp_jw_kv_u64(w, "blocks_removed", s->blocks_removed);
	kvp_jw_kv_u64(w, "clears", s->clears);
	kvp_jw_kv_u64(w, "workers_removed", s->workers_removed);
	kvp_jw_kv_u64(w, "records_ignored", c->ignored);
	kvp_jw_kv_u64(w, "requests", s->requests);
	kvp_jw_kv_u64(w, "routed", s->routed);
	kvp_jw_kv_u64(w, "queries", s->queries);
	kvp_jw_kv_u64(w, "no_candidate", s->no_candidate);
	kvp_jw_kv_u64(w, "non_max_overlap", s->non_max_overlap);
	kvp_jw_kv_u64(w, "blocks_lost", s->blocks_lost);
	kvp_jw_kv_u64(w, "hashed_blocks", s->hashed_blocks);
	kvp_jw_kv_u64(w, "hit_blocks", s->hit_blocks);
	kvp_jw_kv_u64(w, "reachable_hit_blocks", s->reachable_hit_blocks);
	kvp_jw_kv_double(w, "prefix_hit_rate",
	                 s->hashed_blocks
	                     ? (double)s->hit_blocks / (double)s->hashed_blocks
	                     : 0.0);
	kvp_jw_kv_double(w, "reachable_hit_rate",
	                 s->hashed_blocks ? (double)s->reachable_hit_blocks /
	                                        (double)s->hashed_blocks
	                                  : 0.0);
	kvp_jw_kv_u64(w, "approx_expired", s->approx_expired);
	kvp_jw_kv_u64(w, "approx_pruned", s->approx_pruned);
	kvp_jw_kv_u64(w, "requests_expired", s->requests_expired);
	kvp_jw_kv_u64(w, "index_nodes", kvp_index_nodes(ix));
	kvp_jw_kv_u64(w, "index_pairs", kvp_index_pairs(ix));
	kvp_jw_kv_u64(w, "index_bytes", kvp_index_bytes(ix));
	kvp_jw_key(w, "workers");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		kvp_jw_obj_begin(w);
		kvp_jw_kv_hash(w, "worker_id", t[i].worker_id);
		kvp_jw_kv_u64(w, "dp_rank", t[i].dp_rank);
		kvp_jw_kv_u64(w, "routed", t[i].routed);
		kvp_jw_kv_u64(w, "tree_size", t[i].tree_size);
		kvp_jw_kv_u64(w, "active_requests", t[i].active_requests);
		kvp_jw_obj_end(w);
	}
	kvp_jw_arr_end(w);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
	free(t);
}

/* ---- records
 * ------------------------------------------------------------------ */

static int
do_event(struct ctx *c, const struct kvp_rin *in, struct kvp_diag *d)
{
	struct kvp_event_result res;
	const struct kvp_event *ev = &in->ev;

	if (in->flags & KVP_RIN_BLOCK_SIZE_MISMATCH) {
		kvp_router_stats_mut(c->r)->block_size_mismatch++;
		warn_at(c, W_BS, "worker %" PRIu64 ": store dropped",
		        ev->worker_id);
	}
	if (in->flags & KVP_RIN_TRUNCATED) {
		c->truncated++;
		warn_at(c, W_TRUNC,
		        "worker %" PRIu64 ": tokens ran short; %zu block(s) "
		        "kept",
		        ev->worker_id, ev->n);
	}
	if (kvp_router_apply(c->r, ev, &res, d) != 0)
		return -1;
	if (res.stale)
		warn_at(c, W_STALE,
		        "worker %" PRIu64 " dp_rank %u event_id %" PRIu64
		        " ignored",
		        ev->worker_id, ev->dp_rank, ev->event_id);
	if (res.gap)
		warn_at(c, W_GAP,
		        "worker %" PRIu64 " dp_rank %u: expected event_id "
		        "%" PRIu64 ", got %" PRIu64 " (%s)",
		        ev->worker_id, ev->dp_rank, res.expected, ev->event_id,
		        c->o->ro.gaps == KVP_GAPS_SKIP ? "skipped" : "applied");
	if (res.applied || res.store_status != KVP_STORE_OK) {
		if (ev->kind == KVP_EV_STORED &&
		    res.store_status == KVP_STORE_PARENT_NOT_FOUND)
			warn_at(c, W_PARENT,
			        "worker %" PRIu64 " dp_rank %u: parent %" PRIu64
			        " unknown; store skipped",
			        ev->worker_id, ev->dp_rank, ev->parent);
		if (ev->kind == KVP_EV_STORED &&
		    res.store_status == KVP_STORE_SELF_REFERENCE)
			warn_at(c, W_SELF,
			        "worker %" PRIu64 " dp_rank %u: store repeats "
			        "a hash or its parent; rejected",
			        ev->worker_id, ev->dp_rank);
	}
	if (res.unknown)
		warn_at(c, W_UNKNOWN_REMOVE,
		        "worker %" PRIu64 " dp_rank %u: %zu removed hash(es) "
		        "not held",
		        ev->worker_id, ev->dp_rank, res.unknown);
	return 0;
}

static int
do_request(struct ctx *c, const struct kvp_rin *in, struct kvp_diag *d)
{
	struct kvp_decision dc;

	if (kvp_router_route(c->r, &in->rq, &dc, d) != 0)
		return -1;
	if (dc.warnings & KVP_WARN_DUPLICATE_REQUEST)
		warn_at(c, W_DUP_REQ,
		        "an active request had the same id; "
		        "it was freed first");
	switch (c->o->format) {
	case FMT_TEXT:
		write_text(c, in, &dc);
		break;
	case FMT_LOG:
		write_log(c, in, &dc);
		break;
	default:
		write_decision(c, in, &dc);
	}
	return 0;
}

static int
handle(void *vc, struct json_object *o, struct kvp_diag *d)
{
	struct ctx *c = vc;
	struct kvp_rin in;

	if (kvp_rin_parse(&c->p, o, c->line, &in, d) != 0)
		return -1;
	switch (in.kind) {
	case KVP_RIN_IGNORED:
		c->ignored++;
		return 0;
	case KVP_RIN_WORKER:
		for (uint32_t i = 0; i < in.dp_size; i++)
			if (kvp_router_add_candidate(c->r, in.worker_id,
			                             in.dp_start + i) != 0)
				return kvp_diag_set(d, 0, "out of memory");
		return 0;
	case KVP_RIN_REMOVE_WORKER:
		kvp_router_stats_mut(c->r)->workers_removed +=
		    kvp_router_remove_worker(c->r, in.worker_id);
		return 0;
	case KVP_RIN_LOAD:
		if (kvp_router_set_load(c->r, in.worker_id, in.dp_rank,
		                        in.prefill_tokens,
		                        in.decode_blocks) != 0)
			return kvp_diag_set(d, 0, "out of memory");
		return 0;
	case KVP_RIN_EVENT:
		return do_event(c, &in, d);
	case KVP_RIN_REQUEST:
		return do_request(c, &in, d);
	case KVP_RIN_PREFILL_DONE:
		return kvp_router_prefill_done(c->r, in.rq.id, in.rq.id_len, d);
	case KVP_RIN_FREE:
		return kvp_router_free_request(c->r, in.rq.id, in.rq.id_len, d);
	}
	return 0;
}

/* ---- input sources ----------------------------------------------------------
 */

struct src {
	const char *name;
	FILE *f;
	struct kvp_rin_src rs;
	int eof;
};

static int
src_open(struct src *s, const char *path, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->name = kvp_cli_input_name(path);
	s->f = kvp_cli_open_input(path);
	if (s->f == NULL)
		return -1;
	if (kvp_rin_src_init(&s->rs, s->f, max) != 0) {
		kvp_warnx("out of memory");
		return -1;
	}
	return 0;
}

static void
src_close(struct src *s)
{
	if (s->f == NULL)
		return;
	kvp_rin_src_fini(&s->rs);
	kvp_cli_close_input(s->f);
	s->f = NULL;
}

/* Looks one record ahead. Returns the exit status so far (0, 1 after a
 * reported bad line, 2 on trouble). */
static int
src_fill(struct src *s, const struct kvp_cli *cli)
{
	int status = KVP_EXIT_OK;

	while (s->rs.pending == NULL && !s->eof) {
		struct kvp_diag d = {{0}, 0};

		switch (kvp_rin_src_next(&s->rs, &d)) {
		case KVP_RIN_SRC_RECORD:
			break;
		case KVP_RIN_SRC_EOF:
			s->eof = 1;
			break;
		case KVP_RIN_SRC_IOERR:
			kvp_warn("%s: read error", s->name);
			s->eof = 1;
			return KVP_EXIT_TROUBLE;
		case KVP_RIN_SRC_TOO_LONG:
			kvp_report(s->name, s->rs.line, 0,
			           "line too long (over %zu bytes; see "
			           "--max-line-bytes)",
			           cli->max_line);
			status = KVP_EXIT_DATA;
			if (!cli->keep_going)
				s->eof = 1;
			break;
		default:
			kvp_report_diag(s->name, s->rs.line, &d);
			status = KVP_EXIT_DATA;
			if (!cli->keep_going)
				s->eof = 1;
		}
	}
	return status;
}

static int
run(struct ctx *c)
{
	struct opts *o = c->o;
	struct src s[2];
	int ns = o->events != NULL ? 2 : 1, status = KVP_EXIT_OK;

	memset(s, 0, sizeof(s));
	if (ns == 2) {
		if (src_open(&s[0], o->events, o->cli.max_line) != 0 ||
		    src_open(&s[1], o->requests, o->cli.max_line) != 0) {
			src_close(&s[0]);
			src_close(&s[1]);
			return KVP_EXIT_TROUBLE;
		}
	} else if (src_open(&s[0], o->input ? o->input : "-",
	                    o->cli.max_line) != 0) {
		src_close(&s[0]);
		return KVP_EXIT_TROUBLE;
	}
	for (;;) {
		struct kvp_diag d = {{0}, 0};
		struct src *cur = NULL;
		int rc;

		for (int i = 0; i < ns; i++) {
			status = kvp_worst(status, src_fill(&s[i], &o->cli));
			if (status == KVP_EXIT_TROUBLE ||
			    (status == KVP_EXIT_DATA && !o->cli.keep_going))
				goto out;
		}
		for (int i = 0; i < ns; i++)
			if (s[i].rs.pending != NULL &&
			    (cur == NULL || s[i].rs.ts < cur->rs.ts))
				cur = &s[i];
		if (cur == NULL)
			break;
		c->fname = cur->name;
		/* --trace mooncake covers the request stream only. */
		c->p.mooncake = o->mooncake && cur == &s[ns - 1];
		c->line = cur->rs.line;
		rc = handle(c, cur->rs.pending, &d);
		kvp_rin_src_drop(&cur->rs);
		if (rc != 0) {
			kvp_report_diag(cur->name, cur->rs.line, &d);
			status = kvp_worst(status, KVP_EXIT_DATA);
			if (!o->cli.keep_going)
				break;
		}
	}
out:
	src_close(&s[0]);
	if (ns == 2)
		src_close(&s[1]);
	return status;
}

int
main(int argc, char *argv[])
{
	struct opts o;
	struct ctx c;
	int status;

	memset(&o, 0, sizeof(o));
	memset(&c, 0, sizeof(c));
	kvp_cli_begin(argc, argv);
	kvp_cli_init(&o.cli);
	kvp_route_opts_init(&o.ro);
	argp_parse(&argp, argc, argv, 0, NULL, &o);

	c.o = &o;
	c.r = kvp_router_new(&o.ro);
	if (c.r == NULL)
		kvp_errx(KVP_EXIT_TROUBLE, "out of memory");
	for (uint64_t i = 0; i < o.workers; i++)
		if (kvp_router_add_candidate(c.r, i, 0) != 0)
			kvp_errx(KVP_EXIT_TROUBLE, "out of memory");
	kvp_rin_init(&c.p, o.ro.block_size, o.mooncake, o.lora, o.ns);
	c.out = kvp_cli_open_output(&o.cli);
	if (c.out == NULL) {
		kvp_router_free(c.r);
		return KVP_EXIT_TROUBLE;
	}
	if (!o.cli.unbuffered)
		setvbuf(c.out, NULL, _IOFBF, 1 << 18);
	kvp_jw_init(&c.jw, c.out, o.cli.hash_strings, o.cli.unbuffered);

	status = run(&c);
	if (status != KVP_EXIT_TROUBLE)
		write_summary(&c);
	for (int k = 0; k < W_NWARN; k++)
		if (c.warned[k] > WARN_CAP)
			kvp_warnx("warning: %s: %" PRIu64 " in all",
			          warn_names[k], c.warned[k]);
	if (kvp_cli_close_output(c.out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	kvp_rin_fini(&c.p);
	kvp_router_free(c.r);
	return status;
}
