/* SPDX-License-Identifier: MIT */
/*
 * test_jscan.c — lib/jscan against hand-written cases. Expected values are
 * worked out by hand from RFC 8259 (grammar) and the u64/i64 limits
 * (2^64-1 = 18446744073709551615, -2^63 = -9223372036854775808); byte
 * offsets are counted in the literal strings.
 */
#include <stdlib.h>
#include <string.h>

#include "common/jscan.h"
#include "unit.h"

static struct kvp_jscan
cur(const char *s)
{
	struct kvp_jscan c;

	kvp_jscan_init(&c, s, strlen(s));
	return c;
}

/* 0 when s is exactly one value (whitespace around it allowed) nested at
 * most depth deep. */
static int
one_value(const char *s, int depth, unsigned *flags)
{
	struct kvp_jscan c = cur(s);
	int rc;

	kvp_jscan_ws(&c);
	rc = kvp_jscan_skip(&c, depth) == 0 && kvp_jscan_end(&c) == 0 ? 0 : -1;
	if (flags != NULL)
		*flags = c.flags;
	return rc;
}

static void
test_ws_and_peek(void)
{
	struct kvp_jscan c = cur(" \t\r\n x");

	CHECK(kvp_jscan_peek(&c) == ' ');
	kvp_jscan_ws(&c);
	CHECK_U64(c.i, 5);
	CHECK(kvp_jscan_peek(&c) == 'x');
	CHECK(c.flags == KVP_JSCAN_WS);
	CHECK(kvp_jscan_end(&c) == -1);
	c = cur("x");
	kvp_jscan_ws(&c);
	CHECK(c.flags == 0);
	c.i = 1;
	CHECK(kvp_jscan_peek(&c) == -1);
	CHECK(kvp_jscan_end(&c) == 0);
	/* form feed and vertical tab are not JSON whitespace */
	c = cur("\f1");
	kvp_jscan_ws(&c);
	CHECK_U64(c.i, 0);
}

static void
test_strings(void)
{
	struct kvp_jspan sp;
	struct kvp_jscan c = cur("\"abc\",");

	CHECK(kvp_jscan_string(&c, &sp) == 0);
	CHECK_U64(sp.off, 1);
	CHECK_U64(sp.len, 3);
	CHECK(sp.flags == 0);
	CHECK_U64(c.i, 5);
	c = cur("\"\"");
	CHECK(kvp_jscan_string(&c, &sp) == 0 && sp.len == 0 && c.i == 2);
	/* every escape of RFC 8259 §7 */
	c = cur("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uABCD\"");
	CHECK(kvp_jscan_string(&c, &sp) == 0);
	CHECK(sp.flags == KVP_JSCAN_ESC && c.flags == KVP_JSCAN_ESC);
	CHECK_U64(sp.len, 37);
	c = cur("\"caf\xc3\xa9\"");
	CHECK(kvp_jscan_string(&c, &sp) == 0);
	CHECK(sp.flags == KVP_JSCAN_NONASCII);
	CHECK_U64(sp.len, 5);
	static const char *const bad[] = {
	    "abc",        "\"abc",       "\"a\\\"",  "\"\\x\"",  "\"\\u12g4\"",
	    "\"\\u123\"", "\"\\U0041\"", "\"a\tb\"", "\"a\nb\"", "\"\\",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		c = cur(bad[i]);
		CHECK(kvp_jscan_string(&c, &sp) == -1);
	}
	/* a NUL byte inside a string is a control byte */
	kvp_jscan_init(&c, "\"a\0b\"", 5);
	CHECK(kvp_jscan_string(&c, &sp) == -1);
}

static void
test_ints(void)
{
	struct kvp_jscan c;
	uint64_t v;
	int neg;

	c = cur("0");
	CHECK(kvp_jscan_int(&c, &v, &neg) == 0 && v == 0 && neg == 0);
	c = cur("-0");
	CHECK(kvp_jscan_int(&c, &v, &neg) == 0 && v == 0 && neg == 1);
	c = cur("4294967296,");
	CHECK(kvp_jscan_int(&c, &v, &neg) == 0 && neg == 0);
	CHECK_U64(v, 4294967296ULL);
	CHECK_U64(c.i, 10);
	c = cur("18446744073709551615");
	CHECK(kvp_jscan_int(&c, &v, &neg) == 0);
	CHECK_U64(v, UINT64_MAX);
	CHECK(c.flags == KVP_JSCAN_LONGINT);
	c = cur("18446744073709551616");
	CHECK(kvp_jscan_int(&c, &v, &neg) == -1);
	c = cur("99999999999999999999");
	CHECK(kvp_jscan_int(&c, &v, &neg) == -1);
	c = cur("100000000000000000000");
	CHECK(kvp_jscan_int(&c, &v, &neg) == -1);
	c = cur("-9223372036854775808");
	CHECK(kvp_jscan_int(&c, &v, &neg) == 0 && neg == 1);
	CHECK_U64(v, 0x8000000000000000ULL);
	CHECK(c.flags == KVP_JSCAN_NEG);
	c = cur("-9223372036854775809");
	CHECK(kvp_jscan_int(&c, &v, &neg) == -1);
	c = cur("-1");
	CHECK(kvp_jscan_int(&c, &v, &neg) == 0 && neg == 1);
	CHECK_U64(v, UINT64_MAX);
	/* "01": the integer is 0 and the cursor stops at the '1', where the
	 * enclosing container rejects it */
	c = cur("01");
	CHECK(kvp_jscan_int(&c, &v, &neg) == 0 && v == 0 && c.i == 1);
	static const char *const not_int[] = {"1.5", "1e3", "1E+3", "-",
	                                      "+1",  "a",   "",     "-x"};
	for (size_t i = 0; i < sizeof not_int / sizeof not_int[0]; i++) {
		c = cur(not_int[i]);
		CHECK(kvp_jscan_int(&c, &v, &neg) == -1);
	}
}

static void
test_skip(void)
{
	unsigned f;

	static const char *const good[] = {
	    "0",
	    "-0.5",
	    "1e999",
	    "2.5E-3",
	    "true",
	    "false",
	    "null",
	    "\"x\"",
	    "[]",
	    "{}",
	    " [ 1 , [ ] , { } , \"a\" , null ] ",
	    "{\"a\":{\"b\":[1,2,{\"c\":null}]},\"a\":0}",
	    "12345678901234567890.5",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		CHECK(one_value(good[i], 30, NULL) == 0);
	static const char *const bad[] = {
	    "",           "01",         "1.",        "1e",
	    "1e+",        ".5",         "-.5",       "tru",
	    "nul",        "True",       "[1,]",      "[,1]",
	    "[1 2]",      "{\"a\":1,}", "{\"a\" 1}", "{a:1}",
	    "{1:1}",      "[",          "{\"a\":}",  "[18446744073709551616]",
	    "1 2",        "'a'",        "NaN",       "[1]]",
	    "{\"a\":1}}", "-01",        "0x10",      "[-9223372036854775809]",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK(one_value(bad[i], 30, NULL) == -1);
		if (one_value(bad[i], 30, NULL) != -1)
			fprintf(stderr, "  accepted: %s\n", bad[i]);
	}
	/* depth: "[[1]]" nests two containers */
	CHECK(one_value("[[1]]", 2, NULL) == 0);
	CHECK(one_value("[[1]]", 1, NULL) == -1);
	CHECK(one_value("{\"a\":[{}]}", 3, NULL) == 0);
	CHECK(one_value("{\"a\":[{}]}", 2, NULL) == -1);
	CHECK(one_value("7", 0, NULL) == 0);
	/* flags */
	CHECK(one_value("[1,2]", 30, &f) == 0 && f == 0);
	CHECK(one_value("[1, 2]", 30, &f) == 0 && f == KVP_JSCAN_WS);
	CHECK(one_value("[{}]", 30, &f) == 0 && f == KVP_JSCAN_OBJECT);
	CHECK(one_value("[-1,2e5]", 30, &f) == 0 &&
	      f == (KVP_JSCAN_NEG | KVP_JSCAN_EXP));
	CHECK(one_value("[0.5]", 30, &f) == 0 && f == 0);
	CHECK(one_value("[\"\\n\",\"\xc3\xa9\"]", 30, &f) == 0 &&
	      f == (KVP_JSCAN_ESC | KVP_JSCAN_NONASCII));
	CHECK(one_value("10000000000000000000", 30, &f) == 0 &&
	      f == KVP_JSCAN_LONGINT);
	CHECK(one_value("1234567890123456789", 30, &f) == 0 && f == 0);
}

static void
test_iterators(void)
{
	struct kvp_jscan c = cur("{ \"k\" : 1 , \"lm\":\"v\" }");
	struct kvp_jspan key, sp;
	uint64_t v;
	size_t n = 0;
	int neg;

	CHECK(kvp_jscan_obj_begin(&c) == 0);
	CHECK(kvp_jscan_obj_next(&c, &n, &key) == 1);
	CHECK(key.off == 3 && key.len == 1 && n == 1);
	CHECK_U64(c.i, 8);
	CHECK(kvp_jscan_int(&c, &v, &neg) == 0 && v == 1);
	CHECK(kvp_jscan_obj_next(&c, &n, &key) == 1);
	CHECK(key.off == 13 && key.len == 2 && n == 2);
	CHECK(kvp_jscan_string(&c, &sp) == 0 && sp.off == 18 && sp.len == 1);
	CHECK(kvp_jscan_obj_next(&c, &n, &key) == 0);
	CHECK(kvp_jscan_end(&c) == 0);
	c = cur("[]");
	n = 0;
	CHECK(kvp_jscan_arr_begin(&c) == 0 && kvp_jscan_arr_next(&c, &n) == 0);
	CHECK(n == 0 && c.i == 2);
	c = cur("[1 2]");
	n = 0;
	CHECK(kvp_jscan_arr_begin(&c) == 0 && kvp_jscan_arr_next(&c, &n) == 1);
	CHECK(kvp_jscan_int(&c, &v, &neg) == 0);
	CHECK(kvp_jscan_arr_next(&c, &n) == -1);
	c = cur("x");
	CHECK(kvp_jscan_arr_begin(&c) == -1 && kvp_jscan_obj_begin(&c) == -1);
}

static void
test_arrays(void)
{
	struct kvp_jscan c;
	uint64_t *u = NULL;
	uint32_t *t = NULL;
	size_t cap = 0, tcap = 0, n = 99;
	char big[4096];
	size_t o = 0;

	c = cur("[1, -2 ,3]");
	CHECK(kvp_jscan_u64_array(&c, 1, &u, &cap, &n) == 0);
	CHECK_U64(n, 3);
	CHECK_U64(u[0], 1);
	CHECK_U64(u[1], UINT64_MAX - 1);
	CHECK_U64(u[2], 3);
	CHECK_U64(c.i, 10);
	c = cur("[1, -2 ,3]");
	CHECK(kvp_jscan_u64_array(&c, 0, &u, &cap, &n) == -1);
	c = cur("[ ]");
	CHECK(kvp_jscan_u64_array(&c, 0, &u, &cap, &n) == 0 && n == 0);
	c = cur("[18446744073709551615,0]");
	CHECK(kvp_jscan_u64_array(&c, 0, &u, &cap, &n) == 0 && n == 2);
	CHECK_U64(u[0], UINT64_MAX);
	static const char *const bad[] = {
	    "[1.0]", "[1,[2]]", "[\"1\"]", "[null]", "[1,]", "1", "[1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		c = cur(bad[i]);
		CHECK(kvp_jscan_u64_array(&c, 1, &u, &cap, &n) == -1);
	}
	/* growth past the first 16: [0,1,...,299] */
	big[o++] = '[';
	for (int i = 0; i < 300; i++)
		o += (size_t)snprintf(big + o, sizeof big - o, "%s%d",
		                      i ? "," : "", i);
	big[o++] = ']';
	big[o] = '\0';
	c = cur(big);
	CHECK(kvp_jscan_u64_array(&c, 0, &u, &cap, &n) == 0);
	CHECK_U64(n, 300);
	CHECK(cap >= 300);
	CHECK_U64(u[0] + u[17] + u[299], 0 + 17 + 299);
	c = cur(big);
	CHECK(kvp_jscan_u32_array(&c, &t, &tcap, &n) == 0 && n == 300);
	CHECK_U64(t[299], 299);
	c = cur("[0,4294967295]");
	CHECK(kvp_jscan_u32_array(&c, &t, &tcap, &n) == 0 && n == 2);
	CHECK_U64(t[1], 4294967295U);
	c = cur("[4294967296]");
	CHECK(kvp_jscan_u32_array(&c, &t, &tcap, &n) == -1);
	c = cur("[-0]");
	CHECK(kvp_jscan_u32_array(&c, &t, &tcap, &n) == -1);
	free(u);
	free(t);
}

static void
test_members(void)
{
	struct kvp_jmember m[4];
	struct kvp_jscan c;
	size_t n, close;
	const char *s = "{\"a\":1, \"bb\":[1,2],\"c\":{\"d\":\"e\"}} ";

	c = cur(s);
	CHECK(kvp_jscan_members(&c, m, 4, 30, &n, &close) == 0);
	CHECK_U64(n, 3);
	CHECK(m[0].key == 2 && m[0].klen == 1 && m[0].val == 5 &&
	      m[0].vend == 6);
	CHECK(m[1].key == 9 && m[1].klen == 2 && m[1].val == 13 &&
	      m[1].vend == 18);
	CHECK(m[2].key == 20 && m[2].val == 23 && m[2].vend == 32);
	CHECK_U64(close, 32);
	CHECK(c.flags == (KVP_JSCAN_WS | KVP_JSCAN_OBJECT));
	CHECK(kvp_jscan_find(&c, m, n, "bb") == 1);
	CHECK(kvp_jscan_find(&c, m, n, "b") == -1);
	CHECK(kvp_jscan_find(&c, m, n, "c") == 2);
	c = cur(s);
	CHECK(kvp_jscan_members(&c, m, 2, 30, &n, &close) == -1);
	c = cur(s);
	CHECK(kvp_jscan_members(&c, m, 4, 0, &n, &close) == -1);
	c = cur("  {}  ");
	CHECK(kvp_jscan_members(&c, m, 4, 30, &n, &close) == 0);
	CHECK(n == 0 && close == 3);
	static const char *const bad[] = {
	    "{\"a\":1,\"a\":2}", "{\"\\u0061\":1}", "{} x", "[1]", "",
	    "{\"a\":1",          "{\"a\":01}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		c = cur(bad[i]);
		CHECK(kvp_jscan_members(&c, m, 4, 30, &n, &close) == -1);
	}
	/* non-ASCII keys are fine (compared as bytes), and flagged */
	c = cur("{\"\xc3\xa9\":1,\"e\":2}");
	CHECK(kvp_jscan_members(&c, m, 4, 30, &n, &close) == 0 && n == 2);
	CHECK(c.flags == KVP_JSCAN_NONASCII);
}

/* u64 arrays as traces and hand-written files lay them out: values of
 * every length (0 to 20 digits) between separators with and without
 * spaces and newlines, parsed back to the values they were printed from;
 * then the same arrays made invalid by a leading zero or a fraction. */
static void
test_arrays_random(void)
{
	static const char *const sep[] = {",",   ", ",  " ,",  " , ",
	                                  ",\n", ",  ", "\t,", ", \n "};
	uint64_t *u = NULL, want[24], r = 7;
	size_t cap = 0, n, bad = 0;
	char buf[1024];

	for (int it = 0; it < 20000; it++) {
		size_t m = 0, o = 0, at, len;
		struct kvp_jscan c;
		int how;

		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		m = (r >> 33) % 24;
		o += (size_t)snprintf(buf + o, sizeof buf - o, "[%s",
		                      (r >> 20) % 5 == 0 ? " " : "");
		for (size_t i = 0; i < m; i++) {
			r = r * 6364136223846793005ULL + 1442695040888963407ULL;
			want[i] = (r >> 7) % 7 == 0 ? 0 : r >> (r % 64);
			o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%llu",
			                      i ? sep[(r >> 40) % 8] : "",
			                      (unsigned long long)want[i]);
		}
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s]",
		                      (r >> 50) % 4 == 0 ? " " : "");
		c = cur(buf);
		if (kvp_jscan_u64_array(&c, 0, &u, &cap, &n) != 0 || n != m ||
		    c.i != o || (m > 0 && memcmp(u, want, m * sizeof(*u)) != 0))
			bad++;
		if (m == 0)
			continue;
		/* spoil one element: a leading zero or a fraction after it */
		at = 1 + (r >> 44) % (o - 2);
		while (at < o && (buf[at] < '0' || buf[at] > '9'))
			at++;
		if (at >= o - 1)
			continue;
		how = (int)((r >> 60) & 1);
		while (how && at > 1 && buf[at - 1] >= '0' &&
		       buf[at - 1] <= '9')
			at--; /* the element's first digit */
		len = strlen(buf);
		memmove(buf + at + 2, buf + at, len - at + 1);
		buf[at] = how ? '0' : '.';
		buf[at + 1] = how ? '7' : '5';
		if (!how) { /* "12.5" from "125": a fraction within */
			memmove(buf + at + 1, buf + at + 2, len - at);
		}
		c = cur(buf);
		if (kvp_jscan_u64_array(&c, 0, &u, &cap, &n) != -1)
			bad++;
	}
	CHECK_U64(bad, 0);
	free(u);
}

int
main(void)
{
	test_ws_and_peek();
	test_strings();
	test_ints();
	test_skip();
	test_iterators();
	test_arrays();
	test_arrays_random();
	test_members();
	return UNIT_DONE();
}
