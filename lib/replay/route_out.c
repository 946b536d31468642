/* SPDX-License-Identifier: MIT */
/*
 * route_out.c — route-score's output writers: the decision and summary
 * records (NDJSON), the text explanation and Dynamo's scheduler log lines.
 * See route_out.h for the contract.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/ndjson.h"
#include "lab/lab.h"
#include "replay/route_input.h"
#include "replay/route_out.h"
#include "replay/truth.h"
#include "route/router.h"

static void
write_id(struct kvp_jw *w, const struct kvp_rin *in)
{
	kvp_jw_next_key(w, "request_id");
	if (in->id_json != NULL)
		kvp_jw_json(w, in->id_json);
	else if (in->id_fast == KVP_RIN_ID_STRING)
		kvp_jw_strn(w, in->rq.id, in->rq.id_len);
	else
		kvp_jw_u64(w, in->line_id);
}

/* An integral value goes through the (faster) integer writer; the text is
 * the same as kvp_jw_double's. next_num: as a member after the first. */
static void
num(struct kvp_jw *w, double v)
{
	if (v >= 0 && v < 9007199254740992.0 && v == (double)(uint64_t)v)
		kvp_jw_u64(w, (uint64_t)v);
	else
		kvp_jw_double(w, v);
}
#define next_num(w, name, v) (kvp_jw_next_key((w), name), num((w), (v)))

static void
write_wr(struct kvp_jw *w, uint64_t wid, uint32_t rank)
{
	kvp_jw_obj_begin(w);
	kvp_jw_kv_hash(w, "worker_id", wid);
	kvp_jw_next(w, "dp_rank", u64, rank);
	kvp_jw_obj_end(w);
}

static void
write_candidates(struct kvp_jw *w, const struct kvp_decision *dc,
                 const struct kvp_trace_ctx *parts)
{
	kvp_jw_next_key(w, "candidates");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < dc->ncand; i++) {
		const struct kvp_cand_score *s = &dc->cand[i];

		kvp_jw_obj_begin(w);
		kvp_jw_kv_hash(w, "worker_id", s->worker_id);
		kvp_jw_next(w, "dp_rank", u64, s->dp_rank);
		kvp_jw_next(w, "overlap_blocks", u64, s->overlap);
		kvp_jw_next(w, "host_overlap_blocks", u64, s->host_overlap);
		kvp_jw_next(w, "disk_overlap_blocks", u64, s->disk_overlap);
		kvp_jw_next(w, "tree_size", u64, s->tree_size);
		kvp_jw_next(w, "active_prefill_tokens", u64,
		            s->active_prefill_tokens);
		kvp_jw_next(w, "prefill_tokens", u64, s->prefill_tokens);
		next_num(w, "prefill_blocks", s->prefill_blocks);
		kvp_jw_next(w, "active_blocks", u64, s->active_blocks);
		kvp_jw_next(w, "new_blocks", u64, s->new_blocks);
		kvp_jw_next(w, "decode_blocks", u64, s->decode_blocks);
		next_num(w, "logit", s->logit);
		if (dc->temperature > 0)
			next_num(w, "prob", s->prob);
		if (dc->credit_decay)
			next_num(w, "credit_factor", s->credit_factor);
		if (parts != NULL) /* --score-parts */
			kvp_trace_score_parts(w, parts, s);
		kvp_jw_obj_end(w);
	}
	kvp_jw_arr_end(w);
}

static void
write_warnings(struct kvp_jw *w, const struct kvp_rin *in,
               const struct kvp_decision *dc)
{
	kvp_jw_next_key(w, "warnings");
	kvp_jw_arr_begin(w);
	if (dc->warnings & KVP_WARN_NO_FULL_BLOCK)
		kvp_jw_str(w, "no_full_block");
	if (in->flags & KVP_RIN_BLOCK_SIZE_MISMATCH)
		kvp_jw_str(w, "block_size_mismatch");
	if (dc->warnings & KVP_WARN_NO_CANDIDATES)
		kvp_jw_str(w, "no_candidates");
	if (dc->warnings & KVP_WARN_NO_OVERLAP)
		kvp_jw_str(w, "no_overlap");
	if (dc->warnings & KVP_WARN_DUPLICATE_REQUEST)
		kvp_jw_str(w, "duplicate_request_id");
	kvp_jw_arr_end(w);
}

/* The choice: chosen, its overlap and logit (full and brief records). */
static void
write_choice(struct kvp_jw *w, const struct kvp_cand_score *ch)
{
	kvp_jw_next_key(w, "chosen");
	if (ch != NULL)
		write_wr(w, ch->worker_id, ch->dp_rank);
	else
		kvp_jw_null(w);
	kvp_jw_next(w, "overlap_blocks", u64, ch ? ch->overlap : 0);
	kvp_jw_next_key(w, "logit");
	if (ch != NULL)
		kvp_jw_double(w, ch->logit);
	else
		kvp_jw_null(w);
}

/* The pick: the choice, then the draw and the tie. */
static void
write_pick(struct kvp_jw *w, const struct kvp_decision *dc,
           const struct kvp_cand_score *ch)
{
	write_choice(w, ch);
	next_num(w, "temperature", dc->temperature);
	next_num(w, "overlap_weight", dc->weight);
	if (dc->drew)
		kvp_jw_next(w, "u", double, dc->u);
	kvp_jw_next(w, "tie_break", str, dc->tie_break);
	kvp_jw_next_key(w, "tied");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < dc->ncand; i++)
		if (dc->cand[i].tied && dc->ntied > 1)
			write_wr(w, dc->cand[i].worker_id, dc->cand[i].dp_rank);
	kvp_jw_arr_end(w);
}

/* ---- Dynamo features' decision keys (kvpipe-records(5)) ----------------
 * tie_count always; the rest only when the feature acted on the request:
 * rejected (and overloaded), affinity, output_blocks, queued and wait_ms,
 * replica. New decision keys go here. */
static void
write_dynamo(struct kvp_jw *w, const struct kvp_decision *dc)
{
	kvp_jw_next(w, "tie_count", u64, dc->tie_count);
	if (dc->rejected != NULL)
		kvp_jw_next(w, "rejected", str, dc->rejected);
	if (dc->overloaded > 0)
		kvp_jw_next(w, "overloaded", u64, dc->overloaded);
	if (dc->affinity != NULL)
		kvp_jw_next(w, "affinity", str, dc->affinity);
	if (dc->output_blocks > 0)
		kvp_jw_next(w, "output_blocks", u64, dc->output_blocks);
	if (dc->queued) {
		kvp_jw_next(w, "queued", bool, 1);
		if (dc->has_wait)
			kvp_jw_next(w, "wait_ms", u64, dc->wait_ms);
	}
	if (dc->has_replica)
		kvp_jw_next(w, "replica", u64, dc->replica);
}

/* The engine model's keys (truth.h): what the chosen engine will report
 * cached, and what it did report when the request says. */
static void
write_truth(struct kvp_jw *w, int model, const struct kvp_rin *in,
            const struct kvp_decision *dc)
{
	uint64_t e;

	if (model == 0 || !dc->has_predicted)
		return;
	kvp_jw_next(w, "predicted_cached_tokens", u64,
	            dc->predicted_cached_tokens);
	if (kvp_truth_engine(in, model, &e))
		kvp_jw_next(w, "engine_cached_tokens", u64, e);
}

/* The policy that chose, and how (policy.h). */
static void
write_policy(struct kvp_jw *w, const struct kvp_decision *dc)
{
	kvp_jw_next(w, "policy", str, dc->policy ? dc->policy : "dynamo");
	if (dc->policy_reason != NULL)
		kvp_jw_next(w, "policy_reason", str, dc->policy_reason);
}

static void
write_decision(struct kvp_jw *w, int model, const struct kvp_rin *in,
               const struct kvp_decision *dc, const struct kvp_trace_ctx *parts)
{
	const struct kvp_cand_score *ch =
	    dc->chosen >= 0 ? &dc->cand[dc->chosen] : NULL;
	const struct kvp_cand_score *mx =
	    dc->max_overlap >= 0 ? &dc->cand[dc->max_overlap] : NULL;

	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "decision");
	write_id(w, in);
	if (in->has_ts)
		kvp_jw_next(w, "ts_ms", u64, in->ts_ms);
	kvp_jw_next(w, "commit", bool, in->rq.commit);
	kvp_jw_next(w, "isl", u64, dc->isl);
	kvp_jw_next(w, "request_blocks", u64, dc->request_blocks);
	kvp_jw_next(w, "hashed_blocks", u64, dc->hashed_blocks);
	write_policy(w, dc); /* policy lab */
	write_pick(w, dc, ch);
	kvp_jw_next_key(w, "max_overlap");
	if (mx != NULL) {
		kvp_jw_obj_begin(w);
		kvp_jw_kv_hash(w, "worker_id", mx->worker_id);
		kvp_jw_next(w, "dp_rank", u64, mx->dp_rank);
		kvp_jw_next(w, "blocks", u64, mx->overlap);
		kvp_jw_obj_end(w);
	} else {
		kvp_jw_null(w);
	}
	kvp_jw_next(w, "non_max_overlap", bool,
	            ch &&mx && ch->overlap < mx->overlap);
	kvp_jw_next(w, "blocks_lost", u64,
	            ch && mx ? mx->overlap - ch->overlap : 0);
	write_dynamo(w, dc);
	write_truth(w, model, in, dc);
	write_candidates(w, dc, parts);
	write_warnings(w, in, dc);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

/* A literal appended at p (advanced). */
#define LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) += sizeof(s) - 1)
/* Room for brief_head's members: its literals and quotes (149 bytes),
 * seven numbers (each written with KVP_U64_DEC_ROOM of room), a policy
 * name of BRIEF_NAME and a double (kvp_jw_format_double's 40). */
#define BRIEF_NAME 40
#define BRIEF_ROOM (160 + 7 * KVP_U64_DEC_ROOM + BRIEF_NAME + 40)

/* Is s (n bytes) a JSON string's text as it is (nothing to escape)? */
static int
plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == '"' || s[i] == '\\' ||
		    (unsigned char)s[i] >= 0x80)
			return 0;
	return 1;
}

/*
 * write_brief's members up to blocks_lost, and the object's '{', rendered
 * in one piece: the text the key-by-key writer below gives (a decision
 * with a chosen worker, a numeric id, no policy_reason), at a fraction of
 * its cost, which was most of the Mooncake replay's output side. 0 when
 * the decision is not of that kind (nothing written).
 */
static int
brief_head(struct kvp_jw *w, const struct kvp_rin *in,
           const struct kvp_decision *dc, const struct kvp_cand_score *ch,
           const struct kvp_cand_score *mx)
{
	const char *pol = dc->policy ? dc->policy : "dynamo";
	size_t np = strlen(pol);
	char *p, *b;

	if (ch == NULL || mx == NULL || in->id_json != NULL ||
	    in->id_fast == KVP_RIN_ID_STRING || dc->policy_reason != NULL ||
	    np > BRIEF_NAME || !plain(pol, np) || !isfinite(ch->logit) ||
	    (b = p = kvp_jw_reserve(w, BRIEF_ROOM)) == NULL)
		return 0;
	LIT(p, "{\"rec\":\"decision\",\"request_id\":");
	p += kvp_u64_dec(p, in->line_id);
	if (in->has_ts) {
		LIT(p, ",\"ts_ms\":");
		p += kvp_u64_dec(p, in->ts_ms);
	}
	LIT(p, ",\"request_blocks\":");
	p += kvp_u64_dec(p, dc->request_blocks);
	LIT(p, ",\"policy\":\"");
	memcpy(p, pol, np);
	p += np;
	LIT(p, "\",\"chosen\":{\"worker_id\":");
	if (w->hash_strings)
		*p++ = '"';
	p += kvp_u64_dec(p, ch->worker_id);
	if (w->hash_strings)
		*p++ = '"';
	LIT(p, ",\"dp_rank\":");
	p += kvp_u64_dec(p, ch->dp_rank);
	LIT(p, "},\"overlap_blocks\":");
	p += kvp_u64_dec(p, ch->overlap);
	LIT(p, ",\"logit\":");
	p += kvp_jw_format_double(p, ch->logit);
	LIT(p, ",\"blocks_lost\":");
	p += kvp_u64_dec(p, mx->overlap - ch->overlap);
	kvp_jw_commit(w, (size_t)(p - b));
	kvp_jw_obj_resume(w); /* the members go on after these */
	return 1;
}

/*
 * The --brief decision: the keys that say what happened to the request,
 * without the per-candidate arrays (candidates, tied) and the inputs of the
 * pick. The one place brief output is defined: a field that must stay in
 * brief records (policy, rejection, wait) is added here, under the same
 * key and in the same relative order as in the full record.
 */
static void
write_brief(struct kvp_jw *w, int model, const struct kvp_rin *in,
            const struct kvp_decision *dc)
{
	const struct kvp_cand_score *ch =
	    dc->chosen >= 0 ? &dc->cand[dc->chosen] : NULL;
	const struct kvp_cand_score *mx =
	    dc->max_overlap >= 0 ? &dc->cand[dc->max_overlap] : NULL;

	if (!brief_head(w, in, dc, ch, mx)) {
		kvp_jw_obj_begin(w);
		kvp_jw_kv_str(w, "rec", "decision");
		write_id(w, in);
		if (in->has_ts)
			kvp_jw_next(w, "ts_ms", u64, in->ts_ms);
		kvp_jw_next(w, "request_blocks", u64, dc->request_blocks);
		write_policy(w, dc);
		write_choice(w, ch);
		kvp_jw_next(w, "blocks_lost", u64,
		            ch && mx ? mx->overlap - ch->overlap : 0);
	}
	write_dynamo(w, dc);
	write_truth(w, model, in, dc);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

static void
id_text(const struct kvp_rin *in, char *buf, size_t len)
{
	size_t n = in->rq.id_len < len - 1 ? in->rq.id_len : len - 1;

	memcpy(buf, in->rq.id, n);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
}

static void
text_table(struct kvp_jw *w, const struct kvp_decision *dc)
{
	kvp_jw_text(w, "    %-20s %4s %7s %6s %10s %6s %6s %10s%s\n", "worker",
	            "dp", "overlap", "tree", "prefill", "active", "new",
	            "logit", dc->temperature > 0 ? "     prob" : "");
	for (size_t i = 0; i < dc->ncand; i++) {
		const struct kvp_cand_score *s = &dc->cand[i];

		kvp_jw_text(w,
		            "  %c %-20" PRIu64 " %4u %7u %6" PRIu64
		            " %10.3f %6" PRIu64 " %6" PRIu64 " %10.3f",
		            (long)i == dc->chosen ? '*' : ' ', s->worker_id,
		            s->dp_rank, s->overlap, s->tree_size,
		            s->prefill_blocks, s->active_blocks, s->new_blocks,
		            s->logit);
		if (dc->temperature > 0)
			kvp_jw_text(w, " %8.6f", s->prob);
		kvp_jw_text(w, "\n");
	}
}

static int
policy_is_dynamo(const struct kvp_decision *dc)
{
	return dc->policy == NULL || strcmp(dc->policy, "dynamo") == 0;
}

/* A peer policy's pick, in the verdict (policy lab). */
static void
text_policy(struct kvp_jw *w, const struct kvp_decision *dc)
{
	kvp_jw_text(w, "chosen by policy %s", dc->policy);
	if (dc->policy_reason != NULL)
		kvp_jw_text(w, " (%s)", dc->policy_reason);
}

/* "-> worker ...": how the chosen candidate won. */
static void
text_verdict(struct kvp_jw *w, const struct kvp_decision *dc)
{
	const struct kvp_cand_score *ch = &dc->cand[dc->chosen];
	const struct kvp_cand_score *mx = &dc->cand[dc->max_overlap];

	kvp_jw_text(w, "  -> worker %" PRIu64 " dp %u: ", ch->worker_id,
	            ch->dp_rank);
	if (strcmp(dc->tie_break, "pinned") == 0)
		kvp_jw_text(w, "pinned by the request");
	else if (!policy_is_dynamo(dc))
		text_policy(w, dc);
	else if (strcmp(dc->tie_break, "softmax") == 0)
		kvp_jw_text(w, "sampled at T %g with u %.6f (p %.6f)",
		            dc->temperature, dc->u, ch->prob);
	else
		kvp_jw_text(w, "lowest logit %.3f", ch->logit);
	if (dc->ntied > 1)
		kvp_jw_text(w,
		            ", tied with %zu other candidate(s), broken by %s",
		            dc->ntied - 1, dc->tie_break);
	kvp_jw_text(w, "; overlap %u of %" PRIu64 " blocks", ch->overlap,
	            dc->hashed_blocks);
	if (ch->overlap < mx->overlap)
		kvp_jw_text(w,
		            "; NOT the max-overlap worker %" PRIu64
		            " (%u blocks): %s outweighed %u cached blocks",
		            mx->worker_id, mx->overlap,
		            policy_is_dynamo(dc) ? "load" : "the policy",
		            mx->overlap - ch->overlap);
	kvp_jw_text(w, "\n");
}

/* Why nothing is indexed for any candidate: say what the events were. */
static void
text_why_empty(const struct kvp_rout *o)
{
	const struct kvp_route_stats *s = o->stats;
	struct kvp_jw *w = o->jw;

	if (s != NULL && s->parent_not_found > s->orphans_rooted)
		kvp_jw_text(
		    w,
		    "  why 0: no blocks indexed for any candidate: %" PRIu64
		    " stores skipped, parent unknown (the capture began "
		    "mid-run: capture from the start with replay, or "
		    "index them as new chains with --orphans root)\n",
		    s->parent_not_found - s->orphans_rooted);
	else if (s != NULL && s->events > 0)
		kvp_jw_text(w, "  why 0: no blocks indexed for any candidate "
		               "(the stores seen were removed, cleared or "
		               "rejected)\n");
	else
		kvp_jw_text(w,
		            "  why 0: no blocks indexed for any candidate (no "
		            "store events seen)\n");
}

/* Why the overlap is 0, when it is. */
static void
text_why(const struct kvp_rout *o, const struct kvp_rin *in,
         const struct kvp_decision *dc)
{
	struct kvp_jw *w = o->jw;
	uint64_t indexed = 0;

	if (dc->warnings & KVP_WARN_NO_FULL_BLOCK) {
		kvp_jw_text(w,
		            "  why 0: no full block (%" PRIu64
		            " tokens, block size %u): nothing to match\n",
		            dc->isl, o->block_size);
		return;
	}
	if (!(dc->warnings & KVP_WARN_NO_OVERLAP))
		return;
	for (size_t i = 0; i < dc->ncand; i++)
		indexed += dc->cand[i].tree_size;
	if (indexed == 0)
		text_why_empty(o);
	else
		kvp_jw_text(
		    w,
		    "  why 0: no worker holds the first block (tokens_hash "
		    "%" PRIu64 "); check %s, LoRA / namespace, and that "
		    "tokens_hash comes from the same token ids\n",
		    in->rq.local[0],
		    o->block_size_hint ? o->block_size_hint : "the block size");
}

/* The engine model's line: predicted, and reported when known. */
static void
text_truth(const struct kvp_rout *o, const struct kvp_rin *in,
           const struct kvp_decision *dc)
{
	uint64_t e;

	if (o->engine_model == 0 || !dc->has_predicted)
		return;
	kvp_jw_text(o->jw, "  engine %s: predicted %" PRIu64 " cached tokens",
	            kvp_engine_names()[o->engine_model],
	            dc->predicted_cached_tokens);
	if (kvp_truth_engine(in, o->engine_model, &e))
		kvp_jw_text(o->jw, ", reported %" PRIu64 "%s", e,
		            e == dc->predicted_cached_tokens ? " (exact)" : "");
	kvp_jw_text(o->jw, "\n");
}

static void
write_text(const struct kvp_rout *o, const struct kvp_rin *in,
           const struct kvp_decision *dc)
{
	struct kvp_jw *w = o->jw;
	char id[80];

	id_text(in, id, sizeof(id));
	kvp_jw_text(w,
	            "request %s: isl %" PRIu64 ", %" PRIu64 " blocks (%" PRIu64
	            " hashed), W %g, T %g%s\n",
	            id, dc->isl, dc->request_blocks, dc->hashed_blocks,
	            dc->weight, dc->temperature,
	            in->rq.commit ? "" : ", query only");
	if (dc->chosen < 0 && dc->rejected != NULL) {
		kvp_jw_text(w, "  rejected: %s (%zu overloaded)\n\n",
		            dc->rejected, dc->overloaded);
		kvp_jw_end_text(w);
		return;
	}
	if (dc->chosen < 0) {
		kvp_jw_text(w, "  no candidate worker%s\n\n",
		            dc->warnings & KVP_WARN_NO_FULL_BLOCK
		                ? " (and no full block)"
		                : "");
		kvp_jw_end_text(w);
		return;
	}
	text_table(w, dc);
	text_verdict(w, dc);
	if (dc->queued)
		kvp_jw_text(w, "  queued: waited %" PRIu64 " ms\n",
		            dc->has_wait ? dc->wait_ms : 0);
	if (dc->has_replica)
		kvp_jw_text(w, "  replica %" PRIu64 "\n", dc->replica);
	text_truth(o, in, dc);
	text_why(o, in, dc);
	kvp_jw_text(w, "\n");
	kvp_jw_end_text(w);
}

/* Dynamo's scheduler debug lines (lib/llm/src/kv_router/scheduler.rs). */
static void
write_log(const struct kvp_rout *o, const struct kvp_rin *in,
          const struct kvp_decision *dc)
{
	struct kvp_jw *w = o->jw;
	char id[80];

	id_text(in, id, sizeof(id));
	for (size_t i = 0; i < dc->ncand; i++) {
		const struct kvp_cand_score *s = &dc->cand[i];

		kvp_jw_text(
		    w,
		    "Formula for worker_id=%" PRIu64
		    " dp_rank=%u with %u cached blocks: %.3f = %.1f * "
		    "prefill_blocks + decode_blocks = %.1f * %.3f + %.3f\n",
		    s->worker_id, s->dp_rank, s->overlap, s->logit, dc->weight,
		    dc->weight, s->prefill_blocks, (double)s->decode_blocks);
	}
	if (dc->chosen >= 0) {
		const struct kvp_cand_score *ch = &dc->cand[dc->chosen];

		kvp_jw_text(w,
		            "Selected worker: worker_id=%" PRIu64
		            " dp_rank=%u, logit: %.3f, cached blocks: %u, tree "
		            "size: %" PRIu64 ", total blocks: %" PRIu64
		            " (request %s)\n",
		            ch->worker_id, ch->dp_rank, ch->logit, ch->overlap,
		            ch->tree_size, dc->request_blocks, id);
	} else {
		kvp_jw_text(w, "No worker available (request %s)\n", id);
	}
	kvp_jw_end_text(w);
}

static double
rate(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

/* Gaps: event_id gaps seen here, and gap records from upstream. */
static uint64_t
gaps(const struct kvp_rout *o, const struct kvp_route_stats *s)
{
	return s->gaps + (o->input ? o->input->gap_records : 0);
}

static void
text_summary(const struct kvp_rout *o, const struct kvp_route_stats *s)
{
	struct kvp_jw *w = o->jw;
	kvp_jw_text(
	    w,
	    "summary: %" PRIu64 " requests, %" PRIu64 " routed; events %" PRIu64
	    " (%" PRIu64 " applied, %" PRIu64 " stale, %" PRIu64
	    " gaps, %" PRIu64 " parent not found); prefix hit rate %.6f "
	    "(reachable %.6f); non-max-overlap %" PRIu64 "\n",
	    s->requests, s->routed, s->events, s->applied, s->stale, gaps(o, s),
	    s->parent_not_found, rate(s->hit_blocks, s->hashed_blocks),
	    rate(s->reachable_hit_blocks, s->hashed_blocks),
	    s->non_max_overlap);
	kvp_jw_end_text(w);
}

/* The summary record's event counters. */
static void
summary_events(const struct kvp_rout *o, const struct kvp_route_stats *s,
               uint64_t truncated_stores)
{
	struct kvp_jw *w = o->jw;

	kvp_jw_kv_u64(w, "events", s->events);
	kvp_jw_kv_u64(w, "applied", s->applied);
	kvp_jw_key(w, "skipped");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "stale", s->stale);
	kvp_jw_kv_u64(w, "gap", s->gap_skipped);
	kvp_jw_kv_u64(w, "parent_not_found",
	              s->parent_not_found - s->orphans_rooted);
	kvp_jw_kv_u64(w, "self_reference", s->self_reference);
	kvp_jw_obj_end(w);
	kvp_jw_kv_u64(w, "orphans_rooted", s->orphans_rooted);
	kvp_jw_kv_u64(w, "gaps", gaps(o, s));
	kvp_jw_kv_u64(w, "gap_records", o->input ? o->input->gap_records : 0);
	kvp_jw_kv_u64(w, "stale_records",
	              o->input ? o->input->stale_records : 0);
	kvp_jw_kv_u64(w, "duplicate_store", s->duplicate_store);
	kvp_jw_kv_u64(w, "block_size_mismatch", s->block_size_mismatch);
	kvp_jw_kv_u64(w, "truncated_stores", truncated_stores);
	kvp_jw_kv_u64(w, "unknown_removals", s->unknown_removals);
	kvp_jw_kv_u64(w, "blocks_stored", s->blocks_stored);
	kvp_jw_kv_u64(w, "blocks_removed", s->blocks_removed);
	kvp_jw_kv_u64(w, "clears", s->clears);
	kvp_jw_kv_u64(w, "workers_removed", s->workers_removed);
}

/* The summary record's request counters. */
static void
summary_requests(struct kvp_jw *w, const struct kvp_route_stats *s)
{
	kvp_jw_kv_u64(w, "requests", s->requests);
	kvp_jw_kv_u64(w, "routed", s->routed);
	kvp_jw_kv_u64(w, "queries", s->queries);
	kvp_jw_kv_u64(w, "no_candidate", s->no_candidate);
	kvp_jw_kv_u64(w, "non_max_overlap", s->non_max_overlap);
	kvp_jw_kv_u64(w, "blocks_lost", s->blocks_lost);
	kvp_jw_kv_u64(w, "hashed_blocks", s->hashed_blocks);
	kvp_jw_kv_u64(w, "hit_blocks", s->hit_blocks);
	kvp_jw_kv_u64(w, "reachable_hit_blocks", s->reachable_hit_blocks);
	kvp_jw_kv_double(w, "prefix_hit_rate",
	                 rate(s->hit_blocks, s->hashed_blocks));
	kvp_jw_kv_double(w, "reachable_hit_rate",
	                 rate(s->reachable_hit_blocks, s->hashed_blocks));
	kvp_jw_kv_u64(w, "approx_expired", s->approx_expired);
	kvp_jw_kv_u64(w, "approx_pruned", s->approx_pruned);
	kvp_jw_kv_u64(w, "requests_expired", s->requests_expired);
	kvp_jw_kv_u64(w, "rejected", s->rejected);
	kvp_jw_kv_u64(w, "queued", s->queued);
	kvp_jw_kv_u64(w, "queued_at_end", s->queued_at_end);
	kvp_jw_kv_u64(w, "side_expired", s->side_expired);
	kvp_jw_kv_u64(w, "side_pruned", s->side_pruned);
	kvp_jw_kv_u64(w, "requests_capped", s->requests_capped);
}

static void
summary_workers(struct kvp_jw *w, const struct kvp_cand_total *t, size_t n)
{
	kvp_jw_key(w, "workers");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		kvp_jw_obj_begin(w);
		kvp_jw_kv_hash(w, "worker_id", t[i].worker_id);
		kvp_jw_kv_u64(w, "dp_rank", t[i].dp_rank);
		kvp_jw_kv_u64(w, "routed", t[i].routed);
		kvp_jw_kv_u64(w, "tree_size", t[i].tree_size);
		kvp_jw_kv_u64(w, "active_requests", t[i].active_requests);
		kvp_jw_obj_end(w);
	}
	kvp_jw_arr_end(w);
}

/* The options of r's lab (the defaults when it has none). */
static const struct kvp_policy_opts *
lab_opts(const struct kvp_router *r)
{
	static const struct kvp_policy_opts none = {.policy =
	                                                KVP_POLICY_DYNAMO};
	const struct kvp_policy_opts *po = kvp_lab_opts(r);

	return po != NULL ? po : &none;
}

/* The policy lab's summary line (text format). */
static void
text_summary_lab(const struct kvp_rout *o, struct kvp_router *r)
{
	const struct kvp_policy_opts *po = lab_opts(r);
	struct kvp_lab_totals t;
	struct kvp_jw *w = o->jw;

	if (kvp_lab_run_totals(r, &t) != 0)
		return;
	kvp_jw_text(w,
	            "policy %s: routed max/mean %.3f, active blocks max/mean "
	            "%.3f",
	            kvp_policy_names()[po->policy], t.routed_max_mean,
	            t.blocks_max_mean);
	if (t.capacity_on)
		kvp_jw_text(
		    w, "; capacity %" PRIu64 " blocks, %" PRIu64 " evictions",
		    po->capacity, t.evictions);
	if (t.simtime_on)
		kvp_jw_text(
		    w,
		    "; simulated TTFT p50 %.1f ms, p99 %.1f ms (%" PRIu64
		    " requests, %" PRIu64 " completed)",
		    t.ttft_p50_ms, t.ttft_p99_ms, t.ttft_n, t.completed);
	kvp_jw_text(w, "\n");
	kvp_jw_end_text(w);
}

/* The policy lab's summary keys: the policy, load balance, and with a
 * capacity or simulated time their totals. */
static void
summary_lab(struct kvp_jw *w, struct kvp_router *r)
{
	const struct kvp_policy_opts *o = lab_opts(r);
	struct kvp_lab_totals t;

	if (kvp_lab_run_totals(r, &t) != 0)
		return;
	kvp_jw_kv_str(w, "policy", kvp_policy_names()[o->policy]);
	kvp_jw_key(w, "load_balance");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_double(w, "routed_max_mean", t.routed_max_mean);
	kvp_jw_kv_double(w, "active_blocks_max_mean", t.blocks_max_mean);
	kvp_jw_obj_end(w);
	if (t.capacity_on) {
		kvp_jw_kv_u64(w, "capacity_blocks", o->capacity);
		kvp_jw_kv_u64(w, "evictions", t.evictions);
	}
	if (!t.simtime_on)
		return;
	kvp_jw_key(w, "simulated");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "completed", t.completed);
	kvp_jw_kv_u64(w, "ttft_requests", t.ttft_n);
	kvp_jw_kv_double(w, "ttft_p50_ms", t.ttft_p50_ms);
	kvp_jw_kv_double(w, "ttft_p99_ms", t.ttft_p99_ms);
	kvp_jw_kv_double(w, "ttft_mean_ms", t.ttft_mean_ms);
	kvp_jw_obj_end(w);
}

static double
mean_err(const struct kvp_truth *t, const struct kvp_truth_err *x)
{
	return t->requests ? (double)x->abs_err / (double)t->requests : 0.0;
}

/* cache_truth's members for one figure (predicted, or the index's). */
static void
truth_err(struct kvp_jw *w, const struct kvp_truth *t,
          const struct kvp_truth_err *x)
{
	kvp_jw_kv_u64(w, "exact", x->exact);
	kvp_jw_kv_u64(w, "over", x->over);
	kvp_jw_kv_u64(w, "under", x->under);
	kvp_jw_kv_double(w, "mean_abs_error_tokens", mean_err(t, x));
}

/* With events, the index's error is given beside the model's. */
static int
truth_split(const struct kvp_rout *o)
{
	return o->stats != NULL && o->stats->events > 0;
}

/* The summary's cache_truth; with events, the index's error and which
 * is larger. */
static void
summary_truth(const struct kvp_rout *o)
{
	static const struct kvp_truth none;
	const struct kvp_truth *t = o->truth ? o->truth : &none;
	struct kvp_jw *w = o->jw;

	kvp_jw_key(w, "cache_truth");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "requests", t->requests);
	truth_err(w, t, &t->pred);
	if (truth_split(o)) {
		kvp_jw_key(w, "index");
		kvp_jw_obj_begin(w);
		truth_err(w, t, &t->index);
		kvp_jw_obj_end(w);
		kvp_jw_kv_str(w, "dominant", kvp_truth_dominant(t));
	}
	kvp_jw_obj_end(w);
}

static const char *
dominant_words(const struct kvp_truth *t)
{
	const char *d = kvp_truth_dominant(t);

	if (strcmp(d, "model") == 0)
		return "the model's error dominates (the engine did not "
		       "follow the modelled rules)";
	if (strcmp(d, "index") == 0)
		return "the index's error dominates (missed events, gaps "
		       "or tiers)";
	return "neither error dominates";
}

/* The engine model's summary keys: its caches' totals and cache_truth. */
static void
summary_engine(const struct kvp_rout *o, struct kvp_router *r)
{
	const struct kvp_policy_opts *po = lab_opts(r);
	struct kvp_engine_totals t;
	struct kvp_jw *w = o->jw;

	if (o->engine_model == 0 || !kvp_lab_engine_totals(r, &t))
		return;
	kvp_jw_key(w, "engine");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "model", kvp_engine_names()[o->engine_model]);
	kvp_jw_kv_u64(w, "capacity_blocks", po->engine_capacity);
	kvp_jw_kv_u64(w, "host_capacity_blocks", po->host_capacity);
	kvp_jw_kv_u64(w, "evictions", t.evictions);
	kvp_jw_kv_u64(w, "host_evictions", t.host_evictions);
	kvp_jw_kv_u64(w, "host_loaded_blocks", t.loaded_back);
	kvp_jw_kv_u64(w, "overflow_peak_blocks", t.overflow);
	kvp_jw_kv_u64(w, "clears", t.clears);
	kvp_jw_obj_end(w);
	summary_truth(o);
}

/* Its text line. */
static void
text_summary_engine(const struct kvp_rout *o, struct kvp_router *r)
{
	const struct kvp_truth *tr = o->truth;
	struct kvp_engine_totals t;

	if (o->engine_model == 0 || !kvp_lab_engine_totals(r, &t))
		return;
	kvp_jw_text(o->jw,
	            "engine %s: %" PRIu64 " evictions, %" PRIu64
	            " host evictions, %" PRIu64 " blocks loaded back",
	            kvp_engine_names()[o->engine_model], t.evictions,
	            t.host_evictions, t.loaded_back);
	if (tr != NULL && tr->requests > 0)
		kvp_jw_text(o->jw,
		            "; cache truth over %" PRIu64 " requests: %" PRIu64
		            " exact, %" PRIu64 " over, %" PRIu64
		            " under, mean |error| %.1f tokens",
		            tr->requests, tr->pred.exact, tr->pred.over,
		            tr->pred.under, mean_err(tr, &tr->pred));
	if (tr != NULL && tr->requests > 0 && truth_split(o))
		kvp_jw_text(o->jw,
		            "; the index's overlap: %" PRIu64
		            " exact, mean |error| %.1f tokens; %s",
		            tr->index.exact, mean_err(tr, &tr->index),
		            dominant_words(tr));
	kvp_jw_text(o->jw, "\n");
	kvp_jw_end_text(o->jw);
}

void
kvp_rout_summary(const struct kvp_rout *o, struct kvp_router *r,
                 uint64_t truncated_stores, uint64_t records_ignored)
{
	const struct kvp_route_stats *s = kvp_router_stats(r);
	size_t n = kvp_router_ncandidates(r), nodes, bytes;
	uint64_t pairs;
	struct kvp_cand_total *t = calloc(n + 1, sizeof(*t));
	struct kvp_jw *w = o->jw;

	n = t != NULL ? kvp_router_totals(r, t, n) : 0;
	if (o->format == KVP_ROUT_TEXT) {
		text_summary(o, s);
		text_summary_lab(o, r); /* policy lab */
		text_summary_engine(o, r);
	}
	if (o->format != KVP_ROUT_NDJSON) {
		free(t);
		return;
	}
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "summary");
	summary_events(o, s, truncated_stores);
	kvp_jw_kv_u64(w, "records_ignored", records_ignored);
	kvp_jw_kv_u64(w, "errors", o->input ? o->input->errors : 0);
	kvp_jw_kv_u64(w, "errors_not_shown",
	              o->input ? o->input->errors_hidden : 0);
	summary_requests(w, s);
	kvp_router_index_totals(r, &nodes, &pairs, &bytes);
	kvp_jw_kv_u64(w, "index_nodes", nodes);
	kvp_jw_kv_u64(w, "index_pairs", pairs);
	kvp_jw_kv_u64(w, "index_bytes", bytes);
	summary_workers(w, t, n);
	summary_lab(w, r); /* policy lab */
	summary_engine(o, r);
	kvp_funnel_write(w, o->funnel);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
	free(t);
}

void
kvp_rout_decision(const struct kvp_rout *o, const struct kvp_rin *in,
                  const struct kvp_decision *dc)
{
	if (o->funnel != NULL)
		kvp_funnel_add(o->funnel, in, dc, o->block_size);
	switch (o->format) {
	case KVP_ROUT_TEXT:
		write_text(o, in, dc);
		break;
	case KVP_ROUT_LOG:
		write_log(o, in, dc);
		break;
	case KVP_ROUT_DYNAMO_TRACE:
		if (o->trace.ro != NULL)
			kvp_trace_decision(o->jw, &o->trace, in, dc);
		break;
	case KVP_ROUT_DYNAMO_REQUEST_TRACE:
		if (o->trace.ro != NULL)
			kvp_trace_request_end(o->jw, &o->trace, in, dc);
		break;
	default:
		if (o->brief)
			write_brief(o->jw, o->engine_model, in, dc);
		else
			write_decision(o->jw, o->engine_model, in, dc,
			               o->score_parts && o->trace.ro != NULL
			                   ? &o->trace
			                   : NULL);
	}
}

/* ---- policy lab records ------------------------------------------------ */

/* The smallest capacity among the points that reaches 80% of the
 * ceiling's hits (null when nothing can hit). */
static void
mrc_needed(struct kvp_jw *w, const struct kvp_mrc *m)
{
	uint64_t ceil = m->accesses - m->cold;

	kvp_jw_key(w, "capacity_for_80pct");
	for (int b = 0; b < m->nbuckets && ceil > 0; b++)
		if (m->hits_le[b] * 5 >= ceil * 4) {
			kvp_jw_u64(w, (uint64_t)1 << b);
			return;
		}
	kvp_jw_null(w);
}

static void
mrc_record(struct kvp_jw *w, const struct kvp_mrc *m, int fleet)
{
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "mrc");
	kvp_jw_kv_str(w, "scope", fleet ? "fleet" : "worker");
	if (!fleet) {
		kvp_jw_kv_hash(w, "worker_id", m->worker_id);
		kvp_jw_kv_u64(w, "dp_rank", m->dp_rank);
	}
	kvp_jw_kv_u64(w, "accesses", m->accesses);
	kvp_jw_key(w, "points");
	kvp_jw_arr_begin(w);
	for (int b = 0; b < m->nbuckets; b++) {
		kvp_jw_obj_begin(w);
		kvp_jw_kv_u64(w, "capacity_blocks", (uint64_t)1 << b);
		kvp_jw_kv_u64(w, "hits", m->hits_le[b]);
		kvp_jw_kv_double(w, "hit_rate",
		                 rate(m->hits_le[b], m->accesses));
		kvp_jw_obj_end(w);
	}
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "infinite");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "hits", m->accesses - m->cold);
	kvp_jw_kv_double(w, "hit_rate",
	                 rate(m->accesses - m->cold, m->accesses));
	kvp_jw_obj_end(w);
	mrc_needed(w, m);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

void
kvp_rout_mrc(const struct kvp_rout *o, struct kvp_router *r)
{
	struct kvp_mrc m;

	if (o->format != KVP_ROUT_NDJSON)
		return;
	for (size_t k = 0; kvp_lab_mrc(r, k, &m) == 0; k++)
		mrc_record(o->jw, &m, 0);
	if (kvp_lab_mrc(r, SIZE_MAX, &m) == 0)
		mrc_record(o->jw, &m, 1);
}

static void
sim_event(struct kvp_jw *w, const struct kvp_sim_event *e)
{
	kvp_jw_obj_begin(w);
	kvp_jw_kv_hash(w, "worker_id", e->worker_id);
	kvp_jw_kv_str(w, "storage_tier", "device");
	kvp_jw_kv_str(w, "residency_domain", "worker");
	kvp_jw_key(w, "event");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "event_id", e->event_id);
	kvp_jw_key(w, "data");
	kvp_jw_obj_begin(w);
	kvp_jw_key(w, e->removed ? "removed" : "stored");
	kvp_jw_obj_begin(w);
	if (e->removed) {
		kvp_jw_key(w, "block_hashes");
		kvp_jw_hash_array(w, e->ext, e->n);
	} else {
		if (e->has_parent)
			kvp_jw_kv_hash(w, "parent_hash", e->parent);
		else
			kvp_jw_kv_null(w, "parent_hash");
		kvp_jw_kv_null(w, "start_position");
		kvp_jw_key(w, "blocks");
		kvp_jw_arr_begin(w);
		for (size_t i = 0; i < e->n; i++) {
			kvp_jw_obj_begin(w);
			kvp_jw_kv_hash(w, "block_hash", e->ext[i]);
			kvp_jw_kv_hash(w, "tokens_hash", e->local[i]);
			kvp_jw_kv_null(w, "mm_extra_info");
			kvp_jw_obj_end(w);
		}
		kvp_jw_arr_end(w);
	}
	kvp_jw_obj_end(w);
	kvp_jw_obj_end(w);
	kvp_jw_kv_u64(w, "dp_rank", e->dp_rank);
	kvp_jw_obj_end(w);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

void
kvp_rout_sim_events(struct kvp_jw *w, struct kvp_router *r)
{
	size_t n;
	const struct kvp_sim_event *ev = kvp_lab_sim_events(r, &n);

	for (size_t i = 0; i < n; i++)
		sim_event(w, &ev[i]);
}
