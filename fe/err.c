/* SPDX-License-Identifier: MIT */
/* err.c — the front end's messages: program name, warnings, the error cap. */
#include "fe/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *progname = "kvpipe";
static uintmax_t max_errors = UINTMAX_MAX;
static uintmax_t n_errors;

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
	if (n_errors > max_errors) {
		if (n_errors == max_errors + 1)
			fprintf(stderr,
			        "%s: too many errors; further messages "
			        "suppressed (--max-errors)\n",
			        progname);
		return;
	}
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
