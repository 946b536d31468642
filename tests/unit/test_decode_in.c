/* SPDX-License-Identifier: MIT */
/* test_decode_in.c — kv-decode's input framing. Frame bytes are written
 * by hand from the layout in spec-kv-events.md §6.1 (u32 BE frame count,
 * then u32 BE length + bytes per frame; seq is u64 BE); expected offsets
 * are counted from that layout. */
#define _GNU_SOURCE /* fmemopen */
#include <stdio.h>
#include <string.h>

#include "events/decode_in.h"
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

int
main(void)
{
	test_detect();
	test_find_payload();
	test_frames();
	return UNIT_DONE();
}
