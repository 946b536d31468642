/* SPDX-License-Identifier: MIT */
/*
 * markup.c — HTML/SVG output with escaping in one place.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/markup.h"

void
kvp_markup_init(struct kvp_markup *w, FILE *f)
{
	w->f = f;
	w->failed = 0;
}

static void
put(struct kvp_markup *w, const char *s, size_t n)
{
	if (w->failed || n == 0)
		return;
	if (fwrite(s, 1, n, w->f) != n)
		w->failed = 1;
}

void
kvp_markup_tag(struct kvp_markup *w, const char *s)
{
	put(w, s, strlen(s));
}

/* vsnprintf into a stack buffer, or the heap for long text. */
static char *format(char *buf, size_t cap, size_t *len, const char *fmt,
                    va_list ap) KVP_PRINTF(4, 0);

static char *
format(char *buf, size_t cap, size_t *len, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;
	char *p;

	va_copy(ap2, ap);
	n = vsnprintf(buf, cap, fmt, ap);
	if (n < 0) {
		va_end(ap2);
		return NULL;
	}
	if ((size_t)n < cap) {
		va_end(ap2);
		*len = (size_t)n;
		return buf;
	}
	p = malloc((size_t)n + 1);
	if (p != NULL)
		vsnprintf(p, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	*len = (size_t)n;
	return p;
}

void
kvp_markup_tagf(struct kvp_markup *w, const char *fmt, ...)
{
	char buf[512], *p;
	size_t n = 0;
	va_list ap;

	va_start(ap, fmt);
	p = format(buf, sizeof buf, &n, fmt, ap);
	va_end(ap);
	if (p == NULL) {
		w->failed = 1;
		return;
	}
	put(w, p, n);
	if (p != buf)
		free(p);
}

/* The code point of the UTF-8 sequence at s (1..4 bytes, *len), or -1
 * if invalid. */
static long
utf8_cp(const unsigned char *s, size_t n, size_t *len)
{
	size_t k;
	unsigned c = s[0];
	unsigned long cp;

	if (c < 0x80) {
		*len = 1;
		return (long)c;
	}
	if (c >= 0xc2 && c <= 0xdf)
		*len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		*len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		*len = 4, cp = c & 0x07;
	else
		return -1;
	if (n < *len)
		return -1;
	for (k = 1; k < *len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[k] & 0x3f);
	}
	if ((*len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (*len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return -1;
	return (long)cp;
}

size_t
kvp_markup_utf8_run(const unsigned char *s, size_t n)
{
	size_t i = 0, k;

	while (i < n && utf8_cp(s + i, n - i, &k) >= 0)
		i += k;
	return i;
}

/* The bidirectional formatting characters (embeddings, overrides,
 * isolates, marks): shown by name, so a label cannot reorder the text
 * around it. */
static const char *
bidi_name(long cp)
{
	static const char *const emb[] = {"[U+202A]", "[U+202B]", "[U+202C]",
	                                  "[U+202D]", "[U+202E]"};
	static const char *const iso[] = {"[U+2066]", "[U+2067]", "[U+2068]",
	                                  "[U+2069]"};

	if (cp >= 0x202a && cp <= 0x202e)
		return emb[cp - 0x202a];
	if (cp >= 0x2066 && cp <= 0x2069)
		return iso[cp - 0x2066];
	if (cp == 0x200e)
		return "[U+200E]";
	if (cp == 0x200f)
		return "[U+200F]";
	if (cp == 0x061c)
		return "[U+061C]";
	return NULL;
}

/* Advance widths of ' ' .. '~' in 1/1000 em (DejaVu Sans, one of the
 * wider sans-serif faces), for kvp_markup_text_fit(). */
static const unsigned short ascii_w[95] = {
    318, 401, 460, 838, 636,  950, 780, 275, 390, 390, 500, 838, 318, 361,
    318, 337, 636, 636, 636,  636, 636, 636, 636, 636, 636, 636, 337, 337,
    838, 838, 838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295,
    295, 656, 557, 863, 748,  787, 603, 787, 695, 635, 611, 732, 684, 989,
    685, 611, 685, 390, 337,  390, 838, 500, 500, 613, 635, 550, 635, 615,
    352, 635, 634, 278, 278,  579, 278, 974, 634, 612, 635, 635, 411, 521,
    392, 634, 592, 818, 592,  592, 525, 636, 337, 636, 838};

/* An estimate of the width of code point cp, in 1/1000 em. */
static unsigned
cp_width(long cp)
{
	if (cp >= 0x20 && cp < 0x7f)
		return ascii_w[cp - 0x20];
	if (cp >= 0x300 && cp <= 0x36f)
		return 0; /* combining marks */
	if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
	    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
	    (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
	    (cp >= 0xffe0 && cp <= 0xffe6) || cp >= 0x20000)
		return 1000; /* East Asian wide */
	if (cp >= 0x1f000)
		return 1100; /* emoji */
	return 700;
}

static unsigned
str_width(const char *s)
{
	unsigned w = 0;

	for (; *s != '\0'; s++)
		w += cp_width((unsigned char)*s);
	return w;
}

/* One unit of input text at u[i, n) (of full bytes in all, n < full when
 * the byte limit cut it): its byte length (k, 0 for a sequence the limit
 * cut: valid in the whole text, longer than what is left), its
 * replacement or NULL to copy it, its width. */
struct unit {
	size_t k;
	const char *rep;
	unsigned width;
};

static struct unit
unit_at(const unsigned char *u, size_t i, size_t n, size_t full)
{
	struct unit x = {0, NULL, 0};
	long cp = utf8_cp(u + i, n - i, &x.k);
	size_t k2;

	if (cp < 0) {
		/* a sequence cut by the limit is not an error (one invalid
		 * in the whole text is) */
		if (full > n && utf8_cp(u + i, full - i, &k2) >= 0 &&
		    k2 > n - i) {
			x.k = 0;
			return x;
		}
		x.k = 1;
		cp = 0xfffd;
		x.rep = "\xef\xbf\xbd";
	} else if (cp == '&')
		x.rep = "&amp;";
	else if (cp == '<')
		x.rep = "&lt;";
	else if (cp == '>')
		x.rep = "&gt;";
	else if (cp == '"')
		x.rep = "&quot;";
	else if (cp == '\'')
		x.rep = "&#39;";
	else if (cp < 0x20 || cp == 0x7f) {
		x.rep = cp == '\t' || cp == '\n' ? " " : "\xef\xbf\xbd";
		cp = cp == '\t' || cp == '\n' ? ' ' : 0xfffd;
	} else if ((x.rep = bidi_name(cp)) != NULL) {
		x.width = str_width(x.rep);
		return x;
	}
	x.width = cp_width(cp);
	return x;
}

/* The escaped text of u[0, n), stopping where the width would pass
 * limit; returns the bytes consumed. */
static size_t
emit(struct kvp_markup *w, const char *s, size_t n, size_t full,
     unsigned long limit)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned long width = 0;
	size_t i = 0, run = 0;

	while (i < n) {
		struct unit x = unit_at(u, i, n, full);

		if (x.k == 0 || width + x.width > limit)
			break;
		width += x.width;
		if (x.rep != NULL) {
			put(w, s + run, i - run);
			put(w, x.rep, strlen(x.rep));
			run = i + x.k;
		}
		i += x.k;
	}
	put(w, s + run, i - run);
	return i;
}

/* The width of the escaped text of u[0, n), in 1/1000 em. */
static unsigned long
text_width(const char *s, size_t n, size_t full)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned long width = 0;
	size_t i = 0;

	while (i < n) {
		struct unit x = unit_at(u, i, n, full);

		if (x.k == 0)
			break;
		width += x.width;
		i += x.k;
	}
	return width;
}

void
kvp_markup_text(struct kvp_markup *w, const char *s, size_t n, size_t max)
{
	kvp_markup_text_fit(w, s, n, max, 0, 0);
}

void
kvp_markup_text_fit(struct kvp_markup *w, const char *s, size_t n, size_t max,
                    double px, double font_px)
{
	unsigned long limit = (unsigned long)-1;
	size_t full = n;
	int cut = 0, ellipsis;

	if (n > max) {
		n = max;
		cut = 1;
	}
	ellipsis = cut;
	if (px > 0 && font_px > 0) {
		limit = (unsigned long)(px / font_px * 1000);
		if (ellipsis || text_width(s, n, full) > limit) {
			/* room for the ellipsis */
			limit = limit > 1000 ? limit - 1000 : 0;
			ellipsis = 1;
		}
	}
	emit(w, s, n, full, limit);
	if (ellipsis)
		put(w, "\xe2\x80\xa6", 3);
}

void
kvp_markup_textf(struct kvp_markup *w, const char *fmt, ...)
{
	char buf[512], *p;
	size_t n = 0;
	va_list ap;

	va_start(ap, fmt);
	p = format(buf, sizeof buf, &n, fmt, ap);
	va_end(ap);
	if (p == NULL) {
		w->failed = 1;
		return;
	}
	kvp_markup_text(w, p, n, (size_t)-1);
	if (p != buf)
		free(p);
}
