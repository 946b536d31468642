/* SPDX-License-Identifier: MIT */
/* test_decode_in.c — kv-decode's input framing, seq tracking and the
 * decode session. Frame bytes are written
 * by hand from the layout in docs/spec/kv-events.md §6.1 (u32 BE frame count,
 * then u32 BE length + bytes per frame; seq is u64 BE); expected offsets
 * are counted from that layout. */
#define _GNU_SOURCE /* fmemopen */
#include <stdio.h>
#include <string.h>

#include "events/decode.h"
#include "events/decode_in.h"
#include "events/seqtrack.h"
#include "events/wire.h"
#include "unit.h"

static FILE *
mem(const void *p, size_t n)
{
	return fmemopen((void *)p, n, "rb");
}

static void
test_detect(void)
{
	static const unsigned char fr[] = {0, 0, 0, 3};
	static const unsigned char raw[] = {0x93, 1};
	static const char js[] = "{\"seq\":1}";
	FILE *f;

	f = mem(fr, sizeof fr);
	CHECK(kvp_din_detect(f) == KVP_DIN_FRAMES);
	CHECK(getc(f) == 0); /* the byte was pushed back */
	fclose(f);
	f = mem(raw, sizeof raw);
	CHECK(kvp_din_detect(f) == KVP_DIN_RAW);
	fclose(f);
	f = mem(js, strlen(js));
	CHECK(kvp_din_detect(f) == KVP_DIN_JSONL);
	fclose(f);
}

static void
test_find_payload(void)
{
	static const char a[] = "{\"seq\":1,\"payload_b64\": \"QUJD\",\"x\":2}";
	static const char nested[] = "{\"a\":{\"payload_b64\":\"QUJD\"}}";
	static const char twice[] =
	    "{\"payload_b64\":\"QQ==\",\"c\":{\"payload_b64\":\"x\"}}";
	static const char notstr[] = "{\"payload_b64\":12}";
	size_t s = 0, e = 0;

	CHECK(kvp_din_find_payload(a, strlen(a), &s, &e) == 1);
	CHECK_U64(s, 25); /* {"seq":1, is 9 bytes, the key 13, then `: "` */
	CHECK_U64(e, 29);
	CHECK(kvp_din_find_payload(nested, strlen(nested), &s, &e) == 0);
	CHECK(kvp_din_find_payload(twice, strlen(twice), &s, &e) == 0);
	CHECK(kvp_din_find_payload(notstr, strlen(notstr), &s, &e) == 0);
}

static void
test_frames(void)
{
	/* Message 1: 3 frames, topic "kv", seq 5, payload 0x90 (at 0).
	 * Message 2: 4 frames (replay), seq 2^64-1, empty payload: skipped.
	 * Message 3: 2 frames: bad, reading goes on.
	 * Message 4: truncated. */
	static const unsigned char in[] =
	    {
	        0,    0,    0,    3,    0, 0, 0,    2,    'k',  'v',
	        0,    0,    0,    8,    0, 0, 0,    0,    0,    0,
	        0,    5,    0,    0,    0, 1, 0x90, /* 27 bytes */
	        0,    0,    0,    4,    0, 0, 0,    0,    0,    0,
	        0,    0,    0,    0,    0, 8, 0xff, 0xff, 0xff, 0xff,
	        0xff, 0xff, 0xff, 0xff, 0, 0, 0,    0, /* 28 bytes: 27..55 */
	        0,    0,    0,    2,    0, 0, 0,    0,    0,    0,
	        0,    0, /* 12 bytes: 55..67 */
	        0,    0,    0,    3,    0, 0, 0,    9,    'x'};
	struct kvp_din_frames r;
	struct kvp_din_msg m;
	struct kvp_diag d;
	FILE *f = mem(in, sizeof in);

	kvp_din_frames_init(&r, f, 1024);
	CHECK(kvp_din_frames_next(&r, &m, &d) == KVP_DIN_MSG);
	CHECK_U64(m.start, 0);
	CHECK(m.has_seq);
	CHECK_U64(m.seq, 5);
	CHECK_U64(m.topic_len, 2);
	CHECK(memcmp(m.topic, "kv", 2) == 0);
	CHECK(m.source == NULL);
	CHECK_U64(m.len, 1);
	CHECK(m.payload[0] == 0x90);
	CHECK(kvp_din_frames_next(&r, &m, &d) == KVP_DIN_BAD);
	CHECK_U64(m.start, 55);
	CHECK(!m.has_seq);
	CHECK(strstr(d.msg, "2 frame(s)") != NULL);
	CHECK(kvp_din_frames_next(&r, &m, &d) == KVP_DIN_FATAL);
	CHECK_U64(m.start, 67);
	CHECK_STR(d.msg, "truncated message at end of input");
	kvp_din_frames_fini(&r);
	fclose(f);
}

/* [0, [["AllBlocksCleared"]], 0] */
#define CLEARED_B64 "kwCRkbBBbGxCbG9ja3NDbGVhcmVkAA=="

/* One reader over the framings: capture lines (a good one with a
 * worker_id, bad base64, a payload_len mismatch, an over-long line) and a
 * raw stream of two batches. */
static void
test_reader(void)
{
	static const char js[] =
	    "{\"seq\":7,\"topic\":\"kv\",\"worker_id\":3,\"payload_b64\":"
	    "\"" CLEARED_B64 "\"}\n"
	    "\n"
	    "{\"seq\":8,\"payload_b64\":\"QQ=a\"}\n"
	    "{\"seq\":9,\"payload_len\":5,\"payload_b64\":\"" CLEARED_B64
	    "\"}\n"
	    "{\"seq\":10,\"x\":\"0123456789012345678901234567890123456789"
	    "0123456789012345678901234567890123456789"
	    "0123456789012345678901234567890123456789\"}\n";
	static const unsigned char raw[] = {
	    0x93, 0x00, 0x91, 0x91, 0xb0, 'A',  'l', 'l', 'B',
	    'l',  'o',  'c',  'k',  's',  'C',  'l', 'e', 'a',
	    'r',  'e',  'd',  0x00, 0x92, 0x00, 0x90};
	struct kvp_din_opts o = {KVP_DIN_AUTO, 100, NULL, 1};
	struct kvp_wire *w = kvp_wire_new();
	struct kvp_din r;
	struct kvp_din_batch b;
	struct kvp_diag d;
	FILE *f = mem(js, strlen(js));

	CHECK(kvp_din_open(&r, f, &o) == 0);
	CHECK(kvp_din_next(&r, w, &b, &d) == KVP_DIN_MSG);
	CHECK(b.has_seq && b.seq == 7 && b.worker == 3 && b.line == 1);
	CHECK(b.topic_len == 2 && memcmp(b.topic, "kv", 2) == 0);
	CHECK(b.track && b.whole && b.capture != NULL && b.size == 22);
	CHECK(kvp_din_next(&r, w, &b, &d) == KVP_DIN_BAD);
	CHECK(b.line == 3 && b.seq == 8 && d.col == 0);
	CHECK(strncmp(d.msg, "payload_b64: invalid base64", 27) == 0);
	CHECK(kvp_din_next(&r, w, &b, &d) == KVP_DIN_BAD);
	CHECK_STR(d.msg,
	          "payload_len is 5 but payload_b64 decodes to 22 bytes");
	CHECK(kvp_din_next(&r, w, &b, &d) == KVP_DIN_BAD);
	CHECK_STR(d.msg, "line too long (over 100 bytes)"); /* no flag named */
	CHECK(kvp_din_next(&r, w, &b, &d) == KVP_DIN_EOF);
	kvp_din_close(&r);
	fclose(f);

	f = mem(raw, sizeof raw);
	CHECK(kvp_din_open(&r, f, &o) == 0 && r.o.format == KVP_DIN_RAW);
	CHECK(kvp_din_next(&r, w, &b, &d) == KVP_DIN_MSG);
	CHECK(b.at_offset && b.offset == 0 && b.seq == 0 && !b.track);
	CHECK(kvp_din_next(&r, w, &b, &d) == KVP_DIN_MSG);
	CHECK(b.offset == 22 && b.seq == 1 && b.size == 3);
	CHECK(kvp_din_next(&r, w, &b, &d) == KVP_DIN_EOF);
	kvp_din_close(&r);
	fclose(f);
	kvp_wire_free(w);
}

/* Seq tracking per stream: gap, stale, a new stream. */
static void
test_seqtrack(void)
{
	struct kvp_seqtrack t;
	struct kvp_seq_result r;

	kvp_seqtrack_init(&t);
	CHECK(kvp_seqtrack_next(&t, "kv", 2, 1, 0, 5, 3, 1, &r) == 0);
	CHECK(r.verdict == KVP_SEQ_GAP && r.expected == 0 && r.got == 3);
	CHECK(kvp_seqtrack_next(&t, "kv", 2, 1, 0, 5, 4, 1, &r) == 0);
	CHECK(r.verdict == KVP_SEQ_NEXT);
	CHECK(kvp_seqtrack_next(&t, "kv", 2, 1, 0, 5, 7, 1, &r) == 0);
	CHECK(r.verdict == KVP_SEQ_GAP && r.expected == 5);
	CHECK(kvp_seqtrack_next(&t, "kv", 2, 1, 0, 5, 6, 1, &r) == 0);
	CHECK(r.verdict == KVP_SEQ_STALE && r.expected == 8);
	CHECK(kvp_seqtrack_next(&t, "kv", 2, 1, 1, 5, 9, 0, &r) == 0);
	CHECK(r.verdict == KVP_SEQ_NEXT && t.n_streams == 2);
	kvp_seqtrack_fini(&t);
}

/* The session's strict rule names the option only when given one. */
static void
test_session_strict(void)
{
	static const char js[] = "{\"seq\":1,\"payload_b64\":\""
	                         "kgCRkbBBbGxCbG9ja3NDbGVhcmVk\"}\n";
	struct kvp_decode_opts o = {0};
	struct kvp_decode_pos where;
	struct kvp_decode *s;
	struct kvp_diag d;
	FILE *out = fopen("/dev/null", "w"), *f;

	o.strict = 1;
	o.max_bytes = 1000;
	for (int flag = 0; flag < 2; flag++) {
		o.strict_flag = flag ? "--strict" : NULL;
		s = kvp_decode_new(&o, out, &d);
		f = mem(js, strlen(js));
		CHECK(s != NULL && kvp_decode_open(s, f, 0, &d) == 0);
		CHECK(kvp_decode_step(s, &where, &d) == KVP_BAD);
		CHECK(where.has_seq && where.seq == 1 && where.line == 1);
		CHECK_STR(d.msg,
		          flag ? "envelope array has 2 elements; Dynamo "
		                 "(--strict) decodes exactly [ts, events, "
		                 "dp_rank]"
		               : "envelope array has 2 elements; Dynamo "
		                 "decodes exactly [ts, events, dp_rank]");
		CHECK(kvp_decode_step(s, &where, &d) == KVP_END);
		kvp_decode_free(s);
		fclose(f);
	}
	fclose(out);
}

int
main(void)
{
	test_detect();
	test_find_payload();
	test_frames();
	test_reader();
	test_seqtrack();
	test_session_strict();
	return UNIT_DONE();
}
