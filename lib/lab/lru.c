/* SPDX-License-Identifier: MIT */
/*
 * lru.c — bounded engine caches (--capacity-blocks): each candidate holds
 * at most `capacity` blocks. A routed request touches its blocks deepest
 * first and root last (a hit refreshes, a miss inserts), the order in
 * which vLLM's free-block queue releases a finished request's blocks;
 * after each insert over the capacity the least recently touched block is
 * evicted, from this cache and from the index, where the prefix match
 * stops at the first missing block.
 *
 * With keep_events, each request's net change is kept as RouterEvents: one
 * store per run of blocks new to the cache (root first; the blocks a
 * request holds afterwards form a prefix of it, so every run's parent is
 * held), then one removal of the blocks that were held before and are gone
 * now. Replaying them gives this cache exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "common/kmap.h"
#include "common/util.h"
#include "route/index.h"
#include "lab/lab_internal.h"
#include "route/route_view.h"

struct lru_ent {
	uint64_t seq;
	uint64_t born;       /* request serial that inserted it; 0: before */
	uint32_t prev, next; /* entry + 1; 0: none. prev is more recent */
};

struct lru_list {
	uint32_t head, tail; /* most, least recent (entry + 1) */
	uint64_t n;
	uint64_t event_id;
};

struct ev_rec { /* offsets into l->hbuf */
	int removed;
	uint32_t ci;
	uint64_t event_id;
	int has_parent;
	uint64_t parent;
	size_t off, n;
};

struct kvp_lru {
	uint64_t capacity;
	int keep_events;
	uint64_t serial, evictions;
	struct kvp_kmap map;  /* (cand, seq) → entry + 1 */
	struct kvp_kmap seen; /* per request scratch: repeats() */
	struct lru_ent *ents;
	size_t nents, capents;
	uint32_t *freel;
	size_t nfree, capfree;
	struct lru_list *lists; /* per cand */
	size_t caplists;
	/* this request's evictions of blocks held before it */
	uint64_t *gone;
	size_t ngone, capgone;
	/* events of the last request */
	struct ev_rec *evs;
	size_t nevs, capevs;
	uint64_t *hbuf, *lbuf; /* ext, local hashes at the same offsets */
	size_t nh, caph, nl, capl;
	struct kvp_sim_event *out;
	size_t capout;
	const struct kvp_router *r;
};

struct kvp_lru *
kvp_lru_new(uint64_t capacity, int keep_events)
{
	struct kvp_lru *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->capacity = capacity;
	l->keep_events = keep_events;
	kvp_kmap_init(&l->map);
	kvp_kmap_init(&l->seen);
	return l;
}

void
kvp_lru_free(struct kvp_lru *l)
{
	if (l == NULL)
		return;
	kvp_kmap_fini(&l->map);
	kvp_kmap_fini(&l->seen);
	free(l->ents);
	free(l->freel);
	free(l->lists);
	free(l->gone);
	free(l->evs);
	free(l->hbuf);
	free(l->lbuf);
	free(l->out);
	free(l);
}

void
kvp_lru_clear_events(struct kvp_lru *l)
{
	l->nevs = l->nh = l->nl = 0;
}

uint64_t
kvp_lru_evictions(const struct kvp_lru *l)
{
	return l->evictions;
}

static void
unlink_ent(struct kvp_lru *l, struct lru_list *ls, uint32_t e)
{
	struct lru_ent *x = &l->ents[e - 1];

	if (x->prev)
		l->ents[x->prev - 1].next = x->next;
	else
		ls->head = x->next;
	if (x->next)
		l->ents[x->next - 1].prev = x->prev;
	else
		ls->tail = x->prev;
	x->prev = x->next = 0;
}

static void
push_front(struct kvp_lru *l, struct lru_list *ls, uint32_t e)
{
	struct lru_ent *x = &l->ents[e - 1];

	x->prev = 0;
	x->next = ls->head;
	if (ls->head)
		l->ents[ls->head - 1].prev = e;
	ls->head = e;
	if (!ls->tail)
		ls->tail = e;
}

static int
push_u64(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (kvp_grow(a, cap, *n + 1, sizeof(**a)) != 0)
		return -1;
	(*a)[(*n)++] = v;
	return 0;
}

/* Evicts candidate ci's least recent block; one held before this request
 * joins l->gone. */
static int
evict(struct kvp_lru *l, uint32_t ci)
{
	struct lru_list *ls = &l->lists[ci];
	uint32_t e = ls->tail;
	struct lru_ent *x = &l->ents[e - 1];

	unlink_ent(l, ls, e);
	ls->n--;
	l->evictions++;
	kvp_kmap_del(&l->map, ci, x->seq);
	if (x->born != l->serial &&
	    push_u64(&l->gone, &l->ngone, &l->capgone, x->seq) != 0)
		return -1;
	if (kvp_grow(&l->freel, &l->capfree, l->nfree + 1, sizeof(*l->freel)) !=
	    0)
		return -1;
	l->freel[l->nfree++] = e;
	return 0;
}

static uint32_t
ent_new(struct kvp_lru *l, uint64_t seq)
{
	uint32_t e;

	if (l->nfree > 0) {
		e = l->freel[--l->nfree];
	} else {
		if (l->nents >= UINT32_MAX - 1 ||
		    kvp_grow(&l->ents, &l->capents, l->nents + 1,
		             sizeof(*l->ents)) != 0)
			return 0;
		e = (uint32_t)++l->nents;
	}
	memset(&l->ents[e - 1], 0, sizeof(l->ents[e - 1]));
	l->ents[e - 1].seq = seq;
	l->ents[e - 1].born = l->serial;
	return e;
}

/* Touches seq on candidate ci: refresh, or insert (and evict). */
static int
touch(struct kvp_lru *l, uint32_t ci, uint64_t seq)
{
	struct lru_list *ls = &l->lists[ci];
	uint32_t e = kvp_kmap_get(&l->map, ci, seq);

	if (e != 0) {
		unlink_ent(l, ls, e);
		push_front(l, ls, e);
		return 0;
	}
	e = ent_new(l, seq);
	if (e == 0 || kvp_kmap_put(&l->map, ci, seq, e, NULL) != 0)
		return -1;
	push_front(l, ls, e);
	if (++ls->n > l->capacity)
		return evict(l, ci);
	return 0;
}

static int
lists_for(struct kvp_lru *l, uint32_t ci)
{
	size_t old = l->caplists;

	if (ci < l->caplists)
		return 0;
	if (kvp_grow(&l->lists, &l->caplists, (size_t)ci + 1,
	             sizeof(*l->lists)) != 0)
		return -1;
	memset(l->lists + old, 0, (l->caplists - old) * sizeof(*l->lists));
	return 0;
}

static int
ev_add(struct kvp_lru *l, uint32_t ci, int removed, int has_parent,
       uint64_t parent)
{
	struct ev_rec *e;

	if (kvp_grow(&l->evs, &l->capevs, l->nevs + 1, sizeof(*l->evs)) != 0)
		return -1;
	e = &l->evs[l->nevs++];
	memset(e, 0, sizeof(*e));
	e->removed = removed;
	e->ci = ci;
	e->has_parent = has_parent;
	e->parent = parent;
	e->off = l->nh;
	return 0;
}

/* Stores: runs of the request's blocks inserted by it and still held. */
static int
events_stored(struct kvp_lru *l, uint32_t ci, const struct kvp_request *q,
              const uint64_t *seq)
{
	int open = 0;

	for (size_t i = 0; i < q->n; i++) {
		uint32_t e = kvp_kmap_get(&l->map, ci, seq[i]);
		int fresh = e != 0 && l->ents[e - 1].born == l->serial;

		if (fresh && !open &&
		    ev_add(l, ci, 0, i > 0, i > 0 ? seq[i - 1] : 0) != 0)
			return -1;
		open = fresh;
		if (fresh &&
		    (push_u64(&l->hbuf, &l->nh, &l->caph, seq[i]) ||
		     push_u64(&l->lbuf, &l->nl, &l->capl, q->local[i])))
			return -1;
		if (fresh)
			l->evs[l->nevs - 1].n++;
	}
	return 0;
}

/* The removal: blocks held before the request and gone after it. */
static int
events_removed(struct kvp_lru *l, uint32_t ci)
{
	int any = 0;

	for (size_t i = 0; i < l->ngone; i++) {
		uint32_t e = kvp_kmap_get(&l->map, ci, l->gone[i]);

		if (e != 0) { /* evicted, then touched again: held before */
			l->ents[e - 1].born = 0;
			continue;
		}
		if (!any && ev_add(l, ci, 1, 0, 0) != 0)
			return -1;
		any = 1;
		if (push_u64(&l->hbuf, &l->nh, &l->caph, l->gone[i]) != 0 ||
		    push_u64(&l->lbuf, &l->nl, &l->capl, 0) != 0)
			return -1;
		l->evs[l->nevs - 1].n++;
	}
	return 0;
}

/* The index follows the cache: the evicted blocks gone now leave it, and
 * the request's held blocks (a prefix of it: a block is touched after its
 * children, so it is more recent than any of them) are stored. */
static int
index_sync(struct kvp_router *r, struct kvp_lru *l, uint32_t ci, uint32_t h,
           const struct kvp_request *q, const uint64_t *seq)
{
	size_t k = 0, added, unknown;
	int st;

	for (size_t i = 0; i < l->ngone; i++)
		if (kvp_kmap_get(&l->map, ci, l->gone[i]) == 0)
			(void)kvp_index_remove(kvp_view_index(r), h,
			                       &l->gone[i], 1, &unknown);
	while (k < q->n && kvp_kmap_get(&l->map, ci, seq[k]) != 0)
		k++;
	st = kvp_index_store(kvp_view_index(r), h, 0, 0, seq, q->local, k,
	                     &added);
	return st == KVP_STORE_NOMEM ? -1 : 0;
}

/* A repeated hash within the request (or its chain) is not cached, as
 * approximate mode skips it: 1, 0, or -1 on allocation failure. l->seen
 * is empty again on return. */
static int
repeats(struct kvp_lru *l, const uint64_t *seq, size_t n)
{
	size_t i;
	int rep = 0;

	for (i = 0; i < n && rep == 0; i++) {
		int ins;

		if (kvp_kmap_upsert(&l->seen, 0, seq[i], 1, &ins) == NULL)
			rep = -1;
		else if (!ins)
			rep = 1;
	}
	while (i-- > 0)
		kvp_kmap_del(&l->seen, 0, seq[i]);
	return rep;
}

int
kvp_lru_record(struct kvp_router *r, struct kvp_lru *l, uint32_t ci,
               const struct kvp_request *q, const uint64_t *seq)
{
	int64_t h = kvp_index_holder(kvp_view_index(r), kvp_view_worker(r, ci),
	                             kvp_view_rank(r, ci), KVP_TIER_DEVICE, 1);
	int rep;

	l->nevs = l->nh = l->nl = l->ngone = 0;
	l->r = r;
	if (h < 0 || lists_for(l, ci) != 0)
		return -1;
	rep = repeats(l, seq, q->n);
	if (rep != 0 || q->n == 0)
		return rep < 0 ? -1 : 0;
	l->serial++;
	for (size_t i = q->n; i-- > 0;)
		if (touch(l, ci, seq[i]) != 0)
			return -1;
	if (index_sync(r, l, ci, (uint32_t)h, q, seq) != 0)
		return -1;
	if (!l->keep_events)
		return 0;
	if (events_removed(l, ci) != 0 || events_stored(l, ci, q, seq) != 0)
		return -1;
	/* event ids in output order: the stores, then the removal */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < l->nevs; i++)
			if (l->evs[i].removed == pass)
				l->evs[i].event_id = ++l->lists[ci].event_id;
	return 0;
}

const struct kvp_sim_event *
kvp_lru_events(struct kvp_lru *l, size_t *n)
{
	size_t k = 0;

	*n = 0;
	if (l->nevs == 0 ||
	    kvp_grow(&l->out, &l->capout, l->nevs, sizeof(*l->out)) != 0)
		return NULL;
	/* stores first (root first), then the removal */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < l->nevs; i++) {
			const struct ev_rec *e = &l->evs[i];
			struct kvp_sim_event *o = &l->out[k];

			if (e->removed != pass)
				continue;
			memset(o, 0, sizeof(*o));
			o->removed = e->removed;
			o->worker_id = kvp_view_worker(l->r, e->ci);
			o->dp_rank = kvp_view_rank(l->r, e->ci);
			o->event_id = e->event_id;
			o->has_parent = e->has_parent;
			o->parent = e->parent;
			o->ext = l->hbuf + e->off;
			o->local = l->lbuf + e->off;
			o->n = e->n;
			k++;
		}
	*n = k;
	return l->out;
}
