/* SPDX-License-Identifier: MIT */
/* test_jskel.c — skeleton lines (issue 28 item 9): for each line, what a
 * reader gets through kvp_jskel_parse() with every line on the skeleton
 * path (min 0) against json-c's whole tree, the oracle: the same verdict
 * and message, the same array values (u64 and u32 with its conversion
 * check), kept containers whole, others emptied; and the shapes the
 * skeleton must give up on. */
#include <json.h>
#include <stdlib.h>

#include "common/jskel.h"
#include "common/ndjson.h"
#include "unit.h"

static struct json_tokener *tok;
static uint64_t *hv, *ov;
static uint32_t *tv;
static size_t hcap, tcap, ocap;

static void
setup(struct kvp_jskel *s)
{
	static const char *const keep[] = {"kept", NULL};

	kvp_jskel_init(s);
	s->min = 0;
	s->arrays[0] = (struct kvp_jskel_array){
	    .key = "h", .flags = KVP_U64_HASH, .v = &hv, .cap = &hcap};
	s->arrays[1] = (struct kvp_jskel_array){
	    .key = "t", .v32 = &tv, .cap = &tcap, .u32_noun = "id "};
	s->arrays[2] = (struct kvp_jskel_array){
	    .key = "h2", .flags = KVP_U64_HASH, .v = &hv, .cap = &hcap};
	s->n_arrays = 3;
	s->keep = keep;
}

/* The oracle's reading of array key in o: 0 with the values in ov, or -1
 * with d (u32: the conversion check after the u64 read). */
static int
oracle_array(const struct json_object *o, const char *key, int u32, size_t *n,
             struct kvp_diag *d)
{
	struct json_object *a;

	if (!json_object_object_get_ex(o, key, &a))
		return 1;
	if (kvp_json_u64_array(a, u32 ? 0 : KVP_U64_HASH, key, &ov, &ocap, n,
	                       d) != 0)
		return -1;
	for (size_t i = 0; u32 && i < *n; i++)
		if (ov[i] > UINT32_MAX)
			return kvp_diag_set(d, 0,
			                    "%s[%zu]: id %llu does not "
			                    "fit in u32",
			                    key, i, (unsigned long long)ov[i]);
	return 0;
}

/* The skeleton reader's reading of the same array. */
static int
skel_array(struct kvp_jskel *s, const struct json_object *o, const char *key,
           int u32, size_t *n, struct kvp_diag *d)
{
	struct json_object *a;
	const struct kvp_jskel_array *x;

	if (!json_object_object_get_ex(o, key, &a))
		return 1;
	x = kvp_jskel_find(s, a);
	if (!u32)
		return kvp_jskel_u64s(s, a, KVP_U64_HASH, key, &hv, &hcap, n,
		                      d);
	if (x == NULL) /* not read by the scanner: the tree's */
		return oracle_array(o, key, 1, n, d) == 0 ? 2 : -1;
	if (x->failed) {
		*d = x->d;
		return -1;
	}
	*n = x->n;
	return 0;
}

/* Compares one line's two readings; returns whether the skeleton was
 * used (the kept and emptied containers checked). */
static void
same(const char *line)
{
	struct kvp_jskel s;
	struct kvp_diag d1, d2;
	struct json_object *o1, *o2, *v;
	static const char *const keys[] = {"h", "t", "h2"};
	int oom;

	setup(&s);
	kvp_diag_clear(&d1);
	kvp_diag_clear(&d2);
	o1 = kvp_jskel_parse(&s, line, strlen(line), &d1, &oom);
	o2 = kvp_json_parse_object(tok, line, strlen(line), &d2);
	CHECK(!oom);
	CHECK((o1 == NULL) == (o2 == NULL));
	if (o1 == NULL || o2 == NULL) {
		CHECK(strcmp(d1.msg, d2.msg) == 0 && d1.col == d2.col);
		goto out;
	}
	for (size_t k = 0; k < 3; k++) {
		size_t n1 = 0, n2 = 0;
		int u32 = k == 1, r1, r2;

		kvp_diag_clear(&d1);
		kvp_diag_clear(&d2);
		r2 = oracle_array(o2, keys[k], u32, &n2, &d2);
		r1 = skel_array(&s, o1, keys[k], u32, &n1, &d1);
		if (r1 == 2) { /* from the tree: ov holds the values */
			CHECK(r2 == 0);
			continue;
		}
		CHECK(r1 == r2);
		if (r1 == -1)
			CHECK(strcmp(d1.msg, d2.msg) == 0);
		if (r1 == 0 && r2 == 0) {
			CHECK(n1 == n2);
			for (size_t i = 0; i < n1 && i < n2; i++)
				CHECK(u32 ? tv[i] == ov[i] : hv[i] == ov[i]);
		}
	}
	/* kept whole, read the same; others keep their type */
	if (json_object_object_get_ex(o2, "kept", &v))
		CHECK(strcmp(json_object_to_json_string(v),
		             json_object_to_json_string(
		                 json_object_object_get(o1, "kept"))) == 0);
	json_object_object_foreach(o2, k, v2)
	{
		struct json_object *v1 = json_object_object_get(o1, k);

		CHECK(json_object_get_type(v1) == json_object_get_type(v2));
	}
out:
	if (o1 != NULL)
		json_object_put(o1);
	if (o2 != NULL)
		json_object_put(o2);
	kvp_jskel_fini(&s);
}

/* Whether the line's array key came from the scanner (the skeleton path). */
static int
scanned(const char *line, const char *key)
{
	struct kvp_jskel s;
	struct kvp_diag d;
	struct json_object *o, *a;
	int oom, r;

	setup(&s);
	o = kvp_jskel_parse(&s, line, strlen(line), &d, &oom);
	r = o != NULL && json_object_object_get_ex(o, key, &a) &&
	    kvp_jskel_find(&s, a) != NULL;
	if (o != NULL)
		json_object_put(o);
	kvp_jskel_fini(&s);
	return r;
}

int
main(void)
{
	static const char *const lines[] = {
	    "{\"h\":[1,2,18446744073709551615],\"t\":[3,4]}",
	    "{\"h\":[-1,\"0x10\",\"17\"],\"t\":[0,4294967295]}",
	    "{\"t\":[1,4294967296,7]}",
	    "{\"t\":[1,4294967296,\"x\"]}",
	    "{\"t\":[1,-2]}",
	    "{\"t\":[1,null,2]}",
	    "{\"t\":[1,1.5]}",
	    "{\"t\":[1,[2]]}",
	    "{\"t\":[1,{\"a\":1}]}",
	    "{\"h\":[\"zz\"]}",
	    "{\"h\":[true]}",
	    "{\"t\":[]}",
	    "{\"t\":5}",
	    "{\"t\":{\"a\":[1]}}",
	    "{\"t\":[1],\"t\":[2,3]}",
	    "{\"t\":[1],\"t\":7}",
	    "{\"h\":[1],\"h2\":[2,3]}",
	    "{\"kept\":{\"a\":[1,2,{\"b\":null}]},\"x\":[1,2],\"y\":{\"c\":1}}",
	    "{\"x\":[1,[2,[3]]],\"s\":\"caf\\u00e9\",\"n\":-1.5e3}",
	    "{\"t\":[1,2]",
	    "[1,2]",
	    "{\"t\":[1,2]} x",
	    "{\"t\":[1,99999999999999999999999]}",
	    "{\"k\\u0041\":[1],\"t\":[1]}",
	    "{}",
	};

	tok = json_tokener_new();
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
		same(lines[i]);
	/* the scanner reads an array unless the line is short, a key has an
	 * escape, or another array already filled the buffer it shares */
	CHECK(scanned("{\"t\":[1,2]}", "t"));
	CHECK(scanned("{\"h\":[1],\"t\":[2]}", "h"));
	CHECK(!scanned("{\"h\":[1],\"h2\":[2]}", "h2"));
	CHECK(!scanned("{\"k\\u0041\":1,\"t\":[1]}", "t"));
	{
		struct kvp_jskel s;
		struct kvp_diag d;
		struct json_object *o, *a;
		int oom;

		setup(&s);
		s.min = 64;
		o = kvp_jskel_parse(&s, "{\"t\":[1,2]}", 11, &d, &oom);
		CHECK(o != NULL && json_object_object_get_ex(o, "t", &a) &&
		      kvp_jskel_find(&s, a) == NULL &&
		      json_object_array_length(a) == 2);
		if (o != NULL)
			json_object_put(o);
		kvp_jskel_fini(&s);
	}
	json_tokener_free(tok);
	free(hv);
	free(tv);
	free(ov);
	return UNIT_DONE();
}
