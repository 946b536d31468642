/* SPDX-License-Identifier: MIT */
/* bigmem.c — see bigmem.h. */
#include "common/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PMD ((size_t)2 << 20)
#define OWN ((size_t)256 << 10)

static int
mapped(size_t bytes, int whole)
{
	return bytes >= (whole ? OWN : PMD);
}

size_t
kvp_big_len(size_t bytes, int whole)
{
	size_t r = whole ? PMD : (size_t)sysconf(_SC_PAGESIZE);

	if (!mapped(bytes, whole))
		return bytes;
	return (bytes + r - 1) & ~(r - 1);
}

void *
kvp_big_new(size_t bytes, int whole)
{
	size_t len, mlen;
	char *p, *a;

	if (bytes > SIZE_MAX / 2 - PMD)
		return NULL;
	if (!mapped(bytes, whole))
		return calloc(bytes ? bytes : 1, 1);
	len = kvp_big_len(bytes, whole);
	mlen = len + PMD;
	p = mmap(NULL, mlen, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + PMD - 1) & ~(uintptr_t)(PMD - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + len < p + mlen)
		munmap(a + len, (size_t)(p + mlen - (a + len)));
	(void)madvise(a, len, MADV_HUGEPAGE);
	return a;
}

void
kvp_big_free(void *p, size_t bytes, int whole)
{
	if (p == NULL)
		return;
	if (!mapped(bytes, whole))
		free(p);
	else
		munmap(p, kvp_big_len(bytes, whole));
}

int
kvp_big_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp, *n;
	size_t ncap = *cap ? *cap : 16;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (elem != 0 && ncap > SIZE_MAX / 4 / elem)
		return -1;
	n = kvp_big_new(ncap * elem, 1);
	if (n == NULL)
		return -1;
	if (*cap != 0)
		memcpy(n, *p, *cap * elem);
	kvp_big_free(*p, *cap * elem, 1);
	*p = n;
	*cap = ncap;
	return 0;
}
