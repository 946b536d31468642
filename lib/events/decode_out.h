/* SPDX-License-Identifier: MIT */
/*
 * decode_out.h — kv-decode's output records: event, batch, error, gap and
 * stale records (spec-kv-events.md §6.3, kvpipe-records(5)), and the
 * per-stream seq tracking that produces gap and stale records.
 *
 * A struct kvp_dout writes to a FILE it borrows (the caller opens and
 * closes it and checks ferror()); it owns the event-record buffer, the
 * memory stream the per-batch parts are rendered into, and the table of
 * streams seen so far. kvp_dout_fini() frees them.
 *
 * Use, per batch decoded by lib/wire.h:
 *
 *	kvp_dout_track_seq(o, bc, ...)      gap/stale records (when tracked);
 *	kvp_dout_batch(o, bc, &b, ...)      the optional batch record;
 *	kvp_dout_batch_parts(o, bc, &b, ..) once, before the batch's events;
 *	kvp_dout_event(o, i, &ev)           one record per decoded event;
 *	kvp_dout_error(o, bc, ...)          an error record for a bad one.
 *
 * Event records are assembled in a buffer and written with one fwrite;
 * the bytes are the same as the struct kvp_jw writer would produce.
 *
 * Nothing here prints to stderr or exits: failures return -1 (errno set
 * by the failing allocation or stdio call); the caller reports them.
 */
#ifndef KVP_DECODE_OUT_H
#define KVP_DECODE_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/jsonw.h"
#include "common/ndjson.h"
#include "events/wire.h"

struct json_object;

/* What the output records say about the batch being decoded. Borrowed:
 * topic, source and capture must outlive the calls that take it. */
struct kvp_dout_batch {
	int has_seq;
	uint64_t seq;
	const char *topic; /* not NUL-terminated */
	size_t topic_len;
	const char *source; /* NULL: null */
	uint64_t worker;
	struct json_object *capture; /* capture line (for x_capture), or NULL */
};

/* One (topic, dp_rank, worker_id) stream and its highest seq. */
struct kvp_dout_stream {
	char *topic;
	size_t topic_len;
	int has_rank;
	int32_t rank;
	uint64_t worker;
	uint64_t watermark;
};

struct kvp_dout {
	FILE *out;
	struct kvp_jw jw;
	/* Per-batch parts of every event record, rendered once per batch:
	 * prefix = {"rec":"event",...,"worker_id":W  and suffix = the
	 * x_envelope_extra / x_capture members (",..." or empty). */
	char *prefix, *suffix;
	size_t prefix_len, suffix_len, prefix_cap, suffix_cap;
	struct kvp_dout_stream *streams;
	size_t n_streams, cap_streams;
};

/* Returns 0 (nothing here can fail yet; d is kept for the contract). */
int kvp_dout_init(struct kvp_dout *o, FILE *out, int hash_strings,
                  int unbuffered, struct kvp_diag *d);
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

/* Seq tracking for bc's stream (bc->seq must be set): writes a gap record
 * (also for a new stream starting above 0 when gap_at_start) or a stale
 * record. Returns 1 when the batch is stale and drop_stale says to skip
 * it, 0 otherwise, -1 on allocation failure. */
int kvp_dout_track_seq(struct kvp_dout *o, const struct kvp_dout_batch *bc,
                       int has_rank, int32_t rank, int gap_at_start,
                       int drop_stale);

#endif
