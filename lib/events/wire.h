/* SPDX-License-Identifier: MIT */
/*
 * wire.h — KV-event batches (vLLM and SGLang shapes) decoded from msgpack:
 * the envelope and the events, as C structs. No JSON here (decode_out.h
 * renders records) and no msgpack-c (payloads are read in place by the
 * cursor in events_internal.h; wire_stream.h splits raw streams).
 *
 * A struct kvp_wire holds one batch payload (its bytes, checked by
 * kvp_wire_scan() first) and the scratch buffers events are decoded into.
 * Use:
 *
 *	kvp_wire_load(w, buf, len, &d)        one payload held in memory, or
 *	kvp_wire_stream_next(s, w, ...)       the next batch of a raw stream;
 *	kvp_wire_envelope(w, &b, &d)          the batch envelope;
 *	kvp_wire_event(w, &b, i, &ev, &d)     event i of it, i < b.n_events.
 *
 * Everything an event or batch points at (strings, hash and token arrays,
 * opaque values) is owned by w and stays valid until the next load,
 * stream_next or kvp_wire_event call on the same w.
 *
 * Decoding rules: docs/spec/kv-events.md §2 and §6.2. Memory is bounded by the
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
#include "events/wire_scan.h"

/* Version of the linked msgpack-c, for --version (defined with the raw
 * stream reader, the module that links msgpack-c). */
const char *kvp_wire_lib_version(void);

enum kvp_wire_type {
	KVP_WIRE_STORED,
	KVP_WIRE_REMOVED,
	KVP_WIRE_CLEARED,
	KVP_WIRE_IGNORED,
	KVP_WIRE_INACTIVE,    /* vLLM's BlockInactive (refcount reached 0) */
	KVP_WIRE_THIRD_PARTY, /* a third-party tag (kvp_wire_third_tag()) */
};

/* The third-party fields kv-decode tolerates and counts (never an error;
 * docs/spec/kv-events.md §2.8): three map keys of any event and one event
 * tag. Bit i of kvp_wire_event.third_party is field i. */
enum kvp_wire_third {
	KVP_TP_TOKEN_OFFSET,
	KVP_TP_COMPONENT_ID,
	KVP_TP_SNAPSHOT_VERSION,
	KVP_TP_BLOCK_TRANSFERRED, /* an event tag */
	KVP_TP_COUNT,
};

/* The wire name of third-party field i (< KVP_TP_COUNT). */
const char *kvp_wire_third_name(int i);

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
 * or nil. decode_out.h writes it as JSON (kvp_dout_value()). */
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
	/* SGLang media stores and removals (map form): the full digests, an
	 * array of 64-hex-digit strings, and a store's parent digest */
	kvp_wire_value sha256_hashes;
	struct kvp_wire_str sha256_parent;
	/* vLLM's sparse stores: block_hashes[i] is the block-sized chunk
	 * block_offsets[i] of token_ids; NULL when absent or nil (dense). */
	uint64_t *offsets;
	size_t n_offsets;
	unsigned third_party; /* KVP_TP_* bits seen */
	/* KVP_WIRE_THIRD_PARTY: the tag, and the whole event as a value */
	struct kvp_wire_str tag;
	kvp_wire_value raw;

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
 * data_parallel_rank|attn_dp_rank|dp_rank}. b->bytes is kept. Returns 0
 * or -1 with d set. b->enc and b->n_elements describe the envelope's
 * shape even on failure, so that a caller can apply its own rules on it
 * (Dynamo's: kvp_wire_not_dynamo()).
 */
int kvp_wire_envelope(struct kvp_wire *w, struct kvp_wire_batch *b,
                      struct kvp_diag *d);

/* 1 if Dynamo rejects b's envelope for its shape alone (kv-decode
 * --strict): a map, or an array of 2 or more elements that is not [ts,
 * events, dp_rank]. Shorter arrays and roots that are neither fail
 * kvp_wire_envelope() for their own reason. */
int kvp_wire_not_dynamo(const struct kvp_wire_batch *b);

/* Decodes event idx of b (§6.2.3–7). Returns 0 or -1 with d set (the
 * message does not name the index; the caller does). */
int kvp_wire_event(struct kvp_wire *w, const struct kvp_wire_batch *b,
                   size_t idx, struct kvp_wire_event *ev, struct kvp_diag *d);

/* The loaded object itself, as an opaque value. */
kvp_wire_value kvp_wire_root(const struct kvp_wire *w);

#endif
