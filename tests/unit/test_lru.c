/* SPDX-License-Identifier: MIT */
/*
 * test_lru.c — bounded per-worker caches (lib/lab/lru.c, through the lab
 * of lib/lab/lab.h on a router). route-score(1), --capacity-blocks: each
 * worker's cache holds at most N blocks; a routed request touches its
 * blocks deepest first and root last (a hit refreshes, a miss inserts);
 * after each insert over N the least recently touched block is evicted,
 * from the cache and from the index, and a prefix match stops at the
 * first missing block. --emit-events: each request's net change as a
 * store per run of new blocks, root first, then one removal of the blocks
 * held before and gone after; replayed, they rebuild the caches exactly.
 *
 * Checked three ways: small cases worked out by hand (eviction order,
 * capacity 1, a request longer than the cache), a naive LRU model in
 * this file over a random stream (every worker's overlap, tree size and
 * the eviction count after every request), and the emitted events
 * replayed into a second router, whose overlaps must match and whose
 * event-id cursors must see no gap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"
#include "route/route_hash.h"
#include "route/router.h"
#include "unit.h"

#define BS 4
#define NW 3

static unsigned serial;

static struct kvp_router *
router(uint64_t capacity, int emit)
{
	struct kvp_route_opts ro;
	struct kvp_policy_opts po;
	struct kvp_router *r;

	kvp_route_opts_init(&ro);
	ro.block_size = BS;
	r = kvp_router_new(&ro);
	if (r == NULL)
		return NULL;
	for (uint64_t w = 1; w <= NW; w++)
		if (kvp_router_add_candidate(r, w, 0) != 0)
			return NULL;
	if (capacity > 0 || emit) {
		kvp_policy_opts_init(&po);
		po.capacity = capacity;
		po.emit_events = emit;
		if (kvp_lab_attach(r, &po) != 0)
			return NULL;
	}
	return r;
}

/* Routes local[0..n) to worker w (pinned), or queries it (w == 0):
 * overlap[k] gets worker k+1's overlap, tree[k] its tree size. */
static int
route(struct kvp_router *r, const uint64_t *local, size_t n, uint64_t w,
      uint32_t *overlap, uint64_t *tree)
{
	char id[32];
	struct kvp_request q;
	struct kvp_decision dec;
	struct kvp_diag d;

	memset(&q, 0, sizeof q);
	q.id_len = (size_t)snprintf(id, sizeof id, "q%u", serial++);
	q.id = id;
	q.local = local;
	q.n = n;
	q.isl = n * BS;
	q.commit = w != 0;
	q.pinned = w != 0;
	q.pin_worker = w;
	if (kvp_router_route(r, &q, &dec, &d) != 0)
		return -1;
	for (size_t k = 0; k < dec.ncand; k++) {
		uint64_t x = dec.cand[k].worker_id;

		if (x >= 1 && x <= NW) {
			if (overlap != NULL)
				overlap[x - 1] = dec.cand[k].overlap;
			if (tree != NULL)
				tree[x - 1] = dec.cand[k].tree_size;
		}
	}
	return 0;
}

static uint32_t
overlap_on(struct kvp_router *r, const uint64_t *local, size_t n, uint64_t w)
{
	uint32_t ov[NW] = {0};

	CHECK(route(r, local, n, 0, ov, NULL) == 0);
	return ov[w - 1];
}

static uint64_t
evictions(struct kvp_router *r)
{
	struct kvp_lab_totals t;

	CHECK(kvp_lab_run_totals(r, &t) == 0);
	return t.evictions;
}

/*
 * Capacity 4, worker 1: [a1 a2] then [b1 b2] (MRU first: b1 b2 a1 a2),
 * [a1] refreshes a1 (a1 b1 b2 a2); [c1] evicts the least recent, a2, not
 * the oldest inserted; [d1] then evicts b2.
 */
static void
test_order(void)
{
	static const uint64_t a[2] = {101, 102}, b[2] = {201, 202},
	                      c[1] = {301}, dd[1] = {401};
	struct kvp_router *r = router(4, 1);
	const struct kvp_sim_event *ev;
	uint64_t seq[2];
	size_t n;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, a, 2, 1, NULL, NULL) == 0);
	CHECK(route(r, b, 2, 1, NULL, NULL) == 0);
	CHECK(route(r, a, 1, 1, NULL, NULL) == 0);
	CHECK(evictions(r) == 0);
	CHECK(overlap_on(r, a, 2, 1) == 2 && overlap_on(r, b, 2, 1) == 2);
	CHECK(route(r, c, 1, 1, NULL, NULL) == 0);
	CHECK(evictions(r) == 1);
	/* the events of [c1]: the store of c1 (a root), then a2's removal */
	ev = kvp_lab_sim_events(r, &n);
	CHECK(n == 2 && ev != NULL);
	kvp_route_chain(a, 2, seq);
	if (n == 2 && ev != NULL) {
		CHECK(ev[0].removed == 0 && ev[0].n == 1 && !ev[0].has_parent);
		CHECK(ev[0].ext[0] == 301 && ev[0].local[0] == 301);
		CHECK(ev[0].worker_id == 1 && ev[0].dp_rank == 0);
		CHECK(ev[1].removed == 1 && ev[1].n == 1 &&
		      ev[1].ext[0] == seq[1]);
		/* worker 1's events so far: [a] 1, [b] 2, [c] 3 and 4 */
		CHECK(ev[0].event_id == 3 && ev[1].event_id == 4);
	}
	CHECK(overlap_on(r, a, 2, 1) == 1); /* a2 is gone */
	CHECK(overlap_on(r, b, 2, 1) == 2);
	CHECK(overlap_on(r, c, 1, 1) == 1);
	/* the other workers hold nothing */
	CHECK(overlap_on(r, a, 2, 2) == 0 && overlap_on(r, b, 2, 3) == 0);
	CHECK(route(r, dd, 1, 1, NULL, NULL) == 0);
	CHECK(evictions(r) == 2);
	CHECK(overlap_on(r, b, 2, 1) == 1 && overlap_on(r, a, 1, 1) == 1);
	/* a query changes nothing */
	CHECK(route(r, b, 2, 0, NULL, NULL) == 0);
	CHECK(evictions(r) == 2);
	kvp_router_free(r);
}

/*
 * Capacity 3, worker 2: [1 2 3] fills it; [1 2 3 4 5] touches 5 (evicts
 * 3), 4 (evicts 2), 3 (evicts 1), 2 (evicts 5), 1 (evicts 4): five
 * evictions, and the cache is [1 2 3] again, so the request's net change
 * is nothing: no event.
 */
static void
test_longer_than_cache(void)
{
	static const uint64_t x[5] = {11, 12, 13, 14, 15};
	struct kvp_router *r = router(3, 1);
	size_t n = 99;
	uint64_t tree[NW] = {0};
	uint32_t ov[NW] = {0};

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, x, 3, 2, NULL, NULL) == 0);
	(void)kvp_lab_sim_events(r, &n);
	CHECK(n == 1); /* one store of three blocks */
	CHECK(route(r, x, 5, 2, NULL, NULL) == 0);
	CHECK(evictions(r) == 5);
	CHECK(kvp_lab_sim_events(r, &n) == NULL && n == 0);
	CHECK(route(r, x, 5, 0, ov, tree) == 0);
	CHECK(ov[1] == 3 && tree[1] == 3);
	kvp_router_free(r);
}

/*
 * Capacity 1: [1 2 3] keeps the root only (two evictions; a store of 1
 * block); [7] evicts it: a store of 7, a removal of 1.
 */
static void
test_capacity_one(void)
{
	static const uint64_t x[3] = {1, 2, 3}, y[1] = {7};
	struct kvp_router *r = router(1, 1);
	const struct kvp_sim_event *ev;
	size_t n;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, x, 3, 3, NULL, NULL) == 0);
	CHECK(evictions(r) == 2);
	ev = kvp_lab_sim_events(r, &n);
	CHECK(n == 1 && ev != NULL && ev[0].n == 1 && ev[0].ext[0] == 1 &&
	      ev[0].event_id == 1);
	CHECK(overlap_on(r, x, 3, 3) == 1);
	CHECK(route(r, y, 1, 3, NULL, NULL) == 0);
	CHECK(evictions(r) == 3);
	ev = kvp_lab_sim_events(r, &n);
	CHECK(n == 2 && ev != NULL);
	if (n == 2 && ev != NULL) {
		CHECK(!ev[0].removed && ev[0].ext[0] == 7);
		CHECK(ev[1].removed && ev[1].n == 1 && ev[1].ext[0] == 1);
		CHECK(ev[0].event_id == 2 && ev[1].event_id == 3);
	}
	CHECK(overlap_on(r, x, 3, 3) == 0 && overlap_on(r, y, 1, 3) == 1);
	kvp_router_free(r);
}

/* Capacity 0 is no bounded cache (policy.h): no LRU, no events; without
 * approximate mode the index learns nothing. */
static void
test_capacity_zero(void)
{
	static const uint64_t x[3] = {1, 2, 3};
	struct kvp_router *r = router(0, 1);
	struct kvp_lab_totals t;
	size_t n = 5;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, x, 3, 1, NULL, NULL) == 0);
	CHECK(kvp_lab_sim_events(r, &n) == NULL && n == 0);
	CHECK(kvp_lab_run_totals(r, &t) == 0);
	CHECK(t.capacity_on == 0 && t.evictions == 0);
	CHECK(overlap_on(r, x, 3, 1) == 0);
	kvp_router_free(r);
}

/* ---- the model ---------------------------------------------------------- */

#define MAXN 12
#define MAXCAP 64

/* A block is its prefix of local hashes; the model names it by an FNV-1a
 * hash of that prefix (not the router's hash). */
static uint64_t
block_id(const uint64_t *local, size_t depth)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i <= depth; i++)
		for (int b = 0; b < 8; b++)
			h = (h ^ ((local[i] >> (8 * b)) & 0xff)) *
			    1099511628211ull;
	return h;
}

struct mcache {
	uint64_t v[MAXCAP + 1]; /* most recent first */
	size_t n;
};

static long
m_find(const struct mcache *c, uint64_t x)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i] == x)
			return (long)i;
	return -1;
}

/* Touches x; returns 1 when that evicted a block (cap >= 1). */
static int
m_touch(struct mcache *c, uint64_t x, size_t cap)
{
	long i = m_find(c, x);
	int ev = 0;

	if (i < 0) {
		if (c->n == cap)
			ev = 1; /* the least recent falls off */
		else
			c->n++;
		i = (long)c->n - 1;
	}
	memmove(c->v + 1, c->v, (size_t)i * sizeof *c->v);
	c->v[0] = x;
	return ev;
}

static uint32_t
m_overlap(const struct mcache *c, const uint64_t *local, size_t n)
{
	uint32_t k = 0;

	while (k < n && m_find(c, block_id(local, k)) >= 0)
		k++;
	return k;
}

/* A request: a prefix of one of `universe` conversations, its last block
 * sometimes varied; local hashes spread over all 64 bits (above 2^63
 * too). */
static size_t
request(uint64_t *rng, uint64_t *local, int universe)
{
	uint64_t conv, h;
	size_t n;

	*rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
	conv = (*rng >> 33) % (uint64_t)universe;
	n = 1 + (size_t)((*rng >> 20) % MAXN);
	h = conv * 0x9e3779b97f4a7c15ull + 0x8000000000000000ull;
	for (size_t i = 0; i < n; i++) {
		h ^= h >> 29;
		h *= 0xbf58476d1ce4e5b9ull;
		local[i] = h + (i == n - 1 ? (*rng >> 40) % 3 : 0);
	}
	return n;
}

/* Applies one emitted event to the replay router: 0, or 1 when it
 * failed or its event id was not the next one. */
static int
replay(struct kvp_router *rr, const struct kvp_sim_event *e)
{
	struct kvp_event ev;
	struct kvp_event_result res;
	struct kvp_diag d;

	memset(&ev, 0, sizeof ev);
	ev.kind = e->removed ? KVP_EV_REMOVED : KVP_EV_STORED;
	ev.worker_id = e->worker_id;
	ev.dp_rank = e->dp_rank;
	ev.has_event_id = 1;
	ev.event_id = e->event_id;
	ev.has_parent = e->has_parent;
	ev.parent = e->parent;
	ev.ext = e->ext;
	ev.local = e->removed ? NULL : e->local;
	ev.n = e->n;
	return kvp_router_apply(rr, &ev, &res, &d) != 0 || res.gap || res.stale;
}

static void
run_model(size_t cap, int universe, int nreq, uint64_t seed)
{
	struct kvp_router *r = router(cap, 1), *rr = router(0, 0);
	static struct mcache mc[NW];
	uint64_t rng = seed, local[MAXN], probe[MAXN], ev_model = 0;
	int bad = 0, bad_replay = 0;

	CHECK(r != NULL && rr != NULL);
	if (r == NULL || rr == NULL)
		return;
	memset(mc, 0, sizeof mc);
	for (int q = 0; q < nreq; q++) {
		size_t n = request(&rng, local, universe), np, nev;
		uint64_t w = 1 + (rng >> 50) % NW, tree[NW];
		uint32_t ov[NW], ovr[NW];
		const struct kvp_sim_event *ev;

		if (route(r, local, n, w, NULL, NULL) != 0) {
			bad++;
			break;
		}
		for (size_t i = n; i-- > 0;)
			ev_model += (uint64_t)m_touch(&mc[w - 1],
			                              block_id(local, i), cap);
		ev = kvp_lab_sim_events(r, &nev);
		for (size_t k = 0; k < nev; k++)
			bad_replay += replay(rr, &ev[k]);
		/* a probe: every worker's overlap and tree size */
		np = request(&rng, probe, universe);
		if (route(r, probe, np, 0, ov, tree) != 0 ||
		    route(rr, probe, np, 0, ovr, NULL) != 0) {
			bad++;
			break;
		}
		for (int k = 0; k < NW; k++) {
			bad += ov[k] != m_overlap(&mc[k], probe, np);
			bad += tree[k] != mc[k].n;
			bad_replay += ovr[k] != ov[k];
		}
		bad += evictions(r) != ev_model;
	}
	if (bad || bad_replay)
		fprintf(stderr, "model cap %zu: %d mismatches, replay %d\n",
		        cap, bad, bad_replay);
	CHECK(bad == 0);
	CHECK(bad_replay == 0);
	CHECK(ev_model > 0); /* the stream did evict */
	kvp_router_free(r);
	kvp_router_free(rr);
}

int
main(void)
{
	test_order();
	test_longer_than_cache();
	test_capacity_one();
	test_capacity_zero();
	run_model(1, 3, 300, 1);
	run_model(5, 4, 1500, 2);
	run_model(16, 12, 2000, 3);
	run_model(MAXCAP, 40, 2000, 4);
	return UNIT_DONE();
}
