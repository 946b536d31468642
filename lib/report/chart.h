/* SPDX-License-Identifier: MIT */
/*
 * chart.h — kv-report's charts as inline SVG (axes with ticks and units,
 * legends, Okabe-Ito colours, a viewBox so they scale to the page), and
 * the HTML page around them. Every piece of input text goes through
 * report/markup's escaper.
 */
#ifndef KVP_CHART_H
#define KVP_CHART_H

#include <stddef.h>

#include "report/agg.h"
#include "report/disagree.h"
#include "report/evagg.h"
#include "report/markup.h"

struct kvp_report_run {
	const char *label; /* input text: escaped when written */
	struct kvp_agg agg;
};

struct kvp_report {
	const char *title;
	struct kvp_report_run *runs;
	int n_runs;
	size_t window;
	struct kvp_dis *dis;        /* NULL: no disagreement table */
	const struct kvp_evagg *ev; /* NULL: no --events section */
};

enum kvp_chart {
	KVP_CHART_HIT_RATE,
	KVP_CHART_ROUTED,
	KVP_CHART_ACTIVE,
	KVP_CHART_OVERLAP,
	KVP_CHART_EVENTS,        /* needs r->ev */
	KVP_CHART_EVENT_WORKERS, /* needs r->ev */
	KVP_CHART_COUNT
};

/* Chart names for --chart ("hit-rate", "routed", "active", "overlap",
 * "events", "event-workers"), NULL-terminated, in enum order. */
extern const char *const kvp_chart_names[KVP_CHART_COUNT + 1];

/* One chart as an <svg> element; standalone adds the XML prolog and
 * namespace for a .svg file. */
void kvp_chart_svg(struct kvp_markup *w, const struct kvp_report *r,
                   enum kvp_chart c, int standalone);

/* The whole self-contained HTML page. */
void kvp_report_html(struct kvp_markup *w, const struct kvp_report *r);

#endif
