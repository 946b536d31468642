/* SPDX-License-Identifier: MIT */
/* bigmem.c — see bigmem.h. */
#include "common/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PMD ((size_t)2 << 20)
#define OWN ((size_t)4 << 10)

/*
 * A region mapped on its own starts 2 MiB aligned, right after a small
 * page holding its header: how much address space the mapping reserves
 * from the region's start, and how far it may have been written. (In the
 * region's first bytes, the header would push a table of exactly 2 MiB
 * into a second huge page.) A whole region reserves room to grow in place
 * (MAP_NORESERVE: untouched pages cost nothing), so kvp_big_grow neither
 * copies it nor has fresh huge pages zeroed at every doubling. Freed whole
 * regions wait in a small cache for the next kvp_big_new: a table that
 * grows by rehashing into a new one then lands in pages already faulted
 * in, zeroed by memset as far as they were written, instead of in fresh
 * huge pages the kernel zeroes whole (on a VM, about a quarter of a
 * replay's CPU time went there). It takes regions written up to 2 MiB
 * only: it holds 16 MiB at most.
 */
struct hdr {
	size_t res;   /* bytes mapped (reserved) from the region's start */
	size_t dirty; /* bytes ever handed out */
};
#define HDR ((size_t)64)
#define RESERVE ((size_t)1 << 30) /* at least, or 8x the bytes */
#define NCACHE 8
#define CACHE_MAX PMD /* bytes written at most: a bound on what it holds */

/*
 * Whole regions of up to 1 MiB share huge pages: each is a chunk (a power
 * of two from 4 KiB to 1 MiB) carved from the arena's reservation, made at
 * its first chunk, and a freed chunk waits on its size's free list for the next
 * region of that size. A table growing from 4 KiB to 1 MiB thus fills
 * huge pages the arena has faulted in already, where a mapping of its own
 * would have had a fresh 2 MiB page zeroed for each (a replay keeps a
 * dozen such tables, most of whose pages went unused), and calloc's
 * small pages a fault per 4 KiB (about 70 of a replay's 240 faults). A
 * chunk is handed out zeroed: fresh from the arena, or cleared as far as
 * its last user had it.
 */
#define ARENA_RES ((size_t)1 << 30)
#define CLASS_MIN 12 /* 4 KiB */
#define CLASS_MAX 20 /* 1 MiB */
struct chunk {       /* a free chunk's first bytes */
	struct chunk *next;
	size_t dirty; /* bytes its last user may have written */
};

struct kvp_arena {
	char *cache[NCACHE]; /* freed whole regions (their starts) */
	size_t ncache;
	char *base; /* NULL: not reserved (yet, or that failed) */
	size_t top; /* bytes carved so far */
	int failed;
	struct chunk *chunks[CLASS_MAX + 1]; /* free lists per class */
};

/* kvp_big_grow's new capacity for need items of elem bytes: doubled
 * from 16 (or cap); 0, or -1 on overflow. */
static int
grown_cap(size_t cap, size_t need, size_t elem, size_t *out)
{
	size_t ncap = cap ? cap : 16;

	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (elem != 0 && ncap > SIZE_MAX / 16 / elem)
		return -1;
	*out = ncap;
	return 0;
}

#ifndef KVP_PLAIN_MALLOC
/* Is a region of bytes mapped (a chunk, or a mapping of its own)? Not
 * when calloc's: below 2 MiB, or below 4 KiB when whole (up to 1 MiB
 * with no arena to share). */
static int
mapped(const struct kvp_arena *ar, size_t bytes, int whole)
{
	if (!whole)
		return bytes >= PMD;
	return bytes >= (ar != NULL ? OWN : ((size_t)1 << CLASS_MAX) + 1);
}

static size_t
round_up(size_t n, size_t r)
{
	return (n + r - 1) & ~(r - 1);
}

static size_t
page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* The chunk class of a whole region of bytes (mapped), or 0: too big. */
static unsigned
chunk_class(size_t bytes)
{
	unsigned k = CLASS_MIN;

	while (k <= CLASS_MAX && ((size_t)1 << k) < bytes)
		k++;
	return k <= CLASS_MAX ? k : 0;
}

static int
in_arena(const struct kvp_arena *ar, const void *p)
{
	return ar != NULL && ar->base != NULL && (const char *)p >= ar->base &&
	       (const char *)p < ar->base + ARENA_RES;
}

/* The bytes of a mapping of its own for a region of bytes. */
static size_t
map_len(size_t bytes, int whole)
{
	return round_up(bytes, whole ? PMD : page());
}

size_t
kvp_big_len(const struct kvp_arena *ar, size_t bytes, int whole)
{
	if (!mapped(ar, bytes, whole))
		return bytes;
	if (whole && ar != NULL && chunk_class(bytes) != 0)
		return (size_t)1 << chunk_class(bytes);
	return map_len(bytes, whole);
}

static struct hdr *
hdr_of(void *p)
{
	return (struct hdr *)(void *)((char *)p - HDR);
}

/* A region of len bytes reserving res, 2 MiB aligned, advised as huge
 * pages, after its header's page; or NULL. */
static char *
map_region(size_t len, size_t res)
{
	size_t pg = page(), mlen = pg + res + PMD;
	char *p, *a;

	p = mmap(NULL, mlen, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + pg + PMD - 1) & ~(uintptr_t)(PMD - 1));
	if (a - pg > p)
		munmap(p, (size_t)(a - pg - p));
	if (a + res < p + mlen)
		munmap(a + res, (size_t)(p + mlen - (a + res)));
	(void)madvise(a, len, MADV_HUGEPAGE);
	*hdr_of(a) = (struct hdr){res, 0};
	return a;
}

static void
unmap_region(char *a)
{
	munmap(a - page(), page() + hdr_of(a)->res);
}

/* A cached region reserving len bytes or more (the smallest), or NULL. */
static char *
cache_take(struct kvp_arena *ar, size_t len)
{
	size_t best = NCACHE;
	char *a = NULL;

	if (ar == NULL)
		return NULL;
	for (size_t i = 0; i < ar->ncache; i++) {
		size_t res = hdr_of(ar->cache[i])->res;

		if (res >= len &&
		    (best == NCACHE || res < hdr_of(ar->cache[best])->res))
			best = i;
	}
	if (best < NCACHE) {
		a = ar->cache[best];
		ar->cache[best] = ar->cache[--ar->ncache];
	}
	return a;
}

/* A zeroed chunk of class k, or NULL (no arena, or it is full). */
static char *
chunk_take(struct kvp_arena *ar, unsigned k)
{
	size_t sz = (size_t)1 << k;
	struct chunk *c;
	char *p = NULL;

	if ((c = ar->chunks[k]) != NULL) {
		ar->chunks[k] = c->next;
		memset(c, 0, c->dirty > sizeof(*c) ? c->dirty : sizeof(*c));
		return (char *)c;
	}
	if (ar->base == NULL && !ar->failed) {
		ar->base = map_region(ARENA_RES, ARENA_RES);
		ar->failed = ar->base == NULL;
	}
	ar->top = round_up(ar->top, sz); /* chunks stay aligned */
	if (ar->base != NULL && ar->top + sz <= ARENA_RES) {
		p = ar->base + ar->top;
		ar->top += sz;
	}
	return p;
}

/* Puts chunk p (its user had bytes of it) on its free list. */
static void
chunk_put(struct kvp_arena *ar, void *p, size_t bytes)
{
	struct chunk *c = p;
	unsigned k = chunk_class(bytes);

	c->dirty = bytes;
	c->next = ar->chunks[k];
	ar->chunks[k] = c;
}

struct kvp_arena *
kvp_arena_new(void)
{
	return calloc(1, sizeof(struct kvp_arena));
}

void
kvp_arena_free(struct kvp_arena *ar)
{
	if (ar == NULL)
		return;
	for (size_t i = 0; i < ar->ncache; i++)
		unmap_region(ar->cache[i]);
	if (ar->base != NULL)
		unmap_region(ar->base);
	free(ar);
}

void *
kvp_big_new(struct kvp_arena *ar, size_t bytes, int whole)
{
	size_t len, res;
	char *a = NULL;

	if (bytes > SIZE_MAX / 16 - PMD)
		return NULL;
	if (!mapped(ar, bytes, whole))
		return calloc(bytes ? bytes : 1, 1);
	if (whole && ar != NULL && chunk_class(bytes) != 0 &&
	    (a = chunk_take(ar, chunk_class(bytes))) != NULL)
		return a;
	len = map_len(bytes, whole);
	if (whole && (a = cache_take(ar, len)) != NULL) {
		size_t d = hdr_of(a)->dirty;

		memset(a, 0, bytes < d ? bytes : d);
		(void)madvise(a, len, MADV_HUGEPAGE);
		return a;
	}
	res = whole && len < RESERVE ? RESERVE : len;
	if (whole && res < len * 8 && len <= SIZE_MAX / 16)
		res = round_up(len * 8, PMD);
	if (res > len)
		a = map_region(len, res);
	if (a == NULL) /* no room to reserve (an address space limit) */
		a = map_region(len, len);
	return a;
}

void
kvp_big_free(struct kvp_arena *ar, void *p, size_t bytes, int whole)
{
	struct hdr *h;

	if (p == NULL)
		return;
	if (!mapped(ar, bytes, whole)) {
		free(p);
		return;
	}
	if (whole && in_arena(ar, p)) {
		chunk_put(ar, p, bytes);
		return;
	}
	h = hdr_of(p);
	if (bytes > h->dirty)
		h->dirty = bytes;
	if (whole && ar != NULL && h->dirty <= CACHE_MAX &&
	    ar->ncache < NCACHE) {
		ar->cache[ar->ncache++] = p;
		return;
	}
	unmap_region(p);
}

int
kvp_big_grow(struct kvp_arena *ar, void *pp, size_t *cap, size_t need,
             size_t elem)
{
	void **p = pp, *n;
	size_t ncap, old = *cap * elem;

	if (need <= *cap)
		return 0;
	if (grown_cap(*cap, need, elem, &ncap) != 0)
		return -1;
	/* a chunk is at most twice its bytes: growth moves it */
	if (mapped(ar, old, 1) && !in_arena(ar, *p)) { /* in place */
		struct hdr *h = hdr_of(*p);
		size_t len = map_len(ncap * elem, 1);

		if (len <= h->res) {
			size_t z =
			    ncap * elem < h->dirty ? ncap * elem : h->dirty;

			if (z > old) /* written before it was cached */
				memset((char *)*p + old, 0, z - old);
			(void)madvise(*p, len, MADV_HUGEPAGE);
			*cap = ncap;
			return 0;
		}
	}
	n = kvp_big_new(ar, ncap * elem, 1);
	if (n == NULL)
		return -1;
	if (old != 0)
		memcpy(n, *p, old);
	kvp_big_free(ar, *p, old, 1);
	*p = n;
	*cap = ncap;
	return 0;
}

#else /* KVP_PLAIN_MALLOC: every region a plain allocation */

struct kvp_arena *
kvp_arena_new(void)
{
	return NULL;
}

void
kvp_arena_free(struct kvp_arena *ar)
{
	(void)ar;
}

void *
kvp_big_new(struct kvp_arena *ar, size_t bytes, int whole)
{
	(void)ar;
	(void)whole;
	return calloc(bytes ? bytes : 1, 1);
}

void
kvp_big_free(struct kvp_arena *ar, void *p, size_t bytes, int whole)
{
	(void)ar;
	(void)bytes;
	(void)whole;
	free(p);
}

size_t
kvp_big_len(const struct kvp_arena *ar, size_t bytes, int whole)
{
	(void)ar;
	(void)whole;
	return bytes;
}

int
kvp_big_grow(struct kvp_arena *ar, void *pp, size_t *cap, size_t need,
             size_t elem)
{
	void **p = pp, *n;
	size_t ncap;

	(void)ar;
	if (need <= *cap)
		return 0;
	if (grown_cap(*cap, need, elem, &ncap) != 0)
		return -1;
	n = realloc(*p, ncap * elem != 0 ? ncap * elem : 1);
	if (n == NULL)
		return -1;
	memset((char *)n + *cap * elem, 0, (ncap - *cap) * elem);
	*p = n;
	*cap = ncap;
	return 0;
}

#endif
