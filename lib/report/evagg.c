/* SPDX-License-Identifier: MIT */
/*
 * evagg.c — streaming aggregation of event streams for kv-report.
 */
#include <json-c/json.h>
#include <string.h>

#include "common/ndjson.h"
#include "common/util.h"
#include "kvpipe.h"
#include "report/evagg.h"

const char *const kvp_evagg_type_names[KVP_EVAGG_COUNT] = {"stored", "removed",
                                                           "cleared", "other"};

/* One record, as read. */
struct evrec {
	enum { R_EVENT, R_GAP, R_STALE, R_OTHER } kind;
	int type;
	uint64_t worker_id, dp_rank;
	int has_t;
	double t_ms;
};

void
kvp_evagg_init(struct kvp_evagg *a)
{
	memset(a, 0, sizeof *a);
	kvp_kmap_init(&a->wmap);
}

void
kvp_evagg_fini(struct kvp_evagg *a)
{
	kvp_kmap_fini(&a->wmap);
	free(a->w);
	if (a->tok != NULL)
		json_tokener_free(a->tok);
	memset(a, 0, sizeof *a);
}

static void
halve(void *ctx)
{
	struct kvp_evagg *a = ctx;
	int i, k;

	for (i = 0; i < KVP_AGG_BUCKETS / 2; i++) {
		struct kvp_evagg_bucket m = a->b[2 * i];
		const struct kvp_evagg_bucket *y = &a->b[2 * i + 1];

		for (k = 0; k < KVP_EVAGG_COUNT; k++)
			m.by_type[k] += y->by_type[k];
		for (k = 0; k <= KVP_AGG_WORKERS; k++)
			m.by_worker[k] += y->by_worker[k];
		a->b[i] = m;
	}
	memset(&a->b[KVP_AGG_BUCKETS / 2], 0,
	       sizeof a->b[0] * (KVP_AGG_BUCKETS - KVP_AGG_BUCKETS / 2));
}

/* The worker's entry (created on first sight), or NULL without memory. */
static struct kvp_evagg_worker *
worker(struct kvp_evagg *a, uint64_t wid, uint64_t dp, size_t *idx)
{
	int ins;
	uint32_t *v = kvp_kmap_upsert(&a->wmap, (uint32_t)dp, wid,
	                              (uint32_t)a->n_workers + 1, &ins);

	if (v == NULL)
		return NULL;
	if (ins) {
		if (kvp_grow(&a->w, &a->cap_workers, a->n_workers + 1,
		             sizeof *a->w) != 0)
			return NULL;
		memset(&a->w[a->n_workers], 0, sizeof *a->w);
		a->w[a->n_workers].worker_id = wid;
		a->w[a->n_workers].dp_rank = dp;
		a->n_workers++;
	}
	*idx = *v - 1;
	return &a->w[*idx];
}

static int
type_of_name(const char *s)
{
	if (strcmp(s, "BlockStored") == 0)
		return KVP_EVAGG_STORED;
	if (strcmp(s, "BlockRemoved") == 0)
		return KVP_EVAGG_REMOVED;
	if (strcmp(s, "AllBlocksCleared") == 0)
		return KVP_EVAGG_CLEARED;
	return KVP_EVAGG_OTHER;
}

/* A RouterEvent's data: "cleared", {"stored": …} or {"removed": …}. */
static int
type_of_data(const struct json_object *data)
{
	struct json_object *v;

	if (json_object_is_type(data, json_type_string))
		return strcmp(
		           json_object_get_string((struct json_object *)data),
		           "cleared") == 0
		           ? KVP_EVAGG_CLEARED
		           : KVP_EVAGG_OTHER;
	if (kvp_json_get(data, "stored", &v))
		return KVP_EVAGG_STORED;
	if (kvp_json_get(data, "removed", &v))
		return KVP_EVAGG_REMOVED;
	return KVP_EVAGG_OTHER;
}

/* worker_id and dp_rank of o (either may be absent: 0), the time in
 * seconds from "ts" when present. */
static int
ids_and_ts(const struct json_object *o, struct evrec *r, struct kvp_diag *d)
{
	int has;
	double ts = 0;

	if (kvp_json_opt_u64(o, "worker_id", KVP_U64_STRING, &r->worker_id,
	                     &has, d) != 0 ||
	    kvp_json_opt_u64(o, "dp_rank", 0, &r->dp_rank, &has, d) != 0 ||
	    kvp_json_opt_double(o, "ts", &ts, &r->has_t, d) != 0)
		return KVP_BAD;
	r->t_ms = ts * 1000;
	return KVP_OK;
}

/* kv-decode's records. */
static int
read_decoded(const struct json_object *o, const char *rec, struct evrec *r,
             struct kvp_diag *d)
{
	const char *type = NULL;

	if (strcmp(rec, "event") == 0) {
		if (kvp_json_req_str(o, "type", &type, d) != 0)
			return KVP_BAD;
		r->kind = R_EVENT;
		r->type = type_of_name(type);
	} else if (strcmp(rec, "gap") == 0)
		r->kind = R_GAP;
	else if (strcmp(rec, "stale") == 0)
		r->kind = R_STALE;
	else
		r->kind = R_OTHER;
	return r->kind == R_OTHER ? KVP_OK : ids_and_ts(o, r, d);
}

/* kv-normalize's RouterEvent, bare or in a KvRecorder line. */
static int
read_router_event(const struct json_object *o, struct evrec *r,
                  struct kvp_diag *d)
{
	struct json_object *ev, *data, *inner;
	double ms = 0;
	int has_ms = 0;

	if (kvp_json_opt_double(o, "timestamp", &ms, &has_ms, d) != 0)
		return KVP_BAD;
	if (kvp_json_get(o, "event", &inner) &&
	    json_object_is_type(inner, json_type_object) &&
	    kvp_json_get(inner, "worker_id", &ev) &&
	    kvp_json_get(inner, "event", &ev))
		o = inner; /* KvRecorder: {"timestamp": ms, "event": …} */
	if (!kvp_json_get(o, "event", &ev) ||
	    !json_object_is_type(ev, json_type_object) ||
	    !kvp_json_get(ev, "data", &data))
		return kvp_diag_set(d, 0,
		                    "not an event record: expected kv-decode "
		                    "records (\"rec\") or kv-normalize's "
		                    "RouterEvents (\"event\".\"data\")"),
		       KVP_BAD;
	r->kind = R_EVENT;
	r->type = type_of_data(data);
	if (ids_and_ts(o, r, d) != KVP_OK ||
	    kvp_json_opt_u64(ev, "dp_rank", 0, &r->dp_rank, &has_ms, d) != 0)
		return KVP_BAD;
	if (!r->has_t && ms > 0) {
		r->has_t = 1;
		r->t_ms = ms;
	}
	return KVP_OK;
}

static int
read_rec(struct json_object *o, struct evrec *r, struct kvp_diag *d)
{
	struct json_object *v;

	memset(r, 0, sizeof *r);
	if (kvp_json_get(o, "rec", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return kvp_diag_set(d, 0, "rec: expected a string"),
			       KVP_BAD;
		return read_decoded(o, json_object_get_string(v), r, d);
	}
	if (kvp_json_get(o, "filtered", &v)) {
		r->kind = R_OTHER;
		return KVP_OK;
	}
	return read_router_event(o, r, d);
}

static int
add_event(struct kvp_evagg *a, const struct evrec *r,
          struct kvp_evagg_worker *w, size_t wi)
{
	struct kvp_evagg_bucket *b;
	double t;
	size_t slot = wi < KVP_AGG_WORKERS ? wi : KVP_AGG_WORKERS;

	if (a->events == 0 && (a->time_is_ts = r->has_t))
		a->tl.width = 1000; /* buckets of at least a second */
	t = a->time_is_ts ? (r->has_t ? r->t_ms : a->t_last)
	                  : (double)a->events;
	a->t_last = t;
	a->events++;
	a->by_type[r->type]++;
	w->by_type[r->type]++;
	b = &a->b[kvp_agg_tline_at(&a->tl, t, KVP_AGG_BUCKETS, halve, a)];
	b->by_type[r->type]++;
	b->by_worker[slot]++;
	a->other_used |= slot == KVP_AGG_WORKERS;
	return KVP_OK;
}

int
kvp_evagg_line(struct kvp_evagg *a, const char *line, size_t len,
               struct kvp_diag *d)
{
	struct json_object *o;
	struct kvp_evagg_worker *w;
	struct evrec r;
	size_t wi;
	int st;

	if (a->tok == NULL && (a->tok = json_tokener_new()) == NULL)
		return KVP_FAIL;
	if ((o = kvp_json_parse_object(a->tok, line, len, d)) == NULL)
		return KVP_BAD;
	st = read_rec(o, &r, d);
	json_object_put(o);
	if (st != KVP_OK)
		return st;
	if (r.kind == R_OTHER) {
		a->other_records++;
		return KVP_OK;
	}
	if ((w = worker(a, r.worker_id, r.dp_rank, &wi)) == NULL)
		return KVP_FAIL;
	if (r.kind == R_GAP) {
		a->gaps++;
		w->gaps++;
		return KVP_OK;
	}
	if (r.kind == R_STALE) {
		a->stale++;
		w->stale++;
		return KVP_OK;
	}
	return add_event(a, &r, w, wi);
}
