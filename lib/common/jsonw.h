/* SPDX-License-Identifier: MIT */
/*
 * jsonw.h — the one JSON writer every stage uses (records and text).
 *
 * Compact JSON with keys in the order the caller emits them; commas are
 * placed automatically. Everything written for a record goes into the
 * writer's own buffer, and kvp_jw_end_record() appends '\n' and hands the
 * record to the FILE with one fwrite (then flushes, when unbuffered), so
 * a record is never half-written by this layer and fast paths can render
 * straight into the buffer (kvp_jw_reserve / kvp_jw_commit).
 *
 * u64 values are exact decimal; kvp_jw_hash() writes a decimal string
 * instead when hash_strings is set. Doubles use 17 significant digits
 * (integral values print without exponent or fraction: 3 not 3.0). Invalid
 * UTF-8 in strings becomes \ufffd. Text formats use kvp_jw_text(), which
 * appends free text to the same record buffer.
 *
 * Failures (out of memory, a write error) are sticky: the record being
 * built is dropped and kvp_jw_end_record() returns KVP_FAIL from then on.
 * The FILE is borrowed; kvp_jw_fini() frees the buffer, never the FILE.
 */
#ifndef KVP_JSONW_H
#define KVP_JSONW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/diag.h"

struct json_object;

#define KVP_JW_MAX_DEPTH 64
#define KVP_JW_SCRATCH 64

struct kvp_jw {
	FILE *f; /* borrowed; NULL: render only (see kvp_jw_pending) */
	char *buf;
	size_t len, cap; /* the record so far is buf[0, len) */
	int hash_strings;
	int unbuffered;
	int failed; /* sticky: an allocation or a write failed */
	int depth;
	int after_key;
	unsigned char first[KVP_JW_MAX_DEPTH]; /* no member yet at depth */
	char scratch[KVP_JW_SCRATCH];          /* sink after a failure */
};

void kvp_jw_init(struct kvp_jw *w, FILE *f, int hash_strings, int unbuffered);
void kvp_jw_fini(struct kvp_jw *w);

void kvp_jw_obj_begin(struct kvp_jw *w);
void kvp_jw_obj_end(struct kvp_jw *w);
void kvp_jw_arr_begin(struct kvp_jw *w);
void kvp_jw_arr_end(struct kvp_jw *w);
void kvp_jw_keyn(struct kvp_jw *w, const char *key, size_t len);
void kvp_jw_u64(struct kvp_jw *w, uint64_t v);
void kvp_jw_hash(struct kvp_jw *w, uint64_t v);
void kvp_jw_i64(struct kvp_jw *w, int64_t v);
void kvp_jw_double(struct kvp_jw *w, double v);
/* Formats finite v into b as printf's "%.17g" does (the JSON form of
 * kvp_jw_double); returns the length. Values whose binary fraction is
 * short (most logits and rates of small integers) skip printf. */
size_t kvp_jw_format_double(char b[40], double v);
void kvp_jw_bool(struct kvp_jw *w, int v);
void kvp_jw_null(struct kvp_jw *w);
void kvp_jw_strn(struct kvp_jw *w, const char *s, size_t len);
static inline void
kvp_jw_str(struct kvp_jw *w, const char *s) /* NULL: null */
{
	if (s == NULL)
		kvp_jw_null(w);
	else
		kvp_jw_strn(w, s, strlen(s));
}
/* Writes a json-c value (borrowed). Integers are exact; with hash_strings
 * integers above 2^53 are written as strings. */
void kvp_jw_json(struct kvp_jw *w, const struct json_object *v);
/* A key, and key + value shorthands: inline, so that a literal key's
 * length is known when compiling (no strlen per record). */
static inline void
kvp_jw_key(struct kvp_jw *w, const char *key)
{
	kvp_jw_keyn(w, key, strlen(key));
}

/* kvp_jw_kv_u64, _hash, _i64, _str, _bool, _double: the key, then the
 * value as kvp_jw_u64 (and so on) writes it */
#define KVP_JW_KV(name, type)                                                  \
	static inline void kvp_jw_kv_##name(struct kvp_jw *w, const char *key, \
	                                    type v)                            \
	{                                                                      \
		kvp_jw_key(w, key);                                            \
		kvp_jw_##name(w, v);                                           \
	}
KVP_JW_KV(u64, uint64_t)
KVP_JW_KV(hash, uint64_t)
KVP_JW_KV(i64, int64_t)
KVP_JW_KV(str, const char *)
KVP_JW_KV(bool, int)
KVP_JW_KV(double, double)
#undef KVP_JW_KV

static inline void
kvp_jw_kv_null(struct kvp_jw *w, const char *key)
{
	kvp_jw_key(w, key);
	kvp_jw_null(w);
}

/* A member after the first of its object whose key is a plain literal
 * (no character to escape): ",\"name\":" appended in one piece, with no
 * separator logic or escaping scan; the value follows as after
 * kvp_jw_key. For records written key by key, per line. */
#define kvp_jw_next_key(w, name)                                               \
	kvp_jw_raw_key((w), ",\"" name "\":", sizeof(",\"" name "\":") - 1)
/* kvp_jw_next_key, then the value as kvp_jw_TYPE (u64, hash, str, ...)
 * writes it: kvp_jw_next(w, "blocks", u64, n). */
#define kvp_jw_next(w, name, type, v)                                          \
	(kvp_jw_next_key((w), name), kvp_jw_##type((w), (v)))
void kvp_jw_hash_array(struct kvp_jw *w, const uint64_t *v, size_t n);
void kvp_jw_u64_array(struct kvp_jw *w, const uint64_t *v, size_t n);

/*
 * Raw output, for callers that render pre-formatted JSON: kvp_jw_raw()
 * appends bytes with no separator logic; kvp_jw_raw_key() appends a raw
 * member prefix such as ",\"idx\":" after which the next value writes no
 * separator; kvp_jw_obj_resume() continues an object whose '{' and first
 * members were written raw (the next key gets a comma). kvp_jw_raw_key is
 * inline, below kvp_jw_commit.
 */
void kvp_jw_raw(struct kvp_jw *w, const char *s, size_t n);
/* A value given as its JSON text (an element or a member's value: the
 * separator logic runs as for any value). */
void kvp_jw_raw_value(struct kvp_jw *w, const char *s, size_t n);
void kvp_jw_obj_resume(struct kvp_jw *w);

/* Appends printf-formatted free text (text output formats). */
void kvp_jw_text(struct kvp_jw *w, const char *fmt, ...) KVP_PRINTF(2, 3);

/* Ends the record: '\n', one fwrite, a flush when unbuffered. Returns
 * KVP_OK, or KVP_FAIL after any failure (errno tells a write error). */
int kvp_jw_end_record(struct kvp_jw *w);
/* Ends free text without adding '\n' (text formats supply their own). */
int kvp_jw_end_text(struct kvp_jw *w);
/* False once anything failed (then every end_record returns KVP_FAIL):
 * a tool stops at the first failed write. */
static inline int
kvp_jw_ok(const struct kvp_jw *w)
{
	return !w->failed;
}
/* Drops the record being built. */
void kvp_jw_discard(struct kvp_jw *w);
/* The record built so far (for writers with f == NULL). */
const char *kvp_jw_pending(const struct kvp_jw *w, size_t *len);

/*
 * Fast path: room for n bytes at the end of the record. Write at most n
 * bytes there, then kvp_jw_commit() the number written. Never NULL for
 * n <= KVP_JW_SCRATCH (after a failure the bytes go to a scratch sink);
 * NULL for larger n when memory runs out.
 */
char *kvp_jw_grow_(struct kvp_jw *w, size_t n);

static inline char *
kvp_jw_reserve(struct kvp_jw *w, size_t n)
{
	if (w->cap - w->len >= n) /* cap is 0 after a failure */
		return w->buf + w->len;
	return kvp_jw_grow_(w, n);
}

static inline void
kvp_jw_commit(struct kvp_jw *w, size_t n)
{
	if (!w->failed)
		w->len += n;
}

static inline void
kvp_jw_raw_key(struct kvp_jw *w, const char *s, size_t n)
{
	char *p = n != 0 ? kvp_jw_reserve(w, n) : NULL;

	if (p != NULL) { /* NULL: out of memory past the scratch sink */
		memcpy(p, s, n);
		kvp_jw_commit(w, n);
	}
	w->after_key = 1; /* the next value writes no separator */
}

/*
 * Writes v in decimal (no sign, no NUL) at dst and returns the number of
 * digits (1..20). dst must have KVP_U64_DEC_ROOM bytes of room: the
 * digits are stored in 8-byte steps, so bytes past the returned length
 * may be overwritten.
 */
#define KVP_U64_DEC_ROOM 24
size_t kvp_u64_dec(char *dst, uint64_t v);

#endif
