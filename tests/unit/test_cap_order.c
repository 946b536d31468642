/* SPDX-License-Identifier: MIT */
/* test_cap_order.c — lib/capture/cap_order.c without sockets: the lost
 * line for messages taken at the stop and not written (kvp_cap_left_). */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_internal.h"
#include "kvpipe.h"
#include "unit.h"

struct run {
	struct kvp_cap c;
	struct cap_stream *s[1];
	char *buf;
	size_t len;
};

static void
run_init(struct run *r)
{
	memset(r, 0, sizeof *r);
	r->s[0] = calloc(1, sizeof *r->s[0]);
	snprintf(r->s[0]->name, sizeof r->s[0]->name, "tcp://127.0.0.1:5557");
	r->c.s = r->s;
	r->c.n = r->c.cap = 1;
	r->c.o.max_line = 1 << 20;
	r->c.o.max_held_msgs = 16;
	r->c.o.max_held_bytes = 1 << 20;
	r->c.out = open_memstream(&r->buf, &r->len);
	kvp_jw_init(&r->c.jw, r->c.out, 0, 0);
}

static int
live(struct run *r, uint64_t seq)
{
	static const unsigned char batch[] = {0x92, 0x01, 0x90};

	return kvp_cap_live_(&r->c, r->s[0], seq, 1.0, "kv", 2, batch,
	                     sizeof batch);
}

static size_t
lines(struct run *r)
{
	size_t n = 0;

	fflush(r->c.out);
	for (size_t i = 0; i < r->len; i++)
		n += r->buf[i] == '\n';
	return n;
}

static void
run_fini(struct run *r)
{
	kvp_jw_fini(&r->c.jw);
	fclose(r->c.out);
	free(r->buf);
	kvp_cap_stream_free_(r->s[0]);
}

int
main(void)
{
	struct run r;

	/* kv-capture(1): messages taken at the stop and not written are
	 * "written as one lost line per stream": live 10, then 11..13 taken
	 * give the line {"from":11,"to":13} after the data line. */
	run_init(&r);
	CHECK(live(&r, 10) == 0);
	kvp_cap_taken_(r.s[0], 11);
	kvp_cap_taken_(r.s[0], 12);
	kvp_cap_taken_(r.s[0], 13);
	CHECK(kvp_cap_left_(&r.c, r.s[0]) == 0);
	CHECK_U64(lines(&r), 2);
	CHECK(strstr(r.buf,
	             "\"rec\":\"lost\",\"stream\":\"tcp://127.0.0.1:5557\","
	             "\"from\":11,\"to\":13,") != NULL);
	CHECK_U64(r.s[0]->st.lost_ranges, 1);
	CHECK_U64(r.s[0]->st.lost_seqs, 3);
	run_fini(&r);

	/* Found by fuzz_cap_order (corpus/fuzz_cap_order/left-after-seq-max):
	 * after live seq 2^64-1 the next seq wrapped to 0, so seqs 5..7 taken
	 * at the stop were written as a lost line after seq 2^64-1, against
	 * "per stream, lines are in seq order" (kv-capture(1)). Seqs below
	 * the last one written are a new run, and like the seqs gone back in
	 * any other stop (capture_internal.h) get no line: the summary counts
	 * them as taken and not written. */
	run_init(&r);
	CHECK(live(&r, UINT64_MAX) == 0);
	kvp_cap_taken_(r.s[0], 5);
	kvp_cap_taken_(r.s[0], 7);
	CHECK(kvp_cap_left_(&r.c, r.s[0]) == 0);
	CHECK_U64(lines(&r), 1);
	CHECK(strstr(r.buf, "\"rec\":\"lost\"") == NULL);
	CHECK_U64(r.s[0]->st.lost_ranges, 0);
	CHECK_U64(r.s[0]->st.unwritten, 2);
	CHECK_U64(r.s[0]->st.written_live, 1);
	run_fini(&r);

	/* The same stop after seqs that went back below an earlier one
	 * (live 10, left 3..4): no line either, as before the fix. */
	run_init(&r);
	CHECK(live(&r, 10) == 0);
	kvp_cap_taken_(r.s[0], 3);
	kvp_cap_taken_(r.s[0], 4);
	CHECK(kvp_cap_left_(&r.c, r.s[0]) == 0);
	CHECK_U64(lines(&r), 1);
	CHECK_U64(r.s[0]->st.lost_ranges, 0);
	run_fini(&r);
	return UNIT_DONE();
}
