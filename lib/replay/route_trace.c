/* SPDX-License-Identifier: MIT */
/*
 * route_trace.c — Dynamo's dynamo.router.decision.v1 traces, the score
 * intermediates of --score-parts and the cache-reuse funnel. See
 * route_trace.h.
 */
#include "replay/route_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "common/blockhash.h"
#include "common/jsonw.h"
#include "lab/policy.h"
#include "replay/route_input.h"
#include "route/router.h"

/* ---- Rust's f64 Display ------------------------------------------------- */

/* 5^0 .. 5^27 (5^27 < 2^64). */
static const uint64_t pow5[28] = {
    1ULL,
    5ULL,
    25ULL,
    125ULL,
    625ULL,
    3125ULL,
    15625ULL,
    78125ULL,
    390625ULL,
    1953125ULL,
    9765625ULL,
    48828125ULL,
    244140625ULL,
    1220703125ULL,
    6103515625ULL,
    30517578125ULL,
    152587890625ULL,
    762939453125ULL,
    3814697265625ULL,
    19073486328125ULL,
    95367431640625ULL,
    476837158203125ULL,
    2384185791015625ULL,
    11920928955078125ULL,
    59604644775390625ULL,
    298023223876953125ULL,
    1490116119384765625ULL,
    7450580596923828125ULL,
};

/* Exact dyadic v > 0 (v = d / 10^m, d odd: no trailing zero) of at most
 * 15 significant digits: every decimal of 15 digits names its own
 * double, so none shorter reads back as v and the exact expansion is the
 * shortest. Its digits (the count returned; 0: not such a value) and
 * *e10, the decimal exponent of the first. */
static int
dyadic(double v, char dig[24], int *e10)
{
	uint64_t bits, mant, d;
	int ex, m, len;

	memcpy(&bits, &v, sizeof(bits));
	ex = (int)((bits >> 52) & 0x7ff);
	if (ex == 0 || ex == 0x7ff)
		return 0;
	mant = (bits & ((1ULL << 52) - 1)) | (1ULL << 52);
	m = 1075 - ex - __builtin_ctzll(mant); /* v = odd / 2^m */
	if (m <= 0 || m > 27)
		return 0;
	mant >>= __builtin_ctzll(mant);
	if (mant > UINT64_MAX / pow5[m])
		return 0;
	d = mant * pow5[m];
	len = (int)kvp_u64_dec(dig, d);
	if (len > 15)
		return 0;
	*e10 = len - 1 - m;
	return len;
}

/* The shortest decimal digits of finite v > 0 that read back as v: into
 * dig (no leading or trailing zeros), the count returned, *e10 the
 * decimal exponent of the first digit. */
static int
shortest(double v, char dig[24], int *e10)
{
	char b[40];
	int n = dyadic(v, dig, e10);

	if (n > 0)
		return n;
	for (int p = 0; p < 17; p++) {
		char *end;

		snprintf(b, sizeof(b), "%.*e", p, v);
		if (strtod(b, &end) == v)
			break;
	}
	for (const char *s = b; *s != 'e'; s++)
		if (*s != '.')
			dig[n++] = *s;
	*e10 = (int)strtol(strchr(b, 'e') + 1, NULL, 10);
	while (n > 1 && dig[n - 1] == '0')
		n--;
	return n;
}

/* The digits dig[0, len) with first-digit exponent kk − 1, laid out as
 * ryu's pretty printer does. */
static size_t
layout(char *b, const char *dig, int len, int kk)
{
	size_t n = 0;

	if (kk >= len && kk <= 16) { /* 1234e7: 12340000000.0 */
		memcpy(b, dig, (size_t)len);
		n = (size_t)len;
		for (int i = len; i < kk; i++)
			b[n++] = '0';
		memcpy(b + n, ".0", 2);
		return n + 2;
	}
	if (kk > 0 && kk <= 16) { /* 1234e-2: 12.34 */
		memcpy(b, dig, (size_t)kk);
		b[kk] = '.';
		memcpy(b + kk + 1, dig + kk, (size_t)(len - kk));
		return (size_t)len + 1;
	}
	if (kk > -5 && kk <= 0) { /* 1234e-6: 0.001234 */
		b[n++] = '0';
		b[n++] = '.';
		for (int i = kk; i < 0; i++)
			b[n++] = '0';
		memcpy(b + n, dig, (size_t)len);
		return n + (size_t)len;
	}
	b[n++] = dig[0]; /* 1e30, 1.234e33 */
	if (len > 1) {
		b[n++] = '.';
		memcpy(b + n, dig + 1, (size_t)(len - 1));
		n += (size_t)(len - 1);
	}
	return n + (size_t)snprintf(b + n, 16, "e%d", kk - 1);
}

size_t
kvp_trace_format_f64(char b[40], double v)
{
	char dig[24];
	int e10, len;
	size_t n = 0;

	if (v < 0 || (v == 0 && signbit(v))) {
		b[n++] = '-';
		v = -v;
	}
	if (v < 10 && v == (double)(int)v) { /* 0.0 .. 9.0 */
		b[n] = (char)('0' + (int)v);
		memcpy(b + n + 1, ".0", 2);
		return n + 3;
	}
	if (v < 1e16 && v == (double)(uint64_t)v) { /* integral: 12.0 */
		n += kvp_u64_dec(b + n, (uint64_t)v);
		memcpy(b + n, ".0", 2);
		return n + 2;
	}
	len = shortest(v, dig, &e10);
	return n + layout(b + n, dig, len, e10 + 1);
}

/* A float member value (after its key). */
static void
f64(struct kvp_jw *w, double v)
{
	char b[40];

	if (!isfinite(v)) { /* serde_json writes a non-finite float as null */
		kvp_jw_null(w);
		return;
	}
	kvp_jw_raw(w, b, kvp_trace_format_f64(b, v));
	w->after_key = 0;
}
#define next_f64(w, name, v) (kvp_jw_next_key((w), name), f64((w), (v)))

/* ---- the candidates' quantities ------------------------------------------ */

/* Host-tier blocks beyond the device prefix; disk beyond both. */
static uint32_t
host_beyond(const struct kvp_cand_score *s)
{
	return s->host_overlap > s->overlap ? s->host_overlap - s->overlap : 0;
}

static uint32_t
disk_beyond(const struct kvp_cand_score *s)
{
	uint32_t top =
	    s->overlap > s->host_overlap ? s->overlap : s->host_overlap;

	return s->disk_overlap > top ? s->disk_overlap - top : 0;
}

/* Device + host beyond it + disk beyond both: the longest of the three
 * prefixes. */
static uint64_t
raw_cached_tokens(const struct kvp_cand_score *s, uint32_t bs)
{
	uint32_t m =
	    s->overlap > s->host_overlap ? s->overlap : s->host_overlap;

	return (uint64_t)(m > s->disk_overlap ? m : s->disk_overlap) * bs;
}

/* The tier weights the cost applied (0 without tier credit). */
static double
host_w(const struct kvp_route_opts *ro)
{
	return ro->tier_credit ? ro->host_weight : 0.0;
}

static double
disk_w(const struct kvp_route_opts *ro)
{
	return ro->tier_credit ? ro->disk_weight : 0.0;
}

/* Dynamo's effective overlap: the device blocks and the tiers beyond
 * them at the weights the cost applied. */
static double
effective_overlap(const struct kvp_route_opts *ro,
                  const struct kvp_cand_score *s)
{
	double e = (double)s->overlap;

	if (ro->tier_credit)
		e += ro->host_weight * (double)host_beyond(s) +
		     ro->disk_weight * (double)disk_beyond(s);
	return e;
}

static int
is_two_tier(const struct kvp_decision *dc)
{
	return dc->policy != NULL &&
	       strcmp(dc->policy, "dynamo-two-tier-cost-fn") == 0;
}

/* The overlap the deciding policy ranked on. */
static double
policy_overlap(const struct kvp_trace_ctx *t, const struct kvp_decision *dc,
               const struct kvp_cand_score *s)
{
	return is_two_tier(dc) ? kvp_policy_twotier_overlap(t->pol, s)
	                       : effective_overlap(t->ro, s);
}

/* Dynamo's max-overlap candidate: the chosen one unless another ranks
 * strictly higher, then the last of the highest (Rust's max_by) in the
 * order Dynamo sorts a trace's candidates, (worker_id, dp_rank): the
 * router's (kvp_cands_sorted()). */
static long
trace_max_overlap(const struct kvp_trace_ctx *t, const struct kvp_decision *dc)
{
	double sel = policy_overlap(t, dc, &dc->cand[dc->chosen]);
	long best = 0;

	for (size_t i = 1; i < dc->ncand; i++)
		if (policy_overlap(t, dc, &dc->cand[i]) >=
		    policy_overlap(t, dc, &dc->cand[best]))
			best = (long)i;
	return policy_overlap(t, dc, &dc->cand[best]) > sel ? best : dc->chosen;
}

void
kvp_trace_score_parts(struct kvp_jw *w, const struct kvp_trace_ctx *t,
                      const struct kvp_cand_score *s)
{
	kvp_jw_next(w, "active_requests", u64, s->active_requests);
	next_f64(w, "effective_overlap_blocks", effective_overlap(t->ro, s));
	kvp_jw_next(w, "host_beyond_device_blocks", u64, host_beyond(s));
	kvp_jw_next(w, "disk_beyond_device_blocks", u64, disk_beyond(s));
	next_f64(w, "raw_prefill_blocks", s->raw_prefill_blocks);
	next_f64(w, "overlap_credit_decay", s->credit_factor);
	next_f64(w, "effective_overlap_score_credit", s->eff_credit);
	next_f64(w, "overlap_credit_blocks", s->credit_blocks);
	next_f64(w, "adjusted_prefill_blocks", s->prefill_blocks);
	next_f64(w, "prefill_cost_blocks", s->prefill_cost);
	next_f64(w, "decode_cost_blocks", (double)s->decode_blocks);
	next_f64(w, "active_request_cost_blocks", s->request_cost);
	kvp_jw_next(w, "decode_overlap_formula", bool, s->decode_formula);
	kvp_jw_next(w, "raw_cached_tokens", u64,
	            raw_cached_tokens(s, t->ro->block_size));
}

/* ---- the candidates, rendered into the record buffer ---------------------
 * A literal, a u64, a float or a bool appended at p (advanced). */
#define LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) += sizeof(s) - 1)

static char *
put_u64(char *p, uint64_t v)
{
	if (v < 10) {
		*p = (char)('0' + v);
		return p + 1;
	}
	return p + kvp_u64_dec(p, v);
}

/* p has 40 bytes of room. */
static char *
put_f64(char *p, double v)
{
	if (!isfinite(v)) { /* serde_json writes a non-finite float as null */
		LIT(p, "null");
		return p;
	}
	return p + kvp_trace_format_f64(p, v);
}

static char *
put_bool(char *p, int v)
{
	if (v)
		LIT(p, "true");
	else
		LIT(p, "false");
	return p;
}

/* Room for one candidate: its literals (about 620 bytes) and 24 values
 * of at most 40 bytes. */
#define CAND_ROOM 1700

/* One candidate of the built-in cost (Dynamo's default_decision_trace)
 * or of the two-tier policy (its costs 0, its overlap ranking). */
static char *
trace_candidate(char *p, const struct kvp_trace_ctx *t,
                const struct kvp_decision *dc, size_t i, long mx)
{
	const struct kvp_cand_score *s = &dc->cand[i];
	int tt = is_two_tier(dc);

	LIT(p, "{\"worker_id\":");
	p = put_u64(p, s->worker_id);
	LIT(p, ",\"dp_rank\":");
	p = put_u64(p, s->dp_rank);
	LIT(p, ",\"eligible\":true,\"selected\":");
	p = put_bool(p, (long)i == dc->chosen);
	LIT(p, ",\"max_overlap\":");
	p = put_bool(p, (long)i == mx);
	LIT(p, ",\"total_cost_blocks\":");
	p = put_f64(p, tt ? 0.0 : s->logit);
	LIT(p, ",\"effective_overlap_blocks\":");
	p = put_f64(p, effective_overlap(t->ro, s));
	LIT(p, ",\"device_overlap_blocks\":");
	p = put_f64(p, (double)s->overlap);
	LIT(p, ",\"host_overlap_blocks\":");
	p = put_f64(p, (double)host_beyond(s));
	LIT(p, ",\"disk_overlap_blocks\":");
	p = put_f64(p, (double)disk_beyond(s));
	LIT(p, ",\"shared_beyond_device_blocks\":0,\"raw_prefill_blocks\":");
	p = put_f64(p, tt ? 0.0 : s->raw_prefill_blocks);
	LIT(p, ",\"active_prefill_tokens\":");
	p = put_u64(p, s->active_prefill_tokens);
	LIT(p, ",\"prefill_cost_blocks\":");
	p = put_f64(p, tt ? 0.0 : s->prefill_cost);
	LIT(p, ",\"decode_cost_blocks\":");
	p = put_f64(p, (double)s->decode_blocks);
	LIT(p, ",\"active_requests\":");
	p = put_u64(p, s->active_requests);
	LIT(p, ",\"active_request_cost_blocks\":");
	p = put_f64(p, tt ? 0.0 : s->request_cost);
	LIT(p, ",\"overlap_credit_blocks\":");
	p = put_f64(p, tt ? 0.0 : s->credit_blocks);
	LIT(p, ",\"overlap_credit_decay\":");
	p = put_f64(p, tt ? 1.0 : s->credit_factor);
	LIT(p, ",\"effective_overlap_score_credit\":");
	p = put_f64(p, tt ? 0.0 : s->eff_credit);
	LIT(p, ",\"adjusted_prefill_blocks\":");
	p = put_f64(p, tt ? 0.0 : s->prefill_blocks);
	LIT(p, ",\"base_score_blocks\":");
	p = put_f64(p, tt ? 0.0 : s->logit);
	LIT(p, ",\"decode_overlap_formula\":");
	p = put_bool(p, !tt && s->decode_formula);
	LIT(p, ",\"raw_cached_tokens\":");
	p = put_u64(p, raw_cached_tokens(s, t->ro->block_size));
	if (tt) {
		LIT(p, ",\"two_tier_overlap_blocks\":");
		p = put_f64(p, kvp_policy_twotier_overlap(t->pol, s));
	}
	*p++ = '}';
	return p;
}

/* The candidates array, after its key. */
static void
trace_candidates(struct kvp_jw *w, const struct kvp_trace_ctx *t,
                 const struct kvp_decision *dc, long mx)
{
	kvp_jw_raw(w, "[", 1);
	for (size_t i = 0; i < dc->ncand; i++) {
		char *b = kvp_jw_reserve(w, CAND_ROOM), *p = b;

		if (b == NULL)
			return;
		if (i > 0)
			*p++ = ',';
		p = trace_candidate(p, t, dc, i, mx);
		kvp_jw_commit(w, (size_t)(p - b));
	}
	kvp_jw_raw(w, "]", 1);
	w->after_key = 0;
}

static void
trace_two_tier(struct kvp_jw *w, const struct kvp_trace_ctx *t,
               const struct kvp_decision *dc)
{
	kvp_jw_next_key(w, "two_tier");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "tier", dc->policy_reason ? dc->policy_reason : "");
	next_f64(w, "cache_threshold", t->pol->tt_cache_threshold);
	kvp_jw_next(w, "balance_abs_threshold", u64, t->pol->tt_balance_abs);
	next_f64(w, "balance_rel_threshold", t->pol->tt_balance_rel);
	next_f64(w, "host_cache_weight", t->pol->tt_host_weight);
	kvp_jw_next(w, "matchable_blocks", u64, dc->request_blocks);
	kvp_jw_obj_end(w);
}

/* policy and selection_reason. */
static void
trace_reason(struct kvp_jw *w, const struct kvp_decision *dc)
{
	const char *p = dc->policy ? dc->policy : "dynamo";

	if (is_two_tier(dc)) {
		kvp_jw_next(w, "policy", str, p);
		kvp_jw_next_key(w, "selection_reason");
		kvp_jw_text(w, "\"two_tier_%s\"",
		            dc->policy_reason ? dc->policy_reason : "");
		w->after_key = 0;
		return;
	}
	kvp_jw_next(w, "policy", str, strcmp(p, "dynamo") == 0 ? "default" : p);
	kvp_jw_next(w, "selection_reason", str,
	            dc->policy_reason      ? dc->policy_reason
	            : dc->temperature == 0 ? "minimum_cost"
	                                   : "temperature_sample");
}

/* The weights in force for this decision. */
static void
trace_weights(struct kvp_jw *w, const struct kvp_trace_ctx *t,
              const struct kvp_rin *in, const struct kvp_decision *dc)
{
	const struct kvp_route_opts *ro = t->ro;
	int no_credit = in->rq.has_weight && in->rq.weight == 0;

	next_f64(w, "overlap_score_credit", no_credit ? 0.0 : ro->credit);
	next_f64(w, "overlap_score_credit_decay", ro->credit_decay);
	next_f64(w, "prefill_load_scale", dc->weight);
	next_f64(w, "host_cache_hit_weight", host_w(ro));
	next_f64(w, "disk_cache_hit_weight", disk_w(ro));
	next_f64(w, "shared_cache_multiplier", ro->shared_multiplier);
	next_f64(w, "decode_active_request_weight", ro->request_weight);
	next_f64(w, "router_temperature", dc->temperature);
}

/* The trace object's members and braces (kvp_trace_decision's record,
 * or the request_end record's routing_decision). */
static void
trace_object(struct kvp_jw *w, const struct kvp_trace_ctx *t,
             const struct kvp_rin *in, const struct kvp_decision *dc)
{
	const struct kvp_cand_score *ch = &dc->cand[dc->chosen], *mo;
	uint32_t bs = t->ro->block_size;
	long mx = trace_max_overlap(t, dc);

	mo = &dc->cand[mx];
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "schema", "dynamo.router.decision.v1");
	kvp_jw_next(w, "worker_type", str,
	            t->ro->worker_type == KVP_WORKER_PREFILL ? "prefill"
	                                                     : "decode");
	trace_reason(w, dc);
	kvp_jw_next(w, "candidate_scope", str, "eligible_workers_only");
	kvp_jw_next(w, "block_size", u64, bs);
	kvp_jw_next(w, "request_blocks", u64, dc->request_blocks);
	kvp_jw_next(w, "track_prefill_tokens", bool, !t->ro->no_track_prefill);
	kvp_jw_next(w, "selected_worker_id", u64, ch->worker_id);
	kvp_jw_next(w, "selected_dp_rank", u64, ch->dp_rank);
	kvp_jw_next(w, "max_overlap_worker_id", u64, mo->worker_id);
	kvp_jw_next(w, "max_overlap_dp_rank", u64, mo->dp_rank);
	next_f64(w, "avoidable_prefill_token_equivalents",
	         (policy_overlap(t, dc, mo) - policy_overlap(t, dc, ch)) *
	             (double)bs);
	trace_weights(w, t, in, dc);
	kvp_jw_next_key(w, "candidates");
	trace_candidates(w, t, dc, mx);
	if (is_two_tier(dc))
		trace_two_tier(w, t, dc);
	kvp_jw_obj_end(w);
}

/* The request id's bytes as Dynamo hashes them: a string's own, else the
 * id as the decision record writes it (a number's digits). */
static void
id_bytes(const struct kvp_rin *in, char buf[24], const char **p, size_t *n)
{
	struct json_object *id = (struct json_object *)in->id_json;

	if (id != NULL && json_object_is_type(id, json_type_string)) {
		*p = json_object_get_string(id);
		*n = (size_t)json_object_get_string_len(id);
	} else if (id != NULL) {
		*p = json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN);
		*n = strlen(*p);
	} else if (in->id_fast == KVP_RIN_ID_STRING) {
		*p = in->rq.id;
		*n = in->rq.id_len;
	} else {
		*n = (size_t)snprintf(buf, 24, "%ju", (uintmax_t)in->line_id);
		*p = buf;
	}
}

int
kvp_trace_sampled(const struct kvp_trace_ctx *t, const struct kvp_rin *in)
{
	char buf[24];
	const char *p;
	size_t n;

	if (t->sample_rate >= 1.0)
		return 1;
	if (t->sample_rate <= 0.0)
		return 0;
	id_bytes(in, buf, &p, &n);
	return (double)kvp_hash_bytes(p, n, 0) / (double)UINT64_MAX <
	       t->sample_rate;
}

void
kvp_trace_decision(struct kvp_jw *w, const struct kvp_trace_ctx *t,
                   const struct kvp_rin *in, const struct kvp_decision *dc)
{
	if (dc->chosen < 0 || in->rq.pinned || !kvp_trace_sampled(t, in))
		return;
	trace_object(w, t, in, dc);
	kvp_jw_end_record(w);
}

/* The request id as the decision record writes it. */
static void
trace_id(struct kvp_jw *w, const struct kvp_rin *in)
{
	if (in->id_json != NULL)
		kvp_jw_json(w, in->id_json);
	else if (in->id_fast == KVP_RIN_ID_STRING)
		kvp_jw_strn(w, in->rq.id, in->rq.id_len);
	else
		kvp_jw_u64(w, in->line_id);
}

void
kvp_trace_request_end(struct kvp_jw *w, const struct kvp_trace_ctx *t,
                      const struct kvp_rin *in, const struct kvp_decision *dc)
{
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "schema", "dynamo.request.trace.v1");
	kvp_jw_next(w, "event_type", str, "request_end");
	kvp_jw_next(w, "event_time_unix_ms", u64, in->has_ts ? in->ts_ms : 0);
	kvp_jw_next_key(w, "request");
	kvp_jw_obj_begin(w);
	kvp_jw_key(w, "request_id");
	trace_id(w, in);
	if (in->has_ts)
		kvp_jw_next(w, "request_received_ms", u64, in->ts_ms);
	if (dc->chosen >= 0 && !in->rq.pinned && kvp_trace_sampled(t, in)) {
		kvp_jw_next_key(w, "routing_decision");
		trace_object(w, t, in, dc);
	}
	kvp_jw_obj_end(w);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

/* ---- the funnel ---------------------------------------------------------- */

void
kvp_funnel_add(struct kvp_funnel *f, const struct kvp_rin *in,
               const struct kvp_decision *dc, uint32_t bs)
{
	uint64_t best, sel;
	uint32_t m = 0;

	if (!in->rq.commit || dc->chosen < 0)
		return;
	for (size_t i = 0; i < dc->ncand; i++) { /* raw_cached_tokens / bs */
		const struct kvp_cand_score *s = &dc->cand[i];

		m = s->overlap > m ? s->overlap : m;
		m = s->host_overlap > m ? s->host_overlap : m;
		m = s->disk_overlap > m ? s->disk_overlap : m;
	}
	best = (uint64_t)m * bs;
	sel = raw_cached_tokens(&dc->cand[dc->chosen], bs);
	f->decisions++;
	f->kv_optimal += sel >= best;
	f->isl_tokens += dc->isl;
	f->max_raw_tokens += best;
	f->selected_raw_tokens += sel;
}

void
kvp_funnel_write(struct kvp_jw *w, const struct kvp_funnel *f)
{
	if (f == NULL)
		return;
	kvp_jw_key(w, "dynamo_funnel");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "router_decisions_total", f->decisions);
	kvp_jw_kv_u64(w, "decision_kv_optimal_total", f->kv_optimal);
	kvp_jw_kv_u64(w, "isl_tokens_total", f->isl_tokens);
	kvp_jw_kv_u64(w, "max_raw_cached_tokens_total", f->max_raw_tokens);
	kvp_jw_kv_u64(w, "selected_raw_cached_tokens_total",
	              f->selected_raw_tokens);
	kvp_jw_obj_end(w);
}
