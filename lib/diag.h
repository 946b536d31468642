/* SPDX-License-Identifier: MIT */
/*
 * diag.h — diagnostics.
 *
 * Library modules never print: they fill a struct kvp_diag and return -1.
 * The front-end half of this module (kvp_warnx, kvp_report, ...) is what
 * cmd/ uses to print, so that every message has the one format
 *
 *     tool: FILE:LINE[:COL]: message
 *
 * and every tool counts and caps its messages the same way.
 */
#ifndef KVP_DIAG_H
#define KVP_DIAG_H

#include <stdarg.h>
#include <stdint.h>

#define KVP_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Filled by lib/ on failure. col is a 1-based column or byte offset, 0 if
 * unknown. */
struct kvp_diag {
	char msg[256];
	long col;
};

/* Sets d->msg (truncating) and d->col; returns -1 so callers can write
 * `return kvp_diag_set(d, 0, "...")`. d may be NULL. */
int kvp_diag_set(struct kvp_diag *d, long col, const char *fmt, ...)
    KVP_PRINTF(3, 4);
void kvp_diag_clear(struct kvp_diag *d);

/* --- front end (cmd/ only) --- */
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

#endif
