/* SPDX-License-Identifier: MIT */
/*
 * test_agg.c — kv-report's streaming aggregation of one run
 * (lib/report/agg.c) and the shared time line (kvp_agg_tline). Expected
 * values follow agg.h and kv-report(1), worked out by hand in the
 * comments: totals and rates (hit = overlap / request blocks, reachable
 * with max_overlap.blocks or, in brief records, overlap + blocks_lost),
 * balance = busiest / mean routed over every worker seen, 96 time buckets
 * that merge in pairs as time goes on (time: ts_ms when the first
 * decision has one, else the position), the rolling hit rate over the
 * last `window` decisions, 20 overlap bins (the last one closed), TTFT
 * quantiles within one logarithmic bin (20 per decade), the summary's
 * simulated p50/p99 exact, 12 per-worker series then "other".
 */
#include <math.h>
#include <string.h>

#include "kvpipe.h"
#include "report/agg.h"
#include "unit.h"

static int halves;

static void
count_halve(void *ctx)
{
	(void)ctx;
	halves++;
}

static void
test_tline(void)
{
	struct kvp_agg_tline tl;

	memset(&tl, 0, sizeof tl);
	halves = 0;
	/* the first time starts bucket 0, width 1 */
	CHECK(kvp_agg_tline_at(&tl, 10, 4, count_halve, NULL) == 0);
	CHECK(tl.n == 1 && tl.t0 == 10 && tl.width == 1);
	CHECK(kvp_agg_tline_at(&tl, 13.5, 4, count_halve, NULL) == 3);
	CHECK(tl.n == 4);
	/* before the first time: the first bucket */
	CHECK(kvp_agg_tline_at(&tl, 5, 4, count_halve, NULL) == 0);
	CHECK(halves == 0);
	/* 14 is bucket 4 of 4: one halving, width 2, bucket 2; n was 4,
	 * halved to 2, then 3 with bucket 2 */
	CHECK(kvp_agg_tline_at(&tl, 14, 4, count_halve, NULL) == 2);
	CHECK(halves == 1 && tl.width == 2 && tl.n == 3);
	/* 110 is 100 past t0: widths 4, 8, 16 still put it at 25, 12, 6;
	 * width 32 at 3: four more halvings; n 3 -> 2 -> 1 -> 1 -> 1, then
	 * 4 */
	CHECK(kvp_agg_tline_at(&tl, 110, 4, count_halve, NULL) == 3);
	CHECK(halves == 5 && tl.width == 32 && tl.n == 4);
	CHECK(kvp_agg_tline_end(&tl, 0) == 10 + 32);
	CHECK(kvp_agg_tline_end(&tl, 3) == 10 + 4 * 32);
	/* a width set before the first time is kept */
	memset(&tl, 0, sizeof tl);
	tl.width = 1000;
	CHECK(kvp_agg_tline_at(&tl, 500, 4, count_halve, NULL) == 0);
	CHECK(kvp_agg_tline_at(&tl, 1499, 4, count_halve, NULL) == 0);
	CHECK(kvp_agg_tline_at(&tl, 1500, 4, count_halve, NULL) == 1);
	CHECK(tl.width == 1000 && halves == 5);
}

static struct kvp_decision_rec
dec(uint64_t wid, uint64_t overlap, uint64_t rb)
{
	struct kvp_decision_rec d;

	memset(&d, 0, sizeof d);
	d.kind = KVP_DECISION_DECISION;
	d.chosen = 1;
	d.worker_id = wid;
	d.overlap = overlap;
	d.request_blocks = rb;
	return d;
}

/* Without ts_ms, time is the position: decision k (0-based) at k. */
static void
test_buckets_by_position(void)
{
	struct kvp_agg a;
	uint64_t sum;
	int k, bad = 0;

	CHECK(kvp_agg_init(&a, 10) == KVP_OK);
	for (k = 0; k < KVP_AGG_BUCKETS; k++) {
		struct kvp_decision_rec d = dec(1, 1, 2);

		bad += kvp_agg_add(&a, &d) != KVP_OK;
	}
	CHECK(bad == 0);
	CHECK(a.time_is_ts == 0 && a.tl.n == KVP_AGG_BUCKETS &&
	      a.tl.width == 1);
	for (k = 0, bad = 0; k < KVP_AGG_BUCKETS; k++)
		bad += a.b[k].n != 1 || a.b[k].overlap != 1 ||
		       a.b[k].request_blocks != 2;
	CHECK(bad == 0);
	/* the 97th (at 96) merges pairs: width 2, 48 full buckets of 2 and
	 * bucket 48 with the new one */
	{
		struct kvp_decision_rec d = dec(1, 1, 2);

		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	}
	CHECK(a.tl.width == 2 && a.tl.n == 49);
	CHECK(a.b[0].n == 2 && a.b[47].n == 2 && a.b[48].n == 1 &&
	      a.b[49].n == 0);
	CHECK(a.b[47].overlap == 2 && a.b[47].request_blocks == 4);
	/* up to 200 decisions (times 0..199): width 4 (199/2 is past 96),
	 * 50 buckets of 4 */
	for (k = 97; k < 200; k++) {
		struct kvp_decision_rec d = dec(1, 1, 2);

		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	}
	CHECK(a.tl.width == 4 && a.tl.n == 50);
	for (k = 0, sum = 0, bad = 0; k < KVP_AGG_BUCKETS; k++) {
		sum += a.b[k].n;
		bad += k < 50 ? a.b[k].n != 4 : a.b[k].n != 0;
	}
	CHECK(sum == 200 && bad == 0);
	CHECK(kvp_agg_bucket_end(&a, 0) == 4);
	CHECK(kvp_agg_bucket_end(&a, 49) == 200);
	/* the totals are whole */
	CHECK(a.decisions == 200 && a.routed == 200 && a.overlap == 200 &&
	      a.request_blocks == 400);
	CHECK(kvp_agg_hit_rate(&a) == 0.5);
	kvp_agg_fini(&a);
}

/* With ts_ms on the first decision, time is ts_ms; a later decision
 * without one takes the last time. Without it on the first, positions,
 * whatever later ones carry. */
static void
test_buckets_by_ts(void)
{
	struct kvp_agg a;
	struct kvp_decision_rec d;

	CHECK(kvp_agg_init(&a, 10) == KVP_OK);
	d = dec(1, 0, 1);
	d.has_ts = 1;
	d.ts_ms = 1000;
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	d.ts_ms = 1005.5;
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	d.has_ts = 0; /* at 1005.5 too */
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	CHECK(a.time_is_ts == 1 && a.tl.t0 == 1000);
	CHECK(a.b[0].n == 1 && a.b[5].n == 2 && a.tl.n == 6);
	/* ts_ms going back counts in the first bucket */
	d.has_ts = 1;
	d.ts_ms = 10;
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	CHECK(a.b[0].n == 2);
	kvp_agg_fini(&a);

	CHECK(kvp_agg_init(&a, 10) == KVP_OK);
	d = dec(1, 0, 1);
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	d.has_ts = 1;
	d.ts_ms = 90000;
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	CHECK(a.time_is_ts == 0 && a.b[1].n == 1 && a.tl.n == 2);
	kvp_agg_fini(&a);
}

/* The rolling hit rate at each bucket's last decision, window 2:
 * (1,4) -> 1/4; (3,4) -> 4/8; (0,2) -> 3/6; (4,4) -> 4/6. A first
 * decision with no request blocks gives no rate. */
static void
test_rolling(void)
{
	static const uint64_t ov[5] = {0, 1, 3, 0, 4}, rb[5] = {0, 4, 4, 2, 4};
	struct kvp_agg a;
	int k;

	CHECK(kvp_agg_init(&a, 2) == KVP_OK);
	for (k = 0; k < 5; k++) {
		struct kvp_decision_rec d = dec(1, ov[k], rb[k]);

		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	}
	CHECK(a.b[0].has_roll == 0);
	CHECK(a.b[1].has_roll && a.b[1].roll == 0.25);
	CHECK(a.b[2].has_roll && a.b[2].roll == 0.5);
	CHECK(a.b[3].has_roll && a.b[3].roll == 0.5);
	CHECK(a.b[4].has_roll && fabs(a.b[4].roll - 4.0 / 6) < 1e-15);
	kvp_agg_fini(&a);

	/* window 0 counts as 1: the rate is the last decision's */
	CHECK(kvp_agg_init(&a, 0) == KVP_OK);
	CHECK(a.window == 1);
	for (k = 1; k < 5; k++) {
		struct kvp_decision_rec d = dec(1, ov[k], rb[k]);

		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	}
	CHECK(a.b[0].roll == 0.25 && a.b[1].roll == 0.75 && a.b[2].roll == 0 &&
	      a.b[3].roll == 1);
	kvp_agg_fini(&a);
}

/*
 * Totals over five decisions:
 *   d1 w1 ov 2 rb 4, max_overlap 3, non_max       reachable 3
 *   d2 w2 ov 4 rb 4, max_overlap 4                reachable 4
 *   d3 brief: w1 ov 1 rb 4 blocks_lost 2          reachable 1 + 2 = 3
 *   d4 rejected (chosen null) ov 0 rb 2            reachable 0
 *   d5 chosen w3 but rejected true, ov 0 rb 2      reachable 0
 * decisions 5, routed 3 (w1 2, w2 1), rejected 2, overlap 7, request
 * blocks 16, reachable 10, non-max 2 (d1 flagged, d3 lost blocks),
 * blocks lost 2. Workers: w1, w2 and w3? w3 was never routed but a
 * rejected decision's worker is not counted: workers w1, w2, so balance
 * = 2 / (3/2) = 4/3.
 */
static void
test_totals(void)
{
	struct kvp_agg a;
	struct kvp_decision_rec d[5], other;
	int k;

	d[0] = dec(1, 2, 4);
	d[0].has_max = 1;
	d[0].max_overlap = 3;
	d[0].non_max = 1;
	d[1] = dec(2, 4, 4);
	d[1].has_max = 1;
	d[1].max_overlap = 4;
	d[2] = dec(1, 1, 4);
	d[2].blocks_lost = 2;
	d[3] = dec(0, 0, 2);
	d[3].chosen = 0;
	d[3].rejected = 1;
	d[4] = dec(3, 0, 2);
	d[4].rejected = 1;
	memset(&other, 0, sizeof other);
	other.kind = KVP_DECISION_OTHER;
	other.overlap = 100;

	CHECK(kvp_agg_init(&a, 100) == KVP_OK);
	CHECK(kvp_agg_ttft(&a, 0.5) == -1); /* no TTFT data */
	CHECK(kvp_agg_hit_rate(&a) == 0 && kvp_agg_balance(&a) == 0 &&
	      kvp_agg_reachable_rate(&a) == 0);
	for (k = 0; k < 5; k++)
		CHECK(kvp_agg_add(&a, &d[k]) == KVP_OK);
	CHECK(kvp_agg_add(&a, &other) == KVP_OK);
	CHECK_U64(a.decisions, 5);
	CHECK_U64(a.routed, 3);
	CHECK_U64(a.rejected, 2);
	CHECK_U64(a.overlap, 7);
	CHECK_U64(a.request_blocks, 16);
	CHECK_U64(a.max_overlap, 10);
	CHECK_U64(a.non_max, 2);
	CHECK_U64(a.blocks_lost, 2);
	CHECK(kvp_agg_hit_rate(&a) == 7.0 / 16);
	CHECK(kvp_agg_reachable_rate(&a) == 10.0 / 16);
	CHECK_U64(a.n_workers, 2);
	CHECK(fabs(kvp_agg_balance(&a) - 4.0 / 3) < 1e-15);
	kvp_agg_fini(&a);
}

/* Overlap bins: floor(20 · overlap / request blocks), 1 in the last;
 * request blocks 0: no bin. */
static void
test_histogram(void)
{
	static const uint64_t ov[6] = {0, 1, 1, 19, 20, 5};
	static const uint64_t rb[6] = {10, 3, 20, 20, 20, 0};
	struct kvp_agg a;
	uint64_t sum = 0;

	CHECK(kvp_agg_init(&a, 1) == KVP_OK);
	for (int k = 0; k < 6; k++) {
		struct kvp_decision_rec d = dec(1, ov[k], rb[k]);

		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	}
	/* 0/10 -> 0; 1/3 -> 6 (20/3); 1/20 -> 1; 19/20 -> 19; 20/20 -> 19 */
	CHECK(a.hist[0] == 1 && a.hist[6] == 1 && a.hist[1] == 1 &&
	      a.hist[19] == 2);
	for (int k = 0; k < KVP_AGG_HIST; k++)
		sum += a.hist[k];
	CHECK(sum == 5);
	kvp_agg_fini(&a);
}

/* log10 distance of got from want in bins (20 per decade) */
static double
bins_off(double got, double want)
{
	return fabs(log10(got / want)) * KVP_AGG_TTFT_PER_DECADE;
}

/* TTFT 1..100 ms: nearest-rank p50 is 50, p99 99; read back within one
 * bin. Outside the bins' range: below 0.01 ms the first bin, past 10^8
 * ms the last. The summary's simulated percentiles are exact without
 * ttft_ms in decisions, and ignored with. */
static void
test_ttft(void)
{
	struct kvp_agg a;
	struct kvp_decision_rec s;
	int k;

	CHECK(kvp_agg_init(&a, 1) == KVP_OK);
	for (k = 1; k <= 100; k++) {
		struct kvp_decision_rec d = dec(1, 0, 1);

		d.has_ttft = 1;
		d.ttft_ms = k;
		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	}
	CHECK(a.n_ttft == 100);
	CHECK(bins_off(kvp_agg_ttft(&a, 0.5), 50) <= 1);
	CHECK(bins_off(kvp_agg_ttft(&a, 0.99), 99) <= 1);
	CHECK(bins_off(kvp_agg_ttft(&a, 0.01), 1) <= 1);
	CHECK(kvp_agg_ttft(&a, 0.5) < kvp_agg_ttft(&a, 0.99));
	/* a summary after: decisions' TTFT still wins */
	memset(&s, 0, sizeof s);
	s.kind = KVP_DECISION_SUMMARY;
	s.has_sim = 1;
	s.sim_p50 = 7;
	s.sim_p99 = 8;
	CHECK(kvp_agg_add(&a, &s) == KVP_OK);
	CHECK(bins_off(kvp_agg_ttft(&a, 0.5), 50) <= 1);
	kvp_agg_fini(&a);

	CHECK(kvp_agg_init(&a, 1) == KVP_OK);
	CHECK(kvp_agg_add(&a, &s) == KVP_OK);
	CHECK(kvp_agg_ttft(&a, 0.5) == 7 && kvp_agg_ttft(&a, 0.99) == 8);
	kvp_agg_fini(&a);

	CHECK(kvp_agg_init(&a, 1) == KVP_OK);
	{
		struct kvp_decision_rec d = dec(1, 0, 1);

		d.has_ttft = 1;
		d.ttft_ms = 0.001;
		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
		CHECK(a.ttft[0] == 1);
		d.ttft_ms = 1e12;
		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
		CHECK(a.ttft[KVP_AGG_TTFT_BINS - 1] == 1);
		d.ttft_ms = 0; /* 0 too: the first bin */
		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
		CHECK(a.ttft[0] == 2);
	}
	kvp_agg_fini(&a);
}

/* Thirteen workers: the first twelve seen get panel slots in that order,
 * the thirteenth is summed as "other"; candidates give the peak active
 * blocks per slot; a summary's workers count in the balance. */
static void
test_workers(void)
{
	struct kvp_agg a;
	struct kvp_decision_cand c[2] = {{100, 0, 7}, {5, 1, 40}};
	struct kvp_decision_cand sw[1] = {{77, 0, 0}};
	struct kvp_decision_rec d, s;
	int k;

	CHECK(kvp_agg_init(&a, 1) == KVP_OK);
	for (k = 0; k < 13; k++) {
		d = dec((uint64_t)(12 - k), 1, 1);
		d.dp_rank = 0;
		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	}
	CHECK(a.n_panel == KVP_AGG_WORKERS && a.n_workers == 13);
	CHECK(a.panel_wid[0] == 12 && a.panel_wid[11] == 1);
	CHECK(a.other_used == 1);
	/* worker 0 (the 13th), at position 12: bucket 12, slot other */
	CHECK(a.b[12].routed[KVP_AGG_WORKERS] == 1);
	CHECK(a.b[0].routed[0] == 1 && a.b[11].routed[11] == 1);
	CHECK(kvp_agg_balance(&a) == 1); /* one each */
	/* a decision with candidates: worker 100 is the 14th (other), 5 is
	 * in slot 7 (12 - 5), but on rank 1: another worker, other too */
	d = dec(3, 0, 1);
	d.cand = c;
	d.n_cand = 2;
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	CHECK(a.has_candidates == 1 && a.n_workers == 15);
	CHECK(a.b[13].active[KVP_AGG_WORKERS] == 40);
	CHECK(a.b[13].routed[9] == 1); /* worker 3: slot 12 - 3 */
	/* a summary's worker that was never routed lowers the mean:
	 * routed 14 over 16 workers, busiest 2 (worker 3) */
	memset(&s, 0, sizeof s);
	s.kind = KVP_DECISION_SUMMARY;
	s.cand = sw;
	s.n_cand = 1;
	CHECK(kvp_agg_add(&a, &s) == KVP_OK);
	CHECK(a.n_workers == 16 && a.decisions == 14);
	CHECK(fabs(kvp_agg_balance(&a) - 2.0 * 16 / 14) < 1e-12);
	kvp_agg_fini(&a);

	/* peaks merge as the max when buckets halve */
	CHECK(kvp_agg_init(&a, 1) == KVP_OK);
	for (k = 0; k < KVP_AGG_BUCKETS + 1; k++) {
		struct kvp_decision_cand one = {1, 0,
		                                (uint64_t)(k % 2 ? 50 : 9)};

		d = dec(1, 0, 1);
		d.cand = &one;
		d.n_cand = 1;
		CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	}
	CHECK(a.tl.width == 2 && a.b[0].active[0] == 50 &&
	      a.b[48].active[0] == 9 && a.b[0].routed[0] == 2);
	kvp_agg_fini(&a);
}

/* The run's policy: the first decision naming one, at most 63 bytes. */
static void
test_policy(void)
{
	static const char longname[] =
	    "a-policy-name-much-longer-than-the-sixty-three-bytes-kept-here-"
	    "xyz";
	struct kvp_agg a;
	struct kvp_decision_rec d = dec(1, 0, 1);

	CHECK(kvp_agg_init(&a, 1) == KVP_OK);
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	CHECK(a.policy[0] == '\0');
	d.policy = (struct kvp_decision_span){longname, sizeof longname - 1};
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	CHECK(strlen(a.policy) == 63 && memcmp(a.policy, longname, 63) == 0);
	d.policy = (struct kvp_decision_span){"dynamo", 6};
	CHECK(kvp_agg_add(&a, &d) == KVP_OK);
	CHECK(strlen(a.policy) == 63);
	kvp_agg_fini(&a);
}

int
main(void)
{
	test_tline();
	test_buckets_by_position();
	test_buckets_by_ts();
	test_rolling();
	test_totals();
	test_histogram();
	test_ttft();
	test_workers();
	test_policy();
	return UNIT_DONE();
}
