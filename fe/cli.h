/* SPDX-License-Identifier: MIT */
/* clang-format off */
/*
 * cli.h — options every tool shares, and the front-end plumbing around them.
 *
 * Each tool's argp lists kvp_cli_argp as a child and, in its own parser's
 * ARGP_KEY_INIT, hands the child its struct:
 *
 *	static struct argp_child children[] = {
 *		{&kvp_cli_argp, 0, NULL, 0},
 *		{0},
 *	};
 *
 *	case ARGP_KEY_INIT:
 *		state->child_inputs[0] = &o->cli;
 *		break;
 *
 * Shared options (same meaning in every tool):
 *   -k, --keep-going       report bad records, skip them, continue (exit 1)
 *   -o, --output FILE      write records to FILE instead of stdout
 *       --unbuffered       flush after every record
 *       --max-line-bytes N longest accepted input line (default 64 MiB)
 *       --max-errors N     print at most N record errors (all are counted)
 *       --hash-strings     write u64 hashes as decimal strings (jq 1.6)
 *       --progress, --no-progress
 *                          a progress line on stderr (default: when stderr
 *                          is a terminal and an input file is over 64 MiB)
 *
 * Every input is read through common/input.h, so .gz and .zst files and
 * streams (found by their magic bytes) are read like plain ones. With -k
 * (or when a record was skipped) kvp_cli_close_output() prints the totals
 * line (fe/err.h).
 */
/* clang-format on */
#ifndef KVP_CLI_H
#define KVP_CLI_H

#include <argp.h>
#include <stdint.h>
#include <stdio.h>

#define KVP_DEFAULT_MAX_LINE ((size_t)64 << 20)

struct kvp_cli {
	int keep_going;
	int unbuffered;
	int hash_strings;
	const char *output; /* NULL: stdout */
	size_t max_line;
	uintmax_t max_errors;
	int progress; /* -1 auto, 0 --no-progress, 1 --progress */
};

extern const struct argp kvp_cli_argp;

/* Sets defaults. Call before argp_parse. */
void kvp_cli_init(struct kvp_cli *c);

/* Front-end setup for main(): progname, argp exit status 2, the version
 * hook (tool version plus json-c, msgpack and xxhash versions). */
void kvp_cli_begin(int argc, char **argv);

/* Names a library the tool uses (version may be NULL) for --version,
 * after json-c, zlib and zstd, which every tool uses. Call before
 * argp_parse. */
void kvp_cli_uses(const char *lib, const char *version);

/* Opens c->output (or returns stdout) and applies --max-errors. On failure
 * prints a message and returns NULL (the caller exits 2). */
FILE *kvp_cli_open_output(const struct kvp_cli *c);

/* Flushes and closes the output; returns 0, or -1 after printing a message
 * (a full disk is trouble, not success). Then clears the progress line and
 * prints the totals line (with -k). */
int kvp_cli_close_output(FILE *out, const struct kvp_cli *c);

/*
 * A further output file a tool writes beside its records (route-score's
 * --emit-events FILE). kvp_cli_open_file() opens path for writing, or
 * prints "tool: PATH: err" and returns NULL (the caller exits 2);
 * kvp_cli_close_file() closes it and returns 0, or -1 after printing
 * "tool: PATH: write error" (a full disk is trouble here too).
 */
FILE *kvp_cli_open_file(const char *path);
int kvp_cli_close_file(FILE *f, const char *path);

/*
 * Opens an input path ("-" or NULL is stdin) through the input layer: the
 * FILE * delivers decompressed bytes for gzip and zstd input. On failure
 * prints "tool: PATH: err" and returns NULL. Turns the progress line on as
 * --progress says.
 */
FILE *kvp_cli_open_input(const char *path);

/*
 * A reader got a read error on f (from kvp_cli_open_input): prints why,
 * once ("tool: NAME: read error: ...", or for damaged compressed data
 * "tool: NAME: truncated gzip input at byte N"), and returns the exit
 * status: 1 for bad data, 2 for trouble. Every record before the damage has
 * been delivered.
 */
int kvp_cli_read_error(FILE *f, const char *name);

/* Closes an input from kvp_cli_open_input. Damage a reader did not report
 * through kvp_cli_read_error() is reported now. Returns 0, 1 or 2. */
int kvp_cli_close_input(FILE *f);

/* Parses an option value or calls argp_error (exit 2) naming the option. */
uint64_t kvp_opt_u64(struct argp_state *st, const char *opt, const char *arg,
                     uint64_t max);
double kvp_opt_double(struct argp_state *st, const char *opt, const char *arg);

/* --block-size N: a positive u32, one wording in every tool. */
uint32_t kvp_opt_block_size(struct argp_state *st, const char *arg);

/* A keyword option: returns the index of arg in the NULL-terminated
 * choices, or calls argp_error: "OPT: unknown WHAT 'ARG' (choices: ...)". */
int kvp_opt_keyword(struct argp_state *st, const char *opt, const char *what,
                    const char *arg, const char *const *choices);

/*
 * The stop-or-continue policy every loop shares, here only: after a unit
 * (a record, a file, a stage of the run) whose exit status is status,
 * 1 to stop: after trouble (2), or after bad data (1) unless -k.
 */
int kvp_cli_stop(const struct kvp_cli *c, int status);

/*
 * The record loop every tool runs, directly or through the loops below:
 * step(ctx) handles one unit and returns its exit status (0, 1 or 2), or
 * KVP_CLI_END when there is none left; the loop stops as kvp_cli_stop()
 * says. Returns the worst status.
 */
#define KVP_CLI_END (-1)
typedef int (*kvp_step_fn)(void *ctx);
int kvp_cli_loop(const struct kvp_cli *c, kvp_step_fn step, void *ctx);

/*
 * The file-list loop every filter shares: fn(ctx, path) for each path in
 * paths[0, n), or once with NULL (stdin) when n is 0. fn returns an exit
 * status; the loop is kvp_cli_loop(). Returns the worst status.
 */
typedef int (*kvp_file_fn)(void *ctx, const char *path);
int kvp_cli_each_file(char *const *paths, int n, const struct kvp_cli *c,
                      kvp_file_fn fn, void *ctx);

/*
 * The NDJSON record loop every filter shares. Reads path ("-" or NULL is
 * stdin) line by line; skips blank lines; parses each as a JSON object and
 * calls fn(ctx, obj, &diag). fn returns
 *    0  record handled (obj is borrowed; freed after fn returns),
 *   -1  bad record: the loop prints "tool: FILE:LINE[:COL]: diag.msg",
 *       then stops, or continues with -k,
 *   -2  trouble (fn printed its own message): stop with exit 2.
 * Over-long lines and invalid JSON are reported the same way. Lines are
 * parsed with kvp_jskel_parse() on skel (NULL: one that keeps every
 * container), so a long line's big arrays can stay out of json-c's tree.
 * Returns an exit status (0, 1 or 2). *lineno, if non-NULL, is kept
 * current so fn can name the line in warnings.
 */
struct json_object;
struct kvp_diag;
typedef int (*kvp_record_fn)(void *ctx, struct json_object *rec,
                             struct kvp_diag *d);

struct kvp_jskel;
int kvp_cli_each_record(const char *path, const struct kvp_cli *c,
                        struct kvp_jskel *skel, kvp_record_fn fn, void *ctx,
                        uintmax_t *lineno);

/*
 * The same loop on raw lines, for tools that look at the text before (or
 * instead of) parsing it: fn(ctx, line, len, &diag) gets each non-blank
 * line (NUL-terminated, no newline or trailing CR; writable, valid until fn
 * returns) and returns 0, -1 or -2 as above.
 */
typedef int (*kvp_line_fn)(void *ctx, char *line, size_t len,
                           struct kvp_diag *d);

int kvp_cli_each_line(const char *path, const struct kvp_cli *c, kvp_line_fn fn,
                      void *ctx, uintmax_t *lineno);

/* After the first record of input name was rejected: says on stderr what
 * the input looks like (its first bytes p[0, n)) and which tool reads it,
 * when it is another stage's or another format's data. */
void kvp_cli_hint(const char *name, const char *p, size_t n);

/* File name as used in messages: "-" for stdin. */
const char *kvp_cli_input_name(const char *path);

#endif
