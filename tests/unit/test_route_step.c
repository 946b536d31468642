/* SPDX-License-Identifier: MIT */
/*
 * test_route_step.c — route-score's record dispatch
 * (lib/replay/route_step.h), request hashing (rec_hash.h), the input
 * streams' time merge (route_src.h) and the output writers (route_out.h).
 * Expected values follow the contracts in those headers and router.h (a
 * `worker` record declares dp_size ranks, remove_worker counts removed
 * ranks, events make their (worker, rank) a candidate, lifecycle records
 * for unknown ids fail), blockhash.h's hash scheme and the summary
 * record's leading keys in kvpipe-records(5).
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/jsonw.h"
#include "common/ndjson.h"
#include "replay/rec_hash.h"
#include "route/route_hash.h"
#include "replay/route_input.h"
#include "replay/route_out.h"
#include "replay/route_src.h"
#include "replay/route_step.h"
#include "route/router.h"
#include "unit.h"

static struct kvp_rec_hasher h;

static void
test_dispatch(struct kvp_router *r)
{
	struct kvp_route_step st;
	struct kvp_diag d;
	struct kvp_rin in;

	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_IGNORED;
	CHECK(kvp_route_apply_record(r, &h, &in, &st, &d) == 0);
	CHECK(st.kind == KVP_RIN_IGNORED);
	CHECK_U64(kvp_router_ncandidates(r), 0);

	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_WORKER;
	in.worker_id = 5;
	in.dp_start = 2;
	in.dp_size = 3;
	CHECK(kvp_route_apply_record(r, &h, &in, &st, &d) == 0);
	CHECK(st.kind == KVP_RIN_WORKER);
	CHECK_U64(kvp_router_ncandidates(r), 3);

	/* a cleared event: its (worker, rank) becomes a candidate; the
	 * flags come back for the caller's warnings */
	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_EVENT;
	in.flags = KVP_RIN_BLOCK_SIZE_MISMATCH | KVP_RIN_TRUNCATED;
	in.ev.kind = KVP_EV_CLEARED;
	in.ev.worker_id = 7;
	CHECK(kvp_route_apply_record(r, &h, &in, &st, &d) == 0);
	CHECK(st.kind == KVP_RIN_EVENT);
	CHECK(st.bs_mismatch == 1);
	CHECK(st.truncated == 1);
	CHECK_U64(kvp_router_stats(r)->block_size_mismatch, 1);
	CHECK_U64(kvp_router_ncandidates(r), 4);

	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_REMOVE_WORKER;
	in.worker_id = 5;
	CHECK(kvp_route_apply_record(r, &h, &in, &st, &d) == 0);
	CHECK_U64(kvp_router_stats(r)->workers_removed, 3);
	CHECK_U64(kvp_router_ncandidates(r), 1);

	memset(&in, 0, sizeof(in));
	memset(&d, 0, sizeof(d));
	in.kind = KVP_RIN_FREE;
	in.rq.id = "nope";
	in.rq.id_len = 4;
	CHECK(kvp_route_apply_record(r, &h, &in, &st, &d) == -1);
	CHECK(d.msg[0] != '\0');
	in.kind = KVP_RIN_PREFILL_DONE;
	memset(&d, 0, sizeof(d));
	CHECK(kvp_route_apply_record(r, &h, &in, &st, &d) == -1);
	CHECK(d.msg[0] != '\0');
}

/* A token-bearing request is hashed before routing: 9 tokens at block size
 * 4 are 2 full blocks, hashed as kvp_hash_tokens() does; the query
 * commits nothing. */
static void
test_hashing(struct kvp_router *r)
{
	static const uint32_t tok[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	uint64_t local[2], seq[2], chained[2];
	struct kvp_route_step st;
	struct kvp_diag d;
	struct kvp_rin in;

	CHECK_U64(kvp_hash_tokens(tok, 9, 4, 0, KVP_HASH_SEED, KVP_HASH_SEED,
	                          local, seq),
	          2);
	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_REQUEST;
	in.rq.id = "q";
	in.rq.id_len = 1;
	in.rq.isl = 9;
	in.tokens = tok;
	in.ntokens = 9;
	in.seed = KVP_HASH_SEED;
	CHECK(kvp_route_apply_record(r, &h, &in, &st, &d) == 0);
	CHECK_U64(in.rq.n, 2);
	CHECK(in.rq.local != NULL && in.rq.seq != NULL);
	if (in.rq.local != NULL && in.rq.seq != NULL) {
		CHECK_U64(in.rq.local[1], local[1]);
		CHECK_U64(in.rq.seq[1], seq[1]);
	}
	CHECK_U64(st.dc.hashed_blocks, 2);
	CHECK_U64(st.dc.request_blocks, 3);
	CHECK_U64(kvp_router_stats(r)->queries, 1);

	/* the one chain: sequence hashes from local hashes */
	kvp_route_chain(local, 2, chained);
	CHECK_U64(chained[0], seq[0]);
	CHECK_U64(chained[1], seq[1]);
}

/* A store's token block gets the same local hash as that block of a
 * request (blocks without tokens keep their tokens_hash). */
static void
test_store_hashing(void)
{
	static const uint32_t tok[4] = {5, 6, 7, 8};
	static const unsigned char from[2] = {0, 1};
	uint64_t ext[2] = {70, 71}, loc[2] = {77, 0}, want[1];
	struct kvp_route_opts ro;
	struct kvp_router *r;
	struct kvp_route_step st;
	struct kvp_diag d;
	struct kvp_rin in;

	kvp_route_opts_init(&ro);
	ro.block_size = 4;
	r = kvp_router_new(&ro);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	kvp_hash_tokens(tok, 4, 4, 0, KVP_HASH_SEED, KVP_HASH_SEED, want, NULL);
	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_EVENT;
	in.ev.kind = KVP_EV_STORED;
	in.ev.worker_id = 9;
	in.ev.ext = ext;
	in.ev.local = loc;
	in.ev.n = 2;
	in.tokens = tok;
	in.ntokens = 4;
	in.seed = KVP_HASH_SEED;
	in.from_tokens = from;
	CHECK(kvp_route_apply_record(r, &h, &in, &st, &d) == 0);
	CHECK_U64(in.ev.local[0], 77);
	CHECK_U64(in.ev.local[1], want[0]);
	CHECK_U64(kvp_router_stats(r)->blocks_stored, 2);
	kvp_router_free(r);
}

/* Three streams merge by timestamp (x.ts_ms, ts_ms, KvRecorder's
 * timestamp), the event streams first on ties and then in the order added;
 * a record without a timestamp takes its stream's last one; a bad line
 * comes in its stream's place. Expected order worked out by hand: e1 (1);
 * at 5, events beat the request r1 and the first event stream beats the
 * third: e2, the bad line, e3 (no ts: 5), then e9 (third stream), r1, and
 * r2 (ts 2, but after r1 in its file). */
static void
test_merge(void)
{
	static char ev[] =
	    "{\"worker_id\":1,\"event\":{\"data\":\"cleared\"},\"x\":{\"ts_"
	    "ms\":1}}\n"
	    "{\"worker_id\":2,\"event\":{\"data\":\"cleared\"},\"x\":{\"ts_"
	    "ms\":5}}\n"
	    "not json\n{\"worker_id\":3,\"event\":{\"data\":\"cleared\"}}\n";
	static char rq[] =
	    "{\"request_id\":\"r1\",\"ts_ms\":5,\"hash_ids\":[1]}"
	    "\n\n{\"request_id\":\"r2\",\"ts_ms\":2,"
	    "\"hash_ids\":[1]}\n";
	static char kr[] = "{\"timestamp\":5,\"event\":{\"worker_id\":9,"
	                   "\"event\":{\"data\":\"cleared\"}}}\n";
	static const char *const want[] = {"e1", "e2", "BAD", "e3",
	                                   "e9", "r1", "r2"};
	FILE *fe = fmemopen(ev, strlen(ev), "r");
	FILE *fr = fmemopen(rq, strlen(rq), "r");
	FILE *fk = fmemopen(kr, strlen(kr), "r");
	struct kvp_rin_merge m;
	size_t k = 0;
	int rc;

	CHECK(fe != NULL && fr != NULL && fk != NULL);
	if (fe == NULL || fr == NULL || fk == NULL)
		return;
	kvp_rin_merge_init(&m);
	CHECK(kvp_rin_merge_add(&m, fe, 1 << 10, 0, 4, 0, NULL, NULL) == 0);
	CHECK(kvp_rin_merge_add(&m, fr, 1 << 10, 1, 4, 0, NULL, NULL) == 0);
	CHECK(kvp_rin_merge_add(&m, fk, 1 << 10, 0, 4, 0, NULL, NULL) == 0);
	while ((rc = kvp_rin_merge_next(&m)) != KVP_RIN_SRC_EOF && k < 7) {
		const struct kvp_rin *in = &m.src[m.cur].rec;
		char got[8] = "BAD";

		if (rc == KVP_RIN_SRC_RECORD && in->kind == KVP_RIN_EVENT)
			snprintf(got, sizeof(got), "e%u",
			         (unsigned)in->ev.worker_id);
		else if (rc == KVP_RIN_SRC_RECORD)
			snprintf(got, sizeof(got), "%.*s", (int)in->rq.id_len,
			         in->rq.id);
		else
			CHECK_U64(m.src[m.cur].line, 3);
		CHECK(strcmp(got, want[k]) == 0);
		k++;
	}
	CHECK_U64(k, 7);
	kvp_rin_merge_fini(&m);
	fclose(fe);
	fclose(fr);
	fclose(fk);
}

/* summary: nothing in log format, a summary record in NDJSON */
static void
test_summary(struct kvp_router *r)
{
	FILE *f = tmpfile();
	struct kvp_jw jw;
	struct kvp_rout o;
	char buf[64];
	size_t n;

	CHECK(f != NULL);
	if (f == NULL)
		return;
	kvp_jw_init(&jw, f, 0, 0);
	memset(&o, 0, sizeof(o));
	o.jw = &jw;
	o.block_size = 4;
	o.format = KVP_ROUT_LOG;
	kvp_rout_summary(&o, r, 0, 0);
	fflush(f);
	CHECK_U64((uint64_t)ftell(f), 0);
	o.format = KVP_ROUT_NDJSON;
	kvp_rout_summary(&o, r, 0, 0);
	fflush(f);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	CHECK(strncmp(buf, "{\"rec\":\"summary\",\"events\":1,", 28) == 0);
	kvp_jw_fini(&jw);
	fclose(f);
}

int
main(void)
{
	struct kvp_route_opts ro;
	struct kvp_router *r;

	kvp_route_opts_init(&ro);
	ro.block_size = 4;
	r = kvp_router_new(&ro);
	CHECK(r != NULL);
	if (r == NULL)
		return UNIT_DONE();
	kvp_rec_hasher_init(&h, 4);
	test_dispatch(r);
	test_hashing(r);
	test_store_hashing();
	test_merge();
	test_summary(r);
	kvp_rec_hasher_fini(&h);
	kvp_router_free(r);
	return UNIT_DONE();
}
