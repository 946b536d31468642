/* SPDX-License-Identifier: MIT */
/*
 * reqs.h — private to lib/route/: the table of active requests (reqs.c),
 * which owns struct kvp_reqs: slots (reused; a generation tells reuses
 * apart), their blocks' node ids in an id pool, the map from request id to
 * slot, the expiry queue and the routing order (for max_active_blocks).
 * What an active request holds of a candidate's load is load.c's, which
 * calls these to keep the table.
 *
 * Mode: defer (reqs.c). While set the map is empty: each request's id has
 * been a decimal number larger than the one before it (as the line numbers
 * standing for absent ids are), so no id can repeat an active one's, and
 * nothing has looked one up yet. The first id out of that order, or the
 * first lookup, puts every live request in the map and ends it for good.
 * Asserted in debug builds (kvp_reqs_check).
 */
#ifndef KVP_ROUTE_REQS_H
#define KVP_ROUTE_REQS_H

#include <stddef.h>
#include <stdint.h>

#include "common/kmap.h"
#include "route/router.h"

struct kvp_active_req { /* 56 bytes: 16,384 of them in 1 MiB */
	uint64_t idhash;
	uint64_t gen; /* distinguishes reuses of the slot */
	uint64_t prefill;
	size_t n;
	uint64_t out_blocks; /* --track-output-blocks */
	uint32_t ids;        /* its blocks' node ids in the pool (NO_IDS with
	                        no_assume_reuse: they hold no nodes) */
	uint32_t cand;
	uint32_t sess; /* session slot + 1, 0: none */
	unsigned char live, prefill_done;
};

#define NO_IDS UINT32_MAX

/* Active requests' node ids: blocks of 2^k ids in one array of fewer than
 * 2^32, a free list per k (its link, offset + 1, in a free block's first
 * id; 0 ends it). */
struct kvp_idpool {
	uint32_t *a;
	size_t cap, top;
	size_t head[32]; /* per k: offset + 1 of a free block, 0: none */
};

struct kvp_req_exp { /* an expiry or routing-order queue entry */
	uint64_t at;
	uint64_t gen;
	uint32_t slot;
};

struct kvp_reqs {
	struct kvp_arena *ar; /* borrowed (bigmem.h) */
	struct kvp_active_req *v;
	size_t n, cap; /* slots made */
	struct kvp_idpool pool;
	uint32_t *free;
	size_t nfree, capfree;
	struct kvp_kmap map; /* (0, xxh3(id)) → slot + 1; empty while defer */
	int defer;
	uint32_t *pending; /* kvp_reqs_claim's new entry, for kvp_reqs_take */
	uint64_t idnext;   /* while defer: the least id that can come next */
	uint32_t added;    /* the slot kvp_reqs_take gave last (the decision's
	                      own, while it commits) */
	uint64_t gen;
	struct kvp_req_exp *eq; /* expiry, in routing time */
	size_t eqhead, eqtail, eqcap;
	struct kvp_req_exp *aq; /* routing order */
	size_t aqhead, aqtail, aqcap;
	uint64_t held_blocks; /* blocks of the live requests */
	size_t nlive;         /* live requests */
};

/* The table, its arrays from arena ar (borrowed). */
void kvp_reqs_init(struct kvp_reqs *rq, struct kvp_arena *ar);
void kvp_reqs_fini(struct kvp_reqs *rq);

static inline struct kvp_active_req *
kvp_reqs_at(struct kvp_reqs *rq, uint32_t slot)
{
	return &rq->v[slot];
}

static inline const struct kvp_active_req *
kvp_reqs_at_c(const struct kvp_reqs *rq, uint32_t slot)
{
	return &rq->v[slot];
}

/* Slots made so far (live or not): slot < kvp_reqs_nslots. */
static inline size_t
kvp_reqs_nslots(const struct kvp_reqs *rq)
{
	return rq->n;
}

/* The slot kvp_reqs_take gave last. */
static inline uint32_t
kvp_reqs_added(const struct kvp_reqs *rq)
{
	return rq->added;
}

/* The slot of active request id, -1 when none is, or -2 on allocation
 * failure (the map kept from now on). */
int64_t kvp_reqs_find(struct kvp_reqs *rq, const char *id, size_t len);
/* Before request q (hid: XXH3_64 of its id) goes in: *dup the slot of a
 * live request with its id (the caller releases it first, which also
 * drops its entry), or -1. 0, or -1 on allocation failure. */
int kvp_reqs_claim(struct kvp_reqs *rq, const struct kvp_request *q,
                   uint64_t hid, int64_t *dup);
/* A slot for request hid (right after kvp_reqs_claim, and the release of
 * its dup), live, zeroed but for its id, generation and candidate c: its
 * index, or -1 on allocation failure. */
int64_t kvp_reqs_take(struct kvp_reqs *rq, uint64_t hid, uint32_t c);
/* Slot's request is in: its blocks count. */
void kvp_reqs_commit(struct kvp_reqs *rq, uint32_t slot);
/* Slot's request ended: its slot, ids and map entry go back. */
void kvp_reqs_put(struct kvp_reqs *rq, uint32_t slot);
/* Room for slot's n node ids in the pool: 0, or -1 on allocation failure. */
int kvp_reqs_ids_get(struct kvp_reqs *rq, uint32_t slot, size_t n);
/* Slot's node ids (its ids must not be NO_IDS). */
static inline uint32_t *
kvp_reqs_ids(struct kvp_reqs *rq, uint32_t slot)
{
	return rq->pool.a + rq->v[slot].ids;
}

/* Slot expires at `at`: 0, or -1 on allocation failure. */
int kvp_reqs_expire_at(struct kvp_reqs *rq, uint32_t slot, uint64_t at);
/* The next live request expired at now (popped), or -1. */
int64_t kvp_reqs_next_expired(struct kvp_reqs *rq, uint64_t now);
/* Slot in routing order: 0, or -1 on allocation failure. */
int kvp_reqs_order_push(struct kvp_reqs *rq, uint32_t slot);
/* While the live requests hold more than max blocks: the oldest live one
 * but the last routed (popped), or -1. */
int64_t kvp_reqs_next_over(struct kvp_reqs *rq, uint64_t max);
/* 1 while slot holds the request of generation gen. */
int kvp_reqs_live(const struct kvp_reqs *rq, uint32_t slot, uint64_t gen);
/* Debug builds (KVP_DEBUG): asserts the table's invariants. */
void kvp_reqs_check(const struct kvp_reqs *rq);

#endif
