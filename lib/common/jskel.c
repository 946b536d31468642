/* SPDX-License-Identifier: MIT */
/* jskel.c — skeleton lines: see jskel.h. */
#include "common/jskel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "common/ndjson.h"
#include "common/util.h"

/* Nesting left for a member's value (the record is one level) and for an
 * array element's (two). */
#define MEMBER_DEPTH (KVP_JSON_MAX_DEPTH - 1)
#define ELEMENT_DEPTH (KVP_JSON_MAX_DEPTH - 2)

void
kvp_jskel_init(struct kvp_jskel *s)
{
	memset(s, 0, sizeof *s);
	s->min = KVP_JSON_SKELETON_MIN;
}

void
kvp_jskel_fini(struct kvp_jskel *s)
{
	free(s->buf);
	if (s->tok != NULL)
		json_tokener_free(s->tok);
	if (s->etok != NULL)
		json_tokener_free(s->etok);
	memset(s, 0, sizeof *s);
}

int
kvp_jskel_put(struct kvp_jskel *s, const char *p, size_t n)
{
	if (kvp_grow(&s->buf, &s->cap, s->len + n + 1, 1) != 0)
		return -2;
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = '\0';
	return 0;
}

int
kvp_jskel_build(struct kvp_jskel *s, const char *line, size_t len,
                kvp_jskel_member_fn fn, void *ctx)
{
	struct kvp_jscan c;
	struct kvp_jspan ks;
	size_t nm = 0;
	int rc;

	s->len = 0;
	kvp_jscan_init(&c, line, len);
	kvp_jscan_ws(&c);
	if (kvp_jscan_obj_begin(&c) != 0 || kvp_jskel_put(s, "{", 1) != 0)
		return -1;
	while ((rc = kvp_jscan_obj_next(&c, &nm, &ks)) == 1) {
		if (ks.flags & KVP_JSCAN_ESC)
			return -1;
		if ((nm > 1 && kvp_jskel_put(s, ",", 1) != 0) ||
		    kvp_jskel_put(s, line + ks.off - 1, ks.len + 2) != 0 ||
		    kvp_jskel_put(s, ":", 1) != 0)
			return -2;
		if ((rc = fn(s, &c, line + ks.off, ks.len, ctx)) != 0)
			return rc;
	}
	return rc != 0 ? -1 : kvp_jskel_put(s, "}", 1);
}

/* Element v[0, n) of an array as json-c gives it to kvp_json_u64(): a
 * scalar parsed alone (NULL for null), a container empty (its type is all
 * the check reads). *e is owned. 0, -1 to give up, -2 out of memory. */
static int
element(struct kvp_jskel *s, const char *v, size_t n, struct json_object **e)
{
	if (v[0] == '[' || v[0] == '{') {
		*e = v[0] == '[' ? json_object_new_array()
		                 : json_object_new_object();
		return *e == NULL ? -2 : 0;
	}
	if (s->etok == NULL && (s->etok = json_tokener_new()) == NULL)
		return -2;
	json_tokener_reset(s->etok);
	*e = json_tokener_parse_ex(s->etok, v, (int)n);
	/* a number needs the end of the text to be complete */
	if (*e == NULL &&
	    json_tokener_get_error(s->etok) == json_tokener_continue)
		*e = json_tokener_parse_ex(s->etok, "", 1);
	return *e == NULL && !(n == 4 && memcmp(v, "null", 4) == 0) ? -1 : 0;
}

/* One element (index idx) at the cursor into *out, checked as
 * kvp_json_u64_array() checks it; a failure goes into a. */
static int
element_u64(struct kvp_jskel *s, struct kvp_jscan *c, struct kvp_jskel_array *a,
            size_t idx, uint64_t *out)
{
	size_t at = c->i;
	struct json_object *e;
	char name[128];
	uint64_t v;
	int neg, rc;

	snprintf(name, sizeof name, "%s[%zu]", a->key, idx);
	if (kvp_jscan_int(c, &v, &neg) == 0) {
		if (neg && v != 0 && !(a->flags & KVP_U64_NEGATIVE)) {
			a->failed = 1;
			kvp_diag_set(&a->d, 0,
			             "%s: must not be negative (got %" PRId64
			             ")",
			             name, (int64_t)v);
		}
		*out = v;
		return 0;
	}
	c->i = at;
	if (kvp_jscan_skip(c, ELEMENT_DEPTH) != 0)
		return -1;
	if ((rc = element(s, c->s + at, c->i - at, &e)) != 0)
		return rc;
	if (kvp_json_u64(e, a->flags, name, out, &a->d) != 0)
		a->failed = 1;
	if (e != NULL)
		json_object_put(e);
	return 0;
}

/* Element idx's value v into a's buffer (grown to n). */
static int
store(struct kvp_jskel_array *a, size_t idx, uint64_t v, size_t *over)
{
	if (a->v32 == NULL) {
		if (kvp_grow(a->v, a->cap, idx + 1, sizeof **a->v) != 0)
			return -2;
		(*a->v)[idx] = v;
		return 0;
	}
	if (kvp_grow(a->v32, a->cap, idx + 1, sizeof **a->v32) != 0)
		return -2;
	if (v > UINT32_MAX && *over == SIZE_MAX)
		*over = idx;
	(*a->v32)[idx] = (uint32_t)v;
	return 0;
}

/* The array at the cursor into a, with the json-c path's checks. */
static int
read_array(struct kvp_jskel *s, struct kvp_jscan *c, struct kvp_jskel_array *a)
{
	size_t at = c->i, n = 0, over = SIZE_MAX;
	uint64_t v = 0, over_v = 0;
	int rc;

	a->failed = 0;
	kvp_diag_clear(&a->d);
	if (a->v32 != NULL
	        ? kvp_jscan_u32_array(c, a->v32, a->cap, &a->n) == 0
	        : kvp_jscan_u64_array(c, (a->flags & KVP_U64_NEGATIVE) != 0,
	                              a->v, a->cap, &a->n) == 0)
		return 0;
	c->i = at;
	if (kvp_jscan_arr_begin(c) != 0)
		return -1;
	while ((rc = kvp_jscan_arr_next(c, &n)) == 1) {
		if (a->failed) {
			if (kvp_jscan_skip(c, ELEMENT_DEPTH) != 0)
				return -1;
			continue;
		}
		if ((rc = element_u64(s, c, a, n - 1, &v)) != 0 ||
		    (rc = store(a, n - 1, v, &over)) != 0)
			return rc;
		if (over == n - 1)
			over_v = v;
	}
	a->n = n;
	if (rc == 0 && !a->failed && over != SIZE_MAX) {
		a->failed = 1;
		kvp_diag_set(&a->d, 0, "%s[%zu]: %s%llu does not fit in u32",
		             a->key, over, a->u32_noun ? a->u32_noun : "",
		             (unsigned long long)over_v);
	}
	return rc;
}

/* Whether an array already read from this line shares array i's buffer. */
static int
shared_read(const struct kvp_jskel *s, size_t i)
{
	const struct kvp_jskel_array *a = &s->arrays[i];

	for (size_t j = 0; j < s->n_arrays; j++) {
		const struct kvp_jskel_array *b = &s->arrays[j];

		if (j != i && b->read &&
		    (a->v32 != NULL ? b->v32 == a->v32 : b->v == a->v))
			return 1;
	}
	return 0;
}

static int
key_is(const char *k, const char *key, size_t klen)
{
	return strlen(k) == klen && memcmp(k, key, klen) == 0;
}

int
kvp_jskel_member(struct kvp_jskel *s, struct kvp_jscan *c, const char *key,
                 size_t klen, void *ctx)
{
	size_t at = c->i;
	int ch = kvp_jscan_peek(c), rc;

	(void)ctx;
	for (size_t i = 0; ch == '[' && i < s->n_arrays; i++) {
		if (!key_is(s->arrays[i].key, key, klen))
			continue;
		if (shared_read(s, i))
			return -1; /* its buffer holds another array's values */
		if ((rc = read_array(s, c, &s->arrays[i])) != 0)
			return rc;
		s->arrays[i].read = 1; /* its node is found after the parse */
		return kvp_jskel_put(s, "[]", 2);
	}
	if (kvp_jscan_skip(c, MEMBER_DEPTH) != 0)
		return -1;
	for (const char *const *k = s->keep; k != NULL && *k != NULL; k++)
		if (key_is(*k, key, klen))
			ch = 0;
	if (s->keep == NULL)
		ch = 0;
	if (ch == '[' || ch == '{')
		return kvp_jskel_put(s, ch == '[' ? "[]" : "{}", 2);
	return kvp_jskel_put(s, c->s + at, c->i - at);
}

/* Each scanned array's [] in the tree o (json-c keeps a key's last
 * value, which may not be the array the scanner read). */
static void
find_nodes(struct kvp_jskel *s, struct json_object *o)
{
	struct json_object *v;

	for (size_t i = 0; i < s->n_arrays; i++) {
		struct kvp_jskel_array *a = &s->arrays[i];

		a->node = NULL;
		if (!a->read)
			continue;
		if (json_object_object_get_ex(o, a->key, &v) &&
		    json_object_is_type(v, json_type_array) &&
		    json_object_array_length(v) == 0)
			a->node = v;
	}
}

struct json_object *
kvp_jskel_parse(struct kvp_jskel *s, const char *line, size_t len,
                struct kvp_diag *d, int *oom)
{
	struct json_object *o;
	int rc;

	*oom = 0;
	for (size_t i = 0; i < s->n_arrays; i++)
		s->arrays[i].read = 0, s->arrays[i].node = NULL;
	if (s->tok == NULL && (s->tok = json_tokener_new()) == NULL) {
		*oom = 1;
		kvp_diag_set(d, 0, "out of memory");
		return NULL;
	}
	switch (len < s->min ? 0 : kvp_json_check_line(line, len, d)) {
	case -1:
		return NULL;
	case 1:
		rc = kvp_jskel_build(s, line, len, kvp_jskel_member, NULL);
		if (rc == -2) {
			*oom = 1;
			kvp_diag_set(d, 0, "out of memory");
			return NULL;
		}
		if (rc == 0 && (o = kvp_json_parse_object(s->tok, s->buf,
		                                          s->len, d)) != NULL) {
			find_nodes(s, o);
			return o;
		}
		break;
	default:
		break;
	}
	for (size_t i = 0; i < s->n_arrays; i++)
		s->arrays[i].node = NULL;
	return kvp_json_parse_object(s->tok, line, len, d);
}

struct kvp_jskel_array *
kvp_jskel_find(struct kvp_jskel *s, const struct json_object *node)
{
	for (size_t i = 0; s != NULL && node != NULL && i < s->n_arrays; i++)
		if (s->arrays[i].node == node)
			return &s->arrays[i];
	return NULL;
}

int
kvp_jskel_u64s(struct kvp_jskel *s, const struct json_object *arr, int flags,
               const char *what, uint64_t **vals, size_t *cap, size_t *n,
               struct kvp_diag *d)
{
	struct kvp_jskel_array *a = kvp_jskel_find(s, arr);

	if (a == NULL)
		return kvp_json_u64_array(arr, flags, what, vals, cap, n, d);
	if (a->failed) {
		*d = a->d;
		return -1;
	}
	if (vals != a->v) {
		if (kvp_grow(vals, cap, a->n + 1, sizeof **vals) != 0)
			return kvp_diag_set(d, 0, "%s: out of memory", what);
		if (a->n > 0)
			memcpy(*vals, *a->v, a->n * sizeof **vals);
	}
	*n = a->n;
	return 0;
}
