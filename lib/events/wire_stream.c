/* SPDX-License-Identifier: MIT */
/* wire_stream.c — raw msgpack streams split into batches at the object
 * boundaries kvp_wire_scan() finds, in one buffer (see wire_stream.h). */
#include "events/wire_stream.h"

#include <msgpack.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events/events_internal.h"

struct kvp_wire_stream {
	FILE *f;
	size_t max;
	const char *max_flag;
	/* buf[off, used) is read but not yet returned; buf[0, off) is the
	 * batch returned last, valid until the next call. */
	char *buf;
	size_t off, used, cap;
	uint64_t pos; /* stream offset of buf[off] */
	int eof;
};

const char *
kvp_wire_lib_version(void)
{
	return msgpack_version();
}

struct kvp_wire_stream *
kvp_wire_stream_new(FILE *f, size_t max_bytes, const char *max_flag)
{
	struct kvp_wire_stream *s = calloc(1, sizeof *s);

	if (s == NULL)
		return NULL;
	s->f = f;
	s->max = max_bytes;
	s->max_flag = max_flag;
	return s;
}

void
kvp_wire_stream_free(struct kvp_wire_stream *s)
{
	if (s == NULL)
		return;
	free(s->buf);
	free(s);
}

static int
too_large(const struct kvp_wire_stream *s, struct kvp_diag *d)
{
	if (s->max_flag != NULL)
		return kvp_diag_set(d, (long)s->pos,
		                    "batch at offset %llu is larger than %zu "
		                    "bytes (%s)",
		                    (unsigned long long)s->pos, s->max,
		                    s->max_flag);
	return kvp_diag_set(d, (long)s->pos,
	                    "batch at offset %llu is larger than %zu bytes",
	                    (unsigned long long)s->pos, s->max);
}

/* Reads more of the stream after the have unparsed bytes (moved to the
 * front of the buffer): at least as much as is buffered, so that rescanning
 * an incomplete batch costs O(size) overall and the buffer stays within
 * about twice the largest batch. Returns 0, -1 (out of memory, d set) or -2
 * (read error). */
static int
fill(struct kvp_wire_stream *s, size_t have, struct kvp_diag *d)
{
	size_t want = have < 65536 ? 65536 : have, got;

	if (s->off > 0) {
		memmove(s->buf, s->buf + s->off, have);
		s->off = 0;
		s->used = have;
	}
	if (s->cap - s->used < want) {
		char *p = realloc(s->buf, s->used + want);

		if (p == NULL)
			return kvp_diag_set(d, (long)s->pos, "out of memory");
		s->buf = p;
		s->cap = s->used + want;
	}
	got = fread(s->buf + s->used, 1, s->cap - s->used, s->f);
	s->used += got;
	if (got == 0) {
		if (ferror(s->f)) {
			if (errno == 0)
				errno = EIO;
			return -2;
		}
		s->eof = 1;
	}
	return 0;
}

/* The n-byte batch at start is returned: its bytes stay in the buffer until
 * the next call, and w decodes them from there. */
static int
take(struct kvp_wire_stream *s, struct kvp_wire *w, const char *start,
     long long n, size_t *size)
{
	s->off += (size_t)n;
	s->pos += (uint64_t)n;
	*size = (size_t)n;
	kvp_wire_set_root(w, start, (size_t)n);
	return 1;
}

int
kvp_wire_stream_next(struct kvp_wire_stream *s, struct kvp_wire *w,
                     uint64_t *offset, size_t *size, struct kvp_diag *d)
{
	w->root = NULL;
	for (;;) {
		const char *start = s->buf != NULL ? s->buf + s->off : NULL;
		size_t have = s->used - s->off;
		long long n = 0;
		int rc;

		*offset = s->pos;
		if (have > 0) {
			n = kvp_wire_scan_top(start, have, s->max, s->eof, d,
			                      w->top);
			if (n < 0) {
				d->col = (long)(s->pos + (uint64_t)d->col);
				return -1;
			}
		} else if (s->eof) {
			return 0;
		}
		if ((size_t)n > s->max)
			return too_large(s, d);
		if (n > 0)
			return take(s, w, start, n, size);
		if (have >= s->max)
			return too_large(s, d);
		rc = fill(s, have, d);
		if (rc != 0)
			return rc;
	}
}
