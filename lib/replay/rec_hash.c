/* SPDX-License-Identifier: MIT */
/*
 * rec_hash.c — block hashing of route-score records. See rec_hash.h.
 */
#include "replay/rec_hash.h"

#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/util.h"
#include "replay/route_input.h"

void
kvp_rec_hasher_init(struct kvp_rec_hasher *h, uint32_t block_size)
{
	memset(h, 0, sizeof(*h));
	h->block_size = block_size;
}

void
kvp_rec_hasher_fini(struct kvp_rec_hasher *h)
{
	free(h->local);
	free(h->seq);
	memset(h, 0, sizeof(*h));
}

/* A request's full blocks: local and sequence hashes. */
static int
hash_request(struct kvp_rec_hasher *h, struct kvp_rin *in, struct kvp_diag *d)
{
	size_t n = kvp_hash_block_count(in->ntokens, h->block_size, 0);

	if (kvp_grow(&h->local, &h->caplocal, n + 1, sizeof(*h->local)) != 0 ||
	    kvp_grow(&h->seq, &h->capseq, n + 1, sizeof(*h->seq)) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	in->rq.n = kvp_hash_tokens(in->tokens, in->ntokens, h->block_size, 0,
	                           in->seed, KVP_HASH_SEED, h->local, h->seq);
	in->rq.local = h->local;
	in->rq.seq = h->seq;
	return 0;
}

/* A store's local hashes: its token blocks hashed, the rest as given. */
static int
hash_store(struct kvp_rec_hasher *h, struct kvp_rin *in, struct kvp_diag *d)
{
	struct kvp_event *ev = &in->ev;
	const uint32_t *t = in->tokens;

	if (kvp_grow(&h->local, &h->caplocal, ev->n + 1, sizeof(*h->local)) !=
	    0)
		return kvp_diag_set(d, 0, "out of memory");
	for (size_t i = 0; i < ev->n; i++) {
		if (in->from_tokens != NULL && !in->from_tokens[i]) {
			h->local[i] = ev->local[i];
			continue;
		}
		h->local[i] =
		    kvp_hash_block(t, h->block_size, in->seed, NULL, 0);
		t += h->block_size;
	}
	ev->local = h->local;
	return 0;
}

int
kvp_rec_hash(struct kvp_rec_hasher *h, struct kvp_rin *in, struct kvp_diag *d)
{
	if (in->tokens == NULL)
		return 0;
	if (in->kind == KVP_RIN_REQUEST)
		return hash_request(h, in, d);
	if (in->kind == KVP_RIN_EVENT && in->ev.kind == KVP_EV_STORED)
		return hash_store(h, in, d);
	return 0;
}
