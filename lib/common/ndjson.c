/* SPDX-License-Identifier: MIT */
/* ndjson.c — bounded line reader, json-c parsing, exact u64, JSON writer. */
#define _GNU_SOURCE 1
#include "common/ndjson.h"

#include <errno.h>
#include <inttypes.h>
#include <json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)1 << 16)

/* ---- line reader --------------------------------------------------------- */

void
kvp_lines_init(struct kvp_lines *r, FILE *f, size_t max)
{
	memset(r, 0, sizeof *r);
	r->f = f;
	r->max = max;
}

void
kvp_lines_fini(struct kvp_lines *r)
{
	free(r->buf);
	free(r->rec);
	memset(r, 0, sizeof *r);
}

static int
fill(struct kvp_lines *r)
{
	size_t got;

	if (r->end + 1 >= r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : CHUNK;
		size_t lim = r->max + 3 > CHUNK ? r->max + 3 : CHUNK;
		char *nb;

		if (ncap > lim)
			ncap = lim;
		if (ncap <= r->cap)
			ncap = r->cap + CHUNK;
		nb = realloc(r->buf, ncap);
		if (nb == NULL)
			return -1;
		r->buf = nb;
		r->cap = ncap;
	}
	got = fread(r->buf + r->end, 1, r->cap - r->end - 1, r->f);
	if (got == 0) {
		if (ferror(r->f))
			return -1;
		r->eof = 1;
	}
	r->end += got;
	return 0;
}

/* Discards input up to and including the next '\n' (or EOF). */
static int
discard_line(struct kvp_lines *r)
{
	for (;;) {
		char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);

		if (nl != NULL) {
			r->start = (size_t)(nl - r->buf) + 1;
			return 0;
		}
		r->start = r->end = 0;
		if (r->eof)
			return 0;
		if (fill(r) != 0)
			return -1;
	}
}

int
kvp_lines_next(struct kvp_lines *r, char **line, size_t *len)
{
	for (;;) {
		size_t avail = r->end - r->start;
		char *p = r->buf ? r->buf + r->start : NULL;
		char *nl = avail ? memchr(p, '\n', avail) : NULL;
		size_t n;

		if (nl != NULL || (r->eof && avail > 0)) {
			n = nl ? (size_t)(nl - p) : avail;
			r->start += nl ? n + 1 : n;
			r->lineno++;
			if (n > 0 && p[n - 1] == '\r')
				n--;
			p[n] = '\0';
			if (n > r->max)
				return KVP_LINE_TOO_LONG;
			*line = p;
			*len = n;
			return KVP_LINE_OK;
		}
		if (r->eof)
			return KVP_LINE_EOF;
		if (r->start > 0) {
			memmove(r->buf, p, avail);
			r->start = 0;
			r->end = avail;
		}
		if (avail > r->max + 1) {
			r->lineno++;
			if (discard_line(r) != 0)
				return KVP_LINE_IOERR;
			return KVP_LINE_TOO_LONG;
		}
		if (fill(r) != 0)
			return KVP_LINE_IOERR;
	}
}

int
kvp_line_is_blank(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			return 0;
	return 1;
}

/* ---- parsing ----------------------------------------------------------- */

/*
 * json-c saturates integers outside [INT64_MIN, UINT64_MAX] to the nearest
 * bound without an error, which would turn a corrupt 21-digit hash into a
 * valid-looking 18446744073709551615. Find such literals first; returns the
 * 1-based column of the first one, or 0.
 */
static long
int_overflow_col(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '"') {
			for (i++; i < len && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
			continue;
		}
		if (c != '-' && (c < '0' || c > '9'))
			continue;
		size_t d = i + (c == '-'), j = d;
		while (j < len && s[j] >= '0' && s[j] <= '9')
			j++;
		if (j < len && (s[j] == '.' || s[j] == 'e' || s[j] == 'E')) {
			while (j < len &&
			       ((s[j] >= '0' && s[j] <= '9') || s[j] == '.' ||
			        s[j] == 'e' || s[j] == 'E' || s[j] == '+' ||
			        s[j] == '-'))
				j++;
		} else if (j - d >= 19) {
			const char *lim = c == '-' ? "9223372036854775808"
			                           : "18446744073709551615";
			size_t ll = strlen(lim), z = d;

			while (z + 1 < j && s[z] == '0')
				z++;
			if (j - z > ll ||
			    (j - z == ll && memcmp(s + z, lim, ll) > 0))
				return (long)i + 1;
		}
		i = j - 1;
	}
	return 0;
}

struct json_object *
kvp_json_parse_object(struct json_tokener *tok, const char *line, size_t len,
                      struct kvp_diag *d)
{
	struct json_object *o;
	enum json_tokener_error e;
	size_t off;

	if (memchr(line, '\0', len) != NULL) {
		kvp_diag_set(
		    d, (long)((const char *)memchr(line, '\0', len) - line) + 1,
		    "invalid JSON: NUL byte in line");
		return NULL;
	}
	if (len > INT32_MAX) {
		kvp_diag_set(d, 0, "invalid JSON: line too long to parse");
		return NULL;
	}
	json_tokener_reset(tok);
	o = json_tokener_parse_ex(tok, line, (int)len);
	e = json_tokener_get_error(tok);
	off = json_tokener_get_parse_end(tok);
	if (o == NULL) {
		if (e == json_tokener_continue)
			kvp_diag_set(d, (long)len + 1,
			             "invalid JSON: unexpected end of line");
		else
			kvp_diag_set(d, (long)off + 1, "invalid JSON: %s",
			             json_tokener_error_desc(e));
		return NULL;
	}
	for (; off < len; off++) {
		char c = line[off];

		if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
			json_object_put(o);
			kvp_diag_set(d, (long)off + 1,
			             "invalid JSON: trailing data after value");
			return NULL;
		}
	}
	if ((off = (size_t)int_overflow_col(line, len)) != 0) {
		json_object_put(o);
		kvp_diag_set(d, (long)off,
		             "integer out of range (above 2^64-1 or below "
		             "-2^63)");
		return NULL;
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		kvp_diag_set(d, 1, "record: expected a JSON object");
		return NULL;
	}
	return o;
}

static int
parse_u64_string(const char *s, int flags, uint64_t *out)
{
	int neg = 0, base = 10;
	uint64_t v = 0;
	const char *p = s;

	if (*p == '-' && (flags & KVP_U64_NEGATIVE)) {
		neg = 1;
		p++;
	}
	if (!neg && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (*p == '\0')
		return -1;
	for (; *p; p++) {
		unsigned dgt;

		if (*p >= '0' && *p <= '9')
			dgt = (unsigned)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			dgt = (unsigned)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			dgt = (unsigned)(*p - 'A' + 10);
		else
			return -1;
		if (v > (UINT64_MAX - dgt) / (unsigned)base)
			return -2;
		v = v * (unsigned)base + dgt;
	}
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -2;
		v = (uint64_t)0 - v;
	}
	*out = v;
	return 0;
}

int
kvp_json_u64(const struct json_object *v, int flags, const char *what,
             uint64_t *out, struct kvp_diag *d)
{
	switch (json_object_get_type(v)) {
	case json_type_int: {
		int64_t i = json_object_get_int64(v);

		if (i < 0) {
			if (!(flags & KVP_U64_NEGATIVE))
				return kvp_diag_set(d, 0,
				                    "%s: must not be negative "
				                    "(got %" PRId64 ")",
				                    what, i);
			*out = (uint64_t)i;
			return 0;
		}
		*out = json_object_get_uint64(v);
		return 0;
	}
	case json_type_string:
		if (flags & KVP_U64_STRING) {
			int rc = parse_u64_string(
			    json_object_get_string((struct json_object *)v),
			    flags, out);
			if (rc == 0)
				return 0;
			return kvp_diag_set(
			    d, 0, "%s: %s", what,
			    rc == -2 ? "number out of range for u64"
			             : "string is not a decimal or 0x-hex "
			               "integer");
		}
		return kvp_diag_set(
		    d, 0, "%s: expected an integer, got a string", what);
	case json_type_double:
		return kvp_diag_set(d, 0,
		                    "%s: expected an integer, got a "
		                    "floating-point number",
		                    what);
	case json_type_null:
		return kvp_diag_set(d, 0, "%s: expected an integer, got null",
		                    what);
	default:
		return kvp_diag_set(d, 0, "%s: expected an integer, got %s",
		                    what,
		                    json_type_to_name(json_object_get_type(v)));
	}
}

int
kvp_json_get(const struct json_object *obj, const char *key,
             struct json_object **v)
{
	struct json_object *x = NULL;

	if (!json_object_object_get_ex(obj, key, &x) || x == NULL)
		return 0;
	*v = x;
	return 1;
}

int
kvp_json_req_u64(const struct json_object *obj, const char *key, int flags,
                 uint64_t *out, struct kvp_diag *d)
{
	struct json_object *v;

	if (!kvp_json_get(obj, key, &v))
		return kvp_diag_set(d, 0, "missing key \"%s\"", key);
	return kvp_json_u64(v, flags, key, out, d);
}

int
kvp_json_opt_u64(const struct json_object *obj, const char *key, int flags,
                 uint64_t *out, int *present, struct kvp_diag *d)
{
	struct json_object *v;

	if (present)
		*present = 0;
	if (!kvp_json_get(obj, key, &v))
		return 0;
	if (kvp_json_u64(v, flags, key, out, d) != 0)
		return -1;
	if (present)
		*present = 1;
	return 0;
}

int
kvp_json_req_str(const struct json_object *obj, const char *key,
                 const char **out, struct kvp_diag *d)
{
	struct json_object *v;

	if (!kvp_json_get(obj, key, &v))
		return kvp_diag_set(d, 0, "missing key \"%s\"", key);
	if (!json_object_is_type(v, json_type_string))
		return kvp_diag_set(d, 0, "%s: expected a string, got %s", key,
		                    json_type_to_name(json_object_get_type(v)));
	*out = json_object_get_string(v);
	return 0;
}

int
kvp_json_opt_str(const struct json_object *obj, const char *key,
                 const char **out, struct kvp_diag *d)
{
	struct json_object *v;

	if (!kvp_json_get(obj, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return kvp_diag_set(d, 0, "%s: expected a string, got %s", key,
		                    json_type_to_name(json_object_get_type(v)));
	*out = json_object_get_string(v);
	return 0;
}

int
kvp_json_req_array(const struct json_object *obj, const char *key,
                   struct json_object **out, struct kvp_diag *d)
{
	struct json_object *v;

	if (!kvp_json_get(obj, key, &v))
		return kvp_diag_set(d, 0, "missing key \"%s\"", key);
	if (!json_object_is_type(v, json_type_array))
		return kvp_diag_set(d, 0, "%s: expected an array, got %s", key,
		                    json_type_to_name(json_object_get_type(v)));
	*out = v;
	return 0;
}

int
kvp_json_opt_double(const struct json_object *obj, const char *key, double *out,
                    int *present, struct kvp_diag *d)
{
	struct json_object *v;

	if (present)
		*present = 0;
	if (!kvp_json_get(obj, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_double) &&
	    !json_object_is_type(v, json_type_int))
		return kvp_diag_set(d, 0, "%s: expected a number, got %s", key,
		                    json_type_to_name(json_object_get_type(v)));
	*out = json_object_get_double(v);
	if (present)
		*present = 1;
	return 0;
}

int
kvp_json_u64_array(const struct json_object *arr, int flags, const char *what,
                   uint64_t **vals, size_t *cap, size_t *n, struct kvp_diag *d)
{
	size_t len, i;
	char name[128];

	if (!json_object_is_type(arr, json_type_array))
		return kvp_diag_set(
		    d, 0, "%s: expected an array, got %s", what,
		    json_type_to_name(json_object_get_type(arr)));
	len = json_object_array_length(arr);
	if (len > *cap) {
		size_t ncap = len < 16 ? 16 : len;
		uint64_t *nv = reallocarray(*vals, ncap, sizeof **vals);

		if (nv == NULL)
			return kvp_diag_set(d, 0, "%s: out of memory", what);
		*vals = nv;
		*cap = ncap;
	}
	for (i = 0; i < len; i++) {
		const struct json_object *e = json_object_array_get_idx(arr, i);

		if (e == NULL || !json_object_is_type(e, json_type_int)) {
			snprintf(name, sizeof name, "%s[%zu]", what, i);
			if (kvp_json_u64(e, flags, name, &(*vals)[i], d) != 0)
				return -1;
			continue;
		}
		int64_t s = json_object_get_int64(e);
		if (s >= 0) {
			(*vals)[i] = json_object_get_uint64(e);
		} else if (flags & KVP_U64_NEGATIVE) {
			(*vals)[i] = (uint64_t)s;
		} else {
			snprintf(name, sizeof name, "%s[%zu]", what, i);
			return kvp_diag_set(d, 0,
			                    "%s: must not be negative (got "
			                    "%" PRId64 ")",
			                    name, s);
		}
	}
	*n = len;
	return 0;
}

const char *
kvp_json_lib_version(void)
{
	return json_c_version();
}

/* ---- writer ------------------------------------------------------------ */

void
kvp_jw_init(struct kvp_jw *w, FILE *f, int hash_strings, int unbuffered)
{
	memset(w, 0, sizeof *w);
	w->f = f;
	w->hash_strings = hash_strings;
	w->unbuffered = unbuffered;
	w->first[0] = 1;
}

/* Separator before a value (array element or top level) or key. */
static void
sep(struct kvp_jw *w)
{
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (!w->first[w->depth])
		putc_unlocked(',', w->f);
	w->first[w->depth] = 0;
}

static void
jw_open(struct kvp_jw *w, int c)
{
	sep(w);
	putc_unlocked(c, w->f);
	if (w->depth + 1 < KVP_JW_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = 1;
}

static void
close_(struct kvp_jw *w, int c)
{
	putc_unlocked(c, w->f);
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
put_u64(FILE *f, uint64_t v)
{
	char b[KVP_U64_DEC_ROOM];

	fwrite_unlocked(b, 1, kvp_u64_dec(b, v), f);
}

static void
put_escaped(FILE *f, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + len;

	putc_unlocked('"', f);
	while (p < end) {
		const unsigned char *run = p;

		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' &&
		       *p != '\\')
			p++;
		if (p > run)
			fwrite_unlocked(run, 1, (size_t)(p - run), f);
		if (p >= end)
			break;
		unsigned char c = *p;
		if (c < 0x80) {
			putc_unlocked('\\', f);
			switch (c) {
			case '"':
			case '\\':
				putc_unlocked(c, f);
				break;
			case '\n':
				putc_unlocked('n', f);
				break;
			case '\r':
				putc_unlocked('r', f);
				break;
			case '\t':
				putc_unlocked('t', f);
				break;
			case '\b':
				putc_unlocked('b', f);
				break;
			case '\f':
				putc_unlocked('f', f);
				break;
			default:
				fputs_unlocked("u00", f);
				putc_unlocked(hex[c >> 4], f);
				putc_unlocked(hex[c & 15], f);
			}
			p++;
			continue;
		}
		/* Validate one UTF-8 sequence; copy it or write U+FFFD. */
		size_t n = 0;
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
		int ok = n > 0 && (size_t)(end - p) >= n;
		for (size_t i = 1; ok && i < n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				ok = 0;
			else
				cp = (cp << 6) | (p[i] & 0x3f);
		}
		if (ok && (cp < min || cp > 0x10ffff ||
		           (cp >= 0xd800 && cp <= 0xdfff)))
			ok = 0;
		if (ok) {
			fwrite_unlocked(p, 1, n, f);
			p += n;
		} else {
			fputs_unlocked("\\ufffd", f);
			p++;
		}
	}
	putc_unlocked('"', f);
}

void
kvp_jw_key(struct kvp_jw *w, const char *key)
{
	sep(w);
	put_escaped(w->f, key, strlen(key));
	putc_unlocked(':', w->f);
	w->after_key = 1;
}

void
kvp_jw_u64(struct kvp_jw *w, uint64_t v)
{
	sep(w);
	put_u64(w->f, v);
}

void
kvp_jw_hash(struct kvp_jw *w, uint64_t v)
{
	sep(w);
	if (w->hash_strings)
		putc_unlocked('"', w->f);
	put_u64(w->f, v);
	if (w->hash_strings)
		putc_unlocked('"', w->f);
}

void
kvp_jw_i64(struct kvp_jw *w, int64_t v)
{
	sep(w);
	if (v < 0) {
		putc_unlocked('-', w->f);
		put_u64(w->f, (uint64_t)0 - (uint64_t)v);
	} else {
		put_u64(w->f, (uint64_t)v);
	}
}

void
kvp_jw_double(struct kvp_jw *w, double v)
{
	char b[40];

	sep(w);
	if (!isfinite(v)) {
		fputs_unlocked("null", w->f);
		return;
	}
	snprintf(b, sizeof b, "%.17g", v);
	fputs_unlocked(b, w->f);
}

void
kvp_jw_bool(struct kvp_jw *w, int v)
{
	sep(w);
	fputs_unlocked(v ? "true" : "false", w->f);
}

void
kvp_jw_null(struct kvp_jw *w)
{
	sep(w);
	fputs_unlocked("null", w->f);
}

void
kvp_jw_str(struct kvp_jw *w, const char *s)
{
	if (s == NULL) {
		kvp_jw_null(w);
		return;
	}
	kvp_jw_strn(w, s, strlen(s));
}

void
kvp_jw_strn(struct kvp_jw *w, const char *s, size_t len)
{
	sep(w);
	put_escaped(w->f, s, len);
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
	case json_type_double:
		/* json-c keeps the text of parsed doubles; reuse it. */
		sep(w);
		fputs_unlocked(
		    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		    w->f);
		break;
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
kvp_jw_kv_u64(struct kvp_jw *w, const char *key, uint64_t v)
{
	kvp_jw_key(w, key);
	kvp_jw_u64(w, v);
}

void
kvp_jw_kv_hash(struct kvp_jw *w, const char *key, uint64_t v)
{
	kvp_jw_key(w, key);
	kvp_jw_hash(w, v);
}

void
kvp_jw_kv_i64(struct kvp_jw *w, const char *key, int64_t v)
{
	kvp_jw_key(w, key);
	kvp_jw_i64(w, v);
}

void
kvp_jw_kv_str(struct kvp_jw *w, const char *key, const char *s)
{
	kvp_jw_key(w, key);
	kvp_jw_str(w, s);
}

void
kvp_jw_kv_bool(struct kvp_jw *w, const char *key, int v)
{
	kvp_jw_key(w, key);
	kvp_jw_bool(w, v);
}

void
kvp_jw_kv_double(struct kvp_jw *w, const char *key, double v)
{
	kvp_jw_key(w, key);
	kvp_jw_double(w, v);
}

void
kvp_jw_kv_null(struct kvp_jw *w, const char *key)
{
	kvp_jw_key(w, key);
	kvp_jw_null(w);
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
kvp_jw_end_record(struct kvp_jw *w)
{
	putc_unlocked('\n', w->f);
	w->depth = 0;
	w->first[0] = 1;
	w->after_key = 0;
	if (w->unbuffered)
		fflush(w->f);
}
