/* SPDX-License-Identifier: MIT */
/*
 * kv-decode — captured KV-event batches (capture JSONL, frames, raw msgpack)
 * to one NDJSON record per event. See kv-decode(1), kvpipe-records(5).
 */
#include <argp.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "events/decode.h"
#include "events/decode_in.h"
#include "events/wire.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "kvpipe.h"

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
	struct kvp_decode_opts d;
	uint64_t *worker_ids;
	size_t n_worker_ids;
	char **files;
	size_t n_files;
};

/* A bad unit: "tool: FILE:LINE: [seq S[, event I]: ]msg" (FILE:@OFFSET for
 * frames and raw streams). */
static void
report(const char *name, const struct kvp_decode_pos *p,
       const struct kvp_diag *d)
{
	char where[4096], pre[64] = "";

	if (p->at_offset)
		snprintf(where, sizeof where, "%s:@%llu", name,
		         (unsigned long long)p->offset);
	else
		snprintf(where, sizeof where, "%s:%ju", name, p->line);
	if (p->has_seq && p->has_idx)
		snprintf(pre, sizeof pre,
		         "seq %llu, event %zu: ", (unsigned long long)p->seq,
		         p->idx);
	else if (p->has_seq)
		snprintf(pre, sizeof pre,
		         "seq %llu: ", (unsigned long long)p->seq);
	kvp_report(where, 0, d->col, "%s%s", pre, d->msg);
}

/* Trouble in a step: a read error on f (which may be damaged compressed
 * data: 1), a write error (reported when the output closes) or d's. */
static int
trouble(FILE *f, const char *name, const struct kvp_diag *d)
{
	if (ferror(f))
		return kvp_cli_read_error(f, name);
	if (d->msg[0] != '\0')
		kvp_warnx("%s", d->msg);
	return KVP_EXIT_TROUBLE;
}

/* One input. Returns 0, 1 (damaged compressed input) or 2 (trouble); bad
 * records set *data to 1. */
static int
decode_file(const struct opts *o, struct kvp_decode *dec, const char *path,
            uint64_t worker, int *data)
{
	const char *name = kvp_cli_input_name(path);
	FILE *f = kvp_cli_open_input(path);
	struct kvp_decode_pos p;
	struct kvp_diag d = {{0}, 0};
	int rc, st = KVP_EXIT_OK;

	if (f == NULL)
		return KVP_EXIT_TROUBLE;
	if (kvp_decode_open(dec, f, worker, &d) != 0) {
		kvp_warnx("%s", d.msg);
		st = KVP_EXIT_TROUBLE;
	}
	while (st == KVP_EXIT_OK &&
	       (rc = kvp_decode_step(dec, &p, &d)) != KVP_END) {
		if (p.read)
			kvp_tally_in();
		if (rc == KVP_FAIL) {
			st = trouble(f, name, &d);
		} else if (rc == KVP_BAD) {
			report(name, &p, &d);
			*data = KVP_EXIT_DATA;
			if (kvp_cli_stop(&o->cli, KVP_EXIT_DATA))
				kvp_decode_finish(dec); /* stop here */
		}
	}
	kvp_decode_close(dec);
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

static const char *const in_names[] = {"auto", "jsonl", "frames", "raw", NULL};
static const int in_formats[] = {KVP_DIN_AUTO, KVP_DIN_JSONL, KVP_DIN_FRAMES,
                                 KVP_DIN_RAW};

static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	struct opts *o = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_IN:
		o->d.format = in_formats[kvp_opt_keyword(st, "--in", "format",
		                                         arg, in_names)];
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
		o->d.dp_rank =
		    (int32_t)kvp_opt_u64(st, "--dp-rank", arg, INT32_MAX);
		o->d.has_dp_rank = 1;
		break;
	case OPT_BATCHES:
		o->d.batches = 1;
		break;
	case OPT_STRICT:
		o->d.strict = 1;
		break;
	case OPT_DROP_STALE:
		o->d.drop_stale = 1;
		break;
	case OPT_GAP_AT_START:
		o->d.gap_at_start = 1;
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

/* The file loop's state. A file's trouble (it cannot be opened, its
 * compressed data is damaged) does not stop the loop: the next file is
 * decoded. Bad records (without -k) and a failed write do. */
struct files {
	const struct opts *o;
	struct kvp_decode *dec;
	FILE *out;
	size_t i;
	int data;    /* 1 once a bad record was seen */
	int trouble; /* the files' worst trouble */
};

/* One file: what the loop acts on, bad records or a failed write. */
static int
file_step(void *arg)
{
	struct files *fs = arg;
	const struct opts *o = fs->o;
	size_t i = fs->i;
	uint64_t worker;

	if (i == (o->n_files ? o->n_files : 1))
		return KVP_CLI_END;
	fs->i++;
	worker = o->n_worker_ids == 0   ? 0
	         : o->n_worker_ids == 1 ? o->worker_ids[0]
	                                : o->worker_ids[i];
	fs->trouble =
	    kvp_worst(fs->trouble,
	              decode_file(o, fs->dec, o->n_files ? o->files[i] : NULL,
	                          worker, &fs->data));
	return ferror(fs->out) ? KVP_EXIT_TROUBLE : fs->data;
}

/* One line at exit naming the third-party fields seen (tolerated, each
 * written with its event; docs/spec/kv-events.md §2.8). */
static void
third_party_note(const struct kvp_decode *dec)
{
	char buf[256];
	size_t n = 0;

	for (int i = 0; i < KVP_TP_COUNT; i++) {
		uintmax_t c = kvp_decode_third_party(dec, i);

		if (c > 0 && n < sizeof buf)
			n += (size_t)snprintf(buf + n, sizeof buf - n,
			                      "%s%s %ju", n > 0 ? ", " : "",
			                      kvp_wire_third_name(i), c);
	}
	if (n > 0)
		kvp_warnx("note: third-party fields tolerated (events): %s",
		          buf);
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct kvp_decode *dec;
	struct kvp_diag d = {{0}, 0};
	struct files fs;
	FILE *out;
	int status;

	kvp_cli_begin(argc, argv);
	kvp_cli_uses("msgpack-c", kvp_wire_lib_version());
	memset(&o, 0, sizeof o);
	kvp_cli_init(&o.cli);
	o.d.strict_flag = "--strict";
	o.d.max_flag = "--max-line-bytes";
	argp_parse(&argp, argc, argv, 0, NULL, &o);
	o.d.max_bytes = o.cli.max_line;
	o.d.hash_strings = o.cli.hash_strings;
	o.d.unbuffered = o.cli.unbuffered;

	out = kvp_cli_open_output(&o.cli);
	if (out == NULL)
		return KVP_EXIT_TROUBLE;
	dec = kvp_decode_new(&o.d, out, &d);
	if (dec == NULL) {
		kvp_warnx("%s", d.msg);
		return KVP_EXIT_TROUBLE;
	}
	fs = (struct files){&o, dec, out, 0, KVP_EXIT_OK, KVP_EXIT_OK};
	status = kvp_cli_loop(&o.cli, file_step, &fs);
	status = kvp_worst(status, fs.trouble);
	third_party_note(dec);
	if (kvp_cli_close_output(out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	kvp_decode_free(dec);
	free(o.worker_ids);
	return status;
}
