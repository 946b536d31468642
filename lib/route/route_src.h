/* SPDX-License-Identifier: MIT */
/*
 * route_src.h — route-score's input streams: a bounded line reader with
 * one JSON record looked ahead (struct kvp_rin_src), and the time-ordered
 * merge of an event stream with a request stream (struct kvp_rin_merge;
 * spec-route-score.md §6.1): the record with the lower timestamp ("ts_ms",
 * or Mooncake's "timestamp"; a record without one takes its stream's last)
 * comes first, the event stream on ties. One stream is read in file order.
 *
 * The FILEs are the caller's (it opens, names and closes them). Records are
 * json-c objects owned by the source. Nothing here prints: bad lines come
 * back as statuses, with the line number in the source and, for invalid
 * JSON, a struct kvp_diag.
 */
#ifndef KVP_ROUTE_SRC_H
#define KVP_ROUTE_SRC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"
#include "common/ndjson.h"

struct json_object;
struct json_tokener;

enum {
	KVP_RIN_SRC_RECORD = 1,
	KVP_RIN_SRC_EOF = 0,
	KVP_RIN_SRC_BAD = -1,      /* invalid JSON / not an object: d set */
	KVP_RIN_SRC_TOO_LONG = -2, /* line over the cap (skipped) */
	KVP_RIN_SRC_IOERR = -3,    /* errno tells why */
};

struct kvp_rin_src {
	struct kvp_lines lr;
	struct json_tokener *tok;
	struct json_object *pending; /* owned; NULL when none */
	uintmax_t line;              /* line of the last record read */
	uint64_t ts;                 /* its timestamp, or the last one seen */
	uintmax_t n_records;         /* non-blank lines read */
	char head[256];              /* the first one's first bytes */
	size_t head_len;
};

/* 0, or -1 on allocation failure. */
int kvp_rin_src_init(struct kvp_rin_src *s, FILE *f, size_t max);
void kvp_rin_src_fini(struct kvp_rin_src *s);
/* Reads the next non-blank line into s->pending (which must be NULL). */
int kvp_rin_src_next(struct kvp_rin_src *s, struct kvp_diag *d);
/* Releases s->pending. */
void kvp_rin_src_drop(struct kvp_rin_src *s);

struct kvp_rin_merge {
	struct kvp_rin_src src[2];
	int eof[2];
	int nsrc;  /* 1 or 2 */
	int cur;   /* the source of the last result */
	int taken; /* src[cur].pending was returned: drop it on the next call */
	size_t nread; /* lines the last call read (records and bad lines) */
};

/* Merges events with requests, or reads one stream when requests is NULL.
 * 0, or -1 on allocation failure. */
int kvp_rin_merge_init(struct kvp_rin_merge *m, FILE *events, FILE *requests,
                       size_t max);
void kvp_rin_merge_fini(struct kvp_rin_merge *m);

/*
 * The next record in time order: KVP_RIN_SRC_RECORD with the record in
 * m->src[m->cur].pending (valid until the next call), or a bad line of
 * source m->cur (BAD, TOO_LONG: calling again skips it; IOERR: that source
 * ends), or KVP_RIN_SRC_EOF when every source is done. The line number is
 * m->src[m->cur].line. Every source is looked ahead before a record is
 * picked, so a bad line can come before the record it follows in time.
 * m->nread counts the non-blank lines this call read, the one returned
 * included (for the caller's record count).
 */
int kvp_rin_merge_next(struct kvp_rin_merge *m, struct kvp_diag *d);

/* Did the last result come from the request stream (or the one stream)? */
int kvp_rin_merge_from_requests(const struct kvp_rin_merge *m);

#endif
