/* SPDX-License-Identifier: MIT */
/*
 * kv-capture — record live KV-event streams from engines' ZMQ publishers
 * as the capture JSONL kv-decode reads, per stream in seq order, gaps
 * filled from the replay endpoint. See kv-capture(1).
 */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"
#include "common/diag.h"
#include "common/output.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "kvpipe.h"

enum {
	OPT_ENDPOINT = 0x2000,
	OPT_BIND,
	OPT_TOPIC,
	OPT_FROM_START,
	OPT_REPLAY_TIMEOUT,
	OPT_COUNT,
	OPT_DURATION,
	OPT_COMPRESS,
	OPT_ROTATE,
	OPT_MAX_HELD,
	OPT_MAX_HELD_MSGS,
	OPT_STOP_TIMEOUT,
};

#define MAX_SPECS 256

struct opts {
	struct kvp_cli cli;
	struct kvp_cap_opts c;
	struct kvp_cap_spec *specs;
	size_t n_specs;
	double duration; /* seconds; 0: none */
	int codec;       /* -1: by the -o suffix */
	uint64_t rotate; /* bytes; 0: never */
};

static volatile sig_atomic_t stop_signal, n_signals;
/* The output being written and the session, for a second signal to give
 * them up. */
static struct kvp_output *volatile sig_out;
static struct kvp_cap *volatile sig_cap;

/* SIGINT, SIGTERM, SIGHUP: stop (the first); stop now (a second: a write
 * that would block, on a full pipe, fails instead of waiting). */
static void
on_signal(int sig)
{
	if (stop_signal == 0)
		stop_signal = sig;
	n_signals = n_signals + 1;
	if (n_signals >= 2 && sig_out != NULL)
		kvp_output_cancel(sig_out);
	if (n_signals >= 2 && sig_cap != NULL)
		kvp_cap_abort(sig_cap);
}

static const struct argp_option options[] = {
    {NULL, 0, NULL, 0, "Publishers:", 1},
    {"endpoint", OPT_ENDPOINT, "SPEC", 0,
     "Connect to a publisher: tcp://HOST:PORT[,replay=tcp://HOST:PORT]"
     "[,worker=ID][,dp=RANK|A-B] (repeatable; dp: one stream per rank on "
     "port + rank)",
     0},
    {"bind", OPT_BIND, "SPEC", 0,
     "Listen for publishers that connect (vLLM with a concrete host): "
     "ADDR[,replay=...][,worker=ID][,dp=A-B] (repeatable)",
     0},
    {"topic", OPT_TOPIC, "PREFIX", 0,
     "Subscribe to topics starting with "
     "PREFIX (default: all)",
     0},
    {"from-start", OPT_FROM_START, NULL, 0,
     "Ask each replay endpoint for everything from seq 0 before going live", 0},
    {"replay-timeout", OPT_REPLAY_TIMEOUT, "SECONDS", 0,
     "Give a replay request up after SECONDS (default 2)", 0},
    {"max-held", OPT_MAX_HELD, "SIZE", 0,
     "Give a replay up when the live messages held meanwhile exceed SIZE "
     "bytes (suffix k, M or G; default 256M)",
     0},
    {"max-held-msgs", OPT_MAX_HELD_MSGS, "N", 0,
     "... or N messages (default 1048576)", 0},
    {NULL, 0, NULL, 0, "Stopping and output:", 2},
    {"count", OPT_COUNT, "N", 0, "Stop after N lines", 0},
    {"duration", OPT_DURATION, "SECONDS", 0, "Stop after SECONDS", 0},
    {"stop-timeout", OPT_STOP_TIMEOUT, "SECONDS", 0,
     "On a stop, write what is queued for at most SECONDS (default 5); "
     "the rest is written as lost",
     0},
    {"compress", OPT_COMPRESS, "CODEC", 0,
     "Compress the output: zstd, gzip or none (default: by the -o suffix, "
     ".zst or .gz)",
     0},
    {"rotate", OPT_ROTATE, "SIZE", 0,
     "With -o FILE: start FILE.1, FILE.2, ... after SIZE bytes (suffix k, "
     "M or G)",
     0},
    {0}};

static const char *const codec_names[] = {"none", "gzip", "zstd", NULL};

static uint64_t
parse_size(struct argp_state *st, const char *opt, const char *arg)
{
	char num[32];
	size_t n = strlen(arg);
	uint64_t mul = 1, v;
	const char *sfx = "kMG";
	const char *p = n > 0 ? strchr(sfx, arg[n - 1]) : NULL;

	if (p != NULL && arg[n - 1] != '\0') {
		mul = (uint64_t)1 << (10 * (p - sfx + 1));
		n--;
	}
	if (n == 0 || n >= sizeof num)
		argp_error(st, "%s: '%s' is not a size", opt, arg);
	memcpy(num, arg, n);
	num[n] = '\0';
	v = kvp_opt_u64(st, opt, num, UINT64_MAX >> 30);
	if (v == 0)
		argp_error(st, "%s: must be positive", opt);
	return v * mul;
}

static double
parse_seconds(struct argp_state *st, const char *opt, const char *arg)
{
	double v = kvp_opt_double(st, opt, arg);

	if (!(v > 0) || v > 1e9)
		argp_error(st, "%s: '%s' is not a positive number of seconds",
		           opt, arg);
	return v;
}

static void
add_spec(struct argp_state *st, struct opts *o, const char *arg, int bind)
{
	struct kvp_diag d = {{0}, 0};
	void *p;

	if (o->n_specs == MAX_SPECS)
		argp_error(st, "more than %d publishers", MAX_SPECS);
	p = realloc(o->specs, (o->n_specs + 1) * sizeof *o->specs);
	if (p == NULL)
		argp_failure(st, KVP_EXIT_TROUBLE, ENOMEM, "%s",
		             bind ? "--bind" : "--endpoint");
	o->specs = p;
	if (kvp_cap_parse_spec(arg, bind, &o->specs[o->n_specs], &d) != 0)
		argp_error(st, "%s: %s", bind ? "--bind" : "--endpoint", d.msg);
	o->n_specs++;
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
	case OPT_ENDPOINT:
	case OPT_BIND:
		add_spec(st, o, arg, key == OPT_BIND);
		break;
	case OPT_TOPIC:
		o->c.topic = arg;
		break;
	case OPT_FROM_START:
		o->c.from_start = 1;
		break;
	case OPT_REPLAY_TIMEOUT:
		o->c.replay_timeout_ms = (unsigned)ceil(
		    1000 * parse_seconds(st, "--replay-timeout", arg));
		break;
	case OPT_COUNT:
		o->c.count = kvp_opt_u64(st, "--count", arg, UINT64_MAX);
		if (o->c.count == 0)
			argp_error(st, "--count: must be positive");
		break;
	case OPT_DURATION:
		o->duration = parse_seconds(st, "--duration", arg);
		break;
	case OPT_STOP_TIMEOUT:
		o->c.stop_timeout_ms = (unsigned)ceil(
		    1000 * parse_seconds(st, "--stop-timeout", arg));
		break;
	case OPT_COMPRESS:
		o->codec = kvp_opt_keyword(st, "--compress", "codec", arg,
		                           codec_names);
		break;
	case OPT_ROTATE:
		o->rotate = parse_size(st, "--rotate", arg);
		break;
	case OPT_MAX_HELD:
		o->c.max_held_bytes = (size_t)parse_size(st, "--max-held", arg);
		break;
	case OPT_MAX_HELD_MSGS:
		o->c.max_held_msgs =
		    (size_t)kvp_opt_u64(st, "--max-held-msgs", arg, SIZE_MAX);
		if (o->c.max_held_msgs == 0)
			argp_error(st, "--max-held-msgs: must be positive");
		break;
	case ARGP_KEY_ARG:
		argp_error(st,
		           "unexpected argument '%s' (publishers are "
		           "given with --endpoint or --bind)",
		           arg);
		break;
	case ARGP_KEY_END:
		if (o->n_specs == 0)
			argp_error(st,
			           "no publisher: give --endpoint or --bind");
		if (o->rotate != 0 &&
		    (o->cli.output == NULL || strcmp(o->cli.output, "-") == 0))
			argp_error(st, "--rotate needs -o FILE");
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
    NULL,
    "Record live KV-cache event streams from vLLM or SGLang ZMQ publishers "
    "as capture JSONL (the input of kv-decode).\v"
    "One stream per --endpoint (and DP rank) or --bind address. Per "
    "stream, lines are in seq order with each seq once: a gap is filled "
    "from the replay endpoint, or written as a {\"rec\":\"lost\"} line. "
    "Stops after --count lines, --duration, or on SIGINT/SIGTERM/SIGHUP (a "
    "second one stops at once, even on a full pipe), with "
    "every received message written. A summary per stream goes to stderr. "
    "Exit status: 0 ok, 2 usage or I/O trouble. See kv-capture(1).",
    children,
    NULL,
    NULL};

/* ---- output ------------------------------------------------------------- */

struct out {
	const struct opts *o;
	struct kvp_output *h;
	unsigned part;   /* FILE.part; 0: FILE itself */
	int reported;    /* an output error was reported */
	uint64_t lines;  /* whole lines in the parts closed */
	char name[4096]; /* of the current part, or "stdout" */
};

/* The whole lines the output holds so far (kvp_cap_set_saved). */
static uint64_t
out_saved(void *ctx)
{
	const struct out *w = ctx;

	return w->lines + (w->h != NULL ? kvp_output_lines(w->h) : 0);
}

static int
out_open(struct out *w)
{
	const char *path = w->o->cli.output;
	int to_stdout = path == NULL || strcmp(path, "-") == 0;
	int codec =
	    w->o->codec >= 0 ? w->o->codec : (int)kvp_output_codec_for(path);
	struct kvp_diag d = {{0}, 0};

	if (to_stdout) {
		snprintf(w->name, sizeof w->name, "stdout");
		w->h = kvp_output_open_fd(STDOUT_FILENO, 0, codec, &d);
	} else {
		if (w->part == 0)
			snprintf(w->name, sizeof w->name, "%s", path);
		else
			snprintf(w->name, sizeof w->name, "%s.%u", path,
			         w->part);
		w->h = kvp_output_open(w->name, codec, &d);
	}
	if (w->h == NULL) {
		kvp_warnx("%s: %s", w->name, d.msg);
		w->reported = 1;
		return -1;
	}
	kvp_output_line_mode(w->h);
	sig_out = w->h;
	if (n_signals >= 2)
		kvp_output_cancel(w->h);
	return 0;
}

/* Ends the current part; a write error is reported, naming it. */
static int
out_close(struct out *w)
{
	struct kvp_diag d = {{0}, 0};
	uint64_t lines = 0;
	int rc;

	sig_out = NULL;
	rc = kvp_output_close_lines(w->h, &lines, &d);
	w->h = NULL;
	w->lines += lines;
	if (rc == KVP_OK)
		return 0;
	if (errno == ECANCELED)
		kvp_warnx("%s: the output was blocked; given up at the second "
		          "signal (%llu whole lines in it)",
		          w->name, (unsigned long long)lines);
	else
		kvp_warnx("write error on %s: %s (%llu whole lines in it)",
		          w->name, d.msg, (unsigned long long)lines);
	w->reported = 1;
	return -1;
}

/* --rotate: the next part (the session calls this between lines). */
static FILE *
out_rotate(void *ctx)
{
	struct out *w = ctx;

	if (out_close(w) != 0)
		return NULL;
	w->part++;
	if (out_open(w) != 0)
		return NULL;
	return kvp_output_file(w->h);
}

/* ---- messages ------------------------------------------------------------ */

static void
note(void *ctx, const char *stream, const char *msg)
{
	(void)ctx;
	if (stream != NULL)
		kvp_warnx("%s: %s", stream, msg);
	else
		kvp_warnx("%s", msg);
}

/* The summary line of one stream (at exit). */
static void
final_line(const char *name, const struct kvp_cap_stats *s)
{
	char left[256] = "";
	int n = 0;

	if (s->unwritten > 0)
		n = snprintf(left, sizeof left,
		             "; %llu taken at the stop and not written",
		             (unsigned long long)s->unwritten);
	if (s->mixed > 0)
		n += snprintf(left + n, sizeof left - (size_t)n,
		              "; %llu written as they came (publishers "
		              "interleave)",
		              (unsigned long long)s->mixed);
	if (s->unsaved > 0)
		snprintf(left + n, sizeof left - (size_t)n,
		         "; %llu written but not in the output",
		         (unsigned long long)s->unsaved);
	kvp_warnx("%s: %llu written (%llu live, %llu replay), %llu events, "
	          "%llu bytes; %llu duplicates, %llu malformed, %llu gaps "
	          "(%llu seqs filled), %llu lost ranges (%llu seqs), %llu "
	          "restarts%s; replies %s",
	          name,
	          (unsigned long long)(s->written_live + s->written_replay),
	          (unsigned long long)s->written_live,
	          (unsigned long long)s->written_replay,
	          (unsigned long long)s->events, (unsigned long long)s->bytes,
	          (unsigned long long)s->dups, (unsigned long long)s->bad,
	          (unsigned long long)s->gaps, (unsigned long long)s->filled,
	          (unsigned long long)s->lost_ranges,
	          (unsigned long long)s->lost_seqs,
	          (unsigned long long)s->epochs, left,
	          s->shape == 4   ? "with topic"
	          : s->shape == 3 ? "without topic"
	                          : "none");
}

/* With last: the progress line of each stream (secs since the last), and
 * last updated; without: the summary at exit. */
static void
summary(const struct kvp_cap *cap, double secs, struct kvp_cap_stats *last)
{
	for (size_t i = 0; i < kvp_cap_n_streams(cap); i++) {
		const char *name;
		const struct kvp_cap_stats *s = kvp_cap_stream(cap, i, &name);
		uint64_t n = s->written_live + s->written_replay, was;

		if (last == NULL) {
			final_line(name, s);
			continue;
		}
		was = last[i].written_live + last[i].written_replay;
		kvp_warnx("%s: %.0f msg/s, %llu events, %llu bytes, %llu seqs "
		          "filled, %llu lost ranges",
		          name, (double)(n - was) / secs,
		          (unsigned long long)s->events,
		          (unsigned long long)s->bytes,
		          (unsigned long long)s->filled,
		          (unsigned long long)s->lost_ranges);
		last[i] = *s;
	}
}

/* ---- the loop ------------------------------------------------------------ */

static double
mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The capture until a stop, then its end. KVP_EXIT_OK, or
 * KVP_EXIT_TROUBLE with d saying why. */
static int
run(const struct opts *o, struct kvp_cap *cap, struct kvp_cap_stats *last,
    struct kvp_diag *d)
{
	double t0 = mono(), tick = t0 + 1;
	int rc = KVP_OK;

	while (!stop_signal) {
		double now = mono();
		long wait = 100;

		if (o->duration > 0 && now - t0 >= o->duration)
			break;
		if (o->duration > 0 && (o->duration - (now - t0)) * 1000 < wait)
			wait = (long)ceil((o->duration - (now - t0)) * 1000);
		rc = kvp_cap_poll(cap, wait, d);
		if (rc != KVP_OK)
			break;
		if (last != NULL && (now = mono()) >= tick) {
			summary(cap, now - tick + 1, last);
			tick = now + 1;
		}
	}
	if (rc == KVP_FAIL || kvp_cap_finish(cap, d) != KVP_OK)
		return KVP_EXIT_TROUBLE;
	return KVP_EXIT_OK;
}

static int
setup(struct opts *o, struct kvp_cap *cap)
{
	struct kvp_diag d = {{0}, 0};
	struct sigaction sa;

	for (size_t i = 0; i < o->n_specs; i++) {
		int rc = kvp_cap_add(cap, &o->specs[i], &d);

		if (rc != KVP_OK) {
			kvp_warnx("%s: %s",
			          o->specs[i].bind ? "--bind" : "--endpoint",
			          d.msg);
			return KVP_EXIT_TROUBLE;
		}
	}
	sig_cap = cap;
	/* no SA_RESTART: a signal interrupts a write blocked on a full pipe */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* a reader that went away is a write error (EPIPE), reported; so is
	 * a file size limit (EFBIG) */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGXFSZ, &sa, NULL);
	if (kvp_cap_start(cap, &d) == KVP_FAIL) {
		kvp_warnx("%s", d.msg);
		return KVP_EXIT_TROUBLE;
	}
	return KVP_EXIT_OK;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct kvp_cap *cap;
	struct kvp_cap_stats *last = NULL;
	struct kvp_diag d = {{0}, 0};
	struct out w = {&o, NULL, 0, 0, 0, ""};
	int st, rst;

	kvp_cli_begin(argc, argv);
	kvp_cli_uses("libzmq", kvp_cap_zmq_version());
	memset(&o, 0, sizeof o);
	kvp_cli_init(&o.cli);
	o.codec = -1;
	argp_parse(&argp, argc, argv, 0, NULL, &o);
	o.c.max_line = o.cli.max_line;
	o.c.hash_strings = o.cli.hash_strings;
	o.c.unbuffered = o.cli.unbuffered;
	cap = kvp_cap_new(&o.c, note, NULL, &d);
	if (cap == NULL) {
		kvp_warnx("%s", d.msg);
		return KVP_EXIT_TROUBLE;
	}
	st = setup(&o, cap);
	if (st == KVP_EXIT_OK && out_open(&w) != 0)
		st = KVP_EXIT_TROUBLE;
	if (st == KVP_EXIT_OK) {
		kvp_cap_set_output(cap, kvp_output_file(w.h));
		if (o.cli.progress == 1)
			last = calloc(kvp_cap_n_streams(cap), sizeof *last);
		kvp_cap_set_rotate(cap, o.rotate, out_rotate, &w);
		kvp_cap_set_saved(cap, out_saved, &w);
		rst = run(&o, cap, last, &d);
		st = rst;
		if (w.h != NULL && out_close(&w) != 0)
			st = KVP_EXIT_TROUBLE;
		kvp_cap_settle(cap, w.lines);
		/* a failed write is reported by the output, naming the file */
		if (rst != KVP_EXIT_OK &&
		    !(kvp_cap_write_failed(cap) && w.reported))
			kvp_warnx("%s", d.msg);
		if (stop_signal)
			kvp_warnx("stopped by signal %d", (int)stop_signal);
		summary(cap, 0, NULL);
	}
	kvp_cap_free(cap);
	free(last);
	free(o.specs);
	return st;
}
