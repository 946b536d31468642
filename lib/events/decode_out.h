/* SPDX-License-Identifier: MIT */
/*
 * decode_out.h — kv-decode's output records: event, batch, error, gap,
 * stale and restart records (docs/spec/kv-events.md §6.3,
 * kvpipe-records(5)), and the JSON rendering of opaque msgpack values
 * (extra_keys, block_mm_infos).
 *
 * A struct kvp_dout writes to a FILE it borrows (the caller opens and
 * closes it and checks ferror()) through a struct kvp_jw, whose record
 * buffer event records are rendered straight into; it owns the per-batch
 * parts of those records. kvp_dout_fini() frees them.
 *
 * Use, per batch decoded by wire.h (the decode session, decode.h, does):
 *
 *	kvp_dout_seq(o, &r)                 a gap, stale or restart record;
 *	kvp_dout_batch(o, bc, &b, ...)      the optional batch record;
 *	kvp_dout_batch_parts(o, bc, &b, ..) once, before the batch's events;
 *	kvp_dout_event(o, i, &ev)           one record per decoded event;
 *	kvp_dout_error(o, bc, ...)          an error record for a bad one.
 *
 * Event records are rendered into the writer's buffer by plain copies
 * (kvp_jw_reserve/commit); the bytes are the same as the struct kvp_jw
 * calls would produce.
 *
 * Nothing here prints to stderr or exits: a write error or a lack of
 * memory leaves o->jw.failed set (and ferror() on the FILE for the
 * former); the caller checks and reports them.
 */
#ifndef KVP_DECODE_OUT_H
#define KVP_DECODE_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/jsonw.h"
#include "events/seqtrack.h"
#include "events/wire.h"

struct json_object;

/* The longest x_capture (JSON bytes) copied into every event record of a
 * batch; a longer one is replaced there by its size, x_capture_bytes, and
 * written whole only on the batch record. */
#define KVP_DOUT_MAX_CAPTURE 4096

/* What the output records say about the batch being decoded. Borrowed:
 * topic, source and capture must outlive the calls that take it. */
struct kvp_dout_batch {
	int has_seq;
	uint64_t seq;
	const char *topic; /* not NUL-terminated */
	size_t topic_len;
	const char *source; /* NULL: null */
	uint64_t worker;
	const char *capture; /* x_capture: the capture line's other members as
	                        one JSON object, or NULL */
	size_t capture_len;
};

struct kvp_dout {
	FILE *out;
	struct kvp_jw jw;
	/* Per-batch parts of every event record, rendered once per batch:
	 * prefix = {"rec":"event",...,"worker_id":W  and suffix = the
	 * x_envelope_extra / x_capture members (",..." or empty). */
	char *prefix, *suffix;
	size_t prefix_len, suffix_len, prefix_cap, suffix_cap;
};

/* Records are built in o->jw's buffer; its failures are sticky
 * (common/jsonw.h). */
void kvp_dout_init(struct kvp_dout *o, FILE *out, int hash_strings,
                   int unbuffered);
void kvp_dout_fini(struct kvp_dout *o);

/* An error record; stage is "line", "frame", "msgpack", "envelope",
 * "batch" or "event"; idx is written only when has_idx. */
void kvp_dout_error(struct kvp_dout *o, const struct kvp_dout_batch *bc,
                    const char *stage, int has_idx, size_t idx,
                    const char *msg);

/* The batch record (--batches). */
void kvp_dout_batch(struct kvp_dout *o, const struct kvp_dout_batch *bc,
                    const struct kvp_wire_batch *b, int has_rank, int32_t rank);

/* Renders the parts shared by every event record of batch b. Returns 0,
 * or -1 when out of memory. */
int kvp_dout_batch_parts(struct kvp_dout *o, const struct kvp_dout_batch *bc,
                         const struct kvp_wire_batch *b, int has_rank,
                         int32_t rank);

/* Event record idx of the batch last given to kvp_dout_batch_parts(). */
void kvp_dout_event(struct kvp_dout *o, size_t idx,
                    const struct kvp_wire_event *ev);

/* The gap or stale record r describes (nothing for KVP_SEQ_NEXT). */
void kvp_dout_seq(struct kvp_dout *o, const struct kvp_seq_result *r);

/* Writes an opaque value as JSON: nil → null, integers exact, floats
 * with 17 digits, str as JSON strings, bin as {"bin":"<hex>"}, ext as
 * {"ext":TYPE,"hex":"<hex>"}, arrays, maps (non-string keys written as
 * their JSON text in a string). NULL is null. */
void kvp_dout_value(struct kvp_jw *jw, kvp_wire_value v);

#endif
