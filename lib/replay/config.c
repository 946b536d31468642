/* SPDX-License-Identifier: MIT */
/*
 * config.c — a replay's options and the rules between them. See config.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/diag.h"
#include "lab/lab.h"
#include "lab/policy.h"
#include "replay/config.h"
#include "replay/front.h"
#include "replay/rec_hash.h"
#include "replay/route_input.h"
#include "replay/route_out.h"
#include "replay/route_src.h"
#include "replay/route_step.h"
#include "route/index.h"
#include "route/router.h"

/* Without the caller's spelling of the options. */
static const char *const neutral[KVP_RF_COUNT] = {
    [KVP_RF_BLOCK_SIZE] = "the block size",
    [KVP_RF_DECODE_THR] = "a decode blocks threshold",
    [KVP_RF_TOTAL_KV_BLOCKS] = "the workers' KV blocks",
    [KVP_RF_PREFILL_FRAC] = "a prefill tokens fraction",
    [KVP_RF_QUEUE_THR] = "a router queue threshold",
    [KVP_RF_MAX_BATCHED] = "the workers' batched tokens",
    [KVP_RF_PREDICTED_TTL] = "predict-on-route",
    [KVP_RF_APPROX] = "approximate mode",
    [KVP_RF_FILE] = "the input",
    [KVP_RF_EVENTS] = "event",
    [KVP_RF_REQUESTS] = "request",
    [KVP_RF_CAPACITY] = "a cache capacity",
    [KVP_RF_MOONCAKE] = "a Mooncake trace",
    [KVP_RF_EMIT_EVENTS] = "keeping the caches' events",
    [KVP_RF_REPLICAS] = "router replicas",
    [KVP_RF_POLICY] = "a peer policy",
    [KVP_RF_MRC] = "miss-ratio curves",
    [KVP_RF_WORKERS] = "declared workers",
    [KVP_RF_ORPHANS_ROOT] = "rooting orphans",
    [KVP_RF_ENGINE_MODEL] = "an engine model",
    [KVP_RF_HOST_CAPACITY] = "a host tier",
};

/* How the caller names option i. */
static const char *
flag(const struct kvp_replay_opts *o, int i)
{
	return o->flags != NULL && o->flags[i] != NULL ? o->flags[i]
	                                               : neutral[i];
}

void
kvp_replay_opts_init(struct kvp_replay_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->trace_sample_rate = 1.0;
	kvp_route_opts_init(&o->ro);
	kvp_policy_opts_init(&o->pol);
}

int
kvp_replay_add_stream(struct kvp_replay_opts *o, const char *path, int requests,
                      struct kvp_diag *d)
{
	if (o->nstreams == KVP_REPLAY_MAX_STREAMS)
		return kvp_diag_set(d, 0, "at most %d %s and %s streams",
		                    KVP_REPLAY_MAX_STREAMS,
		                    flag(o, KVP_RF_EVENTS),
		                    flag(o, KVP_RF_REQUESTS));
	o->streams[o->nstreams] = path;
	o->is_req[o->nstreams++] = requests;
	if (requests)
		o->nrq++;
	else
		o->nev++;
	return 0;
}

/* Dynamo's presets and the options its features need. */
static int
dynamo_end(struct kvp_replay_opts *o, struct kvp_diag *d)
{
	struct kvp_route_opts *ro = &o->ro;

	if (o->load_aware) {
		ro->credit = 0;
		ro->tier_credit = 0;
		ro->no_assume_reuse = 1;
		ro->no_load = 0;
		ro->no_track_prefill = 0;
		ro->load_aware = 1;
	}
	if (ro->has_decode_thr && ro->total_kv_blocks == 0)
		return kvp_diag_set(d, 0, "%s needs %s",
		                    flag(o, KVP_RF_DECODE_THR),
		                    flag(o, KVP_RF_TOTAL_KV_BLOCKS));
	if ((ro->has_prefill_frac || o->fo.queue) &&
	    ro->max_batched_tokens == 0)
		return kvp_diag_set(
		    d, 0, "%s and %s need %s", flag(o, KVP_RF_PREFILL_FRAC),
		    flag(o, KVP_RF_QUEUE_THR), flag(o, KVP_RF_MAX_BATCHED));
	if (ro->predicted_ttl_ms != 0 && ro->approx)
		return kvp_diag_set(d, 0,
		                    "%s and %s exclude each other (approximate "
		                    "mode already learns from decisions)",
		                    flag(o, KVP_RF_PREDICTED_TTL),
		                    flag(o, KVP_RF_APPROX));
	o->fo.queue_tokens = o->queue_thr * (double)ro->max_batched_tokens;
	if (o->fo.replicas == 0)
		o->fo.replicas = 1;
	return 0;
}

/* The streams: FILE is the missing kind's, standard input read once. */
static int
streams_end(struct kvp_replay_opts *o, struct kvp_diag *d)
{
	int nstdin = 0;

	if (o->nev > 0 && o->nrq > 0 && o->input != NULL)
		return kvp_diag_set(
		    d, 0, "%s and %s with %s exclude each other",
		    flag(o, KVP_RF_FILE), flag(o, KVP_RF_EVENTS),
		    flag(o, KVP_RF_REQUESTS));
	if (o->nstreams > 0 && (o->nev == 0 || o->nrq == 0) &&
	    kvp_replay_add_stream(o, o->input ? o->input : "-", o->nrq == 0,
	                          d) != 0)
		return -1;
	if (o->nstreams > 0)
		o->input = NULL;
	for (int i = 0; i < o->nstreams; i++)
		nstdin += strcmp(o->streams[i], "-") == 0;
	if (nstdin > 1)
		return kvp_diag_set(d, 0,
		                    "%s and %s cannot both read standard "
		                    "input",
		                    flag(o, KVP_RF_EVENTS),
		                    flag(o, KVP_RF_REQUESTS));
	return 0;
}

/* The engine model: its caches take --capacity-blocks' size; with
 * events (neither approximate mode nor a trace) they alone do (the
 * router's index is the events'). A host tier is SGLang's. */
static int
engine_end(struct kvp_replay_opts *o, struct kvp_diag *d)
{
	struct kvp_policy_opts *p = &o->pol;

	if (p->host_capacity > 0 && p->engine_model != KVP_ENGINE_SGLANG)
		return kvp_diag_set(d, 0, "%s needs %s sglang",
		                    flag(o, KVP_RF_HOST_CAPACITY),
		                    flag(o, KVP_RF_ENGINE_MODEL));
	if (p->engine_model == 0)
		return 0;
	if (o->fo.replicas > 1)
		return kvp_diag_set(d, 0,
		                    "%s models one router; it does not "
		                    "combine with %s",
		                    flag(o, KVP_RF_ENGINE_MODEL),
		                    flag(o, KVP_RF_REPLICAS));
	p->engine_capacity = p->capacity;
	p->block_size = o->block_size;
	if (!o->ro.approx && !o->mooncake)
		p->capacity = 0;
	return 0;
}

/* The policy lab's rules: a bounded cache is fed by the router's own
 * decisions, so it needs a mode that has them, and replaces the TTL. */
static int
lab_end(struct kvp_replay_opts *o, struct kvp_diag *d)
{
	struct kvp_policy_opts *p = &o->pol;

	if (p->capacity > 0 && !o->ro.approx && !o->mooncake &&
	    p->engine_model == 0)
		return kvp_diag_set(
		    d, 0, "%s needs %s or %s", flag(o, KVP_RF_CAPACITY),
		    flag(o, KVP_RF_APPROX), flag(o, KVP_RF_MOONCAKE));
	if (engine_end(o, d) != 0)
		return -1;
	if (p->capacity > 0)
		o->ro.approx = 0;
	if (o->emit_events != NULL && p->capacity == 0)
		return kvp_diag_set(d, 0, "%s needs %s",
		                    flag(o, KVP_RF_EMIT_EVENTS),
		                    flag(o, KVP_RF_CAPACITY));
	p->emit_events = o->emit_events != NULL;
	/* each replica would keep its own caches and curves: one router */
	if (o->fo.replicas > 1 &&
	    (p->policy != KVP_POLICY_DYNAMO || p->capacity > 0 || p->mrc ||
	     p->prefill_tps > 0 || p->decode_tps > 0))
		return kvp_diag_set(
		    d, 0,
		    "%s models Dynamo's router replicas; it does "
		    "not combine with %s, %s, %s or simulated "
		    "time",
		    flag(o, KVP_RF_REPLICAS), flag(o, KVP_RF_POLICY),
		    flag(o, KVP_RF_CAPACITY), flag(o, KVP_RF_MRC));
	return 0;
}

int
kvp_replay_end(struct kvp_replay_opts *o, struct kvp_diag *d)
{
	if (o->mooncake && o->block_size == 0)
		o->block_size = 512;
	if (o->block_size == 0)
		return kvp_diag_set(d, 0,
		                    "%s is required (vLLM 16, Mooncake "
		                    "512)",
		                    flag(o, KVP_RF_BLOCK_SIZE));
	o->ro.block_size = o->block_size;
	o->ro.score_parts = o->score_parts ||
	                    o->format == KVP_ROUT_DYNAMO_TRACE ||
	                    o->format == KVP_ROUT_DYNAMO_REQUEST_TRACE;
	if (dynamo_end(o, d) != 0 || streams_end(o, d) != 0)
		return -1;
	return lab_end(o, d);
}

int
kvp_replay_setup(const struct kvp_replay_opts *o, struct kvp_front *f,
                 kvp_front_emit emit, void *arg, struct kvp_rec_hasher *h,
                 struct kvp_rout *out, struct kvp_diag *d)
{
	kvp_rec_hasher_init(h, o->block_size);
	if (kvp_front_init(f, &o->fo, &o->ro, &o->pol, emit, arg) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (size_t k = 0; k < o->fo.replicas; k++)
		for (uint64_t i = 0; i < o->workers; i++)
			if (kvp_router_add_candidate(kvp_front_router(f, k), i,
			                             0) != 0)
				return kvp_diag_set(d, 0, "out of memory");
	out->format = o->format;
	out->brief = o->brief;
	out->block_size = o->block_size;
	out->block_size_hint = o->flags ? o->flags[KVP_RF_BLOCK_SIZE] : NULL;
	out->stats = kvp_router_stats(kvp_front_router(f, 0));
	out->engine_model = o->pol.engine_model;
	out->score_parts = o->score_parts;
	out->trace.ro = kvp_router_opts(kvp_front_router(f, 0));
	out->trace.pol = &o->pol;
	out->trace.sample_rate = o->trace_sample_rate;
	return 0;
}

int
kvp_replay_add_input(const struct kvp_replay_opts *o, struct kvp_rin_merge *m,
                     FILE *f, size_t max, int requests)
{
	return kvp_rin_merge_add(m, f, max, requests, o->block_size,
	                         o->mooncake, o->lora, o->ns);
}

/* ---- warnings ----------------------------------------------------------- */

static const char *const warn_names[KVP_RW_COUNT] = {
    [KVP_RW_PARENT] = "parent_not_found",
    [KVP_RW_SELF] = "self_reference",
    [KVP_RW_STALE] = "stale",
    [KVP_RW_GAP] = "gap",
    [KVP_RW_UNKNOWN_REMOVE] = "unknown_removal",
    [KVP_RW_BLOCK_SIZE] = "block_size_mismatch",
    [KVP_RW_TRUNCATED] = "truncated",
    [KVP_RW_DUP_REQUEST] = "duplicate_request_id",
};

const char *const *
kvp_replay_warn_names(void)
{
	return warn_names;
}

/* An event's: its block size and tokens; once applied (rc 0), its
 * event_id, the store the index rejected, the removals it did not hold. */
static size_t
event_warnings(const struct kvp_rin *in, const struct kvp_route_step *st,
               int rc, int *kinds)
{
	const struct kvp_event_result *res = &st->ev;
	size_t n = 0;

	if (st->bs_mismatch)
		kinds[n++] = KVP_RW_BLOCK_SIZE;
	if (st->truncated)
		kinds[n++] = KVP_RW_TRUNCATED;
	if (rc != 0)
		return n;
	if (res->stale)
		kinds[n++] = KVP_RW_STALE;
	if (res->gap)
		kinds[n++] = KVP_RW_GAP;
	if (in->ev.kind == KVP_EV_STORED &&
	    (res->applied || res->store_status != KVP_STORE_OK)) {
		if (res->store_status == KVP_STORE_PARENT_NOT_FOUND)
			kinds[n++] = KVP_RW_PARENT;
		if (res->store_status == KVP_STORE_SELF_REFERENCE)
			kinds[n++] = KVP_RW_SELF;
	}
	if (res->unknown)
		kinds[n++] = KVP_RW_UNKNOWN_REMOVE;
	return n;
}

size_t
kvp_replay_warnings(const struct kvp_rin *in, const struct kvp_route_step *st,
                    int rc, int *kinds)
{
	size_t n = 0;

	if (st->kind == KVP_RIN_EVENT)
		return event_warnings(in, st, rc, kinds);
	if (st->kind != KVP_RIN_REQUEST)
		return 0;
	if (st->bs_mismatch)
		kinds[n++] = KVP_RW_BLOCK_SIZE;
	if (st->dc.warnings & KVP_WARN_DUPLICATE_REQUEST)
		kinds[n++] = KVP_RW_DUP_REQUEST;
	return n;
}

void
kvp_replay_warning_text(const struct kvp_replay_opts *o,
                        const struct kvp_rin *in,
                        const struct kvp_route_step *st, int kind, char *buf,
                        size_t n)
{
	const struct kvp_event *ev = &in->ev;
	const struct kvp_event_result *res = &st->ev;

	switch (kind) {
	case KVP_RW_PARENT:
		snprintf(buf, n,
		         "worker %" PRIu64 " dp_rank %u: parent %" PRIu64
		         " unknown; store skipped (capture began mid-run? "
		         "see %s)",
		         ev->worker_id, ev->dp_rank, ev->parent,
		         flag(o, KVP_RF_ORPHANS_ROOT));
		break;
	case KVP_RW_SELF:
		snprintf(buf, n,
		         "worker %" PRIu64 " dp_rank %u: store repeats "
		         "a hash or its parent; rejected",
		         ev->worker_id, ev->dp_rank);
		break;
	case KVP_RW_STALE:
		snprintf(buf, n,
		         "worker %" PRIu64 " dp_rank %u event_id %" PRIu64
		         " ignored",
		         ev->worker_id, ev->dp_rank, ev->event_id);
		break;
	case KVP_RW_GAP:
		snprintf(buf, n,
		         "worker %" PRIu64 " dp_rank %u: expected event_id "
		         "%" PRIu64 ", got %" PRIu64 " (%s)",
		         ev->worker_id, ev->dp_rank, res->expected,
		         ev->event_id,
		         o->ro.gaps == KVP_GAPS_SKIP ? "skipped" : "applied");
		break;
	case KVP_RW_UNKNOWN_REMOVE:
		snprintf(buf, n,
		         "worker %" PRIu64 " dp_rank %u: %zu removed hash(es) "
		         "not held",
		         ev->worker_id, ev->dp_rank, res->unknown);
		break;
	case KVP_RW_BLOCK_SIZE:
		if (st->kind == KVP_RIN_EVENT)
			snprintf(buf, n, "worker %" PRIu64 ": store dropped",
			         ev->worker_id);
		else
			snprintf(buf, n,
			         "request %.*s: its block_size differs from "
			         "%s %" PRIu32 "; hashed at %" PRIu32,
			         (int)(in->rq.id_len > 64 ? 64 : in->rq.id_len),
			         in->rq.id, flag(o, KVP_RF_BLOCK_SIZE),
			         o->block_size, o->block_size);
		break;
	case KVP_RW_TRUNCATED:
		snprintf(buf, n,
		         "worker %" PRIu64 ": tokens ran short; %zu block(s) "
		         "kept",
		         ev->worker_id, ev->n);
		break;
	case KVP_RW_DUP_REQUEST:
		snprintf(buf, n,
		         "an active request had the same id; it was "
		         "freed first");
		break;
	default:
		snprintf(buf, n, "?");
	}
}

int
kvp_replay_osl_unmodelled(const struct kvp_replay_opts *o,
                          const struct kvp_rin *in, int *said)
{
	if (*said)
		return 0;
	return *said = o->mooncake && in->kind == KVP_RIN_REQUEST &&
	               in->rq.has_osl && in->rq.osl > 0 &&
	               !(o->pol.prefill_tps > 0 || o->pol.decode_tps > 0);
}

int
kvp_replay_unrouted(const struct kvp_replay_opts *o,
                    const struct kvp_route_stats *s, struct kvp_diag *d)
{
	if (s->requests == 0 || s->no_candidate < s->requests)
		return 0;
	if (o->ro.approx && o->workers == 0)
		kvp_diag_set(d, 0,
		             "%s learns only from requests it routes: give "
		             "%s N",
		             flag(o, KVP_RF_APPROX), flag(o, KVP_RF_WORKERS));
	else if (s->events == 0 && o->nev == 0)
		kvp_diag_set(d, 0,
		             "no events were read and %s was not given (%s is "
		             "the only stream: give events with %s FILE and "
		             "requests with %s FILE, or declare %s N)",
		             flag(o, KVP_RF_WORKERS), flag(o, KVP_RF_FILE),
		             flag(o, KVP_RF_EVENTS), flag(o, KVP_RF_REQUESTS),
		             flag(o, KVP_RF_WORKERS));
	else if (s->events == 0)
		kvp_diag_set(d, 0,
		             "the event stream held no events (and %s was not "
		             "given)",
		             flag(o, KVP_RF_WORKERS));
	else
		kvp_diag_set(
		    d, 0, "no event named a worker that a request could use");
	return 1;
}
