/* SPDX-License-Identifier: MIT */
/*
 * bigmem.h — memory for big tables and arrays: zeroed, and from a size on
 * a mapping of its own advised as transparent huge pages.
 *
 * Probed at random, a table in 4 KiB pages takes about a TLB miss per probe
 * and a page fault per page on first touch, and a fault costs about 12 us
 * on a VM (a fifth of a replay's CPU time). A "whole" region (the hot
 * per-block tables and arrays, which trade memory for speed) lives in
 * huge pages from 4 KiB on: up to 1 MiB, as a power-of-two chunk of one
 * shared arena; beyond, in a mapping of its own rounded up to whole 2 MiB
 * pages, reserving room to grow in place. Freed ones are reused
 * (bigmem.c). Any other region is mapped from 2 MiB on, to its last page:
 * its whole 2 MiB spans become huge pages, its tail stays in small ones,
 * nothing is wasted. Smaller regions come from calloc. The caller passes
 * the same (arena, bytes, whole) to free it.
 *
 * The shared chunks and the cache of freed regions belong to an arena
 * object (struct kvp_arena), owned by whoever makes it (the router makes
 * one for its tables) and used by one thread at a time; there is no
 * process-wide state. A NULL arena shares nothing: whole regions up to
 * 1 MiB come from calloc, larger ones are mapped on their own and
 * unmapped when freed.
 *
 * Built with -DKVP_PLAIN_MALLOC (make asan and make valgrind do), every
 * region is a plain calloc/realloc/free and kvp_arena_new returns NULL,
 * so that ASan and valgrind see each allocation's bounds again (inside a
 * chunk or a reserved mapping they cannot).
 */
#ifndef KVP_BIGMEM_H
#define KVP_BIGMEM_H

#include <stddef.h>

struct kvp_arena;

/* A new arena (nothing reserved until its first chunk), or NULL (out of
 * memory, or KVP_PLAIN_MALLOC): NULL is a valid arena that shares
 * nothing. kvp_arena_free unmaps it and the regions it cached; every
 * region taken from it must be freed first. */
struct kvp_arena *kvp_arena_new(void);
void kvp_arena_free(struct kvp_arena *ar);

/* Zeroed memory for bytes, or NULL. */
void *kvp_big_new(struct kvp_arena *ar, size_t bytes, int whole);
void kvp_big_free(struct kvp_arena *ar, void *p, size_t bytes, int whole);
/* The bytes a region of bytes holds (a mapped one's whole mapping). */
size_t kvp_big_len(const struct kvp_arena *ar, size_t bytes, int whole);

/*
 * kvp_grow (util.h) for a whole-region array: grows *pp (items of elem
 * bytes, capacity *cap) to at least need items, doubling from 16; the new
 * items are zeroed. Free it with kvp_big_free(ar, *pp, *cap * elem, 1).
 * 0, or -1 on overflow or out of memory with *pp and *cap unchanged.
 */
int kvp_big_grow(struct kvp_arena *ar, void *pp, size_t *cap, size_t need,
                 size_t elem);

#endif
