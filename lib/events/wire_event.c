/* SPDX-License-Identifier: MIT */
/* wire_event.c — one KV event of a loaded batch decoded into a struct
 * kvp_wire_event (docs/spec/kv-events.md §6.2.3–7): the array forms (vLLM,
 * SGLang, Dynamo's positional tail) and the map form. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "events/events_internal.h"
#include "events/wire.h"

/* Sizes of the unsigned integer encodings (fixint, uint 8/16/32/64); 0 for
 * everything else. */
static const uint8_t uint_len[256] = {
    [0x00 ... 0x7f] = 1, [0xcc] = 2, [0xcd] = 3, [0xce] = 5, [0xcf] = 9,
};

/* Reads one hash (§6.2.5). what names the field; i >= 0 is its index. */
static int
get_hash(const struct mp_val *o, const char *what, long i, uint64_t *out,
         unsigned *repr, struct kvp_diag *d)
{
	char where[48];

	switch (o->type) {
	case MP_UINT:
		*out = o->v.u;
		*repr |= KVP_REPR_UINT;
		return 0;
	case MP_INT:
		*out = (uint64_t)o->v.i;
		*repr |= KVP_REPR_INT;
		return 0;
	case MP_BIN: {
		const uint8_t *p = (const uint8_t *)o->ptr;
		uint32_t n = o->size, k = n > 8 ? n - 8 : 0;
		uint64_t v = 0;

		if (n == 0)
			break;
		for (; k < n; k++)
			v = v << 8 | p[k];
		*out = v;
		*repr |= KVP_REPR_BIN;
		return 0;
	}
	default:
		break;
	}
	if (i >= 0)
		snprintf(where, sizeof where, "%s[%ld]", what, i);
	else
		snprintf(where, sizeof where, "%s", what);
	if (o->type == MP_BIN)
		return kvp_diag_set(d, 0, "%s: empty bin hash", where);
	return kvp_diag_set(d, 0, "%s: expected an integer or bin hash, got %s",
	                    where, mp_tname(o));
}

static int
get_u32(const struct mp_val *o, const char *what, uint32_t *out,
        struct kvp_diag *d)
{
	if (o->type == MP_INT)
		return kvp_diag_set(d, 0, "%s: %lld is negative", what,
		                    (long long)o->v.i);
	if (o->type != MP_UINT)
		return kvp_diag_set(d, 0, "%s: expected an integer, got %s",
		                    what, mp_tname(o));
	if (o->v.u > UINT32_MAX)
		return kvp_diag_set(d, 0, "%s: %llu does not fit in u32", what,
		                    (unsigned long long)o->v.u);
	*out = (uint32_t)o->v.u;
	return 0;
}

static int
get_opt_u32(const struct mp_val *o, const char *what, int *has, uint32_t *out,
            struct kvp_diag *d)
{
	if (o->type == MP_NIL) {
		*has = 0;
		return 0;
	}
	if (get_u32(o, what, out, d) != 0)
		return -1;
	*has = 1;
	return 0;
}

static int
get_opt_i64(const struct mp_val *o, const char *what, int *has, int64_t *out,
            struct kvp_diag *d)
{
	switch (o->type) {
	case MP_NIL:
		*has = 0;
		return 0;
	case MP_INT:
		*out = o->v.i;
		break;
	case MP_UINT:
		if (o->v.u > INT64_MAX)
			return kvp_diag_set(d, 0,
			                    "%s: %llu does not fit in i64",
			                    what, (unsigned long long)o->v.u);
		*out = (int64_t)o->v.u;
		break;
	default:
		return kvp_diag_set(d, 0, "%s: expected an integer, got %s",
		                    what, mp_tname(o));
	}
	*has = 1;
	return 0;
}

static int
get_opt_str(const struct mp_val *o, const char *what, struct kvp_wire_str *s,
            struct kvp_diag *d)
{
	if (o->type == MP_NIL) {
		s->present = 0;
		return 0;
	}
	if (o->type != MP_STR)
		return kvp_diag_set(d, 0, "%s: expected a string, got %s", what,
		                    mp_tname(o));
	s->p = o->ptr;
	s->len = o->size;
	s->present = 1;
	return 0;
}

/* ---- fields -------------------------------------------------------------- */

static int
get_opt_list(const struct mp_val *v, const char *what, kvp_wire_value *out,
             struct kvp_diag *d)
{
	if (v->type == MP_NIL) {
		*out = NULL;
		return 0;
	}
	if (v->type != MP_ARRAY)
		return kvp_diag_set(d, 0, "%s: expected an array, got %s", what,
		                    mp_tname(v));
	*out = v->at;
	return 0;
}

/* The array functions below read the elements of the array whose header
 * is in a, and set *end to the byte after it on success. */
static int
get_hashes(struct kvp_wire *w, const struct mp_val *a,
           struct kvp_wire_event *ev, const uint8_t **end, struct kvp_diag *d)
{
	const uint8_t *p = a->kids;
	uint32_t n, i;
	struct mp_val e;

	if (a->type != MP_ARRAY)
		return kvp_diag_set(d, 0,
		                    "block_hashes: expected an array, got %s",
		                    mp_tname(a));
	n = a->v.n;
	if (kvp_grow(&w->hashes, &w->hcap, n, sizeof *w->hashes) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (i = 0; i < n; i++) {
		/* 64-bit encodings inline (a non-negative int 64 is an
		 * unsigned hash, as msgpack-c reads it) */
		if (*p == 0xcf || *p == 0xd3) {
			uint64_t x = mp_be64(p + 1);

			w->hashes[i] = x;
			ev->hash_repr |= *p == 0xd3 && x >> 63 ? KVP_REPR_INT
			                                       : KVP_REPR_UINT;
			p += 9;
			continue;
		}
		p = mp_head(p, &e);
		if (get_hash(&e, "block_hashes", (long)i, &w->hashes[i],
		             &ev->hash_repr, d) != 0)
			return -1;
	}
	ev->hashes = w->hashes;
	ev->n_hashes = n;
	*end = p;
	return 0;
}

static int
get_parent(const struct mp_val *o, struct kvp_wire_event *ev,
           struct kvp_diag *d)
{
	if (o->type == MP_NIL) {
		ev->has_parent = 0;
		return 0;
	}
	if (get_hash(o, "parent_block_hash", -1, &ev->parent, &ev->hash_repr,
	             d) != 0)
		return -1;
	ev->has_parent = 1;
	return 0;
}

static int
get_token(const struct mp_val *o, uint32_t i, int j, uint64_t *out,
          size_t *wide, struct kvp_diag *d)
{
	char where[48];

	if (o->type == MP_UINT) {
		*out = o->v.u;
		if (*out > UINT32_MAX)
			(*wide)++;
		return 0;
	}
	if (j < 0)
		snprintf(where, sizeof where, "token_ids[%u]", i);
	else
		snprintf(where, sizeof where, "token_ids[%u][%d]", i, j);
	if (o->type == MP_INT)
		return kvp_diag_set(d, 0, "%s: negative token id %lld", where,
		                    (long long)o->v.i);
	return kvp_diag_set(d, 0, "%s: expected an integer token id, got %s",
	                    where, mp_tname(o));
}

static int
get_tokens(struct kvp_wire *w, const struct mp_val *a,
           struct kvp_wire_event *ev, const uint8_t **end, struct kvp_diag *d)
{
	const uint8_t *p = a->kids;
	uint32_t n, i;
	struct mp_val e, t;

	if (a->type != MP_ARRAY)
		return kvp_diag_set(
		    d, 0, "token_ids: expected an array, got %s", mp_tname(a));
	n = a->v.n;
	if (kvp_grow(&w->tokens, &w->tcap, (size_t)n + 1, sizeof *w->tokens) !=
	    0)
		return kvp_diag_set(d, 0, "out of memory");
	ev->tokens = w->tokens;
	/* token_ids[0] is an array: fixarray, array 16 or array 32 */
	ev->bigram = n > 0 && ((*p & 0xf0) == 0x90 || *p == 0xdc || *p == 0xdd);
	if (!ev->bigram) {
		for (i = 0; i < n; i++) {
			unsigned k = uint_len[*p];

			/* The unsigned encodings without a branch on which
			 * one (token ids mix uint 16 and uint 32 at random):
			 * 8 bytes are loaded and shifted. The rest (signed
			 * encodings, wrong types, the payload's last bytes)
			 * go through mp_head(). */
			if (k != 0 && w->end - p >= 9) {
				uint64_t x =
				    mp_be64(p + 1) >> ((8 * (9 - k)) & 63);

				x = k == 1 ? *p : x;
				w->tokens[i] = x;
				ev->wide_tokens += x > UINT32_MAX;
				p += k;
				continue;
			}
			p = mp_head(p, &e);
			if (get_token(&e, i, -1, &w->tokens[i],
			              &ev->wide_tokens, d) != 0)
				return -1;
		}
		ev->n_tokens = n;
		*end = p;
		return 0;
	}
	/* EAGLE bigrams: N pairs → the first head, then every tail. */
	for (i = 0; i < n; i++) {
		const uint8_t *q = mp_head(p, &e);

		if (e.type != MP_ARRAY)
			return kvp_diag_set(
			    d, 0,
			    "token_ids[%u]: expected a bigram "
			    "pair (token_ids[0] is one), got %s",
			    i, mp_tname(&e));
		if (e.v.n < 2)
			return kvp_diag_set(d, 0,
			                    "token_ids[%u]: bigram pair has %u "
			                    "element(s), needs 2",
			                    i, e.v.n);
		q = mp_next(q, &t);
		if (i == 0 && get_token(&t, i, 0, &w->tokens[0],
		                        &ev->wide_tokens, d) != 0)
			return -1;
		q = mp_next(q, &t);
		if (get_token(&t, i, 1, &w->tokens[i + 1], &ev->wide_tokens,
		              d) != 0)
			return -1;
		p = mp_skip_n(q, e.v.n - 2);
	}
	ev->n_tokens = n + 1;
	*end = p;
	return 0;
}

static int
add_unknown(struct kvp_wire *w, struct kvp_wire_event *ev,
            const struct mp_val *key, int metadata, struct kvp_diag *d)
{
	if (kvp_grow(&w->unknown, &w->ucap, ev->n_unknown + 1,
	             sizeof *w->unknown) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	ev->unknown = w->unknown;
	ev->unknown[ev->n_unknown].p = key->ptr;
	ev->unknown[ev->n_unknown].len = key->size;
	ev->unknown[ev->n_unknown].present = metadata ? 2 : 1;
	ev->n_unknown++;
	return 0;
}

/* SGLang's position-7 metadata map: {cache_salt[, session_id]}. */
static int
get_metadata(struct kvp_wire *w, const struct mp_val *m,
             struct kvp_wire_event *ev, struct kvp_diag *d)
{
	const uint8_t *p = m->kids;
	uint32_t i;

	for (i = 0; i < m->v.n; i++) {
		struct mp_val k, v;

		p = mp_next(p, &k);
		p = mp_next(p, &v);
		if (k.type != MP_STR)
			return kvp_diag_set(d, 0,
			                    "metadata map: key is a %s, not a "
			                    "string",
			                    mp_tname(&k));
		if (mp_is_str(&k, "cache_salt")) {
			if (get_opt_str(&v, "cache_salt", &ev->cache_salt, d))
				return -1;
		} else if (mp_is_str(&k, "session_id")) {
			if (get_opt_str(&v, "session_id", &ev->session_id, d))
				return -1;
		} else if (add_unknown(w, ev, &k, 1, d) != 0) {
			return -1;
		}
	}
	return 0;
}

/*
 * The positional tail after extra_keys (stores) or medium (removals):
 * Dynamo's fixed slots [group_idx:u32, kind:str, sliding_window:u32,
 * locality:str, source_kind:str] when there are at least 4 and each has
 * its type (or nil); otherwise the legacy order: first integer group_idx,
 * second sliding_window, a string the kind, a list block_mm_infos.
 * t holds the first min(n, 5) elements, p points after them.
 */
static int
fixed_tail(const struct mp_val *t, size_t n)
{
	static const int want_int[5] = {1, 0, 1, 0, 0};
	size_t i;

	if (n < 4)
		return 0;
	for (i = 0; i < n && i < 5; i++) {
		if (t[i].type == MP_NIL)
			continue;
		if (want_int[i] ? !mp_is_int(&t[i]) : t[i].type != MP_STR)
			return 0;
	}
	return 1;
}

static int
legacy_elem(const struct mp_val *v, struct kvp_wire_event *ev,
            struct kvp_diag *d)
{
	const struct mp_val *o = v;

	if (o->type == MP_NIL)
		return 0;
	if (mp_is_int(o) && !ev->has_group_idx) {
		if (get_opt_u32(o, "group_idx", &ev->has_group_idx,
		                &ev->group_idx, d))
			return -1;
	} else if (mp_is_int(o) && !ev->has_sliding_window) {
		if (get_opt_u32(o, "kv_cache_spec_sliding_window",
		                &ev->has_sliding_window, &ev->sliding_window,
		                d))
			return -1;
	} else if (o->type == MP_STR && !ev->kind.present) {
		get_opt_str(o, "kv_cache_spec_kind", &ev->kind, d);
	} else if (o->type == MP_ARRAY && ev->block_mm_infos == NULL) {
		ev->block_mm_infos = v->at;
	} else {
		ev->surplus++;
	}
	return 0;
}

/* Reads the n tail elements at *p; *p is left after them on success. */
static int
get_tail(const uint8_t **p, size_t n, struct kvp_wire_event *ev,
         struct kvp_diag *d)
{
	struct mp_val t[5];
	size_t i, k = n < 5 ? n : 5;
	const uint8_t *q = *p;

	for (i = 0; i < k; i++)
		q = mp_next(q, &t[i]);
	if (fixed_tail(t, n)) {
		if (get_opt_u32(&t[0], "group_idx", &ev->has_group_idx,
		                &ev->group_idx, d) ||
		    get_opt_str(&t[1], "kv_cache_spec_kind", &ev->kind, d) ||
		    get_opt_u32(&t[2], "kv_cache_spec_sliding_window",
		                &ev->has_sliding_window, &ev->sliding_window,
		                d) ||
		    get_opt_str(&t[3], "locality", &ev->locality, d) ||
		    (n > 4 &&
		     get_opt_str(&t[4], "source_kind", &ev->source_kind, d)))
			return -1;
		ev->surplus += n > 5 ? n - 5 : 0;
		*p = n > 5 ? mp_skip_n(q, n - 5) : q;
		return 0;
	}
	for (i = 0; i < k; i++)
		if (legacy_elem(&t[i], ev, d) != 0)
			return -1;
	for (; i < n; i++) {
		q = mp_next(q, &t[0]);
		if (legacy_elem(&t[0], ev, d) != 0)
			return -1;
	}
	*p = q;
	return 0;
}

/* ---- events ----------------------------------------------------------------
 */

/* Array-form events: p points at element 1 (after the tag), n is the
 * array length; *p is left after the event on success. */
static int
stored_array(struct kvp_wire *w, const uint8_t **pp, size_t n,
             struct kvp_wire_event *ev, struct kvp_diag *d)
{
	const uint8_t *p = *pp;
	struct mp_val e;

	if (n < 5)
		return kvp_diag_set(d, 0,
		                    "BlockStored array has %zu element(s); "
		                    "needs at least 5 (tag, block_hashes, "
		                    "parent_block_hash, token_ids, block_size)",
		                    n);
	p = mp_head(p, &e);
	if (get_hashes(w, &e, ev, &p, d))
		return -1;
	p = mp_next(p, &e);
	if (get_parent(&e, ev, d))
		return -1;
	p = mp_head(p, &e);
	if (get_tokens(w, &e, ev, &p, d))
		return -1;
	p = mp_next(p, &e);
	if (get_u32(&e, "block_size", &ev->block_size, d))
		return -1;
	ev->has_block_size = 1;
	if (n > 5) {
		p = mp_next(p, &e);
		if (get_opt_i64(&e, "lora_id", &ev->has_lora_id, &ev->lora_id,
		                d))
			return -1;
	}
	if (n > 6) {
		p = mp_next(p, &e);
		if (get_opt_str(&e, "medium", &ev->medium, d))
			return -1;
	}
	if (n > 7) {
		p = mp_next(p, &e);
		if (e.type == MP_MAP) {
			if (get_metadata(w, &e, ev, d) != 0)
				return -1;
		} else if (e.type == MP_STR || e.type == MP_NIL) {
			get_opt_str(&e, "lora_name", &ev->lora_name, d);
		} else {
			return kvp_diag_set(d, 0,
			                    "element 7: expected lora_name "
			                    "(string), a metadata map or nil, "
			                    "got %s",
			                    mp_tname(&e));
		}
	}
	if (n > 8) {
		p = mp_next(p, &e);
		if (get_opt_list(&e, "extra_keys", &ev->extra_keys, d))
			return -1;
	}
	if (n > 9 && get_tail(&p, n - 9, ev, d))
		return -1;
	*pp = p;
	return 0;
}

static int
removed_array(struct kvp_wire *w, const uint8_t **pp, size_t n,
              struct kvp_wire_event *ev, struct kvp_diag *d)
{
	const uint8_t *p = *pp;
	struct mp_val e;

	if (n < 2)
		return kvp_diag_set(d, 0,
		                    "%s array has 1 element; needs at least 2 "
		                    "(tag, block_hashes)",
		                    ev->type == KVP_WIRE_INACTIVE
		                        ? "BlockInactive"
		                        : "BlockRemoved");
	p = mp_head(p, &e);
	if (get_hashes(w, &e, ev, &p, d))
		return -1;
	if (n > 2) {
		p = mp_next(p, &e);
		if (get_opt_str(&e, "medium", &ev->medium, d))
			return -1;
	}
	if (n > 3 && get_tail(&p, n - 3, ev, d))
		return -1;
	*pp = p;
	return 0;
}

static int
cleared_array(const uint8_t **pp, size_t n, struct kvp_wire_event *ev,
              struct kvp_diag *d)
{
	struct mp_val e;

	if (n > 1) {
		*pp = mp_next(*pp, &e);
		if (get_opt_str(&e, "source_kind", &ev->source_kind, d))
			return -1;
	}
	ev->surplus = n > 2 ? n - 2 : 0;
	if (n > 2)
		*pp = mp_skip_n(*pp, n - 2);
	return 0;
}

static int
set_type(const struct mp_val *tag, struct kvp_wire_event *ev,
         struct kvp_diag *d)
{
	if (tag->type != MP_STR)
		return kvp_diag_set(d, 0,
		                    "event tag: expected a string, got %s",
		                    mp_tname(tag));
	if (mp_is_str(tag, "BlockStored"))
		ev->type = KVP_WIRE_STORED;
	else if (mp_is_str(tag, "BlockRemoved"))
		ev->type = KVP_WIRE_REMOVED;
	else if (mp_is_str(tag, "AllBlocksCleared"))
		ev->type = KVP_WIRE_CLEARED;
	else if (mp_is_str(tag, "Ignored"))
		ev->type = KVP_WIRE_IGNORED;
	else if (mp_is_str(tag, "BlockInactive"))
		ev->type = KVP_WIRE_INACTIVE;
	else if (mp_is_str(tag, "BlockTransferred")) {
		ev->type = KVP_WIRE_THIRD_PARTY;
		ev->third_party |= 1u << KVP_TP_BLOCK_TRANSFERRED;
		ev->tag.p = tag->ptr;
		ev->tag.len = tag->size;
		ev->tag.present = 1;
	} else
		return kvp_diag_set(d, 0, "unknown event tag \"%.*s\"",
		                    tag->size > 64 ? 64 : (int)tag->size,
		                    tag->ptr);
	return 0;
}

/* Map keys: which event types read each one. */
enum {
	T_S = 1 << KVP_WIRE_STORED,
	T_R = 1 << KVP_WIRE_REMOVED,
	T_C = 1 << KVP_WIRE_CLEARED,
	T_I = 1 << KVP_WIRE_INACTIVE,
	T_ALL = T_S | T_R | T_C | T_I,
};

static const char *const third_names[KVP_TP_COUNT] = {
    [KVP_TP_TOKEN_OFFSET] = "token_offset",
    [KVP_TP_COMPONENT_ID] = "component_id",
    [KVP_TP_SNAPSHOT_VERSION] = "snapshot_version",
    [KVP_TP_BLOCK_TRANSFERRED] = "BlockTransferred",
};

const char *
kvp_wire_third_name(int i)
{
	return i >= 0 && i < KVP_TP_COUNT ? third_names[i] : NULL;
}

enum key_id {
	K_BLOCK_HASHES,
	K_PARENT,
	K_TOKENS,
	K_BLOCK_SIZE,
	K_LORA_ID,
	K_MEDIUM,
	K_LORA_NAME,
	K_EXTRA_KEYS,
	K_GROUP_IDX,
	K_KIND,
	K_SLIDING,
	K_CACHE_SALT,
	K_SESSION_ID,
	K_LOCALITY,
	K_SOURCE_KIND,
	K_MM_INFOS,
	K_OWNERSHIP,
	K_SHA_HASHES,
	K_SHA_PARENT,
	K_OFFSETS,
	K_TP_TOKEN_OFFSET, /* the third-party keys, in KVP_TP_* order */
	K_TP_COMPONENT_ID,
	K_TP_SNAPSHOT_VERSION,
	K_NKEYS
};

static const struct {
	const char *name;
	unsigned types;
} map_keys[K_NKEYS] = {
    [K_BLOCK_HASHES] = {"block_hashes", T_S | T_R | T_I},
    [K_PARENT] = {"parent_block_hash", T_S},
    [K_TOKENS] = {"token_ids", T_S},
    [K_BLOCK_SIZE] = {"block_size", T_S},
    [K_LORA_ID] = {"lora_id", T_S},
    [K_MEDIUM] = {"medium", T_S | T_R | T_I},
    [K_LORA_NAME] = {"lora_name", T_S},
    [K_EXTRA_KEYS] = {"extra_keys", T_S},
    [K_GROUP_IDX] = {"group_idx", T_S | T_R | T_I},
    [K_KIND] = {"kv_cache_spec_kind", T_S | T_R | T_I},
    [K_SLIDING] = {"kv_cache_spec_sliding_window", T_S | T_R | T_I},
    [K_CACHE_SALT] = {"cache_salt", T_S},
    [K_SESSION_ID] = {"session_id", T_S},
    [K_LOCALITY] = {"locality", T_S | T_R | T_I},
    [K_SOURCE_KIND] = {"source_kind", T_ALL},
    [K_MM_INFOS] = {"block_mm_infos", T_S},
    [K_OWNERSHIP] = {"ownership", T_S},
    [K_SHA_HASHES] = {"block_hashes_sha256", T_S | T_R},
    [K_SHA_PARENT] = {"parent_block_hash_sha256", T_S},
    [K_OFFSETS] = {"block_offsets", T_S},
    [K_TP_TOKEN_OFFSET] = {"token_offset", T_ALL},
    [K_TP_COMPONENT_ID] = {"component_id", T_ALL},
    [K_TP_SNAPSHOT_VERSION] = {"snapshot_version", T_ALL},
};

/* A full SHA-256 digest as SGLang writes it: 64 lowercase hex digits. */
static int
is_hex64(const struct mp_val *o)
{
	if (o->type != MP_STR || o->size != 64)
		return 0;
	for (size_t i = 0; i < 64; i++) {
		char c = o->ptr[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	return 1;
}

/* block_hashes_sha256: nil or an array of digests. */
static int
get_sha_hashes(const struct mp_val *v, struct kvp_wire_event *ev,
               struct kvp_diag *d)
{
	const uint8_t *p = v->kids;
	struct mp_val e;

	if (get_opt_list(v, "block_hashes_sha256", &ev->sha256_hashes, d))
		return -1;
	for (uint32_t i = 0; v->type == MP_ARRAY && i < v->v.n; i++) {
		p = mp_next(p, &e);
		if (!is_hex64(&e))
			return kvp_diag_set(d, 0,
			                    "block_hashes_sha256[%u]: expected "
			                    "64 lowercase hex digits, got %s",
			                    i, mp_tname(&e));
	}
	return 0;
}

/* block_hashes_sha256 (id K_SHA_HASHES) or parent_block_hash_sha256. */
static int
get_sha(int id, const struct mp_val *o, struct kvp_wire_event *ev,
        struct kvp_diag *d)
{
	if (id == K_SHA_HASHES)
		return get_sha_hashes(o, ev, d);
	if (o->type != MP_NIL && !is_hex64(o))
		return kvp_diag_set(d, 0,
		                    "parent_block_hash_sha256: expected 64 "
		                    "lowercase hex digits or nil, got %s",
		                    mp_tname(o));
	return get_opt_str(o, "parent_block_hash_sha256", &ev->sha256_parent,
	                   d);
}

/* block_offsets (vLLM's sparse stores): nil, or an array of u32 chunk
 * indexes, one per block hash (checked by map_missing()). */
static int
get_offsets(struct kvp_wire *w, const struct mp_val *a,
            struct kvp_wire_event *ev, struct kvp_diag *d)
{
	const uint8_t *p = a->kids;
	char where[40];

	if (a->type == MP_NIL)
		return 0;
	if (a->type != MP_ARRAY)
		return kvp_diag_set(d, 0,
		                    "block_offsets: expected an array, got %s",
		                    mp_tname(a));
	if (kvp_grow(&w->offsets, &w->ocap, (size_t)a->v.n + 1,
	             sizeof *w->offsets) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (uint32_t i = 0; i < a->v.n; i++) {
		struct mp_val e;
		uint32_t u;

		p = mp_next(p, &e);
		snprintf(where, sizeof where, "block_offsets[%u]", i);
		if (get_u32(&e, where, &u, d) != 0)
			return -1;
		w->offsets[i] = u;
	}
	ev->offsets = w->offsets;
	ev->n_offsets = a->v.n;
	return 0;
}

static int
map_key(const struct mp_val *k, unsigned type_bit)
{
	int i;

	for (i = 0; i < K_NKEYS; i++)
		if ((map_keys[i].types & type_bit) &&
		    mp_is_str(k, map_keys[i].name))
			return i;
	return -1;
}

static int map_scalar(const struct mp_val *v, int id, struct kvp_wire_event *ev,
                      struct kvp_diag *d);

/* One member of an event map other than "type" (id from map_key(), -1 for
 * an unknown key); v is its value, whose header is read and whose end is
 * *end. */
static int
map_member(struct kvp_wire *w, const struct mp_val *k, int id,
           const uint8_t *vp, struct kvp_wire_event *ev, int *seen,
           const uint8_t **end, struct kvp_diag *d)
{
	struct mp_val v;

	if (id == K_BLOCK_HASHES || id == K_TOKENS) {
		mp_head(vp, &v);
		seen[id] = 1;
		if (v.type != MP_ARRAY)
			*end = mp_next(vp, &v);
		return id == K_BLOCK_HASHES ? get_hashes(w, &v, ev, end, d)
		                            : get_tokens(w, &v, ev, end, d);
	}
	*end = mp_next(vp, &v);
	if (id < 0)
		return add_unknown(w, ev, k, 0, d);
	seen[id] = 1;
	if (id >= K_TP_TOKEN_OFFSET) { /* tolerated, whatever its value */
		ev->third_party |=
		    1u << (KVP_TP_TOKEN_OFFSET + (id - K_TP_TOKEN_OFFSET));
		return 0;
	}
	if (id == K_OFFSETS)
		return get_offsets(w, &v, ev, d);
	return map_scalar(&v, id, ev, d);
}

/* The members map_member() does not read itself: v is the value. */
static int
map_scalar(const struct mp_val *v, int id, struct kvp_wire_event *ev,
           struct kvp_diag *d)
{
	const struct mp_val *o = v;
	int rc = 0;

	switch ((enum key_id)id) {
	case K_PARENT:
		rc = get_parent(o, ev, d);
		break;
	case K_BLOCK_SIZE:
		rc = get_u32(o, "block_size", &ev->block_size, d);
		ev->has_block_size = rc == 0;
		break;
	case K_LORA_ID:
		rc = get_opt_i64(o, "lora_id", &ev->has_lora_id, &ev->lora_id,
		                 d);
		break;
	case K_MEDIUM:
		rc = get_opt_str(o, "medium", &ev->medium, d);
		break;
	case K_LORA_NAME:
		rc = get_opt_str(o, "lora_name", &ev->lora_name, d);
		break;
	case K_EXTRA_KEYS:
		rc = get_opt_list(v, "extra_keys", &ev->extra_keys, d);
		break;
	case K_GROUP_IDX:
		rc = get_opt_u32(o, "group_idx", &ev->has_group_idx,
		                 &ev->group_idx, d);
		break;
	case K_KIND:
		rc = get_opt_str(o, "kv_cache_spec_kind", &ev->kind, d);
		break;
	case K_SLIDING:
		rc = get_opt_u32(o, "kv_cache_spec_sliding_window",
		                 &ev->has_sliding_window, &ev->sliding_window,
		                 d);
		break;
	case K_CACHE_SALT:
		rc = get_opt_str(o, "cache_salt", &ev->cache_salt, d);
		break;
	case K_SESSION_ID:
		rc = get_opt_str(o, "session_id", &ev->session_id, d);
		break;
	case K_LOCALITY:
		rc = get_opt_str(o, "locality", &ev->locality, d);
		break;
	case K_SOURCE_KIND:
		rc = get_opt_str(o, "source_kind", &ev->source_kind, d);
		break;
	case K_MM_INFOS:
		rc = get_opt_list(v, "block_mm_infos", &ev->block_mm_infos, d);
		break;
	case K_OWNERSHIP:
		rc = get_opt_str(o, "ownership", &ev->ownership, d);
		break;
	case K_SHA_HASHES:
	case K_SHA_PARENT:
		rc = get_sha(id, v, ev, d);
		break;
	default: /* read by map_member() */
		break;
	}
	return rc;
}

static int
map_missing(unsigned bit, const int *seen, struct kvp_diag *d)
{
	if ((bit & (T_S | T_R | T_I)) && !seen[K_BLOCK_HASHES])
		return kvp_diag_set(d, 0, "missing key \"block_hashes\"");
	if (bit & T_S) {
		if (!seen[K_TOKENS])
			return kvp_diag_set(d, 0, "missing key \"token_ids\"");
		if (!seen[K_BLOCK_SIZE])
			return kvp_diag_set(d, 0, "missing key \"block_size\"");
	}
	return 0;
}

/* A sparse store names one chunk per block hash. */
static int
check_offsets(const struct kvp_wire_event *ev, struct kvp_diag *d)
{
	if (ev->offsets == NULL || ev->n_offsets == ev->n_hashes)
		return 0;
	return kvp_diag_set(d, 0,
	                    "block_offsets: %zu entries for %zu block "
	                    "hashes",
	                    ev->n_offsets, ev->n_hashes);
}

/*
 * The rules, in their order: every key must be a string; the last "type"
 * key is the tag; then the other members in wire order; then the required
 * keys. m is the map's header; *end is set to the byte after the map.
 */
static int
event_map_exact(struct kvp_wire *w, const struct mp_val *m,
                struct kvp_wire_event *ev, const uint8_t **end,
                struct kvp_diag *d)
{
	uint32_t n = m->v.n, i;
	const uint8_t *p = m->kids;
	struct mp_val k, v, tag;
	int has_tag = 0, seen[K_NKEYS] = {0};
	unsigned bit;

	for (i = 0; i < n; i++) {
		p = mp_next(p, &k);
		if (k.type != MP_STR)
			return kvp_diag_set(d, 0,
			                    "event map: key is a %s, not a "
			                    "string",
			                    mp_tname(&k));
		p = mp_next(p, &v);
		if (mp_is_str(&k, "type")) {
			tag = v;
			has_tag = 1;
		}
	}
	*end = p;
	if (!has_tag)
		return kvp_diag_set(d, 0, "event map has no \"type\" key");
	if (set_type(&tag, ev, d) != 0)
		return -1;
	if (ev->type == KVP_WIRE_IGNORED)
		return 0;
	if (ev->type == KVP_WIRE_THIRD_PARTY) {
		ev->raw = m->at;
		return 0;
	}
	bit = 1u << ev->type;
	p = m->kids;
	for (i = 0; i < n; i++) {
		const uint8_t *e;

		p = mp_next(p, &k);
		if (mp_is_str(&k, "type")) {
			p = mp_skip_n(p, 1);
			continue;
		}
		if (map_member(w, &k, map_key(&k, bit), p, ev, seen, &e, d))
			return -1;
		p = e;
	}
	if (map_missing(bit, seen, d) != 0)
		return -1;
	return check_offsets(ev, d);
}

/*
 * One pass for the usual shape: "type" first and nowhere else, a known
 * tag. Gives up (returns 1) on anything else, including any error, and
 * event_map_exact() then decodes the map again with the rules' order of
 * checks, so that the result and the message are the same.
 */
static int
event_map_fast(struct kvp_wire *w, const struct mp_val *m,
               struct kvp_wire_event *ev, const uint8_t **end,
               struct kvp_diag *d)
{
	uint32_t n = m->v.n, i;
	const uint8_t *p = m->kids;
	struct mp_val k, v;
	int seen[K_NKEYS] = {0};
	unsigned bit;

	if (n == 0)
		return 1;
	p = mp_next(p, &k);
	if (!mp_is_str(&k, "type"))
		return 1;
	p = mp_next(p, &v);
	if (set_type(&v, ev, d) != 0 || ev->type == KVP_WIRE_IGNORED ||
	    ev->type == KVP_WIRE_THIRD_PARTY)
		return 1;
	bit = 1u << ev->type;
	for (i = 1; i < n; i++) {
		const uint8_t *e;

		p = mp_next(p, &k);
		if (k.type != MP_STR || mp_is_str(&k, "type"))
			return 1;
		if (map_member(w, &k, map_key(&k, bit), p, ev, seen, &e, d))
			return 1;
		p = e;
	}
	if (map_missing(bit, seen, d) != 0 || check_offsets(ev, d) != 0)
		return 1;
	*end = p;
	return 0;
}

static int
event_map(struct kvp_wire *w, const struct mp_val *m, struct kvp_wire_event *ev,
          const uint8_t **end, struct kvp_diag *d)
{
	if (event_map_fast(w, m, ev, end, d) == 0)
		return 0;
	memset(ev, 0, sizeof *ev);
	ev->hashes = w->hashes;
	ev->tokens = w->tokens;
	ev->enc = KVP_WIRE_MAP;
	return event_map_exact(w, m, ev, end, d);
}

int
kvp_wire_decode_event(struct kvp_wire *w, const uint8_t *p,
                      struct kvp_wire_event *ev, const uint8_t **end,
                      struct kvp_diag *d)
{
	struct mp_val o, tag;
	const uint8_t *q;
	size_t n;

	q = mp_head(p, &o);
	if (o.type == MP_MAP) {
		ev->enc = KVP_WIRE_MAP;
		return event_map(w, &o, ev, end, d);
	}
	if (o.type != MP_ARRAY)
		return kvp_diag_set(
		    d, 0, "event is a %s, not an array or a map", mp_tname(&o));
	ev->enc = KVP_WIRE_ARRAY;
	n = o.v.n;
	if (n == 0)
		return kvp_diag_set(d, 0, "empty event array (no tag)");
	q = mp_next(q, &tag);
	if (set_type(&tag, ev, d) != 0)
		return -1;
	switch (ev->type) {
	case KVP_WIRE_STORED:
		if (stored_array(w, &q, n, ev, d) != 0)
			return -1;
		break;
	case KVP_WIRE_REMOVED:
	case KVP_WIRE_INACTIVE: /* BlockRemoved's layout (kvpipe's reading) */
		if (removed_array(w, &q, n, ev, d) != 0)
			return -1;
		break;
	case KVP_WIRE_CLEARED:
		if (cleared_array(&q, n, ev, d) != 0)
			return -1;
		break;
	case KVP_WIRE_THIRD_PARTY:
		ev->raw = o.at;
		q = mp_skip_n(q, n - 1);
		break;
	case KVP_WIRE_IGNORED:
		q = mp_skip_n(q, n - 1);
		break;
	}
	*end = q;
	return 0;
}
