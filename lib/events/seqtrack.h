/* SPDX-License-Identifier: MIT */
/*
 * seqtrack.h — per-stream seq tracking for kv-decode (docs/spec/kv-events.md
 * §6.3): batches of one (topic, dp_rank, worker_id) stream carry
 * increasing seqs; a jump forward is a gap, a seq at or below the highest
 * one seen is stale (a duplicate or a replay). decode_out.h writes the
 * gap and stale records; the decode session decides what a stale batch
 * means (kvp_decode_opts.drop_stale).
 *
 * A struct kvp_seqtrack owns the streams it has seen (their topics are
 * copied) and finds them through a hash table, in constant time: memory
 * grows with the number of distinct streams (about 80 bytes each plus the
 * topic; decode_in.h caps a topic at KVP_DIN_MAX_TOPIC bytes), never with
 * the number of batches. Nothing here prints.
 */
#ifndef KVP_SEQTRACK_H
#define KVP_SEQTRACK_H

#include <stddef.h>
#include <stdint.h>

#include "common/u64set.h"

/* One (topic, dp_rank, worker_id) stream and its highest seq. */
struct kvp_seq_stream {
	char *topic; /* NUL-terminated copy */
	size_t topic_len;
	int has_rank;
	int32_t rank;
	uint64_t worker;
	uint64_t watermark;
};

struct kvp_seqtrack {
	struct kvp_seq_stream *streams;
	size_t n_streams, cap_streams;
	struct kvp_u64set find;    /* stream key -> index */
	struct kvp_u64set restart; /* (topic, worker) keys of restarts */
};

enum kvp_seq_verdict {
	KVP_SEQ_NEXT,    /* the next seq, or a new stream (no record) */
	KVP_SEQ_GAP,     /* seqs were skipped: a gap record */
	KVP_SEQ_STALE,   /* at or below the watermark: a stale record */
	KVP_SEQ_RESTART, /* the first batch after a restart: a restart
	                    record (expected is the old watermark + 1) */
};

/* What kvp_seqtrack_next() found; stream points into the tracker and is
 * valid until the next call. */
struct kvp_seq_result {
	enum kvp_seq_verdict verdict;
	const struct kvp_seq_stream *stream;
	uint64_t expected, got;
};

void kvp_seqtrack_init(struct kvp_seqtrack *t);
void kvp_seqtrack_fini(struct kvp_seqtrack *t);

/*
 * Records seq for the stream (topic[0, topic_len), rank when has_rank,
 * worker) and fills *r. A new stream starting above 0 is a gap only when
 * gap_at_start (Dynamo's indexer replays [0, seq)). A stale seq leaves the
 * watermark as it is. Returns 0, or -1 when out of memory.
 */
int kvp_seqtrack_next(struct kvp_seqtrack *t, const char *topic,
                      size_t topic_len, int has_rank, int32_t rank,
                      uint64_t worker, uint64_t seq, int gap_at_start,
                      struct kvp_seq_result *r);

/*
 * The publisher of the streams with this topic and worker started again
 * (kv-capture's restart line): the next batch of such a stream, whatever
 * its dp_rank, starts its tracking afresh (KVP_SEQ_RESTART, or as a new
 * stream when none was seen). Returns 0, or -1 when out of memory.
 */
int kvp_seqtrack_restart(struct kvp_seqtrack *t, const char *topic,
                         size_t topic_len, uint64_t worker);

#endif
