/* SPDX-License-Identifier: MIT */
/*
 * decode_out.c — kv-decode's output records and the JSON rendering of
 * msgpack values; see decode_out.h for the contract.
 */
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/util.h"
#include "events/decode_out.h"
#include "events/events_internal.h"
#include "events/wire.h"

/* ---- records ---------------------------------------------------------- */

static void
kv_strn(struct kvp_jw *jw, const char *key, const char *s, size_t len)
{
	kvp_jw_key(jw, key);
	kvp_jw_strn(jw, s, len);
}

static void
kv_seq(struct kvp_jw *jw, const struct kvp_dout_batch *bc)
{
	if (bc->has_seq)
		kvp_jw_kv_hash(jw, "seq", bc->seq);
	else
		kvp_jw_kv_null(jw, "seq");
}

static void
kv_rank(struct kvp_jw *jw, const char *key, int has, int32_t rank)
{
	if (has)
		kvp_jw_kv_i64(jw, key, rank);
	else
		kvp_jw_kv_null(jw, key);
}

void
kvp_dout_error(struct kvp_dout *c, const struct kvp_dout_batch *bc,
               const char *stage, int has_idx, size_t idx, const char *msg)
{
	struct kvp_jw *jw = &c->jw;

	kvp_jw_obj_begin(jw);
	kvp_jw_kv_str(jw, "rec", "error");
	kv_seq(jw, bc);
	kvp_jw_kv_str(jw, "stage", stage);
	if (has_idx)
		kvp_jw_kv_u64(jw, "idx", idx);
	else
		kvp_jw_kv_null(jw, "idx");
	kvp_jw_kv_str(jw, "msg", msg);
	kvp_jw_obj_end(jw);
	kvp_jw_end_record(jw);
}

static void
rstr(struct kvp_jw *jw, const struct kvp_wire_str *s)
{
	if (s->present)
		kvp_jw_strn(jw, s->p, s->len);
	else
		kvp_jw_null(jw);
}

static void
write_ts(struct kvp_jw *jw, const struct kvp_wire_batch *b)
{
	if (b->ts_kind == KVP_WIRE_TS_UINT)
		kvp_jw_u64(jw, b->ts_u);
	else if (b->ts_kind == KVP_WIRE_TS_INT)
		kvp_jw_i64(jw, b->ts_i);
	else
		kvp_jw_double(jw, b->ts);
}

/* Moves what the render-only writer t holds into *dst and frees t. */
static int
take_rendered(struct kvp_jw *t, char **dst, size_t *len, size_t *cap)
{
	size_t n;
	const char *p = kvp_jw_pending(t, &n);
	int st = -1;

	if (!t->failed && kvp_grow(dst, cap, n + 1, 1) == 0) {
		memcpy(*dst, p, n);
		*len = n;
		st = 0;
	}
	kvp_jw_fini(t);
	return st;
}

/* The capture line's extra members, an object rendered by the reader
 * (nothing if it has none): x_capture when it is at most max bytes, else
 * only its size, x_capture_bytes (the batch record carries it whole). */
static void
capture_member(struct kvp_jw *jw, const struct kvp_dout_batch *bc, size_t max)
{
	if (bc->capture == NULL)
		return;
	if (bc->capture_len <= max) {
		kvp_jw_key(jw, "x_capture");
		kvp_jw_raw(jw, bc->capture, bc->capture_len);
	} else {
		kvp_jw_kv_u64(jw, "x_capture_bytes", bc->capture_len);
	}
}

/* Renders the parts shared by every event record of the batch. */
int
kvp_dout_batch_parts(struct kvp_dout *c, const struct kvp_dout_batch *bc,
                     const struct kvp_wire_batch *b, int has_rank, int32_t rank)
{
	struct kvp_jw t;

	kvp_jw_init(&t, NULL, c->jw.hash_strings, 0);
	kvp_jw_obj_begin(&t);
	kvp_jw_kv_str(&t, "rec", "event");
	kv_seq(&t, bc);
	kv_strn(&t, "topic", bc->topic, bc->topic_len);
	kvp_jw_kv_str(&t, "source", bc->source);
	kvp_jw_key(&t, "ts");
	write_ts(&t, b);
	kv_rank(&t, "dp_rank", has_rank, rank);
	kvp_jw_kv_hash(&t, "worker_id", bc->worker);
	if (take_rendered(&t, &c->prefix, &c->prefix_len, &c->prefix_cap) != 0)
		return -1;

	/* Suffix: rendered as an object "{..." whose '{' becomes the member
	 * separator. */
	kvp_jw_init(&t, NULL, c->jw.hash_strings, 0);
	kvp_jw_obj_begin(&t);
	if (b->extra > 0)
		kvp_jw_kv_u64(&t, "x_envelope_extra", b->extra);
	capture_member(&t, bc, KVP_DOUT_MAX_CAPTURE);
	if (take_rendered(&t, &c->suffix, &c->suffix_len, &c->suffix_cap) != 0)
		return -1;
	if (c->suffix_len <= 1)
		c->suffix_len = 0;
	else
		c->suffix[0] = ',';
	return 0;
}

static const char *
repr_name(unsigned r)
{
	switch (r) {
	case 0:
		return NULL;
	case KVP_REPR_UINT:
		return "uint";
	case KVP_REPR_INT:
	case KVP_REPR_INT | KVP_REPR_UINT:
		return "int";
	case KVP_REPR_BIN:
		return "bin";
	default:
		return "mixed";
	}
}

static void
write_extras(struct kvp_jw *jw, const struct kvp_wire_event *ev)
{
	size_t i;

	if (ev->block_mm_infos != NULL) {
		kvp_jw_next_key(jw, "block_mm_infos");
		kvp_dout_value(jw, ev->block_mm_infos);
	}
	if (ev->ownership.present) {
		kvp_jw_next_key(jw, "ownership");
		rstr(jw, &ev->ownership);
	}
	if (ev->sha256_hashes != NULL) {
		kvp_jw_next_key(jw, "block_hashes_sha256");
		kvp_dout_value(jw, ev->sha256_hashes);
	}
	if (ev->sha256_parent.present) {
		kvp_jw_next_key(jw, "parent_block_hash_sha256");
		rstr(jw, &ev->sha256_parent);
	}
	if (ev->offsets != NULL) {
		kvp_jw_next_key(jw, "block_offsets");
		kvp_jw_u64_array(jw, ev->offsets, ev->n_offsets);
	}
	if (ev->raw != NULL) {
		kvp_jw_next_key(jw, "x_event");
		kvp_dout_value(jw, ev->raw);
	}
	if (ev->surplus > 0) {
		kvp_jw_next_key(jw, "x_surplus");
		kvp_jw_u64(jw, ev->surplus);
	}
	if (ev->n_unknown > 0) {
		kvp_jw_next_key(jw, "x_unknown_keys");
		kvp_jw_arr_begin(jw);
		for (i = 0; i < ev->n_unknown; i++) {
			const struct kvp_wire_str *k = &ev->unknown[i];

			if (k->present == 2) {
				char tmp[256];
				int n = snprintf(
				    tmp, sizeof tmp, "metadata.%.*s",
				    k->len > 200 ? 200 : (int)k->len, k->p);

				kvp_jw_strn(jw, tmp, (size_t)n);
			} else {
				kvp_jw_strn(jw, k->p, k->len);
			}
		}
		kvp_jw_arr_end(jw);
	}
	if (ev->third_party != 0) {
		kvp_jw_next_key(jw, "x_third_party");
		kvp_jw_arr_begin(jw);
		for (i = 0; i < KVP_TP_COUNT; i++)
			if (ev->third_party & 1u << i)
				kvp_jw_str(jw, kvp_wire_third_name((int)i));
		kvp_jw_arr_end(jw);
	}
}

/* ---- event records ---------------------------------------------------------
 *
 * An event record is rendered straight into the writer's record buffer:
 * keys as literals, values by the plain copies below. Values the plain
 * copy cannot write byte-identically to the kvp_jw writer (strings that
 * need escaping, opaque msgpack values, the rare extras) go through
 * kvp_jw, into the same buffer.
 */
static inline __attribute__((always_inline)) void
rec_put(struct kvp_dout *c, const char *s, size_t n)
{
	char *p = kvp_jw_reserve(&c->jw, n);

	if (p != NULL) {
		memcpy(p, s, n);
		kvp_jw_commit(&c->jw, n);
	}
}

#define REC_LIT(c, lit) rec_put((c), (lit), sizeof(lit) - 1)

static void
rec_u64(struct kvp_dout *c, uint64_t v)
{
	char *p = kvp_jw_reserve(&c->jw, KVP_U64_DEC_ROOM);

	kvp_jw_commit(&c->jw, kvp_u64_dec(p, v));
}

/* A hash: a decimal string with --hash-strings. */
static void
rec_hash(struct kvp_dout *c, uint64_t v)
{
	if (c->jw.hash_strings) {
		char *p = kvp_jw_reserve(&c->jw, KVP_U64_DEC_ROOM + 2);
		size_t n = kvp_u64_dec(p + 1, v);

		p[0] = '"';
		p[n + 1] = '"';
		kvp_jw_commit(&c->jw, n + 2);
	} else {
		rec_u64(c, v);
	}
}

static void
rec_u64s(struct kvp_dout *c, const uint64_t *v, size_t n, int hashes)
{
	size_t i;

	REC_LIT(c, "[");
	for (i = 0; i < n; i++) {
		if (i > 0) {
			*kvp_jw_reserve(&c->jw, 1) = ',';
			kvp_jw_commit(&c->jw, 1);
		}
		if (hashes)
			rec_hash(c, v[i]);
		else
			rec_u64(c, v[i]);
	}
	REC_LIT(c, "]");
}

static void
rec_opt_u32(struct kvp_dout *c, int has, uint32_t v)
{
	if (has)
		rec_u64(c, v);
	else
		REC_LIT(c, "null");
}

/* A string copied as is when put_escaped() would copy it as is: bytes
 * 0x20..0x7f but '"' and '\\'. */
static void
rec_str(struct kvp_dout *c, const struct kvp_wire_str *s)
{
	size_t i;
	char *p;

	if (!s->present) {
		REC_LIT(c, "null");
		return;
	}
	for (i = 0; i < s->len; i++) {
		unsigned char ch = (unsigned char)s->p[i];

		if (ch < 0x20 || ch >= 0x80 || ch == '"' || ch == '\\')
			break;
	}
	p = i < s->len ? NULL : kvp_jw_reserve(&c->jw, s->len + 2);
	if (p == NULL) {
		kvp_jw_raw_key(&c->jw, "", 0);
		kvp_jw_strn(&c->jw, s->p, s->len);
		return;
	}
	p[0] = '"';
	memcpy(p + 1, s->p, s->len);
	p[s->len + 1] = '"';
	kvp_jw_commit(&c->jw, s->len + 2);
}

static void
rec_value(struct kvp_dout *c, kvp_wire_value v)
{
	if (v == NULL) {
		REC_LIT(c, "null");
		return;
	}
	kvp_jw_raw_key(&c->jw, "", 0);
	kvp_dout_value(&c->jw, v);
}

static void
rec_repr(struct kvp_dout *c, unsigned r)
{
	const char *s = repr_name(r);

	if (s == NULL) {
		REC_LIT(c, "null");
		return;
	}
	rec_put(c, "\"", 1);
	rec_put(c, s, strlen(s));
	rec_put(c, "\"", 1);
}

static void
rec_lora_id(struct kvp_dout *c, const struct kvp_wire_event *ev)
{
	if (!ev->has_lora_id) {
		REC_LIT(c, "null");
	} else if (ev->lora_id < 0) {
		REC_LIT(c, "-");
		rec_u64(c, (uint64_t)0 - (uint64_t)ev->lora_id);
	} else {
		rec_u64(c, (uint64_t)ev->lora_id);
	}
}

static void
rec_stored(struct kvp_dout *c, const struct kvp_wire_event *ev)
{
	REC_LIT(c, "\"BlockStored\",\"block_hashes\":");
	rec_u64s(c, ev->hashes, ev->n_hashes, 1);
	REC_LIT(c, ",\"parent_block_hash\":");
	if (ev->has_parent)
		rec_hash(c, ev->parent);
	else
		REC_LIT(c, "null");
	REC_LIT(c, ",\"token_ids\":");
	rec_u64s(c, ev->tokens, ev->n_tokens, 0);
	if (ev->bigram)
		REC_LIT(c, ",\"token_layout\":\"bigram\",\"wide_tokens\":");
	else
		REC_LIT(c, ",\"token_layout\":\"flat\",\"wide_tokens\":");
	rec_u64(c, ev->wide_tokens);
	REC_LIT(c, ",\"block_size\":");
	rec_opt_u32(c, ev->has_block_size, ev->block_size);
	REC_LIT(c, ",\"lora_id\":");
	rec_lora_id(c, ev);
	REC_LIT(c, ",\"lora_name\":");
	rec_str(c, &ev->lora_name);
	REC_LIT(c, ",\"medium\":");
	rec_str(c, &ev->medium);
	REC_LIT(c, ",\"cache_salt\":");
	rec_str(c, &ev->cache_salt);
	REC_LIT(c, ",\"session_id\":");
	rec_str(c, &ev->session_id);
	REC_LIT(c, ",\"extra_keys\":");
	rec_value(c, ev->extra_keys);
	REC_LIT(c, ",\"group_idx\":");
	rec_opt_u32(c, ev->has_group_idx, ev->group_idx);
	REC_LIT(c, ",\"kv_cache_spec_kind\":");
	rec_str(c, &ev->kind);
	REC_LIT(c, ",\"kv_cache_spec_sliding_window\":");
	rec_opt_u32(c, ev->has_sliding_window, ev->sliding_window);
	REC_LIT(c, ",\"locality\":");
	rec_str(c, &ev->locality);
	REC_LIT(c, ",\"hash_repr\":");
	rec_repr(c, ev->hash_repr);
	REC_LIT(c, ",\"source_kind\":");
	rec_str(c, &ev->source_kind);
}

/* BlockRemoved, and BlockInactive with the same keys. */
static void
rec_removed(struct kvp_dout *c, const struct kvp_wire_event *ev)
{
	if (ev->type == KVP_WIRE_INACTIVE)
		REC_LIT(c, "\"BlockInactive\",\"block_hashes\":");
	else
		REC_LIT(c, "\"BlockRemoved\",\"block_hashes\":");
	rec_u64s(c, ev->hashes, ev->n_hashes, 1);
	REC_LIT(c, ",\"medium\":");
	rec_str(c, &ev->medium);
	REC_LIT(c, ",\"group_idx\":");
	rec_opt_u32(c, ev->has_group_idx, ev->group_idx);
	REC_LIT(c, ",\"kv_cache_spec_kind\":");
	rec_str(c, &ev->kind);
	REC_LIT(c, ",\"locality\":");
	rec_str(c, &ev->locality);
	REC_LIT(c, ",\"hash_repr\":");
	rec_repr(c, ev->hash_repr);
	REC_LIT(c, ",\"kv_cache_spec_sliding_window\":");
	rec_opt_u32(c, ev->has_sliding_window, ev->sliding_window);
	REC_LIT(c, ",\"source_kind\":");
	rec_str(c, &ev->source_kind);
}

/*
 * One event record (docs/spec/kv-events.md §6.3): the per-batch prefix,
 * then the keys as literals and the values.
 */
void
kvp_dout_event(struct kvp_dout *c, size_t idx, const struct kvp_wire_event *ev)
{
	rec_put(c, c->prefix, c->prefix_len);
	REC_LIT(c, ",\"idx\":");
	rec_u64(c, idx);
	if (ev->enc == KVP_WIRE_MAP)
		REC_LIT(c, ",\"enc\":\"map\",\"type\":");
	else
		REC_LIT(c, ",\"enc\":\"array\",\"type\":");
	switch (ev->type) {
	case KVP_WIRE_STORED:
		rec_stored(c, ev);
		break;
	case KVP_WIRE_REMOVED:
	case KVP_WIRE_INACTIVE:
		rec_removed(c, ev);
		break;
	case KVP_WIRE_THIRD_PARTY:
		REC_LIT(c, "\"");
		rec_put(c, ev->tag.p, ev->tag.len); /* a known tag: plain */
		REC_LIT(c, "\"");
		break;
	case KVP_WIRE_CLEARED:
		REC_LIT(c, "\"AllBlocksCleared\",\"source_kind\":");
		rec_str(c, &ev->source_kind);
		break;
	case KVP_WIRE_IGNORED:
		REC_LIT(c, "\"Ignored\"");
		break;
	}
	if (ev->block_mm_infos != NULL || ev->ownership.present ||
	    ev->sha256_hashes != NULL || ev->sha256_parent.present ||
	    ev->offsets != NULL || ev->raw != NULL || ev->surplus > 0 ||
	    ev->n_unknown > 0 || ev->third_party != 0)
		write_extras(&c->jw, ev);
	rec_put(c, c->suffix, c->suffix_len);
	REC_LIT(c, "}");
	kvp_jw_end_record(&c->jw);
}

void
kvp_dout_batch(struct kvp_dout *c, const struct kvp_dout_batch *bc,
               const struct kvp_wire_batch *b, int has_rank, int32_t rank)
{
	struct kvp_jw *jw = &c->jw;

	kvp_jw_obj_begin(jw);
	kvp_jw_kv_str(jw, "rec", "batch");
	kv_seq(jw, bc);
	kvp_jw_key(jw, "ts");
	write_ts(jw, b);
	kv_rank(jw, "dp_rank", has_rank, rank);
	kvp_jw_kv_u64(jw, "n_events", b->n_events);
	kvp_jw_kv_u64(jw, "bytes", b->bytes);
	kv_strn(jw, "topic", bc->topic, bc->topic_len);
	kvp_jw_kv_hash(jw, "worker_id", bc->worker);
	kvp_jw_kv_str(jw, "enc", b->enc == KVP_WIRE_MAP ? "map" : "array");
	if (b->extra > 0)
		kvp_jw_kv_u64(jw, "x_envelope_extra", b->extra);
	capture_member(jw, bc, SIZE_MAX);
	kvp_jw_obj_end(jw);
	kvp_jw_end_record(jw);
}
static void
write_seq_rec(struct kvp_dout *c, const char *kind,
              const struct kvp_seq_stream *s, uint64_t expected, uint64_t got)
{
	struct kvp_jw *jw = &c->jw;
	char name[256];
	char rank[16] = "null";
	int n;

	if (s->has_rank)
		snprintf(rank, sizeof rank, "%d", (int)s->rank);
	n = snprintf(name, sizeof name, "%.*s:%s:%llu",
	             s->topic_len > 200 ? 200 : (int)s->topic_len, s->topic,
	             rank, (unsigned long long)s->worker);
	kvp_jw_obj_begin(jw);
	kvp_jw_kv_str(jw, "rec", kind);
	kv_strn(jw, "stream", name, (size_t)n);
	kvp_jw_kv_hash(jw, "expected", expected);
	kvp_jw_kv_hash(jw, "got", got);
	kv_strn(jw, "topic", s->topic, s->topic_len);
	kv_rank(jw, "dp_rank", s->has_rank, s->rank);
	kvp_jw_kv_hash(jw, "worker_id", s->worker);
	kvp_jw_obj_end(jw);
	kvp_jw_end_record(jw);
}

void
kvp_dout_seq(struct kvp_dout *c, const struct kvp_seq_result *r)
{
	if (r->verdict == KVP_SEQ_GAP)
		write_seq_rec(c, "gap", r->stream, r->expected, r->got);
	else if (r->verdict == KVP_SEQ_STALE)
		write_seq_rec(c, "stale", r->stream, r->expected, r->got);
	else if (r->verdict == KVP_SEQ_RESTART)
		write_seq_rec(c, "restart", r->stream, r->expected, r->got);
}

void
kvp_dout_init(struct kvp_dout *c, FILE *out, int hash_strings, int unbuffered)
{
	memset(c, 0, sizeof *c);
	c->out = out;
	kvp_jw_init(&c->jw, out, hash_strings, unbuffered);
}

void
kvp_dout_fini(struct kvp_dout *c)
{
	kvp_jw_fini(&c->jw);
	free(c->prefix);
	free(c->suffix);
	memset(c, 0, sizeof *c);
}

/* ---- msgpack values as JSON ---------------------------------------------- */

static void
write_hex(struct kvp_jw *jw, const char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char small[257] = "", *buf = small;
	size_t i;

	if (2 * n + 1 > sizeof small) {
		buf = calloc(1, 2 * n + 1);
		if (buf == NULL) {
			kvp_jw_null(jw);
			return;
		}
	}
	for (i = 0; i < n; i++) {
		buf[2 * i] = hex[(unsigned char)p[i] >> 4];
		buf[2 * i + 1] = hex[(unsigned char)p[i] & 15];
	}
	kvp_jw_strn(jw, buf, 2 * n);
	if (buf != small)
		free(buf);
}

static const uint8_t *write_mv(struct kvp_jw *jw, const uint8_t *p);

/* A map key that is not a string: its JSON text, as a string. */
static void
write_key(struct kvp_jw *jw, const struct mp_val *k)
{
	char kb[64];

	if (k->type == MP_STR) {
		kvp_jw_keyn(jw, k->ptr, k->size);
		return;
	}
	if (k->type == MP_UINT)
		snprintf(kb, sizeof kb, "%llu", (unsigned long long)k->v.u);
	else if (k->type == MP_INT)
		snprintf(kb, sizeof kb, "%lld", (long long)k->v.i);
	else
		snprintf(kb, sizeof kb, "<%s>", mp_tname(k));
	kvp_jw_key(jw, kb);
}

/* The elements of the array or map whose header is v; p is the first.
 * Returns the byte after the last. */
static const uint8_t *
write_kids(struct kvp_jw *jw, const struct mp_val *v, const uint8_t *p)
{
	uint32_t i;

	if (v->type == MP_ARRAY) {
		kvp_jw_arr_begin(jw);
		for (i = 0; i < v->v.n; i++)
			p = write_mv(jw, p);
		kvp_jw_arr_end(jw);
		return p;
	}
	kvp_jw_obj_begin(jw);
	for (i = 0; i < v->v.n; i++) {
		struct mp_val k;

		p = mp_next(p, &k);
		write_key(jw, &k);
		p = write_mv(jw, p);
	}
	kvp_jw_obj_end(jw);
	return p;
}

/* Writes the value at p; returns the byte after it. */
static const uint8_t *
write_mv(struct kvp_jw *jw, const uint8_t *p)
{
	struct mp_val v;

	p = mp_head(p, &v);
	switch (v.type) {
	case MP_NIL:
		kvp_jw_null(jw);
		break;
	case MP_BOOL:
		kvp_jw_bool(jw, v.v.b);
		break;
	case MP_UINT:
		kvp_jw_u64(jw, v.v.u);
		break;
	case MP_INT:
		kvp_jw_i64(jw, v.v.i);
		break;
	case MP_FLOAT:
		kvp_jw_double(jw, v.v.f);
		break;
	case MP_STR:
		kvp_jw_strn(jw, v.ptr, v.size);
		break;
	case MP_BIN:
		kvp_jw_obj_begin(jw);
		kvp_jw_key(jw, "bin");
		write_hex(jw, v.ptr, v.size);
		kvp_jw_obj_end(jw);
		break;
	case MP_EXT:
		kvp_jw_obj_begin(jw);
		kvp_jw_kv_i64(jw, "ext", v.ext_type);
		kvp_jw_key(jw, "hex");
		write_hex(jw, v.ptr, v.size);
		kvp_jw_obj_end(jw);
		break;
	case MP_ARRAY:
	case MP_MAP:
		p = write_kids(jw, &v, p);
		break;
	}
	return p;
}

void
kvp_dout_value(struct kvp_jw *jw, kvp_wire_value v)
{
	if (v == NULL)
		kvp_jw_null(jw);
	else
		write_mv(jw, v);
}
