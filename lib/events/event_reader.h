/* SPDX-License-Identifier: MIT */
/*
 * event_reader.h — the engine-event reader: a kv-decode event record
 * (kvpipe-records(5), docs/spec/kv-events.md §6.3) into a struct kvp_nev, the
 * normalizer's input; and Dynamo's per-block multimodal info
 * (block_mm_infos), which kv-hash reads from the same records.
 *
 * Records are read by one field table: a strict scanner over the line's
 * text (lib/common/jscan.h) for the usual shape, and json-c for the rest;
 * both hand the fields to the same checks, in the same order, so results
 * and messages do not depend on the path.
 *
 * Ownership: kvp_event_reader_from_json() borrows the json-c object: the
 * strings in the event point into it, so the object must outlive the event's
 * use. The arrays live in the caller's struct kvp_event_reader_buf (reused
 * across records, freed by kvp_event_reader_buf_fini()). Nothing here prints.
 */
#ifndef KVP_EVENT_READER_H
#define KVP_EVENT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/jskel.h"
#include "events/normalize.h"

struct json_object;
struct json_tokener;

/* ---- block_mm_infos ------------------------------------------------------ */

/* Per-block multimodal hashes: block i has mm[start[i] .. start[i] +
 * count[i]), for i < n_blocks. Buffers are reused across records. */
struct kvp_event_reader_blockmm {
	size_t n_blocks;
	size_t *start, *count;
	size_t cap_blocks;
	uint64_t *mm;
	size_t n_mm, cap_mm;
};

void kvp_event_reader_blockmm_init(struct kvp_event_reader_blockmm *m);
void kvp_event_reader_blockmm_fini(struct kvp_event_reader_blockmm *m);

/*
 * Reads rec's "block_mm_infos": an array whose element i is null or
 * {"mm_objects":[{"mm_hash":u64, ...}, ...]} for block i; mm_hash may be
 * a decimal or 0x-hex string. Elements past max_blocks are not read.
 * Returns 1 with m filled, 0 when the key is absent or null (m->n_blocks
 * is then 0), or -1 with d set.
 */
int kvp_event_reader_blockmm_read(const struct json_object *rec,
                                  size_t max_blocks,
                                  struct kvp_event_reader_blockmm *m,
                                  struct kvp_diag *d);

/* ---- event records ------------------------------------------------------- */

struct kvp_event_reader_buf {
	uint64_t *hashes;
	size_t cap_hashes;
	uint64_t *tokens;
	size_t cap_tokens;
	uint64_t *offsets; /* block_offsets */
	size_t cap_offsets;
	struct kvp_event_reader_blockmm mm;
};

void kvp_event_reader_buf_init(struct kvp_event_reader_buf *b);
void kvp_event_reader_buf_fini(struct kvp_event_reader_buf *b);

/*
 * Fills ev from one record. Returns 0 for an event, 1 for another kind of
 * kv-decode record ("batch", "error", "gap", "stale": not events, skipped),
 * or -1 with d set when the record is not a valid kv-decode event (missing
 * key, wrong type, out-of-range value).
 */
int kvp_event_reader_from_json(const struct json_object *rec,
                               struct kvp_event_reader_buf *b,
                               struct kvp_nev *ev, struct kvp_diag *d);

/*
 * Fast path for the common record shape: fills ev straight from the line
 * (len bytes, NUL-terminated, writable: string values are NUL-terminated in
 * place, so the line must not be reused after a 0 return). Returns 0 with ev
 * filled exactly as kvp_event_reader_from_json() would fill it, or 1 to
 * decline: anything unusual (escapes, non-ASCII, floats in integer keys,
 * nested values, hashes as strings, duplicate keys, multimodal info, another
 * record kind, any error) is left to the json-c path, which words the error
 * messages.
 */
int kvp_event_reader_from_line(char *line, size_t len,
                               struct kvp_event_reader_buf *b,
                               struct kvp_nev *ev);

/*
 * A reader of record lines: the fast path, falling back to json-c. The
 * fallback keeps json-c's tree small: a line (of skel.min bytes or
 * more) the scanner can tell is bad
 * (not an object, cut short, trailing data, an integer out of range) is
 * rejected with json-c's words without a tree (kvp_json_check_line()), and
 * json-c parses a copy of any other object in which token_ids and
 * block_hashes are [] (read here, with the json-c path's checks and
 * messages) and the containers nobody reads (values of unknown keys, or
 * given for a scalar key, whose type alone counts) are empty. Only
 * extra_keys, block_mm_infos and block_hashes_sha256, string escapes in keys
 * and what the scanner cannot tell leave a big tree (about 40 bytes a small
 * integer). The event filled by kvp_event_reader_line() borrows from the line
 * and from the reader, and stays valid until the next call or
 * kvp_event_reader_fini(). Returns 0 for an event, 1 for a skipped kv-decode
 * record, -1 with d set (d->col: byte offset for invalid JSON) for a bad
 * record, -2 on OOM.
 */
struct kvp_event_reader {
	struct kvp_event_reader_buf buf;
	struct json_object *last; /* owned: the fallback's parsed record */
	uintmax_t fast, slow;     /* records taken by each path */
	struct kvp_jskel skel;    /* the fallback's line, big arrays out
	                             (skel.min: tests set 0) */
};

/* r must not move after this (its skeleton reader fills r->buf). */
int kvp_event_reader_init(struct kvp_event_reader *r);
void kvp_event_reader_fini(struct kvp_event_reader *r);
int kvp_event_reader_line(struct kvp_event_reader *r, char *line, size_t len,
                          struct kvp_nev *ev, struct kvp_diag *d);

#endif
