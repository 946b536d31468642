/* SPDX-License-Identifier: MIT */
/*
 * test_disagree.c — kv-report's "where runs disagree most"
 * (lib/report/disagree.c). disagree.h and kv-report(1): decisions of the
 * same request_id text across runs are joined; the top N by overlap
 * difference (max - min over the runs), a different chosen worker
 * breaking ties, are kept, sorted largest first (then in the order the
 * requests were first seen); a request still incomplete when the pool of
 * KVP_DIS_POOL is full is evicted and scored over the runs it has when
 * two or more. Scores are 2·(max - min) + (1 if the chosen workers
 * differ), worked out by hand below.
 */
#include <stdio.h>
#include <string.h>

#include "kvpipe.h"
#include "report/disagree.h"
#include "unit.h"

/* A decision of request id (JSON text) on worker wid (< 0: rejected). */
static struct kvp_decision_rec
dec(const char *id, long wid, uint64_t overlap)
{
	struct kvp_decision_rec d;

	memset(&d, 0, sizeof d);
	d.kind = KVP_DECISION_DECISION;
	d.id = (struct kvp_decision_span){id, strlen(id)};
	d.chosen = wid >= 0;
	d.rejected = wid < 0;
	d.worker_id = wid >= 0 ? (uint64_t)wid : 0;
	d.overlap = overlap;
	d.request_blocks = 10;
	return d;
}

static void
add(struct kvp_dis *s, int r, const char *id, long wid, uint64_t ov)
{
	struct kvp_decision_rec d = dec(id, wid, ov);

	kvp_dis_add(s, r, &d);
}

static int
top_is(const struct kvp_dis *s, size_t i, const char *id, double score)
{
	return i < s->n_top && s->top[i].id_len == strlen(id) &&
	       memcmp(s->top[i].id, id, strlen(id)) == 0 &&
	       s->top[i].score == score;
}

/*
 * Two runs, top 3, in lockstep:
 *   "a"  w1 ov 5 | w1 ov 5      0
 *   "b"  w1 ov 2 | w2 ov 2      0 + 1 = 1
 *   "c"  w1 ov 0 | w1 ov 4      2·4 = 8
 *   "d"  w1 ov 1 | w2 ov 4      2·3 + 1 = 7
 *   "e"  w1 ov 6 | w1 ov 2      8 (seen after "c")
 *   "f"  w3 ov 0 | rejected     0 + 1 = 1
 * The top 3: c, e, d. Six compared.
 */
static void
test_two_runs(void)
{
	struct kvp_dis s;

	CHECK(kvp_dis_init(&s, 2, 3) == KVP_OK);
	add(&s, 0, "\"a\"", 1, 5);
	add(&s, 1, "\"a\"", 1, 5);
	add(&s, 0, "\"b\"", 1, 2);
	add(&s, 1, "\"b\"", 2, 2);
	add(&s, 0, "\"c\"", 1, 0);
	add(&s, 1, "\"c\"", 1, 4);
	add(&s, 0, "\"d\"", 1, 1);
	add(&s, 1, "\"d\"", 2, 4);
	add(&s, 0, "\"e\"", 1, 6);
	add(&s, 1, "\"e\"", 1, 2);
	add(&s, 0, "\"f\"", 3, 0);
	add(&s, 1, "\"f\"", -1, 0);
	/* complete requests leave the pool as they complete */
	CHECK(s.n_used == 0);
	kvp_dis_finish(&s);
	CHECK_U64(s.compared, 6);
	CHECK_U64(s.n_top, 3);
	CHECK(top_is(&s, 0, "\"c\"", 8));
	CHECK(top_is(&s, 1, "\"e\"", 8));
	CHECK(top_is(&s, 2, "\"d\"", 7));
	/* each run's side as read */
	if (s.n_top == 3) {
		const struct kvp_dis_run *x = s.top[2].run;

		CHECK(x[0].present && x[0].chosen && x[0].worker_id == 1 &&
		      x[0].overlap == 1 && x[0].request_blocks == 10);
		CHECK(x[1].present && x[1].worker_id == 2 && x[1].overlap == 4);
		CHECK(!x[2].present);
	}
	CHECK_U64(s.evicted, 0);
	kvp_dis_fini(&s);
}

/* What is not joined: one run only, runs past the eighth, decisions
 * without an id and other records; a duplicate id in one run keeps its
 * first decision. */
static void
test_ignored(void)
{
	struct kvp_dis s;
	struct kvp_decision_rec d;

	CHECK(kvp_dis_init(&s, 1, 5) == KVP_OK);
	add(&s, 0, "\"a\"", 1, 5);
	kvp_dis_finish(&s);
	CHECK(s.n_top == 0 && s.compared == 0 && s.n_used == 0);
	kvp_dis_fini(&s);

	CHECK(kvp_dis_init(&s, 2, 5) == KVP_OK);
	d = dec("\"a\"", 1, 5);
	d.id.p = NULL;
	d.id.n = 0;
	kvp_dis_add(&s, 0, &d);
	d = dec("\"a\"", 1, 5);
	d.kind = KVP_DECISION_SUMMARY;
	kvp_dis_add(&s, 0, &d);
	add(&s, KVP_REPORT_MAX_RUNS, "\"a\"", 1, 5);
	CHECK(s.n_used == 0);
	/* "g": run 0 twice (ov 1, then 9, ignored), run 1 ov 1: score 0 */
	add(&s, 0, "\"g\"", 1, 1);
	add(&s, 0, "\"g\"", 1, 9);
	add(&s, 1, "\"g\"", 1, 1);
	kvp_dis_finish(&s);
	CHECK(s.n_top == 0 && s.compared == 1);
	kvp_dis_fini(&s);

	/* top 0 keeps nothing but still compares; top past the maximum is
	 * clamped */
	CHECK(kvp_dis_init(&s, 2, 0) == KVP_OK);
	add(&s, 0, "\"c\"", 1, 0);
	add(&s, 1, "\"c\"", 1, 4);
	kvp_dis_finish(&s);
	CHECK(s.n_top == 0 && s.compared == 1);
	kvp_dis_fini(&s);
	CHECK(kvp_dis_init(&s, 2, KVP_DIS_MAX_TOP + 5000) == KVP_OK);
	CHECK(s.top_max == KVP_DIS_MAX_TOP);
	kvp_dis_fini(&s);
}

/* Three runs: a request two runs have is scored at the end over those
 * two; one only one run has is not compared. */
static void
test_incomplete(void)
{
	struct kvp_dis s;

	CHECK(kvp_dis_init(&s, 3, 5) == KVP_OK);
	add(&s, 0, "\"x\"", 1, 0);
	add(&s, 2, "\"x\"", 1, 6); /* runs 0 and 2: 2·6 = 12 */
	add(&s, 1, "\"y\"", 1, 3); /* run 1 only */
	add(&s, 0, "\"z\"", 1, 1);
	add(&s, 1, "\"z\"", 2, 1);
	add(&s, 2, "\"z\"", 1, 2); /* complete: 2·1 + 1 = 3 */
	CHECK(s.n_used == 2);
	kvp_dis_finish(&s);
	CHECK(s.n_used == 0);
	CHECK_U64(s.compared, 2);
	CHECK_U64(s.n_top, 2);
	CHECK(top_is(&s, 0, "\"x\"", 12));
	CHECK(top_is(&s, 1, "\"z\"", 3));
	if (s.n_top > 0)
		CHECK(s.top[0].n_present == 2 && !s.top[0].run[1].present);
	kvp_dis_fini(&s);
}

/*
 * Eviction: three runs, 4101 requests each seen by runs 0 (ov 0) and 1
 * (ov i mod 7), never by run 2, so none completes. The pool holds 4096:
 * requests 0..4 are evicted (the clock hand goes round from slot 0) and
 * scored over their two runs then, the rest at the end. Every one is
 * compared; the score 2·(i mod 7) is largest, 12, at i = 6, 13, 20, ...:
 * the top 5 are the first five of those.
 */
static void
test_eviction(void)
{
	enum { N = KVP_DIS_POOL + 5 };
	static const int want[5] = {6, 13, 20, 27, 34};
	struct kvp_dis s;
	char id[32];
	int i;

	CHECK(kvp_dis_init(&s, 3, 5) == KVP_OK);
	for (i = 0; i < N; i++) {
		snprintf(id, sizeof id, "\"r%d\"", i);
		add(&s, 0, id, 1, 0);
		add(&s, 1, id, 1, (uint64_t)(i % 7));
	}
	CHECK_U64(s.evicted, 5);
	CHECK_U64(s.compared, 5);
	CHECK_U64(s.n_used, KVP_DIS_POOL);
	kvp_dis_finish(&s);
	CHECK_U64(s.compared, N);
	CHECK_U64(s.n_top, 5);
	for (i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "\"r%d\"", want[i]);
		CHECK(top_is(&s, (size_t)i, id, 12));
	}
	kvp_dis_fini(&s);
}

/* Long ids are kept by their first KVP_DIS_ID_MAX bytes and their full
 * length; two that differ only past that are two requests. Tie-breaks
 * are kept to 15 bytes. */
static void
test_long_ids(void)
{
	char a[200], b[200];
	struct kvp_dis s;
	struct kvp_decision_rec d;

	memset(a, 'q', sizeof a);
	a[0] = '"';
	a[149] = '"';
	a[150] = '\0';
	memcpy(b, a, sizeof a);
	b[140] = 'Z';
	CHECK(kvp_dis_init(&s, 2, 5) == KVP_OK);
	d = dec(a, 1, 0);
	d.tie_break = (struct kvp_decision_span){"a-very-long-tie-break", 21};
	d.has_logit = 1;
	d.logit = -2.5;
	kvp_dis_add(&s, 0, &d);
	add(&s, 0, b, 1, 3);
	CHECK(s.n_used == 2);
	add(&s, 1, a, 1, 1); /* a: 2 */
	add(&s, 1, b, 2, 3); /* b: 1 */
	kvp_dis_finish(&s);
	CHECK(s.n_top == 2);
	if (s.n_top == 2) {
		CHECK(s.top[0].id_len == 150 &&
		      memcmp(s.top[0].id, a, KVP_DIS_ID_MAX) == 0);
		CHECK(s.top[0].score == 2 && s.top[1].score == 1);
		CHECK_STR(s.top[0].run[0].tie_break, "a-very-long-tie");
		CHECK(s.top[0].run[0].has_logit &&
		      s.top[0].run[0].logit == -2.5);
		CHECK(s.top[0].run[1].tie_break[0] == '\0');
	}
	kvp_dis_fini(&s);
}

int
main(void)
{
	test_two_runs();
	test_ignored();
	test_incomplete();
	test_eviction();
	test_long_ids();
	return UNIT_DONE();
}
