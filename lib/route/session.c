/* SPDX-License-Identifier: MIT */
/*
 * session.c — Dynamo's session affinity (router-configuration.md,
 * "Session Affinity"): the first routed request of a session binds its
 * session_id to the chosen (worker, dp_rank); later requests of the
 * session are dispatched there exactly. Active requests keep a binding
 * alive; when the last one ends (free, expiry) its idle timer of
 * session_ttl_ms restarts. A binding whose worker is gone is dropped and
 * the next request binds afresh. Time is the router's clock (request
 * timestamps). See route_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/kmap.h"
#include "common/util.h"
#include "route/route_internal.h"
#include "route/router.h"

static uint64_t
sess_key(const struct kvp_request *q)
{
	return kvp_hash_bytes(q->session_id, q->session_len, 0);
}

static int64_t find_key(struct kvp_router *r, uint64_t key);

int64_t
kvp_session_find(struct kvp_router *r, const struct kvp_request *q)
{
	if (r->o.session_ttl_ms == 0 || q->session_id == NULL)
		return -1;
	return find_key(r, sess_key(q));
}

int64_t
kvp_session_bind(struct kvp_router *r, const struct kvp_request *q, uint64_t w,
                 uint32_t rank)
{
	uint64_t key;
	uint32_t v;
	struct kvp_sess *s;

	if (r->o.session_ttl_ms == 0 || q->session_id == NULL)
		return 0;
	key = sess_key(q);
	v = kvp_kmap_get(&r->sessmap, 0, key);
	if (v == 0) {
		if (r->nsess >= UINT32_MAX - 1 ||
		    kvp_grow(&r->sess, &r->capsess, r->nsess + 1,
		             sizeof(*r->sess)) != 0 ||
		    kvp_kmap_put(&r->sessmap, 0, key, (uint32_t)r->nsess + 1,
		                 NULL) != 0)
			return -1;
		v = (uint32_t)++r->nsess;
		memset(&r->sess[v - 1], 0, sizeof(r->sess[v - 1]));
	}
	s = &r->sess[v - 1];
	s->live = 1;
	s->key = key;
	s->worker_id = w;
	s->dp_rank = rank;
	s->nactive++;
	s->deadline = r->now + r->o.session_ttl_ms;
	return v;
}

void
kvp_session_release(struct kvp_router *r, uint32_t slot)
{
	struct kvp_sess *s = &r->sess[slot];

	if (s->nactive > 0)
		s->nactive--;
	s->deadline = r->now + r->o.session_ttl_ms;
	r->last_release = slot + 1;
}

void
kvp_session_drop(struct kvp_router *r, int64_t slot)
{
	/* The slot stays (active requests may point at it); the key is
	 * re-bound on the next request of the session. */
	r->sess[slot].live = 0;
	r->sess[slot].nactive = 0;
	r->sess[slot].deadline = 0;
}

void
kvp_session_fini(struct kvp_router *r)
{
	free(r->sess);
	kvp_kmap_fini(&r->sessmap);
}

/* The binding of session key (live, not expired), or -1. */
static int64_t
find_key(struct kvp_router *r, uint64_t key)
{
	uint32_t v = kvp_kmap_get(&r->sessmap, 0, key);
	struct kvp_sess *s;

	if (v == 0 || !r->sess[v - 1].live)
		return -1;
	s = &r->sess[v - 1];
	if (s->nactive == 0 && s->deadline <= r->now) {
		kvp_session_drop(r, (int64_t)v - 1);
		return -1;
	}
	return (int64_t)v - 1;
}

static int
observe_key(struct kvp_router *r, uint64_t key, uint64_t w, uint32_t rank)
{
	int64_t s = find_key(r, key);
	uint32_t v;

	if (s >= 0 && (r->sess[s].worker_id != w || r->sess[s].dp_rank != rank))
		return 0; /* a conflicting live binding is kept */
	if (s < 0) {
		v = kvp_kmap_get(&r->sessmap, 0, key);
		if (v == 0) {
			if (r->nsess >= UINT32_MAX - 1 ||
			    kvp_grow(&r->sess, &r->capsess, r->nsess + 1,
			             sizeof(*r->sess)) != 0 ||
			    kvp_kmap_put(&r->sessmap, 0, key,
			                 (uint32_t)r->nsess + 1, NULL) != 0)
				return -1;
			v = (uint32_t)++r->nsess;
			memset(&r->sess[v - 1], 0, sizeof(r->sess[v - 1]));
		}
		s = (int64_t)v - 1;
		r->sess[s].live = 1;
		r->sess[s].worker_id = w;
		r->sess[s].dp_rank = rank;
		r->sess[s].deadline = 0;
	}
	if (r->sess[s].deadline < r->now + r->o.session_ttl_ms)
		r->sess[s].deadline = r->now + r->o.session_ttl_ms;
	return 0;
}

int
kvp_router_session_observe(struct kvp_router *r, const struct kvp_request *q,
                           uint64_t w, uint32_t rank)
{
	if (r->o.session_ttl_ms == 0 || q->session_id == NULL)
		return 0;
	if (q->has_ts && q->ts_ms > r->now)
		r->now = q->ts_ms;
	return observe_key(r, sess_key(q), w, rank);
}

int
kvp_router_session_released(struct kvp_router *r, uint64_t *key, uint64_t *w,
                            uint32_t *rank)
{
	uint32_t slot = r->last_release;

	r->last_release = 0;
	if (slot == 0 || !r->sess[slot - 1].live)
		return 0;
	*key = r->sess[slot - 1].key;
	*w = r->sess[slot - 1].worker_id;
	*rank = r->sess[slot - 1].dp_rank;
	return 1;
}

int
kvp_router_session_touch(struct kvp_router *r, uint64_t key, uint64_t w,
                         uint32_t rank)
{
	if (r->o.session_ttl_ms == 0)
		return 0;
	return observe_key(r, key, w, rank);
}
