/* SPDX-License-Identifier: MIT */
/* bigmem.c — see bigmem.h. */
#include "common/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PMD ((size_t)2 << 20)
#define OWN ((size_t)64 << 10)

static int
mapped(size_t bytes, int whole)
{
	return bytes >= (whole ? OWN : PMD);
}

/* A mapped region starts with a header (one cache line) saying how long
 * its mapping is: a whole region's mapping reserves address space for
 * growth (MAP_NORESERVE: untouched pages cost nothing), so that
 * kvp_big_grow can grow it in place, without copying it into and zeroing
 * fresh huge pages at every doubling. */
#define HDR ((size_t)64)
#define RESERVE ((size_t)1 << 30) /* at least, or 8x the bytes */

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

/* A mapping of len bytes (reserving res), 2 MiB aligned, advised as
 * huge pages: its header filled, or NULL. */
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
	*(size_t *)(void *)a = res;
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
	char *a;

	if (p == NULL)
		return;
	if (!mapped(bytes, whole)) {
		free(p);
		return;
	}
	a = (char *)p - HDR;
	munmap(a, *(size_t *)(void *)a);
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
		char *a = (char *)*p - HDR;
		size_t len = kvp_big_len(ncap * elem, 1);

		if (len <= *(size_t *)(void *)a) {
			(void)madvise(a, len, MADV_HUGEPAGE);
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
