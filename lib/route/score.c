/* SPDX-License-Identifier: MIT */
/* score.c — see score.h. */
#include "route/score.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/kmap.h"
#include "common/util.h"

struct cand {
	uint64_t worker_id;
	uint32_t dp_rank;
	int live;
	uint64_t active_prefill, active_blocks;
	uint64_t ext_prefill, ext_decode;
	uint64_t routed, active_requests;
};

struct cursor {
	uint64_t last;
	int has;
};

struct req {
	uint64_t idhash;
	uint64_t gen; /* distinguishes reuses of the slot */
	uint32_t cand;
	int live;
	int prefill_done;
	uint64_t prefill;
	uint64_t *seqs;
	size_t n;
};

struct exp_ent { /* request expiry queue */
	uint64_t at;
	uint64_t gen;
	uint32_t slot;
};

struct ttl_ent {
	uint64_t exp;
	uint64_t seq;
	uint32_t holder;
};

struct kvp_router {
	struct kvp_route_opts o;
	struct kvp_index *ix;
	struct kvp_route_stats st;

	struct cand *cands;
	size_t ncands, capcands;
	struct kvp_kmap cmap; /* (rank, worker) → cand + 1 */
	uint32_t *order;      /* live candidates, sorted */
	size_t norder;
	int order_dirty;

	struct cursor *curs;
	size_t ncurs, capcurs;
	struct kvp_kmap curmap; /* (rank, worker) → cursor + 1 */

	struct kvp_kmap load; /* (cand, seq) → refcount */

	struct req *reqs;
	size_t nreqs, capreqs;
	uint32_t *reqfree;
	size_t nreqfree, capreqfree;
	struct kvp_kmap reqmap; /* (0, xxh3(id)) → req + 1 */
	uint64_t unique;        /* --no-assume-reuse hash source */
	uint64_t gen;
	struct exp_ent *eq;
	size_t eqhead, eqtail, eqcap;

	/* approx */
	struct kvp_kmap ttl; /* (holder, seq) → slab + 1 */
	uint64_t *slab;
	size_t nslab, capslab;
	uint32_t *slabfree;
	size_t nslabfree, capslabfree;
	struct ttl_ent *q;
	size_t qhead, qtail, qcap;
	uint64_t now;

	/* scratch */
	uint32_t *scores;
	size_t capscores;
	struct kvp_cand_score *cs;
	size_t capcs;
	double *lg, *pr;
	uint64_t *seqbuf;
	size_t capseq;
};

void
kvp_route_opts_init(struct kvp_route_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->overlap_weight = 1.0;
	o->host_weight = 0.75;
	o->disk_weight = 0.25;
	o->ttl_ms = 120000;
	o->approx_max = (uint64_t)1 << 20;
	o->request_expiry_ms = 3600000;
	o->tie_break = KVP_TIE_LOWEST_ID;
	o->gaps = KVP_GAPS_APPLY;
}

double
kvp_score_logit(double w, double credit, uint64_t p, uint64_t isl, uint32_t bs,
                uint64_t d, uint64_t n, double *prefill)
{
	double raw = ((double)p + (double)isl) / (double)bs;
	double pb = raw - credit;

	if (!(pb > 0))
		pb = 0;
	if (prefill != NULL)
		*prefill = pb;
	return w * pb + (double)d + (double)n;
}

void
kvp_score_softmax(const double *logit, size_t n, double t, double *prob)
{
	double lo, hi, sum = 0;

	if (n == 0)
		return;
	lo = hi = logit[0];
	for (size_t i = 1; i < n; i++) {
		if (logit[i] < lo)
			lo = logit[i];
		if (logit[i] > hi)
			hi = logit[i];
	}
	if (hi == lo) {
		for (size_t i = 0; i < n; i++)
			prob[i] = 1.0 / (double)n;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		prob[i] = exp(-((logit[i] - lo) / (hi - lo)) / t);
		sum += prob[i];
	}
	for (size_t i = 0; i < n; i++)
		prob[i] /= sum;
}

uint64_t
kvp_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct kvp_router *
kvp_router_new(const struct kvp_route_opts *o)
{
	struct kvp_router *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->o = *o;
	r->ix = kvp_index_new();
	if (r->ix == NULL) {
		free(r);
		return NULL;
	}
	kvp_kmap_init(&r->cmap);
	kvp_kmap_init(&r->curmap);
	kvp_kmap_init(&r->load);
	kvp_kmap_init(&r->reqmap);
	kvp_kmap_init(&r->ttl);
	return r;
}

void
kvp_router_free(struct kvp_router *r)
{
	if (r == NULL)
		return;
	kvp_index_free(r->ix);
	free(r->cands);
	free(r->order);
	free(r->curs);
	for (size_t i = 0; i < r->nreqs; i++)
		free(r->reqs[i].seqs);
	free(r->reqs);
	free(r->reqfree);
	free(r->eq);
	free(r->slab);
	free(r->slabfree);
	free(r->q);
	free(r->scores);
	free(r->cs);
	free(r->lg);
	free(r->pr);
	free(r->seqbuf);
	kvp_kmap_fini(&r->cmap);
	kvp_kmap_fini(&r->curmap);
	kvp_kmap_fini(&r->load);
	kvp_kmap_fini(&r->reqmap);
	kvp_kmap_fini(&r->ttl);
	free(r);
}

struct kvp_index *
kvp_router_index(struct kvp_router *r)
{
	return r->ix;
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

/* ---- candidates -------------------------------------------------------- */

static int64_t
cand_find(const struct kvp_router *r, uint64_t w, uint32_t rank)
{
	uint32_t v = kvp_kmap_get(&r->cmap, rank, w);

	return v ? (int64_t)v - 1 : -1;
}

int
kvp_router_add_candidate(struct kvp_router *r, uint64_t w, uint32_t rank)
{
	int64_t c = cand_find(r, w, rank);

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
	memset(&r->cands[r->ncands], 0, sizeof(*r->cands));
	r->cands[r->ncands].worker_id = w;
	r->cands[r->ncands].dp_rank = rank;
	r->cands[r->ncands].live = 1;
	r->ncands++;
	r->order_dirty = 1;
	return 0;
}

static const struct cand *sort_base;

static int
cmp_cand(const void *a, const void *b)
{
	const struct cand *x = &sort_base[*(const uint32_t *)a];
	const struct cand *y = &sort_base[*(const uint32_t *)b];

	if (x->worker_id != y->worker_id)
		return x->worker_id < y->worker_id ? -1 : 1;
	if (x->dp_rank != y->dp_rank)
		return x->dp_rank < y->dp_rank ? -1 : 1;
	return 0;
}

static int
build_order(struct kvp_router *r)
{
	size_t cap = r->norder;

	if (!r->order_dirty)
		return 0;
	free(r->order);
	r->order = malloc((r->ncands + 1) * sizeof(*r->order));
	if (r->order == NULL)
		return -1;
	(void)cap;
	r->norder = 0;
	for (size_t i = 0; i < r->ncands; i++)
		if (r->cands[i].live)
			r->order[r->norder++] = (uint32_t)i;
	sort_base = r->cands;
	qsort(r->order, r->norder, sizeof(*r->order), cmp_cand);
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

int
kvp_router_set_load(struct kvp_router *r, uint64_t w, uint32_t rank,
                    uint64_t prefill_tokens, uint64_t decode_blocks)
{
	int64_t c;

	if (kvp_router_add_candidate(r, w, rank) != 0)
		return -1;
	c = cand_find(r, w, rank);
	r->cands[c].ext_prefill = prefill_tokens;
	r->cands[c].ext_decode = decode_blocks;
	return 0;
}

/* ---- active requests (load) ---------------------------------------------- */

static void
req_release(struct kvp_router *r, uint32_t slot)
{
	struct req *q = &r->reqs[slot];
	struct cand *c = &r->cands[q->cand];

	if (!q->prefill_done)
		c->active_prefill -= q->prefill;
	for (size_t i = 0; i < q->n; i++) {
		uint32_t rc = kvp_kmap_get(&r->load, q->cand, q->seqs[i]);

		if (rc <= 1) {
			kvp_kmap_del(&r->load, q->cand, q->seqs[i]);
			c->active_blocks--;
		} else {
			kvp_kmap_put(&r->load, q->cand, q->seqs[i], rc - 1,
			             NULL);
		}
	}
	c->active_requests--;
	free(q->seqs);
	q->seqs = NULL;
	q->live = 0;
	kvp_kmap_del(&r->reqmap, 0, q->idhash);
	if (kvp_grow(&r->reqfree, &r->capreqfree, r->nreqfree + 1,
	             sizeof(*r->reqfree)) == 0)
		r->reqfree[r->nreqfree++] = slot;
}

static int64_t
req_find(const struct kvp_router *r, const char *id, size_t len)
{
	uint32_t v = kvp_kmap_get(&r->reqmap, 0, kvp_hash_bytes(id, len, 0));

	return v ? (int64_t)v - 1 : -1;
}

int
kvp_router_prefill_done(struct kvp_router *r, const char *id, size_t len,
                        struct kvp_diag *d)
{
	int64_t s = req_find(r, id, len);
	struct req *q;

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
	int64_t s = req_find(r, id, len);

	if (s < 0)
		return kvp_diag_set(d, 0, "free: request not active");
	req_release(r, (uint32_t)s);
	return 0;
}

static int
req_add(struct kvp_router *r, uint32_t c, const char *id, size_t len,
        int has_ts, uint64_t prefill, const uint64_t *seq, size_t n, int *dup)
{
	uint64_t hid = kvp_hash_bytes(id, len, 0);
	int64_t old = req_find(r, id, len);
	uint32_t slot;
	struct req *q;
	struct cand *cd = &r->cands[c];

	*dup = 0;
	if (old >= 0) {
		*dup = 1;
		req_release(r, (uint32_t)old);
	}
	if (r->nreqfree > 0) {
		slot = r->reqfree[--r->nreqfree];
	} else {
		if (kvp_grow(&r->reqs, &r->capreqs, r->nreqs + 1,
		             sizeof(*r->reqs)) != 0)
			return -1;
		slot = (uint32_t)r->nreqs++;
	}
	q = &r->reqs[slot];
	memset(q, 0, sizeof(*q));
	q->seqs = malloc((n ? n : 1) * sizeof(*q->seqs));
	if (q->seqs == NULL ||
	    kvp_kmap_put(&r->reqmap, 0, hid, slot + 1, NULL) != 0) {
		free(q->seqs);
		q->seqs = NULL;
		r->reqfree[r->nreqfree++] = slot;
		return -1;
	}
	q->idhash = hid;
	q->gen = ++r->gen;
	q->cand = c;
	q->live = 1;
	q->prefill = prefill;
	q->n = n;
	for (size_t i = 0; i < n; i++) {
		uint64_t s =
		    r->o.no_assume_reuse ? kvp_splitmix64(&r->unique) : seq[i];
		uint32_t *rc;
		int ins;

		q->seqs[i] = s;
		rc = kvp_kmap_upsert(&r->load, c, s, 1, &ins);
		if (rc == NULL)
			return -1;
		if (ins)
			cd->active_blocks++;
		else
			(*rc)++;
	}
	cd->active_prefill += prefill;
	cd->active_requests++;
	if (r->o.request_expiry_ms != 0 && has_ts) {
		if (r->eqtail == r->eqcap && r->eqhead > 0) {
			memmove(r->eq, r->eq + r->eqhead,
			        (r->eqtail - r->eqhead) * sizeof(*r->eq));
			r->eqtail -= r->eqhead;
			r->eqhead = 0;
		}
		if (kvp_grow(&r->eq, &r->eqcap, r->eqtail + 1,
		             sizeof(*r->eq)) != 0)
			return -1;
		r->eq[r->eqtail++] = (struct exp_ent){
		    r->now + r->o.request_expiry_ms, q->gen, slot};
	}
	return 0;
}

/* Drops active requests routed request_expiry_ms or more before now
 * (Dynamo's stale-request expiry). */
static void
req_expire(struct kvp_router *r)
{
	while (r->eqhead < r->eqtail && r->eq[r->eqhead].at <= r->now) {
		const struct exp_ent *e = &r->eq[r->eqhead++];
		struct req *q = &r->reqs[e->slot];

		if (q->live && q->gen == e->gen) {
			req_release(r, e->slot);
			r->st.requests_expired++;
		}
	}
	if (r->eqhead == r->eqtail)
		r->eqhead = r->eqtail = 0;
}

/* ---- removal of workers
 * ------------------------------------------------------ */

size_t
kvp_router_remove_worker(struct kvp_router *r, uint64_t w)
{
	size_t n = 0;

	for (size_t i = 0; i < r->ncands; i++) {
		struct cand *c = &r->cands[i];

		if (c->worker_id != w || !c->live)
			continue;
		for (int t = 0; t < KVP_TIER_COUNT; t++) {
			int64_t h =
			    kvp_index_holder(r->ix, w, c->dp_rank, t, 0);

			if (h >= 0)
				(void)kvp_index_clear(r->ix, (uint32_t)h);
		}
		for (size_t s = 0; s < r->nreqs; s++)
			if (r->reqs[s].live && r->reqs[s].cand == i)
				req_release(r, (uint32_t)s);
		kvp_kmap_del(&r->curmap, c->dp_rank, w);
		c->live = 0;
		c->ext_prefill = c->ext_decode = 0;
		r->order_dirty = 1;
		n++;
	}
	return n;
}

/* ---- events ------------------------------------------------------------- */

static int
cursor_check(struct kvp_router *r, const struct kvp_event *ev,
             struct kvp_event_result *res)
{
	uint32_t v = kvp_kmap_get(&r->curmap, ev->dp_rank, ev->worker_id);
	struct cursor *cu;

	if (!ev->has_event_id)
		return 0;
	if (v == 0) {
		if (kvp_grow(&r->curs, &r->capcurs, r->ncurs + 1,
		             sizeof(*r->curs)) != 0 ||
		    kvp_kmap_put(&r->curmap, ev->dp_rank, ev->worker_id,
		                 (uint32_t)r->ncurs + 1, NULL) != 0)
			return -1;
		r->curs[r->ncurs].has = 0;
		v = (uint32_t)++r->ncurs;
	}
	cu = &r->curs[v - 1];
	if (cu->has && ev->event_id <= cu->last) {
		res->stale = 1;
		return 0;
	}
	if (cu->has && ev->event_id != cu->last + 1) {
		res->gap = 1;
		res->expected = cu->last + 1;
		if (r->o.gaps != KVP_GAPS_APPLY)
			return 0;
	}
	cu->has = 1;
	cu->last = ev->event_id;
	return 0;
}

int
kvp_router_apply(struct kvp_router *r, const struct kvp_event *ev,
                 struct kvp_event_result *res, struct kvp_diag *d)
{
	int64_t h;
	size_t n;

	memset(res, 0, sizeof(*res));
	r->st.events++;
	if (cursor_check(r, ev, res) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	if (res->stale) {
		r->st.stale++;
		return 0;
	}
	if (res->gap) {
		r->st.gaps++;
		if (r->o.gaps == KVP_GAPS_FAIL)
			return kvp_diag_set(
			    d, 0, "event_id gap: expected %llu, got %llu",
			    (unsigned long long)res->expected,
			    (unsigned long long)ev->event_id);
		if (r->o.gaps == KVP_GAPS_SKIP) {
			r->st.gap_skipped++;
			return 0;
		}
	}
	if (kvp_router_add_candidate(r, ev->worker_id, ev->dp_rank) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	h = kvp_index_holder(r->ix, ev->worker_id, ev->dp_rank, ev->tier, 1);
	if (h < 0)
		return kvp_diag_set(d, 0, "out of memory");
	res->applied = 1;
	switch (ev->kind) {
	case KVP_EV_STORED:
		res->store_status =
		    kvp_index_store(r->ix, (uint32_t)h, ev->has_parent,
		                    ev->parent, ev->ext, ev->local, ev->n, &n);
		switch (res->store_status) {
		case KVP_STORE_NOMEM:
			return kvp_diag_set(d, 0, "out of memory");
		case KVP_STORE_PARENT_NOT_FOUND:
			r->st.parent_not_found++;
			res->applied = 0;
			break;
		case KVP_STORE_SELF_REFERENCE:
			r->st.self_reference++;
			res->applied = 0;
			break;
		case KVP_STORE_DUPLICATE:
			r->st.duplicate_store++;
			break;
		}
		r->st.blocks_stored += n;
		break;
	case KVP_EV_REMOVED:
		r->st.blocks_removed += kvp_index_remove(
		    r->ix, (uint32_t)h, ev->ext, ev->n, &res->unknown);
		r->st.unknown_removals += res->unknown;
		break;
	case KVP_EV_CLEARED: {
		uint32_t v =
		    kvp_kmap_get(&r->curmap, ev->dp_rank, ev->worker_id);

		if (kvp_index_clear(r->ix, (uint32_t)h) < 0)
			return kvp_diag_set(d, 0, "out of memory");
		r->st.clears++;
		/* A clear is a barrier (spec §2.4): the next event id starts
		 * the cursor afresh, as after a worker restart. */
		if (v != 0)
			r->curs[v - 1].has = 0;
	} break;
	}
	if (res->applied)
		r->st.applied++;
	return 0;
}

/* ---- approximate mode
 * --------------------------------------------------------- */

static void
ttl_drop(struct kvp_router *r, uint32_t holder, uint64_t seq)
{
	uint32_t v = kvp_kmap_del(&r->ttl, holder, seq);
	size_t unknown;

	if (v == 0)
		return;
	if (kvp_grow(&r->slabfree, &r->capslabfree, r->nslabfree + 1,
	             sizeof(*r->slabfree)) == 0)
		r->slabfree[r->nslabfree++] = v - 1;
	(void)kvp_index_remove(r->ix, holder, &seq, 1, &unknown);
}

/* Pops queue entries: expired ones (exp <= now), or any while the table
 * is over its cap (then down to 80 %). */
static void
ttl_expire(struct kvp_router *r)
{
	uint64_t target = r->o.approx_max - r->o.approx_max / 5;
	int pruning = r->ttl.n > r->o.approx_max;

	while (r->qhead < r->qtail) {
		struct ttl_ent *e = &r->q[r->qhead];
		uint32_t v;
		int valid;

		if (pruning && r->ttl.n <= target)
			pruning = 0;
		if (!pruning && (r->o.ttl_ms == 0 || e->exp > r->now))
			break;
		v = kvp_kmap_get(&r->ttl, e->holder, e->seq);
		valid = v != 0 && r->slab[v - 1] == e->exp;
		if (valid) {
			ttl_drop(r, e->holder, e->seq);
			if (pruning)
				r->st.approx_pruned++;
			else
				r->st.approx_expired++;
		}
		r->qhead++;
	}
	if (r->qhead == r->qtail)
		r->qhead = r->qtail = 0;
}

static int
ttl_touch(struct kvp_router *r, uint32_t holder, uint64_t seq, uint64_t exp)
{
	uint32_t s, *v;
	int ins;

	if (r->nslabfree > 0) {
		s = r->slabfree[r->nslabfree - 1];
	} else {
		if (kvp_grow(&r->slab, &r->capslab, r->nslab + 1,
		             sizeof(*r->slab)) != 0)
			return -1;
		s = (uint32_t)r->nslab;
	}
	v = kvp_kmap_upsert(&r->ttl, holder, seq, s + 1, &ins);
	if (v == NULL)
		return -1;
	if (ins) {
		if (r->nslabfree > 0)
			r->nslabfree--;
		else
			r->nslab++;
	}
	if (!ins && r->slab[*v - 1] == exp)
		return 0; /* same expiry: its queue entry stands */
	r->slab[*v - 1] = exp;
	if (r->qtail == r->qcap && r->qhead > 0) {
		memmove(r->q, r->q + r->qhead,
		        (r->qtail - r->qhead) * sizeof(*r->q));
		r->qtail -= r->qhead;
		r->qhead = 0;
	}
	if (kvp_grow(&r->q, &r->qcap, r->qtail + 1, sizeof(*r->q)) != 0)
		return -1;
	r->q[r->qtail++] = (struct ttl_ent){exp, seq, holder};
	return 0;
}

static int
approx_record(struct kvp_router *r, const struct cand *c,
              const struct kvp_request *q, const uint64_t *seq)
{
	int64_t h = kvp_index_holder(r->ix, c->worker_id, c->dp_rank,
	                             KVP_TIER_DEVICE, 1);
	uint64_t exp = r->now + r->o.ttl_ms;
	size_t added;
	int st;

	if (h < 0)
		return -1;
	st = kvp_index_store(r->ix, (uint32_t)h, 0, 0, seq, q->local, q->n,
	                     &added);
	if (st == KVP_STORE_NOMEM)
		return -1;
	if (st != KVP_STORE_OK && st != KVP_STORE_DUPLICATE)
		return 0; /* e.g. repeated hashes within the request */
	for (size_t i = 0; i < q->n; i++)
		if (ttl_touch(r, (uint32_t)h, seq[i], exp) != 0)
			return -1;
	ttl_expire(r); /* size pruning */
	return 0;
}

/* ---- routing ---------------------------------------------------------------
 */

static int
allowed(const struct kvp_request *q, uint64_t w)
{
	if (q->allowed == NULL)
		return 1;
	for (size_t i = 0; i < q->n_allowed; i++)
		if (q->allowed[i] == w)
			return 1;
	return 0;
}

static uint32_t
score_of(const struct kvp_router *r, const uint32_t *scores, uint64_t w,
         uint32_t rank, int tier)
{
	int64_t h = kvp_index_holder(r->ix, w, rank, tier, 0);

	return h >= 0 ? scores[h] : 0;
}

int
kvp_router_route(struct kvp_router *r, const struct kvp_request *q,
                 struct kvp_decision *dec, struct kvp_diag *d)
{
	const struct kvp_route_opts *o = &r->o;
	const uint64_t *seq = q->seq;
	size_t nh, nc = 0;
	double w, t, lo = 0;
	uint32_t bs = o->block_size;
	long best;

	memset(dec, 0, sizeof(*dec));
	dec->chosen = dec->max_overlap = -1;
	dec->tie_break = "none";
	dec->isl = q->isl;
	dec->request_blocks = bs ? (q->isl + bs - 1) / bs : 0;
	dec->hashed_blocks = q->n;
	if (q->has_ts && q->ts_ms > r->now)
		r->now = q->ts_ms;
	if (o->approx)
		ttl_expire(r);
	if (o->request_expiry_ms != 0)
		req_expire(r);
	if (q->n == 0)
		dec->warnings |= KVP_WARN_NO_FULL_BLOCK;
	if (seq == NULL) {
		if (kvp_grow(&r->seqbuf, &r->capseq, q->n + 1,
		             sizeof(*r->seqbuf)) != 0)
			return kvp_diag_set(d, 0, "out of memory");
		for (size_t i = 0; i < q->n; i++)
			r->seqbuf[i] =
			    i == 0 ? q->local[0]
			           : kvp_hash_chain(r->seqbuf[i - 1],
			                            q->local[i], KVP_HASH_SEED);
		seq = r->seqbuf;
	}
	if (build_order(r) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	nh = kvp_index_nholders(r->ix);
	if (kvp_grow(&r->scores, &r->capscores, nh + 1, sizeof(*r->scores)) !=
	        0 ||
	    kvp_grow(&r->cs, &r->capcs, r->norder + 1, sizeof(*r->cs)) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	free(r->lg);
	free(r->pr);
	r->lg = malloc((r->norder + 1) * sizeof(double));
	r->pr = malloc((r->norder + 1) * sizeof(double));
	if (r->lg == NULL || r->pr == NULL)
		return kvp_diag_set(d, 0, "out of memory");
	kvp_index_match(r->ix, q->local, q->n, o->legacy, r->scores);

	w = q->has_weight ? q->weight : o->overlap_weight;
	t = q->has_temperature ? q->temperature : o->temperature;
	dec->weight = w;
	dec->temperature = t;
	r->st.requests++;
	r->st.hashed_blocks += q->n;
	r->st.request_blocks += dec->request_blocks;
	if (!q->commit)
		r->st.queries++;

	for (size_t k = 0; k < r->norder; k++) {
		const struct cand *c = &r->cands[r->order[k]];
		struct kvp_cand_score *s = &r->cs[nc];
		double credit;
		uint64_t ob;
		int64_t hd;

		if (!allowed(q, c->worker_id))
			continue;
		if (q->pinned && (c->worker_id != q->pin_worker ||
		                  c->dp_rank != q->pin_rank))
			continue;
		memset(s, 0, sizeof(*s));
		s->worker_id = c->worker_id;
		s->dp_rank = c->dp_rank;
		s->overlap = score_of(r, r->scores, c->worker_id, c->dp_rank,
		                      KVP_TIER_DEVICE);
		s->host_overlap = score_of(r, r->scores, c->worker_id,
		                           c->dp_rank, KVP_TIER_HOST);
		s->disk_overlap = score_of(r, r->scores, c->worker_id,
		                           c->dp_rank, KVP_TIER_DISK);
		hd = kvp_index_holder(r->ix, c->worker_id, c->dp_rank,
		                      KVP_TIER_DEVICE, 0);
		s->tree_size =
		    hd >= 0
		        ? kvp_index_holder_info(r->ix, (uint32_t)hd)->nblocks
		        : 0;
		if (!o->no_load) {
			s->active_prefill_tokens =
			    c->active_prefill + c->ext_prefill;
			s->active_blocks = c->active_blocks + c->ext_decode;
			if (o->no_assume_reuse || c->active_blocks == 0) {
				s->new_blocks = q->n;
			} else {
				/* Held hashes form a prefix of the request's
				 * chain (a request adds all its blocks, and a
				 * chain hash fixes its whole prefix), so
				 * binary-search its end. */
				size_t held = 0, hi = q->n;

				while (held < hi) {
					size_t mid = held + (hi - held) / 2;

					if (kvp_kmap_get(&r->load, r->order[k],
					                 seq[mid]) != 0)
						held = mid + 1;
					else
						hi = mid;
				}
				s->new_blocks = q->n - held;
			}
		}
		s->decode_blocks = s->active_blocks + s->new_blocks;
		credit = w == 0 ? 0 : (double)s->overlap;
		if (o->tier_credit && w != 0) {
			uint32_t dev = s->overlap, hb = s->host_overlap;
			uint32_t top = dev > hb ? dev : hb;

			if (hb > dev)
				credit += o->host_weight * (double)(hb - dev);
			if (s->disk_overlap > top)
				credit += o->disk_weight *
				          (double)(s->disk_overlap - top);
		}
		ob = (uint64_t)s->overlap * bs;
		s->prefill_tokens = s->active_prefill_tokens + q->isl > ob
		                        ? s->active_prefill_tokens + q->isl - ob
		                        : 0;
		s->logit = kvp_score_logit(w, credit, s->active_prefill_tokens,
		                           q->isl, bs, s->active_blocks,
		                           s->new_blocks, &s->prefill_blocks);
		r->lg[nc] = s->logit;
		nc++;
	}
	dec->ncand = nc;
	dec->cand = r->cs;
	if (nc == 0) {
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

	/* The draw: one per request when T > 0 or tie-break random. */
	if (t > 0 || o->tie_break == KVP_TIE_RANDOM) {
		uint64_t st = o->seed ^ kvp_hash_bytes(q->id, q->id_len, 0);

		dec->drew = 1;
		dec->u = o->have_draw
		             ? o->draw
		             : (double)(kvp_splitmix64(&st) >> 11) * 0x1.0p-53;
	}

	best = 0;
	for (size_t i = 1; i < nc; i++) {
		if (r->cs[i].overlap > r->cs[best].overlap)
			best = (long)i;
	}
	dec->max_overlap = best;

	if (q->pinned) {
		dec->chosen = 0;
		dec->tie_break = "pinned";
	} else if (t > 0) {
		double cum = 0;

		kvp_score_softmax(r->lg, nc, t, r->pr);
		dec->chosen = (long)nc - 1;
		for (size_t i = 0; i < nc; i++)
			r->cs[i].prob = r->pr[i];
		for (size_t i = 0; i < nc; i++) {
			cum += r->pr[i];
			if (cum >= dec->u) {
				dec->chosen = (long)i;
				break;
			}
		}
		dec->tie_break = "softmax";
	} else {
		size_t k = 0;

		lo = r->lg[0];
		for (size_t i = 1; i < nc; i++)
			if (r->lg[i] < lo)
				lo = r->lg[i];
		for (size_t i = 0; i < nc; i++)
			if (r->lg[i] == lo) {
				r->cs[i].tied = 1;
				dec->ntied++;
			}
		for (size_t i = 0; i < nc; i++) {
			if (!r->cs[i].tied)
				continue;
			if (dec->chosen < 0) {
				dec->chosen = (long)i;
			} else if (o->tie_break == KVP_TIE_TREE_SIZE &&
			           r->cs[i].tree_size <
			               r->cs[dec->chosen].tree_size) {
				dec->chosen = (long)i;
			}
		}
		if (dec->ntied > 1 && o->tie_break == KVP_TIE_RANDOM) {
			size_t pick = (size_t)(dec->u * (double)dec->ntied);

			if (pick >= dec->ntied)
				pick = dec->ntied - 1;
			for (size_t i = 0; i < nc; i++)
				if (r->cs[i].tied && k++ == pick)
					dec->chosen = (long)i;
		}
		if (dec->ntied > 1)
			dec->tie_break =
			    o->tie_break == KVP_TIE_TREE_SIZE ? "tree-size"
			    : o->tie_break == KVP_TIE_RANDOM  ? "random"
			                                      : "lowest-id";
	}

	{
		const struct kvp_cand_score *ch = &r->cs[dec->chosen];
		const struct kvp_cand_score *mx = &r->cs[dec->max_overlap];

		if (mx->overlap == 0 && q->n > 0)
			dec->warnings |= KVP_WARN_NO_OVERLAP;
		if (!q->commit)
			return 0;
		r->st.routed++;
		r->st.hit_blocks += ch->overlap;
		r->st.reachable_hit_blocks += mx->overlap;
		if (ch->overlap < mx->overlap) {
			r->st.non_max_overlap++;
			r->st.blocks_lost += mx->overlap - ch->overlap;
		}
	}
	{
		uint32_t ci =
		    (uint32_t)cand_find(r, r->cs[dec->chosen].worker_id,
		                        r->cs[dec->chosen].dp_rank);
		const struct kvp_cand_score *ch = &r->cs[dec->chosen];
		uint64_t ob = (uint64_t)ch->overlap * bs;
		uint64_t pf = o->no_track_prefill ? 0
		              : q->isl > ob       ? q->isl - ob
		                                  : 0;
		int dup;

		r->cands[ci].routed++;
		if (req_add(r, ci, q->id, q->id_len, q->has_ts, pf, seq, q->n,
		            &dup) != 0)
			return kvp_diag_set(d, 0, "out of memory");
		if (dup)
			dec->warnings |= KVP_WARN_DUPLICATE_REQUEST;
		if (o->approx && q->n > 0 &&
		    approx_record(r, &r->cands[ci], q, seq) != 0)
			return kvp_diag_set(d, 0, "out of memory");
	}
	return 0;
}

size_t
kvp_router_totals(struct kvp_router *r, struct kvp_cand_total *out, size_t max)
{
	size_t n = 0;

	if (build_order(r) != 0)
		return 0;
	for (size_t k = 0; k < r->norder && n < max; k++) {
		const struct cand *c = &r->cands[r->order[k]];
		int64_t h = kvp_index_holder(r->ix, c->worker_id, c->dp_rank,
		                             KVP_TIER_DEVICE, 0);

		out[n].worker_id = c->worker_id;
		out[n].dp_rank = c->dp_rank;
		out[n].routed = c->routed;
		out[n].tree_size =
		    h >= 0 ? kvp_index_holder_info(r->ix, (uint32_t)h)->nblocks
		           : 0;
		out[n].active_requests = c->active_requests;
		n++;
	}
	return n;
}
