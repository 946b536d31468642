/* SPDX-License-Identifier: MIT */
/*
 * event_apply.c — KV events applied to the router: the per (worker, rank)
 * event-id cursor (stale events, gaps; docs/spec/route-score.md §2.4), then the
 * store, removal or clear on the index, counted in the router's stats.
 * See router.h (kvp_router_apply) and route_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "common/kmap.h"
#include "common/util.h"
#include "route/index.h"
#include "route/route_internal.h"
#include "route/router.h"

void
kvp_cursors_init(struct kvp_cursors *cu)
{
	memset(cu, 0, sizeof(*cu));
	kvp_kmap_init(&cu->map);
}

void
kvp_cursors_fini(struct kvp_cursors *cu)
{
	free(cu->v);
	kvp_kmap_fini(&cu->map);
}

void
kvp_cursors_forget(struct kvp_cursors *cu, uint64_t w, uint32_t rank)
{
	kvp_kmap_del(&cu->map, rank, w);
}

static int
cursor_check(struct kvp_router *r, const struct kvp_event *ev,
             struct kvp_event_result *res)
{
	struct kvp_cursors *cs = &r->cur;
	uint32_t v = kvp_kmap_get(&cs->map, ev->dp_rank, ev->worker_id);
	struct kvp_cursor *cu;

	if (!ev->has_event_id)
		return 0;
	if (v == 0) {
		if (kvp_grow(&cs->v, &cs->cap, cs->n + 1, sizeof(*cs->v)) !=
		        0 ||
		    kvp_kmap_put(&cs->map, ev->dp_rank, ev->worker_id,
		                 (uint32_t)cs->n + 1, NULL) != 0)
			return -1;
		cs->v[cs->n].has = 0;
		v = (uint32_t)++cs->n;
	}
	cu = &cs->v[v - 1];
	if (cu->has && ev->event_id <= cu->last) {
		res->stale = 1;
		return 0;
	}
	if (cu->has && ev->event_id != cu->last + 1) {
		res->gap = 1;
		res->expected = cu->last + 1;
		if (r->o.gaps != KVP_GAPS_APPLY)
			return 0;
	}
	cu->has = 1;
	cu->last = ev->event_id;
	return 0;
}

/* The cursor's verdict: 1 to apply the event, 0 to let it go (stale, or a
 * gap under KVP_GAPS_SKIP), -1 with d set (out of memory, or a gap under
 * KVP_GAPS_FAIL). */
static int
cursor_admit(struct kvp_router *r, const struct kvp_event *ev,
             struct kvp_event_result *res, struct kvp_diag *d)
{
	if (cursor_check(r, ev, res) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	if (res->stale) {
		r->st.stale++;
		return 0;
	}
	if (!res->gap)
		return 1;
	r->st.gaps++;
	if (r->o.gaps == KVP_GAPS_FAIL)
		return kvp_diag_set(d, 0,
		                    "event_id gap: expected %llu, got %llu",
		                    (unsigned long long)res->expected,
		                    (unsigned long long)ev->event_id);
	if (r->o.gaps == KVP_GAPS_SKIP) {
		r->st.gap_skipped++;
		return 0;
	}
	return 1;
}

/* --orphans root: a store whose parent was stored before the capture began
 * is indexed as a new chain from the root. */
static int
store_orphan(struct kvp_router *r, uint32_t h, const struct kvp_event *ev,
             struct kvp_event_result *res)
{
	size_t n;

	res->store_status =
	    kvp_index_store(r->ix, h, 0, 0, ev->ext, ev->local, ev->n, &n);
	if (res->store_status == KVP_STORE_NOMEM)
		return -1;
	r->st.orphans_rooted++;
	r->st.blocks_stored += n;
	return 0;
}

static int
apply_store(struct kvp_router *r, uint32_t h, const struct kvp_event *ev,
            struct kvp_event_result *res)
{
	size_t n;

	res->store_status =
	    kvp_index_store(r->ix, h, ev->has_parent, ev->parent, ev->ext,
	                    ev->local, ev->n, &n);
	switch (res->store_status) {
	case KVP_STORE_NOMEM:
		return -1;
	case KVP_STORE_PARENT_NOT_FOUND:
		r->st.parent_not_found++;
		if (r->o.orphans_root)
			return store_orphan(r, h, ev, res);
		res->applied = 0;
		break;
	case KVP_STORE_SELF_REFERENCE:
		r->st.self_reference++;
		res->applied = 0;
		break;
	case KVP_STORE_DUPLICATE:
		r->st.duplicate_store++;
		break;
	}
	r->st.blocks_stored += n;
	return 0;
}

static int
apply_clear(struct kvp_router *r, uint32_t h, const struct kvp_event *ev)
{
	uint32_t v = kvp_kmap_get(&r->cur.map, ev->dp_rank, ev->worker_id);

	if (kvp_index_clear(r->ix, h) < 0)
		return -1;
	r->st.clears++;
	/* A clear is a barrier (spec §2.4): the next event id starts the
	 * cursor afresh, as after a worker restart. */
	if (v != 0)
		r->cur.v[v - 1].has = 0;
	return 0;
}

int
kvp_router_apply(struct kvp_router *r, const struct kvp_event *ev,
                 struct kvp_event_result *res, struct kvp_diag *d)
{
	int64_t h;
	int rc;

	memset(res, 0, sizeof(*res));
	r->st.events++;
	rc = cursor_admit(r, ev, res, d);
	if (rc <= 0)
		return rc;
	rc = 0;
	if (kvp_cands_add(&r->cd, ev->worker_id, ev->dp_rank) < 0)
		return kvp_diag_set(d, 0, "out of memory");
	h = kvp_index_holder(r->ix, ev->worker_id, ev->dp_rank, ev->tier, 1);
	if (h < 0 || kvp_approx_unflat(&r->ap) != 0) /* events need the tree */
		return kvp_diag_set(d, 0, "out of memory");
	res->applied = 1;
	switch (ev->kind) {
	case KVP_EV_STORED:
		kvp_approx_mixed(&r->ap); /* its hashes are the engine's */
		rc = apply_store(r, (uint32_t)h, ev, res);
		break;
	case KVP_EV_REMOVED:
		r->st.blocks_removed += kvp_index_remove(
		    r->ix, (uint32_t)h, ev->ext, ev->n, &res->unknown);
		r->st.unknown_removals += res->unknown;
		break;
	case KVP_EV_CLEARED:
		rc = apply_clear(r, (uint32_t)h, ev);
		break;
	}
	if (rc != 0)
		return kvp_diag_set(d, 0, "out of memory");
	if (res->applied)
		r->st.applied++;
	return 0;
}
