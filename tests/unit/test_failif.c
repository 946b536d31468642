/* SPDX-License-Identifier: MIT */
/*
 * test_failif.c — kv-diff's --fail-if expressions (lib/report/failif.c).
 * The grammar and the error contract are kv-diff(1)'s and failif.h's:
 * "||" binds looser than "&&", parentheses group, values are fields or
 * numbers as strtod reads them, spaces and tabs separate tokens, and a
 * malformed expression or an unknown field fails with d->col the 1-based
 * position of the offending character (the end of the text: its length
 * + 1). Expected truth values are worked out by hand in the comments.
 */
#include <string.h>

#include "kvpipe.h"
#include "report/failif.h"
#include "unit.h"

/* A few of kv-diff's summary fields, one a prefix of another. */
static const char *const fields[] = {"requests", "requests_base",
                                     "hit_rate_delta", "changed", "x1"};
#define NF (sizeof fields / sizeof fields[0])

/* requests = 10, requests_base = 12, hit_rate_delta = -0.01,
 * changed = 3, x1 = 0 */
static const double vals[NF] = {10, 12, -0.01, 3, 0};

/* Compiles src (must succeed) and evaluates it over vals. */
static int
eval(const char *src)
{
	struct kvp_failif e;
	struct kvp_diag d;

	memset(&d, 0, sizeof d);
	if (kvp_failif_compile(&e, src, fields, NF, &d) != KVP_OK) {
		fprintf(stderr, "compile failed: %s: %s (col %ld)\n", src,
		        d.msg, d.col);
		return -1;
	}
	return kvp_failif_eval(&e, vals);
}

/* Compiling src must fail at column col with msg in the message. */
static void
check_error(const char *src, long col, const char *msg, int line)
{
	struct kvp_failif e;
	struct kvp_diag d;
	int rc;

	memset(&d, 0, sizeof d);
	rc = kvp_failif_compile(&e, src, fields, NF, &d);
	CHECK(rc == KVP_BAD);
	if (rc != KVP_BAD || d.col != col || strstr(d.msg, msg) == NULL)
		fprintf(stderr, "  line %d: \"%s\": col %ld msg \"%s\"\n", line,
		        src, d.col, d.msg);
	CHECK(d.col == col);
	CHECK(strstr(d.msg, msg) != NULL);
}

#define CHECK_ERROR(src, col, msg) check_error(src, col, msg, __LINE__)

/* The 1-based column of the first sub in src. */
static long
col_of(const char *src, const char *sub)
{
	return (long)(strstr(src, sub) - src) + 1;
}

static void
test_operators(void)
{
	/* every operator both ways round: 10 vs 12 */
	CHECK(eval("requests < requests_base") == 1);
	CHECK(eval("requests <= requests_base") == 1);
	CHECK(eval("requests > requests_base") == 0);
	CHECK(eval("requests >= requests_base") == 0);
	CHECK(eval("requests == requests_base") == 0);
	CHECK(eval("requests != requests_base") == 1);
	/* at equality: <= >= == hold, < > != do not */
	CHECK(eval("requests <= 10") == 1);
	CHECK(eval("requests >= 10") == 1);
	CHECK(eval("requests == 10") == 1);
	CHECK(eval("requests < 10") == 0);
	CHECK(eval("requests > 10") == 0);
	CHECK(eval("requests != 10") == 0);
	/* numbers on either side, as strtod reads them */
	CHECK(eval("9.5 < requests") == 1);
	CHECK(eval("1e1 == requests") == 1);
	CHECK(eval("hit_rate_delta < -0.005") == 1); /* kv-diff(1) */
	CHECK(eval("hit_rate_delta > -.5") == 1);
	CHECK(eval("+3 == changed") == 1);
	CHECK(eval("0x10 > requests") == 1); /* strtod reads hex: 16 */
	CHECK(eval("1 < 2") == 1);
	/* a field whose name is a prefix of another is not confused */
	CHECK(eval("requests_base == 12") == 1);
	CHECK(eval("requests == 12") == 0);
	/* digits after the first character of a name */
	CHECK(eval("x1 == 0") == 1);
}

static void
test_precedence(void)
{
	/* a || b && c is a || (b && c): 1 || (0 && 0) = 1 */
	CHECK(eval("changed == 3 || requests > 99 && x1 == 1") == 1);
	/* (a || b) && c: (1 || 0) && 0 = 0 */
	CHECK(eval("(changed == 3 || requests > 99) && x1 == 1") == 0);
	/* a && b || c is (a && b) || c: (1 && 0) || 1 = 1 */
	CHECK(eval("changed == 3 && x1 == 1 || requests == 10") == 1);
	/* a && (b || c): 1 && (0 || 0) = 0 */
	CHECK(eval("changed == 3 && (x1 == 1 || requests == 11)") == 0);
	/* chains of one operator */
	CHECK(eval("x1 == 1 || x1 == 2 || x1 == 0") == 1);
	CHECK(eval("x1 == 0 && changed == 3 && requests == 9") == 0);
	/* nested parentheses */
	CHECK(eval("((requests == 10))") == 1);
	CHECK(eval("((x1 == 1) || ((changed < 4) && (requests > 9)))") == 1);
}

static void
test_whitespace(void)
{
	/* no spaces at all, and tabs anywhere */
	CHECK(eval("requests<11&&changed>=3") == 1);
	CHECK(eval("\trequests\t<\t11\t||\tx1==1\t") == 1);
	CHECK(eval("  (  requests  ==  10  )  ") == 1);
}

static void
test_errors(void)
{
	const char *s;

	/* nothing at all: a value was expected at the end */
	CHECK_ERROR("", 1, "expected a field name or a number at the end");
	CHECK_ERROR("   ", 4, "at the end");
	/* an unknown field, named where it starts */
	s = "requests > 1 && bogus < 2";
	CHECK_ERROR(s, col_of(s, "bogus"), "unknown field");
	/* a known field's prefix is not a field */
	CHECK_ERROR("request == 1", 1, "unknown field");
	/* no operator */
	s = "requests 10";
	CHECK_ERROR(s, col_of(s, "10"), "expected a comparison operator");
	CHECK_ERROR("requests", 9, "expected a comparison operator");
	/* "=" alone and "=<" are not operators */
	s = "requests = 10";
	CHECK_ERROR(s, col_of(s, "="), "comparison operator");
	s = "requests =< 10";
	CHECK_ERROR(s, col_of(s, "=<"), "comparison operator");
	/* no right-hand value */
	CHECK_ERROR("requests <", 11, "expected a field name or a number");
	s = "requests < )";
	CHECK_ERROR(s, col_of(s, ")"), "expected a field name or a number");
	/* a sign without digits */
	s = "requests < -";
	CHECK_ERROR(s, col_of(s, "-"), "expected a number");
	/* an unclosed parenthesis: at the end */
	s = "(requests < 1";
	CHECK_ERROR(s, (long)strlen(s) + 1, "expected ')' at the end");
	/* trailing text after a whole expression */
	s = "requests < 1 )";
	CHECK_ERROR(s, col_of(s, ")"), "expected '&&', '||' or the end");
	s = "requests < 1 requests";
	CHECK_ERROR(s, 14, "expected '&&', '||' or the end");
	/* a dangling operator */
	s = "requests < 1 &&";
	CHECK_ERROR(s, (long)strlen(s) + 1, "at the end");
	s = "requests < 1 || || x1 == 0";
	CHECK_ERROR(s, 17, "expected a field name or a number");
	/* single & and | are not operators */
	s = "requests < 1 & x1 == 0";
	CHECK_ERROR(s, col_of(s, "&"), "expected '&&', '||' or the end");
	/* a comparison is not a value: a < b < c does not parse */
	s = "1 < 2 < 3";
	CHECK_ERROR(s, 7, "expected '&&', '||' or the end");
	/* the message quotes the text at the offending position */
	s = "requests ? 1";
	CHECK_ERROR(s, col_of(s, "?"), "at '? 1'");
}

/* The node array is bounded: KVP_FAILIF_MAX_NODES nodes, then "expression
 * too long". Each "x1 == 0" takes 3 nodes (two values, the comparison),
 * each "||" one more: k terms take 4k - 1 nodes. */
static void
test_too_long(void)
{
	char buf[4096];
	size_t len = 0;
	int k, kmax = (KVP_FAILIF_MAX_NODES + 1) / 4; /* 4k - 1 <= 64 */
	struct kvp_failif e;
	struct kvp_diag d;

	for (k = 0; k < kmax; k++)
		len += (size_t)snprintf(buf + len, sizeof buf - len,
		                        "%sx1 == %d", k ? " || " : "", k);
	CHECK(kvp_failif_compile(&e, buf, fields, NF, &d) == KVP_OK);
	CHECK(e.count == 4 * kmax - 1);
	CHECK(kvp_failif_eval(&e, vals) == 1); /* x1 == 0 is the first */
	/* one term more does not fit */
	snprintf(buf + len, sizeof buf - len, " || x1 == %d", k);
	memset(&d, 0, sizeof d);
	CHECK(kvp_failif_compile(&e, buf, fields, NF, &d) == KVP_BAD);
	CHECK(strstr(d.msg, "expression too long") != NULL);
	CHECK(d.col > 0 && (size_t)d.col <= strlen(buf) + 1);
}

/* A compiled expression is evaluated again with other values. */
static void
test_reuse(void)
{
	struct kvp_failif e;
	struct kvp_diag d;
	double v[NF] = {0};

	CHECK(kvp_failif_compile(&e, "hit_rate_delta < -0.005 || changed > 2",
	                         fields, NF, &d) == KVP_OK);
	CHECK(kvp_failif_eval(&e, v) == 0); /* 0 < -0.005 no, 0 > 2 no */
	v[2] = -0.006;
	CHECK(kvp_failif_eval(&e, v) == 1);
	v[2] = -0.005; /* not strictly below */
	CHECK(kvp_failif_eval(&e, v) == 0);
	v[3] = 3;
	CHECK(kvp_failif_eval(&e, v) == 1);
	/* a failed compile after a good one: the struct is reset */
	CHECK(kvp_failif_compile(&e, "nope < 1", fields, NF, &d) == KVP_BAD);
	CHECK(kvp_failif_compile(&e, "changed == 3", fields, NF, &d) == KVP_OK);
	CHECK(kvp_failif_eval(&e, v) == 1);
	/* no fields at all: numbers only */
	CHECK(kvp_failif_compile(&e, "1 == 1", NULL, 0, &d) == KVP_OK);
	CHECK(kvp_failif_eval(&e, v) == 1);
	CHECK(kvp_failif_compile(&e, "a == 1", NULL, 0, &d) == KVP_BAD);
}

int
main(void)
{
	test_operators();
	test_precedence();
	test_whitespace();
	test_errors();
	test_too_long();
	test_reuse();
	return UNIT_DONE();
}
