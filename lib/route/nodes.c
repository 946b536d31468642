/* SPDX-License-Identifier: MIT */
/*
 * nodes.c — the router's block table (route_internal.h): a dense id per
 * sequence hash that some state refers to, so that per-block state (the
 * blocks active requests hold, approximate mode's entries and flat index)
 * lives in arrays indexed by id instead of in one hash table each. One
 * lookup per block then serves every table; ids are recycled once nothing
 * refers to them, so memory follows the live blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "common/bigmem.h"
#include "common/kmap.h"
#include "route/route_hash.h"
#include "route/route_internal.h"

void
kvp_nodes_init(struct kvp_nodes *nd, int with_ttl, int with_path)
{
	memset(nd, 0, sizeof(*nd));
	nd->with_ttl = with_ttl;
	nd->with_path = with_path;
	nd->freehead = KVP_NODE_NONE;
	kvp_kmap_init_sparse(&nd->map); /* probed per block */
}

void
kvp_nodes_fini(struct kvp_nodes *nd)
{
	kvp_kmap_fini(&nd->map);
	kvp_big_free(nd->hot, nd->cap * sizeof(*nd->hot), 1);
	kvp_big_free(nd->seq, nd->capseq * sizeof(*nd->seq), 1);
	kvp_big_free(nd->ttl, nd->capttl * sizeof(*nd->ttl), 1);
	kvp_big_free(nd->path, nd->cappath * sizeof(*nd->path), 1);
	kvp_big_free(nd->memo, nd->capmemo * sizeof(*nd->memo), 1);
	memset(nd, 0, sizeof(*nd));
}

void
kvp_nodes_find_many(const struct kvp_nodes *nd, const uint64_t *seq, size_t n,
                    uint32_t *ids)
{
	kvp_kmap_get_many(&nd->map, 0, seq, n, ids);
	for (size_t i = 0; i < n; i++)
		ids[i]--; /* id + 1, or 0 → KVP_NODE_NONE */
}

static struct kvp_memo *
memo_slot(const struct kvp_nodes *nd, uint64_t local)
{
	return &nd->memo[local & (nd->capmemo - 1)];
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
			seq[i] = nd->seq[id];
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
	if (i == n)
		return;
	/* under a block no node has: none of the rest has one made from
	 * this chain; hashes of their own may still be there */
	kvp_route_chain_from(local, i, n, seq);
	kvp_nodes_find_many(nd, seq + i, n - i, ids + i);
}

/* Grows the per-id arrays to hold one more id. 0, or -1. */
static int
nodes_grow(struct kvp_nodes *nd)
{
	/* each array keeps its own capacity: a failed step leaves the ones
	 * grown before it larger, and freeing needs each one's size */
	size_t need = nd->capok + 1;

	if (nd->capok >= (size_t)KVP_NODE_NONE - 1 ||
	    kvp_big_grow(&nd->hot, &nd->cap, need, sizeof(*nd->hot)) ||
	    kvp_big_grow(&nd->seq, &nd->capseq, nd->cap, sizeof(*nd->seq)) ||
	    (nd->with_ttl &&
	     kvp_big_grow(&nd->ttl, &nd->capttl, nd->cap, sizeof(*nd->ttl))) ||
	    (nd->with_path &&
	     kvp_big_grow(&nd->path, &nd->cappath, nd->cap, sizeof(*nd->path))))
		return -1;
	nd->capok = nd->cap;
	if (nd->with_path) { /* a memo as large, afresh (it is a cache) */
		struct kvp_memo *m = kvp_big_new(nd->cap * sizeof(*m), 1);

		if (m != NULL) {
			kvp_big_free(nd->memo, nd->capmemo * sizeof(*m), 1);
			nd->memo = m;
			nd->capmemo = nd->cap;
		}
	}
	return 0;
}

/* The id of seq, made (*made set; its info still to fill) when it has
 * none, as when it came twice in one request; KVP_NODE_NONE on allocation
 * failure. */
static uint32_t
node_get(struct kvp_nodes *nd, uint64_t seq, int *made)
{
	uint32_t id, *v = kvp_kmap_upsert(&nd->map, 0, seq, UINT32_MAX, made);

	if (v == NULL)
		return KVP_NODE_NONE;
	if (!*made)
		return *v - 1;
	if (nd->freehead != KVP_NODE_NONE) {
		id = nd->freehead;
		nd->freehead = nd->hot[id].pid;
	} else if (nd->n < nd->capok || nodes_grow(nd) == 0) {
		id = (uint32_t)nd->n++;
	} else {
		kvp_kmap_del_ref(&nd->map, v);
		return KVP_NODE_NONE;
	}
	*v = id + 1;
	memset(&nd->hot[id], 0, sizeof(nd->hot[id]));
	if (nd->ttl != NULL)
		memset(&nd->ttl[id], 0, sizeof(nd->ttl[id]));
	return id;
}

int
kvp_nodes_intern(struct kvp_nodes *nd, const uint64_t *seq,
                 const uint64_t *local, int chained, size_t n, uint32_t *ids)
{
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
			if (chained && local != NULL && nd->memo != NULL)
				*memo_slot(nd, local[i]) = (struct kvp_memo){
				    local[i], ids[i] + 1,
				    i > 0 ? ids[i - 1] : KVP_NODE_NONE};
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
	do {
		uint32_t p = nd->hot[id].pid;

		if (nd->memo != NULL &&
		    memo_slot(nd, nd->path[id].local)->id1 == id + 1)
			memo_slot(nd, nd->path[id].local)->id1 = 0;
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
		    kvp_kmap_get(&nd->map, 0, nd->seq[ids[i]]) == ids[i] + 1)
			node_free(nd, ids[i]);
}
