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

enum { OPT_FAIL_IF = 0x2000, OPT_FORMAT, OPT_CLASSIFY };

struct opts {
	struct kvp_cli cli;
	int text;
	int classify; /* --classify */
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
};

static int
end_rec(struct run *r)
{
	if (r->o->text)
		return kvp_jw_end_text(r->w) == KVP_OK ? 0 : -2;
	return kvp_jw_end_record(r->w) == KVP_OK ? 0 : -2;
}

static int
base_line(void *ctx, char *line, size_t len, struct kvp_diag *d)
{
	struct run *r = ctx;
	struct kvp_decision_rec dec;
	int st = kvp_decision_parse(&r->p, line, len, &dec, d);

	if (st == KVP_OK)
		st = kvp_diff_add_base(&r->df, &dec);
	if (st == KVP_FAIL)
		kvp_warnx("out of memory");
	return st == KVP_OK ? 0 : st == KVP_BAD ? -1 : -2;
}

static int
new_line(void *ctx, char *line, size_t len, struct kvp_diag *d)
{
	struct run *r = ctx;
	struct kvp_decision_rec dec;
	struct kvp_diff_rec rec;
	int emit = 0, st = kvp_decision_parse(&r->p, line, len, &dec, d);

	if (st == KVP_OK)
		st = kvp_diff_add_new(&r->df, &dec, &rec, &emit);
	if (st == KVP_FAIL)
		kvp_warnx("out of memory");
	if (st != KVP_OK)
		return st == KVP_BAD ? -1 : -2;
	if (!emit)
		return 0;
	kvp_diff_write_rec(r->w, &rec, r->o->text, r->o->classify);
	return end_rec(r);
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
	if (o.text)
		kvp_diff_write_header(&w);
	status = kvp_cli_each_line(o.paths[0], &o.cli, base_line, &r, NULL);
	if (!kvp_cli_stop(&o.cli, status))
		status =
		    kvp_worst(status, kvp_cli_each_line(o.paths[1], &o.cli,
		                                        new_line, &r, NULL));
	if (!kvp_cli_stop(&o.cli, status))
		status = kvp_worst(status, finish(&r));
	kvp_diff_fini(&r.df);
	kvp_decision_parser_fini(&r.p);
	kvp_jw_fini(&w);
	if (kvp_cli_close_output(out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	return status;
}
