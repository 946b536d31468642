/* SPDX-License-Identifier: MIT */
/* test_ndjson.c — line reader, exact u64 reading, writer. Expected values
 * are written by hand from the record conventions (ARCHITECTURE.md). */
#include <json.h>
#include <math.h>
#include <stdlib.h>

#include "common/jsonw.h"
#include "common/ndjson.h"
#include "unit.h"

static FILE *
mem(const char *s, size_t n)
{
	return fmemopen((void *)s, n, "r");
}

static void
test_lines(void)
{
	const char in[] = "a\r\n\nlong-line\nb";
	FILE *f = mem(in, sizeof in - 1);
	struct kvp_lines r;
	char *l;
	size_t n;

	kvp_lines_init(&r, f, 5);
	CHECK(kvp_lines_next(&r, &l, &n) == KVP_LINE_OK);
	CHECK(n == 1 && l[0] == 'a' && r.lineno == 1);
	CHECK(kvp_lines_next(&r, &l, &n) == KVP_LINE_OK);
	CHECK(n == 0 && r.lineno == 2 && kvp_line_is_blank(l, n));
	CHECK(kvp_lines_next(&r, &l, &n) == KVP_LINE_TOO_LONG);
	CHECK(r.lineno == 3);
	CHECK(kvp_lines_next(&r, &l, &n) == KVP_LINE_OK);
	CHECK(n == 1 && l[0] == 'b' && r.lineno == 4);
	CHECK(kvp_lines_next(&r, &l, &n) == KVP_LINE_EOF);
	kvp_lines_fini(&r);
	fclose(f);
}

/* A line far longer than the cap is skipped without growing past it. */
static void
test_long_line_bounded(void)
{
	size_t big = 1 << 20;
	char *in = malloc(big + 4);
	struct kvp_lines r;
	char *l;
	size_t n;

	memset(in, 'x', big);
	memcpy(in + big, "\nok", 3);
	FILE *f = mem(in, big + 3);
	kvp_lines_init(&r, f, 1000);
	CHECK(kvp_lines_next(&r, &l, &n) == KVP_LINE_TOO_LONG);
	CHECK(r.cap < 100000);
	CHECK(kvp_lines_next(&r, &l, &n) == KVP_LINE_OK);
	CHECK(n == 2 && memcmp(l, "ok", 2) == 0 && r.lineno == 2);
	kvp_lines_fini(&r);
	fclose(f);
	free(in);
}

static void
test_u64(void)
{
	struct json_tokener *tok = json_tokener_new();
	struct kvp_diag d;
	const char *line = "{\"a\":18446744073709551615,\"b\":-1,\"c\":"
	                   "\"0xff\",\"d\":1.5,\"e\":\"12x\",\"f\":"
	                   "9223372036854775808}";
	struct json_object *o =
	    kvp_json_parse_object(tok, line, strlen(line), &d);
	uint64_t v = 0;

	CHECK(o != NULL);
	CHECK(kvp_json_req_u64(o, "a", 0, &v, &d) == 0);
	CHECK_U64(v, UINT64_MAX);
	CHECK(kvp_json_req_u64(o, "f", 0, &v, &d) == 0);
	CHECK_U64(v, (uint64_t)1 << 63);
	CHECK(kvp_json_req_u64(o, "b", 0, &v, &d) == -1);
	CHECK(kvp_json_req_u64(o, "b", KVP_U64_HASH, &v, &d) == 0);
	CHECK_U64(v, UINT64_MAX);
	CHECK(kvp_json_req_u64(o, "c", 0, &v, &d) == -1);
	CHECK(kvp_json_req_u64(o, "c", KVP_U64_STRING, &v, &d) == 0);
	CHECK_U64(v, 255);
	CHECK(kvp_json_req_u64(o, "d", KVP_U64_HASH, &v, &d) == -1);
	CHECK(kvp_json_req_u64(o, "e", KVP_U64_HASH, &v, &d) == -1);
	CHECK(kvp_json_req_u64(o, "zz", 0, &v, &d) == -1);
	CHECK_STR(d.msg, "missing key \"zz\"");
	json_object_put(o);

	CHECK(kvp_json_parse_object(tok, "{} x", 4, &d) == NULL);
	CHECK(d.col == 4);
	CHECK(kvp_json_parse_object(tok, "[1]", 3, &d) == NULL);
	/* json-c would saturate these silently */
	CHECK(kvp_json_parse_object(tok, "{\"a\":18446744073709551616}", 26,
	                            &d) == NULL);
	CHECK(d.col == 6);
	CHECK(kvp_json_parse_object(tok, "{\"a\":-9223372036854775809}", 26,
	                            &d) == NULL);
	o = kvp_json_parse_object(tok,
	                          "{\"a\":-9223372036854775808,\"b\":"
	                          "\"99999999999999999999999\",\"c\":"
	                          "1.000000000000000000000001e3,\"d\":"
	                          "018446744073709551615}",
	                          strlen("{\"a\":-9223372036854775808,\"b\":"
	                                 "\"99999999999999999999999\",\"c\":"
	                                 "1.000000000000000000000001e3,\"d\":"
	                                 "018446744073709551615}"),
	                          &d);
	CHECK(o != NULL);
	json_object_put(o);
	CHECK(kvp_json_parse_object(tok, "{\"a\":", 5, &d) == NULL);
	json_tokener_free(tok);
}

static void
test_writer(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct kvp_jw w;
	const uint64_t h[] = {16285693708553954570u, 1};

	kvp_jw_init(&w, f, 0, 0);
	kvp_jw_obj_begin(&w);
	kvp_jw_kv_str(&w, "rec", "x\"\n\xff");
	kvp_jw_key(&w, "h");
	kvp_jw_hash_array(&w, h, 2);
	kvp_jw_kv_double(&w, "ts", 1.5);
	kvp_jw_kv_double(&w, "t2", 3.0);
	kvp_jw_kv_i64(&w, "r", -1);
	kvp_jw_obj_end(&w);
	kvp_jw_end_record(&w);
	w.hash_strings = 1;
	kvp_jw_obj_begin(&w);
	kvp_jw_kv_hash(&w, "h", 16285693708553954570u);
	kvp_jw_obj_end(&w);
	kvp_jw_end_record(&w);
	kvp_jw_fini(&w);
	fclose(f);
	CHECK_STR(buf,
	          "{\"rec\":\"x\\\"\\n\\ufffd\",\"h\":[16285693708553954570,"
	          "1],\"ts\":1.5,\"t2\":3,\"r\":-1}\n"
	          "{\"h\":\"16285693708553954570\"}\n");
	free(buf);
}

/* Issue 15: len 0 with a NULL pointer (msgpack-c's empty string) is an
 * empty string, a key "" or nothing, never pointer arithmetic on NULL. */
static void
test_writer_empty_null(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct kvp_jw w;

	kvp_jw_init(&w, f, 0, 0);
	kvp_jw_obj_begin(&w);
	kvp_jw_keyn(&w, NULL, 0);
	kvp_jw_strn(&w, NULL, 0);
	kvp_jw_raw(&w, NULL, 0);
	kvp_jw_obj_end(&w);
	kvp_jw_end_record(&w);
	kvp_jw_fini(&w);
	fclose(f);
	CHECK_STR(buf, "{\"\":\"\"}\n");
	free(buf);
}

/* kvp_u64_dec against snprintf("%llu") (an independent formatter): every
 * value below 10^6, the powers of ten and their neighbours, and a
 * xorshift sample of all widths. (All of [0, 10^8) was checked once by
 * hand the same way.) */
static int
dec_ok(uint64_t x)
{
	char got[KVP_U64_DEC_ROOM + 8], want[32];
	size_t n = kvp_u64_dec(got, x);
	int m = snprintf(want, sizeof want, "%llu", (unsigned long long)x);

	return (int)n == m && memcmp(got, want, n) == 0;
}

static void
test_u64_dec(void)
{
	uint64_t x, p = 1, s = 88172645463325252ULL;
	int bad = 0, i;

	for (x = 0; x < 1000000; x++)
		bad += !dec_ok(x);
	for (i = 0; i < 20; i++, p *= 10)
		bad += !dec_ok(p) + !dec_ok(p - 1) + !dec_ok(p + 1);
	bad += !dec_ok(UINT64_MAX) + !dec_ok(UINT64_MAX - 1) +
	       !dec_ok(UINT32_MAX) + !dec_ok((uint64_t)UINT32_MAX + 1);
	for (i = 0; i < 1000000; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		bad += !dec_ok(s >> (i % 64));
	}
	CHECK(bad == 0);
}

/* kvp_jw_format_double against glibc's own "%.17g" (the independent
 * reference): dyadic values of every size the fast path takes, its
 * boundaries, and random doubles it hands to printf. */
static int
same_as_printf(double v)
{
	char got[40], want[40];
	size_t n = kvp_jw_format_double(got, v);

	snprintf(want, sizeof want, "%.17g", v);
	if (n == strlen(want) && strcmp(got, want) == 0)
		return 1;
	fprintf(stderr, "format_double: %s, printf %s\n", got, want);
	return 0;
}

static void
test_format_double(void)
{
	static const double edge[] = {13.45703125,
	                              0.5,
	                              -0.5,
	                              1,
	                              3,
	                              -7,
	                              0x1p-13,
	                              0x1p-14,
	                              1e-4,
	                              0x1p52,
	                              0x1p53,
	                              0x1p53 - 1,
	                              1e15,
	                              0.1,
	                              0,
	                              -0.0,
	                              0x1p-30,
	                              1.0 + 0x1p-30,
	                              1.0 + 0x1p-31,
	                              1.0 + 0x1p-19, /* 64-bit digits' last */
	                              1.0 + 0x1p-20, /* 128-bit digits' first */
	                              123456789.5,
	                              99999999.99609375};
	uint64_t s = 42, bad = 0;

	for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
		CHECK(same_as_printf(edge[i]));
	for (int i = 0; i < 200000; i++) {
		uint64_t r = s =
		    s * 6364136223846793005ULL + 1442695040888963407ULL;
		/* m / 2^k with m up to 2^(1..53), k in 0..34 */
		double m = (double)((r >> 11) >> (r % 53));
		double v = ldexp(m, -(int)((r >> 8) % 35));

		if (r & 1)
			v = -v;
		bad += !same_as_printf(v);
		memcpy(&v, &r, sizeof v); /* any bit pattern */
		if (isfinite(v))
			bad += !same_as_printf(v);
	}
	CHECK_U64(bad, 0);
}

int
main(void)
{
	test_lines();
	test_long_line_bounded();
	test_u64();
	test_writer();
	test_writer_empty_null();
	test_u64_dec();
	test_format_double();
	return UNIT_DONE();
}
