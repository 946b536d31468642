/* SPDX-License-Identifier: MIT */
/*
 * fuzz_route_input.c — route-score's input layer (lib/replay/route_src.c,
 * route_input.c, route_hash.c) and the router behind it: the input is read
 * as an event stream merged with itself as a request stream, every record
 * parsed and, when valid, applied (events, requests, lifecycle) through
 * route_step as route-score would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "replay/rec_hash.h"
#include "replay/route_input.h"
#include "replay/route_src.h"
#include "replay/route_step.h"
#include "route/router.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Built once (LLVMFuzzerInitialize): the hasher holds only scratch
 * buffers, so every input sees the same state; the router and the merge's
 * sources (with their parsers) are built per input. */
static struct kvp_rec_hasher hasher;

static void
feed(struct kvp_router *r, struct kvp_rec_hasher *h, struct kvp_rin_merge *m)
{
	for (;;) {
		struct kvp_diag d;
		struct kvp_rin *in;
		struct kvp_route_step st;
		int rc = kvp_rin_merge_next(m);

		if (rc == KVP_RIN_SRC_EOF)
			break;
		if (rc != KVP_RIN_SRC_RECORD)
			continue;
		in = &m->src[m->cur].rec;
		/* keep worker declarations small: dp_size goes to 65536 */
		if (in->kind == KVP_RIN_WORKER && in->dp_size > 8)
			continue;
		(void)kvp_route_apply_record(r, h, in, &st, &d);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	kvp_rec_hasher_init(&hasher, 4);
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
	kvp_rin_merge_init(&m);
	if (r != NULL && f[0] != NULL && (!two || f[1] != NULL) &&
	    kvp_rin_merge_add(&m, f[0], 1 << 16, !two, 4, 0, NULL, NULL) == 0 &&
	    (!two ||
	     kvp_rin_merge_add(&m, f[1], 1 << 16, 1, 4, 0, NULL, NULL) == 0))
		feed(r, &hasher, &m);
	kvp_rin_merge_fini(&m);
	kvp_router_free(r);
	for (int i = 0; i < 2; i++)
		if (f[i] != NULL)
			fclose(f[i]);
	return 0;
}
