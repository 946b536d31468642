/* SPDX-License-Identifier: MIT */
/*
 * diag.h — diagnostics.
 *
 * Library modules never print: they fill a struct kvp_diag and return a
 * failure status. The front end (fe/err.h) turns a diag into the one
 * message format every tool uses, tool: FILE:LINE[:COL]: message.
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

#endif
