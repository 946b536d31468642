/* SPDX-License-Identifier: MIT */
/*
 * test_diff.c — kv-diff's model (lib/report/diff.c): pairing by request
 * id, what changed, the one-stream-only records and the summary. The
 * rules are kv-diff(1)'s and diff.h's: the k-th NEW decision with an id
 * pairs with the first unpaired BASE one with the same JSON text; an
 * id-less decision is keyed by its 1-based position among its stream's
 * decisions; a pair differs in worker (chosen, worker_id, dp_rank),
 * overlap or rejection; hit rate = sum(overlap) / sum(request_blocks);
 * balance = busiest worker's routed count over the mean, the workers
 * being every chosen one plus a summary's workers; deltas are NEW - BASE.
 * The scenario's totals are worked out by hand below; written records
 * are read back with json-c and compared key by key with the shapes in
 * kv-diff(1).
 */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonw.h"
#include "kvpipe.h"
#include "report/diff.h"
#include "unit.h"

/* A decision: id is its JSON text (NULL: none); wid < 0: chosen null. */
static struct kvp_decision_rec
dec(const char *id, long wid, uint64_t dp, uint64_t overlap, uint64_t rb,
    uint64_t lost)
{
	struct kvp_decision_rec d;

	memset(&d, 0, sizeof d);
	d.kind = KVP_DECISION_DECISION;
	if (id != NULL)
		d.id = (struct kvp_decision_span){id, strlen(id)};
	d.chosen = wid >= 0;
	d.rejected = wid < 0;
	d.worker_id = wid >= 0 ? (uint64_t)wid : 0;
	d.dp_rank = dp;
	d.overlap = overlap;
	d.request_blocks = rb;
	d.blocks_lost = lost;
	return d;
}

static struct kvp_decision_rec
summary(struct kvp_decision_cand *w, size_t n)
{
	struct kvp_decision_rec d;

	memset(&d, 0, sizeof d);
	d.kind = KVP_DECISION_SUMMARY;
	d.cand = w;
	d.n_cand = n;
	return d;
}

static double
field(const double *v, const char *name)
{
	for (int k = 0; k < KVP_DIFF_N_FIELDS; k++)
		if (strcmp(kvp_diff_fields[k], name) == 0)
			return v[k];
	fprintf(stderr, "no field %s\n", name);
	return NAN;
}

#define CHECK_NEAR(got, want) CHECK(fabs((got) - (want)) < 1e-12)

/* json-c's reading of s[0, n) (the writer's buffer has no NUL). */
static struct json_object *
parse_n(const char *s, size_t n)
{
	struct json_tokener *t = json_tokener_new();
	struct json_object *o = json_tokener_parse_ex(t, s, (int)n);

	if (o == NULL)
		fprintf(stderr, "unparsable: %.*s\n", (int)n, s);
	json_tokener_free(t);
	return o;
}

/* The record kvp_diff_write_rec writes (ndjson), parsed. */
static struct json_object *
rec_json(const struct kvp_diff_rec *r)
{
	struct kvp_jw w;
	const char *s;
	size_t n;
	struct json_object *o;

	kvp_jw_init(&w, NULL, 0, 0);
	kvp_diff_write_rec(&w, r, 0, 0);
	s = kvp_jw_pending(&w, &n);
	o = parse_n(s, n);
	kvp_jw_fini(&w);
	return o;
}

/* One side of a record as kv-diff(1) gives it:
 * {"chosen":{"worker_id","dp_rank"}|null,"overlap_blocks","rejected"}. */
static int
side_is(struct json_object *o, const char *key, long wid, uint64_t dp,
        uint64_t overlap, int rejected)
{
	struct json_object *s, *c, *v;

	if (!json_object_object_get_ex(o, key, &s) ||
	    json_object_object_length(s) != 3 ||
	    !json_object_object_get_ex(s, "chosen", &c))
		return 0;
	if (wid < 0) {
		if (c != NULL)
			return 0;
	} else if (c == NULL || json_object_object_length(c) != 2 ||
	           !json_object_object_get_ex(c, "worker_id", &v) ||
	           json_object_get_uint64(v) != (uint64_t)wid ||
	           !json_object_object_get_ex(c, "dp_rank", &v) ||
	           json_object_get_uint64(v) != dp) {
		return 0;
	}
	return json_object_object_get_ex(s, "overlap_blocks", &v) &&
	       json_object_get_uint64(v) == overlap &&
	       json_object_object_get_ex(s, "rejected", &v) &&
	       json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v) == rejected;
}

static int
str_is(struct json_object *o, const char *key, const char *want)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) &&
	       json_object_is_type(v, json_type_string) &&
	       strcmp(json_object_get_string(v), want) == 0;
}

static int
changes_are(struct json_object *o, const char *const *want, size_t n)
{
	struct json_object *a;

	if (!json_object_object_get_ex(o, "changes", &a) ||
	    json_object_array_length(a) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(
		        json_object_get_string(json_object_array_get_idx(a, i)),
		        want[i]) != 0)
			return 0;
	return 1;
}

/*
 * BASE                                   NEW
 * b1 "a" w1.0 ov 4 rb 10                 n1 "b" w2.0 ov 2 rb 10   = b2
 * b2 "b" w2.0 ov 2 rb 10 lost 1          n2 "a" w1.0 ov 4 rb 10   = b1
 * b3 "c" rejected ov 0 rb 5              n3 "a" w2.0 ov 1 rb 5    b5: worker
 * b4 "d" w1.0 ov 3 rb 5                  n4 "c" w1.0 ov 0 rb 5    b3: worker,
 * b5 "a" w1.0 ov 1 rb 5                                           rejected
 * b6 "f" w2.0 ov 1 rb 4 lost 2           n5 "e" w1.0 ov 5 rb 5    only new
 * summary workers w1.0, w3.0             n6 "d" w1.1 ov 0 rb 5    b4: worker,
 *                                                                 overlap
 *                                        summary workers w9.0
 * BASE: 6 decisions, 1 rejected, overlap 11, request blocks 39, lost 3;
 * routed w1.0 3 (b1 b4 b5), w2.0 2 (b2 b6), w3.0 0: balance 3 / (5/3)
 * = 1.8. NEW: 6 decisions, 0 rejected, overlap 12, request blocks 40,
 * lost 0; routed w1.0 3 (n2 n4 n5), w2.0 2, w1.1 1, w9.0 0: balance
 * 3 / (6/4) = 2. Pairs: 5 (n1 n2 n3 n4 n6), changed worker 3 (n3 n4
 * n6), overlap 1 (n6), rejection 1 (n4), differing 3; only new 1 (n5),
 * only base 1 (b6).
 */
static void
test_scenario(void)
{
	struct kvp_decision_cand bw[2] = {{1, 0, 7}, {3, 0, 0}},
	                         nw[1] = {{9, 0, 0}};
	struct kvp_decision_rec base[7], newd[7], other;
	struct kvp_diff df;
	struct kvp_diff_rec rec;
	double v[KVP_DIFF_N_FIELDS];
	struct json_object *o;
	int emit, k;

	base[0] = dec("\"a\"", 1, 0, 4, 10, 0);
	base[1] = dec("\"b\"", 2, 0, 2, 10, 1);
	base[2] = dec("\"c\"", -1, 0, 0, 5, 0);
	base[3] = dec("\"d\"", 1, 0, 3, 5, 0);
	base[4] = dec("\"a\"", 1, 0, 1, 5, 0);
	base[5] = dec("\"f\"", 2, 0, 1, 4, 2);
	base[6] = summary(bw, 2);
	newd[0] = dec("\"b\"", 2, 0, 2, 10, 0);
	newd[1] = dec("\"a\"", 1, 0, 4, 10, 0);
	newd[2] = dec("\"a\"", 2, 0, 1, 5, 0);
	newd[3] = dec("\"c\"", 1, 0, 0, 5, 0);
	newd[4] = dec("\"e\"", 1, 0, 5, 5, 0);
	newd[5] = dec("\"d\"", 1, 1, 0, 5, 0);
	newd[6] = summary(nw, 1);
	memset(&other, 0, sizeof other);
	other.kind = KVP_DECISION_OTHER;
	other.overlap = 1000; /* ignored */

	kvp_diff_init(&df);
	for (k = 0; k < 7; k++)
		CHECK(kvp_diff_add_base(&df, &base[k]) == KVP_OK);
	CHECK(kvp_diff_add_base(&df, &other) == KVP_OK);
	CHECK(kvp_diff_add_new(&df, &other, &rec, &emit) == KVP_OK);
	CHECK(emit == 0);

	/* n1, n2: unchanged (blocks_lost is not compared) */
	CHECK(kvp_diff_add_new(&df, &newd[0], &rec, &emit) == KVP_OK);
	CHECK(emit == 0);
	CHECK(kvp_diff_add_new(&df, &newd[1], &rec, &emit) == KVP_OK);
	CHECK(emit == 0);
	/* n3: the second "a" pairs with b5, not b1 again */
	CHECK(kvp_diff_add_new(&df, &newd[2], &rec, &emit) == KVP_OK);
	CHECK(emit == 1 && rec.changes == KVP_DIFF_WORKER && rec.only == NULL);
	CHECK(rec.base.overlap == 1 && rec.base.worker_id == 1);
	o = rec_json(&rec);
	{
		static const char *const ch[] = {"worker"};

		CHECK(o != NULL && json_object_object_length(o) == 5);
		CHECK(str_is(o, "rec", "diff"));
		CHECK(str_is(o, "request_id", "a"));
		CHECK(changes_are(o, ch, 1));
		CHECK(side_is(o, "base", 1, 0, 1, 0));
		CHECK(side_is(o, "new", 2, 0, 1, 0));
	}
	json_object_put(o);
	/* n4: b3 was rejected */
	CHECK(kvp_diff_add_new(&df, &newd[3], &rec, &emit) == KVP_OK);
	CHECK(emit == 1 &&
	      rec.changes == (KVP_DIFF_WORKER | KVP_DIFF_REJECTED));
	o = rec_json(&rec);
	{
		static const char *const ch[] = {"worker", "rejected"};

		CHECK(changes_are(o, ch, 2));
		CHECK(side_is(o, "base", -1, 0, 0, 1));
		CHECK(side_is(o, "new", 1, 0, 0, 0));
	}
	json_object_put(o);
	/* n5: only in NEW */
	CHECK(kvp_diff_add_new(&df, &newd[4], &rec, &emit) == KVP_OK);
	CHECK(emit == 1 && rec.only != NULL && strcmp(rec.only, "new") == 0);
	o = rec_json(&rec);
	CHECK(o != NULL && json_object_object_length(o) == 4);
	CHECK(str_is(o, "rec", "only") && str_is(o, "stream", "new"));
	CHECK(str_is(o, "request_id", "e"));
	CHECK(side_is(o, "new", 1, 0, 5, 0));
	json_object_put(o);
	/* n6: another rank of the same worker is another worker */
	CHECK(kvp_diff_add_new(&df, &newd[5], &rec, &emit) == KVP_OK);
	CHECK(emit == 1 && rec.changes == (KVP_DIFF_WORKER | KVP_DIFF_OVERLAP));
	o = rec_json(&rec);
	{
		static const char *const ch[] = {"worker", "overlap"};

		CHECK(changes_are(o, ch, 2));
		CHECK(side_is(o, "base", 1, 0, 3, 0));
		CHECK(side_is(o, "new", 1, 1, 0, 0));
	}
	json_object_put(o);
	CHECK(kvp_diff_add_new(&df, &newd[6], &rec, &emit) == KVP_OK);
	CHECK(emit == 0);

	/* then b6, never paired; then no more */
	CHECK(kvp_diff_next_only_base(&df, &rec) == 1);
	CHECK(rec.only != NULL && strcmp(rec.only, "base") == 0);
	CHECK(rec.id != NULL && rec.id_len == 3 &&
	      memcmp(rec.id, "\"f\"", 3) == 0);
	o = rec_json(&rec);
	CHECK(str_is(o, "rec", "only") && str_is(o, "stream", "base"));
	CHECK(side_is(o, "base", 2, 0, 1, 0));
	json_object_put(o);
	CHECK(kvp_diff_next_only_base(&df, &rec) == 0);
	CHECK(kvp_diff_next_only_base(&df, &rec) == 0);

	kvp_diff_summary(&df, v);
	CHECK(field(v, "requests") == 5);
	CHECK(field(v, "changed") == 3);
	CHECK_NEAR(field(v, "changed_fraction"), 3.0 / 5);
	CHECK_NEAR(field(v, "hit_rate_base"), 11.0 / 39);
	CHECK_NEAR(field(v, "hit_rate_new"), 12.0 / 40);
	CHECK_NEAR(field(v, "hit_rate_delta"), 12.0 / 40 - 11.0 / 39);
	CHECK(field(v, "rejected_delta") == -1);
	CHECK(field(v, "lost_overlap_delta") == -3);
	CHECK_NEAR(field(v, "balance_delta"), 2.0 - 1.8);
	CHECK(field(v, "differing") == 3);
	CHECK(field(v, "overlap_changed") == 1);
	CHECK(field(v, "rejection_changed") == 1);
	CHECK(field(v, "only_base") == 1);
	CHECK(field(v, "only_new") == 1);
	CHECK(field(v, "requests_base") == 6);
	CHECK(field(v, "requests_new") == 6);
	CHECK(field(v, "rejected_base") == 1);
	CHECK(field(v, "rejected_new") == 0);
	CHECK(field(v, "lost_overlap_base") == 3);
	CHECK(field(v, "lost_overlap_new") == 0);
	CHECK_NEAR(field(v, "balance_base"), 1.8);
	CHECK_NEAR(field(v, "balance_new"), 2.0);

	/* the summary record: every field once, in kv-diff(1)'s order,
	 * counts as integers */
	{
		struct kvp_jw w;
		const char *s;
		size_t n;
		int i = 0;

		kvp_jw_init(&w, NULL, 0, 0);
		kvp_diff_write_summary(&w, v, 0, 0);
		s = kvp_jw_pending(&w, &n);
		o = parse_n(s, n);
		CHECK(o != NULL);
		/* no cache truth figures: its fields are left out */
		CHECK(json_object_object_length(o) ==
		      KVP_DIFF_N_BASE_FIELDS + 1);
		CHECK(str_is(o, "rec", "summary"));
		json_object_object_foreach(o, key, val)
		{
			if (i > 0) {
				CHECK_STR(key, kvp_diff_fields[i - 1]);
				CHECK_NEAR(json_object_get_double(val),
				           v[i - 1]);
			}
			i++;
		}
		CHECK(json_object_is_type(json_object_object_get(o, "requests"),
		                          json_type_int));
		CHECK(json_object_is_type(
		    json_object_object_get(o, "rejected_delta"),
		    json_type_int));
		CHECK(json_object_get_int(
		          json_object_object_get(o, "rejected_delta")) == -1);
		CHECK(json_object_is_type(
		    json_object_object_get(o, "hit_rate_new"),
		    json_type_double));
		json_object_put(o);
		kvp_jw_fini(&w);
	}
	kvp_diff_fini(&df);
}

/* kv-diff(1)'s summary keys, in its order. */
static void
test_field_names(void)
{
	static const char *const man[KVP_DIFF_N_FIELDS] = {
	    "requests", "changed", "changed_fraction", "hit_rate_base",
	    "hit_rate_new", "hit_rate_delta", "rejected_delta",
	    "lost_overlap_delta", "balance_delta", "differing",
	    "overlap_changed", "rejection_changed", "only_base", "only_new",
	    "requests_base", "requests_new", "rejected_base", "rejected_new",
	    "lost_overlap_base", "lost_overlap_new", "balance_base",
	    "balance_new", "cache_truth_requests_base",
	    "cache_truth_requests_new", "cache_truth_exact_fraction_base",
	    "cache_truth_exact_fraction_new",
	    "cache_truth_exact_fraction_delta",
	    "cache_truth_mean_abs_error_base", "cache_truth_mean_abs_error_new",
	    "cache_truth_mean_abs_error_delta",
	    /* --classify's (issue 30) */
	    "index_diverged", "load_diverged", "knob_changed",
	    /* a Dynamo replay row's reuse (issue 30, kv-diff(1)) */
	    "reuse_requests", "reuse_exact_fraction", "reuse_mean_abs_tokens",
	    "reuse_tokens_delta"};

	for (int k = 0; k < KVP_DIFF_N_FIELDS; k++)
		CHECK_STR(kvp_diff_fields[k], man[k]);
}

/* Id-less decisions are keyed by position among all the stream's
 * decisions: BASE keys "x", #2, #3; NEW keys #1, "x", #3. So NEW #1 is
 * only in NEW, "x" and #3 pair, BASE #2 is only in BASE (with "index"
 * instead of "request_id"). */
static void
test_positions(void)
{
	struct kvp_decision_rec b[3], n[3];
	struct kvp_diff df;
	struct kvp_diff_rec rec;
	struct json_object *o, *v;
	double vals[KVP_DIFF_N_FIELDS];
	int emit;

	b[0] = dec("\"x\"", 1, 0, 1, 1, 0);
	b[1] = dec(NULL, 1, 0, 1, 1, 0);
	b[2] = dec(NULL, 1, 0, 1, 1, 0);
	n[0] = dec(NULL, 1, 0, 1, 1, 0);
	n[1] = dec("\"x\"", 1, 0, 1, 1, 0);
	n[2] = dec(NULL, 1, 0, 2, 1, 0);
	kvp_diff_init(&df);
	for (int k = 0; k < 3; k++)
		CHECK(kvp_diff_add_base(&df, &b[k]) == KVP_OK);
	CHECK(kvp_diff_add_new(&df, &n[0], &rec, &emit) == KVP_OK);
	CHECK(emit == 1 && rec.only != NULL && rec.id == NULL &&
	      rec.index == 1);
	o = rec_json(&rec);
	CHECK(o != NULL && json_object_object_get_ex(o, "index", &v) &&
	      json_object_get_int(v) == 1);
	CHECK(!json_object_object_get_ex(o, "request_id", &v));
	json_object_put(o);
	CHECK(kvp_diff_add_new(&df, &n[1], &rec, &emit) == KVP_OK);
	CHECK(emit == 0);
	CHECK(kvp_diff_add_new(&df, &n[2], &rec, &emit) == KVP_OK);
	CHECK(emit == 1 && rec.changes == KVP_DIFF_OVERLAP && rec.id == NULL &&
	      rec.index == 3);
	CHECK(kvp_diff_next_only_base(&df, &rec) == 1);
	CHECK(rec.id == NULL && rec.index == 2);
	CHECK(kvp_diff_next_only_base(&df, &rec) == 0);
	kvp_diff_summary(&df, vals);
	CHECK(field(vals, "requests") == 2 && field(vals, "only_base") == 1 &&
	      field(vals, "only_new") == 1);
	kvp_diff_fini(&df);
}

/* Ids are compared by JSON text: "1" the number and "\"1\"" the string
 * differ; u64 worker ids above 2^63 are written exactly. */
static void
test_ids_and_big_workers(void)
{
	struct kvp_decision_rec b = dec("1", 1, 0, 0, 1, 0);
	struct kvp_decision_rec n = dec("\"1\"", 1, 0, 0, 1, 0);
	struct kvp_decision_rec nb = dec("1", 1, 0, 0, 1, 0);
	struct kvp_diff df;
	struct kvp_diff_rec rec;
	struct json_object *o;
	int emit;

	b.worker_id = UINT64_MAX;
	nb.worker_id = (1ull << 63) + 5;
	kvp_diff_init(&df);
	CHECK(kvp_diff_add_base(&df, &b) == KVP_OK);
	CHECK(kvp_diff_add_new(&df, &n, &rec, &emit) == KVP_OK);
	CHECK(emit == 1 && rec.only != NULL); /* "\"1\"" is not 1 */
	CHECK(kvp_diff_add_new(&df, &nb, &rec, &emit) == KVP_OK);
	CHECK(emit == 1 && rec.changes == KVP_DIFF_WORKER);
	o = rec_json(&rec);
	{
		struct json_object *s, *c, *v;

		CHECK(json_object_object_get_ex(o, "base", &s) &&
		      json_object_object_get_ex(s, "chosen", &c) &&
		      json_object_object_get_ex(c, "worker_id", &v) &&
		      json_object_get_uint64(v) == UINT64_MAX);
		CHECK(json_object_object_get_ex(o, "new", &s) &&
		      json_object_object_get_ex(s, "chosen", &c) &&
		      json_object_object_get_ex(c, "worker_id", &v) &&
		      json_object_get_uint64(v) == (1ull << 63) + 5);
	}
	/* the id is written as its JSON text: a number stays a number */
	{
		struct json_object *v;

		CHECK(json_object_object_get_ex(o, "request_id", &v) &&
		      json_object_is_type(v, json_type_int) &&
		      json_object_get_int(v) == 1);
	}
	json_object_put(o);
	kvp_diff_fini(&df);
}

/* Thousands of BASE decisions (the hash table grows), paired in reverse
 * order: every one pairs, nothing is emitted. */
static void
test_many(void)
{
	enum { N = 5000 };
	static char ids[N][16];
	struct kvp_diff df;
	struct kvp_diff_rec rec;
	double v[KVP_DIFF_N_FIELDS];
	int emit, k, emitted = 0, bad = 0;

	kvp_diff_init(&df);
	for (k = 0; k < N; k++) {
		struct kvp_decision_rec d;

		snprintf(ids[k], sizeof ids[k], "\"r%d\"", k);
		d = dec(ids[k], k % 7, 0, (uint64_t)k % 5, 5, 0);
		bad += kvp_diff_add_base(&df, &d) != KVP_OK;
	}
	for (k = N; k-- > 0;) {
		struct kvp_decision_rec d =
		    dec(ids[k], k % 7, 0, (uint64_t)k % 5, 5, 0);

		bad += kvp_diff_add_new(&df, &d, &rec, &emit) != KVP_OK;
		emitted += emit;
	}
	CHECK(bad == 0);
	CHECK(emitted == 0);
	CHECK(kvp_diff_next_only_base(&df, &rec) == 0);
	kvp_diff_summary(&df, v);
	CHECK(field(v, "requests") == N);
	CHECK(field(v, "changed") == 0 && field(v, "differing") == 0);
	CHECK(field(v, "hit_rate_delta") == 0 &&
	      field(v, "balance_delta") == 0);
	kvp_diff_fini(&df);
}

/* Empty streams: every ratio is 0, not NaN. */
static void
test_empty(void)
{
	struct kvp_diff df;
	double v[KVP_DIFF_N_FIELDS];

	kvp_diff_init(&df);
	kvp_diff_summary(&df, v);
	for (int k = 0; k < KVP_DIFF_N_FIELDS; k++)
		CHECK(v[k] == 0);
	kvp_diff_fini(&df);
}

/* The writer's pending text, NUL-terminated (a static copy). */
static const char *
pending(const struct kvp_jw *w, size_t *n)
{
	static char buf[4096];
	const char *s = kvp_jw_pending(w, n);

	if (*n >= sizeof buf)
		*n = sizeof buf - 1;
	memcpy(buf, s, *n);
	buf[*n] = '\0';
	return buf;
}

/* The text format: a header, one row per record, the summary table. */
static void
test_text(void)
{
	struct kvp_jw w;
	struct kvp_diff_rec r;
	const char *s;
	size_t n;
	double v[KVP_DIFF_N_FIELDS] = {0};

	kvp_jw_init(&w, NULL, 0, 0);
	kvp_diff_write_header(&w);
	s = pending(&w, &n);
	CHECK(n > 0 && strncmp(s, "request ", 8) == 0 && s[n - 1] == '\n');
	CHECK(strstr(s, "base") != NULL && strstr(s, "changes") != NULL);
	kvp_jw_discard(&w);

	memset(&r, 0, sizeof r);
	r.id = "\"q\"";
	r.id_len = 3;
	r.changes = KVP_DIFF_WORKER | KVP_DIFF_REJECTED;
	r.base = (struct kvp_diff_choice){
	    .chosen = 1, .worker_id = 4, .dp_rank = 2, .overlap = 7};
	r.new = (struct kvp_diff_choice){.rejected = 1};
	kvp_diff_write_rec(&w, &r, 1, 0);
	s = pending(&w, &n);
	CHECK(n > 0 && strncmp(s, "\"q\"", 3) == 0 && s[n - 1] == '\n');
	CHECK(strstr(s, "4.2") != NULL && strstr(s, "rejected") != NULL);
	CHECK(strstr(s, " worker rejected\n") != NULL);
	CHECK(strstr(s, "overlap\n") == NULL);
	kvp_jw_discard(&w);

	r.id = NULL;
	r.index = 12;
	r.only = "new";
	kvp_diff_write_rec(&w, &r, 1, 0);
	s = pending(&w, &n);
	CHECK(n > 0 && strncmp(s, "#12 ", 4) == 0);
	CHECK(strstr(s, "only in new\n") != NULL);
	kvp_jw_discard(&w);

	v[0] = 5;   /* requests: a count, no decimals */
	v[2] = 0.5; /* changed_fraction: six decimals */
	kvp_diff_write_summary(&w, v, 1, 0);
	s = pending(&w, &n);
	CHECK(strstr(s, "\nsummary\n") == s);
	CHECK(strstr(s, "requests") != NULL && strstr(s, " 5\n") != NULL);
	CHECK(strstr(s, " 0.500000\n") != NULL);
	kvp_jw_discard(&w);
	kvp_jw_fini(&w);
}

/* Cache truth (route-score --engine-model): BASE predicts 16 for a
 * reported 16 and 0 for a reported 12 (1 of 2 exact: 0.5; mean |error|
 * (0 + 12) / 2 = 6); NEW predicts 16/16 and 12/12 (1.0, 0); a decision
 * without the engine's figure is not counted. Deltas NEW - BASE: 0.5 and
 * -6. The summary record then has every field. */
static void
test_truth(void)
{
	struct kvp_decision_rec b[3], n[3];
	struct kvp_diff df;
	struct kvp_diff_rec rec;
	double v[KVP_DIFF_N_FIELDS];
	uint64_t pb[3] = {16, 0, 4}, eb[3] = {16, 12, 0};
	uint64_t pn[3] = {16, 12, 4}, en[3] = {16, 12, 0};
	const char *ids[3] = {"\"a\"", "\"b\"", "\"c\""};
	int emit;

	kvp_diff_init(&df);
	for (int i = 0; i < 3; i++) {
		b[i] = dec(ids[i], 0, 0, 1, 4, 0);
		n[i] = dec(ids[i], 0, 0, 1, 4, 0);
		b[i].has_pred = n[i].has_pred = 1;
		b[i].pred = pb[i];
		n[i].pred = pn[i];
		b[i].has_engine = n[i].has_engine = i < 2;
		b[i].engine = eb[i];
		n[i].engine = en[i];
		CHECK(kvp_diff_add_base(&df, &b[i]) == KVP_OK);
	}
	for (int i = 0; i < 3; i++)
		CHECK(kvp_diff_add_new(&df, &n[i], &rec, &emit) == KVP_OK);
	kvp_diff_summary(&df, v);
	CHECK(field(v, "cache_truth_requests_base") == 2);
	CHECK(field(v, "cache_truth_requests_new") == 2);
	CHECK_NEAR(field(v, "cache_truth_exact_fraction_base"), 0.5);
	CHECK_NEAR(field(v, "cache_truth_exact_fraction_new"), 1.0);
	CHECK_NEAR(field(v, "cache_truth_exact_fraction_delta"), 0.5);
	CHECK_NEAR(field(v, "cache_truth_mean_abs_error_base"), 6.0);
	CHECK_NEAR(field(v, "cache_truth_mean_abs_error_new"), 0.0);
	CHECK_NEAR(field(v, "cache_truth_mean_abs_error_delta"), -6.0);
	{
		struct kvp_jw w;
		const char *s;
		size_t len;
		struct json_object *o;

		kvp_jw_init(&w, NULL, 0, 0);
		kvp_diff_write_summary(&w, v, 0, 0);
		s = kvp_jw_pending(&w, &len);
		o = parse_n(s, len);
		CHECK(o != NULL);
		/* rec + every field but the causes and the reuse ones (no
		 * replay row) */
		CHECK(json_object_object_length(o) == KVP_DIFF_N_FIELDS -
		                                          KVP_DIFF_N_CLASSIFY -
		                                          KVP_DIFF_N_REUSE + 1);
		json_object_put(o);
		kvp_jw_fini(&w);
	}
	kvp_diff_fini(&df);
}

/* Dynamo replay rows (diff.h): BASE decisions a, b, c with overlaps 2, 3, 1
 * (b predicting 40 tokens), block size 8; NEW rows a (overlap 2, reused
 * 16 of 32), b (no overlap, reused 24 of 32), c (overlap 0, reused 0 of
 * 16). a: 2*8 = 16 vs 16 equal; b: predicted 40 vs 24, its overlap not
 * compared; c: 1*8 = 8 vs 0, overlap 1 vs 0 changed. Reuse 3 pairs, 1
 * equal, mean |diff| (0+16+8)/3 = 8, delta (16+24+0)-(16+40+8) = -24;
 * NEW hit rate (16+24+0)/(32+32+16) = 0.5. */
static void
test_replay_rows(void)
{
	struct kvp_decision_rec b[3], n[3];
	struct kvp_diff df;
	struct kvp_diff_rec rec;
	double v[KVP_DIFF_N_FIELDS];
	const char *ids[3] = {"1", "2", "3"};
	uint64_t bo[3] = {2, 3, 1}, no[3] = {2, 0, 0}, ru[3] = {16, 24, 0},
	         in[3] = {32, 32, 16};
	int emit, changes[3];

	kvp_diff_init(&df);
	df.block_size = 8;
	for (int i = 0; i < 3; i++) {
		b[i] = dec(ids[i], 0, 0, bo[i], 4, 0);
		b[i].has_pred = i == 1;
		b[i].pred = i == 1 ? 40 : 0;
		n[i] = dec(ids[i], 0, 0, no[i], 0, 0);
		n[i].replay_row = 1;
		n[i].no_overlap = i == 1;
		n[i].reused = ru[i];
		n[i].input_tokens = in[i];
		CHECK(kvp_diff_add_base(&df, &b[i]) == KVP_OK);
	}
	for (int i = 0; i < 3; i++) {
		CHECK(kvp_diff_add_new(&df, &n[i], &rec, &emit) == KVP_OK);
		changes[i] = (int)rec.changes;
	}
	CHECK(changes[0] == 0 && changes[1] == 0 &&
	      changes[2] == KVP_DIFF_OVERLAP);
	kvp_diff_summary(&df, v);
	CHECK(field(v, "overlap_changed") == 1);
	CHECK(field(v, "reuse_requests") == 3);
	CHECK_NEAR(field(v, "reuse_exact_fraction"), 1.0 / 3);
	CHECK_NEAR(field(v, "reuse_mean_abs_tokens"), 8.0);
	CHECK_NEAR(field(v, "reuse_tokens_delta"), -24.0);
	CHECK_NEAR(field(v, "hit_rate_new"), 0.5);
	kvp_diff_fini(&df);
}

int
main(void)
{
	test_truth();
	test_replay_rows();
	test_scenario();
	test_field_names();
	test_positions();
	test_ids_and_big_workers();
	test_many();
	test_empty();
	test_text();
	return UNIT_DONE();
}
