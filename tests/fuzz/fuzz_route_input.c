/* SPDX-License-Identifier: MIT */
/*
 * fuzz_route_input.c — route-score's input layer (lib/route/route_src.c,
 * route_input.c, route_hash.c) and the router behind it: the input is read
 * as an event stream merged with itself as a request stream, every record
 * parsed and, when valid, applied (events, requests, lifecycle) through
 * route_step as route-score would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "route/route_hash.h"
#include "route/route_input.h"
#include "route/route_src.h"
#include "route/route_step.h"
#include "route/router.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Built once (LLVMFuzzerInitialize): the parser and the hasher hold only
 * scratch buffers, so every input sees the same state; the router is
 * built per input. */
static struct kvp_rin_parser parser;
static struct kvp_route_hasher hasher;

static void
feed(struct kvp_router *r, struct kvp_rin_parser *p, struct kvp_route_hasher *h,
     struct kvp_rin_merge *m)
{
	for (;;) {
		struct kvp_diag d;
		struct kvp_rin in;
		struct kvp_route_step st;
		int rc = kvp_rin_merge_next(m, &d);

		if (rc == KVP_RIN_SRC_EOF)
			break;
		if (rc != KVP_RIN_SRC_RECORD)
			continue;
		if (kvp_rin_parse(p, m->src[m->cur].pending,
		                  m->src[m->cur].line, &in, &d) != 0)
			continue;
		/* keep worker declarations small: dp_size goes to 65536 */
		if (in.kind == KVP_RIN_WORKER && in.dp_size > 8)
			continue;
		(void)kvp_route_apply_record(r, h, &in, &st, &d);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	kvp_rin_init(&parser, 4, 0, NULL, NULL);
	kvp_route_hasher_init(&hasher, 4);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f[2] = {NULL, NULL};
	struct kvp_route_opts o;
	struct kvp_router *r;
	struct kvp_rin_merge m;
	int two = size > 1 && (data[0] & 2);

	if (size == 0)
		return 0;
	f[0] = fmemopen((void *)data, size, "r");
	if (two)
		f[1] = fmemopen((void *)data, size, "r");
	kvp_route_opts_init(&o);
	o.block_size = 4;
	o.approx = size & 1;
	o.ttl_ms = 1000;
	o.approx_max = 16;
	r = kvp_router_new(&o);
	if (r != NULL && f[0] != NULL && (!two || f[1] != NULL) &&
	    kvp_rin_merge_init(&m, f[0], f[1], 1 << 16) == 0) {
		feed(r, &parser, &hasher, &m);
		kvp_rin_merge_fini(&m);
	}
	kvp_router_free(r);
	for (int i = 0; i < 2; i++)
		if (f[i] != NULL)
			fclose(f[i]);
	return 0;
}
