/* SPDX-License-Identifier: MIT */
/*
 * wire_stream.h — raw msgpack streams (concatenated batches, no framing)
 * split into batches at the object boundaries kvp_wire_scan() finds: no
 * object tree is built (msgpack-c, linked here only for its version string,
 * stays the fuzz oracle in tests/fuzz/fuzz_wire.c). Each batch is loaded
 * into a struct kvp_wire (wire.h) in place.
 *
 * A struct kvp_wire_stream reads from a FILE it borrows and holds one buffer
 * of at most about twice the largest batch (at least 64 KiB). Nothing here
 * prints.
 */
#ifndef KVP_WIRE_STREAM_H
#define KVP_WIRE_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/diag.h"
#include "events/wire.h"

struct kvp_wire_stream;

/* A batch larger than max_bytes is an error; max_flag, when set, is the
 * option the front end sets max_bytes with, cited in that message. NULL
 * on allocation failure. */
struct kvp_wire_stream *kvp_wire_stream_new(FILE *f, size_t max_bytes,
                                            const char *max_flag);
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

#endif
