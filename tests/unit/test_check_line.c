/* SPDX-License-Identifier: MIT */
/* test_check_line.c — kvp_json_check_line() and kvp_jscan_check() (issue
 * 28 item 9): each verdict by hand, and wherever the scanner rejects a
 * line, the message and column json-c gives it, from json-c itself. */
#include <json.h>
#include <stdlib.h>

#include "common/jscan.h"
#include "common/ndjson.h"
#include "unit.h"

static struct json_tokener *tok;

/* check_line's verdict on s; a -1 must be json-c's own words. */
static int
verdict(const char *s)
{
	struct kvp_diag d1, d2;
	struct json_object *o;
	size_t n = strlen(s);
	int v;

	kvp_diag_clear(&d1);
	kvp_diag_clear(&d2);
	v = kvp_json_check_line(s, n, &d1);
	o = kvp_json_parse_object(tok, s, n, &d2);
	if (v == -1)
		CHECK(o == NULL && strcmp(d1.msg, d2.msg) == 0 &&
		      d1.col == d2.col);
	if (v == 1)
		CHECK(o != NULL);
	if (o != NULL)
		json_object_put(o);
	return v;
}

static int
scan(const char *s, size_t *at)
{
	struct kvp_jscan c;
	int rc;

	kvp_jscan_init(&c, s, strlen(s));
	rc = kvp_jscan_check(&c, 4);
	*at = c.i;
	return rc;
}

static void
test_scan(void)
{
	size_t at;

	CHECK(scan("[1,[2,{\"a\":[]}],\"x\",true,null,-1.5e3]", &at) ==
	          KVP_JSCAN_OK &&
	      at == 37);
	CHECK(scan("{} x", &at) == KVP_JSCAN_OK && at == 2);
	CHECK(scan("[123456789012345678901234]", &at) == KVP_JSCAN_OK);
	CHECK(scan("[1,", &at) == KVP_JSCAN_TRUNC);
	CHECK(scan("[1", &at) == KVP_JSCAN_TRUNC);
	CHECK(scan("{\"a\"", &at) == KVP_JSCAN_TRUNC);
	CHECK(scan("[tr", &at) == KVP_JSCAN_TRUNC);
	CHECK(scan("[\"\\u00", &at) == KVP_JSCAN_TRUNC);
	CHECK(scan("[1.", &at) == KVP_JSCAN_TRUNC);
	CHECK(scan("[-", &at) == KVP_JSCAN_TRUNC);
	CHECK(scan("[1e+", &at) == KVP_JSCAN_TRUNC);
	CHECK(scan("[tx]", &at) == KVP_JSCAN_BAD);
	CHECK(scan("[1,]", &at) == KVP_JSCAN_BAD && at == 3);
	CHECK(scan("[01]", &at) == KVP_JSCAN_BAD);
	CHECK(scan("{1:2}", &at) == KVP_JSCAN_BAD && at == 1);
	CHECK(scan("[\"a\tb\"]", &at) == KVP_JSCAN_BAD);
	CHECK(scan("[\"\\x\"]", &at) == KVP_JSCAN_BAD);
	CHECK(scan("[[[[1]]]]", &at) == KVP_JSCAN_OK);
	CHECK(scan("[[[[[1]]]]]", &at) == KVP_JSCAN_DEEP);
}

static void
test_verdicts(void)
{
	char deep[80];

	CHECK(verdict("{\"a\":[1,2],\"b\":{\"c\":null}}") == 1);
	CHECK(verdict("  {}  ") == 1);
	CHECK(verdict("[1,2,3]") == -1);
	CHECK(verdict(" [1] ") == -1);
	CHECK(verdict("{\"a\":[1,2") == -1);
	CHECK(verdict("{\"a\":\"x") == -1);
	CHECK(verdict("{\"a\":1} x") == -1);
	CHECK(verdict("{}{}") == -1);
	CHECK(verdict("{\"a\":123456789012345678901}") == -1);
	CHECK(verdict("[18446744073709551616]") == -1);
	/* json-c's own: comments, its leniencies, top-level scalars */
	CHECK(verdict("{} /x") == 0);
	CHECK(verdict("{}/* c */") == 0);
	CHECK(verdict("[1,]") == 0);
	CHECK(verdict("[NaN]") == 0);
	CHECK(verdict("{\"a\":01}") == 0);
	CHECK(verdict("1") == 0);
	CHECK(verdict("\"x\"") == 0);
	/* json-c's depth: 32 levels parse, 33 do not */
	memset(deep, '[', 32);
	memset(deep + 32, ']', 32);
	deep[64] = '\0';
	CHECK(verdict(deep) == -1);
	memset(deep, '[', 33);
	memset(deep + 33, ']', 33);
	deep[66] = '\0';
	CHECK(verdict(deep) == 0);
	/* a NUL byte: json-c's message without it */
	{
		struct kvp_diag d;

		CHECK(kvp_json_check_line("{\"a\"\0:1}", 8, &d) == -1 &&
		      d.col == 5);
	}
}

int
main(void)
{
	tok = json_tokener_new();
	test_scan();
	test_verdicts();
	json_tokener_free(tok);
	return UNIT_DONE();
}
