/* SPDX-License-Identifier: MIT */
/*
 * test_report_html.c — kv-report's charts and page (lib/report/chart.c,
 * lib/report/report_html.c). kv-report(1) and chart.h: one HTML page with
 * inline SVG, no script, no network, no external file; every piece of
 * input text (labels, request ids, titles, policy names) escaped, so a
 * request id such as </script><svg onload=...> shows as text; a summary
 * row per run (hit rates to three decimals); the disagreement table with
 * two runs or more; the events section with --events; --format=svg
 * writes one chart as a standalone SVG file. The output is checked as
 * markup by a small independent checker in this file: tags balance
 * (void elements and "/>" aside), every '&' starts an entity, and no
 * input text escapes into markup.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvpipe.h"
#include "report/chart.h"
#include "unit.h"

#define EVIL_LABEL "<script>alert(1)</script>&run"
#define EVIL_ID "\"</script><svg onload=alert(1)>\""
#define EVIL_TITLE "Report <b>\"1\"</b> & 'co'"

static int
is_void(const char *name, size_t n)
{
	return (n == 4 && memcmp(name, "meta", 4) == 0) ||
	       (n == 2 && memcmp(name, "br", 2) == 0);
}

/* 1 when s is balanced markup: every element closed in order (void
 * elements and self-closed ones aside), every '&' an entity. */
static int
well_formed(const char *s)
{
	const char *stack[256];
	size_t len[256], depth = 0;
	const char *p = s;

	while (*p != '\0') {
		if (*p == '&') {
			static const char *const ent[] = {
			    "&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
			size_t k;

			for (k = 0; k < 5; k++)
				if (strncmp(p, ent[k], strlen(ent[k])) == 0)
					break;
			if (k == 5) {
				fprintf(stderr, "bare &: %.20s\n", p);
				return 0;
			}
			p++;
			continue;
		}
		if (*p == '>') {
			fprintf(stderr, "bare >: %.20s\n", p);
			return 0;
		}
		if (*p != '<') {
			p++;
			continue;
		}
		if (p[1] == '!' || p[1] == '?') { /* doctype, prolog */
			p = strchr(p, '>');
			if (p == NULL)
				return 0;
			p++;
			continue;
		}
		{
			int closing = p[1] == '/';
			const char *name = p + 1 + closing, *end;
			size_t n = strspn(
			    name, "abcdefghijklmnopqrstuvwxyz0123456789");

			end = strchr(name, '>');
			if (n == 0 || end == NULL) {
				fprintf(stderr, "bad tag: %.20s\n", p);
				return 0;
			}
			if (memchr(name, '<', (size_t)(end - name)) != NULL) {
				fprintf(stderr, "< in a tag: %.40s\n", p);
				return 0;
			}
			if (closing) {
				if (depth == 0 || len[depth - 1] != n ||
				    memcmp(stack[depth - 1], name, n) != 0) {
					fprintf(stderr, "unbalanced: %.20s\n",
					        p);
					return 0;
				}
				depth--;
			} else if (end[-1] != '/' && !is_void(name, n)) {
				if (depth == 256)
					return 0;
				stack[depth] = name;
				len[depth++] = n;
			}
			p = end + 1;
		}
	}
	if (depth != 0)
		fprintf(stderr, "unclosed: %.20s\n", stack[depth - 1]);
	return depth == 0;
}

static size_t
count(const char *s, const char *sub)
{
	size_t n = 0;

	for (s = strstr(s, sub); s != NULL; s = strstr(s + 1, sub))
		n++;
	return n;
}

static struct kvp_decision_rec
dec(const char *id, uint64_t wid, uint64_t ov, uint64_t rb)
{
	struct kvp_decision_rec d;

	memset(&d, 0, sizeof d);
	d.kind = KVP_DECISION_DECISION;
	d.id = (struct kvp_decision_span){id, strlen(id)};
	d.chosen = 1;
	d.worker_id = wid;
	d.overlap = ov;
	d.request_blocks = rb;
	return d;
}

static struct kvp_report_run runs[2];
static struct kvp_dis dis;
static struct kvp_evagg ev;

/*
 * Run 0 ("<script>...", full records with candidates): three decisions,
 * overlap 1+2+0 = 3 of 2+2+4 = 8 request blocks: hit rate 0.375, and
 * max_overlap one more each: reachable 6 / 8 = 0.750; run 1 (brief):
 * overlap 2 of 8: 0.250, reachable the same. The request EVIL_ID disagrees (ov
 * 1 vs 0).
 */
static void
build(struct kvp_report *r, int with_dis, int with_ev)
{
	static const char *const ids[3] = {EVIL_ID, "\"b\"", "\"c\""};
	static const uint64_t ov0[3] = {1, 2, 0}, ov1[3] = {0, 2, 0};
	static const uint64_t rb[3] = {2, 2, 4};
	struct kvp_decision_cand c[2] = {{1, 0, 5}, {2, 0, 9}};
	struct kvp_diag d;

	memset(r, 0, sizeof *r);
	r->title = EVIL_TITLE;
	r->runs = runs;
	r->n_runs = 2;
	r->window = 10;
	runs[0].label = EVIL_LABEL;
	runs[1].label = "brief";
	CHECK(kvp_agg_init(&runs[0].agg, 10) == KVP_OK);
	CHECK(kvp_agg_init(&runs[1].agg, 10) == KVP_OK);
	if (with_dis) {
		CHECK(kvp_dis_init(&dis, 2, 5) == KVP_OK);
		r->dis = &dis;
	}
	for (int k = 0; k < 3; k++) {
		struct kvp_decision_rec a =
		    dec(ids[k], 1 + (uint64_t)k % 2, ov0[k], rb[k]);
		struct kvp_decision_rec b = dec(ids[k], 1, ov1[k], rb[k]);

		a.cand = c;
		a.n_cand = 2;
		a.has_max = 1;
		a.max_overlap = ov0[k] + 1;
		a.tie_break = (struct kvp_decision_span){"<tb>", 4};
		CHECK(kvp_agg_add(&runs[0].agg, &a) == KVP_OK);
		CHECK(kvp_agg_add(&runs[1].agg, &b) == KVP_OK);
		if (with_dis) {
			kvp_dis_add(&dis, 0, &a);
			kvp_dis_add(&dis, 1, &b);
		}
	}
	if (with_dis)
		kvp_dis_finish(&dis);
	if (with_ev) {
		static const char line[] = "{\"rec\":\"event\",\"ts\":1,"
		                           "\"worker_id\":3,"
		                           "\"type\":\"BlockStored\"}";

		kvp_evagg_init(&ev);
		CHECK(kvp_evagg_line(&ev, line, sizeof line - 1, &d) == KVP_OK);
		r->ev = &ev;
	}
}

static void
unbuild(struct kvp_report *r)
{
	kvp_agg_fini(&runs[0].agg);
	kvp_agg_fini(&runs[1].agg);
	if (r->dis != NULL)
		kvp_dis_fini(&dis);
	if (r->ev != NULL)
		kvp_evagg_fini(&ev);
}

/* What one writer call produced (malloc'ed, NUL-terminated). */
static char *
render(const struct kvp_report *r, int chart, int standalone)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct kvp_markup w;

	kvp_markup_init(&w, f);
	if (chart < 0)
		kvp_report_html(&w, r);
	else
		kvp_chart_svg(&w, r, (enum kvp_chart)chart, standalone);
	CHECK(kvp_markup_ok(&w));
	fclose(f);
	return buf;
}

static void
test_names(void)
{
	static const char *const man[] = {"hit-rate", "routed",
	                                  "active",   "overlap",
	                                  "events",   "event-workers"};

	for (int k = 0; k < KVP_CHART_COUNT; k++)
		CHECK_STR(kvp_chart_names[k], man[k]);
	CHECK(kvp_chart_names[KVP_CHART_COUNT] == NULL);
}

/* No input text reaches the output unescaped. */
static void
check_escaped(const char *s)
{
	CHECK(strstr(s, "<script") == NULL);
	CHECK(strstr(s, "onload=alert(1)>") == NULL);
	CHECK(strstr(s, "<tb>") == NULL);
	CHECK(strstr(s, "<b>") == NULL);
}

static void
test_charts(void)
{
	struct kvp_report r;

	build(&r, 0, 1);
	for (int c = 0; c < KVP_CHART_COUNT; c++) {
		char want[64], *s = render(&r, c, 1), *t = render(&r, c, 0);

		CHECK(s != NULL && t != NULL);
		if (s == NULL || t == NULL)
			continue;
		/* standalone: the prolog, the namespace, one svg */
		CHECK(strncmp(s,
		              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		              "<svg xmlns=\"http://www.w3.org/2000/svg\" ",
		              78) == 0);
		snprintf(want, sizeof want, "id=\"chart-%s\"",
		         kvp_chart_names[c]);
		CHECK(strstr(s, want) != NULL);
		CHECK(strstr(s, "viewBox=\"0 0 960 ") != NULL);
		CHECK(count(s, "<svg") == 1 && count(s, "</svg>") == 1);
		CHECK(strlen(s) > 7 &&
		      strcmp(s + strlen(s) - 7, "</svg>\n") == 0);
		CHECK(well_formed(s));
		check_escaped(s);
		/* inline: no prolog, no namespace, the same chart */
		CHECK(strncmp(t, "<svg class=\"chart\"", 18) == 0);
		CHECK(strstr(t, "xmlns") == NULL && strstr(t, want) != NULL);
		CHECK(well_formed(t));
		free(s);
		free(t);
	}
	/* the label of run 0 is in the legends, escaped (cut at 40 bytes) */
	{
		char *s = render(&r, KVP_CHART_HIT_RATE, 1);

		CHECK(strstr(s,
		             "&lt;script&gt;alert(1)&lt;/script&gt;&amp;run") !=
		      NULL);
		/* one polyline per run, run 0's with a point per bucket
		 * (three decisions, three buckets) */
		CHECK(count(s, "<polyline") == 2);
		{
			const char *p = strstr(s, "points=\"");
			const char *e = p != NULL ? strchr(p + 8, '"') : NULL;
			size_t pts = 0;

			for (; p != NULL && e != NULL && p < e; p++)
				pts += *p == ',';
			CHECK(pts == 3);
		}
		free(s);
	}
	/* the active chart: run 1 has no candidates */
	{
		char *s = render(&r, KVP_CHART_ACTIVE, 0);

		CHECK(strstr(s, "no candidates in these records") != NULL);
		CHECK(strstr(s, "worker 1 · dp 0") != NULL &&
		      strstr(s, "worker 2 · dp 0") != NULL);
		free(s);
	}
	unbuild(&r);

	/* the event charts without --events: nothing at all */
	build(&r, 0, 0);
	{
		char *s = render(&r, KVP_CHART_EVENTS, 1);

		CHECK(s != NULL && s[0] == '\0');
		free(s);
		s = render(&r, KVP_CHART_EVENT_WORKERS, 0);
		CHECK(s != NULL && s[0] == '\0');
		free(s);
	}
	unbuild(&r);
}

static void
test_page(void)
{
	struct kvp_report r;
	char *s;

	build(&r, 1, 1);
	s = render(&r, -1, 0);
	CHECK(s != NULL);
	if (s == NULL)
		return;
	CHECK(strncmp(s, "<!DOCTYPE html>\n<html lang=\"en\">", 32) == 0);
	CHECK(well_formed(s));
	check_escaped(s);
	/* no script, no external resource (not even the SVG namespace,
	 * inline SVG needs none) */
	CHECK(strstr(s, "<script") == NULL && strstr(s, "http") == NULL);
	CHECK(strstr(s, "src=") == NULL && strstr(s, "<link") == NULL);
	/* the title, escaped, in <title> and <h1> */
	CHECK(count(s, "Report &lt;b&gt;&quot;1&quot;&lt;/b&gt; &amp; "
	               "&#39;co&#39;") == 2);
	/* the summary: a row per run; hit rates to three decimals; no
	 * TTFT data: a dash */
	CHECK(count(s, "<tr class=\"run\">") == 2);
	CHECK(strstr(s, "<td>0.375</td><td>0.750</td>") != NULL);
	CHECK(strstr(s, "<td>0.250</td><td>0.250</td>") != NULL);
	CHECK(strstr(s, "<td>\xe2\x80\x93</td>") != NULL);
	/* the four run charts, the disagreement table, the events */
	CHECK(count(s, "<svg ") == 6);
	CHECK(strstr(s, "<h2 id=\"hit-rate\">") != NULL);
	CHECK(strstr(s, "<h2 id=\"disagreements\">") != NULL);
	CHECK(strstr(s, "<h2 id=\"event-streams\">") != NULL);
	/* the disagreeing request: its id as text, its tie-break escaped */
	CHECK(strstr(s, "&quot;&lt;/script&gt;&lt;svg onload=alert(1)&gt;"
	                "&quot;") != NULL);
	CHECK(strstr(s, "tie-break &lt;tb&gt;") != NULL);
	CHECK(strstr(s, "out of 3 compared") != NULL);
	CHECK(strstr(s, "worker 3 · dp 0") != NULL); /* the events' worker */
	CHECK(strlen(s) > 15 &&
	      strcmp(s + strlen(s) - 15, "</body></html>\n") == 0);
	free(s);
	unbuild(&r);

	/* one run, no --events: no disagreement table, no events */
	build(&r, 1, 0);
	r.n_runs = 1;
	s = render(&r, -1, 0);
	CHECK(well_formed(s));
	CHECK(count(s, "<tr class=\"run\">") == 1);
	CHECK(strstr(s, "disagreements") == NULL);
	CHECK(strstr(s, "event-streams") == NULL);
	free(s);
	r.n_runs = 2;
	unbuild(&r);

	/* --events alone: no run section */
	memset(&r, 0, sizeof r);
	r.title = "t";
	kvp_evagg_init(&ev);
	r.ev = &ev;
	s = render(&r, -1, 0);
	CHECK(well_formed(s));
	CHECK(strstr(s, "Summary") == NULL &&
	      strstr(s, "event-streams") != NULL);
	free(s);
	kvp_evagg_fini(&ev);
}

/* A write error is seen by the caller. */
static void
test_write_error(void)
{
	struct kvp_report r;
	FILE *f = fopen("/dev/null", "r");
	struct kvp_markup w;

	CHECK(f != NULL);
	if (f == NULL)
		return;
	build(&r, 1, 1);
	kvp_markup_init(&w, f);
	kvp_report_html(&w, &r);
	CHECK(!kvp_markup_ok(&w));
	fclose(f);
	unbuild(&r);
}

int
main(void)
{
	test_names();
	test_charts();
	test_page();
	test_write_error();
	return UNIT_DONE();
}
