/* SPDX-License-Identifier: MIT */
/*
 * reqs.c — the table of active requests (reqs.h): slots, the id pool, the
 * (deferred) map from request id to slot, and the two queues.
 */
#include <stdlib.h>
#include <string.h>

#include "common/bigmem.h"
#include "common/blockhash.h"
#include "common/debug.h"
#include "common/kmap.h"
#include "common/util.h"
#include "route/reqs.h"
#include "route/router.h"

void
kvp_reqs_init(struct kvp_reqs *rq, struct kvp_arena *ar)
{
	memset(rq, 0, sizeof(*rq));
	rq->ar = ar;
	kvp_kmap_init_sparse(&rq->map, ar); /* probed per request */
	rq->defer = 1;
}

void
kvp_reqs_fini(struct kvp_reqs *rq)
{
	kvp_big_free(rq->ar, rq->v, rq->cap * sizeof(*rq->v), 1);
	kvp_big_free(rq->ar, rq->pool.a, rq->pool.cap * sizeof(*rq->pool.a), 1);
	free(rq->free);
	kvp_big_free(rq->ar, rq->eq, rq->eqcap * sizeof(*rq->eq), 1);
	kvp_big_free(rq->ar, rq->aq, rq->aqcap * sizeof(*rq->aq), 1);
	kvp_kmap_fini(&rq->map);
}

/* ---- the id pool --------------------------------------------------------- */

/* The size class of n ids: blocks of 2^k. */
static unsigned
pool_class(size_t n)
{
	unsigned k = 0;

	while (((size_t)1 << k) < n)
		k++;
	return k;
}

/* A block for n ids: its offset, or NO_IDS on allocation failure (the
 * pool holds fewer than 2^32 ids, so a link fits in one). */
static uint32_t
pool_get(struct kvp_idpool *p, struct kvp_arena *ar, size_t n)
{
	unsigned k = pool_class(n);
	size_t off, sz;

	if (k >= 32)
		return NO_IDS;
	sz = (size_t)1 << k;
	if (p->head[k] != 0) {
		off = p->head[k] - 1;
		p->head[k] = p->a[off];
		return (uint32_t)off;
	}
	if (p->top + sz >= UINT32_MAX ||
	    kvp_big_grow(ar, &p->a, &p->cap, p->top + sz, sizeof(*p->a)) != 0)
		return NO_IDS;
	off = p->top;
	p->top += sz;
	return (uint32_t)off; /* below UINT32_MAX, NO_IDS */
}

/* Gives back the block of n ids at off. */
static void
pool_put(struct kvp_idpool *p, size_t off, size_t n)
{
	unsigned k = pool_class(n);

	p->a[off] = (uint32_t)p->head[k];
	p->head[k] = off + 1;
}

int
kvp_reqs_ids_get(struct kvp_reqs *rq, uint32_t slot, size_t n)
{
	rq->v[slot].ids = pool_get(&rq->pool, rq->ar, n);
	return rq->v[slot].ids == NO_IDS ? -1 : 0;
}

/* ---- slots and the map --------------------------------------------------- */

/* Ends the deferral of the map: every live request goes in. 0, or -1 on
 * allocation failure (still deferred; a retry puts the same entries). */
static int
map_keep(struct kvp_reqs *rq)
{
	if (!rq->defer)
		return 0;
	for (size_t s = 0; s < rq->n; s++)
		if (rq->v[s].live && kvp_kmap_put(&rq->map, 0, rq->v[s].idhash,
		                                  (uint32_t)s + 1, NULL) != 0)
			return -1;
	rq->defer = 0;
	return 0;
}

/* Can request q go in while the map stays deferred? Its id must be a
 * decimal number (no sign, no leading zero) larger than every id before
 * it, as the line numbers standing for absent ids are: then it repeats
 * no active request's id. */
static int
id_fresh(struct kvp_reqs *rq, const struct kvp_request *q)
{
	uint64_t v = 0;

	if (!rq->defer || q->id_len == 0 || q->id_len > 19 ||
	    (q->id[0] == '0' && q->id_len > 1))
		return 0;
	for (size_t i = 0; i < q->id_len; i++) {
		if (q->id[i] < '0' || q->id[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(q->id[i] - '0');
	}
	if (v < rq->idnext)
		return 0;
	rq->idnext = v + 1; /* below 10^19: no overflow */
	return 1;
}

int64_t
kvp_reqs_find(struct kvp_reqs *rq, const char *id, size_t len)
{
	uint32_t v;

	if (map_keep(rq) != 0)
		return -2;
	v = kvp_kmap_get(&rq->map, 0, kvp_hash_bytes(id, len, 0));
	return v ? (int64_t)v - 1 : -1;
}

int
kvp_reqs_claim(struct kvp_reqs *rq, const struct kvp_request *q, uint64_t hid,
               int64_t *dup)
{
	uint32_t *v;
	int ins = 1;

	*dup = -1;
	if (id_fresh(rq, q))
		return 0;
	if (map_keep(rq) != 0)
		return -1;
	/* UINT32_MAX till kvp_reqs_take names the slot */
	v = kvp_kmap_upsert(&rq->map, 0, hid, UINT32_MAX, &ins);
	if (v == NULL)
		return -1;
	if (ins)
		rq->pending = v;
	else
		*dup = (int64_t)*v - 1; /* its release drops the entry */
	return 0;
}

int64_t
kvp_reqs_take(struct kvp_reqs *rq, uint64_t hid, uint32_t c)
{
	uint32_t *v = rq->pending; /* kvp_reqs_claim's entry, if it made one */
	struct kvp_active_req *a;
	int64_t slot;

	rq->pending = NULL;
	if (rq->nfree > 0)
		slot = rq->free[--rq->nfree];
	else if (kvp_big_grow(rq->ar, &rq->v, &rq->cap, rq->n + 1,
	                      sizeof(*rq->v)) == 0)
		slot = (int64_t)rq->n++;
	else
		slot = -1;
	if (slot < 0) {
		if (v != NULL)
			kvp_kmap_del_ref(&rq->map, v);
		return -1;
	}
	a = &rq->v[slot];
	rq->added = (uint32_t)slot;
	memset(a, 0, sizeof(*a));
	a->ids = NO_IDS;
	if (v != NULL) {
		*v = (uint32_t)slot + 1;
	} else if (!rq->defer && kvp_kmap_put(&rq->map, 0, hid,
	                                      (uint32_t)slot + 1, NULL) != 0) {
		if (kvp_grow(&rq->free, &rq->capfree, rq->nfree + 1,
		             sizeof(*rq->free)) == 0)
			rq->free[rq->nfree++] = (uint32_t)slot;
		return -1;
	}
	a->idhash = hid;
	a->gen = ++rq->gen;
	a->cand = c;
	a->live = 1;
	return slot;
}

void
kvp_reqs_commit(struct kvp_reqs *rq, uint32_t slot)
{
	rq->held_blocks += rq->v[slot].n;
	rq->nlive++;
}

void
kvp_reqs_put(struct kvp_reqs *rq, uint32_t slot)
{
	struct kvp_active_req *q = &rq->v[slot];

	rq->held_blocks -= q->n;
	rq->nlive--;
	if (q->ids != NO_IDS)
		pool_put(&rq->pool, q->ids, q->n);
	q->ids = NO_IDS;
	q->live = 0;
	if (!rq->defer)
		kvp_kmap_del(&rq->map, 0, q->idhash);
	if (kvp_grow(&rq->free, &rq->capfree, rq->nfree + 1,
	             sizeof(*rq->free)) == 0)
		rq->free[rq->nfree++] = slot;
}

int
kvp_reqs_live(const struct kvp_reqs *rq, uint32_t slot, uint64_t gen)
{
	return rq->v[slot].live && rq->v[slot].gen == gen;
}

/* ---- the queues ---------------------------------------------------------- */

int
kvp_reqs_expire_at(struct kvp_reqs *rq, uint32_t slot, uint64_t at)
{
	/* moved down when at most half is live, else grown: each entry is
	 * moved once on average */
	if (rq->eqtail == rq->eqcap && rq->eqhead > 0 &&
	    rq->eqhead >= rq->eqtail - rq->eqhead) {
		memmove(rq->eq, rq->eq + rq->eqhead,
		        (rq->eqtail - rq->eqhead) * sizeof(*rq->eq));
		rq->eqtail -= rq->eqhead;
		rq->eqhead = 0;
	}
	if (kvp_big_grow(rq->ar, &rq->eq, &rq->eqcap, rq->eqtail + 1,
	                 sizeof(*rq->eq)))
		return -1;
	rq->eq[rq->eqtail++] = (struct kvp_req_exp){at, rq->v[slot].gen, slot};
	return 0;
}

int64_t
kvp_reqs_next_expired(struct kvp_reqs *rq, uint64_t now)
{
	while (rq->eqhead < rq->eqtail && rq->eq[rq->eqhead].at <= now) {
		const struct kvp_req_exp *e = &rq->eq[rq->eqhead++];

		if (kvp_reqs_live(rq, e->slot, e->gen))
			return e->slot;
	}
	if (rq->eqhead == rq->eqtail)
		rq->eqhead = rq->eqtail = 0;
	return -1;
}

/* Drops the routing-order entries of requests no longer live, once they
 * outnumber the live ones, so the queue stays bounded by them. */
static void
aq_compact(struct kvp_reqs *rq)
{
	size_t k = 0;

	if (rq->aqtail - rq->aqhead <= 2 * rq->nlive + 16 &&
	    rq->aqhead <= rq->aqtail / 2)
		return;
	for (size_t i = rq->aqhead; i < rq->aqtail; i++)
		if (kvp_reqs_live(rq, rq->aq[i].slot, rq->aq[i].gen))
			rq->aq[k++] = rq->aq[i];
	rq->aqhead = 0;
	rq->aqtail = k;
}

int
kvp_reqs_order_push(struct kvp_reqs *rq, uint32_t slot)
{
	aq_compact(rq);
	if (kvp_big_grow(rq->ar, &rq->aq, &rq->aqcap, rq->aqtail + 1,
	                 sizeof(*rq->aq)))
		return -1;
	rq->aq[rq->aqtail++] = (struct kvp_req_exp){0, rq->v[slot].gen, slot};
	return 0;
}

int64_t
kvp_reqs_next_over(struct kvp_reqs *rq, uint64_t max)
{
	while (rq->held_blocks > max && rq->aqhead + 1 < rq->aqtail) {
		const struct kvp_req_exp *e = &rq->aq[rq->aqhead++];

		if (kvp_reqs_live(rq, e->slot, e->gen))
			return e->slot;
	}
	return -1;
}

void
kvp_reqs_check(const struct kvp_reqs *rq)
{
	(void)rq; /* (unused without KVP_DEBUG) */
	/* defer: nothing in the map yet */
	KVP_ASSERT(!rq->defer || kvp_kmap_size(&rq->map) == 0);
	KVP_ASSERT(rq->defer || kvp_kmap_size(&rq->map) >= rq->nlive);
	KVP_ASSERT(rq->nlive + rq->nfree <= rq->n);
	KVP_ASSERT(rq->eqhead <= rq->eqtail && rq->aqhead <= rq->aqtail);
}
