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
#include "kvpipe.h"
#include "route/index.h"
#include "route/route_hash.h"
#include "route/route_input.h"
#include "route/route_out.h"
#include "route/route_src.h"
#include "route/route_step.h"
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
	OPT_BRIEF,
	OPT_MAX_ACTIVE,
};

#define KVP_MAX_STREAMS 64

struct opts {
	struct kvp_cli cli;
	struct kvp_route_opts ro;
	int have_bs;
	int format;
	int brief;
	int mooncake;
	uint64_t workers;
	const char *lora, *ns;
	/* --events and --requests files, in the order given */
	const char *streams[KVP_MAX_STREAMS];
	int is_req[KVP_MAX_STREAMS];
	int nstreams, nev, nrq;
	const char *input;
};

static const struct argp_option options[] = {
    {"block-size", OPT_BLOCK_SIZE, "N", 0,
     "Router KV block size in tokens (required; 512 with --trace mooncake)", 1},
    {"kv-block-size", 0, NULL, OPTION_ALIAS, NULL, 1},
    {"overlap-weight", OPT_OVERLAP_WEIGHT, "W", 0,
     "Weight of the prefill term (default 1.0; 0 also drops the credit)", 1},
    {"temperature", OPT_TEMPERATURE, "T", 0,
     "Softmax temperature; 0 (default) picks the lowest logit", 1},
    {"sample-seed", OPT_SEED, "S", 0,
     "Seed of the sampling PRNG (default 0; kv-hash's seed option is a "
     "hash seed)",
     1},
    {"seed", 0, NULL, OPTION_ALIAS | OPTION_HIDDEN, NULL, 1},
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
    {"disk-weight", OPT_DISK_WEIGHT, "W", 0,
     "Credit per disk-tier block (default 0.25)", 1},
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

/* Adds a --events or --requests stream. */
static void
add_stream(struct argp_state *st, struct opts *o, const char *path, int req)
{
	if (o->nstreams == KVP_MAX_STREAMS)
		argp_error(st, "at most %d --events and --requests streams",
		           KVP_MAX_STREAMS);
	o->streams[o->nstreams] = path;
	o->is_req[o->nstreams++] = req;
	if (req)
		o->nrq++;
	else
		o->nev++;
}

/* Defaults and checks once every option is in. With only --events or
 * only --requests, the other stream is FILE or standard input, so both
 * `events | route-score --requests R` and `requests | route-score --events
 * E` work. Standard input is read at most once. */
static void
opts_end(struct argp_state *st, struct opts *o)
{
	int nstdin = 0;

	if (o->mooncake && !o->have_bs) {
		o->ro.block_size = 512;
		o->have_bs = 1;
	}
	if (!o->have_bs)
		argp_error(st, "--block-size is required (vLLM 16, Mooncake "
		               "512)");
	if (o->nev > 0 && o->nrq > 0 && o->input != NULL)
		argp_error(st, "FILE and --events with --requests exclude each "
		               "other");
	if (o->nstreams > 0 && (o->nev == 0 || o->nrq == 0))
		add_stream(st, o, o->input ? o->input : "-", o->nrq == 0);
	if (o->nstreams > 0)
		o->input = NULL;
	for (int i = 0; i < o->nstreams; i++)
		nstdin += strcmp(o->streams[i], "-") == 0;
	if (nstdin > 1)
		argp_error(st, "--events and --requests cannot both read "
		               "standard input");
}

/* lint: table-driven */
static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	static const char *const ties[] = {"lowest-id", "tree-size", "random",
	                                   NULL};
	static const char *const scores[] = {"contiguous", "legacy", NULL};
	static const char *const gaps[] = {"apply", "skip", "fail", NULL};
	static const char *const fmts[] = {"ndjson", "text", "log", NULL};
	static const char *const traces[] = {"kvpipe", "mooncake", NULL};
	static const char *const orphans[] = {"skip", "root", NULL};
	struct opts *o = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_BLOCK_SIZE:
		o->ro.block_size = kvp_opt_block_size(st, arg);
		o->have_bs = 1;
		break;
	case OPT_OVERLAP_WEIGHT:
		o->ro.overlap_weight = opt_nonneg(st, "--overlap-weight", arg);
		break;
	case OPT_TEMPERATURE:
		o->ro.temperature = opt_nonneg(st, "--temperature", arg);
		break;
	case OPT_SEED:
		o->ro.seed = kvp_opt_u64(st, "--sample-seed", arg, UINT64_MAX);
		break;
	case OPT_TIE_BREAK:
		o->ro.tie_break =
		    kvp_opt_keyword(st, "--tie-break", "rule", arg, ties);
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
		o->ro.legacy =
		    kvp_opt_keyword(st, "--score", "formula", arg, scores);
		break;
	case OPT_GAPS:
		o->ro.gaps = kvp_opt_keyword(st, "--gaps", "policy", arg, gaps);
		break;
	case OPT_ORPHANS:
		o->ro.orphans_root =
		    kvp_opt_keyword(st, "--orphans", "policy", arg, orphans);
		break;
	case OPT_LORA:
		o->lora = arg;
		break;
	case OPT_NAMESPACE:
		o->ns = arg;
		break;
	case OPT_FORMAT:
		o->format =
		    kvp_opt_keyword(st, "--format", "format", arg, fmts);
		break;
	case OPT_BRIEF:
		o->brief = 1;
		break;
	case OPT_EVENTS:
	case OPT_REQUESTS:
		add_stream(st, o, arg, key == OPT_REQUESTS);
		break;
	case OPT_TRACE:
		o->mooncake =
		    kvp_opt_keyword(st, "--trace", "format", arg, traces);
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
	case OPT_MAX_ACTIVE:
		o->ro.max_active_blocks =
		    kvp_opt_u64(st, "--max-active-blocks", arg, UINT64_MAX);
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
		opts_end(st, o);
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

/* ---- warnings ----------------------------------------------------------- */

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

#define WARN_CAP 3 /* per kind; the rest are counted */

struct ctx {
	struct opts *o;
	struct kvp_router *r;
	struct kvp_route_hasher h;
	FILE *out;
	struct kvp_jw jw;
	struct kvp_rout ro;
	const char *fname;
	uintmax_t line;
	uintmax_t warned[W_NWARN];
	struct kvp_warncap wcap;
	uint64_t ignored, truncated;
	struct kvp_rout_input in;
};

static void warn_at(struct ctx *c, int kind, const char *fmt, ...)
    KVP_PRINTF(3, 4);

/* "tool: FILE:LINE: warning: KIND: msg", the first WARN_CAP of each kind
 * (the rest are counted, and the count printed at exit). Not through
 * kvp_report(): a warned record is applied, not bad, so it must not count
 * as skipped in the -k totals. */
static void
warn_at(struct ctx *c, int kind, const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	if (!kvp_warncap_take(&c->wcap, kind))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kvp_warnx("%s:%ju: warning: %s: %s", c->fname, c->line,
	          warn_names[kind], buf);
}

/* A store the index rejected. */
static void
warn_store(struct ctx *c, const struct kvp_event *ev, int store_status)
{
	if (store_status == KVP_STORE_PARENT_NOT_FOUND)
		warn_at(c, W_PARENT,
		        "worker %" PRIu64 " dp_rank %u: parent %" PRIu64
		        " unknown; store skipped (capture began mid-run? "
		        "see --orphans root)",
		        ev->worker_id, ev->dp_rank, ev->parent);
	if (store_status == KVP_STORE_SELF_REFERENCE)
		warn_at(c, W_SELF,
		        "worker %" PRIu64 " dp_rank %u: store repeats "
		        "a hash or its parent; rejected",
		        ev->worker_id, ev->dp_rank);
}

/* An event's warnings; rc is what applying it returned. */
static void
warn_event(struct ctx *c, const struct kvp_rin *in,
           const struct kvp_route_step *st, int rc)
{
	const struct kvp_event_result *res = &st->ev;
	const struct kvp_event *ev = &in->ev;

	if (st->bs_mismatch)
		warn_at(c, W_BS, "worker %" PRIu64 ": store dropped",
		        ev->worker_id);
	if (st->truncated) {
		c->truncated++;
		warn_at(c, W_TRUNC,
		        "worker %" PRIu64 ": tokens ran short; %zu block(s) "
		        "kept",
		        ev->worker_id, ev->n);
	}
	if (rc != 0)
		return;
	if (res->stale)
		warn_at(c, W_STALE,
		        "worker %" PRIu64 " dp_rank %u event_id %" PRIu64
		        " ignored",
		        ev->worker_id, ev->dp_rank, ev->event_id);
	if (res->gap)
		warn_at(c, W_GAP,
		        "worker %" PRIu64 " dp_rank %u: expected event_id "
		        "%" PRIu64 ", got %" PRIu64 " (%s)",
		        ev->worker_id, ev->dp_rank, res->expected, ev->event_id,
		        c->o->ro.gaps == KVP_GAPS_SKIP ? "skipped" : "applied");
	if (ev->kind == KVP_EV_STORED &&
	    (res->applied || res->store_status != KVP_STORE_OK))
		warn_store(c, ev, res->store_status);
	if (res->unknown)
		warn_at(c, W_UNKNOWN_REMOVE,
		        "worker %" PRIu64 " dp_rank %u: %zu removed hash(es) "
		        "not held",
		        ev->worker_id, ev->dp_rank, res->unknown);
}

/* ---- records ------------------------------------------------------------ */

/* One record: apply, warn, write the decision. 0, or -1 (d set). */
static int
handle(struct ctx *c, struct kvp_rin *in, struct kvp_diag *d)
{
	struct kvp_route_step st;
	int rc;

	rc = kvp_route_apply_record(c->r, &c->h, in, &st, d);
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
		warn_event(c, in, &st, rc);
		break;
	case KVP_RIN_REQUEST:
		if (rc != 0)
			break;
		if (st.bs_mismatch)
			warn_at(c, W_BS,
			        "request %.*s: its block_size differs from "
			        "--block-size %" PRIu32 "; hashed at %" PRIu32,
			        (int)(in->rq.id_len > 64 ? 64 : in->rq.id_len),
			        in->rq.id, c->o->ro.block_size,
			        c->o->ro.block_size);
		if (st.dc.warnings & KVP_WARN_DUPLICATE_REQUEST)
			warn_at(c, W_DUP_REQ,
			        "an active request had the same id; "
			        "it was freed first");
		kvp_rout_decision(&c->ro, in, &st.dc);
		break;
	}
	return rc;
}

/* A bad line or record of the current source (a read error is handled
 * apart). */
static void
report_bad(struct ctx *c, const struct kvp_rin_src *s, int rc,
           const struct kvp_diag *d)
{
	if (rc == KVP_RIN_SRC_TOO_LONG)
		kvp_report(c->fname, c->line, 0,
		           "line too long (over %zu bytes; see "
		           "--max-line-bytes)",
		           c->o->cli.max_line);
	else
		kvp_report_diag(c->fname, c->line, d);
	/* the first record rejected: say what the input is, if not ours (a
	 * trace read as one is just a bad trace line) */
	if (rc != KVP_RIN_SRC_TOO_LONG && s->n_records == 1 &&
	    !(s->p.mooncake &&
	      kvp_sniff(s->head, s->head_len) == KVP_KIND_TRACE))
		kvp_cli_hint(c->fname, s->head, s->head_len);
}

/* The status after one result rc of the merge (the record handled). */
static int
step(struct ctx *c, struct kvp_rin_merge *m, int rc, FILE *f)
{
	struct kvp_rin_src *s = &m->src[m->cur];
	struct kvp_diag d = {{0}, 0};

	if (rc == KVP_RIN_SRC_IOERR) /* that stream ends; -k: others go on */
		return kvp_cli_read_error(f, c->fname);
	if (rc == KVP_RIN_SRC_NOMEM) {
		kvp_warnx("out of memory");
		return KVP_EXIT_TROUBLE;
	}
	if (rc == KVP_RIN_SRC_RECORD) {
		if (handle(c, &s->rec, &d) == 0)
			return KVP_EXIT_OK;
		report_bad(c, s, rc, &d);
	} else {
		report_bad(c, s, rc, &s->diag);
	}
	c->in.errors++;
	return KVP_EXIT_DATA;
}

/* Reads the input (one stream, or several merged by time) and handles
 * every record; stops at the first failed write. Returns the exit
 * status. */
static int
run(struct ctx *c, struct kvp_rin_merge *m, FILE *const *f,
    const char *const *names)
{
	int status = KVP_EXIT_OK, st;

	for (;;) {
		int rc = kvp_rin_merge_next(m);

		for (size_t i = 0; i < m->nread; i++)
			kvp_tally_in();
		if (rc == KVP_RIN_SRC_EOF)
			break;
		c->fname = names[m->cur];
		c->line = m->src[m->cur].line;
		st = step(c, m, rc, f[m->cur]);
		status = kvp_worst(status, st);
		if (!kvp_jw_ok(&c->jw))
			return KVP_EXIT_TROUBLE; /* reported at close */
		if (st == KVP_EXIT_OK)
			continue;
		if (status == KVP_EXIT_TROUBLE || !c->o->cli.keep_going)
			break;
	}
	return status;
}

/* Opens the input streams, then runs. */
static int
run_inputs(struct ctx *c)
{
	struct opts *o = c->o;
	int n = o->nstreams > 0 ? o->nstreams : 1, status = KVP_EXIT_TROUBLE;
	const char *names[KVP_MAX_STREAMS];
	FILE *f[KVP_MAX_STREAMS] = {NULL};
	struct kvp_rin_merge m;

	kvp_rin_merge_init(&m);
	for (int i = 0; i < n; i++) {
		const char *path = o->nstreams > 0 ? o->streams[i]
		                   : o->input      ? o->input
		                                   : "-";
		/* one stream: read in file order, Mooncake lines included */
		int req = o->nstreams > 0 ? o->is_req[i] : 1;

		names[i] = kvp_cli_input_name(path);
		f[i] = kvp_cli_open_input(path);
		if (f[i] == NULL)
			goto out;
		if (kvp_rin_merge_add(&m, f[i], o->cli.max_line, req,
		                      o->ro.block_size, o->mooncake, o->lora,
		                      o->ns) != 0) {
			kvp_warnx("out of memory");
			goto out;
		}
	}
	status = run(c, &m, f, names);
out:
	kvp_rin_merge_fini(&m);
	for (int i = 0; i < n; i++)
		if (f[i] != NULL)
			(void)kvp_cli_close_input(f[i]);
	return status;
}

/* Requests came but none had a candidate worker: say the likely cause
 * instead of exiting 0 in silence. */
static void
warn_nothing_routed(const struct opts *o, const struct kvp_route_stats *s)
{
	const char *why;

	if (s->requests == 0 || s->no_candidate < s->requests)
		return;
	if (o->ro.approx && o->workers == 0)
		why = "--approx learns only from requests it routes: give "
		      "--workers N";
	else if (s->events == 0 && o->nev == 0)
		why = "no events were read and --workers was not given (FILE "
		      "is the only stream: give events with --events FILE "
		      "and requests with --requests FILE, or declare "
		      "--workers N)";
	else if (s->events == 0)
		why = "the event stream held no events (and --workers was not "
		      "given)";
	else
		why = "no event named a worker that a request could use";
	kvp_warnx("warning: none of the %" PRIu64
	          " requests had a candidate worker: %s",
	          s->requests, why);
}

int
main(int argc, char *argv[])
{
	struct opts o;
	struct ctx c;
	int status;

	memset(&o, 0, sizeof(o));
	memset(&c, 0, sizeof(c));
	c.wcap = (struct kvp_warncap){warn_names, c.warned, W_NWARN, WARN_CAP};
	kvp_cli_begin(argc, argv);
	kvp_cli_uses("xxhash", kvp_hash_lib_version());
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
	kvp_route_hasher_init(&c.h, o.ro.block_size);
	c.out = kvp_cli_open_output(&o.cli);
	if (c.out == NULL) {
		kvp_router_free(c.r);
		return KVP_EXIT_TROUBLE;
	}
	kvp_jw_init(&c.jw, c.out, o.cli.hash_strings, o.cli.unbuffered);
	c.ro.jw = &c.jw;
	c.ro.format = o.format;
	c.ro.brief = o.brief;
	c.ro.block_size = o.ro.block_size;
	c.ro.block_size_hint = "--block-size";
	c.ro.stats = kvp_router_stats(c.r);
	c.ro.input = &c.in;

	status = run_inputs(&c);
	if (o.cli.max_errors < c.in.errors)
		c.in.errors_hidden = c.in.errors - o.cli.max_errors;
	if (status != KVP_EXIT_TROUBLE) {
		kvp_rout_summary(&c.ro, c.r, c.truncated, c.ignored);
		warn_nothing_routed(&o, kvp_router_stats(c.r));
	}
	kvp_warncap_end(&c.wcap);
	kvp_jw_fini(&c.jw);
	if (kvp_cli_close_output(c.out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	kvp_route_hasher_fini(&c.h);
	kvp_router_free(c.r);
	return status;
}
