/* SPDX-License-Identifier: MIT */
/*
 * test_nodes.c — the router's block table (lib/route/nodes.c) against a
 * model in this file: the live nodes by sequence hash, each with its
 * parent and its reference count (children and holds), freed as nodes.c
 * says (a node goes at its last reference, then its parent loses one).
 *
 * Phase 1 routes chained requests whose local hashes name their block
 * (each local hash has one parent, as a Mooncake trace's hash ids do): the
 * chain memo alone must find every node ("pure mode"), the memo growing
 * past its collisions. Phase 2 begins with a lookup by hash, which builds
 * the map of hashes from the live nodes, freed ones left out; then the
 * same local hash comes under other parents and requests bring hashes of
 * their own. Throughout, every lookup must give the model's id (or none),
 * new nodes must get ids no live node has, and at the end, every hold
 * released, no hash may be found.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "route/route_hash.h"
#include "route/route_internal.h"
#include "unit.h"

#define MAXN 8
#define MAXNODES 32768
#define MAXHOLDS 512
#define SLOTS 65536 /* the model's index: a power of two over MAXNODES */

struct mnode {                /* one per hash ever made a node (live or not) */
	uint64_t seq, parent; /* parent: its sequence hash */
	int has_parent, live;
	uint32_t id, refs;
};

static struct mnode model[MAXNODES];
static size_t nmodel;
static uint32_t slot[SLOTS];     /* model index + 1 by hash (probing) */
static uint32_t owner[MAXNODES]; /* by node id: its live model index + 1 */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t
next(void)
{
	return mix(rng += 0x9e3779b97f4a7c15ULL);
}

static uint32_t *
mslot(uint64_t seq) /* seq's slot in the index: its entry's, or empty */
{
	size_t i = mix(seq) & (SLOTS - 1);

	while (slot[i] != 0 && model[slot[i] - 1].seq != seq)
		i = (i + 1) & (SLOTS - 1);
	return &slot[i];
}

static struct mnode *
mfind(uint64_t seq) /* the live node of seq, or NULL */
{
	uint32_t k = *mslot(seq);

	return k != 0 && model[k - 1].live ? &model[k - 1] : NULL;
}

static uint32_t
mid(uint64_t seq)
{
	struct mnode *m = mfind(seq);

	return m != NULL ? m->id : KVP_NODE_NONE;
}

static void
mfree(struct mnode *m)
{
	while (m != NULL) {
		int hp = m->has_parent;
		uint64_t p = m->parent;

		m->live = 0;
		owner[m->id] = 0;
		m = hp ? mfind(p) : NULL;
		if (m == NULL || --m->refs != 0)
			return;
	}
}

/* Checks ids[0..n) of seq against the model, then makes the missing
 * nodes in both (chained or not) and checks the new ids. */
static void
intern(struct kvp_nodes *nd, const uint64_t *seq, const uint64_t *local,
       int chained, size_t n, uint32_t *ids)
{
	for (size_t i = 0; i < n; i++)
		CHECK_U64(ids[i], mid(seq[i]));
	CHECK(kvp_nodes_intern(nd, seq, local, chained, n, ids) == 0);
	for (size_t i = 0; i < n; i++) {
		struct mnode *m = mfind(seq[i]);

		if (m != NULL) {
			CHECK_U64(ids[i], m->id);
			continue;
		}
		uint32_t *k = mslot(seq[i]);

		if (ids[i] >= MAXNODES || (*k == 0 && nmodel == MAXNODES))
			abort();           /* the test's own bounds */
		CHECK(owner[ids[i]] == 0); /* no live node has the id */
		if (*k == 0)
			*k = (uint32_t)++nmodel;
		owner[ids[i]] = *k;
		model[*k - 1] = (struct mnode){
		    seq[i], i ? seq[i - 1] : 0, i > 0, 1, ids[i], 0};
		if (i > 0)
			mfind(seq[i - 1])->refs++;
	}
}

struct hold {
	uint32_t id;
	uint64_t seq;
};

static struct hold holds[MAXHOLDS];
static size_t nholds;

/* Holds the request's last node or not, then frees what nothing refers
 * to (sweep), as the router does after a decision. */
static void
hold_and_sweep(struct kvp_nodes *nd, const uint64_t *seq, uint32_t *ids,
               size_t n, int hold)
{
	if (nholds < MAXHOLDS && (hold || next() % 3 != 0)) {
		nd->hot[ids[n - 1]].refs++;
		mfind(seq[n - 1])->refs++;
		holds[nholds++] = (struct hold){ids[n - 1], seq[n - 1]};
	}
	kvp_nodes_sweep(nd, ids, n);
	for (size_t i = n; i-- > 0;) {
		struct mnode *m = mfind(seq[i]);

		if (m != NULL && m->refs == 0)
			mfree(m);
	}
}

static void
release_one(struct kvp_nodes *nd)
{
	size_t k = next() % nholds;
	struct mnode *m = mfind(holds[k].seq);

	kvp_nodes_unref(nd, holds[k].id);
	if (--m->refs == 0)
		mfree(m);
	holds[k] = holds[--nholds];
}

/* A chained request of the block named leaf: its path from the root, one
 * parent per name (leaf / 4 above 3). */
static size_t
path_of(uint64_t leaf, uint64_t *local)
{
	uint64_t rev[MAXN];
	size_t n = 0;

	for (; n < MAXN; leaf /= 4) {
		rev[n++] = leaf;
		if (leaf < 4)
			break;
	}
	for (size_t i = 0; i < n; i++)
		local[i] = rev[n - 1 - i];
	return n;
}

static void
route_chained(struct kvp_nodes *nd, const uint64_t *local, size_t n, int hold)
{
	uint64_t seq[MAXN] = {0}, want[MAXN];
	uint32_t ids[MAXN];
	uint64_t frees = nd->frees;

	kvp_nodes_resolve(nd, local, n, seq, ids);
	kvp_route_chain(local, n, want);
	/* the hashes owed in pure mode: written before a node is freed (its
	 * hash goes with it), else when asked */
	if (nholds > 0 && next() % 4 == 0)
		release_one(nd);
	if (nd->frees == frees)
		kvp_nodes_settle(nd);
	for (size_t i = 0; i < n; i++)
		CHECK_U64(seq[i], want[i]);
	kvp_nodes_forgive(nd);
	if (nd->frees != frees) { /* the ids may be stale: again */
		kvp_nodes_resolve(nd, local, n, seq, ids);
		kvp_nodes_settle(nd);
		kvp_nodes_forgive(nd);
	}
	intern(nd, seq, local, 1, n, ids);
	hold_and_sweep(nd, seq, ids, n, hold);
}

static void
route_own(struct kvp_nodes *nd) /* hashes of its own, some already seen */
{
	uint64_t seq[MAXN], local[MAXN];
	uint32_t ids[MAXN];
	size_t n = 1 + next() % MAXN;

	for (size_t i = 0; i < n; i++) {
		local[i] = next() % 64;
		seq[i] = nmodel > 0 && next() % 2 ? model[next() % nmodel].seq
		                                  : next();
	}
	for (size_t i = 1; i < n; i++) /* no hash twice in one request */
		for (size_t k = 0; k < i; k++)
			if (seq[k] == seq[i])
				seq[i] = next();
	CHECK(kvp_nodes_find_many(nd, seq, n, ids) == 0);
	intern(nd, seq, local, 0, n, ids);
	hold_and_sweep(nd, seq, ids, n, 0);
}

/* Every hash seen: the model's id, or none. */
static void
check_all(struct kvp_nodes *nd)
{
	for (size_t k = 0; k < nmodel; k++) {
		uint32_t id;

		CHECK(kvp_nodes_find_many(nd, &model[k].seq, 1, &id) == 0);
		CHECK_U64(id, mid(model[k].seq)); /* it may live again */
	}
}

int
main(void)
{
	struct kvp_nodes nd;
	uint64_t local[MAXN];
	int pure = 1;

	kvp_nodes_init(&nd, NULL, 1, 1);
	/* phase 1: names of blocks up to 4095, the memo growing to 4096 */
	for (int step = 0; step < 3000; step++) {
		route_chained(&nd, local, path_of(next() % 4096, local), 0);
		if (nholds > 0 && next() % 2)
			release_one(&nd);
		pure &= nd.pure;
	}
	CHECK(pure);
	CHECK(nd.capmemo >= 4096);
	/* block 7 (held) under another parent: a slot no growth frees ends
	 * pure mode, and block 7 is still found under its own parent */
	route_chained(&nd, local, path_of(7, local), 1);
	local[0] = 100000;
	local[1] = 7;
	route_chained(&nd, local, 2, 1);
	CHECK(!nd.pure);
	route_chained(&nd, local, path_of(7, local), 0);
	/* phase 2: the map from the live nodes (freed ones absent) */
	check_all(&nd);
	for (int step = 0; step < 3000; step++) {
		size_t n = 1 + next() % MAXN;

		if (next() % 4 == 0) {
			route_own(&nd);
		} else { /* any local hash under any parent */
			for (size_t i = 0; i < n; i++)
				local[i] = next() % 16;
			route_chained(&nd, local, n, 0);
		}
		if (nholds > 0 && next() % 2)
			release_one(&nd);
	}
	check_all(&nd);
	while (nholds > 0)
		release_one(&nd);
	check_all(&nd);
	for (size_t k = 0; k < nmodel; k++)
		CHECK(!model[k].live);
	kvp_nodes_fini(&nd);
	return UNIT_DONE();
}
