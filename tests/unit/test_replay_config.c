/* SPDX-License-Identifier: MIT */
/*
 * test_replay_config.c — a replay's options and their rules
 * (lib/replay/config.h): the presets, the checks across options in their
 * order, the one block size reaching the router, hasher, output and
 * parsers, which step results are warnings and in what order, and why a
 * run routed nothing. Expected values follow config.h's contract.
 */
#include <stdio.h>
#include <string.h>

#include "common/diag.h"
#include "lab/policy.h"
#include "replay/config.h"
#include "replay/front.h"
#include "replay/rec_hash.h"
#include "replay/route_out.h"
#include "replay/route_src.h"
#include "replay/route_step.h"
#include "route/index.h"
#include "route/router.h"
#include "unit.h"

static const char *const names[KVP_RF_COUNT] = {
    [KVP_RF_BLOCK_SIZE] = "--bs",
    [KVP_RF_CAPACITY] = "--cap",
    [KVP_RF_APPROX] = "--approx",
    [KVP_RF_MOONCAKE] = "--trace mooncake",
};

static struct kvp_replay_opts
opts(uint32_t bs)
{
	struct kvp_replay_opts o;

	kvp_replay_opts_init(&o);
	o.block_size = bs;
	return o;
}

/* The one block size reaches every part; Mooncake's is 512. */
static void
test_block_size(void)
{
	struct kvp_replay_opts o = opts(16);
	struct kvp_front f;
	struct kvp_rec_hasher h;
	struct kvp_rout out;
	struct kvp_rin_merge m;
	struct kvp_diag d;
	FILE *in = tmpfile();

	memset(&out, 0, sizeof(out));
	o.workers = 3;
	o.flags = names;
	CHECK(kvp_replay_end(&o, &d) == 0);
	CHECK_U64(o.ro.block_size, 16);
	CHECK(kvp_replay_setup(&o, &f, NULL, NULL, &h, &out, &d) == 0);
	CHECK_U64(h.block_size, 16);
	CHECK_U64(out.block_size, 16);
	CHECK_STR(out.block_size_hint, "--bs");
	CHECK_U64(kvp_router_block_size(kvp_front_router(&f, 0)), 16);
	CHECK_U64(kvp_router_ncandidates(kvp_front_router(&f, 0)), 3);
	CHECK(out.stats == kvp_router_stats(kvp_front_router(&f, 0)));
	kvp_rin_merge_init(&m);
	CHECK(in != NULL && kvp_replay_add_input(&o, &m, in, 1024, 1) == 0);
	CHECK(m.nsrc == 1 && m.src[0].p.block_size == 16 &&
	      m.src[0].requests == 1);
	kvp_rin_merge_fini(&m);
	if (in != NULL)
		fclose(in);
	kvp_front_fini(&f);
	kvp_rec_hasher_fini(&h);

	o = opts(0);
	o.mooncake = 1;
	CHECK(kvp_replay_end(&o, &d) == 0);
	CHECK_U64(o.block_size, 512);
	CHECK_U64(o.ro.block_size, 512);
	o = opts(64);
	o.mooncake = 1;
	CHECK(kvp_replay_end(&o, &d) == 0 && o.ro.block_size == 64);

	o = opts(0);
	CHECK(kvp_replay_end(&o, &d) == -1);
	CHECK_STR(d.msg, "the block size is required (vLLM 16, Mooncake 512)");
	o = opts(0);
	o.flags = names;
	CHECK(kvp_replay_end(&o, &d) == -1);
	CHECK_STR(d.msg, "--bs is required (vLLM 16, Mooncake 512)");
}

/* Dynamo's load-aware preset rewrites six fields; one replica by default;
 * the queue threshold in tokens. */
static void
test_presets(void)
{
	struct kvp_replay_opts o = opts(16);
	struct kvp_diag d;

	o.load_aware = 1;
	o.ro.tier_credit = 1;
	o.ro.no_load = 1;
	o.ro.no_track_prefill = 1;
	CHECK(kvp_replay_end(&o, &d) == 0);
	CHECK(o.ro.credit == 0 && o.ro.tier_credit == 0);
	CHECK(o.ro.no_assume_reuse == 1 && o.ro.no_load == 0);
	CHECK(o.ro.no_track_prefill == 0 && o.ro.load_aware == 1);
	CHECK_U64(o.fo.replicas, 1);

	o = opts(16);
	o.fo.queue = 1;
	o.queue_thr = 0.5;
	o.ro.max_batched_tokens = 8192;
	CHECK(kvp_replay_end(&o, &d) == 0);
	CHECK(o.fo.queue_tokens == 4096);
}

/* Bounded caches need a mode fed by decisions, and replace the TTL. */
static void
test_lab_rules(void)
{
	struct kvp_replay_opts o = opts(16);
	struct kvp_diag d;

	o.pol.capacity = 100;
	CHECK(kvp_replay_end(&o, &d) == -1);
	CHECK_STR(
	    d.msg,
	    "a cache capacity needs approximate mode or a Mooncake trace");
	o = opts(16);
	o.flags = names;
	o.pol.capacity = 100;
	CHECK(kvp_replay_end(&o, &d) == -1);
	CHECK_STR(d.msg, "--cap needs --approx or --trace mooncake");

	o = opts(16);
	o.pol.capacity = 100;
	o.ro.approx = 1;
	o.emit_events = "ev.ndjson";
	CHECK(kvp_replay_end(&o, &d) == 0);
	CHECK(o.ro.approx == 0 && o.pol.emit_events == 1);

	o = opts(16);
	o.emit_events = "ev.ndjson";
	CHECK(kvp_replay_end(&o, &d) == -1);

	/* replicas and the lab exclude each other */
	o = opts(16);
	o.fo.replicas = 2;
	o.pol.mrc = 1;
	CHECK(kvp_replay_end(&o, &d) == -1);
	o = opts(16);
	o.fo.replicas = 2;
	CHECK(kvp_replay_end(&o, &d) == 0);
}

/* The first failed check is reported: Dynamo's before the streams'
 * before the lab's; predict-on-route sees approximate mode before
 * bounded caches switch it off. */
static void
test_order(void)
{
	struct kvp_replay_opts o = opts(16);
	struct kvp_diag d;

	o.flags = names;
	o.ro.predicted_ttl_ms = 1000;
	o.ro.approx = 1;
	o.pol.capacity = 10;
	CHECK(kvp_replay_end(&o, &d) == -1);
	CHECK(strstr(d.msg, "exclude each other") != NULL);

	o = opts(16);
	o.ro.has_decode_thr = 1;
	CHECK(kvp_replay_add_stream(&o, "-", 0, &d) == 0);
	CHECK(kvp_replay_add_stream(&o, "-", 1, &d) == 0);
	CHECK(kvp_replay_end(&o, &d) == -1);
	CHECK(strstr(d.msg, "decode blocks threshold needs") != NULL);
}

/* With one kind of stream, the input is the other kind; stdin once; at
 * most KVP_REPLAY_MAX_STREAMS. */
static void
test_streams(void)
{
	struct kvp_replay_opts o = opts(16);
	struct kvp_diag d;
	int i;

	CHECK(kvp_replay_add_stream(&o, "ev", 0, &d) == 0);
	o.input = "rq";
	CHECK(kvp_replay_end(&o, &d) == 0);
	CHECK(o.nstreams == 2 && o.nrq == 1 && o.is_req[1] == 1);
	CHECK_STR(o.streams[1], "rq");
	CHECK(o.input == NULL);

	o = opts(16);
	CHECK(kvp_replay_add_stream(&o, "rq", 1, &d) == 0);
	CHECK(kvp_replay_end(&o, &d) == 0);
	CHECK(o.nev == 1 && o.is_req[1] == 0);
	CHECK_STR(o.streams[1], "-");

	o = opts(16);
	CHECK(kvp_replay_add_stream(&o, "ev", 0, &d) == 0);
	CHECK(kvp_replay_add_stream(&o, "rq", 1, &d) == 0);
	o.input = "x";
	CHECK(kvp_replay_end(&o, &d) == -1);

	o = opts(16);
	CHECK(kvp_replay_add_stream(&o, "-", 0, &d) == 0);
	CHECK(kvp_replay_end(&o, &d) == -1); /* the requests: stdin too */

	o = opts(16);
	for (i = 0; i < KVP_REPLAY_MAX_STREAMS; i++)
		CHECK(kvp_replay_add_stream(&o, "ev", 0, &d) == 0);
	CHECK(kvp_replay_add_stream(&o, "ev", 0, &d) == -1);
	CHECK(kvp_replay_end(&o, &d) == -1); /* no room for the requests */
}

/* Warnings in the order they are given, and their words. */
static void
test_warnings(void)
{
	struct kvp_replay_opts o = opts(16);
	struct kvp_route_step st;
	struct kvp_rin in;
	int k[KVP_RW_COUNT];
	char buf[200];

	memset(&st, 0, sizeof(st));
	memset(&in, 0, sizeof(in));
	in.kind = st.kind = KVP_RIN_EVENT;
	in.ev.kind = KVP_EV_STORED;
	in.ev.worker_id = 7;
	in.ev.event_id = 5;
	st.bs_mismatch = st.truncated = 1;
	st.ev.gap = 1;
	st.ev.expected = 3;
	st.ev.store_status = KVP_STORE_PARENT_NOT_FOUND;
	CHECK(kvp_replay_warnings(&in, &st, -1, k) == 2);
	CHECK(k[0] == KVP_RW_BLOCK_SIZE && k[1] == KVP_RW_TRUNCATED);
	CHECK(kvp_replay_warnings(&in, &st, 0, k) == 4);
	CHECK(k[2] == KVP_RW_GAP && k[3] == KVP_RW_PARENT);
	kvp_replay_warning_text(&o, &in, &st, KVP_RW_GAP, buf, sizeof(buf));
	CHECK_STR(buf, "worker 7 dp_rank 0: expected event_id 3, got 5 "
	               "(applied)");
	o.ro.gaps = KVP_GAPS_SKIP;
	kvp_replay_warning_text(&o, &in, &st, KVP_RW_GAP, buf, sizeof(buf));
	CHECK(strstr(buf, "(skipped)") != NULL);
	CHECK_STR(kvp_replay_warn_names()[KVP_RW_PARENT], "parent_not_found");

	/* a removal's store status says nothing */
	in.ev.kind = KVP_EV_REMOVED;
	st.bs_mismatch = st.truncated = st.ev.gap = 0;
	st.ev.unknown = 2;
	CHECK(kvp_replay_warnings(&in, &st, 0, k) == 1);
	CHECK(k[0] == KVP_RW_UNKNOWN_REMOVE);

	/* a decision's */
	memset(&st, 0, sizeof(st));
	in.kind = st.kind = KVP_RIN_REQUEST;
	in.rq.id = "q1";
	in.rq.id_len = 2;
	st.bs_mismatch = 1;
	st.dc.warnings = KVP_WARN_DUPLICATE_REQUEST;
	CHECK(kvp_replay_warnings(&in, &st, 0, k) == 2);
	CHECK(k[0] == KVP_RW_BLOCK_SIZE && k[1] == KVP_RW_DUP_REQUEST);
	kvp_replay_warning_text(&o, &in, &st, KVP_RW_BLOCK_SIZE, buf,
	                        sizeof(buf));
	CHECK_STR(buf, "request q1: its block_size differs from the block "
	               "size 16; hashed at 16");
	in.kind = st.kind = KVP_RIN_FREE;
	CHECK(kvp_replay_warnings(&in, &st, 0, k) == 0);
}

/* Why nothing was routed. */
static void
test_unrouted(void)
{
	struct kvp_replay_opts o = opts(16);
	struct kvp_route_stats s;
	struct kvp_diag d;

	memset(&s, 0, sizeof(s));
	CHECK(kvp_replay_unrouted(&o, &s, &d) == 0); /* no requests */
	s.requests = s.no_candidate = 4;
	CHECK(kvp_replay_unrouted(&o, &s, &d) == 1);
	CHECK(strstr(d.msg, "no events were read") != NULL);
	s.no_candidate = 3;
	CHECK(kvp_replay_unrouted(&o, &s, &d) == 0);
	s.no_candidate = 4;
	s.events = 9;
	CHECK(kvp_replay_unrouted(&o, &s, &d) == 1);
	CHECK_STR(d.msg, "no event named a worker that a request could use");
	o.ro.approx = 1;
	CHECK(kvp_replay_unrouted(&o, &s, &d) == 1);
	CHECK(strstr(d.msg, "learns only from requests it routes") != NULL);
}

int
main(void)
{
	test_block_size();
	test_presets();
	test_lab_rules();
	test_order();
	test_streams();
	test_warnings();
	test_unrouted();
	return UNIT_DONE();
}
