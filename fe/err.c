/* SPDX-License-Identifier: MIT */
/* err.c — the front end's messages: program name, warnings, the error cap. */
#include "fe/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *progname = "kvpipe";
static uintmax_t max_errors = UINTMAX_MAX;
static uintmax_t n_errors;

/* Totals: records read; bad ones among them; cur_bad: the record last read
 * is already counted bad. */
static uintmax_t n_in, n_bad;
static int cur_bad;

/* The progress line: on when fn is set; shown: its width on screen now. */
static struct {
	kvp_progress_fn fn;
	struct timespec start, last;
	size_t shown;
	int drawn;
} prog;

static void
progress_erase(void)
{
	if (prog.shown > 0)
		fprintf(stderr, "\r%*s\r", (int)prog.shown, "");
	prog.shown = 0;
}

void
kvp_setprogname(const char *argv0)
{
	const char *slash = strrchr(argv0, '/');

	progname = slash ? slash + 1 : argv0;
}

const char *
kvp_getprogname(void)
{
	return progname;
}

void
kvp_warnx(const char *fmt, ...)
{
	va_list ap;

	progress_erase();
	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
kvp_warn(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	progress_erase();
	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(e));
}

void
kvp_errx(int status, const char *fmt, ...)
{
	va_list ap;

	progress_erase();
	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

static void vreport(const char *file, uintmax_t line, long col, const char *fmt,
                    va_list ap) KVP_PRINTF(4, 0);

static void
vreport(const char *file, uintmax_t line, long col, const char *fmt, va_list ap)
{
	n_errors++;
	if (n_in > 0 && !cur_bad) {
		n_bad++;
		cur_bad = 1;
	}
	if (n_errors > max_errors) {
		if (n_errors == max_errors + 1)
			fprintf(stderr,
			        "%s: too many errors; further messages "
			        "suppressed (--max-errors)\n",
			        progname);
		return;
	}
	progress_erase();
	fprintf(stderr, "%s: %s", progname, file ? file : "-");
	if (line > 0)
		fprintf(stderr, ":%ju", line);
	if (col > 0)
		fprintf(stderr, ":%ld", col);
	fputs(": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void
kvp_report(const char *file, uintmax_t line, long col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(file, line, col, fmt, ap);
	va_end(ap);
}

static void report_str(const char *file, uintmax_t line, long col,
                       const char *fmt, ...) KVP_PRINTF(4, 5);

static void
report_str(const char *file, uintmax_t line, long col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(file, line, col, fmt, ap);
	va_end(ap);
}

void
kvp_report_diag(const char *file, uintmax_t line, const struct kvp_diag *d)
{
	report_str(file, line, d->col, "%s", d->msg);
}

void
kvp_set_max_errors(uintmax_t max)
{
	max_errors = max;
}

uintmax_t
kvp_error_count(void)
{
	return n_errors;
}

void
kvp_report_input(const char *file, const char *msg)
{
	n_errors++;
	progress_erase();
	fprintf(stderr, "%s: %s: %s\n", progname, file ? file : "-", msg);
}

/* ---- totals and progress ------------------------------------------------- */

void
kvp_totals(int keep_going)
{
	uintmax_t skipped = keep_going ? n_bad : 0;
	uintmax_t hidden = n_errors > max_errors ? n_errors - max_errors : 0;

	if (!keep_going) {
		/* no totals line, but never hide errors uncounted */
		if (hidden > 0) {
			progress_erase();
			fprintf(stderr, "%s: %ju errors (%ju not shown)\n",
			        progname, n_errors, hidden);
		}
		return;
	}
	progress_erase();
	fprintf(stderr,
	        "%s: %ju records in, %ju written, %ju skipped, %ju errors "
	        "(%ju not shown)\n",
	        progname, n_in, n_in - n_bad, skipped, n_errors, hidden);
}

static double
secs_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* "12.3 MiB" */
static void
human_bytes(char *buf, size_t n, double v)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, u == 0 ? "%.0f %s" : "%.1f %s", v, unit[u]);
}

static void
progress_draw(const struct timespec *now)
{
	struct kvp_progress_io io = {0, -1, 0};
	double el = secs_between(&prog.start, now);
	char line[200], got[32], tot[32];
	int n;

	prog.fn(&io);
	human_bytes(got, sizeof got, (double)io.bytes);
	n = snprintf(line, sizeof line, "%s: %ju records, %.0f/s, %s", progname,
	             n_in, el > 0 ? (double)n_in / el : 0.0, got);
	if (io.total >= 0 && n > 0 && (size_t)n < sizeof line) {
		double left = (double)io.total - (double)io.bytes;
		double eta = io.bytes > 0 && left > 0
		                 ? left * io.secs / (double)io.bytes
		                 : 0;

		human_bytes(tot, sizeof tot, (double)io.total);
		snprintf(line + n, sizeof line - (size_t)n,
		         " of %s (%.0f%%), ETA %d:%02d", tot,
		         io.total > 0
		             ? 100.0 * (double)io.bytes / (double)io.total
		             : 100.0,
		         (int)(eta / 60), (int)eta % 60);
	}
	n = (int)strlen(line);
	fprintf(stderr, "\r%s%*s", line,
	        prog.shown > (size_t)n ? (int)(prog.shown - (size_t)n) : 0, "");
	prog.shown = (size_t)n > prog.shown ? (size_t)n : prog.shown;
	prog.last = *now;
	prog.drawn = 1;
}

void
kvp_tally_in(void)
{
	struct timespec now;

	n_in++;
	cur_bad = 0;
	if (prog.fn == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (!prog.drawn || secs_between(&prog.last, &now) >= 0.25)
		progress_draw(&now);
}

void
kvp_progress_enable(kvp_progress_fn fn)
{
	if (prog.fn == NULL)
		clock_gettime(CLOCK_MONOTONIC_COARSE, &prog.start);
	prog.fn = fn;
}

void
kvp_progress_clear(void)
{
	progress_erase();
	prog.fn = NULL;
}

int
kvp_warncap_take(struct kvp_warncap *w, int kind)
{
	return w->count[kind]++ < w->cap;
}

void
kvp_warncap_end(const struct kvp_warncap *w)
{
	for (int k = 0; k < w->n; k++)
		if (w->count[k] > w->cap)
			kvp_warnx("warning: %ju more \"%s\" warnings not shown",
			          w->count[k] - w->cap, w->names[k]);
}
