/* SPDX-License-Identifier: MIT */
/* merge.c — route-score's record loop over its merged streams. See
 * merge.h. */
#include "fe/merge.h"

#include <stdio.h>
#include <string.h>

#include "common/diag.h"
#include "common/jsonw.h"
#include "common/sniff.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "kvpipe.h"
#include "replay/config.h"
#include "replay/route_src.h"

struct merged {
	const struct kvp_replay_opts *o;
	const struct kvp_cli *c;
	const struct kvp_jw *jw;
	kvp_rin_fn fn;
	void *ctx;
	struct kvp_cli_merged *at;
	struct kvp_rin_merge m;
	FILE *f[KVP_REPLAY_MAX_STREAMS];
	const char *names[KVP_REPLAY_MAX_STREAMS];
};

/* A bad line or record of the current source (a read error is handled
 * apart). */
static void
report_bad(const struct merged *g, const struct kvp_rin_src *s, int rc,
           const struct kvp_diag *d)
{
	const struct kvp_cli_merged *at = g->at;

	if (rc == KVP_RIN_SRC_TOO_LONG)
		kvp_report(at->name, at->line, 0,
		           "line too long (over %zu bytes; see "
		           "--max-line-bytes)",
		           g->c->max_line);
	else
		kvp_report_diag(at->name, at->line, d);
	/* the first record rejected: say what the input is, if not ours (a
	 * trace read as one is just a bad trace line) */
	if (rc != KVP_RIN_SRC_TOO_LONG && s->n_records == 1 &&
	    !(s->p.mooncake &&
	      kvp_sniff(s->head, s->head_len) == KVP_KIND_TRACE))
		kvp_cli_hint(at->name, s->head, s->head_len);
}

/* The status after one result rc of the merge (the record handled). */
static int
result(struct merged *g, int rc)
{
	struct kvp_rin_src *s = &g->m.src[g->m.cur];
	struct kvp_diag d;

	kvp_diag_clear(&d);
	if (rc == KVP_RIN_SRC_IOERR) /* that stream ends; -k: others go on */
		return kvp_cli_read_error(g->f[g->m.cur], g->at->name);
	if (rc == KVP_RIN_SRC_NOMEM) {
		kvp_warnx("out of memory");
		return KVP_EXIT_TROUBLE;
	}
	if (rc == KVP_RIN_SRC_RECORD) {
		if (g->fn(g->ctx, &s->rec, &d) == 0)
			return KVP_EXIT_OK;
		report_bad(g, s, rc, &d);
	} else {
		report_bad(g, s, rc, &s->diag);
	}
	g->at->bad++;
	return KVP_EXIT_DATA;
}

/* The merge's next result, for kvp_cli_loop(). */
static int
merged_step(void *arg)
{
	struct merged *g = arg;
	int rc = kvp_rin_merge_next(&g->m), st;

	for (size_t i = 0; i < g->m.nread; i++)
		kvp_tally_in();
	if (rc == KVP_RIN_SRC_EOF)
		return KVP_CLI_END;
	g->at->name = g->names[g->m.cur];
	g->at->line = g->m.src[g->m.cur].line;
	st = result(g, rc);
	/* a failed write is reported when the output closes */
	return kvp_jw_ok(g->jw) ? st : KVP_EXIT_TROUBLE;
}

int
kvp_cli_each_merged(const struct kvp_replay_opts *o, const struct kvp_cli *c,
                    const struct kvp_jw *jw, kvp_rin_fn fn, void *ctx,
                    struct kvp_cli_merged *at)
{
	struct merged g = {
	    .o = o, .c = c, .jw = jw, .fn = fn, .ctx = ctx, .at = at};
	int n = o->nstreams > 0 ? o->nstreams : 1, status = KVP_EXIT_TROUBLE;

	kvp_rin_merge_init(&g.m);
	for (int i = 0; i < n; i++) {
		const char *path = o->nstreams > 0 ? o->streams[i]
		                   : o->input      ? o->input
		                                   : "-";
		/* one stream: read in file order, Mooncake lines included */
		int req = o->nstreams > 0 ? o->is_req[i] : 1;

		g.names[i] = kvp_cli_input_name(path);
		g.f[i] = kvp_cli_open_input(path);
		if (g.f[i] == NULL)
			goto out;
		if (kvp_replay_add_input(o, &g.m, g.f[i], c->max_line, req) !=
		    0) {
			kvp_warnx("out of memory");
			goto out;
		}
	}
	status = kvp_cli_loop(c, merged_step, &g);
out:
	kvp_rin_merge_fini(&g.m);
	for (int i = 0; i < n; i++)
		if (g.f[i] != NULL)
			(void)kvp_cli_close_input(g.f[i]);
	return status;
}
