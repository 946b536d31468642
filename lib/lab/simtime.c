/* SPDX-License-Identifier: MIT */
/*
 * simtime.c — simulated time (--prefill-tokens-per-s,
 * --decode-tokens-per-s): requests complete on their own, so the load the
 * router tracks falls without `prefill_done` / `free` records.
 *
 * Per worker, prefill is one server, first come first served: a request
 * arriving at t (its timestamp, else the router's clock) starts its
 * prefill at max(t, when the previous prefill ends) and takes
 * (isl − cached tokens) / prefill rate; its first token comes at the end
 * (TTFT = end − t). Decoding is processor sharing: the worker decodes
 * `decode rate` tokens/s in total, split equally among its requests in
 * decode, and a request is done (and freed) once it has its
 * output_length tokens. A rate of 0 (or no output_length) makes that
 * phase instantaneous. Events due at or before a request's arrival are
 * applied before it is routed; at equal times a prefill end comes first.
 *
 * Processor sharing runs on a per-worker virtual clock V (tokens each
 * decoding request has received): dV/dt = rate / k with k requests in
 * decode, so a request entering at V0 finishes at V0 + output_length,
 * whatever happens meanwhile; finishes are popped in V order.
 *
 * A request freed otherwise (a `free` record, expiry) keeps its share
 * until its finish comes up.
 *
 * TTFT percentiles are exact (nearest rank), so each routed request keeps
 * one double.
 */
#include <math.h> /* INFINITY */
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/heap.h"
#include "common/kmap.h"
#include "common/util.h"
#include "lab/lab_internal.h"
#include "route/route_view.h"

struct sim_ev {
	double at; /* prefill end (ms), or decode finish (V, tokens) */
	double osl;
	uint64_t gen;
	uint32_t slot, cand;
};

struct sim_heap {
	struct sim_ev *v;
	size_t n, cap;
};

struct sim_w {
	double busy;    /* when its prefill server is free (ms) */
	double vt, t;   /* virtual clock V at time t (ms) */
	uint32_t k;     /* requests in decode */
	size_t pending; /* prefills not ended yet */
	struct sim_heap dec;
};

struct kvp_simtime {
	double prefill_tps, decode_tps;
	struct sim_w *w; /* per cand */
	size_t capw;
	struct sim_heap pre; /* prefill ends */
	double *ttft;
	size_t nttft, capttft;
	uint64_t completed;
};

struct kvp_simtime *
kvp_simtime_new(double prefill_tps, double decode_tps)
{
	struct kvp_simtime *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->prefill_tps = prefill_tps;
	s->decode_tps = decode_tps;
	return s;
}

void
kvp_simtime_free(struct kvp_simtime *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->capw; i++)
		free(s->w[i].dec.v);
	free(s->w);
	free(s->pre.v);
	free(s->ttft);
	free(s);
}

/* Earlier first, then in routing order (deterministic). */
static int
before(const struct sim_ev *a, const struct sim_ev *b)
{
	if (a->at != b->at)
		return a->at < b->at;
	return a->gen < b->gen;
}

KVP_HEAP_DEFINE(heap, sim_heap, struct sim_ev, before)

/* When worker w's next decode finishes (ms), or INFINITY. */
static double
decode_next(const struct kvp_simtime *s, const struct sim_w *w)
{
	if (w->dec.n == 0)
		return INFINITY;
	return w->t + (w->dec.v[0].at - w->vt) * w->k / s->decode_tps * 1000.0;
}

/* Moves worker w's virtual clock to time t. */
static void
decode_to(const struct kvp_simtime *s, struct sim_w *w, double t)
{
	if (w->k > 0)
		w->vt += (t - w->t) * s->decode_tps / 1000.0 / w->k;
	w->t = t;
}

static void
finish(struct kvp_router *r, struct kvp_simtime *s, const struct sim_ev *e)
{
	if (kvp_view_req_live(r, e->slot, e->gen)) {
		kvp_view_req_release(r, e->slot);
		s->completed++;
	}
}

/* A prefill ends at e->at: the first token; then decode, or done. */
static int
prefill_end(struct kvp_router *r, struct kvp_simtime *s, const struct sim_ev *e)
{
	struct sim_w *w;
	struct sim_ev d = *e;

	s->w[e->cand].pending--;
	if (!kvp_view_req_live(r, e->slot, e->gen))
		return 0; /* freed or expired already */
	kvp_view_req_prefilled(r, e->slot);
	if (!(s->decode_tps > 0) || !(e->osl > 0)) {
		finish(r, s, e);
		return 0;
	}
	w = &s->w[e->cand];
	decode_to(s, w, e->at);
	d.at = w->vt + e->osl;
	w->k++;
	return heap_push(&w->dec, d);
}

void
kvp_simtime_advance(struct kvp_router *r, struct kvp_simtime *s)
{
	double now = (double)kvp_view_now(r);

	for (;;) {
		double tp = s->pre.n ? s->pre.v[0].at : INFINITY, td = INFINITY;
		size_t wd = 0;

		for (size_t i = 0; i < s->capw; i++) {
			double t = decode_next(s, &s->w[i]);

			if (t < td) {
				td = t;
				wd = i;
			}
		}
		if (tp <= td && tp <= now) {
			struct sim_ev e = heap_pop(&s->pre);

			(void)prefill_end(r, s, &e); /* memory: see schedule */
		} else if (td < tp && td <= now) {
			struct sim_w *w = &s->w[wd];
			struct sim_ev e = heap_pop(&w->dec);

			decode_to(s, w, td);
			w->vt = e.at; /* exact, whatever the rounding */
			w->k--;
			finish(r, s, &e);
		} else {
			break;
		}
	}
}

static int
workers_for(struct kvp_simtime *s, uint32_t ci)
{
	size_t old = s->capw;

	if (ci < s->capw)
		return 0;
	if (kvp_grow(&s->w, &s->capw, (size_t)ci + 1, sizeof(*s->w)) != 0)
		return -1;
	memset(s->w + old, 0, (s->capw - old) * sizeof(*s->w));
	for (size_t i = old; i < s->capw; i++)
		s->w[i].busy = -INFINITY;
	return 0;
}

int
kvp_simtime_schedule(struct kvp_router *r, struct kvp_simtime *s, uint32_t ci,
                     const struct kvp_request *q,
                     const struct kvp_decision *dec)
{
	uint32_t slot;
	uint64_t gen;
	uint64_t cached =
	    (uint64_t)dec->cand[dec->chosen].overlap * kvp_router_block_size(r);
	uint64_t todo = q->isl > cached ? q->isl - cached : 0;
	double t = (double)(q->has_ts ? q->ts_ms : kvp_view_now(r)), start, end;
	struct sim_w *w;

	/* room in the decode heap for every pending prefill, so that
	 * prefill_end (called where nothing can fail) never allocates */
	if (workers_for(s, ci) != 0 ||
	    kvp_grow(&s->w[ci].dec.v, &s->w[ci].dec.cap,
	             s->w[ci].dec.n + s->w[ci].pending + 1,
	             sizeof(struct sim_ev)) != 0 ||
	    kvp_grow(&s->ttft, &s->capttft, s->nttft + 1, sizeof(*s->ttft)))
		return -1;
	kvp_view_added(r, &slot, &gen); /* the request just committed */
	w = &s->w[ci];
	start = w->busy > t ? w->busy : t;
	end =
	    start +
	    (s->prefill_tps > 0 ? (double)todo / s->prefill_tps * 1000.0 : 0.0);
	w->busy = end;
	w->pending++;
	s->ttft[s->nttft++] = end - t;
	return heap_push(&s->pre,
	                 (struct sim_ev){end, q->has_osl ? (double)q->osl : 0,
	                                 gen, slot, ci});
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest rank: the ceil(pct·n/100)-th smallest. */
static double
rank(const double *v, size_t n, size_t pct)
{
	size_t k = (pct * n + 99) / 100;

	return n == 0 ? 0.0 : v[k > 0 ? k - 1 : 0];
}

void
kvp_simtime_totals(struct kvp_simtime *s, struct kvp_lab_totals *t)
{
	double sum = 0;

	if (s->nttft > 0) /* ttft is NULL before the first sample */
		qsort(s->ttft, s->nttft, sizeof(*s->ttft), cmp_double);
	for (size_t i = 0; i < s->nttft; i++)
		sum += s->ttft[i];
	t->ttft_n = s->nttft;
	t->ttft_p50_ms = rank(s->ttft, s->nttft, 50);
	t->ttft_p99_ms = rank(s->ttft, s->nttft, 99);
	t->ttft_mean_ms = s->nttft ? sum / (double)s->nttft : 0.0;
	t->completed = s->completed;
}
