/* SPDX-License-Identifier: MIT */
/* cli.c — shared argp child, version hook, input/output opening. */
#include "common/num.h"
#include "fe/cli.h"
#include "fe/err.h"

#include <json.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/diag.h"
#include "common/input.h"
#include "common/jskel.h"
#include "common/ndjson.h"
#include "kvpipe.h"

enum {
	OPT_UNBUFFERED = 0x1000,
	OPT_MAX_LINE,
	OPT_MAX_ERRORS,
	OPT_HASH_STRINGS,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
};

/* Inputs too big to wait for silently: the automatic progress line. */
#define PROGRESS_MIN_SIZE ((int64_t)64 << 20)

/* The options as parsed (for kvp_cli_open_input's progress default). */
static const struct kvp_cli *the_cli;

static const struct argp_option cli_options[] = {
    {NULL, 0, NULL, 0, "Common options:", 100},
    {"keep-going", 'k', NULL, 0,
     "Report bad records, skip them and continue (exit status stays 1)", 0},
    {"output", 'o', "FILE", 0, "Write records to FILE instead of stdout", 0},
    {"unbuffered", OPT_UNBUFFERED, NULL, 0, "Flush output after every record",
     0},
    {"max-line-bytes", OPT_MAX_LINE, "N", 0,
     "Longest accepted input line in bytes (default 67108864)", 0},
    {"max-errors", OPT_MAX_ERRORS, "N", 0,
     "Print at most N record errors (all are still counted)", 0},
    {"hash-strings", OPT_HASH_STRINGS, NULL, 0,
     "Write u64 hashes as decimal strings (for jq 1.6)", 0},
    {"progress", OPT_PROGRESS, NULL, 0,
     "Show a progress line on stderr (default: when stderr is a terminal "
     "and an input file is over 64 MiB)",
     0},
    {"no-progress", OPT_NO_PROGRESS, NULL, 0, "Never show the progress line",
     0},
    {NULL, 'h', NULL, 0, "Give this help list (as --help)", -1},
    {0}};

static error_t
cli_parse(int key, char *arg, struct argp_state *st)
{
	struct kvp_cli *c = st->input;

	switch (key) {
	case 'k':
		c->keep_going = 1;
		break;
	case 'o':
		c->output = arg;
		break;
	case OPT_UNBUFFERED:
		c->unbuffered = 1;
		break;
	case OPT_MAX_LINE:
		c->max_line = (size_t)kvp_opt_u64(st, "--max-line-bytes", arg,
		                                  SIZE_MAX / 2);
		if (c->max_line == 0)
			argp_error(st, "--max-line-bytes: must be positive");
		break;
	case OPT_MAX_ERRORS:
		c->max_errors =
		    kvp_opt_u64(st, "--max-errors", arg, UINT64_MAX);
		break;
	case OPT_HASH_STRINGS:
		c->hash_strings = 1;
		break;
	case OPT_PROGRESS:
		c->progress = 1;
		break;
	case OPT_NO_PROGRESS:
		c->progress = 0;
		break;
	case ARGP_KEY_END:
		the_cli = c;
		break;
	case 'h':
		argp_state_help(st, stdout, ARGP_HELP_STD_HELP);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp kvp_cli_argp = {cli_options, cli_parse, NULL, NULL,
                                  NULL,        NULL,      NULL};

void
kvp_cli_init(struct kvp_cli *c)
{
	memset(c, 0, sizeof *c);
	c->max_line = KVP_DEFAULT_MAX_LINE;
	c->max_errors = UINTMAX_MAX;
	c->progress = -1;
	the_cli = c;
}

/* Libraries a tool registered with kvp_cli_uses(), for --version. */
static struct {
	const char *name, *version;
} uses[8];
static size_t n_uses;

void
kvp_cli_uses(const char *lib, const char *version)
{
	if (n_uses < sizeof uses / sizeof uses[0]) {
		uses[n_uses].name = lib;
		uses[n_uses].version = version;
		n_uses++;
	}
}

static void
version_hook(FILE *f, struct argp_state *st)
{
	(void)st;
	fprintf(f, "%s (kvpipe) %s\n", kvp_getprogname(), KVP_VERSION);
	/* every tool reads through json-c and the input layer */
	fprintf(f, "libraries: json-c %s, zlib %s, zstd %s",
	        kvp_json_lib_version(), kvp_input_zlib_version(),
	        kvp_input_zstd_version());
	for (size_t i = 0; i < n_uses; i++)
		fprintf(f, ", %s%s%s", uses[i].name, uses[i].version ? " " : "",
		        uses[i].version ? uses[i].version : "");
	fputc('\n', f);
}

/* The command line, for kvp_cli_open_output()'s same-file check. */
static int cmd_argc;
static char **cmd_argv;
static int stdout_reported;

/* At exit: a write error on stdout (a full disk under --help, --version
 * or the records) is trouble, reported once. */
static void
close_stdout(void)
{
	int bad = fflush(stdout) != 0 || ferror(stdout);

	if (fclose(stdout) != 0)
		bad = 1;
	if (bad && !stdout_reported) {
		kvp_warn("write error on stdout");
		_exit(KVP_EXIT_TROUBLE);
	}
}

void
kvp_cli_begin(int argc, char **argv)
{
	cmd_argc = argc;
	cmd_argv = argv;
	atexit(close_stdout);
	kvp_setprogname(argv[0]);
	/* getopt names the program in usage errors by argv[0]; use the same
	 * short name as every other message ("tool: ..."), not the path. */
	argv[0] = (char *)kvp_getprogname();
	argp_err_exit_status = KVP_EXIT_TROUBLE;
	argp_program_version_hook = version_hook;
	argp_program_bug_address = NULL;
}

static int
same_file(const struct stat *a, const char *path)
{
	struct stat b;

	return stat(path, &b) == 0 && S_ISREG(b.st_mode) &&
	       a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/*
 * Returns the input (a command-line word, or "stdin") that is the same
 * regular file as out, or NULL. Every word but -o's own value counts,
 * so option values such as --events FILE are covered; "--opt=FILE" is
 * looked at after the '='.
 */
static const char *
output_is_input(const char *out)
{
	struct stat o, in;

	if (stat(out, &o) != 0 || !S_ISREG(o.st_mode))
		return NULL;
	for (int i = 1; i < cmd_argc; i++) {
		const char *w = cmd_argv[i], *eq;

		if (out >= w && out < w + strlen(w))
			continue; /* -o's own value */
		if (w[0] == '-' && (eq = strchr(w, '=')) != NULL)
			w = eq + 1;
		if (same_file(&o, w))
			return cmd_argv[i];
	}
	if (fstat(STDIN_FILENO, &in) == 0 && S_ISREG(in.st_mode) &&
	    in.st_dev == o.st_dev && in.st_ino == o.st_ino)
		return "stdin";
	return NULL;
}

FILE *
kvp_cli_open_output(const struct kvp_cli *c)
{
	FILE *f = stdout;
	const char *in;

	kvp_set_max_errors(c->max_errors);
	if (c->output != NULL && strcmp(c->output, "-") != 0) {
		if ((in = output_is_input(c->output)) != NULL) {
			kvp_warnx("%s: the output is also an input (%s); "
			          "refusing to overwrite it",
			          c->output, in);
			return NULL;
		}
		f = fopen(c->output, "w");
		if (f == NULL) {
			kvp_warn("%s", c->output);
			return NULL;
		}
	}
	/* Full buffering even on a terminal would hide progress; keep the
	 * default there, but make pipes and files fully buffered and big.
	 * glibc ignores the size when setvbuf() is given no buffer (it uses
	 * st_blksize, often 4 KiB), so the buffer is given: one output per
	 * process, closed by kvp_cli_close_output() before exit. */
	if (!c->unbuffered) {
		static char buf[1 << 16];

		setvbuf(f, buf, _IOFBF, sizeof buf);
	}
	return f;
}

int
kvp_cli_close_output(FILE *out, const struct kvp_cli *c)
{
	const char *name =
	    c->output && strcmp(c->output, "-") != 0 ? c->output : "stdout";
	int bad = fflush(out) != 0 || ferror(out);

	/* stdout is closed at exit (close_stdout), after argp's output too */
	if (out != stdout && fclose(out) != 0)
		bad = 1;
	if (bad)
		kvp_warn("write error on %s", name);
	if (bad && out == stdout)
		stdout_reported = 1;
	kvp_progress_clear();
	kvp_totals(c->keep_going);
	return bad ? -1 : 0;
}

FILE *
kvp_cli_open_file(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		kvp_warn("%s", path);
	return f;
}

int
kvp_cli_close_file(FILE *f, const char *path)
{
	int bad = ferror(f) != 0;

	if (fclose(f) != 0 || bad) {
		kvp_warnx("%s: write error", path);
		return -1;
	}
	return 0;
}

/* ---- inputs ----------------------------------------------------------------
 * Every open input, so that a reader's FILE * leads back to its layer (for
 * the message after a read error) and the progress line can sum them. */

struct open_input {
	FILE *f;
	struct kvp_input *in;
	const char *name;
	int reported; /* its read error has been printed */
	struct timespec opened;
	struct open_input *next;
};

static struct open_input *inputs;

static struct open_input *
find_input(const FILE *f)
{
	struct open_input *e;

	for (e = inputs; e != NULL; e = e->next)
		if (e->f == f)
			return e;
	return NULL;
}

static void
progress_io(struct kvp_progress_io *io)
{
	struct timespec now, first = {0, 0};

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	io->bytes = 0;
	io->total = 0;
	for (const struct open_input *e = inputs; e != NULL; e = e->next) {
		int64_t size = kvp_input_size(e->in);

		io->bytes += kvp_input_pos(e->in);
		io->total = size < 0 || io->total < 0 ? -1 : io->total + size;
		if (first.tv_sec == 0 || e->opened.tv_sec < first.tv_sec ||
		    (e->opened.tv_sec == first.tv_sec &&
		     e->opened.tv_nsec < first.tv_nsec))
			first = e->opened;
	}
	if (inputs == NULL)
		io->total = -1;
	io->secs = (double)(now.tv_sec - first.tv_sec) +
	           (double)(now.tv_nsec - first.tv_nsec) / 1e9;
}

/* --progress; by default only for a big regular file with stderr on a
 * terminal. */
static void
progress_maybe(const struct open_input *e)
{
	int mode = the_cli != NULL ? the_cli->progress : -1;

	if (mode == 0)
		return;
	if (mode < 0 && (!isatty(STDERR_FILENO) ||
	                 kvp_input_size(e->in) <= PROGRESS_MIN_SIZE))
		return;
	kvp_progress_enable(progress_io);
}

FILE *
kvp_cli_open_input(const char *path)
{
	int is_stdin = path == NULL || strcmp(path, "-") == 0;
	struct open_input *e = calloc(1, sizeof *e);
	struct kvp_diag d = {{0}, 0};

	if (e == NULL) {
		kvp_warnx("out of memory");
		return NULL;
	}
	if (is_stdin) {
		static int hinted;

		if (!hinted && isatty(STDIN_FILENO)) {
			hinted = 1;
			kvp_warnx("reading records from the terminal (one JSON "
			          "object per line, Ctrl-D ends); give a file "
			          "or pipe one in, see '%s --help'",
			          kvp_getprogname());
		}
	}
	e->in = is_stdin ? kvp_input_open_fd(STDIN_FILENO, 0, &d)
	                 : kvp_input_open(path, &d);
	if (e->in == NULL) {
		if (is_stdin || errno == ENOMEM)
			kvp_warnx("out of memory");
		else
			kvp_warn("%s", path);
		free(e);
		return NULL;
	}
	e->f = kvp_input_file(e->in);
	e->name = is_stdin ? "-" : path;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &e->opened);
	e->next = inputs;
	inputs = e;
	progress_maybe(e);
	return e->f;
}

int
kvp_cli_read_error(FILE *f, const char *name)
{
	struct open_input *e = find_input(f);
	struct kvp_diag d = {{0}, 0};
	int bad = e != NULL && kvp_input_status(e->in, &d) == KVP_BAD;

	if (e == NULL || !e->reported) {
		if (bad)
			kvp_report_input(name, d.msg);
		else
			kvp_warn("%s: read error", name);
	}
	if (e != NULL)
		e->reported = 1;
	return bad ? KVP_EXIT_DATA : KVP_EXIT_TROUBLE;
}

int
kvp_cli_close_input(FILE *f)
{
	struct open_input **pp = &inputs, *e;
	struct kvp_diag d = {{0}, 0};
	int st;

	while (*pp != NULL && (*pp)->f != f)
		pp = &(*pp)->next;
	e = *pp;
	if (e == NULL) {
		if (f != NULL && f != stdin)
			fclose(f);
		return KVP_EXIT_OK;
	}
	st = kvp_input_status(e->in, &d);
	if (st != KVP_OK && !e->reported)
		kvp_cli_read_error(f, e->name);
	*pp = e->next;
	kvp_input_close(e->in);
	free(e);
	return st == KVP_OK    ? KVP_EXIT_OK
	       : st == KVP_BAD ? KVP_EXIT_DATA
	                       : KVP_EXIT_TROUBLE;
}

uint64_t
kvp_opt_u64(struct argp_state *st, const char *opt, const char *arg,
            uint64_t max)
{
	uint64_t v = 0;
	const char *e;

	if (kvp_num_parse_u64(arg, max, &v, &e) != 0)
		argp_error(st, "%s: value is %s: '%s'", opt, e, arg);
	return v;
}

double
kvp_opt_double(struct argp_state *st, const char *opt, const char *arg)
{
	double v = 0;
	const char *e;

	if (kvp_num_parse_double(arg, &v, &e) != 0)
		argp_error(st, "%s: value is %s: '%s'", opt, e, arg);
	return v;
}

uint32_t
kvp_opt_block_size(struct argp_state *st, const char *arg)
{
	uint64_t v;
	const char *e;

	if (kvp_num_parse_u64(arg, UINT32_MAX, &v, &e) != 0 || v == 0)
		argp_error(st,
		           "--block-size: '%s' is not a positive number of "
		           "tokens (at most 4294967295)",
		           arg);
	return (uint32_t)v;
}

int
kvp_opt_keyword(struct argp_state *st, const char *opt, const char *what,
                const char *arg, const char *const *choices)
{
	char list[256];
	size_t used = 0;
	int i;

	for (i = 0; choices[i] != NULL; i++)
		if (strcmp(arg, choices[i]) == 0)
			return i;
	list[0] = '\0';
	for (i = 0; choices[i] != NULL && used < sizeof list; i++) {
		int n = snprintf(list + used, sizeof list - used, "%s%s",
		                 i > 0 ? ", " : "", choices[i]);

		if (n < 0)
			break;
		used += (size_t)n;
	}
	argp_error(st, "%s: unknown %s '%s' (choices: %s)", opt, what, arg,
	           list);
	return -1;
}

int
kvp_cli_stop(const struct kvp_cli *c, int status)
{
	return status == KVP_EXIT_TROUBLE ||
	       (status != KVP_EXIT_OK && !c->keep_going);
}

int
kvp_cli_loop(const struct kvp_cli *c, kvp_step_fn step, void *ctx)
{
	int status = KVP_EXIT_OK, st;

	while ((st = step(ctx)) != KVP_CLI_END) {
		status = kvp_worst(status, st);
		if (kvp_cli_stop(c, st))
			break;
	}
	return status;
}

struct file_loop {
	char *const *paths;
	int n, i;
	kvp_file_fn fn;
	void *ctx;
};

static int
file_step(void *arg)
{
	struct file_loop *l = arg;

	if (l->i == (l->n > 0 ? l->n : 1))
		return KVP_CLI_END;
	l->i++;
	return l->fn(l->ctx, l->n > 0 ? l->paths[l->i - 1] : NULL);
}

int
kvp_cli_each_file(char *const *paths, int n, const struct kvp_cli *c,
                  kvp_file_fn fn, void *ctx)
{
	struct file_loop l = {paths, n, 0, fn, ctx};

	return kvp_cli_loop(c, file_step, &l);
}

const char *
kvp_cli_input_name(const char *path)
{
	return path == NULL ? "-" : path;
}

struct record_ctx {
	struct kvp_jskel *skel;
	kvp_record_fn fn;
	void *ctx;
};

static int
parse_line(void *ctx, char *line, size_t len, struct kvp_diag *d)
{
	struct record_ctx *rc = ctx;
	int oom, st;
	struct json_object *o = kvp_jskel_parse(rc->skel, line, len, d, &oom);

	if (o == NULL && oom)
		kvp_warnx("out of memory");
	if (o == NULL)
		return oom ? -2 : -1;
	st = rc->fn(rc->ctx, o, d);
	json_object_put(o);
	return st;
}

int
kvp_cli_each_record(const char *path, const struct kvp_cli *c,
                    struct kvp_jskel *skel, kvp_record_fn fn, void *ctx,
                    uintmax_t *lineno)
{
	struct kvp_jskel own;
	struct record_ctx rc = {skel != NULL ? skel : &own, fn, ctx};
	int status;

	if (skel == NULL)
		kvp_jskel_init(&own);
	status = kvp_cli_each_line(path, c, parse_line, &rc, lineno);
	if (skel == NULL)
		kvp_jskel_fini(&own);
	return status;
}

/* kvp_cli_each_line()'s state: one input, read line by line. */
struct line_loop {
	const struct kvp_cli *c;
	const char *name;
	FILE *f;
	struct kvp_lines r;
	kvp_line_fn fn;
	void *ctx;
	uintmax_t *lineno;
	int first;      /* no record handled yet */
	int done;       /* a read error ended the input */
	char head[512]; /* the first record's start, for kvp_cli_hint() */
	size_t hlen;
};

/* One line of the input: its exit status, or KVP_CLI_END. */
static int
line_step(void *arg)
{
	struct line_loop *l = arg;
	struct kvp_diag d = {{0}, 0};
	char *line;
	size_t len;
	int rc = l->done ? KVP_LINE_EOF : kvp_lines_next(&l->r, &line, &len);

	if (l->lineno && !l->done)
		*l->lineno = l->r.lineno;
	if (rc == KVP_LINE_EOF)
		return KVP_CLI_END;
	if (rc == KVP_LINE_IOERR) {
		l->done = 1;
		return kvp_cli_read_error(l->f, l->name);
	}
	if (rc == KVP_LINE_TOO_LONG) {
		kvp_tally_in();
		kvp_report(l->name, l->r.lineno, 0,
		           "line too long (over %zu bytes; "
		           "see --max-line-bytes)",
		           l->c->max_line);
		return KVP_EXIT_DATA;
	}
	if (kvp_line_is_blank(line, len))
		return KVP_EXIT_OK;
	kvp_tally_in();
	if (l->first)
		memcpy(l->head, line,
		       l->hlen = len < sizeof l->head ? len : sizeof l->head);
	rc = l->fn(l->ctx, line, len, &d);
	if (rc == -2)
		return KVP_EXIT_TROUBLE;
	if (rc == -1) {
		kvp_report_diag(l->name, l->r.lineno, &d);
		if (l->first)
			kvp_cli_hint(l->name, l->head, l->hlen);
	}
	l->first = 0;
	return rc == -1 ? KVP_EXIT_DATA : KVP_EXIT_OK;
}

int
kvp_cli_each_line(const char *path, const struct kvp_cli *c, kvp_line_fn fn,
                  void *ctx, uintmax_t *lineno)
{
	struct line_loop l;
	int status;

	memset(&l, 0, sizeof l);
	l.c = c;
	l.name = kvp_cli_input_name(path);
	l.f = kvp_cli_open_input(path);
	l.fn = fn;
	l.ctx = ctx;
	l.lineno = lineno;
	l.first = 1;
	if (l.f == NULL)
		return KVP_EXIT_TROUBLE;
	kvp_lines_init(&l.r, l.f, c->max_line);
	status = kvp_cli_loop(c, line_step, &l);
	kvp_lines_fini(&l.r);
	return kvp_worst(status, kvp_cli_close_input(l.f));
}
