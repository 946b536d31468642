/* SPDX-License-Identifier: MIT */
/*
 * test_route_scan.c — route-score's fast input path (lib/replay/
 * route_scan.c) against the json-c path (route_input.c's kvp_rin_parse),
 * an independent reading of the same lines. route_scan.c's contract: the
 * fast path only ever accepts what the json-c path accepts, with the same
 * result, and declines anything else (unknown or repeated keys, escapes,
 * other types or ranges), which the json-c path then reads or rejects
 * with its message. Lines are shaped as kvpipe-records(5) gives them
 * (requests with hash_ids, block_hashes or tokens, Mooncake lines,
 * kv-normalize RouterEvents, KvRecorder lines); u64 values up to 2^64-1
 * and negative i64 hashes (two's complement) included. A few results are
 * also checked against values read off the lines by hand.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "kvpipe.h"
#include "replay/route_input.h"
#include "replay/truth.h"
#include "unit.h"

#define BS 16

static int
same_u64s(const uint64_t *a, const uint64_t *b, size_t n)
{
	if (n == 0)
		return 1;
	if (a == NULL || b == NULL)
		return 0;
	return memcmp(a, b, n * sizeof *a) == 0;
}

static int
same_u32s(const uint32_t *a, const uint32_t *b, size_t n)
{
	if (n == 0)
		return 1;
	if (a == NULL || b == NULL)
		return 0;
	return memcmp(a, b, n * sizeof *a) == 0;
}

/* The fields both paths fill; names the first that differs. */
static const char *
differ(const struct kvp_rin *f, const struct kvp_rin *j)
{
	const struct kvp_event *a = &f->ev, *b = &j->ev;
	const struct kvp_request *p = &f->rq, *q = &j->rq;

	if (f->kind != j->kind)
		return "kind";
	if (f->flags != j->flags)
		return "flags";
	if (f->has_ts != j->has_ts || f->ts_ms != j->ts_ms)
		return "ts";
	if (f->seed != j->seed)
		return "seed";
	if (f->ntokens != j->ntokens ||
	    !same_u32s(f->tokens, j->tokens, f->ntokens))
		return "tokens";
	if ((f->from_tokens == NULL) != (j->from_tokens == NULL))
		return "from_tokens";
	if (f->kind == KVP_RIN_EVENT) {
		if (a->kind != b->kind || a->worker_id != b->worker_id ||
		    a->dp_rank != b->dp_rank || a->tier != b->tier)
			return "event header";
		if (a->has_event_id != b->has_event_id ||
		    a->event_id != b->event_id)
			return "event_id";
		if (a->has_parent != b->has_parent || a->parent != b->parent)
			return "parent";
		if (a->n != b->n || !same_u64s(a->ext, b->ext, a->n))
			return "ext";
		if (a->kind == KVP_EV_STORED &&
		    !same_u64s(a->local, b->local, a->n))
			return "local";
		return NULL;
	}
	if (f->kind != KVP_RIN_REQUEST)
		return NULL;
	if (p->id_len != q->id_len || p->id == NULL || q->id == NULL ||
	    memcmp(p->id, q->id, p->id_len) != 0)
		return "request id";
	if (p->n != q->n || !same_u64s(p->local, q->local, p->n))
		return "hashes";
	if ((p->seq == NULL) != (q->seq == NULL))
		return "seq";
	if (p->isl != q->isl)
		return "isl";
	if (p->has_ts != q->has_ts || p->ts_ms != q->ts_ms)
		return "request ts";
	if (p->has_osl != q->has_osl || p->osl != q->osl)
		return "osl";
	if (f->engine_cached_kind != j->engine_cached_kind ||
	    f->engine_cached != j->engine_cached)
		return "engine figure";
	if (p->commit != q->commit || p->pinned != q->pinned ||
	    p->n_allowed != q->n_allowed || p->session_id != NULL ||
	    q->session_id != NULL || p->has_replica != q->has_replica)
		return "options";
	return NULL;
}

struct both {
	struct kvp_rin_parser pf, pj;
	struct json_object *obj;
	struct kvp_rin f, j;
};

static void
both_init(struct both *b, int mooncake, const char *lora)
{
	kvp_rin_init(&b->pf, BS, mooncake, lora, NULL);
	kvp_rin_init(&b->pj, BS, mooncake, lora, NULL);
	b->obj = NULL;
}

static void
both_fini(struct both *b)
{
	if (b->obj != NULL)
		json_object_put(b->obj);
	kvp_rin_fini(&b->pf);
	kvp_rin_fini(&b->pj);
}

/* The fast path must accept line and agree with the json-c path. */
static void
check_same(struct both *b, const char *line, uintmax_t lineno, int srcline)
{
	struct kvp_diag d;
	const char *what;
	int rf, rj;

	if (b->obj != NULL)
		json_object_put(b->obj);
	b->obj = json_tokener_parse(line);
	rf = kvp_rin_scan(&b->pf, line, strlen(line), lineno, &b->f);
	memset(&d, 0, sizeof d);
	rj = b->obj != NULL ? kvp_rin_parse(&b->pj, b->obj, lineno, &b->j, &d)
	                    : -2;
	what = rf == 0 && rj == 0 ? differ(&b->f, &b->j) : NULL;
	if (rf != 0 || rj != 0 || what != NULL)
		fprintf(
		    stderr, "  line %d: %s\n    scan %d, json-c %d (%s), %s\n",
		    srcline, line, rf, rj, d.msg, what != NULL ? what : "-");
	CHECK(rf == 0);
	CHECK(rj == 0);
	CHECK(what == NULL);
}

#define CHECK_SAME(b, line) check_same(b, line, 7, __LINE__)

/* The fast path must decline line; kvp_rin_parse_line then gives the
 * json-c result: rc, and a message containing msg when it is bad. */
static void
check_declined(struct both *b, const char *line, int want_rc, const char *msg,
               int srcline)
{
	struct kvp_rin out;
	struct kvp_diag d;
	uintmax_t slow = b->pf.slow;
	int rf, rc;

	rf = kvp_rin_scan(&b->pf, line, strlen(line), 7, &out);
	memset(&d, 0, sizeof d);
	rc = kvp_rin_parse_line(&b->pf, line, strlen(line), 7, &b->f, &d);
	if (rf != 1 || rc != want_rc ||
	    (msg != NULL && strstr(d.msg, msg) == NULL))
		fprintf(stderr, "  line %d: %s\n    scan %d, rc %d (%s)\n",
		        srcline, line, rf, rc, d.msg);
	CHECK(rf == 1);
	CHECK(rc == want_rc);
	CHECK(b->pf.slow == slow + 1);
	if (msg != NULL)
		CHECK(strstr(d.msg, msg) != NULL);
}

#define CHECK_DECLINED(b, line, rc, msg)                                       \
	check_declined(b, line, rc, msg, __LINE__)

static void
test_same(void)
{
	struct both b;

	both_init(&b, 0, NULL);
	/* requests */
	CHECK_SAME(&b, "{\"request_id\":\"abc\",\"ts_ms\":5,"
	               "\"hash_ids\":[1,2,18446744073709551615]}");
	/* by hand: three hashes, ISL 3 blocks x 16, id "abc", ts 5 */
	CHECK(b.f.rq.n == 3 && b.f.rq.local[2] == UINT64_MAX);
	CHECK(b.f.rq.isl == 48 && b.f.rq.id_len == 3 &&
	      memcmp(b.f.rq.id, "abc", 3) == 0);
	CHECK(b.f.has_ts && b.f.ts_ms == 5 && b.f.rq.commit == 1);
	CHECK_SAME(&b, "{\"type\":\"request\",\"request_id\":42,"
	               "\"timestamp\":7,\"input_length\":100,"
	               "\"output_length\":30,\"block_hashes\":"
	               "[9223372036854775808,-1,0]}");
	/* -1 is two's complement 2^64-1; the id is "42" */
	CHECK(b.f.rq.local[0] == 1ull << 63 && b.f.rq.local[1] == UINT64_MAX);
	CHECK(b.f.rq.id_len == 2 && memcmp(b.f.rq.id, "42", 2) == 0);
	CHECK(b.f.rq.isl == 100 && b.f.rq.has_osl && b.f.rq.osl == 30);
	CHECK_SAME(&b, "{\"id\":\"x-1\",\"tokens\":[1,2,3,4,5]}");
	CHECK(b.f.ntokens == 5 && b.f.rq.isl == 5 && b.f.tokens[4] == 5);
	CHECK_SAME(&b, "{\"tokens\":[1,2,3,4294967295],\"input_length\":9}");
	/* no id: the line number */
	CHECK_SAME(&b, "{\"block_hashes\":[5,6]}");
	CHECK(b.f.rq.id_len == 1 && b.f.rq.id[0] == '7');
	CHECK_SAME(&b, " { \"hash_ids\" : [ 1 , 2 ] , \"ts_ms\" : 0 } ");
	CHECK_SAME(&b, "{\"hash_ids\":[],\"request_id\":18446744073709551615}");
	CHECK_SAME(&b, "{\"hash_ids\":[3],\"input_length\":1099511627776}");
	CHECK_SAME(&b, "{\"request_id\":\"\",\"hash_ids\":[3]}");
	/* RouterEvents as kv-normalize writes them */
	CHECK_SAME(&b,
	           "{\"worker_id\":18446744073709551615,\"storage_tier\":"
	           "\"host_pinned\",\"residency_domain\":\"worker\","
	           "\"event\":{\"event_id\":3,\"data\":{\"stored\":"
	           "{\"parent_hash\":-2,\"start_position\":null,\"blocks\":"
	           "[{\"block_hash\":11,\"tokens_hash\":12,"
	           "\"mm_extra_info\":null},{\"block_hash\":13,"
	           "\"tokens_hash\":18446744073709551615}]}},\"dp_rank\":2},"
	           "\"x\":{\"seq\":1,\"idx\":0,\"action\":\"pass\",\"kept\":2,"
	           "\"excluded\":0,\"ts_ms\":1234}}");
	CHECK(b.f.ev.kind == KVP_EV_STORED && b.f.ev.n == 2);
	CHECK(b.f.ev.has_parent && b.f.ev.parent == UINT64_MAX - 1);
	CHECK(b.f.ev.local[1] == UINT64_MAX && b.f.ev.ext[1] == 13);
	CHECK(b.f.has_ts && b.f.ts_ms == 1234); /* "x"."ts_ms" */
	CHECK_SAME(&b, "{\"worker_id\":1,\"event\":{\"event_id\":4,\"data\":"
	               "{\"removed\":{\"block_hashes\":[11,-13]}},"
	               "\"dp_rank\":0}}");
	CHECK(b.f.ev.kind == KVP_EV_REMOVED && b.f.ev.n == 2 &&
	      b.f.ev.ext[1] == (uint64_t)-13);
	CHECK_SAME(&b, "{\"worker_id\":1,\"event\":{\"data\":\"cleared\"}}");
	CHECK(b.f.ev.kind == KVP_EV_CLEARED && !b.f.ev.has_event_id);
	CHECK_SAME(&b, "{\"worker_id\":3,\"event\":{\"event_id\":1,\"data\":"
	               "{\"stored\":{\"parent_hash\":null,\"blocks\":[]}}}}");
	CHECK_SAME(&b, "{\"worker_id\":3,\"storage_tier\":\"disk\",\"event\":"
	               "{\"data\":{\"removed\":{\"block_hashes\":[]}},"
	               "\"event_id\":0}}");
	/* a KvRecorder line: its timestamp is the time */
	CHECK_SAME(&b, "{\"timestamp\":99,\"event\":{\"worker_id\":2,"
	               "\"event\":{\"event_id\":1,\"data\":\"cleared\","
	               "\"dp_rank\":1}}}");
	CHECK(b.f.kind == KVP_RIN_EVENT && b.f.has_ts && b.f.ts_ms == 99 &&
	      b.f.ev.worker_id == 2 && b.f.ev.dp_rank == 1);
	both_fini(&b);

	/* a --lora seed reaches token-bearing records on both paths */
	both_init(&b, 0, "adapter");
	CHECK_SAME(&b, "{\"tokens\":[7,8,9]}");
	CHECK_SAME(&b,
	           "{\"worker_id\":1,\"event\":{\"data\":{\"stored\":"
	           "{\"blocks\":[{\"block_hash\":1,\"tokens_hash\":2}]}}}}");
	both_fini(&b);

	/* Mooncake: every line is a request by its hash ids */
	both_init(&b, 1, NULL);
	CHECK_SAME(&b, "{\"timestamp\":27482,\"input_length\":6955,"
	               "\"output_length\":52,\"hash_ids\":[46,47,48]}");
	CHECK(b.f.rq.n == 3 && b.f.rq.isl == 6955 && b.f.ts_ms == 27482);
	CHECK_SAME(&b, "{\"timestamp\":1,\"hash_ids\":[]}");
	CHECK(b.f.rq.isl == 0);
	/* the engine's figure (replay/truth.h), read off the line */
	CHECK_SAME(&b, "{\"timestamp\":2,\"input_length\":640,"
	               "\"hash_ids\":[1,2],\"cached_tokens\":624}");
	CHECK(b.f.engine_cached_kind == KVP_EC_GIVEN &&
	      b.f.engine_cached == 624);
	CHECK_SAME(&b, "{\"timestamp\":3,\"hash_ids\":[1]}");
	CHECK(b.f.engine_cached_kind == KVP_EC_NONE);
	both_fini(&b);
}

static void
test_declined(void)
{
	struct both b;

	both_init(&b, 0, NULL);
	/* read by json-c */
	CHECK_DECLINED(&b, "{\"request_id\":\"a\\u0062\",\"hash_ids\":[1]}",
	               KVP_OK, NULL);
	CHECK(b.f.rq.id_len == 2 && memcmp(b.f.rq.id, "ab", 2) == 0);
	CHECK_DECLINED(&b, "{\"request_id\":\"\xc3\xa9\",\"hash_ids\":[1]}",
	               KVP_OK, NULL);
	CHECK(b.f.rq.id_len == 2);
	CHECK_DECLINED(&b, "{\"hash_ids\":[1],\"hash_ids\":[2]}", KVP_OK, NULL);
	CHECK_DECLINED(&b, "{\"hash_ids\":[1],\"lora_name\":\"x\"}", KVP_OK,
	               NULL);
	CHECK_DECLINED(&b, "{\"ts_ms\":1.5,\"hash_ids\":[1]}", KVP_OK, NULL);
	CHECK(b.f.has_ts && b.f.ts_ms == 1); /* truncated */
	CHECK_DECLINED(&b, "{\"ts_ms\":\"12\",\"hash_ids\":[1]}", KVP_OK, NULL);
	CHECK(b.f.ts_ms == 12);
	CHECK_DECLINED(&b, "{\"request_id\":-1,\"hash_ids\":[1]}", KVP_OK,
	               NULL);
	CHECK(b.f.rq.id_len == 20 &&
	      memcmp(b.f.rq.id, "18446744073709551615", 20) == 0);
	CHECK_DECLINED(&b,
	               "{\"worker_id\":\"7\",\"event\":{\"data\":"
	               "\"cleared\"}}",
	               KVP_OK, NULL);
	CHECK(b.f.ev.worker_id == 7);
	CHECK_DECLINED(&b,
	               "{\"request_id\":\"a\",\"id\":\"b\","
	               "\"hash_ids\":[1]}",
	               KVP_OK, NULL);
	CHECK(b.f.rq.id_len == 1 && b.f.rq.id[0] == 'a');
	CHECK_DECLINED(&b, "{\"hash_ids\":[1],\"tokens\":[1]}", KVP_OK, NULL);
	CHECK(b.f.rq.n == 1 && b.f.tokens == NULL); /* hash_ids win */
	CHECK_DECLINED(&b, "{\"type\":\"worker\",\"worker_id\":1}", KVP_OK,
	               NULL);
	CHECK(b.f.kind == KVP_RIN_WORKER && b.f.dp_size == 1);
	CHECK_DECLINED(&b, "{\"rec\":\"gap\"}", KVP_OK, NULL);
	CHECK(b.f.kind == KVP_RIN_GAP);
	CHECK_DECLINED(&b, "{\"rec\":\"batch\",\"seq\":1}", KVP_OK, NULL);
	CHECK(b.f.kind == KVP_RIN_IGNORED);
	{
		char line[512];
		int k, n;

		n = snprintf(line, sizeof line,
		             "{\"worker_id\":1,\"event\":{\"data\":{\"stored\":"
		             "{\"blocks\":[{\"block_hash\":1,\"tokens\":[");
		for (k = 0; k < BS; k++)
			n += snprintf(line + n, sizeof line - (size_t)n, "%s%d",
			              k ? "," : "", k + 1);
		snprintf(line + n, sizeof line - (size_t)n, "]}]}}}}");
		CHECK_DECLINED(&b, line, KVP_OK, NULL);
		CHECK(b.f.ev.n == 1 && b.f.ntokens == BS &&
		      b.f.from_tokens != NULL);
	}
	/* the engine's figure in the response shapes: json-c */
	CHECK_DECLINED(&b,
	               "{\"hash_ids\":[1],\"usage\":{\"prompt_tokens_"
	               "details\":{\"cached_tokens\":32}}}",
	               KVP_OK, NULL);
	CHECK(b.f.engine_cached_kind == KVP_EC_GIVEN &&
	      b.f.engine_cached == 32);
	CHECK_DECLINED(&b, "{\"hash_ids\":[1],\"usage\":{\"prompt_tokens\":9}}",
	               KVP_OK, NULL);
	CHECK(b.f.engine_cached_kind == KVP_EC_ABSENT);
	CHECK_DECLINED(&b,
	               "{\"hash_ids\":[1],\"meta_info\":{\"cached_tokens\":"
	               "16}}",
	               KVP_OK, NULL);
	CHECK(b.f.engine_cached_kind == KVP_EC_GIVEN &&
	      b.f.engine_cached == 16);
	CHECK_DECLINED(&b, "{\"hash_ids\":[1],\"cached_tokens\":null}", KVP_OK,
	               NULL);
	CHECK(b.f.engine_cached_kind == KVP_EC_NONE);
	CHECK_DECLINED(&b, "{\"hash_ids\":[1],\"cached_tokens\":-1}", KVP_BAD,
	               "cached_tokens");
	CHECK_DECLINED(&b, "{\"hash_ids\":[1],\"meta_info\":[]}", KVP_BAD,
	               "meta_info: expected an object");
	/* rejected by json-c, with its message */
	CHECK_DECLINED(&b, "{\"ts_ms\":-5,\"hash_ids\":[1]}", KVP_BAD,
	               "ts_ms: expected a non-negative");
	CHECK_DECLINED(&b, "{\"ts_ms\":\"soon\",\"hash_ids\":[1]}", KVP_BAD,
	               "ts_ms");
	CHECK_DECLINED(&b, "{\"input_length\":1099511627777,\"hash_ids\":[1]}",
	               KVP_BAD, "over the limit");
	CHECK_DECLINED(&b,
	               "{\"worker_id\":1,\"event\":{\"data\":\"cleared\","
	               "\"dp_rank\":4294967296}}",
	               KVP_BAD, "does not fit in u32");
	CHECK_DECLINED(&b,
	               "{\"worker_id\":1,\"storage_tier\":\"tape\","
	               "\"event\":{\"data\":\"cleared\"}}",
	               KVP_BAD, "unknown tier");
	CHECK_DECLINED(&b, "{\"tokens\":[4294967296]}", KVP_BAD,
	               "does not fit in u32");
	CHECK_DECLINED(&b, "{\"hash_ids\":[18446744073709551616]}", KVP_BAD,
	               "out of range");
	CHECK_DECLINED(&b, "{\"hash_ids\":[1]} x", KVP_BAD, "trailing");
	CHECK_DECLINED(&b, "{\"hash_ids\":[1]", KVP_BAD, "invalid JSON");
	CHECK_DECLINED(&b, "{\"worker_id\":1,\"event\":{\"data\":\"flushed\"}}",
	               KVP_BAD, "unknown variant");
	CHECK_DECLINED(&b, "{\"foo\":1}", KVP_BAD, "unknown record");
	CHECK_DECLINED(&b, "{\"type\":\"request\",\"hash_ids\":\"1\"}", KVP_BAD,
	               "hash_ids");
	both_fini(&b);

	both_init(&b, 1, NULL);
	CHECK_DECLINED(&b, "{\"timestamp\":1,\"tokens\":[1]}", KVP_BAD,
	               "missing key \"hash_ids\"");
	/* a RouterEvent is no Mooncake line either */
	CHECK_DECLINED(&b, "{\"worker_id\":1,\"event\":{\"data\":\"cleared\"}}",
	               KVP_BAD, "hash_ids");
	both_fini(&b);
}

/* kvp_rin_parse_line counts each path. */
static void
test_counters(void)
{
	struct kvp_rin_parser p;
	struct kvp_rin out;
	struct kvp_diag d;
	static const char fast[] = "{\"hash_ids\":[1]}";
	static const char slow[] = "{\"hash_ids\":[1],\"commit\":false}";

	kvp_rin_init(&p, BS, 0, NULL, NULL);
	CHECK(kvp_rin_parse_line(&p, fast, sizeof fast - 1, 1, &out, &d) ==
	      KVP_OK);
	CHECK(kvp_rin_parse_line(&p, slow, sizeof slow - 1, 2, &out, &d) ==
	      KVP_OK);
	CHECK(out.rq.commit == 0);
	CHECK(kvp_rin_parse_line(&p, fast, sizeof fast - 1, 3, &out, &d) ==
	      KVP_OK);
	CHECK(out.rq.commit == 1);
	CHECK(p.fast == 2 && p.slow == 1);
	kvp_rin_fini(&p);
}

int
main(void)
{
	test_same();
	test_declined();
	test_counters();
	return UNIT_DONE();
}
