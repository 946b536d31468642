/* SPDX-License-Identifier: MIT */
/*
 * kv-decode — captured KV-event batches (capture JSONL, frames, raw msgpack)
 * to one NDJSON record per event. See kv-decode(1), kvpipe-records(5).
 */
#include <json.h>

#include <argp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "events/decode_in.h"
#include "events/decode_out.h"
#include "common/diag.h"
#include "kvpipe.h"
#include "common/ndjson.h"
#include "events/wire.h"

enum {
	OPT_IN = 0x2000,
	OPT_WORKER_ID,
	OPT_DP_RANK,
	OPT_BATCHES,
	OPT_STRICT,
	OPT_DROP_STALE,
	OPT_GAP_AT_START,
};

struct opts {
	struct kvp_cli cli;
	enum kvp_din_format in;
	uint64_t *worker_ids;
	size_t n_worker_ids;
	int has_dp_rank;
	int32_t dp_rank;
	int batches, strict, drop_stale, gap_at_start;
	char **files;
	size_t n_files;
};

/* Everything known about the batch being decoded. */
struct bctx {
	struct kvp_dout_batch m; /* what the output records say */
	const char *where; /* "FILE:LINE" or "FILE:@OFFSET" for messages */
	int track;         /* seq gap/stale tracking applies */
};

struct ctx {
	const struct opts *o;
	FILE *out;
	struct kvp_dout dout;
	struct kvp_wire *w;
	int status;
	int stop; /* a bad record without -k: stop after this batch */
	unsigned char *buf;
	size_t buf_cap;
};

/* A bad record: an error record on stdout, a message on stderr, exit 1. */
static void
bad_col(struct ctx *c, const struct bctx *bc, const char *stage, int has_idx,
        size_t idx, long col, const char *msg)
{
	char pre[64] = "";

	kvp_dout_error(&c->dout, &bc->m, stage, has_idx, idx, msg);
	if (bc->m.has_seq && has_idx)
		snprintf(pre, sizeof pre,
		         "seq %llu, event %zu: ", (unsigned long long)bc->m.seq,
		         idx);
	else if (bc->m.has_seq)
		snprintf(pre, sizeof pre,
		         "seq %llu: ", (unsigned long long)bc->m.seq);
	kvp_report(bc->where, 0, col, "%s%s", pre, msg);
	c->status = kvp_worst(c->status, KVP_EXIT_DATA);
	if (!c->o->cli.keep_going)
		c->stop = 1;
}

static void
bad(struct ctx *c, const struct bctx *bc, const char *stage, int has_idx,
    size_t idx, const char *msg)
{
	bad_col(c, bc, stage, has_idx, idx, 0, msg);
}

/* ---- batches
 * ------------------------------------------------------------------ */

/* Decodes the batch loaded in c->w. Returns 0, or 2 on trouble. */
static int
decode_loaded(struct ctx *c, const struct bctx *bc, size_t bytes)
{
	struct kvp_wire_batch b = {0};
	struct kvp_wire_event ev;
	struct kvp_diag d = {{0}, 0};
	int has_rank;
	int32_t rank;
	size_t i;

	b.bytes = bytes;
	if (kvp_wire_envelope(c->w, c->o->strict, &b, &d) != 0) {
		bad(c, bc, "envelope", 0, 0, d.msg);
		return 0;
	}
	has_rank = b.has_rank || c->o->has_dp_rank;
	rank = b.has_rank ? b.rank : c->o->dp_rank;
	if (bc->track) {
		int rc =
		    kvp_dout_track_seq(&c->dout, &bc->m, has_rank, rank,
		                       c->o->gap_at_start, c->o->drop_stale);

		if (rc < 0) {
			kvp_warnx("out of memory");
			return 2;
		}
		if (rc > 0)
			return 0;
	}
	if (c->o->batches)
		kvp_dout_batch(&c->dout, &bc->m, &b, has_rank, rank);
	if (c->o->strict) {
		for (i = 0; i < b.n_events; i++) {
			if (kvp_wire_event(c->w, &b, i, &ev, &d) != 0) {
				char msg[320];

				snprintf(msg, sizeof msg,
				         "event %zu: %s; whole batch rejected "
				         "(--strict)",
				         i, d.msg);
				bad(c, bc, "batch", 1, i, msg);
				return 0;
			}
		}
	}
	if (b.n_events > 0 &&
	    kvp_dout_batch_parts(&c->dout, &bc->m, &b, has_rank, rank) != 0) {
		kvp_warn("memory stream");
		return 2;
	}
	for (i = 0; i < b.n_events; i++) {
		if (kvp_wire_event(c->w, &b, i, &ev, &d) != 0)
			bad(c, bc, "event", 1, i, d.msg);
		else
			kvp_dout_event(&c->dout, i, &ev);
	}
	return 0;
}

static int
decode_payload(struct ctx *c, const struct bctx *bc, const void *buf,
               size_t len)
{
	struct kvp_diag d = {{0}, 0};

	if (kvp_wire_load(c->w, buf, len, &d) != 0) {
		bad(c, bc, "msgpack", 0, 0, d.msg);
		return 0;
	}
	return decode_loaded(c, bc, len);
}

/* ---- capture JSONL
 * -------------------------------------------------------------- */

static int
grow_buf(struct ctx *c, size_t need)
{
	void *p;

	if (need <= c->buf_cap)
		return 0;
	p = realloc(c->buf, need);
	if (p == NULL)
		return -1;
	c->buf = p;
	c->buf_cap = need;
	return 0;
}

/* fast_len: the payload already decoded into c->buf by the fast path, or
 * SIZE_MAX. */
static int
jsonl_line(struct ctx *c, struct bctx *bc, struct json_object *o,
           uint64_t file_worker, size_t fast_len)
{
	struct kvp_diag d = {{0}, 0};
	struct kvp_din_capture cap = {0};
	size_t n, len;
	int rc;

	bc->m.capture = o;
	bc->track = 1;
	cap.worker = file_worker;
	rc = kvp_din_capture(o, &cap, &d);
	bc->m.has_seq = cap.has_seq;
	bc->m.seq = cap.seq;
	if (rc != 0) {
		bad(c, bc, "line", 0, 0, d.msg);
		return 0;
	}
	bc->m.topic = cap.topic;
	bc->m.topic_len = cap.topic_len;
	bc->m.source = cap.source;
	bc->m.worker = cap.worker;
	n = cap.b64_len;
	if (fast_len != SIZE_MAX && n == 0) {
		len = fast_len;
		goto decoded;
	}
	if (grow_buf(c, kvp_base64_decoded_max(n)) != 0) {
		kvp_warnx("out of memory");
		return 2;
	}
	if (kvp_base64_decode(cap.b64, n, c->buf, &len, &d) != 0) {
		char msg[300];

		snprintf(msg, sizeof msg, "payload_b64: %s", d.msg);
		bad(c, bc, "line", 0, 0, msg);
		return 0;
	}
decoded:
	if (cap.has_plen && cap.plen != len) {
		char msg[160];

		snprintf(msg, sizeof msg,
		         "payload_len is %llu but payload_b64 decodes to %zu "
		         "bytes",
		         (unsigned long long)cap.plen, len);
		bad(c, bc, "line", 0, 0, msg);
		return 0;
	}
	return decode_payload(c, bc, c->buf, len);
}

static int
read_jsonl(struct ctx *c, FILE *f, const char *name, uint64_t worker)
{
	struct json_tokener *tok = json_tokener_new();
	struct kvp_lines r;
	char where[4096];
	int st = 0;

	if (tok == NULL) {
		kvp_warnx("out of memory");
		return 2;
	}
	kvp_lines_init(&r, f, c->o->cli.max_line);
	while (!c->stop && st == 0) {
		struct bctx bc = {0};
		struct kvp_diag d = {{0}, 0};
		struct json_object *o;
		char *line;
		size_t len, ps = 0, pe = 0, fast_len;
		int rc = kvp_lines_next(&r, &line, &len);

		if (rc == KVP_LINE_EOF)
			break;
		snprintf(where, sizeof where, "%s:%ju", name, r.lineno);
		bc.where = where;
		bc.m.worker = worker;
		if (rc == KVP_LINE_IOERR) {
			st = kvp_cli_read_error(f, name);
			break;
		}
		if (rc == KVP_LINE_TOO_LONG) {
			char msg[120];

			kvp_tally_in();

			snprintf(msg, sizeof msg,
			         "line too long (over %zu bytes; see "
			         "--max-line-bytes)",
			         c->o->cli.max_line);
			bad(c, &bc, "line", 0, 0, msg);
			continue;
		}
		if (kvp_line_is_blank(line, len))
			continue;
		kvp_tally_in();
		fast_len = SIZE_MAX;
		if (kvp_din_find_payload(line, len, &ps, &pe) &&
		    grow_buf(c, kvp_base64_decoded_max(pe - ps)) == 0 &&
		    kvp_base64_decode(line + ps, pe - ps, c->buf, &fast_len,
		                      &d) != 0)
			fast_len = SIZE_MAX;
		if (fast_len != SIZE_MAX) {
			memmove(line + ps, line + pe, len - pe);
			len -= pe - ps;
		}
		o = kvp_json_parse_object(tok, line, len, &d);
		if (o == NULL) {
			if (fast_len != SIZE_MAX && d.col > (long)ps)
				d.col += (long)(pe - ps);
			bad_col(c, &bc, "line", 0, 0, d.col, d.msg);
			continue;
		}
		st = jsonl_line(c, &bc, o, worker, fast_len);
		json_object_put(o);
		if (ferror(c->out))
			st = 2;
	}
	kvp_lines_fini(&r);
	json_tokener_free(tok);
	return st;
}

/* ---- frames
 * ------------------------------------------------------------------------ */

static int
read_frames(struct ctx *c, FILE *f, const char *name, uint64_t worker)
{
	struct kvp_din_frames r;
	char where[4096];
	int st = 0;

	kvp_din_frames_init(&r, f, c->o->cli.max_line);
	while (!c->stop && st == 0) {
		struct bctx bc = {0};
		struct kvp_din_msg m;
		struct kvp_diag d = {{0}, 0};
		int rc = kvp_din_frames_next(&r, &m, &d);

		if (rc == KVP_DIN_EOF)
			break;
		if (rc == KVP_DIN_IOERR) {
			st = kvp_cli_read_error(f, name);
			break;
		}
		if (rc == KVP_DIN_NOMEM) {
			kvp_warnx("out of memory");
			st = 2;
			break;
		}
		kvp_tally_in();
		snprintf(where, sizeof where, "%s:@%llu", name,
		         (unsigned long long)m.start);
		bc.where = where;
		bc.m.worker = worker;
		bc.m.has_seq = m.has_seq;
		bc.m.seq = m.seq;
		if (rc != KVP_DIN_MSG) {
			bad(c, &bc, "frame", 0, 0, d.msg);
			if (rc == KVP_DIN_FATAL)
				break; /* cannot resynchronise */
			continue;
		}
		bc.m.topic = m.topic;
		bc.m.topic_len = m.topic_len;
		bc.m.source = m.source;
		bc.track = 1;
		st = decode_payload(c, &bc, m.payload, m.len);
		if (ferror(c->out))
			st = 2;
	}
	kvp_din_frames_fini(&r);
	return st;
}

/* ---- raw msgpack
 * ------------------------------------------------------------------ */

static int
read_raw(struct ctx *c, FILE *f, const char *name, uint64_t worker)
{
	struct kvp_wire_stream *s = kvp_wire_stream_new(f, c->o->cli.max_line);
	uint64_t ordinal = 0;
	char where[4096];
	int st = 0;

	if (s == NULL) {
		kvp_warnx("out of memory");
		return 2;
	}
	while (!c->stop && st == 0) {
		struct bctx bc = {0};
		struct kvp_diag d = {{0}, 0};
		uint64_t off;
		size_t size;
		int rc;

		rc = kvp_wire_stream_next(s, c->w, &off, &size, &d);
		snprintf(where, sizeof where, "%s:@%llu", name,
		         (unsigned long long)off);
		bc.where = where;
		bc.m.worker = worker;
		bc.m.topic = "";
		if (rc == 0)
			break;
		if (rc == -2) {
			st = kvp_cli_read_error(f, name);
			break;
		}
		kvp_tally_in();
		if (rc == -1) {
			bad(c, &bc, "msgpack", 0, 0, d.msg);
			break; /* cannot resynchronise */
		}
		bc.m.has_seq = 1;
		bc.m.seq = ordinal++;
		st = decode_loaded(c, &bc, size);
		if (ferror(c->out))
			st = 2;
	}
	kvp_wire_stream_free(s);
	return st;
}

/* ---- main
 * ----------------------------------------------------------------------------
 */

static int
decode_file(struct ctx *c, const char *path, uint64_t worker)
{
	const char *name = kvp_cli_input_name(path);
	FILE *f = kvp_cli_open_input(path);
	enum kvp_din_format in = c->o->in;
	int st;

	if (f == NULL)
		return 2;
	if (in == KVP_DIN_AUTO)
		in = kvp_din_detect(f);
	switch (in) {
	case KVP_DIN_FRAMES:
		st = read_frames(c, f, name, worker);
		break;
	case KVP_DIN_RAW:
		st = read_raw(c, f, name, worker);
		break;
	default:
		st = read_jsonl(c, f, name, worker);
		break;
	}
	return kvp_worst(st, kvp_cli_close_input(f));
}

static const struct argp_option options[] = {
    {"in", OPT_IN, "FORMAT", 0,
     "Input format: auto, jsonl, frames or raw (default auto)", 0},
    {"worker-id", OPT_WORKER_ID, "U64", 0,
     "Worker id of the events (default 0); give once for all files or "
     "once per file, in order. A capture line's worker_id wins",
     0},
    {"dp-rank", OPT_DP_RANK, "N", 0,
     "DP rank used when the envelope has none (default: null)", 0},
    {"batches", OPT_BATCHES, NULL, 0,
     "Also write one batch record before each batch's events", 0},
    {"strict", OPT_STRICT, NULL, 0,
     "Dynamo's rules: reject the whole batch on any event error, and any "
     "envelope that is not [ts, events, rank]",
     0},
    {"drop-stale", OPT_DROP_STALE, NULL, 0,
     "Skip the events of stale or duplicate batches (default: decode "
     "them after the stale record)",
     0},
    {"gap-at-start", OPT_GAP_AT_START, NULL, 0,
     "Report a gap when a stream's first seq is above 0 (as Dynamo's "
     "indexer replays [0, seq))",
     0},
    {0}};

static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	struct opts *o = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_IN:
		if (strcmp(arg, "auto") == 0)
			o->in = KVP_DIN_AUTO;
		else if (strcmp(arg, "jsonl") == 0)
			o->in = KVP_DIN_JSONL;
		else if (strcmp(arg, "frames") == 0)
			o->in = KVP_DIN_FRAMES;
		else if (strcmp(arg, "raw") == 0)
			o->in = KVP_DIN_RAW;
		else
			argp_error(st,
			           "--in: unknown format '%s' (auto, jsonl, "
			           "frames, raw)",
			           arg);
		break;
	case OPT_WORKER_ID: {
		void *p = realloc(o->worker_ids, (o->n_worker_ids + 1) *
		                                     sizeof *o->worker_ids);

		if (p == NULL)
			argp_failure(st, KVP_EXIT_TROUBLE, ENOMEM,
			             "--worker-id");
		o->worker_ids = p;
		o->worker_ids[o->n_worker_ids++] =
		    kvp_opt_u64(st, "--worker-id", arg, UINT64_MAX);
		break;
	}
	case OPT_DP_RANK:
		o->dp_rank =
		    (int32_t)kvp_opt_u64(st, "--dp-rank", arg, INT32_MAX);
		o->has_dp_rank = 1;
		break;
	case OPT_BATCHES:
		o->batches = 1;
		break;
	case OPT_STRICT:
		o->strict = 1;
		break;
	case OPT_DROP_STALE:
		o->drop_stale = 1;
		break;
	case OPT_GAP_AT_START:
		o->gap_at_start = 1;
		break;
	case ARGP_KEY_ARG:
		o->files = &st->argv[st->next - 1];
		o->n_files = (size_t)(st->argc - st->next + 1);
		st->next = st->argc;
		break;
	case ARGP_KEY_END:
		if (o->n_worker_ids > 1 &&
		    o->n_worker_ids != (o->n_files ? o->n_files : 1))
			argp_error(st,
			           "--worker-id given %zu times for %zu "
			           "file(s); give it once, or once per file",
			           o->n_worker_ids,
			           o->n_files ? o->n_files : 1);
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
    "Decode captured KV-cache event batches (vLLM, SGLang) into one NDJSON "
    "record per event.\v"
    "Reads capture JSONL, length-prefixed ZMQ frames, or raw concatenated "
    "msgpack batches (auto-detected) from each FILE, or standard input. "
    "Exit status: 0 ok, 1 bad data, 2 usage or I/O trouble. See "
    "kv-decode(1) and kvpipe-records(5).",
    children,
    NULL,
    NULL};

int
main(int argc, char **argv)
{
	struct opts o;
	struct ctx c;
	struct kvp_diag d = {{0}, 0};
	size_t i;
	int st = 0;

	kvp_cli_begin(argc, argv);
	memset(&o, 0, sizeof o);
	kvp_cli_init(&o.cli);
	argp_parse(&argp, argc, argv, 0, NULL, &o);

	memset(&c, 0, sizeof c);
	c.o = &o;
	c.out = kvp_cli_open_output(&o.cli);
	if (c.out == NULL)
		return KVP_EXIT_TROUBLE;
	c.w = kvp_wire_new();
	if (c.w == NULL) {
		kvp_warnx("out of memory");
		return KVP_EXIT_TROUBLE;
	}
	if (kvp_dout_init(&c.dout, c.out, o.cli.hash_strings, o.cli.unbuffered,
	                  &d) != 0) {
		kvp_warnx("%s", d.msg);
		return KVP_EXIT_TROUBLE;
	}
	for (i = 0; i < (o.n_files ? o.n_files : 1); i++) {
		uint64_t worker = 0;

		if (o.n_worker_ids == 1)
			worker = o.worker_ids[0];
		else if (o.n_worker_ids > 1)
			worker = o.worker_ids[i];
		c.stop = 0;
		st = kvp_worst(
		    st, decode_file(&c, o.n_files ? o.files[i] : NULL, worker));
		if (ferror(c.out) || (c.status != 0 && !o.cli.keep_going))
			break;
	}
	c.status = kvp_worst(c.status, st);
	if (kvp_cli_close_output(c.out, &o.cli) != 0)
		c.status = KVP_EXIT_TROUBLE;
	kvp_wire_free(c.w);
	kvp_dout_fini(&c.dout);
	free(c.buf);
	free(o.worker_ids);
	return c.status;
}
