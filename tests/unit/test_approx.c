/* SPDX-License-Identifier: MIT */
/*
 * test_approx.c — approximate (TTL) mode (lib/route/approx.c), through
 * the router (router.h) and the functions route_internal.h declares.
 * route-score(1), Approximate mode: the chosen worker is assumed to cache
 * the request's full blocks until --ttl after the request's ts_ms;
 * routing the same blocks again refreshes them; when more than
 * --approx-max-blocks blocks are held, the oldest are pruned down to 80%;
 * events are applied as well. approx.c adds: --ttl 0 never expires; the
 * flat index (before any event) and the radix tree behave the same; a
 * touch that leaves a block's expiry unchanged keeps its place in the
 * queue (so pruning order is the order of the last expiry change).
 *
 * Checked by cases worked out by hand, and by a model in this file (live
 * (worker, block) pairs with their expiry and the serial of their last
 * expiry change; blocks named by the model's own hash of their prefix)
 * over random streams, in the flat index, in the tree (after an event)
 * and switching between them mid-stream, with 3 workers and with 70
 * (past the flat index's 64 holders and the 16-holder tag lines).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bigmem.h"
#include "route/index.h"
#include "route/route_hash.h"
#include "route/route_internal.h"
#include "route/router.h"
#include "unit.h"

#define BS 4
#define MAXW 70

static unsigned serial;

static struct kvp_router *
router(uint64_t ttl, uint64_t max, int nworkers, int tree)
{
	struct kvp_route_opts ro;
	struct kvp_router *r;

	kvp_route_opts_init(&ro);
	ro.block_size = BS;
	ro.approx = 1;
	ro.ttl_ms = ttl;
	ro.approx_max = max;
	r = kvp_router_new(&ro);
	if (r == NULL)
		return NULL;
	for (int w = 1; w <= nworkers; w++)
		if (kvp_router_add_candidate(r, (uint64_t)w, 0) != 0)
			return NULL;
	if (tree) {
		/* an event (a store on a worker of its own) moves the index
		 * into the radix tree for good */
		static const uint64_t ext[1] = {0xabcdef}, loc[1] = {0xabcdef};
		struct kvp_event ev;
		struct kvp_event_result res;
		struct kvp_diag d;

		memset(&ev, 0, sizeof ev);
		ev.kind = KVP_EV_STORED;
		ev.worker_id = 1000;
		ev.ext = ext;
		ev.local = loc;
		ev.n = 1;
		if (kvp_router_apply(r, &ev, &res, &d) != 0)
			return NULL;
	}
	return r;
}

/* Routes (w > 0, pinned) or queries (w == 0) local[0..n) at ts:
 * overlap[k] and tree[k] get worker k+1's. */
static int
route(struct kvp_router *r, const uint64_t *local, size_t n, uint64_t ts,
      uint64_t w, uint32_t *overlap, uint64_t *tree)
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
	q.has_ts = 1;
	q.ts_ms = ts;
	q.commit = w != 0;
	q.pinned = w != 0;
	q.pin_worker = w;
	if (kvp_router_route(r, &q, &dec, &d) != 0)
		return -1;
	for (size_t k = 0; k < dec.ncand; k++) {
		uint64_t x = dec.cand[k].worker_id;

		if (x >= 1 && x <= MAXW) {
			if (overlap != NULL)
				overlap[x - 1] = dec.cand[k].overlap;
			if (tree != NULL)
				tree[x - 1] = dec.cand[k].tree_size;
		}
	}
	return 0;
}

static uint32_t
overlap_at(struct kvp_router *r, const uint64_t *local, size_t n, uint64_t ts,
           uint64_t w)
{
	uint32_t ov[MAXW] = {0};

	CHECK(route(r, local, n, ts, 0, ov, NULL) == 0);
	return ov[w - 1];
}

static const uint64_t A[4] = {11, 12, 13, 14}, B[4] = {21, 22, 23, 24},
                      C[3] = {31, 32, 33}, D[3] = {41, 42, 43},
                      E[3] = {51, 52, 53}, F[3] = {61, 62, 63};

/* TTL 1000: A routed at 0 is held at 999, gone by 1001; routed again at
 * 600 (refreshed) it is held at 1200 and gone by 1601; refreshing only
 * its first two blocks keeps those two. */
static void
test_ttl(int tree)
{
	struct kvp_router *r = router(1000, 1000, 2, tree);

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, A, 4, 0, 1, NULL, NULL) == 0);
	CHECK(overlap_at(r, A, 4, 999, 1) == 4);
	CHECK(overlap_at(r, A, 4, 999, 2) == 0);
	CHECK(overlap_at(r, A, 4, 1001, 1) == 0);
	CHECK_U64(kvp_router_stats(r)->approx_expired, 4);

	CHECK(route(r, B, 4, 2000, 1, NULL, NULL) == 0);
	CHECK(route(r, B, 4, 2600, 1, NULL, NULL) == 0);
	CHECK(overlap_at(r, B, 4, 3200, 1) == 4);
	CHECK(overlap_at(r, B, 4, 3601, 1) == 0);

	CHECK(route(r, C, 3, 4000, 2, NULL, NULL) == 0);
	CHECK(route(r, C, 2, 4600, 2, NULL, NULL) == 0);
	CHECK(overlap_at(r, C, 3, 5200, 2) == 2);
	CHECK(overlap_at(r, C, 3, 5601, 2) == 0);
	CHECK_U64(kvp_router_stats(r)->approx_expired, 4 + 4 + 3);
	CHECK_U64(kvp_router_stats(r)->approx_pruned, 0);
	kvp_router_free(r);

	/* --ttl 0: never */
	r = router(0, 1000, 1, tree);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, A, 4, 0, 1, NULL, NULL) == 0);
	CHECK(overlap_at(r, A, 4, 1000000000, 1) == 4);
	CHECK_U64(kvp_router_stats(r)->approx_expired, 0);
	kvp_router_free(r);
}

/*
 * --approx-max-blocks 10 (pruned down to 8), no expiry in sight: C, D,
 * E (3 blocks each, worker 1) are 9 pairs; F makes 12: the oldest go,
 * C's 3 and D's root, so D matches nothing though its two deeper blocks
 * stay (tree size 8); E and F match 3. Across workers the same: the
 * oldest regardless of worker.
 */
static void
test_prune(int tree)
{
	struct kvp_router *r = router(1000000, 10, 2, tree);
	uint64_t tr[MAXW] = {0};
	uint32_t ov[MAXW] = {0};
	size_t nodes, bytes;
	uint64_t pairs;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	CHECK(route(r, C, 3, 0, 1, NULL, NULL) == 0);
	CHECK(route(r, D, 3, 1, 1, NULL, NULL) == 0);
	CHECK(route(r, E, 3, 2, 2, NULL, NULL) == 0);
	CHECK_U64(kvp_router_stats(r)->approx_pruned, 0);
	CHECK(route(r, F, 3, 3, 2, NULL, NULL) == 0);
	CHECK_U64(kvp_router_stats(r)->approx_pruned, 4);
	CHECK(overlap_at(r, C, 3, 4, 1) == 0);
	CHECK(overlap_at(r, D, 3, 4, 1) == 0);
	CHECK(route(r, E, 3, 4, 0, ov, tr) == 0);
	CHECK(ov[1] == 3 && tr[0] == 2 && tr[1] == 6);
	CHECK(overlap_at(r, F, 3, 4, 2) == 3);
	kvp_router_index_totals(r, &nodes, &pairs, &bytes);
	CHECK_U64(pairs, 8 + (uint64_t)tree); /* the event's block too */
	kvp_router_free(r);
}

/* One block, many holders: 70 workers route A at ts 0, 1, ..., 69 (TTL
 * 1000); at 1035 workers 1..36 (expiring at 1000..1035) are gone, 37..70
 * hold it. */
static void
test_many_holders(int tree)
{
	struct kvp_router *r = router(1000, 100000, MAXW, tree);
	uint32_t ov[MAXW];
	uint64_t ts[MAXW];
	int bad = 0;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	for (int w = 1; w <= MAXW; w++)
		CHECK(route(r, A, 4, (uint64_t)w - 1, (uint64_t)w, NULL,
		            NULL) == 0);
	CHECK(route(r, A, 4, 500, 0, ov, ts) == 0);
	for (int w = 1; w <= MAXW; w++)
		bad += ov[w - 1] != 4 || ts[w - 1] != 4;
	CHECK(bad == 0);
	CHECK(route(r, A, 4, 1035, 0, ov, ts) == 0);
	bad = 0;
	for (int w = 1; w <= MAXW; w++)
		bad += ov[w - 1] != (w <= 36 ? 0 : 4) ||
		       ts[w - 1] != (w <= 36 ? 0u : 4u);
	CHECK(bad == 0);
	CHECK_U64(kvp_router_stats(r)->approx_expired, 36 * 4);
	kvp_router_free(r);
}

/* ---- the model ---------------------------------------------------------- */

#define MAXN 8
#define MAXP 20000

struct mpair {
	uint64_t w, block, exp, serial;
	uint64_t parent; /* its parent block's id (depth > 0) */
	size_t depth;
	int indexed; /* in the router's index (see m_unflat) */
};

static struct mpair mp[MAXP];
static size_t nmp;
static uint64_t mserial, m_expired, m_pruned;

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

static long
m_find(uint64_t w, uint64_t block)
{
	for (size_t i = 0; i < nmp; i++)
		if (mp[i].w == w && mp[i].block == block)
			return (long)i;
	return -1;
}

static void
m_drop(size_t i)
{
	mp[i] = mp[--nmp];
}

static void
m_expire(uint64_t now, uint64_t ttl)
{
	if (ttl == 0)
		return;
	for (size_t i = nmp; i-- > 0;)
		if (mp[i].exp <= now) {
			m_drop(i);
			m_expired++;
		}
}

/* Over max: the least serial first, down to max - max/5. */
static void
m_prune(uint64_t max)
{
	if (nmp <= max)
		return;
	while (nmp > max - max / 5) {
		size_t lo = 0;

		for (size_t i = 1; i < nmp; i++)
			if (mp[i].serial < mp[lo].serial)
				lo = i;
		m_drop(lo);
		m_pruned++;
	}
}

static void
m_record(uint64_t w, const uint64_t *local, size_t n, uint64_t now,
         uint64_t ttl, uint64_t max)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t b = block_id(local, i);
		long k = m_find(w, b);

		if (k < 0) {
			mp[nmp++] =
			    (struct mpair){w,
			                   b,
			                   now + ttl,
			                   ++mserial,
			                   i > 0 ? block_id(local, i - 1) : 0,
			                   i,
			                   1};
			continue;
		}
		mp[k].indexed = 1; /* stored again with its request */
		if (mp[k].exp != now + ttl) {
			mp[k].exp = now + ttl;
			mp[k].serial = ++mserial;
		}
	}
	m_prune(max);
	m_expire(now, ttl);
}

static uint32_t
m_overlap(uint64_t w, const uint64_t *local, size_t n)
{
	uint32_t k = 0;

	while (k < n && m_find(w, block_id(local, k)) >= 0)
		k++;
	return k;
}

/* Indexed pairs of worker w (0: all). */
static uint64_t
m_tree(uint64_t w)
{
	uint64_t n = 0;

	for (size_t i = 0; i < nmp; i++)
		n += (w == 0 || mp[i].w == w) && mp[i].indexed;
	return n;
}

/*
 * The flat index moving into the radix tree (approx.c's
 * kvp_approx_unflat): each pair is stored under its holder's parent, so
 * a pair whose holder no longer has its parent (pruning cut its request
 * above it), or has it only unindexed, cannot be matched and is dropped
 * from the index; its TTL entry stays, and counts, until it expires, is
 * pruned or its request stores it again. Matching is unchanged (the
 * prefix stops above it either way); tree sizes and index pairs lose it.
 */
static void
m_unflat(void)
{
	for (size_t d = 0; d <= MAXN; d++)
		for (size_t i = 0; i < nmp; i++) {
			long p;

			if (mp[i].depth != d || d == 0)
				continue;
			p = m_find(mp[i].w, mp[i].parent);
			mp[i].indexed = p >= 0 && mp[p].indexed;
		}
}

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

/* A random stream; mode 0 flat, 1 tree from the start, 2 flat and an
 * event half way. */
static void
run_model(int mode, int nw, uint64_t ttl, uint64_t max, int universe, int nreq,
          uint64_t seed)
{
	struct kvp_router *r = router(ttl, max, nw, mode == 1);
	uint64_t rng = seed, now = 0, local[MAXN], probe[MAXN];
	int bad = 0, badtree = 0, badstat = 0, badpairs = 0;

	CHECK(r != NULL);
	if (r == NULL)
		return;
	nmp = 0;
	mserial = m_expired = m_pruned = 0;
	for (int q = 0; q < nreq; q++) {
		size_t n = request(&rng, local, universe), np;
		uint64_t w = 1 + (rng >> 45) % (uint64_t)nw, tree[MAXW];
		uint32_t ov[MAXW];
		size_t nodes, bytes;
		uint64_t pairs;

		now += (rng >> 10) % (ttl / 3 + 1); /* 0 at times */
		if (mode == 2 && q == nreq / 2) {
			static const uint64_t x[1] = {7};
			struct kvp_event ev;
			struct kvp_event_result res;
			struct kvp_diag d;

			memset(&ev, 0, sizeof ev);
			ev.kind = KVP_EV_STORED;
			ev.worker_id = 1000;
			ev.ext = x;
			ev.local = x;
			ev.n = 1;
			CHECK(kvp_router_apply(r, &ev, &res, &d) == 0);
			m_unflat();
		}
		m_expire(now, ttl);
		if (route(r, local, n, now, w, NULL, NULL) != 0) {
			bad++;
			break;
		}
		m_record(w, local, n, now, ttl, max);
		np = request(&rng, probe, universe);
		if (route(r, probe, np, now, 0, ov, tree) != 0) {
			bad++;
			break;
		}
		for (int k = 0; k < nw; k++) {
			bad += ov[k] != m_overlap((uint64_t)k + 1, probe, np);
			badtree += tree[k] != m_tree((uint64_t)k + 1);
		}
		kvp_router_index_totals(r, &nodes, &pairs, &bytes);
		badpairs += pairs != m_tree(0) + (mode == 1 ||
		                                  (mode == 2 && q >= nreq / 2));
		badstat += kvp_router_stats(r)->approx_expired != m_expired ||
		           kvp_router_stats(r)->approx_pruned != m_pruned;
	}
	if (bad || badtree || badstat || badpairs)
		fprintf(stderr,
		        "model mode %d nw %d ttl %llu max %llu: overlap %d, "
		        "tree %d, counters %d, pairs %d mismatches\n",
		        mode, nw, (unsigned long long)ttl,
		        (unsigned long long)max, bad, badtree, badstat,
		        badpairs);
	CHECK(bad == 0);
	CHECK(badtree == 0);
	CHECK(badstat == 0);
	CHECK(badpairs == 0);
	CHECK(m_expired > 0 || ttl == 0);
	CHECK(m_pruned > 0 || max >= 10000);
	kvp_router_free(r);
}

/* ---- approx.c's functions on a table of its own ------------------------- */

/* The flat index (two holders), its totals, expiry, then the move to
 * the radix tree: the same pairs, matched by kvp_index_match. */
static void
test_direct(void)
{
	static const uint64_t loc[3] = {5, 6, 7};
	struct kvp_arena *ar = kvp_arena_new(); /* as a router lends one */
	struct kvp_index *ix = kvp_index_new_sparse(ar);
	struct kvp_nodes nd;
	struct kvp_approx a;
	struct kvp_request q;
	uint64_t seq[3], expired = 0, pruned = 0, pairs;
	uint32_t ids[3], scores[4];
	size_t nodes, bytes;
	int64_t h1, h2;

	CHECK(ix != NULL);
	if (ix == NULL)
		return;
	kvp_nodes_init(&nd, ar, 1, 1);
	kvp_approx_init(&a, ix, &nd, ar, 100, 1000, 1, &expired, &pruned);
	kvp_route_chain(loc, 3, seq);
	CHECK(kvp_nodes_find_many(&nd, seq, 3, ids) == 0);
	CHECK(kvp_nodes_intern(&nd, seq, loc, 1, 3, ids) == 0);
	memset(&q, 0, sizeof q);
	q.local = loc;
	q.n = 3;
	/* holder (1, 0) gets all three at 0, (2, 0) the first two at 50 */
	CHECK(kvp_approx_record(&a, 1, 0, &q, seq, ids, 0, 0) == 0);
	q.n = 2;
	CHECK(kvp_approx_record(&a, 2, 0, &q, seq, ids, 50, 0) == 0);
	h1 = kvp_index_holder(ix, 1, 0, KVP_TIER_DEVICE, 0);
	h2 = kvp_index_holder(ix, 2, 0, KVP_TIER_DEVICE, 0);
	CHECK(h1 >= 0 && h2 >= 0 && h1 != h2);
	CHECK(kvp_approx_holder_blocks(&a, (uint32_t)h1) == 3);
	CHECK(kvp_approx_holder_blocks(&a, (uint32_t)h2) == 2);
	kvp_approx_totals(&a, &nodes, &pairs, &bytes);
	CHECK(pairs == 5);
	/* at 100 holder 1's blocks expire (0 + 100), holder 2's stay */
	kvp_approx_expire(&a, 99);
	CHECK(expired == 0);
	kvp_approx_expire(&a, 100);
	CHECK(expired == 3 && pruned == 0);
	CHECK(kvp_approx_holder_blocks(&a, (uint32_t)h1) == 0);
	CHECK(kvp_approx_holder_blocks(&a, (uint32_t)h2) == 2);
	/* into the tree: holder 2 matches its two blocks */
	CHECK(kvp_approx_unflat(&a) == 0);
	CHECK(kvp_approx_unflat(&a) == 0); /* once is enough */
	kvp_approx_totals(&a, &nodes, &pairs, &bytes);
	CHECK(pairs == 2);
	CHECK(kvp_index_nholders(ix) <= 4);
	memset(scores, 0xff, sizeof scores);
	kvp_index_match(ix, loc, 3, 0, scores);
	CHECK(scores[h1] == 0 && scores[h2] == 2);
	CHECK(kvp_approx_holder_blocks(&a, (uint32_t)h2) == 2);
	/* recorded in the tree now; expiry goes on: at 150 holder 2's */
	q.n = 3;
	CHECK(kvp_approx_record(&a, 1, 0, &q, seq, ids, 120, 0) == 0);
	kvp_approx_expire(&a, 150);
	CHECK(expired == 5);
	kvp_index_match(ix, loc, 3, 0, scores);
	CHECK(scores[h1] == 3 && scores[h2] == 0);
	kvp_approx_expire(&a, 220);
	CHECK(expired == 8);
	kvp_approx_totals(&a, &nodes, &pairs, &bytes);
	CHECK(pairs == 0);
	kvp_approx_fini(&a);
	kvp_nodes_fini(&nd);
	kvp_index_free(ix);
	kvp_arena_free(ar);
}

int
main(void)
{
	for (int tree = 0; tree < 2; tree++) {
		test_ttl(tree);
		test_prune(tree);
		test_many_holders(tree);
	}
	for (int mode = 0; mode < 3; mode++) {
		run_model(mode, 3, 60, 40, 6, 1500, 1 + (uint64_t)mode);
		run_model(mode, 3, 0, 25, 4, 800, 7 + (uint64_t)mode);
		run_model(mode, 3, 40, 100000, 10, 800, 11 + (uint64_t)mode);
	}
	run_model(0, MAXW, 200, 30, 8, 1500, 21);
	run_model(1, MAXW, 200, 30, 8, 1500, 22);
	test_direct();
	return UNIT_DONE();
}
