/* SPDX-License-Identifier: MIT */
/* event_reader.c — kv-decode event records into struct kvp_nev, and
 * block_mm_infos (see event_reader.h). */
#include "events/event_reader.h"

#include <json.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/jscan.h"
#include "common/jskel.h"
#include "common/ndjson.h"
#include "common/util.h"

/* Must match Dynamo's _DYNAMO_CACHE_SALT_PREFIX (extra_keys namespaces). */
#define SALT_PREFIX "dynamo-cache-salt:"

/* ---- block_mm_infos ------------------------------------------------------ */

void
kvp_event_reader_blockmm_init(struct kvp_event_reader_blockmm *m)
{
	memset(m, 0, sizeof *m);
}

void
kvp_event_reader_blockmm_fini(struct kvp_event_reader_blockmm *m)
{
	free(m->start);
	free(m->count);
	free(m->mm);
	memset(m, 0, sizeof *m);
}

/* Room for nb blocks. */
static int
mm_blocks(struct kvp_event_reader_blockmm *m, size_t nb, struct kvp_diag *d)
{
	size_t cap = m->cap_blocks;

	if (kvp_grow(&m->start, &cap, nb, sizeof *m->start) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	cap = m->cap_blocks;
	if (kvp_grow(&m->count, &cap, nb, sizeof *m->count) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	m->cap_blocks = cap;
	return 0;
}

/* Appends the mm_hash of every object of objs, an array, to block i. */
static int
mm_objects(struct kvp_event_reader_blockmm *m, size_t i,
           const struct json_object *objs, struct kvp_diag *d)
{
	size_t k = json_object_array_length(objs);
	char what[96];

	if (kvp_grow(&m->mm, &m->cap_mm, m->n_mm + k, sizeof *m->mm) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (size_t j = 0; j < k; j++) {
		const struct json_object *ob =
		    json_object_array_get_idx(objs, j);
		struct json_object *h;

		snprintf(what, sizeof what,
		         "block_mm_infos[%zu].mm_objects[%zu].mm_hash", i, j);
		if (ob == NULL || !json_object_is_type(ob, json_type_object) ||
		    !kvp_json_get(ob, "mm_hash", &h))
			return kvp_diag_set(d, 0, "%s: missing", what);
		if (kvp_json_u64(h, KVP_U64_HASH, what, &m->mm[m->n_mm + j],
		                 d) != 0)
			return -1;
	}
	m->count[i] = k;
	m->n_mm += k;
	return 0;
}

int
kvp_event_reader_blockmm_read(const struct json_object *rec, size_t max_blocks,
                              struct kvp_event_reader_blockmm *m,
                              struct kvp_diag *d)
{
	struct json_object *a;
	size_t len;

	m->n_blocks = m->n_mm = 0;
	if (!kvp_json_get(rec, "block_mm_infos", &a))
		return 0;
	if (!json_object_is_type(a, json_type_array))
		return kvp_diag_set(d, 0,
		                    "block_mm_infos: expected an array, got %s",
		                    json_type_to_name(json_object_get_type(a)));
	len = json_object_array_length(a);
	if (len > max_blocks)
		len = max_blocks;
	if (mm_blocks(m, len, d) != 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		const struct json_object *e = json_object_array_get_idx(a, i);
		struct json_object *objs;

		m->start[i] = m->n_mm;
		m->count[i] = 0;
		if (e == NULL)
			continue;
		if (!json_object_is_type(e, json_type_object))
			return kvp_diag_set(
			    d, 0,
			    "block_mm_infos[%zu]: expected an object or null, "
			    "got %s",
			    i, json_type_to_name(json_object_get_type(e)));
		if (!kvp_json_get(e, "mm_objects", &objs) ||
		    !json_object_is_type(objs, json_type_array))
			return kvp_diag_set(
			    d, 0,
			    "block_mm_infos[%zu]: \"mm_objects\" "
			    "must be an array",
			    i);
		if (mm_objects(m, i, objs, d) != 0)
			return -1;
	}
	m->n_blocks = len;
	return 1;
}

/* ---- extra_keys (vLLM) --------------------------------------------------- */

/* One extra_keys item as a multimodal hash, Dynamo's rules: a bare string
 * counts only as a 64-hex digest (and never when equal to the LoRA name);
 * an [identifier, offset] pair is hashed with hash_mm_identifier. */
static int
item_mm_hash(struct json_object *it, const char *lora, uint64_t *h)
{
	const char *s;

	if (json_object_is_type(it, json_type_string)) {
		s = json_object_get_string(it);
		if (lora != NULL && strcmp(s, lora) == 0)
			return 0;
		if (json_object_get_string_len(it) != 64)
			return 0;
		for (int i = 0; i < 64; i++)
			if (!strchr("0123456789abcdefABCDEF", s[i]) ||
			    s[i] == '\0')
				return 0;
		*h = kvp_hash_mm_identifier(s, 64);
		return 1;
	}
	if (json_object_is_type(it, json_type_array) &&
	    json_object_array_length(it) >= 2) {
		struct json_object *id = json_object_array_get_idx(it, 0);
		struct json_object *off = json_object_array_get_idx(it, 1);

		if (!json_object_is_type(id, json_type_string) ||
		    !json_object_is_type(off, json_type_int) ||
		    json_object_get_string_len(id) == 0)
			return 0;
		*h = kvp_hash_mm_identifier(
		    json_object_get_string(id),
		    (size_t)json_object_get_string_len(id));
		return 1;
	}
	return 0;
}

/* Namespace from the first block's extra_keys: the first bare string with
 * the Dynamo salt prefix, after skipping one item equal to the LoRA name. */
static const char *
extra_keys_ns(struct json_object *ek, const char *lora)
{
	struct json_object *first;
	int lora_left = lora != NULL && *lora != '\0';

	if (json_object_array_length(ek) == 0)
		return NULL;
	first = json_object_array_get_idx(ek, 0);
	if (!json_object_is_type(first, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(first); i++) {
		struct json_object *it = json_object_array_get_idx(first, i);
		const char *s;

		if (!json_object_is_type(it, json_type_string))
			continue;
		s = json_object_get_string(it);
		if (lora_left && strcmp(s, lora) == 0) {
			lora_left = 0;
			continue;
		}
		if (strncmp(s, SALT_PREFIX, sizeof SALT_PREFIX - 1) == 0 &&
		    s[sizeof SALT_PREFIX - 1] != '\0')
			return s + sizeof SALT_PREFIX - 1;
	}
	return NULL;
}

/* Per-block mm hashes from extra_keys, an array (vLLM). */
static int
extra_keys_mm(struct json_object *ek, const char *lora,
              struct kvp_event_reader_blockmm *m, struct kvp_diag *d)
{
	size_t nb = json_object_array_length(ek);

	if (mm_blocks(m, nb, d) != 0)
		return -1;
	for (size_t i = 0; i < nb; i++) {
		struct json_object *bk = json_object_array_get_idx(ek, i);

		m->start[i] = m->n_mm;
		m->count[i] = 0;
		if (bk == NULL)
			continue;
		if (!json_object_is_type(bk, json_type_array))
			return kvp_diag_set(
			    d, 0, "extra_keys[%zu]: expected an array or null",
			    i);
		for (size_t j = 0; j < json_object_array_length(bk); j++) {
			uint64_t h;

			if (!item_mm_hash(json_object_array_get_idx(bk, j),
			                  lora, &h))
				continue;
			if (kvp_grow(&m->mm, &m->cap_mm, m->n_mm + 1,
			             sizeof *m->mm) != 0)
				return kvp_diag_set(d, 0, "out of memory");
			m->mm[m->n_mm++] = h;
			m->count[i]++;
		}
	}
	m->n_blocks = nb;
	return 0;
}

/* The store's multimodal hashes: Dynamo's block_mm_infos when present,
 * else extra_keys (vLLM). All-empty lists mean no mm info at all. */
static int
parse_mm(const struct json_object *rec, struct kvp_event_reader_buf *b,
         struct kvp_nev *ev, struct kvp_diag *d)
{
	struct kvp_event_reader_blockmm *m = &b->mm;
	struct json_object *ek;
	int rc = kvp_event_reader_blockmm_read(rec, SIZE_MAX, m, d);

	ev->n_mm_blocks = 0;
	if (rc < 0)
		return -1;
	if (rc == 0) {
		if (!kvp_json_get(rec, "extra_keys", &ek))
			return 0;
		if (!json_object_is_type(ek, json_type_array))
			return kvp_diag_set(
			    d, 0, "extra_keys: expected an array or null");
		if (extra_keys_mm(ek, ev->lora_name, m, d) != 0)
			return -1;
	}
	if (m->n_mm == 0)
		return 0;
	ev->n_mm_blocks = m->n_blocks;
	ev->mm_start = m->start;
	ev->mm_count = m->count;
	ev->mm = m->mm;
	return 0;
}

/* ---- the fields of an event record -------------------------------------- */

enum fkey {
	K_REC,
	K_SEQ,
	K_IDX,
	K_WORKER,
	K_RANK,
	K_TYPE,
	K_HASHES,
	K_PARENT,
	K_TOKENS,
	K_BS,
	K_LAYOUT,
	K_LORA,
	K_MEDIUM,
	K_SALT,
	K_EXTRA,
	K_MMINFOS,
	K_GROUP,
	K_KIND,
	K_LOCALITY,
	K_TS,
	K_OFFSETS,
	K_COUNT,
	K_OTHER = K_COUNT,
};

/* What the scanner takes for each key (null aside): a string, an integer,
 * an integer array, [null, ...] (extra_keys without multimodal content),
 * or nothing (block_mm_infos: the json-c path reads it). */
enum ftype { F_STR, F_NUM, F_U64S, F_NULLS, F_NONE, F_DBL };

#define FKEY(s, t)                                                             \
	{                                                                      \
		s, sizeof s - 1, t                                             \
	}
static const struct {
	const char *s;
	size_t n;
	enum ftype type;
} fkeys[K_COUNT] = {
    FKEY("rec", F_STR),
    FKEY("seq", F_NUM),
    FKEY("idx", F_NUM),
    FKEY("worker_id", F_NUM),
    FKEY("dp_rank", F_NUM),
    FKEY("type", F_STR),
    FKEY("block_hashes", F_U64S),
    FKEY("parent_block_hash", F_NUM),
    FKEY("token_ids", F_U64S),
    FKEY("block_size", F_NUM),
    FKEY("token_layout", F_STR),
    FKEY("lora_name", F_STR),
    FKEY("medium", F_STR),
    FKEY("cache_salt", F_STR),
    FKEY("extra_keys", F_NULLS),
    FKEY("block_mm_infos", F_NONE),
    FKEY("group_idx", F_NUM),
    FKEY("kv_cache_spec_kind", F_STR),
    FKEY("locality", F_STR),
    FKEY("ts", F_DBL),
    FKEY("block_offsets", F_NONE),
};
#undef FKEY

/* A string value: NUL-terminated on the json-c path; on the fast path a
 * span of the line, terminated once the record is accepted. */
struct fstr {
	char *p; /* NULL: absent or null */
	size_t n;
};

/*
 * Where the fields come from: json-c's tree (obj set), or the scanner's
 * slots (obj NULL): for each key seen, whether it was null, and its
 * integer, string or array (the arrays are already in the caller's
 * buffers, n_h and n_t elements).
 */
struct fsrc {
	const struct json_object *obj;
	struct kvp_jskel *sk; /* json-c path: arrays a skeleton left out */
	unsigned char seen[K_COUNT], null[K_COUNT], neg[K_COUNT];
	uint64_t num[K_COUNT];
	struct fstr str[K_COUNT];
	size_t n_h, n_t;
	double ts; /* K_TS on the fast path */
};

static int
fast_has(const struct fsrc *f, enum fkey k)
{
	return f->seen[k] && !f->null[k];
}

/* An integer; required keys must be present (and not null). */
static int
f_u64(const struct fsrc *f, enum fkey k, int flags, int required, uint64_t *out,
      int *present, struct kvp_diag *d)
{
	int dummy;

	present = present != NULL ? present : &dummy;
	if (f->obj != NULL) {
		*present = 1;
		if (required)
			return kvp_json_req_u64(f->obj, fkeys[k].s, flags, out,
			                        d);
		return kvp_json_opt_u64(f->obj, fkeys[k].s, flags, out, present,
		                        d);
	}
	*present = fast_has(f, k);
	if (!*present)
		return required ? kvp_diag_set(d, 0, "missing key \"%s\"",
		                               fkeys[k].s)
		                : 0;
	if (f->neg[k] && !(flags & KVP_U64_NEGATIVE))
		return kvp_diag_set(
		    d, 0, "%s: must not be negative (got %" PRId64 ")",
		    fkeys[k].s, (int64_t)f->num[k]);
	*out = f->num[k];
	return 0;
}

/* A string; absent or null leaves s->p NULL (an error when required). */
static int
f_str(const struct fsrc *f, enum fkey k, int required, struct fstr *s,
      struct kvp_diag *d)
{
	const char *v = NULL;

	if (f->obj == NULL) {
		*s = f->str[k];
		if (required && s->p == NULL)
			return kvp_diag_set(d, 0, "missing key \"%s\"",
			                    fkeys[k].s);
		return 0;
	}
	if (required ? kvp_json_req_str(f->obj, fkeys[k].s, &v, d)
	             : kvp_json_opt_str(f->obj, fkeys[k].s, &v, d))
		return -1;
	s->p = (char *)v;
	s->n = v != NULL ? strlen(v) : 0;
	return 0;
}

static int
f_is(const struct fstr *s, const char *lit)
{
	return s->p != NULL && s->n == strlen(lit) &&
	       memcmp(s->p, lit, s->n) == 0;
}

/* A required integer array: block_hashes into b->hashes, token_ids into
 * b->tokens. */
static int
f_u64s(const struct fsrc *f, enum fkey k, struct kvp_event_reader_buf *b,
       size_t *n, struct kvp_diag *d)
{
	int flags = k == K_HASHES ? KVP_U64_HASH : 0;
	uint64_t **buf = k == K_HASHES ? &b->hashes : &b->tokens;
	size_t *cap = k == K_HASHES ? &b->cap_hashes : &b->cap_tokens;
	struct json_object *arr;

	if (f->obj == NULL) {
		if (!fast_has(f, k))
			return kvp_diag_set(d, 0, "missing key \"%s\"",
			                    fkeys[k].s);
		*n = k == K_HASHES ? f->n_h : f->n_t;
		return 0;
	}
	if (kvp_json_req_array(f->obj, fkeys[k].s, &arr, d) ||
	    kvp_jskel_u64s(f->sk, arr, flags, fkeys[k].s, buf, cap, n, d))
		return -1;
	return 0;
}

/* dp_rank: an integer or null, in i32 or u32. */
static int
f_rank(const struct fsrc *f, struct kvp_nev *ev, struct kvp_diag *d)
{
	struct json_object *v;
	int64_t r;
	int big; /* an integer above INT64_MAX (r is then INT64_MAX) */

	if (f->obj == NULL) {
		if (!fast_has(f, K_RANK))
			return 0;
		big = !f->neg[K_RANK] && f->num[K_RANK] > INT64_MAX;
		r = big ? INT64_MAX : (int64_t)f->num[K_RANK];
	} else {
		if (!kvp_json_get(f->obj, "dp_rank", &v))
			return 0;
		if (!json_object_is_type(v, json_type_int))
			return kvp_diag_set(
			    d, 0,
			    "dp_rank: expected an integer or null, got %s",
			    json_type_to_name(json_object_get_type(v)));
		r = json_object_get_int64(v);
		big = r == INT64_MAX &&
		      json_object_get_uint64(v) > (uint64_t)INT64_MAX;
	}
	if (r > (int64_t)UINT32_MAX || r < INT32_MIN || big)
		return kvp_diag_set(d, 0,
		                    "dp_rank: %lld does not fit in i32/u32",
		                    (long long)r);
	ev->has_rank = 1;
	ev->rank = r;
	return 0;
}

/* ---- the checks, in the json-c path's order ------------------------------ */

/* Strings of the event: medium, kind, locality, and for stores lora_name,
 * token_layout and the namespace. */
struct fstrs {
	struct fstr medium, kind, locality, lora, layout, salt;
};

/* group_idx, kv_cache_spec_kind, locality and medium (stores, removals). */
static int
parse_common(const struct fsrc *f, struct kvp_nev *ev, struct fstrs *s,
             struct kvp_diag *d)
{
	uint64_t g = 0;

	if (f_u64(f, K_GROUP, 0, 0, &g, &ev->has_group, d))
		return -1;
	if (ev->has_group && g > UINT32_MAX)
		return kvp_diag_set(d, 0, "%s: %llu does not fit in u32",
		                    "group_idx", (unsigned long long)g);
	ev->group_idx = (uint32_t)g;
	if (f_str(f, K_KIND, 0, &s->kind, d) ||
	    f_str(f, K_LOCALITY, 0, &s->locality, d) ||
	    f_str(f, K_MEDIUM, 0, &s->medium, d))
		return -1;
	ev->has_medium = s->medium.p != NULL;
	return 0;
}

static int
parse_stored(const struct fsrc *f, struct kvp_event_reader_buf *b,
             struct kvp_nev *ev, struct fstrs *s, struct kvp_diag *d)
{
	if (f_u64s(f, K_HASHES, b, &ev->n_hashes, d) ||
	    f_u64(f, K_PARENT, KVP_U64_HASH, 0, &ev->parent, &ev->has_parent,
	          d) ||
	    f_u64s(f, K_TOKENS, b, &ev->n_tokens, d) ||
	    f_u64(f, K_BS, 0, 1, &ev->block_size, NULL, d) ||
	    f_str(f, K_LAYOUT, 0, &s->layout, d) ||
	    f_str(f, K_LORA, 0, &s->lora, d) ||
	    f_str(f, K_SALT, 0, &s->salt, d) || parse_common(f, ev, s, d))
		return -1;
	ev->hashes = b->hashes;
	ev->tokens = b->tokens;
	if (ev->block_size > UINT32_MAX)
		return kvp_diag_set(d, 0,
		                    "block_size: %llu does not fit in u32",
		                    (unsigned long long)ev->block_size);
	if (f_is(&s->layout, "bigram"))
		ev->eagle = 1;
	else if (s->layout.p != NULL && !f_is(&s->layout, "flat"))
		return kvp_diag_set(d, 0,
		                    "token_layout: expected \"flat\" or "
		                    "\"bigram\", got \"%.*s\"",
		                    s->layout.n > 40 ? 40 : (int)s->layout.n,
		                    s->layout.p);
	if (ev->eagle && ev->n_tokens == 1)
		return kvp_diag_set(d, 0,
		                    "token_ids: a bigram layout has at least "
		                    "2 tokens");
	return 0;
}

/* The record's kind: 0 for an event, 1 for another kv-decode record (gap,
 * stale and restart ones named in *skip). */
static int
parse_rec(const struct fsrc *f, int *skip, struct kvp_diag *d)
{
	struct fstr kind;

	if (f_str(f, K_REC, 1, &kind, d))
		return -1;
	if (f_is(&kind, "event"))
		return 0;
	if (f_is(&kind, "gap") || f_is(&kind, "stale") ||
	    f_is(&kind, "restart")) {
		*skip = f_is(&kind, "gap")     ? KVP_NEV_GAP
		        : f_is(&kind, "stale") ? KVP_NEV_STALE
		                               : KVP_NEV_RESTART;
		return 1;
	}
	if (f_is(&kind, "batch") || f_is(&kind, "error"))
		return 1;
	return kvp_diag_set(d, 0,
	                    "rec: expected \"event\" (a kv-decode record), "
	                    "got \"%.*s\"",
	                    kind.n > 40 ? 40 : (int)kind.n, kind.p);
}

/* The batch's "ts" (seconds, optional): ev->ts_ms, rounded. */
static int
parse_ts(const struct fsrc *f, struct kvp_nev *ev, struct kvp_diag *d)
{
	struct json_object *v;
	double x;

	if (f->obj == NULL) {
		if (!fast_has(f, K_TS))
			return 0;
		x = f->ts;
	} else {
		if (!kvp_json_get(f->obj, "ts", &v))
			return 0;
		if (!json_object_is_type(v, json_type_double) &&
		    !json_object_is_type(v, json_type_int))
			return kvp_diag_set(d, 0, "ts: expected a number");
		x = json_object_get_double(v);
	}
	if (!(x >= 0) || x >= 1.8e16)
		return kvp_diag_set(
		    d, 0, "ts: expected a time in seconds, got %g", x);
	ev->has_ts = 1;
	ev->ts_ms = (uint64_t)(x * 1000 + 0.5);
	return 0;
}

/* seq, idx, worker_id, type (returned in *type) and dp_rank. */
static int
parse_head(const struct fsrc *f, struct kvp_nev *ev, struct fstr *type,
           struct kvp_diag *d)
{
	uint64_t u;

	if (f_u64(f, K_SEQ, KVP_U64_STRING, 1, &ev->seq, NULL, d) ||
	    f_u64(f, K_IDX, 0, 1, &u, NULL, d) ||
	    f_u64(f, K_WORKER, KVP_U64_HASH, 1, &ev->worker_id, NULL, d) ||
	    f_str(f, K_TYPE, 1, type, d))
		return -1;
	if (u > INT64_MAX)
		return kvp_diag_set(d, 0, "idx: out of range");
	ev->idx = (int64_t)u;
	return f_rank(f, ev, d);
}

/* The whole record; s gets the strings the event will point to. */
static int
parse_fields(const struct fsrc *f, struct kvp_event_reader_buf *b,
             struct kvp_nev *ev, struct fstrs *s, struct kvp_diag *d)
{
	struct fstr type;
	int rc;

	memset(ev, 0, sizeof *ev);
	memset(s, 0, sizeof *s);
	rc = parse_rec(f, &ev->skipped, d);
	if (rc != 0 || parse_head(f, ev, &type, d) != 0 ||
	    parse_ts(f, ev, d) != 0)
		return rc != 0 ? rc : -1;
	if (f_is(&type, "BlockStored")) {
		ev->type = KVP_EV_STORED;
		return parse_stored(f, b, ev, s, d);
	}
	if (f_is(&type, "BlockRemoved")) {
		ev->type = KVP_EV_REMOVED;
		if (f_u64s(f, K_HASHES, b, &ev->n_hashes, d) ||
		    parse_common(f, ev, s, d))
			return -1;
		ev->hashes = b->hashes;
		return 0;
	}
	if (f_is(&type, "BlockInactive")) { /* read as a removal, filtered */
		ev->type = KVP_EV_INACTIVE;
		if (f_u64s(f, K_HASHES, b, &ev->n_hashes, d) ||
		    parse_common(f, ev, s, d))
			return -1;
		ev->hashes = b->hashes;
		return 0;
	}
	if (f_is(&type, "AllBlocksCleared") || f_is(&type, "Ignored")) {
		ev->type =
		    f_is(&type, "Ignored") ? KVP_EV_IGNORED : KVP_EV_CLEARED;
		return 0;
	}
	if (f_is(&type, "BlockTransferred")) {
		ev->type = KVP_EV_THIRD_PARTY;
		return 0;
	}
	return kvp_diag_set(d, 0,
	                    "type: expected BlockStored, BlockRemoved, "
	                    "AllBlocksCleared, Ignored, BlockInactive or "
	                    "BlockTransferred, got \"%.*s\"",
	                    type.n > 40 ? 40 : (int)type.n, type.p);
}

/* The event's strings (fast path: NUL-terminated in place now). */
static void
set_strings(struct kvp_nev *ev, struct fstrs *s, int terminate)
{
	struct fstr *all[] = {&s->medium, &s->kind, &s->locality, &s->lora,
	                      &s->salt};

	for (size_t i = 0; terminate && i < sizeof all / sizeof all[0]; i++)
		if (all[i]->p != NULL)
			all[i]->p[all[i]->n] = '\0';
	ev->medium = s->medium.p;
	ev->kind = s->kind.p;
	ev->locality = s->locality.p;
	if (ev->type == KVP_EV_STORED) {
		ev->lora_name = s->lora.p;
		ev->ns = s->salt.p;
	}
}

/* A sparse store's "block_offsets" (json-c path only: the fast path
 * declines it): null or absent, or one u32 chunk index per block hash. */
static int
parse_offsets(const struct json_object *rec, struct kvp_event_reader_buf *b,
              struct kvp_nev *ev, struct kvp_diag *d)
{
	struct json_object *a;
	size_t n;

	if (!kvp_json_get(rec, "block_offsets", &a) ||
	    json_object_is_type(a, json_type_null))
		return 0;
	if (kvp_json_u64_array(a, 0, "block_offsets", &b->offsets,
	                       &b->cap_offsets, &n, d) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (b->offsets[i] > UINT32_MAX)
			return kvp_diag_set(
			    d, 0,
			    "block_offsets[%zu]: does not fit in "
			    "u32",
			    i);
	if (n != ev->n_hashes)
		return kvp_diag_set(d, 0,
		                    "block_offsets: %zu entries for %zu block "
		                    "hashes",
		                    n, ev->n_hashes);
	ev->offsets = b->offsets;
	ev->n_offsets = n;
	return 0;
}

/* SGLang's full media digests (kv-decode checked their form), passed on
 * as they are; the fast path declines records that hold them. */
static int
read_sha(const struct json_object *rec, struct kvp_nev *ev, struct kvp_diag *d)
{
	struct json_object *v;

	if (kvp_json_get(rec, "block_hashes_sha256", &v)) {
		if (!json_object_is_type(v, json_type_array))
			return kvp_diag_set(d, 0,
			                    "block_hashes_sha256: expected an "
			                    "array or null");
		ev->sha256_hashes = v;
	}
	if (ev->type == KVP_EV_STORED &&
	    kvp_json_opt_str(rec, "parent_block_hash_sha256",
	                     &ev->sha256_parent, d) != 0)
		return -1;
	return 0;
}

static int
from_json(const struct json_object *rec, struct kvp_jskel *sk,
          struct kvp_event_reader_buf *b, struct kvp_nev *ev,
          struct kvp_diag *d)
{
	struct fsrc f = {.obj = rec, .sk = sk};
	struct fstrs s;
	struct json_object *ek;
	int rc = parse_fields(&f, b, ev, &s, d);

	if (rc != 0)
		return rc;
	set_strings(ev, &s, 0);
	if (read_sha(rec, ev, d) != 0)
		return -1;
	if (ev->type != KVP_EV_STORED)
		return 0;
	if (parse_offsets(rec, b, ev, d) != 0)
		return -1;
	if (ev->ns == NULL && kvp_json_get(rec, "extra_keys", &ek) &&
	    json_object_is_type(ek, json_type_array))
		ev->ns = extra_keys_ns(ek, ev->lora_name);
	return parse_mm(rec, b, ev, d);
}

int
kvp_event_reader_from_json(const struct json_object *rec,
                           struct kvp_event_reader_buf *b, struct kvp_nev *ev,
                           struct kvp_diag *d)
{
	return from_json(rec, NULL, b, ev, d);
}

/* ---- fast path ----------------------------------------------------------- */

/* Nesting allowed in the values of unknown keys (kv-decode adds objects
 * such as x_capture). */
#define SKIP_DEPTH 8

/* [null, ...] (vLLM's extra_keys without multimodal content). */
static int
null_array(struct kvp_jscan *c)
{
	size_t n = 0;
	int rc;

	if (kvp_jscan_arr_begin(c) != 0)
		return -1;
	while ((rc = kvp_jscan_arr_next(c, &n)) == 1)
		if (kvp_jscan_literal(c, "null") != 0)
			return -1;
	return rc;
}

/* A number (any JSON number: the scanner checks its grammar, strtod reads
 * it; the byte after it ends it). */
static int
scan_double(struct kvp_jscan *c, double *v)
{
	size_t at = c->i;
	int ch = kvp_jscan_peek(c);

	if (ch != '-' && !(ch >= '0' && ch <= '9'))
		return -1;
	if (kvp_jscan_skip(c, 0) != 0)
		return -1;
	*v = strtod(c->s + at, NULL);
	return 0;
}

static enum fkey
fkey_of(const char *s, size_t n)
{
	for (int k = 0; k < K_COUNT; k++)
		if (fkeys[k].n == n && fkeys[k].s[0] == s[0] &&
		    memcmp(fkeys[k].s, s, n) == 0)
			return (enum fkey)k;
	return K_OTHER;
}

/* One known key's value into its slot, by the key's type; -1 declines.
 * Negative integers are kept in two's complement, as json-c gives them
 * (the checks reject them where they are not allowed); "-0" declines. */
static int
scan_value(struct kvp_jscan *c, enum fkey k, struct fsrc *f,
           struct kvp_event_reader_buf *b)
{
	struct kvp_jspan vs;
	int neg = 0;

	if (kvp_jscan_peek(c) == 'n') {
		f->null[k] = 1;
		return kvp_jscan_literal(c, "null");
	}
	switch (fkeys[k].type) {
	case F_STR:
		if (kvp_jscan_peek(c) != '"' || kvp_jscan_string(c, &vs) != 0)
			return -1;
		f->str[k].p = (char *)c->s + vs.off;
		f->str[k].n = vs.len;
		return 0;
	case F_NUM:
		if (kvp_jscan_int(c, &f->num[k], &neg) != 0 ||
		    (neg && f->num[k] == 0))
			return -1;
		f->neg[k] = (unsigned char)neg;
		return 0;
	case F_U64S:
		if (k == K_HASHES)
			return kvp_jscan_u64_array(c, 1, &b->hashes,
			                           &b->cap_hashes, &f->n_h);
		return kvp_jscan_u64_array(c, 0, &b->tokens, &b->cap_tokens,
		                           &f->n_t);
	case F_NULLS:
		return null_array(c);
	case F_DBL:
		return scan_double(c, &f->ts);
	default:
		return -1;
	}
}

/* Scans the line's members into f; -1 declines. */
static int
scan_line(char *line, size_t len, struct fsrc *f,
          struct kvp_event_reader_buf *b)
{
	struct kvp_jscan c;
	struct kvp_jspan ks;
	size_t nm = 0;
	int rc;

	kvp_jscan_init(&c, line, len);
	kvp_jscan_ws(&c);
	if (kvp_jscan_obj_begin(&c) != 0)
		return -1;
	while ((rc = kvp_jscan_obj_next(&c, &nm, &ks)) == 1) {
		enum fkey k = fkey_of(line + ks.off, ks.len);

		if (k == K_OTHER) {
			if (kvp_jscan_skip(&c, SKIP_DEPTH) != 0)
				return -1;
			continue;
		}
		if (f->seen[k]++ || kvp_jscan_peek(&c) < 0 ||
		    scan_value(&c, k, f, b) != 0)
			return -1;
	}
	if (rc != 0 || nm == 0 || kvp_jscan_end(&c) != 0)
		return -1;
	/* Escapes or non-ASCII bytes in any string: json-c decodes them. */
	return c.flags & (KVP_JSCAN_ESC | KVP_JSCAN_NONASCII) ? -1 : 0;
}

int
kvp_event_reader_from_line(char *line, size_t len,
                           struct kvp_event_reader_buf *b, struct kvp_nev *ev)
{
	struct fsrc f;
	struct fstrs s;
	struct kvp_diag d;

	memset(&f, 0, sizeof f);
	/* SGLang's full digests (read_sha()) take the json-c path */
	if (strstr(line, "_sha256\"") != NULL ||
	    scan_line(line, len, &f, b) != 0 ||
	    parse_fields(&f, b, ev, &s, &d) != 0)
		return 1;
	set_strings(ev, &s, 1);
	return 0;
}

/* ---- reader -------------------------------------------------------------- */

void
kvp_event_reader_buf_init(struct kvp_event_reader_buf *b)
{
	memset(b, 0, sizeof *b);
	kvp_event_reader_blockmm_init(&b->mm);
}

void
kvp_event_reader_buf_fini(struct kvp_event_reader_buf *b)
{
	free(b->hashes);
	free(b->tokens);
	free(b->offsets);
	kvp_event_reader_blockmm_fini(&b->mm);
	memset(b, 0, sizeof *b);
}

int
kvp_event_reader_init(struct kvp_event_reader *r)
{
	static const char *const keep[] = {"extra_keys", "block_mm_infos",
	                                   "block_hashes_sha256",
	                                   "block_offsets", NULL};

	memset(r, 0, sizeof *r);
	kvp_event_reader_buf_init(&r->buf);
	kvp_jskel_init(&r->skel);
	r->skel.arrays[0] = (struct kvp_jskel_array){.key = "block_hashes",
	                                             .flags = KVP_U64_HASH,
	                                             .v = &r->buf.hashes,
	                                             .cap = &r->buf.cap_hashes};
	r->skel.arrays[1] = (struct kvp_jskel_array){
	    .key = "token_ids", .v = &r->buf.tokens, .cap = &r->buf.cap_tokens};
	r->skel.n_arrays = 2;
	r->skel.keep = keep;
	return 0;
}

void
kvp_event_reader_fini(struct kvp_event_reader *r)
{
	if (r->last != NULL)
		json_object_put(r->last);
	kvp_event_reader_buf_fini(&r->buf);
	kvp_jskel_fini(&r->skel);
	memset(r, 0, sizeof *r);
}

int
kvp_event_reader_line(struct kvp_event_reader *r, char *line, size_t len,
                      struct kvp_nev *ev, struct kvp_diag *d)
{
	int oom;

	if (r->last != NULL) {
		json_object_put(r->last);
		r->last = NULL;
	}
	if (kvp_event_reader_from_line(line, len, &r->buf, ev) == 0) {
		r->fast++;
		return 0;
	}
	r->slow++;
	r->last = kvp_jskel_parse(&r->skel, line, len, d, &oom);
	if (r->last == NULL)
		return oom ? -2 : -1;
	return from_json(r->last, &r->skel, &r->buf, ev, d);
}
