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
 * Token ids (a request's, a store's) are kept for kvp_route_hash_record()
 * (route_hash.h), which hashes them between parsing and applying; nothing
 * here hashes blocks. Reading lines and merging streams by time is
 * route_src.h's job.
 *
 * Arrays in the result point into buffers owned by the parser, valid until
 * the next call. Nothing here prints.
 */
#ifndef KVP_ROUTE_INPUT_H
#define KVP_ROUTE_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "route/router.h"

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
	/* token ids not hashed yet, with the record's seed: a request's
	 * (NULL when it brings hashes), or a stored event's full blocks one
	 * after another, for its blocks marked in from_tokens (NULL: every
	 * block). kvp_route_hash_record() (route_hash.h) turns them into
	 * rq.local, rq.seq and rq.n, or into ev.local. */
	const uint32_t *tokens;
	size_t ntokens;
	uint64_t seed;
	const unsigned char *from_tokens;
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
	unsigned char *fromtok;
	size_t capfromtok;
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

#endif
