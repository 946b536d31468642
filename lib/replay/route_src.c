/* SPDX-License-Identifier: MIT */
/*
 * route_src.c — route-score's input streams and their time merge. See
 * route_src.h.
 */
#include "replay/route_src.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "common/ndjson.h"
#include "common/util.h"
#include "kvpipe.h"
#include "replay/route_input.h"

/* ---- Dynamo's /dump ------------------------------------------------------
 *
 * The standalone indexer's GET /dump is one JSON object, one entry per
 * indexer: {"model:routing_group": {"block_size": N, "events":
 * [RouterEvent...]}, ...}, or {"error": "..."} for an indexer whose dump
 * failed (older builds keyed it "model:tenant_id"); DumpTree and older
 * dumps are a JSON array of RouterEvents. One such line is read here as
 * its events, in order. */

struct dump_entry {
	const char *key; /* NULL: the array form */
	struct json_object *val;
};

struct kvp_rin_dump {
	struct json_object *root; /* owned */
	struct dump_entry *e;
	size_t n, cap, next;        /* entries; the next one to start */
	const char *key;            /* the current entry's */
	struct json_object *events; /* its events; NULL: none under way */
	size_t ev, n_ev;            /* the next event */
};

static void
dump_end(struct kvp_rin_dump *u)
{
	if (u->root != NULL)
		json_object_put(u->root);
	u->root = NULL;
	u->n = u->next = 0;
	u->events = NULL;
}

/* Is the object o a dump: empty, or each value an object holding
 * "events" or "error"? */
static int
is_dump(struct json_object *o)
{
	if (!json_object_is_type(o, json_type_object))
		return 0;
	json_object_object_foreach(o, k, v)
	{
		struct json_object *x;

		(void)k;
		if (!json_object_is_type(v, json_type_object) ||
		    (!json_object_object_get_ex(v, "events", &x) &&
		     !json_object_object_get_ex(v, "error", &x)))
			return 0;
	}
	return 1;
}

/* Makes root (owned now) the dump being read. -1 when out of memory. */
static int
dump_begin(struct kvp_rin_src *s, struct json_object *root)
{
	struct kvp_rin_dump *u = s->dump;

	if (u == NULL && (u = s->dump = calloc(1, sizeof *u)) == NULL) {
		json_object_put(root);
		return -1;
	}
	u->root = root;
	u->n = u->next = 0;
	u->events = NULL;
	if (json_object_is_type(root, json_type_array)) {
		if (kvp_grow(&u->e, &u->cap, 1, sizeof *u->e) != 0)
			return -1;
		u->e[u->n++] = (struct dump_entry){NULL, root};
		return 0;
	}
	json_object_object_foreach(root, k, v)
	{
		if (kvp_grow(&u->e, &u->cap, u->n + 1, sizeof *u->e) != 0)
			return -1;
		u->e[u->n++] = (struct dump_entry){k, v};
	}
	return 0;
}

/* An entry's block_size: 1 with *bs, 0 when it has none, -1 (d set)
 * when it is not a u32 above 0. */
static int
entry_block_size(struct json_object *v, const char *key, uint32_t *bs,
                 struct kvp_diag *d)
{
	struct json_object *b;
	int64_t x;

	if (!json_object_object_get_ex(v, "block_size", &b) ||
	    json_object_is_type(b, json_type_null))
		return 0;
	x = json_object_get_int64(b);
	if (!json_object_is_type(b, json_type_int) || x <= 0 ||
	    x > (int64_t)UINT32_MAX)
		return kvp_diag_set(
		    d, 0,
		    "dump entry \"%.80s\": block_size: expected "
		    "an integer from 1 to 4294967295",
		    key);
	*bs = (uint32_t)x;
	return 1;
}

/* Starts entry u->next: 0 (its events are under way), or -1 with d set
 * for an entry that is a bad record. */
static int
entry_begin(struct kvp_rin_dump *u, uint32_t want, struct kvp_diag *d)
{
	struct dump_entry *e = &u->e[u->next++];
	struct json_object *ev, *err;
	uint32_t bs;
	int rc;

	u->key = e->key;
	u->ev = 0;
	if (e->key == NULL) {
		u->events = e->val;
		u->n_ev = json_object_array_length(e->val);
		return 0;
	}
	if (json_object_object_get_ex(e->val, "error", &err))
		return kvp_diag_set(d, 0,
		                    "dump entry \"%.80s\": the indexer's dump "
		                    "failed: %.120s",
		                    e->key, json_object_get_string(err));
	if (!json_object_object_get_ex(e->val, "events", &ev) ||
	    !json_object_is_type(ev, json_type_array))
		return kvp_diag_set(d, 0,
		                    "dump entry \"%.80s\": events: expected an "
		                    "array",
		                    e->key);
	rc = entry_block_size(e->val, e->key, &bs, d);
	if (rc < 0)
		return -1;
	if (rc > 0 && bs != want)
		return kvp_diag_set(d, 0,
		                    "dump entry \"%.80s\": block_size %" PRIu32
		                    " differs from the router's %" PRIu32
		                    " (--block-size); its %zu event(s) are not "
		                    "applied",
		                    e->key, bs, want,
		                    json_object_array_length(ev));
	u->events = ev;
	u->n_ev = json_object_array_length(ev);
	return 0;
}

/* The dump's next record into s (its state set): 1, or 0 when the dump is
 * done. */
static int
dump_next(struct kvp_rin_src *s)
{
	struct kvp_rin_dump *u = s->dump;
	char msg[sizeof s->diag.msg];
	int rc;

	while (u->events == NULL || u->ev == u->n_ev) {
		u->events = NULL;
		if (u->next == u->n) {
			dump_end(u);
			return 0;
		}
		if (entry_begin(u, s->p.block_size, &s->diag) != 0) {
			s->state = KVP_RIN_SRC_BAD;
			return 1;
		}
	}
	rc = kvp_rin_parse(&s->p, json_object_array_get_idx(u->events, u->ev),
	                   s->line, &s->rec, &s->diag);
	u->ev++;
	if (rc != 0) {
		snprintf(msg, sizeof msg, "%s", s->diag.msg);
		if (u->key != NULL)
			kvp_diag_set(&s->diag, 0,
			             "dump entry \"%.80s\" event %zu: %s",
			             u->key, u->ev - 1, msg);
		else
			kvp_diag_set(&s->diag, 0, "dump event %zu: %s",
			             u->ev - 1, msg);
		s->state = KVP_RIN_SRC_BAD;
		return 1;
	}
	s->state = KVP_RIN_SRC_RECORD;
	if (s->rec.has_ts)
		s->ts = s->rec.ts_ms;
	return 1;
}

static size_t
skip_ws(const char *line, size_t len, size_t i)
{
	while (i < len && (line[i] == ' ' || line[i] == '\t' ||
	                   line[i] == '\r' || line[i] == '\n'))
		i++;
	return i;
}

/* Whether line (len bytes, not blank) is an array of objects, or empty:
 * the old dump. Any other array is a bad record, refused without a tree
 * (a long line of numbers would cost 40 times its size). */
static int
is_array_line(const char *line, size_t len)
{
	size_t i = skip_ws(line, len, 0);

	if (i >= len || line[i] != '[')
		return 0;
	i = skip_ws(line, len, i + 1);
	return i < len && (line[i] == '{' || line[i] == ']');
}

int
kvp_rin_dump_block_size(FILE *f, size_t max, uint32_t *bs, struct kvp_diag *d)
{
	struct kvp_lines lr;
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = NULL;
	char *line;
	size_t len;
	int rc, found = 0;

	kvp_diag_clear(d);
	if (tok == NULL)
		return kvp_diag_set(d, 0, "out of memory");
	kvp_lines_init(&lr, f, max);
	do
		rc = kvp_lines_next(&lr, &line, &len);
	while (rc == KVP_LINE_OK && kvp_line_is_blank(line, len));
	if (rc == KVP_LINE_IOERR)
		found = -1;
	if (rc == KVP_LINE_OK &&
	    (o = kvp_json_parse_object(tok, line, len, d)) != NULL &&
	    is_dump(o)) {
		json_object_object_foreach(o, k, v)
		{
			uint32_t b;
			int r = entry_block_size(v, k, &b, d);

			if (r < 0 || (r > 0 && found && b != *bs)) {
				if (r > 0)
					kvp_diag_set(d, 0,
					             "dump entries disagree on "
					             "block_size (%" PRIu32
					             " and %" PRIu32 ")",
					             *bs, b);
				found = -1;
				break;
			}
			if (r > 0) {
				*bs = b;
				found = 1;
			}
		}
	}
	if (found >= 0 && rc == KVP_LINE_OK)
		kvp_diag_clear(d);
	if (o != NULL)
		json_object_put(o);
	json_tokener_free(tok);
	kvp_lines_fini(&lr);
	return found;
}

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
		if (m->src[i].dump != NULL) {
			dump_end(m->src[i].dump);
			free(m->src[i].dump->e);
			free(m->src[i].dump);
		}
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

/* A line that is an array (the old dump): 1 with its first record
 * pending, 2 when it has none, -1 (bad JSON: d set) or -2 (out of memory);
 * 0 for any other line. */
static int
src_dump(struct kvp_rin_src *s, const char *line, size_t len)
{
	struct json_object *o;

	if (s->p.mooncake || !is_array_line(line, len))
		return 0;
	if (s->p.skel.tok == NULL &&
	    (s->p.skel.tok = json_tokener_new()) == NULL)
		return -2;
	o = kvp_json_parse_value(s->p.skel.tok, line, len, &s->diag);
	if (o == NULL)
		return -1;
	if (dump_begin(s, o) != 0)
		return -2;
	return dump_next(s) ? 1 : 2;
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
	if (s->dump != NULL && s->dump->root != NULL && dump_next(s))
		return;
again:
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
	rc = src_dump(s, line, len);
	if (rc == 1)
		return;
	if (rc == 2) /* an empty dump */
		goto again;
	if (rc < 0) {
		s->state = rc == -1 ? KVP_RIN_SRC_BAD : KVP_RIN_SRC_NOMEM;
		return;
	}
	rc = kvp_rin_parse_line(&s->p, line, len, s->line, &s->rec, &s->diag);
	if (rc == KVP_BAD && !s->p.mooncake && s->p.obj != NULL &&
	    is_dump(s->p.obj)) {
		struct json_object *o = s->p.obj;

		s->p.obj = NULL; /* the dump's now */
		kvp_diag_clear(&s->diag);
		if (dump_begin(s, o) != 0) {
			s->state = KVP_RIN_SRC_NOMEM;
			return;
		}
		if (!dump_next(s))
			goto again;
		return;
	}
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
