/* SPDX-License-Identifier: MIT */
/* ndjson.c — bounded line reader, json-c parsing, exact u64 readers. */
#define _GNU_SOURCE 1
#include "common/ndjson.h"

#include <errno.h>
#include <inttypes.h>
#include <json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/jscan.h"

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
			/* A UTF-8 byte order mark (Windows editors write
			 * one) is no part of the first record. */
			if (r->lineno == 1 && n >= 3 &&
			    memcmp(p, "\xef\xbb\xbf", 3) == 0) {
				p += 3;
				n -= 3;
			}
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
	struct json_object *o = kvp_json_parse_value(tok, line, len, d);

	if (o != NULL && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		kvp_diag_set(d, 1, "record: expected a JSON object");
		return NULL;
	}
	return o;
}

struct json_object *
kvp_json_parse_value(struct json_tokener *tok, const char *line, size_t len,
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
	return o;
}

int
kvp_json_check_line(const char *line, size_t len, struct kvp_diag *d)
{
	const char *nul = memchr(line, '\0', len);
	struct kvp_jscan c;
	long col;
	int first;

	if (nul != NULL) {
		kvp_diag_set(d, (long)(nul - line) + 1,
		             "invalid JSON: NUL byte in line");
		return -1;
	}
	if (len > INT32_MAX) {
		kvp_diag_set(d, 0, "invalid JSON: line too long to parse");
		return -1;
	}
	kvp_jscan_init(&c, line, len);
	kvp_jscan_ws(&c);
	first = kvp_jscan_peek(&c);
	/* json-c reads a top-level scalar by its own rules (a number at the
	 * end of the text is never complete) */
	if (first != '{' && first != '[')
		return 0;
	switch (kvp_jscan_check(&c, KVP_JSON_MAX_DEPTH)) {
	case KVP_JSCAN_TRUNC:
		/* a prefix of standard JSON: json-c, which takes more, waits
		 * for the rest too */
		kvp_diag_set(d, (long)len + 1,
		             "invalid JSON: unexpected end of line");
		return -1;
	case KVP_JSCAN_OK:
		break;
	default:
		return 0;
	}
	kvp_jscan_ws(&c);
	/* json-c takes a '/' after the value for a comment */
	if (c.i < len && line[c.i] == '/')
		return 0;
	if (c.i < len) {
		kvp_diag_set(d, (long)c.i + 1,
		             "invalid JSON: trailing data after value");
		return -1;
	}
	if ((col = int_overflow_col(line, len)) != 0) {
		kvp_diag_set(d, col,
		             "integer out of range (above 2^64-1 or below "
		             "-2^63)");
		return -1;
	}
	if (first == '[') {
		kvp_diag_set(d, 1, "record: expected a JSON object");
		return -1;
	}
	return 1;
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
