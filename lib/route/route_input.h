/* SPDX-License-Identifier: MIT */
/*
 * route_input.h — route-score's input records (spec-route-score.md §6.1),
 * parsed from json-c objects into plain structs.
 *
 * Accepted shapes (kvpipe-records(5), route-score section):
 *  - {"type": "worker"|"remove_worker"|"stored"|"removed"|"cleared"|
 *     "request"|"prefill_done"|"free"|"load", ...}
 *  - Dynamo RouterEvent: {"worker_id", "storage_tier"?, "event":
 *    {"event_id", "dp_rank", "data": {"stored": {...}} | {"removed":
 *    {...}} | "cleared"}} (kv-normalize output, /dump lines); "x" ignored.
 *  - untyped requests: "tokens", mm-expand's "routing_token_ids",
 *    pre-hashed "block_hashes", or Mooncake "hash_ids".
 *  - other kvpipe records ({"rec": ...}) → KVP_RIN_IGNORED.
 * In Mooncake mode every record is a request (hash ids as local hashes).
 *
 * Arrays in the result point into buffers owned by the parser, valid until
 * the next call. Nothing here prints.
 */
#ifndef KVP_ROUTE_INPUT_H
#define KVP_ROUTE_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "common/diag.h"
#include "common/ndjson.h"
#include "route/score.h"

struct json_object;
struct json_tokener;

enum kvp_rin_kind {
	KVP_RIN_IGNORED = 0,
	KVP_RIN_WORKER,
	KVP_RIN_REMOVE_WORKER,
	KVP_RIN_EVENT,
	KVP_RIN_REQUEST,
	KVP_RIN_PREFILL_DONE,
	KVP_RIN_FREE,
	KVP_RIN_LOAD,
};

enum {
	KVP_RIN_BLOCK_SIZE_MISMATCH = 1, /* stored/request: block_size ≠ bs */
	KVP_RIN_TRUNCATED = 2,           /* stored: tokens ran short */
};

struct kvp_rin {
	int kind;
	unsigned flags;
	uint64_t worker_id;
	uint32_t dp_rank, dp_size, dp_start;
	uint64_t prefill_tokens, decode_blocks; /* load */
	struct kvp_event ev;
	struct kvp_request rq;
	/* request id: the JSON value (borrowed from the record) or, when
	 * absent, the line number */
	const struct json_object *id_json;
	uint64_t line_id;
	int has_ts;
	uint64_t ts_ms;
};

struct kvp_rin_parser {
	uint32_t block_size;
	int mooncake;
	uint64_t default_seed; /* from --lora / --namespace */
	uint64_t *ext, *local, *seq, *allowed;
	size_t capext, caplocal, capseq, capallowed;
	uint64_t *tmp;
	size_t captmp;
	uint32_t *tok;
	size_t captok;
	char idbuf[32];
};

void kvp_rin_init(struct kvp_rin_parser *p, uint32_t block_size, int mooncake,
                  const char *lora, const char *ns);
void kvp_rin_fini(struct kvp_rin_parser *p);

/* Parses one record. line is its line number (the request id when none is
 * given). Returns 0, or -1 with d set. */
int kvp_rin_parse(struct kvp_rin_parser *p, const struct json_object *o,
                  uintmax_t line, struct kvp_rin *out, struct kvp_diag *d);

/* Timestamp of a record for --events/--requests merging: "ts_ms", or
 * Mooncake's "timestamp". Returns 1 if present. */
int kvp_rin_ts(const struct json_object *o, uint64_t *ts);

/*
 * An input source: bounded line reader plus parser, one record looked
 * ahead (for --events/--requests merging). The FILE is the caller's.
 */
enum {
	KVP_RIN_SRC_RECORD = 1,
	KVP_RIN_SRC_EOF = 0,
	KVP_RIN_SRC_BAD = -1,      /* invalid JSON / not an object: d set */
	KVP_RIN_SRC_TOO_LONG = -2, /* line over the cap (skipped) */
	KVP_RIN_SRC_IOERR = -3,
};

struct kvp_rin_src {
	struct kvp_lines lr;
	struct json_tokener *tok;
	struct json_object *pending; /* owned; NULL when none */
	uintmax_t line;              /* line of the last record read */
	uint64_t ts;                 /* its timestamp, or the last one seen */
};

int kvp_rin_src_init(struct kvp_rin_src *s, FILE *f, size_t max);
void kvp_rin_src_fini(struct kvp_rin_src *s);
/* Reads the next non-blank line into s->pending (which must be NULL). */
int kvp_rin_src_next(struct kvp_rin_src *s, struct kvp_diag *d);
/* Releases s->pending. */
void kvp_rin_src_drop(struct kvp_rin_src *s);

#endif
