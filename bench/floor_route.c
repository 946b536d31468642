/* SPDX-License-Identifier: MIT */
/*
 * floor_route.c — a floor under bench (d): the CPU time of only the
 * per-block table work that approximate-mode routing cannot avoid, done
 * with ideal tables, for a replay whose decisions are already known.
 *
 * Dynamo's router keeps, per request block, who is assumed to cache it
 * (ApproxKvIndexer, expiring ttl after the request) and who holds it in an
 * active request (ActiveSequences). Whatever the data structure, routing a
 * request reads each of its blocks' state until no worker matches, and
 * committing it writes the chosen worker's state of every block and queues
 * its expiry; each expiry is undone later. This program does exactly that
 * and nothing more: one 16-byte entry per block (cached and active worker
 * masks) and one per (worker, block) (refcount, expiry) in linear-probing
 * tables sized in advance (powers of two, at most 3/4 full, from the
 * input's distinct keys), on huge pages, with no growth, no deletion, no
 * scoring, no parsing and no output inside the timed part. route-score
 * keeps that state in hash tables too and does all of the rest as well,
 * so it cannot run faster than this floor plus its own input and output
 * side (bench (d0)). A design on dense node ids (arrays, not hash tables)
 * could go below it: this is a floor for hash-keyed state only.
 *
 * Input (stdin), one request per line, in replay order, as the bench
 * writes it from the trace and route-score's brief decisions:
 *   WORKER TIMESTAMP_MS N HASH_ID...
 * Usage: floor_route TTL_MS   (prints key=value lines: floor_ms, the best
 * of 5 runs; first_ms, the first, whose expiry queue is not yet faulted
 * in)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct blk {
	uint64_t s;              /* sequence hash; 0: empty */
	uint32_t cached, active; /* worker masks */
};

struct pair {
	uint64_t k; /* worker << 56 ^ sequence hash; 0: empty */
	uint32_t rc, exp;
};

struct pend {
	uint64_t s;
	uint32_t w, exp;
};

struct req {
	uint32_t w, ts, n;
	uint64_t *seq;
};

static struct blk *bt;
static struct pair *pt;
static int bbits, pbits; /* log2 of the table sizes */

static uint64_t
mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static struct blk *
blk_at(uint64_t s)
{
	size_t i = mix(s) >> (64 - bbits);

	while (bt[i].s != s && bt[i].s != 0)
		i = (i + 1) & (((size_t)1 << bbits) - 1);
	bt[i].s = s;
	return &bt[i];
}

static struct pair *
pair_at(uint64_t k)
{
	size_t i = mix(k) >> (64 - pbits);

	while (pt[i].k != k && pt[i].k != 0)
		i = (i + 1) & (((size_t)1 << pbits) - 1);
	pt[i].k = k;
	return &pt[i];
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* log2 of the smallest power of two with k[0..n)'s distinct values at
 * most 3/4 of it (k is sorted in place). */
static int
bits_for(uint64_t *k, size_t n)
{
	size_t d = 0;
	int b = 10;

	qsort(k, n, sizeof(*k), cmp_u64);
	for (size_t i = 0; i < n; i++)
		d += i == 0 || k[i] != k[i - 1];
	while (((size_t)3 << b) / 4 < d)
		b++;
	return b;
}

static void *
table(int bits, size_t ent)
{
	size_t bytes = ent << bits;
	void *p =
	    aligned_alloc((size_t)2 << 20, (bytes + ((size_t)2 << 20) - 1) &
	                                       ~(((size_t)2 << 20) - 1));

	if (p == NULL) {
		perror("floor_route");
		exit(2);
	}
	(void)madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

static double
cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* One replay; returns its CPU milliseconds and adds to *sink what it read
 * (so the compiler keeps the reads). */
static double
replay(const struct req *rq, size_t nr, struct pend *q, uint32_t ttl,
       uint64_t *sink)
{
	size_t qh = 0, qt = 0;
	double t0;

	memset(bt, 0, sizeof(*bt) << bbits);
	memset(pt, 0, sizeof(*pt) << pbits);
	t0 = cpu_ms();
	for (size_t r = 0; r < nr; r++) {
		const struct req *x = &rq[r];
		uint32_t cached = ~0u, active = ~0u, depth = 0;

		for (; qh < qt && q[qh].exp <= x->ts; qh++) {
			struct pair *p =
			    pair_at((uint64_t)q[qh].w << 56 ^ q[qh].s);

			if (p->exp == q[qh].exp) {
				p->exp = 0;
				blk_at(q[qh].s)->cached &= ~(1u << q[qh].w);
			}
		}
		for (uint32_t i = 0; i < x->n && (cached | active); i++) {
			const struct blk *b = blk_at(x->seq[i]);

			cached &= b->cached;
			active &= b->active;
			depth += (uint32_t)__builtin_popcount(cached) +
			         (uint32_t)__builtin_popcount(active);
		}
		*sink += depth;
		for (uint32_t i = 0; i < x->n; i++) {
			struct pair *p =
			    pair_at((uint64_t)x->w << 56 ^ x->seq[i]);
			struct blk *b = blk_at(x->seq[i]);

			if (p->rc++ == 0)
				b->active |= 1u << x->w;
			b->cached |= 1u << x->w;
			p->exp = x->ts + ttl;
			q[qt++] = (struct pend){x->seq[i], x->w, x->ts + ttl};
		}
	}
	return cpu_ms() - t0;
}

int
main(int argc, char **argv)
{
	struct req *rq = NULL;
	size_t nr = 0, cap = 0, nblk = 0;
	uint32_t w, ts, n, ttl;
	uint64_t sink = 0, *keys;
	struct pend *q;
	double best = 0, first = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: floor_route TTL_MS < requests\n");
		return 2;
	}
	ttl = (uint32_t)strtoul(argv[1], NULL, 10);
	while (scanf("%" SCNu32 " %" SCNu32 " %" SCNu32, &w, &ts, &n) == 3) {
		uint64_t h = 1;

		if (w >= 32) {
			fprintf(stderr,
			        "floor_route: worker %" PRIu32
			        " (at most 32 workers)\n",
			        w);
			return 1;
		}
		if (nr == cap) {
			cap = cap ? 2 * cap : 1024;
			rq = realloc(rq, cap * sizeof(*rq));
			if (rq == NULL) {
				perror("floor_route");
				return 2;
			}
		}
		rq[nr] =
		    (struct req){w, ts, n, malloc((n + 1) * sizeof(uint64_t))};
		if (rq[nr].seq == NULL) {
			perror("floor_route");
			return 2;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint64_t id;

			if (scanf("%" SCNu64, &id) != 1) {
				fprintf(stderr,
				        "floor_route: line %zu: short\n",
				        nr + 1);
				return 1;
			}
			h = mix(h * 31 + id +
			        1);            /* a chain, as sequence hashes */
			rq[nr].seq[i] = h | 1; /* never 0 (empty) */
		}
		nblk += n;
		nr++;
	}
	q = malloc((nblk + 1) * sizeof(*q));
	keys = malloc((nblk + 1) * sizeof(*keys));
	if (q == NULL || keys == NULL) {
		perror("floor_route");
		return 2;
	}
	for (size_t r = 0, j = 0; r < nr; r++)
		for (uint32_t i = 0; i < rq[r].n; i++)
			keys[j++] = rq[r].seq[i];
	bbits = bits_for(keys, nblk);
	for (size_t r = 0, j = 0; r < nr; r++)
		for (uint32_t i = 0; i < rq[r].n; i++)
			keys[j++] = (uint64_t)rq[r].w << 56 ^ rq[r].seq[i];
	pbits = bits_for(keys, nblk);
	free(keys);
	bt = table(bbits, sizeof(*bt));
	pt = table(pbits, sizeof(*pt));
	for (int k = 0; k < 5; k++) {
		double ms = replay(rq, nr, q, ttl, &sink);

		if (k == 0)
			first = ms;
		if (k == 0 || ms < best)
			best = ms;
	}
	printf("requests=%zu\nblocks=%zu\nblock_slots=%zu\npair_slots=%zu\n"
	       "first_ms=%.2f\nfloor_ms=%.2f\nsink=%" PRIu64 "\n",
	       nr, nblk, (size_t)1 << bbits, (size_t)1 << pbits, first, best,
	       sink);
	return 0;
}
