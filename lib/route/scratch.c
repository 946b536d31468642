/* SPDX-License-Identifier: MIT */
/*
 * scratch.c — the decision's node ids (scratch.h).
 */
#include <stdlib.h>

#include "common/debug.h"
#include "common/util.h"
#include "route/nodes.h"
#include "route/scratch.h"

void
kvp_scratch_fini(struct kvp_scratch *sc)
{
	free(sc->ids);
	free(sc->scores);
	free(sc->side_scores);
	free(sc->cs);
	free(sc->lg);
	free(sc->pr);
	free(sc->seqbuf);
	free(sc->elig);
}

void
kvp_scratch_mark(struct kvp_scratch *sc, const struct kvp_nodes *nd, size_t n)
{
	for (size_t i = 0; i < n && i < 64; i++) /* the walks read them */
		if (sc->ids[i] != KVP_NODE_NONE)
			kvp_nodes_prefetch(nd, sc->ids[i]);
	sc->ids_ok = 1;
	sc->ids_held = 0;
	sc->ids_frees = kvp_nodes_frees(nd);
}

int
kvp_scratch_lookup(struct kvp_scratch *sc, struct kvp_nodes *nd,
                   const uint64_t *seq, size_t n)
{
	if (kvp_grow(&sc->ids, &sc->capids, n + 1, sizeof(*sc->ids)) != 0)
		return -1;
	if (kvp_nodes_find_many(nd, seq, n, sc->ids) != 0)
		return -1;
	kvp_scratch_mark(sc, nd, n);
	return 0;
}

int
kvp_scratch_ids_fresh(const struct kvp_scratch *sc, const struct kvp_nodes *nd)
{
	return sc->ids_ok && sc->ids_frees == kvp_nodes_frees(nd);
}

const uint32_t *
kvp_scratch_ids(struct kvp_scratch *sc, struct kvp_nodes *nd,
                const struct kvp_request *q, const uint64_t *seq)
{
	/* outside a decision, or nodes freed since the lookups: afresh */
	if (!kvp_scratch_ids_fresh(sc, nd) &&
	    kvp_scratch_lookup(sc, nd, seq, q->n) != 0)
		return NULL;
	if (kvp_nodes_intern(nd, seq, q->local, q->seq == NULL, q->n,
	                     sc->ids) != 0)
		return NULL;
	return sc->ids;
}

void
kvp_scratch_held(struct kvp_scratch *sc)
{
	sc->ids_held = 1; /* till they are looked up again */
}

void
kvp_scratch_forget(struct kvp_scratch *sc)
{
	sc->ids_ok = 0;
	sc->ids_held = 0;
}

void
kvp_scratch_check(const struct kvp_scratch *sc)
{
	(void)sc; /* (unused without KVP_DEBUG) */
	KVP_ASSERT(!sc->ids_held || sc->ids_ok);
	KVP_ASSERT(!sc->ids_ok || sc->ids != NULL);
}
