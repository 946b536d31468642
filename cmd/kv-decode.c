/* SPDX-License-Identifier: MIT */
/*
 * kv-decode — captured KV-event batches (capture JSONL, frames, raw msgpack)
 * to one NDJSON record per event. See kv-decode(1), kvpipe-records(5).
 */
#define _GNU_SOURCE /* memmem */
#include <json.h>

#include <argp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "cli.h"
#include "diag.h"
#include "kvpipe.h"
#include "ndjson.h"
#include "wire.h"

enum in_format { IN_AUTO, IN_JSONL, IN_FRAMES, IN_RAW };

enum {
	OPT_IN = 0x2000,
	OPT_WORKER_ID,
	OPT_DP_RANK,
	OPT_BATCHES,
	OPT_STRICT,
	OPT_DROP_STALE,
	OPT_GAP_AT_START,
};

#define MAX_FRAMES 64

struct opts {
	struct kvp_cli cli;
	enum in_format in;
	uint64_t *worker_ids;
	size_t n_worker_ids;
	int has_dp_rank;
	int32_t dp_rank;
	int batches, strict, drop_stale, gap_at_start;
	char **files;
	size_t n_files;
};

struct stream {
	char *topic;
	size_t topic_len;
	int has_rank;
	int32_t rank;
	uint64_t worker;
	uint64_t watermark;
};

/* Everything known about the batch being decoded. */
struct bctx {
	const char *where; /* "FILE:LINE" or "FILE:@OFFSET" for messages */
	int has_seq;
	uint64_t seq;
	const char *topic;
	size_t topic_len;
	const char *source; /* NULL: null */
	uint64_t worker;
	int track;                   /* seq gap/stale tracking applies */
	struct json_object *capture; /* capture line (for x_capture) */
};

struct ctx {
	const struct opts *o;
	FILE *out;
	struct kvp_jw jw;
	struct kvp_wire *w;
	struct stream *streams;
	size_t n_streams, cap_streams;
	int status;
	int stop; /* a bad record without -k: stop after this batch */
	unsigned char *buf;
	char *rec; /* event record being assembled (REC_CAP bytes) */
	size_t rec_len;
	size_t buf_cap;
	/* Per-batch parts of every event record, rendered once per batch:
	 * prefix = {"rec":"event",...,"worker_id":W  and suffix = the
	 * x_envelope_extra / x_capture members (",..." or empty). */
	FILE *mem;
	char *mem_buf;
	size_t mem_size;
	char *prefix, *suffix;
	size_t prefix_len, suffix_len, prefix_cap, suffix_cap;
};

static const char *known_capture_keys[] = {
    "seq", "topic", "source", "payload_len", "payload_b64", "worker_id", NULL};

/* ---- records ----------------------------------------------------------------
 */

static void
kv_strn(struct kvp_jw *jw, const char *key, const char *s, size_t len)
{
	kvp_jw_key(jw, key);
	kvp_jw_strn(jw, s, len);
}

static void
kv_seq(struct kvp_jw *jw, const struct bctx *bc)
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

static void
write_error(struct ctx *c, const struct bctx *bc, const char *stage,
            int has_idx, size_t idx, const char *msg)
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

/* A bad record: an error record on stdout, a message on stderr, exit 1. */
static void
bad_col(struct ctx *c, const struct bctx *bc, const char *stage, int has_idx,
        size_t idx, long col, const char *msg)
{
	char pre[64] = "";

	write_error(c, bc, stage, has_idx, idx, msg);
	if (bc->has_seq && has_idx)
		snprintf(pre, sizeof pre,
		         "seq %llu, event %zu: ", (unsigned long long)bc->seq,
		         idx);
	else if (bc->has_seq)
		snprintf(pre, sizeof pre,
		         "seq %llu: ", (unsigned long long)bc->seq);
	kvp_report(bc->where, 0, col, "%s%s", pre, msg);
	c->status = kvp_worst(c->status, KVP_EXIT_DATA);
	if (!c->o->cli.keep_going)
		c->stop = 1;
}

/* Raw member key: the literal starts with ',' (never the first member). */
#define RKEY(jw, lit) rkey((jw), (lit), sizeof(lit) - 1)

static void
bad(struct ctx *c, const struct bctx *bc, const char *stage, int has_idx,
    size_t idx, const char *msg)
{
	bad_col(c, bc, stage, has_idx, idx, 0, msg);
}

static void
rkey(struct kvp_jw *jw, const char *lit, size_t len)
{
	fwrite_unlocked(lit, 1, len, jw->f);
	jw->after_key = 1; /* the next kvp_jw_* value writes no separator */
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

/* Copies what was written to c->mem since the last rewind into *dst. */
static int
take_mem(struct ctx *c, char **dst, size_t *len, size_t *cap)
{
	off_t n;

	if (fflush(c->mem) != 0 || (n = ftello(c->mem)) < 0)
		return -1;
	if ((size_t)n + 1 > *cap) {
		void *p = realloc(*dst, (size_t)n + 1);

		if (p == NULL)
			return -1;
		*dst = p;
		*cap = (size_t)n + 1;
	}
	memcpy(*dst, c->mem_buf, (size_t)n);
	*len = (size_t)n;
	return fseeko(c->mem, 0, SEEK_SET);
}

/* Renders the parts shared by every event record of the batch. */
static int
render_batch_parts(struct ctx *c, const struct bctx *bc,
                   const struct kvp_wire_batch *b, int has_rank, int32_t rank)
{
	struct kvp_jw t;

	kvp_jw_init(&t, c->mem, c->jw.hash_strings, 0);
	kvp_jw_obj_begin(&t);
	kvp_jw_kv_str(&t, "rec", "event");
	kv_seq(&t, bc);
	kv_strn(&t, "topic", bc->topic, bc->topic_len);
	kvp_jw_kv_str(&t, "source", bc->source);
	kvp_jw_key(&t, "ts");
	write_ts(&t, b);
	kv_rank(&t, "dp_rank", has_rank, rank);
	kvp_jw_kv_hash(&t, "worker_id", bc->worker);
	if (take_mem(c, &c->prefix, &c->prefix_len, &c->prefix_cap) != 0)
		return -1;

	/* Suffix: rendered as an object "{..." whose '{' becomes the member
	 * separator. */
	kvp_jw_init(&t, c->mem, c->jw.hash_strings, 0);
	kvp_jw_obj_begin(&t);
	if (b->extra > 0)
		kvp_jw_kv_u64(&t, "x_envelope_extra", b->extra);
	if (bc->capture != NULL) {
		int any = 0;

		json_object_object_foreach(bc->capture, k, v)
		{
			const char **kk;

			for (kk = known_capture_keys; *kk; kk++)
				if (strcmp(*kk, k) == 0)
					break;
			if (*kk != NULL)
				continue;
			if (!any) {
				kvp_jw_key(&t, "x_capture");
				kvp_jw_obj_begin(&t);
				any = 1;
			}
			kvp_jw_key(&t, k);
			kvp_jw_json(&t, v);
		}
		if (any)
			kvp_jw_obj_end(&t);
	}
	if (take_mem(c, &c->suffix, &c->suffix_len, &c->suffix_cap) != 0)
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
		RKEY(jw, ",\"block_mm_infos\":");
		kvp_wire_write_value(jw, ev->block_mm_infos);
	}
	if (ev->ownership.present) {
		RKEY(jw, ",\"ownership\":");
		rstr(jw, &ev->ownership);
	}
	if (ev->surplus > 0) {
		RKEY(jw, ",\"x_surplus\":");
		kvp_jw_u64(jw, ev->surplus);
	}
	if (ev->n_unknown > 0) {
		RKEY(jw, ",\"x_unknown_keys\":");
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
}

/* ---- event records ---------------------------------------------------------
 *
 * An event record is assembled in c->rec and written with one fwrite (the
 * per-field stdio calls were a tenth of the run time). Values the plain
 * copy cannot write byte-identically to the kvp_jw writer (strings that
 * need escaping, opaque msgpack values, the rare extras) flush the buffer
 * and go through kvp_jw.
 */
#define REC_CAP 65536

static void
rec_flush(struct ctx *c)
{
	if (c->rec_len > 0)
		fwrite_unlocked(c->rec, 1, c->rec_len, c->out);
	c->rec_len = 0;
}

/* Room for n <= REC_CAP bytes at the end of the buffer. */
static char *
rec_need(struct ctx *c, size_t n)
{
	if (c->rec_len + n > REC_CAP)
		rec_flush(c);
	return c->rec + c->rec_len;
}

static void
rec_put(struct ctx *c, const char *s, size_t n)
{
	if (n > REC_CAP / 2) {
		rec_flush(c);
		fwrite_unlocked(s, 1, n, c->out);
		return;
	}
	memcpy(rec_need(c, n), s, n);
	c->rec_len += n;
}

#define REC_LIT(c, lit) rec_put((c), (lit), sizeof(lit) - 1)

static void
rec_u64(struct ctx *c, uint64_t v)
{
	char *p = rec_need(c, KVP_U64_DEC_ROOM);

	c->rec_len += kvp_u64_dec(p, v);
}

/* A hash: a decimal string with --hash-strings. */
static void
rec_hash(struct ctx *c, uint64_t v)
{
	if (c->jw.hash_strings) {
		char *p = rec_need(c, KVP_U64_DEC_ROOM + 2);
		size_t n = kvp_u64_dec(p + 1, v);

		p[0] = '"';
		p[n + 1] = '"';
		c->rec_len += n + 2;
	} else {
		rec_u64(c, v);
	}
}

static void
rec_u64s(struct ctx *c, const uint64_t *v, size_t n, int hashes)
{
	size_t i;

	REC_LIT(c, "[");
	for (i = 0; i < n; i++) {
		if (i > 0) {
			*rec_need(c, 1) = ',';
			c->rec_len++;
		}
		if (hashes)
			rec_hash(c, v[i]);
		else
			rec_u64(c, v[i]);
	}
	REC_LIT(c, "]");
}

static void
rec_opt_u32(struct ctx *c, int has, uint32_t v)
{
	if (has)
		rec_u64(c, v);
	else
		REC_LIT(c, "null");
}

/* A string copied as is when put_escaped() would copy it as is: bytes
 * 0x20..0x7f but '"' and '\\'. */
static void
rec_str(struct ctx *c, const struct kvp_wire_str *s)
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
	if (i < s->len || s->len > REC_CAP / 2) {
		rec_flush(c);
		c->jw.after_key = 1;
		kvp_jw_strn(&c->jw, s->p, s->len);
		return;
	}
	p = rec_need(c, s->len + 2);
	p[0] = '"';
	memcpy(p + 1, s->p, s->len);
	p[s->len + 1] = '"';
	c->rec_len += s->len + 2;
}

static void
rec_value(struct ctx *c, kvp_wire_value v)
{
	if (v == NULL) {
		REC_LIT(c, "null");
		return;
	}
	rec_flush(c);
	c->jw.after_key = 1;
	kvp_wire_write_value(&c->jw, v);
}

static void
rec_repr(struct ctx *c, unsigned r)
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

/*
 * One event record (§6.3): the per-batch prefix, then the keys as
 * literals and the values.
 */
static void
write_event(struct ctx *c, size_t idx, const struct kvp_wire_event *ev)
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
			REC_LIT(
			    c, ",\"token_layout\":\"bigram\",\"wide_tokens\":");
		else
			REC_LIT(c,
			        ",\"token_layout\":\"flat\",\"wide_tokens\":");
		rec_u64(c, ev->wide_tokens);
		REC_LIT(c, ",\"block_size\":");
		rec_opt_u32(c, ev->has_block_size, ev->block_size);
		REC_LIT(c, ",\"lora_id\":");
		if (!ev->has_lora_id) {
			REC_LIT(c, "null");
		} else if (ev->lora_id < 0) {
			REC_LIT(c, "-");
			rec_u64(c, (uint64_t)0 - (uint64_t)ev->lora_id);
		} else {
			rec_u64(c, (uint64_t)ev->lora_id);
		}
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
		break;
	case KVP_WIRE_REMOVED:
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
	    ev->surplus > 0 || ev->n_unknown > 0) {
		rec_flush(c);
		write_extras(&c->jw, ev);
	}
	rec_put(c, c->suffix, c->suffix_len);
	REC_LIT(c, "}");
	rec_flush(c);
	kvp_jw_end_record(&c->jw);
}

static void
write_batch(struct ctx *c, const struct bctx *bc,
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
	kvp_jw_obj_end(jw);
	kvp_jw_end_record(jw);
}

/* ---- seq tracking
 * ------------------------------------------------------------ */

static struct stream *
find_stream(struct ctx *c, const struct bctx *bc, int has_rank, int32_t rank,
            int *created)
{
	struct stream *s;
	size_t i;

	*created = 0;
	for (i = 0; i < c->n_streams; i++) {
		s = &c->streams[i];
		if (s->worker == bc->worker && s->has_rank == has_rank &&
		    (!has_rank || s->rank == rank) &&
		    s->topic_len == bc->topic_len &&
		    memcmp(s->topic, bc->topic, bc->topic_len) == 0)
			return s;
	}
	if (c->n_streams == c->cap_streams) {
		size_t n = c->cap_streams ? 2 * c->cap_streams : 8;
		void *p = realloc(c->streams, n * sizeof *c->streams);

		if (p == NULL)
			return NULL;
		c->streams = p;
		c->cap_streams = n;
	}
	s = &c->streams[c->n_streams];
	s->topic = malloc(bc->topic_len + 1);
	if (s->topic == NULL)
		return NULL;
	memcpy(s->topic, bc->topic, bc->topic_len);
	s->topic[bc->topic_len] = '\0';
	s->topic_len = bc->topic_len;
	s->has_rank = has_rank;
	s->rank = rank;
	s->worker = bc->worker;
	s->watermark = 0;
	c->n_streams++;
	*created = 1;
	return s;
}

static void
write_seq_rec(struct ctx *c, const char *kind, const struct stream *s,
              uint64_t expected, uint64_t got)
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

/* Returns 1 when the batch is stale and --drop-stale says to skip it, -1 on
 * allocation failure. */
static int
track_seq(struct ctx *c, const struct bctx *bc, int has_rank, int32_t rank)
{
	int created;
	struct stream *s = find_stream(c, bc, has_rank, rank, &created);

	if (s == NULL)
		return -1;
	if (created) {
		if (c->o->gap_at_start && bc->seq > 0)
			write_seq_rec(c, "gap", s, 0, bc->seq);
		s->watermark = bc->seq;
		return 0;
	}
	if (bc->seq <= s->watermark) {
		write_seq_rec(c, "stale", s, s->watermark + 1, bc->seq);
		return c->o->drop_stale;
	}
	if (bc->seq != s->watermark + 1)
		write_seq_rec(c, "gap", s, s->watermark + 1, bc->seq);
	s->watermark = bc->seq;
	return 0;
}

/* ---- batches
 * ------------------------------------------------------------------ */

/* Decodes the batch loaded in c->w. Returns 0, or 2 on trouble. */
static int
decode_loaded(struct ctx *c, const struct bctx *bc, size_t bytes)
{
	struct kvp_wire_batch b = {0};
	struct kvp_wire_event ev;
	struct kvp_diag d = {{0}, 0};
	int has_rank;
	int32_t rank;
	size_t i;

	b.bytes = bytes;
	if (kvp_wire_envelope(c->w, c->o->strict, &b, &d) != 0) {
		bad(c, bc, "envelope", 0, 0, d.msg);
		return 0;
	}
	has_rank = b.has_rank || c->o->has_dp_rank;
	rank = b.has_rank ? b.rank : c->o->dp_rank;
	if (bc->track) {
		int rc = track_seq(c, bc, has_rank, rank);

		if (rc < 0) {
			kvp_warnx("out of memory");
			return 2;
		}
		if (rc > 0)
			return 0;
	}
	if (c->o->batches)
		write_batch(c, bc, &b, has_rank, rank);
	if (c->o->strict) {
		for (i = 0; i < b.n_events; i++) {
			if (kvp_wire_event(c->w, &b, i, &ev, &d) != 0) {
				char msg[320];

				snprintf(msg, sizeof msg,
				         "event %zu: %s; whole batch rejected "
				         "(--strict)",
				         i, d.msg);
				bad(c, bc, "batch", 1, i, msg);
				return 0;
			}
		}
	}
	if (b.n_events > 0 &&
	    render_batch_parts(c, bc, &b, has_rank, rank) != 0) {
		kvp_warn("memory stream");
		return 2;
	}
	for (i = 0; i < b.n_events; i++) {
		if (kvp_wire_event(c->w, &b, i, &ev, &d) != 0)
			bad(c, bc, "event", 1, i, d.msg);
		else
			write_event(c, i, &ev);
	}
	return 0;
}

static int
decode_payload(struct ctx *c, const struct bctx *bc, const void *buf,
               size_t len)
{
	struct kvp_diag d = {{0}, 0};

	if (kvp_wire_load(c->w, buf, len, &d) != 0) {
		bad(c, bc, "msgpack", 0, 0, d.msg);
		return 0;
	}
	return decode_loaded(c, bc, len);
}

/* ---- capture JSONL
 * -------------------------------------------------------------- */

static int
grow_buf(struct ctx *c, size_t need)
{
	void *p;

	if (need <= c->buf_cap)
		return 0;
	p = realloc(c->buf, need);
	if (p == NULL)
		return -1;
	c->buf = p;
	c->buf_cap = need;
	return 0;
}

/*
 * Fast path for capture lines: finds the top-level "payload_b64" string
 * value (its content spans line[*s, *e)) so that it can be decoded
 * straight from the line and cut out before json-c parses the (then small)
 * object. Returns 0 whenever anything is unusual (the key nested, twice,
 * not followed by a plain string): the normal path then handles the line.
 */
static int
find_payload(const char *line, size_t len, size_t *s, size_t *e)
{
	static const char key[] = "\"payload_b64\"";
	size_t i = 0;
	int depth = 0;

	while (i < len) {
		char ch = line[i];

		if (ch == '"') {
			size_t j = i + 1, k;
			const char *q;

			while (j < len && line[j] != '"')
				j += line[j] == '\\' ? 2 : 1;
			if (j >= len)
				return 0;
			if (depth != 1 || j - i + 1 != sizeof key - 1 ||
			    memcmp(line + i, key, sizeof key - 1) != 0) {
				i = j + 1;
				continue;
			}
			for (k = j + 1;
			     k < len && (line[k] == ' ' || line[k] == '\t');
			     k++)
				;
			if (k >= len || line[k] != ':')
				return 0;
			for (k++;
			     k < len && (line[k] == ' ' || line[k] == '\t');
			     k++)
				;
			if (k >= len || line[k] != '"')
				return 0;
			q = memchr(line + k + 1, '"', len - k - 1);
			if (q == NULL)
				return 0;
			*s = k + 1;
			*e = (size_t)(q - line);
			return memmem(q, len - *e, key, sizeof key - 1) == NULL;
		}
		if (ch == '{' || ch == '[')
			depth++;
		else if (ch == '}' || ch == ']')
			depth--;
		i++;
	}
	return 0;
}

/* fast_len: the payload already decoded into c->buf by the fast path, or
 * SIZE_MAX. */
static int
jsonl_line(struct ctx *c, struct bctx *bc, struct json_object *o,
           uint64_t file_worker, size_t fast_len)
{
	struct kvp_diag d = {{0}, 0};
	struct json_object *v;
	const char *b64;
	uint64_t plen;
	int has_plen = 0;
	size_t n, len;

	bc->capture = o;
	bc->track = 1;
	bc->worker = file_worker;
	if (kvp_json_req_u64(o, "seq", KVP_U64_STRING, &bc->seq, &d) != 0)
		goto bad_line;
	bc->has_seq = 1;
	bc->topic = "";
	bc->topic_len = 0;
	if (kvp_json_get(o, "topic", &v)) {
		if (!json_object_is_type(v, json_type_string)) {
			kvp_diag_set(&d, 0, "\"topic\" is not a string");
			goto bad_line;
		}
		bc->topic = json_object_get_string(v);
		bc->topic_len = (size_t)json_object_get_string_len(v);
	}
	bc->source = NULL;
	if (kvp_json_opt_str(o, "source", &bc->source, &d) != 0)
		goto bad_line;
	if (kvp_json_opt_u64(o, "worker_id", KVP_U64_HASH, &bc->worker, NULL,
	                     &d) != 0)
		goto bad_line;
	if (kvp_json_opt_u64(o, "payload_len", 0, &plen, &has_plen, &d) != 0)
		goto bad_line;
	if (kvp_json_req_str(o, "payload_b64", &b64, &d) != 0)
		goto bad_line;
	json_object_object_get_ex(o, "payload_b64", &v);
	n = (size_t)json_object_get_string_len(v);
	if (fast_len != SIZE_MAX && n == 0) {
		len = fast_len;
		goto decoded;
	}
	if (grow_buf(c, kvp_base64_decoded_max(n)) != 0) {
		kvp_warnx("out of memory");
		return 2;
	}
	if (kvp_base64_decode(b64, n, c->buf, &len, &d) != 0) {
		char msg[300];

		snprintf(msg, sizeof msg, "payload_b64: %s", d.msg);
		bad(c, bc, "line", 0, 0, msg);
		return 0;
	}
decoded:
	if (has_plen && plen != len) {
		char msg[160];

		snprintf(msg, sizeof msg,
		         "payload_len is %llu but payload_b64 decodes to %zu "
		         "bytes",
		         (unsigned long long)plen, len);
		bad(c, bc, "line", 0, 0, msg);
		return 0;
	}
	return decode_payload(c, bc, c->buf, len);
bad_line:
	bad(c, bc, "line", 0, 0, d.msg);
	return 0;
}

static int
read_jsonl(struct ctx *c, FILE *f, const char *name, uint64_t worker)
{
	struct json_tokener *tok = json_tokener_new();
	struct kvp_lines r;
	char where[4096];
	int st = 0;

	if (tok == NULL) {
		kvp_warnx("out of memory");
		return 2;
	}
	kvp_lines_init(&r, f, c->o->cli.max_line);
	while (!c->stop && st == 0) {
		struct bctx bc = {0};
		struct kvp_diag d = {{0}, 0};
		struct json_object *o;
		char *line;
		size_t len, ps = 0, pe = 0, fast_len;
		int rc = kvp_lines_next(&r, &line, &len);

		if (rc == KVP_LINE_EOF)
			break;
		snprintf(where, sizeof where, "%s:%ju", name, r.lineno);
		bc.where = where;
		bc.worker = worker;
		if (rc == KVP_LINE_IOERR) {
			kvp_warn("%s: read error", name);
			st = 2;
			break;
		}
		if (rc == KVP_LINE_TOO_LONG) {
			char msg[120];

			snprintf(msg, sizeof msg,
			         "line too long (over %zu bytes; see "
			         "--max-line-bytes)",
			         c->o->cli.max_line);
			bad(c, &bc, "line", 0, 0, msg);
			continue;
		}
		if (kvp_line_is_blank(line, len))
			continue;
		fast_len = SIZE_MAX;
		if (find_payload(line, len, &ps, &pe) &&
		    grow_buf(c, kvp_base64_decoded_max(pe - ps)) == 0 &&
		    kvp_base64_decode(line + ps, pe - ps, c->buf, &fast_len,
		                      &d) != 0)
			fast_len = SIZE_MAX;
		if (fast_len != SIZE_MAX) {
			memmove(line + ps, line + pe, len - pe);
			len -= pe - ps;
		}
		o = kvp_json_parse_object(tok, line, len, &d);
		if (o == NULL) {
			if (fast_len != SIZE_MAX && d.col > (long)ps)
				d.col += (long)(pe - ps);
			bad_col(c, &bc, "line", 0, 0, d.col, d.msg);
			continue;
		}
		st = jsonl_line(c, &bc, o, worker, fast_len);
		json_object_put(o);
		if (ferror(c->out))
			st = 2;
	}
	kvp_lines_fini(&r);
	json_tokener_free(tok);
	return st;
}

/* ---- frames
 * ------------------------------------------------------------------------ */

struct frame {
	unsigned char *p;
	size_t len, cap;
};

static uint32_t
get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Reads n bytes into dst (or discards them when dst is NULL). Returns the
 * number read (short at end of input) or -1 on a read error. */
static long long
read_exact(FILE *f, unsigned char *dst, size_t n)
{
	unsigned char tmp[8192];
	size_t done = 0;

	while (done < n) {
		size_t want = n - done, got;

		if (dst == NULL && want > sizeof tmp)
			want = sizeof tmp;
		got = fread(dst ? dst + done : tmp, 1, want, f);
		done += got;
		if (got < want) {
			if (ferror(f))
				return -1;
			break;
		}
	}
	return (long long)done;
}

static int
read_frames(struct ctx *c, FILE *f, const char *name, uint64_t worker)
{
	struct frame fr[4] = {{0}};
	uint64_t off = 0;
	char where[4096];
	int st = 0;

	while (!c->stop && st == 0) {
		struct bctx bc = {0};
		unsigned char hdr[4];
		uint32_t nf, i;
		long long got;
		uint64_t start = off;
		const struct frame *topic, *seq, *payload;
		char msg[200];

		snprintf(where, sizeof where, "%s:@%llu", name,
		         (unsigned long long)start);
		bc.where = where;
		bc.worker = worker;
		got = read_exact(f, hdr, 4);
		if (got < 0)
			goto ioerr;
		if (got == 0)
			break;
		if (got < 4)
			goto truncated;
		off += 4;
		nf = get_be32(hdr);
		if (nf > MAX_FRAMES) {
			snprintf(msg, sizeof msg,
			         "frame count %u is implausible (over %d); "
			         "cannot resynchronise",
			         nf, MAX_FRAMES);
			bad(c, &bc, "frame", 0, 0, msg);
			break;
		}
		for (i = 0; i < nf; i++) {
			uint32_t flen;

			got = read_exact(f, hdr, 4);
			if (got < 0)
				goto ioerr;
			if (got < 4)
				goto truncated;
			off += 4;
			flen = get_be32(hdr);
			if (i < 4 && flen <= c->o->cli.max_line) {
				if (fr[i].cap < flen) {
					void *p = realloc(fr[i].p, flen);

					if (p == NULL) {
						kvp_warnx("out of memory");
						st = 2;
						goto out;
					}
					fr[i].p = p;
					fr[i].cap = flen;
				}
				got = read_exact(f, fr[i].p, flen);
				fr[i].len = flen;
			} else {
				got = read_exact(f, NULL, flen);
				if (i < 4)
					fr[i].len = SIZE_MAX;
			}
			if (got < 0)
				goto ioerr;
			if ((uint64_t)got < flen)
				goto truncated;
			off += flen;
		}
		if (nf == 3) {
			topic = &fr[0];
			seq = &fr[1];
			payload = &fr[2];
		} else if (nf == 4 && fr[0].len == 0) {
			topic = &fr[1];
			seq = &fr[2];
			payload = &fr[3];
			bc.source = "replay";
		} else {
			snprintf(msg, sizeof msg,
			         "message has %u frame(s); expected 3 (topic, "
			         "seq, payload) or 4 with an empty first "
			         "frame (replay)",
			         nf);
			bad(c, &bc, "frame", 0, 0, msg);
			continue;
		}
		if (seq->len != 8) {
			snprintf(msg, sizeof msg,
			         "sequence frame has %zu bytes; needs 8",
			         seq->len == SIZE_MAX ? (size_t)0 : seq->len);
			bad(c, &bc, "frame", 0, 0, msg);
			continue;
		}
		bc.has_seq = 1;
		bc.seq =
		    (uint64_t)get_be32(seq->p) << 32 | get_be32(seq->p + 4);
		if (topic->len == SIZE_MAX || payload->len == SIZE_MAX) {
			snprintf(msg, sizeof msg,
			         "frame larger than %zu bytes "
			         "(--max-line-bytes)",
			         c->o->cli.max_line);
			bad(c, &bc, "frame", 0, 0, msg);
			continue;
		}
		if (payload->len == 0) {
			if (bc.seq == UINT64_MAX)
				continue; /* end of a replay */
			bad(c, &bc, "frame", 0, 0, "empty payload");
			continue;
		}
		bc.topic = (const char *)topic->p;
		bc.topic_len = topic->len;
		if (bc.topic == NULL)
			bc.topic = "";
		bc.track = 1;
		st = decode_payload(c, &bc, payload->p, payload->len);
		if (ferror(c->out))
			st = 2;
	}
	goto out;
truncated : {
	struct bctx bc = {0};

	bc.where = where;
	bc.worker = worker;
	bad(c, &bc, "frame", 0, 0, "truncated message at end of input");
}
	goto out;
ioerr:
	kvp_warn("%s: read error", name);
	st = 2;
out:
	for (int i = 0; i < 4; i++)
		free(fr[i].p);
	return st;
}

/* ---- raw msgpack
 * ------------------------------------------------------------------ */

static int
read_raw(struct ctx *c, FILE *f, const char *name, uint64_t worker)
{
	struct kvp_wire_stream *s = kvp_wire_stream_new(f, c->o->cli.max_line);
	uint64_t ordinal = 0;
	char where[4096];
	int st = 0;

	if (s == NULL) {
		kvp_warnx("out of memory");
		return 2;
	}
	while (!c->stop && st == 0) {
		struct bctx bc = {0};
		struct kvp_diag d = {{0}, 0};
		uint64_t off;
		size_t size;
		int rc;

		rc = kvp_wire_stream_next(s, c->w, &off, &size, &d);
		snprintf(where, sizeof where, "%s:@%llu", name,
		         (unsigned long long)off);
		bc.where = where;
		bc.worker = worker;
		bc.topic = "";
		if (rc == 0)
			break;
		if (rc == -2) {
			kvp_warn("%s: read error", name);
			st = 2;
			break;
		}
		if (rc == -1) {
			bad(c, &bc, "msgpack", 0, 0, d.msg);
			break; /* cannot resynchronise */
		}
		bc.has_seq = 1;
		bc.seq = ordinal++;
		st = decode_loaded(c, &bc, size);
		if (ferror(c->out))
			st = 2;
	}
	kvp_wire_stream_free(s);
	return st;
}

/* ---- main
 * ----------------------------------------------------------------------------
 */

static enum in_format
detect(FILE *f)
{
	int ch = getc(f);

	if (ch == EOF)
		return IN_JSONL;
	ungetc(ch, f);
	if (ch == 0x00)
		return IN_FRAMES;
	if ((ch >= 0x80 && ch <= 0x9f) || (ch >= 0xdc && ch <= 0xdf))
		return IN_RAW;
	return IN_JSONL;
}

static int
decode_file(struct ctx *c, const char *path, uint64_t worker)
{
	const char *name = kvp_cli_input_name(path);
	FILE *f = kvp_cli_open_input(path);
	enum in_format in = c->o->in;
	int st;

	if (f == NULL)
		return 2;
	if (in == IN_AUTO)
		in = detect(f);
	switch (in) {
	case IN_FRAMES:
		st = read_frames(c, f, name, worker);
		break;
	case IN_RAW:
		st = read_raw(c, f, name, worker);
		break;
	default:
		st = read_jsonl(c, f, name, worker);
		break;
	}
	kvp_cli_close_input(f);
	return st;
}

static const struct argp_option options[] = {
    {"in", OPT_IN, "FORMAT", 0,
     "Input format: auto, jsonl, frames or raw (default auto)", 0},
    {"worker-id", OPT_WORKER_ID, "U64", 0,
     "Worker id of the events (default 0); give once for all files or "
     "once per file, in order. A capture line's worker_id wins",
     0},
    {"dp-rank", OPT_DP_RANK, "N", 0,
     "DP rank used when the envelope has none (default: null)", 0},
    {"batches", OPT_BATCHES, NULL, 0,
     "Also write one batch record before each batch's events", 0},
    {"strict", OPT_STRICT, NULL, 0,
     "Dynamo's rules: reject the whole batch on any event error, and any "
     "envelope that is not [ts, events, rank]",
     0},
    {"drop-stale", OPT_DROP_STALE, NULL, 0,
     "Skip the events of stale or duplicate batches (default: decode "
     "them after the stale record)",
     0},
    {"gap-at-start", OPT_GAP_AT_START, NULL, 0,
     "Report a gap when a stream's first seq is above 0 (as Dynamo's "
     "indexer replays [0, seq))",
     0},
    {0}};

static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	struct opts *o = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_IN:
		if (strcmp(arg, "auto") == 0)
			o->in = IN_AUTO;
		else if (strcmp(arg, "jsonl") == 0)
			o->in = IN_JSONL;
		else if (strcmp(arg, "frames") == 0)
			o->in = IN_FRAMES;
		else if (strcmp(arg, "raw") == 0)
			o->in = IN_RAW;
		else
			argp_error(st,
			           "--in: unknown format '%s' (auto, jsonl, "
			           "frames, raw)",
			           arg);
		break;
	case OPT_WORKER_ID: {
		void *p = realloc(o->worker_ids, (o->n_worker_ids + 1) *
		                                     sizeof *o->worker_ids);

		if (p == NULL)
			argp_failure(st, KVP_EXIT_TROUBLE, ENOMEM,
			             "--worker-id");
		o->worker_ids = p;
		o->worker_ids[o->n_worker_ids++] =
		    kvp_opt_u64(st, "--worker-id", arg, UINT64_MAX);
		break;
	}
	case OPT_DP_RANK:
		o->dp_rank =
		    (int32_t)kvp_opt_u64(st, "--dp-rank", arg, INT32_MAX);
		o->has_dp_rank = 1;
		break;
	case OPT_BATCHES:
		o->batches = 1;
		break;
	case OPT_STRICT:
		o->strict = 1;
		break;
	case OPT_DROP_STALE:
		o->drop_stale = 1;
		break;
	case OPT_GAP_AT_START:
		o->gap_at_start = 1;
		break;
	case ARGP_KEY_ARG:
		o->files = &st->argv[st->next - 1];
		o->n_files = (size_t)(st->argc - st->next + 1);
		st->next = st->argc;
		break;
	case ARGP_KEY_END:
		if (o->n_worker_ids > 1 &&
		    o->n_worker_ids != (o->n_files ? o->n_files : 1))
			argp_error(st,
			           "--worker-id given %zu times for %zu "
			           "file(s); give it once, or once per file",
			           o->n_worker_ids,
			           o->n_files ? o->n_files : 1);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = {{&kvp_cli_argp, 0, NULL, 0}, {0}};

static const struct argp argp = {
    options,
    parse_opt,
    "[FILE...]",
    "Decode captured KV-cache event batches (vLLM, SGLang) into one NDJSON "
    "record per event.\v"
    "Reads capture JSONL, length-prefixed ZMQ frames, or raw concatenated "
    "msgpack batches (auto-detected) from each FILE, or standard input. "
    "Exit status: 0 ok, 1 bad data, 2 usage or I/O trouble. See "
    "kv-decode(1) and kvpipe-records(5).",
    children,
    NULL,
    NULL};

int
main(int argc, char **argv)
{
	struct opts o;
	struct ctx c;
	size_t i;
	int st = 0;

	kvp_cli_begin(argc, argv);
	memset(&o, 0, sizeof o);
	kvp_cli_init(&o.cli);
	argp_parse(&argp, argc, argv, 0, NULL, &o);

	memset(&c, 0, sizeof c);
	c.o = &o;
	c.out = kvp_cli_open_output(&o.cli);
	if (c.out == NULL)
		return KVP_EXIT_TROUBLE;
	c.w = kvp_wire_new();
	if (c.w == NULL) {
		kvp_warnx("out of memory");
		return KVP_EXIT_TROUBLE;
	}
	kvp_jw_init(&c.jw, c.out, o.cli.hash_strings, o.cli.unbuffered);
	c.rec = malloc(REC_CAP);
	if (c.rec == NULL) {
		kvp_warnx("out of memory");
		return KVP_EXIT_TROUBLE;
	}
	c.mem = open_memstream(&c.mem_buf, &c.mem_size);
	if (c.mem == NULL) {
		kvp_warn("open_memstream");
		return KVP_EXIT_TROUBLE;
	}
	for (i = 0; i < (o.n_files ? o.n_files : 1); i++) {
		uint64_t worker = 0;

		if (o.n_worker_ids == 1)
			worker = o.worker_ids[0];
		else if (o.n_worker_ids > 1)
			worker = o.worker_ids[i];
		c.stop = 0;
		st = kvp_worst(
		    st, decode_file(&c, o.n_files ? o.files[i] : NULL, worker));
		if (ferror(c.out) || (c.status != 0 && !o.cli.keep_going))
			break;
	}
	c.status = kvp_worst(c.status, st);
	if (kvp_cli_close_output(c.out, &o.cli) != 0)
		c.status = KVP_EXIT_TROUBLE;
	kvp_wire_free(c.w);
	for (i = 0; i < c.n_streams; i++)
		free(c.streams[i].topic);
	free(c.streams);
	free(c.buf);
	free(c.rec);
	fclose(c.mem);
	free(c.mem_buf);
	free(c.prefix);
	free(c.suffix);
	free(o.worker_ids);
	return c.status;
}
