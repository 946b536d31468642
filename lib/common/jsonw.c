/* SPDX-License-Identifier: MIT */
/* jsonw.c — the JSON writer: one record buffer, one fwrite per record. */
#define _GNU_SOURCE 1
#include "common/jsonw.h"

#include <errno.h>
#include <json.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kvpipe.h"

/* A buffer bigger than this after a record is given back. */
#define KEEP_CAP ((size_t)1 << 22)

void
kvp_jw_init(struct kvp_jw *w, FILE *f, int hash_strings, int unbuffered)
{
	memset(w, 0, sizeof *w);
	w->f = f;
	w->hash_strings = hash_strings;
	w->unbuffered = unbuffered;
	w->first[0] = 1;
}

void
kvp_jw_fini(struct kvp_jw *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

char *
kvp_jw_grow_(struct kvp_jw *w, size_t n)
{
	size_t cap;
	char *p;

	if (!w->failed) {
		cap = w->cap ? w->cap : 4096;
		while (cap - w->len < n && cap <= SIZE_MAX / 2)
			cap *= 2;
		p = cap - w->len >= n ? realloc(w->buf, cap) : NULL;
		if (p != NULL) {
			w->buf = p;
			w->cap = cap;
			return p + w->len;
		}
		w->failed = 1;
		w->len = w->cap = 0; /* every reserve now takes this path */
		errno = ENOMEM;
	}
	return n <= sizeof w->scratch ? w->scratch : NULL;
}

static inline void
put(struct kvp_jw *w, const void *s, size_t n)
{
	char *p;

	if (n == 0)
		return;
	p = kvp_jw_reserve(w, n);
	if (p != NULL && !w->failed) {
		memcpy(p, s, n);
		w->len += n;
	}
}

static inline void
putch(struct kvp_jw *w, char c)
{
	char *p = kvp_jw_reserve(w, 1);

	*p = c;
	kvp_jw_commit(w, 1);
}

#define PUTLIT(w, lit) put((w), (lit), sizeof(lit) - 1)

/* Separator before a value (array element or top level) or key. */
static void
sep(struct kvp_jw *w)
{
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (!w->first[w->depth])
		putch(w, ',');
	w->first[w->depth] = 0;
}

static void
jw_open(struct kvp_jw *w, int c)
{
	sep(w);
	putch(w, (char)c);
	if (w->depth + 1 < KVP_JW_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = 1;
}

static void
close_(struct kvp_jw *w, int c)
{
	putch(w, (char)c);
	if (w->depth > 0)
		w->depth--;
}

void
kvp_jw_obj_begin(struct kvp_jw *w)
{
	jw_open(w, '{');
}

void
kvp_jw_obj_end(struct kvp_jw *w)
{
	close_(w, '}');
}

void
kvp_jw_arr_begin(struct kvp_jw *w)
{
	jw_open(w, '[');
}

void
kvp_jw_arr_end(struct kvp_jw *w)
{
	close_(w, ']');
}

/*
 * Decimal digits without a per-digit division: x < 10^8 is split into four
 * two-digit lanes and then into eight one-digit bytes with multiply-shift
 * steps on one 64-bit word (the bytes come out most significant first in
 * memory order on a little-endian machine).
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline __attribute__((always_inline)) uint64_t
eight_digits(uint32_t x)
{
	uint64_t merged = (uint64_t)(x / 10000) | (uint64_t)(x % 10000) << 32;
	uint64_t top = ((merged * 10486) >> 20) & (0x7FULL << 32 | 0x7F);
	uint64_t bot = merged - 100 * top;
	uint64_t hundreds = (bot << 16) + top;
	uint64_t tens = (hundreds * 103) >> 10;

	tens &= 0xFULL << 48 | 0xFULL << 32 | 0xFULL << 16 | 0xF;
	tens += (hundreds - 10 * tens) << 8;
	return tens;
}

/* x < 10^8, no leading zeros (x == 0 → "0"). */
static inline __attribute__((always_inline)) size_t
put_short(char *dst, uint32_t x)
{
	uint64_t t = eight_digits(x);
	unsigned z = t ? (unsigned)__builtin_ctzll(t) / 8 : 7;

	t = (t + 0x3030303030303030ULL) >> (8 * z);
	memcpy(dst, &t, 8);
	return 8 - z;
}

/* x < 10^8 as exactly eight digits. */
static inline __attribute__((always_inline)) void
put_eight(char *dst, uint32_t x)
{
	uint64_t t = eight_digits(x) + 0x3030303030303030ULL;

	memcpy(dst, &t, 8);
}

size_t
kvp_u64_dec(char *dst, uint64_t v)
{
	size_t n;

	if (v < 100000000)
		return put_short(dst, (uint32_t)v);
	if (v < 10000000000000000ULL) {
		n = put_short(dst, (uint32_t)(v / 100000000));
		put_eight(dst + n, (uint32_t)(v % 100000000));
		return n + 8;
	}
	n = put_short(dst, (uint32_t)(v / 10000000000000000ULL));
	v %= 10000000000000000ULL;
	put_eight(dst + n, (uint32_t)(v / 100000000));
	put_eight(dst + n + 8, (uint32_t)(v % 100000000));
	return n + 16;
}
#else
size_t
kvp_u64_dec(char *dst, uint64_t v)
{
	char b[20];
	size_t i = sizeof b;

	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(dst, b + i, sizeof b - i);
	return sizeof b - i;
}
#endif

static void
put_u64(struct kvp_jw *w, uint64_t v)
{
	char *p = kvp_jw_reserve(w, KVP_U64_DEC_ROOM);

	kvp_jw_commit(w, kvp_u64_dec(p, v));
}

/* Length of the valid UTF-8 sequence at p (2..4), or 0 when it is not
 * one (overlong, surrogate, above U+10FFFF, truncated). */
static size_t
utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = *p;
	size_t n = 0, i;
	uint32_t cp = 0, min = 0;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
		min = 0x10000;
	}
	if (n == 0 || (size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static void
put_escaped(struct kvp_jw *w, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end;

	if (len == 0) {
		PUTLIT(w, "\"\"");
		return;
	}
	end = p + len;
	putch(w, '"');
	while (p < end) {
		const unsigned char *run = p;

		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' &&
		       *p != '\\')
			p++;
		if (p > run)
			put(w, run, (size_t)(p - run));
		if (p >= end)
			break;
		unsigned char c = *p;
		if (c < 0x80) {
			putch(w, '\\');
			switch (c) {
			case '"':
			case '\\':
				putch(w, (char)c);
				break;
			case '\n':
				putch(w, 'n');
				break;
			case '\r':
				putch(w, 'r');
				break;
			case '\t':
				putch(w, 't');
				break;
			case '\b':
				putch(w, 'b');
				break;
			case '\f':
				putch(w, 'f');
				break;
			default:
				PUTLIT(w, "u00");
				putch(w, hex[c >> 4]);
				putch(w, hex[c & 15]);
			}
			p++;
			continue;
		}
		size_t n = utf8_len(p, end);
		int ok = n > 0;
		if (ok) {
			put(w, p, n);
			p += n;
		} else {
			PUTLIT(w, "\\ufffd");
			p++;
		}
	}
	putch(w, '"');
}

/* Is c written as itself inside a JSON string? */
static int
plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

void
kvp_jw_keyn(struct kvp_jw *w, const char *key, size_t len)
{
	size_t i = 0;
	char *p;

	sep(w);
	while (i < len && plain((unsigned char)key[i]))
		i++;
	if (i == len && len > 0 && (p = kvp_jw_reserve(w, len + 3)) != NULL) {
		/* the common key: one reservation for "key": */
		p[0] = '"';
		memcpy(p + 1, key, len);
		p[len + 1] = '"';
		p[len + 2] = ':';
		kvp_jw_commit(w, len + 3);
	} else {
		put_escaped(w, key, len);
		putch(w, ':');
	}
	w->after_key = 1;
}

void
kvp_jw_u64(struct kvp_jw *w, uint64_t v)
{
	sep(w);
	put_u64(w, v);
}

void
kvp_jw_hash(struct kvp_jw *w, uint64_t v)
{
	sep(w);
	if (w->hash_strings)
		putch(w, '"');
	put_u64(w, v);
	if (w->hash_strings)
		putch(w, '"');
}

void
kvp_jw_i64(struct kvp_jw *w, int64_t v)
{
	sep(w);
	if (v < 0) {
		putch(w, '-');
		put_u64(w, (uint64_t)0 - (uint64_t)v);
	} else {
		put_u64(w, (uint64_t)v);
	}
}

/* v = m / 2^k exactly, 1e-4 <= |v| < 2^53, k <= 30: the decimal
 * expansion is finite (m·5^k / 10^k); when it has at most 17 significant
 * digits it is exactly what %.17g prints (fixed notation, trailing zeros
 * dropped). Returns its length, or 0 when v does not qualify. */
static size_t
format_dyadic(char *b, double v)
{
	double a = fabs(v);
	uint64_t bits, mant, ip, x;
	unsigned __int128 dig;
	char ib[24], fd[32];
	int k, s, ni = 0, nf, lz = 0, o = 0;

	if (!(a >= 1e-4 && a < 0x1p53))
		return 0;
	/* a = mant / 2^s (a normal number, s >= 0): k, the fraction bits
	 * left once mant's trailing zeros are dropped */
	memcpy(&bits, &a, sizeof bits);
	mant = (bits & (((uint64_t)1 << 52) - 1)) | ((uint64_t)1 << 52);
	s = 1075 - (int)(bits >> 52);
	k = s - __builtin_ctzll(mant);
	if (k < 0)
		k = 0;
	if (k > 30)
		return 0;
	ip = (uint64_t)a;
	dig = (mant >> (s - k)) - (ip << k);
	for (int i = 0; i < k; i++)
		dig *= 5;
	if (k <= 19) { /* dig < 10^k fits: no 128-bit division */
		uint64_t d = (uint64_t)dig;

		for (int i = k - 1; i >= 0; i--, d /= 10)
			fd[i] = (char)('0' + (int)(d % 10));
	} else {
		for (int i = k - 1; i >= 0; i--, dig /= 10)
			fd[i] = (char)('0' + (int)(dig % 10));
	}
	for (nf = k; nf > 0 && fd[nf - 1] == '0'; nf--)
		;
	for (x = ip; x != 0; x /= 10)
		ib[ni++] = (char)('0' + (int)(x % 10));
	if (ni == 0)
		while (lz < nf && fd[lz] == '0')
			lz++;
	if (ni + nf - lz > 17)
		return 0;
	if (v < 0)
		b[o++] = '-';
	if (ni == 0)
		b[o++] = '0';
	while (ni > 0)
		b[o++] = ib[--ni];
	if (nf > 0) {
		b[o++] = '.';
		memcpy(b + o, fd, (size_t)nf);
		o += nf;
	}
	b[o] = '\0';
	return (size_t)o;
}

size_t
kvp_jw_format_double(char b[40], double v)
{
	size_t n = format_dyadic(b, v);

	return n ? n : (size_t)snprintf(b, 40, "%.17g", v);
}

void
kvp_jw_double(struct kvp_jw *w, double v)
{
	char b[40];

	sep(w);
	if (!isfinite(v)) {
		PUTLIT(w, "null");
		return;
	}
	put(w, b, kvp_jw_format_double(b, v));
}

void
kvp_jw_bool(struct kvp_jw *w, int v)
{
	sep(w);
	if (v)
		PUTLIT(w, "true");
	else
		PUTLIT(w, "false");
}

void
kvp_jw_null(struct kvp_jw *w)
{
	sep(w);
	PUTLIT(w, "null");
}

void
kvp_jw_strn(struct kvp_jw *w, const char *s, size_t len)
{
	sep(w);
	put_escaped(w, s, len);
}

void
kvp_jw_json(struct kvp_jw *w, const struct json_object *v)
{
	struct json_object *o = (struct json_object *)v;

	switch (json_object_get_type(o)) {
	case json_type_null:
		kvp_jw_null(w);
		break;
	case json_type_boolean:
		kvp_jw_bool(w, json_object_get_boolean(o));
		break;
	case json_type_double: {
		/* json-c keeps the text of parsed doubles; reuse it. */
		const char *s;

		sep(w);
		s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
		put(w, s, strlen(s));
		break;
	}
	case json_type_int: {
		int64_t i = json_object_get_int64(o);

		if (i < 0) {
			kvp_jw_i64(w, i);
		} else {
			uint64_t u = json_object_get_uint64(o);

			if (w->hash_strings && u > ((uint64_t)1 << 53))
				kvp_jw_hash(w, u);
			else
				kvp_jw_u64(w, u);
		}
		break;
	}
	case json_type_string:
		kvp_jw_strn(w, json_object_get_string(o),
		            (size_t)json_object_get_string_len(o));
		break;
	case json_type_array: {
		size_t n = json_object_array_length(o);

		kvp_jw_arr_begin(w);
		for (size_t i = 0; i < n; i++)
			kvp_jw_json(w, json_object_array_get_idx(o, i));
		kvp_jw_arr_end(w);
		break;
	}
	case json_type_object:
		kvp_jw_obj_begin(w);
		json_object_object_foreach(o, key, val)
		{
			kvp_jw_key(w, key);
			kvp_jw_json(w, val);
		}
		kvp_jw_obj_end(w);
		break;
	}
}

void
kvp_jw_hash_array(struct kvp_jw *w, const uint64_t *v, size_t n)
{
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < n; i++)
		kvp_jw_hash(w, v[i]);
	kvp_jw_arr_end(w);
}

void
kvp_jw_u64_array(struct kvp_jw *w, const uint64_t *v, size_t n)
{
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < n; i++)
		kvp_jw_u64(w, v[i]);
	kvp_jw_arr_end(w);
}

void
kvp_jw_raw(struct kvp_jw *w, const char *s, size_t n)
{
	put(w, s, n);
}

void
kvp_jw_raw_value(struct kvp_jw *w, const char *s, size_t n)
{
	sep(w);
	put(w, s, n);
}

void
kvp_jw_obj_resume(struct kvp_jw *w)
{
	w->depth = 1;
	w->first[1] = 0;
	w->after_key = 0;
}

void
kvp_jw_text(struct kvp_jw *w, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(w->scratch, sizeof w->scratch, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	p = kvp_jw_reserve(w, (size_t)n + 1);
	if (p == NULL || w->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	w->len += (size_t)n;
}

void
kvp_jw_discard(struct kvp_jw *w)
{
	w->len = 0;
	w->depth = 0;
	w->first[0] = 1;
	w->after_key = 0;
}

const char *
kvp_jw_pending(const struct kvp_jw *w, size_t *len)
{
	*len = w->len;
	return w->buf != NULL ? w->buf : "";
}

int
kvp_jw_end_text(struct kvp_jw *w)
{
	if (w->f == NULL) {
		kvp_jw_discard(w);
		return w->failed ? KVP_FAIL : KVP_OK;
	}
	if (!w->failed && w->len > 0 &&
	    fwrite_unlocked(w->buf, 1, w->len, w->f) != w->len)
		w->failed = 1;
	if (!w->failed && w->unbuffered && fflush(w->f) != 0)
		w->failed = 1;
	kvp_jw_discard(w);
	if (w->cap > KEEP_CAP)
		kvp_jw_fini(w);
	return w->failed ? KVP_FAIL : KVP_OK;
}

int
kvp_jw_end_record(struct kvp_jw *w)
{
	putch(w, '\n');
	return kvp_jw_end_text(w);
}
