/* SPDX-License-Identifier: MIT */
/*
 * index.h — the router's prefix index (Dynamo's radix tree, spec
 * docs/spec/route-score.md §2), for route-score.
 *
 * Nodes are keyed by (parent node, local block hash = tokens_hash), so the
 * same local hash under two prefixes is two nodes. Every node keeps the set
 * of holders that have it; a holder is one (worker_id, dp_rank, tier).
 * Each holder has its own map external block hash → node, used to resolve
 * parent_hash on stores and to find blocks on removals (parents are per
 * holder: a parent known only to another worker is unknown).
 *
 * Semantics (Dynamo's concurrent radix tree):
 *  - store: parent NULL → under the root; unknown parent → the whole store
 *    is skipped (KVP_STORE_PARENT_NOT_FOUND); a block list that repeats a
 *    hash or contains its parent is rejected (KVP_STORE_SELF_REFERENCE);
 *    a store that adds nothing new is KVP_STORE_DUPLICATE. An external
 *    hash re-stored with other content is moved to the new node.
 *  - remove: per hash, drop the holder from that node; unknown hashes are
 *    counted and skipped, the rest still applied.
 *  - clear: drops every block of one holder.
 *  - A node no holder has ends every match there (Dynamo clears its
 *    children); a node is freed once no holder maps it and it has no
 *    children, so memory follows the live (block, holder) pairs.
 *  - match (contiguous): a holder's score is the depth of the longest
 *    prefix of the request whose every node it holds. Legacy (classic
 *    RadixTree): +1 for every node on the matched path the holder has,
 *    contiguous or not; the walk stops at a missing or holderless node.
 *
 * Nothing here prints. Holder ids are dense, 0-based, never reused.
 */
#ifndef KVP_INDEX_H
#define KVP_INDEX_H

#include <stddef.h>
#include <stdint.h>

enum kvp_tier {
	KVP_TIER_DEVICE = 0,
	KVP_TIER_HOST = 1, /* host_pinned */
	KVP_TIER_DISK = 2,
	KVP_TIER_EXTERNAL = 3,
	KVP_TIER_COUNT = 4,
};

/* "device", "host_pinned", "disk", "external" → tier, or -1. */
int kvp_tier_parse(const char *s);
const char *kvp_tier_name(int tier);

struct kvp_holder {
	uint64_t worker_id;
	uint32_t dp_rank;
	uint32_t tier;
	uint64_t nblocks; /* (node, holder) pairs: Dynamo's tree_size */
};

enum kvp_store_status {
	KVP_STORE_OK = 0,
	KVP_STORE_DUPLICATE = 1,
	KVP_STORE_PARENT_NOT_FOUND = 2,
	KVP_STORE_SELF_REFERENCE = 3,
	KVP_STORE_NOMEM = -1,
};

struct kvp_index;
struct kvp_arena; /* common/bigmem.h */

/* An index whose node chunks come from arena ar (borrowed; NULL: none
 * shared). NULL on allocation failure. */
struct kvp_index *kvp_index_new(struct kvp_arena *ar);
/* For an index stored into and removed from per routed block (approximate
 * mode, predict-on-route): its (holder, hash) and edge tables keep their
 * load at or below 3/5 instead of 4/5, for shorter probes and shifts at
 * 1.4x their memory. */
struct kvp_index *kvp_index_new_sparse(struct kvp_arena *ar);
void kvp_index_free(struct kvp_index *ix);

/* Holder id of (worker, rank, tier): creates it when create is set.
 * Returns -1 if absent (or on allocation failure when creating). */
int64_t kvp_index_holder(struct kvp_index *ix, uint64_t worker_id,
                         uint32_t dp_rank, int tier, int create);
size_t kvp_index_nholders(const struct kvp_index *ix);
const struct kvp_holder *kvp_index_holder_info(const struct kvp_index *ix,
                                               uint32_t h);

/* Stores blocks ext[i] (external hash) / local[i] (tokens_hash), each the
 * child of the previous, the first under parent (or the root when
 * !has_parent). *added counts newly held blocks. Returns a status. */
int kvp_index_store(struct kvp_index *ix, uint32_t h, int has_parent,
                    uint64_t parent, const uint64_t *ext, const uint64_t *local,
                    size_t n, size_t *added);

/* kvp_index_store from the root, for a holder known to map ext[i] to its
 * node for every i < from (a prefix its match just found, all its hashes
 * its own): the walk starts below ext[from - 1]. The same result, without
 * the known steps. */
int kvp_index_store_from(struct kvp_index *ix, uint32_t h, const uint64_t *ext,
                         const uint64_t *local, size_t n, size_t from,
                         size_t *added);

/* Removes ext[0..n) from holder h; returns how many were removed and sets
 * *unknown to how many were not held. */
size_t kvp_index_remove(struct kvp_index *ix, uint32_t h, const uint64_t *ext,
                        size_t n, size_t *unknown);

/* Drops every block of holder h. Returns the number dropped, or -1 on
 * allocation failure (nothing dropped). */
int64_t kvp_index_clear(struct kvp_index *ix, uint32_t h);

/* Scores every holder for the request's local hashes: scores must hold
 * kvp_index_nholders() entries; all are written. Returns the depth of
 * the matched path (nodes walked). */
size_t kvp_index_match(const struct kvp_index *ix, const uint64_t *local,
                       size_t n, int legacy, uint32_t *scores);

/* Does holder h map external hash ext? */
int kvp_index_has(const struct kvp_index *ix, uint32_t h, uint64_t ext);

/* Accounting: bytes held by tables and nodes, live nodes, and live
 * (block, holder) pairs. */
size_t kvp_index_bytes(const struct kvp_index *ix);
size_t kvp_index_nodes(const struct kvp_index *ix);
uint64_t kvp_index_pairs(const struct kvp_index *ix);

#endif
