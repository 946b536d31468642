/* SPDX-License-Identifier: MIT */
/*
 * simtime.c — simulated time (--prefill-tokens-per-s,
 * --decode-tokens-per-s): requests complete on their own, so the load the
 * router tracks falls without `prefill_done` / `free` records.
 *
 * Per candidate one prefill server, first come first served: a request
 * arriving at t (its timestamp, else the router's clock) starts its
 * prefill at max(t, when the previous prefill ends), takes (isl − cached
 * tokens)/prefill_tps seconds, and its first token comes at the end
 * (TTFT = end − t). Decoding is batched: output_length/decode_tps seconds
 * after the first token the request is done and freed. A rate of 0 makes
 * that phase instantaneous. Events due at or before a request's arrival
 * are applied before it is routed.
 *
 * TTFT percentiles are exact (nearest rank), so each routed request keeps
 * one double.
 */
#include <math.h> /* INFINITY */
#include <stdlib.h>

#include "common/blockhash.h"
#include "common/kmap.h"
#include "common/util.h"
#include "route/route_internal.h"

struct sim_ev {
	double at;
	uint64_t gen;
	uint32_t slot;
	int done; /* 0: prefill ends */
};

struct kvp_simtime {
	double prefill_tps, decode_tps;
	double *busy; /* per cand: when its prefill server is free */
	size_t capbusy;
	struct sim_ev *heap;
	size_t nheap, capheap;
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
	free(s->busy);
	free(s->heap);
	free(s->ttft);
	free(s);
}

/* Earlier first; at the same time a prefill end before a completion, then
 * in routing order (deterministic). */
static int
before(const struct sim_ev *a, const struct sim_ev *b)
{
	if (a->at != b->at)
		return a->at < b->at;
	if (a->done != b->done)
		return a->done < b->done;
	return a->gen < b->gen;
}

static int
heap_push(struct kvp_simtime *s, struct sim_ev e)
{
	size_t i;

	if (kvp_grow(&s->heap, &s->capheap, s->nheap + 1, sizeof(*s->heap)))
		return -1;
	i = s->nheap++;
	while (i > 0 && before(&e, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = e;
	return 0;
}

static struct sim_ev
heap_pop(struct kvp_simtime *s)
{
	struct sim_ev top = s->heap[0], last = s->heap[--s->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && before(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!before(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap > 0)
		s->heap[i] = last;
	return top;
}

void
kvp_simtime_advance(struct kvp_router *r, struct kvp_simtime *s)
{
	while (s->nheap > 0 && s->heap[0].at <= (double)r->now) {
		struct sim_ev e = heap_pop(s);
		struct kvp_active_req *a = &r->reqs[e.slot];

		if (!a->live || a->gen != e.gen)
			continue; /* freed or expired already */
		if (!e.done && !a->prefill_done) {
			r->cands[a->cand].active_prefill -= a->prefill;
			a->prefill_done = 1;
		} else if (e.done) {
			kvp_load_release(r, e.slot);
			s->completed++;
		}
	}
}

int
kvp_simtime_schedule(struct kvp_router *r, struct kvp_simtime *s, uint32_t ci,
                     const struct kvp_request *q,
                     const struct kvp_decision *dec)
{
	uint32_t v =
	    kvp_kmap_get(&r->reqmap, 0, kvp_hash_bytes(q->id, q->id_len, 0));
	const struct kvp_active_req *a;
	uint64_t cached =
	    (uint64_t)dec->cand[dec->chosen].overlap * r->o.block_size;
	uint64_t todo = q->isl > cached ? q->isl - cached : 0;
	double t = (double)(q->has_ts ? q->ts_ms : r->now), start, end, done;
	size_t old = s->capbusy;

	if (v == 0)
		return 0;
	a = &r->reqs[v - 1];
	if (ci >= s->capbusy) {
		if (kvp_grow(&s->busy, &s->capbusy, (size_t)ci + 1,
		             sizeof(*s->busy)) != 0)
			return -1;
		for (size_t i = old; i < s->capbusy; i++)
			s->busy[i] = -INFINITY;
	}
	start = s->busy[ci] > t ? s->busy[ci] : t;
	end =
	    start +
	    (s->prefill_tps > 0 ? (double)todo / s->prefill_tps * 1000.0 : 0.0);
	done = end + (s->decode_tps > 0 && q->has_osl
	                  ? (double)q->osl / s->decode_tps * 1000.0
	                  : 0.0);
	s->busy[ci] = end;
	if (kvp_grow(&s->ttft, &s->capttft, s->nttft + 1, sizeof(*s->ttft)))
		return -1;
	s->ttft[s->nttft++] = end - t;
	if (heap_push(s, (struct sim_ev){end, a->gen, v - 1, 0}) != 0)
		return -1;
	return heap_push(s, (struct sim_ev){done, a->gen, v - 1, 1});
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

	qsort(s->ttft, s->nttft, sizeof(*s->ttft), cmp_double);
	for (size_t i = 0; i < s->nttft; i++)
		sum += s->ttft[i];
	t->ttft_n = s->nttft;
	t->ttft_p50_ms = rank(s->ttft, s->nttft, 50);
	t->ttft_p99_ms = rank(s->ttft, s->nttft, 99);
	t->ttft_mean_ms = s->nttft ? sum / (double)s->nttft : 0.0;
	t->completed = s->completed;
}
