/* SPDX-License-Identifier: MIT */
/* kv-diff — compare two route-score decision streams; gate CI on the
 * differences with --fail-if. */
#include <argp.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "kvpipe.h"
#include "report/decision.h"
#include "report/diff.h"
#include "report/failif.h"

#define MAX_FAIL_IF 32

enum { OPT_FAIL_IF = 0x2000, OPT_FORMAT, OPT_CLASSIFY, OPT_BLOCK_SIZE };

struct opts {
	struct kvp_cli cli;
	int text;
	int classify;        /* --classify */
	uint32_t block_size; /* --block-size, or 0 */
	const char *paths[2];
	int n_paths;
	struct kvp_failif fail_if[MAX_FAIL_IF];
	const char *fail_src[MAX_FAIL_IF];
	int n_fail;
};

static const char doc[] =
    "Compare two route-score decision streams of the same requests (BASE "
    "and NEW), paired by request id, falling back to order.\v"
    "Writes one \"diff\" record per request whose chosen worker, overlap or "
    "rejection differs, one \"only\" record per request found in one "
    "stream only, then a \"summary\" record. --fail-if EXPR (repeatable) "
    "exits 1 when EXPR holds over the summary's fields, e.g. "
    "'hit_rate_delta < -0.005' or 'changed_fraction > 0.05 || "
    "rejected_delta > 0'. See kv-diff(1).";

static const char args_doc[] = "BASE NEW";

static const struct argp_option options[] = {
    {"fail-if", OPT_FAIL_IF, "EXPR", 0,
     "Exit 1 when EXPR holds over the summary (repeatable)", 0},
    {"format", OPT_FORMAT, "FMT", 0, "ndjson (default) or text", 0},
    {"classify", OPT_CLASSIFY, NULL, 0,
     "Name each difference's cause (index, load or a knob) and count them "
     "in the summary",
     0},
    {"block-size", OPT_BLOCK_SIZE, "N", 0,
     "Tokens per block, for comparing a Dynamo replay's reused input "
     "tokens with overlap blocks",
     0},
    {0}};

static const char *const formats[] = {"ndjson", "text", NULL};

static void
add_fail_if(struct argp_state *st, struct opts *o, const char *arg)
{
	struct kvp_diag d;

	if (o->n_fail == MAX_FAIL_IF)
		argp_error(st, "--fail-if: at most %d expressions",
		           MAX_FAIL_IF);
	kvp_diag_clear(&d);
	if (kvp_failif_compile(&o->fail_if[o->n_fail], arg, kvp_diff_fields,
	                       KVP_DIFF_N_FIELDS, &d) != KVP_OK)
		argp_error(st, "--fail-if '%.*s%s': position %ld: %s",
		           (int)(strlen(arg) > 80 ? 60 : 80), arg,
		           strlen(arg) > 80 ? "..." : "", d.col, d.msg);
	o->fail_src[o->n_fail++] = arg;
}

static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	struct opts *o = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_FAIL_IF:
		add_fail_if(st, o, arg);
		break;
	case OPT_FORMAT:
		o->text = kvp_opt_keyword(st, "--format", "format", arg,
		                          formats) == 1;
		break;
	case OPT_CLASSIFY:
		o->classify = 1;
		break;
	case OPT_BLOCK_SIZE:
		o->block_size =
		    (uint32_t)kvp_opt_u64(st, "--block-size", arg, UINT32_MAX);
		if (o->block_size == 0)
			argp_error(st, "--block-size: must be at least 1");
		break;
	case ARGP_KEY_ARG:
		if (o->n_paths == 2)
			argp_error(st, "too many files: give BASE and NEW");
		o->paths[o->n_paths++] = arg;
		break;
	case ARGP_KEY_END:
		if (o->n_paths != 2)
			argp_error(st, "give two files: BASE NEW");
		if (strcmp(o->paths[0], "-") == 0 &&
		    strcmp(o->paths[1], "-") == 0)
			argp_error(st, "BASE and NEW cannot both be stdin");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = {{&kvp_cli_argp, 0, NULL, 0}, {0}};
static const struct argp argp = {options,  parse_opt, args_doc, doc,
                                 children, NULL,      NULL};

struct run {
	const struct opts *o;
	struct kvp_decision_parser p;
	struct kvp_diff df;
	struct kvp_jw *w;
	int side;                  /* 0: BASE, 1: NEW */
	uintmax_t lineno;          /* the line being read */
	struct kvp_replay_doc doc; /* a replay report JSON being read */
	char idbuf[24];
};

static int
end_rec(struct run *r)
{
	if (r->o->text)
		return kvp_jw_end_text(r->w) == KVP_OK ? 0 : -2;
	return kvp_jw_end_record(r->w) == KVP_OK ? 0 : -2;
}

/* One decision line of the side being read, at position pos (a replay
 * row's name when it has no id): 0, -1 (bad) or -2. */
static int
one_line(struct run *r, const char *line, size_t len, uint64_t pos,
         struct kvp_diag *d)
{
	struct kvp_decision_rec dec;
	struct kvp_diff_rec rec;
	int emit = 0, st = kvp_decision_parse(&r->p, line, len, &dec, d);

	if (st == KVP_OK) {
		kvp_decision_ordinal_id(&dec, pos, r->idbuf);
		st = r->side == 0 ? kvp_diff_add_base(&r->df, &dec)
		                  : kvp_diff_add_new(&r->df, &dec, &rec, &emit);
	}
	if (st == KVP_FAIL)
		kvp_warnx("out of memory");
	if (st != KVP_OK)
		return st == KVP_BAD ? -1 : -2;
	if (!emit)
		return 0;
	kvp_diff_write_rec(r->w, &rec, r->o->text, r->o->classify);
	return end_rec(r);
}

/* A line: a decision, or part of a replay report JSON (collected). */
static int
on_line(void *ctx, char *line, size_t len, struct kvp_diag *d)
{
	struct run *r = ctx;

	if (r->doc.active ||
	    (r->lineno == 1 && kvp_replay_doc_starts(line, len))) {
		if (kvp_replay_doc_append(&r->doc, line, len) == KVP_OK)
			return 0;
		kvp_warnx("out of memory");
		return -2;
	}
	return one_line(r, line, len, r->lineno, d);
}

/* After a file: its replay report JSON, if it was one (the summary is
 * read; its per_request rows are decisions, named "file:1: per_request[i]"
 * in messages). Returns an exit status. */
static int
finish_doc(struct run *r, const char *path)
{
	const char *name = kvp_cli_input_name(path), *line;
	struct kvp_diag d;
	size_t len, i;
	int st = 0, rc;

	if (!r->doc.active)
		return 0;
	kvp_diag_clear(&d);
	rc = kvp_replay_doc_finish(&r->doc, &d);
	if (rc != KVP_OK)
		kvp_report_diag(name, 1, &d);
	st = rc == KVP_OK    ? 0
	     : rc == KVP_BAD ? KVP_EXIT_DATA
	                     : KVP_EXIT_TROUBLE;
	while (!kvp_cli_stop(&r->o->cli, st) &&
	       kvp_replay_doc_next(&r->doc, &line, &len, &i)) {
		kvp_diag_clear(&d);
		r->p.replay_rows = 1;
		rc = one_line(r, line, len, i + 1, &d);
		r->p.replay_rows = 0;
		if (rc == -1)
			kvp_report(name, 1, 0, "per_request[%zu]: %s", i,
			           d.msg);
		st = kvp_worst(st, rc == 0    ? 0
		                   : rc == -1 ? KVP_EXIT_DATA
		                              : KVP_EXIT_TROUBLE);
	}
	kvp_replay_doc_fini(&r->doc);
	return st;
}

/* Reads one side's file; returns an exit status. */
static int
read_side(struct run *r, int side)
{
	const char *path = r->o->paths[side];
	int st;

	r->side = side;
	st = kvp_cli_each_line(path, &r->o->cli, on_line, r, &r->lineno);
	if (kvp_cli_stop(&r->o->cli, st)) {
		kvp_replay_doc_fini(&r->doc);
		return st;
	}
	return kvp_worst(st, finish_doc(r, path));
}

/* The records after NEW: BASE-only decisions, the summary; then the
 * --fail-if verdict (0 or 1), or 2 after a write error. */
static int
finish(struct run *r)
{
	const struct opts *o = r->o;
	struct kvp_diff_rec rec;
	double v[KVP_DIFF_N_FIELDS];
	int k, st = 0;

	while (kvp_diff_next_only_base(&r->df, &rec)) {
		kvp_diff_write_rec(r->w, &rec, o->text, o->classify);
		if (end_rec(r) != 0)
			return KVP_EXIT_TROUBLE;
	}
	kvp_diff_summary(&r->df, v);
	kvp_diff_write_summary(r->w, v, o->text, o->classify);
	if (end_rec(r) != 0)
		return KVP_EXIT_TROUBLE;
	for (k = 0; k < o->n_fail; k++)
		if (kvp_failif_eval(&o->fail_if[k], v)) {
			kvp_warnx("--fail-if '%s' holds", o->fail_src[k]);
			st = KVP_EXIT_DATA;
		}
	return st;
}

int
main(int argc, char **argv)
{
	static struct opts o;
	struct kvp_jw w;
	struct run r;
	FILE *out;
	int status;

	kvp_cli_begin(argc, argv);
	kvp_cli_init(&o.cli);
	argp_parse(&argp, argc, argv, 0, NULL, &o);

	out = kvp_cli_open_output(&o.cli);
	if (out == NULL)
		return KVP_EXIT_TROUBLE;
	kvp_jw_init(&w, out, o.cli.hash_strings, o.cli.unbuffered);
	r.o = &o;
	r.w = &w;
	kvp_decision_parser_init(&r.p, 0);
	kvp_diff_init(&r.df);
	r.df.block_size = o.block_size;
	memset(&r.doc, 0, sizeof r.doc);
	if (o.text)
		kvp_diff_write_header(&w);
	status = read_side(&r, 0);
	if (!kvp_cli_stop(&o.cli, status))
		status = kvp_worst(status, read_side(&r, 1));
	if (!kvp_cli_stop(&o.cli, status))
		status = kvp_worst(status, finish(&r));
	kvp_diff_fini(&r.df);
	kvp_decision_parser_fini(&r.p);
	kvp_jw_fini(&w);
	if (kvp_cli_close_output(out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	return status;
}
