/* SPDX-License-Identifier: MIT */
/* jscan.c — strict single-line JSON scanner (see jscan.h). */
#include "common/jscan.h"

#include <string.h>

#include "common/util.h"

void
kvp_jscan_init(struct kvp_jscan *c, const char *s, size_t len)
{
	c->s = s;
	c->len = len;
	c->i = 0;
	c->flags = 0;
}

static inline int
is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static inline int
is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static inline void
ws(struct kvp_jscan *c)
{
	if (c->i < c->len && is_ws(c->s[c->i])) {
		c->flags |= KVP_JSCAN_WS;
		do
			c->i++;
		while (c->i < c->len && is_ws(c->s[c->i]));
	}
}

void
kvp_jscan_ws(struct kvp_jscan *c)
{
	ws(c);
}

int
kvp_jscan_end(struct kvp_jscan *c)
{
	ws(c);
	return c->i == c->len ? 0 : -1;
}

static inline int
string(struct kvp_jscan *c, struct kvp_jspan *sp)
{
	const unsigned char *p = (const unsigned char *)c->s;
	size_t i = c->i, len = c->len;
	unsigned f = 0;

	if (i >= len || p[i] != '"')
		return -1;
	sp->off = ++i;
	for (;; i++) {
		unsigned char ch;

		if (i >= len)
			return -1;
		ch = p[i];
		if (ch == '"')
			break;
		if (ch < 0x20)
			return -1;
		if (ch >= 0x80) {
			f |= KVP_JSCAN_NONASCII;
		} else if (ch == '\\') {
			f |= KVP_JSCAN_ESC;
			if (++i >= len)
				return -1;
			switch (p[i]) {
			case '"':
			case '\\':
			case '/':
			case 'b':
			case 'f':
			case 'n':
			case 'r':
			case 't':
				break;
			case 'u':
				if (i + 4 >= len)
					return -1;
				for (int k = 1; k <= 4; k++)
					if (kvp_hexval(p[i + k]) < 0)
						return -1;
				i += 4;
				break;
			default:
				return -1;
			}
		}
	}
	sp->len = i - sp->off;
	sp->flags = f;
	c->flags |= f;
	c->i = i + 1;
	return 0;
}

int
kvp_jscan_string(struct kvp_jscan *c, struct kvp_jspan *sp)
{
	return string(c, sp);
}

/* Limits of an exact integer: 2^64-1 and, after a minus sign, 2^63. */
static const char lim_pos[] = "18446744073709551615";
static const char lim_neg[] = "9223372036854775808";

/* The rest of a number after its integer part (at i): a fraction and an
 * exponent, validated. Returns the offset after it, or 0 on a syntax
 * error. */
static size_t
number_tail(struct kvp_jscan *c, size_t i)
{
	const char *s = c->s;
	size_t len = c->len;

	if (i < len && s[i] == '.') {
		i++;
		if (i >= len || !is_digit(s[i]))
			return 0;
		while (i < len && is_digit(s[i]))
			i++;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		c->flags |= KVP_JSCAN_EXP;
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= len || !is_digit(s[i]))
			return 0;
		while (i < len && is_digit(s[i]))
			i++;
	}
	return i;
}

/* A number at the cursor. *is_int is set when it has neither fraction nor
 * exponent; then it must be in range, and *v (unless v is NULL) gets its
 * value. Inlined at each call so that a NULL v costs nothing. */
static inline __attribute__((always_inline)) int
number(struct kvp_jscan *c, uint64_t *v, int *neg, int *is_int)
{
	const char *s = c->s;
	size_t i = c->i, len = c->len, d0, nd;
	uint64_t x = 0;

	*neg = 0;
	if (i < len && s[i] == '-') {
		*neg = 1;
		c->flags |= KVP_JSCAN_NEG;
		i++;
	}
	d0 = i;
	if (i >= len || !is_digit(s[i]))
		return -1;
	if (s[i] == '0')
		i++;
	else if (v != NULL)
		do
			x = x * 10 + (uint64_t)(s[i++] - '0');
		while (i < len && is_digit(s[i]));
	else
		do
			i++;
		while (i < len && is_digit(s[i]));
	nd = i - d0;
	if (nd >= 20)
		c->flags |= KVP_JSCAN_LONGINT;
	if (i < len && (s[i] == '.' || s[i] == 'e' || s[i] == 'E')) {
		*is_int = 0;
		if ((i = number_tail(c, i)) == 0)
			return -1;
		c->i = i;
		return 0;
	}
	*is_int = 1;
	if (nd >= sizeof lim_neg - 1) {
		const char *lim = *neg ? lim_neg : lim_pos;
		size_t ll = *neg ? sizeof lim_neg - 1 : sizeof lim_pos - 1;

		if (nd > ll || (nd == ll && memcmp(s + d0, lim, ll) > 0))
			return -1;
	}
	if (v != NULL)
		*v = *neg ? (uint64_t)0 - x : x;
	c->i = i;
	return 0;
}

int
kvp_jscan_int(struct kvp_jscan *c, uint64_t *v, int *neg)
{
	int is_int;

	if (number(c, v, neg, &is_int) != 0 || !is_int)
		return -1;
	return 0;
}

static inline int
literal(struct kvp_jscan *c, const char *lit, size_t n)
{
	if (c->len - c->i < n || memcmp(c->s + c->i, lit, n) != 0)
		return -1;
	c->i += n;
	return 0;
}

int
kvp_jscan_literal(struct kvp_jscan *c, const char *lit)
{
	return literal(c, lit, strlen(lit));
}

static inline int
obj_next(struct kvp_jscan *c, size_t *n, struct kvp_jspan *key)
{
	ws(c);
	if (c->i >= c->len)
		return -1;
	if (c->s[c->i] == '}') {
		c->i++;
		return 0;
	}
	if (*n > 0) {
		if (c->s[c->i] != ',')
			return -1;
		c->i++;
		ws(c);
	}
	if (string(c, key) != 0)
		return -1;
	ws(c);
	if (c->i >= c->len || c->s[c->i] != ':')
		return -1;
	c->i++;
	ws(c);
	(*n)++;
	return 1;
}

static inline int
arr_next(struct kvp_jscan *c, size_t *n)
{
	ws(c);
	if (c->i >= c->len)
		return -1;
	if (c->s[c->i] == ']') {
		c->i++;
		return 0;
	}
	if (*n > 0) {
		if (c->s[c->i] != ',')
			return -1;
		c->i++;
		ws(c);
	}
	(*n)++;
	return 1;
}

int
kvp_jscan_obj_begin(struct kvp_jscan *c)
{
	if (c->i >= c->len || c->s[c->i] != '{')
		return -1;
	c->i++;
	return 0;
}

int
kvp_jscan_obj_next(struct kvp_jscan *c, size_t *n, struct kvp_jspan *key)
{
	return obj_next(c, n, key);
}

int
kvp_jscan_arr_begin(struct kvp_jscan *c)
{
	if (c->i >= c->len || c->s[c->i] != '[')
		return -1;
	c->i++;
	return 0;
}

int
kvp_jscan_arr_next(struct kvp_jscan *c, size_t *n)
{
	return arr_next(c, n);
}

static int skip(struct kvp_jscan *c, int depth_left);

static int
skip_container(struct kvp_jscan *c, int depth_left, int object)
{
	struct kvp_jspan key;
	size_t n = 0;
	int rc;

	if (depth_left <= 0)
		return -1;
	c->i++;
	while ((rc = object ? obj_next(c, &n, &key) : arr_next(c, &n)) == 1)
		if (skip(c, depth_left - 1) != 0)
			return -1;
	return rc;
}

static int
skip(struct kvp_jscan *c, int depth_left)
{
	struct kvp_jspan sp;
	int neg, is_int;

	if (c->i >= c->len)
		return -1;
	switch (c->s[c->i]) {
	case '"':
		return string(c, &sp);
	case '[':
		return skip_container(c, depth_left, 0);
	case '{':
		c->flags |= KVP_JSCAN_OBJECT;
		return skip_container(c, depth_left, 1);
	case 't':
		return literal(c, "true", 4);
	case 'f':
		return literal(c, "false", 5);
	case 'n':
		return literal(c, "null", 4);
	default:
		return number(c, NULL, &neg, &is_int);
	}
}

int
kvp_jscan_skip(struct kvp_jscan *c, int max_depth)
{
	return skip(c, max_depth);
}

/* ---- kvp_jscan_check ------------------------------------------------------
 * Each helper returns KVP_JSCAN_OK with the cursor after what it checked,
 * or KVP_JSCAN_TRUNC / KVP_JSCAN_BAD. */

static int
check_string(struct kvp_jscan *c)
{
	const unsigned char *p = (const unsigned char *)c->s;
	size_t i = c->i + 1, len = c->len;

	for (; i < len; i++) {
		unsigned char ch = p[i];

		if (ch == '"') {
			c->i = i + 1;
			return KVP_JSCAN_OK;
		}
		if (ch < 0x20)
			break;
		if (ch >= 0x80)
			c->flags |= KVP_JSCAN_NONASCII;
		if (ch != '\\')
			continue;
		c->flags |= KVP_JSCAN_ESC;
		if (++i >= len)
			return KVP_JSCAN_TRUNC;
		if (p[i] == 'u') {
			for (int k = 1; k <= 4; k++) {
				if (i + k >= len)
					return KVP_JSCAN_TRUNC;
				if (kvp_hexval(p[i + k]) < 0) {
					c->i = i + k;
					return KVP_JSCAN_BAD;
				}
			}
			i += 4;
		} else if (!strchr("\"\\/bfnrt", p[i]) || p[i] == '\0') {
			break;
		}
	}
	c->i = i;
	return i >= len ? KVP_JSCAN_TRUNC : KVP_JSCAN_BAD;
}

/* At least one digit at i; the offset after the run, or 0 (*rc says
 * why). */
static size_t
check_digits(const struct kvp_jscan *c, size_t i, int *rc)
{
	size_t d = i;

	while (i < c->len && is_digit(c->s[i]))
		i++;
	if (i == d)
		*rc = i >= c->len ? KVP_JSCAN_TRUNC : KVP_JSCAN_BAD;
	return i == d ? 0 : i;
}

static int
check_number(struct kvp_jscan *c)
{
	const char *s = c->s;
	size_t i = c->i, len = c->len, d0;
	int rc = KVP_JSCAN_OK;

	if (s[i] == '-') {
		c->flags |= KVP_JSCAN_NEG;
		i++;
	}
	d0 = i;
	if (i < len && s[i] == '0')
		i++;
	else if ((i = check_digits(c, i, &rc)) == 0)
		goto out;
	if (i - d0 >= 16)
		c->flags |= KVP_JSCAN_BIGINT;
	if (i < len && s[i] == '.' && (i = check_digits(c, i + 1, &rc)) == 0)
		goto out;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		c->flags |= KVP_JSCAN_EXP;
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		if ((i = check_digits(c, i, &rc)) == 0)
			goto out;
	}
	c->i = i;
	return KVP_JSCAN_OK;
out:
	return rc;
}

static int
check_scalar(struct kvp_jscan *c)
{
	static const char *const lits[] = {"true", "false", "null"};
	size_t left = c->len - c->i;
	char ch = c->s[c->i];

	if (ch == '"')
		return check_string(c);
	for (int k = 0; k < 3; k++) {
		size_t n = strlen(lits[k]);

		if (ch != lits[k][0])
			continue;
		if (memcmp(c->s + c->i, lits[k], left < n ? left : n) != 0)
			return KVP_JSCAN_BAD;
		if (left < n)
			return KVP_JSCAN_TRUNC;
		c->i += n;
		return KVP_JSCAN_OK;
	}
	if (ch != '-' && !is_digit(ch))
		return KVP_JSCAN_BAD;
	return check_number(c);
}

/* What kvp_jscan_check() expects next. */
enum { CK_VALUE, CK_VALUE_OR_CLOSE, CK_KEY, CK_KEY_OR_CLOSE, CK_AFTER };

/* A key and its ':' at the cursor (a '"'). */
static int
check_key(struct kvp_jscan *c)
{
	int rc = check_string(c);

	if (rc != KVP_JSCAN_OK)
		return rc;
	ws(c);
	if (c->i >= c->len)
		return KVP_JSCAN_TRUNC;
	if (c->s[c->i] != ':')
		return KVP_JSCAN_BAD;
	c->i++;
	return KVP_JSCAN_OK;
}

int
kvp_jscan_check(struct kvp_jscan *c, int max_depth)
{
	uint64_t obj = 0; /* bit d: level d is an object */
	int depth = 0, st = CK_VALUE, rc;

	if (max_depth > 64)
		max_depth = 64;
	for (;;) {
		int in_obj = depth > 0 && (obj >> (depth - 1) & 1);
		char ch;

		ws(c);
		if (c->i >= c->len)
			return KVP_JSCAN_TRUNC;
		ch = c->s[c->i];
		if ((st == CK_KEY_OR_CLOSE && ch == '}') ||
		    (st == CK_VALUE_OR_CLOSE && ch == ']') ||
		    (st == CK_AFTER && ch == (in_obj ? '}' : ']'))) {
			c->i++;
			depth--;
		} else if (st == CK_AFTER) {
			if (ch != ',')
				return KVP_JSCAN_BAD;
			c->i++;
			st = in_obj ? CK_KEY : CK_VALUE;
			continue;
		} else if (st == CK_KEY || st == CK_KEY_OR_CLOSE) {
			if (ch != '"')
				return KVP_JSCAN_BAD;
			if ((rc = check_key(c)) != KVP_JSCAN_OK)
				return rc;
			st = CK_VALUE;
			continue;
		} else if (ch == '[' || ch == '{') {
			if (depth == max_depth)
				return KVP_JSCAN_DEEP;
			obj = ch == '{' ? obj | (uint64_t)1 << depth
			                : obj & ~((uint64_t)1 << depth);
			if (ch == '{')
				c->flags |= KVP_JSCAN_OBJECT;
			depth++;
			c->i++;
			st = ch == '{' ? CK_KEY_OR_CLOSE : CK_VALUE_OR_CLOSE;
			continue;
		} else if ((rc = check_scalar(c)) != KVP_JSCAN_OK) {
			return rc;
		}
		if (depth == 0)
			return KVP_JSCAN_OK;
		st = CK_AFTER;
	}
}

/*
 * The common run of a u64 array ([1000, 1001, 1002], as traces write
 * them) in one tight loop: non-negative integers of at most 19 digits,
 * each followed by spaces and a comma or the closing bracket. Returns 1
 * with the bracket consumed; 0 at anything else, c->i right after the last
 * element taken (*n of them, counted on from *n) for the general loop to
 * go on from; -1 on allocation failure.
 */
static int
u64_run(struct kvp_jscan *c, uint64_t **buf, size_t *cap, size_t *n)
{
	const char *s = c->s, *p = s + c->i, *end = s + c->len, *q;
	size_t k = *n, back = c->i;

	while (p < end && is_digit(*p)) {
		const char *d = p;
		uint64_t x = (uint64_t)(*p++ - '0');

		if (x != 0)
			while (p < end && is_digit(*p) && p - d < 19)
				x = x * 10 + (uint64_t)(*p++ - '0');
		if (p < end && is_digit(*p))
			break; /* a leading zero, or 20 digits and more */
		for (q = p; q < end && *q == ' '; q++)
			;
		if (q == end || (*q != ',' && *q != ']'))
			break; /* a fraction, an exponent, other space */
		if (k >= *cap && kvp_grow(buf, cap, k + 1, sizeof(**buf)) != 0)
			return -1;
		(*buf)[k++] = x;
		back = (size_t)(p - s);
		if (q > p)
			c->flags |= KVP_JSCAN_WS;
		if (*q == ']') {
			c->i = (size_t)(q + 1 - s);
			*n = k;
			return 1;
		}
		for (p = q + 1; p < end && *p == ' '; p++)
			c->flags |= KVP_JSCAN_WS;
	}
	c->i = back;
	*n = k;
	return 0;
}

static inline __attribute__((always_inline)) int
int_array(struct kvp_jscan *c, int allow_neg, int narrow, void *bufp,
          size_t *cap, size_t *n)
{
	size_t k = 0;
	int rc;

	if (kvp_jscan_arr_begin(c) != 0)
		return -1;
	if (!narrow && (rc = u64_run(c, bufp, cap, &k)) != 0) {
		if (rc < 0)
			return -1;
		*n = k;
		return 0;
	}
	while ((rc = arr_next(c, &k)) == 1) {
		uint64_t v;
		int neg, is_int;

		if (number(c, &v, &neg, &is_int) != 0 || !is_int ||
		    (neg && !allow_neg))
			return -1;
		if (k > *cap &&
		    kvp_grow(bufp, cap, k,
		             narrow ? sizeof(uint32_t) : sizeof(uint64_t)) != 0)
			return -1;
		if (narrow) {
			if (v > UINT32_MAX)
				return -1;
			(*(uint32_t **)bufp)[k - 1] = (uint32_t)v;
		} else {
			(*(uint64_t **)bufp)[k - 1] = v;
		}
	}
	if (rc != 0)
		return -1;
	*n = k;
	return 0;
}

int
kvp_jscan_u64_array(struct kvp_jscan *c, int allow_neg, uint64_t **buf,
                    size_t *cap, size_t *n)
{
	return int_array(c, allow_neg, 0, buf, cap, n);
}

int
kvp_jscan_u32_array(struct kvp_jscan *c, uint32_t **buf, size_t *cap, size_t *n)
{
	return int_array(c, 0, 1, buf, cap, n);
}

int
kvp_jscan_members(struct kvp_jscan *c, struct kvp_jmember *m, size_t max,
                  int max_depth, size_t *n, size_t *close)
{
	struct kvp_jspan key;
	size_t k = 0;
	int rc;

	*n = 0;
	ws(c);
	if (kvp_jscan_obj_begin(c) != 0)
		return -1;
	while ((rc = obj_next(c, &k, &key)) == 1) {
		if (k > max || (key.flags & KVP_JSCAN_ESC))
			return -1;
		for (size_t j = 0; j + 1 < k; j++)
			if (m[j].klen == key.len &&
			    memcmp(c->s + m[j].key, c->s + key.off, key.len) ==
			        0)
				return -1;
		m[k - 1].key = key.off;
		m[k - 1].klen = key.len;
		m[k - 1].val = c->i;
		if (skip(c, max_depth) != 0)
			return -1;
		m[k - 1].vend = c->i;
		*n = k;
	}
	if (rc != 0)
		return -1;
	*close = c->i - 1;
	return kvp_jscan_end(c);
}

long
kvp_jscan_find(const struct kvp_jscan *c, const struct kvp_jmember *m, size_t n,
               const char *key)
{
	size_t kl = strlen(key);

	for (size_t j = 0; j < n; j++)
		if (m[j].klen == kl && memcmp(c->s + m[j].key, key, kl) == 0)
			return (long)j;
	return -1;
}
