/* SPDX-License-Identifier: MIT */
/*
 * route_src.h — route-score's input streams: a bounded line reader with
 * one record parsed ahead (struct kvp_rin_src), and the time-ordered merge
 * of any number of them (struct kvp_rin_merge; docs/spec/route-score.md §6.1).
 *
 * The merge returns the record with the lowest timestamp (kvp_rin_ts():
 * "ts_ms", Mooncake's or KvRecorder's "timestamp", a RouterEvent's
 * "x"."ts_ms"); a record without one takes its stream's last. Before its
 * stream's first timestamp, an event counts as time 0 and a request as
 * later than any timestamp, so untimed requests come after the events, as
 * when no stream has times. Ties go to the event streams, then to the
 * stream added first, so the merge is stable: one stream is read in file
 * order, and records of equal time keep the order of the streams given. A bad
 * line is returned in its stream's place in that order, at its stream's last
 * time.
 *
 * A line that is a whole Dynamo standalone-indexer dump (an object of
 * {"block_size": N, "events": [RouterEvent...]} entries keyed by
 * "model:routing_group", or the older JSON array of RouterEvents) stands
 * for its events: they come one by one, all at that line and at the
 * stream's time, entry by entry. An entry whose block_size differs from
 * the parser's, or which holds an "error", is one bad record (its events
 * are not applied).
 *
 * Each source parses its own records (struct kvp_rin_parser each, so a
 * request stream may be a Mooncake trace while an event stream is not).
 * The FILEs are the caller's (it opens, names and closes them). Nothing
 * here prints: bad lines come back as statuses, with the line number in
 * the source and a struct kvp_diag.
 */
#ifndef KVP_ROUTE_SRC_H
#define KVP_ROUTE_SRC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"
#include "common/ndjson.h"
#include "replay/route_input.h"

enum {
	KVP_RIN_SRC_RECORD = 1,
	KVP_RIN_SRC_EOF = 0,
	KVP_RIN_SRC_BAD = -1,      /* invalid JSON or record: d set */
	KVP_RIN_SRC_TOO_LONG = -2, /* line over the cap (skipped) */
	KVP_RIN_SRC_IOERR = -3,    /* errno tells why */
	KVP_RIN_SRC_NOMEM = -4,    /* out of memory */
};

struct kvp_rin_dump; /* a Dynamo /dump line being read (route_src.c) */

struct kvp_rin_src {
	struct kvp_lines lr;
	struct kvp_rin_dump *dump; /* NULL: none */
	struct kvp_rin_parser p;
	struct kvp_rin rec;   /* the record looked ahead */
	int state;            /* KVP_RIN_SRC_*: what is pending; EOF: none */
	struct kvp_diag diag; /* for a pending bad line */
	int eof;              /* the stream is done */
	int requests;         /* a request stream (else events) */
	uintmax_t line;       /* line of the pending record */
	uint64_t ts;          /* its timestamp, or the last one seen */
	uintmax_t n_records;  /* non-blank lines read */
	char head[256];       /* the first one's first bytes */
	size_t head_len;
};

struct kvp_rin_merge {
	struct kvp_rin_src *src;
	size_t nsrc, cap;
	size_t cur;   /* the source of the last result */
	int taken;    /* src[cur]'s pending result was returned */
	size_t nread; /* lines the last call read (records and bad lines) */
};

void kvp_rin_merge_init(struct kvp_rin_merge *m);
void kvp_rin_merge_fini(struct kvp_rin_merge *m);

/* Adds a stream read from f (every stream is added before the first
 * kvp_rin_merge_next()); requests: a request stream (mooncake: every
 * line is a Mooncake trace request). The parser settings are those of
 * kvp_rin_init(). 0, or -1 on allocation failure. */
int kvp_rin_merge_add(struct kvp_rin_merge *m, FILE *f, size_t max,
                      int requests, uint32_t block_size, int mooncake,
                      const char *lora, const char *ns);

/*
 * The next record in time order: KVP_RIN_SRC_RECORD with the record in
 * m->src[m->cur].rec (valid until the next call), or a bad line of
 * source m->cur (BAD, TOO_LONG: calling again skips it; IOERR: that source
 * ends; NOMEM), or KVP_RIN_SRC_EOF when every source is done. The line
 * number is m->src[m->cur].line, the diag in m->src[m->cur].diag. m->nread
 * counts the non-blank lines this call read, the one returned included
 * (for the caller's record count).
 */
int kvp_rin_merge_next(struct kvp_rin_merge *m);

/*
 * The block size a Dynamo standalone-indexer /dump gives (route-score(1)):
 * reads the first non-blank line of f (at most max bytes); if it is a dump,
 * {"model:routing_group": {"block_size": N, "events": [...]}, ...}, whose
 * entries name block sizes, returns 1 with *bs set (every entry must give
 * the same); 0 when the line is not a dump or gives none; -1 with d set
 * when its entries disagree or on a read error (errno set, d->msg empty).
 */
int kvp_rin_dump_block_size(FILE *f, size_t max, uint32_t *bs,
                            struct kvp_diag *d);

/* Records read by the fast path and by json-c, over every source. */
void kvp_rin_merge_paths(const struct kvp_rin_merge *m, uintmax_t *fast,
                         uintmax_t *slow);

#endif
