/* SPDX-License-Identifier: MIT */
/* kv-report — one self-contained HTML page (inline SVG, no script) from
 * route-score decision streams, one per run. */
#include <argp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/ndjson.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "kvpipe.h"
#include "report/chart.h"
#include "report/decision.h"
#include "report/disagree.h"
#include "report/evagg.h"
#include "report/markup.h"

enum {
	OPT_TITLE = 0x2000,
	OPT_LABEL,
	OPT_WINDOW,
	OPT_TOP,
	OPT_FORMAT,
	OPT_CHART,
	OPT_EVENTS,
};

#define MAX_EVENT_FILES 256

struct opts {
	struct kvp_cli cli;
	const char *title;
	const char *paths[KVP_REPORT_MAX_RUNS];
	const char *labels[KVP_REPORT_MAX_RUNS];
	int n_runs;
	const char *events[MAX_EVENT_FILES];
	int n_events;
	size_t window, top;
	int svg, chart;
};

static const char doc[] =
    "Write one self-contained HTML report (inline SVG, no script, no "
    "network) of route-score decision streams, one FILE per run: a summary "
    "table, hit rate over time, per-worker load, the overlap distribution "
    "and the requests where the runs disagree most; with --events, the "
    "event streams' rates by type and per worker, gaps and stale "
    "batches.\v"
    "Memory and output size are bounded whatever the input length. See "
    "kv-report(1).";

static const char args_doc[] = "FILE...";

static const struct argp_option options[] = {
    {"title", OPT_TITLE, "T", 0, "Page title", 0},
    {"label", OPT_LABEL, "NAME=FILE", 0,
     "Name the run read from FILE (the last '=' separates; adds FILE "
     "if not listed)",
     0},
    {"window", OPT_WINDOW, "N", 0,
     "Rolling hit rate over the last N decisions (default 100)", 0},
    {"top", OPT_TOP, "N", 0,
     "Rows in the disagreement table (default 20, at most 1000)", 0},
    {"format", OPT_FORMAT, "FMT", 0,
     "html (default) or svg (one chart, with --chart)", 0},
    {"chart", OPT_CHART, "NAME", 0,
     "The chart for --format svg: hit-rate, routed, active, overlap, "
     "events, event-workers",
     0},
    {"events", OPT_EVENTS, "FILE", 0,
     "kv-decode or kv-normalize output to chart (repeatable; the files "
     "are summed)",
     0},
    {0}};

static const char *const formats[] = {"html", "svg", NULL};

static int
add_run(struct argp_state *st, struct opts *o, const char *path)
{
	int k;

	for (k = 0; k < o->n_runs; k++)
		if (strcmp(o->paths[k], path) == 0)
			return k;
	if (o->n_runs == KVP_REPORT_MAX_RUNS)
		argp_error(st, "at most %d runs", KVP_REPORT_MAX_RUNS);
	o->paths[o->n_runs] = path;
	return o->n_runs++;
}

static void
add_label(struct argp_state *st, struct opts *o, char *arg)
{
	char *eq = strrchr(arg, '='); /* a label may hold "=" */

	if (eq == NULL || eq == arg || eq[1] == '\0')
		argp_error(st, "--label: expected NAME=FILE, got '%s'", arg);
	*eq = '\0';
	o->labels[add_run(st, o, eq + 1)] = arg;
}

/* lint: table-driven */
static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	struct opts *o = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_TITLE:
		o->title = arg;
		break;
	case OPT_LABEL:
		add_label(st, o, arg);
		break;
	case OPT_WINDOW:
		o->window = kvp_opt_u64(st, "--window", arg, 1000000);
		if (o->window == 0)
			argp_error(st, "--window: must be at least 1");
		break;
	case OPT_TOP:
		o->top = kvp_opt_u64(st, "--top", arg, KVP_DIS_MAX_TOP);
		break;
	case OPT_FORMAT:
		o->svg = kvp_opt_keyword(st, "--format", "format", arg,
		                         formats) == 1;
		break;
	case OPT_CHART:
		o->chart = kvp_opt_keyword(st, "--chart", "chart", arg,
		                           kvp_chart_names);
		break;
	case OPT_EVENTS:
		if (o->n_events == MAX_EVENT_FILES)
			argp_error(st, "--events: at most %d files",
			           MAX_EVENT_FILES);
		o->events[o->n_events++] = arg;
		break;
	case ARGP_KEY_ARG:
		add_run(st, o, arg);
		break;
	case ARGP_KEY_END:
		if (o->n_runs == 0 && o->n_events == 0)
			argp_error(st, "no input: give one FILE per run (or "
			               "--events FILE)");
		if (o->svg && o->chart < 0)
			argp_error(st, "--format svg needs --chart NAME");
		if (o->chart >= KVP_CHART_EVENTS && o->n_events == 0)
			argp_error(st, "--chart %s needs --events FILE",
			           kvp_chart_names[o->chart]);
		if (o->svg && o->chart < KVP_CHART_EVENTS && o->n_runs == 0)
			argp_error(st, "--chart %s needs a decision FILE",
			           kvp_chart_names[o->chart]);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = {{&kvp_cli_argp, 0, NULL, 0}, {0}};
static const struct argp argp = {options,  parse_opt, args_doc, doc,
                                 children, NULL,      NULL};

struct input {
	FILE *f;
	struct kvp_lines lines;
	const char *name;
	int done;
	struct kvp_replay_doc doc; /* a Dynamo replay report JSON */
};

struct run {
	const struct opts *o;
	struct kvp_report rep;
	struct kvp_report_run runs[KVP_REPORT_MAX_RUNS];
	struct input in[KVP_REPORT_MAX_RUNS];
	struct kvp_dis dis;
	struct kvp_decision_parser p;
	struct kvp_evagg ev;
	int cur; /* the run (or --events file) read next */
};

/* Aggregates one decision line of run k (row: per_request[i] of a
 * replay report; an id-less replay row is named by its line number, or
 * i + 1); returns an exit status. */
static int
decide(struct run *r, int k, const char *line, size_t len, int row, size_t i)
{
	struct input *in = &r->in[k];
	struct kvp_decision_rec dec;
	struct kvp_diag d;
	char idbuf[24];
	int st;

	kvp_diag_clear(&d);
	st = kvp_decision_parse(&r->p, line, len, &dec, &d);
	if (st == KVP_OK) {
		kvp_decision_ordinal_id(&dec, row ? i + 1 : in->lines.lineno,
		                        idbuf);
		if (kvp_agg_add(&r->runs[k].agg, &dec) != KVP_OK)
			st = KVP_FAIL;
	}
	if (st == KVP_FAIL) {
		kvp_warnx("out of memory");
		return KVP_EXIT_TROUBLE;
	}
	if (st == KVP_BAD && row)
		kvp_report(in->name, 1, 0, "per_request[%zu]: %s", i, d.msg);
	else if (st == KVP_BAD)
		kvp_report_diag(in->name, in->lines.lineno, &d);
	if (st == KVP_BAD)
		return KVP_EXIT_DATA;
	kvp_dis_add(&r->dis, k, &dec);
	return 0;
}

/* The next per_request row of run k's replay report. */
static int
row_step(struct run *r, int k)
{
	struct input *in = &r->in[k];
	const char *line;
	size_t len, i;
	int st;

	if (!kvp_replay_doc_next(&in->doc, &line, &len, &i)) {
		in->done = 1;
		return 0;
	}
	r->p.replay_rows = 1;
	st = decide(r, k, line, len, 1, i);
	r->p.replay_rows = 0;
	return st;
}

/* Run k's file is a replay report JSON from its first line on: the whole
 * of it is read, its summary figures kept. Returns an exit status. */
static int
slurp(struct run *r, int k, char *line, size_t len)
{
	struct input *in = &r->in[k];
	struct kvp_diag d;
	int st = KVP_LINE_OK;

	do
		if (!kvp_line_is_blank(line, len) &&
		    kvp_replay_doc_append(&in->doc, line, len) != KVP_OK) {
			kvp_warnx("out of memory");
			return in->done = 1, KVP_EXIT_TROUBLE;
		}
	while ((st = kvp_lines_next(&in->lines, &line, &len)) == KVP_LINE_OK);
	if (st == KVP_LINE_IOERR)
		return in->done = 1, kvp_cli_read_error(in->f, in->name);
	if (st == KVP_LINE_TOO_LONG) {
		kvp_report(in->name, in->lines.lineno, 0, "line too long");
		return in->done = 1, KVP_EXIT_DATA;
	}
	kvp_diag_clear(&d);
	st = kvp_replay_doc_finish(&in->doc, &d);
	if (st != KVP_OK) {
		kvp_report_diag(in->name, 1, &d);
		in->done = 1;
		return st == KVP_BAD ? KVP_EXIT_DATA : KVP_EXIT_TROUBLE;
	}
	kvp_agg_replay(&r->runs[k].agg, &in->doc.sum);
	return 0;
}

/* Reads and aggregates run k's next record; returns an exit status. */
static int
step(struct run *r, int k)
{
	struct input *in = &r->in[k];
	char *line;
	size_t len;
	int st;

	if (in->doc.ready)
		return row_step(r, k);
	do
		st = kvp_lines_next(&in->lines, &line, &len);
	while (st == KVP_LINE_OK && kvp_line_is_blank(line, len));
	if (st == KVP_LINE_EOF) {
		in->done = 1;
		return 0;
	}
	if (st == KVP_LINE_IOERR)
		return kvp_cli_read_error(in->f, in->name);
	if (st == KVP_LINE_TOO_LONG) {
		kvp_report(in->name, in->lines.lineno, 0, "line too long");
		return KVP_EXIT_DATA;
	}
	if (in->lines.lineno == 1 && kvp_replay_doc_starts(line, len)) {
		st = slurp(r, k, line, len);
		return st != 0 ? st : row_step(r, k);
	}
	return decide(r, k, line, len, 0, 0);
}

/* The runs' next record, one of each in turn (lockstep), so that the
 * decisions of one request meet in the bounded disagreement pool. */
static int
lockstep(void *arg)
{
	struct run *r = arg;
	int n = r->rep.n_runs;

	for (int i = 0; i < n; i++) {
		int k = (r->cur + i) % n;

		if (!r->in[k].done) {
			r->cur = k + 1;
			return step(r, k);
		}
	}
	return KVP_CLI_END;
}

/* One --events file being read. */
struct events_in {
	struct run *r;
	const char *name;
	FILE *f;
	struct kvp_lines lines;
	int done; /* a read error ended it */
};

/* Aggregates the file's next event line; returns an exit status. */
static int
events_step(void *arg)
{
	struct events_in *e = arg;
	struct kvp_diag d;
	char *line;
	size_t len;
	int st;

	if (e->done)
		return KVP_CLI_END;
	do
		st = kvp_lines_next(&e->lines, &line, &len);
	while (st == KVP_LINE_OK && kvp_line_is_blank(line, len));
	if (st == KVP_LINE_EOF)
		return KVP_CLI_END;
	if (st == KVP_LINE_IOERR) {
		e->done = 1;
		return kvp_cli_read_error(e->f, e->name);
	}
	kvp_diag_clear(&d);
	if (st == KVP_LINE_TOO_LONG) {
		kvp_report(e->name, e->lines.lineno, 0, "line too long");
		st = KVP_BAD;
	} else
		st = kvp_evagg_line(&e->r->ev, line, len, &d);
	if (st == KVP_FAIL) {
		kvp_warnx("out of memory");
		return KVP_EXIT_TROUBLE;
	}
	if (st == KVP_BAD) {
		if (d.msg[0] != '\0')
			kvp_report_diag(e->name, e->lines.lineno, &d);
		return KVP_EXIT_DATA;
	}
	return KVP_EXIT_OK;
}

/* Aggregates the next --events file; returns an exit status. */
static int
events_file(void *arg)
{
	struct run *r = arg;
	struct events_in e = {.r = r};
	int status;

	if (r->cur == r->o->n_events)
		return KVP_CLI_END;
	e.name = kvp_cli_input_name(r->o->events[r->cur]);
	e.f = kvp_cli_open_input(r->o->events[r->cur++]);
	if (e.f == NULL)
		return KVP_EXIT_TROUBLE;
	kvp_lines_init(&e.lines, e.f, r->o->cli.max_line);
	status = kvp_cli_loop(&r->o->cli, events_step, &e);
	kvp_lines_fini(&e.lines);
	return kvp_worst(status, kvp_cli_close_input(e.f));
}

static int
read_events(struct run *r)
{
	int status;

	r->cur = 0;
	status = kvp_cli_loop(&r->o->cli, events_file, r);
	r->rep.ev = r->o->n_events > 0 ? &r->ev : NULL;
	return status;
}

static const char *
base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return strcmp(p, "-") == 0 ? "stdin" : s != NULL ? s + 1 : p;
}

static int
open_runs(struct run *r)
{
	const struct opts *o = r->o;
	int k;

	for (k = 0; k < o->n_runs; k++) {
		struct input *in = &r->in[k];

		if (kvp_agg_init(&r->runs[k].agg, o->window) != KVP_OK) {
			kvp_warnx("out of memory");
			return KVP_EXIT_TROUBLE;
		}
		r->rep.n_runs = k + 1;
		in->name = kvp_cli_input_name(o->paths[k]);
		in->f = kvp_cli_open_input(o->paths[k]);
		if (in->f == NULL)
			return KVP_EXIT_TROUBLE;
		kvp_lines_init(&in->lines, in->f, o->cli.max_line);
	}
	return 0;
}

static int
close_runs(struct run *r)
{
	int k, st = 0;

	for (k = 0; k < r->rep.n_runs; k++) {
		if (r->in[k].f != NULL) {
			kvp_lines_fini(&r->in[k].lines);
			kvp_replay_doc_fini(&r->in[k].doc);
			st = kvp_worst(st, kvp_cli_close_input(r->in[k].f));
		}
		kvp_agg_fini(&r->runs[k].agg);
	}
	kvp_dis_fini(&r->dis);
	kvp_decision_parser_fini(&r->p);
	kvp_evagg_fini(&r->ev);
	return st;
}

static int
write_report(struct run *r)
{
	const struct opts *o = r->o;
	struct kvp_markup w;
	FILE *out;
	int k;

	for (k = 0; k < r->rep.n_runs; k++)
		r->runs[k].label = o->labels[k] != NULL ? o->labels[k]
		                   : r->runs[k].agg.policy[0] != '\0'
		                       ? r->runs[k].agg.policy
		                       : base_name(o->paths[k]);
	kvp_dis_finish(&r->dis);
	out = kvp_cli_open_output(&o->cli);
	if (out == NULL)
		return KVP_EXIT_TROUBLE;
	kvp_markup_init(&w, out);
	if (o->svg)
		kvp_chart_svg(&w, &r->rep, o->chart, 1);
	else
		kvp_report_html(&w, &r->rep);
	if (!kvp_markup_ok(&w) && errno == 0)
		errno = EIO;
	if (kvp_cli_close_output(out, &o->cli) != 0 || !kvp_markup_ok(&w))
		return KVP_EXIT_TROUBLE;
	return 0;
}

int
main(int argc, char **argv)
{
	static struct opts o;
	static struct run r;
	int status;

	kvp_cli_begin(argc, argv);
	kvp_cli_init(&o.cli);
	o.title = "kvpipe routing report";
	o.window = 100;
	o.top = 20;
	o.chart = -1;
	argp_parse(&argp, argc, argv, 0, NULL, &o);

	r.o = &o;
	r.rep.title = o.title;
	r.rep.runs = r.runs;
	r.rep.window = o.window;
	r.rep.dis = &r.dis;
	kvp_decision_parser_init(&r.p, 1);
	kvp_evagg_init(&r.ev);
	status = kvp_dis_init(&r.dis, o.n_runs, o.top) == KVP_OK
	             ? open_runs(&r)
	             : KVP_EXIT_TROUBLE;
	if (status == 0)
		status = kvp_cli_loop(&o.cli, lockstep, &r);
	if (!kvp_cli_stop(&o.cli, status))
		status = kvp_worst(status, read_events(&r));
	if (!kvp_cli_stop(&o.cli, status))
		status = kvp_worst(status, write_report(&r));
	return kvp_worst(status, close_runs(&r));
}
