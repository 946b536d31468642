/* SPDX-License-Identifier: MIT */
/*
 * decode_in.h — kv-decode's input framing (docs/spec/kv-events.md §6.1): one
 * reader over the three framings (capture JSONL, length-prefixed ZMQ
 * frame messages, raw concatenated msgpack) that hands out batch payloads
 * loaded into a struct kvp_wire, with what the framing says about each
 * (seq, topic, source, worker_id, the capture line). Also its parts:
 * format detection, the fast locator of a capture line's payload_b64, the
 * capture-line fields and the frames reader. The batches are decoded by
 * wire.h; raw streams are split by wire_stream.h.
 *
 * A struct kvp_din reads from a FILE it borrows and owns its buffers: what
 * kvp_din_next() hands out stays valid until the next call or
 * kvp_din_close(). A struct kvp_din_frames likewise owns the buffers of
 * the last message's first four frames.
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
#include "common/jskel.h"
#include "common/ndjson.h"
#include "events/wire.h"

struct json_object;
struct json_tokener;
struct kvp_wire_stream;

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

/* The fields of a capture JSONL line (docs/spec/kv-events.md §6.1), borrowed
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

/* A capture line's extra member whose value json-c did not parse: its key
 * and its value (canonical JSON, copied as it is) in the line. */
struct kvp_din_raw {
	size_t key, klen, val, vlen;
	int dead; /* the key came again later: json-c keeps that value */
};

/* At most this many extra members are kept as text; the rest are
 * parsed. */
#define KVP_DIN_MAX_RAW 64

/* Messages with more frames than this cannot be resynchronised. */
#define KVP_DIN_MAX_FRAMES 64

/* Longest topic accepted (capture line or topic frame): each distinct
 * topic is kept by seq tracking (seqtrack.h) for the whole run, so a
 * longer one is bad data. */
#define KVP_DIN_MAX_TOPIC 4096

struct kvp_din_frame {
	unsigned char *p;
	size_t len, cap;
};

struct kvp_din_frames {
	FILE *f;
	size_t max_frame;     /* larger frames are skipped and reported */
	const char *max_flag; /* cited in that report when set (after init) */
	uint64_t off;         /* bytes consumed */
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
	KVP_DIN_EOF = 0,     /* end of input */
	KVP_DIN_MSG = 1,     /* *m holds a message */
	KVP_DIN_RESTART = 2, /* a capture's restart line: the publisher of
	                        the stream in b (topic, worker) started again */
	KVP_DIN_BAD = -1,    /* bad message (d says why); reading can go on */
	KVP_DIN_FATAL = -2,  /* bad input (d says why); cannot resynchronise */
	KVP_DIN_IOERR = -3,  /* read error (errno set) */
	KVP_DIN_NOMEM = -4,  /* out of memory */
};

void kvp_din_frames_init(struct kvp_din_frames *r, FILE *f, size_t max_frame);
void kvp_din_frames_fini(struct kvp_din_frames *r);

/* The next message; a replay's end marker (empty payload, seq 2^64-1) is
 * skipped. Returns one of KVP_DIN_*. */
int kvp_din_frames_next(struct kvp_din_frames *r, struct kvp_din_msg *m,
                        struct kvp_diag *d);

/* ---- one reader over the three framings -----------------------------------
 */

struct kvp_din_opts {
	enum kvp_din_format format; /* KVP_DIN_AUTO: kvp_din_detect() */
	size_t max_bytes;           /* longest line, frame or raw batch */
	const char *max_flag; /* the option setting max_bytes, cited in the
	                         messages about it; NULL cites none */
	uint64_t worker;      /* worker_id unless a capture line has its own */
};

/* One batch as the framing gives it. Borrowed from the reader. */
struct kvp_din_batch {
	int read;          /* a unit was read (a non-blank or over-long line, a
	                      framed message, a raw batch), good or bad */
	const char *stage; /* what a bad unit is: "line", "frame", "msgpack" */
	int at_offset;     /* located by offset (frames, raw) or line (JSONL) */
	uintmax_t line;
	uint64_t offset;
	int has_seq; /* also for some bad units */
	uint64_t seq;
	const char *topic; /* "" when absent; not NUL-terminated */
	size_t topic_len;
	const char *source; /* NULL when absent */
	uint64_t worker;
	struct json_object *capture; /* the capture line, or NULL */
	const char *extras; /* its other members as one JSON object (x_capture),
	                       or NULL when it has none */
	size_t extras_len;
	int track;   /* per-stream seq tracking applies (not for raw: seq is
	                the batch's ordinal in the stream) */
	int whole;   /* the unit was read whole (a JSON object, a framed
	                message, a raw batch), bad or not */
	size_t size; /* the payload's bytes */
};

struct kvp_din {
	struct kvp_din_opts o;
	int hash_strings; /* x_capture's u64 above 2^53 as strings (set after
	                     kvp_din_open(); 0 by default) */
	FILE *f;
	/* JSONL */
	struct kvp_lines lines;
	struct json_tokener *tok;
	struct json_object *obj; /* the last line's record (owned) */
	unsigned char *buf;      /* its decoded payload */
	size_t buf_cap;
	struct kvp_jskel
	    skel;                /* the line json-c parsed: big containers out
	                            (skel.min: tests set 0 after kvp_din_open()) */
	struct kvp_din_raw *raw; /* the extra members taken out, as text */
	size_t n_raw;
	char *extras; /* the extra members rendered (kvp_din_batch) */
	size_t extras_len, extras_cap;
	/* frames */
	struct kvp_din_frames frames;
	/* raw */
	struct kvp_wire_stream *stream;
	uint64_t ordinal;
};

/* Starts reading f (detecting its format when asked to). Returns 0, or -1
 * when out of memory. */
int kvp_din_open(struct kvp_din *r, FILE *f, const struct kvp_din_opts *o);
void kvp_din_close(struct kvp_din *r);

/*
 * The next batch, loaded into w (kvp_wire_load(); raw batches by
 * kvp_wire_stream_next()), described in *b. Returns one of KVP_DIN_*:
 * MSG, EOF, RESTART (kv-capture's restart line: b->topic and b->worker
 * name the stream; no batch is loaded), BAD (b->stage and d say what;
 * reading can go on), FATAL (the same, but the input cannot be
 * resynchronised), IOERR (errno set) or NOMEM. On BAD and FATAL, d->col is 0
 * but for invalid JSON, where it is the 1-based column in the line as read.
 */
int kvp_din_next(struct kvp_din *r, struct kvp_wire *w, struct kvp_din_batch *b,
                 struct kvp_diag *d);

#endif
