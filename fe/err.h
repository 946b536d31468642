/* SPDX-License-Identifier: MIT */
/*
 * err.h — the front end's messages (cmd/ only). Every message has the one
 * format
 *
 *     tool: FILE:LINE[:COL]: message
 *
 * and every tool counts and caps its record errors the same way.
 */
#ifndef KVP_FE_ERR_H
#define KVP_FE_ERR_H

#include <stdint.h>

#include "common/diag.h"
void kvp_setprogname(const char *argv0);
const char *kvp_getprogname(void);

/* "tool: msg\n" on stderr. */
void kvp_warnx(const char *fmt, ...) KVP_PRINTF(1, 2);
/* "tool: msg: strerror(errno)\n" on stderr. */
void kvp_warn(const char *fmt, ...) KVP_PRINTF(1, 2);
/* kvp_warnx then exit(status). */
__attribute__((noreturn)) void kvp_errx(int status, const char *fmt, ...)
    KVP_PRINTF(2, 3);

/* "tool: FILE:LINE[:COL]: msg\n"; line 0 omits the line, col 0 omits the
 * column. Messages past the cap set with kvp_set_max_errors() are counted
 * but not printed; the first suppressed one prints a notice. */
void kvp_report(const char *file, uintmax_t line, long col, const char *fmt,
                ...) KVP_PRINTF(4, 5);
void kvp_report_diag(const char *file, uintmax_t line,
                     const struct kvp_diag *d);
void kvp_set_max_errors(uintmax_t max);
uintmax_t kvp_error_count(void);

/* "tool: FILE: msg" about a whole input (damaged compressed data): always
 * printed, counted as an error, not charged to a record. */
void kvp_report_input(const char *file, const char *msg);

/*
 * Totals. The record loops call kvp_tally_in() for each record read (a
 * non-blank line, a frame, a raw batch); a kvp_report*() message after it
 * marks that record bad (once, however many messages it gets).
 * kvp_totals(keep_going) prints, with -k or when a record was skipped,
 *
 *     tool: N records in, N written, N skipped, N errors (M not shown)
 *
 * written: records read without an error; skipped: bad records -k passed
 * over; errors: every record message, those past --max-errors (M) included.
 * Without -k, when messages were hidden, it prints "tool: N errors (M not
 * shown)" instead.
 */
void kvp_tally_in(void);
void kvp_totals(int keep_going);

/*
 * The progress line: one stderr line redrawn in place (\r) with records/s,
 * bytes read of the total and an ETA, at most 4 times a second, from
 * kvp_tally_in(). fn reports the bytes read from the inputs open now, their
 * total size (-1 if unknown) and the seconds since they were opened. Every
 * message clears the line first; kvp_progress_clear() clears it for good.
 */
struct kvp_progress_io {
	uint64_t bytes;
	int64_t total;
	double secs;
};
typedef void (*kvp_progress_fn)(struct kvp_progress_io *io);
void kvp_progress_enable(kvp_progress_fn fn);
void kvp_progress_clear(void);

/*
 * Warnings capped per kind: the first cap of each kind are printed, the
 * rest counted, and kvp_warncap_end() prints one line per kind that went
 * over: "tool: warning: N more "KIND" warnings not shown". Warnings are
 * not errors: they do not count in the totals or against --max-errors.
 */
struct kvp_warncap {
	const char *const *names; /* n kinds */
	uintmax_t *count;         /* n counters, zeroed */
	int n;
	uintmax_t cap;
};

/* True if this warning of kind is to be printed (counts it either way). */
int kvp_warncap_take(struct kvp_warncap *w, int kind);
void kvp_warncap_end(const struct kvp_warncap *w);

#endif
