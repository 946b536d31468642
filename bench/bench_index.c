/* SPDX-License-Identifier: MIT */
/*
 * bench_index.c — microbenchmark of lib/index (route-score's radix index),
 * one core: store + remove + match block operations per second, and bytes
 * per indexed (block, holder) pair at steady state.
 *
 * Workload (modelled on Dynamo's kv_indexer_bench and the Mooncake traces,
 * docs/spec/route-score.md §4.1): 16 workers with 16,384 blocks each; requests
 * of 8–64 blocks (block hash chains) whose first 25–75 % come from one of
 * 64 shared prefix groups; each request is matched against the index,
 * then stored on one worker, and the worker evicts its oldest chains
 * (removals) beyond capacity. External block hashes are content chains,
 * as vLLM's are, so a worker re-storing a prefix it holds adds nothing.
 * ops_per_sec counts the time inside index calls (the workload generator's
 * own time excluded); ops_per_sec_wall includes it.
 * Usage: bench_index [ROUNDS]   (prints key=value lines)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/bigmem.h"
#include "common/kmap.h"
#include "route/index.h"

#define WORKERS 16
#define CAP 16384
#define MAXB 64
#define GROUPS 64

struct chain {
	uint64_t ext[MAXB];
	size_t n;
};

static uint64_t rng = 0x853c49e6748fea9bULL;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
	struct kvp_arena *ar = kvp_arena_new(); /* as the router has */
	struct kvp_index *ix = kvp_index_new(ar);
	static struct chain ring[WORKERS][CAP / 4];
	size_t head[WORKERS] = {0}, tail[WORKERS] = {0};
	uint64_t group[GROUPS][MAXB];
	uint64_t loc[MAXB], ext[MAXB];
	uint32_t scores[WORKERS];
	uint64_t ops = 0, stores = 0, removes = 0, matches = 0;
	double t0, t1, tin = 0, bpp = 0;
	size_t unknown, added, maxbytes = 0;

	if (ix == NULL || rounds <= 0)
		return 2;
	for (int w = 0; w < WORKERS; w++)
		(void)kvp_index_holder(ix, (uint64_t)w, 0, 0, 1);
	for (int g = 0; g < GROUPS; g++)
		for (int i = 0; i < MAXB; i++)
			group[g][i] = rnd();
	t0 = now();
	for (long r = 0; r < rounds; r++) {
		size_t n = 8 + rnd() % (MAXB - 7);
		size_t shared = n * (25 + rnd() % 51) / 100;
		int g = (int)(rnd() % GROUPS);
		uint32_t w = (uint32_t)(rnd() % WORKERS);
		struct chain *c;

		for (size_t i = 0; i < n; i++) {
			loc[i] = i < shared ? group[g][i] : rnd();
			ext[i] = kvp_kmap_mix(1, (i ? ext[i - 1] : 0) ^ loc[i]);
		}
		t1 = now();
		kvp_index_match(ix, loc, n, 0, scores);
		matches += n;
		/* store on w: the whole chain from the root (a new request
		 * prefix) */
		kvp_index_store(ix, w, 0, 0, ext, loc, n, &added);
		stores += n;
		c = &ring[w][tail[w]++ % (CAP / 4)];
		memcpy(c->ext, ext, n * sizeof(ext[0]));
		c->n = n;
		while (kvp_index_holder_info(ix, w)->nblocks > CAP) {
			c = &ring[w][head[w]++ % (CAP / 4)];
			kvp_index_remove(ix, w, c->ext, c->n, &unknown);
			removes += c->n;
		}
		tin += now() - t1;
		if ((r & 4095) == 0 && kvp_index_pairs(ix) > 0) {
			size_t b = kvp_index_bytes(ix);

			if (b > maxbytes) {
				maxbytes = b;
				bpp = (double)b / (double)kvp_index_pairs(ix);
			}
		}
	}
	t1 = now();
	ops = stores + removes + matches;
	printf("rounds=%ld\n", rounds);
	printf("block_ops=%" PRIu64 " (store %" PRIu64 ", remove %" PRIu64
	       ", match %" PRIu64 ")\n",
	       ops, stores, removes, matches);
	printf("seconds=%.4f (in index calls %.4f)\n", t1 - t0, tin);
	printf("ops_per_sec=%.0f\n", (double)ops / tin);
	printf("ops_per_sec_wall=%.0f\n", (double)ops / (t1 - t0));
	printf("pairs=%" PRIu64 "\n", kvp_index_pairs(ix));
	printf("nodes=%zu\n", kvp_index_nodes(ix));
	printf("bytes=%zu\n", kvp_index_bytes(ix));
	printf("bytes_per_pair=%.1f\n",
	       (double)kvp_index_bytes(ix) / (double)kvp_index_pairs(ix));
	printf("peak_bytes_per_pair=%.1f\n", bpp);
	kvp_index_free(ix);
	kvp_arena_free(ar);
	return 0;
}
