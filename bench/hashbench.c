/* SPDX-License-Identifier: MIT */
/*
 * hashbench.c — driver for bench/bench-kv-hash.sh (compiled by the script).
 *
 *   hashbench speed MB BS   hashes MB megabytes of random u32 tokens with
 *                           kvp_hash_tokens() (block size BS, local and
 *                           sequence hashes), and the same bytes with raw
 *                           XXH3_64bits_withSeed() in BS-token chunks and
 *                           in one call; prints "lib GB/s", "xxh3_blocks
 *                           GB/s", "xxh3_flat GB/s" (best of 3 each).
 *   hashbench gen N T [sp]  writes N NDJSON records {"id":i,"tokens":[...]}
 *                           of T random token ids (sp: Python-style ", ").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "common/blockhash.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t
next_token(uint32_t vocab)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % vocab);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile uint64_t sink;

static int
speed(size_t mb, uint32_t bs)
{
	size_t n = mb * 1000 * 1000 / 4, nb = n / bs;
	uint32_t *t = malloc(n * sizeof *t);
	uint64_t *loc = malloc(nb * sizeof *loc),
	         *seq = malloc(nb * sizeof *seq);
	double best[3] = {1e9, 1e9, 1e9};

	if (t == NULL || loc == NULL || seq == NULL) {
		fprintf(stderr, "hashbench: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		t[i] = next_token(150000);
	for (int rep = 0; rep < 3; rep++) {
		double s = now(), e;
		uint64_t acc = 0;

		kvp_hash_tokens(t, n, bs, 0, KVP_HASH_SEED, KVP_HASH_SEED, loc,
		                seq);
		e = now() - s;
		if (e < best[0])
			best[0] = e;
		sink = seq[nb - 1];

		s = now();
		for (size_t b = 0; b < nb; b++)
			acc ^= XXH3_64bits_withSeed(t + b * bs, bs * 4, 1337);
		e = now() - s;
		if (e < best[1])
			best[1] = e;
		sink = acc;

		s = now();
		sink = XXH3_64bits_withSeed(t, nb * bs * 4, 1337);
		e = now() - s;
		if (e < best[2])
			best[2] = e;
	}
	printf("lib %.3f\nxxh3_blocks %.3f\nxxh3_flat %.3f\n",
	       (double)(nb * bs * 4) / best[0] / 1e9,
	       (double)(nb * bs * 4) / best[1] / 1e9,
	       (double)(nb * bs * 4) / best[2] / 1e9);
	free(t);
	free(loc);
	free(seq);
	return 0;
}

static int
gen(long n, long nt, int spaced)
{
	const char *sep = spaced ? ", " : ",";

	for (long i = 0; i < n; i++) {
		printf(spaced ? "{\"id\": %ld, \"tokens\": ["
		              : "{\"id\":%ld,\"tokens\":[",
		       i);
		for (long j = 0; j < nt; j++)
			printf("%s%u", j ? sep : "", next_token(150000));
		fputs("]}\n", stdout);
	}
	return fflush(stdout) != 0;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "speed") == 0)
		return speed(strtoul(argv[2], NULL, 10),
		             (uint32_t)strtoul(argv[3], NULL, 10));
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "gen") == 0)
		return gen(strtol(argv[2], NULL, 10), strtol(argv[3], NULL, 10),
		           argc == 5);
	fprintf(stderr, "usage: hashbench speed MB BS | gen N T [sp]\n");
	return 2;
}
