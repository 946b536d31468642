/* SPDX-License-Identifier: MIT */
/*
 * route_src.c — route-score's input streams and their time merge. See
 * route_src.h.
 */
#include "route/route_src.h"

#include <json-c/json.h>
#include <string.h>

#include "common/ndjson.h"
#include "route/route_input.h"

int
kvp_rin_src_init(struct kvp_rin_src *s, FILE *f, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->tok = json_tokener_new();
	if (s->tok == NULL)
		return -1;
	kvp_lines_init(&s->lr, f, max);
	return 0;
}

void
kvp_rin_src_fini(struct kvp_rin_src *s)
{
	kvp_rin_src_drop(s);
	if (s->tok != NULL) {
		json_tokener_free(s->tok);
		kvp_lines_fini(&s->lr);
	}
	s->tok = NULL;
}

void
kvp_rin_src_drop(struct kvp_rin_src *s)
{
	if (s->pending != NULL)
		json_object_put(s->pending);
	s->pending = NULL;
}

int
kvp_rin_src_next(struct kvp_rin_src *s, struct kvp_diag *d)
{
	for (;;) {
		char *line;
		size_t len;
		int rc = kvp_lines_next(&s->lr, &line, &len);

		s->line = s->lr.lineno;
		if (rc == KVP_LINE_EOF)
			return KVP_RIN_SRC_EOF;
		if (rc == KVP_LINE_IOERR)
			return KVP_RIN_SRC_IOERR;
		if (rc == KVP_LINE_TOO_LONG)
			return KVP_RIN_SRC_TOO_LONG;
		if (kvp_line_is_blank(line, len))
			continue;
		if (s->n_records++ == 0) {
			s->head_len =
			    len < sizeof s->head ? len : sizeof s->head;
			memcpy(s->head, line, s->head_len);
		}
		s->pending = kvp_json_parse_object(s->tok, line, len, d);
		if (s->pending == NULL)
			return KVP_RIN_SRC_BAD;
		kvp_rin_ts(s->pending, &s->ts);
		return KVP_RIN_SRC_RECORD;
	}
}

int
kvp_rin_merge_init(struct kvp_rin_merge *m, FILE *events, FILE *requests,
                   size_t max)
{
	memset(m, 0, sizeof(*m));
	if (kvp_rin_src_init(&m->src[0], events, max) != 0)
		return -1;
	m->nsrc = 1;
	if (requests == NULL)
		return 0;
	if (kvp_rin_src_init(&m->src[1], requests, max) != 0) {
		kvp_rin_src_fini(&m->src[0]);
		m->nsrc = 0;
		return -1;
	}
	m->nsrc = 2;
	return 0;
}

void
kvp_rin_merge_fini(struct kvp_rin_merge *m)
{
	for (int i = 0; i < m->nsrc; i++)
		kvp_rin_src_fini(&m->src[i]);
	m->nsrc = 0;
}

/* Looks source i one record ahead: RECORD (or EOF, the source is done),
 * or the bad line met on the way. */
static int
fill(struct kvp_rin_merge *m, int i, struct kvp_diag *d)
{
	struct kvp_rin_src *s = &m->src[i];
	int rc;

	while (s->pending == NULL && !m->eof[i]) {
		rc = kvp_rin_src_next(s, d);
		if (rc == KVP_RIN_SRC_EOF || rc == KVP_RIN_SRC_IOERR)
			m->eof[i] = 1;
		else
			m->nread++;
		if (rc != KVP_RIN_SRC_RECORD && rc != KVP_RIN_SRC_EOF)
			return rc;
	}
	return KVP_RIN_SRC_RECORD;
}

int
kvp_rin_merge_next(struct kvp_rin_merge *m, struct kvp_diag *d)
{
	int best = -1;

	if (m->taken)
		kvp_rin_src_drop(&m->src[m->cur]);
	m->taken = 0;
	m->nread = 0;
	for (int i = 0; i < m->nsrc; i++) {
		int rc = fill(m, i, d);

		if (rc != KVP_RIN_SRC_RECORD) {
			m->cur = i;
			return rc;
		}
	}
	for (int i = 0; i < m->nsrc; i++)
		if (m->src[i].pending != NULL &&
		    (best < 0 || m->src[i].ts < m->src[best].ts))
			best = i;
	if (best < 0)
		return KVP_RIN_SRC_EOF;
	m->cur = best;
	m->taken = 1;
	return KVP_RIN_SRC_RECORD;
}

int
kvp_rin_merge_from_requests(const struct kvp_rin_merge *m)
{
	return m->cur == m->nsrc - 1;
}
