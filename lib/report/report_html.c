/* SPDX-License-Identifier: MIT */
/*
 * report_html.c — kv-report's self-contained page: a style sheet, the
 * summary table, the charts and the disagreement table. No script, no
 * external resource.
 */
#include <inttypes.h>
#include <string.h>

#include "report/chart.h"

static const char style[] =
    "<style>\n"
    "body{font-family:sans-serif;margin:0 auto;max-width:1000px;"
    "padding:12px;color:#222}\n"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}\n"
    ".scroll{overflow-x:auto}\n"
    "table{border-collapse:collapse;font-size:14px}\n"
    "th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;"
    "vertical-align:top}\n"
    "th:first-child,td:first-child{text-align:left}\n"
    "td.id{font-family:monospace;text-align:left;word-break:break-all}\n"
    "svg.chart{width:100%;height:auto;max-width:960px;display:block}\n"
    "p.note{color:#555;font-size:13px}\n"
    "</style>\n";

static void
cell_u64(struct kvp_markup *w, uint64_t v)
{
	kvp_markup_tagf(w, "<td>%" PRIu64 "</td>", v);
}

static void
cell_ms(struct kvp_markup *w, double v)
{
	if (v < 0)
		kvp_markup_tag(w, "<td>\xe2\x80\x93</td>");
	else
		kvp_markup_tagf(w, "<td>%.1f</td>", v);
}

static void
summary_table(struct kvp_markup *w, const struct kvp_report *r)
{
	int k;

	kvp_markup_tag(w,
	               "<h2 id=\"summary\">Summary</h2><div class=\"scroll\">"
	               "<table class=\"summary\"><thead><tr><th>run</th>"
	               "<th>requests</th><th>routed</th><th>rejected</th>"
	               "<th>prefix hit rate</th><th>reachable hit rate</th>"
	               "<th>non-max-overlap choices</th><th>blocks lost</th>"
	               "<th>load balance (max/mean)</th><th>TTFT p50 (ms)</th>"
	               "<th>TTFT p99 (ms)</th></tr></thead><tbody>\n");
	for (k = 0; k < r->n_runs; k++) {
		const struct kvp_agg *a = &r->runs[k].agg;

		kvp_markup_tag(w, "<tr class=\"run\"><td>");
		kvp_markup_text(w, r->runs[k].label, strlen(r->runs[k].label),
		                100);
		kvp_markup_tag(w, "</td>");
		cell_u64(w, a->decisions);
		cell_u64(w, a->routed);
		cell_u64(w, a->rejected);
		kvp_markup_tagf(w, "<td>%.3f</td><td>%.3f</td>",
		                kvp_agg_hit_rate(a), kvp_agg_reachable_rate(a));
		cell_u64(w, a->non_max);
		cell_u64(w, a->blocks_lost);
		kvp_markup_tagf(w, "<td>%.2f</td>", kvp_agg_balance(a));
		cell_ms(w, kvp_agg_ttft(a, 0.5));
		cell_ms(w, kvp_agg_ttft(a, 0.99));
		kvp_markup_tag(w, "</tr>\n");
	}
	kvp_markup_tag(w,
	               "</tbody></table></div>\n<p class=\"note\">Hit rate = "
	               "overlap blocks / request blocks summed over the "
	               "decisions; reachable = the best candidate's overlap "
	               "instead of the chosen one's.</p>\n");
	for (k = 0; k < r->n_runs; k++)
		if (r->runs[k].agg.token_units) {
			kvp_markup_tag(
			    w, "<p class=\"note\">Dynamo replay "
			       "runs (rows of dynamo.replay): hit rate "
			       "= reused input tokens / input tokens "
			       "(reachable: the same); non-max choices "
			       "and blocks lost are the router's.</p>\n");
			break;
		}
}

/* A figure of a Dynamo replay report, or a dash. */
static void
replay_cell(struct kvp_markup *w, const struct kvp_replay_summary *s, int k,
            int decimals)
{
	if (s->has & (1u << k))
		kvp_markup_tagf(w, "<td>%.*f</td>", decimals, s->v[k]);
	else
		kvp_markup_tag(w, "<td>\xe2\x80\x93</td>");
}

/* The figures of the runs read from Dynamo's replay report JSON. */
static void
replay_table(struct kvp_markup *w, const struct kvp_report *r)
{
	int k, any = 0;

	for (k = 0; k < r->n_runs; k++)
		any |= r->runs[k].agg.has_replay;
	if (!any)
		return;
	kvp_markup_tag(w, "<h2 id=\"dynamo-replay\">Dynamo replay reports</h2>"
	                  "<div class=\"scroll\"><table class=\"replay\">"
	                  "<thead><tr><th>run</th><th>requests</th>"
	                  "<th>completed</th><th>prefix cache reused "
	                  "ratio</th><th>first admission reused ratio</th>"
	                  "<th>TTFT mean (ms)</th><th>TTFT median (ms)</th>"
	                  "<th>TTFT p99 (ms)</th><th>E2E mean (ms)</th>"
	                  "</tr></thead><tbody>\n");
	for (k = 0; k < r->n_runs; k++) {
		const struct kvp_replay_summary *s = &r->runs[k].agg.replay;

		if (!r->runs[k].agg.has_replay)
			continue;
		kvp_markup_tag(w, "<tr class=\"replay-run\"><td>");
		kvp_markup_text(w, r->runs[k].label, strlen(r->runs[k].label),
		                100);
		kvp_markup_tag(w, "</td>");
		replay_cell(w, s, KVP_REPLAY_NUM_REQUESTS, 0);
		replay_cell(w, s, KVP_REPLAY_COMPLETED, 0);
		replay_cell(w, s, KVP_REPLAY_REUSED_RATIO, 3);
		replay_cell(w, s, KVP_REPLAY_FIRST_REUSED_RATIO, 3);
		for (int f = KVP_REPLAY_MEAN_TTFT; f <= KVP_REPLAY_MEAN_E2E;
		     f++)
			replay_cell(w, s, f, 1);
		kvp_markup_tag(w, "</tr>\n");
	}
	kvp_markup_tag(w, "</tbody></table></div>\n");
}

static void
choice_cell(struct kvp_markup *w, const struct kvp_dis_run *x)
{
	if (!x->present) {
		kvp_markup_tag(w, "<td>\xe2\x80\x93</td>");
		return;
	}
	kvp_markup_tag(w, "<td>");
	if (x->chosen)
		kvp_markup_tagf(w, "worker %" PRIu64 " \xc2\xb7 dp %" PRIu64,
		                x->worker_id, x->dp_rank);
	else
		kvp_markup_tag(w, "rejected");
	if (x->row && !x->no_overlap)
		kvp_markup_tagf(w, "<br>overlap %" PRIu64, x->overlap);
	if (x->row)
		kvp_markup_tagf(w,
		                "<br>reused %" PRIu64 " of %" PRIu64 " tokens",
		                x->reused, x->input_tokens);
	else
		kvp_markup_tagf(w, "<br>overlap %" PRIu64 " of %" PRIu64,
		                x->overlap, x->request_blocks);
	if (x->has_max)
		kvp_markup_tagf(w, " (max %" PRIu64 ")", x->max_overlap);
	if (x->has_logit)
		kvp_markup_tagf(w, "<br>logit %.4g", x->logit);
	if (x->tie_break[0] != '\0') {
		kvp_markup_tag(w, "<br>tie-break ");
		kvp_markup_text(w, x->tie_break, strlen(x->tie_break), 16);
	}
	kvp_markup_tag(w,
	               x->non_max ? "<br>not the max overlap</td>" : "</td>");
}

static void
disagreements(struct kvp_markup *w, const struct kvp_report *r)
{
	const struct kvp_dis *s = r->dis;
	size_t i;
	int k;

	kvp_markup_tagf(
	    w,
	    "<h2 id=\"disagreements\">Where the runs disagree most</h2>"
	    "<p class=\"note\">The %zu requests with the largest "
	    "difference in overlap between runs (then a different "
	    "chosen worker), out of %" PRIu64 " compared.</p>"
	    "<div class=\"scroll\"><table class=\"disagree\"><thead>"
	    "<tr><th>#</th><th>request id</th>",
	    s->n_top, s->compared);
	for (k = 0; k < r->n_runs; k++) {
		kvp_markup_tag(w, "<th>");
		kvp_markup_text(w, r->runs[k].label, strlen(r->runs[k].label),
		                40);
		kvp_markup_tag(w, "</th>");
	}
	kvp_markup_tag(w, "</tr></thead><tbody>\n");
	for (i = 0; i < s->n_top; i++) {
		const struct kvp_dis_ent *e = &s->top[i];

		kvp_markup_tagf(
		    w,
		    "<tr id=\"req-%zu\"><td>%zu</td><td class=\"id\">"
		    "<a href=\"#req-%zu\">",
		    i + 1, i + 1, i + 1);
		kvp_markup_text(w, e->id,
		                e->id_len < KVP_DIS_ID_MAX ? e->id_len
		                                           : KVP_DIS_ID_MAX,
		                KVP_DIS_ID_MAX - 8);
		kvp_markup_tag(w, "</a></td>");
		for (k = 0; k < r->n_runs; k++)
			choice_cell(w, &e->run[k]);
		kvp_markup_tag(w, "</tr>\n");
	}
	kvp_markup_tag(w, "</tbody></table></div>\n");
}

static void
ev_row(struct kvp_markup *w, const char *name, const uint64_t *by_type,
       uint64_t gaps, uint64_t stale)
{
	uint64_t all = 0;
	int k;

	kvp_markup_tag(w, "<tr><td>");
	kvp_markup_text(w, name, strlen(name), 60);
	kvp_markup_tag(w, "</td>");
	for (k = 0; k < KVP_EVAGG_COUNT; k++)
		all += by_type[k];
	cell_u64(w, all);
	for (k = 0; k < KVP_EVAGG_COUNT; k++)
		cell_u64(w, by_type[k]);
	cell_u64(w, gaps);
	cell_u64(w, stale);
	kvp_markup_tag(w, "</tr>\n");
}

#define EV_ROWS 50 /* workers listed one by one; the rest are summed */

/* The --events table: totals, then one row per worker. */
static void
events_table(struct kvp_markup *w, const struct kvp_evagg *e)
{
	uint64_t rest[KVP_EVAGG_COUNT] = {0}, rest_gaps = 0, rest_stale = 0;
	char name[64];
	size_t i;
	int k;

	kvp_markup_tag(w,
	               "<div class=\"scroll\"><table class=\"events\"><thead>"
	               "<tr><th>stream</th><th>events</th><th>stored</th>"
	               "<th>removed</th><th>cleared</th><th>other</th>"
	               "<th>seq gaps</th><th>stale</th></tr></thead><tbody>\n");
	ev_row(w, "all workers", e->by_type, e->gaps, e->stale);
	for (i = 0; i < e->n_workers; i++) {
		const struct kvp_evagg_worker *x = &e->w[i];

		if (i >= EV_ROWS) {
			for (k = 0; k < KVP_EVAGG_COUNT; k++)
				rest[k] += x->by_type[k];
			rest_gaps += x->gaps;
			rest_stale += x->stale;
			continue;
		}
		snprintf(name, sizeof name,
		         "worker %" PRIu64 " \xc2\xb7 dp %" PRIu64,
		         x->worker_id, x->dp_rank);
		ev_row(w, name, x->by_type, x->gaps, x->stale);
	}
	if (e->n_workers > EV_ROWS) {
		snprintf(name, sizeof name, "%zu more workers",
		         e->n_workers - EV_ROWS);
		ev_row(w, name, rest, rest_gaps, rest_stale);
	}
	kvp_markup_tagf(w,
	                "</tbody></table></div>\n<p class=\"note\">Workers are "
	                "worker_id.dp_rank. %" PRIu64 " other records (batch, "
	                "error, filtered) were not events.</p>\n",
	                e->other_records);
}

/* One run's row of the router-vs-engine table. */
static void
truth_row(struct kvp_markup *w, const struct kvp_report_run *run)
{
	const struct kvp_agg_truth *t = &run->agg.truth;

	kvp_markup_tag(w, "<tr class=\"truth\"><td>");
	kvp_markup_text(w, run->label, strlen(run->label), 100);
	kvp_markup_tag(w, "</td>");
	cell_u64(w, t->n);
	cell_u64(w, t->exact);
	kvp_markup_tagf(w, "<td>%.3f</td>",
	                t->n ? (double)t->exact / (double)t->n : 0.0);
	cell_u64(w, t->over);
	cell_u64(w, t->under);
	kvp_markup_tagf(w, "<td>%.1f</td></tr>\n",
	                t->n ? (double)t->abs_err / (double)t->n : 0.0);
}

/* One run's requests whose prediction missed the most. */
static void
truth_worst(struct kvp_markup *w, const struct kvp_report_run *run)
{
	const struct kvp_agg_truth *t = &run->agg.truth;
	size_t i;

	if (t->n_worst == 0)
		return;
	kvp_markup_tag(w, "<p class=\"note\">");
	kvp_markup_text(w, run->label, strlen(run->label), 100);
	kvp_markup_tag(w, ": the requests predicted furthest from what the "
	                  "engine reported.</p><div class=\"scroll\"><table "
	                  "class=\"truth-worst\"><thead><tr><th>request id"
	                  "</th><th>predicted</th><th>reported</th>"
	                  "<th>difference</th></tr></thead><tbody>\n");
	for (i = 0; i < t->n_worst; i++) {
		const struct kvp_agg_worst *x = &t->worst[i];

		kvp_markup_tag(w, "<tr><td class=\"id\">");
		kvp_markup_text(w, x->id, x->id_len, KVP_AGG_ID_MAX - 8);
		kvp_markup_tag(w, "</td>");
		cell_u64(w, x->pred);
		cell_u64(w, x->engine);
		kvp_markup_tagf(w, "<td>%s%" PRIu64 "</td></tr>\n",
		                x->pred > x->engine ? "+" : "\xe2\x88\x92",
		                x->err);
	}
	kvp_markup_tag(w, "</tbody></table></div>\n");
}

/* Router vs engine, when a run's decisions carry both figures. */
static void
truth_panel(struct kvp_markup *w, const struct kvp_report *r)
{
	int k, any = 0;

	for (k = 0; k < r->n_runs; k++)
		any |= r->runs[k].agg.truth.n > 0;
	if (!any)
		return;
	kvp_markup_tag(
	    w, "<h2 id=\"router-vs-engine\">Router vs engine</h2>"
	       "<p class=\"note\">Cached tokens the engine model predicted "
	       "(route-score --engine-model) against those the engine "
	       "reported, over the decisions carrying both.</p>"
	       "<div class=\"scroll\"><table class=\"truth\"><thead><tr>"
	       "<th>run</th><th>requests</th><th>exact</th>"
	       "<th>fraction exact</th><th>over</th><th>under</th>"
	       "<th>mean |error| (tokens)</th></tr></thead><tbody>\n");
	for (k = 0; k < r->n_runs; k++)
		truth_row(w, &r->runs[k]);
	kvp_markup_tag(w, "</tbody></table></div>\n");
	for (k = 0; k < r->n_runs; k++)
		truth_worst(w, &r->runs[k]);
}

static void
figure(struct kvp_markup *w, const struct kvp_report *r, enum kvp_chart c,
       const char *heading)
{
	kvp_markup_tagf(w, "<h2 id=\"%s\">%s</h2><figure>", kvp_chart_names[c],
	                heading);
	kvp_chart_svg(w, r, c, 0);
	kvp_markup_tag(w, "</figure>\n");
}

void
kvp_report_html(struct kvp_markup *w, const struct kvp_report *r)
{
	kvp_markup_tag(w, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
	                  "<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
	                  "content=\"width=device-width,initial-scale=1\">\n"
	                  "<title>");
	kvp_markup_text(w, r->title, strlen(r->title), 200);
	kvp_markup_tag(w, "</title>\n");
	kvp_markup_tag(w, style);
	kvp_markup_tag(w, "</head><body>\n<h1>");
	kvp_markup_text(w, r->title, strlen(r->title), 200);
	kvp_markup_tag(w, "</h1>\n");
	if (r->n_runs > 0) {
		summary_table(w, r);
		replay_table(w, r);
		figure(w, r, KVP_CHART_HIT_RATE, "Prefix hit rate over time");
		figure(w, r, KVP_CHART_ROUTED, "Routed requests per worker");
		figure(w, r, KVP_CHART_ACTIVE, "Active blocks per worker");
		figure(w, r, KVP_CHART_OVERLAP,
		       "Overlap distribution (overlap / request blocks)");
		truth_panel(w, r);
	}
	if (r->dis != NULL && r->n_runs >= 2)
		disagreements(w, r);
	if (r->ev != NULL) {
		kvp_markup_tag(w,
		               "<h2 id=\"event-streams\">Event streams</h2>");
		events_table(w, r->ev);
		figure(w, r, KVP_CHART_EVENTS, "Events by type");
		figure(w, r, KVP_CHART_EVENT_WORKERS, "Events per worker");
	}
	kvp_markup_tag(w,
	               "<p class=\"note\">Written by kv-report (kvpipe).</p>\n"
	               "</body></html>\n");
}
