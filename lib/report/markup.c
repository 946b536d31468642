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

/* Length of the UTF-8 sequence starting at s (1..4), or 0 if invalid. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	size_t len, k;
	unsigned c = s[0];
	unsigned long cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

size_t
kvp_markup_utf8_run(const unsigned char *s, size_t n)
{
	size_t i = 0, k;

	while (i < n && (k = utf8_len(s + i, n - i)) != 0)
		i += k;
	return i;
}

void
kvp_markup_text(struct kvp_markup *w, const char *s, size_t n, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k, run = 0, full = n;
	int cut = 0;

	if (n > max) {
		n = max;
		cut = 1;
	}
	while (i < n) {
		const char *rep = NULL;
		unsigned c = u[i];

		k = utf8_len(u + i, n - i);
		if (k == 0) {
			/* a sequence cut by the limit is not an error (one
			 * invalid in the whole text is) */
			if (cut && utf8_len(u + i, full - i) > n - i)
				break;
			rep = "\xef\xbf\xbd";
			k = 1;
		} else if (c == '&')
			rep = "&amp;";
		else if (c == '<')
			rep = "&lt;";
		else if (c == '>')
			rep = "&gt;";
		else if (c == '"')
			rep = "&quot;";
		else if (c == '\'')
			rep = "&#39;";
		else if (c < 0x20 || c == 0x7f)
			rep = c == '\t' || c == '\n' ? " " : "\xef\xbf\xbd";
		if (rep != NULL) {
			put(w, s + run, i - run);
			put(w, rep, strlen(rep));
			run = i + k;
		}
		i += k;
	}
	put(w, s + run, (i < n ? i : n) - run);
	if (cut)
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
