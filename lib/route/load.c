/* SPDX-License-Identifier: MIT */
/*
 * load.c — the load the router predicts from its own decisions (Dynamo's
 * active sequences): per candidate, the prefill tokens of requests not yet
 * prefilled and the distinct blocks of its active requests (refcounted by
 * sequence hash), plus the external baseline of `load` records. Requests
 * leave on prefill_done / free, when their worker is removed, or when they
 * expire (request_expiry_ms after routing). See route_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "common/bigmem.h"
#include "common/blockhash.h"
#include "common/kmap.h"
#include "common/util.h"
#include "route/route_internal.h"
#include "route/router.h"
#include "route/score.h"

int
kvp_router_set_load(struct kvp_router *r, uint64_t w, uint32_t rank,
                    uint64_t prefill_tokens, uint64_t decode_blocks)
{
	int64_t c;

	if (kvp_router_add_candidate(r, w, rank) != 0)
		return -1;
	c = kvp_router_cand_find(r, w, rank);
	r->cands[c].ext_prefill = prefill_tokens;
	r->cands[c].ext_decode = decode_blocks;
	return 0;
}

/* ---- held blocks ----------------------------------------------------------
 * Candidate c holds block node id when bit c of its lmask is set
 * (c < 32), or bit c % 32 of loadmask (c / 32, id). From the first release
 * on (rc_on), c's active requests holding id are counted: in the node's
 * rc1 while c is its one holder among candidates 0..31 (most blocks), else
 * in loadrc (c, id); till then nothing was released and the masks say all.
 * Every hold is a node reference. */

#define GROUP(c) ((c) >> 5)
#define BIT(c) (1u << ((c)&31))

/* Candidate c's mask word for node id, made if absent; NULL on allocation
 * failure. */
static uint32_t *
mask_of(struct kvp_router *r, uint32_t c, uint32_t id)
{
	int ins;
	uint32_t *m;

	if (c < 32)
		return &r->nodes.hot[id].lmask;
	m = kvp_kmap_upsert(&r->loadmask, GROUP(c), id, BIT(c), &ins);
	if (m != NULL && ins)
		*m = 0; /* only briefly: the caller sets c's bit */
	return m;
}

/* loadrc (c, id) += k (an entry from k). 0, or -1. */
static int
rc_add(struct kvp_router *r, uint32_t c, uint32_t id, uint32_t k)
{
	int ins;
	uint32_t *rc = kvp_kmap_upsert(&r->loadrc, c, id, k, &ins);

	if (rc == NULL)
		return -1;
	if (!ins)
		*rc += k;
	return 0;
}

/* One more hold of node id by candidate c, whose bit is set already. */
static int
rc_inc(struct kvp_router *r, uint32_t c, uint32_t id)
{
	struct kvp_node *n = &r->nodes.hot[id];

	if (c >= 32)
		return rc_add(r, c, id, 1);
	if (n->lmask == BIT(c)) {
		n->rc1++;
		return 0;
	}
	if (n->rc1 != 0) { /* c joins the one holder: its count moves out */
		if (rc_add(r, (uint32_t)__builtin_ctz(n->lmask & ~BIT(c)), id,
		           n->rc1) != 0)
			return -1;
		n->rc1 = 0;
	}
	return rc_add(r, c, id, 1);
}

/* One hold fewer of node id by candidate c < 32: 1 if c holds it no more.
 * A last holder left alone gets its count back into rc1. */
static int
rc_dec_low(struct kvp_router *r, uint32_t c, uint32_t id)
{
	struct kvp_node *n = &r->nodes.hot[id];
	uint32_t *rc;

	if (n->lmask == BIT(c) && n->rc1 != 0) {
		if (--n->rc1 != 0)
			return 0;
		n->lmask = 0;
		return 1;
	}
	rc = kvp_kmap_ref(&r->loadrc, c, id);
	if (rc != NULL && *rc > 1) {
		(*rc)--;
		return 0;
	}
	if (rc != NULL)
		kvp_kmap_del_ref(&r->loadrc, rc);
	if (!(n->lmask & BIT(c)))
		return 0;
	n->lmask &= ~BIT(c);
	if (n->lmask != 0 && (n->lmask & (n->lmask - 1)) == 0) {
		uint32_t s = (uint32_t)__builtin_ctz(n->lmask);

		n->rc1 = kvp_kmap_del(&r->loadrc, s, id);
	}
	return 1;
}

/* One more active request of candidate c holds node id: 1 if c did not
 * hold it before, 0 if it did, -1 on allocation failure. */
static int
held_add(struct kvp_router *r, uint32_t c, uint32_t id)
{
	uint32_t *m = mask_of(r, c, id);
	int was;

	if (m == NULL)
		return -1;
	was = (*m & BIT(c)) != 0;
	*m |= BIT(c);
	if (r->rc_on && rc_inc(r, c, id) != 0)
		return -1;
	r->nodes.hot[id].refs++;
	return !was;
}

/* One active request of candidate c fewer holds node id (rc_on): 1 if c
 * holds it no more. */
static int
held_drop(struct kvp_router *r, uint32_t c, uint32_t id)
{
	uint32_t *rc, *m;
	int gone = 0;

	if (c < 32) {
		gone = rc_dec_low(r, c, id);
		kvp_nodes_unref(&r->nodes, id);
		return gone;
	}
	rc = kvp_kmap_ref(&r->loadrc, c, id);
	if (rc != NULL && *rc > 1) {
		(*rc)--;
	} else {
		if (rc != NULL)
			kvp_kmap_del_ref(&r->loadrc, rc);
		m = kvp_kmap_ref(&r->loadmask, GROUP(c), id);
		if (m != NULL && (*m & BIT(c))) {
			*m &= ~BIT(c);
			gone = 1;
			if (*m == 0)
				kvp_kmap_del_ref(&r->loadmask, m);
		}
	}
	kvp_nodes_unref(&r->nodes, id);
	return gone;
}

/* Counts every live request's holds into loadrc (the first release). 0,
 * or -1 on allocation failure. */
static int
rc_start(struct kvp_router *r)
{
	for (size_t s = 0; s < r->nreqs; s++) {
		const struct kvp_active_req *q = &r->reqs[s];

		for (size_t i = 0; q->live && q->ids != NO_IDS && i < q->n; i++)
			if (rc_inc(r, q->cand, r->pool.a[q->ids + i]) != 0)
				return -1;
	}
	r->rc_on = 1;
	return 0;
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
pool_get(struct kvp_idpool *p, size_t n)
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
	    kvp_big_grow(&p->a, &p->cap, p->top + sz, sizeof(*p->a)) != 0)
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

/* ---- active requests ----------------------------------------------------- */

void
kvp_load_release(struct kvp_router *r, uint32_t slot)
{
	struct kvp_active_req *q = &r->reqs[slot];
	struct kvp_cand *c = &r->cands[q->cand];

	if (q->ids != NO_IDS && !r->rc_on && rc_start(r) != 0) {
		r->oom = 1; /* reported by the next decision */
		return;
	}
	if (!q->prefill_done)
		c->active_prefill -= q->prefill;
	c->active_blocks -= q->out_blocks;
	if (q->sess != 0)
		kvp_session_release(r, q->sess - 1);
	if (q->ids == NO_IDS) /* no_assume_reuse: none shared */
		c->active_blocks -= q->n;
	for (size_t i = 0; q->ids != NO_IDS && i < q->n; i++)
		if (held_drop(r, q->cand, r->pool.a[q->ids + i]))
			c->active_blocks--;
	c->active_requests--;
	r->held_blocks -= q->n;
	r->nlive--;
	if (q->ids != NO_IDS)
		pool_put(&r->pool, q->ids, q->n);
	q->ids = NO_IDS;
	q->live = 0;
	if (!r->reqdefer)
		kvp_kmap_del(&r->reqmap, 0, q->idhash);
	if (kvp_grow(&r->reqfree, &r->capreqfree, r->nreqfree + 1,
	             sizeof(*r->reqfree)) == 0)
		r->reqfree[r->nreqfree++] = slot;
}

/* Ends the deferral of the request map: every live active request goes
 * in. 0, or -1 on allocation failure (still deferred; a retry puts the
 * same entries). */
static int
reqmap_keep(struct kvp_router *r)
{
	if (!r->reqdefer)
		return 0;
	for (size_t s = 0; s < r->nreqs; s++)
		if (r->reqs[s].live &&
		    kvp_kmap_put(&r->reqmap, 0, r->reqs[s].idhash,
		                 (uint32_t)s + 1, NULL) != 0)
			return -1;
	r->reqdefer = 0;
	return 0;
}

/* Can request q go in while the map stays deferred? Its id must be a
 * decimal number (no sign, no leading zero) larger than every id before
 * it, as the line numbers standing for absent ids are: then it repeats
 * no active request's id. */
static int
id_fresh(struct kvp_router *r, const struct kvp_request *q)
{
	uint64_t v = 0;

	if (!r->reqdefer || q->id_len == 0 || q->id_len > 19 ||
	    (q->id[0] == '0' && q->id_len > 1))
		return 0;
	for (size_t i = 0; i < q->id_len; i++) {
		if (q->id[i] < '0' || q->id[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(q->id[i] - '0');
	}
	if (v < r->idnext)
		return 0;
	r->idnext = v + 1; /* below 10^19: no overflow */
	return 1;
}

int64_t
kvp_load_find(struct kvp_router *r, const char *id, size_t len)
{
	uint32_t v;

	if (reqmap_keep(r) != 0)
		return -2;
	v = kvp_kmap_get(&r->reqmap, 0, kvp_hash_bytes(id, len, 0));
	return v ? (int64_t)v - 1 : -1;
}

int
kvp_router_prefill_done(struct kvp_router *r, const char *id, size_t len,
                        struct kvp_diag *d)
{
	int64_t s = kvp_load_find(r, id, len);
	struct kvp_active_req *q;

	if (s == -2)
		return kvp_diag_set(d, 0, "out of memory");
	if (s < 0)
		return kvp_diag_set(d, 0, "prefill_done: request not active");
	q = &r->reqs[s];
	if (!q->prefill_done) {
		r->cands[q->cand].active_prefill -= q->prefill;
		q->prefill_done = 1;
	}
	return 0;
}

int
kvp_router_free_request(struct kvp_router *r, const char *id, size_t len,
                        struct kvp_diag *d)
{
	int64_t s = kvp_load_find(r, id, len);

	if (s == -2)
		return kvp_diag_set(d, 0, "out of memory");
	if (s < 0)
		return kvp_diag_set(d, 0, "free: request not active");
	kvp_load_release(r, (uint32_t)s);
	return 0;
}

/* A free slot for an active request (its memory still to fill), or -1. */
static int64_t
slot_get(struct kvp_router *r)
{
	if (r->nreqfree > 0)
		return r->reqfree[--r->nreqfree];
	if (kvp_big_grow(&r->reqs, &r->capreqs, r->nreqs + 1,
	                 sizeof(*r->reqs)) != 0)
		return -1;
	return (int64_t)r->nreqs++;
}

/* Adds request q's blocks (seq) to candidate c's held blocks; the first
 * held of them c is known to hold already. */
static int
hold_blocks(struct kvp_router *r, uint32_t c, struct kvp_active_req *a,
            const struct kvp_request *q, const uint64_t *seq, size_t held)
{
	if (r->o.no_assume_reuse) { /* never shared: nothing to look up */
		r->cands[c].active_blocks += q->n;
		return 0;
	}
	if (kvp_route_ids(r, q, seq) != 0)
		return -1;
	a->ids = pool_get(&r->pool, q->n);
	if (a->ids == NO_IDS)
		return -1;
	memcpy(r->pool.a + a->ids, r->ids, q->n * sizeof(*r->ids));
	for (size_t i = 0; i < q->n; i++) {
		uint32_t id = r->ids[i];
		int st;

		if (i < held) {
			if (r->rc_on && rc_inc(r, c, id) != 0)
				return -1;
			r->nodes.hot[id].refs++;
			continue;
		}
		st = held_add(r, c, id);
		if (st < 0)
			return -1;
		r->cands[c].active_blocks += (uint64_t)st;
	}
	r->ids_held = 1; /* till they are looked up again */
	return 0;
}

static int
expiry_push(struct kvp_router *r, uint32_t slot, uint64_t gen)
{
	/* moved down when at most half is live, else grown: each entry is
	 * moved once on average */
	if (r->eqtail == r->eqcap && r->eqhead > 0 &&
	    r->eqhead >= r->eqtail - r->eqhead) {
		memmove(r->eq, r->eq + r->eqhead,
		        (r->eqtail - r->eqhead) * sizeof(*r->eq));
		r->eqtail -= r->eqhead;
		r->eqhead = 0;
	}
	if (kvp_big_grow(&r->eq, &r->eqcap, r->eqtail + 1, sizeof(*r->eq)))
		return -1;
	r->eq[r->eqtail++] =
	    (struct kvp_req_exp){r->now + r->o.request_expiry_ms, gen, slot};
	return 0;
}

/* Drops the routing-order entries of requests no longer live, once they
 * outnumber the live ones, so the queue stays bounded by them. */
static void
aq_compact(struct kvp_router *r)
{
	size_t k = 0;

	if (r->aqtail - r->aqhead <= 2 * r->nlive + 16 &&
	    r->aqhead <= r->aqtail / 2)
		return;
	for (size_t i = r->aqhead; i < r->aqtail; i++) {
		const struct kvp_active_req *q = &r->reqs[r->aq[i].slot];

		if (q->live && q->gen == r->aq[i].gen)
			r->aq[k++] = r->aq[i];
	}
	r->aqhead = 0;
	r->aqtail = k;
}

/* Records the request in slot in routing order, then releases the oldest
 * active requests (never this one) while they hold more than
 * max_active_blocks blocks. */
static int
cap_active(struct kvp_router *r, uint32_t slot)
{
	aq_compact(r);
	if (kvp_big_grow(&r->aq, &r->aqcap, r->aqtail + 1, sizeof(*r->aq)))
		return -1;
	r->aq[r->aqtail++] = (struct kvp_req_exp){0, r->reqs[slot].gen, slot};
	while (r->held_blocks > r->o.max_active_blocks &&
	       r->aqhead + 1 < r->aqtail) {
		const struct kvp_req_exp *e = &r->aq[r->aqhead++];
		struct kvp_active_req *q = &r->reqs[e->slot];

		if (q->live && q->gen == e->gen) {
			kvp_load_release(r, e->slot);
			r->st.requests_capped++;
		}
	}
	return 0;
}

int
kvp_load_add(struct kvp_router *r, uint32_t c, const struct kvp_request *q,
             uint64_t hid, uint64_t prefill, const uint64_t *seq, size_t held,
             int *dup)
{
	int ins = 1;
	uint32_t *v = NULL;
	int64_t slot;
	struct kvp_active_req *a;

	if (!id_fresh(r, q) &&
	    (reqmap_keep(r) != 0 ||
	     (v = kvp_kmap_upsert(&r->reqmap, 0, hid, UINT32_MAX, &ins)) ==
	         NULL))
		return -1;
	*dup = !ins;
	if (!ins) { /* an active request with the same id goes first */
		kvp_load_release(r, *v - 1);
		v = NULL; /* its entry went with it */
		held = 0; /* what the score saw may have gone */
	}
	if (q->seq != NULL || r->o.no_assume_reuse)
		r->load_unchained = 1;
	if (r->load_unchained)
		held = 0; /* held sets may not be prefixes of chains */
	slot = slot_get(r);
	if (slot < 0) {
		if (v != NULL)
			kvp_kmap_del_ref(&r->reqmap, v);
		return -1;
	}
	a = &r->reqs[slot];
	r->added = (uint32_t)slot;
	memset(a, 0, sizeof(*a));
	a->ids = NO_IDS;
	if (v != NULL) {
		*v = (uint32_t)slot + 1;
	} else if (!r->reqdefer &&
	           kvp_kmap_put(&r->reqmap, 0, hid, (uint32_t)slot + 1, NULL) !=
	               0) {
		r->reqfree[r->nreqfree++] = (uint32_t)slot;
		return -1;
	}
	a->idhash = hid;
	a->gen = ++r->gen;
	a->cand = c;
	a->live = 1;
	a->prefill = prefill;
	a->n = q->n;
	if (hold_blocks(r, c, a, q, seq, held) != 0)
		return -1;
	a->out_blocks = kvp_load_output_blocks(r, q);
	r->cands[c].active_blocks += a->out_blocks;
	r->cands[c].active_prefill += prefill;
	r->cands[c].active_requests++;
	r->held_blocks += a->n;
	r->nlive++;
	if (r->o.max_active_blocks != 0 && cap_active(r, (uint32_t)slot) != 0)
		return -1;
	if (r->o.request_expiry_ms != 0 && q->has_ts)
		return expiry_push(r, (uint32_t)slot, a->gen);
	return 0;
}

void
kvp_load_expire(struct kvp_router *r)
{
	while (r->eqhead < r->eqtail && r->eq[r->eqhead].at <= r->now) {
		const struct kvp_req_exp *e = &r->eq[r->eqhead++];
		struct kvp_active_req *q = &r->reqs[e->slot];

		if (q->live && q->gen == e->gen) {
			kvp_load_release(r, e->slot);
			r->st.requests_expired++;
		}
	}
	if (r->eqhead == r->eqtail)
		r->eqhead = r->eqtail = 0;
}

void
kvp_load_held_all(struct kvp_router *r, size_t n)
{
	uint32_t act = ~0u;
	size_t i;

	if (r->load_unchained || r->o.no_load)
		return;
	for (i = 0; i < n && act != 0; i++) {
		uint32_t id = r->ids[i];
		uint32_t keep =
		    id != KVP_NODE_NONE ? act & r->nodes.hot[id].lmask : 0;

		for (uint32_t gone = act & ~keep; gone != 0; gone &= gone - 1)
			r->held32[__builtin_ctz(gone)] = (uint32_t)i;
		act = keep;
	}
	for (; act != 0; act &= act - 1)
		r->held32[__builtin_ctz(act)] = (uint32_t)i;
	r->held_ok = 1;
}

uint64_t
kvp_load_new_blocks(const struct kvp_router *r, uint32_t c, size_t n)
{
	/* Held hashes form a prefix of the request's chain (a request adds
	 * all its blocks, and a chain hash fixes its whole prefix): the walk
	 * of kvp_load_held_all for the first 32 candidates, a binary search
	 * for the others, node ids looked up once per decision. */
	size_t lo = 0, hi = n;

	if (c < 32 && r->held_ok)
		return n - r->held32[c];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t id = r->ids[mid], m = 0;

		if (id != KVP_NODE_NONE)
			m = c < 32 ? r->nodes.hot[id].lmask
			           : kvp_kmap_get(&r->loadmask, GROUP(c), id);
		if (m & BIT(c))
			lo = mid + 1;
		else
			hi = mid;
	}
	return n - lo;
}

uint64_t
kvp_load_output_blocks(const struct kvp_router *r, const struct kvp_request *q)
{
	/* The blocks generation adds past the prompt's: Dynamo adds one as
	 * the sequence crosses each block boundary. Offline nothing reports
	 * progress, so a routed request holds them all until it ends. */
	uint32_t bs = r->o.block_size;

	if (!r->o.track_output_blocks || !q->has_osl || bs == 0)
		return 0;
	return (q->isl + q->osl) / bs - q->isl / bs;
}

int
kvp_router_add_external(struct kvp_router *r, const struct kvp_request *q,
                        const uint64_t *seq, uint64_t w, uint32_t rank,
                        uint32_t overlap)
{
	uint64_t ob = r->o.load_aware ? 0 : (uint64_t)overlap * r->o.block_size;
	uint64_t pf = r->o.no_track_prefill ? 0 : q->isl > ob ? q->isl - ob : 0;
	int64_t c;
	int dup;

	if (q->has_ts && q->ts_ms > r->now)
		r->now = q->ts_ms;
	if (kvp_router_add_candidate(r, w, rank) != 0)
		return -1;
	c = kvp_router_cand_find(r, w, rank);
	r->ids_ok = 0; /* r->ids are not this request's */
	return kvp_load_add(r, (uint32_t)c, q,
	                    kvp_hash_bytes(q->id, q->id_len, 0), pf, seq, 0,
	                    &dup);
}
