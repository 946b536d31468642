/* SPDX-License-Identifier: MIT */
/*
 * engine_ser.c — the two serializations vLLM hashes block tuples through:
 * canonical CBOR (cbor2 canonical=True) and pickle protocol 5 (CPython's C
 * pickler). Only the types a block tuple holds: ints, text, bytes, None,
 * arrays/tuples. Byte layouts: docs/spec/engine-hashes.md §1.4.
 *
 * Why a small encoder and not libcbor: libcbor builds a tree of
 * heap-allocated items and serializes it afterwards (one allocation per
 * token); hashing a 16-token block through it measured several times
 * slower than these few lines, which write straight into a reused buffer
 * (see kv-hash(1), "CBOR").
 */
#include <stdlib.h>
#include <string.h>

#include "hash/hash_internal.h"

#define PK_FRAME_TARGET 65536u
#define PK_FRAME_MIN 4u
#define PK_FRAME_HDR 9u

int
kvp_engine_ser_reserve(struct kvp_engine_ser_buf *b, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->oom)
		return -1;
	if (b->cap - b->n >= more)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap - b->n < more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (p == NULL) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

static void
put(struct kvp_engine_ser_buf *b, const void *p, size_t n)
{
	if (kvp_engine_ser_reserve(b, n) != 0)
		return;
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void
put1(struct kvp_engine_ser_buf *b, uint8_t c)
{
	if (b->n < b->cap || kvp_engine_ser_reserve(b, 1) == 0)
		b->p[b->n++] = c;
}

/* ---- CBOR ---------------------------------------------------------------- */

void
kvp_engine_ser_cbor_head(struct kvp_engine_ser_buf *b, unsigned major,
                         uint64_t v)
{
	uint8_t *h;
	size_t n, i;

	if (kvp_engine_ser_reserve(b, 9) != 0)
		return;
	h = b->p + b->n;
	major <<= 5;
	if (v < 24) {
		h[0] = (uint8_t)(major | v);
		b->n++;
		return;
	}
	if (v <= 0xff)
		n = 1, h[0] = (uint8_t)(major | 24);
	else if (v <= 0xffff)
		n = 2, h[0] = (uint8_t)(major | 25);
	else if (v <= 0xffffffffu)
		n = 4, h[0] = (uint8_t)(major | 26);
	else
		n = 8, h[0] = (uint8_t)(major | 27);
	for (i = 0; i < n; i++)
		h[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	b->n += n + 1;
}

void
kvp_engine_ser_cbor_int(struct kvp_engine_ser_buf *b, int64_t v)
{
	if (v >= 0)
		kvp_engine_ser_cbor_head(b, 0, (uint64_t)v);
	else
		kvp_engine_ser_cbor_head(b, 1, (uint64_t)(-(v + 1)));
}

void
kvp_engine_ser_cbor_bytes(struct kvp_engine_ser_buf *b, unsigned major,
                          const void *p, size_t n)
{
	kvp_engine_ser_cbor_head(b, major, n);
	put(b, p, n);
}

void
kvp_engine_ser_cbor_extra(struct kvp_engine_ser_buf *b,
                          const struct kvp_eextra *ex)
{
	size_t i;

	if (ex == NULL || ex->n == 0) {
		put1(b, 0xf6);
		return;
	}
	kvp_engine_ser_cbor_head(b, 4, ex->n);
	for (i = 0; i < ex->n; i++) {
		const struct kvp_eitem *it = &ex->it[i];

		switch (it->kind) {
		case KVP_EITEM_TEXT:
			kvp_engine_ser_cbor_bytes(b, 3, it->s, it->len);
			break;
		case KVP_EITEM_MM:
			put1(b, 0x82);
			kvp_engine_ser_cbor_bytes(b, 3, it->s, it->len);
			kvp_engine_ser_cbor_int(b, it->i);
			break;
		case KVP_EITEM_BYTES:
			kvp_engine_ser_cbor_bytes(b, 2, it->s, it->len);
			break;
		case KVP_EITEM_INT:
			kvp_engine_ser_cbor_int(b, it->i);
			break;
		}
	}
}

/* ---- pickle -------------------------------------------------------------- */

static void
frame_open(struct kvp_engine_ser_buf *b)
{
	static const uint8_t hdr[PK_FRAME_HDR] = {0x95};

	b->frame = b->n;
	put(b, hdr, sizeof hdr);
}

/* Writes the open frame's length; a frame under 4 bytes loses its header,
 * as in CPython's _Pickler_CommitFrame(). */
static void
frame_close(struct kvp_engine_ser_buf *b)
{
	size_t len, i;

	if (b->oom)
		return;
	len = b->n - b->frame - PK_FRAME_HDR;
	if (len < PK_FRAME_MIN) {
		memmove(b->p + b->frame, b->p + b->frame + PK_FRAME_HDR, len);
		b->n -= PK_FRAME_HDR;
		return;
	}
	for (i = 0; i < 8; i++)
		b->p[b->frame + 1 + i] = (uint8_t)((uint64_t)len >> (8 * i));
}

void
kvp_engine_ser_pickle_begin(struct kvp_engine_ser_buf *b)
{
	put1(b, 0x80);
	put1(b, 5);
	frame_open(b);
}

void
kvp_engine_ser_pickle_boundary(struct kvp_engine_ser_buf *b)
{
	if (b->oom || b->n - b->frame - PK_FRAME_HDR < PK_FRAME_TARGET)
		return;
	frame_close(b);
	frame_open(b);
}

void
kvp_engine_ser_pickle_end(struct kvp_engine_ser_buf *b)
{
	put1(b, 0x2e);
	frame_close(b);
}

void
kvp_engine_ser_pickle_op(struct kvp_engine_ser_buf *b, uint8_t op)
{
	put1(b, op);
}

static void
le(struct kvp_engine_ser_buf *b, uint64_t v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		put1(b, (uint8_t)(v >> (8 * i)));
}

/* op, then n little-endian bytes of v, into room already reserved. */
static void
op_le(struct kvp_engine_ser_buf *b, uint8_t op, uint64_t v, size_t n)
{
	uint8_t *p = b->p + b->n;
	size_t i;

	p[0] = op;
	for (i = 0; i < n; i++)
		p[1 + i] = (uint8_t)(v >> (8 * i));
	b->n += n + 1;
}

void
kvp_engine_ser_pickle_int(struct kvp_engine_ser_buf *b, int64_t v)
{
	size_t n;

	if (kvp_engine_ser_reserve(b, 10) != 0)
		return;
	if (v >= 0 && v <= 0xff)
		op_le(b, 0x4b, (uint64_t)v, 1);
	else if (v >= 0 && v <= 0xffff)
		op_le(b, 0x4d, (uint64_t)v, 2);
	else if (v >= INT32_MIN && v <= INT32_MAX)
		op_le(b, 0x4a, (uint64_t)v, 4);
	else {
		/* LONG1: minimal little-endian two's complement */
		for (n = 1; n < 8; n++) {
			int64_t lo = -((int64_t)1 << (8 * n - 1));
			int64_t hi = ((int64_t)1 << (8 * n - 1)) - 1;

			if (v >= lo && v <= hi)
				break;
		}
		b->p[b->n++] = 0x8a;
		op_le(b, (uint8_t)n, (uint64_t)v, n); /* count, then bytes */
	}
}

void
kvp_engine_ser_pickle_str(struct kvp_engine_ser_buf *b, const char *s, size_t n)
{
	if (n < 256) {
		put1(b, 0x8c);
		put1(b, (uint8_t)n);
	} else {
		put1(b, 0x58);
		le(b, n, 4);
	}
	put(b, s, n);
	put1(b, 0x94);
}

void
kvp_engine_ser_pickle_bytes(struct kvp_engine_ser_buf *b, const void *p,
                            size_t n)
{
	if (n < 256) {
		put1(b, 0x43);
		put1(b, (uint8_t)n);
	} else {
		put1(b, 0x42);
		le(b, n, 4);
	}
	put(b, p, n);
	put1(b, 0x94);
}

void
kvp_engine_ser_pickle_tuple_open(struct kvp_engine_ser_buf *b, size_t n)
{
	if (n > 3)
		put1(b, 0x28);
}

void
kvp_engine_ser_pickle_tuple_close(struct kvp_engine_ser_buf *b, size_t n)
{
	if (n == 0) {
		put1(b, 0x29);
		return;
	}
	put1(b, n > 3 ? 0x74 : (uint8_t)(0x84 + n));
	put1(b, 0x94);
}

static void
pk_item(struct kvp_engine_ser_buf *b, const struct kvp_eitem *it)
{
	switch (it->kind) {
	case KVP_EITEM_TEXT:
		kvp_engine_ser_pickle_str(b, it->s, it->len);
		break;
	case KVP_EITEM_MM:
		kvp_engine_ser_pickle_boundary(b);
		kvp_engine_ser_pickle_str(b, it->s, it->len);
		kvp_engine_ser_pickle_boundary(b);
		kvp_engine_ser_pickle_int(b, it->i);
		kvp_engine_ser_pickle_tuple_close(b, 2);
		break;
	case KVP_EITEM_BYTES:
		kvp_engine_ser_pickle_bytes(b, it->s, it->len);
		break;
	case KVP_EITEM_INT:
		kvp_engine_ser_pickle_int(b, it->i);
		break;
	}
}

void
kvp_engine_ser_pickle_extra(struct kvp_engine_ser_buf *b,
                            const struct kvp_eextra *ex)
{
	size_t i;

	kvp_engine_ser_pickle_boundary(b);
	if (ex == NULL || ex->n == 0) {
		put1(b, 0x4e);
		return;
	}
	kvp_engine_ser_pickle_tuple_open(b, ex->n);
	for (i = 0; i < ex->n; i++) {
		kvp_engine_ser_pickle_boundary(b);
		pk_item(b, &ex->it[i]);
	}
	kvp_engine_ser_pickle_tuple_close(b, ex->n);
}
