/* SPDX-License-Identifier: MIT */
/*
 * front.h — what stands in front of Dynamo's router (docs/spec/route-score.md
 * §3.3–3.4): router replicas and the router queue.
 *
 * Replicas: n routers see every event, worker and load record (one
 * event-fed view, applied to each) but each tracks the load of its own
 * decisions only, unless sync is on (Dynamo's --router-replica-sync: a
 * routed request is added to every replica's load, and prefill_done /
 * free reach them all). A request goes to its "replica" key, else round
 * robin. Without sync two replicas herd onto the same idle worker (Dynamo
 * issue #589).
 *
 * Queue (Dynamo's --router-queue-threshold): a request waits while every
 * eligible worker of its replica has more active prefill tokens than the
 * threshold, and while older requests wait (no bypass); after each record
 * that can lower load (prefill_done, free, worker, remove_worker, load)
 * and each arrival, waiting requests are placed in policy order (fcfs:
 * arrival; wspt: smallest ISL first, then arrival) for as long as the head
 * fits. A placed request's decision is emitted then, after the record
 * that freed the capacity, with queued and wait_ms (the latest timestamp
 * seen minus its own). kvp_front_finish() emits the requests still waiting
 * at the end as rejected "QueuedAtEnd".
 *
 * Every decision goes to the emit callback, in the order they are made.
 * The front owns its routers (kvp_front_router(f, 0) is the first), copies
 * of queued requests (ids, hashes; the JSON id by reference count) and
 * nothing else; the hasher is borrowed. Nothing here prints. 0, or -1 with
 * d filled.
 */
#ifndef KVP_FRONT_H
#define KVP_FRONT_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "lab/policy.h"
#include "replay/rec_hash.h"
#include "replay/route_input.h"
#include "replay/route_step.h"
#include "route/router.h"

enum kvp_queue_policy {
	KVP_QUEUE_FCFS = 0,
	KVP_QUEUE_WSPT = 1,
};

struct kvp_front_opts {
	size_t replicas; /* >= 1 */
	int sync;
	int queue;           /* the queue is on */
	double queue_tokens; /* threshold × max_num_batched_tokens */
	int policy;          /* enum kvp_queue_policy */
};

/* A decision: the request (completed: hashed, possibly a queued copy) and
 * its step record (kind KVP_RIN_REQUEST, dc filled). */
typedef void (*kvp_front_emit)(void *arg, const struct kvp_rin *in,
                               const struct kvp_route_step *st);

struct kvp_qent;

struct kvp_front {
	struct kvp_front_opts o;
	struct kvp_router **r;
	uint64_t rr;     /* round-robin counter */
	uint64_t *chain; /* sequence hashes for sync */
	size_t capchain;
	struct kvp_qent *q;
	size_t nq, capq;
	uint64_t order; /* arrival counter */
	int has_clock;
	uint64_t clock; /* latest timestamp seen (ms) */
	kvp_front_emit emit;
	void *arg;
};

/* 0, or -1 on allocation failure. */
int kvp_front_init(struct kvp_front *f, const struct kvp_front_opts *fo,
                   const struct kvp_route_opts *ro,
                   const struct kvp_policy_opts *po, kvp_front_emit emit,
                   void *arg);
void kvp_front_fini(struct kvp_front *f);
struct kvp_router *kvp_front_router(struct kvp_front *f, size_t i);

/* Applies one record like kvp_route_apply_record() (route_step.h); a
 * request's decision, and those of queued requests it lets through, go to
 * the emit callback (a queued request's not yet). */
int kvp_front_apply(struct kvp_front *f, struct kvp_rec_hasher *h,
                    struct kvp_rin *in, struct kvp_route_step *st,
                    struct kvp_diag *d);

/* End of input: the requests still queued are emitted as rejected, and
 * the replicas' request counters are added into the first router's (for
 * the summary). */
void kvp_front_finish(struct kvp_front *f);

#endif
