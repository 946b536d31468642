/* SPDX-License-Identifier: MIT */
/* normalize_io.c — kv-decode event records in, RouterEvent records out
 * (see normalize_io.h). */
#include "events/normalize_io.h"

#include <json.h>

#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/jscan.h"
#include "common/util.h"

/* Must match Dynamo's _DYNAMO_CACHE_SALT_PREFIX (extra_keys namespaces). */
#define SALT_PREFIX "dynamo-cache-salt:"

void
kvp_nev_buf_init(struct kvp_nev_buf *b)
{
	memset(b, 0, sizeof *b);
}

void
kvp_nev_buf_fini(struct kvp_nev_buf *b)
{
	free(b->hashes);
	free(b->tokens);
	free(b->mm_start);
	free(b->mm_count);
	free(b->mm);
	memset(b, 0, sizeof *b);
}

const char *
kvp_ev_type_name(enum kvp_ev_type t)
{
	switch (t) {
	case KVP_EV_STORED:
		return "BlockStored";
	case KVP_EV_REMOVED:
		return "BlockRemoved";
	case KVP_EV_CLEARED:
		return "AllBlocksCleared";
	default:
		return "Ignored";
	}
}

/* Optional string: absent or null leave *out NULL. */
static int
opt_str(const struct json_object *o, const char *key, const char **out,
        struct kvp_diag *d)
{
	*out = NULL;
	return kvp_json_opt_str(o, key, out, d);
}

static int
opt_u32(const struct json_object *o, const char *key, int *has, uint32_t *out,
        struct kvp_diag *d)
{
	uint64_t v = 0;

	if (kvp_json_opt_u64(o, key, 0, &v, has, d) != 0)
		return -1;
	if (*has && v > UINT32_MAX)
		return kvp_diag_set(d, 0, "%s: %llu does not fit in u32", key,
		                    (unsigned long long)v);
	*out = (uint32_t)v;
	return 0;
}

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

static int
mm_push(struct kvp_nev_buf *b, size_t *n, uint64_t h, struct kvp_diag *d)
{
	if (kvp_grow(&b->mm, &b->cap_mm, *n + 1, sizeof *b->mm) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	b->mm[(*n)++] = h;
	return 0;
}

static int
mm_blocks_reserve(struct kvp_nev_buf *b, size_t nb, struct kvp_diag *d)
{
	size_t cap = b->cap_mb;

	if (kvp_grow(&b->mm_start, &cap, nb, sizeof(size_t)) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	cap = b->cap_mb;
	if (kvp_grow(&b->mm_count, &cap, nb, sizeof(size_t)) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	b->cap_mb = cap;
	return 0;
}

/* Per-block mm hashes from extra_keys (vLLM) or, when present, Dynamo's
 * patched block_mm_infos. All-empty lists mean no mm info at all. */
static int
parse_mm(const struct json_object *rec, struct kvp_nev_buf *b,
         struct kvp_nev *ev, struct kvp_diag *d)
{
	struct json_object *ek = NULL, *infos = NULL;
	size_t nb, n = 0, any = 0;

	ev->n_mm_blocks = 0;
	if (kvp_json_get(rec, "block_mm_infos", &infos)) {
		if (!json_object_is_type(infos, json_type_array))
			return kvp_diag_set(
			    d, 0, "block_mm_infos: expected an array");
		nb = json_object_array_length(infos);
		if (mm_blocks_reserve(b, nb, d))
			return -1;
		for (size_t i = 0; i < nb; i++) {
			struct json_object *bi =
			    json_object_array_get_idx(infos, i);
			struct json_object *objs;

			b->mm_start[i] = n;
			b->mm_count[i] = 0;
			if (bi == NULL)
				continue;
			if (!json_object_is_type(bi, json_type_object) ||
			    !kvp_json_get(bi, "mm_objects", &objs) ||
			    !json_object_is_type(objs, json_type_array))
				return kvp_diag_set(
				    d, 0,
				    "block_mm_infos[%zu]: expected null or "
				    "{\"mm_objects\":[...]}",
				    i);
			for (size_t j = 0; j < json_object_array_length(objs);
			     j++) {
				struct json_object *ob =
				    json_object_array_get_idx(objs, j);
				uint64_t h;

				if (ob == NULL ||
				    !json_object_is_type(ob,
				                         json_type_object) ||
				    kvp_json_req_u64(ob, "mm_hash",
				                     KVP_U64_HASH, &h, d))
					return kvp_diag_set(
					    d, 0,
					    "block_mm_infos[%zu].mm_objects[%"
					    "zu]: expected {\"mm_hash\":u64}",
					    i, j);
				if (mm_push(b, &n, h, d))
					return -1;
				b->mm_count[i]++;
				any++;
			}
		}
		goto done;
	}
	if (!kvp_json_get(rec, "extra_keys", &ek))
		return 0;
	if (!json_object_is_type(ek, json_type_array))
		return kvp_diag_set(d, 0,
		                    "extra_keys: expected an array or null");
	nb = json_object_array_length(ek);
	if (mm_blocks_reserve(b, nb, d))
		return -1;
	for (size_t i = 0; i < nb; i++) {
		struct json_object *bk = json_object_array_get_idx(ek, i);

		b->mm_start[i] = n;
		b->mm_count[i] = 0;
		if (bk == NULL)
			continue;
		if (!json_object_is_type(bk, json_type_array))
			return kvp_diag_set(
			    d, 0, "extra_keys[%zu]: expected an array or null",
			    i);
		for (size_t j = 0; j < json_object_array_length(bk); j++) {
			uint64_t h;

			if (!item_mm_hash(json_object_array_get_idx(bk, j),
			                  ev->lora_name, &h))
				continue;
			if (mm_push(b, &n, h, d))
				return -1;
			b->mm_count[i]++;
			any++;
		}
	}
done:
	if (any == 0)
		return 0;
	ev->n_mm_blocks = nb;
	ev->mm_start = b->mm_start;
	ev->mm_count = b->mm_count;
	ev->mm = b->mm;
	return 0;
}

static int
parse_hashes(const struct json_object *rec, struct kvp_nev_buf *b,
             struct kvp_nev *ev, struct kvp_diag *d)
{
	struct json_object *arr;

	if (kvp_json_req_array(rec, "block_hashes", &arr, d) ||
	    kvp_json_u64_array(arr, KVP_U64_HASH, "block_hashes", &b->hashes,
	                       &b->cap_hashes, &ev->n_hashes, d))
		return -1;
	ev->hashes = b->hashes;
	return 0;
}

static int
parse_common(const struct json_object *rec, struct kvp_nev *ev,
             struct kvp_diag *d)
{
	struct json_object *v;

	if (opt_u32(rec, "group_idx", &ev->has_group, &ev->group_idx, d) ||
	    opt_str(rec, "kv_cache_spec_kind", &ev->kind, d) ||
	    opt_str(rec, "locality", &ev->locality, d) ||
	    opt_str(rec, "medium", &ev->medium, d))
		return -1;
	ev->has_medium = kvp_json_get(rec, "medium", &v);
	return 0;
}

static int
parse_stored(const struct json_object *rec, struct kvp_nev_buf *b,
             struct kvp_nev *ev, struct kvp_diag *d)
{
	struct json_object *arr;
	const char *layout = NULL, *salt = NULL;
	struct json_object *ek;

	if (parse_hashes(rec, b, ev, d) ||
	    kvp_json_opt_u64(rec, "parent_block_hash", KVP_U64_HASH,
	                     &ev->parent, &ev->has_parent, d) ||
	    kvp_json_req_array(rec, "token_ids", &arr, d) ||
	    kvp_json_u64_array(arr, 0, "token_ids", &b->tokens, &b->cap_tokens,
	                       &ev->n_tokens, d) ||
	    kvp_json_req_u64(rec, "block_size", 0, &ev->block_size, d) ||
	    opt_str(rec, "token_layout", &layout, d) ||
	    opt_str(rec, "lora_name", &ev->lora_name, d) ||
	    opt_str(rec, "cache_salt", &salt, d) || parse_common(rec, ev, d))
		return -1;
	ev->tokens = b->tokens;
	if (ev->block_size > UINT32_MAX)
		return kvp_diag_set(d, 0,
		                    "block_size: %llu does not fit in u32",
		                    (unsigned long long)ev->block_size);
	if (layout != NULL && strcmp(layout, "bigram") == 0)
		ev->eagle = 1;
	else if (layout != NULL && strcmp(layout, "flat") != 0)
		return kvp_diag_set(d, 0,
		                    "token_layout: expected \"flat\" or "
		                    "\"bigram\", got \"%.40s\"",
		                    layout);
	if (ev->eagle && ev->n_tokens == 1)
		return kvp_diag_set(d, 0,
		                    "token_ids: a bigram layout has at least "
		                    "2 tokens");
	ev->ns = salt;
	if (salt == NULL && kvp_json_get(rec, "extra_keys", &ek) &&
	    json_object_is_type(ek, json_type_array))
		ev->ns = extra_keys_ns(ek, ev->lora_name);
	return parse_mm(rec, b, ev, d);
}

int
kvp_nev_from_json(const struct json_object *rec, struct kvp_nev_buf *b,
                  struct kvp_nev *ev, struct kvp_diag *d)
{
	const char *kind, *type;
	struct json_object *v;
	uint64_t u;

	memset(ev, 0, sizeof *ev);
	if (kvp_json_req_str(rec, "rec", &kind, d))
		return -1;
	if (strcmp(kind, "event") != 0) {
		if (strcmp(kind, "batch") == 0 || strcmp(kind, "error") == 0 ||
		    strcmp(kind, "gap") == 0 || strcmp(kind, "stale") == 0)
			return 1;
		return kvp_diag_set(d, 0,
		                    "rec: expected \"event\" (a kv-decode "
		                    "record), got \"%.40s\"",
		                    kind);
	}
	if (kvp_json_req_u64(rec, "seq", KVP_U64_STRING, &ev->seq, d) ||
	    kvp_json_req_u64(rec, "idx", 0, &u, d) ||
	    kvp_json_req_u64(rec, "worker_id", KVP_U64_HASH, &ev->worker_id,
	                     d) ||
	    kvp_json_req_str(rec, "type", &type, d))
		return -1;
	if (u > INT64_MAX)
		return kvp_diag_set(d, 0, "idx: out of range");
	ev->idx = (int64_t)u;
	if (kvp_json_get(rec, "dp_rank", &v)) {
		int64_t r;

		if (!json_object_is_type(v, json_type_int))
			return kvp_diag_set(
			    d, 0,
			    "dp_rank: expected an integer or "
			    "null, got %s",
			    json_type_to_name(json_object_get_type(v)));
		r = json_object_get_int64(v);
		if (r > (int64_t)UINT32_MAX || r < INT32_MIN ||
		    (r == INT64_MAX &&
		     json_object_get_uint64(v) > (uint64_t)INT64_MAX))
			return kvp_diag_set(d, 0,
			                    "dp_rank: %lld does not fit in "
			                    "i32/u32",
			                    (long long)r);
		ev->has_rank = 1;
		ev->rank = r;
	}
	if (strcmp(type, "BlockStored") == 0) {
		ev->type = KVP_EV_STORED;
		return parse_stored(rec, b, ev, d);
	}
	if (strcmp(type, "BlockRemoved") == 0) {
		ev->type = KVP_EV_REMOVED;
		return parse_hashes(rec, b, ev, d) || parse_common(rec, ev, d)
		           ? -1
		           : 0;
	}
	if (strcmp(type, "AllBlocksCleared") == 0) {
		ev->type = KVP_EV_CLEARED;
		return 0;
	}
	if (strcmp(type, "Ignored") == 0) {
		ev->type = KVP_EV_IGNORED;
		return 0;
	}
	return kvp_diag_set(d, 0,
	                    "type: expected BlockStored, BlockRemoved, "
	                    "AllBlocksCleared or Ignored, got \"%.40s\"",
	                    type);
}

/* ---- output ----------------------------------------------------------------
 */

static void
write_x(struct kvp_jw *w, const struct kvp_nout *o)
{
	kvp_jw_key(w, "x");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "seq", o->seq);
	kvp_jw_kv_i64(w, "idx", o->idx);
	kvp_jw_kv_str(w, "action", kvp_norm_action_name(o->action));
	kvp_jw_kv_u64(w, "kept", o->kept);
	kvp_jw_kv_u64(w, "excluded", o->excluded);
	kvp_jw_obj_end(w);
}

static void
write_blocks(struct kvp_jw *w, const struct kvp_nout *o)
{
	kvp_jw_key(w, "blocks");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < o->n_blocks; i++) {
		kvp_jw_obj_begin(w);
		kvp_jw_kv_hash(w, "block_hash", o->block_hash[i]);
		kvp_jw_kv_hash(w, "tokens_hash", o->tokens_hash[i]);
		kvp_jw_key(w, "mm_extra_info");
		if (o->blk_mm_count[i] == 0) {
			kvp_jw_null(w);
		} else {
			kvp_jw_obj_begin(w);
			kvp_jw_key(w, "mm_objects");
			kvp_jw_arr_begin(w);
			for (size_t j = 0; j < o->blk_mm_count[i]; j++) {
				kvp_jw_obj_begin(w);
				kvp_jw_kv_hash(w, "mm_hash",
				               o->mm[o->blk_mm_start[i] + j]);
				kvp_jw_key(w, "offsets");
				kvp_jw_arr_begin(w);
				kvp_jw_arr_end(w);
				kvp_jw_obj_end(w);
			}
			kvp_jw_arr_end(w);
			kvp_jw_obj_end(w);
		}
		kvp_jw_obj_end(w);
	}
	kvp_jw_arr_end(w);
}

void
kvp_nout_write(struct kvp_jw *w, const struct kvp_nout *o)
{
	kvp_jw_obj_begin(w);
	if (o->kind == KVP_NOUT_FILTERED) {
		kvp_jw_kv_str(w, "rec", "filtered");
		kvp_jw_kv_u64(w, "seq", o->seq);
		kvp_jw_kv_i64(w, "idx", o->idx);
		kvp_jw_kv_hash(w, "worker_id", o->worker_id);
		kvp_jw_kv_u64(w, "dp_rank", o->dp_rank);
		kvp_jw_kv_str(w, "event_type", kvp_ev_type_name(o->in_type));
		kvp_jw_kv_str(w, "reason", o->reason);
		kvp_jw_obj_end(w);
		kvp_jw_end_record(w);
		return;
	}
	kvp_jw_kv_hash(w, "worker_id", o->worker_id);
	kvp_jw_kv_str(w, "storage_tier", kvp_norm_tier_name(o->tier));
	kvp_jw_kv_str(w, "residency_domain", "worker");
	kvp_jw_key(w, "event");
	kvp_jw_obj_begin(w);
	kvp_jw_kv_u64(w, "event_id", o->event_id);
	kvp_jw_key(w, "data");
	switch (o->data) {
	case KVP_ND_STORED:
		kvp_jw_obj_begin(w);
		kvp_jw_key(w, "stored");
		kvp_jw_obj_begin(w);
		if (o->has_parent)
			kvp_jw_kv_hash(w, "parent_hash", o->parent);
		else
			kvp_jw_kv_null(w, "parent_hash");
		kvp_jw_kv_null(w, "start_position");
		write_blocks(w, o);
		kvp_jw_obj_end(w);
		kvp_jw_obj_end(w);
		break;
	case KVP_ND_REMOVED:
		kvp_jw_obj_begin(w);
		kvp_jw_key(w, "removed");
		kvp_jw_obj_begin(w);
		kvp_jw_key(w, "block_hashes");
		kvp_jw_hash_array(w, o->removed, o->n_removed);
		kvp_jw_obj_end(w);
		kvp_jw_obj_end(w);
		break;
	default:
		kvp_jw_str(w, "cleared");
		break;
	}
	kvp_jw_kv_u64(w, "dp_rank", o->dp_rank);
	kvp_jw_obj_end(w);
	write_x(w, o);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

/* ---- fast path ------------------------------------------------------------
 */

/* Nesting allowed in the values of unknown keys (kv-decode adds objects
 * such as x_capture). */
#define SKIP_DEPTH 8

struct span {
	char *s;
	size_t n;
	int present; /* key seen */
	int null;
};

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
	K_COUNT,
	K_OTHER = K_COUNT,
};

#define FKEY(s)                                                                \
	{                                                                      \
		s, sizeof s - 1                                                \
	}
static const struct {
	const char *s;
	size_t n;
} fkey_names[K_COUNT] = {FKEY("rec"),          FKEY("seq"),
                         FKEY("idx"),          FKEY("worker_id"),
                         FKEY("dp_rank"),      FKEY("type"),
                         FKEY("block_hashes"), FKEY("parent_block_hash"),
                         FKEY("token_ids"),    FKEY("block_size"),
                         FKEY("token_layout"), FKEY("lora_name"),
                         FKEY("medium"),       FKEY("cache_salt"),
                         FKEY("extra_keys"),   FKEY("block_mm_infos"),
                         FKEY("group_idx"),    FKEY("kv_cache_spec_kind"),
                         FKEY("locality")};
#undef FKEY

static enum fkey
fkey_of(const char *s, size_t n)
{
	for (int k = 0; k < K_COUNT; k++)
		if (fkey_names[k].n == n && fkey_names[k].s[0] == s[0] &&
		    memcmp(fkey_names[k].s, s, n) == 0)
			return (enum fkey)k;
	return K_OTHER;
}

static int
span_is(const struct span *sp, const char *lit)
{
	return sp->present && !sp->null && strlen(lit) == sp->n &&
	       memcmp(sp->s, lit, sp->n) == 0;
}

int
kvp_nev_from_line(char *line, size_t len, struct kvp_nev_buf *b,
                  struct kvp_nev *ev)
{
	struct kvp_jscan c;
	struct kvp_jspan ks, vs;
	struct span str[K_COUNT];
	uint64_t num[K_COUNT];
	int isnum[K_COUNT], neg[K_COUNT], seen[K_COUNT];
	size_t n_h = 0, n_t = 0, nm = 0;
	int rc;

	memset(ev, 0, sizeof *ev);
	memset(str, 0, sizeof str);
	memset(isnum, 0, sizeof isnum);
	memset(neg, 0, sizeof neg);
	memset(seen, 0, sizeof seen);
	kvp_jscan_init(&c, line, len);
	kvp_jscan_ws(&c);
	if (kvp_jscan_obj_begin(&c) != 0)
		return 1;
	while ((rc = kvp_jscan_obj_next(&c, &nm, &ks)) == 1) {
		enum fkey k = fkey_of(line + ks.off, ks.len);
		int ch = kvp_jscan_peek(&c);

		if (k != K_OTHER) {
			if (seen[k]++)
				return 1;
			str[k].present = 1;
		}
		if (ch < 0)
			return 1;
		if (k == K_OTHER) {
			if (kvp_jscan_skip(&c, SKIP_DEPTH) != 0)
				return 1;
		} else if (ch == 'n') {
			if (kvp_jscan_literal(&c, "null") != 0)
				return 1;
			str[k].null = 1;
		} else if (k == K_HASHES) {
			if (kvp_jscan_u64_array(&c, 1, &b->hashes,
			                        &b->cap_hashes, &n_h) != 0)
				return 1;
		} else if (k == K_TOKENS) {
			if (kvp_jscan_u64_array(&c, 0, &b->tokens,
			                        &b->cap_tokens, &n_t) != 0)
				return 1;
		} else if (k == K_EXTRA) {
			if (null_array(&c) != 0)
				return 1;
		} else if (ch == '"') {
			if (kvp_jscan_string(&c, &vs) != 0)
				return 1;
			str[k].s = line + vs.off;
			str[k].n = vs.len;
		} else if (kvp_jscan_int(&c, &num[k], &neg[k]) == 0 &&
		           !(neg[k] && num[k] == 0)) {
			isnum[k] = 1;
		} else {
			return 1;
		}
	}
	if (rc != 0 || nm == 0 || kvp_jscan_end(&c) != 0)
		return 1;
	/* Escapes or non-ASCII bytes in any string: json-c decodes them. */
	if (c.flags & (KVP_JSCAN_ESC | KVP_JSCAN_NONASCII))
		return 1;

	/* Types and requirements: anything off goes to the json-c path. */
	if (!span_is(&str[K_REC], "event") || !isnum[K_SEQ] || neg[K_SEQ] ||
	    !isnum[K_IDX] || neg[K_IDX] || num[K_IDX] > INT64_MAX ||
	    !isnum[K_WORKER] || str[K_TYPE].s == NULL)
		return 1;
	for (int k = 0; k < K_COUNT; k++) {
		int want_num = k == K_SEQ || k == K_IDX || k == K_WORKER ||
		               k == K_RANK || k == K_PARENT || k == K_BS ||
		               k == K_GROUP;
		int want_str = k == K_REC || k == K_TYPE || k == K_LAYOUT ||
		               k == K_LORA || k == K_MEDIUM || k == K_SALT ||
		               k == K_KIND || k == K_LOCALITY;

		if (!str[k].present || str[k].null)
			continue;
		if ((isnum[k] && !want_num) ||
		    (str[k].s != NULL && !want_str) ||
		    (want_num && !isnum[k]) || (want_str && str[k].s == NULL))
			return 1;
		if (k == K_MMINFOS)
			return 1;
	}
	ev->seq = num[K_SEQ];
	ev->idx = (int64_t)num[K_IDX];
	ev->worker_id = num[K_WORKER];
	if (isnum[K_RANK]) {
		int64_t r = (int64_t)num[K_RANK];

		if ((!neg[K_RANK] && num[K_RANK] > UINT32_MAX) ||
		    (neg[K_RANK] && r < INT32_MIN))
			return 1;
		ev->has_rank = 1;
		ev->rank = neg[K_RANK] ? r : (int64_t)num[K_RANK];
	}
	if (span_is(&str[K_TYPE], "BlockStored")) {
		ev->type = KVP_EV_STORED;
		if (!seen[K_HASHES] || str[K_HASHES].null || !seen[K_TOKENS] ||
		    str[K_TOKENS].null || !isnum[K_BS] || neg[K_BS] ||
		    num[K_BS] > UINT32_MAX || neg[K_GROUP] ||
		    (isnum[K_GROUP] && num[K_GROUP] > UINT32_MAX))
			return 1;
		if (span_is(&str[K_LAYOUT], "bigram"))
			ev->eagle = 1;
		else if (str[K_LAYOUT].s != NULL &&
		         !span_is(&str[K_LAYOUT], "flat"))
			return 1;
		if (ev->eagle && n_t == 1)
			return 1;
		ev->tokens = b->tokens;
		ev->n_tokens = n_t;
		ev->block_size = num[K_BS];
		ev->has_parent = isnum[K_PARENT];
		ev->parent = num[K_PARENT];
	} else if (span_is(&str[K_TYPE], "BlockRemoved")) {
		ev->type = KVP_EV_REMOVED;
		if (!seen[K_HASHES] || str[K_HASHES].null || neg[K_GROUP] ||
		    (isnum[K_GROUP] && num[K_GROUP] > UINT32_MAX))
			return 1;
	} else if (span_is(&str[K_TYPE], "AllBlocksCleared")) {
		ev->type = KVP_EV_CLEARED;
		return 0;
	} else if (span_is(&str[K_TYPE], "Ignored")) {
		ev->type = KVP_EV_IGNORED;
		return 0;
	} else {
		return 1;
	}
	ev->hashes = b->hashes;
	ev->n_hashes = n_h;
	ev->has_group = isnum[K_GROUP];
	ev->group_idx = (uint32_t)num[K_GROUP];
	/* Accepted: terminate the strings in place (the closing quotes). */
	for (int k = 0; k < K_COUNT; k++)
		if (str[k].s != NULL)
			str[k].s[str[k].n] = '\0';
	ev->kind = str[K_KIND].s;
	ev->locality = str[K_LOCALITY].s;
	ev->medium = str[K_MEDIUM].s;
	ev->has_medium = str[K_MEDIUM].s != NULL;
	if (ev->type == KVP_EV_STORED) {
		ev->lora_name = str[K_LORA].s;
		ev->ns = str[K_SALT].s;
	}
	return 0;
}

/* ---- reader
 * ------------------------------------------------------------------ */

int
kvp_nev_reader_init(struct kvp_nev_reader *r)
{
	memset(r, 0, sizeof *r);
	kvp_nev_buf_init(&r->buf);
	r->tok = json_tokener_new();
	return r->tok == NULL ? -1 : 0;
}

void
kvp_nev_reader_fini(struct kvp_nev_reader *r)
{
	if (r->last != NULL)
		json_object_put(r->last);
	if (r->tok != NULL)
		json_tokener_free(r->tok);
	kvp_nev_buf_fini(&r->buf);
	memset(r, 0, sizeof *r);
}

int
kvp_nev_reader_line(struct kvp_nev_reader *r, char *line, size_t len,
                    struct kvp_nev *ev, struct kvp_diag *d)
{
	if (r->last != NULL) {
		json_object_put(r->last);
		r->last = NULL;
	}
	if (kvp_nev_from_line(line, len, &r->buf, ev) == 0) {
		r->fast++;
		return 0;
	}
	r->slow++;
	r->last = kvp_json_parse_object(r->tok, line, len, d);
	if (r->last == NULL)
		return -1;
	return kvp_nev_from_json(r->last, &r->buf, ev, d);
}
