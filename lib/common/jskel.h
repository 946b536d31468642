/* SPDX-License-Identifier: MIT */
/*
 * jskel.h — one long JSON line through json-c without its whole tree.
 *
 * json-c's tree costs about 40 bytes per small integer, so a line of
 * 64 MiB of token ids would need 2.5 GB to read. For lines of
 * KVP_JSON_SKELETON_MIN bytes or more the readers parse a skeleton of the
 * line instead: the big integer arrays they read (token_ids,
 * block_hashes, ...) are read by the scanner into buffers of their own,
 * with the checks and messages kvp_json_u64_array() would give, and stand
 * as [] in the skeleton; containers nobody reads are emptied (their type
 * is all a check can read); everything else is copied as it is. A line
 * the scanner cannot tell about goes to json-c whole, so every message and
 * value is the one the json-c path gives.
 *
 * Arrays may share a buffer; a line with two of them is parsed whole.
 * Use: fill s->arrays (keys, kvp_json_u64() flags, the caller's buffers)
 * once, or before each line when the buffers' owner may move, then for
 * each line call kvp_jskel_parse(); read an array member with kvp_jskel_u64s()
 * wherever kvp_json_u64_array() would read it.
 */
#ifndef KVP_JSKEL_H
#define KVP_JSKEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/jscan.h"

struct json_object;
struct json_tokener;

/* A top-level integer array read by the scanner. With v32, the checks are
 * kvp_json_u64_array()'s and then "KEY[i]: N does not fit in u32" for the
 * first value over 2^32-1 (u32_noun before N), the order of a u64 read and
 * a conversion. */
struct kvp_jskel_array {
	const char *key;      /* set by the caller */
	int flags;            /* kvp_json_u64() flags, set by the caller */
	uint64_t **v;         /* set by the caller: its buffer for the values */
	uint32_t **v32;       /* or, instead, for values that must fit in u32 */
	const char *u32_noun; /* v32's message: "KEY[i]: NOUNN does not fit" */
	size_t *cap;          /* and the buffer's capacity (kvp_grow()) */
	size_t n;
	int read;                       /* read from this line */
	const struct json_object *node; /* its [] in the tree, or NULL */
	int failed;                     /* d holds the json-c path's error */
	struct kvp_diag d;
};

#define KVP_JSKEL_MAX_ARRAYS 8

struct kvp_jskel {
	struct kvp_jskel_array arrays[KVP_JSKEL_MAX_ARRAYS];
	size_t n_arrays;
	const char *const *keep; /* containers kept as they are (NULL-ended;
	                            NULL: every one) */
	size_t min;              /* shorter lines are parsed whole */
	char *buf;               /* the skeleton line */
	size_t len, cap;
	struct json_tokener *tok;  /* owned: the line's parser */
	struct json_tokener *etok; /* owned: one element's parser */
};

/*
 * A member's value at the cursor c (key: its name, unescaped) into the
 * skeleton; the default is kvp_jskel_member(). Returns 0, -1 to give the
 * skeleton up (json-c parses the whole line), -2 when out of memory.
 */
typedef int (*kvp_jskel_member_fn)(struct kvp_jskel *s, struct kvp_jscan *c,
                                   const char *key, size_t klen, void *ctx);

/* s empty, skeletons from lines of KVP_JSON_SKELETON_MIN bytes on. */
void kvp_jskel_init(struct kvp_jskel *s);
void kvp_jskel_fini(struct kvp_jskel *s);

/* Appends n bytes to the skeleton: 0, or -2 when out of memory. */
int kvp_jskel_put(struct kvp_jskel *s, const char *p, size_t n);

/*
 * The skeleton of line (a JSON object kvp_json_check_line() accepted) into
 * s->buf, each member's value written by fn. 0, -1 (give up: a key with an
 * escape, or fn gave up), -2 out of memory.
 */
int kvp_jskel_build(struct kvp_jskel *s, const char *line, size_t len,
                    kvp_jskel_member_fn fn, void *ctx);

/* The default member: s->arrays by the scanner, s->keep as they are, other
 * containers emptied, scalars as they are. */
int kvp_jskel_member(struct kvp_jskel *s, struct kvp_jscan *c, const char *key,
                     size_t klen, void *ctx);

/*
 * The line as kvp_json_parse_object() parses it (owned object, or NULL with
 * d set as it would set it), from a skeleton when the line is long enough
 * and the scanner can tell. *oom is set when memory ran out.
 */
struct json_object *kvp_jskel_parse(struct kvp_jskel *s, const char *line,
                                    size_t len, struct kvp_diag *d, int *oom);

/* The scanner's array whose [] is node, or NULL. */
struct kvp_jskel_array *kvp_jskel_find(struct kvp_jskel *s,
                                       const struct json_object *node);

/*
 * kvp_json_u64_array(arr, flags, what, vals, cap, n, d), or, when arr is a
 * skeleton's [] (s may be NULL), the scanner's values for it (copied into
 * *vals unless that is the array's own buffer), or its error (what must
 * then be the key, flags the array's; a v32 array is read with
 * kvp_jskel_find()).
 */
int kvp_jskel_u64s(struct kvp_jskel *s, const struct json_object *arr,
                   int flags, const char *what, uint64_t **vals, size_t *cap,
                   size_t *n, struct kvp_diag *d);

#endif
