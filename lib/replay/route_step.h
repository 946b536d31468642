/* SPDX-License-Identifier: MIT */
/*
 * route_step.h — applies one parsed route-score input record
 * (route_input.h) to a router (router.h): worker declarations and removals,
 * load baselines, KV events and requests (token ids they bring hashed
 * first: rec_hash.h), and the requests' lifecycle (prefill_done, free).
 *
 * The router and the hasher are borrowed; the record is completed in place
 * (hashed blocks point into the hasher). What
 * the caller may want to warn about or count comes back in struct
 * kvp_route_step; the decision's candidate array is owned by the router and
 * valid until its next call.
 * Nothing here prints or exits: 0, or -1 with a struct kvp_diag filled.
 */
#ifndef KVP_ROUTE_STEP_H
#define KVP_ROUTE_STEP_H

#include "common/diag.h"
#include "replay/rec_hash.h"
#include "replay/route_input.h"
#include "route/router.h"

struct kvp_route_step {
	int kind;        /* enum kvp_rin_kind of the record */
	int bs_mismatch; /* event: store dropped; request: hashed at the
	                    router's block size; the block size differs (counted
	                    in the router's block_size_mismatch) */
	int truncated;   /* event: the store's tokens ran short */
	int queued;      /* request: waits in the router queue (front.h);
	                    dc not filled, nothing to write yet */
	struct kvp_event_result ev; /* event: valid when 0 was returned */
	struct kvp_decision dc;     /* request: valid when 0 was returned */
};

/* Applies `in` to r and fills st. Returns 0, or -1 (allocation failure,
 * event_id gap when gaps fail, unknown pinned worker or request id; d says
 * which). st->kind, bs_mismatch and truncated are set even then. */
int kvp_route_apply_record(struct kvp_router *r, struct kvp_rec_hasher *h,
                           struct kvp_rin *in, struct kvp_route_step *st,
                           struct kvp_diag *d);

#endif
