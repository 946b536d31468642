/* SPDX-License-Identifier: MIT */
/* wire.c — msgpack-c KV-event batch decoding (see wire.h). */
#include "events/wire.h"

#include <msgpack.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/ndjson.h"

#define KVP_TOP 3

struct kvp_wire {
	msgpack_unpacked res;   /* raw streams: msgpack-c's unpacker output */
	const uint8_t *root;    /* the loaded batch's bytes (scanned) */
	const uint8_t *end;     /* the byte after them */
	const uint8_t *ev_list; /* the envelope's events array */
	const uint8_t *ev_first, *ev_pos; /* its first event; event ev_idx */
	size_t ev_idx;
	size_t top[KVP_TOP]; /* array batch: offsets of elements 0..2 */
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

/* Sizes of the msgpack scalars whose size is in their first byte (nil,
 * bool, integers, floats); 0 for everything else. */
static const uint8_t scalar_len[256] = {
    [0x00 ... 0x7f] = 1, [0xe0 ... 0xff] = 1, [0xc0] = 1, [0xc2] = 1,
    [0xc3] = 1,          [0xcc] = 2,          [0xd0] = 2, [0xcd] = 3,
    [0xd1] = 3,          [0xca] = 5,          [0xce] = 5, [0xd2] = 5,
    [0xcb] = 9,          [0xcf] = 9,          [0xd3] = 9,
};

/* Sizes of the unsigned integer encodings (fixint, uint 8/16/32/64); 0 for
 * everything else. */
static const uint8_t uint_len[256] = {
    [0x00 ... 0x7f] = 1, [0xcc] = 2, [0xcd] = 3, [0xce] = 5, [0xcf] = 9,
};

/* kvp_wire_scan(); when the object is an array, top[i] is set to the
 * offset of its element i, for i < KVP_TOP. */

static long long
scan(const void *buf, size_t len, size_t max_claim, int final,
     struct kvp_diag *d, size_t *top)
{
	const uint8_t *p = buf;
	uint64_t stack[KVP_WIRE_MAX_DEPTH];
	size_t pos = 0;
	int depth = 0;
	uint64_t root_n = 0;

	for (;;) {
		size_t hdr = 1, lenbytes = 0, fixed_body = 0;
		uint64_t body = 0, items = 0;
		int is_map = 0, is_arr = 0;
		uint8_t c;

		/* Runs of scalars inside a container (token and hash
		 * arrays): nothing to check but the bytes they need, and a
		 * table lookup instead of branches on the type. The last
		 * element goes through the general path below. */
		if (depth > 1) {
			uint64_t left = stack[depth - 1];

			while (left > 1 && len - pos >= 9) {
				unsigned k = scalar_len[p[pos]];

				if (k == 0)
					break;
				pos += k;
				left--;
			}
			stack[depth - 1] = left;
		}
		if (pos >= len)
			goto need_more;
		if (depth == 1 && root_n - stack[0] < KVP_TOP)
			top[root_n - stack[0]] = pos;
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
			if (depth == 0)
				root_n = items;
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

long long
kvp_wire_scan(const void *buf, size_t len, size_t max_claim, int final,
              struct kvp_diag *d)
{
	size_t top[KVP_TOP];

	return scan(buf, len, max_claim, final, d, top);
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
	n = scan(buf, len, len, 1, d, w->top);
	if (n < 0)
		return -1;
	if ((size_t)n != len)
		return kvp_diag_set(d, (long)n,
		                    "trailing bytes: the batch ends at offset "
		                    "%lld of %zu",
		                    n, len);
	w->root = buf;
	w->end = w->root + len;
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

/* ---- a cursor over scanned msgpack -----------------------------------------
 *
 * Payloads are read straight from their bytes (no msgpack-c object tree):
 * kvp_wire_scan() has already checked that every header and body lies
 * inside the payload and that nesting is bounded, so the reader below does
 * no bounds checks. A value is described as msgpack-c would describe it
 * (signed encodings of non-negative numbers are positive integers, float32
 * is widened to double), so the field helpers above apply unchanged.
 */
struct mv {
	msgpack_object o;    /* type and scalar value; for str/bin/ext the
	                        body pointer; for array/map the size */
	const uint8_t *at;   /* the value's first byte */
	const uint8_t *kids; /* array/map: the first element */
};

static inline uint64_t
be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}
static void
set_int(msgpack_object *o, int64_t v)
{
	if (v >= 0) {
		o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		o->via.u64 = (uint64_t)v;
	} else {
		o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
		o->via.i64 = v;
	}
}

static const uint8_t *
set_raw(msgpack_object *o, msgpack_object_type t, const uint8_t *body,
        uint32_t n)
{
	o->type = t;
	o->via.str.ptr = (const char *)body;
	o->via.str.size = n;
	return body + n;
}

static const uint8_t *
set_ext(msgpack_object *o, const uint8_t *p, uint32_t n)
{
	o->type = MSGPACK_OBJECT_EXT;
	o->via.ext.type = (int8_t)p[0];
	o->via.ext.ptr = (const char *)p + 1;
	o->via.ext.size = n;
	return p + 1 + n;
}

static const uint8_t *
set_box(struct mv *v, msgpack_object_type t, const uint8_t *kids, uint32_t n)
{
	v->o.type = t;
	v->o.via.array.size = n;
	v->o.via.array.ptr = NULL;
	v->kids = kids;
	return kids;
}

/* Reads the header at p into v. Returns the byte after the value for a
 * scalar, str, bin or ext, and the first element for an array or map. */
static const uint8_t *
mv_head(const uint8_t *p, struct mv *v)
{
	msgpack_object *o = &v->o;
	uint8_t c = *p;
	union {
		uint32_t i;
		float f;
	} f32;
	union {
		uint64_t i;
		double f;
	} f64;

	v->at = p;
	if (c <= 0x7f) {
		o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		o->via.u64 = c;
		return p + 1;
	}
	if (c >= 0xe0) {
		o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
		o->via.i64 = (int8_t)c;
		return p + 1;
	}
	if (c <= 0x8f)
		return set_box(v, MSGPACK_OBJECT_MAP, p + 1, c & 0x0f);
	if (c <= 0x9f)
		return set_box(v, MSGPACK_OBJECT_ARRAY, p + 1, c & 0x0f);
	if (c <= 0xbf)
		return set_raw(o, MSGPACK_OBJECT_STR, p + 1, c & 0x1f);
	switch (c) {
	case 0xc2:
	case 0xc3:
		o->type = MSGPACK_OBJECT_BOOLEAN;
		o->via.boolean = c == 0xc3;
		return p + 1;
	case 0xc4:
		return set_raw(o, MSGPACK_OBJECT_BIN, p + 2, p[1]);
	case 0xc5:
		return set_raw(o, MSGPACK_OBJECT_BIN, p + 3, be16(p + 1));
	case 0xc6:
		return set_raw(o, MSGPACK_OBJECT_BIN, p + 5, be32(p + 1));
	case 0xc7:
		return set_ext(o, p + 2, p[1]);
	case 0xc8:
		return set_ext(o, p + 3, be16(p + 1));
	case 0xc9:
		return set_ext(o, p + 5, be32(p + 1));
	case 0xca:
		f32.i = be32(p + 1);
		o->type = MSGPACK_OBJECT_FLOAT32;
		o->via.f64 = f32.f;
		return p + 5;
	case 0xcb:
		f64.i = be64(p + 1);
		o->type = MSGPACK_OBJECT_FLOAT64;
		o->via.f64 = f64.f;
		return p + 9;
	case 0xcc:
		o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		o->via.u64 = p[1];
		return p + 2;
	case 0xcd:
		o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		o->via.u64 = be16(p + 1);
		return p + 3;
	case 0xce:
		o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		o->via.u64 = be32(p + 1);
		return p + 5;
	case 0xcf:
		o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		o->via.u64 = be64(p + 1);
		return p + 9;
	case 0xd0:
		set_int(o, (int8_t)p[1]);
		return p + 2;
	case 0xd1:
		set_int(o, (int16_t)be16(p + 1));
		return p + 3;
	case 0xd2:
		set_int(o, (int32_t)be32(p + 1));
		return p + 5;
	case 0xd3:
		set_int(o, (int64_t)be64(p + 1));
		return p + 9;
	case 0xd4:
		return set_ext(o, p + 1, 1);
	case 0xd5:
		return set_ext(o, p + 1, 2);
	case 0xd6:
		return set_ext(o, p + 1, 4);
	case 0xd7:
		return set_ext(o, p + 1, 8);
	case 0xd8:
		return set_ext(o, p + 1, 16);
	case 0xd9:
		return set_raw(o, MSGPACK_OBJECT_STR, p + 2, p[1]);
	case 0xda:
		return set_raw(o, MSGPACK_OBJECT_STR, p + 3, be16(p + 1));
	case 0xdb:
		return set_raw(o, MSGPACK_OBJECT_STR, p + 5, be32(p + 1));
	case 0xdc:
		return set_box(v, MSGPACK_OBJECT_ARRAY, p + 3, be16(p + 1));
	case 0xdd:
		return set_box(v, MSGPACK_OBJECT_ARRAY, p + 5, be32(p + 1));
	case 0xde:
		return set_box(v, MSGPACK_OBJECT_MAP, p + 3, be16(p + 1));
	case 0xdf:
		return set_box(v, MSGPACK_OBJECT_MAP, p + 5, be32(p + 1));
	default: /* 0xc0; 0xc1 never passes the scan */
		o->type = MSGPACK_OBJECT_NIL;
		return p + 1;
	}
}

/* Elements below a header: 0 for anything but an array or a map. */
static uint64_t
mv_kids(const struct mv *v)
{
	if (v->o.type == MSGPACK_OBJECT_ARRAY)
		return v->o.via.array.size;
	if (v->o.type == MSGPACK_OBJECT_MAP)
		return 2 * (uint64_t)v->o.via.map.size;
	return 0;
}

/* Skips n whole values starting at p. */
static const uint8_t *
mv_skip_n(const uint8_t *p, uint64_t n)
{
	struct mv v;

	while (n > 0) {
		p = mv_head(p, &v);
		n += mv_kids(&v) - 1;
	}
	return p;
}

/* Reads the value at p into v; returns the byte after all of it. */
static const uint8_t *
mv_next(const uint8_t *p, struct mv *v)
{
	const uint8_t *q = mv_head(p, v);
	uint64_t n = mv_kids(v);

	return n ? mv_skip_n(q, n) : q;
}

/* ---- fields ----------------------------------------------------------------
 */

static int
get_opt_list(const struct mv *v, const char *what, kvp_wire_value *out,
             struct kvp_diag *d)
{
	if (v->o.type == MSGPACK_OBJECT_NIL) {
		*out = NULL;
		return 0;
	}
	if (v->o.type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(d, 0, "%s: expected an array, got %s", what,
		                    tname(&v->o));
	*out = v->at;
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

/* The array functions below read the elements of the array whose header
 * is in a, and set *end to the byte after it on success. */
static int
get_hashes(struct kvp_wire *w, const struct mv *a, struct kvp_wire_event *ev,
           const uint8_t **end, struct kvp_diag *d)
{
	const uint8_t *p = a->kids;
	uint32_t n, i;
	struct mv e;

	if (a->o.type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(d, 0,
		                    "block_hashes: expected an array, got %s",
		                    tname(&a->o));
	n = a->o.via.array.size;
	if (grow(&w->hashes, &w->hcap, n, sizeof *w->hashes) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (i = 0; i < n; i++) {
		/* 64-bit encodings inline (a non-negative int 64 is an
		 * unsigned hash, as msgpack-c reads it) */
		if (*p == 0xcf || *p == 0xd3) {
			uint64_t x = be64(p + 1);

			w->hashes[i] = x;
			ev->hash_repr |= *p == 0xd3 && x >> 63 ? KVP_REPR_INT
			                                       : KVP_REPR_UINT;
			p += 9;
			continue;
		}
		p = mv_head(p, &e);
		if (get_hash(&e.o, "block_hashes", (long)i, &w->hashes[i],
		             &ev->hash_repr, d) != 0)
			return -1;
	}
	ev->hashes = w->hashes;
	ev->n_hashes = n;
	*end = p;
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
get_tokens(struct kvp_wire *w, const struct mv *a, struct kvp_wire_event *ev,
           const uint8_t **end, struct kvp_diag *d)
{
	const uint8_t *p = a->kids;
	uint32_t n, i;
	struct mv e, t;

	if (a->o.type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(
		    d, 0, "token_ids: expected an array, got %s", tname(&a->o));
	n = a->o.via.array.size;
	if (grow(&w->tokens, &w->tcap, (size_t)n + 1, sizeof *w->tokens) != 0)
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
			 * go through mv_head(). */
			if (k != 0 && w->end - p >= 9) {
				uint64_t x =
				    be64(p + 1) >> ((8 * (9 - k)) & 63);

				x = k == 1 ? *p : x;
				w->tokens[i] = x;
				ev->wide_tokens += x > UINT32_MAX;
				p += k;
				continue;
			}
			p = mv_head(p, &e);
			if (get_token(&e.o, i, -1, &w->tokens[i],
			              &ev->wide_tokens, d) != 0)
				return -1;
		}
		ev->n_tokens = n;
		*end = p;
		return 0;
	}
	/* EAGLE bigrams: N pairs → the first head, then every tail. */
	for (i = 0; i < n; i++) {
		const uint8_t *q = mv_head(p, &e);

		if (e.o.type != MSGPACK_OBJECT_ARRAY)
			return kvp_diag_set(
			    d, 0,
			    "token_ids[%u]: expected a bigram "
			    "pair (token_ids[0] is one), got %s",
			    i, tname(&e.o));
		if (e.o.via.array.size < 2)
			return kvp_diag_set(d, 0,
			                    "token_ids[%u]: bigram pair has %u "
			                    "element(s), needs 2",
			                    i, e.o.via.array.size);
		q = mv_next(q, &t);
		if (i == 0 && get_token(&t.o, i, 0, &w->tokens[0],
		                        &ev->wide_tokens, d) != 0)
			return -1;
		q = mv_next(q, &t);
		if (get_token(&t.o, i, 1, &w->tokens[i + 1], &ev->wide_tokens,
		              d) != 0)
			return -1;
		p = mv_skip_n(q, e.o.via.array.size - 2);
	}
	ev->n_tokens = n + 1;
	*end = p;
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
get_metadata(struct kvp_wire *w, const struct mv *m, struct kvp_wire_event *ev,
             struct kvp_diag *d)
{
	const uint8_t *p = m->kids;
	uint32_t i;

	for (i = 0; i < m->o.via.map.size; i++) {
		struct mv k, v;

		p = mv_next(p, &k);
		p = mv_next(p, &v);
		if (k.o.type != MSGPACK_OBJECT_STR)
			return kvp_diag_set(d, 0,
			                    "metadata map: key is a %s, not a "
			                    "string",
			                    tname(&k.o));
		if (is_str(&k.o, "cache_salt")) {
			if (get_opt_str(&v.o, "cache_salt", &ev->cache_salt, d))
				return -1;
		} else if (is_str(&k.o, "session_id")) {
			if (get_opt_str(&v.o, "session_id", &ev->session_id, d))
				return -1;
		} else if (add_unknown(w, ev, &k.o, 1, d) != 0) {
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
fixed_tail(const struct mv *t, size_t n)
{
	static const int want_int[5] = {1, 0, 1, 0, 0};
	size_t i;

	if (n < 4)
		return 0;
	for (i = 0; i < n && i < 5; i++) {
		if (t[i].o.type == MSGPACK_OBJECT_NIL)
			continue;
		if (want_int[i] ? !is_int(&t[i].o)
		                : t[i].o.type != MSGPACK_OBJECT_STR)
			return 0;
	}
	return 1;
}

static int
legacy_elem(const struct mv *v, struct kvp_wire_event *ev, struct kvp_diag *d)
{
	const msgpack_object *o = &v->o;

	if (o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (is_int(o) && !ev->has_group_idx) {
		if (get_opt_u32(o, "group_idx", &ev->has_group_idx,
		                &ev->group_idx, d))
			return -1;
	} else if (is_int(o) && !ev->has_sliding_window) {
		if (get_opt_u32(o, "kv_cache_spec_sliding_window",
		                &ev->has_sliding_window, &ev->sliding_window,
		                d))
			return -1;
	} else if (o->type == MSGPACK_OBJECT_STR && !ev->kind.present) {
		get_opt_str(o, "kv_cache_spec_kind", &ev->kind, d);
	} else if (o->type == MSGPACK_OBJECT_ARRAY &&
	           ev->block_mm_infos == NULL) {
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
	struct mv t[5];
	size_t i, k = n < 5 ? n : 5;
	const uint8_t *q = *p;

	for (i = 0; i < k; i++)
		q = mv_next(q, &t[i]);
	if (fixed_tail(t, n)) {
		if (get_opt_u32(&t[0].o, "group_idx", &ev->has_group_idx,
		                &ev->group_idx, d) ||
		    get_opt_str(&t[1].o, "kv_cache_spec_kind", &ev->kind, d) ||
		    get_opt_u32(&t[2].o, "kv_cache_spec_sliding_window",
		                &ev->has_sliding_window, &ev->sliding_window,
		                d) ||
		    get_opt_str(&t[3].o, "locality", &ev->locality, d) ||
		    (n > 4 &&
		     get_opt_str(&t[4].o, "source_kind", &ev->source_kind, d)))
			return -1;
		ev->surplus += n > 5 ? n - 5 : 0;
		*p = n > 5 ? mv_skip_n(q, n - 5) : q;
		return 0;
	}
	for (i = 0; i < k; i++)
		if (legacy_elem(&t[i], ev, d) != 0)
			return -1;
	for (; i < n; i++) {
		q = mv_next(q, &t[0]);
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
	struct mv e;

	if (n < 5)
		return kvp_diag_set(d, 0,
		                    "BlockStored array has %zu element(s); "
		                    "needs at least 5 (tag, block_hashes, "
		                    "parent_block_hash, token_ids, block_size)",
		                    n);
	p = mv_head(p, &e);
	if (get_hashes(w, &e, ev, &p, d))
		return -1;
	p = mv_next(p, &e);
	if (get_parent(&e.o, ev, d))
		return -1;
	p = mv_head(p, &e);
	if (get_tokens(w, &e, ev, &p, d))
		return -1;
	p = mv_next(p, &e);
	if (get_u32(&e.o, "block_size", &ev->block_size, d))
		return -1;
	ev->has_block_size = 1;
	if (n > 5) {
		p = mv_next(p, &e);
		if (get_opt_i64(&e.o, "lora_id", &ev->has_lora_id, &ev->lora_id,
		                d))
			return -1;
	}
	if (n > 6) {
		p = mv_next(p, &e);
		if (get_opt_str(&e.o, "medium", &ev->medium, d))
			return -1;
	}
	if (n > 7) {
		p = mv_next(p, &e);
		if (e.o.type == MSGPACK_OBJECT_MAP) {
			if (get_metadata(w, &e, ev, d) != 0)
				return -1;
		} else if (e.o.type == MSGPACK_OBJECT_STR ||
		           e.o.type == MSGPACK_OBJECT_NIL) {
			get_opt_str(&e.o, "lora_name", &ev->lora_name, d);
		} else {
			return kvp_diag_set(d, 0,
			                    "element 7: expected lora_name "
			                    "(string), a metadata map or nil, "
			                    "got %s",
			                    tname(&e.o));
		}
	}
	if (n > 8) {
		p = mv_next(p, &e);
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
	struct mv e;

	if (n < 2)
		return kvp_diag_set(d, 0,
		                    "BlockRemoved array has 1 element; needs "
		                    "at least 2 (tag, block_hashes)");
	p = mv_head(p, &e);
	if (get_hashes(w, &e, ev, &p, d))
		return -1;
	if (n > 2) {
		p = mv_next(p, &e);
		if (get_opt_str(&e.o, "medium", &ev->medium, d))
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
	struct mv e;

	if (n > 1) {
		*pp = mv_next(*pp, &e);
		if (get_opt_str(&e.o, "source_kind", &ev->source_kind, d))
			return -1;
	}
	ev->surplus = n > 2 ? n - 2 : 0;
	if (n > 2)
		*pp = mv_skip_n(*pp, n - 2);
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

/* One member of an event map other than "type" (id from map_key(), -1 for
 * an unknown key); v is its value, whose header is read and whose end is
 * *end. */
static int
map_member(struct kvp_wire *w, const struct mv *k, int id, const uint8_t *vp,
           struct kvp_wire_event *ev, int *seen, const uint8_t **end,
           struct kvp_diag *d)
{
	struct mv v;
	const msgpack_object *o = &v.o;
	int rc = 0;

	if (id == K_BLOCK_HASHES || id == K_TOKENS) {
		mv_head(vp, &v);
		seen[id] = 1;
		if (v.o.type != MSGPACK_OBJECT_ARRAY)
			*end = mv_next(vp, &v);
		return id == K_BLOCK_HASHES ? get_hashes(w, &v, ev, end, d)
		                            : get_tokens(w, &v, ev, end, d);
	}
	*end = mv_next(vp, &v);
	if (id < 0)
		return add_unknown(w, ev, &k->o, 0, d);
	seen[id] = 1;
	switch ((enum key_id)id) {
	case K_BLOCK_HASHES:
	case K_TOKENS:
		break;
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
		rc = get_opt_list(&v, "extra_keys", &ev->extra_keys, d);
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
		rc = get_opt_list(&v, "block_mm_infos", &ev->block_mm_infos, d);
		break;
	case K_OWNERSHIP:
		rc = get_opt_str(o, "ownership", &ev->ownership, d);
		break;
	case K_NKEYS:
		break;
	}
	return rc;
}

static int
map_missing(unsigned bit, const int *seen, struct kvp_diag *d)
{
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

/*
 * The rules, in their order: every key must be a string; the last "type"
 * key is the tag; then the other members in wire order; then the required
 * keys. m is the map's header; *end is set to the byte after the map.
 */
static int
event_map_exact(struct kvp_wire *w, const struct mv *m,
                struct kvp_wire_event *ev, const uint8_t **end,
                struct kvp_diag *d)
{
	uint32_t n = m->o.via.map.size, i;
	const uint8_t *p = m->kids;
	struct mv k, v, tag;
	int has_tag = 0, seen[K_NKEYS] = {0};
	unsigned bit;

	for (i = 0; i < n; i++) {
		p = mv_next(p, &k);
		if (k.o.type != MSGPACK_OBJECT_STR)
			return kvp_diag_set(d, 0,
			                    "event map: key is a %s, not a "
			                    "string",
			                    tname(&k.o));
		p = mv_next(p, &v);
		if (is_str(&k.o, "type")) {
			tag = v;
			has_tag = 1;
		}
	}
	*end = p;
	if (!has_tag)
		return kvp_diag_set(d, 0, "event map has no \"type\" key");
	if (set_type(&tag.o, ev, d) != 0)
		return -1;
	if (ev->type == KVP_WIRE_IGNORED)
		return 0;
	bit = 1u << ev->type;
	p = m->kids;
	for (i = 0; i < n; i++) {
		const uint8_t *e;

		p = mv_next(p, &k);
		if (is_str(&k.o, "type")) {
			p = mv_skip_n(p, 1);
			continue;
		}
		if (map_member(w, &k, map_key(&k.o, bit), p, ev, seen, &e, d))
			return -1;
		p = e;
	}
	return map_missing(bit, seen, d);
}

/*
 * One pass for the usual shape: "type" first and nowhere else, a known
 * tag. Gives up (returns 1) on anything else, including any error, and
 * event_map_exact() then decodes the map again with the rules' order of
 * checks, so that the result and the message are the same.
 */
static int
event_map_fast(struct kvp_wire *w, const struct mv *m,
               struct kvp_wire_event *ev, const uint8_t **end,
               struct kvp_diag *d)
{
	uint32_t n = m->o.via.map.size, i;
	const uint8_t *p = m->kids;
	struct mv k, v;
	int seen[K_NKEYS] = {0};
	unsigned bit;

	if (n == 0)
		return 1;
	p = mv_next(p, &k);
	if (!is_str(&k.o, "type"))
		return 1;
	p = mv_next(p, &v);
	if (set_type(&v.o, ev, d) != 0 || ev->type == KVP_WIRE_IGNORED)
		return 1;
	bit = 1u << ev->type;
	for (i = 1; i < n; i++) {
		const uint8_t *e;

		p = mv_next(p, &k);
		if (k.o.type != MSGPACK_OBJECT_STR || is_str(&k.o, "type"))
			return 1;
		if (map_member(w, &k, map_key(&k.o, bit), p, ev, seen, &e, d))
			return 1;
		p = e;
	}
	if (map_missing(bit, seen, d) != 0)
		return 1;
	*end = p;
	return 0;
}

static int
event_map(struct kvp_wire *w, const struct mv *m, struct kvp_wire_event *ev,
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

/* Decodes the event whose first byte is at p; *end is set to the byte
 * after it on success. */
static int
decode_event(struct kvp_wire *w, const uint8_t *p, struct kvp_wire_event *ev,
             const uint8_t **end, struct kvp_diag *d)
{
	struct mv o, tag;
	const uint8_t *q;
	size_t n;

	q = mv_head(p, &o);
	if (o.o.type == MSGPACK_OBJECT_MAP) {
		ev->enc = KVP_WIRE_MAP;
		return event_map(w, &o, ev, end, d);
	}
	if (o.o.type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(
		    d, 0, "event is a %s, not an array or a map", tname(&o.o));
	ev->enc = KVP_WIRE_ARRAY;
	n = o.o.via.array.size;
	if (n == 0)
		return kvp_diag_set(d, 0, "empty event array (no tag)");
	q = mv_next(q, &tag);
	if (set_type(&tag.o, ev, d) != 0)
		return -1;
	switch (ev->type) {
	case KVP_WIRE_STORED:
		if (stored_array(w, &q, n, ev, d) != 0)
			return -1;
		break;
	case KVP_WIRE_REMOVED:
		if (removed_array(w, &q, n, ev, d) != 0)
			return -1;
		break;
	case KVP_WIRE_CLEARED:
		if (cleared_array(&q, n, ev, d) != 0)
			return -1;
		break;
	case KVP_WIRE_IGNORED:
		q = mv_skip_n(q, n - 1);
		break;
	}
	*end = q;
	return 0;
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
	w->ev_pos = mv_skip_n(w->ev_pos, idx - w->ev_idx);
	p = w->ev_pos;
	rc = decode_event(w, p, ev, &end, d);
	w->ev_pos = rc == 0 && end != NULL ? end : mv_skip_n(p, 1);
	w->ev_idx = idx + 1;
	return rc;
}

/* ---- envelope ---------------------------------------------------------------
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
get_events(struct kvp_wire *w, const struct mv *v, struct kvp_wire_batch *b,
           struct kvp_diag *d)
{
	if (v->o.type != MSGPACK_OBJECT_ARRAY)
		return kvp_diag_set(
		    d, 0, "envelope events: expected an array, got %s",
		    tname(&v->o));
	b->events_ = v->at;
	b->n_events = v->o.via.array.size;
	w->ev_list = v->at;
	w->ev_first = v->kids;
	w->ev_pos = v->kids;
	w->ev_idx = 0;
	return 0;
}

int
kvp_wire_envelope(struct kvp_wire *w, int strict, struct kvp_wire_batch *b,
                  struct kvp_diag *d)
{
	size_t bytes = b->bytes;
	struct mv o, e;
	const uint8_t *p;

	memset(b, 0, sizeof *b);
	b->bytes = bytes;
	w->ev_list = NULL;
	if (w->root == NULL)
		return kvp_diag_set(d, 0, "no batch loaded");
	p = mv_head(w->root, &o);
	if (o.o.type == MSGPACK_OBJECT_ARRAY) {
		size_t n = o.o.via.array.size;

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
		p = mv_next(p, &e);
		if (get_ts(&e.o, b, d))
			return -1;
		mv_head(p, &e); /* the header only: no walk over the events */
		if (get_events(w, &e, b, d))
			return -1;
		if (n > 2) {
			/* from the scan: no walk over the events */
			mv_head(w->root + w->top[2], &e);
			if (get_rank(&e.o, b, d))
				return -1;
		}
		b->extra = n > 3 ? n - 3 : 0;
		return 0;
	}
	if (o.o.type == MSGPACK_OBJECT_MAP) {
		uint32_t i;
		int has_ts = 0;

		b->enc = KVP_WIRE_MAP;
		if (strict)
			return kvp_diag_set(d, 0,
			                    "map envelope; Dynamo (--strict) "
			                    "decodes only [ts, events, "
			                    "dp_rank]");
		for (i = 0; i < o.o.via.map.size; i++) {
			struct mv k, v;

			p = mv_next(p, &k);
			p = mv_next(p, &v);
			if (is_str(&k.o, "ts")) {
				if (get_ts(&v.o, b, d))
					return -1;
				has_ts = 1;
			} else if (is_str(&k.o, "events")) {
				if (get_events(w, &v, b, d))
					return -1;
			} else if (is_str(&k.o, "data_parallel_rank") ||
			           is_str(&k.o, "attn_dp_rank") ||
			           is_str(&k.o, "dp_rank")) {
				if (get_rank(&v.o, b, d))
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
	                    tname(&o.o));
}

/* ---- JSON rendering of opaque values ------------------------------------- */

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

/* Writes the value at p; returns the byte after it. */
static const uint8_t *
write_mv(struct kvp_jw *jw, const uint8_t *p)
{
	struct mv v;
	const msgpack_object *o = &v.o;
	uint32_t i;

	p = mv_head(p, &v);
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
			p = write_mv(jw, p);
		kvp_jw_arr_end(jw);
		break;
	case MSGPACK_OBJECT_MAP:
		kvp_jw_obj_begin(jw);
		for (i = 0; i < o->via.map.size; i++) {
			struct mv kv;
			const msgpack_object *k = &kv.o;

			p = mv_next(p, &kv);
			if (k->type == MSGPACK_OBJECT_STR) {
				kvp_jw_keyn(jw, k->via.str.ptr,
				            k->via.str.size);
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
			p = write_mv(jw, p);
		}
		kvp_jw_obj_end(jw);
		break;
	}
	return p;
}

void
kvp_wire_write_value(struct kvp_jw *jw, kvp_wire_value v)
{
	if (v == NULL)
		kvp_jw_null(jw);
	else
		write_mv(jw, v);
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
			n = scan(start, have, s->max, s->eof, d, w->top);
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
			/* The unpacker consumes the batch; its bytes stay
			 * in its buffer (referenced by w->res) until the
			 * next call, and are decoded from there. */
			rc = msgpack_unpacker_next(&s->unp, &w->res);
			if (rc != MSGPACK_UNPACK_SUCCESS)
				return kvp_diag_set(d, (long)s->pos,
				                    "msgpack-c failed to "
				                    "unpack (%d)",
				                    (int)rc);
			s->pos += (uint64_t)n;
			*size = (size_t)n;
			w->root = (const uint8_t *)start;
			w->end = w->root + n;
			w->ev_list = NULL;
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
