/* SPDX-License-Identifier: MIT */
/*
 * diff.c — kv-diff's pairing, comparison and summary.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "kvpipe.h"
#include "report/diff.h"

struct kvp_diff_ent {
	uint64_t hash;
	uint64_t index; /* position among BASE decisions, 1-based */
	size_t id_off, id_len;
	struct kvp_diff_choice c;
	unsigned char has_id, matched, has_fp;
	unsigned knobs;
	uint64_t fp;
	double knob[KVP_DECISION_N_KNOBS];
};

const char *const kvp_diff_fields[KVP_DIFF_N_FIELDS] = {
    "requests",
    "changed",
    "changed_fraction",
    "hit_rate_base",
    "hit_rate_new",
    "hit_rate_delta",
    "rejected_delta",
    "lost_overlap_delta",
    "balance_delta",
    "differing",
    "overlap_changed",
    "rejection_changed",
    "only_base",
    "only_new",
    "requests_base",
    "requests_new",
    "rejected_base",
    "rejected_new",
    "lost_overlap_base",
    "lost_overlap_new",
    "balance_base",
    "balance_new",
    "cache_truth_requests_base",
    "cache_truth_requests_new",
    "cache_truth_exact_fraction_base",
    "cache_truth_exact_fraction_new",
    "cache_truth_exact_fraction_delta",
    "cache_truth_mean_abs_error_base",
    "cache_truth_mean_abs_error_new",
    "cache_truth_mean_abs_error_delta",
    "index_diverged",
    "load_diverged",
    "knob_changed",
    "reuse_requests",
    "reuse_exact_fraction",
    "reuse_mean_abs_tokens",
    "reuse_tokens_delta"};

/* Which fields are fractions (the rest are counts). */
static const unsigned char field_real[KVP_DIFF_N_FIELDS] = {
    0, 0, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0};

void
kvp_diff_init(struct kvp_diff *df)
{
	memset(df, 0, sizeof *df);
	kvp_kmap_init(&df->side[0].workers);
	kvp_kmap_init(&df->side[1].workers);
}

void
kvp_diff_fini(struct kvp_diff *df)
{
	int k;

	for (k = 0; k < 2; k++) {
		kvp_kmap_fini(&df->side[k].workers);
		free(df->side[k].routed);
	}
	free(df->ents);
	free(df->arena);
	free(df->slots);
	memset(df, 0, sizeof *df);
}

static uint64_t
hash_text(const char *s, size_t n)
{
	uint64_t h = n, w;

	while (n >= 8) {
		memcpy(&w, s, 8);
		h = kvp_kmap_mix((uint32_t)h, h ^ w);
		s += 8;
		n -= 8;
	}
	w = 0;
	memcpy(&w, s, n);
	return kvp_kmap_mix((uint32_t)(h >> 32), h ^ w);
}

/* The key of a decision: its id's text, or "#N" for the N-th id-less. */
static void
key_of(const struct kvp_decision_rec *d, uint64_t ordinal, char *buf,
       size_t cap, const char **k, size_t *n)
{
	if (d->id.p != NULL) {
		*k = d->id.p;
		*n = d->id.n;
	} else {
		*k = buf;
		*n = (size_t)snprintf(buf, cap, "#%" PRIu64, ordinal);
	}
}

static void
choice_of(const struct kvp_diff *df, const struct kvp_decision_rec *d,
          struct kvp_diff_choice *c)
{
	memset(c, 0, sizeof *c);
	c->chosen = d->chosen;
	c->rejected = d->rejected;
	c->worker_id = d->chosen ? d->worker_id : 0;
	c->dp_rank = d->chosen ? d->dp_rank : 0;
	c->overlap = d->overlap;
	c->no_overlap = d->no_overlap;
	c->row = d->replay_row;
	/* the cached tokens (diff.h): reused, predicted, or overlap blocks */
	c->has_tokens = 1;
	if (d->replay_row)
		c->tokens = d->reused;
	else if (d->has_pred)
		c->tokens = d->pred;
	else if (df->block_size > 0 && !d->no_overlap)
		c->tokens = d->overlap * df->block_size;
	else
		c->has_tokens = 0;
}

static int
worker_add(struct kvp_diff_side *s, uint64_t wid, uint64_t dp, uint64_t n)
{
	int ins;
	uint32_t *v = kvp_kmap_upsert(&s->workers, (uint32_t)dp, wid,
	                              (uint32_t)s->n_workers + 1, &ins);

	if (v == NULL)
		return KVP_FAIL;
	if (ins) {
		if (kvp_grow(&s->routed, &s->cap_workers, s->n_workers + 1,
		             sizeof *s->routed) != 0)
			return KVP_FAIL;
		s->routed[s->n_workers++] = 0;
	}
	s->routed[*v - 1] += n;
	return KVP_OK;
}

/* Counts one record into a side's totals. */
static int
side_add(struct kvp_diff_side *s, const struct kvp_decision_rec *d)
{
	uint64_t num, den;
	size_t k;

	if (d->kind == KVP_DECISION_SUMMARY) {
		for (k = 0; k < d->n_cand; k++)
			if (worker_add(s, d->cand[k].worker_id,
			               d->cand[k].dp_rank, 0) != KVP_OK)
				return KVP_FAIL;
		return KVP_OK;
	}
	s->decisions++;
	s->ordinal++;
	s->rejected += d->rejected != 0;
	kvp_decision_hit_terms(d, &num, &den);
	s->overlap += num;
	s->request_blocks += den;
	s->blocks_lost += d->blocks_lost;
	if (d->has_pred && d->has_engine) {
		s->truth++;
		s->truth_exact += d->pred == d->engine;
		s->truth_abs += d->pred > d->engine ? d->pred - d->engine
		                                    : d->engine - d->pred;
	}
	if (d->chosen && !d->rejected)
		return worker_add(s, d->worker_id, d->dp_rank, 1);
	return KVP_OK;
}

static int
rehash(struct kvp_diff *df)
{
	size_t n = df->n_slots ? df->n_slots * 2 : 1024, i, j;
	uint32_t *t = calloc(n, sizeof *t);

	if (t == NULL)
		return KVP_FAIL;
	for (i = 0; i < df->n_ents; i++) {
		j = df->ents[i].hash & (n - 1);
		while (t[j] != 0)
			j = (j + 1) & (n - 1);
		t[j] = (uint32_t)i + 1;
	}
	free(df->slots);
	df->slots = t;
	df->n_slots = n;
	return KVP_OK;
}

int
kvp_diff_add_base(struct kvp_diff *df, const struct kvp_decision_rec *d)
{
	struct kvp_diff_ent *e;
	char buf[32];
	const char *k;
	size_t n, j;

	if (d->kind == KVP_DECISION_OTHER)
		return KVP_OK;
	if (side_add(&df->side[0], d) != KVP_OK)
		return KVP_FAIL;
	if (d->kind != KVP_DECISION_DECISION)
		return KVP_OK;
	if (df->n_ents >= UINT32_MAX - 1 ||
	    ((df->n_ents + 1) * 2 > df->n_slots && rehash(df) != KVP_OK))
		return KVP_FAIL;
	key_of(d, df->side[0].ordinal, buf, sizeof buf, &k, &n);
	if (kvp_grow(&df->ents, &df->cap_ents, df->n_ents + 1,
	             sizeof *df->ents) != 0 ||
	    kvp_grow(&df->arena, &df->arena_cap, df->arena_len + n + 1, 1) != 0)
		return KVP_FAIL;
	e = &df->ents[df->n_ents];
	e->hash = hash_text(k, n);
	e->index = df->side[0].ordinal;
	e->id_off = df->arena_len;
	e->id_len = n;
	e->has_id = d->id.p != NULL;
	e->matched = 0;
	e->has_fp = (unsigned char)d->has_fp;
	e->fp = d->cand_fp;
	e->knobs = d->knobs;
	memcpy(e->knob, d->knob, sizeof e->knob);
	choice_of(df, d, &e->c);
	memcpy(df->arena + df->arena_len, k, n);
	df->arena_len += n;
	j = e->hash & (df->n_slots - 1);
	while (df->slots[j] != 0)
		j = (j + 1) & (df->n_slots - 1);
	df->slots[j] = (uint32_t)df->n_ents + 1;
	df->n_ents++;
	return KVP_OK;
}

/* The earliest unpaired BASE entry with key k, or NULL. */
static struct kvp_diff_ent *
find_unmatched(struct kvp_diff *df, const char *k, size_t n)
{
	uint64_t h = hash_text(k, n);
	size_t j;

	if (df->n_slots == 0)
		return NULL;
	for (j = h & (df->n_slots - 1); df->slots[j] != 0;
	     j = (j + 1) & (df->n_slots - 1)) {
		struct kvp_diff_ent *e = &df->ents[df->slots[j] - 1];

		if (e->hash == h && !e->matched && e->id_len == n &&
		    memcmp(df->arena + e->id_off, k, n) == 0)
			return e;
	}
	return NULL;
}

static unsigned
compare(const struct kvp_diff_choice *a, const struct kvp_diff_choice *b)
{
	unsigned ch = 0;

	if (a->chosen != b->chosen || a->worker_id != b->worker_id ||
	    a->dp_rank != b->dp_rank)
		ch |= KVP_DIFF_WORKER;
	if (a->overlap != b->overlap && !a->no_overlap && !b->no_overlap)
		ch |= KVP_DIFF_OVERLAP;
	if (a->rejected != b->rejected)
		ch |= KVP_DIFF_REJECTED;
	return ch;
}

/* Why a differing pair differs (diff.h), counted into df. */
static void
classify(struct kvp_diff *df, const struct kvp_diff_ent *e,
         const struct kvp_decision_rec *d, struct kvp_diff_rec *rec)
{
	for (int k = 0; k < KVP_DECISION_N_KNOBS; k++)
		if ((e->knobs & d->knobs & (1u << k)) &&
		    e->knob[k] != d->knob[k]) {
			rec->cause = "knob";
			rec->knob = kvp_decision_knobs[k];
			df->cause_knob++;
			return;
		}
	if (!e->has_fp || !d->has_fp) {
		rec->cause = "unknown";
		return;
	}
	rec->cause = e->fp != d->cand_fp ? "index" : "load";
	df->cause_index += e->fp != d->cand_fp;
	df->cause_load += e->fp == d->cand_fp;
}

/* The reuse comparison of a pair (diff.h). */
static void
reuse(struct kvp_diff *df, const struct kvp_diff_choice *b,
      const struct kvp_diff_choice *n)
{
	if (!(b->row || n->row) || !b->has_tokens || !n->has_tokens)
		return;
	df->reuse_n++;
	df->reuse_exact += b->tokens == n->tokens;
	df->reuse_abs += b->tokens > n->tokens ? b->tokens - n->tokens
	                                       : n->tokens - b->tokens;
	df->reuse_delta += (double)n->tokens - (double)b->tokens;
}

int
kvp_diff_add_new(struct kvp_diff *df, const struct kvp_decision_rec *d,
                 struct kvp_diff_rec *rec, int *emit)
{
	struct kvp_diff_ent *e;
	char buf[32];
	const char *k;
	size_t n;

	*emit = 0;
	if (d->kind == KVP_DECISION_OTHER)
		return KVP_OK;
	if (side_add(&df->side[1], d) != KVP_OK)
		return KVP_FAIL;
	if (d->kind != KVP_DECISION_DECISION)
		return KVP_OK;
	key_of(d, df->side[1].ordinal, buf, sizeof buf, &k, &n);
	memset(rec, 0, sizeof *rec);
	rec->id = d->id.p;
	rec->id_len = d->id.n;
	rec->index = df->side[1].ordinal;
	choice_of(df, d, &rec->new);
	e = find_unmatched(df, k, n);
	if (e == NULL) {
		df->only_new++;
		rec->only = "new";
		*emit = 1;
		return KVP_OK;
	}
	e->matched = 1;
	df->paired++;
	reuse(df, &e->c, &rec->new);
	rec->base = e->c;
	rec->changes = compare(&e->c, &rec->new);
	df->changed += (rec->changes & KVP_DIFF_WORKER) != 0;
	df->overlap_changed += (rec->changes & KVP_DIFF_OVERLAP) != 0;
	df->rejection_changed += (rec->changes & KVP_DIFF_REJECTED) != 0;
	df->differing += rec->changes != 0;
	if (rec->changes != 0)
		classify(df, e, d, rec);
	*emit = rec->changes != 0;
	return KVP_OK;
}

int
kvp_diff_next_only_base(struct kvp_diff *df, struct kvp_diff_rec *rec)
{
	while (df->next_unmatched < df->n_ents) {
		struct kvp_diff_ent *e = &df->ents[df->next_unmatched++];

		if (e->matched)
			continue;
		memset(rec, 0, sizeof *rec);
		rec->id = e->has_id ? df->arena + e->id_off : NULL;
		rec->id_len = e->id_len;
		rec->index = e->index;
		rec->only = "base";
		rec->base = e->c;
		df->only_base++;
		return 1;
	}
	return 0;
}

static double
ratio(uint64_t a, uint64_t b)
{
	return b == 0 ? 0.0 : (double)a / (double)b;
}

static double
balance(const struct kvp_diff_side *s)
{
	uint64_t max = 0, sum = 0;
	size_t k;

	for (k = 0; k < s->n_workers; k++) {
		sum += s->routed[k];
		if (s->routed[k] > max)
			max = s->routed[k];
	}
	return sum == 0 ? 0.0
	                : (double)max * (double)s->n_workers / (double)sum;
}

void
kvp_diff_summary(const struct kvp_diff *df, double v[KVP_DIFF_N_FIELDS])
{
	const struct kvp_diff_side *b = &df->side[0], *n = &df->side[1];
	double hb = ratio(b->overlap, b->request_blocks);
	double hn = ratio(n->overlap, n->request_blocks);
	double bb = balance(b), bn = balance(n);
	double eb = ratio(b->truth_exact, b->truth);
	double en = ratio(n->truth_exact, n->truth);
	double mb = ratio(b->truth_abs, b->truth);
	double mn = ratio(n->truth_abs, n->truth);
	double vals[KVP_DIFF_N_FIELDS] = {
	    (double)df->paired,
	    (double)df->changed,
	    ratio(df->changed, df->paired),
	    hb,
	    hn,
	    hn - hb,
	    (double)n->rejected - (double)b->rejected,
	    (double)n->blocks_lost - (double)b->blocks_lost,
	    bn - bb,
	    (double)df->differing,
	    (double)df->overlap_changed,
	    (double)df->rejection_changed,
	    (double)df->only_base,
	    (double)df->only_new,
	    (double)b->decisions,
	    (double)n->decisions,
	    (double)b->rejected,
	    (double)n->rejected,
	    (double)b->blocks_lost,
	    (double)n->blocks_lost,
	    bb,
	    bn,
	    (double)b->truth,
	    (double)n->truth,
	    eb,
	    en,
	    en - eb,
	    mb,
	    mn,
	    mn - mb,
	    (double)df->cause_index,
	    (double)df->cause_load,
	    (double)df->cause_knob,
	    (double)df->reuse_n,
	    ratio(df->reuse_exact, df->reuse_n),
	    ratio(df->reuse_abs, df->reuse_n),
	    df->reuse_delta};

	memcpy(v, vals, sizeof vals);
}

static void
write_choice(struct kvp_jw *w, const char *key, const struct kvp_diff_choice *c)
{
	kvp_jw_key(w, key);
	kvp_jw_obj_begin(w);
	kvp_jw_key(w, "chosen");
	if (c->chosen) {
		kvp_jw_obj_begin(w);
		kvp_jw_kv_u64(w, "worker_id", c->worker_id);
		kvp_jw_kv_u64(w, "dp_rank", c->dp_rank);
		kvp_jw_obj_end(w);
	} else
		kvp_jw_null(w);
	kvp_jw_kv_u64(w, "overlap_blocks", c->overlap);
	kvp_jw_kv_bool(w, "rejected", c->rejected);
	kvp_jw_obj_end(w);
}

static void
text_choice(struct kvp_jw *w, const struct kvp_diff_choice *c)
{
	char wk[48];

	if (c->rejected || !c->chosen)
		snprintf(wk, sizeof wk, "rejected");
	else
		snprintf(wk, sizeof wk, "%" PRIu64 ".%" PRIu64, c->worker_id,
		         c->dp_rank);
	kvp_jw_text(w, "  %-10s %8" PRIu64, wk, c->overlap);
}

static void
text_rec(struct kvp_jw *w, const struct kvp_diff_rec *r, int classify_on)
{
	char why[96] = "";

	if (r->id != NULL)
		kvp_jw_text(w, "%-24.*s",
		            (int)(r->id_len > 64 ? 64 : r->id_len), r->id);
	else
		kvp_jw_text(w, "#%-23" PRIu64, r->index);
	if (r->only != NULL && r->only[0] == 'n') {
		kvp_jw_text(w, "  %-10s %8s", "-", "-");
		text_choice(w, &r->new);
	} else {
		text_choice(w, &r->base);
		if (r->only != NULL)
			kvp_jw_text(w, "  %-10s %8s", "-", "-");
		else
			text_choice(w, &r->new);
	}
	if (r->only != NULL) {
		kvp_jw_text(w, "  only in %s\n", r->only);
		return;
	}
	if (classify_on && r->cause != NULL)
		snprintf(why, sizeof why, " (%s%s%s)", r->cause,
		         r->knob ? ": " : "", r->knob ? r->knob : "");
	kvp_jw_text(w, " %s%s%s%s\n",
	            r->changes & KVP_DIFF_WORKER ? " worker" : "",
	            r->changes & KVP_DIFF_OVERLAP ? " overlap" : "",
	            r->changes & KVP_DIFF_REJECTED ? " rejected" : "", why);
}

void
kvp_diff_write_header(struct kvp_jw *w)
{
	kvp_jw_text(w, "%-24s  %-10s %8s  %-10s %8s  %s\n", "request", "base",
	            "overlap", "new", "overlap", "changes");
}

void
kvp_diff_write_rec(struct kvp_jw *w, const struct kvp_diff_rec *r, int text,
                   int classify_on)
{
	if (text) {
		text_rec(w, r, classify_on);
		return;
	}
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", r->only != NULL ? "only" : "diff");
	if (r->id != NULL) {
		kvp_jw_key(w, "request_id");
		kvp_jw_raw(w, r->id, r->id_len);
		kvp_jw_obj_resume(w); /* the id was written raw */
	} else
		kvp_jw_kv_u64(w, "index", r->index);
	if (r->only != NULL) {
		kvp_jw_kv_str(w, "stream", r->only);
		write_choice(w, r->only,
		             r->only[0] == 'b' ? &r->base : &r->new);
	} else {
		kvp_jw_key(w, "changes");
		kvp_jw_arr_begin(w);
		if (r->changes & KVP_DIFF_WORKER)
			kvp_jw_str(w, "worker");
		if (r->changes & KVP_DIFF_OVERLAP)
			kvp_jw_str(w, "overlap");
		if (r->changes & KVP_DIFF_REJECTED)
			kvp_jw_str(w, "rejected");
		kvp_jw_arr_end(w);
		write_choice(w, "base", &r->base);
		write_choice(w, "new", &r->new);
		if (classify_on && r->cause != NULL)
			kvp_jw_kv_str(w, "cause", r->cause);
		if (classify_on && r->knob != NULL)
			kvp_jw_kv_str(w, "knob", r->knob);
	}
	kvp_jw_obj_end(w);
}

/* Whether summary field k is written: cache truth when a stream had the
 * figures, the causes with --classify. */
static int
shown(const double v[KVP_DIFF_N_FIELDS], size_t k, int classify)
{
	const size_t truth = KVP_DIFF_N_BASE_FIELDS,
	             causes = truth + KVP_DIFF_N_TRUTH,
	             reuse_at = causes + KVP_DIFF_N_CLASSIFY;

	if (k >= reuse_at)
		return v[reuse_at] > 0;
	if (k >= causes)
		return classify;
	if (k >= truth)
		return v[truth] > 0 || v[truth + 1] > 0;
	return 1;
}

void
kvp_diff_write_summary(struct kvp_jw *w, const double v[KVP_DIFF_N_FIELDS],
                       int text, int classify)
{
	size_t k;

	if (text) {
		kvp_jw_text(w, "\nsummary\n");
		for (k = 0; k < KVP_DIFF_N_FIELDS; k++)
			if (shown(v, k, classify))
				kvp_jw_text(w,
				            field_real[k] ? "  %-20s %.6f\n"
				                          : "  %-20s %.0f\n",
				            kvp_diff_fields[k], v[k]);
		return;
	}
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "summary");
	for (k = 0; k < KVP_DIFF_N_FIELDS; k++) {
		if (!shown(v, k, classify))
			continue;
		if (field_real[k])
			kvp_jw_kv_double(w, kvp_diff_fields[k], v[k]);
		else
			kvp_jw_kv_i64(w, kvp_diff_fields[k], (int64_t)v[k]);
	}
	kvp_jw_obj_end(w);
}
