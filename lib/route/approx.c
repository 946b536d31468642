/* SPDX-License-Identifier: MIT */
/*
 * approx.c — a TTL-fed index (Dynamo's ApproxKvIndexer): the chosen worker
 * is assumed to cache the request's blocks for ttl_ms; the table of
 * assumed (holder, block) pairs is pruned to 80 % when it outgrows max.
 * Expiry runs off request timestamps. Used for approximate mode (over the
 * router's own index) and for predict-on-route's side index (its own
 * index, whose overlap is max-ed with the event-fed one per worker).
 *
 * The expiry queue holds one entry per touched block whose expiry changed,
 * in touch order; each (holder, block node) knows its current entry (its
 * tag: in the node's slot for one holder, in the node's tag line for the
 * other holders below KVP_TAG_LINE, else in a table), and a touch that
 * moves a block's expiry empties its old entry, so expiry pops only live
 * entries.
 *
 * Flat index: while every block the index holds came from a request's own
 * chain (no event, no request bringing its own hashes, legacy scoring off,
 * at most 64 holders), a hash fixes its whole prefix and the index is
 * just each block's set of holders: a mask per block node. Matching walks
 * the request's nodes while some holder holds them all, as the radix tree
 * walk does; the first event (or other such change) moves the pairs into
 * the radix tree (kvp_approx_unflat) and the index stays there. See
 * route_internal.h.
 */
#define _GNU_SOURCE 1 /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "common/bigmem.h"
#include "common/debug.h"
#include "common/kmap.h"
#include "common/util.h"
#include "route/approx.h"
#include "route/index.h"
#include "route/router.h"

#define TOMB KVP_NODE_NONE /* an emptied queue entry */
#define FLAT_MAX 64        /* holders a flat index can hold */

void
kvp_approx_init(struct kvp_approx *a, struct kvp_index *ix,
                struct kvp_nodes *nd, struct kvp_arena *ar, uint64_t ttl_ms,
                uint64_t max, int flat, uint64_t *expired, uint64_t *pruned)
{
	memset(a, 0, sizeof(*a));
	a->ar = ar;
	a->ix = ix;
	a->nd = nd;
	a->ttl_ms = ttl_ms;
	a->max = max;
	a->flat = flat;
	a->expired = expired;
	a->pruned = pruned;
	a->qbase = 1;                      /* tag 0 is the table's "empty" */
	kvp_kmap_init_sparse(&a->ttl, ar); /* probed per block */
}

void
kvp_approx_fini(struct kvp_approx *a)
{
	kvp_big_free(a->ar, a->q, a->qcap * sizeof(*a->q), 1);
	kvp_big_free(a->ar, a->lines, a->caplines * sizeof(*a->lines), 1);
	free(a->hblocks);
	kvp_kmap_fini(&a->ttl);
}

/* ---- the flat index --------------------------------------------------- */

/* Does node id stand in the radix tree? */
static int
in_tree(const struct kvp_approx *a, uint32_t id)
{
	return a->nd->ttl[id].imask != 0 || a->nd->ttl[id].tchild != 0;
}

static void
flat_add(struct kvp_approx *a, uint32_t h, uint32_t id)
{
	const struct kvp_node *hot = a->nd->hot;
	struct kvp_node_ttl *t = a->nd->ttl;

	if (!in_tree(a, id)) { /* it joins, and so may its ancestors */
		uint32_t p = hot[id].pid;

		a->fnodes++;
		for (; p != KVP_NODE_NONE && !in_tree(a, p); p = hot[p].pid) {
			t[p].tchild++;
			a->fnodes++;
		}
		if (p != KVP_NODE_NONE)
			t[p].tchild++;
	}
	t[id].imask |= (uint64_t)1 << h;
	a->fpairs++;
	a->hblocks[h]++;
}

static void
flat_del(struct kvp_approx *a, uint32_t h, uint32_t id)
{
	const struct kvp_node *hot = a->nd->hot;
	struct kvp_node_ttl *t = a->nd->ttl;

	t[id].imask &= ~((uint64_t)1 << h);
	a->fpairs--;
	a->hblocks[h]--;
	if (in_tree(a, id))
		return;
	a->fnodes--; /* it leaves, and so may its ancestors */
	for (uint32_t p = hot[id].pid; p != KVP_NODE_NONE; p = hot[p].pid) {
		t[p].tchild--;
		if (in_tree(a, p))
			break;
		a->fnodes--;
	}
}

/* Room in the flat index for holder h. 0, or -1 on allocation
 * failure. */
static int
room(struct kvp_approx *a, uint32_t h)
{
	size_t old = a->caphb;

	if (!a->flat || h < old)
		return 0;
	if (kvp_grow(&a->hblocks, &a->caphb, (size_t)h + 1,
	             sizeof(*a->hblocks)))
		return -1;
	memset(a->hblocks + old, 0, (a->caphb - old) * sizeof(*a->hblocks));
	return 0;
}

static int
cmp_depth(const void *x, const void *y, void *arg)
{
	const struct kvp_node_path *in = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	if (in[a].depth != in[b].depth)
		return in[a].depth < in[b].depth ? -1 : 1;
	return (a > b) - (a < b);
}

int
kvp_approx_unflat(struct kvp_approx *a)
{
	const struct kvp_nodes *nd = a->nd;
	struct kvp_node_ttl *t = nd->ttl;
	uint32_t *ids;
	size_t k = 0;

	if (!a->flat)
		return 0;
	ids = malloc((a->fnodes + 1) * sizeof(*ids));
	if (ids == NULL)
		return -1;
	for (size_t i = 0; i < nd->n; i++)
		if (t[i].imask != 0)
			ids[k++] = (uint32_t)i;
	/* parents first: each pair is stored under its holder's parent
	 * (a pair whose parent its holder no longer has, after pruning
	 * stopped inside a touch, cannot be matched and is dropped) */
	qsort_r(ids, k, sizeof(*ids), cmp_depth, (void *)nd->path);
	for (size_t i = 0; i < k; i++) {
		uint32_t id = ids[i], pid = nd->hot[id].pid;
		uint64_t parent = pid != KVP_NODE_NONE ? nd->seq[pid] : 0;

		for (uint64_t m = t[id].imask; m != 0; m &= m - 1) {
			size_t added;
			int st = kvp_index_store(
			    a->ix, (uint32_t)__builtin_ctzll(m),
			    pid != KVP_NODE_NONE, parent, &nd->seq[id],
			    &nd->path[id].local, 1, &added);

			if (st == KVP_STORE_NOMEM) {
				free(ids);
				return -1;
			}
		}
	}
	free(ids);
	for (size_t i = 0; i < nd->n; i++)
		t[i].imask = t[i].tchild = 0;
	free(a->hblocks);
	a->hblocks = NULL;
	a->caphb = 0;
	a->fnodes = a->fpairs = 0;
	a->flat = 0;
	return 0;
}

size_t
kvp_approx_match(const struct kvp_approx *a, const uint32_t *ids,
                 const struct kvp_request *q, int legacy, uint32_t *scores)
{
	size_t nh = kvp_index_nholders(a->ix), i;
	uint64_t act;

	if (!a->flat)
		return kvp_index_match(a->ix, q->local, q->n, legacy, scores);
	memset(scores, 0, nh * sizeof(*scores));
	act = nh >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << nh) - 1;
	for (i = 0; i < q->n && act != 0; i++) {
		uint32_t id = ids[i];
		uint64_t keep =
		    id != KVP_NODE_NONE ? act & a->nd->ttl[id].imask : 0;

		for (uint64_t gone = act & ~keep; gone != 0; gone &= gone - 1)
			scores[__builtin_ctzll(gone)] = (uint32_t)i;
		act = keep;
	}
	for (; act != 0; act &= act - 1)
		scores[__builtin_ctzll(act)] = (uint32_t)i;
	return i;
}

uint64_t
kvp_approx_holder_blocks(const struct kvp_approx *a, uint32_t h)
{
	if (a->flat)
		return h < a->caphb ? a->hblocks[h] : 0;
	return kvp_index_holder_info(a->ix, h)->nblocks;
}

void
kvp_approx_totals(const struct kvp_approx *a, size_t *nodes, uint64_t *pairs,
                  size_t *bytes)
{
	*nodes = kvp_index_nodes(a->ix);
	*pairs = kvp_index_pairs(a->ix);
	*bytes = kvp_index_bytes(a->ix);
	if (!a->flat)
		return;
	*nodes += a->fnodes;
	*pairs += a->fpairs;
	*bytes += a->caphb * sizeof(*a->hblocks);
}

/* ---- the expiry queue -------------------------------------------------- */

/* Tag line k (k > 0). */
static uint32_t *
line_of(const struct kvp_approx *a, uint32_t k)
{
	return a->lines + (size_t)(k - 1) * KVP_TAG_LINE;
}

/* A zeroed tag line: k > 0, or 0 on allocation failure. */
static uint32_t
line_new(struct kvp_approx *a)
{
	uint32_t k = a->linefree;

	if (k != 0) { /* free lines chain through their first tag */
		a->linefree = line_of(a, k)[0];
		memset(line_of(a, k), 0, KVP_TAG_LINE * sizeof(*a->lines));
		return k;
	}
	if (a->nlines == UINT32_MAX ||
	    kvp_big_grow(a->ar, &a->lines, &a->caplines,
	                 ((size_t)a->nlines + 1) * KVP_TAG_LINE,
	                 sizeof(*a->lines)) != 0)
		return 0;
	return ++a->nlines;
}

/* The tag of (h, id)'s entry: in the node's own slot when that is h's,
 * else in its tag line (h < KVP_TAG_LINE) or the table; 0 when it has
 * none. */
static uint32_t
tag_get(const struct kvp_approx *a, uint32_t h, uint32_t id)
{
	const struct kvp_node_ttl *n = &a->nd->ttl[id];

	if (n->ttag != 0 && n->thold == h)
		return n->ttag;
	if (h < KVP_TAG_LINE)
		return n->tline != 0 ? line_of(a, n->tline)[h] : 0;
	return n->tover != 0 ? kvp_kmap_get(&a->ttl, h, id) : 0;
}

/* (h, id)'s tag, where it is kept: given tag (not 0, newer than any) when
 * it had none (one probe of the table at most, where one is needed);
 * NULL on allocation failure. Valid until the next change to the table. */
static uint32_t *
tag_ref(struct kvp_approx *a, uint32_t h, uint32_t id, uint32_t tag)
{
	struct kvp_node_ttl *n = &a->nd->ttl[id];
	uint32_t *v;
	int ins;

	if (n->ttag != 0 && n->thold == h)
		return &n->ttag;
	if (n->ttag == 0 && tag_get(a, h, id) == 0) {
		n->ttag = tag;
		n->thold = h;
		a->nttl++;
		return &n->ttag;
	}
	if (h < KVP_TAG_LINE) {
		if (n->tline == 0 && (n->tline = line_new(a)) == 0)
			return NULL;
		v = &line_of(a, n->tline)[h];
		if (*v == 0) {
			*v = tag;
			a->nttl++;
		}
		return v;
	}
	v = kvp_kmap_upsert(&a->ttl, h, id, tag, &ins);
	if (v != NULL && ins) {
		n->tover++;
		a->nttl++;
	}
	return v;
}

/* Drops (h, id)'s tag. */
static void
tag_del(struct kvp_approx *a, uint32_t h, uint32_t id)
{
	struct kvp_node_ttl *n = &a->nd->ttl[id];

	if (n->ttag != 0 && n->thold == h) {
		n->ttag = 0;
	} else if (h < KVP_TAG_LINE) {
		uint32_t *line = n->tline != 0 ? line_of(a, n->tline) : NULL;
		size_t k = 0;

		if (line == NULL || line[h] == 0)
			return;
		line[h] = 0;
		while (k < KVP_TAG_LINE && line[k] == 0)
			k++;
		if (k == KVP_TAG_LINE) { /* the last: the line is free */
			line[0] = a->linefree;
			a->linefree = n->tline;
			n->tline = 0;
		}
	} else if (n->tover != 0 && kvp_kmap_del(&a->ttl, h, id) != 0) {
		n->tover--;
	} else {
		return;
	}
	a->nttl--;
}

/* The queue entry of tag v (a live one: the table's value). */
static struct kvp_ttl_ent *
ent_of(const struct kvp_approx *a, uint32_t v)
{
	return &a->q[(uint32_t)(v - (uint32_t)a->qbase)];
}

/* Pops the head entry: (holder, block) leaves the index. */
static void
pop_entry(struct kvp_approx *a, const struct kvp_ttl_ent *e)
{
	size_t unknown;

	tag_del(a, e->holder, e->node);
	if (a->flat) {
		flat_del(a, e->holder, e->node);
	} else {
		uint64_t seq = a->nd->seq[e->node];

		(void)kvp_index_remove(a->ix, e->holder, &seq, 1, &unknown);
	}
	kvp_nodes_unref(a->nd, e->node);
}

/* Pops queued blocks: expired ones (exp <= now), or any while the table
 * is over its cap (then down to 80 %). */
void
kvp_approx_expire(struct kvp_approx *a, uint64_t now)
{
	uint64_t target = a->max - a->max / 5;
	int pruning = a->nttl > a->max;

	while (a->qhead < a->qtail) {
		struct kvp_ttl_ent e = a->q[a->qhead];

		if (e.node == TOMB) {
			a->qhead++;
			continue;
		}
		if (pruning && a->nttl <= target)
			pruning = 0;
		if (!pruning && (a->ttl_ms == 0 || e.exp > now))
			break;
		a->qhead++;
		pop_entry(a, &e);
		(*(pruning ? a->pruned : a->expired))++;
	}
	if (a->qhead == a->qtail) {
		a->qbase += a->qtail;
		a->qhead = a->qtail = 0;
	}
}

/* Room for n more entries, the live ones moved down first when the queue
 * is full at its tail and they are at most half of it (else it grows:
 * each entry is moved once on average, not once per few new ones). 0, or
 * -1. */
static int
queue_room(struct kvp_approx *a, size_t n)
{
	if (a->qtail + n + 1 > a->qcap && a->qhead > 0 &&
	    a->qhead >= a->qtail - a->qhead) {
		memmove(a->q, a->q + a->qhead,
		        (a->qtail - a->qhead) * sizeof(*a->q));
		a->qtail -= a->qhead;
		a->qbase += a->qhead;
		a->qhead = 0;
	}
	if (kvp_big_grow(a->ar, &a->q, &a->qcap, a->qtail + n + 1,
	                 sizeof(*a->q)))
		return -1;
	return 0;
}

/* The next entry's tag, skipping 0 (an emptied entry fills the gap). */
static uint32_t
next_tag(struct kvp_approx *a)
{
	uint32_t t = (uint32_t)(a->qbase + a->qtail);

	if (t == 0) {
		a->q[a->qtail++] = (struct kvp_ttl_ent){0, TOMB, 0};
		t = 1;
	}
	return t;
}

/* (h, ids[0..n)) now expire at exp: each block whose expiry changes gets
 * a new entry. */
static int
ttl_touch(struct kvp_approx *a, uint32_t h, const uint32_t *ids, size_t n,
          uint64_t exp)
{
	/* n entries, and one per 2^32 tags skipping 0 */
	if (queue_room(a, n + 1 + n / 0xffffffffu) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint32_t tag = next_tag(a), *old = tag_ref(a, h, ids[i], tag);
		int ins = old != NULL && *old == tag;

		if (old == NULL)
			return -1;
		if (!ins) {
			struct kvp_ttl_ent *e = ent_of(a, *old);

			if (e->exp == exp)
				continue; /* same expiry: its entry stands */
			e->node = TOMB;
			*old = tag;
		}
		if (ins) {
			a->nd->hot[ids[i]].refs++;
			if (a->flat)
				flat_add(a, h, ids[i]);
		}
		a->q[a->qtail++] = (struct kvp_ttl_ent){exp, ids[i], h};
	}
	return 0;
}

/* The holder id of (w, rank); the flat index moves to the radix tree
 * first when this request cannot go in it. -1 on allocation failure. */
static int64_t
record_holder(struct kvp_approx *a, uint64_t w, uint32_t rank,
              const struct kvp_request *q)
{
	int64_t h = kvp_index_holder(a->ix, w, rank, KVP_TIER_DEVICE, 1);

	if (h < 0)
		return -1;
	if (q->seq != NULL) /* hashes of its own */
		a->mixed = 1;
	if (a->flat && (a->mixed || h >= FLAT_MAX) && kvp_approx_unflat(a))
		return -1;
	if (room(a, (uint32_t)h) != 0)
		return -1;
	return h;
}

int
kvp_approx_record(struct kvp_approx *a, uint64_t w, uint32_t rank,
                  const struct kvp_request *q, const uint64_t *seq,
                  const uint32_t *ids, uint64_t now, uint32_t held)
{
	int64_t h = record_holder(a, w, rank, q);
	size_t added;
	int st;

	if (h < 0)
		return -1;
	if (!a->flat) {
		kvp_nodes_settle(a->nd); /* the tree reads seq */
		/* The held prefix's steps change nothing while every store
		 * came from its chain (a hash fixes its path): the walk skips
		 * them. */
		st = kvp_index_store_from(a->ix, (uint32_t)h, seq, q->local,
		                          q->n, a->mixed ? 0 : held, &added);
		if (st == KVP_STORE_NOMEM)
			return -1;
		if (st != KVP_STORE_OK && st != KVP_STORE_DUPLICATE)
			return 0; /* e.g. repeated hashes within the request */
	} /* (flat: a request's own chain never repeats a hash, short of a
	     64-bit collision; a request bringing its own went to the tree) */
	if (ttl_touch(a, (uint32_t)h, ids, q->n, now + a->ttl_ms) != 0)
		return -1;
	kvp_approx_expire(a, now); /* size pruning */
	return 0;
}

struct kvp_approx *
kvp_side_new(struct kvp_nodes *nd, struct kvp_arena *ar, uint64_t ttl_ms,
             uint64_t max, int flat, uint64_t *expired, uint64_t *pruned)
{
	struct kvp_index *ix = kvp_index_new_sparse(ar);
	struct kvp_approx *a = calloc(1, sizeof(*a));

	if (ix == NULL || a == NULL) {
		kvp_index_free(ix);
		free(a);
		return NULL;
	}
	kvp_approx_init(a, ix, nd, ar, ttl_ms, max, flat, expired, pruned);
	return a;
}

void
kvp_side_free(struct kvp_approx *a)
{
	if (a == NULL)
		return;
	kvp_index_free(a->ix);
	kvp_approx_fini(a);
	free(a);
}

void
kvp_approx_mixed(struct kvp_approx *a)
{
	a->mixed = 1;
}

size_t
kvp_approx_nholders(const struct kvp_approx *a)
{
	return kvp_index_nholders(a->ix);
}

int64_t
kvp_approx_holder(const struct kvp_approx *a, uint64_t w, uint32_t rank)
{
	return kvp_index_holder(a->ix, w, rank, KVP_TIER_DEVICE, 0);
}

void
kvp_approx_check(const struct kvp_approx *a)
{
	(void)a; /* (unused without KVP_DEBUG) */
	/* flat: the pairs are bits of at most 64 holders, the tree has none */
	KVP_ASSERT(!a->flat || kvp_index_pairs(a->ix) == 0);
	KVP_ASSERT(!a->flat || kvp_index_nholders(a->ix) <= 64);
	KVP_ASSERT(a->flat || a->fnodes == 0);
	KVP_ASSERT(a->qhead <= a->qtail && a->qtail <= a->qcap);
}
