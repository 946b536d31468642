/* SPDX-License-Identifier: MIT */
/*
 * route_hash.c — the router's sequence-hash chain. See route_hash.h.
 */
#include "route/route_hash.h"

#include "common/blockhash.h"

void
kvp_route_chain_from(const uint64_t *local, size_t from, size_t n,
                     uint64_t *seq)
{
	for (size_t i = from; i < n; i++)
		seq[i] = i == 0 ? local[0]
		                : kvp_hash_chain(seq[i - 1], local[i],
		                                 KVP_HASH_SEED);
}

void
kvp_route_chain(const uint64_t *local, size_t n, uint64_t *seq)
{
	kvp_route_chain_from(local, 0, n, seq);
}
