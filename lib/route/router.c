/* SPDX-License-Identifier: MIT */
/*
 * router.c — the router's state, its candidates and the decision for one
 * request (kvp_router_route). Scoring and picking are in score.c, the load
 * the router predicts in load.c, events in event_apply.c and approximate
 * mode in approx.c. See router.h.
 */
#define _GNU_SOURCE 1 /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "common/bigmem.h"
#include "common/blockhash.h"
#include "common/kmap.h"
#include "common/util.h"
#include "route/index.h"
#include "route/route_hash.h"
#include "route/route_internal.h"
#include "route/router.h"
#include "route/route_view.h"

void
kvp_route_opts_init(struct kvp_route_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->overlap_weight = 1.0;
	o->credit = 1.0;
	o->host_weight = 0.75;
	o->disk_weight = 0.25;
	o->ttl_ms = 120000;
	o->approx_max = (uint64_t)1 << 20;
	o->request_expiry_ms = 3600000;
	o->max_active_blocks = KVP_MAX_ACTIVE_BLOCKS;
	o->tie_break = KVP_TIE_LOWEST_ID;
	o->gaps = KVP_GAPS_APPLY;
}

/* The predict-on-route side index: its own index, fed by decisions. */
static int
side_new(struct kvp_router *r)
{
	struct kvp_index *ix = kvp_index_new_sparse();

	r->side = calloc(1, sizeof(*r->side));
	if (ix == NULL || r->side == NULL) {
		kvp_index_free(ix);
		return -1;
	}
	kvp_approx_init(r->side, ix, &r->nodes, r->o.predicted_ttl_ms,
	                r->o.approx_max, !r->o.legacy, &r->st.side_expired,
	                &r->st.side_pruned);
	return 0;
}

struct kvp_router *
kvp_router_new(const struct kvp_route_opts *o)
{
	struct kvp_router *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->o = *o;
	r->ix = o->approx ? kvp_index_new_sparse() : kvp_index_new();
	if (r->ix == NULL) {
		free(r);
		return NULL;
	}
	kvp_kmap_init(&r->cmap);
	kvp_kmap_init(&r->curmap);
	kvp_kmap_init_sparse(&r->loadmask); /* probed per block */
	kvp_kmap_init_sparse(&r->loadrc);
	kvp_kmap_init_sparse(&r->reqmap); /* probed per request */
	r->reqdefer = 1;
	kvp_kmap_init(&r->sessmap);
	kvp_nodes_init(&r->nodes, o->approx || o->predicted_ttl_ms != 0,
	               (o->approx || o->predicted_ttl_ms != 0) && !o->legacy);
	kvp_approx_init(&r->ap, r->ix, &r->nodes, o->ttl_ms, o->approx_max,
	                o->approx && !o->legacy, &r->st.approx_expired,
	                &r->st.approx_pruned);
	if (o->predicted_ttl_ms != 0 && side_new(r) != 0) {
		kvp_router_free(r);
		return NULL;
	}
	return r;
}

void
kvp_router_free(struct kvp_router *r)
{
	if (r == NULL)
		return;
	if (r->hk != NULL && r->hk->fini != NULL)
		r->hk->fini(r->hctx); /* hook */
	kvp_index_free(r->ix);
	free(r->cands);
	free(r->order);
	free(r->curs);
	kvp_big_free(r->reqs, r->capreqs * sizeof(*r->reqs), 1);
	kvp_big_free(r->pool.a, r->pool.cap * sizeof(*r->pool.a), 1);
	free(r->reqfree);
	kvp_big_free(r->eq, r->eqcap * sizeof(*r->eq), 1);
	kvp_approx_fini(&r->ap);
	if (r->side != NULL) {
		kvp_index_free(r->side->ix);
		kvp_approx_fini(r->side);
		free(r->side);
	}
	free(r->side_scores);
	kvp_session_fini(r);
	free(r->elig);
	kvp_big_free(r->aq, r->aqcap * sizeof(*r->aq), 1);
	free(r->scores);
	free(r->cs);
	free(r->lg);
	free(r->pr);
	free(r->seqbuf);
	kvp_kmap_fini(&r->cmap);
	kvp_kmap_fini(&r->curmap);
	kvp_kmap_fini(&r->loadmask);
	kvp_kmap_fini(&r->loadrc);
	kvp_kmap_fini(&r->reqmap);
	kvp_nodes_fini(&r->nodes);
	free(r->ids);
	free(r);
}

void
kvp_router_index_totals(const struct kvp_router *r, size_t *nodes,
                        uint64_t *pairs, size_t *bytes)
{
	kvp_approx_totals(&r->ap, nodes, pairs, bytes);
}

uint64_t
kvp_route_tree_size(const struct kvp_router *r, uint32_t h)
{
	return kvp_approx_holder_blocks(&r->ap, h);
}

const struct kvp_route_stats *
kvp_router_stats(const struct kvp_router *r)
{
	return &r->st;
}

struct kvp_route_stats *
kvp_router_stats_mut(struct kvp_router *r)
{
	return &r->st;
}

void
kvp_router_tick(struct kvp_router *r, uint64_t ts)
{
	if (ts > r->now)
		r->now = ts;
}

uint32_t
kvp_router_block_size(const struct kvp_router *r)
{
	return r->o.block_size;
}

void
kvp_router_absorb(struct kvp_router *dst, const struct kvp_router *src)
{
	struct kvp_route_stats *d = &dst->st;
	const struct kvp_route_stats *s = &src->st;

	d->requests += s->requests;
	d->routed += s->routed;
	d->queries += s->queries;
	d->no_candidate += s->no_candidate;
	d->non_max_overlap += s->non_max_overlap;
	d->blocks_lost += s->blocks_lost;
	d->hit_blocks += s->hit_blocks;
	d->reachable_hit_blocks += s->reachable_hit_blocks;
	d->request_blocks += s->request_blocks;
	d->hashed_blocks += s->hashed_blocks;
	d->rejected += s->rejected;
	for (size_t i = 0; i < src->ncands; i++) {
		int64_t c = kvp_router_cand_find(dst, src->cands[i].worker_id,
		                                 src->cands[i].dp_rank);

		if (c >= 0)
			dst->cands[c].routed += src->cands[i].routed;
	}
}

/* ---- candidates --------------------------------------------------------- */

int64_t
kvp_router_cand_find(const struct kvp_router *r, uint64_t w, uint32_t rank)
{
	uint32_t v = kvp_kmap_get(&r->cmap, rank, w);

	return v ? (int64_t)v - 1 : -1;
}

int
kvp_router_add_candidate(struct kvp_router *r, uint64_t w, uint32_t rank)
{
	int64_t c = kvp_router_cand_find(r, w, rank);
	struct kvp_cand *cd;

	if (c >= 0) {
		if (!r->cands[c].live) {
			r->cands[c].live = 1;
			r->order_dirty = 1;
		}
		return 0;
	}
	if (r->ncands >= UINT32_MAX - 1 ||
	    kvp_grow(&r->cands, &r->capcands, r->ncands + 1,
	             sizeof(*r->cands)) != 0 ||
	    kvp_kmap_put(&r->cmap, rank, w, (uint32_t)r->ncands + 1, NULL) != 0)
		return -1;
	cd = &r->cands[r->ncands++];
	memset(cd, 0, sizeof(*cd));
	cd->worker_id = w;
	cd->dp_rank = rank;
	cd->live = 1;
	r->order_dirty = 1;
	r->hid_n = SIZE_MAX; /* its holder ids are still to look up */
	return 0;
}

static int
cmp_cand(const void *a, const void *b, void *base)
{
	const struct kvp_cand *x =
	    &((const struct kvp_cand *)base)[*(const uint32_t *)a];
	const struct kvp_cand *y =
	    &((const struct kvp_cand *)base)[*(const uint32_t *)b];

	if (x->worker_id != y->worker_id)
		return x->worker_id < y->worker_id ? -1 : 1;
	if (x->dp_rank != y->dp_rank)
		return x->dp_rank < y->dp_rank ? -1 : 1;
	return 0;
}

/* r->order: the live candidates sorted by (worker_id, dp_rank). */
static int
build_order(struct kvp_router *r)
{
	if (!r->order_dirty)
		return 0;
	free(r->order);
	r->order = malloc((r->ncands + 1) * sizeof(*r->order));
	if (r->order == NULL)
		return -1;
	r->norder = 0;
	for (size_t i = 0; i < r->ncands; i++)
		if (r->cands[i].live)
			r->order[r->norder++] = (uint32_t)i;
	qsort_r(r->order, r->norder, sizeof(*r->order), cmp_cand, r->cands);
	r->order_dirty = 0;
	return 0;
}

size_t
kvp_router_ncandidates(const struct kvp_router *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->ncands; i++)
		n += r->cands[i].live != 0;
	return n;
}

size_t
kvp_router_remove_worker(struct kvp_router *r, uint64_t w)
{
	size_t n = 0;

	for (size_t i = 0; i < r->ncands; i++) {
		struct kvp_cand *c = &r->cands[i];

		if (c->worker_id != w || !c->live)
			continue;
		if (kvp_approx_unflat(&r->ap) != 0)
			r->oom = 1; /* reported by the next decision */
		for (int t = 0; t < KVP_TIER_COUNT; t++) {
			int64_t h =
			    kvp_index_holder(r->ix, w, c->dp_rank, t, 0);

			if (h >= 0)
				(void)kvp_index_clear(r->ix, (uint32_t)h);
		}
		for (size_t s = 0; s < r->nreqs; s++)
			if (r->reqs[s].live && r->reqs[s].cand == i)
				kvp_load_release(r, (uint32_t)s);
		kvp_kmap_del(&r->curmap, c->dp_rank, w);
		c->live = 0;
		c->ext_prefill = c->ext_decode = 0;
		r->order_dirty = 1;
		n++;
	}
	return n;
}

static uint64_t
tree_size(const struct kvp_router *r, const struct kvp_cand *c)
{
	int64_t h = kvp_index_holder(r->ix, c->worker_id, c->dp_rank,
	                             KVP_TIER_DEVICE, 0);

	return h >= 0 ? kvp_route_tree_size(r, (uint32_t)h) : 0;
}

size_t
kvp_router_totals(struct kvp_router *r, struct kvp_cand_total *out, size_t max)
{
	size_t n = 0;

	if (build_order(r) != 0)
		return 0;
	for (size_t k = 0; k < r->norder && n < max; k++) {
		const struct kvp_cand *c = &r->cands[r->order[k]];

		out[n].worker_id = c->worker_id;
		out[n].dp_rank = c->dp_rank;
		out[n].routed = c->routed;
		out[n].tree_size = tree_size(r, c);
		out[n].active_requests = c->active_requests;
		n++;
	}
	return n;
}

/* ---- the decision ------------------------------------------------------- */

/* Starts dec and moves the clock: a request's timestamp expires approximate
 * blocks and active requests. */
static void
route_begin(struct kvp_router *r, const struct kvp_request *q,
            struct kvp_decision *dec)
{
	uint32_t bs = r->o.block_size;

	memset(dec, 0, sizeof(*dec));
	dec->chosen = dec->max_overlap = -1;
	dec->tie_break = "none";
	dec->isl = q->isl;
	dec->request_blocks = bs ? (q->isl + bs - 1) / bs : 0;
	dec->hashed_blocks = q->n;
	r->qhash = kvp_hash_bytes(q->id, q->id_len, 0);
	if (q->has_ts && q->ts_ms > r->now)
		r->now = q->ts_ms;
	if (r->o.approx)
		kvp_approx_expire(&r->ap, r->now);
	if (r->side != NULL)
		kvp_approx_expire(r->side, r->now);
	if (r->o.request_expiry_ms != 0)
		kvp_load_expire(r);
	dec->policy = "dynamo";
	if (r->hk != NULL && r->hk->begin != NULL)
		r->hk->begin(r->hctx, r, dec); /* hook */
	if (q->n == 0)
		dec->warnings |= KVP_WARN_NO_FULL_BLOCK;
}

/* Caches each candidate's holder ids (cand.hid) once the index has new
 * holders or there are new candidates: holder ids are never reused, so a
 * found id stays right. */
static void
refresh_holders(struct kvp_router *r)
{
	size_t nh = kvp_index_nholders(r->ix);

	if (nh == r->hid_n)
		return;
	for (size_t i = 0; i < r->ncands; i++) {
		struct kvp_cand *c = &r->cands[i];

		for (int t = 0; t < KVP_TIER_EXTERNAL; t++) {
			int64_t h;

			if (c->hid[t] != 0)
				continue;
			h = kvp_index_holder(r->ix, c->worker_id, c->dp_rank, t,
			                     0);
			if (h >= 0)
				c->hid[t] = (uint32_t)h + 1;
		}
	}
	r->hid_n = nh;
}

/* r->ids (n of them, looked up) are this decision's. */
static void
ids_mark(struct kvp_router *r, size_t n)
{
	for (size_t i = 0; i < n && i < 64; i++) /* the walks read them */
		if (r->ids[i] != KVP_NODE_NONE) {
			__builtin_prefetch(&r->nodes.hot[r->ids[i]]);
			if (r->nodes.ttl != NULL)
				__builtin_prefetch(&r->nodes.ttl[r->ids[i]]);
		}
	r->ids_ok = 1;
	r->ids_held = 0;
	r->held_ok = 0;
	r->ids_frees = r->nodes.frees;
}

/* r->ids: the node ids of n blocks (seq), looked up. 0, or -1. */
static int
ids_reset(struct kvp_router *r, const uint64_t *seq, size_t n)
{
	if (kvp_grow(&r->ids, &r->capids, n + 1, sizeof(*r->ids)) != 0)
		return -1;
	if (kvp_nodes_find_many(&r->nodes, seq, n, r->ids) != 0)
		return -1;
	ids_mark(r, n);
	return 0;
}

int
kvp_route_ids(struct kvp_router *r, const struct kvp_request *q,
              const uint64_t *seq)
{
	/* outside a decision, or nodes freed since the lookups: afresh */
	if ((!r->ids_ok || r->ids_frees != r->nodes.frees) &&
	    ids_reset(r, seq, q->n) != 0)
		return -1;
	return kvp_nodes_intern(&r->nodes, seq, q->local, q->seq == NULL, q->n,
	                        r->ids);
}

/* The request's sequence hashes (chained from its local hashes when it
 * brings none), the candidate order and the scratch for scoring; then the
 * index match. NULL on allocation failure. */
static const uint64_t *
route_prepare(struct kvp_router *r, const struct kvp_request *q)
{
	const uint64_t *seq = q->seq;
	int found = 0; /* r->ids looked up with the hashes */
	size_t nh;

	if (seq == NULL) {
		if (kvp_grow(&r->seqbuf, &r->capseq, q->n + 1,
		             sizeof(*r->seqbuf)) != 0 ||
		    kvp_grow(&r->ids, &r->capids, q->n + 1, sizeof(*r->ids)))
			return NULL;
		if (r->nodes.with_path) { /* the memo (nodes.c) */
			kvp_nodes_resolve(&r->nodes, q->local, q->n, r->seqbuf,
			                  r->ids);
			ids_mark(r, q->n);
			found = 1;
		} else {
			kvp_route_chain(q->local, q->n, r->seqbuf);
		}
		seq = r->seqbuf;
	}
	if (build_order(r) != 0)
		return NULL;
	refresh_holders(r);
	nh = kvp_index_nholders(r->ix);
	if (kvp_grow(&r->scores, &r->capscores, nh + 1, sizeof(*r->scores)) ||
	    kvp_grow(&r->cs, &r->capcs, r->norder + 1, sizeof(*r->cs)) ||
	    kvp_grow(&r->lg, &r->caplg, r->norder + 1, sizeof(*r->lg)) ||
	    kvp_grow(&r->pr, &r->cappr, r->norder + 1, sizeof(*r->pr)) ||
	    kvp_grow(&r->elig, &r->capelig, r->norder + 1, sizeof(*r->elig)) ||
	    (!found && ids_reset(r, seq, q->n) != 0))
		return NULL;
	kvp_approx_match(&r->ap, r, q, r->o.legacy, r->scores);
	kvp_load_held_all(r, q->n);
	if (r->side != NULL) {
		nh = kvp_index_nholders(r->side->ix);
		if (kvp_grow(&r->side_scores, &r->capside, nh + 1,
		             sizeof(*r->side_scores)) != 0)
			return NULL;
		kvp_approx_match(r->side, r, q, r->o.legacy, r->side_scores);
	}
	return seq;
}

static int
allowed(const struct kvp_request *q, const struct kvp_cand *c)
{
	if (q->pinned &&
	    (c->worker_id != q->pin_worker || c->dp_rank != q->pin_rank))
		return 0;
	if (q->allowed == NULL)
		return 1;
	for (size_t i = 0; i < q->n_allowed; i++)
		if (q->allowed[i] == c->worker_id)
			return 1;
	return 0;
}

/* Dynamo's busy thresholds: a worker whose (predicted) load exceeds one
 * of them is overloaded and filtered out before scoring. */
static int
overloaded(const struct kvp_route_opts *o, const struct kvp_cand *c)
{
	double p = (double)(c->active_prefill + c->ext_prefill);
	double dblocks = (double)(c->active_blocks + c->ext_decode);

	return (o->has_decode_thr &&
	        dblocks > o->decode_thr * (double)o->total_kv_blocks) ||
	       (o->has_prefill_thr &&
	        c->active_prefill + c->ext_prefill > o->prefill_thr) ||
	       (o->has_prefill_frac &&
	        p > o->prefill_frac * (double)o->max_batched_tokens);
}

/* r->elig: the allowed, not overloaded candidates (dec->overloaded counts
 * the rest of the allowed); r->pmin their least active prefill. */
static size_t
eligible(struct kvp_router *r, const struct kvp_request *q,
         struct kvp_decision *dec)
{
	size_t ne = 0;
	int limited = q->pinned || q->allowed != NULL;
	int thr = r->o.has_decode_thr || r->o.has_prefill_thr ||
	          r->o.has_prefill_frac;

	r->pmin = UINT64_MAX;
	for (size_t k = 0; k < r->norder; k++) {
		const struct kvp_cand *c = &r->cands[r->order[k]];

		if (limited && !allowed(q, c))
			continue;
		if (thr && overloaded(&r->o, c)) {
			dec->overloaded++;
			continue;
		}
		if (c->active_prefill + c->ext_prefill < r->pmin)
			r->pmin = c->active_prefill + c->ext_prefill;
		r->elig[ne++] = r->order[k];
	}
	if (r->o.no_load || ne == 0)
		r->pmin = 0;
	return ne;
}

/* Scores every eligible candidate into r->cs and r->lg; returns how many. */
static size_t
score_all(struct kvp_router *r, const struct kvp_request *q,
          struct kvp_decision *dec)
{
	size_t nc;

	dec->weight = q->has_weight ? q->weight : r->o.overlap_weight;
	dec->temperature =
	    q->has_temperature ? q->temperature : r->o.temperature;
	/* the deprecated overlap weight at 0 also drops the credit */
	r->dcredit = q->has_weight && q->weight == 0 ? 0 : r->o.credit;
	dec->credit_decay = r->o.credit_decay > 0;
	r->st.requests++;
	r->st.hashed_blocks += q->n;
	r->st.request_blocks += dec->request_blocks;
	if (!q->commit)
		r->st.queries++;
	nc = eligible(r, q, dec);
	for (size_t k = 0; k < nc; k++) {
		kvp_score_candidate(r, r->elig[k], q, dec->weight, &r->cs[k]);
		r->lg[k] = r->cs[k].logit;
	}
	dec->ncand = nc;
	dec->cand = r->cs;
	return nc;
}

/* A committed decision's session binding and, with predict-on-route,
 * the side index's assumed blocks. */
static int
commit_extras(struct kvp_router *r, const struct kvp_request *q,
              const uint64_t *seq, uint32_t ci, struct kvp_decision *dec)
{
	const struct kvp_cand *c = &r->cands[ci];
	int64_t sess = kvp_session_bind(r, q, c->worker_id, c->dp_rank);

	if (sess < 0)
		return -1;
	if (sess > 0) {
		if (dec->affinity == NULL)
			dec->affinity = "bind";
		r->reqs[r->added].sess = (uint32_t)sess;
	}
	if (r->side != NULL && q->n > 0 &&
	    (kvp_route_ids(r, q, seq) != 0 ||
	     kvp_approx_record(r->side, c->worker_id, c->dp_rank, q, seq,
	                       r->ids, r->now,
	                       r->o.legacy ? 0 : kvp_side_overlap(r, c)) != 0))
		return -1;
	return 0;
}

/* The leading blocks the match found candidate ci's device holder
 * holding (legacy scores count others too: 0). */
static uint32_t
held_prefix(const struct kvp_router *r, uint32_t ci)
{
	uint32_t h = r->cands[ci].hid[KVP_TIER_DEVICE];

	return r->o.legacy || h == 0 ? 0 : r->scores[h - 1];
}

/* A committed decision: counters, the chosen candidate's load and, in
 * approximate mode, its assumed blocks. */
static int
route_commit(struct kvp_router *r, const struct kvp_request *q,
             const uint64_t *seq, struct kvp_decision *dec)
{
	const struct kvp_cand_score *ch = &r->cs[dec->chosen];
	const struct kvp_cand_score *mx = &r->cs[dec->max_overlap];
	uint32_t ci =
	    (uint32_t)kvp_router_cand_find(r, ch->worker_id, ch->dp_rank);
	uint64_t ob =
	    r->o.load_aware ? 0 : (uint64_t)ch->overlap * r->o.block_size;
	uint64_t pf = r->o.no_track_prefill ? 0 : q->isl > ob ? q->isl - ob : 0;
	int dup;

	r->st.routed++;
	r->st.hit_blocks += ch->overlap;
	r->st.reachable_hit_blocks += mx->overlap;
	if (ch->overlap < mx->overlap) {
		r->st.non_max_overlap++;
		r->st.blocks_lost += mx->overlap - ch->overlap;
	}
	r->cands[ci].routed++;
	if (kvp_load_add(r, ci, q, r->qhash, pf, seq,
	                 r->o.no_load ? 0 : q->n - ch->new_blocks, &dup) != 0)
		return -1;
	if (dup)
		dec->warnings |= KVP_WARN_DUPLICATE_REQUEST;
	dec->output_blocks = kvp_load_output_blocks(r, q);
	if (r->hk != NULL && r->hk->commit != NULL &&
	    r->hk->commit(r->hctx, r, ci, q, seq, dec) != 0) /* hook */
		return -1;
	if (r->o.approx && q->n > 0 &&
	    (kvp_route_ids(r, q, seq) != 0 ||
	     kvp_approx_record(&r->ap, r->cands[ci].worker_id,
	                       r->cands[ci].dp_rank, q, seq, r->ids, r->now,
	                       held_prefix(r, ci)) != 0))
		return -1;
	if (commit_extras(r, q, seq, ci, dec) != 0)
		return -1;
	if (r->ids_ok && r->ids_frees == r->nodes.frees && !r->ids_held)
		kvp_nodes_sweep(&r->nodes, r->ids, q->n);
	return 0;
}

/* Session affinity: a request of a bound session is pinned to its worker
 * (copied into *tmp); a binding whose worker is gone or not allowed is
 * dropped. Returns the request to route. */
static const struct kvp_request *
session_pin(struct kvp_router *r, const struct kvp_request *q,
            struct kvp_request *tmp, struct kvp_decision *dec)
{
	int64_t s = kvp_session_find(r, q);
	int64_t c;

	if (s < 0 || q->pinned)
		return q;
	c = kvp_router_cand_find(r, r->sess[s].worker_id, r->sess[s].dp_rank);
	if (c < 0 || !r->cands[c].live || !allowed(q, &r->cands[c])) {
		kvp_session_drop(r, s);
		return q;
	}
	*tmp = *q;
	tmp->pinned = 1;
	tmp->session_pinned = 1;
	tmp->pin_worker = r->sess[s].worker_id;
	tmp->pin_rank = r->sess[s].dp_rank;
	dec->affinity = "bound";
	return tmp;
}

/* No candidate was scored: all overloaded, an unknown pinned worker, or
 * none at all. */
static int
route_none(struct kvp_router *r, const struct kvp_request *q,
           struct kvp_decision *dec, struct kvp_diag *d)
{
	if (dec->overloaded > 0) {
		dec->rejected = q->pinned ? "PinnedWorkerOverloaded"
		                          : "AllEligibleWorkersOverloaded";
		r->st.rejected++;
		return 0;
	}
	if (q->pinned)
		return kvp_diag_set(d, 0,
		                    "pinned worker %llu dp_rank %u is "
		                    "not a candidate",
		                    (unsigned long long)q->pin_worker,
		                    (unsigned)q->pin_rank);
	dec->warnings |= KVP_WARN_NO_CANDIDATES;
	r->st.no_candidate++;
	return 0;
}

/* The decision (kvp_router_route), with r->ids this decision's. */
static int
route(struct kvp_router *r, const struct kvp_request *q,
      struct kvp_decision *dec, struct kvp_diag *d)
{
	const uint64_t *seq;
	struct kvp_request tmp;

	route_begin(r, q, dec);
	seq = route_prepare(r, q);
	if (seq == NULL)
		return kvp_diag_set(d, 0, "out of memory");
	/* the hashes the block table owes (nodes.c), for the readers of seq
	 * but those that settle themselves: approx.c's tree, nodes.c */
	if (r->side != NULL || r->hk_seq)
		kvp_nodes_settle(&r->nodes);
	q = session_pin(r, q, &tmp, dec);
	if (score_all(r, q, dec) == 0)
		return route_none(r, q, dec, d);
	if (r->hk == NULL || r->hk->pick == NULL)
		kvp_score_pick(r, q, dec);
	else if (r->hk->pick(r->hctx, r, q, seq, dec) != 0) /* hook */
		return kvp_diag_set(d, 0, "out of memory");
	if (r->cs[dec->max_overlap].overlap == 0 && q->n > 0)
		dec->warnings |= KVP_WARN_NO_OVERLAP;
	if (!q->commit)
		return 0;
	if (route_commit(r, q, seq, dec) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	return 0;
}

int
kvp_router_route(struct kvp_router *r, const struct kvp_request *q,
                 struct kvp_decision *dec, struct kvp_diag *d)
{
	int rc;

	if (r->oom)
		return kvp_diag_set(d, 0, "out of memory");
	rc = route(r, q, dec, d);
	r->ids_ok = 0;
	kvp_nodes_forgive(&r->nodes);
	return rc;
}

int
kvp_router_queue_busy(struct kvp_router *r, const struct kvp_request *q,
                      double threshold_tokens)
{
	size_t n = 0;

	/* expired requests free their capacity first */
	if (r->o.request_expiry_ms != 0)
		kvp_load_expire(r);
	if (build_order(r) != 0)
		return 0;
	for (size_t k = 0; k < r->norder; k++) {
		const struct kvp_cand *c = &r->cands[r->order[k]];

		if (!allowed(q, c) || overloaded(&r->o, c))
			continue;
		if (!((double)(c->active_prefill + c->ext_prefill) >
		      threshold_tokens))
			return 0;
		n++;
	}
	return n > 0;
}

const struct kvp_route_opts *
kvp_router_opts(const struct kvp_router *r)
{
	return &r->o;
}
