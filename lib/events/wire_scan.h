/* SPDX-License-Identifier: MIT */
/*
 * wire_scan.h — the msgpack scanner: finds where one msgpack object ends
 * and vets every length it claims against the bytes present, before
 * anything is read or allocated. lib/events/wire.h reads only payloads
 * this scanner accepted; lib/events/wire_stream.h splits raw streams with
 * it. Nothing here allocates or prints.
 */
#ifndef KVP_WIRE_SCAN_H
#define KVP_WIRE_SCAN_H

#include <stddef.h>

#include "common/diag.h"

/* Deepest container nesting accepted (msgpack-c's own parser limit). */
#define KVP_WIRE_MAX_DEPTH 32

/*
 * Checks that buf[0, len) starts with one complete msgpack object whose
 * headers are all plausible. Returns its size (> 0); 0 if more bytes are
 * needed and final is 0 (no length claim exceeds max_claim); or -1 with d
 * set: an invalid byte, a claim beyond the bytes present (when final) or
 * beyond max_claim, nesting deeper than KVP_WIRE_MAX_DEPTH. d->col is the
 * 0-based byte offset of the problem.
 */
long long kvp_wire_scan(const void *buf, size_t len, size_t max_claim,
                        int final, struct kvp_diag *d);

#endif
