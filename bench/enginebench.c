/* SPDX-License-Identifier: MIT */
/*
 * enginebench.c — engine-scheme hashing speed (bench/bench-engine-hash.sh).
 *   enginebench SCHEME MB BS   hashes MB MB of u32 token ids (as int64
 *                              values) in BS-token blocks through
 *                              kvp_eh_chain(), one request per 4096
 *                              tokens; prints "MBps N" (token bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash/engine_hash.h"

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	enum kvp_scheme s = KVP_SCHEME_COUNT;
	struct kvp_eh h;
	struct kvp_diag d;
	struct kvp_edigest *out;
	int64_t *tok;
	size_t n, req = 4096, i, bs;
	double t0, best = 1e9;
	int rep, k;

	if (argc != 4)
		return 2;
	for (k = 0; kvp_scheme_names[k] != NULL; k++)
		if (strcmp(kvp_scheme_names[k], argv[1]) == 0)
			s = (enum kvp_scheme)k;
	n = (size_t)atol(argv[2]) * 1000000 / 4;
	bs = (size_t)atol(argv[3]);
	tok = malloc(n * sizeof *tok);
	out = malloc((req / bs + 1) * sizeof *out);
	if (s == KVP_SCHEME_COUNT || tok == NULL || out == NULL ||
	    kvp_eh_init(&h, s, NULL, &d) != 0)
		return 2;
	for (i = 0; i < n; i++)
		tok[i] = (int64_t)((i * 2654435761u) % 151000);
	for (rep = 0; rep < 3; rep++) {
		h.sha_blocks = 0;
		t0 = now();
		for (i = 0; i + req <= n; i += req) {
			struct kvp_ereq rq = {.tok = tok + i,
			                      .n_tok = req,
			                      .block_size = (uint32_t)bs};

			kvp_eh_chain(&h, &rq, out, req / bs + 1, &d);
		}
		if (now() - t0 < best)
			best = now() - t0;
	}
	printf("MBps %.0f\n", (double)n * 4 / 1e6 / best);
	/* token bytes per 64 bytes SHA-256 compresses: the fraction of the
	 * bulk rate that messages of this size can reach at best */
	printf("efficiency %.3f\n",
	       h.sha_blocks
	           ? (double)(n / req * req) * 4 / ((double)h.sha_blocks * 64)
	           : 0.0);
	kvp_eh_fini(&h);
	free(tok);
	free(out);
	return 0;
}
