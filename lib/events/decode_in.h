/* SPDX-License-Identifier: MIT */
/*
 * decode_in.h — kv-decode's input framing (spec-kv-events.md §6.1):
 * format detection, length-prefixed ZMQ frame messages, and the fast
 * locator of a capture line's payload_b64. The batches themselves are
 * decoded by lib/wire.h; raw msgpack streams are split there too.
 *
 * A struct kvp_din_frames reads from a FILE it borrows and owns the
 * buffers of the last message's first four frames: what
 * kvp_din_frames_next() returns points into them and stays valid until
 * the next call or kvp_din_frames_fini().
 *
 * Nothing here prints or exits: results are status codes, with a struct
 * kvp_diag filled for bad input.
 */
#ifndef KVP_DECODE_IN_H
#define KVP_DECODE_IN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"

struct json_object;

enum kvp_din_format {
	KVP_DIN_AUTO,
	KVP_DIN_JSONL,
	KVP_DIN_FRAMES,
	KVP_DIN_RAW,
};

/* Peeks at the first byte of f (pushed back): 0x00 is frames, a msgpack
 * array or map header is raw, anything else (and empty input) JSONL. */
enum kvp_din_format kvp_din_detect(FILE *f);

/*
 * Fast path for capture lines: finds the top-level "payload_b64" string
 * value (its content spans line[*s, *e)) so that it can be decoded
 * straight from the line and cut out before the (then small) object is
 * parsed. Returns 0 whenever anything is unusual (the key nested, twice,
 * not followed by a plain string): the caller then parses the whole line.
 */
int kvp_din_find_payload(const char *line, size_t len, size_t *s, size_t *e);

/* The fields of a capture JSONL line (spec-kv-events.md §6.1), borrowed
 * from the parsed object. */
struct kvp_din_capture {
	int has_seq; /* set as soon as seq was read, also on failure */
	uint64_t seq;
	const char *topic; /* "" when absent; not NUL-terminated */
	size_t topic_len;
	const char *source; /* NULL when absent or null */
	uint64_t worker;    /* left as given unless the line has worker_id */
	int has_plen;
	uint64_t plen;   /* payload_len */
	const char *b64; /* payload_b64 */
	size_t b64_len;
};

/* Reads the fields of capture line o into *cap (whose worker holds the
 * default). Returns 0, or -1 with d filled. */
int kvp_din_capture(struct json_object *o, struct kvp_din_capture *cap,
                    struct kvp_diag *d);

/* Messages with more frames than this cannot be resynchronised. */
#define KVP_DIN_MAX_FRAMES 64

struct kvp_din_frame {
	unsigned char *p;
	size_t len, cap;
};

struct kvp_din_frames {
	FILE *f;
	size_t max_frame; /* larger frames are skipped and reported */
	uint64_t off;     /* bytes consumed */
	struct kvp_din_frame fr[4];
};

/* One message. start is its byte offset; has_seq/seq are set once the
 * sequence frame was read (also for some bad messages). */
struct kvp_din_msg {
	uint64_t start;
	int has_seq;
	uint64_t seq;
	const char *topic; /* "" when empty; not NUL-terminated */
	size_t topic_len;
	const char *source; /* "replay" for a 4-frame message, else NULL */
	const unsigned char *payload;
	size_t len;
};

enum {
	KVP_DIN_EOF = 0,    /* end of input */
	KVP_DIN_MSG = 1,    /* *m holds a message */
	KVP_DIN_BAD = -1,   /* bad message (d says why); reading can go on */
	KVP_DIN_FATAL = -2, /* bad input (d says why); cannot resynchronise */
	KVP_DIN_IOERR = -3, /* read error (errno set) */
	KVP_DIN_NOMEM = -4, /* out of memory */
};

void kvp_din_frames_init(struct kvp_din_frames *r, FILE *f, size_t max_frame);
void kvp_din_frames_fini(struct kvp_din_frames *r);

/* The next message; a replay's end marker (empty payload, seq 2^64-1) is
 * skipped. Returns one of KVP_DIN_*. */
int kvp_din_frames_next(struct kvp_din_frames *r, struct kvp_din_msg *m,
                        struct kvp_diag *d);

#endif
