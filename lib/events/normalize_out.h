/* SPDX-License-Identifier: MIT */
/*
 * normalize_out.h — kv-normalize's output: a struct kvp_nout (normalize.h)
 * written as a Dynamo RouterEvent (docs/spec/kv-events.md §6.4 rule 7, with
 * kvpipe's diagnostics under "x") or as a {"rec":"filtered"} record.
 * Engine-event records come in through event_reader.h.
 */
#ifndef KVP_NORMALIZE_OUT_H
#define KVP_NORMALIZE_OUT_H

#include <stdint.h>

#include "events/normalize.h"

struct kvp_jw;

/* Writes out (an event or a filtered record) as one NDJSON line; "x" has
 * the event's batch time as "ts_ms" when it had one. */
void kvp_nout_write(struct kvp_jw *w, const struct kvp_nout *out);

/* Writes an event as a Dynamo KvRecorder line (lib/llm/src/recorder.rs:
 * {"timestamp": ms, "event": RouterEvent}, no "x"); a filtered record
 * writes nothing (the recorder holds router events only). */
void kvp_nout_write_recorded(struct kvp_jw *w, const struct kvp_nout *out,
                             uint64_t ts_ms);

const char *kvp_ev_type_name(enum kvp_ev_type t);

#endif
