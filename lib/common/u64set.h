/* SPDX-License-Identifier: MIT */
/*
 * u64set.h — open-addressing hash set and map of u64 keys.
 *
 * Linear probing with backward-shift deletion (no tombstones), so lookups
 * stay short after many inserts and deletes. Every u64 is a valid key (slot
 * occupancy lives in a parallel byte array). The table grows at 3/4 load,
 * shrinks when deletions leave it under 1/8 full, and is released by
 * kvp_u64set_clear(), so memory follows the number of live keys, not the
 * history.
 *
 * A map is the same table with a u64 value per key (kvp_u64map). Nothing
 * here prints; allocation failure returns -1.
 */
#ifndef KVP_U64SET_H
#define KVP_U64SET_H

#include <stddef.h>
#include <stdint.h>

struct kvp_u64set {
	uint64_t *keys;
	uint64_t *vals; /* NULL for a plain set */
	unsigned char *used;
	size_t cap; /* 0 or a power of two */
	size_t n;
	int with_vals;
};

/* A set (with_vals 0) or a map (with_vals 1). No allocation until the first
 * insert. */
void kvp_u64set_init(struct kvp_u64set *s, int with_vals);
/* Frees the storage; the set stays usable (empty). */
void kvp_u64set_clear(struct kvp_u64set *s);
/* Empties the set but keeps its storage (for scratch sets reused per
 * record). Cost is proportional to the capacity. */
void kvp_u64set_reset(struct kvp_u64set *s);
#define kvp_u64set_fini kvp_u64set_clear

static inline size_t
kvp_u64set_count(const struct kvp_u64set *s)
{
	return s->n;
}

/* 1 if present, 0 if not. For a map, *val (if non-NULL) gets the value. */
int kvp_u64set_get(const struct kvp_u64set *s, uint64_t key, uint64_t *val);
#define kvp_u64set_has(s, k) kvp_u64set_get((s), (k), NULL)
/* Inserts key (setting the value for a map; an existing key's value is
 * replaced). Returns 1 if the key is new, 0 if it was present, -1 on
 * allocation failure (the set is unchanged). */
int kvp_u64set_put(struct kvp_u64set *s, uint64_t key, uint64_t val);
#define kvp_u64set_add(s, k) kvp_u64set_put((s), (k), 0)
/* Removes key. Returns 1 if it was present, 0 if not. */
int kvp_u64set_del(struct kvp_u64set *s, uint64_t key);

/* Iteration: for (size_t i = 0; kvp_u64set_next(s, &i, &k, &v);) ...
 * Unordered; do not insert or delete while iterating. */
int kvp_u64set_next(const struct kvp_u64set *s, size_t *pos, uint64_t *key,
                    uint64_t *val);

/* Bytes allocated (for tests and diagnostics). */
size_t kvp_u64set_bytes(const struct kvp_u64set *s);

#endif
