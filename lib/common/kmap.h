/* SPDX-License-Identifier: MIT */
/*
 * kmap.h — open-addressing hash map from a (u32, u64) key to a u32 value.
 *
 * Linear probing, capacity growing by 1.25x, load kept at or below 4/5, and
 * backward-shift deletion (no tombstones), so memory follows the number of
 * live entries: 16 bytes per slot. A sparse map (kvp_kmap_init_sparse)
 * doubles and keeps its load between 3/10 and 3/5: shorter probes (a miss
 * costs about 3 slots instead of 13) and half the rehashing, for about
 * 1.6x the memory, for the hot per-request and per-block tables. Value 0 is
 * reserved as "empty" and may not be stored. Iteration order is unspecified:
 * never let it reach output. Allocation failure makes kvp_kmap_put return -1
 * (the map is unchanged). Tables come from bigmem.h: a sparse map's are
 * "whole" regions (huge pages from 4 KiB on), a dense map's are mapped
 * from 2 MiB on.
 */
#ifndef KVP_KMAP_H
#define KVP_KMAP_H

#include <stddef.h>
#include <stdint.h>

struct kvp_kmap_ent {
	uint64_t b;
	uint32_t a;
	uint32_t v; /* 0: empty slot */
};

struct kvp_arena; /* common/bigmem.h */

struct kvp_kmap {
	struct kvp_kmap_ent *t;
	size_t cap;
	size_t n;
	int sparse;
	struct kvp_arena *ar; /* a sparse map's tables' (bigmem.h) */
};

/* The entries m holds. */
static inline size_t
kvp_kmap_size(const struct kvp_kmap *m)
{
	return m->n;
}

void kvp_kmap_init(struct kvp_kmap *m);
void kvp_kmap_init_sparse(struct kvp_kmap *m, struct kvp_arena *ar);
void kvp_kmap_fini(struct kvp_kmap *m);
/* Returns the value, or 0 if absent. */
uint32_t kvp_kmap_get(const struct kvp_kmap *m, uint32_t a, uint64_t b);

/* out[i] = kvp_kmap_get(m, a, b[i]) for i < n, the probes of a few keys at
 * a time in flight together. */
void kvp_kmap_get_many(const struct kvp_kmap *m, uint32_t a, const uint64_t *b,
                       size_t n, uint32_t *out);

/* The number of leading b[0..n) whose keys (a, b[i]) are present, for key
 * sets closed under prefixes (a chain's hashes: if b[i] is present, so is
 * every b[j], j < i): a binary search, O(log n) lookups. */
size_t kvp_kmap_prefix(const struct kvp_kmap *m, uint32_t a, const uint64_t *b,
                       size_t n);
/* Inserts or replaces (v != 0). *old (if non-NULL) gets the previous value
 * or 0. Returns 0, or -1 on allocation failure. */
int kvp_kmap_put(struct kvp_kmap *m, uint32_t a, uint64_t b, uint32_t v,
                 uint32_t *old);
/* Finds the key, inserting it with value vinit (!= 0) if absent, in one
 * probe. Returns a pointer to its value (valid until the next change to the
 * map; never store 0 through it), or NULL on allocation failure.
 * *inserted tells which happened. */
uint32_t *kvp_kmap_upsert(struct kvp_kmap *m, uint32_t a, uint64_t b,
                          uint32_t vinit, int *inserted);
/* A pointer to the key's value (valid until the next change to the map;
 * never store 0 through it), or NULL if absent. Never grows the map. */
uint32_t *kvp_kmap_ref(struct kvp_kmap *m, uint32_t a, uint64_t b);
/* Removes the entry whose value ref points to (from kvp_kmap_ref or
 * kvp_kmap_upsert, with no change to the map since). */
void kvp_kmap_del_ref(struct kvp_kmap *m, uint32_t *ref);
/* Removes the key; returns its value, or 0 if absent. */
uint32_t kvp_kmap_del(struct kvp_kmap *m, uint32_t a, uint64_t b);
/* Hints the CPU to fetch the key's home slot (no effect on contents). */
void kvp_kmap_prefetch(const struct kvp_kmap *m, uint32_t a, uint64_t b);
/* Bytes held by the table (a mapped one's whole mapping). */
size_t kvp_kmap_bytes(const struct kvp_kmap *m);
/* The mixing function the map uses (also handy for other tables). */
uint64_t kvp_kmap_mix(uint32_t a, uint64_t b);

#endif
