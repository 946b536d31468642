/* SPDX-License-Identifier: MIT */
/*
 * test_mrc.c — the one-pass miss-ratio curve (lib/lab/mrc.c) against a
 * naive model in this file: an LRU list re-simulated at every capacity,
 * with the same touch order (deepest first) and prefix-stop hits. The
 * request streams are long enough to make mrc.c grow its Fenwick arrays
 * and renumber its touch times many times.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab_internal.h"
#include "unit.h"

#define MAXN 24
#define MAXCAP 4096

/* Naive LRU: an array, most recent first. */
struct naive {
	uint64_t *v;
	size_t n, cap;
};

static long
naive_find(const struct naive *c, uint64_t x)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i] == x)
			return (long)i;
	return -1;
}

static void
naive_touch(struct naive *c, uint64_t x)
{
	long i = naive_find(c, x);

	if (i < 0) {
		if (c->n < c->cap)
			c->n++;
		i = (long)c->n - 1; /* the least recent falls off */
	}
	memmove(c->v + 1, c->v, (size_t)i * sizeof(*c->v));
	c->v[0] = x;
}

/* A stream of chained requests: prefixes of a few conversations. */
static size_t
request(uint64_t *rng, uint64_t *seq, int universe)
{
	uint64_t conv = *rng % (uint64_t)universe, h = conv * 1000003u;
	size_t n = 1 + (size_t)((*rng >> 20) % MAXN);

	*rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
	for (size_t i = 0; i < n; i++) {
		h = h * 31 + 7 + (i == n - 1 ? (*rng >> 40) % 3 : 0);
		seq[i] = h;
	}
	return n;
}

static void
run(int universe, int nreq, uint64_t seed)
{
	struct kvp_mrcs *m = kvp_mrcs_new();
	static struct naive caches[13];
	uint64_t hits[13] = {0}, seq[MAXN], rng = seed, inf_hits = 0;
	struct naive inf = {malloc(1 << 20), 0, (1 << 20) / 8};
	struct kvp_mrc out;

	CHECK(m != NULL);
	for (int k = 0; k < 13; k++) {
		caches[k].cap = (size_t)1 << k;
		caches[k].n = 0;
		caches[k].v = malloc(caches[k].cap * sizeof(uint64_t));
	}
	for (int r = 0; r < nreq; r++) {
		size_t n = request(&rng, seq, universe);

		for (int k = 0; k < 13; k++) {
			size_t p = 0;

			while (p < n && naive_find(&caches[k], seq[p]) >= 0)
				p++;
			hits[k] += p;
			for (size_t i = n; i-- > 0;)
				naive_touch(&caches[k], seq[i]);
		}
		{
			size_t p = 0;

			while (p < n && naive_find(&inf, seq[p]) >= 0)
				p++;
			inf_hits += p;
			for (size_t i = n; i-- > 0;)
				naive_touch(&inf, seq[i]);
		}
		CHECK(kvp_mrcs_record(m, 0, seq, n) == 0);
	}
	memset(&out, 0, sizeof(out));
	kvp_mrcs_get(m, 0, &out);
	for (int k = 0; k < 13; k++)
		CHECK_U64(out.hits_le[k], hits[k]);
	CHECK_U64(out.accesses - out.cold, inf_hits);
	CHECK(out.nbuckets >= 1 &&
	      out.hits_le[out.nbuckets - 1] == out.accesses - out.cold);
	for (int k = 0; k < 13; k++)
		free(caches[k].v);
	free(inf.v);
	kvp_mrcs_free(m);
}

int
main(void)
{
	run(3, 4000, 1);   /* few distinct blocks: renumbering */
	run(40, 3000, 2);  /* more than the first array: growth */
	run(400, 2000, 3); /* mostly cold */
	return UNIT_DONE();
}
