/* SPDX-License-Identifier: MIT */
/*
 * route_step.c — one route-score input record applied to the router.
 * See route_step.h.
 */
#include <string.h>

#include "common/diag.h"
#include "lab/lab.h"
#include "replay/rec_hash.h"
#include "replay/route_input.h"
#include "replay/route_step.h"
#include "route/router.h"

int
kvp_route_apply_record(struct kvp_router *r, struct kvp_rec_hasher *h,
                       struct kvp_rin *in, struct kvp_route_step *st,
                       struct kvp_diag *d)
{
	memset(st, 0, sizeof(*st));
	st->kind = in->kind;
	switch (in->kind) {
	case KVP_RIN_IGNORED:
	case KVP_RIN_GAP:
	case KVP_RIN_STALE:
		return 0; /* counted by the caller */
	case KVP_RIN_WORKER:
		for (uint32_t i = 0; i < in->dp_size; i++)
			if (kvp_router_add_candidate(r, in->worker_id,
			                             in->dp_start + i) != 0)
				return kvp_diag_set(d, 0, "out of memory");
		return 0;
	case KVP_RIN_REMOVE_WORKER:
		kvp_router_stats_mut(r)->workers_removed +=
		    kvp_router_remove_worker(r, in->worker_id);
		return 0;
	case KVP_RIN_LOAD:
		if (kvp_router_set_load(r, in->worker_id, in->dp_rank,
		                        in->prefill_tokens,
		                        in->decode_blocks) != 0)
			return kvp_diag_set(d, 0, "out of memory");
		return 0;
	case KVP_RIN_EVENT:
		if (in->flags & KVP_RIN_BLOCK_SIZE_MISMATCH) {
			kvp_router_stats_mut(r)->block_size_mismatch++;
			st->bs_mismatch = 1;
		}
		if (in->flags & KVP_RIN_TRUNCATED)
			st->truncated = 1;
		if (kvp_rec_hash(h, in, d) != 0 ||
		    kvp_router_apply(r, &in->ev, &st->ev, d) != 0)
			return -1;
		if (in->ev.kind == KVP_EV_CLEARED && st->ev.applied)
			kvp_lab_clear(r, in->ev.worker_id, in->ev.dp_rank);
		return 0;
	case KVP_RIN_REQUEST:
		if (in->flags & KVP_RIN_BLOCK_SIZE_MISMATCH) {
			kvp_router_stats_mut(r)->block_size_mismatch++;
			st->bs_mismatch = 1;
		}
		if (kvp_rec_hash(h, in, d) != 0)
			return -1;
		return kvp_router_route(r, &in->rq, &st->dc, d);
	case KVP_RIN_PREFILL_DONE:
		if (in->has_ts)
			kvp_router_tick(r, in->ts_ms);
		return kvp_router_prefill_done(r, in->rq.id, in->rq.id_len, d);
	case KVP_RIN_FREE:
		if (in->has_ts)
			kvp_router_tick(r, in->ts_ms);
		return kvp_router_free_request(r, in->rq.id, in->rq.id_len, d);
	}
	return 0;
}
