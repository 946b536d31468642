/* SPDX-License-Identifier: MIT */
/*
 * nodes.h — private to lib/route/: the router's block table (nodes.c), a
 * dense node id per sequence hash that the router's state refers to.
 *
 * nodes.c owns struct kvp_nodes; the other files reach it through the
 * functions below. struct kvp_node carries two slots nodes.c keeps for
 * the load (lmask, rc1: load.c's alone), and struct kvp_node_ttl is the
 * TTL index's per-node state (approx.c's alone); nodes.c only grows and
 * recycles them.
 *
 * Mode: pure (nodes.c). While set, every live node is in the chain memo
 * and the map of hashes is empty; it ends, for good, at the first lookup
 * the memo cannot answer (a request bringing its own hashes, an event)
 * or an allocation failure. Asserted in debug builds (kvp_nodes_check).
 */
#ifndef KVP_ROUTE_NODES_H
#define KVP_ROUTE_NODES_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"

/* The block table (nodes.c). A node id stands for one sequence hash while
 * something refers to it (refs: active requests' blocks, approximate
 * entries, the nodes made after it in a request); then it is freed and its
 * id recycled. Per-node state lives in arrays indexed by id. */
#define KVP_NODE_NONE UINT32_MAX /* no node has the hash */

struct kvp_node { /* the state per node */
	uint32_t refs;
	uint32_t lmask; /* load.c: bit c set while candidate c < 32 holds it */
	uint32_t pid;   /* the previous block's node (a reference), or
	                   KVP_NODE_NONE at depth 0; a free node's: the next
	                   free id */
	uint32_t rc1;   /* load.c: its one holder's count (0: see loadrc) */
};

struct kvp_node_ttl { /* per node, with a TTL index */
	/* The router's TTL index (approx.c: approximate mode's, or the side
	 * index, which exclude each other): its flat index's holders, one
	 * (holder, tag) of the node's entries and how many more the table
	 * holds, and the node's children in the tree. */
	uint64_t imask;
	uint32_t ttag, thold, tover;
	uint32_t tchild;
	uint32_t tline; /* its tag line + 1 (approx.c), 0: none */
};

struct kvp_node_path {  /* per node, where a flat index may move */
	uint64_t local; /* its block's local hash (0: unknown) */
	uint32_t depth; /* its position in the request that made it */
};

struct kvp_nodes {
	struct kvp_arena *ar; /* borrowed (bigmem.h) */
	struct kvp_kmap map;  /* (0, seq) → id + 1 */
	struct kvp_node *hot;
	uint64_t *seq;
	struct kvp_node_ttl *ttl;   /* NULL: no TTL index */
	struct kvp_node_path *path; /* NULL: no flat index */
	int with_ttl, with_path;
	int pure; /* every live node is in the memo, map empty (nodes.c) */
	uint32_t freehead; /* the first free id (they chain through pid) */
	size_t n;          /* ids handed out */
	size_t cap, capseq, capttl, cappath; /* each array's */
	size_t capok;                        /* ids every array has room for */
	uint64_t frees; /* ids freed so far: ids looked up before go stale */
	/* The chain memo (with a flat index: path says each node's local
	 * hash): per local hash, direct-mapped by its low bits, a node found
	 * under its parent, so that a chained request's blocks resolve
	 * without hashing. An entry stands for a live node whose hash is the
	 * chain of its parent's and its local hash: freeing the node clears
	 * it. In pure mode it holds every live node (nodes.c). */
	struct kvp_memo {
		uint64_t local;
		uint32_t id1; /* node id + 1; 0: empty */
		uint32_t pid; /* its parent, KVP_NODE_NONE at depth 0 */
	} * memo;
	size_t capmemo; /* a power of two, at least the arrays' capacity
	                   (more when pure mode grew it), or 0 */
	/* Owed by kvp_nodes_resolve in pure mode: owe_seq[i] = seq[owe_ids[i]]
	 * for i < nowe (the found blocks but the last; the table writes them
	 * before it frees a node, kvp_nodes_settle when a reader asks). */
	uint64_t *owe_seq;
	const uint32_t *owe_ids;
	size_t nowe;
};

/* Node id's per-node state (the refs are nodes.c's; lmask and rc1 are
 * load.c's slots). */
static inline struct kvp_node *
kvp_nodes_hot(struct kvp_nodes *nd, uint32_t id)
{
	return &nd->hot[id];
}

static inline const struct kvp_node *
kvp_nodes_hot_c(const struct kvp_nodes *nd, uint32_t id)
{
	return &nd->hot[id];
}

/* One reference more to node id. */
static inline void
kvp_nodes_ref(struct kvp_nodes *nd, uint32_t id)
{
	nd->hot[id].refs++;
}

/* Node ids freed so far: ids looked up before a change of it are stale. */
static inline uint64_t
kvp_nodes_frees(const struct kvp_nodes *nd)
{
	return nd->frees;
}

/* 1 when the table keeps local hashes (a flat index may move; the chain
 * memo resolves chained requests). */
static inline int
kvp_nodes_has_path(const struct kvp_nodes *nd)
{
	return nd->with_path;
}

/* Prefetches node id's state for the walks of a decision. */
static inline void
kvp_nodes_prefetch(const struct kvp_nodes *nd, uint32_t id)
{
	__builtin_prefetch(&nd->hot[id]);
	if (nd->ttl != NULL)
		__builtin_prefetch(&nd->ttl[id]);
}

/* nodes.c: the block table, its arrays from arena ar (borrowed); with_ttl for a
 * TTL index (approximate mode, predict-on-route), with_path when it may be a
 * flat one. */
void kvp_nodes_init(struct kvp_nodes *nd, struct kvp_arena *ar, int with_ttl,
                    int with_path);
void kvp_nodes_fini(struct kvp_nodes *nd);
/* ids[i]: the id of seq[i], or KVP_NODE_NONE (one batch of lookups).
 * 0, or -1 on allocation failure (ending pure mode). */
int kvp_nodes_find_many(struct kvp_nodes *nd, const uint64_t *seq, size_t n,
                        uint32_t *ids);
/* A chained request's blocks (local hashes local[0..n)): seq[i] their
 * sequence hashes and ids[i] their ids (KVP_NODE_NONE: none), from the
 * chain memo where it knows them, else hashed and looked up (in pure mode
 * a block the memo lacks has no node). In pure mode the hashes of the
 * found blocks but the last are owed (seq and ids must stay put): most
 * decisions never read them, and kvp_nodes_settle writes them. */
void kvp_nodes_resolve(struct kvp_nodes *nd, const uint64_t *local, size_t n,
                       uint64_t *seq, uint32_t *ids);
/* Writes the sequence hashes kvp_nodes_resolve owes; its caller's
 * kvp_nodes_forgive drops them once the decision is over. */
void kvp_nodes_settle(struct kvp_nodes *nd);
void kvp_nodes_forgive(struct kvp_nodes *nd);
/* Makes the nodes of seq[0..n) whose ids[i] are KVP_NODE_NONE (looked up
 * by kvp_nodes_find_many or kvp_nodes_resolve) and fills in their ids: the
 * missing nodes (no refs yet; local hashes from local, may be NULL; chained:
 * seq is their chain, for the memo). 0, or -1 on allocation failure. */
int kvp_nodes_intern(struct kvp_nodes *nd, const uint64_t *seq,
                     const uint64_t *local, int chained, size_t n,
                     uint32_t *ids);
/* One reference fewer: at none, the node is freed. */
void kvp_nodes_unref(struct kvp_nodes *nd, uint32_t id);
/* Frees the nodes of ids[0..n) that nothing refers to. */
void kvp_nodes_sweep(struct kvp_nodes *nd, const uint32_t *ids, size_t n);
/* Debug builds (KVP_DEBUG): asserts the table's mode invariants. */
void kvp_nodes_check(const struct kvp_nodes *nd);

#endif
