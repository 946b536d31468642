/* SPDX-License-Identifier: MIT */
/*
 * normalize_io.h — kv-normalize's record forms: a kv-decode event record
 * (kvpipe-records(5), spec-kv-events.md §6.3) into a struct kvp_nev, and a
 * struct kvp_nout out as a Dynamo RouterEvent (§6.4 rule 7) or a filtered
 * record.
 *
 * Ownership: kvp_nev_from_json() borrows the json-c object: the strings in
 * the event point into it, so the object must outlive the event's use. The
 * arrays live in the caller's struct kvp_nev_buf (reused across records,
 * freed by kvp_nev_buf_fini()).
 */
#ifndef KVP_NORMALIZE_IO_H
#define KVP_NORMALIZE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/jsonw.h"
#include "common/ndjson.h"
#include "events/normalize.h"

struct json_object;

struct kvp_nev_buf {
	uint64_t *hashes;
	size_t cap_hashes;
	uint64_t *tokens;
	size_t cap_tokens;
	size_t *mm_start, *mm_count;
	size_t cap_mb;
	uint64_t *mm;
	size_t cap_mm;
};

void kvp_nev_buf_init(struct kvp_nev_buf *b);
void kvp_nev_buf_fini(struct kvp_nev_buf *b);

/*
 * Fills ev from one record. Returns 0 for an event, 1 for another kind of
 * kv-decode record ("batch", "error", "gap", "stale": not events, skipped),
 * or -1 with d set when the record is not a valid kv-decode event (missing
 * key, wrong type, out-of-range value).
 */
int kvp_nev_from_json(const struct json_object *rec, struct kvp_nev_buf *b,
                      struct kvp_nev *ev, struct kvp_diag *d);

/*
 * Fast path for the common record shape: fills ev straight from the line
 * (len bytes, NUL-terminated, writable: string values are NUL-terminated in
 * place, so the line must not be reused after a 0 return). Returns 0 with ev
 * filled exactly as kvp_nev_from_json() would fill it, or 1 to decline:
 * anything unusual (escapes, non-ASCII, floats in integer keys, nested
 * values, hashes as strings, duplicate keys, another record kind, any
 * error) is left to the json-c path, which also words the error messages.
 */
int kvp_nev_from_line(char *line, size_t len, struct kvp_nev_buf *b,
                      struct kvp_nev *ev);

/*
 * A reader of record lines: the fast path, falling back to json-c. The event
 * filled by kvp_nev_reader_line() borrows from the line and from the
 * reader, and stays valid until the next call or kvp_nev_reader_fini().
 * Returns 0 for an event, 1 for a skipped kv-decode record, -1 with d set
 * (d->col: byte offset for invalid JSON) for a bad record, -2 on OOM.
 */
struct kvp_nev_reader {
	struct kvp_nev_buf buf;
	struct json_tokener *tok;
	struct json_object *last; /* owned: the fallback's parsed record */
	uintmax_t fast, slow;     /* records taken by each path */
};

int kvp_nev_reader_init(struct kvp_nev_reader *r);
void kvp_nev_reader_fini(struct kvp_nev_reader *r);
int kvp_nev_reader_line(struct kvp_nev_reader *r, char *line, size_t len,
                        struct kvp_nev *ev, struct kvp_diag *d);

/* Writes out (an event or a filtered record) as one NDJSON line. */
void kvp_nout_write(struct kvp_jw *w, const struct kvp_nout *out);

const char *kvp_ev_type_name(enum kvp_ev_type t);

#endif
