/* SPDX-License-Identifier: MIT */
/*
 * fuzz_route_input.c — route-score's record parser (lib/route_input.c)
 * and the router behind it: every line of the input is parsed and, when
 * valid, applied (events, requests, lifecycle) as route-score would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "route/route_input.h"
#include "route/score.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "r");
	struct kvp_route_opts o;
	struct kvp_router *r;
	struct kvp_rin_parser p;
	struct kvp_rin_src s;

	if (f == NULL || size == 0) {
		if (f != NULL)
			fclose(f);
		return 0;
	}
	kvp_route_opts_init(&o);
	o.block_size = 4;
	o.approx = size & 1;
	o.ttl_ms = 1000;
	o.approx_max = 16;
	r = kvp_router_new(&o);
	kvp_rin_init(&p, 4, 0, NULL, NULL);
	if (r == NULL || kvp_rin_src_init(&s, f, 1 << 16) != 0) {
		kvp_router_free(r);
		fclose(f);
		return 0;
	}
	for (;;) {
		struct kvp_diag d;
		struct kvp_rin in;
		struct kvp_decision dc;
		struct kvp_event_result res;
		int rc = kvp_rin_src_next(&s, &d);

		if (rc == KVP_RIN_SRC_EOF || rc == KVP_RIN_SRC_IOERR)
			break;
		if (rc != KVP_RIN_SRC_RECORD)
			continue;
		if (kvp_rin_parse(&p, s.pending, s.line, &in, &d) == 0) {
			switch (in.kind) {
			case KVP_RIN_EVENT:
				(void)kvp_router_apply(r, &in.ev, &res, &d);
				break;
			case KVP_RIN_REQUEST:
				(void)kvp_router_route(r, &in.rq, &dc, &d);
				break;
			case KVP_RIN_WORKER:
				if (in.dp_size <= 8)
					for (uint32_t i = 0; i < in.dp_size;
					     i++)
						(void)kvp_router_add_candidate(
						    r, in.worker_id,
						    in.dp_start + i);
				break;
			case KVP_RIN_REMOVE_WORKER:
				(void)kvp_router_remove_worker(r, in.worker_id);
				break;
			case KVP_RIN_PREFILL_DONE:
				(void)kvp_router_prefill_done(r, in.rq.id,
				                              in.rq.id_len, &d);
				break;
			case KVP_RIN_FREE:
				(void)kvp_router_free_request(r, in.rq.id,
				                              in.rq.id_len, &d);
				break;
			case KVP_RIN_LOAD:
				(void)kvp_router_set_load(
				    r, in.worker_id, in.dp_rank,
				    in.prefill_tokens, in.decode_blocks);
				break;
			}
		}
		kvp_rin_src_drop(&s);
	}
	kvp_rin_src_fini(&s);
	kvp_rin_fini(&p);
	kvp_router_free(r);
	fclose(f);
	return 0;
}
