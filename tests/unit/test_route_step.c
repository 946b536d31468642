/* SPDX-License-Identifier: MIT */
/*
 * test_route_step.c — route-score's record dispatch (lib/route_step.h) and
 * output writers (lib/route_out.h). Expected values follow the contracts
 * in those headers and score.h (a `worker` record declares dp_size ranks,
 * remove_worker counts removed ranks, events make their (worker, rank) a
 * candidate, lifecycle records for unknown ids fail) and the summary
 * record's leading keys in kvpipe-records(5).
 */
#include <stdio.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/ndjson.h"
#include "route/route_input.h"
#include "route/route_out.h"
#include "route/route_step.h"
#include "route/score.h"
#include "unit.h"

int
main(void)
{
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
		return UNIT_DONE();

	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_IGNORED;
	CHECK(kvp_route_apply_record(r, &in, &st, &d) == 0);
	CHECK(st.kind == KVP_RIN_IGNORED);
	CHECK_U64(kvp_router_ncandidates(r), 0);

	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_WORKER;
	in.worker_id = 5;
	in.dp_start = 2;
	in.dp_size = 3;
	CHECK(kvp_route_apply_record(r, &in, &st, &d) == 0);
	CHECK(st.kind == KVP_RIN_WORKER);
	CHECK_U64(kvp_router_ncandidates(r), 3);

	/* a cleared event: its (worker, rank) becomes a candidate; the
	 * flags come back for the caller's warnings */
	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_EVENT;
	in.flags = KVP_RIN_BLOCK_SIZE_MISMATCH | KVP_RIN_TRUNCATED;
	in.ev.kind = KVP_EV_CLEARED;
	in.ev.worker_id = 7;
	CHECK(kvp_route_apply_record(r, &in, &st, &d) == 0);
	CHECK(st.kind == KVP_RIN_EVENT);
	CHECK(st.bs_mismatch == 1);
	CHECK(st.truncated == 1);
	CHECK_U64(kvp_router_stats(r)->block_size_mismatch, 1);
	CHECK_U64(kvp_router_ncandidates(r), 4);

	memset(&in, 0, sizeof(in));
	in.kind = KVP_RIN_REMOVE_WORKER;
	in.worker_id = 5;
	CHECK(kvp_route_apply_record(r, &in, &st, &d) == 0);
	CHECK_U64(kvp_router_stats(r)->workers_removed, 3);
	CHECK_U64(kvp_router_ncandidates(r), 1);

	memset(&in, 0, sizeof(in));
	memset(&d, 0, sizeof(d));
	in.kind = KVP_RIN_FREE;
	in.rq.id = "nope";
	in.rq.id_len = 4;
	CHECK(kvp_route_apply_record(r, &in, &st, &d) == -1);
	CHECK(d.msg[0] != '\0');
	in.kind = KVP_RIN_PREFILL_DONE;
	memset(&d, 0, sizeof(d));
	CHECK(kvp_route_apply_record(r, &in, &st, &d) == -1);
	CHECK(d.msg[0] != '\0');

	/* summary: nothing in log format, a summary record in NDJSON */
	{
		FILE *f = tmpfile();
		struct kvp_jw jw;
		struct kvp_rout o;
		char buf[64];
		size_t n;

		CHECK(f != NULL);
		if (f != NULL) {
			kvp_jw_init(&jw, f, 0, 0);
			memset(&o, 0, sizeof(o));
			o.out = f;
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
			CHECK(strncmp(buf, "{\"rec\":\"summary\",\"events\":1,",
			              28) == 0);
			kvp_jw_fini(&jw);
			fclose(f);
		}
	}
	kvp_router_free(r);
	return UNIT_DONE();
}
