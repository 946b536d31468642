/* SPDX-License-Identifier: MIT */
/*
 * jscan.h — a small strict JSON scanner for one line of text, the shared
 * fast path of the NDJSON filters (kv-hash, kv-normalize). It never
 * allocates a tree: it moves a cursor over the text, hands back spans and
 * exact integers, and says -1 ("decline") for anything outside its
 * contract, so callers can fall back to the json-c path for that line.
 *
 * Contract:
 *  - Grammar is RFC 8259, strictly: whitespace is space, tab, LF and CR;
 *    strings have no raw control bytes (< 0x20) and only the escapes
 *    \" \\ \/ \b \f \n \r \t \uXXXX; numbers have no leading zeros, no
 *    '+' and need digits after '.' and after the exponent. Bytes >= 0x80
 *    in strings are accepted as they are (not UTF-8 validated; json-c does
 *    not validate either) and flagged.
 *  - Integers (numbers without fraction or exponent) are exact: a value in
 *    [-2^63, 2^64-1] or -1. json-c would saturate an integer outside that
 *    range silently; kvp_json_parse_object() rejects such lines, so this
 *    scanner declines them wherever they occur, skipped values included.
 *  - Literals are matched as bytes (true, false, null); what follows a
 *    value is checked by the enclosing container or by kvp_jscan_end().
 *  - Containers nest at most max_depth levels (kvp_jscan_skip()).
 *  - On -1 the cursor position is unspecified: give up on the line.
 *  - c->flags accumulates KVP_JSCAN_* bits for everything scanned so far
 *    with this cursor, so a caller can tell afterwards whether the text was
 *    in a canonical compact form (e.g. copyable byte for byte).
 * Nothing here prints, exits or keeps a pointer past the call, except the
 * cursor's pointer to the caller's line.
 */
#ifndef KVP_JSCAN_H
#define KVP_JSCAN_H

#include <stddef.h>
#include <stdint.h>

/* c->flags bits: what the scanned text contained. */
#define KVP_JSCAN_WS 0x01       /* whitespace was skipped */
#define KVP_JSCAN_ESC 0x02      /* a string had an escape */
#define KVP_JSCAN_NONASCII 0x04 /* a string had a byte >= 0x80 */
#define KVP_JSCAN_NEG 0x08      /* a number had a minus sign */
#define KVP_JSCAN_EXP 0x10      /* a number had an exponent */
#define KVP_JSCAN_LONGINT 0x20  /* a number's integer part had >= 20 digits */
#define KVP_JSCAN_OBJECT 0x40   /* kvp_jscan_skip() met an object */
#define KVP_JSCAN_BIGINT 0x80   /* check(): an integer part of >= 16 digits */

struct kvp_jscan {
	const char *s; /* the line (need not be NUL-terminated) */
	size_t len;    /* its length */
	size_t i;      /* cursor: offset of the next byte */
	unsigned flags;
};

/* A string's contents (between the quotes, escapes not decoded). flags
 * has KVP_JSCAN_ESC and/or KVP_JSCAN_NONASCII for this string; when it is
 * 0 the bytes are the value. */
struct kvp_jspan {
	size_t off, len;
	unsigned flags;
};

/* A top-level member: key bytes [key, key+klen), value text [val, vend). */
struct kvp_jmember {
	size_t key, klen, val, vend;
};

void kvp_jscan_init(struct kvp_jscan *c, const char *s, size_t len);

/* The byte at the cursor, or -1 at the end. */
static inline int
kvp_jscan_peek(const struct kvp_jscan *c)
{
	return c->i < c->len ? (unsigned char)c->s[c->i] : -1;
}

/* Skips whitespace (sets KVP_JSCAN_WS if there was some). */
void kvp_jscan_ws(struct kvp_jscan *c);

/* Skips whitespace; 0 if the cursor is then at the end of the line. */
int kvp_jscan_end(struct kvp_jscan *c);

/* A string at the cursor; *sp gets its contents. 0 or -1. */
int kvp_jscan_string(struct kvp_jscan *c, struct kvp_jspan *sp);

/* An integer at the cursor, exactly: *v gets the value (two's complement
 * for a negative one, in [-2^63, -0]), *neg is 1 when it had a minus sign
 * ("-0" gives 0 with *neg 1). -1 for a non-number, a fraction, an
 * exponent, or a value out of range. */
int kvp_jscan_int(struct kvp_jscan *c, uint64_t *v, int *neg);

/* The literal lit ("true", "false", "null") at the cursor. 0 or -1. */
int kvp_jscan_literal(struct kvp_jscan *c, const char *lit);

/* Skips one value of any type, containers nested at most max_depth deep
 * (a scalar needs 0, "[1]" needs 1). 0 or -1. */
int kvp_jscan_skip(struct kvp_jscan *c, int max_depth);

/*
 * Checks one value at the cursor against the grammar, without recursion
 * and saying why it stopped: KVP_JSCAN_OK with the cursor after the value;
 * KVP_JSCAN_TRUNC when the line ends inside it (every byte before the end
 * fits the grammar); KVP_JSCAN_BAD at a byte that does not fit (the cursor
 * on it); KVP_JSCAN_DEEP when containers nest more than max_depth (at most
 * 64) deep. Unlike the rest of the scanner it takes integers of any size.
 */
enum { KVP_JSCAN_OK, KVP_JSCAN_TRUNC, KVP_JSCAN_BAD, KVP_JSCAN_DEEP };
int kvp_jscan_check(struct kvp_jscan *c, int max_depth);

/*
 * Container iteration. kvp_jscan_obj_begin()/arr_begin() consume the '{' or
 * '[' at the cursor (-1 if it is not there) and the caller sets *n = 0.
 * Each kvp_jscan_obj_next()/arr_next() then returns 1 with the cursor on
 * the next element's value (for objects: *key gets the member's key, and
 * ':' and whitespace are consumed), 0 when the closing bracket was
 * consumed, or -1 on a syntax error. The caller consumes each value before
 * the next call; *n counts the elements seen.
 */
int kvp_jscan_obj_begin(struct kvp_jscan *c);
int kvp_jscan_obj_next(struct kvp_jscan *c, size_t *n, struct kvp_jspan *key);
int kvp_jscan_arr_begin(struct kvp_jscan *c);
int kvp_jscan_arr_next(struct kvp_jscan *c, size_t *n);

/*
 * A flat array of integers at the cursor into *buf (capacity *cap items,
 * grown with kvp_grow()); *n gets the count. kvp_jscan_u64_array() takes
 * negative integers (stored in two's complement) only if allow_neg;
 * kvp_jscan_u32_array() takes integers in [0, 2^32) written without a
 * minus sign. -1 for anything else (or out of memory); *buf may then have
 * grown and hold partial values.
 */
int kvp_jscan_u64_array(struct kvp_jscan *c, int allow_neg, uint64_t **buf,
                        size_t *cap, size_t *n);
int kvp_jscan_u32_array(struct kvp_jscan *c, uint32_t **buf, size_t *cap,
                        size_t *n);

/*
 * The whole line as one object (leading and trailing whitespace allowed):
 * records its members, at most max, into m[0..*n), and *close gets the
 * offset of the closing '}'. Member values may nest max_depth containers.
 * -1 for anything else, for more than max members, for a key with an
 * escape, or for a key given twice (json-c would keep the last one).
 */
int kvp_jscan_members(struct kvp_jscan *c, struct kvp_jmember *m, size_t max,
                      int max_depth, size_t *n, size_t *close);

/* Index in m[0..n) of the member whose key is key, or -1. */
long kvp_jscan_find(const struct kvp_jscan *c, const struct kvp_jmember *m,
                    size_t n, const char *key);

#endif
