/* SPDX-License-Identifier: MIT */
/*
 * test_simtime.c — simulated time (lib/lab/simtime.c, through the lab of
 * lib/lab/lab.h on a router). route-score(1): per worker one prefill
 * server, first come first served, takes (ISL - cached tokens) / rate from
 * max(arrival, end of the previous prefill); the first token comes at its
 * end (TTFT); decoding is processor sharing (the decode rate split
 * equally among the worker's requests in decode) and a request with its
 * output_length tokens is done and leaves the load without a free record;
 * completions due at or before a request's timestamp are applied first;
 * a rate of 0 (or no output_length) makes a phase instantaneous; TTFT
 * p50 and p99 are nearest rank. simtime.c adds: a request without a
 * timestamp arrives at the router's clock, and one freed otherwise keeps
 * its decode share until its finish comes up.
 *
 * Every time below is worked out by hand in the comments. Rates are
 * powers of two where an exact tie is checked ("at or before"); times
 * that go through the decode rate are checked a millisecond either side.
 */
#include <stdio.h>
#include <string.h>

#include "lab/lab.h"
#include "route/router.h"
#include "unit.h"

#define BS 16

static struct kvp_router *
router(double prefill, double decode, uint64_t capacity, int nworkers)
{
	struct kvp_route_opts ro;
	struct kvp_policy_opts po;
	struct kvp_router *r;

	kvp_route_opts_init(&ro);
	ro.block_size = BS;
	r = kvp_router_new(&ro);
	if (r == NULL)
		return NULL;
	for (int w = 1; w <= nworkers; w++)
		if (kvp_router_add_candidate(r, (uint64_t)w, 0) != 0)
			return NULL;
	kvp_policy_opts_init(&po);
	po.prefill_tps = prefill;
	po.decode_tps = decode;
	po.capacity = capacity;
	if (kvp_lab_attach(r, &po) != 0)
		return NULL;
	return r;
}

/* A request of nblocks blocks with local hashes base, base+1, ...; ts < 0:
 * none; osl < 0: none; worker 0: a query (nothing committed). */
static int
send(struct kvp_router *r, const char *id, uint64_t base, size_t nblocks,
     uint64_t isl, long ts, long osl, uint64_t worker)
{
	static uint64_t local[256];
	struct kvp_request q;
	struct kvp_decision dec;
	struct kvp_diag d;

	for (size_t i = 0; i < nblocks; i++)
		local[i] = base + i;
	memset(&q, 0, sizeof q);
	q.id = id;
	q.id_len = strlen(id);
	q.local = local;
	q.n = nblocks;
	q.isl = isl;
	q.has_ts = ts >= 0;
	q.ts_ms = ts >= 0 ? (uint64_t)ts : 0;
	q.has_osl = osl >= 0;
	q.osl = osl >= 0 ? (uint64_t)osl : 0;
	q.commit = worker != 0;
	q.pinned = worker != 0;
	q.pin_worker = worker;
	return kvp_router_route(r, &q, &dec, &d);
}

/* Active requests on every worker after moving the clock to ts (a
 * query at ts: completions due by then are applied first). */
static uint64_t
active_at(struct kvp_router *r, long ts)
{
	struct kvp_cand_total t[4];
	size_t n;
	uint64_t sum = 0;

	CHECK(send(r, "probe", 1u << 30, 1, BS, ts, -1, 0) == 0);
	n = kvp_router_totals(r, t, 4);
	for (size_t k = 0; k < n; k++)
		sum += t[k].active_requests;
	return sum;
}

static struct kvp_lab_totals
totals(struct kvp_router *r)
{
	struct kvp_lab_totals t;

	memset(&t, 0, sizeof t);
	CHECK(kvp_lab_run_totals(r, &t) == 0);
	return t;
}

/*
 * Prefill only (decode rate 0), prefill 1024 tokens/s, one worker, and a
 * bounded cache so the index learns what was routed:
 *   R1 ts 0     isl 1024  starts 0,    ends 1000  TTFT 1000
 *   R2 ts 500   isl 512   starts 1000, ends 1500  TTFT 1000
 *   R3 no ts (clock 1500 after the probes) isl 256: ends 1750, TTFT 250
 *   R4 ts 2000  isl 2048  ends 4000    TTFT 2000
 *   R5 ts 5000  R1's blocks again: all 1024 tokens cached, TTFT 0
 * TTFTs sorted 0 250 1000 1000 2000: p50 the 3rd (ceil(2.5)) 1000, p99
 * the 5th 2000, mean 4250 / 5 = 850.
 */
static void
test_prefill_fcfs(void)
{
	struct kvp_router *r = router(1024, 0, 100000, 1);
	struct kvp_lab_totals t;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(send(r, "r1", 1000, 64, 1024, 0, -1, 1) == 0);
	CHECK(send(r, "r2", 2000, 32, 512, 500, -1, 1) == 0);
	CHECK(active_at(r, 999) == 2);
	CHECK(active_at(r, 1000) == 1); /* due at 1000: applied first */
	CHECK(active_at(r, 1499) == 1);
	CHECK(active_at(r, 1500) == 0);
	CHECK(send(r, "r3", 3000, 16, 256, -1, -1, 1) == 0);
	CHECK(active_at(r, 1749) == 1);
	CHECK(active_at(r, 1750) == 0);
	CHECK(send(r, "r4", 4000, 128, 2048, 2000, -1, 1) == 0);
	CHECK(active_at(r, 3999) == 1);
	CHECK(active_at(r, 4000) == 0);
	CHECK(send(r, "r5", 1000, 64, 1024, 5000, -1, 1) == 0);
	CHECK(active_at(r, 5000) == 0);
	t = totals(r);
	CHECK(t.simtime_on == 1);
	CHECK_U64(t.ttft_n, 5);
	CHECK(t.ttft_p50_ms == 1000);
	CHECK(t.ttft_p99_ms == 2000);
	CHECK(t.ttft_mean_ms == 850);
	CHECK_U64(t.completed, 5);
	kvp_router_free(r);
}

/*
 * Processor sharing: prefill 1000 tokens/s, decode 100 tokens/s, one
 * worker.
 *   A ts 0 isl 160 osl 100: prefill 0..160, then decodes alone:
 *     16 tokens by 320
 *   B ts 0 isl 160 osl 20: prefill 160..320, TTFT 320
 *   from 320 both decode at 50 tokens/s: B's 20 take 400 ms, done at
 *   720; A has 36 then, its last 64 alone take 640 ms: done at 1360.
 */
static void
test_processor_sharing(void)
{
	struct kvp_router *r = router(1000, 100, 0, 1);
	struct kvp_lab_totals t;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(send(r, "A", 100, 10, 160, 0, 100, 1) == 0);
	CHECK(send(r, "B", 200, 10, 160, 0, 20, 1) == 0);
	CHECK(active_at(r, 719) == 2);
	CHECK(active_at(r, 721) == 1);
	CHECK(totals(r).completed == 1);
	CHECK(active_at(r, 1359) == 1);
	CHECK(active_at(r, 1361) == 0);
	t = totals(r);
	CHECK_U64(t.completed, 2);
	CHECK_U64(t.ttft_n, 2);
	/* TTFTs 160 and 320: p50 the 1st, p99 the 2nd */
	CHECK(t.ttft_p50_ms > 159.999 && t.ttft_p50_ms < 160.001);
	CHECK(t.ttft_p99_ms > 319.999 && t.ttft_p99_ms < 320.001);
	kvp_router_free(r);
}

/*
 * Three sharing: as above with C ts 0 isl 160 osl 10 (prefill 320..480).
 * By 480 A has 16 + 8 tokens, B 8; from 480 each of three gets 100/3
 * tokens/s: C's 10 take 300 ms, done at 780 (A 34, B 18); then two at
 * 50: B's last 2 take 40 ms, done at 820 (A 36); A's last 64 alone take
 * 640 ms: done at 1460.
 */
static void
test_three_share(void)
{
	struct kvp_router *r = router(1000, 100, 0, 1);

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(send(r, "A", 100, 10, 160, 0, 100, 1) == 0);
	CHECK(send(r, "B", 200, 10, 160, 0, 20, 1) == 0);
	CHECK(send(r, "C", 300, 10, 160, 0, 10, 1) == 0);
	CHECK(active_at(r, 779) == 3);
	CHECK(active_at(r, 781) == 2);
	CHECK(active_at(r, 819) == 2);
	CHECK(active_at(r, 821) == 1);
	CHECK(active_at(r, 1459) == 1);
	CHECK(active_at(r, 1461) == 0);
	CHECK_U64(totals(r).completed, 3);
	kvp_router_free(r);
}

/*
 * As above, but B is freed (a free record) at 400, while decoding: it
 * keeps its share until its finish at 720, so A still ends at 1360 (had
 * the share gone back to A at 400, A would end at 1200: 16 + 4 tokens
 * by 400, 80 more at 100 tokens/s). B's end is not a simulated
 * completion.
 */
static void
test_freed_keeps_share(void)
{
	struct kvp_router *r = router(1000, 100, 0, 1);
	struct kvp_diag d;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(send(r, "A", 100, 10, 160, 0, 100, 1) == 0);
	CHECK(send(r, "B", 200, 10, 160, 0, 20, 1) == 0);
	CHECK(active_at(r, 400) == 2);
	CHECK(kvp_router_free_request(r, "B", 1, &d) == 0);
	CHECK(active_at(r, 401) == 1);
	CHECK(active_at(r, 1300) == 1);
	CHECK(active_at(r, 1359) == 1);
	CHECK(active_at(r, 1361) == 0);
	CHECK_U64(totals(r).completed, 1);
	kvp_router_free(r);
}

/* Each worker has its own prefill server: two requests at 0 on two
 * workers both have TTFT 1000; on one worker the second waits. */
static void
test_workers_independent(void)
{
	struct kvp_router *r = router(1024, 0, 0, 2);
	struct kvp_lab_totals t;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(send(r, "x", 100, 64, 1024, 0, -1, 1) == 0);
	CHECK(send(r, "y", 200, 64, 1024, 0, -1, 2) == 0);
	CHECK(send(r, "z", 300, 64, 1024, 0, -1, 2) == 0);
	CHECK(active_at(r, 1000) == 1); /* z: 1000..2000 on worker 2 */
	CHECK(active_at(r, 2000) == 0);
	t = totals(r);
	/* 1000 1000 2000: p50 the 2nd (ceil(1.5)), p99 the 3rd */
	CHECK(t.ttft_p50_ms == 1000 && t.ttft_p99_ms == 2000);
	kvp_router_free(r);
}

/* Instantaneous phases: no output length means no decode even with a
 * decode rate; a prefill rate of 0 means TTFT 0 (decode still takes
 * osl / rate: 64 tokens at 64 tokens/s, done at 1000). */
static void
test_instantaneous(void)
{
	struct kvp_router *r = router(1024, 64, 0, 1);
	struct kvp_lab_totals t;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(send(r, "no-osl", 100, 64, 1024, 0, -1, 1) == 0);
	CHECK(active_at(r, 999) == 1);
	CHECK(active_at(r, 1000) == 0);
	/* osl 0: done at the prefill's end too */
	CHECK(send(r, "osl0", 200, 64, 1024, 2000, 0, 1) == 0);
	CHECK(active_at(r, 3000) == 0);
	kvp_router_free(r);

	r = router(0, 64, 0, 1);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(send(r, "d", 100, 64, 1024, 0, 64, 1) == 0);
	CHECK(active_at(r, 999) == 1);
	CHECK(active_at(r, 1000) == 0);
	t = totals(r);
	CHECK(t.ttft_n == 1 && t.ttft_p50_ms == 0 && t.ttft_mean_ms == 0);
	kvp_router_free(r);
}

/* No routed request: no TTFT sample, percentiles 0; a query is no
 * sample either. */
static void
test_empty(void)
{
	struct kvp_router *r = router(100, 100, 0, 1);
	struct kvp_lab_totals t;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(active_at(r, 10) == 0);
	t = totals(r);
	CHECK(t.simtime_on == 1 && t.ttft_n == 0 && t.ttft_p50_ms == 0 &&
	      t.ttft_p99_ms == 0 && t.ttft_mean_ms == 0 && t.completed == 0);
	kvp_router_free(r);
}

int
main(void)
{
	test_prefill_fcfs();
	test_processor_sharing();
	test_three_share();
	test_freed_keeps_share();
	test_workers_independent();
	test_instantaneous();
	test_empty();
	return UNIT_DONE();
}
