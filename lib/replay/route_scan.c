/* SPDX-License-Identifier: MIT */
/*
 * route_scan.c — the fast path of route-score's input (route_input.h):
 * the common record shapes read with common/jscan, without a json-c tree.
 *
 * Shapes: Mooncake trace lines and requests ({"type": "request"} or
 * untyped) with hash_ids, block_hashes or tokens; Dynamo RouterEvents as
 * kv-normalize writes them (stored with tokens_hash blocks, removed,
 * "cleared"); Dynamo KvRecorder lines {"timestamp", "event": RouterEvent}.
 *
 * Anything else declines (returns 1) and the line goes to the json-c path,
 * which holds every rule and every error message: a key this file does not
 * know, a key given twice, an escape in a string, a value of another type
 * or range (a negative timestamp, a fraction, input_length over the
 * limit). So the fast path only ever accepts what the json-c path would
 * accept, with the same result; a new key needs only the json-c path.
 */
#include <string.h>

#include "common/blockhash.h"
#include "common/jscan.h"
#include "common/jsonw.h"
#include "common/util.h"
#include "route/index.h"
#include "replay/route_input.h"
#include "replay/truth.h"

#define SKIP_DEPTH 16

enum rkey {
	K_TYPE,
	K_REQUEST_ID,
	K_ID,
	K_TS_MS,
	K_TIMESTAMP,
	K_INPUT_LENGTH,
	K_OUTPUT_LENGTH,
	K_HASH_IDS,
	K_BLOCK_HASHES,
	K_TOKENS,
	K_WORKER_ID,
	K_STORAGE_TIER,
	K_RESIDENCY,
	K_EVENT,
	K_X,
	K_CACHED_TOKENS, /* the engine's figure (truth.h) */
	K_NKEYS
};

static const char *const rkeys[K_NKEYS] = {"type",
                                           "request_id",
                                           "id",
                                           "ts_ms",
                                           "timestamp",
                                           "input_length",
                                           "output_length",
                                           "hash_ids",
                                           "block_hashes",
                                           "tokens",
                                           "worker_id",
                                           "storage_tier",
                                           "residency_domain",
                                           "event",
                                           "x",
                                           "cached_tokens"};

static int
key_is(const struct kvp_jscan *c, const struct kvp_jspan *k, const char *s)
{
	size_t n = strlen(s);

	return k->len == n && k->flags == 0 && memcmp(c->s + k->off, s, n) == 0;
}

static const unsigned char rklen[K_NKEYS] = {4,  10, 2, 5,  9,  12, 13, 8,
                                             12, 6,  9, 12, 16, 5,  1,  13};

static int
key_of(const struct kvp_jscan *c, const struct kvp_jspan *k)
{
	if (k->flags != 0)
		return -1;
	for (int i = 0; i < K_NKEYS; i++)
		if (k->len == rklen[i] &&
		    memcmp(c->s + k->off, rkeys[i], k->len) == 0)
			return i;
	return -1;
}

/* The request id is the decimal number v (written back as fast). */
static void
decimal_id(struct kvp_rin_parser *p, uint64_t v, int fast, struct kvp_rin *out)
{
	out->id_json = NULL;
	out->id_fast = fast;
	out->line_id = v;
	out->rq.id_len = kvp_u64_dec(p->idbuf, v);
	p->idbuf[out->rq.id_len] = '\0';
	out->rq.id = p->idbuf;
}

void
kvp_rin_line_id(struct kvp_rin_parser *p, uintmax_t line, struct kvp_rin *out)
{
	decimal_id(p, line, KVP_RIN_ID_JSON, out);
}

void
kvp_rin_num_id(struct kvp_rin_parser *p, uint64_t id, struct kvp_rin *out)
{
	decimal_id(p, id, KVP_RIN_ID_NUMBER, out);
}

/* A non-negative integer. */
static int
scan_u64(struct kvp_jscan *c, uint64_t *v)
{
	int neg;

	return kvp_jscan_int(c, v, &neg) != 0 || neg ? -1 : 0;
}

static int
scan_u32(struct kvp_jscan *c, uint32_t *v)
{
	uint64_t u;

	if (scan_u64(c, &u) != 0 || u > UINT32_MAX)
		return -1;
	*v = (uint32_t)u;
	return 0;
}

/* A string without escapes or bytes >= 0x80 (its bytes are its value). */
static int
scan_plain(struct kvp_jscan *c, struct kvp_jspan *sp)
{
	if (kvp_jscan_peek(c) != '"' || kvp_jscan_string(c, sp) != 0)
		return -1;
	return sp->flags == 0 ? 0 : -1;
}

/* What the top level of a line held. */
struct top {
	unsigned seen;
	struct kvp_jspan type, sid;
	uint64_t nid, ts, isl, osl, worker, cached;
	int id_str;
	size_t event_at; /* offset of the "event" value */
	size_t nhash, ntok;
	int tier;
	int has_xts;
	uint64_t xts;
};

/* "x": only its "ts_ms" is read (kv-normalize's event timestamp). */
static int
scan_x(struct kvp_jscan *c, struct top *t)
{
	struct kvp_jspan k;
	size_t n = 0;
	int rc;

	if (kvp_jscan_peek(c) != '{')
		return kvp_jscan_skip(c, SKIP_DEPTH);
	if (kvp_jscan_obj_begin(c) != 0)
		return -1;
	while ((rc = kvp_jscan_obj_next(c, &n, &k)) == 1) {
		if (key_is(c, &k, "ts_ms")) {
			if (t->has_xts || scan_u64(c, &t->xts) != 0)
				return -1;
			t->has_xts = 1;
		} else if (kvp_jscan_skip(c, SKIP_DEPTH) != 0) {
			return -1;
		}
	}
	return rc;
}

static int
scan_id(struct kvp_jscan *c, struct top *t)
{
	if (kvp_jscan_peek(c) == '"') {
		t->id_str = 1;
		return scan_plain(c, &t->sid);
	}
	return scan_u64(c, &t->nid);
}

static int
scan_tier(struct kvp_jscan *c, struct top *t)
{
	struct kvp_jspan sp;
	char buf[32];

	if (scan_plain(c, &sp) != 0 || sp.len >= sizeof buf)
		return -1;
	memcpy(buf, c->s + sp.off, sp.len);
	buf[sp.len] = '\0';
	t->tier = kvp_tier_parse(buf);
	return t->tier < 0 ? -1 : 0;
}

/* One top-level member's value (key k) into t. 0 or -1. */
/* lint: table-driven */
static int
scan_member(struct kvp_rin_parser *p, struct kvp_jscan *c, int k, struct top *t)
{
	switch (k) {
	case K_TYPE:
		return scan_plain(c, &t->type);
	case K_REQUEST_ID:
	case K_ID:
		return scan_id(c, t);
	case K_TS_MS:
	case K_TIMESTAMP:
		return scan_u64(c, &t->ts);
	case K_INPUT_LENGTH:
		if (scan_u64(c, &t->isl) != 0 || t->isl > KVP_RIN_MAX_ISL)
			return -1;
		return 0;
	case K_OUTPUT_LENGTH:
		return scan_u64(c, &t->osl);
	case K_HASH_IDS:
	case K_BLOCK_HASHES:
		return kvp_jscan_u64_array(c, 1, &p->local, &p->caplocal,
		                           &t->nhash);
	case K_TOKENS:
		return kvp_jscan_u32_array(c, &p->tok, &p->captok, &t->ntok);
	case K_WORKER_ID:
		return scan_u64(c, &t->worker);
	case K_STORAGE_TIER:
		return scan_tier(c, t);
	case K_RESIDENCY:
		return kvp_jscan_skip(c, SKIP_DEPTH);
	case K_EVENT:
		t->event_at = c->i;
		return kvp_jscan_skip(c, SKIP_DEPTH);
	case K_X:
		return scan_x(c, t);
	case K_CACHED_TOKENS:
		return scan_u64(c, &t->cached);
	}
	return -1;
}

/* The members of the object at the cursor into t; the whole line when
 * top. 0, or -1 (decline). */
static int
scan_object(struct kvp_rin_parser *p, struct kvp_jscan *c, struct top *t)
{
	struct kvp_jspan ks;
	size_t nm = 0;
	int rc;

	if (kvp_jscan_obj_begin(c) != 0)
		return -1;
	while ((rc = kvp_jscan_obj_next(c, &nm, &ks)) == 1) {
		int k = key_of(c, &ks);

		if (k < 0 || (t->seen & (1u << k)))
			return -1;
		t->seen |= 1u << k;
		if (scan_member(p, c, k, t) != 0)
			return -1;
	}
	return rc;
}

#define HAS(t, k) (((t)->seen >> (k)) & 1u)
#define REQUEST_KEYS                                                           \
	((1u << K_TYPE) | (1u << K_REQUEST_ID) | (1u << K_ID) |                \
	 (1u << K_TS_MS) | (1u << K_TIMESTAMP) | (1u << K_INPUT_LENGTH) |      \
	 (1u << K_OUTPUT_LENGTH) | (1u << K_HASH_IDS) |                        \
	 (1u << K_BLOCK_HASHES) | (1u << K_TOKENS) | (1u << K_CACHED_TOKENS))

/* A request from t (which holds only request keys). */
static int
build_request(struct kvp_rin_parser *p, const struct kvp_jscan *c,
              const struct top *t, uintmax_t line, struct kvp_rin *out)
{
	struct kvp_request *q = &out->rq;
	int nbody =
	    HAS(t, K_HASH_IDS) + HAS(t, K_BLOCK_HASHES) + HAS(t, K_TOKENS);

	if (nbody != 1 || (HAS(t, K_REQUEST_ID) && HAS(t, K_ID)) ||
	    (HAS(t, K_TS_MS) && HAS(t, K_TIMESTAMP)) ||
	    (p->mooncake && !HAS(t, K_HASH_IDS)))
		return 1;
	if (HAS(t, K_TYPE) && !(t->type.len == 7 &&
	                        memcmp(c->s + t->type.off, "request", 7) == 0))
		return 1;
	out->kind = KVP_RIN_REQUEST;
	q->commit = 1;
	if (!HAS(t, K_REQUEST_ID) && !HAS(t, K_ID)) {
		kvp_rin_line_id(p, line, out);
	} else if (t->id_str) {
		out->id_fast = KVP_RIN_ID_STRING;
		q->id = c->s + t->sid.off;
		q->id_len = t->sid.len;
	} else {
		kvp_rin_num_id(p, t->nid, out);
	}
	out->has_ts = q->has_ts = HAS(t, K_TS_MS) || HAS(t, K_TIMESTAMP);
	out->ts_ms = q->ts_ms = t->ts;
	out->rq.has_osl = HAS(t, K_OUTPUT_LENGTH);
	out->rq.osl = t->osl;
	if (HAS(t, K_CACHED_TOKENS)) {
		out->engine_cached_kind = KVP_EC_GIVEN;
		out->engine_cached = t->cached;
	}
	if (HAS(t, K_TOKENS)) {
		out->tokens = p->tok;
		out->ntokens = t->ntok;
		out->seed = p->default_seed;
		q->isl = HAS(t, K_INPUT_LENGTH) ? t->isl : t->ntok;
		return 0;
	}
	q->local = p->local;
	q->n = t->nhash;
	q->isl =
	    HAS(t, K_INPUT_LENGTH) ? t->isl : (uint64_t)q->n * p->block_size;
	return 0;
}

/* A store's blocks: [{"block_hash", "tokens_hash", "mm_extra_info"?}]. */
static int
scan_blocks(struct kvp_rin_parser *p, struct kvp_jscan *c, size_t *nb)
{
	size_t n = 0;
	int rc;

	if (kvp_jscan_arr_begin(c) != 0)
		return -1;
	while ((rc = kvp_jscan_arr_next(c, &n)) == 1) {
		struct kvp_jspan k;
		size_t nm = 0, i = n - 1;
		unsigned seen = 0;

		if (kvp_grow(&p->ext, &p->capext, n + 1, sizeof *p->ext) ||
		    kvp_grow(&p->local, &p->caplocal, n + 1, sizeof *p->local))
			return -1;
		if (kvp_jscan_obj_begin(c) != 0)
			return -1;
		while ((rc = kvp_jscan_obj_next(c, &nm, &k)) == 1) {
			int neg, bit = key_is(c, &k, "block_hash")      ? 1
			               : key_is(c, &k, "tokens_hash")   ? 2
			               : key_is(c, &k, "mm_extra_info") ? 4
			                                                : 0;

			if (bit == 0 || (seen & bit))
				return -1;
			seen |= bit;
			if (bit == 4
			        ? kvp_jscan_skip(c, SKIP_DEPTH) != 0
			        : kvp_jscan_int(
			              c, bit == 1 ? &p->ext[i] : &p->local[i],
			              &neg) != 0)
				return -1;
		}
		if (rc != 0 || (seen & 3) != 3)
			return -1;
	}
	*nb = n;
	return rc;
}

/* data.stored: parent_hash, start_position, blocks. */
static int
scan_stored(struct kvp_rin_parser *p, struct kvp_jscan *c, struct kvp_rin *out)
{
	struct kvp_jspan k;
	size_t nm = 0;
	unsigned seen = 0;
	int rc, neg;

	out->ev.kind = KVP_EV_STORED;
	if (kvp_jscan_obj_begin(c) != 0)
		return -1;
	while ((rc = kvp_jscan_obj_next(c, &nm, &k)) == 1) {
		int bit = key_is(c, &k, "parent_hash")      ? 1
		          : key_is(c, &k, "start_position") ? 2
		          : key_is(c, &k, "blocks")         ? 4
		                                            : 0;

		if (bit == 0 || (seen & bit))
			return -1;
		seen |= bit;
		if (bit == 1 && kvp_jscan_peek(c) == 'n') {
			rc = kvp_jscan_literal(c, "null");
		} else if (bit == 1) {
			rc = kvp_jscan_int(c, &out->ev.parent, &neg);
			out->ev.has_parent = 1;
		} else if (bit == 2) {
			rc = kvp_jscan_skip(c, SKIP_DEPTH);
		} else {
			rc = scan_blocks(p, c, &out->ev.n);
		}
		if (rc != 0)
			return -1;
	}
	if (rc != 0 || !(seen & 4))
		return -1;
	out->seed = p->default_seed;
	out->ev.ext = p->ext;
	out->ev.local = p->local;
	return 0;
}

/* data: "cleared", {"stored": ...} or {"removed": {"block_hashes"}}. */
static int
scan_data(struct kvp_rin_parser *p, struct kvp_jscan *c, struct kvp_rin *out)
{
	struct kvp_jspan k;
	size_t nm = 0, nr = 0;
	int rc;

	if (kvp_jscan_peek(c) == '"') {
		if (scan_plain(c, &k) != 0 || k.len != 7 ||
		    memcmp(c->s + k.off, "cleared", 7) != 0)
			return -1;
		out->ev.kind = KVP_EV_CLEARED;
		return 0;
	}
	if (kvp_jscan_obj_begin(c) != 0 || kvp_jscan_obj_next(c, &nm, &k) != 1)
		return -1;
	if (key_is(c, &k, "stored")) {
		rc = scan_stored(p, c, out);
	} else if (key_is(c, &k, "removed") && kvp_jscan_obj_begin(c) == 0 &&
	           kvp_jscan_obj_next(c, &nr, &k) == 1 &&
	           key_is(c, &k, "block_hashes")) {
		rc = kvp_jscan_u64_array(c, 1, &p->ext, &p->capext,
		                         &out->ev.n) ||
		     kvp_jscan_obj_next(c, &nr, &k) != 0;
		out->ev.kind = KVP_EV_REMOVED;
		out->ev.ext = p->ext;
	} else {
		return -1;
	}
	if (rc != 0)
		return -1;
	return kvp_jscan_obj_next(c, &nm, &k) == 0 ? 0 : -1;
}

/* The RouterEvent's "event": event_id, dp_rank, data. */
static int
scan_event(struct kvp_rin_parser *p, struct kvp_jscan *c, struct kvp_rin *out)
{
	struct kvp_jspan k;
	size_t nm = 0;
	unsigned seen = 0;
	int rc;

	if (kvp_jscan_obj_begin(c) != 0)
		return -1;
	while ((rc = kvp_jscan_obj_next(c, &nm, &k)) == 1) {
		int bit = key_is(c, &k, "event_id")  ? 1
		          : key_is(c, &k, "dp_rank") ? 2
		          : key_is(c, &k, "data")    ? 4
		                                     : 0;

		if (bit == 0 || (seen & bit))
			return -1;
		seen |= bit;
		if (bit == 1)
			rc = scan_u64(c, &out->ev.event_id);
		else if (bit == 2)
			rc = scan_u32(c, &out->ev.dp_rank);
		else
			rc = scan_data(p, c, out);
		if (rc != 0)
			return -1;
	}
	out->ev.has_event_id = (seen & 1) != 0;
	return rc != 0 || !(seen & 4) ? -1 : 0;
}

/* A RouterEvent whose top-level members are in t. */
static int
build_event(struct kvp_rin_parser *p, struct kvp_jscan *c, const struct top *t,
            struct kvp_rin *out)
{
	struct kvp_jscan ec = *c;

	if ((t->seen & REQUEST_KEYS) != 0 || !HAS(t, K_WORKER_ID))
		return 1;
	out->kind = KVP_RIN_EVENT;
	out->ev.worker_id = t->worker;
	out->ev.tier = HAS(t, K_STORAGE_TIER) ? t->tier : KVP_TIER_DEVICE;
	out->has_ts = t->has_xts;
	out->ts_ms = t->xts;
	ec.i = t->event_at;
	return scan_event(p, &ec, out) != 0 ? 1 : 0;
}

/* A KvRecorder line: {"timestamp": ms, "event": RouterEvent}. */
static int
build_recorded(struct kvp_rin_parser *p, struct kvp_jscan *c,
               const struct top *t, struct kvp_rin *out)
{
	struct kvp_jscan ec = *c;
	struct top in;

	if (t->seen != ((1u << K_TIMESTAMP) | (1u << K_EVENT)))
		return 1;
	memset(&in, 0, sizeof in);
	ec.i = t->event_at;
	if (scan_object(p, &ec, &in) != 0 || !HAS(&in, K_EVENT) ||
	    build_event(p, &ec, &in, out) != 0)
		return 1;
	out->has_ts = 1;
	out->ts_ms = t->ts;
	return 0;
}

int
kvp_rin_scan(struct kvp_rin_parser *p, const char *line, size_t len,
             uintmax_t lineno, struct kvp_rin *out)
{
	struct kvp_jscan c;
	struct top t;

	memset(&t, 0, sizeof t);
	memset(out, 0, sizeof *out);
	kvp_jscan_init(&c, line, len);
	kvp_jscan_ws(&c);
	if (scan_object(p, &c, &t) != 0 || kvp_jscan_end(&c) != 0)
		return 1;
	if (!p->mooncake && HAS(&t, K_EVENT) && !HAS(&t, K_WORKER_ID))
		return build_recorded(p, &c, &t, out);
	if (!p->mooncake && HAS(&t, K_EVENT))
		return build_event(p, &c, &t, out);
	if ((t.seen & ~REQUEST_KEYS) != 0)
		return 1;
	return build_request(p, &c, &t, lineno, out);
}
