/* SPDX-License-Identifier: MIT */
/*
 * decision.c — route-score decision records for kv-diff and kv-report.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jscan.h"
#include "common/ndjson.h"
#include "common/util.h"
#include "kvpipe.h"
#include "report/decision.h"

#define DEC_DEPTH 64

const char *const kvp_decision_knobs[KVP_DECISION_N_KNOBS] = {
    "overlap_score_credit",         "overlap_score_credit_decay",
    "prefill_load_scale",           "host_cache_hit_weight",
    "disk_cache_hit_weight",        "shared_cache_multiplier",
    "decode_active_request_weight", "router_temperature"};

/* Folds a candidate's (worker_id, dp_rank, overlap) into the
 * fingerprint. */
static void
fp_add(struct kvp_decision_rec *d, uint64_t w, uint64_t dp, uint64_t ov)
{
	uint64_t v[3] = {w, dp, ov};

	d->has_fp = 1;
	for (int i = 0; i < 3; i++)
		d->cand_fp = (d->cand_fp ^ v[i]) * 0x100000001b3ULL +
		             0x9e3779b97f4a7c15ULL;
}

/* Why a scan stopped: the scanner declined, a field had the wrong type
 * (then *field names it), or memory ran out. */
enum { SCAN_OK = 0, SCAN_DECLINE = -1, SCAN_TYPE = -2, SCAN_NOMEM = -3 };

struct scan {
	struct kvp_jscan c;
	struct kvp_decision_parser *p;
	struct kvp_decision_rec *d;
	const char *field; /* the field of a SCAN_TYPE */
	/* the jscan flags of a key or string that decline the line: escapes
	 * on the first pass (json-c decodes them: "decisio\u006e" is
	 * "decision"), none on the second, over json-c's serialization,
	 * which keeps only the escapes it must */
	unsigned decline;
};

void
kvp_decision_parser_init(struct kvp_decision_parser *p, int want_candidates)
{
	memset(p, 0, sizeof *p);
	p->want_candidates = want_candidates;
}

void
kvp_decision_parser_fini(struct kvp_decision_parser *p)
{
	free(p->cand);
	free(p->copy);
	if (p->tok != NULL)
		json_tokener_free(p->tok);
	memset(p, 0, sizeof *p);
}

static int
key_is_(const struct scan *s, const struct kvp_jspan *k, const char *name,
        size_t n)
{
	return k->len == n && memcmp(s->c.s + k->off, name, n) == 0;
}

/* name is a string literal: its length is known at compile time. */
#define key_is(s, k, name) key_is_(s, k, name, sizeof(name) - 1)

static int
type_error(struct scan *s, const char *field)
{
	s->field = field;
	return SCAN_TYPE;
}

static int
get_u64(struct scan *s, const char *field, uint64_t *out)
{
	int neg;

	if (kvp_jscan_int(&s->c, out, &neg) != 0 || (neg && *out != 0))
		return type_error(s, field);
	return SCAN_OK;
}

static int
get_double(struct scan *s, const char *field, double *out)
{
	char buf[64];
	size_t start = s->c.i, n;
	int ch = kvp_jscan_peek(&s->c), neg;
	uint64_t v;
	char *end;

	if (ch != '-' && (ch < '0' || ch > '9'))
		return type_error(s, field);
	/* the common case, an integer below 2^53, without strtod */
	if (kvp_jscan_int(&s->c, &v, &neg) == 0 && v < (1ull << 53) &&
	    (kvp_jscan_peek(&s->c) == ',' || kvp_jscan_peek(&s->c) == '}')) {
		*out = neg ? -(double)v : (double)v;
		return SCAN_OK;
	}
	s->c.i = start;
	if (kvp_jscan_skip(&s->c, 0) != 0)
		return SCAN_DECLINE;
	n = s->c.i - start;
	if (n >= sizeof buf)
		return type_error(s, field);
	memcpy(buf, s->c.s + start, n);
	buf[n] = '\0';
	*out = strtod(buf, &end);
	return end == buf + n ? SCAN_OK : type_error(s, field);
}

static int
get_bool(struct scan *s, const char *field, int *out)
{
	if (kvp_jscan_literal(&s->c, "true") == 0)
		*out = 1;
	else if (kvp_jscan_literal(&s->c, "false") == 0)
		*out = 0;
	else
		return type_error(s, field);
	return SCAN_OK;
}

static int
get_string(struct scan *s, const char *field, struct kvp_decision_span *out)
{
	struct kvp_jspan sp;

	if (kvp_jscan_literal(&s->c, "null") == 0)
		return SCAN_OK;
	if (kvp_jscan_peek(&s->c) != '"')
		return type_error(s, field);
	if (kvp_jscan_string(&s->c, &sp) != 0 || (sp.flags & s->decline))
		return SCAN_DECLINE;
	*out = (struct kvp_decision_span){s->c.s + sp.off, sp.len};
	return SCAN_OK;
}

/* The raw JSON text of any value. */
static int
get_raw(struct scan *s, struct kvp_decision_span *out)
{
	size_t start = s->c.i;

	if (kvp_jscan_skip(&s->c, DEC_DEPTH) != 0)
		return SCAN_DECLINE;
	*out = (struct kvp_decision_span){s->c.s + start, s->c.i - start};
	return SCAN_OK;
}

/* {"worker_id":W,"dp_rank":R,...}; *wid and *dp get the two (dp_rank 0
 * when absent). With blocks != NULL, also "blocks" (max_overlap) or
 * "active_blocks" (a candidate). */
static int
get_worker(struct scan *s, const char *field, uint64_t *wid, uint64_t *dp,
           const char *bkey, uint64_t *blocks, uint64_t *ov)
{
	struct kvp_jspan k;
	size_t n = 0;
	int r, have = 0;

	*dp = 0;
	if (kvp_jscan_obj_begin(&s->c) != 0)
		return type_error(s, field);
	while ((r = kvp_jscan_obj_next(&s->c, &n, &k)) == 1) {
		if (key_is(s, &k, "worker_id")) {
			r = get_u64(s, field, wid);
			have = 1;
		} else if (key_is(s, &k, "dp_rank"))
			r = get_u64(s, field, dp);
		else if (bkey != NULL && key_is_(s, &k, bkey, strlen(bkey)))
			r = get_u64(s, field, blocks);
		else if (ov != NULL && key_is(s, &k, "overlap_blocks"))
			r = get_u64(s, field, ov);
		else
			r = kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : 0;
		if (r != SCAN_OK)
			return r;
	}
	if (r < 0)
		return SCAN_DECLINE;
	return have ? SCAN_OK : type_error(s, field);
}

static int
get_chosen(struct scan *s)
{
	struct kvp_decision_rec *d = s->d;

	if (kvp_jscan_literal(&s->c, "null") == 0) {
		d->chosen = 0;
		return SCAN_OK;
	}
	d->chosen = 1;
	return get_worker(s, "chosen", &d->worker_id, &d->dp_rank, NULL, NULL,
	                  NULL);
}

static int
get_max_overlap(struct scan *s)
{
	uint64_t wid, dp;

	if (kvp_jscan_literal(&s->c, "null") == 0)
		return SCAN_OK;
	s->d->has_max = 1;
	return get_worker(s, "max_overlap", &wid, &dp, "blocks",
	                  &s->d->max_overlap, NULL);
}

/* An array of worker objects: a decision's candidates (with bkey
 * "active_blocks") or a summary's workers (with "routed"). */
static int
get_candidates(struct scan *s, const char *field, const char *bkey)
{
	struct kvp_decision_parser *p = s->p;
	int dec = strcmp(bkey, "active_blocks") == 0; /* not workers */
	size_t n = 0;
	int r;

	if (kvp_jscan_arr_begin(&s->c) != 0)
		return type_error(s, field);
	while ((r = kvp_jscan_arr_next(&s->c, &n)) == 1) {
		struct kvp_decision_cand *c;
		uint64_t ov = 0;

		if (kvp_grow(&p->cand, &p->cand_cap, n, sizeof *p->cand) != 0)
			return SCAN_NOMEM;
		c = &p->cand[n - 1];
		c->active_blocks = 0;
		r = get_worker(s, field, &c->worker_id, &c->dp_rank, bkey,
		               &c->active_blocks, dec ? &ov : NULL);
		if (r != SCAN_OK)
			return r;
		if (dec)
			fp_add(s->d, c->worker_id, c->dp_rank, ov);
	}
	if (r < 0)
		return SCAN_DECLINE;
	if (p->want_candidates || !dec) {
		s->d->cand = p->cand;
		s->d->n_cand = n;
	}
	return SCAN_OK;
}

/* A summary's "simulated" object (route-score's simulated time): its
 * TTFT percentiles; other keys are skipped. */
static int
get_simulated(struct scan *s)
{
	struct kvp_jspan k;
	size_t n = 0;
	int r;

	if (kvp_jscan_obj_begin(&s->c) != 0)
		return type_error(s, "simulated");
	while ((r = kvp_jscan_obj_next(&s->c, &n, &k)) == 1) {
		if (k.flags & s->decline)
			return SCAN_DECLINE;
		if (key_is(s, &k, "ttft_p50_ms"))
			r = get_double(s, "ttft_p50_ms", &s->d->sim_p50);
		else if (key_is(s, &k, "ttft_p99_ms"))
			r = get_double(s, "ttft_p99_ms", &s->d->sim_p99);
		else
			r = kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : 0;
		if (r != SCAN_OK)
			return r;
	}
	if (r < 0)
		return SCAN_DECLINE;
	s->d->has_sim = 1;
	return SCAN_OK;
}

/* A decision's candidates: when they were not asked for, only the
 * fingerprint is wanted, and a list of another shape is skipped. */
static int
member_candidates(struct scan *s)
{
	size_t start = s->c.i;
	int r = get_candidates(s, "candidates", "active_blocks");

	if (r != SCAN_TYPE || s->p->want_candidates)
		return r;
	s->c.i = start;
	s->d->has_fp = 0;
	s->d->cand_fp = 0;
	s->field = NULL;
	return kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : SCAN_OK;
}

/* One member of a decision; unknown keys are skipped. */
static int
get_member(struct scan *s, const struct kvp_jspan *k)
{
	struct kvp_decision_rec *d = s->d;
	int rej = 0, r;

	if (key_is(s, k, "request_id"))
		return get_raw(s, &d->id);
	if (key_is(s, k, "ts_ms"))
		return d->has_ts = 1, get_double(s, "ts_ms", &d->ts_ms);
	if (key_is(s, k, "chosen"))
		return get_chosen(s);
	if (key_is(s, k, "overlap_blocks"))
		return get_u64(s, "overlap_blocks", &d->overlap);
	if (key_is(s, k, "request_blocks"))
		return get_u64(s, "request_blocks", &d->request_blocks);
	if (key_is(s, k, "hashed_blocks"))
		return get_u64(s, "hashed_blocks", &d->hashed_blocks);
	if (key_is(s, k, "blocks_lost"))
		return get_u64(s, "blocks_lost", &d->blocks_lost);
	if (key_is(s, k, "non_max_overlap"))
		return get_bool(s, "non_max_overlap", &d->non_max);
	if (key_is(s, k, "max_overlap"))
		return get_max_overlap(s);
	if (key_is(s, k, "tie_break"))
		return get_string(s, "tie_break", &d->tie_break);
	if (key_is(s, k, "policy"))
		return get_string(s, "policy", &d->policy);
	if (key_is(s, k, "predicted_cached_tokens"))
		return d->has_pred = 1,
		       get_u64(s, "predicted_cached_tokens", &d->pred);
	if (key_is(s, k, "engine_cached_tokens"))
		return d->has_engine = 1,
		       get_u64(s, "engine_cached_tokens", &d->engine);
	if (key_is(s, k, "candidates")) /* the fingerprint, always */
		return member_candidates(s);
	if (key_is(s, k, "overlap_weight"))
		return d->knobs |= 1u << 2,
		       get_double(s, "overlap_weight", &d->knob[2]);
	if (key_is(s, k, "temperature"))
		return d->knobs |= 1u << 7,
		       get_double(s, "temperature", &d->knob[7]);
	if (key_is(s, k, "logit")) {
		if (kvp_jscan_literal(&s->c, "null") == 0)
			return SCAN_OK;
		return d->has_logit = 1, get_double(s, "logit", &d->logit);
	}
	if (key_is(s, k, "ttft_ms")) {
		if (kvp_jscan_literal(&s->c, "null") == 0)
			return SCAN_OK;
		return d->has_ttft = 1, get_double(s, "ttft_ms", &d->ttft_ms);
	}
	if (key_is(s, k, "rejected")) { /* true, or route-score's reason */
		struct kvp_decision_span why = {NULL, 0};

		if (kvp_jscan_peek(&s->c) == '"' ||
		    kvp_jscan_peek(&s->c) == 'n') {
			r = get_string(s, "rejected", &why);
			rej = why.p != NULL;
		} else
			r = get_bool(s, "rejected", &rej);
		d->rejected |= rej;
		return r;
	}
	return kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : SCAN_OK;
}

/* ---- Dynamo's decision traces (kvpipe-records(5)) -------------------------
 * A dynamo.router.decision.v1 object, bare or as the routing_decision of
 * Dynamo's request_end record (dynamo.request.trace.v1), reads as a
 * decision: chosen = selected_worker_id/dp_rank, overlap_blocks and logit
 * the selected candidate's device_overlap_blocks and total_cost_blocks,
 * max_overlap the flagged candidate's device overlap (at least the
 * chosen one's), request_blocks, policy ("default" reads as "dynamo"),
 * candidates with decode_cost_blocks as their active blocks. */

struct tsel {
	int have_sel, have_max, have_cost;
	double sel_dev, sel_cost, max_dev;
};

static uint64_t
blocks_of(double v)
{
	return v > 0 && v < 1.8e19 ? (uint64_t)v : 0;
}

/* One candidate object of a trace. */
static int
trace_cand(struct scan *s, struct tsel *t, size_t n)
{
	struct kvp_decision_parser *p = s->p;
	double dev = 0, cost = 0, dec = 0;
	int sel = 0, max = 0, has_cost = 0, r;
	uint64_t wid = 0, dp = 0;
	struct kvp_jspan k;
	size_t m = 0;

	if (kvp_jscan_obj_begin(&s->c) != 0)
		return type_error(s, "candidates");
	while ((r = kvp_jscan_obj_next(&s->c, &m, &k)) == 1) {
		if (key_is(s, &k, "worker_id"))
			r = get_u64(s, "worker_id", &wid);
		else if (key_is(s, &k, "dp_rank"))
			r = get_u64(s, "dp_rank", &dp);
		else if (key_is(s, &k, "selected"))
			r = get_bool(s, "selected", &sel);
		else if (key_is(s, &k, "max_overlap"))
			r = get_bool(s, "max_overlap", &max);
		else if (key_is(s, &k, "device_overlap_blocks"))
			r = get_double(s, "device_overlap_blocks", &dev);
		else if (key_is(s, &k, "total_cost_blocks")) {
			has_cost = 1;
			r = get_double(s, "total_cost_blocks", &cost);
		} else if (key_is(s, &k, "decode_cost_blocks"))
			r = get_double(s, "decode_cost_blocks", &dec);
		else
			r = kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : 0;
		if (r != SCAN_OK)
			return r;
	}
	if (r < 0)
		return SCAN_DECLINE;
	if (sel)
		*t = (struct tsel){1,   t->have_max, has_cost,
		                   dev, cost,        t->max_dev};
	if (max)
		t->have_max = 1, t->max_dev = dev;
	fp_add(s->d, wid, dp, blocks_of(dev));
	if (!p->want_candidates)
		return SCAN_OK;
	if (kvp_grow(&p->cand, &p->cand_cap, n, sizeof *p->cand) != 0)
		return SCAN_NOMEM;
	p->cand[n - 1] = (struct kvp_decision_cand){wid, dp, blocks_of(dec)};
	return SCAN_OK;
}

static int
trace_cands(struct scan *s, struct tsel *t)
{
	size_t n = 0;
	int r;

	if (kvp_jscan_arr_begin(&s->c) != 0)
		return type_error(s, "candidates");
	while ((r = kvp_jscan_arr_next(&s->c, &n)) == 1)
		if ((r = trace_cand(s, t, n)) != SCAN_OK)
			return r;
	if (r < 0)
		return SCAN_DECLINE;
	if (s->p->want_candidates) {
		s->d->cand = s->p->cand;
		s->d->n_cand = n;
	}
	return SCAN_OK;
}

/* One member of a trace object; unknown keys are skipped. */
static int
trace_member(struct scan *s, const struct kvp_jspan *k, struct tsel *t)
{
	struct kvp_decision_rec *d = s->d;

	if (k->flags & s->decline)
		return SCAN_DECLINE;
	if (key_is(s, k, "request_blocks"))
		return get_u64(s, "request_blocks", &d->request_blocks);
	if (key_is(s, k, "selected_worker_id"))
		return d->chosen = 1,
		       get_u64(s, "selected_worker_id", &d->worker_id);
	if (key_is(s, k, "selected_dp_rank"))
		return get_u64(s, "selected_dp_rank", &d->dp_rank);
	if (key_is(s, k, "policy")) {
		int r = get_string(s, "policy", &d->policy);

		if (d->policy.n == 7 && memcmp(d->policy.p, "default", 7) == 0)
			d->policy = (struct kvp_decision_span){"dynamo", 6};
		return r;
	}
	if (key_is(s, k, "candidates"))
		return trace_cands(s, t);
	for (int i = 0; i < KVP_DECISION_N_KNOBS; i++)
		if (key_is_(s, k, kvp_decision_knobs[i],
		            strlen(kvp_decision_knobs[i]))) {
			d->knobs |= 1u << i;
			return get_double(s, kvp_decision_knobs[i],
			                  &d->knob[i]);
		}
	return kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : SCAN_OK;
}

/* The members of a trace object after its schema, to its end. */
static int
trace_rest(struct scan *s, size_t *n, struct tsel *t)
{
	struct kvp_jspan k;
	int r;

	while ((r = kvp_jscan_obj_next(&s->c, n, &k)) == 1)
		if ((r = trace_member(s, &k, t)) != SCAN_OK)
			return r;
	return r < 0 ? SCAN_DECLINE : SCAN_OK;
}

/* The rest of an object of another schema, skipped. */
static int
trace_rest_skip(struct scan *s, size_t *n)
{
	struct kvp_jspan k;
	int r;

	while ((r = kvp_jscan_obj_next(&s->c, n, &k)) == 1)
		if (kvp_jscan_skip(&s->c, DEC_DEPTH) != 0)
			return SCAN_DECLINE;
	return r < 0 ? SCAN_DECLINE : SCAN_OK;
}

/* A request_end's routing_decision: a whole trace object. */
static int
trace_object(struct scan *s, struct tsel *t)
{
	size_t n = 0;

	if (kvp_jscan_obj_begin(&s->c) != 0)
		return type_error(s, "routing_decision");
	return trace_rest(s, &n, t);
}

/* A request_end record's "request": its id, received time and trace. */
static int
trace_request(struct scan *s, struct tsel *t, int *traced)
{
	struct kvp_decision_rec *d = s->d;
	struct kvp_jspan k;
	size_t n = 0;
	int r;

	if (kvp_jscan_obj_begin(&s->c) != 0)
		return type_error(s, "request");
	while ((r = kvp_jscan_obj_next(&s->c, &n, &k)) == 1) {
		if (k.flags & s->decline)
			return SCAN_DECLINE;
		if (key_is(s, &k, "request_id"))
			r = get_raw(s, &d->id);
		else if (key_is(s, &k, "request_received_ms")) {
			d->has_ts = 1;
			r = get_double(s, "request_received_ms", &d->ts_ms);
		} else if (key_is(s, &k, "routing_decision")) {
			r = SCAN_OK;
			if (kvp_jscan_literal(&s->c, "null") != 0) {
				*traced = 1;
				r = trace_object(s, t);
			}
		} else
			r = kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : 0;
		if (r != SCAN_OK)
			return r;
	}
	return r < 0 ? SCAN_DECLINE : SCAN_OK;
}

/* The members of a request_end record after its schema: a decision when
 * its event is request_end and it carries a routing_decision. */
static int
request_rest(struct scan *s, size_t *n, struct tsel *t, int *kind)
{
	struct kvp_decision_span ev = {NULL, 0};
	struct kvp_jspan k;
	int r, traced = 0;

	while ((r = kvp_jscan_obj_next(&s->c, n, &k)) == 1) {
		if (k.flags & s->decline)
			return SCAN_DECLINE;
		if (key_is(s, &k, "event_type"))
			r = get_string(s, "event_type", &ev);
		else if (key_is(s, &k, "request"))
			r = trace_request(s, t, &traced);
		else
			r = kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : 0;
		if (r != SCAN_OK)
			return r;
	}
	if (r < 0)
		return SCAN_DECLINE;
	*kind = traced && ev.n == 11 && memcmp(ev.p, "request_end", 11) == 0
	            ? KVP_DECISION_DECISION
	            : KVP_DECISION_OTHER;
	return SCAN_OK;
}

/* The decision a trace describes. */
static void
trace_finish(struct kvp_decision_rec *d, const struct tsel *t)
{
	uint64_t max;

	d->overlap = blocks_of(t->sel_dev);
	d->has_logit = t->have_cost;
	d->logit = t->sel_cost;
	max = t->have_max ? blocks_of(t->max_dev) : d->overlap;
	if (max < d->overlap)
		max = d->overlap;
	d->has_max = 1;
	d->max_overlap = max;
	d->non_max = max > d->overlap;
	d->blocks_lost = max - d->overlap;
}

/* A line whose first key is "schema": Dynamo's decision trace or its
 * request trace, to the object's end (*kind set; OTHER for another
 * schema). */
static int
scan_schema(struct scan *s, size_t *n, int *kind)
{
	struct kvp_decision_span v = {NULL, 0};
	struct tsel t = {0};
	int r = get_string(s, "schema", &v);

	*kind = KVP_DECISION_OTHER;
	if (r != SCAN_OK)
		return r;
	if (v.n == 25 && memcmp(v.p, "dynamo.router.decision.v1", 25) == 0) {
		*kind = KVP_DECISION_DECISION;
		r = trace_rest(s, n, &t);
	} else if (v.n == 23 && memcmp(v.p, "dynamo.request.trace.v1", 23) == 0)
		r = request_rest(s, n, &t, kind);
	else
		return trace_rest_skip(s, n);
	if (r == SCAN_OK && *kind == KVP_DECISION_DECISION)
		trace_finish(s->d, &t);
	return r;
}

/* ---- Dynamo's replay rows (kvpipe-records(5)) ----------------------------
 * One row of dynamo.replay --per-request-jsonl (its PerRequestRecord): id
 * request_id (else the row's position: kvp_decision_ordinal_id), ts_ms
 * arrival_time_ms, ttft_ms, reused_input_tokens, input_length,
 * terminal_status ("rejected": a rejection) and the worker: the first
 * routing_history entry of pool "agg" or "prefill" (else the first entry)
 * gives logical_worker_id, dp_rank, selected_overlap_blocks (the overlap),
 * best_available_overlap_blocks (the maximum) and reported_overlap_tokens
 * (the router's predicted cached tokens; reused_input_tokens is then the
 * engine's figure); without one, prefill_worker_idx, else
 * decode_worker_idx (dp rank 0) and no overlap. */

struct rrow {
	int have_route, route_pref, has_reused;
	int has_wid, has_sel, has_best, has_rep, has_pw, has_dw;
	uint64_t wid, dp, sel, best, rep, pw, dw;
};

/* A count that may be null. */
static int
get_opt_u64(struct scan *s, const char *field, int *has, uint64_t *v)
{
	*has = 0;
	if (kvp_jscan_literal(&s->c, "null") == 0)
		return SCAN_OK;
	*has = 1;
	return get_u64(s, field, v);
}

static int
route_member(struct scan *s, const struct kvp_jspan *k, struct rrow *t,
             struct kvp_decision_span *pool)
{
	int has_dp;

	if (k->flags & s->decline)
		return SCAN_DECLINE;
	if (key_is(s, k, "pool"))
		return get_string(s, "pool", pool);
	if (key_is(s, k, "logical_worker_id"))
		return get_opt_u64(s, "logical_worker_id", &t->has_wid,
		                   &t->wid);
	if (key_is(s, k, "dp_rank"))
		return get_opt_u64(s, "dp_rank", &has_dp, &t->dp);
	if (key_is(s, k, "selected_overlap_blocks"))
		return get_opt_u64(s, "selected_overlap_blocks", &t->has_sel,
		                   &t->sel);
	if (key_is(s, k, "best_available_overlap_blocks"))
		return get_opt_u64(s, "best_available_overlap_blocks",
		                   &t->has_best, &t->best);
	if (key_is(s, k, "reported_overlap_tokens"))
		return get_opt_u64(s, "reported_overlap_tokens", &t->has_rep,
		                   &t->rep);
	return kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : SCAN_OK;
}

/* One routing_history entry: kept when it is the first, or the first of
 * pool agg or prefill. */
static int
replay_route(struct scan *s, struct rrow *r)
{
	struct kvp_decision_span pool = {NULL, 0};
	struct rrow t = {0};
	struct kvp_jspan k;
	size_t n = 0;
	int pref, rc;

	if (kvp_jscan_obj_begin(&s->c) != 0)
		return type_error(s, "routing_history");
	while ((rc = kvp_jscan_obj_next(&s->c, &n, &k)) == 1)
		if ((rc = route_member(s, &k, &t, &pool)) != SCAN_OK)
			return rc;
	if (rc < 0)
		return SCAN_DECLINE;
	pref = (pool.n == 3 && memcmp(pool.p, "agg", 3) == 0) ||
	       (pool.n == 7 && memcmp(pool.p, "prefill", 7) == 0);
	if (t.has_wid == 0)
		t.dp = 0;
	if (!r->have_route || (pref && !r->route_pref)) {
		t.has_reused = r->has_reused;
		t.has_pw = r->has_pw, t.pw = r->pw;
		t.has_dw = r->has_dw, t.dw = r->dw;
		*r = t;
		r->have_route = 1;
		r->route_pref = pref;
	}
	return SCAN_OK;
}

static int
replay_routes(struct scan *s, struct rrow *r)
{
	size_t n = 0;
	int rc;

	if (kvp_jscan_literal(&s->c, "null") == 0)
		return SCAN_OK;
	if (kvp_jscan_arr_begin(&s->c) != 0)
		return type_error(s, "routing_history");
	while ((rc = kvp_jscan_arr_next(&s->c, &n)) == 1)
		if ((rc = replay_route(s, r)) != SCAN_OK)
			return rc;
	return rc < 0 ? SCAN_DECLINE : SCAN_OK;
}

/* A double that may be null. */
static int
get_opt_double(struct scan *s, const char *field, int *has, double *v)
{
	*has = 0;
	if (kvp_jscan_literal(&s->c, "null") == 0)
		return SCAN_OK;
	*has = 1;
	return get_double(s, field, v);
}

static int
replay_status(struct scan *s)
{
	struct kvp_decision_span v = {NULL, 0};
	int r = get_string(s, "terminal_status", &v);

	if (v.n == 8 && memcmp(v.p, "rejected", 8) == 0)
		s->d->rejected = 1;
	return r;
}

/* One member of a replay row; unknown keys are skipped. */
static int
replay_member(struct scan *s, const struct kvp_jspan *k, struct rrow *r)
{
	struct kvp_decision_rec *d = s->d;

	if (k->flags & s->decline)
		return SCAN_DECLINE;
	if (key_is(s, k, "request_id"))
		return kvp_jscan_literal(&s->c, "null") == 0
		           ? SCAN_OK
		           : get_raw(s, &d->id);
	if (key_is(s, k, "arrival_time_ms"))
		return get_opt_double(s, "arrival_time_ms", &d->has_ts,
		                      &d->ts_ms);
	if (key_is(s, k, "ttft_ms"))
		return get_opt_double(s, "ttft_ms", &d->has_ttft, &d->ttft_ms);
	if (key_is(s, k, "input_length"))
		return get_u64(s, "input_length", &d->input_tokens);
	if (key_is(s, k, "reused_input_tokens"))
		return r->has_reused = 1,
		       get_u64(s, "reused_input_tokens", &d->reused);
	if (key_is(s, k, "prefill_worker_idx"))
		return get_opt_u64(s, "prefill_worker_idx", &r->has_pw, &r->pw);
	if (key_is(s, k, "decode_worker_idx"))
		return get_opt_u64(s, "decode_worker_idx", &r->has_dw, &r->dw);
	if (key_is(s, k, "terminal_status"))
		return replay_status(s);
	if (key_is(s, k, "routing_history"))
		return replay_routes(s, r);
	return kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : SCAN_OK;
}

/* The decision a replay row describes. */
static void
replay_finish(struct kvp_decision_rec *d, const struct rrow *r, int *kind)
{
	*kind = r->has_reused ? KVP_DECISION_DECISION : KVP_DECISION_OTHER;
	d->replay_row = 1;
	d->id_ordinal = d->id.p == NULL;
	if (r->has_wid || r->has_pw || r->has_dw) {
		d->chosen = 1;
		d->worker_id = r->has_wid ? r->wid : r->has_pw ? r->pw : r->dw;
		d->dp_rank = r->has_wid ? r->dp : 0;
	}
	d->no_overlap = !r->has_sel;
	d->overlap = r->has_sel ? r->sel : 0;
	if (r->has_best) {
		d->has_max = 1;
		d->max_overlap = r->best > d->overlap ? r->best : d->overlap;
		d->blocks_lost = d->max_overlap - d->overlap;
		d->non_max = d->blocks_lost > 0;
	}
	d->has_pred = r->has_rep;
	d->pred = r->rep;
	d->has_engine = r->has_reused;
	d->engine = d->reused;
}

/* The first key of a replay row: serde's order (session_id first; uuid
 * when an older writer had no session), or sorted (admission_count; before
 * it had admission counts, arrival_time_ms). */
static int
row_first_key(const struct scan *s, const struct kvp_jspan *k)
{
	return key_is(s, k, "session_id") || key_is(s, k, "uuid") ||
	       key_is(s, k, "admission_count") ||
	       key_is(s, k, "arrival_time_ms");
}

/* A line whose first key (k) is a replay row's: the row, to the object's
 * end. */
static int
scan_replay_row(struct scan *s, const struct kvp_jspan *k, size_t *n, int *kind)
{
	struct rrow r = {0};
	struct kvp_jspan k2;
	int rc = replay_member(s, k, &r);

	/* obj_next: 1 a member, 0 the end, -1 (SCAN_DECLINE) bad JSON */
	while (rc == SCAN_OK && (rc = kvp_jscan_obj_next(&s->c, n, &k2)) == 1)
		rc = replay_member(s, &k2, &r);
	if (rc != SCAN_OK)
		return rc;
	replay_finish(s->d, &r, kind);
	return SCAN_OK;
}

void
kvp_decision_ordinal_id(struct kvp_decision_rec *d, uint64_t n, char buf[24])
{
	if (!d->id_ordinal)
		return;
	d->id.n = (size_t)snprintf(buf, 24, "%" PRIu64, n);
	d->id.p = buf;
}

void
kvp_decision_hit_terms(const struct kvp_decision_rec *d, uint64_t *num,
                       uint64_t *den)
{
	*num = d->replay_row ? d->reused : d->overlap;
	*den = d->replay_row ? d->input_tokens : d->request_blocks;
}

/* The record kind from "rec" (which route-score writes first). */
static int
get_kind(struct scan *s, int *kind)
{
	struct kvp_decision_span v = {NULL, 0};
	int r = get_string(s, "rec", &v);

	if (r != SCAN_OK)
		return r;
	if (v.n == 8 && memcmp(v.p, "decision", 8) == 0)
		*kind = KVP_DECISION_DECISION;
	else if (v.n == 7 && memcmp(v.p, "summary", 7) == 0)
		*kind = KVP_DECISION_SUMMARY;
	else
		*kind = KVP_DECISION_OTHER;
	return SCAN_OK;
}

static int
scan_line(struct scan *s, const char *line, size_t len)
{
	struct kvp_jspan k;
	size_t n = 0;
	int r, kind = KVP_DECISION_OTHER, seen_rec = 0;

	memset(s->d, 0, sizeof *s->d);
	kvp_jscan_init(&s->c, line, len);
	kvp_jscan_ws(&s->c);
	if (kvp_jscan_obj_begin(&s->c) != 0)
		return SCAN_DECLINE;
	while ((r = kvp_jscan_obj_next(&s->c, &n, &k)) == 1) {
		if (k.flags & s->decline)
			return SCAN_DECLINE;
		if (n == 1 && key_is(s, &k, "schema")) { /* Dynamo's traces */
			if ((r = scan_schema(s, &n, &kind)) != SCAN_OK)
				return r;
			break;
		}
		if (n == 1 && (s->p->replay_rows || row_first_key(s, &k))) {
			if ((r = scan_replay_row(s, &k, &n, &kind)) != SCAN_OK)
				return r;
			break;
		}
		if (key_is(s, &k, "rec")) {
			r = get_kind(s, &kind);
			seen_rec = 1;
		} else if (!seen_rec || kind == KVP_DECISION_DECISION)
			r = get_member(s, &k);
		else if (kind == KVP_DECISION_SUMMARY &&
		         key_is(s, &k, "workers"))
			r = get_candidates(s, "workers", "routed");
		else if (kind == KVP_DECISION_SUMMARY &&
		         key_is(s, &k, "simulated"))
			r = get_simulated(s);
		else
			r = kvp_jscan_skip(&s->c, DEC_DEPTH) ? SCAN_DECLINE : 0;
		if (r != SCAN_OK)
			return r;
	}
	if (r < 0 || kvp_jscan_end(&s->c) != 0)
		return SCAN_DECLINE;
	s->d->kind = kind;
	s->d->rejected |=
	    kind == KVP_DECISION_DECISION && !s->d->chosen && !s->d->replay_row;
	return SCAN_OK;
}

/* The slow path: json-c parses the line (its message names the column of a
 * syntax error), and its plain serialization is scanned again. */
static int
reparse(struct scan *s, const char *line, size_t len, struct kvp_diag *dg)
{
	struct kvp_decision_parser *p = s->p;
	struct json_object *o;
	const char *txt;
	size_t n;
	int r;

	if (p->tok == NULL && (p->tok = json_tokener_new()) == NULL)
		return kvp_diag_set(dg, 0, "out of memory"), KVP_FAIL;
	o = kvp_json_parse_object(p->tok, line, len, dg);
	if (o == NULL)
		return KVP_BAD;
	txt = json_object_to_json_string_ext(
	    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	n = txt != NULL ? strlen(txt) : 0;
	if (txt == NULL || kvp_grow(&p->copy, &p->copy_cap, n + 1, 1) != 0) {
		json_object_put(o);
		return kvp_diag_set(dg, 0, "out of memory"), KVP_FAIL;
	}
	memcpy(p->copy, txt, n + 1);
	json_object_put(o);
	p->fallbacks++;
	s->field = NULL;
	s->decline = 0;
	r = scan_line(s, p->copy, n);
	if (r == SCAN_NOMEM)
		return kvp_diag_set(dg, 0, "out of memory"), KVP_FAIL;
	if (r == SCAN_TYPE)
		return kvp_diag_set(dg, 0,
		                    "decision: \"%s\" has the wrong type",
		                    s->field),
		       KVP_BAD;
	if (r != SCAN_OK)
		return kvp_diag_set(dg, 0, "unsupported JSON in a decision"),
		       KVP_BAD;
	return KVP_OK;
}

int
kvp_decision_parse(struct kvp_decision_parser *p, const char *line, size_t len,
                   struct kvp_decision_rec *d, struct kvp_diag *dg)
{
	struct scan s;
	int r;

	s.p = p;
	s.d = d;
	s.field = NULL;
	s.decline = KVP_JSCAN_ESC;
	r = scan_line(&s, line, len);
	if (r == SCAN_OK)
		return KVP_OK;
	if (r == SCAN_NOMEM)
		return kvp_diag_set(dg, 0, "out of memory"), KVP_FAIL;
	return reparse(&s, line, len, dg);
}
