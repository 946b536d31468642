/* SPDX-License-Identifier: MIT */
/*
 * wire.h — KV-event batch decoding (vLLM and SGLang shapes) from msgpack.
 * The only module that includes <msgpack.h>.
 *
 * A struct kvp_wire holds one batch payload (its bytes, checked by
 * kvp_wire_scan() and then read in place by a small cursor reader that
 * types values exactly as msgpack-c does) and the scratch buffers events
 * are decoded into. Raw streams are buffered and split by msgpack-c's
 * unpacker. Use:
 *
 *	kvp_wire_load(w, buf, len, &d)        one payload held in memory, or
 *	kvp_wire_stream_next(s, w, &off, &d)  the next batch of a raw stream;
 *	kvp_wire_envelope(w, strict, &b, &d)  the batch envelope;
 *	kvp_wire_event(w, &b, i, &ev, &d)     event i of it, 0 <= i <
 *b.n_events.
 *
 * Everything an event or batch points at (strings, hash and token arrays,
 * opaque values) is owned by w and stays valid until the next load,
 * stream_next or kvp_wire_event call on the same w.
 *
 * Decoding rules: spec-kv-events.md §2 and §6.2. Memory is bounded by the
 * payload size: before a payload is read, every header and body is
 * checked against the bytes that remain, so a header claiming 2^32
 * elements in a 20-byte input is an error, not an allocation.
 *
 * Nothing here prints: failures return -1 with a struct kvp_diag filled.
 */
#ifndef KVP_WIRE_H
#define KVP_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"

struct kvp_jw;

/* Version of the linked msgpack-c, for --version. */
const char *kvp_wire_lib_version(void);

/* Deepest container nesting accepted (msgpack-c's own parser limit). */
#define KVP_WIRE_MAX_DEPTH 32

enum kvp_wire_type {
	KVP_WIRE_STORED,
	KVP_WIRE_REMOVED,
	KVP_WIRE_CLEARED,
	KVP_WIRE_IGNORED,
};

enum kvp_wire_enc {
	KVP_WIRE_ARRAY,
	KVP_WIRE_MAP,
};

/* Bits of hash_repr: which wire forms the event's hashes used. */
enum {
	KVP_REPR_UINT = 1, /* non-negative integer */
	KVP_REPR_INT = 2,  /* negative integer (two's complement) */
	KVP_REPR_BIN = 4,  /* bin: last <= 8 bytes big-endian */
};

/* A string borrowed from the payload (not NUL-terminated). present is 0
 * when the field was absent or nil, 1 when set; in unknown[] it is 2 for a
 * key of SGLang's position-7 metadata map. */
struct kvp_wire_str {
	const char *p;
	size_t len;
	int present;
};

/* An opaque msgpack value (for extra_keys and the like); NULL when absent
 * or nil. Write it with kvp_wire_write_value(). */
typedef const void *kvp_wire_value;

enum kvp_wire_ts_kind {
	KVP_WIRE_TS_FLOAT,
	KVP_WIRE_TS_UINT,
	KVP_WIRE_TS_INT,
};

struct kvp_wire_batch {
	enum kvp_wire_enc enc;
	enum kvp_wire_ts_kind ts_kind;
	double ts; /* always set */
	uint64_t ts_u;
	int64_t ts_i;
	int has_rank; /* 0: absent (2-element envelope) or nil */
	int32_t rank;
	size_t n_events;
	size_t extra;      /* surplus envelope elements or unknown map keys */
	size_t n_elements; /* array envelope length (0 for a map) */
	size_t bytes;      /* payload size */
	const void *events_;
};

struct kvp_wire_event {
	enum kvp_wire_type type;
	enum kvp_wire_enc enc;

	uint64_t *hashes;
	size_t n_hashes;
	int has_parent;
	uint64_t parent;
	unsigned hash_repr; /* KVP_REPR_* bits; 0 when there is no hash */

	uint64_t *tokens;
	size_t n_tokens;
	int bigram;         /* token_ids came as [[t0,t1],[t1,t2],...] */
	size_t wide_tokens; /* values > 0xFFFFFFFF */

	int has_block_size;
	uint32_t block_size;
	int has_lora_id;
	int64_t lora_id;
	struct kvp_wire_str lora_name, medium, cache_salt, session_id;
	kvp_wire_value extra_keys;

	int has_group_idx;
	uint32_t group_idx;
	struct kvp_wire_str kind;
	int has_sliding_window;
	uint32_t sliding_window;
	struct kvp_wire_str locality, source_kind, ownership;
	kvp_wire_value block_mm_infos;

	size_t surplus; /* positional elements past the known layout */
	/* Map keys this decoder does not know, in wire order (present == 2
	 * marks a metadata-map key). */
	struct kvp_wire_str *unknown;
	size_t n_unknown;
};

struct kvp_wire;

struct kvp_wire *kvp_wire_new(void);
void kvp_wire_free(struct kvp_wire *w);

/*
 * Parses buf[0, len) as exactly one msgpack object (a batch). Returns 0, or
 * -1 with d set: invalid or truncated msgpack, trailing bytes, a container
 * claiming more elements than bytes remain, nesting deeper than
 * KVP_WIRE_MAX_DEPTH. d->col is the 0-based byte offset of the problem.
 * The batch is read in place: buf must stay valid and unchanged while its
 * envelope and events are decoded and written.
 */
int kvp_wire_load(struct kvp_wire *w, const void *buf, size_t len,
                  struct kvp_diag *d);

/*
 * Decodes the loaded object's envelope (§6.2.2): an array [ts, events,
 * rank?, extra...] of 2 or more elements, or a map {ts, events,
 * data_parallel_rank|attn_dp_rank|dp_rank}. With strict set, only
 * Dynamo's 3-tuple is accepted (a 2-element, longer or map envelope is an
 * error). Returns 0 or -1 with d set.
 */
int kvp_wire_envelope(struct kvp_wire *w, int strict, struct kvp_wire_batch *b,
                      struct kvp_diag *d);

/* Decodes event idx of b (§6.2.3–7). Returns 0 or -1 with d set (the
 * message does not name the index; the caller does). */
int kvp_wire_event(struct kvp_wire *w, const struct kvp_wire_batch *b,
                   size_t idx, struct kvp_wire_event *ev, struct kvp_diag *d);

/* Writes an opaque value as JSON: nil → null, integers exact, floats
 * with 17 digits, str as JSON strings, bin as {"bin":"<hex>"}, ext as
 * {"ext":TYPE,"hex":"<hex>"}, arrays, maps (non-string keys written as
 * their JSON text in a string). */
void kvp_wire_write_value(struct kvp_jw *jw, kvp_wire_value v);

/* Writes the loaded object itself as JSON (same rules). */
void kvp_wire_write_root(struct kvp_jw *jw, const struct kvp_wire *w);

/* ---- raw streams of concatenated batches -------------------------------- */

/*
 * Reads f with a msgpack_unpacker, never holding more than one batch
 * (plus one read chunk) in memory. A batch larger than max_bytes is an
 * error.
 */
struct kvp_wire_stream;

struct kvp_wire_stream *kvp_wire_stream_new(FILE *f, size_t max_bytes);
void kvp_wire_stream_free(struct kvp_wire_stream *s);

/*
 * Loads the next batch of the stream into w. *offset is set to the batch's
 * 0-based byte offset in the stream, *size to its length in bytes. Returns 1
 * (loaded), 0 (clean end of input), -1 (bad data: invalid, truncated or
 * oversized msgpack; the stream cannot be resynchronised, so the caller stops
 * reading it; d set) or -2 (read error; errno is set).
 */
int kvp_wire_stream_next(struct kvp_wire_stream *s, struct kvp_wire *w,
                         uint64_t *offset, size_t *size, struct kvp_diag *d);

/* Checks that buf[0, len) starts with one complete msgpack object whose
 * container headers are all plausible. Returns its size (> 0), 0 if
 * more bytes are needed (no claim exceeds max_claim), or -1 with d set. */
long long kvp_wire_scan(const void *buf, size_t len, size_t max_claim,
                        int final, struct kvp_diag *d);

#endif
