/* SPDX-License-Identifier: MIT */
/*
 * score.c — the cost function, softmax and the PRNG (score.h), and for the
 * router (route_internal.h) the score of one candidate and the pick: the
 * draw, then the pinned candidate, a softmax sample or the lowest logit
 * with its tie-break.
 */
#include "route/score.h"

#include <math.h>
#include <string.h>

#include "route/index.h"
#include "route/route_internal.h"
#include "route/router.h"

/* x / bs, as a product when bs is a power of two (2^-k is exact, and so
 * is scaling by it: no division on the per-candidate path). */
static double
per_block(double x, uint32_t bs)
{
	union {
		uint64_t u;
		double d;
	} inv;

	if (bs == 0 || (bs & (bs - 1)) != 0)
		return x / (double)bs;
	inv.u = (uint64_t)(1023 - __builtin_ctz(bs)) << 52;
	return x * inv.d;
}

double
kvp_score_logit(double w, double credit, uint64_t p, uint64_t isl, uint32_t bs,
                uint64_t d, uint64_t n, double *prefill)
{
	double raw = per_block((double)p + (double)isl, bs);
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
kvp_score_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* ---- one candidate ------------------------------------------------------ */

uint32_t
kvp_score_overlap(const struct kvp_router *r, const struct kvp_cand *c,
                  int tier)
{
	uint32_t o = c->hid[tier] != 0 ? r->sc.scores[c->hid[tier] - 1] : 0;

	if (tier == KVP_TIER_DEVICE && r->side != NULL) {
		uint32_t so = kvp_score_side_overlap(r, c);

		if (so > o)
			o = so;
	}
	return o;
}

uint32_t
kvp_score_side_overlap(const struct kvp_router *r, const struct kvp_cand *c)
{
	int64_t h = kvp_approx_holder(r->side, c->worker_id, c->dp_rank);

	return h >= 0 ? r->sc.side_scores[h] : 0;
}

/* Dynamo's overlap_score_credit_decay: the device credit shrinks by
 * 1 / (1 + decay·excess/request_blocks), excess = (P − P_min)/bs, the
 * candidate's active prefill blocks above the least-loaded eligible
 * candidate's (r->sc.pmin). 1 when decay is off or prefill is not tracked. */
static double
decay_factor(const struct kvp_router *r, const struct kvp_request *q,
             const struct kvp_cand_score *s)
{
	const struct kvp_route_opts *o = &r->o;
	uint32_t bs = o->block_size;
	uint64_t rb = bs ? (q->isl + bs - 1) / bs : 0;
	double excess;

	if (!(o->credit_decay > 0) || o->no_track_prefill || rb == 0)
		return 1.0;
	excess = (double)(s->active_prefill_tokens - r->sc.pmin) / (double)bs;
	return 1.0 / (1.0 + o->credit_decay * (excess / (double)rb));
}

/* C·f·O (f the decay factor), plus the host and disk tiers' extra overlap
 * when tier credit is on; nothing at all when C is 0. */
static double
credit_of(const struct kvp_route_opts *o, const struct kvp_cand_score *s,
          double c)
{
	double credit = c == 0 ? 0 : c * s->credit_factor * (double)s->overlap;
	uint32_t dev = s->overlap, hb = s->host_overlap;
	uint32_t top = dev > hb ? dev : hb;

	if (!o->tier_credit || c == 0)
		return credit;
	if (hb > dev)
		credit += o->host_weight * (double)(hb - dev);
	if (s->disk_overlap > top)
		credit += o->disk_weight * (double)(s->disk_overlap - top);
	return credit;
}

/* The candidate's load: P, D and N (none with no_load). */
static void
load_of(const struct kvp_router *r, uint32_t ci, const struct kvp_request *q,
        struct kvp_cand_score *s)
{
	const struct kvp_cand *c = kvp_cands_at_c(&r->cd, ci);

	if (r->o.no_load)
		return;
	s->active_prefill_tokens = c->active_prefill + c->ext_prefill;
	s->active_blocks = c->active_blocks + c->ext_decode;
	s->new_blocks = r->o.no_assume_reuse || c->active_blocks == 0
	                    ? q->n
	                    : kvp_load_new_blocks(r, ci, r->sc.ids, q->n);
}

/* Dynamo's decode-overlap formula (a decode pool whose requests add no
 * prefill, with credit on): logit = max(0, decode − credit) + the
 * active-request cost; no prefill term. */
static int
decode_formula(const struct kvp_router *r)
{
	return r->o.worker_type == KVP_WORKER_DECODE && r->o.no_track_prefill &&
	       r->sc.dcredit > 0;
}

/* The cost and its intermediates (score.h), after the load and the
 * credit factor. The logit's arithmetic is kvp_score_logit's, then the
 * active-request cost is added when its weight is not 0. */
static void
cost_of(const struct kvp_router *r, const struct kvp_cand *c,
        const struct kvp_request *q, double w, struct kvp_cand_score *s)
{
	const struct kvp_route_opts *o = &r->o;
	double credit = credit_of(o, s, r->sc.dcredit);

	if (!o->score_parts) { /* the logit alone (router.c sets it for
		                  the terms below) */
		s->logit = kvp_score_logit(
		    w, credit, s->active_prefill_tokens, q->isl, o->block_size,
		    s->active_blocks, s->new_blocks, &s->prefill_blocks);
		return;
	}
	s->active_requests = o->no_load ? 0 : c->active_requests;
	s->credit_blocks = credit;
	s->eff_credit = r->sc.dcredit * s->credit_factor;
	s->raw_prefill_blocks = per_block(
	    (double)s->active_prefill_tokens + (double)q->isl, o->block_size);
	s->request_cost = o->request_weight * (double)s->active_requests;
	s->decode_formula = decode_formula(r);
	if (s->decode_formula) {
		double d = (double)s->decode_blocks - credit;

		s->prefill_blocks = s->prefill_cost = 0;
		s->logit = (d > 0 ? d : 0) + s->request_cost;
		return;
	}
	s->logit = kvp_score_logit(w, credit, s->active_prefill_tokens, q->isl,
	                           o->block_size, s->active_blocks,
	                           s->new_blocks, &s->prefill_blocks);
	s->prefill_cost = w * s->prefill_blocks;
	if (o->request_weight != 0)
		s->logit += s->request_cost;
}

void
kvp_score_candidate(const struct kvp_router *r, uint32_t ci,
                    const struct kvp_request *q, double w,
                    struct kvp_cand_score *s)
{
	const struct kvp_cand *c = kvp_cands_at_c(&r->cd, ci);
	const struct kvp_route_opts *o = &r->o;
	uint64_t ob;

	/* every field set one by one (a struct-wide zeroing cost as much as
	 * the rest of the score) */
	s->worker_id = c->worker_id;
	s->dp_rank = c->dp_rank;
	s->overlap = kvp_score_overlap(r, c, KVP_TIER_DEVICE);
	s->host_overlap = kvp_score_overlap(r, c, KVP_TIER_HOST);
	s->disk_overlap = kvp_score_overlap(r, c, KVP_TIER_DISK);
	s->tree_size =
	    c->hid[KVP_TIER_DEVICE] != 0
	        ? kvp_approx_holder_blocks(&r->ap, c->hid[KVP_TIER_DEVICE] - 1)
	        : 0;
	s->active_prefill_tokens = s->active_blocks = s->new_blocks = 0;
	s->prob = 0;
	s->tied = 0;
	load_of(r, ci, q, s);
	s->decode_blocks = s->active_blocks + s->new_blocks;
	ob = (uint64_t)s->overlap * o->block_size;
	s->prefill_tokens = s->active_prefill_tokens + q->isl > ob
	                        ? s->active_prefill_tokens + q->isl - ob
	                        : 0;
	s->credit_factor = decay_factor(r, q, s);
	cost_of(r, c, q, w, s);
	if (o->selection == KVP_SELECT_LMETRIC)
		s->logit = s->prefill_blocks * ((double)s->decode_blocks + 1.0);
}

/* ---- the pick ----------------------------------------------------------- */

/* The next uniform draw in [0,1): --draw's U, or the request's SplitMix64
 * stream, (next >> 11)·2^-53. */
static double
next_u(struct kvp_router *r)
{
	if (r->o.have_draw)
		return r->o.draw;
	return (double)(kvp_score_splitmix64(&r->sc.rng) >> 11) * 0x1.0p-53;
}

/* The request's PRNG state; one draw u when T > 0 or the tie-break is
 * random (reservoir sampling draws once per tied candidate after the
 * first, in pick_lowest). */
static void
draw(struct kvp_router *r, struct kvp_decision *dec)
{
	const struct kvp_route_opts *o = &r->o;

	r->sc.rng = o->seed ^ r->sc.qhash;
	if (!(dec->temperature > 0) && o->tie_break != KVP_TIE_RANDOM)
		return;
	dec->drew = 1;
	dec->u = next_u(r);
}

static void
pick_softmax(struct kvp_router *r, struct kvp_decision *dec)
{
	size_t nc = dec->ncand;
	double cum = 0;

	kvp_score_softmax(r->sc.lg, nc, dec->temperature, r->sc.pr);
	dec->chosen = (long)nc - 1;
	for (size_t i = 0; i < nc; i++)
		r->sc.cs[i].prob = r->sc.pr[i];
	for (size_t i = 0; i < nc; i++) {
		cum += r->sc.pr[i];
		if (cum >= dec->u) {
			dec->chosen = (long)i;
			break;
		}
	}
	dec->tie_break = "softmax";
}

/* Marks the candidates with the lowest logit as tied. */
static void
mark_tied(struct kvp_router *r, struct kvp_decision *dec)
{
	size_t nc = dec->ncand;
	double lo = r->sc.lg[0];

	for (size_t i = 1; i < nc; i++)
		if (r->sc.lg[i] < lo)
			lo = r->sc.lg[i];
	for (size_t i = 0; i < nc; i++)
		if (r->sc.lg[i] == lo) {
			r->sc.cs[i].tied = 1;
			dec->ntied++;
		}
}

/* Dynamo's reservoir sampling over the tied candidates, in sorted order:
 * the k-th tie (k >= 2) replaces the pick when floor(u_k·k) is 0. */
static void
pick_reservoir(struct kvp_router *r, struct kvp_decision *dec)
{
	size_t k = 0;

	for (size_t i = 0; i < dec->ncand; i++) {
		if (!r->sc.cs[i].tied)
			continue;
		if (++k == 1) {
			dec->chosen = (long)i;
			continue;
		}
		if ((size_t)(next_u(r) * (double)k) == 0)
			dec->chosen = (long)i;
	}
}

static void
pick_lowest(struct kvp_router *r, int tie_break, struct kvp_decision *dec)
{
	size_t nc = dec->ncand, k = 0;

	mark_tied(r, dec);
	for (size_t i = 0; i < nc; i++) {
		if (!r->sc.cs[i].tied)
			continue;
		if (dec->chosen < 0 ||
		    (tie_break == KVP_TIE_TREE_SIZE &&
		     r->sc.cs[i].tree_size < r->sc.cs[dec->chosen].tree_size))
			dec->chosen = (long)i;
	}
	if (dec->ntied > 1 && tie_break == KVP_TIE_RANDOM) {
		size_t pick = (size_t)(dec->u * (double)dec->ntied);

		if (pick >= dec->ntied)
			pick = dec->ntied - 1;
		for (size_t i = 0; i < nc; i++)
			if (r->sc.cs[i].tied && k++ == pick)
				dec->chosen = (long)i;
	}
	if (dec->ntied > 1 && tie_break == KVP_TIE_RESERVOIR)
		pick_reservoir(r, dec);
	if (dec->ntied > 1)
		dec->tie_break = tie_break == KVP_TIE_TREE_SIZE   ? "tree-size"
		                 : tie_break == KVP_TIE_RANDOM    ? "random"
		                 : tie_break == KVP_TIE_RESERVOIR ? "reservoir"
		                                                  : "lowest-id";
}

/* How many candidates share the lowest cost. */
static size_t
count_lowest(const struct kvp_router *r, size_t nc)
{
	double lo = r->sc.lg[0];
	size_t n = 0;

	for (size_t i = 1; i < nc; i++)
		if (r->sc.lg[i] < lo)
			lo = r->sc.lg[i];
	for (size_t i = 0; i < nc; i++)
		n += r->sc.lg[i] == lo;
	return n;
}

void
kvp_score_pick(struct kvp_router *r, const struct kvp_request *q,
               struct kvp_decision *dec)
{
	long best = 0;

	draw(r, dec);
	for (size_t i = 1; i < dec->ncand; i++)
		if (r->sc.cs[i].overlap > r->sc.cs[best].overlap)
			best = (long)i;
	dec->max_overlap = best;
	if (q->pinned) {
		dec->chosen = 0;
		dec->tie_break = q->session_pinned ? "session" : "pinned";
		dec->tie_count = 1;
	} else if (dec->temperature > 0) {
		pick_softmax(r, dec);
		dec->tie_count = count_lowest(r, dec->ncand);
	} else {
		pick_lowest(r, r->o.tie_break, dec);
		dec->tie_count = dec->ntied;
	}
}
