/* SPDX-License-Identifier: MIT */
/* wire_scan.c — one msgpack object's extent, its length claims vetted (see
 * wire_scan.h). */
#include "events/wire_scan.h"

#include <stdint.h>

#include "events/events_internal.h"

/* Sizes of the msgpack scalars whose size is in their first byte (nil,
 * bool, integers, floats); 0 for everything else. At most 9. */
static const uint8_t scalar_len[256] = {
    [0x00 ... 0x7f] = 1, [0xe0 ... 0xff] = 1, [0xc0] = 1, [0xc2] = 1,
    [0xc3] = 1,          [0xcc] = 2,          [0xd0] = 2, [0xcd] = 3,
    [0xd1] = 3,          [0xca] = 5,          [0xce] = 5, [0xd2] = 5,
    [0xcb] = 9,          [0xcf] = 9,          [0xd3] = 9,
};

/* The other headers: what follows them, their size (the first byte, the
 * length field and, for ext, the type byte; the whole value for fixext)
 * and the length field's size (0: the length is in the first byte). 0xc1
 * and the scalars above have kind H_NONE. */
enum { H_NONE, H_FIXED, H_BODY, H_ARRAY, H_MAP };

static const struct {
	uint8_t kind, size, lenb;
} head_tab[256] = {
    [0xd4] = {H_FIXED, 3, 0},
    [0xd5] = {H_FIXED, 4, 0},
    [0xd6] = {H_FIXED, 6, 0},
    [0xd7] = {H_FIXED, 10, 0},
    [0xd8] = {H_FIXED, 18, 0},
    [0x80 ... 0x8f] = {H_MAP, 1, 0},
    [0x90 ... 0x9f] = {H_ARRAY, 1, 0},
    [0xa0 ... 0xbf] = {H_BODY, 1, 0},
    [0xc4] = {H_BODY, 2, 1},
    [0xc5] = {H_BODY, 3, 2},
    [0xc6] = {H_BODY, 5, 4},
    [0xc7] = {H_BODY, 3, 1},
    [0xc8] = {H_BODY, 4, 2},
    [0xc9] = {H_BODY, 6, 4},
    [0xd9] = {H_BODY, 2, 1},
    [0xda] = {H_BODY, 3, 2},
    [0xdb] = {H_BODY, 5, 4},
    [0xdc] = {H_ARRAY, 3, 2},
    [0xdd] = {H_ARRAY, 5, 4},
    [0xde] = {H_MAP, 3, 2},
    [0xdf] = {H_MAP, 5, 4},
};

struct scan {
	const uint8_t *p;
	size_t len, max_claim;
	int final;
	size_t pos;
	int depth;
	uint64_t stack[KVP_WIRE_MAX_DEPTH]; /* elements left per level */
	uint64_t root_n;                    /* the root container's */
};

/* One header at s->pos. */
struct head {
	size_t hdr;     /* bytes before the body or the first element */
	uint64_t body;  /* str, bin, ext bytes */
	uint64_t items; /* array elements, or map keys and values */
	int is_map;
};

/* Runs of scalars inside a container (token and hash arrays): nothing to
 * check but the bytes they need, and a table lookup instead of branches
 * on the type. The last element goes through the general path. */
static void
skip_scalars(struct scan *s)
{
	uint64_t left = s->stack[s->depth - 1];

	while (left > 1 && s->len - s->pos >= 9) {
		unsigned k = scalar_len[s->p[s->pos]];

		if (k == 0)
			break;
		s->pos += k;
		left--;
	}
	s->stack[s->depth - 1] = left;
}

/* Reads the header at s->pos into h. Returns 1, 0 when more bytes are
 * needed, or -1 with d set (a byte no header starts with). */
static int
read_head(const struct scan *s, struct head *h, struct kvp_diag *d)
{
	uint8_t c = s->p[s->pos];
	uint64_t n;

	h->body = h->items = 0;
	h->is_map = 0;
	h->hdr = scalar_len[c];
	if (h->hdr != 0)
		return s->len - s->pos >= h->hdr;
	if (head_tab[c].kind == H_NONE) /* 0xc1 is never used */
		return kvp_diag_set(
		    d, (long)s->pos,
		    "invalid msgpack: byte 0x%02x at offset %zu", c, s->pos);
	h->hdr = head_tab[c].size;
	if (s->len - s->pos < h->hdr)
		return 0;
	if (head_tab[c].kind == H_FIXED)
		return 1;
	if (head_tab[c].lenb != 0)
		n = mp_ben(s->p + s->pos + 1, head_tab[c].lenb);
	else
		n = c & (head_tab[c].kind == H_BODY ? 0x1f : 0x0f);
	h->is_map = head_tab[c].kind == H_MAP;
	if (head_tab[c].kind == H_BODY)
		h->body = n;
	else
		h->items = h->is_map ? 2 * n : n;
	return 1;
}

/* A body longer than the bytes present: -1 with d set when that is an
 * error, 0 when more bytes may come. */
static int
body_short(const struct scan *s, const struct head *h, struct kvp_diag *d)
{
	if (!s->final && h->body <= s->max_claim)
		return 0;
	return kvp_diag_set(
	    d, (long)s->pos,
	    "%s: a length of %llu bytes at offset %zu, but "
	    "only %zu remain",
	    s->final ? "truncated msgpack" : "implausible msgpack",
	    (unsigned long long)h->body, s->pos, s->len - s->pos - h->hdr);
}

/* Enters the container whose header (h) ends at s->pos. */
static int
push(struct scan *s, const struct head *h, struct kvp_diag *d)
{
	size_t at = s->pos - h->hdr;

	if (h->items > s->len - s->pos && (s->final || h->items > s->max_claim))
		return kvp_diag_set(
		    d, (long)at,
		    "%s: %s header at offset %zu claims %llu elements, but "
		    "only %zu bytes remain",
		    s->final ? "truncated msgpack" : "implausible msgpack",
		    h->is_map ? "map" : "array", at,
		    (unsigned long long)(h->is_map ? h->items / 2 : h->items),
		    s->len - s->pos);
	if (s->depth == KVP_WIRE_MAX_DEPTH)
		return kvp_diag_set(d, (long)at,
		                    "msgpack nested deeper than %d levels at "
		                    "offset %zu",
		                    KVP_WIRE_MAX_DEPTH, at);
	if (s->depth == 0)
		s->root_n = h->items;
	s->stack[s->depth++] = h->items;
	return 0;
}

/* Scans one value (a header and its body). Returns 1 when the object is
 * complete, 0 to go on, 2 when more bytes are needed, -1 on an error. */
static int
scan_value(struct scan *s, size_t *top, struct kvp_diag *d)
{
	struct head h;
	int rc;

	if (s->depth > 1)
		skip_scalars(s);
	if (s->pos >= s->len)
		return 2;
	if (s->depth == 1 && s->root_n - s->stack[0] < KVP_WIRE_TOP)
		top[s->root_n - s->stack[0]] = s->pos;
	rc = read_head(s, &h, d);
	if (rc <= 0)
		return rc < 0 ? -1 : 2;
	if (h.body > s->len - s->pos - h.hdr)
		return body_short(s, &h, d) < 0 ? -1 : 2;
	s->pos += h.hdr + (size_t)h.body;
	if (h.items > 0)
		return push(s, &h, d);
	while (s->depth > 0 && --s->stack[s->depth - 1] == 0)
		s->depth--;
	return s->depth == 0;
}

long long
kvp_wire_scan_top(const void *buf, size_t len, size_t max_claim, int final,
                  struct kvp_diag *d, size_t *top)
{
	struct scan s;
	int rc;

	s.p = buf;
	s.len = len;
	s.max_claim = max_claim;
	s.final = final;
	s.pos = 0;
	s.depth = 0;
	s.root_n = 0;
	while ((rc = scan_value(&s, top, d)) == 0)
		;
	if (rc == 1)
		return (long long)s.pos;
	if (rc < 0)
		return -1;
	if (final)
		return kvp_diag_set(d, (long)len,
		                    "truncated msgpack: input ends inside an "
		                    "object (%zu bytes)",
		                    len);
	return 0;
}

long long
kvp_wire_scan(const void *buf, size_t len, size_t max_claim, int final,
              struct kvp_diag *d)
{
	size_t top[KVP_WIRE_TOP];

	return kvp_wire_scan_top(buf, len, max_claim, final, d, top);
}
