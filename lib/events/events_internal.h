/* SPDX-License-Identifier: MIT */
/*
 * events_internal.h — what the modules of lib/events/ share and nobody
 * else sees (zstd's *_internal.h): the msgpack cursor the wire modules and
 * decode_out read payloads with; struct kvp_wire (wire.c, wire_event.c,
 * wire_stream.c); and the Stage-1 exclusion's state and steps, which
 * exclusion.c implements for normalize.c. Never include it from outside
 * lib/events/.
 */
#ifndef KVP_EVENTS_INTERNAL_H
#define KVP_EVENTS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/diag.h"
#include "common/u64set.h"
#include "events/normalize.h"
#include "events/wire.h"

/* ---- the msgpack cursor ----------------------------------------------------
 *
 * Payloads are read straight from their bytes, without an object tree:
 * kvp_wire_scan() has already checked that every header and body lies
 * inside the payload and that nesting is bounded, so the reader does no
 * bounds checks. A value is typed as msgpack-c types it (a signed encoding
 * of a non-negative number is an unsigned integer; float 32 is widened).
 */
enum mp_type {
	MP_NIL,
	MP_BOOL,
	MP_UINT, /* non-negative integer */
	MP_INT,  /* negative integer */
	MP_FLOAT,
	MP_STR,
	MP_BIN,
	MP_EXT,
	MP_ARRAY,
	MP_MAP,
};

struct mp_val {
	enum mp_type type;
	union {
		int b;
		uint64_t u;
		int64_t i;
		double f;
		uint32_t n; /* array or map: elements (map: pairs) */
	} v;
	const char *ptr; /* str, bin, ext: the body */
	uint32_t size;   /* its length */
	int8_t ext_type;
	const uint8_t *at;   /* the value's first byte */
	const uint8_t *kids; /* array, map: the first element */
};

static inline uint32_t
mp_be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static inline uint32_t
mp_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
mp_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* The big-endian unsigned integer of n = 1, 2, 4 or 8 bytes at p. */
static inline uint64_t
mp_ben(const uint8_t *p, unsigned n)
{
	return n == 1   ? p[0]
	       : n == 2 ? mp_be16(p)
	       : n == 4 ? mp_be32(p)
	                : mp_be64(p);
}

static inline void
mp_set_int(struct mp_val *v, int64_t i)
{
	if (i >= 0) {
		v->type = MP_UINT;
		v->v.u = (uint64_t)i;
	} else {
		v->type = MP_INT;
		v->v.i = i;
	}
}

/* A str, bin or ext body of n bytes at body; returns the byte after it. */
static inline const uint8_t *
mp_set_raw(struct mp_val *v, enum mp_type t, const uint8_t *body, uint32_t n)
{
	v->type = t;
	v->ptr = (const char *)body;
	v->size = n;
	return body + n;
}

/* An ext whose type byte is at p, followed by n bytes of data. */
static inline const uint8_t *
mp_set_ext(struct mp_val *v, const uint8_t *p, uint32_t n)
{
	v->ext_type = (int8_t)p[0];
	return mp_set_raw(v, MP_EXT, p + 1, n);
}

static inline const uint8_t *
mp_set_box(struct mp_val *v, enum mp_type t, const uint8_t *kids, uint32_t n)
{
	v->type = t;
	v->v.n = n;
	v->kids = kids;
	return kids;
}

/* The headers whose first byte is 0xc0..0xdf (everything but the fixed
 * forms); see mp_head(). Lengths of str, bin and ext 8/16/32 and of array
 * and map 16/32 are big-endian after the first byte. */
static inline const uint8_t *
mp_head_long(const uint8_t *p, struct mp_val *v)
{
	uint8_t c = *p;
	unsigned k; /* bytes of the length field */
	union {
		uint32_t i;
		float f;
	} f32;
	union {
		uint64_t i;
		double f;
	} f64;

	switch (c) {
	case 0xc2:
	case 0xc3:
		v->type = MP_BOOL;
		v->v.b = c == 0xc3;
		return p + 1;
	case 0xc4 ... 0xc6: /* bin 8/16/32 */
		k = 1u << (c - 0xc4);
		return mp_set_raw(v, MP_BIN, p + 1 + k,
		                  (uint32_t)mp_ben(p + 1, k));
	case 0xc7 ... 0xc9: /* ext 8/16/32: the length, then the type byte */
		k = 1u << (c - 0xc7);
		return mp_set_ext(v, p + 1 + k, (uint32_t)mp_ben(p + 1, k));
	case 0xca:
		f32.i = mp_be32(p + 1);
		v->type = MP_FLOAT;
		v->v.f = f32.f;
		return p + 5;
	case 0xcb:
		f64.i = mp_be64(p + 1);
		v->type = MP_FLOAT;
		v->v.f = f64.f;
		return p + 9;
	case 0xcc ... 0xcf: /* uint 8/16/32/64 */
		k = 1u << (c - 0xcc);
		v->type = MP_UINT;
		v->v.u = mp_ben(p + 1, k);
		return p + 1 + k;
	case 0xd0:
		mp_set_int(v, (int8_t)p[1]);
		return p + 2;
	case 0xd1:
		mp_set_int(v, (int16_t)mp_be16(p + 1));
		return p + 3;
	case 0xd2:
		mp_set_int(v, (int32_t)mp_be32(p + 1));
		return p + 5;
	case 0xd3:
		mp_set_int(v, (int64_t)mp_be64(p + 1));
		return p + 9;
	case 0xd4 ... 0xd8: /* fixext 1/2/4/8/16 */
		return mp_set_ext(v, p + 1, 1u << (c - 0xd4));
	case 0xd9 ... 0xdb: /* str 8/16/32 */
		k = 1u << (c - 0xd9);
		return mp_set_raw(v, MP_STR, p + 1 + k,
		                  (uint32_t)mp_ben(p + 1, k));
	case 0xdc:
	case 0xdd: /* array 16/32 */
		k = 2u << (c - 0xdc);
		return mp_set_box(v, MP_ARRAY, p + 1 + k,
		                  (uint32_t)mp_ben(p + 1, k));
	case 0xde:
	case 0xdf: /* map 16/32 */
		k = 2u << (c - 0xde);
		return mp_set_box(v, MP_MAP, p + 1 + k,
		                  (uint32_t)mp_ben(p + 1, k));
	default: /* 0xc0; 0xc1 never passes the scan */
		v->type = MP_NIL;
		return p + 1;
	}
}

/* Reads the header at p into v. Returns the byte after the value for a
 * scalar, str, bin or ext, and the first element for an array or map. */
static inline const uint8_t *
mp_head(const uint8_t *p, struct mp_val *v)
{
	uint8_t c = *p;

	v->at = p;
	if (c <= 0x7f) {
		v->type = MP_UINT;
		v->v.u = c;
		return p + 1;
	}
	if (c >= 0xe0) {
		v->type = MP_INT;
		v->v.i = (int8_t)c;
		return p + 1;
	}
	if (c <= 0x8f)
		return mp_set_box(v, MP_MAP, p + 1, c & 0x0f);
	if (c <= 0x9f)
		return mp_set_box(v, MP_ARRAY, p + 1, c & 0x0f);
	if (c <= 0xbf)
		return mp_set_raw(v, MP_STR, p + 1, c & 0x1f);
	return mp_head_long(p, v);
}

/* Elements below a header: 0 for anything but an array or a map. */
static inline uint64_t
mp_kids(const struct mp_val *v)
{
	if (v->type == MP_ARRAY)
		return v->v.n;
	if (v->type == MP_MAP)
		return 2 * (uint64_t)v->v.n;
	return 0;
}

/* Skips n whole values starting at p. */
static inline const uint8_t *
mp_skip_n(const uint8_t *p, uint64_t n)
{
	struct mp_val v;

	while (n > 0) {
		p = mp_head(p, &v);
		n += mp_kids(&v) - 1;
	}
	return p;
}

/* Reads the value at p into v; returns the byte after all of it. */
static inline const uint8_t *
mp_next(const uint8_t *p, struct mp_val *v)
{
	const uint8_t *q = mp_head(p, v);
	uint64_t n = mp_kids(v);

	return n ? mp_skip_n(q, n) : q;
}

/* The type's name in messages. */
static inline const char *
mp_tname(const struct mp_val *v)
{
	static const char *const names[] = {
	    [MP_NIL] = "nil",      [MP_BOOL] = "bool",
	    [MP_UINT] = "integer", [MP_INT] = "negative integer",
	    [MP_FLOAT] = "float",  [MP_STR] = "string",
	    [MP_BIN] = "bin",      [MP_EXT] = "ext",
	    [MP_ARRAY] = "array",  [MP_MAP] = "map",
	};

	return names[v->type];
}

static inline int
mp_is_str(const struct mp_val *v, const char *s)
{
	size_t n = strlen(s);

	return v->type == MP_STR && v->size == n && memcmp(v->ptr, s, n) == 0;
}

static inline int
mp_is_int(const struct mp_val *v)
{
	return v->type == MP_UINT || v->type == MP_INT;
}

/* ---- struct kvp_wire (wire.c, wire_event.c, wire_stream.c) --------------- */

/* Array envelopes: offsets of elements 0..KVP_WIRE_TOP-1, from the scan. */
#define KVP_WIRE_TOP 3

struct kvp_wire {
	const uint8_t *root;    /* the loaded batch's bytes (scanned) */
	const uint8_t *end;     /* the byte after them */
	const uint8_t *ev_list; /* the envelope's events array */
	const uint8_t *ev_first, *ev_pos; /* its first event; event ev_idx */
	size_t ev_idx;
	size_t top[KVP_WIRE_TOP];
	uint64_t *hashes;
	size_t hcap;
	uint64_t *tokens;
	size_t tcap;
	uint64_t *offsets;
	size_t ocap;
	struct kvp_wire_str *unknown;
	size_t ucap;
};

/* kvp_wire_scan(), also setting top[i] to the offset of element i when the
 * object is an array (i < KVP_WIRE_TOP). */
long long kvp_wire_scan_top(const void *buf, size_t len, size_t max_claim,
                            int final, struct kvp_diag *d, size_t *top);

/* Makes buf[0, len), scanned with kvp_wire_scan_top() into w->top, the
 * loaded batch. */
void kvp_wire_set_root(struct kvp_wire *w, const void *buf, size_t len);

/* Decodes the event whose first byte is at p (wire_event.c); *end is set
 * to the byte after it on success. */
int kvp_wire_decode_event(struct kvp_wire *w, const uint8_t *p,
                          struct kvp_wire_event *ev, const uint8_t **end,
                          struct kvp_diag *d);

/* ---- block windows ------------------------------------------------------ */

/* The first token of store block i: chunk i, or chunk offsets[i] of a
 * sparse store (vLLM's block_offsets); SIZE_MAX when that lies past any
 * token array. The window is block_size tokens (+1 under EAGLE). */
static inline size_t
kvp_nev_block_start(const struct kvp_nev *ev, size_t i)
{
	uint64_t c = ev->offsets != NULL ? ev->offsets[i] : (uint64_t)i;

	if (ev->block_size != 0 && c > SIZE_MAX / ev->block_size)
		return SIZE_MAX;
	return (size_t)(c * ev->block_size);
}

/* Does block i's window [start, start + win) lie inside the tokens? */
static inline int
kvp_nev_window_fits(size_t start, size_t win, size_t n_tokens)
{
	return start <= n_tokens && n_tokens - start >= win;
}

/* ---- the Stage-1 exclusion (exclusion.c), for normalize.c --------------- */

/* One (worker, dp_rank) stream's excluded block ids, per tier. */
struct kvp_excl {
	struct kvp_u64set set[KVP_TIER_COUNT];
	size_t n;     /* ids tracked, all tiers */
	int fallback; /* over capacity until AllBlocksCleared */
};

/* What of an event survives the exclusion, handed to conversion. */
struct kvp_excl_cut {
	size_t k;                /* block hashes kept (stores) */
	size_t n_tokens;         /* tokens kept */
	int to_empty_removal;    /* a store fully excluded */
	const uint64_t *removed; /* removals: the hashes kept */
	size_t n_removed;
};

void kvp_excl_init(struct kvp_excl *x);
/* Forgets the ids of every tier, or of tier only (only_tier set). The
 * fallback flag is left as it is. */
void kvp_excl_clear(struct kvp_excl *x, int only_tier, enum kvp_tier tier);

/* The off mode without narrowing: -1 with d set if ev stores a wide token
 * id (the message does not name the mode; the caller does). */
int kvp_excl_reject_wide(const struct kvp_norm_opts *o,
                         const struct kvp_nev *ev, struct kvp_diag *d);

/*
 * The wide-token step for ev on tier t of x's stream (dup: the store has a
 * duplicate hash and is left for conversion to reject). Fills *w and the
 * kept, excluded, action and warn fields of *out; removals kept are put in
 * *buf (capacity *cap, grown as needed). Returns 0, or -2 when out of
 * memory.
 */
int kvp_excl_apply(struct kvp_excl *x, const struct kvp_norm_opts *o,
                   enum kvp_tier t, const struct kvp_nev *ev, int dup,
                   uint64_t **buf, size_t *cap, struct kvp_excl_cut *w,
                   struct kvp_nout *out);

#endif
