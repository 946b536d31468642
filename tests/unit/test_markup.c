/* SPDX-License-Identifier: MIT */
/*
 * test_markup.c — kv-report's HTML/SVG writer (lib/report/markup.c).
 * Expected strings follow markup.h's contract, written out by hand: & < >
 * " ' become &amp; &lt; &gt; &quot; &#39;; tab and newline become a space,
 * other control bytes and invalid UTF-8 U+FFFD (EF BF BD); at most max
 * bytes of the text are written, then "…" (E2 80 A6), and a UTF-8
 * sequence cut by that limit is dropped, not replaced; write errors are
 * sticky. kv-report(1): a request id such as </script><svg onload=...>
 * shows as text.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/markup.h"
#include "unit.h"

/* The bytes one writer call sequence produced, NUL-terminated (a static
 * buffer: valid until the next call). */
struct cap {
	FILE *f;
	char *buf;
	size_t len;
	struct kvp_markup w;
};

static void
cap_open(struct cap *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	kvp_markup_init(&c->w, c->f);
}

static char *
cap_close(struct cap *c)
{
	fclose(c->f);
	return c->buf;
}

/* kvp_markup_text over s[0, n) with limit max. */
static char *
text(const char *s, size_t n, size_t max)
{
	struct cap c;

	cap_open(&c);
	kvp_markup_text(&c.w, s, n, max);
	CHECK(kvp_markup_ok(&c.w));
	return cap_close(&c);
}

/* kvp_markup_text(in) must write want (a macro: failures name the line) */
#define CHECK_TEXT(in, max, want)                                              \
	do {                                                                   \
		char *got_ = text((in), strlen(in), (max));                    \
		CHECK_STR(got_, (want));                                       \
		free(got_);                                                    \
	} while (0)

/* Independent UTF-8 validity (RFC 3629 table 1, no surrogates, no
 * overlongs), to check the escaper's output is always valid. */
static int
valid_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		size_t need;
		unsigned lo = 0x80, hi = 0xbf;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3;
		else
			return 0;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		else if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		if (i + need >= n) /* s[i + need] must exist */
			return 0;
		for (size_t k = 1; k <= need; k++) {
			unsigned b = s[i + k];

			if (k == 1 ? (b < lo || b > hi)
			           : (b < 0x80 || b > 0xbf))
				return 0;
		}
		i += need + 1;
	}
	return 1;
}

static void
test_escapes(void)
{
	CHECK_TEXT("plain text", 100, "plain text");
	CHECK_TEXT("a&b<c>d\"e'f", 100, "a&amp;b&lt;c&gt;d&quot;e&#39;f");
	/* kv-report(1)'s example: markup in a request id is text */
	CHECK_TEXT("</script><svg onload=alert(1)>", 100,
	           "&lt;/script&gt;&lt;svg onload=alert(1)&gt;");
	/* tab and newline: a space; other controls and DEL: U+FFFD */
	CHECK_TEXT("a\tb\nc", 100, "a b c");
	CHECK_TEXT("x\001y\033z\177", 100,
	           "x\xef\xbf\xbdy\xef\xbf\xbdz\xef\xbf\xbd");
	/* valid UTF-8 passes through: é (2 bytes), € (3), 😀 (4) */
	CHECK_TEXT("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 100,
	           "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	/* a lone bad byte: one U+FFFD */
	CHECK_TEXT("a\377b", 100, "a\357\277\275b");
	CHECK_TEXT("\x80", 100, "\xef\xbf\xbd");
	CHECK_TEXT("", 100, "");
}

/* Invalid sequences of every kind leave valid UTF-8 with no raw byte of
 * the bad sequence and the valid text around it intact. */
static void
test_invalid_utf8(void)
{
	static const char *const bad[] = {
	    "\xc0\x80",         /* overlong NUL */
	    "\xe0\x80\x80",     /* overlong 3-byte */
	    "\xed\xa0\x80",     /* a UTF-16 surrogate, U+D800 */
	    "\xf4\x90\x80\x80", /* above U+10FFFF */
	    "\xf5\x80\x80\x80", /* no such lead byte */
	    "\xe2\x82",         /* truncated (not by the limit) */
	    "\xc3(",            /* bad continuation */
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char in[32], *got;
		size_t n;

		n = (size_t)snprintf(in, sizeof in, "<%s>", bad[i]);
		got = text(in, n, 100);
		CHECK(got != NULL &&
		      valid_utf8((unsigned char *)got, strlen(got)));
		CHECK(got != NULL && strncmp(got, "&lt;", 4) == 0);
		CHECK(got != NULL && strlen(got) >= 4 &&
		      strcmp(got + strlen(got) - 4, "&gt;") == 0);
		CHECK(got != NULL && strstr(got, "\xef\xbf\xbd") != NULL);
		free(got);
	}
	/* the one exception: "(" in "\xc3(" is kept after the U+FFFD */
	CHECK_TEXT("\xc3(", 100, "\xef\xbf\xbd(");
}

static void
test_limit(void)
{
	/* 5 bytes, at most 3: "abc" then the ellipsis */
	CHECK_TEXT("abcde", 3, "abc\xe2\x80\xa6");
	/* exactly max bytes: no ellipsis */
	CHECK_TEXT("abc", 3, "abc");
	/* max 0: the ellipsis alone */
	CHECK_TEXT("abc", 0, "\xe2\x80\xa6");
	/* "hé!" is h C3 A9 !: a limit of 2 cuts é after its first byte,
	 * which is dropped (not replaced) */
	CHECK_TEXT("h\xc3\xa9!", 2, "h\xe2\x80\xa6");
	/* a 4-byte sequence cut after 3 bytes: dropped too */
	CHECK_TEXT("\xf0\x9f\x98\x80z", 3, "\xe2\x80\xa6");
	/* the limit counts input bytes, not output: "&&&" at 2 */
	CHECK_TEXT("&&&", 2, "&amp;&amp;\xe2\x80\xa6");
	/* a bad byte inside the limit is still replaced */
	CHECK_TEXT("\377abc", 2, "\357\277\275a\342\200\246");
	/* as is a lead byte whose next byte (inside the limit) does not
	 * continue it: "(" is kept */
	CHECK_TEXT("\303(x", 2, "\357\277\275(\342\200\246");
	/* a lead byte last inside the limit whose continuation beyond it
	 * is bad: invalid in the whole text, so replaced */
	CHECK_TEXT("a\303(", 2, "a\357\277\275\342\200\246");
	/* n counts, not NUL: "a\0b" is 3 bytes, the NUL a control */
	{
		char *got = text("a\0b", 3, 100);

		CHECK_STR(got, "a\357\277\275b");
		free(got);
	}
}

static void
test_utf8_run(void)
{
	const unsigned char *s;

	s = (const unsigned char *)"abc";
	CHECK_U64(kvp_markup_utf8_run(s, 3), 3);
	CHECK_U64(kvp_markup_utf8_run(s, 0), 0);
	/* é € 😀: 2 + 3 + 4 bytes, all valid */
	s = (const unsigned char *)"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
	CHECK_U64(kvp_markup_utf8_run(s, 9), 9);
	/* cut inside the 4-byte sequence: the run ends before it */
	CHECK_U64(kvp_markup_utf8_run(s, 7), 5);
	/* up to the first bad sequence */
	s = (const unsigned char *)"ab\355\240\200cd";
	CHECK_U64(kvp_markup_utf8_run(s, 7), 2);
	s = (const unsigned char *)"\xc0\x80";
	CHECK_U64(kvp_markup_utf8_run(s, 2), 0);
	/* U+10FFFF is the last code point; U+110000 is not one */
	s = (const unsigned char *)"\xf4\x8f\xbf\xbf";
	CHECK_U64(kvp_markup_utf8_run(s, 4), 4);
	s = (const unsigned char *)"\xf4\x90\x80\x80";
	CHECK_U64(kvp_markup_utf8_run(s, 4), 0);
	/* U+0800 is the first 3-byte code point, U+07FF overlong in 3 */
	s = (const unsigned char *)"\xe0\xa0\x80";
	CHECK_U64(kvp_markup_utf8_run(s, 3), 3);
	s = (const unsigned char *)"\xe0\x9f\xbf";
	CHECK_U64(kvp_markup_utf8_run(s, 3), 0);
	/* U+D7FF is fine, U+DFFF (a surrogate) is not, U+E000 is */
	s = (const unsigned char *)"\xed\x9f\xbf";
	CHECK_U64(kvp_markup_utf8_run(s, 3), 3);
	s = (const unsigned char *)"\xed\xbf\xbf";
	CHECK_U64(kvp_markup_utf8_run(s, 3), 0);
	s = (const unsigned char *)"\xee\x80\x80";
	CHECK_U64(kvp_markup_utf8_run(s, 3), 3);
}

static void
test_tags_and_formats(void)
{
	struct cap c;
	char *got, *big;
	size_t i;

	/* program markup is written as is, text escaped */
	cap_open(&c);
	kvp_markup_tag(&c.w, "<b>");
	kvp_markup_textf(&c.w, "%s=%d", "<x>", 42);
	kvp_markup_tagf(&c.w, "</b><i n=\"%d\"/>", 7);
	got = cap_close(&c);
	CHECK_STR(got, "<b>&lt;x&gt;=42</b><i n=\"7\"/>");
	free(got);

	/* formatted text past the 512-byte stack buffer (the heap path),
	 * escaped all along */
	big = malloc(2001);
	for (i = 0; i < 2000; i++)
		big[i] = i % 2 ? '<' : 'a';
	big[2000] = '\0';
	cap_open(&c);
	kvp_markup_textf(&c.w, "[%s]", big);
	kvp_markup_tagf(&c.w, "{%s}", big);
	got = cap_close(&c);
	CHECK(got != NULL);
	if (got != NULL) {
		/* 1000 'a' + 1000 "&lt;" + brackets, then the raw copy */
		CHECK_U64(strlen(got), 2 + 1000 + 4000 + 2 + 2000);
		CHECK(got[0] == '[' && strncmp(got + 1, "a&lt;a&lt;", 10) == 0);
		CHECK(got[1 + 5000] == ']' && got[2 + 5000] == '{');
		CHECK(memcmp(got + 3 + 5000, big, 2000) == 0);
		CHECK(got[strlen(got) - 1] == '}');
	}
	free(got);
	free(big);
}

/* A failed write turns kvp_markup_ok false for good. */
static void
test_sticky_failure(void)
{
	FILE *f = fopen("/dev/null", "r"); /* writes to it fail */
	struct kvp_markup w;

	CHECK(f != NULL);
	if (f == NULL)
		return;
	kvp_markup_init(&w, f);
	CHECK(kvp_markup_ok(&w));
	kvp_markup_tag(&w, ""); /* nothing to write: no failure */
	CHECK(kvp_markup_ok(&w));
	kvp_markup_tag(&w, "<p>");
	fflush(f);
	kvp_markup_tag(&w, "<p>");
	CHECK(!kvp_markup_ok(&w));
	kvp_markup_text(&w, "x", 1, 10);
	kvp_markup_tagf(&w, "%d", 1);
	CHECK(!kvp_markup_ok(&w));
	fclose(f);
}

int
main(void)
{
	test_escapes();
	test_invalid_utf8();
	test_limit();
	test_utf8_run();
	test_tags_and_formats();
	test_sticky_failure();
	return UNIT_DONE();
}
