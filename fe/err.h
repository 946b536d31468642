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

#endif
