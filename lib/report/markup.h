/* SPDX-License-Identifier: MIT */
/*
 * markup.h — the HTML/SVG writer of kv-report. Escaping happens here and
 * only here: kvp_markup_text() is the one way input-derived text (labels,
 * request ids, titles, file names) reaches the output, and it escapes
 * & < > " ' and replaces control bytes and invalid UTF-8 with U+FFFD, so
 * a request id such as "</script><svg onload=...>" renders as text in
 * element content and in attribute values alike. kvp_markup_tag() and
 * kvp_markup_tagf() write markup that the program itself spells (element
 * names, numbers): never pass them input text.
 *
 * The FILE is borrowed. Write errors are sticky: kvp_markup_ok() turns false
 * and the caller reports it (errno tells which).
 */
#ifndef KVP_MARKUP_H
#define KVP_MARKUP_H

#include <stddef.h>
#include <stdio.h>

#include "common/diag.h"

struct kvp_markup {
	FILE *f;
	int failed;
};

void kvp_markup_init(struct kvp_markup *w, FILE *f);

/* Program-spelled markup. */
void kvp_markup_tag(struct kvp_markup *w, const char *s);
void kvp_markup_tagf(struct kvp_markup *w, const char *fmt, ...)
    KVP_PRINTF(2, 3);

/* Input text, escaped: s[0, n), at most max bytes of it (then "…").
 * The bidirectional formatting characters (U+202A..U+202E embeddings and
 * overrides, U+2066..U+2069 isolates, U+200E, U+200F, U+061C marks) are
 * written as their names, "[U+202E]", so no input text reorders what
 * follows it. */
void kvp_markup_text(struct kvp_markup *w, const char *s, size_t n, size_t max);
/* The same, also cut (then "…") where its estimated width in a
 * sans-serif face of font_px pixels (the widths of DejaVu Sans, wide
 * characters 1 em) would pass px pixels, the "…" included. */
void kvp_markup_text_fit(struct kvp_markup *w, const char *s, size_t n,
                         size_t max, double px, double font_px);
/* Formatted text (which may hold input strings through %s), escaped. */
void kvp_markup_textf(struct kvp_markup *w, const char *fmt, ...)
    KVP_PRINTF(2, 3);

static inline int
kvp_markup_ok(const struct kvp_markup *w)
{
	return !w->failed;
}

/* The length of the longest prefix of s[0, n) that is valid UTF-8 up to
 * the first bad sequence (used by the escaper; exported for tests). */
size_t kvp_markup_utf8_run(const unsigned char *s, size_t n);

#endif
