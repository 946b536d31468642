/* SPDX-License-Identifier: MIT */
/*
 * capture.h — kv-capture's session: subscribe to engines' ZMQ KV-event
 * publishers (docs/spec/kv-events.md §1) and write the capture JSONL kv-decode
 * reads (§5), per stream in seq order with each seq once.
 *
 * A stream is one SUB socket: one --endpoint address (and DP rank), or one
 * --bind address that publishers connect to. When a stream's seq jumps,
 * its later live messages are held while the missing range is asked of
 * the replay endpoint (a DEALER sending ["", start]); replies of either
 * shape (["", seq, payload] or ["", topic, seq, payload]) are accepted by
 * frame count, up to the end marker (seq 0xff x 8, empty payload). A range
 * the publisher no longer has, or one not answered in time, becomes a
 * {"rec":"lost",...} line. Duplicates are dropped and counted; a seq going
 * backwards starts a new epoch.
 *
 * libzmq is used only here (cap_zmq.c). Nothing here prints: notices go
 * to the caller's kvp_cap_note_fn, records to the FILE * the caller owns
 * (kvp_cap_set_output), through common/jsonw.
 */
#ifndef KVP_CAPTURE_H
#define KVP_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"

#define KVP_CAP_ADDR_MAX 256

/* One --endpoint or --bind, as parsed:
 * ADDR[,replay=ADDR][,worker=ID][,dp=RANK|A-B]. */
struct kvp_cap_spec {
	char addr[KVP_CAP_ADDR_MAX];
	char replay[KVP_CAP_ADDR_MAX]; /* "" when there is none */
	uint64_t worker;
	int has_worker;
	int has_dp;
	uint32_t dp_lo, dp_hi;
	int bind; /* listen for connecting publishers */
};

/* Parses s; KVP_OK, or KVP_BAD with d saying what is wrong. */
int kvp_cap_parse_spec(const char *s, int bind, struct kvp_cap_spec *sp,
                       struct kvp_diag *d);

struct kvp_cap_opts {
	const char *topic;          /* subscription prefix; NULL or "": all */
	int from_start;             /* replay from seq 0 before going live */
	unsigned replay_timeout_ms; /* 0: 2000 */
	uint64_t count;             /* stop after this many lines; 0: never */
	size_t max_line;            /* longest line written; 0: 64 MiB */
	size_t max_held_bytes;      /* 0: 256 MiB */
	size_t max_held_msgs;       /* 0: 2^20 */
	unsigned stop_timeout_ms;   /* writing what is queued at a stop; 0:
	                               5000 */
	int hash_strings;
	int unbuffered;
};

/* Per-stream counters (the progress line and the summary). */
struct kvp_cap_stats {
	uint64_t live, replayed; /* messages received */
	uint64_t written_live, written_replay;
	uint64_t events, bytes; /* of the written batches */
	uint64_t dups, bad;     /* dropped */
	uint64_t gaps, filled;  /* gaps seen, seqs replay filled */
	uint64_t lost_ranges, lost_seqs;
	uint64_t epochs;    /* restarts seen */
	uint64_t mixed;     /* written as they came: publishers interleave */
	uint64_t unwritten; /* taken at the stop, not written (lost) */
	uint64_t unsaved;   /* lines written but not in the output (a write
	                       error), taken back from the counts above */
	int shape;          /* replay frames: 0 none yet, 3, 4 */
};

/* A notice about stream (its address) for the front end to print. */
typedef void (*kvp_cap_note_fn)(void *ctx, const char *stream, const char *msg);

struct kvp_cap;

struct kvp_cap *kvp_cap_new(const struct kvp_cap_opts *o, kvp_cap_note_fn fn,
                            void *ctx, struct kvp_diag *d);
void kvp_cap_free(struct kvp_cap *c);

/* Adds the streams of one spec (one per DP rank) and opens their sockets.
 * KVP_OK, KVP_BAD (an address libzmq refuses) or KVP_FAIL. */
int kvp_cap_add(struct kvp_cap *c, const struct kvp_cap_spec *sp,
                struct kvp_diag *d);

/* Where lines go from now on (the caller may switch files between
 * calls: lines are written whole). */
void kvp_cap_set_output(struct kvp_cap *c, FILE *f);

/* Rotation: once lines of at least bytes have gone to the current FILE *,
 * fn(ctx) is called between two lines and returns the next FILE * (the
 * caller closes the old one), or NULL after a failure it reported (then
 * kvp_cap_poll returns KVP_FAIL). */
typedef FILE *(*kvp_cap_rotate_fn)(void *ctx);
void kvp_cap_set_rotate(struct kvp_cap *c, uint64_t bytes, kvp_cap_rotate_fn fn,
                        void *ctx);

/* What reached the output: fn(ctx) returns the whole lines the output
 * files hold so far, all parts together (lost and restart lines
 * included). Lines not known to be there are kept track of until then. */
typedef uint64_t (*kvp_cap_saved_fn)(void *ctx);
void kvp_cap_set_saved(struct kvp_cap *c, kvp_cap_saved_fn fn, void *ctx);

/* At the end, once the caller closed the output and knows that the files
 * hold lines whole lines: the lines written after those are taken back
 * from their streams' counters (written, events, bytes) and counted as
 * unsaved, so that the counters say what is in the files. */
void kvp_cap_settle(struct kvp_cap *c, uint64_t lines);

/* Sends the --from-start replay requests. */
int kvp_cap_start(struct kvp_cap *c, struct kvp_diag *d);

/* Waits at most timeout_ms for messages and handles what came (and any
 * replay deadline). KVP_OK; KVP_END once --count lines are written;
 * KVP_FAIL on a write error (errno) or a libzmq failure (d). An
 * interrupted wait (a signal) returns KVP_OK early. */
int kvp_cap_poll(struct kvp_cap *c, long timeout_ms, struct kvp_diag *d);

/* Stopping: writes the messages already queued until none is left, for
 * at most stop_timeout_ms (or until kvp_cap_abort()); then takes what is
 * still queued without writing it (for at most a second) and counts it as
 * lost; ends pending replays (the missing ranges become lost lines),
 * writes every held message, then one lost line per stream for what was
 * taken and not written. KVP_OK or KVP_FAIL (write error). */
int kvp_cap_finish(struct kvp_cap *c, struct kvp_diag *d);

/* Cuts kvp_cap_finish's writing of the queue short. Only sets a flag, so
 * a signal handler may call it. */
void kvp_cap_abort(struct kvp_cap *c);

/* 1 once writing a line failed (kvp_cap_poll or kvp_cap_finish returned
 * KVP_FAIL for it; the FILE * has the error). */
int kvp_cap_write_failed(const struct kvp_cap *c);

/* Lines written (messages, not lost records). */
uint64_t kvp_cap_written(const struct kvp_cap *c);

size_t kvp_cap_n_streams(const struct kvp_cap *c);
/* Stream i's counters and address. */
const struct kvp_cap_stats *kvp_cap_stream(const struct kvp_cap *c, size_t i,
                                           const char **name);

/* libzmq's version, for --version. */
const char *kvp_cap_zmq_version(void);

#endif
