/* SPDX-License-Identifier: MIT */
/*
 * approx.h — private to lib/route/: a TTL-fed index (approx.c), the state
 * of approximate mode (over the router's index) and of the
 * predict-on-route side index (over its own). approx.c owns struct
 * kvp_approx and the TTL slots of the block table (struct kvp_node_ttl).
 *
 * Modes of struct kvp_approx (approx.c):
 *   flat   the index holds holders only and the pairs are imask bits per
 *          node (at most 64 holders, chained requests only); set at init
 *          when the options allow, ended for good by kvp_approx_unflat
 *          before anything but the TTL index's own decisions reaches the
 *          index. While set, imask and hblocks are the pairs.
 *   mixed  set once a store whose hashes are not the chain of its local
 *          hashes reached the index; never unset.
 * Asserted in debug builds (kvp_approx_check).
 */
#ifndef KVP_ROUTE_APPROX_H
#define KVP_ROUTE_APPROX_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"
#include "route/index.h"
#include "route/nodes.h"
#include "route/router.h"

/* A node's tags of holders 0..KVP_TAG_LINE-1 past its slot: one cache
 * line, made at its second such holder (approx.c). */
#define KVP_TAG_LINE 16

struct kvp_ttl_ent { /* approx-mode expiry queue: one touched block */
	uint64_t exp;
	uint32_t node; /* KVP_NODE_NONE: emptied (a later touch moved it) */
	uint32_t holder;
};

/* A TTL-fed index: approximate mode's (over the router's index) or the
 * predict-on-route side index (its own). Each (holder, node) maps to the
 * tag of its one live queue entry: its absolute queue position mod 2^32
 * (never 0; the queue is shorter than 2^32), kept in the node's own slot
 * (kvp_node_ttl ttag, thold) when that is free, else in the table ttl.
 * Each entry holds a node reference. */
struct kvp_approx {
	struct kvp_arena *ar; /* borrowed (bigmem.h) */
	struct kvp_index *ix; /* borrowed (approx mode) or owned (side) */
	struct kvp_nodes *nd; /* the router's, borrowed */
	uint64_t ttl_ms, max;
	uint64_t *expired, *pruned; /* the router's counters */
	struct kvp_kmap ttl;        /* (holder, node) → tag, but for the
	                               one in the node's slot and those of
	                               holders below KVP_TAG_LINE */
	uint32_t *lines;            /* tag lines: KVP_TAG_LINE tags each */
	size_t caplines;            /* u32 */
	uint32_t nlines, linefree;  /* lines made; first free line + 1 */
	size_t nttl;                /* (holder, node) entries in all */
	struct kvp_ttl_ent *q;      /* FIFO: q[qhead..qtail) */
	size_t qhead, qtail, qcap;
	uint64_t qbase; /* absolute position of q[0] */
	/* Set once a store whose hashes are not the chain of its local
	 * hashes reaches ix (an event, or a request bringing its own): till
	 * then a holder's matched prefix maps the request's own hashes. */
	int mixed;
	/* The flat index (approx.c): while set, ix holds holders only and
	 * the pairs are imask bits (holder h: bit h) per node id. */
	int flat;
	uint64_t *imask;
	uint32_t *tchild;  /* children in the tree (below) */
	uint64_t *hblocks; /* per holder: its pairs (tree_size) */
	size_t caphb;
	/* The radix tree's nodes: those held, and those with a child in the
	 * tree (holderless ones only pruning leaves, till their last held
	 * descendant goes). */
	size_t fnodes;
	uint64_t fpairs;
};

/* approx.c: a's state over index ix (borrowed) and block table nd, its
 * tables from arena ar (borrowed), its
 * index flat to start with when flat is set (legacy scoring needs the
 * tree); kvp_approx_fini frees the state, not the index. */
void kvp_approx_init(struct kvp_approx *a, struct kvp_index *ix,
                     struct kvp_nodes *nd, struct kvp_arena *ar,
                     uint64_t ttl_ms, uint64_t max, int flat, uint64_t *expired,
                     uint64_t *pruned);
void kvp_approx_fini(struct kvp_approx *a);
/* approx.c: moves a flat index's pairs into the radix tree, for good
 * (before anything but a's own decisions reaches the index). 0, or -1 on
 * allocation failure. */
int kvp_approx_unflat(struct kvp_approx *a);
/* approx.c: kvp_index_match() over a's index for request q (ids its
 * blocks' nodes). */
size_t kvp_approx_match(const struct kvp_approx *a, const uint32_t *ids,
                        const struct kvp_request *q, int legacy,
                        uint32_t *scores);
/* approx.c: holder h's blocks (Dynamo's tree_size). */
uint64_t kvp_approx_holder_blocks(const struct kvp_approx *a, uint32_t h);
/* approx.c: the index's nodes, (block, holder) pairs and bytes. */
void kvp_approx_totals(const struct kvp_approx *a, size_t *nodes,
                       uint64_t *pairs, size_t *bytes);
/* approx.c: drops a's entries expired at now (and prunes over the cap). */
void kvp_approx_expire(struct kvp_approx *a, uint64_t now);
/* approx.c: (w, rank) is assumed to cache request q's blocks (seq, node
 * ids ids) until now + ttl; held: the leading blocks its match in a->ix
 * found it holding (0 when unknown). 0, or -1 on allocation failure. */
int kvp_approx_record(struct kvp_approx *a, uint64_t w, uint32_t rank,
                      const struct kvp_request *q, const uint64_t *seq,
                      const uint32_t *ids, uint64_t now, uint32_t held);
/* The predict-on-route side index: its own index over block table nd. NULL
 * on allocation failure. kvp_side_free frees it and its index. */
struct kvp_approx *kvp_side_new(struct kvp_nodes *nd, struct kvp_arena *ar,
                                uint64_t ttl_ms, uint64_t max, int flat,
                                uint64_t *expired, uint64_t *pruned);
void kvp_side_free(struct kvp_approx *a);
/* A store whose hashes are not the chain of its local hashes reaches
 * a's index (mixed). */
void kvp_approx_mixed(struct kvp_approx *a);
/* The holders of a's index. */
size_t kvp_approx_nholders(const struct kvp_approx *a);
/* (w, rank)'s device holder in a's index, or -1. */
int64_t kvp_approx_holder(const struct kvp_approx *a, uint64_t w,
                          uint32_t rank);
/* Debug builds (KVP_DEBUG): asserts a's mode invariants. */
void kvp_approx_check(const struct kvp_approx *a);

#endif
