/* SPDX-License-Identifier: MIT */
/*
 * capture_internal.h — what cap_order.c (seq order, holding, the lines)
 * and cap_zmq.c (the sockets) share. Not a public header. cap_zmq.c
 * calls cap_order.c; cap_order.c reaches the sockets only through the
 * transport's callbacks in struct kvp_cap (ask_replay, drop_replay), so the two
 * never call each other in a cycle.
 */
#ifndef KVP_CAPTURE_INTERNAL_H
#define KVP_CAPTURE_INTERNAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "common/jsonw.h"

#define CAP_NO_HI UINT64_MAX

/* A held message: topic then payload in data. */
struct cap_msg {
	uint64_t seq;
	double ts;
	size_t tlen, plen;
	int big; /* too big for a line: only its seq is kept (a lost line) */
	unsigned char data[];
};

/* A line handed to the output and not known to be in the file yet. */
enum { CAP_LINE_LIVE, CAP_LINE_REPLAY, CAP_LINE_OTHER };
struct cap_line {
	uint32_t stream; /* index in kvp_cap.s */
	uint32_t kind;   /* CAP_LINE_* */
	uint64_t bytes, events;
};

struct cap_stream {
	char name[KVP_CAP_ADDR_MAX]; /* the SUB address */
	uint32_t idx;                /* in kvp_cap.s */
	char replay[KVP_CAP_ADDR_MAX];
	int bind;
	uint64_t worker;
	int has_worker;
	int32_t rank;
	int has_rank;
	void *sub, *dealer, *mon;

	/* order */
	int started;
	uint64_t expected; /* next seq to write */
	int has_last_live;
	uint64_t last_live;
	int replaying;
	uint64_t hi;      /* last seq the replay is asked for */
	int64_t deadline; /* ms, monotonic */

	/* held live messages, in arrival order: held[head, head + n) */
	struct cap_msg **held;
	size_t head, n, cap;
	size_t held_bytes;

	char
	    topic[KVP_CAP_ADDR_MAX]; /* the last live topic (3-frame replies) */
	size_t topic_len;
	int has_topic;

	/* live messages taken at the stop but not written (the time bound):
	 * their seqs [left_lo, left_hi] */
	int has_left;
	uint64_t left_lo, left_hi;

	size_t max_frame; /* the largest live frame seen (queue bound) */
	int hwm;          /* the SUB socket's RCVHWM now */

	/* restarts: the last one went back from back_from to back_to; seqs
	 * going on just past back_from meanwhile are a second publisher's
	 * (mixed: from then on lines are written as they come) */
	int has_back, mixed;
	uint64_t back_from, back_to;
	uint64_t since_back;      /* messages since that restart */
	int64_t restart_noted_ms; /* restart notices: one a second */
	int has_restart_noted;
	uint64_t restarts_unnoted;

	int noted_bad, noted_noreplay, noted_gone, noted_big;
	struct kvp_cap_stats st;
};

struct kvp_cap {
	struct kvp_cap_opts o;
	kvp_cap_note_fn note;
	void *note_ctx;
	struct kvp_jw jw;
	FILE *out;
	void *zctx;
	struct cap_stream **s;
	size_t n, cap;
	uint64_t written;
	uint64_t rotate, part_bytes;
	kvp_cap_rotate_fn rotate_fn;
	void *rotate_ctx;
	/* lines not known to be in the file (kvp_cap_set_saved): ring[head,
	 * head + n) are lines saved_base, saved_base + 1, ... */
	kvp_cap_saved_fn saved_fn;
	void *saved_ctx;
	struct cap_line *ring;
	size_t ring_head, ring_n, ring_cap;
	uint64_t saved_base;
	uint64_t total_in; /* messages taken from every socket */
	void *items;       /* zmq_pollitem_t[3 n] */
	size_t *owner;     /* items[k] is stream owner[k] / 3, socket % 3 */
	int done;          /* --count reached */
	int stopping;      /* no new replays */
	volatile sig_atomic_t abort_now; /* kvp_cap_abort() */
	int failed;
	char scratch[512];
	/* the transport's (cap_zmq.c): sends ["", start] to the stream's
	 * replay endpoint. 0, or -1 when the stream has none or the request
	 * cannot be sent. */
	int (*ask_replay)(struct kvp_cap *c, struct cap_stream *s,
	                  uint64_t start);
	/* the transport's: forgets the stream's replay requests (closes its
	 * DEALER), so that no answer to one given up is ever read: a late
	 * end marker would end the next replay. */
	void (*drop_replay)(struct kvp_cap *c, struct cap_stream *s);
};

int64_t kvp_cap_now_ms_(void);
double kvp_cap_wall_(void);
void kvp_cap_note_(struct kvp_cap *c, struct cap_stream *s, const char *fmt,
                   ...) KVP_PRINTF(3, 4);

/* cap_order.c: a live message, a replayed one, the end of a replay (or
 * its failure: timeout, stop). Return 0, or -1 on a write error. */
int kvp_cap_live_(struct kvp_cap *c, struct cap_stream *s, uint64_t seq,
                  double ts, const void *topic, size_t tlen,
                  const void *payload, size_t plen);
int kvp_cap_replayed_(struct kvp_cap *c, struct cap_stream *s, uint64_t seq,
                      double ts, const void *topic, size_t tlen,
                      const void *payload, size_t plen);
int kvp_cap_replay_end_(struct kvp_cap *c, struct cap_stream *s);
/* At the stop: live message seq taken from the socket and not written
 * (the stop's time bound) is counted, its seq into [left_lo, left_hi]. */
void kvp_cap_taken_(struct cap_stream *s, uint64_t seq);
/* At the stop, after the held messages: the seqs taken but not written
 * (has_left) become a lost line. 0 or -1. */
int kvp_cap_left_(struct kvp_cap *c, struct cap_stream *s);
/* Ends the replay when every seq it was asked for is written. */
int kvp_cap_replay_filled_(struct kvp_cap *c, struct cap_stream *s);
void kvp_cap_stream_free_(struct cap_stream *s);

#endif
