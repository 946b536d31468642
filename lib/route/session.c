/* SPDX-License-Identifier: MIT */
/*
 * session.c — Dynamo's session affinity (router-configuration.md,
 * "Session Affinity"): the first routed request of a session binds its
 * session_id to the chosen (worker, dp_rank); later requests of the
 * session are dispatched there exactly. Active requests keep a binding
 * alive; when the last one ends (free, expiry) its idle timer of
 * session_ttl_ms restarts. A binding whose worker is gone is dropped and
 * the next request binds afresh. Time is the router's clock (request
 * timestamps). See session.h.
 */
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/kmap.h"
#include "common/util.h"
#include "route/route_internal.h"
#include "route/router.h"
#include "route/session.h"

static uint64_t
sess_key(const struct kvp_request *q)
{
	return kvp_hash_bytes(q->session_id, q->session_len, 0);
}

static int64_t find_key(struct kvp_sessions *ss, uint64_t key, uint64_t now);

void
kvp_session_init(struct kvp_sessions *ss, uint64_t ttl_ms)
{
	memset(ss, 0, sizeof(*ss));
	ss->ttl_ms = ttl_ms;
	kvp_kmap_init(&ss->map);
}

int64_t
kvp_session_find(struct kvp_sessions *ss, const struct kvp_request *q,
                 uint64_t now, uint64_t *w, uint32_t *rank)
{
	int64_t s;

	if (ss->ttl_ms == 0 || q->session_id == NULL)
		return -1;
	s = find_key(ss, sess_key(q), now);
	if (s >= 0) {
		*w = ss->v[s].worker_id;
		*rank = ss->v[s].dp_rank;
	}
	return s;
}

/* The slot of key, made (empty) if absent: slot + 1, or 0 on allocation
 * failure. */
static uint32_t
slot_of(struct kvp_sessions *ss, uint64_t key)
{
	uint32_t v = kvp_kmap_get(&ss->map, 0, key);

	if (v != 0)
		return v;
	if (ss->n >= UINT32_MAX - 1 ||
	    kvp_grow(&ss->v, &ss->cap, ss->n + 1, sizeof(*ss->v)) != 0 ||
	    kvp_kmap_put(&ss->map, 0, key, (uint32_t)ss->n + 1, NULL) != 0)
		return 0;
	v = (uint32_t)++ss->n;
	memset(&ss->v[v - 1], 0, sizeof(ss->v[v - 1]));
	return v;
}

int64_t
kvp_session_bind(struct kvp_sessions *ss, const struct kvp_request *q,
                 uint64_t w, uint32_t rank, uint64_t now)
{
	uint64_t key;
	uint32_t v;
	struct kvp_sess *s;

	if (ss->ttl_ms == 0 || q->session_id == NULL)
		return 0;
	key = sess_key(q);
	v = slot_of(ss, key);
	if (v == 0)
		return -1;
	s = &ss->v[v - 1];
	s->live = 1;
	s->key = key;
	s->worker_id = w;
	s->dp_rank = rank;
	s->nactive++;
	s->deadline = now + ss->ttl_ms;
	return v;
}

void
kvp_session_release(struct kvp_sessions *ss, uint32_t slot, uint64_t now)
{
	struct kvp_sess *s = &ss->v[slot];

	if (s->nactive > 0)
		s->nactive--;
	s->deadline = now + ss->ttl_ms;
	ss->last_release = slot + 1;
}

void
kvp_session_drop(struct kvp_sessions *ss, int64_t slot)
{
	/* The slot stays (active requests may point at it); the key is
	 * re-bound on the next request of the session. */
	ss->v[slot].live = 0;
	ss->v[slot].nactive = 0;
	ss->v[slot].deadline = 0;
}

void
kvp_session_fini(struct kvp_sessions *ss)
{
	free(ss->v);
	kvp_kmap_fini(&ss->map);
}

/* The binding of session key (live, not expired at now), or -1. */
static int64_t
find_key(struct kvp_sessions *ss, uint64_t key, uint64_t now)
{
	uint32_t v = kvp_kmap_get(&ss->map, 0, key);
	struct kvp_sess *s;

	if (v == 0 || !ss->v[v - 1].live)
		return -1;
	s = &ss->v[v - 1];
	if (s->nactive == 0 && s->deadline <= now) {
		kvp_session_drop(ss, (int64_t)v - 1);
		return -1;
	}
	return (int64_t)v - 1;
}

static int
observe_key(struct kvp_sessions *ss, uint64_t key, uint64_t w, uint32_t rank,
            uint64_t now)
{
	int64_t s = find_key(ss, key, now);
	uint32_t v;

	if (s >= 0 && (ss->v[s].worker_id != w || ss->v[s].dp_rank != rank))
		return 0; /* a conflicting live binding is kept */
	if (s < 0) {
		v = slot_of(ss, key);
		if (v == 0)
			return -1;
		s = (int64_t)v - 1;
		ss->v[s].live = 1;
		ss->v[s].worker_id = w;
		ss->v[s].dp_rank = rank;
		ss->v[s].deadline = 0;
	}
	if (ss->v[s].deadline < now + ss->ttl_ms)
		ss->v[s].deadline = now + ss->ttl_ms;
	return 0;
}

int
kvp_router_session_observe(struct kvp_router *r, const struct kvp_request *q,
                           uint64_t w, uint32_t rank)
{
	if (r->ss.ttl_ms == 0 || q->session_id == NULL)
		return 0;
	if (q->has_ts && q->ts_ms > r->now)
		r->now = q->ts_ms;
	return observe_key(&r->ss, sess_key(q), w, rank, r->now);
}

int
kvp_router_session_released(struct kvp_router *r, uint64_t *key, uint64_t *w,
                            uint32_t *rank)
{
	struct kvp_sessions *ss = &r->ss;
	uint32_t slot = ss->last_release;

	ss->last_release = 0;
	if (slot == 0 || !ss->v[slot - 1].live)
		return 0;
	*key = ss->v[slot - 1].key;
	*w = ss->v[slot - 1].worker_id;
	*rank = ss->v[slot - 1].dp_rank;
	return 1;
}

int
kvp_router_session_touch(struct kvp_router *r, uint64_t key, uint64_t w,
                         uint32_t rank)
{
	if (r->ss.ttl_ms == 0)
		return 0;
	return observe_key(&r->ss, key, w, rank, r->now);
}
