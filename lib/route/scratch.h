/* SPDX-License-Identifier: MIT */
/*
 * scratch.h — private to lib/route/: the per-decision scratch, owned by the
 * decision (router.c, score.c) and by scratch.c, which keeps the decision's
 * node ids: ids[i] the block table's id of the request's i-th block
 * (KVP_NODE_NONE for hashes no node has).
 *
 * Modes (scratch.c):
 *   ids_ok    ids are this decision's (they were looked up, or resolved,
 *             while the table freed ids_frees nodes; a later free makes
 *             them stale);
 *   ids_held  the request committed holds every one of them (load.c): none
 *             is left for kvp_nodes_sweep. Only with ids_ok.
 * Both end with the decision (kvp_scratch_forget). Asserted in debug
 * builds (kvp_scratch_check).
 */
#ifndef KVP_ROUTE_SCRATCH_H
#define KVP_ROUTE_SCRATCH_H

#include <stddef.h>
#include <stdint.h>

#include "route/nodes.h"
#include "route/router.h"

struct kvp_scratch {
	uint32_t *ids;
	size_t capids;
	int ids_ok;
	uint64_t ids_frees;
	int ids_held;
	uint32_t *scores; /* per holder: kvp_index_match() */
	size_t capscores;
	uint32_t *side_scores; /* per side-index holder */
	size_t capside;
	struct kvp_cand_score *cs;
	size_t capcs;
	double *lg, *pr;
	size_t caplg, cappr;
	uint64_t *seqbuf;
	size_t capseq;
	uint32_t *elig; /* eligible candidates, in order */
	size_t capelig;
	uint64_t pmin;  /* least active prefill among them (credit decay) */
	double dcredit; /* this decision's overlap credit C */
	uint64_t rng;   /* this decision's SplitMix64 state */
	uint64_t qhash; /* this decision's request: XXH3_64 of its id */
};

void kvp_scratch_fini(struct kvp_scratch *sc);

/* This decision's request: XXH3_64 of its id. */
static inline uint64_t
kvp_scratch_qhash(const struct kvp_scratch *sc)
{
	return sc->qhash;
}

/* sc->ids (n of them, found in nd) are this decision's. */
void kvp_scratch_mark(struct kvp_scratch *sc, const struct kvp_nodes *nd,
                      size_t n);
/* sc->ids: the node ids of n blocks (seq), looked up in nd. 0, or -1. */
int kvp_scratch_lookup(struct kvp_scratch *sc, struct kvp_nodes *nd,
                       const uint64_t *seq, size_t n);
/* The node id of every block of q (seq its sequence hashes), nodes made
 * for the missing ones (unreferenced: kvp_nodes_sweep frees those left
 * so); NULL on allocation failure. */
const uint32_t *kvp_scratch_ids(struct kvp_scratch *sc, struct kvp_nodes *nd,
                                const struct kvp_request *q,
                                const uint64_t *seq);
/* 1 when ids are this decision's and nd freed none since. */
int kvp_scratch_ids_fresh(const struct kvp_scratch *sc,
                          const struct kvp_nodes *nd);
/* The request committed holds every id (ids_held). */
void kvp_scratch_held(struct kvp_scratch *sc);
/* The decision is over: ids are no longer its. */
void kvp_scratch_forget(struct kvp_scratch *sc);
/* Debug builds (KVP_DEBUG): asserts the modes' invariants. */
void kvp_scratch_check(const struct kvp_scratch *sc);

#endif
