/* SPDX-License-Identifier: MIT */
/*
 * kv-normalize — turn kv-decode event records into the router events
 * Dynamo's KV router would index (docs/spec/kv-events.md §3, §4, §6.4).
 *
 * Reads: kv-decode NDJSON event records, several (worker, dp_rank) streams
 * interleaved. Writes: one Dynamo RouterEvent per surviving event (kvpipe
 * diagnostics under "x"), and a {"rec":"filtered"} record per event dropped
 * before an event id is spent. Fails on: records that are not kv-decode
 * events, missing keys, wrong types, and (with --mm-exclusion off) wide
 * token ids: "kv-normalize: FILE:LINE: msg", exit 1; -k continues.
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
#include "events/event_reader.h"
#include "events/normalize.h"
#include "events/normalize_out.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "kvpipe.h"

#define MAX_WARN 3

enum {
	OPT_BLOCK_SIZE = 0x2000,
	OPT_MM_EXCLUSION,
	OPT_CAPACITY,
	OPT_LEGACY_MEDIUM,
	OPT_EVENT_ID,
	OPT_FIRST_EVENT_ID,
	OPT_NARROW,
	OPT_SENTINEL,
	OPT_IMAGE_TOKEN,
	OPT_VIDEO_TOKEN,
	OPT_WORKER_ID,
	OPT_OLD_WORKER_ID,
	OPT_DP_RANK,
	OPT_FALLBACK_EXCL,
	OPT_CLEAR_SCOPE,
	OPT_FORMAT,
	OPT_NS_CAPACITY,
	OPT_NS_FALLBACK,
	OPT_STREAM_CAPACITY,
	OPT_BLOCK_OFFSETS,
};

struct opts {
	struct kvp_cli cli;
	struct kvp_norm_opts n;
	int have_bs;
	int have_worker;
	int kvrecorder; /* --format kvrecorder */
	uint64_t worker_id;
	char **inputs;
	int n_inputs;
};

static const struct argp_option options[] = {
    {NULL, 0, NULL, 0, "Conversion:", 1},
    {"block-size", OPT_BLOCK_SIZE, "N", 0,
     "The router's kv_block_size (required; stores with another "
     "block_size publish no blocks)",
     0},
    {"kv-block-size", 0, NULL, OPTION_ALIAS, NULL, 0},
    {"event-id", OPT_EVENT_ID, "MODE", 0,
     "counter (per worker and rank, publisher path; default) or seq (the "
     "batch seq, standalone indexer path)",
     0},
    {"first-event-id", OPT_FIRST_EVENT_ID, "N", 0,
     "First id of each counter (default 0)", 0},
    {"block-offsets", OPT_BLOCK_OFFSETS, "use|ignore", 0,
     "A sparse store's block_offsets: hash only the chunks it names (use, "
     "default) or pair hashes with chunks in order as Dynamo does (ignore)",
     0},
    {"legacy-medium", OPT_LEGACY_MEDIUM, NULL, 0,
     "Map unknown media to the device tier instead of dropping the event", 0},
    {"image-token-id", OPT_IMAGE_TOKEN, "ID", 0,
     "Replace runs of ID in blocks with mm info by pad values (vLLM)", 0},
    {"video-token-id", OPT_VIDEO_TOKEN, "ID", 0,
     "Same for the video placeholder id", 0},
    {"force-worker-id", OPT_WORKER_ID, "ID", 0,
     "Use ID as every event's worker_id, replacing the record's "
     "(kv-decode's worker-id option only fills in a missing one)",
     0},
    {"worker-id", OPT_OLD_WORKER_ID, "ID", OPTION_HIDDEN,
     "Old name of --force-worker-id", 0},
    {"dp-rank", OPT_DP_RANK, "N", 0,
     "Rank for records whose dp_rank is null (default 0)", 0},
    {"format", OPT_FORMAT, "FMT", 0,
     "ndjson (default: RouterEvents with x, filtered, gap and stale "
     "records) or kvrecorder (Dynamo's KvRecorder JSONL: {\"timestamp\": "
     "ms, \"event\": RouterEvent})",
     0},
    {NULL, 0, NULL, 0, "Wide token ids (Stage-1 multimodal exclusion):", 2},
    {"mm-exclusion", OPT_MM_EXCLUSION, "MODE", 0,
     "engine-owned (default), u32-only or off", 0},
    {"exclusion-capacity", OPT_CAPACITY, "N", 0,
     "Excluded ids tracked per worker and rank before fallback (default "
     "1048576)",
     0},
    {"fallback-exclusions", OPT_FALLBACK_EXCL, "keep|drop", 0,
     "Keep (default) or forget the tracked ids on entering fallback", 0},
    {"namespace-capacity", OPT_NS_CAPACITY, "N", 0,
     "Cache-namespace entries tracked per worker and rank before the "
     "namespace fallback (default 1048576)",
     0},
    {"fallback-namespaces", OPT_NS_FALLBACK, "keep|drop", 0,
     "Keep (default) or forget the namespace map on entering the namespace "
     "fallback",
     0},
    {"stream-capacity", OPT_STREAM_CAPACITY, "N", 0,
     "(worker, rank) streams tracked; events of further streams are "
     "filtered as untracked_stream (default 65536)",
     0},
    {"clear-scope", OPT_CLEAR_SCOPE, "all-tiers|event-tier", 0,
     "What AllBlocksCleared resets (default all-tiers)", 0},
    {"narrow", OPT_NARROW, NULL, 0,
     "With --mm-exclusion off: map wide ids to the sentinel, no error", 0},
    {"wide-sentinel", OPT_SENTINEL, "N", 0,
     "The u32 a wide id narrows to (default 4294967295)", 0},
    {0}};

static const char *const excl_names[] = {"engine-owned", "u32-only", "off",
                                         NULL};
static const int excl_modes[] = {KVP_EXCL_ENGINE_OWNED, KVP_EXCL_U32_ONLY,
                                 KVP_EXCL_OFF};
static const char *const id_names[] = {"counter", "seq", NULL};
static const char *const offset_modes[] = {"use", "ignore", NULL};
static const int id_modes[] = {KVP_ID_COUNTER, KVP_ID_SEQ};
static const char *const keep_drop[] = {"keep", "drop", NULL};
static const char *const clear_scopes[] = {"all-tiers", "event-tier", NULL};
static const char *const formats[] = {"ndjson", "kvrecorder", NULL};

/* lint: table-driven */
static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	struct opts *o = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_BLOCK_SIZE:
		o->n.kv_block_size = kvp_opt_block_size(st, arg);
		o->have_bs = 1;
		break;
	case OPT_MM_EXCLUSION:
		o->n.excl_mode = excl_modes[kvp_opt_keyword(
		    st, "--mm-exclusion", "mode", arg, excl_names)];
		break;
	case OPT_CAPACITY:
		o->n.capacity = (size_t)kvp_opt_u64(st, "--exclusion-capacity",
		                                    arg, SIZE_MAX / 2);
		break;
	case OPT_NS_CAPACITY:
		o->n.ns_capacity = (size_t)kvp_opt_u64(
		    st, "--namespace-capacity", arg, SIZE_MAX / 2);
		break;
	case OPT_STREAM_CAPACITY:
		o->n.stream_capacity = (size_t)kvp_opt_u64(
		    st, "--stream-capacity", arg, SIZE_MAX / 2);
		break;
	case OPT_NS_FALLBACK:
		o->n.ns_fallback_drop = kvp_opt_keyword(
		    st, "--fallback-namespaces", "mode", arg, keep_drop);
		break;
	case OPT_LEGACY_MEDIUM:
		o->n.legacy_medium = 1;
		break;
	case OPT_EVENT_ID:
		o->n.id_mode = id_modes[kvp_opt_keyword(st, "--event-id",
		                                        "mode", arg, id_names)];
		break;
	case OPT_FIRST_EVENT_ID:
		o->n.first_event_id =
		    kvp_opt_u64(st, "--first-event-id", arg, UINT64_MAX);
		break;
	case OPT_NARROW:
		o->n.narrow = 1;
		break;
	case OPT_SENTINEL:
		o->n.sentinel = (uint32_t)kvp_opt_u64(st, "--wide-sentinel",
		                                      arg, UINT32_MAX);
		break;
	case OPT_IMAGE_TOKEN:
		o->n.image_token = (uint32_t)kvp_opt_u64(st, "--image-token-id",
		                                         arg, UINT32_MAX);
		o->n.has_image_token = 1;
		break;
	case OPT_VIDEO_TOKEN:
		o->n.video_token = (uint32_t)kvp_opt_u64(st, "--video-token-id",
		                                         arg, UINT32_MAX);
		o->n.has_video_token = 1;
		break;
	case OPT_OLD_WORKER_ID:
		kvp_warnx("warning: --worker-id is now --force-worker-id (it "
		          "replaces the record's worker_id; kv-decode's "
		          "--worker-id only fills in a missing one)");
		/* FALLTHROUGH */
	case OPT_WORKER_ID:
		o->worker_id =
		    kvp_opt_u64(st, "--force-worker-id", arg, UINT64_MAX);
		o->have_worker = 1;
		break;
	case OPT_DP_RANK:
		o->n.default_rank =
		    (uint32_t)kvp_opt_u64(st, "--dp-rank", arg, UINT32_MAX);
		break;
	case OPT_FALLBACK_EXCL:
		o->n.fallback_drop = kvp_opt_keyword(
		    st, "--fallback-exclusions", "mode", arg, keep_drop);
		break;
	case OPT_FORMAT:
		o->kvrecorder =
		    kvp_opt_keyword(st, "--format", "format", arg, formats);
		break;
	case OPT_CLEAR_SCOPE:
		o->n.clear_event_tier = kvp_opt_keyword(
		    st, "--clear-scope", "scope", arg, clear_scopes);
		break;
	case OPT_BLOCK_OFFSETS:
		o->n.ignore_offsets = kvp_opt_keyword(
		    st, "--block-offsets", "mode", arg, offset_modes);
		break;
	case ARGP_KEY_ARG:
		o->inputs = &st->argv[st->next - 1];
		o->n_inputs = st->argc - st->next + 1;
		st->next = st->argc;
		break;
	case ARGP_KEY_END:
		if (!o->have_bs)
			argp_error(st, "--block-size is required (the router's "
			               "kv_block_size)");
		if (o->n.narrow && o->n.excl_mode != KVP_EXCL_OFF)
			argp_error(st, "--narrow needs --mm-exclusion off");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = {{&kvp_cli_argp, 0, NULL, 0}, {0}};
static const struct argp argp = {
    options,
    parse_opt,
    "[FILE...]",
    "Convert kv-decode event records into Dynamo RouterEvent records "
    "(Dynamo's filters, conversion and Stage-1 multimodal exclusion).\v"
    "Reads standard input when no FILE is given. See kv-normalize(1) and "
    "kvpipe-records(5).",
    children,
    NULL,
    NULL};

/* Warnings: at most MAX_WARN of each kind, the rest counted. */
enum {
	W_NEG_RANK,
	W_BLOCK_SIZE,
	W_TOO_SHORT,
	W_SELF_REF,
	W_UNKNOWN_KIND,
	W_COUNT,
};
static const char *const warn_names[W_COUNT] = {
    "negative dp_rank", "block size", "short token_ids",
    "self-referencing store", "unknown kind"};

struct run {
	struct opts *o;
	struct kvp_norm *norm;
	struct kvp_event_reader rd;
	struct kvp_jw jw;
	const char *name;
	uintmax_t line;
	uintmax_t warned[W_COUNT];
	struct kvp_warncap wcap;
	uint64_t last_ts; /* KvRecorder: the time of an event without one */
};

static int
warn_ok(struct run *r, int kind)
{
	return kvp_warncap_take(&r->wcap, kind);
}

static void
print_warnings(struct run *r, const struct kvp_nev *ev,
               const struct kvp_nout *out)
{
	if ((out->warn & KVP_NW_NEGATIVE_RANK) && warn_ok(r, W_NEG_RANK))
		kvp_warnx("%s:%ju: warning: dp_rank %" PRId64
		          " is negative; cast to u32 %" PRIu32,
		          r->name, r->line, ev->rank, out->dp_rank);
	if ((out->warn & KVP_NW_BLOCK_SIZE) && warn_ok(r, W_BLOCK_SIZE))
		kvp_warnx("%s:%ju: warning: block not published: block size "
		          "must be %" PRIu32 " tokens, event has %" PRIu64 "%s",
		          r->name, r->line, r->o->n.kv_block_size,
		          out->ev_block_size,
		          ev->block_size == 0 && ev->n_tokens == 0
		              ? " (a placeholder store: no token ids)"
		              : "");
	if ((out->warn & KVP_NW_TOO_SHORT) && warn_ok(r, W_TOO_SHORT))
		kvp_warnx("%s:%ju: warning: block not published: token_ids "
		          "too short: need %zu, got %zu",
		          r->name, r->line, out->need_tokens, out->have_tokens);
	if ((out->warn & KVP_NW_SELF_REF) && warn_ok(r, W_SELF_REF))
		kvp_warnx("%s:%ju: warning: self-referencing block detected: "
		          "duplicate hash in store event; emitted as an empty "
		          "removal",
		          r->name, r->line);
	if ((out->warn & KVP_NW_UNKNOWN_KIND) && warn_ok(r, W_UNKNOWN_KIND))
		kvp_warnx("%s:%ju: warning: unknown kv_cache_spec_kind "
		          "\"%.40s\"; treated as non-main",
		          r->name, r->line, ev->kind);
	if (out->warn & KVP_NW_FALLBACK)
		kvp_warnx("%s:%ju: warning: worker_id %" PRIu64
		          " dp_rank %" PRIu32
		          ": more than %zu excluded block ids; fallback until "
		          "AllBlocksCleared (stores with a parent become "
		          "empty removals)",
		          r->name, r->line, out->worker_id, out->dp_rank,
		          r->o->n.capacity);
	if (out->warn & KVP_NW_NS_FALLBACK)
		kvp_warnx("%s:%ju: warning: worker_id %" PRIu64
		          " dp_rank %" PRIu32
		          ": more than %zu cache-namespace entries; namespace "
		          "fallback until AllBlocksCleared (unsalted stores "
		          "whose parent is untracked are filtered)",
		          r->name, r->line, out->worker_id, out->dp_rank,
		          r->o->n.ns_capacity);
	if (out->warn & KVP_NW_STREAM_FALLBACK)
		kvp_warnx("%s:%ju: warning: worker_id %" PRIu64
		          " dp_rank %" PRIu32
		          ": more than %zu (worker, rank) streams; the events "
		          "of this and every further new stream are filtered "
		          "(untracked_stream)",
		          r->name, r->line, out->worker_id, out->dp_rank,
		          r->o->n.stream_capacity);
}

/* One event: normalize, warn, write. -1 data error (d set), -2 trouble. */
static int
process_event(struct run *r, struct kvp_nev *ev, struct kvp_diag *d)
{
	struct kvp_nout out;
	int rc;

	if (r->o->have_worker)
		ev->worker_id = r->o->worker_id;
	rc = kvp_norm_process(r->norm, ev, &out, d);
	if (rc == -2) {
		kvp_warnx("out of memory");
		return -2;
	}
	if (rc != 0) {
		/* a wide token id: name the options that allow one */
		size_t n = strlen(d->msg);

		snprintf(d->msg + n, sizeof d->msg - n,
		         " (--mm-exclusion off; see --narrow)");
		return -1;
	}
	print_warnings(r, ev, &out);
	if (!r->o->kvrecorder) {
		kvp_nout_write(&r->jw, &out);
		return 0;
	}
	if (out.has_ts)
		r->last_ts = out.ts_ms;
	kvp_nout_write_recorded(&r->jw, &out, r->last_ts);
	return 0;
}

/* One line through the kv-decode fast path, with a json-c fallback instead
 * of always building a json-c tree. */
static int
run_line(void *ctx, char *line, size_t len, struct kvp_diag *d)
{
	struct run *r = ctx;
	struct kvp_nev ev;
	int rc = kvp_event_reader_line(&r->rd, line, len, &ev, d);

	if (rc == 0)
		return process_event(r, &ev, d);
	if (rc == 1 && ev.skipped != KVP_NEV_EVENT && !r->o->kvrecorder) {
		/* kv-decode's gap and stale records go on unchanged, so the
		 * replay can count them (a KvRecorder file holds events only)
		 */
		kvp_jw_raw(&r->jw, line, len);
		kvp_jw_end_record(&r->jw);
	}
	if (rc == 1)
		return 0;
	if (rc == -2)
		kvp_warnx("out of memory");
	return rc;
}

static int
run_file(void *ctx, const char *path)
{
	struct run *r = ctx;

	r->name = kvp_cli_input_name(path);
	return kvp_cli_each_line(path, &r->o->cli, run_line, r, &r->line);
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct run r;
	FILE *out;
	int status;

	kvp_cli_begin(argc, argv);
	kvp_cli_uses("xxhash", kvp_hash_lib_version());
	memset(&o, 0, sizeof o);
	kvp_cli_init(&o.cli);
	kvp_norm_opts_init(&o.n);
	argp_parse(&argp, argc, argv, 0, NULL, &o);

	out = kvp_cli_open_output(&o.cli);
	if (out == NULL)
		return KVP_EXIT_TROUBLE;
	memset(&r, 0, sizeof r);
	r.wcap = (struct kvp_warncap){warn_names, r.warned, W_COUNT, MAX_WARN};
	r.o = &o;
	r.norm = kvp_norm_new(&o.n);
	if (r.norm == NULL || kvp_event_reader_init(&r.rd) != 0) {
		kvp_warnx("out of memory");
		kvp_cli_close_output(out, &o.cli);
		return KVP_EXIT_TROUBLE;
	}
	kvp_jw_init(&r.jw, out, o.cli.hash_strings, o.cli.unbuffered);
	status = kvp_cli_each_file(o.inputs, o.n_inputs, &o.cli, run_file, &r);
	kvp_warncap_end(&r.wcap);
	kvp_event_reader_fini(&r.rd);
	kvp_norm_free(r.norm);
	kvp_jw_fini(&r.jw);
	if (kvp_cli_close_output(out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	return status;
}
