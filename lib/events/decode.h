/* SPDX-License-Identifier: MIT */
/*
 * decode.h — a kv-decode session: captured batches in, one NDJSON record
 * per event out (docs/spec/kv-events.md §6, kvpipe-records(5)). The session
 * owns a batch from its bytes to its records: it reads the input in any of the
 * three framings (decode_in.h), decodes the envelope and events (wire.h),
 * applies the batch policy (Dynamo's strict rules, the rank fallback, seq
 * gap and stale tracking with seqtrack.h) and writes the records
 * (decode_out.h).
 *
 * Use, per input:
 *
 *	kvp_decode_open(s, f, worker, &d);
 *	while ((rc = kvp_decode_step(s, &pos, &d)) != KVP_END)
 *		...                        report BAD, stop on FAIL
 *	kvp_decode_close(s);
 *
 * Each step writes at most one event record (or consumes a batch that
 * yields none). A bad unit (a line, a frame message, a batch or an event)
 * is written as an error record and returned as KVP_BAD with the
 * message in d and where it was in *pos; the caller reports it and
 * either goes on or calls kvp_decode_finish(), which ends the input there:
 * the current batch's remaining events are not decoded (a batch of a
 * million bad events gives one error record, not a million).
 *
 * The session borrows the output FILE and the inputs; it owns everything
 * else (kvp_decode_free()). Seq tracking spans inputs. Nothing here prints.
 */
#ifndef KVP_DECODE_H
#define KVP_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"
#include "events/decode_in.h"
#include "kvpipe.h"

struct kvp_decode_opts {
	enum kvp_din_format format; /* KVP_DIN_AUTO: detected per input */
	size_t max_bytes;           /* longest line, frame or raw batch */
	int has_dp_rank;            /* rank for envelopes without one */
	int32_t dp_rank;
	int batches;      /* a batch record before each batch's events */
	int strict;       /* Dynamo's rules (see kvp_wire_not_dynamo()) */
	int drop_stale;   /* skip the events of stale batches */
	int gap_at_start; /* a stream starting above seq 0 is a gap */
	int hash_strings, unbuffered; /* output, as in struct kvp_jw */
	/* The options that set strict and max_bytes, cited in messages
	 * about them; NULL cites none. */
	const char *strict_flag, *max_flag;
};

/* What a step read, and where a bad unit was, for the caller's totals
 * and messages. */
struct kvp_decode_pos {
	int read;      /* the step read a unit of input: a line, a framed
	                  message or a raw batch (one record in, bad or not) */
	int at_offset; /* offset: frames and raw; line: JSONL */
	uintmax_t line;
	uint64_t offset;
	int has_seq;
	uint64_t seq;
	int has_idx; /* an event of the batch */
	size_t idx;
};

struct kvp_decode;

/* Returns NULL with d set when out of memory. */
struct kvp_decode *kvp_decode_new(const struct kvp_decode_opts *o, FILE *out,
                                  struct kvp_diag *d);
void kvp_decode_free(struct kvp_decode *s);

/* Starts an input: f (borrowed) and its default worker_id. Returns 0, or
 * -1 with d set. */
int kvp_decode_open(struct kvp_decode *s, FILE *f, uint64_t worker,
                    struct kvp_diag *d);
void kvp_decode_close(struct kvp_decode *s);

/*
 * One step (see above): KVP_OK (a record was written, or a batch that
 * yields none consumed), KVP_END (no more from this input), KVP_BAD (a bad
 * unit: its error record written; d says what, d->col is a column for
 * invalid JSON, else 0) or KVP_FAIL (I/O or memory trouble: d says what,
 * empty for a read error on the input, ferror() set and errno telling
 * why, and for a write error on the output, which closing it reports).
 */
int kvp_decode_step(struct kvp_decode *s, struct kvp_decode_pos *pos,
                    struct kvp_diag *d);

/* Ends the input now: the current batch's remaining events are dropped. */
void kvp_decode_finish(struct kvp_decode *s);

/* How many event records so far carried third-party field i (enum
 * kvp_wire_third in wire.h): tolerated, written, counted. */
uintmax_t kvp_decode_third_party(const struct kvp_decode *s, int i);

#endif
