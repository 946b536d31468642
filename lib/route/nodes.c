/* SPDX-License-Identifier: MIT */
/*
 * nodes.c — the router's block table (route_internal.h): a dense id per
 * sequence hash that some state refers to, so that per-block state (the
 * blocks active requests hold, approximate mode's entries and flat index)
 * lives in arrays indexed by id instead of in one hash table each. One
 * lookup per block then serves every table; ids are recycled once nothing
 * refers to them, so memory follows the live blocks.
 *
 * Pure mode (with the chain memo): while every live node was made from a
 * chain and has its own memo entry (no two of them share a slot), the memo
 * alone finds any node, as (parent, local hash), and the map by sequence
 * hash is left empty: a block missing from the memo has no node, nor has
 * any block after it. The first node that cannot go in the memo (its slot
 * taken, hashes a request brought) or lookup by hash ends pure mode: the
 * map is built from the live nodes and kept from then on, and the memo is
 * a cache. The dense hash ids of a Mooncake trace never leave it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/bigmem.h"
#include "common/debug.h"
#include "common/kmap.h"
#include "route/nodes.h"
#include "route/route_hash.h"

void
kvp_nodes_init(struct kvp_nodes *nd, struct kvp_arena *ar, int with_ttl,
               int with_path)
{
	memset(nd, 0, sizeof(*nd));
	nd->with_ttl = with_ttl;
	nd->with_path = with_path;
	nd->pure = with_path; /* the memo comes with the path */
	nd->freehead = KVP_NODE_NONE;
	nd->ar = ar;
	kvp_kmap_init_sparse(&nd->map, ar); /* probed per block */
}

void
kvp_nodes_fini(struct kvp_nodes *nd)
{
	kvp_kmap_fini(&nd->map);
	kvp_big_free(nd->ar, nd->hot, nd->cap * sizeof(*nd->hot), 1);
	kvp_big_free(nd->ar, nd->seq, nd->capseq * sizeof(*nd->seq), 1);
	kvp_big_free(nd->ar, nd->ttl, nd->capttl * sizeof(*nd->ttl), 1);
	kvp_big_free(nd->ar, nd->path, nd->cappath * sizeof(*nd->path), 1);
	kvp_big_free(nd->ar, nd->memo, nd->capmemo * sizeof(*nd->memo), 1);
	memset(nd, 0, sizeof(*nd));
}

static struct kvp_memo *
memo_slot(const struct kvp_nodes *nd, uint64_t local)
{
	return &nd->memo[local & (nd->capmemo - 1)];
}

/* Ends pure mode: every live node into the map. 0, or -1 on allocation
 * failure (still pure; a retry puts the same entries). */
static int
leave_pure(struct kvp_nodes *nd)
{
	unsigned char *isfree;

	if (!nd->pure)
		return 0;
	isfree = calloc(nd->n + 1, 1);
	if (isfree == NULL)
		return -1;
	for (uint32_t f = nd->freehead; f != KVP_NODE_NONE; f = nd->hot[f].pid)
		isfree[f] = 1;
	for (uint32_t id = 0; id < nd->n; id++)
		if (!isfree[id] &&
		    kvp_kmap_put(&nd->map, 0, nd->seq[id], id + 1, NULL) != 0) {
			free(isfree);
			return -1;
		}
	free(isfree);
	nd->pure = 0;
	return 0;
}

/* ids[i..n): the ids of seq[i..n) in the map. */
static void
map_find(const struct kvp_nodes *nd, const uint64_t *seq, size_t i, size_t n,
         uint32_t *ids)
{
	kvp_kmap_get_many(&nd->map, 0, seq + i, n - i, ids + i);
	for (; i < n; i++)
		ids[i]--; /* id + 1, or 0 → KVP_NODE_NONE */
}

int
kvp_nodes_find_many(struct kvp_nodes *nd, const uint64_t *seq, size_t n,
                    uint32_t *ids)
{
	if (leave_pure(nd) != 0)
		return -1;
	map_find(nd, seq, 0, n, ids);
	return 0;
}

void
kvp_nodes_resolve(struct kvp_nodes *nd, const uint64_t *local, size_t n,
                  uint64_t *seq, uint32_t *ids)
{
	uint32_t p = KVP_NODE_NONE;
	size_t i;

	for (i = 0; i < n && (i == 0 || p != KVP_NODE_NONE); i++) {
		const struct kvp_memo *e =
		    nd->memo != NULL ? memo_slot(nd, local[i]) : NULL;
		uint32_t id;

		if (e != NULL && e->id1 != 0 && e->local == local[i] &&
		    e->pid == p) {
			id = e->id1 - 1;
			if (!nd->pure) /* (pure: owed) */
				seq[i] = nd->seq[id];
		} else if (nd->pure) {
			break; /* no node, nor after it */
		} else {
			kvp_route_chain_from(local, i, i + 1, seq);
			id = kvp_kmap_get(&nd->map, 0, seq[i]) - 1;
			/* found under p as local[i]: worth remembering */
			if (e != NULL && id != KVP_NODE_NONE &&
			    nd->hot[id].pid == p &&
			    nd->path[id].local == local[i])
				*memo_slot(nd, local[i]) =
				    (struct kvp_memo){local[i], id + 1, p};
		}
		ids[i] = p = id;
	}
	if (nd->pure && i > 0) { /* the last found one chains the rest */
		seq[i - 1] = nd->seq[ids[i - 1]];
		nd->owe_seq = seq;
		nd->owe_ids = ids;
		nd->nowe = i - 1;
	}
	if (i == n)
		return;
	/* under a block no node has: none of the rest has one made from
	 * this chain; hashes of their own may still be there (not in pure
	 * mode) */
	kvp_route_chain_from(local, i, n, seq);
	if (!nd->pure)
		map_find(nd, seq, i, n, ids);
	else
		for (; i < n; i++)
			ids[i] = KVP_NODE_NONE;
}

void
kvp_nodes_settle(struct kvp_nodes *nd)
{
	for (size_t i = 0; i < nd->nowe; i++)
		nd->owe_seq[i] = nd->seq[nd->owe_ids[i]];
	nd->nowe = 0;
}

void
kvp_nodes_forgive(struct kvp_nodes *nd)
{
	nd->nowe = 0;
}

/* The memo with cap (a power of two) slots: in pure mode every entry
 * moves (two entries in different slots of a memo stay apart in a larger
 * one); else it is a cache, begun afresh. 0, or -1. */
static int
memo_resize(struct kvp_nodes *nd, size_t cap)
{
	struct kvp_memo *m = kvp_big_new(nd->ar, cap * sizeof(*m), 1);

	if (m == NULL)
		return -1;
	for (size_t i = 0; nd->pure && i < nd->capmemo; i++)
		if (nd->memo[i].id1 != 0)
			m[nd->memo[i].local & (cap - 1)] = nd->memo[i];
	kvp_big_free(nd->ar, nd->memo, nd->capmemo * sizeof(*m), 1);
	nd->memo = m;
	nd->capmemo = cap;
	return 0;
}

/* Grows the per-id arrays to hold one more id. 0, or -1. */
static int
nodes_grow(struct kvp_nodes *nd)
{
	/* each array keeps its own capacity: a failed step leaves the ones
	 * grown before it larger, and freeing needs each one's size */
	size_t need = nd->capok + 1;

	if (nd->capok >= (size_t)KVP_NODE_NONE - 1 ||
	    kvp_big_grow(nd->ar, &nd->hot, &nd->cap, need, sizeof(*nd->hot)) ||
	    kvp_big_grow(nd->ar, &nd->seq, &nd->capseq, nd->cap,
	                 sizeof(*nd->seq)) ||
	    (nd->with_ttl && kvp_big_grow(nd->ar, &nd->ttl, &nd->capttl,
	                                  nd->cap, sizeof(*nd->ttl))) ||
	    (nd->with_path && kvp_big_grow(nd->ar, &nd->path, &nd->cappath,
	                                   nd->cap, sizeof(*nd->path))))
		return -1;
	nd->capok = nd->cap;
	/* a memo at least as large (on failure the old one goes on; there
	 * must be one in pure mode) */
	if (nd->with_path && nd->capmemo < nd->cap &&
	    memo_resize(nd, nd->cap) != 0 && nd->memo == NULL &&
	    leave_pure(nd) != 0)
		return -1;
	return 0;
}

/* The id of seq, made (*made set; its info still to fill) when it has
 * none, as when it came twice in one request (pure mode: it has none);
 * KVP_NODE_NONE on allocation failure. */
static uint32_t
node_get(struct kvp_nodes *nd, uint64_t seq, int *made)
{
	uint32_t id, *v = NULL;

	/* room first: growing may end pure mode */
	if (nd->freehead == KVP_NODE_NONE && nd->n == nd->capok &&
	    nodes_grow(nd) != 0)
		return KVP_NODE_NONE;
	*made = 1;
	if (!nd->pure) {
		v = kvp_kmap_upsert(&nd->map, 0, seq, UINT32_MAX, made);
		if (v == NULL)
			return KVP_NODE_NONE;
		if (!*made)
			return *v - 1;
	}
	if (nd->freehead != KVP_NODE_NONE) {
		id = nd->freehead;
		nd->freehead = nd->hot[id].pid;
	} else {
		id = (uint32_t)nd->n++;
	}
	if (v != NULL)
		*v = id + 1;
	memset(&nd->hot[id], 0, sizeof(nd->hot[id]));
	if (nd->ttl != NULL)
		memset(&nd->ttl[id], 0, sizeof(nd->ttl[id]));
	return id;
}

/* Node id (made from a chain: under pid as local) into the memo. In pure
 * mode a slot another node has doubles the memo, up to MEMO_MAX(nd)
 * slots (dense local hashes, such as a Mooncake trace's, then find a slot
 * each), past which it ends pure mode. 0, or -1 on allocation failure. */
#define MEMO_MIN ((size_t)1 << 16)
#define MEMO_MAX(nd) (4 * (nd)->cap > MEMO_MIN ? 4 * (nd)->cap : MEMO_MIN)

static int
memo_put(struct kvp_nodes *nd, uint64_t local, uint32_t id, uint32_t pid)
{
	struct kvp_memo *e = memo_slot(nd, local);

	while (nd->pure && e->id1 != 0 && nd->capmemo < MEMO_MAX(nd) &&
	       memo_resize(nd, 2 * nd->capmemo) == 0)
		e = memo_slot(nd, local);
	if (e->id1 != 0 && leave_pure(nd) != 0)
		return -1;
	*e = (struct kvp_memo){local, id + 1, pid};
	return 0;
}

int
kvp_nodes_intern(struct kvp_nodes *nd, const uint64_t *seq,
                 const uint64_t *local, int chained, size_t n, uint32_t *ids)
{
	if (!(chained && local != NULL) && leave_pure(nd) != 0)
		return -1; /* nodes the memo cannot find */
	for (size_t i = 0; i < n; i++) {
		int made;

		if (ids[i] != KVP_NODE_NONE)
			continue;
		ids[i] = node_get(nd, seq[i], &made);
		if (ids[i] == KVP_NODE_NONE)
			return -1;
		if (!made)
			continue;
		nd->seq[ids[i]] = seq[i];
		if (nd->path != NULL) {
			struct kvp_node_path *p = &nd->path[ids[i]];

			p->local = local != NULL ? local[i] : 0;
			p->depth = i > UINT32_MAX ? UINT32_MAX : (uint32_t)i;
			if (chained && local != NULL && nd->memo != NULL &&
			    memo_put(nd, local[i], ids[i],
			             i > 0 ? ids[i - 1] : KVP_NODE_NONE) != 0)
				return -1;
		}
		nd->hot[ids[i]].pid = i > 0 ? ids[i - 1] : KVP_NODE_NONE;
		if (i > 0)
			nd->hot[ids[i - 1]].refs++;
	}
	return 0;
}

/* Frees id (nothing refers to it any more), then its parent if that was
 * the parent's last reference, and so on. */
static void
node_free(struct kvp_nodes *nd, uint32_t id)
{
	kvp_nodes_settle(nd); /* while the owed blocks' nodes stand */
	do {
		uint32_t p = nd->hot[id].pid;

		if (nd->memo != NULL &&
		    memo_slot(nd, nd->path[id].local)->id1 == id + 1)
			memo_slot(nd, nd->path[id].local)->id1 = 0;
		if (!nd->pure)
			(void)kvp_kmap_del(&nd->map, 0, nd->seq[id]);
		nd->hot[id].pid = nd->freehead; /* free ids chain through pid */
		nd->freehead = id;
		nd->frees++;
		id = p;
	} while (id != KVP_NODE_NONE && --nd->hot[id].refs == 0);
}

void
kvp_nodes_unref(struct kvp_nodes *nd, uint32_t id)
{
	if (--nd->hot[id].refs == 0)
		node_free(nd, id);
}

void
kvp_nodes_sweep(struct kvp_nodes *nd, const uint32_t *ids, size_t n)
{
	for (size_t i = n; i-- > 0;) /* children first */
		if (ids[i] < nd->n && nd->hot[ids[i]].refs == 0 &&
		    (nd->pure ? memo_slot(nd, nd->path[ids[i]].local)->id1
		              : kvp_kmap_get(&nd->map, 0, nd->seq[ids[i]])) ==
		        ids[i] + 1)
			node_free(nd, ids[i]);
}

void
kvp_nodes_check(const struct kvp_nodes *nd)
{
	(void)nd; /* (unused without KVP_DEBUG) */
	/* pure: the memo alone finds every live node, the map is empty */
	KVP_ASSERT(!nd->pure || nd->with_path);
	KVP_ASSERT(!nd->pure || kvp_kmap_size(&nd->map) == 0);
	KVP_ASSERT(nd->n <= nd->capok);
	KVP_ASSERT(nd->nowe == 0 || nd->pure);
}
