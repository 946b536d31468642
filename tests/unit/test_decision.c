/* SPDX-License-Identifier: MIT */
/*
 * test_decision.c — the reader of route-score's decision records for
 * kv-diff and kv-report (lib/report/decision.c). Records are written as
 * kvpipe-records(5) gives them (full and --brief decisions, the summary
 * with its workers and simulated object, an mrc record); expected fields
 * are read off those lines by hand. decision.h: a decision whose chosen
 * is null, or whose rejected is true (or route-score's reason string), is
 * a rejection; records whose rec is not "decision" are reported as
 * OTHER (the summary as SUMMARY) with no field read; a line the scanner
 * declines is parsed by json-c and scanned again, so both paths give the
 * same fields; bad lines are KVP_BAD with a message.
 */
#include <stdint.h>
#include <string.h>

#include "kvpipe.h"
#include "report/decision.h"
#include "unit.h"

static struct kvp_decision_parser P, PC; /* without, with candidates */

static int
parse(struct kvp_decision_parser *p, const char *line,
      struct kvp_decision_rec *d, struct kvp_diag *dg)
{
	memset(dg, 0, sizeof *dg);
	return kvp_decision_parse(p, line, strlen(line), d, dg);
}

static int
span_is(struct kvp_decision_span s, const char *want)
{
	return s.p != NULL && s.n == strlen(want) &&
	       memcmp(s.p, want, s.n) == 0;
}

/* A full decision, keys in kvpipe-records(5)'s order. */
static const char full[] =
    "{\"rec\":\"decision\",\"request_id\":\"r1\",\"ts_ms\":1500,"
    "\"commit\":true,\"isl\":100,\"request_blocks\":7,\"hashed_blocks\":6,"
    "\"policy\":\"dynamo\",\"chosen\":{\"worker_id\":18446744073709551615,"
    "\"dp_rank\":3},\"overlap_blocks\":4,\"logit\":-1.25,"
    "\"temperature\":0,\"overlap_weight\":1,\"tie_break\":\"lowest-id\","
    "\"tied\":[{\"worker_id\":1,\"dp_rank\":0}],"
    "\"max_overlap\":{\"worker_id\":2,\"dp_rank\":0,\"blocks\":5},"
    "\"non_max_overlap\":true,\"blocks_lost\":1,\"tie_count\":1,"
    "\"candidates\":[{\"worker_id\":18446744073709551615,\"dp_rank\":3,"
    "\"overlap_blocks\":4,\"host_overlap_blocks\":0,\"tree_size\":9,"
    "\"active_blocks\":10,\"logit\":-1.25},{\"worker_id\":2,\"dp_rank\":0,"
    "\"overlap_blocks\":5,\"active_blocks\":20,\"logit\":3.5}],"
    "\"warnings\":[\"no_overlap\"]}";

static void
check_full(const struct kvp_decision_rec *d)
{
	CHECK(d->kind == KVP_DECISION_DECISION);
	CHECK(span_is(d->id, "\"r1\"")); /* the id's JSON text */
	CHECK(d->has_ts && d->ts_ms == 1500);
	CHECK(d->chosen == 1 && d->rejected == 0);
	CHECK_U64(d->worker_id, UINT64_MAX);
	CHECK_U64(d->dp_rank, 3);
	CHECK_U64(d->overlap, 4);
	CHECK_U64(d->request_blocks, 7);
	CHECK_U64(d->hashed_blocks, 6);
	CHECK(d->has_logit && d->logit == -1.25);
	CHECK(span_is(d->tie_break, "lowest-id"));
	CHECK(span_is(d->policy, "dynamo"));
	CHECK(d->has_max && d->max_overlap == 5);
	CHECK(d->non_max == 1);
	CHECK_U64(d->blocks_lost, 1);
	CHECK(d->has_ttft == 0 && d->has_sim == 0);
}

static void
test_full(void)
{
	struct kvp_decision_rec d;
	struct kvp_diag dg;

	CHECK(parse(&P, full, &d, &dg) == KVP_OK);
	check_full(&d);
	CHECK_U64(d.n_cand, 0); /* not asked for */
	CHECK(parse(&PC, full, &d, &dg) == KVP_OK);
	check_full(&d);
	CHECK_U64(d.n_cand, 2);
	if (d.n_cand == 2) {
		CHECK_U64(d.cand[0].worker_id, UINT64_MAX);
		CHECK_U64(d.cand[0].dp_rank, 3);
		CHECK_U64(d.cand[0].active_blocks, 10);
		CHECK_U64(d.cand[1].worker_id, 2);
		CHECK_U64(d.cand[1].dp_rank, 0);
		CHECK_U64(d.cand[1].active_blocks, 20);
	}
	CHECK(P.fallbacks == 0 && PC.fallbacks == 0);
}

/* --brief: rec, request_id, ts_ms, request_blocks, policy, chosen,
 * overlap_blocks, logit, blocks_lost, tie_count. */
static void
test_brief(void)
{
	struct kvp_decision_rec d;
	struct kvp_diag dg;

	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"request_id\":7,\"ts_ms\":2,"
	            "\"request_blocks\":3,\"policy\":\"round-robin\","
	            "\"chosen\":{\"worker_id\":1,\"dp_rank\":0},"
	            "\"overlap_blocks\":0,\"logit\":null,\"blocks_lost\":2,"
	            "\"tie_count\":1}",
	            &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION);
	CHECK(span_is(d.id, "7"));
	CHECK(d.has_ts && d.ts_ms == 2);
	CHECK(d.chosen && !d.rejected && d.worker_id == 1 && d.dp_rank == 0);
	CHECK(span_is(d.policy, "round-robin"));
	CHECK(d.has_logit == 0); /* null: none */
	CHECK(d.has_max == 0);   /* brief: no max_overlap */
	CHECK_U64(d.blocks_lost, 2);
	CHECK(d.tie_break.p == NULL);

	/* no request_id, no ts: both absent; dp_rank absent is 0 */
	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"chosen\":{\"worker_id\":5},"
	            "\"overlap_blocks\":1,\"request_blocks\":2}",
	            &d, &dg) == KVP_OK);
	CHECK(d.id.p == NULL && d.has_ts == 0);
	CHECK(d.chosen && d.worker_id == 5 && d.dp_rank == 0);

	/* a simulated-time decision's ttft_ms; a null ttft_ms is none */
	CHECK(parse(&P, "{\"rec\":\"decision\",\"ttft_ms\":12.25}", &d, &dg) ==
	      KVP_OK);
	CHECK(d.has_ttft && d.ttft_ms == 12.25);
	CHECK(parse(&P, "{\"rec\":\"decision\",\"ttft_ms\":null}", &d, &dg) ==
	      KVP_OK);
	CHECK(d.has_ttft == 0);
	/* a request_id of any JSON type is kept as its text */
	CHECK(parse(&P, "{\"rec\":\"decision\",\"request_id\":[1, {\"a\":2}]}",
	            &d, &dg) == KVP_OK);
	CHECK(span_is(d.id, "[1, {\"a\":2}]"));
	/* exponents and fractions in doubles */
	CHECK(parse(&P, "{\"rec\":\"decision\",\"ts_ms\":1.5e3,\"logit\":-0}",
	            &d, &dg) == KVP_OK);
	CHECK(d.ts_ms == 1500 && d.has_logit && d.logit == 0);
}

static void
test_rejections(void)
{
	struct kvp_decision_rec d;
	struct kvp_diag dg;

	/* chosen null */
	CHECK(parse(&P, "{\"rec\":\"decision\",\"chosen\":null}", &d, &dg) ==
	      KVP_OK);
	CHECK(d.chosen == 0 && d.rejected == 1);
	/* route-score's reason (chosen is null then) */
	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"chosen\":null,"
	            "\"rejected\":\"AllEligibleWorkersOverloaded\"}",
	            &d, &dg) == KVP_OK);
	CHECK(d.rejected == 1);
	/* rejected true even with a chosen worker */
	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"chosen\":{\"worker_id\":1},"
	            "\"rejected\":true}",
	            &d, &dg) == KVP_OK);
	CHECK(d.chosen == 1 && d.rejected == 1);
	/* rejected false or null: placed */
	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"chosen\":{\"worker_id\":1},"
	            "\"rejected\":false}",
	            &d, &dg) == KVP_OK);
	CHECK(d.rejected == 0);
	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"chosen\":{\"worker_id\":1},"
	            "\"rejected\":null}",
	            &d, &dg) == KVP_OK);
	CHECK(d.rejected == 0);
	/* the order of keys does not matter: rejected before chosen */
	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"rejected\":\"QueuedAtEnd\","
	            "\"chosen\":{\"worker_id\":1}}",
	            &d, &dg) == KVP_OK);
	CHECK(d.rejected == 1);
	/* no chosen key at all: no worker, a rejection */
	CHECK(parse(&P, "{\"rec\":\"decision\",\"overlap_blocks\":0}", &d,
	            &dg) == KVP_OK);
	CHECK(d.chosen == 0 && d.rejected == 1);
}

static void
test_other_kinds(void)
{
	struct kvp_decision_rec d;
	struct kvp_diag dg;

	/* the summary: its workers (routed in active_blocks) and its
	 * simulated TTFT, and no decision field */
	CHECK(parse(&P,
	            "{\"rec\":\"summary\",\"events\":0,\"requests\":12,"
	            "\"blocks_lost\":99,\"overlap_blocks\":5,"
	            "\"workers\":[{\"worker_id\":1,\"dp_rank\":0,\"routed\":5,"
	            "\"tree_size\":3,\"active_requests\":0},"
	            "{\"worker_id\":9223372036854775808,\"dp_rank\":1,"
	            "\"routed\":7}],\"policy\":\"dynamo\","
	            "\"simulated\":{\"completed\":3,\"ttft_requests\":3,"
	            "\"ttft_p50_ms\":12.5,\"ttft_p99_ms\":40,"
	            "\"ttft_mean_ms\":20}}",
	            &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_SUMMARY);
	CHECK_U64(d.n_cand, 2);
	if (d.n_cand == 2) {
		CHECK_U64(d.cand[0].worker_id, 1);
		CHECK_U64(d.cand[0].active_blocks, 5);
		CHECK_U64(d.cand[1].worker_id, 1ull << 63);
		CHECK_U64(d.cand[1].dp_rank, 1);
		CHECK_U64(d.cand[1].active_blocks, 7);
	}
	CHECK(d.has_sim && d.sim_p50 == 12.5 && d.sim_p99 == 40);
	CHECK(d.blocks_lost == 0 && d.overlap == 0 && d.policy.p == NULL);
	CHECK(d.rejected == 0);

	/* an mrc record, and a record without rec: other */
	CHECK(parse(&P,
	            "{\"rec\":\"mrc\",\"scope\":\"fleet\",\"accesses\":5,"
	            "\"points\":[{\"capacity_blocks\":1,\"hits\":0}]}",
	            &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_OTHER && d.rejected == 0);
	CHECK(parse(&P, "{\"a\":1}", &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_OTHER && d.rejected == 0);
	/* rec after the fields: still a decision */
	CHECK(parse(&P, "{\"overlap_blocks\":3,\"rec\":\"decision\"}", &d,
	            &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION && d.overlap == 3);
	/* a summary's wrong-typed fields that are not read do not matter */
	CHECK(parse(&P, "{\"rec\":\"mrc\",\"overlap_blocks\":\"x\"}", &d,
	            &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_OTHER);
}

/* Bad lines: KVP_BAD and a message naming what is wrong. */
static void
check_bad(const char *line, const char *msg, int lineno)
{
	struct kvp_decision_rec d;
	struct kvp_diag dg;
	int rc = parse(&P, line, &d, &dg);

	if (rc != KVP_BAD || strstr(dg.msg, msg) == NULL)
		fprintf(stderr, "  line %d: %s: rc %d msg \"%s\"\n", lineno,
		        line, rc, dg.msg);
	CHECK(rc == KVP_BAD);
	CHECK(strstr(dg.msg, msg) != NULL);
}

#define CHECK_BAD(line, msg) check_bad(line, msg, __LINE__)

static void
test_bad(void)
{
	CHECK_BAD("not json", "invalid JSON");
	CHECK_BAD("{\"rec\":\"decision\"", "invalid JSON");
	CHECK_BAD("{\"rec\":\"decision\"} x", "trailing data");
	CHECK_BAD("[1,2]", "expected a JSON object");
	CHECK_BAD("", "invalid JSON");
	CHECK_BAD("{\"rec\":\"decision\",\"overlap_blocks\":\"x\"}",
	          "\"overlap_blocks\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"overlap_blocks\":-1}",
	          "\"overlap_blocks\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"overlap_blocks\":1.5}",
	          "\"overlap_blocks\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"request_blocks\":true}",
	          "\"request_blocks\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"chosen\":5}",
	          "\"chosen\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"chosen\":{\"dp_rank\":1}}",
	          "\"chosen\" has the wrong type"); /* no worker_id */
	CHECK_BAD("{\"rec\":\"decision\",\"chosen\":{\"worker_id\":-3}}",
	          "\"chosen\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"non_max_overlap\":\"yes\"}",
	          "\"non_max_overlap\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"ts_ms\":\"soon\"}",
	          "\"ts_ms\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"policy\":5}",
	          "\"policy\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"rejected\":1}",
	          "\"rejected\" has the wrong type");
	CHECK_BAD("{\"rec\":5}", "\"rec\" has the wrong type");
	CHECK_BAD("{\"rec\":\"decision\",\"max_overlap\":[]}",
	          "\"max_overlap\" has the wrong type");
	CHECK_BAD("{\"rec\":\"summary\",\"workers\":{}}",
	          "\"workers\" has the wrong type");
	CHECK_BAD("{\"rec\":\"summary\",\"simulated\":{\"ttft_p50_ms\":\"a\"}}",
	          "\"ttft_p50_ms\" has the wrong type");
	/* an integer past u64: json-c would saturate it, so it is bad */
	CHECK_BAD("{\"rec\":\"decision\",\"overlap_blocks\":"
	          "18446744073709551616}",
	          "out of range");
	/* a NUL byte inside the line */
	{
		static const char nul[] = "{\"rec\":\"decision\"\0}";
		struct kvp_decision_rec d;
		struct kvp_diag dg;

		memset(&dg, 0, sizeof dg);
		CHECK(kvp_decision_parse(&P, nul, sizeof nul - 1, &d, &dg) ==
		      KVP_BAD);
		CHECK(strstr(dg.msg, "NUL") != NULL);
	}
}

/* Candidates are asked for: a wrong-typed list is bad; skipped when not
 * asked for. */
static void
test_candidates_types(void)
{
	static const char line[] =
	    "{\"rec\":\"decision\",\"candidates\":{\"worker_id\":1}}";
	struct kvp_decision_rec d;
	struct kvp_diag dg;

	CHECK(parse(&P, line, &d, &dg) == KVP_OK);
	memset(&dg, 0, sizeof dg);
	CHECK(parse(&PC, line, &d, &dg) == KVP_BAD);
	CHECK(strstr(dg.msg, "\"candidates\" has the wrong type") != NULL);
	/* many candidates: the array grows */
	{
		char buf[8192];
		size_t len = 0;
		int k;

		len += (size_t)snprintf(
		    buf, sizeof buf, "{\"rec\":\"decision\",\"candidates\":[");
		for (k = 0; k < 100; k++)
			len += (size_t)snprintf(
			    buf + len, sizeof buf - len,
			    "%s{\"worker_id\":%d,\"dp_rank\":%d,"
			    "\"active_blocks\":%d}",
			    k ? "," : "", k, k % 3, 1000 + k);
		snprintf(buf + len, sizeof buf - len, "]}");
		CHECK(parse(&PC, buf, &d, &dg) == KVP_OK);
		CHECK_U64(d.n_cand, 100);
		if (d.n_cand == 100)
			CHECK(d.cand[99].worker_id == 99 &&
			      d.cand[99].dp_rank == 0 &&
			      d.cand[99].active_blocks == 1099);
	}
}

/* A line the scanner declines goes through json-c and gives the fields
 * the direct scan gives: the same record with an escaped key and with
 * spaces. */
static void
test_fallback(void)
{
	struct kvp_decision_rec d;
	struct kvp_diag dg;
	uintmax_t fb = P.fallbacks;

	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"request_\\u0069d\":\"a\","
	            "\"chosen\":{\"worker_id\":18446744073709551615},"
	            "\"overlap_blocks\":2,\"ts_ms\":3}",
	            &d, &dg) == KVP_OK);
	CHECK(P.fallbacks == fb + 1);
	CHECK(d.kind == KVP_DECISION_DECISION);
	CHECK(span_is(d.id, "\"a\""));
	CHECK_U64(d.worker_id, UINT64_MAX);
	CHECK_U64(d.overlap, 2);
	CHECK(d.has_ts && d.ts_ms == 3);

	/* whitespace anywhere is JSON too */
	CHECK(parse(&P,
	            " { \"rec\" : \"decision\" , \"overlap_blocks\" : 2 ,"
	            "\t\"chosen\" : { \"worker_id\" : 4 } } ",
	            &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION && d.overlap == 2 && d.chosen &&
	      d.worker_id == 4);

	/* the full record with one escaped key gives the same fields */
	{
		char buf[sizeof full + 8];
		const char *at = strstr(full, "\"blocks_lost\"");
		size_t pre = (size_t)(at - full);

		memcpy(buf, full, pre);
		memcpy(buf + pre, "\"blocks_\\u006cost\"", 18);
		strcpy(buf + pre + 18, at + 13);
		fb = PC.fallbacks;
		CHECK(parse(&PC, buf, &d, &dg) == KVP_OK);
		CHECK(PC.fallbacks == fb + 1);
		check_full(&d);
		CHECK_U64(d.n_cand, 2);
	}
}

/* Escapes in string values and bytes >= 0x80 in keys: json-c reads
 * "decisio\u006e" as "decision", so the record is a decision, and an
 * unknown key is skipped whatever its bytes. */
static void
test_escaped_values(void)
{
	struct kvp_decision_rec d;
	struct kvp_diag dg;

	CHECK(parse(&P, "{\"rec\":\"decisio\\u006e\",\"overlap_blocks\":2}", &d,
	            &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION && d.overlap == 2);
	CHECK(parse(&P, "{\"rec\":\"summ\\u0061ry\",\"workers\":[]}", &d,
	            &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_SUMMARY);
	CHECK(parse(&P, "{\"rec\":\"decision\",\"policy\":\"dyn\\u0061mo\"}",
	            &d, &dg) == KVP_OK);
	CHECK(span_is(d.policy, "dynamo"));
	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"tie_break\":\"lowest\\u002did\"}",
	            &d, &dg) == KVP_OK);
	CHECK(span_is(d.tie_break, "lowest-id"));
	/* an escape json-c keeps (a quote) is still read */
	CHECK(parse(&P, "{\"rec\":\"decision\",\"policy\":\"a\\\"b\"}", &d,
	            &dg) == KVP_OK);
	CHECK(d.policy.p != NULL);
	/* a key with UTF-8 bytes: skipped */
	CHECK(parse(&P,
	            "{\"rec\":\"decision\",\"cl\xc3\xa9\":1,"
	            "\"overlap_blocks\":2}",
	            &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION && d.overlap == 2);
	CHECK(parse(&P,
	            "{\"rec\":\"summary\",\"simulated\":{\"\xc3\xa9\":1,"
	            "\"ttft_p50_ms\":2}}",
	            &d, &dg) == KVP_OK);
	CHECK(d.has_sim && d.sim_p50 == 2);
}

/* Dynamo's decision traces (issue 30, kvpipe-records(5)): a bare
 * dynamo.router.decision.v1 object (no id); its request_end wrapper
 * (dynamo.request.trace.v1) with request_id and request_received_ms; the
 * chosen worker from selected_worker_id, overlap and logit from the
 * selected candidate, the flagged max-overlap candidate's device overlap
 * (at least the chosen one's), "default" read as "dynamo", the knobs, a
 * request_end without a trace or another schema as OTHER. */
static void
test_traces(void)
{
	static const char bare[] =
	    "{\"schema\":\"dynamo.router.decision.v1\",\"worker_type\":"
	    "\"decode\",\"policy\":\"default\",\"request_blocks\":9,"
	    "\"selected_worker_id\":7,\"selected_dp_rank\":1,"
	    "\"overlap_score_credit\":1.0,\"prefill_load_scale\":0.5,"
	    "\"router_temperature\":0.0,\"candidates\":["
	    "{\"worker_id\":3,\"dp_rank\":0,\"selected\":false,"
	    "\"max_overlap\":true,\"total_cost_blocks\":9.5,"
	    "\"device_overlap_blocks\":6.0,\"decode_cost_blocks\":4.0},"
	    "{\"worker_id\":7,\"dp_rank\":1,\"selected\":true,"
	    "\"max_overlap\":false,\"total_cost_blocks\":2.25,"
	    "\"device_overlap_blocks\":2.0,\"decode_cost_blocks\":11.0}]}";
	static const char wrapped[] =
	    "{\"schema\":\"dynamo.request.trace.v1\",\"event_type\":"
	    "\"request_end\",\"event_time_unix_ms\":2000,\"request\":{"
	    "\"request_id\":\"req-1\",\"output_tokens\":4,"
	    "\"request_received_ms\":1500,\"routing_decision\":{\"schema\":"
	    "\"dynamo.router.decision.v1\",\"request_blocks\":2,"
	    "\"selected_worker_id\":5,\"selected_dp_rank\":0,"
	    "\"candidates\":[{\"worker_id\":5,\"dp_rank\":0,\"selected\":"
	    "true,\"max_overlap\":true,\"total_cost_blocks\":1.0,"
	    "\"device_overlap_blocks\":3.0}]}}}";
	static const char *const other[] = {
	    "{\"schema\":\"dynamo.request.trace.v1\",\"event_type\":"
	    "\"request_end\",\"event_time_unix_ms\":1,\"request\":{"
	    "\"request_id\":\"r\",\"routing_decision\":null}}",
	    "{\"schema\":\"dynamo.request.trace.v1\",\"event_type\":"
	    "\"tool_end\",\"event_time_unix_ms\":1}",
	    "{\"schema\":\"other.v1\",\"selected_worker_id\":1}",
	};
	struct kvp_decision_rec d;
	struct kvp_diag dg;

	CHECK(parse(&PC, bare, &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION && d.id.p == NULL);
	CHECK(d.chosen && !d.rejected && d.worker_id == 7 && d.dp_rank == 1);
	CHECK(d.overlap == 2 && d.has_logit && d.logit == 2.25);
	CHECK(d.request_blocks == 9 && span_is(d.policy, "dynamo"));
	/* max overlap: candidate 3's 6 blocks, 4 lost */
	CHECK(d.has_max && d.max_overlap == 6 && d.non_max &&
	      d.blocks_lost == 4);
	CHECK(d.n_cand == 2 && d.cand[0].worker_id == 3 &&
	      d.cand[0].active_blocks == 4 && d.cand[1].active_blocks == 11);
	/* knobs: bits 0 (credit), 2 (scale), 7 (temperature) */
	CHECK(d.knobs == (1u | 4u | 128u) && d.knob[2] == 0.5 &&
	      d.knob[0] == 1.0 && d.knob[7] == 0.0 && d.has_fp);
	CHECK(parse(&P, wrapped, &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION);
	CHECK(span_is(d.id, "\"req-1\"") && d.has_ts && d.ts_ms == 1500);
	CHECK(d.worker_id == 5 && d.overlap == 3 && d.max_overlap == 3 &&
	      !d.non_max && d.blocks_lost == 0 && d.request_blocks == 2);
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		CHECK(parse(&P, other[i], &d, &dg) == KVP_OK);
		CHECK(d.kind == KVP_DECISION_OTHER);
	}
}

/* Dynamo's replay rows (docs/spec/dynamo-replay.md §4.1), written by hand
 * with PerRequestRecord's keys: the first agg/prefill routing entry wins
 * over an earlier decode one; nulls are absent; sorted key order is
 * recognised by its first key; a row without reused_input_tokens is not
 * a decision; a rejected row is a rejection; an escaped key goes through
 * json-c and gives the same fields. */
static void
test_replay_rows(void)
{
	static const char row[] =
	    "{\"session_id\":null,\"turn_index\":null,\"uuid\":\"u-1\","
	    "\"request_id\":\"req-9\",\"terminal_status\":\"completed\","
	    "\"arrival_time_ms\":12.5,\"ttft_ms\":30.25,\"input_length\":64,"
	    "\"output_length\":3,\"reused_input_tokens\":16,"
	    "\"prefill_worker_idx\":null,\"decode_worker_idx\":7,"
	    "\"routing_history\":[{\"pool\":\"decode\",\"logical_worker_id\":9,"
	    "\"dp_rank\":1,\"selected_overlap_blocks\":4},{\"pool\":"
	    "\"prefill\","
	    "\"logical_worker_id\":2,\"dp_rank\":null,"
	    "\"reported_overlap_tokens\":32,\"selected_overlap_blocks\":1,"
	    "\"best_available_overlap_blocks\":3,\"overlap_regret_blocks\":2},"
	    "{\"pool\":\"agg\",\"logical_worker_id\":5,\"dp_rank\":0}],"
	    "\"admission_history\":[]}";
	static const char sorted[] =
	    "{\"admission_count\":1,\"arrival_time_ms\":0.0,"
	    "\"decode_worker_idx\":3,\"input_length\":32,"
	    "\"reused_input_tokens\":8,\"ttft_ms\":null}";
	static const char rejected[] =
	    "{\"uuid\":\"u-2\",\"terminal_status\":\"rejected\","
	    "\"input_length\":8,\"reused_input_tokens\":0}";
	static const char escaped[] =
	    "{\"uuid\":\"u-3\",\"input_l\\u0065ngth\":40,"
	    "\"reused_input_tokens\":20,\"decode_worker_idx\":1}";
	struct kvp_decision_rec d;
	struct kvp_diag dg;
	uint64_t num, den;
	char buf[24];

	CHECK(parse(&P, row, &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION && d.replay_row);
	CHECK(span_is(d.id, "\"req-9\"") && !d.id_ordinal);
	CHECK(d.has_ts && d.ts_ms == 12.5 && d.has_ttft && d.ttft_ms == 30.25);
	/* the prefill entry, not the decode one before it */
	CHECK(d.chosen && !d.rejected && d.worker_id == 2 && d.dp_rank == 0);
	CHECK(!d.no_overlap && d.overlap == 1 && d.has_max &&
	      d.max_overlap == 3 && d.blocks_lost == 2 && d.non_max);
	CHECK(d.has_pred && d.pred == 32 && d.has_engine && d.engine == 16);
	kvp_decision_hit_terms(&d, &num, &den);
	CHECK(num == 16 && den == 64);

	CHECK(parse(&P, sorted, &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION && d.replay_row && d.id_ordinal);
	CHECK(d.chosen && d.worker_id == 3 && d.dp_rank == 0);
	CHECK(d.no_overlap && !d.has_max && !d.has_pred && !d.has_ttft);
	kvp_decision_ordinal_id(&d, 7, buf);
	CHECK(span_is(d.id, "7"));

	CHECK(parse(&P, rejected, &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION && d.rejected && !d.chosen);

	CHECK(parse(&P, "{\"uuid\":\"u-4\",\"input_length\":8}", &d, &dg) ==
	      KVP_OK);
	CHECK(d.kind == KVP_DECISION_OTHER);

	CHECK(parse(&P, escaped, &d, &dg) == KVP_OK);
	CHECK(d.kind == KVP_DECISION_DECISION && d.input_tokens == 40 &&
	      d.reused == 20 && d.worker_id == 1);

	/* a route-score decision is never a row */
	CHECK(parse(&P, full, &d, &dg) == KVP_OK);
	CHECK(!d.replay_row && !d.no_overlap);
	kvp_decision_hit_terms(&d, &num, &den);
	CHECK(num == 4 && den == 7);
}

/* Dynamo's replay report JSON, read whole (§4.4). */
static void
test_replay_doc(void)
{
	static const char *const lines[] = {
	    "{",
	    "  \"per_request\": [",
	    "    {\"input_length\": 8, "
	    "\"reused_input_tokens\": 4, \"uuid\": \"a\"}",
	    "  ],",
	    "  \"summary\": {\"num_requests\": 1, "
	    "\"prefix_cache_reused_ratio\": 0.5, \"p99_ttft_ms\": 9.5}",
	    "}"};
	struct kvp_replay_doc doc;
	struct kvp_decision_rec d;
	struct kvp_diag dg;
	const char *line;
	size_t len, i;

	CHECK(kvp_replay_doc_starts("{", 1));
	CHECK(kvp_replay_doc_starts("{\"summary\":{}}", 14));
	CHECK(kvp_replay_doc_starts("{\"num_requests\":1}", 18));
	CHECK(!kvp_replay_doc_starts("{\"rec\":\"decision\"}", 18));
	CHECK(!kvp_replay_doc_starts("{\"summaryx\":1}", 14));
	memset(&doc, 0, sizeof doc);
	for (i = 0; i < sizeof lines / sizeof lines[0]; i++)
		CHECK(kvp_replay_doc_append(&doc, lines[i], strlen(lines[i])) ==
		      KVP_OK);
	memset(&dg, 0, sizeof dg);
	CHECK(kvp_replay_doc_finish(&doc, &dg) == KVP_OK);
	CHECK(doc.sum.has ==
	      ((1u << KVP_REPLAY_NUM_REQUESTS) |
	       (1u << KVP_REPLAY_REUSED_RATIO) | (1u << KVP_REPLAY_P99_TTFT)));
	CHECK(doc.sum.v[KVP_REPLAY_REUSED_RATIO] == 0.5 &&
	      doc.sum.v[KVP_REPLAY_P99_TTFT] == 9.5);
	CHECK(kvp_replay_doc_next(&doc, &line, &len, &i) == 1 && i == 0);
	/* its keys sorted: the row is read as a row all the same */
	P.replay_rows = 1;
	CHECK(kvp_decision_parse(&P, line, len, &d, &dg) == KVP_OK);
	P.replay_rows = 0;
	CHECK(d.kind == KVP_DECISION_DECISION && d.reused == 4 &&
	      d.input_tokens == 8);
	CHECK(kvp_replay_doc_next(&doc, &line, &len, &i) == 0);
	kvp_replay_doc_fini(&doc);

	memset(&doc, 0, sizeof doc);
	CHECK(kvp_replay_doc_append(&doc, "{", 1) == KVP_OK);
	CHECK(kvp_replay_doc_finish(&doc, &dg) == KVP_BAD && dg.msg[0]);
	kvp_replay_doc_fini(&doc);
}

int
main(void)
{
	kvp_decision_parser_init(&P, 0);
	kvp_decision_parser_init(&PC, 1);
	test_full();
	test_brief();
	test_rejections();
	test_other_kinds();
	test_bad();
	test_candidates_types();
	test_fallback();
	test_escaped_values();
	test_traces();
	test_replay_rows();
	test_replay_doc();
	kvp_decision_parser_fini(&P);
	kvp_decision_parser_fini(&PC);
	return UNIT_DONE();
}
