/* SPDX-License-Identifier: MIT */
/*
 * ndjson.h — bounded NDJSON line reader, json-c parsing with positions,
 * exact u64 field readers. The writer is common/jsonw.h.
 *
 * Ownership: functions returning struct json_object * say whether the caller
 * owns the reference. Getters borrow (json-c's object_get_ex semantics).
 * Nothing here prints; failures fill a struct kvp_diag.
 */
#ifndef KVP_NDJSON_H
#define KVP_NDJSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"

struct json_object;
struct json_tokener;

/* ---- line reader --------------------------------------------------------- */

/*
 * Reads '\n'-terminated lines with a cap. Line numbers are 1-based and count
 * every '\n' (blank lines included). One trailing '\r' is stripped; a last
 * line without '\n' is accepted; a UTF-8 byte order mark starting the first
 * line is skipped. A line longer than max is consumed up to
 * its newline without being stored (memory stays bounded) and reported as
 * KVP_LINE_TOO_LONG. The returned pointer is valid until the next call; the
 * line is NUL-terminated (it may also contain NULs: use *len).
 */
enum kvp_line_status {
	KVP_LINE_OK = 1,
	KVP_LINE_EOF = 0,
	KVP_LINE_IOERR = -1,
	KVP_LINE_TOO_LONG = -2,
};

struct kvp_lines {
	FILE *f;
	size_t max;
	char *buf;
	size_t cap;
	size_t start, end; /* unconsumed bytes are buf[start, end) */
	int eof;
	uintmax_t lineno; /* number of the line last returned */
	char *rec;        /* line assembled across buffer refills */
	size_t rec_cap;
};

void kvp_lines_init(struct kvp_lines *r, FILE *f, size_t max);
void kvp_lines_fini(struct kvp_lines *r);
int kvp_lines_next(struct kvp_lines *r, char **line, size_t *len);

/* True if the line has only spaces, tabs or '\r' (callers skip those). */
int kvp_line_is_blank(const char *line, size_t len);

/* ---- parsing ----------------------------------------------------------- */

/*
 * Parses one line as a JSON object with a reusable tokener. Trailing
 * non-whitespace is an error; so is a top level that is not an object.
 * Returns an owned object, or NULL with d->msg set ("invalid JSON: ...")
 * and d->col the 1-based byte offset.
 */
/* The same for any JSON value at the top level (an array, say). */
struct json_object *kvp_json_parse_value(struct json_tokener *tok,
                                         const char *line, size_t len,
                                         struct kvp_diag *d);

struct json_object *kvp_json_parse_object(struct json_tokener *tok,
                                          const char *line, size_t len,
                                          struct kvp_diag *d);

/*
 * What kvp_json_parse_object() would make of the line, found without a
 * tree where the scanner can tell (for the lines the fast paths decline:
 * a tree costs about 40 bytes per small integer). Returns 1 when the line
 * is one JSON object within json-c's nesting limit, with no integer out of
 * range (it would parse); -1 when it would fail, with d set as it would set
 * it (a NUL byte, a top-level array, a line that ends inside its value,
 * trailing data after it, an integer out of range); 0 when the scanner
 * cannot tell (json-c's own leniencies such as comments, a top-level
 * scalar, nesting past KVP_JSON_MAX_DEPTH): parse it.
 */
int kvp_json_check_line(const char *line, size_t len, struct kvp_diag *d);

/* Lines shorter than this go to json-c as they are: their tree is small
 * (at most about 2.5 MB), and the scanner's extra passes would cost more
 * than they save (kvp_jskel_init() defaults to it). */
#define KVP_JSON_SKELETON_MIN ((size_t)64 << 10)

/* json-c's nesting limit (its default tokener's depth). */
#define KVP_JSON_MAX_DEPTH 32

/* Flags for kvp_json_u64(). */
enum {
	KVP_U64_STRING = 1,   /* accept "123" and "0x7b" strings */
	KVP_U64_NEGATIVE = 2, /* accept negative i64 as two's complement */
	KVP_U64_HASH = KVP_U64_STRING | KVP_U64_NEGATIVE,
};

/*
 * Reads a u64 from a JSON value exactly (never through double). Integers
 * above 2^63-1 are exact (json-c keeps them as uint64). what names the
 * value in messages (a key, "block_hashes[3]"). Returns 0, or -1 with d set.
 */
int kvp_json_u64(const struct json_object *v, int flags, const char *what,
                 uint64_t *out, struct kvp_diag *d);

/*
 * Looks up key in obj. Returns 1 if present and not null (then *v is a
 * borrowed reference), 0 if absent or null.
 */
int kvp_json_get(const struct json_object *obj, const char *key,
                 struct json_object **v);

/* Required/optional typed getters: -1 with d set on a wrong type or a
 * missing required key ("missing key \"k\""). Optional ones return 0 and
 * leave *out unchanged when absent. */
int kvp_json_req_u64(const struct json_object *obj, const char *key, int flags,
                     uint64_t *out, struct kvp_diag *d);
int kvp_json_opt_u64(const struct json_object *obj, const char *key, int flags,
                     uint64_t *out, int *present, struct kvp_diag *d);
int kvp_json_req_str(const struct json_object *obj, const char *key,
                     const char **out, struct kvp_diag *d);
int kvp_json_opt_str(const struct json_object *obj, const char *key,
                     const char **out, struct kvp_diag *d);
int kvp_json_req_array(const struct json_object *obj, const char *key,
                       struct json_object **out, struct kvp_diag *d);
int kvp_json_opt_double(const struct json_object *obj, const char *key,
                        double *out, int *present, struct kvp_diag *d);

/* Reads a JSON array of u64 into a growing buffer (*vals, *cap reused
 * across calls; realloc'd as needed). Returns 0 with *n set, or -1. */
int kvp_json_u64_array(const struct json_object *arr, int flags,
                       const char *what, uint64_t **vals, size_t *cap,
                       size_t *n, struct kvp_diag *d);

/* Version of the JSON library, for --version. */
const char *kvp_json_lib_version(void);

#endif
