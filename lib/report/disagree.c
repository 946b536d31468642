/* SPDX-License-Identifier: MIT */
/*
 * disagree.c — the bounded cross-run join behind kv-report's table of
 * disagreements.
 */
#include <stdlib.h>
#include <string.h>

#include "common/kmap.h"
#include "kvpipe.h"
#include "report/disagree.h"

#define N_HEADS (2 * KVP_DIS_POOL)

int
kvp_dis_init(struct kvp_dis *s, int n_runs, size_t top)
{
	size_t k;

	memset(s, 0, sizeof *s);
	s->n_runs = n_runs;
	s->top_max = top > KVP_DIS_MAX_TOP ? KVP_DIS_MAX_TOP : top;
	s->pool = calloc(KVP_DIS_POOL, sizeof *s->pool);
	s->heads = malloc(N_HEADS * sizeof *s->heads);
	s->top = calloc(s->top_max + 1, sizeof *s->top);
	if (s->pool == NULL || s->heads == NULL || s->top == NULL)
		return KVP_FAIL;
	for (k = 0; k < N_HEADS; k++)
		s->heads[k] = -1;
	return KVP_OK;
}

void
kvp_dis_fini(struct kvp_dis *s)
{
	free(s->pool);
	free(s->heads);
	free(s->top);
	memset(s, 0, sizeof *s);
}

static uint64_t
hash_id(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t k;

	for (k = 0; k < n; k++)
		h = (h ^ (unsigned char)p[k]) * 1099511628211ull;
	return kvp_kmap_mix((uint32_t)n, h);
}

/* max - min overlap over the runs present, doubled, plus one when their
 * chosen workers differ; 0 with fewer than two runs. */
static double
score(const struct kvp_dis_ent *e)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	const struct kvp_dis_run *first = NULL;
	int r, differ = 0;

	if (e->n_present < 2)
		return 0;
	for (r = 0; r < KVP_REPORT_MAX_RUNS; r++) {
		const struct kvp_dis_run *x = &e->run[r];

		if (!x->present)
			continue;
		lo = x->overlap < lo ? x->overlap : lo;
		hi = x->overlap > hi ? x->overlap : hi;
		if (first == NULL)
			first = x;
		else if (x->chosen != first->chosen ||
		         x->worker_id != first->worker_id ||
		         x->dp_rank != first->dp_rank)
			differ = 1;
	}
	return 2.0 * (double)(hi - lo) + differ;
}

/* Offers a finished (or evicted) entry to the top N. */
static void
offer(struct kvp_dis *s, struct kvp_dis_ent *e)
{
	size_t k, min = 0;

	e->score = score(e);
	s->compared += e->n_present >= 2;
	if (e->score <= 0 || s->top_max == 0)
		return;
	if (s->n_top < s->top_max) {
		s->top[s->n_top++] = *e;
		return;
	}
	for (k = 1; k < s->n_top; k++)
		if (s->top[k].score < s->top[min].score ||
		    (s->top[k].score == s->top[min].score &&
		     s->top[k].seq > s->top[min].seq))
			min = k;
	if (e->score > s->top[min].score)
		s->top[min] = *e;
}

static void
unlink_ent(struct kvp_dis *s, int i)
{
	int *p = &s->heads[s->pool[i].hash % N_HEADS];

	while (*p != i)
		p = &s->pool[*p].next;
	*p = s->pool[i].next;
	s->pool[i].used = 0;
	s->n_used--;
}

/* A free pool slot, evicting the entry under the clock hand if needed. */
static int
alloc_ent(struct kvp_dis *s)
{
	int i;

	while (1) {
		i = (int)s->hand;
		s->hand = (s->hand + 1) % KVP_DIS_POOL;
		if (!s->pool[i].used)
			return i;
		if (s->n_used < KVP_DIS_POOL)
			continue;
		offer(s, &s->pool[i]);
		s->evicted++;
		unlink_ent(s, i);
		return i;
	}
}

static int
find_or_add(struct kvp_dis *s, const struct kvp_decision_rec *d)
{
	size_t n = d->id.n < KVP_DIS_ID_MAX ? d->id.n : KVP_DIS_ID_MAX;
	uint64_t h = hash_id(d->id.p, d->id.n);
	struct kvp_dis_ent *e;
	int i;

	for (i = s->heads[h % N_HEADS]; i >= 0; i = s->pool[i].next) {
		e = &s->pool[i];
		if (e->hash == h && e->id_len == d->id.n &&
		    memcmp(e->id, d->id.p, n) == 0)
			return i;
	}
	i = alloc_ent(s);
	e = &s->pool[i];
	memset(e, 0, sizeof *e);
	e->used = 1;
	e->hash = h;
	e->seq = s->seq++;
	e->id_len = d->id.n;
	memcpy(e->id, d->id.p, n);
	e->next = s->heads[h % N_HEADS];
	s->heads[h % N_HEADS] = i;
	s->n_used++;
	return i;
}

static void
fill(struct kvp_dis_run *x, const struct kvp_decision_rec *d)
{
	size_t n = d->tie_break.n < sizeof x->tie_break - 1
	               ? d->tie_break.n
	               : sizeof x->tie_break - 1;

	x->present = 1;
	x->chosen = d->chosen && !d->rejected;
	x->rejected = d->rejected;
	x->non_max = d->non_max;
	x->worker_id = d->worker_id;
	x->dp_rank = d->dp_rank;
	x->overlap = d->overlap;
	x->has_max = d->has_max;
	x->max_overlap = d->max_overlap;
	x->request_blocks = d->request_blocks;
	x->row = d->replay_row;
	x->no_overlap = d->no_overlap;
	x->reused = d->reused;
	x->input_tokens = d->input_tokens;
	x->has_logit = d->has_logit;
	x->logit = d->logit;
	if (d->tie_break.p != NULL)
		memcpy(x->tie_break, d->tie_break.p, n);
	x->tie_break[n] = '\0';
}

void
kvp_dis_add(struct kvp_dis *s, int r, const struct kvp_decision_rec *d)
{
	struct kvp_dis_ent *e;
	int i;

	if (d->kind != KVP_DECISION_DECISION || d->id.p == NULL ||
	    s->n_runs < 2 || r >= KVP_REPORT_MAX_RUNS)
		return;
	i = find_or_add(s, d);
	e = &s->pool[i];
	if (e->run[r].present) /* a duplicate id: keep the first */
		return;
	fill(&e->run[r], d);
	if (++e->n_present < s->n_runs)
		return;
	offer(s, e);
	unlink_ent(s, i);
}

static int
by_score(const void *pa, const void *pb)
{
	const struct kvp_dis_ent *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void
kvp_dis_finish(struct kvp_dis *s)
{
	size_t k;

	for (k = 0; k < KVP_DIS_POOL && s->pool != NULL; k++)
		if (s->pool[k].used) {
			offer(s, &s->pool[k]);
			unlink_ent(s, (int)k);
		}
	qsort(s->top, s->n_top, sizeof *s->top, by_score);
}
