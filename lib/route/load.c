/* SPDX-License-Identifier: MIT */
/*
 * load.c — the load the router predicts from its own decisions (Dynamo's
 * active sequences): per candidate, the prefill tokens of requests not yet
 * prefilled and the distinct blocks of its active requests (refcounted by
 * sequence hash), plus the external baseline of `load` records. Requests
 * leave on prefill_done / free, when their worker is removed, or when they
 * expire (request_expiry_ms after routing). See load.h; the table of
 * active requests is reqs.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/kmap.h"
#include "common/util.h"
#include "common/debug.h"
#include "route/route_internal.h"
#include "route/router.h"

int
kvp_router_set_load(struct kvp_router *r, uint64_t w, uint32_t rank,
                    uint64_t prefill_tokens, uint64_t decode_blocks)
{
	int64_t c = kvp_cands_add(&r->cd, w, rank);

	if (c < 0)
		return -1;
	kvp_cands_at(&r->cd, (uint32_t)c)->ext_prefill = prefill_tokens;
	kvp_cands_at(&r->cd, (uint32_t)c)->ext_decode = decode_blocks;
	return 0;
}

void
kvp_load_init(struct kvp_load *ld, struct kvp_arena *ar)
{
	memset(ld, 0, sizeof(*ld));
	kvp_kmap_init_sparse(&ld->masks, ar); /* probed per block */
	kvp_kmap_init_sparse(&ld->rc, ar);
}

void
kvp_load_fini(struct kvp_load *ld)
{
	kvp_kmap_fini(&ld->masks);
	kvp_kmap_fini(&ld->rc);
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
mask_of(struct kvp_load *ld, struct kvp_nodes *nd, uint32_t c, uint32_t id)
{
	int ins;
	uint32_t *m;

	if (c < 32)
		return &kvp_nodes_hot(nd, id)->lmask;
	m = kvp_kmap_upsert(&ld->masks, GROUP(c), id, BIT(c), &ins);
	if (m != NULL && ins)
		*m = 0; /* only briefly: the caller sets c's bit */
	return m;
}

/* loadrc (c, id) += k (an entry from k). 0, or -1. */
static int
rc_add(struct kvp_load *ld, uint32_t c, uint32_t id, uint32_t k)
{
	int ins;
	uint32_t *rc = kvp_kmap_upsert(&ld->rc, c, id, k, &ins);

	if (rc == NULL)
		return -1;
	if (!ins)
		*rc += k;
	return 0;
}

/* One more hold of node id by candidate c, whose bit is set already. */
static int
rc_inc(struct kvp_load *ld, struct kvp_nodes *nd, uint32_t c, uint32_t id)
{
	struct kvp_node *n = kvp_nodes_hot(nd, id);

	if (c >= 32)
		return rc_add(ld, c, id, 1);
	if (n->lmask == BIT(c)) {
		n->rc1++;
		return 0;
	}
	if (n->rc1 != 0) { /* c joins the one holder: its count moves out */
		if (rc_add(ld, (uint32_t)__builtin_ctz(n->lmask & ~BIT(c)), id,
		           n->rc1) != 0)
			return -1;
		n->rc1 = 0;
	}
	return rc_add(ld, c, id, 1);
}

/* One hold fewer of node id by candidate c < 32: 1 if c holds it no more.
 * A last holder left alone gets its count back into rc1. */
static int
rc_dec_low(struct kvp_load *ld, struct kvp_nodes *nd, uint32_t c, uint32_t id)
{
	struct kvp_node *n = kvp_nodes_hot(nd, id);
	uint32_t *rc;

	if (n->lmask == BIT(c) && n->rc1 != 0) {
		if (--n->rc1 != 0)
			return 0;
		n->lmask = 0;
		return 1;
	}
	rc = kvp_kmap_ref(&ld->rc, c, id);
	if (rc != NULL && *rc > 1) {
		(*rc)--;
		return 0;
	}
	if (rc != NULL)
		kvp_kmap_del_ref(&ld->rc, rc);
	if (!(n->lmask & BIT(c)))
		return 0;
	n->lmask &= ~BIT(c);
	if (n->lmask != 0 && (n->lmask & (n->lmask - 1)) == 0) {
		uint32_t s = (uint32_t)__builtin_ctz(n->lmask);

		n->rc1 = kvp_kmap_del(&ld->rc, s, id);
	}
	return 1;
}

/* One more active request of candidate c holds node id: 1 if c did not
 * hold it before, 0 if it did, -1 on allocation failure. */
static int
held_add(struct kvp_load *ld, struct kvp_nodes *nd, uint32_t c, uint32_t id)
{
	uint32_t *m = mask_of(ld, nd, c, id);
	int was;

	if (m == NULL)
		return -1;
	was = (*m & BIT(c)) != 0;
	*m |= BIT(c);
	if (ld->rc_on && rc_inc(ld, nd, c, id) != 0)
		return -1;
	kvp_nodes_ref(nd, id);
	return !was;
}

/* One active request of candidate c fewer holds node id (rc_on): 1 if c
 * holds it no more. */
static int
held_drop(struct kvp_load *ld, struct kvp_nodes *nd, uint32_t c, uint32_t id)
{
	uint32_t *rc, *m;
	int gone = 0;

	if (c < 32) {
		gone = rc_dec_low(ld, nd, c, id);
		kvp_nodes_unref(nd, id);
		return gone;
	}
	rc = kvp_kmap_ref(&ld->rc, c, id);
	if (rc != NULL && *rc > 1) {
		(*rc)--;
	} else {
		if (rc != NULL)
			kvp_kmap_del_ref(&ld->rc, rc);
		m = kvp_kmap_ref(&ld->masks, GROUP(c), id);
		if (m != NULL && (*m & BIT(c))) {
			*m &= ~BIT(c);
			gone = 1;
			if (*m == 0)
				kvp_kmap_del_ref(&ld->masks, m);
		}
	}
	kvp_nodes_unref(nd, id);
	return gone;
}

/* Counts every live request's holds into loadrc (the first release). 0,
 * or -1 on allocation failure. */
static int
rc_start(struct kvp_router *r)
{
	for (size_t s = 0; s < kvp_reqs_nslots(&r->rq); s++) {
		const struct kvp_active_req *q =
		    kvp_reqs_at(&r->rq, (uint32_t)s);
		const uint32_t *ids;

		if (!q->live || q->ids == NO_IDS)
			continue;
		ids = kvp_reqs_ids(&r->rq, (uint32_t)s);
		for (size_t i = 0; i < q->n; i++)
			if (rc_inc(&r->ld, &r->nodes, q->cand, ids[i]) != 0)
				return -1;
	}
	r->ld.rc_on = 1;
	return 0;
}

/* ---- active requests ----------------------------------------------------- */

void
kvp_load_release(struct kvp_router *r, uint32_t slot)
{
	struct kvp_active_req *q = kvp_reqs_at(&r->rq, slot);
	struct kvp_cand *c = kvp_cands_at(&r->cd, q->cand);

	if (q->ids != NO_IDS && !r->ld.rc_on && rc_start(r) != 0) {
		r->oom = 1; /* reported by the next decision */
		return;
	}
	if (!q->prefill_done)
		c->active_prefill -= q->prefill;
	c->active_blocks -= q->out_blocks;
	if (q->sess != 0)
		kvp_session_release(&r->ss, q->sess - 1, r->now);
	if (q->ids == NO_IDS) { /* no_assume_reuse: none shared */
		c->active_blocks -= q->n;
	} else {
		const uint32_t *ids = kvp_reqs_ids(&r->rq, slot);

		for (size_t i = 0; i < q->n; i++)
			if (held_drop(&r->ld, &r->nodes, q->cand, ids[i]))
				c->active_blocks--;
	}
	c->active_requests--;
	kvp_reqs_put(&r->rq, slot);
	r->ld.changes++;
}

void
kvp_load_release_cand(struct kvp_router *r, uint32_t ci)
{
	for (size_t s = 0; s < kvp_reqs_nslots(&r->rq); s++) {
		const struct kvp_active_req *q =
		    kvp_reqs_at(&r->rq, (uint32_t)s);

		if (q->live && q->cand == ci)
			kvp_load_release(r, (uint32_t)s);
	}
}

/* Slot's prefill is done. */
void
kvp_load_prefilled(struct kvp_router *r, uint32_t slot)
{
	struct kvp_active_req *q = kvp_reqs_at(&r->rq, slot);

	if (!q->prefill_done) {
		kvp_cands_at(&r->cd, q->cand)->active_prefill -= q->prefill;
		q->prefill_done = 1;
		r->ld.changes++;
	}
}

int
kvp_router_prefill_done(struct kvp_router *r, const char *id, size_t len,
                        struct kvp_diag *d)
{
	int64_t s = kvp_reqs_find(&r->rq, id, len);

	if (s == -2)
		return kvp_diag_set(d, 0, "out of memory");
	if (s < 0)
		return kvp_diag_set(d, 0, "prefill_done: request not active");
	kvp_load_prefilled(r, (uint32_t)s);
	return 0;
}

int
kvp_router_free_request(struct kvp_router *r, const char *id, size_t len,
                        struct kvp_diag *d)
{
	int64_t s = kvp_reqs_find(&r->rq, id, len);

	if (s == -2)
		return kvp_diag_set(d, 0, "out of memory");
	if (s < 0)
		return kvp_diag_set(d, 0, "free: request not active");
	kvp_load_release(r, (uint32_t)s);
	return 0;
}

/* Adds request q's blocks (seq) to candidate c's held blocks, from slot
 * on; the first held of them c is known to hold already. */
static int
hold_blocks(struct kvp_router *r, uint32_t c, uint32_t slot,
            const struct kvp_request *q, const uint64_t *seq, size_t held)
{
	struct kvp_cand *cd = kvp_cands_at(&r->cd, c);
	const uint32_t *ids;
	uint32_t *mine;

	if (r->o.no_assume_reuse) { /* never shared: nothing to look up */
		cd->active_blocks += q->n;
		return 0;
	}
	ids = kvp_scratch_ids(&r->sc, &r->nodes, q, seq);
	if (ids == NULL || kvp_reqs_ids_get(&r->rq, slot, q->n) != 0)
		return -1;
	mine = kvp_reqs_ids(&r->rq, slot);
	memcpy(mine, ids, q->n * sizeof(*ids));
	for (size_t i = 0; i < q->n; i++) {
		uint32_t id = ids[i];
		int st;

		if (i < held) {
			if (r->ld.rc_on &&
			    rc_inc(&r->ld, &r->nodes, c, id) != 0)
				return -1;
			kvp_nodes_ref(&r->nodes, id);
			continue;
		}
		st = held_add(&r->ld, &r->nodes, c, id);
		if (st < 0)
			return -1;
		cd->active_blocks += (uint64_t)st;
	}
	kvp_scratch_held(&r->sc);
	return 0;
}

/* Records the request in slot in routing order, then releases the oldest
 * active requests (never this one) while they hold more than
 * max_active_blocks blocks. */
static int
cap_active(struct kvp_router *r, uint32_t slot)
{
	int64_t s;

	if (kvp_reqs_order_push(&r->rq, slot) != 0)
		return -1;
	while ((s = kvp_reqs_next_over(&r->rq, r->o.max_active_blocks)) >= 0) {
		kvp_load_release(r, (uint32_t)s);
		r->st.requests_capped++;
	}
	return 0;
}

int
kvp_load_add(struct kvp_router *r, uint32_t c, const struct kvp_request *q,
             uint64_t hid, uint64_t prefill, const uint64_t *seq, size_t held,
             int *dup)
{
	struct kvp_cand *cd;
	struct kvp_active_req *a;
	int64_t slot, old;

	if (kvp_reqs_claim(&r->rq, q, hid, &old) != 0)
		return -1;
	*dup = old >= 0;
	if (old >= 0) { /* an active request with the same id goes first */
		kvp_load_release(r, (uint32_t)old);
		held = 0; /* what the score saw may have gone */
	}
	if (q->seq != NULL || r->o.no_assume_reuse) {
		r->ld.unchained = 1;
		r->ld.held_ok = 0; /* held32 assumed chains */
	}
	if (r->ld.unchained)
		held = 0; /* held sets may not be prefixes of chains */
	slot = kvp_reqs_take(&r->rq, hid, c);
	if (slot < 0)
		return -1;
	a = kvp_reqs_at(&r->rq, (uint32_t)slot);
	a->prefill = prefill;
	a->n = q->n;
	if (hold_blocks(r, c, (uint32_t)slot, q, seq, held) != 0)
		return -1;
	a = kvp_reqs_at(&r->rq, (uint32_t)slot);
	a->out_blocks = kvp_load_output_blocks(r, q);
	cd = kvp_cands_at(&r->cd, c);
	cd->active_blocks += a->out_blocks;
	cd->active_prefill += prefill;
	cd->active_requests++;
	kvp_reqs_commit(&r->rq, (uint32_t)slot);
	if (r->o.max_active_blocks != 0 && cap_active(r, (uint32_t)slot) != 0)
		return -1;
	if (r->o.request_expiry_ms != 0 && q->has_ts)
		return kvp_reqs_expire_at(&r->rq, (uint32_t)slot,
		                          r->now + r->o.request_expiry_ms);
	return 0;
}

void
kvp_load_expire(struct kvp_router *r)
{
	int64_t s;

	while ((s = kvp_reqs_next_expired(&r->rq, r->now)) >= 0) {
		kvp_load_release(r, (uint32_t)s);
		r->st.requests_expired++;
	}
}

void
kvp_load_held_all(struct kvp_router *r, const uint32_t *ids, size_t n)
{
	uint32_t act = ~0u;
	size_t i;

	r->ld.held_ok = 0;
	if (r->ld.unchained || r->o.no_load)
		return;
	for (i = 0; i < n && act != 0; i++) {
		uint32_t id = ids[i];
		uint32_t keep =
		    id != KVP_NODE_NONE
		        ? act & kvp_nodes_hot_c(&r->nodes, id)->lmask
		        : 0;

		for (uint32_t gone = act & ~keep; gone != 0; gone &= gone - 1)
			r->ld.held32[__builtin_ctz(gone)] = (uint32_t)i;
		act = keep;
	}
	for (; act != 0; act &= act - 1)
		r->ld.held32[__builtin_ctz(act)] = (uint32_t)i;
	r->ld.held_ok = 1;
}

uint64_t
kvp_load_new_blocks(const struct kvp_router *r, uint32_t c, const uint32_t *ids,
                    size_t n)
{
	/* Held hashes form a prefix of the request's chain (a request adds
	 * all its blocks, and a chain hash fixes its whole prefix): the walk
	 * of kvp_load_held_all for the first 32 candidates, a binary search
	 * for the others, node ids looked up once per decision. */
	size_t lo = 0, hi = n;

	if (c < 32 && r->ld.held_ok)
		return n - r->ld.held32[c];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t id = ids[mid], m = 0;

		if (id != KVP_NODE_NONE)
			m = c < 32 ? kvp_nodes_hot_c(&r->nodes, id)->lmask
			           : kvp_kmap_get(&r->ld.masks, GROUP(c), id);
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

void
kvp_load_added(const struct kvp_router *r, uint32_t *slot, uint64_t *gen)
{
	*slot = kvp_reqs_added(&r->rq);
	*gen = kvp_reqs_at_c(&r->rq, *slot)->gen;
}

void
kvp_load_bind_session(struct kvp_router *r, uint32_t sess)
{
	kvp_reqs_at(&r->rq, kvp_reqs_added(&r->rq))->sess = sess;
}

int
kvp_load_live(const struct kvp_router *r, uint32_t slot, uint64_t gen)
{
	return kvp_reqs_live(&r->rq, slot, gen);
}

int
kvp_load_state(const struct kvp_router *r, uint32_t slot, uint64_t gen)
{
	if (!kvp_reqs_live(&r->rq, slot, gen))
		return 0;
	return kvp_reqs_at_c(&r->rq, slot)->prefill_done ? 2 : 1;
}

uint64_t
kvp_load_changes(const struct kvp_router *r)
{
	return r->ld.changes;
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
	c = kvp_cands_add(&r->cd, w, rank);
	if (c < 0)
		return -1;
	kvp_scratch_forget(&r->sc); /* its ids are not this request's */
	return kvp_load_add(r, (uint32_t)c, q,
	                    kvp_hash_bytes(q->id, q->id_len, 0), pf, seq, 0,
	                    &dup);
}

void
kvp_load_check(const struct kvp_router *r)
{
	const struct kvp_load *ld = &r->ld;

	(void)ld; /* (unused without KVP_DEBUG) */

	/* rc_on: counts kept from the first release on, none before */
	KVP_ASSERT(ld->rc_on || kvp_kmap_size(&ld->rc) == 0);
	/* held_ok: only while held sets are prefixes of chains */
	KVP_ASSERT(!ld->held_ok || !ld->unchained);
	KVP_ASSERT(!r->o.no_assume_reuse || ld->unchained ||
	           kvp_reqs_nslots(&r->rq) == 0);
}
