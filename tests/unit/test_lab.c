/* SPDX-License-Identifier: MIT */
/*
 * test_lab.c — the policy lab attached to a router (lib/lab/lab.c) and
 * policy selection through lib/lab/lab.h and policy.h. Expected choices
 * follow route-score(1)'s "Comparing policies" and policy.h, worked out by
 * hand: candidates in (worker_id, dp_rank) order (workers 10, 20, 30,
 * added as 30, 10, 20); round-robin's request i, queries included, to
 * candidate i mod 3; random's floor(u·3); least-loaded's fewest active
 * blocks, ties to the lowest id; sglang-cache-aware's imbalance switch,
 * cache hit and smallest tree; prodstack's matched/prompt - β·relative
 * load; every policy honouring a pin and only Dynamo's sampling; the run
 * totals' max/mean balances and the miss-ratio curve plumbing.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lab/lab.h"
#include "route/router.h"
#include "unit.h"

#define BS 16

static struct kvp_router *
router(const struct kvp_policy_opts *po, int approx, int have_draw, double draw)
{
	struct kvp_route_opts ro;
	struct kvp_router *r;
	static const uint64_t w[3] = {30, 10, 20};

	kvp_route_opts_init(&ro);
	ro.block_size = BS;
	ro.approx = approx;
	ro.have_draw = have_draw;
	ro.draw = draw;
	ro.temperature = 1; /* only Dynamo's pick samples */
	r = kvp_router_new(&ro);
	if (r == NULL)
		return NULL;
	for (int k = 0; k < 3; k++)
		if (kvp_router_add_candidate(r, w[k], 0) != 0)
			return NULL;
	if (po != NULL && kvp_lab_attach(r, po) != 0)
		return NULL;
	return r;
}

static struct kvp_router *
with_policy(int policy)
{
	struct kvp_policy_opts po;

	kvp_policy_opts_init(&po);
	po.policy = policy;
	return router(&po, 0, 0, 0);
}

static struct kvp_decision last;
static unsigned serial;

/* Routes nblocks blocks base, base+1, ... (commit, or a query); pin > 0
 * pins it. Returns the chosen worker, 0 for none, -1 on error. */
static long
route(struct kvp_router *r, uint64_t base, size_t nblocks, int commit,
      uint64_t pin)
{
	uint64_t local[64];
	char id[32];
	struct kvp_request q;
	struct kvp_diag d;

	for (size_t i = 0; i < nblocks; i++)
		local[i] = base + i;
	memset(&q, 0, sizeof q);
	q.id_len = (size_t)snprintf(id, sizeof id, "r%u", serial++);
	q.id = id;
	q.local = local;
	q.n = nblocks;
	q.isl = nblocks * BS;
	q.commit = commit;
	q.pinned = pin > 0;
	q.pin_worker = pin;
	if (kvp_router_route(r, &q, &last, &d) != 0)
		return -1;
	return last.chosen >= 0 ? (long)last.cand[last.chosen].worker_id : 0;
}

static void
test_names_and_defaults(void)
{
	static const char *const man[] = {"dynamo",
	                                  "round-robin",
	                                  "random",
	                                  "least-loaded",
	                                  "sglang-cache-aware",
	                                  "prodstack-kvaware",
	                                  "prodstack-loadaware",
	                                  "dynamo-two-tier-cost-fn"};
	const char *const *names = kvp_policy_names();
	struct kvp_policy_opts po;
	int k;

	for (k = 0; k < KVP_POLICY_COUNT; k++)
		CHECK_STR(names[k], man[k]);
	CHECK(names[KVP_POLICY_COUNT] == NULL);
	CHECK(KVP_POLICY_COUNT == 8);
	/* route-score(1)'s defaults */
	memset(&po, 0xff, sizeof po);
	kvp_policy_opts_init(&po);
	CHECK(po.policy == KVP_POLICY_DYNAMO);
	CHECK(po.balance_abs == 64 && po.balance_rel == 1.5);
	CHECK(po.cache_threshold == 0.3 && po.beta == 0.5);
	CHECK(po.capacity == 0 && po.emit_events == 0 && po.mrc == 0);
	CHECK(po.prefill_tps == 0 && po.decode_tps == 0);
	/* Dynamo's two-tier defaults (its DEFAULT_* constants, issue 30) */
	CHECK(po.tt_cache_threshold == 0.5 && po.tt_balance_abs == 32);
	CHECK(po.tt_balance_rel == 1.1 && po.tt_host_weight == 0);
}

/* Each policy names itself in its decisions; an unknown value is
 * Dynamo's; no lab: Dynamo, and nothing of the lab. */
static void
test_attach(void)
{
	const char *const *names = kvp_policy_names();
	struct kvp_router *r;
	struct kvp_lab_totals t;
	struct kvp_mrc m;
	size_t n = 7;

	for (int k = 0; k < KVP_POLICY_COUNT; k++) {
		r = with_policy(k);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK(kvp_lab_opts(r) != NULL && kvp_lab_opts(r)->policy == k);
		CHECK(route(r, 100, 2, 1, 0) > 0);
		CHECK_STR(last.policy, names[k]);
		kvp_router_free(r);
	}
	r = with_policy(99);
	CHECK(r != NULL && route(r, 100, 2, 1, 0) > 0);
	CHECK_STR(last.policy, "dynamo");
	kvp_router_free(r);
	r = with_policy(-1);
	CHECK(r != NULL && route(r, 100, 2, 1, 0) > 0);
	CHECK_STR(last.policy, "dynamo");
	kvp_router_free(r);

	r = router(NULL, 0, 0, 0);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(kvp_lab_opts(r) == NULL);
	CHECK(route(r, 100, 2, 1, 0) > 0);
	CHECK_STR(last.policy, "dynamo");
	CHECK(kvp_lab_sim_events(r, &n) == NULL && n == 0);
	CHECK(kvp_lab_mrc(r, SIZE_MAX, &m) == -1);
	CHECK(kvp_lab_run_totals(r, &t) == 0);
	CHECK(t.capacity_on == 0 && t.simtime_on == 0);
	/* one request routed over three candidates: max 1, mean 1/3 */
	CHECK(t.routed_max == 1 && t.routed_max_mean == 3);
	CHECK(t.blocks_max_mean == 0);
	kvp_router_free(r);
}

/* Round-robin: request i to candidate i mod 3 in (worker_id, dp_rank)
 * order, queries and pinned requests counted; a pin wins; no sampling
 * though the router's temperature is 1. */
static void
test_round_robin(void)
{
	struct kvp_router *r = with_policy(KVP_POLICY_ROUND_ROBIN);

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, 100, 1, 1, 0) == 10);
	CHECK(last.temperature == 0 && !last.drew);
	CHECK(route(r, 200, 1, 1, 0) == 20);
	CHECK(route(r, 300, 1, 0, 0) == 30); /* a query: request 2 */
	CHECK(route(r, 400, 1, 1, 0) == 10);
	CHECK(route(r, 500, 1, 1, 10) == 10); /* pinned, request 4 */
	CHECK_STR(last.tie_break, "pinned");
	CHECK(route(r, 600, 1, 1, 0) == 30); /* request 5 */
	CHECK(route(r, 700, 1, 1, 0) == 10);
	kvp_router_free(r);
}

/* Random with the what-if draw u: candidate floor(3u). */
static void
test_random(void)
{
	static const double u[4] = {0, 0.3, 0.5, 0.9999};
	static const long want[4] = {10, 10, 20, 30};
	struct kvp_policy_opts po;

	kvp_policy_opts_init(&po);
	po.policy = KVP_POLICY_RANDOM;
	for (int k = 0; k < 4; k++) {
		struct kvp_router *r = router(&po, 0, 1, u[k]);

		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK(route(r, 100, 1, 1, 0) == want[k]);
		CHECK(last.drew == 1 && last.u == u[k]);
		kvp_router_free(r);
	}
	/* the seeded draw is the same for the same id and seed */
	{
		struct kvp_router *a = router(&po, 0, 0, 0);
		struct kvp_router *b = router(&po, 0, 0, 0);
		long ca, cb;
		double ua;

		serial = 1000;
		ca = route(a, 100, 1, 1, 0);
		ua = last.u;
		serial = 1000;
		cb = route(b, 100, 1, 1, 0);
		CHECK(ca > 0 && ca == cb && ua == last.u);
		CHECK(ua >= 0 && ua < 1);
		CHECK(ca == (long)(10 * (1 + (int)(ua * 3))));
		kvp_router_free(a);
		kvp_router_free(b);
	}
}

/* Least-loaded: active blocks 0 0 0 -> 10 (4 blocks); 4 0 0 -> 20 (2);
 * 4 2 0 -> 30 (1); 4 2 1 -> 30 (1); 4 2 2 -> 20 (a tie, lowest id). */
static void
test_least_loaded(void)
{
	struct kvp_router *r = with_policy(KVP_POLICY_LEAST_LOADED);

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, 100, 4, 1, 0) == 10);
	CHECK(route(r, 200, 2, 1, 0) == 20);
	CHECK(route(r, 300, 1, 1, 0) == 30);
	CHECK(route(r, 400, 1, 1, 0) == 30);
	CHECK(route(r, 500, 1, 1, 0) == 20);
	kvp_router_free(r);
}

/*
 * sglang-cache-aware with the defaults (threshold 0.3, balance 64/1.5):
 *   A (4 blocks): no tree matches, all empty: smallest tree, 10
 *   B (4 other blocks): 10's tree holds 4: smallest tree, 20
 *   A again: 10 matches 4 blocks, 64/64 > 0.3: cache hit, 10
 *   A's first block + 3 new: 10 matches 1, 16/64 <= 0.3: smallest, 30
 * With balance_abs 1: A, A again (loads 1 0 0: 1 > 1 fails: cache hit),
 * A a third time: loads 2 0 0, 2 > 1 and 2 > 1.5·0: imbalanced, to the
 * fewest active requests, 20.
 */
static void
test_sglang(void)
{
	struct kvp_policy_opts po;
	struct kvp_router *r;

	kvp_policy_opts_init(&po);
	po.policy = KVP_POLICY_SGLANG;
	r = router(&po, 0, 0, 0);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, 100, 4, 1, 0) == 10);
	CHECK_STR(last.policy_reason, "smallest_tree");
	CHECK(route(r, 200, 4, 1, 0) == 20);
	CHECK_STR(last.policy_reason, "smallest_tree");
	CHECK(route(r, 100, 4, 1, 0) == 10);
	CHECK_STR(last.policy_reason, "cache_hit");
	{
		uint64_t local[4] = {100, 901, 902, 903};
		struct kvp_request q;
		struct kvp_diag d;

		memset(&q, 0, sizeof q);
		q.id = "mixed";
		q.id_len = 5;
		q.local = local;
		q.n = 4;
		q.isl = 4 * BS;
		q.commit = 1;
		CHECK(kvp_router_route(r, &q, &last, &d) == 0);
		CHECK(last.chosen >= 0 &&
		      last.cand[last.chosen].worker_id == 30);
		CHECK_STR(last.policy_reason, "smallest_tree");
	}
	kvp_router_free(r);

	po.balance_abs = 1;
	r = router(&po, 0, 0, 0);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, 100, 4, 1, 0) == 10);
	CHECK(route(r, 100, 4, 1, 0) == 10);
	CHECK_STR(last.policy_reason, "cache_hit");
	CHECK(route(r, 100, 4, 1, 0) == 20);
	CHECK_STR(last.policy_reason, "imbalanced");
	kvp_router_free(r);
}

/*
 * prodstack-kvaware in approximate mode (the index knows what was
 * routed): A (4 blocks) on an empty index: every score 0, the first, 10.
 * A again: 10 matched 64 of 64 tokens and holds the only active request
 * (relative load 1): 1 - 0.5 = 0.5 beats 0 - 0 = 0: 10. With β = 2:
 * 1 - 2 = -1 loses to 0: 20. prodstack-loadaware the same with blocks.
 */
static void
test_prodstack(void)
{
	static const int pol[2] = {KVP_POLICY_PS_KVAWARE,
	                           KVP_POLICY_PS_LOADAWARE};

	for (int k = 0; k < 2; k++) {
		struct kvp_policy_opts po;
		struct kvp_router *r;

		kvp_policy_opts_init(&po);
		po.policy = pol[k];
		r = router(&po, 1, 0, 0);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK(route(r, 100, 4, 1, 0) == 10);
		CHECK(route(r, 100, 4, 1, 0) == 10);
		CHECK(last.cand[last.chosen].overlap == 4);
		kvp_router_free(r);

		po.beta = 2;
		r = router(&po, 1, 0, 0);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK(route(r, 100, 4, 1, 0) == 10);
		CHECK(route(r, 100, 4, 1, 0) == 20);
		/* max_overlap still names the best overlap: worker 10 */
		CHECK(last.max_overlap >= 0 &&
		      last.cand[last.max_overlap].worker_id == 10);
		kvp_router_free(r);
	}
}

/*
 * Run totals under round-robin, four requests of 2 distinct blocks each
 * (10, 20, 30, 10): routed 2 1 1, max 2, mean 4/3: 1.5. Active blocks
 * summed over decisions (each candidate's after each commit): after 1:
 * 2 0 0; 2: 2 2 0; 3: 2 2 2; 4: 4 2 2: sums 10 6 4, max 10, mean 20/3:
 * 1.5.
 */
static void
test_totals(void)
{
	struct kvp_router *r = with_policy(KVP_POLICY_ROUND_ROBIN);
	struct kvp_lab_totals t;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	for (int k = 0; k < 4; k++)
		CHECK(route(r, 100 * (uint64_t)(k + 1), 2, 1, 0) > 0);
	CHECK(kvp_lab_run_totals(r, &t) == 0);
	CHECK(t.routed_max == 2 && t.routed_max_mean == 1.5);
	CHECK(t.blocks_max == 10 && t.blocks_max_mean == 1.5);
	kvp_router_free(r);
}

/*
 * Curves through the lab (round-robin, --mrc): X (2 blocks) on 10, Y on
 * 20, Z on 30, X on 10 again. Worker 10 was sent 4 blocks, 2 cold; the
 * second X touches x2 then x1 (deepest first) and finds x1 the most
 * recent (a hit at capacity 1) and x2 second (capacity 2): hits 1 at
 * capacity 1, 2 from 2 on. The fleet: 8 blocks, 6 cold.
 */
static void
test_mrc(void)
{
	struct kvp_policy_opts po;
	struct kvp_router *r;
	struct kvp_mrc m;

	kvp_policy_opts_init(&po);
	po.policy = KVP_POLICY_ROUND_ROBIN;
	po.mrc = 1;
	r = router(&po, 0, 0, 0);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, 100, 2, 1, 0) == 10);
	CHECK(route(r, 200, 2, 1, 0) == 20);
	CHECK(route(r, 300, 2, 1, 0) == 30);
	CHECK(route(r, 100, 2, 1, 0) == 10);
	CHECK(kvp_lab_mrc(r, 0, &m) == 0);
	CHECK(m.worker_id == 10 && m.dp_rank == 0);
	CHECK(m.accesses == 4 && m.cold == 2);
	CHECK(m.hits_le[0] == 1 && m.hits_le[1] == 2);
	CHECK(kvp_lab_mrc(r, 2, &m) == 0 && m.worker_id == 30 &&
	      m.accesses == 2 && m.cold == 2 && m.hits_le[1] == 0);
	CHECK(kvp_lab_mrc(r, 3, &m) == -1);
	CHECK(kvp_lab_mrc(r, SIZE_MAX, &m) == 0);
	CHECK(m.accesses == 8 && m.cold == 6 && m.hits_le[1] == 2);
	kvp_router_free(r);

	/* a lab without --mrc has no curve */
	r = with_policy(KVP_POLICY_DYNAMO);
	CHECK(r != NULL && kvp_lab_mrc(r, 0, &m) == -1);
	kvp_router_free(r);
}

int
main(void)
{
	test_names_and_defaults();
	test_attach();
	test_round_robin();
	test_random();
	test_least_loaded();
	test_sglang();
	test_prodstack();
	test_totals();
	test_mrc();
	return UNIT_DONE();
}
