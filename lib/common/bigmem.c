/* SPDX-License-Identifier: MIT */
/* bigmem.c — see bigmem.h. */
#include "common/bigmem.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PMD ((size_t)2 << 20)
#define OWN ((size_t)64 << 10)

/*
 * A mapped region starts with a header (one cache line): how much address
 * space its mapping reserves, and how far it may have been written. A
 * whole region reserves room to grow in place (MAP_NORESERVE: untouched
 * pages cost nothing), so kvp_big_grow neither copies it nor has fresh
 * huge pages zeroed at every doubling. Freed whole regions wait in a small
 * cache for the next kvp_big_new: a table that grows by rehashing into a
 * new one then lands in pages already faulted in, zeroed by memset as far
 * as they were written, instead of in fresh huge pages the kernel zeroes
 * whole (on a VM, about a quarter of a replay's CPU time went there). It
 * takes regions written up to 2 MiB only: it holds 16 MiB at most.
 */
struct hdr {
	size_t res;   /* bytes mapped (reserved) from the header on */
	size_t dirty; /* bytes after the header ever handed out */
};
#define HDR ((size_t)64)
#define RESERVE ((size_t)1 << 30) /* at least, or 8x the bytes */
#define NCACHE 8
#define CACHE_MAX PMD /* bytes written at most: a bound on what it holds */

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static char *cache[NCACHE];
static size_t ncache;

static int
mapped(size_t bytes, int whole)
{
	return bytes >= (whole ? OWN : PMD);
}

static size_t
round_up(size_t n, size_t r)
{
	return (n + r - 1) & ~(r - 1);
}

size_t
kvp_big_len(size_t bytes, int whole)
{
	if (!mapped(bytes, whole))
		return bytes;
	return round_up(bytes + HDR,
	                whole ? PMD : (size_t)sysconf(_SC_PAGESIZE));
}

static struct hdr *
hdr_of(void *p)
{
	return (struct hdr *)(void *)((char *)p - HDR);
}

/* A mapping of len bytes (reserving res), 2 MiB aligned, advised as huge
 * pages, its header filled; or NULL. */
static char *
map_region(size_t len, size_t res)
{
	char *p, *a;
	size_t mlen = res + PMD;

	p = mmap(NULL, mlen, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + PMD - 1) & ~(uintptr_t)(PMD - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + res < p + mlen)
		munmap(a + res, (size_t)(p + mlen - (a + res)));
	(void)madvise(a, len, MADV_HUGEPAGE);
	*(struct hdr *)(void *)a = (struct hdr){res, 0};
	return a;
}

/* A cached region reserving len bytes or more (the smallest), or NULL. */
static char *
cache_take(size_t len)
{
	size_t best = NCACHE;
	char *a = NULL;

	pthread_mutex_lock(&cache_mu);
	for (size_t i = 0; i < ncache; i++) {
		size_t res = ((struct hdr *)(void *)cache[i])->res;

		if (res >= len &&
		    (best == NCACHE ||
		     res < ((struct hdr *)(void *)cache[best])->res))
			best = i;
	}
	if (best < NCACHE) {
		a = cache[best];
		cache[best] = cache[--ncache];
	}
	pthread_mutex_unlock(&cache_mu);
	return a;
}

void *
kvp_big_new(size_t bytes, int whole)
{
	size_t len, res;
	char *a = NULL;

	if (bytes > SIZE_MAX / 16 - PMD)
		return NULL;
	if (!mapped(bytes, whole))
		return calloc(bytes ? bytes : 1, 1);
	len = kvp_big_len(bytes, whole);
	if (whole && (a = cache_take(len)) != NULL) {
		struct hdr *h = (struct hdr *)(void *)a;

		memset(a + HDR, 0, bytes < h->dirty ? bytes : h->dirty);
		(void)madvise(a, len, MADV_HUGEPAGE);
		return a + HDR;
	}
	res = whole && len < RESERVE ? RESERVE : len;
	if (whole && res < len * 8 && len <= SIZE_MAX / 16)
		res = round_up(len * 8, PMD);
	if (res > len)
		a = map_region(len, res);
	if (a == NULL) /* no room to reserve (an address space limit) */
		a = map_region(len, len);
	return a != NULL ? a + HDR : NULL;
}

void
kvp_big_free(void *p, size_t bytes, int whole)
{
	struct hdr *h;

	if (p == NULL)
		return;
	if (!mapped(bytes, whole)) {
		free(p);
		return;
	}
	h = hdr_of(p);
	if (bytes > h->dirty)
		h->dirty = bytes;
	if (whole && h->dirty <= CACHE_MAX) {
		pthread_mutex_lock(&cache_mu);
		if (ncache < NCACHE) {
			cache[ncache++] = (char *)h;
			h = NULL;
		}
		pthread_mutex_unlock(&cache_mu);
	}
	if (h != NULL)
		munmap(h, h->res);
}

int
kvp_big_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp, *n;
	size_t ncap = *cap ? *cap : 16, old = *cap * elem;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (elem != 0 && ncap > SIZE_MAX / 16 / elem)
		return -1;
	if (mapped(old, 1)) { /* in place, within its reservation */
		struct hdr *h = hdr_of(*p);
		size_t len = kvp_big_len(ncap * elem, 1);

		if (len <= h->res) {
			size_t z =
			    ncap * elem < h->dirty ? ncap * elem : h->dirty;

			if (z > old) /* written before it was cached */
				memset((char *)*p + old, 0, z - old);
			(void)madvise(h, len, MADV_HUGEPAGE);
			*cap = ncap;
			return 0;
		}
	}
	n = kvp_big_new(ncap * elem, 1);
	if (n == NULL)
		return -1;
	if (old != 0)
		memcpy(n, *p, old);
	kvp_big_free(*p, old, 1);
	*p = n;
	*cap = ncap;
	return 0;
}
