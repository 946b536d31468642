/* SPDX-License-Identifier: MIT */
/*
 * front.c — router replicas and the router queue. See front.h.
 */
#include "replay/front.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "lab/lab.h"
#include "common/util.h"
#include "replay/rec_hash.h"
#include "route/route_hash.h"
#include "replay/route_input.h"
#include "replay/route_step.h"
#include "route/router.h"

struct kvp_qent { /* a queued request: the record with owned copies */
	struct kvp_rin in;
	char *id, *sess;
	uint64_t *local, *seq, *allowed;
	uint64_t order;
	size_t replica;
};

int
kvp_front_init(struct kvp_front *f, const struct kvp_front_opts *fo,
               const struct kvp_route_opts *ro,
               const struct kvp_policy_opts *po, kvp_front_emit emit, void *arg)
{
	memset(f, 0, sizeof(*f));
	f->o = *fo;
	if (f->o.replicas == 0)
		f->o.replicas = 1;
	f->emit = emit;
	f->arg = arg;
	f->r = calloc(f->o.replicas, sizeof(*f->r));
	if (f->r == NULL)
		return -1;
	for (size_t i = 0; i < f->o.replicas; i++) {
		f->r[i] = kvp_router_new(ro);
		if (f->r[i] == NULL || kvp_lab_attach(f->r[i], po) != 0)
			return -1;
	}
	return 0;
}

static void
qent_free(struct kvp_qent *e)
{
	json_object_put((struct json_object *)e->in.id_json);
	free(e->id);
	free(e->sess);
	free(e->local);
	free(e->seq);
	free(e->allowed);
}

void
kvp_front_fini(struct kvp_front *f)
{
	for (size_t i = 0; i < f->nq; i++)
		qent_free(&f->q[i]);
	free(f->q);
	if (f->r != NULL)
		for (size_t i = 0; i < f->o.replicas; i++)
			kvp_router_free(f->r[i]);
	free(f->r);
	free(f->chain);
}

struct kvp_router *
kvp_front_router(struct kvp_front *f, size_t i)
{
	return f->r[i];
}

static void
tick(struct kvp_front *f, const struct kvp_rin *in)
{
	if (in->has_ts && (!f->has_clock || in->ts_ms > f->clock)) {
		f->clock = in->ts_ms;
		f->has_clock = 1;
	}
}

/* ---- replicas ----------------------------------------------------------- */

/* A request of a bound session ended on one replica: the others' idle
 * timers restart too (Dynamo republishes the binding at lease end). */
static int
share_release(struct kvp_front *f)
{
	uint64_t key, w;
	uint32_t rank;

	for (size_t i = 0; i < f->o.replicas; i++) {
		if (!kvp_router_session_released(f->r[i], &key, &w, &rank))
			continue;
		for (size_t j = 0; j < f->o.replicas; j++)
			if (j != i && kvp_router_session_touch(f->r[j], key, w,
			                                       rank) != 0)
				return -1;
	}
	return 0;
}

/* The records after the first replica's: the same, already hashed. A
 * lifecycle record is bad only if no replica held the request. */
static int
apply_rest(struct kvp_front *f, struct kvp_rin *in, int rc0, struct kvp_diag *d)
{
	struct kvp_event_result res;
	int ok = rc0 == 0, rc;

	for (size_t i = 1; i < f->o.replicas; i++) {
		struct kvp_router *r = f->r[i];
		struct kvp_diag dd = {{0}, 0};

		switch (in->kind) {
		case KVP_RIN_EVENT:
			if (kvp_router_apply(r, &in->ev, &res, &dd) != 0)
				return kvp_diag_set(d, 0, "%s", dd.msg);
			break;
		case KVP_RIN_PREFILL_DONE:
		case KVP_RIN_FREE:
			if (in->has_ts)
				kvp_router_tick(r, in->ts_ms);
			rc = in->kind == KVP_RIN_FREE
			         ? kvp_router_free_request(r, in->rq.id,
			                                   in->rq.id_len, &dd)
			         : kvp_router_prefill_done(r, in->rq.id,
			                                   in->rq.id_len, &dd);
			ok |= rc == 0;
			break;
		default: {
			struct kvp_route_step st;

			if (kvp_route_apply_record(r, NULL, in, &st, &dd) != 0)
				return kvp_diag_set(d, 0, "%s", dd.msg);
		}
		}
	}
	if (rc0 != 0 && ok)
		memset(d, 0, sizeof(*d));
	if (in->kind == KVP_RIN_FREE && share_release(f) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	return ok || rc0 == 0 ? 0 : -1;
}

/* Sync: the request routed on replica k is added to every other one. */
static int
sync_others(struct kvp_front *f, size_t k, const struct kvp_request *q,
            const struct kvp_decision *dc)
{
	const struct kvp_cand_score *ch = &dc->cand[dc->chosen];
	const uint64_t *seq = q->seq;

	if (seq == NULL) {
		if (kvp_grow(&f->chain, &f->capchain, q->n + 1,
		             sizeof(*f->chain)) != 0)
			return -1;
		kvp_route_chain(q->local, q->n, f->chain);
		seq = f->chain;
	}
	for (size_t i = 0; i < f->o.replicas; i++)
		if (i != k &&
		    kvp_router_add_external(f->r[i], q, seq, ch->worker_id,
		                            ch->dp_rank, ch->overlap) != 0)
			return -1;
	return 0;
}

/* A replica's routed request reaches the others: its load with sync, its
 * session binding always (Dynamo syncs bindings independently). */
static int
share(struct kvp_front *f, size_t k, const struct kvp_request *q,
      const struct kvp_decision *dc)
{
	const struct kvp_cand_score *ch;

	if (f->o.replicas < 2 || dc->chosen < 0)
		return 0;
	ch = &dc->cand[dc->chosen];
	if (f->o.sync && q->commit && sync_others(f, k, q, dc) != 0)
		return -1;
	if (dc->affinity != NULL)
		for (size_t i = 0; i < f->o.replicas; i++)
			if (i != k &&
			    kvp_router_session_observe(
			        f->r[i], q, ch->worker_id, ch->dp_rank) != 0)
				return -1;
	return 0;
}

/* Routes a hashed request on replica k and emits its decision. */
static int
route_on(struct kvp_front *f, size_t k, struct kvp_rin *in,
         struct kvp_route_step *st, struct kvp_diag *d)
{
	st->kind = KVP_RIN_REQUEST;
	if (kvp_router_route(f->r[k], &in->rq, &st->dc, d) != 0)
		return -1;
	if (f->o.replicas > 1) {
		st->dc.has_replica = 1;
		st->dc.replica = k;
	}
	if (share(f, k, &in->rq, &st->dc) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	f->emit(f->arg, in, st);
	return 0;
}

static int
pick_replica(struct kvp_front *f, const struct kvp_request *q, size_t *k,
             struct kvp_diag *d)
{
	if (q->has_replica) {
		if (q->replica >= f->o.replicas)
			return kvp_diag_set(d, 0,
			                    "replica %llu: there are %zu "
			                    "replicas (0..%zu)",
			                    (unsigned long long)q->replica,
			                    f->o.replicas, f->o.replicas - 1);
		*k = (size_t)q->replica;
		return 0;
	}
	*k = (size_t)(f->rr++ % f->o.replicas);
	return 0;
}

/* ---- the queue ------------------------------------------------------------
 */

static void *
dup_mem(const void *p, size_t n)
{
	void *c = malloc(n ? n : 1);

	if (c != NULL && n)
		memcpy(c, p, n);
	return c;
}

/* Copies a hashed request into the queue. */
static int
enqueue(struct kvp_front *f, const struct kvp_rin *in, size_t k)
{
	const struct kvp_request *q = &in->rq;
	struct kvp_qent *e;

	if (kvp_grow(&f->q, &f->capq, f->nq + 1, sizeof(*f->q)) != 0)
		return -1;
	e = &f->q[f->nq];
	memset(e, 0, sizeof(*e));
	e->in = *in;
	e->in.tokens = NULL;
	e->id = dup_mem(q->id, q->id_len);
	e->local = dup_mem(q->local, q->n * sizeof(*q->local));
	e->seq = q->seq ? dup_mem(q->seq, q->n * sizeof(*q->seq)) : NULL;
	e->allowed =
	    q->allowed ? dup_mem(q->allowed, q->n_allowed * sizeof(*q->allowed))
	               : NULL;
	e->sess = q->session_id ? dup_mem(q->session_id, q->session_len) : NULL;
	if (e->id == NULL || e->local == NULL || (q->seq && !e->seq) ||
	    (q->allowed && !e->allowed) || (q->session_id && !e->sess)) {
		qent_free(e);
		return -1;
	}
	e->in.rq.id = e->id;
	e->in.rq.local = e->local;
	e->in.rq.seq = e->seq;
	e->in.rq.allowed = e->allowed;
	e->in.rq.session_id = e->sess;
	json_object_get((struct json_object *)in->id_json);
	e->order = f->order++;
	e->replica = k;
	f->nq++;
	return 0;
}

/* The next request to place: fcfs by arrival, wspt by ISL then arrival. */
static size_t
queue_head(const struct kvp_front *f)
{
	size_t best = 0;

	for (size_t i = 1; i < f->nq; i++) {
		const struct kvp_qent *a = &f->q[i], *b = &f->q[best];

		if (f->o.policy == KVP_QUEUE_WSPT
		        ? a->in.rq.isl < b->in.rq.isl ||
		              (a->in.rq.isl == b->in.rq.isl &&
		               a->order < b->order)
		        : a->order < b->order)
			best = i;
	}
	return best;
}

static void
mark_wait(const struct kvp_front *f, const struct kvp_qent *e,
          struct kvp_decision *dc)
{
	dc->queued = 1;
	if (e->in.has_ts && f->has_clock && f->clock >= e->in.ts_ms) {
		dc->has_wait = 1;
		dc->wait_ms = f->clock - e->in.ts_ms;
	}
}

/* Places waiting requests while the head fits. */
static int
drain(struct kvp_front *f, struct kvp_diag *d)
{
	while (f->nq > 0) {
		size_t h = queue_head(f);
		struct kvp_qent e = f->q[h];
		struct kvp_route_step st;
		int rc;

		if (f->has_clock)
			kvp_router_tick(f->r[e.replica], f->clock);
		if (kvp_router_queue_busy(f->r[e.replica], &e.in.rq,
		                          f->o.queue_tokens))
			return 0;
		memmove(&f->q[h], &f->q[h + 1],
		        (f->nq - h - 1) * sizeof(*f->q));
		f->nq--;
		memset(&st, 0, sizeof(st));
		st.kind = KVP_RIN_REQUEST;
		rc = kvp_router_route(f->r[e.replica], &e.in.rq, &st.dc, d);
		if (rc == 0) {
			mark_wait(f, &e, &st.dc);
			if (f->o.replicas > 1) {
				st.dc.has_replica = 1;
				st.dc.replica = e.replica;
				if (f->o.sync && e.in.rq.commit &&
				    st.dc.chosen >= 0 &&
				    sync_others(f, e.replica, &e.in.rq,
				                &st.dc) != 0)
					rc =
					    kvp_diag_set(d, 0, "out of memory");
			}
			if (rc == 0)
				f->emit(f->arg, &e.in, &st);
		}
		qent_free(&e);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* A request: hashed, then queued or routed. */
static int
front_request(struct kvp_front *f, struct kvp_rec_hasher *h, struct kvp_rin *in,
              struct kvp_route_step *st, struct kvp_diag *d)
{
	struct kvp_router *r0 = f->r[0];
	size_t k = 0;

	if (in->flags & KVP_RIN_BLOCK_SIZE_MISMATCH) {
		kvp_router_stats_mut(r0)->block_size_mismatch++;
		st->bs_mismatch = 1;
	}
	if (kvp_rec_hash(h, in, d) != 0 || pick_replica(f, &in->rq, &k, d) != 0)
		return -1;
	tick(f, in);
	if (f->o.queue && f->has_clock)
		kvp_router_tick(f->r[k], f->clock);
	if (f->o.queue &&
	    (f->nq > 0 ||
	     kvp_router_queue_busy(f->r[k], &in->rq, f->o.queue_tokens))) {
		if (enqueue(f, in, k) != 0)
			return kvp_diag_set(d, 0, "out of memory");
		st->queued = 1;
		kvp_router_stats_mut(r0)->queued++;
		return drain(f, d);
	}
	return route_on(f, k, in, st, d);
}

int
kvp_front_apply(struct kvp_front *f, struct kvp_rec_hasher *h,
                struct kvp_rin *in, struct kvp_route_step *st,
                struct kvp_diag *d)
{
	int rc;

	if (in->kind == KVP_RIN_REQUEST) {
		memset(st, 0, sizeof(*st));
		st->kind = in->kind;
		return front_request(f, h, in, st, d);
	}
	if (in->kind == KVP_RIN_FREE)
		for (size_t i = 0; i < f->o.replicas; i++) {
			uint64_t key, w;
			uint32_t rank;

			/* forget releases by expiry: only this free's count */
			(void)kvp_router_session_released(f->r[i], &key, &w,
			                                  &rank);
		}
	rc = kvp_route_apply_record(f->r[0], h, in, st, d);
	if (f->o.replicas > 1 && in->kind != KVP_RIN_IGNORED)
		rc = apply_rest(f, in, rc, d);
	tick(f, in);
	if (rc == 0 && f->o.queue && in->kind != KVP_RIN_EVENT &&
	    in->kind != KVP_RIN_IGNORED)
		return drain(f, d);
	return rc;
}

void
kvp_front_finish(struct kvp_front *f)
{
	struct kvp_route_stats *s0 = kvp_router_stats_mut(f->r[0]);

	while (f->nq > 0) {
		size_t h = queue_head(f);
		struct kvp_qent e = f->q[h];
		struct kvp_route_step st;
		uint32_t bs = kvp_router_block_size(f->r[0]);

		memmove(&f->q[h], &f->q[h + 1],
		        (f->nq - h - 1) * sizeof(*f->q));
		f->nq--;
		memset(&st, 0, sizeof(st));
		st.kind = KVP_RIN_REQUEST;
		st.dc.chosen = st.dc.max_overlap = -1;
		st.dc.tie_break = "none";
		st.dc.rejected = "QueuedAtEnd";
		st.dc.isl = e.in.rq.isl;
		st.dc.request_blocks = bs ? (e.in.rq.isl + bs - 1) / bs : 0;
		st.dc.hashed_blocks = e.in.rq.n;
		mark_wait(f, &e, &st.dc);
		s0->queued_at_end++;
		s0->requests++;
		f->emit(f->arg, &e.in, &st);
		qent_free(&e);
	}
	for (size_t i = 1; i < f->o.replicas; i++)
		kvp_router_absorb(f->r[0], f->r[i]);
}
