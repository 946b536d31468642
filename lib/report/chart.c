/* SPDX-License-Identifier: MIT */
/*
 * chart.c — SVG charts for kv-report.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "report/chart.h"

const char *const kvp_chart_names[KVP_CHART_COUNT + 1] = {
    "hit-rate", "routed", "active", "overlap", "events", "event-workers", NULL};

/* Okabe & Ito's colour-blind-safe palette. */
static const char *const palette[8] = {"#E69F00", "#56B4E9", "#009E73",
                                       "#0072B2", "#D55E00", "#CC79A7",
                                       "#000000", "#F0E442"};
/* Dash patterns for series past the eighth colour. */
static const char *const dashes[3] = {"", "6 3", "2 2"};

#define W 960
#define LEFT 70
#define RIGHT 20
#define PANEL_H 200
#define TOP 34
#define BOTTOM 46

struct frame {
	double x0, x1, y0, y1; /* data range */
	int left, top, width, height;
};

static double
px(const struct frame *f, double x)
{
	return f->left + (x - f->x0) / (f->x1 - f->x0) * f->width;
}

static double
py(const struct frame *f, double y)
{
	return f->top + f->height - (y - f->y0) / (f->y1 - f->y0) * f->height;
}

/* A tick step of 1, 2 or 5 times a power of ten giving about 5 ticks. */
static double
tick_step(double span)
{
	double raw = span / 5, p, m;

	if (!(raw > 0))
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* Rounds the top of a range up to a tick (at least `min`). */
static double
nice_max(double v, double min)
{
	double s;

	if (v < min)
		v = min;
	s = tick_step(v);
	return ceil(v / s) * s;
}

static void
axes(struct kvp_markup *w, const struct frame *f, const char *xunit,
     const char *yunit)
{
	double s, v;

	kvp_markup_tagf(w,
	                "<g class=\"axes\" font-size=\"12\" fill=\"#333\">"
	                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
	                "fill=\"none\" stroke=\"#999\"/>",
	                f->left, f->top, f->width, f->height);
	s = tick_step(f->x1 - f->x0);
	for (v = ceil(f->x0 / s) * s; v <= f->x1 + s * 1e-9; v += s)
		kvp_markup_tagf(
		    w,
		    "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
		    "stroke=\"#999\"/><text x=\"%.1f\" y=\"%d\" "
		    "text-anchor=\"middle\">%g</text>",
		    px(f, v), px(f, v), f->top + f->height,
		    f->top + f->height + 5, px(f, v), f->top + f->height + 18,
		    v);
	s = tick_step(f->y1 - f->y0);
	for (v = ceil(f->y0 / s) * s; v <= f->y1 + s * 1e-9; v += s)
		kvp_markup_tagf(
		    w,
		    "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
		    "stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" "
		    "text-anchor=\"end\">%g</text>",
		    f->left, f->left + f->width, py(f, v), py(f, v),
		    f->left - 6, py(f, v) + 4, v);
	kvp_markup_tagf(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
	                f->left + f->width / 2, f->top + f->height + 36);
	kvp_markup_text(w, xunit, strlen(xunit), 200);
	kvp_markup_tagf(
	    w,
	    "</text><text transform=\"translate(14,%d) rotate(-90)\" "
	    "text-anchor=\"middle\">",
	    f->top + f->height / 2);
	kvp_markup_text(w, yunit, strlen(yunit), 200);
	kvp_markup_tag(w, "</text></g>");
}

/* A legend entry at (x, y) in a slot `slot` pixels wide: a line swatch
 * and the label (input text), cut to fit the slot with a gap of 8 px, the
 * whole label as the entry's tooltip. */
static void
legend(struct kvp_markup *w, double x, double y, double slot, int series,
       const char *label)
{
	kvp_markup_tag(w, "<g class=\"legend\"><title>");
	kvp_markup_text(w, label, strlen(label), 100);
	kvp_markup_tagf(
	    w,
	    "</title><line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" "
	    "stroke=\"%s\" stroke-width=\"3\" stroke-dasharray=\"%s\"/>"
	    "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">",
	    x, x + 18, y - 4, y - 4, palette[series % 8],
	    dashes[(series / 8) % 3], x + 22, y);
	kvp_markup_text_fit(w, label, strlen(label), 100, slot - 22 - 8, 12);
	kvp_markup_tag(w, "</text></g>");
}

static void
svg_open(struct kvp_markup *w, int height, int standalone, const char *name,
         const char *title)
{
	if (standalone)
		kvp_markup_tag(w,
		               "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	kvp_markup_tagf(
	    w,
	    "<svg %sclass=\"chart\" id=\"chart-%s\" viewBox=\"0 0 %d "
	    "%d\" width=\"%d\" height=\"%d\" role=\"img\" "
	    "font-family=\"sans-serif\"><title>",
	    standalone ? "xmlns=\"http://www.w3.org/2000/svg\" " : "", name, W,
	    height, W, height);
	kvp_markup_text(w, title, strlen(title), 200);
	kvp_markup_tag(w, "</title>\n");
}

static void
panel_title(struct kvp_markup *w, int y, const char *label)
{
	kvp_markup_tagf(w,
	                "<text x=\"%d\" y=\"%d\" font-size=\"14\" "
	                "font-weight=\"bold\">",
	                LEFT, y);
	/* bold: estimated as a regular face 10% larger */
	kvp_markup_text_fit(w, label, strlen(label), 80, W - LEFT - RIGHT,
	                    14 * 1.1);
	kvp_markup_tag(w, "</text>");
}

/* The common time range of every run, and its unit. */
static void
time_range(const struct kvp_report *r, double *hi, int *ts)
{
	int k;

	*hi = 1;
	*ts = r->n_runs > 0 && r->runs[0].agg.time_is_ts;
	for (k = 0; k < r->n_runs; k++) {
		const struct kvp_agg *a = &r->runs[k].agg;
		double end = kvp_agg_bucket_end(a, a->tl.n - 1) - a->tl.t0;

		if (*ts)
			end /= 1000;
		if (end > *hi)
			*hi = end;
	}
	*hi = nice_max(*hi, 1);
}

static double
bucket_x(const struct kvp_agg *a, int i, int ts)
{
	double x = kvp_agg_bucket_end(a, i) - a->tl.t0;

	return ts ? x / 1000 : x;
}

static void
hit_rate_chart(struct kvp_markup *w, const struct kvp_report *r, int standalone)
{
	struct frame f = {0, 1, 0, 1, LEFT, TOP, W - LEFT - RIGHT, 260};
	char yl[96];
	int ts, k, i;

	time_range(r, &f.x1, &ts);
	svg_open(w, TOP + 260 + BOTTOM + 10, standalone, "hit-rate",
	         "Prefix hit rate over time");
	snprintf(yl, sizeof yl, "hit rate (last %zu requests)", r->window);
	axes(w, &f, ts ? "time since first request (s)" : "request #", yl);
	for (k = 0; k < r->n_runs; k++) {
		const struct kvp_agg *a = &r->runs[k].agg;

		kvp_markup_tagf(
		    w,
		    "<polyline fill=\"none\" stroke=\"%s\" "
		    "stroke-width=\"2\" stroke-dasharray=\"%s\" points=\"",
		    palette[k % 8], dashes[(k / 8) % 3]);
		for (i = 0; i < a->tl.n; i++)
			if (a->b[i].has_roll)
				kvp_markup_tagf(w, "%.1f,%.1f ",
				                px(&f, bucket_x(a, i, ts)),
				                py(&f, a->b[i].roll));
		kvp_markup_tag(w, "\"/>");
		legend(w, LEFT + 10 + (k % 4) * 220, 14 + (k / 4) * 14, 220, k,
		       r->runs[k].label);
	}
	kvp_markup_tag(w, "</svg>\n");
}

static uint64_t
worker_value(const struct kvp_agg_bucket *b, int slot, int active)
{
	return active ? b->active[slot] : b->routed[slot];
}

static void
worker_panel(struct kvp_markup *w, const struct kvp_report_run *run, int y,
             double xmax, int ts, int active)
{
	const struct kvp_agg *a = &run->agg;
	struct frame f = {0,
	                  xmax,
	                  0,
	                  1,
	                  LEFT,
	                  y + 24,
	                  W - LEFT - RIGHT - 120,
	                  PANEL_H - 24 - BOTTOM};
	double ymax = 1;
	char lab[64];
	int i, s, n = (int)a->n_panel + a->other_used;

	for (i = 0; i < a->tl.n; i++)
		for (s = 0; s <= KVP_AGG_WORKERS; s++)
			if ((double)worker_value(&a->b[i], s, active) > ymax)
				ymax =
				    (double)worker_value(&a->b[i], s, active);
	f.y1 = nice_max(ymax, 1);
	panel_title(w, y + 16, run->label);
	axes(w, &f, ts ? "time since first request (s)" : "request #",
	     active ? "peak active blocks" : "routed per bucket");
	for (s = 0; s < n; s++) {
		int slot = s < (int)a->n_panel ? s : KVP_AGG_WORKERS;

		kvp_markup_tagf(w,
		                "<polyline fill=\"none\" stroke=\"%s\" "
		                "stroke-width=\"1.5\" stroke-dasharray=\"%s\" "
		                "points=\"",
		                palette[s % 8], dashes[(s / 8) % 3]);
		for (i = 0; i < a->tl.n; i++)
			kvp_markup_tagf(
			    w, "%.1f,%.1f ", px(&f, bucket_x(a, i, ts)),
			    py(&f,
			       (double)worker_value(&a->b[i], slot, active)));
		kvp_markup_tag(w, "\"/>");
		if (slot == KVP_AGG_WORKERS)
			snprintf(lab, sizeof lab, "other workers");
		else
			snprintf(lab, sizeof lab,
			         "worker %" PRIu64 " \xc2\xb7 dp %" PRIu64,
			         a->panel_wid[s], a->panel_dp[s]);
		legend(w, W - RIGHT - 112, y + 40 + s * 12, 112 + RIGHT, s,
		       lab);
	}
}

static void
workers_chart(struct kvp_markup *w, const struct kvp_report *r, int standalone,
              int active)
{
	double xmax;
	int ts, k, any = 0;

	time_range(r, &xmax, &ts);
	svg_open(w, r->n_runs * PANEL_H + 10, standalone,
	         active ? "active" : "routed",
	         active ? "Peak active blocks per worker over time"
	                : "Routed requests per worker over time");
	for (k = 0; k < r->n_runs; k++) {
		any |= r->runs[k].agg.has_candidates;
		if (active && !r->runs[k].agg.has_candidates) {
			panel_title(w, k * PANEL_H + 16, r->runs[k].label);
			kvp_markup_tagf(
			    w,
			    "<text x=\"%d\" y=\"%d\" font-size=\"12\">no "
			    "candidates in these records (brief "
			    "decisions)</text>",
			    LEFT, k * PANEL_H + 40);
			continue;
		}
		worker_panel(w, &r->runs[k], k * PANEL_H, xmax, ts, active);
	}
	(void)any;
	kvp_markup_tag(w, "</svg>\n");
}

static void
overlap_chart(struct kvp_markup *w, const struct kvp_report *r, int standalone)
{
	struct frame f = {0, 1, 0, 100, LEFT, TOP, W - LEFT - RIGHT, 260};
	double ymax = 1, bw = 1.0 / KVP_AGG_HIST, gap = bw * 0.1;
	int k, i, n = r->n_runs > 0 ? r->n_runs : 1;

	for (k = 0; k < r->n_runs; k++)
		for (i = 0; i < KVP_AGG_HIST; i++) {
			const struct kvp_agg *a = &r->runs[k].agg;
			double v = a->decisions ? 100.0 * (double)a->hist[i] /
			                              (double)a->decisions
			                        : 0;
			if (v > ymax)
				ymax = v;
		}
	f.y1 = nice_max(ymax, 1);
	svg_open(w, TOP + 260 + BOTTOM + 10, standalone, "overlap",
	         "Overlap distribution");
	axes(w, &f, "overlap / request blocks", "requests (%)");
	for (k = 0; k < r->n_runs; k++) {
		const struct kvp_agg *a = &r->runs[k].agg;
		double cw = (bw - 2 * gap) / n;

		for (i = 0; i < KVP_AGG_HIST; i++) {
			double v = a->decisions ? 100.0 * (double)a->hist[i] /
			                              (double)a->decisions
			                        : 0;
			double x = i * bw + gap + k * cw;

			kvp_markup_tagf(
			    w,
			    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			    "height=\"%.1f\" fill=\"%s\"/>",
			    px(&f, x), py(&f, v), px(&f, x + cw) - px(&f, x),
			    py(&f, 0) - py(&f, v), palette[k % 8]);
		}
		legend(w, LEFT + 10 + (k % 4) * 220, 14 + (k / 4) * 14, 220, k,
		       r->runs[k].label);
	}
	kvp_markup_tag(w, "</svg>\n");
}

/* Series s of the event chart at bucket i: a type's or a worker slot's
 * count. */
static double
ev_value(const struct kvp_evagg *e, int i, int s, int by_worker)
{
	return (double)(by_worker ? e->b[i].by_worker[s] : e->b[i].by_type[s]);
}

/* The series of the event chart: the types seen, or the worker slots
 * used (the last one "other workers"). */
static int
ev_series(const struct kvp_evagg *e, int by_worker, int *ids)
{
	int n = 0, k;

	if (!by_worker) {
		for (k = 0; k < KVP_EVAGG_COUNT; k++)
			if (e->by_type[k] > 0)
				ids[n++] = k;
		return n;
	}
	for (k = 0; k < KVP_AGG_WORKERS && (size_t)k < e->n_workers; k++)
		ids[n++] = k;
	if (e->other_used)
		ids[n++] = KVP_AGG_WORKERS;
	return n;
}

static void
ev_label(const struct kvp_evagg *e, int by_worker, int id, char *buf, size_t n)
{
	if (!by_worker)
		snprintf(buf, n, "%s", kvp_evagg_type_names[id]);
	else if (id == KVP_AGG_WORKERS)
		snprintf(buf, n, "other workers");
	else
		snprintf(buf, n, "worker %" PRIu64 " \xc2\xb7 dp %" PRIu64,
		         e->w[id].worker_id, e->w[id].dp_rank);
}

/* Events per second (per bucket without timestamps) over time, one line
 * per event type or per worker. */
static void
events_chart(struct kvp_markup *w, const struct kvp_report *r, int standalone,
             int by_worker)
{
	const struct kvp_evagg *e = r->ev;
	struct frame f = {0, 1, 0, 1, LEFT, TOP + 14, W - LEFT - RIGHT, 260};
	int ts = e->time_is_ts, ids[KVP_AGG_WORKERS + 1], n, k, i;
	double per = ts ? e->tl.width / 1000 : 1, ymax = 1;
	char lab[64];

	n = ev_series(e, by_worker, ids);
	if (e->tl.n > 0)
		f.x1 = (kvp_agg_tline_end(&e->tl, e->tl.n - 1) - e->tl.t0) /
		       (ts ? 1000 : 1);
	f.x1 = nice_max(f.x1, 1);
	for (i = 0; i < e->tl.n; i++)
		for (k = 0; k < n; k++)
			if (ev_value(e, i, ids[k], by_worker) / per > ymax)
				ymax = ev_value(e, i, ids[k], by_worker) / per;
	f.y1 = nice_max(ymax, 1);
	svg_open(w, f.top + 260 + BOTTOM + 10, standalone,
	         by_worker ? "event-workers" : "events",
	         by_worker ? "Events per worker over time"
	                   : "Events by type over time");
	axes(w, &f, ts ? "time since first event (s)" : "event #",
	     ts ? "events per second" : "events per bucket");
	for (k = 0; k < n; k++) {
		kvp_markup_tagf(
		    w,
		    "<polyline fill=\"none\" stroke=\"%s\" "
		    "stroke-width=\"2\" stroke-dasharray=\"%s\" points=\"",
		    palette[k % 8], dashes[(k / 8) % 3]);
		for (i = 0; i < e->tl.n; i++)
			kvp_markup_tagf(
			    w, "%.1f,%.1f ",
			    px(&f, (kvp_agg_tline_end(&e->tl, i) - e->tl.t0) /
			               (ts ? 1000 : 1)),
			    py(&f, ev_value(e, i, ids[k], by_worker) / per));
		kvp_markup_tag(w, "\"/>");
		ev_label(e, by_worker, ids[k], lab, sizeof lab);
		legend(w, LEFT + 10 + (k % 6) * 150, 14 + (k / 6) * 14, 150, k,
		       lab);
	}
	kvp_markup_tag(w, "</svg>\n");
}

void
kvp_chart_svg(struct kvp_markup *w, const struct kvp_report *r,
              enum kvp_chart c, int standalone)
{
	switch (c) {
	case KVP_CHART_HIT_RATE:
		hit_rate_chart(w, r, standalone);
		break;
	case KVP_CHART_ROUTED:
		workers_chart(w, r, standalone, 0);
		break;
	case KVP_CHART_ACTIVE:
		workers_chart(w, r, standalone, 1);
		break;
	case KVP_CHART_EVENTS:
	case KVP_CHART_EVENT_WORKERS:
		if (r->ev != NULL)
			events_chart(w, r, standalone,
			             c == KVP_CHART_EVENT_WORKERS);
		break;
	default:
		overlap_chart(w, r, standalone);
		break;
	}
}
