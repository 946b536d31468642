/* SPDX-License-Identifier: MIT */
/*
 * fuzz_jscan.c — lib/jscan against json-c, line by line. Each line is
 * wrapped as {"v":LINE} and parsed by kvp_json_parse_object() (json-c plus
 * the integer range check; jscan has checked that the line is one value). If
 * jscan accepts the line as one value, json-c must accept it too and agree on
 * every string (without escapes), integer, literal, array length and object
 * key; the flat-array and member readers must agree with it as well.
 * Conversely, a line json-c accepts in strict mode must be accepted by jscan,
 * unless odd_json() exempts it. A mismatch aborts.
 */
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jscan.h"
#include "common/ndjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINE 4096

static const char *cur_line;
static size_t cur_len;

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_jscan: %s: %.*s\n", what, (int)cur_len, cur_line);
	abort();
}

static void same(struct kvp_jscan *c, struct json_object *j);

static void
same_object(struct kvp_jscan *c, struct json_object *j)
{
	struct kvp_jscan probe = *c;
	struct kvp_jspan key;
	size_t n = 0, count = 0;
	int rc, unique;

	if (!json_object_is_type(j, json_type_object))
		fail("object vs other type");
	/* count members first: values are compared only without duplicates
	 * (json-c keeps the last of a repeated key) */
	if (kvp_jscan_obj_begin(&probe) != 0)
		fail("obj_begin");
	while ((rc = kvp_jscan_obj_next(&probe, &count, &key)) == 1)
		if (kvp_jscan_skip(&probe, 1000) != 0)
			fail("probe skip");
	if (rc != 0)
		fail("probe next");
	unique = count == (size_t)json_object_object_length(j);
	kvp_jscan_obj_begin(c);
	while ((rc = kvp_jscan_obj_next(c, &n, &key)) == 1) {
		struct json_object *v = NULL;
		char *k;

		if (key.flags & KVP_JSCAN_ESC) {
			kvp_jscan_skip(c, 1000);
			continue;
		}
		k = strndup(c->s + key.off, key.len);
		if (k == NULL)
			abort();
		if (memchr(k, '\0', key.len) != NULL ||
		    !json_object_object_get_ex(j, k, &v))
			fail("key missing in json-c");
		free(k);
		if (unique)
			same(c, v);
		else
			kvp_jscan_skip(c, 1000);
	}
	if (rc != 0)
		fail("obj_next after accept");
}

static void
same(struct kvp_jscan *c, struct json_object *j)
{
	struct kvp_jscan probe;
	struct kvp_jspan sp;
	uint64_t v;
	size_t n = 0;
	int neg, rc;

	switch (kvp_jscan_peek(c)) {
	case '"':
		if (kvp_jscan_string(c, &sp) != 0 ||
		    !json_object_is_type(j, json_type_string))
			fail("string");
		if (!(sp.flags & KVP_JSCAN_ESC) &&
		    ((size_t)json_object_get_string_len(j) != sp.len ||
		     memcmp(json_object_get_string(j), c->s + sp.off, sp.len) !=
		         0))
			fail("string bytes differ");
		return;
	case '[':
		if (!json_object_is_type(j, json_type_array))
			fail("array vs other type");
		kvp_jscan_arr_begin(c);
		while ((rc = kvp_jscan_arr_next(c, &n)) == 1) {
			if (n > json_object_array_length(j))
				fail("array longer than json-c's");
			same(c, json_object_array_get_idx(j, n - 1));
		}
		if (rc != 0 || n != json_object_array_length(j))
			fail("array length");
		return;
	case '{':
		same_object(c, j);
		return;
	case 't':
	case 'f':
		if (!json_object_is_type(j, json_type_boolean) ||
		    json_object_get_boolean(j) != (kvp_jscan_peek(c) == 't'))
			fail("boolean");
		kvp_jscan_skip(c, 0);
		return;
	case 'n':
		if (j != NULL)
			fail("null");
		kvp_jscan_skip(c, 0);
		return;
	default:
		probe = *c;
		if (kvp_jscan_int(&probe, &v, &neg) == 0) {
			*c = probe;
			if (neg && v == 0 &&
			    json_object_is_type(j, json_type_double))
				return;
			if (!json_object_is_type(j, json_type_int))
				fail("integer vs other type");
			if (neg ? json_object_get_int64(j) != (int64_t)v
			        : json_object_get_uint64(j) != v)
				fail("integer value");
			return;
		}
		if (kvp_jscan_skip(c, 0) != 0 ||
		    !json_object_is_type(j, json_type_double))
			fail("number");
		return;
	}
}

static void
arrays(const char *line, size_t len, struct json_object *j)
{
	struct kvp_jscan c;
	uint64_t *u = NULL;
	uint32_t *t = NULL;
	size_t cap = 0, tcap = 0, n;

	kvp_jscan_init(&c, line, len);
	kvp_jscan_ws(&c);
	if (kvp_jscan_u64_array(&c, 1, &u, &cap, &n) == 0) {
		if (n != json_object_array_length(j))
			fail("u64 array length");
		for (size_t i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(j, i);

			if (!json_object_is_type(e, json_type_int) ||
			    (json_object_get_int64(e) < 0
			         ? (uint64_t)json_object_get_int64(e) != u[i]
			         : json_object_get_uint64(e) != u[i]))
				fail("u64 array value");
		}
	}
	kvp_jscan_init(&c, line, len);
	kvp_jscan_ws(&c);
	if (kvp_jscan_u32_array(&c, &t, &tcap, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (json_object_get_int64(
			        json_object_array_get_idx(j, i)) != t[i])
				fail("u32 array value");
	free(u);
	free(t);
}

static void
members(const char *line, size_t len, struct json_object *j)
{
	struct kvp_jmember m[64];
	struct kvp_jscan c;
	size_t n, close;

	kvp_jscan_init(&c, line, len);
	if (kvp_jscan_members(&c, m, 64, 30, &n, &close) != 0)
		return;
	if (n != (size_t)json_object_object_length(j) || line[close] != '}')
		fail("member count");
	for (size_t i = 0; i < n; i++) {
		char *k = strndup(line + m[i].key, m[i].klen);

		if (k == NULL)
			abort();
		if (!json_object_object_get_ex(j, k, NULL) ||
		    kvp_jscan_find(&c, m, n, k) != (long)i)
			fail("member key");
		free(k);
	}
}

static size_t
digits(const char *s, size_t n)
{
	size_t k = 0;

	while (k < n && s[k] >= '0' && s[k] <= '9')
		k++;
	return k;
}

static int
word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* json-c's strict mode is lax about numbers ("-01", "1." and the like),
 * which RFC 8259 and jscan reject: the converse check skips lines with a
 * fraction, an exponent, a leading zero, a bare minus or a word other
 * than true, false and null (json-c takes NaN, Infinity) outside strings,
 * integers of 19 digits or more (json-c saturates them; jscan rejects
 * those out of range), and raw control bytes inside strings (json-c takes
 * those too). */
static int
odd_json(const char *s, size_t len)
{
	int in_str = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = s[i], nx = i + 1 < len ? s[i + 1] : ' ';
		int dig = ch >= '0' && ch <= '9', ndig = nx >= '0' && nx <= '9';

		if (in_str) {
			if ((unsigned char)ch < 0x20)
				return 1;
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_str = 0;
			continue;
		}
		if (ch == '"') {
			in_str = 1;
		} else if ((ch >= 'a' && ch <= 'z') ||
		           (ch >= 'A' && ch <= 'Z')) {
			size_t j = i;

			while (j < len && ((s[j] >= 'a' && s[j] <= 'z') ||
			                   (s[j] >= 'A' && s[j] <= 'Z')))
				j++;
			if (!word_is(s + i, j - i, "true") &&
			    !word_is(s + i, j - i, "false") &&
			    !word_is(s + i, j - i, "null") &&
			    !(i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9'))
				return 1;
			i = j - 1;
		} else if (ch == '.' || (dig && (nx == 'e' || nx == 'E')) ||
		           (ch == '-' && !ndig) ||
		           (dig && digits(s + i, len - i) >= 19) ||
		           (ch == '0' && ndig &&
		            (i == 0 || s[i - 1] < '0' || s[i - 1] > '9')))
			return 1;
	}
	return 0;
}

static void
one(struct json_tokener *tok, struct json_tokener *strict, const char *line,
    size_t len)
{
	static char wrapped[MAX_LINE + 16];
	struct json_object *o, *v;
	struct kvp_jscan c;
	struct kvp_diag d;
	int ok;

	cur_line = line;
	cur_len = len;
	memcpy(wrapped, "{\"v\":", 5);
	memcpy(wrapped + 5, line, len);
	wrapped[5 + len] = '}';
	kvp_jscan_init(&c, line, len);
	kvp_jscan_ws(&c);
	ok = kvp_jscan_skip(&c, 30) == 0 && kvp_jscan_end(&c) == 0;
	o = kvp_json_parse_object(tok, wrapped, len + 6, &d);
	if (ok) {
		if (o == NULL || !json_object_object_get_ex(o, "v", &v))
			fail("jscan accepts, json-c rejects");
		kvp_jscan_init(&c, line, len);
		kvp_jscan_ws(&c);
		same(&c, v);
		if (kvp_jscan_end(&c) != 0)
			fail("end after same()");
		if (json_object_is_type(v, json_type_array))
			arrays(line, len, v);
		if (json_object_is_type(v, json_type_object))
			members(line, len, v);
	}
	if (o != NULL)
		json_object_put(o);
	/* the converse: [LINE] as a one-element array, so that the line is
	 * exactly one value */
	wrapped[0] = '[';
	memcpy(wrapped + 1, line, len);
	wrapped[len + 1] = ']';
	json_tokener_reset(strict);
	o = json_tokener_parse_ex(strict, wrapped, (int)len + 2);
	if (o != NULL && memchr(line, '\0', len) == NULL &&
	    json_tokener_get_parse_end(strict) == len + 2 &&
	    json_object_is_type(o, json_type_array) &&
	    json_object_array_length(o) == 1) {
		kvp_jscan_init(&c, line, len);
		kvp_jscan_ws(&c);
		if ((kvp_jscan_skip(&c, 1000) != 0 || kvp_jscan_end(&c) != 0) &&
		    !odd_json(line, len))
			fail("json-c (strict) accepts, jscan rejects");
	}
	if (o != NULL)
		json_object_put(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_tokener *strict = json_tokener_new();
	const char *p = (const char *)data, *end = p + size;

	if (tok == NULL || strict == NULL)
		abort();
	json_tokener_set_flags(strict, JSON_TOKENER_STRICT);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl != NULL ? nl : end) - p);

		if (len <= MAX_LINE)
			one(tok, strict, p, len);
		p += len + 1;
	}
	json_tokener_free(tok);
	json_tokener_free(strict);
	return 0;
}
