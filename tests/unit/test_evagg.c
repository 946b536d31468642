/* SPDX-License-Identifier: MIT */
/*
 * test_evagg.c — kv-report's --events aggregation (lib/report/evagg.c).
 * Lines are written as kvpipe-records(5) gives kv-decode's records (event,
 * gap, stale, batch, error), kv-normalize's RouterEvents and filtered
 * records, and Dynamo KvRecorder lines; the counts expected are read off
 * them by hand (evagg.h, kv-report(1)): events per type and per worker
 * (worker_id.dp_rank, dp_rank null or absent as 0), gaps and stale
 * batches, batch/error/filtered as other records, time from "ts" in
 * seconds or a KvRecorder "timestamp" in ms when the first event has one
 * (buckets at least a second wide), else the event's position; anything
 * else is a bad line with a message.
 */
#include <string.h>

#include "kvpipe.h"
#include "report/evagg.h"
#include "unit.h"

static int
line(struct kvp_evagg *a, const char *s, struct kvp_diag *d)
{
	memset(d, 0, sizeof *d);
	return kvp_evagg_line(a, s, strlen(s), d);
}

/* kv-decode output with times. */
static void
test_decoded(void)
{
	static const char *const in[] = {
	    /* 1: stored, worker 1.0 (dp_rank null), at 100.25 s */
	    "{\"rec\":\"event\",\"seq\":1,\"topic\":\"kv\",\"source\":\"live\","
	    "\"ts\":100.25,\"dp_rank\":null,\"worker_id\":1,\"idx\":0,"
	    "\"enc\":\"array\",\"type\":\"BlockStored\",\"block_hashes\":[1],"
	    "\"parent_block_hash\":null,\"token_ids\":[1,2],\"block_size\":2}",
	    /* 2: removed, worker 1.1, at 100.5 s */
	    "{\"rec\":\"event\",\"seq\":2,\"ts\":100.5,\"dp_rank\":1,"
	    "\"worker_id\":1,\"idx\":0,\"type\":\"BlockRemoved\","
	    "\"block_hashes\":[1]}",
	    /* 3: cleared, worker 2^64-1 .0, at 102.3 s */
	    "{\"rec\":\"event\",\"seq\":3,\"ts\":102.3,\"dp_rank\":0,"
	    "\"worker_id\":18446744073709551615,\"idx\":0,"
	    "\"type\":\"AllBlocksCleared\"}",
	    /* 4: Ignored: type other, worker 1.0, at 102.4 s */
	    "{\"rec\":\"event\",\"seq\":4,\"ts\":102.4,\"worker_id\":1,"
	    "\"idx\":0,\"type\":\"Ignored\"}",
	    /* gap on 1.0, stale on 1.1 */
	    "{\"rec\":\"gap\",\"stream\":\"kv:null:1\",\"expected\":5,"
	    "\"got\":7,\"topic\":\"kv\",\"dp_rank\":null,\"worker_id\":1}",
	    "{\"rec\":\"stale\",\"stream\":\"kv:1:1\",\"expected\":8,"
	    "\"got\":3,\"topic\":\"kv\",\"dp_rank\":1,\"worker_id\":1}",
	    /* other records: batch, error, kv-normalize's filtered */
	    "{\"rec\":\"batch\",\"seq\":3,\"ts\":1,\"dp_rank\":null,"
	    "\"n_events\":2,\"bytes\":10,\"topic\":\"kv\",\"worker_id\":1,"
	    "\"enc\":\"array\"}",
	    "{\"rec\":\"error\",\"seq\":null,\"stage\":\"line\",\"idx\":null,"
	    "\"msg\":\"bad\"}",
	    "{\"rec\":\"filtered\",\"seq\":1,\"idx\":0,\"worker_id\":1,"
	    "\"dp_rank\":0,\"event_type\":\"BlockStored\","
	    "\"reason\":\"ignored_event\"}",
	    /* 5: stored, worker 1.0, no ts: at the last time (102.4 s) */
	    "{\"rec\":\"event\",\"worker_id\":1,\"type\":\"BlockStored\"}",
	};
	struct kvp_evagg a;
	struct kvp_diag d;
	size_t k;

	kvp_evagg_init(&a);
	for (k = 0; k < sizeof in / sizeof in[0]; k++) {
		int rc = line(&a, in[k], &d);

		if (rc != KVP_OK)
			fprintf(stderr, "line %zu: %s\n", k, d.msg);
		CHECK(rc == KVP_OK);
	}
	CHECK_U64(a.events, 5);
	CHECK_U64(a.by_type[KVP_EVAGG_STORED], 2);
	CHECK_U64(a.by_type[KVP_EVAGG_REMOVED], 1);
	CHECK_U64(a.by_type[KVP_EVAGG_CLEARED], 1);
	CHECK_U64(a.by_type[KVP_EVAGG_OTHER], 1);
	CHECK_U64(a.gaps, 1);
	CHECK_U64(a.stale, 1);
	CHECK_U64(a.other_records, 3);
	/* workers in first-seen order */
	CHECK_U64(a.n_workers, 3);
	if (a.n_workers == 3) {
		CHECK(a.w[0].worker_id == 1 && a.w[0].dp_rank == 0);
		CHECK(a.w[0].by_type[KVP_EVAGG_STORED] == 2 &&
		      a.w[0].by_type[KVP_EVAGG_OTHER] == 1 &&
		      a.w[0].gaps == 1 && a.w[0].stale == 0);
		CHECK(a.w[1].worker_id == 1 && a.w[1].dp_rank == 1);
		CHECK(a.w[1].by_type[KVP_EVAGG_REMOVED] == 1 &&
		      a.w[1].stale == 1 && a.w[1].gaps == 0);
		CHECK(a.w[2].worker_id == UINT64_MAX && a.w[2].dp_rank == 0);
		CHECK(a.w[2].by_type[KVP_EVAGG_CLEARED] == 1);
	}
	/* time in ms from 100250, buckets of 1000 ms: events 1, 2 in
	 * bucket 0; 3, 4, 5 (102300..102400) in bucket 2 */
	CHECK(a.time_is_ts == 1 && a.tl.width == 1000 && a.tl.t0 == 100250);
	CHECK(a.tl.n == 3);
	CHECK(a.b[0].by_type[KVP_EVAGG_STORED] == 1 &&
	      a.b[0].by_type[KVP_EVAGG_REMOVED] == 1);
	CHECK(a.b[1].by_type[KVP_EVAGG_STORED] == 0);
	CHECK(a.b[2].by_type[KVP_EVAGG_CLEARED] == 1 &&
	      a.b[2].by_type[KVP_EVAGG_OTHER] == 1 &&
	      a.b[2].by_type[KVP_EVAGG_STORED] == 1);
	CHECK(a.b[0].by_worker[0] == 1 && a.b[0].by_worker[1] == 1);
	CHECK(a.b[2].by_worker[0] == 2 && a.b[2].by_worker[2] == 1);
	CHECK(a.other_used == 0);
	kvp_evagg_fini(&a);
}

/* kv-normalize's RouterEvents: no "ts", so positions ("x"."ts_ms" is
 * not a time here); worker ids as numbers or strings; dp_rank from the
 * event. */
static void
test_router_events(void)
{
	static const char *const in[] = {
	    "{\"worker_id\":2,\"storage_tier\":\"device\","
	    "\"residency_domain\":\"worker\",\"event\":{\"event_id\":1,"
	    "\"data\":{\"stored\":{\"parent_hash\":null,\"start_position\":"
	    "null,\"blocks\":[{\"block_hash\":1,\"tokens_hash\":2,"
	    "\"mm_extra_info\":null}]}},\"dp_rank\":3},\"x\":{\"seq\":1,"
	    "\"idx\":0,\"action\":\"pass\",\"kept\":1,\"excluded\":0,"
	    "\"ts_ms\":5000}}",
	    "{\"worker_id\":\"18446744073709551615\",\"event\":{\"event_id\":2,"
	    "\"data\":{\"removed\":{\"block_hashes\":[1]}},\"dp_rank\":0}}",
	    "{\"worker_id\":2,\"event\":{\"event_id\":3,\"data\":\"cleared\","
	    "\"dp_rank\":3}}",
	    "{\"worker_id\":2,\"event\":{\"event_id\":4,\"data\":{\"odd\":{}},"
	    "\"dp_rank\":3}}",
	    "{\"worker_id\":2,\"event\":{\"event_id\":5,\"data\":\"other\"}}",
	    "{\"rec\":\"filtered\",\"seq\":1,\"idx\":1,\"worker_id\":2,"
	    "\"dp_rank\":3,\"event_type\":\"Ignored\",\"reason\":"
	    "\"unknown_kind\"}",
	};
	struct kvp_evagg a;
	struct kvp_diag d;
	size_t k;

	kvp_evagg_init(&a);
	for (k = 0; k < sizeof in / sizeof in[0]; k++) {
		int rc = line(&a, in[k], &d);

		if (rc != KVP_OK)
			fprintf(stderr, "line %zu: %s\n", k, d.msg);
		CHECK(rc == KVP_OK);
	}
	CHECK_U64(a.events, 5);
	CHECK(a.by_type[KVP_EVAGG_STORED] == 1 &&
	      a.by_type[KVP_EVAGG_REMOVED] == 1 &&
	      a.by_type[KVP_EVAGG_CLEARED] == 1 &&
	      a.by_type[KVP_EVAGG_OTHER] == 2);
	CHECK_U64(a.other_records, 1);
	/* 2.3, 2^64-1.0, 2.0 (the last one has no dp_rank) */
	CHECK_U64(a.n_workers, 3);
	if (a.n_workers == 3) {
		CHECK(a.w[0].worker_id == 2 && a.w[0].dp_rank == 3 &&
		      a.w[0].by_type[KVP_EVAGG_STORED] == 1 &&
		      a.w[0].by_type[KVP_EVAGG_CLEARED] == 1 &&
		      a.w[0].by_type[KVP_EVAGG_OTHER] == 1);
		CHECK(a.w[1].worker_id == UINT64_MAX && a.w[1].dp_rank == 0);
		CHECK(a.w[2].worker_id == 2 && a.w[2].dp_rank == 0);
	}
	/* positions 0..4, one bucket each */
	CHECK(a.time_is_ts == 0 && a.tl.n == 5 && a.tl.width == 1);
	CHECK(a.b[0].by_type[KVP_EVAGG_STORED] == 1 &&
	      a.b[1].by_type[KVP_EVAGG_REMOVED] == 1 &&
	      a.b[2].by_type[KVP_EVAGG_CLEARED] == 1 &&
	      a.b[4].by_worker[2] == 1);
	kvp_evagg_fini(&a);
}

/* KvRecorder lines: {"timestamp": ms, "event": RouterEvent}. */
static void
test_kvrecorder(void)
{
	struct kvp_evagg a;
	struct kvp_diag d;

	kvp_evagg_init(&a);
	CHECK(line(&a,
	           "{\"timestamp\":1700000000000,\"event\":{\"worker_id\":4,"
	           "\"event\":{\"event_id\":1,\"data\":\"cleared\","
	           "\"dp_rank\":1}}}",
	           &d) == KVP_OK);
	CHECK(line(&a,
	           "{\"timestamp\":1700000002500,\"event\":{\"worker_id\":4,"
	           "\"event\":{\"event_id\":2,\"data\":{\"removed\":"
	           "{\"block_hashes\":[]}},\"dp_rank\":1}}}",
	           &d) == KVP_OK);
	CHECK(a.events == 2 && a.n_workers == 1);
	CHECK(a.w[0].worker_id == 4 && a.w[0].dp_rank == 1);
	CHECK(a.time_is_ts == 1 && a.tl.t0 == 1700000000000.0);
	/* 2500 ms later with buckets of 1000 ms: bucket 2 */
	CHECK(a.b[0].by_type[KVP_EVAGG_CLEARED] == 1 &&
	      a.b[2].by_type[KVP_EVAGG_REMOVED] == 1 && a.tl.n == 3);
	kvp_evagg_fini(&a);
}

/* At least one second per bucket, and buckets merge past 96. */
/* A kv-decode event at ts seconds. */
static int
event_at(struct kvp_evagg *a, const char *ts, const char *type)
{
	char buf[200];
	struct kvp_diag d;

	snprintf(buf, sizeof buf,
	         "{\"rec\":\"event\",\"ts\":%s,\"worker_id\":1,"
	         "\"type\":\"%s\"}",
	         ts, type);
	return line(a, buf, &d);
}

static void
test_wide_buckets(void)
{
	struct kvp_evagg a;
	uint64_t sum = 0;

	kvp_evagg_init(&a);
	/* 0.1, 0.2, 0.9 s: all in the first second */
	CHECK(event_at(&a, "0.1", "BlockStored") == KVP_OK);
	CHECK(event_at(&a, "0.2", "BlockStored") == KVP_OK);
	CHECK(event_at(&a, "0.9", "BlockStored") == KVP_OK);
	CHECK(a.tl.n == 1 && a.b[0].by_type[KVP_EVAGG_STORED] == 3);
	/* at 300.1 s: 300 s past the first; buckets of 1, 2 s are too
	 * narrow for 96 of them, 4 s wide: bucket 75 */
	CHECK(event_at(&a, "300.1", "BlockRemoved") == KVP_OK);
	CHECK(a.tl.width == 4000 && a.tl.n == 76);
	CHECK(a.b[0].by_type[KVP_EVAGG_STORED] == 3 &&
	      a.b[75].by_type[KVP_EVAGG_REMOVED] == 1);
	for (int i = 0; i < KVP_AGG_BUCKETS; i++)
		for (int t = 0; t < KVP_EVAGG_COUNT; t++)
			sum += a.b[i].by_type[t];
	CHECK(sum == 4);
	kvp_evagg_fini(&a);
}

/* The 13th worker onwards is summed into the "other" slot. */
static void
test_many_workers(void)
{
	struct kvp_evagg a;
	struct kvp_diag d;
	char buf[128];
	int k;

	kvp_evagg_init(&a);
	for (k = 0; k < 14; k++) {
		snprintf(buf, sizeof buf,
		         "{\"rec\":\"event\",\"worker_id\":%d,"
		         "\"type\":\"BlockStored\"}",
		         100 + k);
		CHECK(line(&a, buf, &d) == KVP_OK);
	}
	CHECK(a.n_workers == 14 && a.other_used == 1);
	CHECK(a.b[11].by_worker[11] == 1 && a.b[12].by_worker[12] == 1 &&
	      a.b[13].by_worker[12] == 1);
	CHECK(a.w[13].worker_id == 113 &&
	      a.w[13].by_type[KVP_EVAGG_STORED] == 1);
	kvp_evagg_fini(&a);
}

/* Bad lines: KVP_BAD, a message, and nothing counted. */
static void
check_bad(struct kvp_evagg *a, const char *s, const char *msg, int lineno)
{
	struct kvp_diag d;
	uint64_t ev = a->events, other = a->other_records, g = a->gaps;
	int rc = line(a, s, &d);

	if (rc != KVP_BAD || strstr(d.msg, msg) == NULL)
		fprintf(stderr, "  line %d: %s: rc %d msg \"%s\"\n", lineno, s,
		        rc, d.msg);
	CHECK(rc == KVP_BAD);
	CHECK(strstr(d.msg, msg) != NULL);
	CHECK(a->events == ev && a->other_records == other && a->gaps == g);
}

#define CHECK_BAD(a, s, msg) check_bad(a, s, msg, __LINE__)

static void
test_bad(void)
{
	struct kvp_evagg a;

	kvp_evagg_init(&a);
	CHECK_BAD(&a, "nope", "invalid JSON");
	CHECK_BAD(&a, "[1]", "expected a JSON object");
	CHECK_BAD(&a, "{\"foo\":1}", "not an event record");
	CHECK_BAD(&a, "{\"worker_id\":1,\"event\":{\"no_data\":1}}",
	          "not an event record");
	CHECK_BAD(&a, "{\"worker_id\":1,\"event\":[1]}", "not an event record");
	CHECK_BAD(&a, "{\"rec\":5}", "rec: expected a string");
	CHECK_BAD(&a, "{\"rec\":\"event\",\"worker_id\":1}", "\"type\"");
	CHECK_BAD(&a, "{\"rec\":\"event\",\"type\":7,\"worker_id\":1}", "type");
	CHECK_BAD(&a,
	          "{\"rec\":\"event\",\"type\":\"BlockStored\","
	          "\"worker_id\":-1}",
	          "worker_id");
	CHECK_BAD(&a,
	          "{\"rec\":\"event\",\"type\":\"BlockStored\","
	          "\"worker_id\":1,\"ts\":\"x\"}",
	          "ts: expected a number");
	CHECK_BAD(&a, "{\"rec\":\"gap\",\"worker_id\":1,\"dp_rank\":\"a\"}",
	          "dp_rank");
	CHECK_BAD(&a,
	          "{\"timestamp\":\"x\",\"event\":{\"worker_id\":4,\"event\":"
	          "{\"data\":\"cleared\"}}}",
	          "timestamp");
	CHECK_BAD(&a,
	          "{\"rec\":\"event\",\"type\":\"BlockStored\","
	          "\"worker_id\":18446744073709551616}",
	          "out of range");
	CHECK(a.n_workers == 0);
	kvp_evagg_fini(&a);
}

int
main(void)
{
	CHECK_STR(kvp_evagg_type_names[KVP_EVAGG_STORED], "stored");
	CHECK_STR(kvp_evagg_type_names[KVP_EVAGG_REMOVED], "removed");
	CHECK_STR(kvp_evagg_type_names[KVP_EVAGG_CLEARED], "cleared");
	CHECK_STR(kvp_evagg_type_names[KVP_EVAGG_OTHER], "other");
	test_decoded();
	test_router_events();
	test_kvrecorder();
	test_wide_buckets();
	test_many_workers();
	test_bad();
	return UNIT_DONE();
}
