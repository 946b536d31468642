/* SPDX-License-Identifier: MIT */
/*
 * test_twotier.c — issue 30: every term of Dynamo's current per-candidate
 * cost (route/score.c), the dynamo-two-tier-cost-fn branches
 * (lib/lab/policy_twotier.c) and the trace's float format
 * (replay/route_trace.c). Expected values are worked out by hand below
 * from Dynamo's selector source (lib/kv-router/src/scheduling/selector.rs
 * worker_score_parts; two_tier_cost_fn.rs and its own tests, whose rows
 * the two-tier cases reuse) and ryu's pretty-printing rules (the form
 * serde_json writes floats in).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lab/lab.h"
#include "replay/route_trace.h"
#include "route/index.h"
#include "route/router.h"
#include "unit.h"

#define BS 16

static int
near(double a, double b)
{
	return fabs(a - b) < 1e-12;
}

static struct kvp_decision dec;
static unsigned serial;

/* Stores sequence hashes seq[0, n) on (w, 0) in tier. */
static int
store(struct kvp_router *r, uint64_t w, int tier, const uint64_t *seq, size_t n)
{
	struct kvp_event ev;
	struct kvp_event_result res;
	struct kvp_diag d;

	memset(&ev, 0, sizeof ev);
	ev.kind = KVP_EV_STORED;
	ev.worker_id = w;
	ev.tier = tier;
	ev.ext = seq;
	ev.local = seq;
	ev.n = n;
	return kvp_router_apply(r, &ev, &res, &d);
}

/* Routes blocks seq[0, n) (isl n·BS): a query, or a commit pinned to
 * worker pin (pin 0: not pinned). 0, or -1. */
static int
route(struct kvp_router *r, const uint64_t *seq, size_t n, int commit,
      uint64_t pin)
{
	struct kvp_request q;
	struct kvp_diag d;
	char id[32];

	memset(&q, 0, sizeof q);
	q.id_len = (size_t)snprintf(id, sizeof id, "q%u", serial++);
	q.id = id;
	q.local = seq;
	q.seq = seq;
	q.n = n;
	q.isl = n * BS;
	q.commit = commit;
	q.pinned = pin != 0;
	q.pin_worker = pin;
	return kvp_router_route(r, &q, &dec, &d);
}

/* k one-block requests committed on worker w: k more active requests. */
static int
load(struct kvp_router *r, uint64_t w, size_t k)
{
	static uint64_t next = 1000000;

	for (size_t i = 0; i < k; i++) {
		uint64_t s = next++;

		if (route(r, &s, 1, 1, w) != 0)
			return -1;
	}
	return 0;
}

/* ---- the cost's terms ---------------------------------------------------- */

/*
 * Two workers, bs 16, the query's blocks 101..104 (ISL 64, 4 request
 * blocks); C 1, W 1, decay 0.5, tier credit on (host 0.75, disk 0.25),
 * decode_active_request_weight 2.
 *   worker 1: device 101,102 (O 2); host 101..103 (1 beyond O); a load
 *     record's baseline P 32, D 5; no active request, no block held.
 *   worker 2: one pinned request of 1 block (ISL 16) committed: P 16,
 *     D 1, 1 active request.
 * P_min = min(32, 16) = 16.
 *   worker 1: excess (32 − 16)/16 = 1 block, /4 = 0.25, decay
 *     1/(1 + 0.5·0.25) = 1/1.125 = 0.888…; effective credit 0.888…;
 *     overlap_credit_blocks 0.888…·2 + 0.75·1 = 2.52777…; raw prefill
 *     (32 + 64)/16 = 6; adjusted 6 − 2.52777… = 3.47222…; prefill cost
 *     ·1; decode cost D + N = 5 + 4 = 9; active requests 0, cost 0;
 *     logit 3.47222… + 9 = 12.47222…
 *   worker 2: decay 1 (at the floor); credit 0; raw (16 + 64)/16 = 5;
 *     adjusted 5; decode 1 + 4 = 5; active-request cost 2·1 = 2; logit
 *     5 + 5 + 2 = 12: the lowest, chosen.
 */
static void
test_cost_terms(void)
{
	static const uint64_t q[4] = {101, 102, 103, 104}, r0 = 900;
	struct kvp_route_opts ro;
	struct kvp_router *r;
	const struct kvp_cand_score *a, *b;

	kvp_route_opts_init(&ro);
	ro.block_size = BS;
	ro.score_parts = 1; /* the intermediates, not only the logit */
	ro.credit_decay = 0.5;
	ro.tier_credit = 1;
	ro.request_weight = 2;
	r = kvp_router_new(&ro);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(kvp_router_add_candidate(r, 1, 0) == 0);
	CHECK(kvp_router_add_candidate(r, 2, 0) == 0);
	CHECK(store(r, 1, KVP_TIER_DEVICE, q, 2) == 0);
	CHECK(store(r, 1, KVP_TIER_HOST, q, 3) == 0);
	CHECK(kvp_router_set_load(r, 1, 0, 32, 5) == 0);
	CHECK(route(r, &r0, 1, 1, 2) == 0);
	CHECK(route(r, q, 4, 0, 0) == 0);
	CHECK(dec.ncand == 2);
	if (dec.ncand != 2) {
		kvp_router_free(r);
		return;
	}
	a = &dec.cand[0];
	b = &dec.cand[1];
	CHECK(a->worker_id == 1 && b->worker_id == 2);
	CHECK(a->overlap == 2 && a->host_overlap == 3);
	CHECK(near(a->credit_factor, 1.0 / 1.125));
	CHECK(near(a->eff_credit, 1.0 / 1.125));
	CHECK(near(a->credit_blocks, 2.0 / 1.125 + 0.75));
	CHECK(a->raw_prefill_blocks == 6);
	CHECK(near(a->prefill_blocks, 6 - (2.0 / 1.125 + 0.75)));
	CHECK(near(a->prefill_cost, a->prefill_blocks));
	CHECK(a->decode_blocks == 9 && a->active_requests == 0);
	CHECK(a->request_cost == 0 && !a->decode_formula);
	CHECK(near(a->logit, 9 + 6 - (2.0 / 1.125 + 0.75)));
	CHECK(b->credit_factor == 1 && b->credit_blocks == 0);
	CHECK(b->raw_prefill_blocks == 5 && b->prefill_blocks == 5);
	CHECK(b->decode_blocks == 5 && b->active_requests == 1);
	CHECK(b->request_cost == 2 && b->logit == 12);
	CHECK(dec.chosen == 1);
	kvp_router_free(r);
}

/*
 * The decode-overlap formula: a decode pool (worker_type decode) whose
 * requests add no prefill (no_track_prefill), credit 1: logit =
 * max(0, decode − overlap_credit_blocks) + active-request cost, no
 * prefill term. The same workers (no decay: prefill is not tracked):
 *   worker 1: credit 1·2 + 0.75·1 = 2.75; decode 9; 9 − 2.75 = 6.25.
 *   worker 2: credit 0; decode 1 + 4 = 5; + 2·1 = 7.
 * Worker 1 wins. A worker whose credit exceeds its decode clamps at 0:
 * with the load record's D at 0, worker 1's decode is 4, 4 − 2.75 =
 * 1.25; with credit 5 (C 2.5: 5 + 0.75 = 5.75 > 4) the term is 0.
 */
static void
test_decode_formula(void)
{
	static const uint64_t q[4] = {101, 102, 103, 104}, r0 = 900;
	struct kvp_route_opts ro;
	struct kvp_router *r;

	for (int pass = 0; pass < 2; pass++) {
		kvp_route_opts_init(&ro);
		ro.block_size = BS;
		ro.tier_credit = 1;
		ro.request_weight = 2;
		ro.no_track_prefill = 1;
		ro.worker_type = KVP_WORKER_DECODE;
		ro.credit = pass == 0 ? 1 : 2.5;
		r = kvp_router_new(&ro);
		CHECK(r != NULL);
		if (r == NULL)
			return;
		CHECK(kvp_router_add_candidate(r, 1, 0) == 0);
		CHECK(kvp_router_add_candidate(r, 2, 0) == 0);
		CHECK(store(r, 1, KVP_TIER_DEVICE, q, 2) == 0);
		CHECK(store(r, 1, KVP_TIER_HOST, q, 3) == 0);
		CHECK(kvp_router_set_load(r, 1, 0, 0, pass == 0 ? 5 : 0) == 0);
		CHECK(route(r, &r0, 1, 1, 2) == 0);
		CHECK(route(r, q, 4, 0, 0) == 0);
		CHECK(dec.ncand == 2);
		if (dec.ncand == 2 && pass == 0) {
			CHECK(dec.cand[0].decode_formula);
			CHECK(dec.cand[0].logit == 6.25);
			CHECK(dec.cand[0].prefill_blocks == 0);
			CHECK(dec.cand[0].prefill_cost == 0);
			CHECK(dec.cand[1].logit == 7);
			CHECK(dec.chosen == 0);
		}
		if (dec.ncand == 2 && pass == 1)
			CHECK(dec.cand[0].logit == 0 && dec.chosen == 0);
		kvp_router_free(r);
	}
	/* aggregated, the same worker 1 alone (P 0, D 5): the prefill
	 * formula stays: raw 64/16 = 4, credit 2.75, adjusted 1.25, + decode
	 * 5 + 4 = 10.25 */
	kvp_route_opts_init(&ro);
	ro.block_size = BS;
	ro.score_parts = 1;
	ro.tier_credit = 1;
	ro.no_track_prefill = 1;
	r = kvp_router_new(&ro);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(store(r, 1, KVP_TIER_DEVICE, q, 2) == 0);
	CHECK(store(r, 1, KVP_TIER_HOST, q, 3) == 0);
	CHECK(kvp_router_set_load(r, 1, 0, 0, 5) == 0);
	CHECK(route(r, q, 4, 0, 0) == 0);
	CHECK(dec.ncand == 1 && !dec.cand[0].decode_formula &&
	      dec.cand[0].logit == 10.25);
	kvp_router_free(r);
}

/* ---- dynamo-two-tier-cost-fn ---------------------------------------------
 * Workers A (29) and B (41), as in Dynamo's own tests; the query has 10
 * blocks (ISL 160), so 5 overlapping blocks sit exactly on the 0.5
 * threshold. A row is (device blocks, host-only blocks, active
 * requests). */

struct row {
	size_t dev, host, active;
};

static const uint64_t qseq[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

/* The chosen worker (29 or 41), 0 on error; *why the tier. */
static uint64_t
two_tier(struct row a, struct row b, double threshold, double host_w,
         const char **why)
{
	struct kvp_route_opts ro;
	struct kvp_policy_opts po;
	struct kvp_router *r;
	const struct row rows[2] = {a, b};
	static const uint64_t w[2] = {29, 41};
	uint64_t got = 0;

	kvp_route_opts_init(&ro);
	ro.block_size = BS;
	kvp_policy_opts_init(&po);
	po.policy = KVP_POLICY_TWO_TIER;
	po.tt_cache_threshold = threshold;
	po.tt_host_weight = host_w;
	r = kvp_router_new(&ro);
	if (r == NULL || kvp_lab_attach(r, &po) != 0)
		return 0;
	/* added B first: rows go in (worker_id) order all the same */
	if (kvp_router_add_candidate(r, 41, 0) != 0 ||
	    kvp_router_add_candidate(r, 29, 0) != 0)
		goto out;
	for (int i = 0; i < 2; i++) {
		if (rows[i].dev > 0 &&
		    store(r, w[i], KVP_TIER_DEVICE, qseq, rows[i].dev) != 0)
			goto out;
		if (rows[i].host > 0 && store(r, w[i], KVP_TIER_HOST, qseq,
		                              rows[i].dev + rows[i].host) != 0)
			goto out;
		if (load(r, w[i], rows[i].active) != 0)
			goto out;
	}
	if (route(r, qseq, 10, 0, 0) == 0 && dec.chosen >= 0) {
		got = dec.cand[dec.chosen].worker_id;
		*why = dec.policy_reason;
	}
out:
	kvp_router_free(r);
	return got;
}

/* Rows a and b (dev, host, active each), the threshold and host weight:
 * the worker chosen and the tier. */
static void
tt(size_t ad, size_t ah, size_t aa, size_t bd, size_t bh, size_t ba, double thr,
   double hw, uint64_t want, const char *reason)
{
	const char *why = NULL;
	struct row a = {ad, ah, aa}, b = {bd, bh, ba};

	CHECK_U64(two_tier(a, b, thr, hw, &why), want);
	CHECK_STR(why, reason);
}

static void
test_two_tier(void)
{
	/* cache tier: 6/10 = 0.6 > 0.5, B despite its load */
	tt(0, 0, 0, 6, 0, 4, 0.5, 0, 41, "cache");
	/* strict: 5/10 = 0.5 is not > 0.5, the least loaded (A) */
	tt(0, 0, 0, 5, 0, 4, 0.5, 0, 29, "least_loaded");
	/* 3/10 = 0.3: below 0.5 → A; above a tuned 0.2 → B */
	tt(0, 0, 0, 3, 0, 4, 0.5, 0, 29, "least_loaded");
	tt(0, 0, 0, 3, 0, 4, 0.2, 0, 41, "cache");
	/* load tier: spread 40 > 32 and 40 > 1.1·0 → A over B's full hit */
	tt(0, 0, 0, 10, 0, 40, 0.5, 0, 29, "load");
	/* the ratio boundary: spread 64 > 32 but 704 is not > 1.1·640 = 704
	 * → the cache tier (B); 705 > 704 → the load tier (A) */
	tt(0, 0, 640, 10, 0, 704, 0.5, 0, 41, "cache");
	tt(0, 0, 640, 10, 0, 705, 0.5, 0, 29, "load");
	/* the absolute gate alone: spread 32 is not > 32 → no load tier */
	tt(0, 0, 0, 10, 0, 32, 0.5, 0, 41, "cache");
	/* Dynamo's decision_reports_the_tier: (0, 3), (2, 1) → B, least
	 * loaded (2/10 = 0.2, no cache tier) */
	tt(0, 0, 3, 2, 0, 1, 0.5, 0, 41, "least_loaded");
	/* ties in candidate order: equal loads → A (the first row) */
	tt(3, 0, 2, 3, 0, 2, 0.5, 0, 29, "least_loaded");
	tt(6, 0, 2, 6, 0, 2, 0.5, 0, 29, "cache");
	/* at the max overlap the least loaded: B */
	tt(6, 0, 3, 6, 0, 2, 0.5, 0, 41, "cache");
	/* only rows at the max overlap compete in the cache tier: A (7
	 * blocks, load 5) over B (6 blocks, load 0) */
	tt(7, 0, 5, 6, 0, 0, 0.5, 0, 29, "cache");
	/* host blocks (the fork's host_cache_weight): B holds 8 blocks in
	 * the host tier only; at 0.75 that is 6.0, 0.6 > 0.5 → B; at the
	 * upstream default 0 (device only) → A */
	tt(0, 0, 0, 0, 8, 4, 0.5, 0.75, 41, "cache");
	tt(0, 0, 0, 0, 8, 4, 0.5, 0, 29, "least_loaded");
	/* device and host add: A 3 + 0.75·4 = 6.0 beats B's 5 */
	tt(3, 4, 4, 5, 0, 0, 0.5, 0.75, 29, "cache");
}

/* ---- the float format ----------------------------------------------------
 * ryu's pretty printer (serde_json's floats), its branches:
 * integral below 1e16 with ".0"; a point inside the digits; 0.000ddd
 * down to 1e-5; scientific beyond, "1e16", "1.234e33", "1e-7". */
static void
test_format(void)
{
	static const struct {
		double v;
		const char *want;
	} t[] = {
	    {0.0, "0.0"},
	    {1.0, "1.0"},
	    {0.75, "0.75"},
	    {0.1, "0.1"},
	    {1.1, "1.1"},
	    {-2.5, "-2.5"},
	    {15.26171875, "15.26171875"},
	    {2048.0, "2048.0"},
	    {12340000000.0, "12340000000.0"},
	    {1e15, "1000000000000000.0"},
	    {1e16, "1e16"},
	    {1.234e33, "1.234e33"},
	    {12.34, "12.34"},
	    {0.001234, "0.001234"},
	    {0.00001, "0.00001"},
	    {0.000001, "1e-6"},
	    {1.234e-7, "1.234e-7"},
	    {1.0 / 3.0, "0.3333333333333333"},
	    {2.0 / 1.125 + 0.75, "2.5277777777777777"},
	    {5e-324, "5e-324"},
	    {1.7976931348623157e308, "1.7976931348623157e308"},
	    {123456.789, "123456.789"},
	    {9007199254740993.0, "9007199254740992.0"},
	};
	char b[40];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t n = kvp_trace_format_f64(b, t[i].v);

		b[n] = '\0';
		CHECK_STR(b, t[i].want);
	}
}

int
main(void)
{
	test_cost_terms();
	test_decode_formula();
	test_two_tier();
	test_format();
	return UNIT_DONE();
}
