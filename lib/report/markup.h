/* SPDX-License-Identifier: MIT */
/*
 * markup.h — the HTML/SVG writer of kv-report. Escaping happens here and
 * only here: kvp_mw_text() is the one way input-derived text (labels,
 * request ids, titles, file names) reaches the output, and it escapes
 * & < > " ' and replaces control bytes and invalid UTF-8 with U+FFFD, so
 * a request id such as "</script><svg onload=...>" renders as text in
 * element content and in attribute values alike. kvp_mw_tag() and
 * kvp_mw_tagf() write markup that the program itself spells (element
 * names, numbers): never pass them input text.
 *
 * The FILE is borrowed. Write errors are sticky: kvp_mw_ok() turns false
 * and the caller reports it (errno tells which).
 */
#ifndef KVP_MARKUP_H
#define KVP_MARKUP_H

#include <stddef.h>
#include <stdio.h>

#include "common/diag.h"

struct kvp_mw {
	FILE *f;
	int failed;
};

void kvp_mw_init(struct kvp_mw *w, FILE *f);

/* Program-spelled markup. */
void kvp_mw_tag(struct kvp_mw *w, const char *s);
void kvp_mw_tagf(struct kvp_mw *w, const char *fmt, ...) KVP_PRINTF(2, 3);

/* Input text, escaped: s[0, n), at most max bytes of it (then "…"). */
void kvp_mw_text(struct kvp_mw *w, const char *s, size_t n, size_t max);
/* Formatted text (which may hold input strings through %s), escaped. */
void kvp_mw_textf(struct kvp_mw *w, const char *fmt, ...) KVP_PRINTF(2, 3);

static inline int
kvp_mw_ok(const struct kvp_mw *w)
{
	return !w->failed;
}

/* The length of the longest prefix of s[0, n) that is valid UTF-8 up to
 * the first bad sequence (used by the escaper; exported for tests). */
size_t kvp_mw_utf8_run(const unsigned char *s, size_t n);

#endif
