/* SPDX-License-Identifier: MIT */
/* wire.c — msgpack-c KV-event batch decoding (see wire.h). */
#include "wire.h"

#include <msgpack.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ndjson.h"

struct kvp_wire {
	msgpack_unpacked res;
	const msgpack_object *root;
	uint64_t *hashes;
	size_t hcap;
	uint64_t *tokens;
	size_t tcap;
	struct kvp_wire_str *unknown;
	size_t ucap;
};

const char *
kvp_wire_lib_version(void)
{
	return msgpack_version();
}

struct kvp_wire *
kvp_wire_new(void)
{
	struct kvp_wire *w = calloc(1, sizeof *w);

	if (w != NULL)
		msgpack_unpacked_init(&w->res);
	return w;
}

void
kvp_wire_free(struct kvp_wire *w)
{
	if (w == NULL)
		return;
	msgpack_unpacked_destroy(&w->res);
	free(w->hashes);
	free(w->tokens);
	free(w->unknown);
	free(w);
}

/* ---- scanning: find one object's extent, vet its length claims ---------- */

static uint32_t
be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

long long
kvp_wire_scan(const void *buf, size_t len, size_t max_claim, int final,
              struct kvp_diag *d)
{
	const uint8_t *p = buf;
	uint64_t stack[KVP_WIRE_MAX_DEPTH];
	size_t pos = 0;
	int depth = 0;

	for (;;) {
		size_t hdr = 1, lenbytes = 0, fixed_body = 0;
		uint64_t body = 0, items = 0;
		int is_map = 0, is_arr = 0;
		uint8_t c;

		if (pos >= len)
			goto need_more;
		c = p[pos];
		if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 ||
		    c == 0xc3) {
			hdr = 1;
		} else if (c <= 0x8f) {
			is_map = 1;
			items = c & 0x0f;
		} else if (c <= 0x9f) {
			is_arr = 1;
			items = c & 0x0f;
		} else if (c <= 0xbf) {
			body = c & 0x1f;
		} else {
			switch (c) {
			case 0xc4: /* bin 8/16/32 */
			case 0xd9: /* str 8/16/32 */
				lenbytes = 1;
				break;
			case 0xc5:
			case 0xda:
				lenbytes = 2;
				break;
			case 0xc6:
			case 0xdb:
				lenbytes = 4;
				break;
			case 0xc7: /* ext 8/16/32: length then type byte */
				lenbytes = 1;
				fixed_body = 1;
				break;
			case 0xc8:
				lenbytes = 2;
				fixed_body = 1;
				break;
			case 0xc9:
				lenbytes = 4;
				fixed_body = 1;
				break;
			case 0xca:
			case 0xce:
			case 0xd2:
				hdr = 5;
				break;
			case 0xcb:
			case 0xcf:
			case 0xd3:
				hdr = 9;
				break;
			case 0xcc:
			case 0xd0:
				hdr = 2;
				break;
			case 0xcd:
			case 0xd1:
				hdr = 3;
				break;
			case 0xd4: /* fixext 1/2/4/8/16 */
				hdr = 3;
				break;
			case 0xd5:
				hdr = 4;
				break;
			case 0xd6:
				hdr = 6;
				break;
			case 0xd7:
				hdr = 10;
				break;
			case 0xd8:
				hdr = 18;
				break;
			case 0xdc:
				is_arr = 1;
				lenbytes = 2;
				break;
			case 0xdd:
				is_arr = 1;
				lenbytes = 4;
				break;
			case 0xde:
				is_map = 1;
				lenbytes = 2;
				break;
			case 0xdf:
				is_map = 1;
				lenbytes = 4;
				break;
			default: /* 0xc1 is never used */
				return kvp_diag_set(d, (long)pos,
				                    "invalid msgpack: byte "
				                    "0x%02x at offset %zu",
				                    c, pos);
			}
			if (lenbytes) {
				uint64_t n;

				hdr = 1 + lenbytes;
				if (len - pos < hdr)
					goto need_more;
				n = lenbytes == 1   ? p[pos + 1]
				    : lenbytes == 2 ? be16(p + pos + 1)
				                    : be32(p + pos + 1);
				if (is_arr || is_map)
					items = n;
				else
					body = n;
				hdr += fixed_body;
			}
		}
		if (is_map)
			items *= 2;
		if (len - pos < hdr)
			goto need_more;
		if (body > len - pos - hdr) {
			if (final || body > max_claim)
				return kvp_diag_set(
				    d, (long)pos,
				    "%s: a length of %llu bytes at offset %zu, "
				    "but only %zu remain",
				    final ? "truncated msgpack"
				          : "implausible msgpack",
				    (unsigned long long)body, pos,
				    len - pos - hdr);
			goto need_more;
		}
		pos += hdr + (size_t)body;
		if (items > 0) {
			if (items > len - pos && (final || items > max_claim))
				return kvp_diag_set(
				    d, (long)(pos - hdr),
				    "%s: %s header at offset %zu claims %llu "
				    "elements, but only %zu bytes remain",
				    final ? "truncated msgpack"
				          : "implausible msgpack",
				    is_map ? "map" : "array", pos - hdr,
				    (unsigned long long)(is_map ? items / 2
				                                : items),
				    len - pos);
			if (depth == KVP_WIRE_MAX_DEPTH)
				return kvp_diag_set(
				    d, (long)(pos - hdr),
				    "msgpack nested deeper than %d levels at "
				    "offset %zu",
				    KVP_WIRE_MAX_DEPTH, pos - hdr);
			stack[depth++] = items;
			continue;
		}
		while (depth > 0 && --stack[depth - 1] == 0)
			depth--;
		if (depth == 0)
			return (long long)pos;
	}
need_more:
	if (final)
		return kvp_diag_set(d, (long)len,
		                    "truncated msgpack: input ends inside an "
		                    "object (%zu bytes)",
		                    len);
	return 0;
}

int
kvp_wire_load(struct kvp_wire *w, const void *buf, size_t len,
              struct kvp_diag *d)
{
	long long n;
	size_t off = 0;
	msgpack_unpack_return rc;

	w->root = NULL;
	if (len == 0)
		return kvp_diag_set(d, 0, "empty payload");
	n = kvp_wire_scan(buf, len, len, 1, d);
	if (n < 0)
		return -1;
	if ((size_t)n != len)
		return kvp_diag_set(d, (long)n,
		                    "trailing bytes: the batch ends at offset "
		                    "%lld of %zu",
		                    n, len);
	rc = msgpack_unpack_next(&w->res, buf, len, &off);
	if (rc != MSGPACK_UNPACK_SUCCESS)
		return kvp_diag_set(d, 0, "msgpack-c failed to unpack (%d)",
		                    (int)rc);
	w->root = &w->res.data;
	return 0;
}

/* ---- field helpers --------------------------------------------------------
 */

static const char *
tname(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return "nil";
	case MSGPACK_OBJECT_BOOLEAN:
		return "bool";
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return "integer";
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return "negative integer";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return "float";
	case MSGPACK_OBJECT_STR:
		return "string";
	case MSGPACK_OBJECT_ARRAY:
		return "array";
	case MSGPACK_OBJECT_MAP:
		return "map";
	case MSGPACK_OBJECT_BIN:
		return "bin";
	case MSGPACK_OBJECT_EXT:
		return "ext";
	}
	return "unknown";
}

static int
is_str(const msgpack_object *o, const char *s)
{
	size_t n = strlen(s);

	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
	       memcmp(o->via.str.ptr, s, n) == 0;
}

static int
is_int(const msgpack_object *o)
{
	return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
	       o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
}

/* Reads one hash (§6.2.5). what names the field; i >= 0 is its index. */
static int
get_hash(const msgpack_object *o, const char *what, long i, uint64_t *out,
         unsigned *repr, struct kvp_diag *d)
{
	char where[48];

	switch (o->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		*out = o->via.u64;
		*repr |= KVP_REPR_UINT;
		return 0;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		*out = (uint64_t)o->via.i64;
		*repr |= KVP_REPR_INT;
		return 0;
	case MSGPACK_OBJECT_BIN: {
		const uint8_t *p = (const uint8_t *)o->via.bin.ptr;
		uint32_t n = o->via.bin.size, k = n > 8 ? n - 8 : 0;
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
	if (o->type == MSGPACK_OBJECT_BIN)
		return kvp_diag_set(d, 0, "%s: empty bin hash", where);
	return kvp_diag_set(d, 0, "%s: expected an integer or bin hash, got %s",
	                    where, tname(o));
}

static int
get_u32(const msgpack_object *o, const char *what, uint32_t *out,
        struct kvp_diag *d)
{
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return kvp_diag_set(d, 0, "%s: %lld is negative", what,
		                    (long long)o->via.i64);
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return kvp_diag_set(d, 0, "%s: expected an integer, got %s",
		                    what, tname(o));
	if (o->via.u64 > UINT32_MAX)
		return kvp_diag_set(d, 0, "%s: %llu does not fit in u32", what,
		                    (unsigned long long)o->via.u64);
	*out = (uint32_t)o->via.u64;
	return 0;
}

static int
get_opt_u32(const msgpack_object *o, const char *what, int *has, uint32_t *out,
            struct kvp_diag *d)
{
	if (o->type == MSGPACK_OBJECT_NIL) {
		*has = 0;
		return 0;
	}
	if (get_u32(o, what, out, d) != 0)
		return -1;
	*has = 1;
	return 0;
}

static int
get_opt_i64(const msgpack_object *o, const char *what, int *has, int64_t *out,
            struct kvp_diag *d)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		*has = 0;
		return 0;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		*out = o->via.i64;
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		if (o->via.u64 > INT64_MAX)
			return kvp_diag_set(
			    d, 0, "%s: %llu does not fit in i64", what,
			    (unsigned long long)o->via.u64);
		*out = (int64_t)o->via.u64;
		break;
	default:
		return kvp_diag_set(d, 0, "%s: expected an integer, got %s",
		                    what, tname(o));
	}
	*has = 1;
	return 0;
}

static int
get_opt_str(const msgpack_object *o, const char *what, struct kvp_wire_str *s,
            struct kvp_diag *d)
{
	if (o->type == MSGPACK_OBJECT_NIL) {
		s->present = 0;
		return 0;
	}
	if (o->type != MSGPACK_OBJECT_STR)
		return kvp_diag_set(d, 0, "%s: expected a string, got %s", what,
		                    tname(o));
	s->p = o->via.str.ptr;
	s->len = o->via.str.size;
	s->present = 1;
	return 0;
}

static int
get_opt_list(const msgpack_object *o, const char *what, kvp_wire_value *v,
             struct kvp_diag *d)
{
	if (o->type == MSGPACK_OBJECT_NIL) {
		*v = NULL;
		return 0;
	}
	if (o->type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(d, 0, "%s: expected an array, got %s", what,
		                    tname(o));
	*v = o;
	return 0;
}

static int
grow(void *pp, size_t *cap, size_t need, size_t size)
{
	void *p;
	size_t n = *cap ? *cap : 64;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*(void **)pp, n * size);
	if (p == NULL)
		return -1;
	*(void **)pp = p;
	*cap = n;
	return 0;
}

static int
get_hashes(struct kvp_wire *w, const msgpack_object *o,
           struct kvp_wire_event *ev, struct kvp_diag *d)
{
	uint32_t n, i;

	if (o->type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(
		    d, 0, "block_hashes: expected an array, got %s", tname(o));
	n = o->via.array.size;
	if (grow(&w->hashes, &w->hcap, n, sizeof *w->hashes) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (i = 0; i < n; i++)
		if (get_hash(&o->via.array.ptr[i], "block_hashes", (long)i,
		             &w->hashes[i], &ev->hash_repr, d) != 0)
			return -1;
	ev->hashes = w->hashes;
	ev->n_hashes = n;
	return 0;
}

static int
get_parent(const msgpack_object *o, struct kvp_wire_event *ev,
           struct kvp_diag *d)
{
	if (o->type == MSGPACK_OBJECT_NIL) {
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
get_token(const msgpack_object *o, uint32_t i, int j, uint64_t *out,
          size_t *wide, struct kvp_diag *d)
{
	char where[48];

	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		*out = o->via.u64;
		if (*out > UINT32_MAX)
			(*wide)++;
		return 0;
	}
	if (j < 0)
		snprintf(where, sizeof where, "token_ids[%u]", i);
	else
		snprintf(where, sizeof where, "token_ids[%u][%d]", i, j);
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return kvp_diag_set(d, 0, "%s: negative token id %lld", where,
		                    (long long)o->via.i64);
	return kvp_diag_set(d, 0, "%s: expected an integer token id, got %s",
	                    where, tname(o));
}

static int
get_tokens(struct kvp_wire *w, const msgpack_object *o,
           struct kvp_wire_event *ev, struct kvp_diag *d)
{
	const msgpack_object *e;
	uint32_t n, i;

	if (o->type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(
		    d, 0, "token_ids: expected an array, got %s", tname(o));
	n = o->via.array.size;
	e = o->via.array.ptr;
	ev->bigram = n > 0 && e[0].type == MSGPACK_OBJECT_ARRAY;
	if (grow(&w->tokens, &w->tcap, (size_t)n + 1, sizeof *w->tokens) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	ev->tokens = w->tokens;
	if (!ev->bigram) {
		for (i = 0; i < n; i++)
			if (get_token(&e[i], i, -1, &w->tokens[i],
			              &ev->wide_tokens, d) != 0)
				return -1;
		ev->n_tokens = n;
		return 0;
	}
	/* EAGLE bigrams: N pairs → the first head, then every tail. */
	for (i = 0; i < n; i++) {
		const msgpack_object *p = &e[i];

		if (p->type != MSGPACK_OBJECT_ARRAY)
			return kvp_diag_set(
			    d, 0,
			    "token_ids[%u]: expected a bigram "
			    "pair (token_ids[0] is one), got %s",
			    i, tname(p));
		if (p->via.array.size < 2)
			return kvp_diag_set(d, 0,
			                    "token_ids[%u]: bigram pair has %u "
			                    "element(s), needs 2",
			                    i, p->via.array.size);
		if (i == 0 &&
		    get_token(&p->via.array.ptr[0], i, 0, &w->tokens[0],
		              &ev->wide_tokens, d) != 0)
			return -1;
		if (get_token(&p->via.array.ptr[1], i, 1, &w->tokens[i + 1],
		              &ev->wide_tokens, d) != 0)
			return -1;
	}
	ev->n_tokens = n + 1;
	return 0;
}

static int
add_unknown(struct kvp_wire *w, struct kvp_wire_event *ev,
            const msgpack_object *key, int metadata, struct kvp_diag *d)
{
	if (grow(&w->unknown, &w->ucap, ev->n_unknown + 1,
	         sizeof *w->unknown) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	ev->unknown = w->unknown;
	ev->unknown[ev->n_unknown].p = key->via.str.ptr;
	ev->unknown[ev->n_unknown].len = key->via.str.size;
	ev->unknown[ev->n_unknown].present = metadata ? 2 : 1;
	ev->n_unknown++;
	return 0;
}

/* SGLang's position-7 metadata map: {cache_salt[, session_id]}. */
static int
get_metadata(struct kvp_wire *w, const msgpack_object *o,
             struct kvp_wire_event *ev, struct kvp_diag *d)
{
	uint32_t i;

	for (i = 0; i < o->via.map.size; i++) {
		const msgpack_object *k = &o->via.map.ptr[i].key;
		const msgpack_object *v = &o->via.map.ptr[i].val;

		if (k->type != MSGPACK_OBJECT_STR)
			return kvp_diag_set(d, 0,
			                    "metadata map: key is a %s, not a "
			                    "string",
			                    tname(k));
		if (is_str(k, "cache_salt")) {
			if (get_opt_str(v, "cache_salt", &ev->cache_salt, d))
				return -1;
		} else if (is_str(k, "session_id")) {
			if (get_opt_str(v, "session_id", &ev->session_id, d))
				return -1;
		} else if (add_unknown(w, ev, k, 1, d) != 0) {
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
 */
static int
fixed_tail(const msgpack_object *t, size_t n)
{
	static const int want_int[5] = {1, 0, 1, 0, 0};
	size_t i;

	if (n < 4)
		return 0;
	for (i = 0; i < n && i < 5; i++) {
		if (t[i].type == MSGPACK_OBJECT_NIL)
			continue;
		if (want_int[i] ? !is_int(&t[i])
		                : t[i].type != MSGPACK_OBJECT_STR)
			return 0;
	}
	return 1;
}

static int
get_tail(const msgpack_object *t, size_t n, struct kvp_wire_event *ev,
         struct kvp_diag *d)
{
	size_t i;

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
		return 0;
	}
	for (i = 0; i < n; i++) {
		const msgpack_object *o = &t[i];

		if (o->type == MSGPACK_OBJECT_NIL)
			continue;
		if (is_int(o) && !ev->has_group_idx) {
			if (get_opt_u32(o, "group_idx", &ev->has_group_idx,
			                &ev->group_idx, d))
				return -1;
		} else if (is_int(o) && !ev->has_sliding_window) {
			if (get_opt_u32(o, "kv_cache_spec_sliding_window",
			                &ev->has_sliding_window,
			                &ev->sliding_window, d))
				return -1;
		} else if (o->type == MSGPACK_OBJECT_STR && !ev->kind.present) {
			get_opt_str(o, "kv_cache_spec_kind", &ev->kind, d);
		} else if (o->type == MSGPACK_OBJECT_ARRAY &&
		           ev->block_mm_infos == NULL) {
			ev->block_mm_infos = o;
		} else {
			ev->surplus++;
		}
	}
	return 0;
}

/* ---- events ----------------------------------------------------------------
 */

static int
stored_array(struct kvp_wire *w, const msgpack_object *e, size_t n,
             struct kvp_wire_event *ev, struct kvp_diag *d)
{
	if (n < 5)
		return kvp_diag_set(d, 0,
		                    "BlockStored array has %zu element(s); "
		                    "needs at least 5 (tag, block_hashes, "
		                    "parent_block_hash, token_ids, block_size)",
		                    n);
	if (get_hashes(w, &e[1], ev, d) || get_parent(&e[2], ev, d) ||
	    get_tokens(w, &e[3], ev, d) ||
	    get_u32(&e[4], "block_size", &ev->block_size, d))
		return -1;
	ev->has_block_size = 1;
	if (n > 5 &&
	    get_opt_i64(&e[5], "lora_id", &ev->has_lora_id, &ev->lora_id, d))
		return -1;
	if (n > 6 && get_opt_str(&e[6], "medium", &ev->medium, d))
		return -1;
	if (n > 7) {
		if (e[7].type == MSGPACK_OBJECT_MAP) {
			if (get_metadata(w, &e[7], ev, d) != 0)
				return -1;
		} else if (e[7].type == MSGPACK_OBJECT_STR ||
		           e[7].type == MSGPACK_OBJECT_NIL) {
			get_opt_str(&e[7], "lora_name", &ev->lora_name, d);
		} else {
			return kvp_diag_set(d, 0,
			                    "element 7: expected lora_name "
			                    "(string), a metadata map or nil, "
			                    "got %s",
			                    tname(&e[7]));
		}
	}
	if (n > 8 && get_opt_list(&e[8], "extra_keys", &ev->extra_keys, d))
		return -1;
	return n > 9 ? get_tail(e + 9, n - 9, ev, d) : 0;
}

static int
removed_array(struct kvp_wire *w, const msgpack_object *e, size_t n,
              struct kvp_wire_event *ev, struct kvp_diag *d)
{
	if (n < 2)
		return kvp_diag_set(d, 0,
		                    "BlockRemoved array has 1 element; needs "
		                    "at least 2 (tag, block_hashes)");
	if (get_hashes(w, &e[1], ev, d))
		return -1;
	if (n > 2 && get_opt_str(&e[2], "medium", &ev->medium, d))
		return -1;
	return n > 3 ? get_tail(e + 3, n - 3, ev, d) : 0;
}

static int
cleared_array(const msgpack_object *e, size_t n, struct kvp_wire_event *ev,
              struct kvp_diag *d)
{
	if (n > 1 && get_opt_str(&e[1], "source_kind", &ev->source_kind, d))
		return -1;
	ev->surplus = n > 2 ? n - 2 : 0;
	return 0;
}

static int
set_type(const msgpack_object *tag, struct kvp_wire_event *ev,
         struct kvp_diag *d)
{
	if (tag->type != MSGPACK_OBJECT_STR)
		return kvp_diag_set(
		    d, 0, "event tag: expected a string, got %s", tname(tag));
	if (is_str(tag, "BlockStored"))
		ev->type = KVP_WIRE_STORED;
	else if (is_str(tag, "BlockRemoved"))
		ev->type = KVP_WIRE_REMOVED;
	else if (is_str(tag, "AllBlocksCleared"))
		ev->type = KVP_WIRE_CLEARED;
	else if (is_str(tag, "Ignored"))
		ev->type = KVP_WIRE_IGNORED;
	else
		return kvp_diag_set(
		    d, 0, "unknown event tag \"%.*s\"",
		    tag->via.str.size > 64 ? 64 : (int)tag->via.str.size,
		    tag->via.str.ptr);
	return 0;
}

/* Map keys: which event types read each one. */
enum {
	T_S = 1 << KVP_WIRE_STORED,
	T_R = 1 << KVP_WIRE_REMOVED,
	T_C = 1 << KVP_WIRE_CLEARED,
};

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
	K_NKEYS
};

static const struct {
	const char *name;
	unsigned types;
} map_keys[K_NKEYS] = {
    [K_BLOCK_HASHES] = {"block_hashes", T_S | T_R},
    [K_PARENT] = {"parent_block_hash", T_S},
    [K_TOKENS] = {"token_ids", T_S},
    [K_BLOCK_SIZE] = {"block_size", T_S},
    [K_LORA_ID] = {"lora_id", T_S},
    [K_MEDIUM] = {"medium", T_S | T_R},
    [K_LORA_NAME] = {"lora_name", T_S},
    [K_EXTRA_KEYS] = {"extra_keys", T_S},
    [K_GROUP_IDX] = {"group_idx", T_S | T_R},
    [K_KIND] = {"kv_cache_spec_kind", T_S | T_R},
    [K_SLIDING] = {"kv_cache_spec_sliding_window", T_S | T_R},
    [K_CACHE_SALT] = {"cache_salt", T_S},
    [K_SESSION_ID] = {"session_id", T_S},
    [K_LOCALITY] = {"locality", T_S | T_R},
    [K_SOURCE_KIND] = {"source_kind", T_S | T_R | T_C},
    [K_MM_INFOS] = {"block_mm_infos", T_S},
    [K_OWNERSHIP] = {"ownership", T_S},
};

static int
map_key(const msgpack_object *k, unsigned type_bit)
{
	int i;

	for (i = 0; i < K_NKEYS; i++)
		if ((map_keys[i].types & type_bit) &&
		    is_str(k, map_keys[i].name))
			return i;
	return -1;
}

static int
event_map(struct kvp_wire *w, const msgpack_object *o,
          struct kvp_wire_event *ev, struct kvp_diag *d)
{
	const msgpack_object_kv *kv = o->via.map.ptr;
	uint32_t n = o->via.map.size, i;
	const msgpack_object *tag = NULL;
	int seen[K_NKEYS] = {0};
	unsigned bit;

	for (i = 0; i < n; i++) {
		if (kv[i].key.type != MSGPACK_OBJECT_STR)
			return kvp_diag_set(d, 0,
			                    "event map: key is a %s, not a "
			                    "string",
			                    tname(&kv[i].key));
		if (is_str(&kv[i].key, "type"))
			tag = &kv[i].val;
	}
	if (tag == NULL)
		return kvp_diag_set(d, 0, "event map has no \"type\" key");
	if (set_type(tag, ev, d) != 0)
		return -1;
	if (ev->type == KVP_WIRE_IGNORED)
		return 0;
	bit = 1u << ev->type;
	for (i = 0; i < n; i++) {
		const msgpack_object *k = &kv[i].key, *v = &kv[i].val;
		int id, rc = 0;

		if (is_str(k, "type"))
			continue;
		id = map_key(k, bit);
		if (id < 0) {
			if (add_unknown(w, ev, k, 0, d) != 0)
				return -1;
			continue;
		}
		seen[id] = 1;
		switch ((enum key_id)id) {
		case K_BLOCK_HASHES:
			rc = get_hashes(w, v, ev, d);
			break;
		case K_PARENT:
			rc = get_parent(v, ev, d);
			break;
		case K_TOKENS:
			rc = get_tokens(w, v, ev, d);
			break;
		case K_BLOCK_SIZE:
			rc = get_u32(v, "block_size", &ev->block_size, d);
			ev->has_block_size = rc == 0;
			break;
		case K_LORA_ID:
			rc = get_opt_i64(v, "lora_id", &ev->has_lora_id,
			                 &ev->lora_id, d);
			break;
		case K_MEDIUM:
			rc = get_opt_str(v, "medium", &ev->medium, d);
			break;
		case K_LORA_NAME:
			rc = get_opt_str(v, "lora_name", &ev->lora_name, d);
			break;
		case K_EXTRA_KEYS:
			rc = get_opt_list(v, "extra_keys", &ev->extra_keys, d);
			break;
		case K_GROUP_IDX:
			rc = get_opt_u32(v, "group_idx", &ev->has_group_idx,
			                 &ev->group_idx, d);
			break;
		case K_KIND:
			rc = get_opt_str(v, "kv_cache_spec_kind", &ev->kind, d);
			break;
		case K_SLIDING:
			rc = get_opt_u32(v, "kv_cache_spec_sliding_window",
			                 &ev->has_sliding_window,
			                 &ev->sliding_window, d);
			break;
		case K_CACHE_SALT:
			rc = get_opt_str(v, "cache_salt", &ev->cache_salt, d);
			break;
		case K_SESSION_ID:
			rc = get_opt_str(v, "session_id", &ev->session_id, d);
			break;
		case K_LOCALITY:
			rc = get_opt_str(v, "locality", &ev->locality, d);
			break;
		case K_SOURCE_KIND:
			rc = get_opt_str(v, "source_kind", &ev->source_kind, d);
			break;
		case K_MM_INFOS:
			rc = get_opt_list(v, "block_mm_infos",
			                  &ev->block_mm_infos, d);
			break;
		case K_OWNERSHIP:
			rc = get_opt_str(v, "ownership", &ev->ownership, d);
			break;
		case K_NKEYS:
			break;
		}
		if (rc != 0)
			return -1;
	}
	if ((bit & (T_S | T_R)) && !seen[K_BLOCK_HASHES])
		return kvp_diag_set(d, 0, "missing key \"block_hashes\"");
	if (bit & T_S) {
		if (!seen[K_TOKENS])
			return kvp_diag_set(d, 0, "missing key \"token_ids\"");
		if (!seen[K_BLOCK_SIZE])
			return kvp_diag_set(d, 0, "missing key \"block_size\"");
	}
	return 0;
}

int
kvp_wire_event(struct kvp_wire *w, const struct kvp_wire_batch *b, size_t idx,
               struct kvp_wire_event *ev, struct kvp_diag *d)
{
	const msgpack_object *events = b->events_;
	const msgpack_object *o;

	memset(ev, 0, sizeof *ev);
	ev->hashes = w->hashes;
	ev->tokens = w->tokens;
	if (events == NULL || idx >= events->via.array.size)
		return kvp_diag_set(d, 0, "no event %zu", idx);
	o = &events->via.array.ptr[idx];
	if (o->type == MSGPACK_OBJECT_MAP) {
		ev->enc = KVP_WIRE_MAP;
		return event_map(w, o, ev, d);
	}
	if (o->type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(
		    d, 0, "event is a %s, not an array or a map", tname(o));
	ev->enc = KVP_WIRE_ARRAY;
	if (o->via.array.size == 0)
		return kvp_diag_set(d, 0, "empty event array (no tag)");
	if (set_type(&o->via.array.ptr[0], ev, d) != 0)
		return -1;
	switch (ev->type) {
	case KVP_WIRE_STORED:
		return stored_array(w, o->via.array.ptr, o->via.array.size, ev,
		                    d);
	case KVP_WIRE_REMOVED:
		return removed_array(w, o->via.array.ptr, o->via.array.size, ev,
		                     d);
	case KVP_WIRE_CLEARED:
		return cleared_array(o->via.array.ptr, o->via.array.size, ev,
		                     d);
	case KVP_WIRE_IGNORED:
		return 0;
	}
	return 0;
}

/* ---- envelope --------------------------------------------------------------
 */

static int
get_ts(const msgpack_object *o, struct kvp_wire_batch *b, struct kvp_diag *d)
{
	switch (o->type) {
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		b->ts_kind = KVP_WIRE_TS_FLOAT;
		b->ts = o->via.f64;
		return 0;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		b->ts_kind = KVP_WIRE_TS_UINT;
		b->ts_u = o->via.u64;
		b->ts = (double)o->via.u64;
		return 0;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		b->ts_kind = KVP_WIRE_TS_INT;
		b->ts_i = o->via.i64;
		b->ts = (double)o->via.i64;
		return 0;
	default:
		return kvp_diag_set(
		    d, 0, "envelope ts: expected a number, got %s", tname(o));
	}
}

static int
get_rank(const msgpack_object *o, struct kvp_wire_batch *b, struct kvp_diag *d)
{
	if (o->type == MSGPACK_OBJECT_NIL) {
		b->has_rank = 0;
		return 0;
	}
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
	    o->via.u64 <= INT32_MAX) {
		b->rank = (int32_t)o->via.u64;
	} else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER &&
	           o->via.i64 >= INT32_MIN) {
		b->rank = (int32_t)o->via.i64;
	} else if (is_int(o)) {
		return kvp_diag_set(d, 0,
		                    "envelope dp_rank: does not fit in i32");
	} else {
		return kvp_diag_set(d, 0,
		                    "envelope dp_rank: expected an integer or "
		                    "nil, got %s",
		                    tname(o));
	}
	b->has_rank = 1;
	return 0;
}

static int
get_events(const msgpack_object *o, struct kvp_wire_batch *b,
           struct kvp_diag *d)
{
	if (o->type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(
		    d, 0, "envelope events: expected an array, got %s",
		    tname(o));
	b->events_ = o;
	b->n_events = o->via.array.size;
	return 0;
}

int
kvp_wire_envelope(struct kvp_wire *w, int strict, struct kvp_wire_batch *b,
                  struct kvp_diag *d)
{
	const msgpack_object *o = w->root;
	size_t bytes = b->bytes;

	memset(b, 0, sizeof *b);
	b->bytes = bytes;
	if (o == NULL)
		return kvp_diag_set(d, 0, "no batch loaded");
	if (o->type == MSGPACK_OBJECT_ARRAY) {
		const msgpack_object *e = o->via.array.ptr;
		size_t n = o->via.array.size;

		b->enc = KVP_WIRE_ARRAY;
		b->n_elements = n;
		if (n < 2)
			return kvp_diag_set(
			    d, 0,
			    "envelope array has %zu element(s); "
			    "needs at least 2 (ts, events)",
			    n);
		if (strict && n != 3)
			return kvp_diag_set(d, 0,
			                    "envelope array has %zu elements; "
			                    "Dynamo (--strict) decodes exactly "
			                    "[ts, events, dp_rank]",
			                    n);
		if (get_ts(&e[0], b, d) || get_events(&e[1], b, d) ||
		    (n > 2 && get_rank(&e[2], b, d)))
			return -1;
		b->extra = n > 3 ? n - 3 : 0;
		return 0;
	}
	if (o->type == MSGPACK_OBJECT_MAP) {
		uint32_t i;
		int has_ts = 0;

		b->enc = KVP_WIRE_MAP;
		if (strict)
			return kvp_diag_set(d, 0,
			                    "map envelope; Dynamo (--strict) "
			                    "decodes only [ts, events, "
			                    "dp_rank]");
		for (i = 0; i < o->via.map.size; i++) {
			const msgpack_object *k = &o->via.map.ptr[i].key;
			const msgpack_object *v = &o->via.map.ptr[i].val;

			if (is_str(k, "ts")) {
				if (get_ts(v, b, d))
					return -1;
				has_ts = 1;
			} else if (is_str(k, "events")) {
				if (get_events(v, b, d))
					return -1;
			} else if (is_str(k, "data_parallel_rank") ||
			           is_str(k, "attn_dp_rank") ||
			           is_str(k, "dp_rank")) {
				if (get_rank(v, b, d))
					return -1;
			} else {
				b->extra++;
			}
		}
		if (!has_ts)
			return kvp_diag_set(d, 0,
			                    "map envelope has no \"ts\" key");
		if (b->events_ == NULL)
			return kvp_diag_set(d, 0,
			                    "map envelope has no \"events\" "
			                    "key");
		return 0;
	}
	return kvp_diag_set(d, 0, "batch is a %s, not an array or a map",
	                    tname(o));
}

/* ---- JSON rendering of opaque values ------------------------------------- */

static void
jw_keyn(struct kvp_jw *jw, const char *k, size_t len)
{
	/* kvp_jw_key() needs a NUL-terminated key; write one with a
	 * length through the same separator logic. */
	kvp_jw_strn(jw, k, len);
	putc_unlocked(':', jw->f);
	jw->after_key = 1;
}

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

void
kvp_wire_write_value(struct kvp_jw *jw, kvp_wire_value v)
{
	const msgpack_object *o = v;
	uint32_t i;

	if (o == NULL) {
		kvp_jw_null(jw);
		return;
	}
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		kvp_jw_null(jw);
		break;
	case MSGPACK_OBJECT_BOOLEAN:
		kvp_jw_bool(jw, o->via.boolean);
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		kvp_jw_u64(jw, o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		kvp_jw_i64(jw, o->via.i64);
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		kvp_jw_double(jw, o->via.f64);
		break;
	case MSGPACK_OBJECT_STR:
		kvp_jw_strn(jw, o->via.str.ptr, o->via.str.size);
		break;
	case MSGPACK_OBJECT_BIN:
		kvp_jw_obj_begin(jw);
		kvp_jw_key(jw, "bin");
		write_hex(jw, o->via.bin.ptr, o->via.bin.size);
		kvp_jw_obj_end(jw);
		break;
	case MSGPACK_OBJECT_EXT:
		kvp_jw_obj_begin(jw);
		kvp_jw_kv_i64(jw, "ext", o->via.ext.type);
		kvp_jw_key(jw, "hex");
		write_hex(jw, o->via.ext.ptr, o->via.ext.size);
		kvp_jw_obj_end(jw);
		break;
	case MSGPACK_OBJECT_ARRAY:
		kvp_jw_arr_begin(jw);
		for (i = 0; i < o->via.array.size; i++)
			kvp_wire_write_value(jw, &o->via.array.ptr[i]);
		kvp_jw_arr_end(jw);
		break;
	case MSGPACK_OBJECT_MAP:
		kvp_jw_obj_begin(jw);
		for (i = 0; i < o->via.map.size; i++) {
			const msgpack_object *k = &o->via.map.ptr[i].key;

			if (k->type == MSGPACK_OBJECT_STR) {
				jw_keyn(jw, k->via.str.ptr, k->via.str.size);
			} else {
				char kb[64];

				if (k->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
					snprintf(
					    kb, sizeof kb, "%llu",
					    (unsigned long long)k->via.u64);
				else if (k->type ==
				         MSGPACK_OBJECT_NEGATIVE_INTEGER)
					snprintf(kb, sizeof kb, "%lld",
					         (long long)k->via.i64);
				else
					snprintf(kb, sizeof kb, "<%s>",
					         tname(k));
				kvp_jw_key(jw, kb);
			}
			kvp_wire_write_value(jw, &o->via.map.ptr[i].val);
		}
		kvp_jw_obj_end(jw);
		break;
	}
}

void
kvp_wire_write_root(struct kvp_jw *jw, const struct kvp_wire *w)
{
	kvp_wire_write_value(jw, w->root);
}

/* ---- raw streams ------------------------------------------------------------
 */

struct kvp_wire_stream {
	FILE *f;
	size_t max;
	msgpack_unpacker unp;
	uint64_t pos; /* stream offset of the unpacker's first unparsed byte */
	int eof;
};

struct kvp_wire_stream *
kvp_wire_stream_new(FILE *f, size_t max_bytes)
{
	struct kvp_wire_stream *s = calloc(1, sizeof *s);

	if (s == NULL)
		return NULL;
	if (!msgpack_unpacker_init(&s->unp,
	                           MSGPACK_UNPACKER_INIT_BUFFER_SIZE)) {
		free(s);
		return NULL;
	}
	s->f = f;
	s->max = max_bytes;
	return s;
}

void
kvp_wire_stream_free(struct kvp_wire_stream *s)
{
	if (s == NULL)
		return;
	msgpack_unpacker_destroy(&s->unp);
	free(s);
}

int
kvp_wire_stream_next(struct kvp_wire_stream *s, struct kvp_wire *w,
                     uint64_t *offset, size_t *size, struct kvp_diag *d)
{
	w->root = NULL;
	for (;;) {
		const char *start = s->unp.buffer + s->unp.off;
		size_t have = s->unp.used - s->unp.off;
		long long n = 0;
		size_t want, got;
		msgpack_unpack_return rc;

		*offset = s->pos;
		if (have > 0) {
			n = kvp_wire_scan(start, have, s->max, s->eof, d);
			if (n < 0) {
				d->col = (long)(s->pos + (uint64_t)d->col);
				return -1;
			}
		} else if (s->eof) {
			return 0;
		}
		if ((size_t)n > s->max)
			return kvp_diag_set(
			    d, (long)s->pos,
			    "batch at offset %llu is larger than "
			    "%zu bytes (--max-line-bytes)",
			    (unsigned long long)s->pos, s->max);
		if (n > 0) {
			rc = msgpack_unpacker_next(&s->unp, &w->res);
			if (rc != MSGPACK_UNPACK_SUCCESS)
				return kvp_diag_set(d, (long)s->pos,
				                    "msgpack-c failed to "
				                    "unpack (%d)",
				                    (int)rc);
			s->pos += (uint64_t)n;
			*size = (size_t)n;
			w->root = &w->res.data;
			return 1;
		}
		if (have >= s->max)
			return kvp_diag_set(d, (long)s->pos,
			                    "batch at offset %llu is larger "
			                    "than %zu bytes (--max-line-bytes)",
			                    (unsigned long long)s->pos, s->max);
		/* Read at least as much as is buffered, so that rescanning
		 * an incomplete batch costs O(size) overall. */
		want = have < 65536 ? 65536 : have;
		if (!msgpack_unpacker_reserve_buffer(&s->unp, want))
			return kvp_diag_set(d, (long)s->pos, "out of memory");
		got = fread(msgpack_unpacker_buffer(&s->unp), 1,
		            msgpack_unpacker_buffer_capacity(&s->unp), s->f);
		msgpack_unpacker_buffer_consumed(&s->unp, got);
		if (got == 0) {
			if (ferror(s->f)) {
				if (errno == 0)
					errno = EIO;
				return -2;
			}
			s->eof = 1;
		}
	}
}
