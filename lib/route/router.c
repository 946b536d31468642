/* SPDX-License-Identifier: MIT */
/*
 * router.c — the router's state, its candidates and the decision for one
 * request (kvp_router_route). Scoring and picking are in score.c, the load
 * the router predicts in load.c, events in event_apply.c and approximate
 * mode in approx.c. See router.h.
 */
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

struct kvp_router *
kvp_router_new(const struct kvp_route_opts *o)
{
	struct kvp_router *r = calloc(1, sizeof(*r));
	int ttl_index = o->approx || o->predicted_ttl_ms != 0;

	if (r == NULL)
		return NULL;
	r->o = *o;
	/* the active-request term and the decode formula take score.c's
	 * full path */
	r->o.score_parts |=
	    o->request_weight != 0 || o->worker_type == KVP_WORKER_DECODE;
	r->ar = kvp_arena_new(); /* NULL (no memory, KVP_PLAIN_MALLOC): none */
	r->ix = o->approx ? kvp_index_new_sparse(r->ar) : kvp_index_new(r->ar);
	if (r->ix == NULL) {
		kvp_arena_free(r->ar);
		free(r);
		return NULL;
	}
	kvp_cands_init(&r->cd);
	kvp_cursors_init(&r->cur);
	kvp_load_init(&r->ld, r->ar);
	kvp_reqs_init(&r->rq, r->ar);
	kvp_session_init(&r->ss, o->session_ttl_ms);
	kvp_nodes_init(&r->nodes, r->ar, ttl_index, ttl_index && !o->legacy);
	kvp_approx_init(&r->ap, r->ix, &r->nodes, r->ar, o->ttl_ms,
	                o->approx_max, o->approx && !o->legacy,
	                &r->st.approx_expired, &r->st.approx_pruned);
	if (o->predicted_ttl_ms != 0) {
		r->side = kvp_side_new(&r->nodes, r->ar, o->predicted_ttl_ms,
		                       o->approx_max, !o->legacy,
		                       &r->st.side_expired, &r->st.side_pruned);
		if (r->side == NULL) {
			kvp_router_free(r);
			return NULL;
		}
	}
	return r;
}

void
kvp_router_free(struct kvp_router *r)
{
	if (r == NULL)
		return;
	if (r->hk.h != NULL && r->hk.h->fini != NULL)
		r->hk.h->fini(r->hk.ctx); /* hook */
	kvp_index_free(r->ix);
	kvp_cands_fini(&r->cd);
	kvp_cursors_fini(&r->cur);
	kvp_load_fini(&r->ld);
	kvp_reqs_fini(&r->rq);
	kvp_approx_fini(&r->ap);
	kvp_side_free(r->side);
	kvp_session_fini(&r->ss);
	kvp_scratch_fini(&r->sc);
	kvp_nodes_fini(&r->nodes);
	kvp_arena_free(r->ar);
	free(r);
}

void
kvp_router_index_totals(const struct kvp_router *r, size_t *nodes,
                        uint64_t *pairs, size_t *bytes)
{
	kvp_approx_totals(&r->ap, nodes, pairs, bytes);
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
	for (size_t i = 0; i < kvp_cands_count(&src->cd); i++) {
		const struct kvp_cand *sc =
		    kvp_cands_at_c(&src->cd, (uint32_t)i);
		int64_t c =
		    kvp_cands_find(&dst->cd, sc->worker_id, sc->dp_rank);

		if (c >= 0)
			kvp_cands_at(&dst->cd, (uint32_t)c)->routed +=
			    sc->routed;
	}
}

/* ---- candidates --------------------------------------------------------- */

int
kvp_router_add_candidate(struct kvp_router *r, uint64_t w, uint32_t rank)
{
	return kvp_cands_add(&r->cd, w, rank) < 0 ? -1 : 0;
}

size_t
kvp_router_ncandidates(const struct kvp_router *r)
{
	return kvp_cands_nlive(&r->cd);
}

size_t
kvp_router_remove_worker(struct kvp_router *r, uint64_t w)
{
	size_t n = 0;

	for (size_t i = 0; i < kvp_cands_count(&r->cd); i++) {
		struct kvp_cand *c = kvp_cands_at(&r->cd, (uint32_t)i);

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
		kvp_load_release_cand(r, (uint32_t)i);
		kvp_cursors_forget(&r->cur, w, c->dp_rank);
		c->ext_prefill = c->ext_decode = 0;
		kvp_cands_kill(&r->cd, (uint32_t)i);
		n++;
	}
	return n;
}

static uint64_t
tree_size(const struct kvp_router *r, const struct kvp_cand *c)
{
	int64_t h = kvp_index_holder(r->ix, c->worker_id, c->dp_rank,
	                             KVP_TIER_DEVICE, 0);

	return h >= 0 ? kvp_approx_holder_blocks(&r->ap, (uint32_t)h) : 0;
}

size_t
kvp_router_totals(struct kvp_router *r, struct kvp_cand_total *out, size_t max)
{
	size_t n = 0, no;
	const uint32_t *order = kvp_cands_sorted(&r->cd, &no);

	if (order == NULL)
		return 0;
	for (size_t k = 0; k < no && n < max; k++) {
		const struct kvp_cand *c = kvp_cands_at_c(&r->cd, order[k]);

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
	r->sc.qhash = kvp_hash_bytes(q->id, q->id_len, 0);
	if (q->has_ts && q->ts_ms > r->now)
		r->now = q->ts_ms;
	if (r->o.approx)
		kvp_approx_expire(&r->ap, r->now);
	if (r->side != NULL)
		kvp_approx_expire(r->side, r->now);
	if (r->o.request_expiry_ms != 0)
		kvp_load_expire(r);
	dec->policy = "dynamo";
	if (r->hk.h != NULL && r->hk.h->begin != NULL)
		r->hk.h->begin(r->hk.ctx, r, dec); /* hook */
	if (q->n == 0)
		dec->warnings |= KVP_WARN_NO_FULL_BLOCK;
}

/* The request's sequence hashes (chained from its local hashes when it
 * brings none), the candidate order and the scratch for scoring; then the
 * index match. NULL on allocation failure. */
static const uint64_t *
route_prepare(struct kvp_router *r, const struct kvp_request *q)
{
	struct kvp_scratch *sc = &r->sc;
	const uint64_t *seq = q->seq;
	int found = 0; /* sc->ids looked up with the hashes */
	size_t nh, no;

	if (seq == NULL) {
		if (kvp_grow(&sc->seqbuf, &sc->capseq, q->n + 1,
		             sizeof(*sc->seqbuf)) != 0 ||
		    kvp_grow(&sc->ids, &sc->capids, q->n + 1, sizeof(*sc->ids)))
			return NULL;
		if (kvp_nodes_has_path(&r->nodes)) { /* the memo (nodes.c) */
			kvp_nodes_resolve(&r->nodes, q->local, q->n, sc->seqbuf,
			                  sc->ids);
			kvp_scratch_mark(sc, &r->nodes, q->n);
			found = 1;
		} else {
			kvp_route_chain(q->local, q->n, sc->seqbuf);
		}
		seq = sc->seqbuf;
	}
	if (kvp_cands_sorted(&r->cd, &no) == NULL)
		return NULL;
	kvp_cands_refresh(&r->cd, r->ix);
	nh = kvp_index_nholders(r->ix);
	if (kvp_grow(&sc->scores, &sc->capscores, nh + 1,
	             sizeof(*sc->scores)) ||
	    kvp_grow(&sc->cs, &sc->capcs, no + 1, sizeof(*sc->cs)) ||
	    kvp_grow(&sc->lg, &sc->caplg, no + 1, sizeof(*sc->lg)) ||
	    kvp_grow(&sc->pr, &sc->cappr, no + 1, sizeof(*sc->pr)) ||
	    kvp_grow(&sc->elig, &sc->capelig, no + 1, sizeof(*sc->elig)) ||
	    (!found && kvp_scratch_lookup(sc, &r->nodes, seq, q->n) != 0))
		return NULL;
	kvp_approx_match(&r->ap, sc->ids, q, r->o.legacy, sc->scores);
	kvp_load_held_all(r, sc->ids, q->n);
	if (r->side != NULL) {
		nh = kvp_approx_nholders(r->side);
		if (kvp_grow(&sc->side_scores, &sc->capside, nh + 1,
		             sizeof(*sc->side_scores)) != 0)
			return NULL;
		kvp_approx_match(r->side, sc->ids, q, r->o.legacy,
		                 sc->side_scores);
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

/* r->sc.elig: the allowed, not overloaded candidates (dec->overloaded counts
 * the rest of the allowed); r->sc.pmin their least active prefill. */
static size_t
eligible(struct kvp_router *r, const struct kvp_request *q,
         struct kvp_decision *dec)
{
	struct kvp_scratch *sc = &r->sc;
	size_t ne = 0, no;
	const uint32_t *order = kvp_cands_sorted(&r->cd, &no);
	int limited = q->pinned || q->allowed != NULL;
	int thr = r->o.has_decode_thr || r->o.has_prefill_thr ||
	          r->o.has_prefill_frac;

	sc->pmin = UINT64_MAX;
	for (size_t k = 0; k < no; k++) {
		const struct kvp_cand *c = kvp_cands_at_c(&r->cd, order[k]);

		if (limited && !allowed(q, c))
			continue;
		if (thr && overloaded(&r->o, c)) {
			dec->overloaded++;
			continue;
		}
		if (c->active_prefill + c->ext_prefill < sc->pmin)
			sc->pmin = c->active_prefill + c->ext_prefill;
		sc->elig[ne++] = order[k];
	}
	if (r->o.no_load || ne == 0)
		sc->pmin = 0;
	return ne;
}

/* Scores every eligible candidate into r->sc.cs and r->sc.lg; returns how many.
 */
static size_t
score_all(struct kvp_router *r, const struct kvp_request *q,
          struct kvp_decision *dec)
{
	size_t nc;

	dec->weight = q->has_weight ? q->weight : r->o.overlap_weight;
	dec->temperature =
	    q->has_temperature ? q->temperature : r->o.temperature;
	/* the deprecated overlap weight at 0 also drops the credit */
	r->sc.dcredit = q->has_weight && q->weight == 0 ? 0 : r->o.credit;
	dec->credit_decay = r->o.credit_decay > 0;
	r->st.requests++;
	r->st.hashed_blocks += q->n;
	r->st.request_blocks += dec->request_blocks;
	if (!q->commit)
		r->st.queries++;
	nc = eligible(r, q, dec);
	for (size_t k = 0; k < nc; k++) {
		kvp_score_candidate(r, r->sc.elig[k], q, dec->weight,
		                    &r->sc.cs[k]);
		r->sc.lg[k] = r->sc.cs[k].logit;
	}
	dec->ncand = nc;
	dec->cand = r->sc.cs;
	return nc;
}

/* A committed decision's session binding and, with predict-on-route,
 * the side index's assumed blocks. */
static int
commit_extras(struct kvp_router *r, const struct kvp_request *q,
              const uint64_t *seq, uint32_t ci, struct kvp_decision *dec)
{
	const struct kvp_cand *c = kvp_cands_at_c(&r->cd, ci);
	int64_t sess =
	    kvp_session_bind(&r->ss, q, c->worker_id, c->dp_rank, r->now);
	const uint32_t *ids;

	if (sess < 0)
		return -1;
	if (sess > 0) {
		if (dec->affinity == NULL)
			dec->affinity = "bind";
		kvp_load_bind_session(r, (uint32_t)sess);
	}
	if (r->side != NULL && q->n > 0 &&
	    ((ids = kvp_scratch_ids(&r->sc, &r->nodes, q, seq)) == NULL ||
	     kvp_approx_record(
	         r->side, c->worker_id, c->dp_rank, q, seq, ids, r->now,
	         r->o.legacy ? 0 : kvp_score_side_overlap(r, c)) != 0))
		return -1;
	return 0;
}

/* The leading blocks the match found candidate ci's device holder
 * holding (legacy scores count others too: 0). */
static uint32_t
held_prefix(const struct kvp_router *r, uint32_t ci)
{
	uint32_t h = kvp_cands_at_c(&r->cd, ci)->hid[KVP_TIER_DEVICE];

	return r->o.legacy || h == 0 ? 0 : r->sc.scores[h - 1];
}

/* A committed decision: counters, the chosen candidate's load and, in
 * approximate mode, its assumed blocks. */
static int
route_commit(struct kvp_router *r, const struct kvp_request *q,
             const uint64_t *seq, struct kvp_decision *dec)
{
	const struct kvp_cand_score *ch = &r->sc.cs[dec->chosen];
	const struct kvp_cand_score *mx = &r->sc.cs[dec->max_overlap];
	uint32_t ci =
	    (uint32_t)kvp_cands_find(&r->cd, ch->worker_id, ch->dp_rank);
	struct kvp_cand *c = kvp_cands_at(&r->cd, ci);
	const uint32_t *ids;
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
	c->routed++;
	if (kvp_load_add(r, ci, q, r->sc.qhash, pf, seq,
	                 r->o.no_load ? 0 : q->n - ch->new_blocks, &dup) != 0)
		return -1;
	if (dup)
		dec->warnings |= KVP_WARN_DUPLICATE_REQUEST;
	dec->output_blocks = kvp_load_output_blocks(r, q);
	if (r->hk.h != NULL && r->hk.h->commit != NULL &&
	    r->hk.h->commit(r->hk.ctx, r, ci, q, seq, dec) != 0) /* hook */
		return -1;
	c = kvp_cands_at(&r->cd, ci); /* (the hook may add candidates) */
	if (r->o.approx && q->n > 0 &&
	    ((ids = kvp_scratch_ids(&r->sc, &r->nodes, q, seq)) == NULL ||
	     kvp_approx_record(&r->ap, c->worker_id, c->dp_rank, q, seq, ids,
	                       r->now, held_prefix(r, ci)) != 0))
		return -1;
	if (commit_extras(r, q, seq, ci, dec) != 0)
		return -1;
	if (kvp_scratch_ids_fresh(&r->sc, &r->nodes) && !r->sc.ids_held)
		kvp_nodes_sweep(&r->nodes, r->sc.ids, q->n);
	return 0;
}

/* Session affinity: a request of a bound session is pinned to its worker
 * (copied into *tmp); a binding whose worker is gone or not allowed is
 * dropped. Returns the request to route. */
static const struct kvp_request *
session_pin(struct kvp_router *r, const struct kvp_request *q,
            struct kvp_request *tmp, struct kvp_decision *dec)
{
	uint64_t w = 0;
	uint32_t rank = 0;
	int64_t s = kvp_session_find(&r->ss, q, r->now, &w, &rank);
	int64_t c;

	if (s < 0 || q->pinned)
		return q;
	c = kvp_cands_find(&r->cd, w, rank);
	if (c < 0 || !kvp_cands_at_c(&r->cd, (uint32_t)c)->live ||
	    !allowed(q, kvp_cands_at_c(&r->cd, (uint32_t)c))) {
		kvp_session_drop(&r->ss, s);
		return q;
	}
	*tmp = *q;
	tmp->pinned = 1;
	tmp->session_pinned = 1;
	tmp->pin_worker = w;
	tmp->pin_rank = rank;
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

/* The decision (kvp_router_route), with r->sc.ids this decision's. */
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
	if (r->side != NULL || r->hk.seq)
		kvp_nodes_settle(&r->nodes);
	q = session_pin(r, q, &tmp, dec);
	if (score_all(r, q, dec) == 0)
		return route_none(r, q, dec, d);
	if (r->hk.h == NULL || r->hk.h->pick == NULL)
		kvp_score_pick(r, q, dec);
	else if (r->hk.h->pick(r->hk.ctx, r, q, seq, dec) != 0) /* hook */
		return kvp_diag_set(d, 0, "out of memory");
	if (r->sc.cs[dec->max_overlap].overlap == 0 && q->n > 0)
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
	kvp_scratch_forget(&r->sc);
	kvp_nodes_forgive(&r->nodes);
	kvp_router_check(r);
	return rc;
}

int
kvp_router_queue_busy(struct kvp_router *r, const struct kvp_request *q,
                      double threshold_tokens)
{
	size_t n = 0, no;
	const uint32_t *order;

	/* expired requests free their capacity first */
	if (r->o.request_expiry_ms != 0)
		kvp_load_expire(r);
	order = kvp_cands_sorted(&r->cd, &no);
	if (order == NULL)
		return 0;
	for (size_t k = 0; k < no; k++) {
		const struct kvp_cand *c = kvp_cands_at_c(&r->cd, order[k]);

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

void
kvp_router_check(const struct kvp_router *r)
{
#ifdef KVP_DEBUG
	kvp_nodes_check(&r->nodes);
	kvp_load_check(r);
	kvp_reqs_check(&r->rq);
	kvp_approx_check(&r->ap);
	if (r->side != NULL)
		kvp_approx_check(r->side);
	kvp_scratch_check(&r->sc);
#else
	(void)r;
#endif
}
