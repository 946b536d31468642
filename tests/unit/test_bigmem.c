/* SPDX-License-Identifier: MIT */
/* test_bigmem.c — common/bigmem: zeroed memory whatever the path (calloc,
 * a fresh mapping, a cached region written before, growth in place over
 * bytes written before the region was cached), contents kept across
 * growth, and kvp_big_len's accounting. Each array is checked against
 * what was written into it, byte for byte. The tests run over one arena
 * object (AR); test_arenas checks that two arenas and the NULL arena stay
 * apart. Built with -DKVP_PLAIN_MALLOC every region is a plain
 * allocation: the same tests hold but for the accounting, whose
 * expectation is then the bytes asked for. */
#include <stdint.h>
#include <stdlib.h>

#include "common/bigmem.h"
#include "unit.h"

static struct kvp_arena *AR;

/* Are p[from..to) all zero? */
static int
zero(const unsigned char *p, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

static void
test_new_free(void)
{
	/* below 4 KiB: calloc; from there (whole) or 2 MiB: a mapping */
	size_t sizes[] = {
	    0,        1,      1000, (4 << 10) - 1, 4 << 10, (64 << 10) - 1,
	    64 << 10, 3 << 20};

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (int whole = 0; whole < 2; whole++) {
			unsigned char *p = kvp_big_new(AR, sizes[k], whole);

			CHECK(p != NULL);
			if (p == NULL)
				continue;
			CHECK(zero(p, 0, sizes[k]));
			memset(p, 0xa5, sizes[k]);
			CHECK(kvp_big_len(AR, sizes[k], whole) >= sizes[k]);
			kvp_big_free(AR, p, sizes[k], whole);
		}
#ifndef KVP_PLAIN_MALLOC
	/* accounting: whole regions up to 1 MiB are chunks of a power of
	 * two, larger ones round to 2 MiB (their header is outside), others
	 * to a page, small ones are what they are */
	CHECK_U64(kvp_big_len(AR, 1000, 1), 1000);
	CHECK_U64(kvp_big_len(AR, (4 << 10) - 1, 1), (4 << 10) - 1);
	CHECK_U64(kvp_big_len(AR, 4 << 10, 1), 4 << 10);
	CHECK_U64(kvp_big_len(AR, (4 << 10) + 1, 1), 8 << 10);
	CHECK_U64(kvp_big_len(AR, 64 << 10, 1), 64 << 10);
	CHECK_U64(kvp_big_len(AR, (64 << 10) + 1, 1), 128 << 10);
	CHECK_U64(kvp_big_len(AR, 1 << 20, 1), 1 << 20);
	CHECK_U64(kvp_big_len(AR, (1 << 20) + 1, 1), 2 << 20);
	CHECK_U64(kvp_big_len(AR, 2 << 20, 1), 2 << 20);
	CHECK_U64(kvp_big_len(AR, (2 << 20) + 1, 1), 4 << 20);
	CHECK_U64(kvp_big_len(AR, 64 << 10, 0), 64 << 10);
	CHECK_U64(kvp_big_len(AR, 3 << 20, 0), 3 << 20);
#else
	CHECK(AR == NULL);
	CHECK_U64(kvp_big_len(AR, (4 << 10) + 1, 1), (4 << 10) + 1);
	CHECK_U64(kvp_big_len(AR, (2 << 20) + 1, 1), (2 << 20) + 1);
#endif
}

/* Chunks of the shared arena: a freed one comes back zeroed to the next
 * region of its size, and moves (contents kept) when it grows; regions of
 * every size stay apart. */
static void
test_chunks(void)
{
	size_t sizes[] = {64 << 10, 100 << 10, 512 << 10, 1 << 20};
	unsigned char *p[4], *q;
	size_t cap;

	for (size_t k = 0; k < 4; k++) {
		p[k] = kvp_big_new(AR, sizes[k], 1);
		CHECK(p[k] != NULL);
		if (p[k] == NULL)
			return;
		memset(p[k], (int)(0x10 + k), sizes[k]);
	}
	for (size_t k = 0; k < 4; k++) /* no two overlap */
		for (size_t i = 0; i < sizes[k]; i += 4096)
			CHECK(p[k][i] == 0x10 + k);
	kvp_big_free(AR, p[1], sizes[1], 1);
	q = kvp_big_new(AR, sizes[1], 1); /* its chunk again: zeroed */
	CHECK(q != NULL);
	if (q == NULL)
		return;
	CHECK(zero(q, 0, sizes[1]));
	memset(q, 0x77, sizes[1]);
	cap = sizes[1]; /* outgrows its chunk: moves, the rest zero */
	CHECK(kvp_big_grow(AR, &q, &cap, sizes[1] + 1, 1) == 0);
	CHECK_U64(cap, 2 * sizes[1]);
	CHECK(zero(q, sizes[1], cap));
	CHECK(q[0] == 0x77 && q[sizes[1] - 1] == 0x77);
	for (size_t k = 0; k < 4; k++)
		if (k != 1)
			CHECK(p[k][0] == 0x10 + k &&
			      p[k][sizes[k] - 1] == 0x10 + k);
	kvp_big_free(AR, q, cap, 1);
	for (size_t k = 0; k < 4; k++)
		if (k != 1)
			kvp_big_free(AR, p[k], sizes[k], 1);
}

/* A region freed dirty comes back zeroed, as far as asked and, once it
 * grows in place, as far as it grows. */
static void
test_cache_reuse(void)
{
	size_t n = 300 << 10, cap;
	unsigned char *p = kvp_big_new(AR, n, 1), *q;

	CHECK(p != NULL);
	if (p == NULL)
		return;
	memset(p, 0xff, n);
	kvp_big_free(AR, p, n, 1);
	/* a smaller one: likely the same region (the cache takes the
	 * smallest that fits); zero either way */
	q = kvp_big_new(AR, 100 << 10, 1);
	CHECK(q != NULL);
	if (q == NULL)
		return;
	CHECK(zero(q, 0, 100 << 10));
	memset(q, 0x11, 100 << 10);
	/* grown past the bytes it was handed out with, below what it held
	 * before it was cached: the new part is zero, the old kept */
	cap = 100 << 10;
	CHECK(kvp_big_grow(AR, &q, &cap, (200 << 10) + 1, 1) == 0);
	CHECK(cap >= (200 << 10) + 1);
	CHECK(zero(q, 100 << 10, cap));
	CHECK(q[0] == 0x11 && q[(100 << 10) - 1] == 0x11);
	kvp_big_free(AR, q, cap, 1);
}

/* An array grown one item at a time keeps its items and zero tail. */
static void
test_grow(void)
{
	uint32_t *a = NULL;
	size_t cap = 0, n = 3 << 20; /* 12 MiB of items */
	int ok = 1;

	for (size_t i = 0; i < n; i++) {
		if (kvp_big_grow(AR, &a, &cap, i + 1, sizeof(*a)) != 0) {
			ok = 0;
			break;
		}
		if (a[i] != 0)
			ok = 0;
		a[i] = (uint32_t)(i * 2654435761u);
	}
	CHECK(ok);
	for (size_t i = 0; ok && i < n; i++)
		if (a[i] != (uint32_t)(i * 2654435761u))
			ok = 0;
	CHECK(ok);
	CHECK(cap >= n && cap < 2 * n + 16);
	CHECK(kvp_big_grow(AR, &a, &cap, 10, sizeof(*a)) == 0); /* no shrink */
	CHECK(cap >= n);
	CHECK(kvp_big_grow(AR, &a, &cap, SIZE_MAX / 2, sizeof(*a)) == -1);
	CHECK(a[n - 1] == (uint32_t)((n - 1) * 2654435761u));
	kvp_big_free(AR, a, cap * sizeof(*a), 1);
}

/* Two arenas never hand out each other's chunks, a chunk freed to one
 * comes back from that one, and the NULL arena shares nothing: its whole
 * regions up to 1 MiB are calloc's (their bytes, no more). */
static void
test_arenas(void)
{
	struct kvp_arena *b = kvp_arena_new();
	size_t n = 64 << 10;
	unsigned char *p = kvp_big_new(AR, n, 1), *q, *z;

	CHECK(p != NULL);
	if (p == NULL)
		return;
	memset(p, 0x5a, n);
	kvp_big_free(AR, p, n, 1);
	q = kvp_big_new(b, n, 1); /* not AR's freed chunk */
	CHECK(q != NULL && zero(q, 0, n));
#ifndef KVP_PLAIN_MALLOC
	CHECK(b != NULL && q != p);
	CHECK(kvp_big_new(AR, n, 1) == p); /* AR's own, again, zeroed */
	CHECK(zero(p, 0, n));
	kvp_big_free(AR, p, n, 1);
#endif
	z = kvp_big_new(NULL, n, 1);
	CHECK(z != NULL && zero(z, 0, n));
	CHECK_U64(kvp_big_len(NULL, n, 1), n);
	CHECK_U64(kvp_big_len(NULL, (1 << 20) + 1, 1),
#ifndef KVP_PLAIN_MALLOC
	          2 << 20);
#else
	          (1 << 20) + 1);
#endif
	kvp_big_free(NULL, z, n, 1);
	kvp_big_free(b, q, n, 1);
	kvp_arena_free(b); /* with a free chunk and nothing else */
	kvp_arena_free(NULL);
}

int
main(void)
{
	AR = kvp_arena_new();
#ifndef KVP_PLAIN_MALLOC
	CHECK(AR != NULL);
#endif
	test_new_free();
	test_arenas();
	test_chunks();
	test_cache_reuse();
	test_grow();
	kvp_arena_free(AR); /* with cached regions: valgrind sees them go */
	return UNIT_DONE();
}
