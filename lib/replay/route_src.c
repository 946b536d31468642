/* SPDX-License-Identifier: MIT */
/*
 * route_src.c — route-score's input streams and their time merge. See
 * route_src.h.
 */
#include "replay/route_src.h"

#include <stdlib.h>
#include <string.h>

#include "common/ndjson.h"
#include "common/util.h"
#include "kvpipe.h"
#include "replay/route_input.h"

void
kvp_rin_merge_init(struct kvp_rin_merge *m)
{
	memset(m, 0, sizeof(*m));
}

void
kvp_rin_merge_fini(struct kvp_rin_merge *m)
{
	for (size_t i = 0; i < m->nsrc; i++) {
		kvp_rin_fini(&m->src[i].p);
		kvp_lines_fini(&m->src[i].lr);
	}
	free(m->src);
	memset(m, 0, sizeof(*m));
}

int
kvp_rin_merge_add(struct kvp_rin_merge *m, FILE *f, size_t max, int requests,
                  uint32_t block_size, int mooncake, const char *lora,
                  const char *ns)
{
	struct kvp_rin_src *s;

	if (kvp_grow(&m->src, &m->cap, m->nsrc + 1, sizeof(*m->src)) != 0)
		return -1;
	s = &m->src[m->nsrc++];
	memset(s, 0, sizeof(*s));
	s->requests = requests;
	/* before its first timestamp an untimed request waits for every
	 * timed record, an untimed event does not */
	s->ts = requests ? UINT64_MAX : 0;
	kvp_rin_init(&s->p, block_size, mooncake && requests, lora, ns);
	kvp_lines_init(&s->lr, f, max);
	return 0;
}

/* Reads and parses the next non-blank line of s: its state becomes what
 * is pending (EOF at the end). */
static void
src_next(struct kvp_rin_src *s)
{
	char *line;
	size_t len;
	int rc;

	kvp_diag_clear(&s->diag);
	do
		rc = kvp_lines_next(&s->lr, &line, &len);
	while (rc == KVP_LINE_OK && kvp_line_is_blank(line, len));
	s->line = s->lr.lineno;
	if (rc == KVP_LINE_EOF || rc == KVP_LINE_IOERR) {
		s->eof = 1;
		s->state =
		    rc == KVP_LINE_EOF ? KVP_RIN_SRC_EOF : KVP_RIN_SRC_IOERR;
		return;
	}
	if (rc == KVP_LINE_TOO_LONG) {
		s->state = KVP_RIN_SRC_TOO_LONG;
		return;
	}
	if (s->n_records++ == 0) {
		s->head_len = len < sizeof s->head ? len : sizeof s->head;
		memcpy(s->head, line, s->head_len);
	}
	rc = kvp_rin_parse_line(&s->p, line, len, s->line, &s->rec, &s->diag);
	s->state = rc == KVP_OK    ? KVP_RIN_SRC_RECORD
	           : rc == KVP_BAD ? KVP_RIN_SRC_BAD
	                           : KVP_RIN_SRC_NOMEM;
	if (rc == KVP_OK && s->rec.has_ts)
		s->ts = s->rec.ts_ms;
}

/* Does a come strictly before b (pending results of two sources, a added
 * after b)? On a tie only an event stream's beats a request stream's. */
static int
before(const struct kvp_rin_src *a, const struct kvp_rin_src *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	return !a->requests && b->requests;
}

int
kvp_rin_merge_next(struct kvp_rin_merge *m)
{
	struct kvp_rin_src *best = NULL;

	if (m->taken)
		m->src[m->cur].state = KVP_RIN_SRC_EOF;
	m->taken = 0;
	m->nread = 0;
	for (size_t i = 0; i < m->nsrc; i++) {
		struct kvp_rin_src *s = &m->src[i];

		if (s->state == KVP_RIN_SRC_EOF && !s->eof) {
			src_next(s);
			if (s->state != KVP_RIN_SRC_EOF &&
			    s->state != KVP_RIN_SRC_IOERR)
				m->nread++;
		}
		if (s->state != KVP_RIN_SRC_EOF &&
		    (best == NULL || before(s, best)))
			best = s;
	}
	if (best == NULL)
		return KVP_RIN_SRC_EOF;
	m->cur = (size_t)(best - m->src);
	m->taken = 1;
	return best->state;
}

void
kvp_rin_merge_paths(const struct kvp_rin_merge *m, uintmax_t *fast,
                    uintmax_t *slow)
{
	*fast = *slow = 0;
	for (size_t i = 0; i < m->nsrc; i++) {
		*fast += m->src[i].p.fast;
		*slow += m->src[i].p.slow;
	}
}
