/* SPDX-License-Identifier: MIT */
/* wire.c — a batch payload loaded, its envelope, and access to its events
 * (see wire.h; the events themselves are decoded in wire_event.c). */
#include "events/wire.h"

#include <stdlib.h>
#include <string.h>

#include "events/events_internal.h"

struct kvp_wire *
kvp_wire_new(void)
{
	return calloc(1, sizeof(struct kvp_wire));
}

void
kvp_wire_free(struct kvp_wire *w)
{
	if (w == NULL)
		return;
	free(w->hashes);
	free(w->tokens);
	free(w->offsets);
	free(w->unknown);
	free(w);
}

void
kvp_wire_set_root(struct kvp_wire *w, const void *buf, size_t len)
{
	w->root = buf;
	w->end = w->root + len;
	w->ev_list = NULL;
}

int
kvp_wire_load(struct kvp_wire *w, const void *buf, size_t len,
              struct kvp_diag *d)
{
	long long n;

	w->root = NULL;
	w->ev_list = NULL;
	if (len == 0)
		return kvp_diag_set(d, 0, "empty payload");
	n = kvp_wire_scan_top(buf, len, len, 1, d, w->top);
	if (n < 0)
		return -1;
	if ((size_t)n != len)
		return kvp_diag_set(d, (long)n,
		                    "trailing bytes: the batch ends at offset "
		                    "%lld of %zu",
		                    n, len);
	kvp_wire_set_root(w, buf, len);
	return 0;
}

kvp_wire_value
kvp_wire_root(const struct kvp_wire *w)
{
	return w->root;
}

int
kvp_wire_event(struct kvp_wire *w, const struct kvp_wire_batch *b, size_t idx,
               struct kvp_wire_event *ev, struct kvp_diag *d)
{
	const uint8_t *p, *end = NULL;
	int rc;

	memset(ev, 0, sizeof *ev);
	ev->hashes = w->hashes;
	ev->tokens = w->tokens;
	if (b->events_ == NULL || b->events_ != w->ev_list ||
	    idx >= b->n_events)
		return kvp_diag_set(d, 0, "no event %zu", idx);
	/* Events are usually read in order: resume after the last one. */
	if (idx < w->ev_idx) {
		w->ev_idx = 0;
		w->ev_pos = w->ev_first;
	}
	w->ev_pos = mp_skip_n(w->ev_pos, idx - w->ev_idx);
	p = w->ev_pos;
	rc = kvp_wire_decode_event(w, p, ev, &end, d);
	w->ev_pos = rc == 0 && end != NULL ? end : mp_skip_n(p, 1);
	w->ev_idx = idx + 1;
	return rc;
}

/* ---- envelope ------------------------------------------------------------ */

static int
get_ts(const struct mp_val *v, struct kvp_wire_batch *b, struct kvp_diag *d)
{
	switch (v->type) {
	case MP_FLOAT:
		b->ts_kind = KVP_WIRE_TS_FLOAT;
		b->ts = v->v.f;
		return 0;
	case MP_UINT:
		b->ts_kind = KVP_WIRE_TS_UINT;
		b->ts_u = v->v.u;
		b->ts = (double)v->v.u;
		return 0;
	case MP_INT:
		b->ts_kind = KVP_WIRE_TS_INT;
		b->ts_i = v->v.i;
		b->ts = (double)v->v.i;
		return 0;
	default:
		return kvp_diag_set(d, 0,
		                    "envelope ts: expected a number, got %s",
		                    mp_tname(v));
	}
}

static int
get_rank(const struct mp_val *v, struct kvp_wire_batch *b, struct kvp_diag *d)
{
	if (v->type == MP_NIL) {
		b->has_rank = 0;
		return 0;
	}
	if (v->type == MP_UINT && v->v.u <= INT32_MAX)
		b->rank = (int32_t)v->v.u;
	else if (v->type == MP_INT && v->v.i >= INT32_MIN)
		b->rank = (int32_t)v->v.i;
	else if (mp_is_int(v))
		return kvp_diag_set(d, 0,
		                    "envelope dp_rank: does not fit in i32");
	else
		return kvp_diag_set(d, 0,
		                    "envelope dp_rank: expected an integer or "
		                    "nil, got %s",
		                    mp_tname(v));
	b->has_rank = 1;
	return 0;
}

static int
get_events(struct kvp_wire *w, const struct mp_val *v, struct kvp_wire_batch *b,
           struct kvp_diag *d)
{
	if (v->type != MP_ARRAY)
		return kvp_diag_set(
		    d, 0, "envelope events: expected an array, got %s",
		    mp_tname(v));
	b->events_ = v->at;
	b->n_events = v->v.n;
	w->ev_list = v->at;
	w->ev_first = v->kids;
	w->ev_pos = v->kids;
	w->ev_idx = 0;
	return 0;
}

/* [ts, events, rank?, extra...]; p is the first element. */
static int
envelope_array(struct kvp_wire *w, const uint8_t *p, struct kvp_wire_batch *b,
               struct kvp_diag *d)
{
	size_t n = b->n_elements;
	struct mp_val e;

	if (n < 2)
		return kvp_diag_set(d, 0,
		                    "envelope array has %zu element(s); needs "
		                    "at least 2 (ts, events)",
		                    n);
	p = mp_next(p, &e);
	if (get_ts(&e, b, d))
		return -1;
	mp_head(p, &e); /* the header only: no walk over the events */
	if (get_events(w, &e, b, d))
		return -1;
	if (n > 2) {
		/* from the scan: no walk over the events */
		mp_head(w->root + w->top[2], &e);
		if (get_rank(&e, b, d))
			return -1;
	}
	b->extra = n > 3 ? n - 3 : 0;
	return 0;
}

/* {ts, events, data_parallel_rank|attn_dp_rank|dp_rank, ...}; m is the
 * map's header. */
static int
envelope_map(struct kvp_wire *w, const struct mp_val *m,
             struct kvp_wire_batch *b, struct kvp_diag *d)
{
	const uint8_t *p = m->kids;
	int has_ts = 0;

	for (uint32_t i = 0; i < m->v.n; i++) {
		struct mp_val k, v;

		p = mp_next(p, &k);
		p = mp_next(p, &v);
		if (mp_is_str(&k, "ts")) {
			if (get_ts(&v, b, d))
				return -1;
			has_ts = 1;
		} else if (mp_is_str(&k, "events")) {
			if (get_events(w, &v, b, d))
				return -1;
		} else if (mp_is_str(&k, "data_parallel_rank") ||
		           mp_is_str(&k, "attn_dp_rank") ||
		           mp_is_str(&k, "dp_rank")) {
			if (get_rank(&v, b, d))
				return -1;
		} else {
			b->extra++;
		}
	}
	if (!has_ts)
		return kvp_diag_set(d, 0, "map envelope has no \"ts\" key");
	if (b->events_ == NULL)
		return kvp_diag_set(d, 0, "map envelope has no \"events\" key");
	return 0;
}

int
kvp_wire_envelope(struct kvp_wire *w, struct kvp_wire_batch *b,
                  struct kvp_diag *d)
{
	size_t bytes = b->bytes;
	struct mp_val o;
	const uint8_t *p;

	memset(b, 0, sizeof *b);
	b->bytes = bytes;
	w->ev_list = NULL;
	if (w->root == NULL)
		return kvp_diag_set(d, 0, "no batch loaded");
	p = mp_head(w->root, &o);
	if (o.type == MP_ARRAY) {
		b->enc = KVP_WIRE_ARRAY;
		b->n_elements = o.v.n;
		return envelope_array(w, p, b, d);
	}
	if (o.type == MP_MAP) {
		b->enc = KVP_WIRE_MAP;
		return envelope_map(w, &o, b, d);
	}
	return kvp_diag_set(d, 0, "batch is a %s, not an array or a map",
	                    mp_tname(&o));
}

int
kvp_wire_not_dynamo(const struct kvp_wire_batch *b)
{
	if (b->enc == KVP_WIRE_MAP)
		return 1;
	return b->n_elements >= 2 && b->n_elements != 3;
}
