/* SPDX-License-Identifier: MIT */
/*
 * route_input.h — route-score's input records (docs/spec/route-score.md §6.1),
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
 * Token ids (a request's, a store's) are kept for kvp_rec_hash()
 * (rec_hash.h), which hashes them between parsing and applying; nothing
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
#include "common/jskel.h"
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
	KVP_RIN_GAP,   /* kv-decode's {"rec":"gap"} (kept by kv-normalize) */
	KVP_RIN_STALE, /* kv-decode's {"rec":"stale"} */
};

/* Largest input_length (and expanded_prompt_len) accepted: 2^40 tokens,
 * so the per-worker sums of active prefill tokens and blocks cannot wrap
 * (a larger value is bad data). */
#define KVP_RIN_MAX_ISL (1ULL << 40)

/* How the fast path (route_scan.c) found the request id: rq.id holds a
 * plain string's bytes, or line_id the integer. */
enum {
	KVP_RIN_ID_JSON = 0, /* id_json, or none (line_id) */
	KVP_RIN_ID_STRING,
	KVP_RIN_ID_NUMBER,
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
	int id_fast; /* KVP_RIN_ID_*: the fast path's id (id_json NULL) */
	/* the record's time: "ts_ms", Mooncake's and KvRecorder's
	 * "timestamp", or a RouterEvent's "x"."ts_ms" */
	int has_ts;
	uint64_t ts_ms;
	/* token ids not hashed yet, with the record's seed: a request's
	 * (NULL when it brings hashes), or a stored event's full blocks one
	 * after another, for its blocks marked in from_tokens (NULL: every
	 * block). kvp_rec_hash() (rec_hash.h) turns them into
	 * rq.local, rq.seq and rq.n, or into ev.local. */
	const uint32_t *tokens;
	size_t ntokens;
	uint64_t seed;
	const unsigned char *from_tokens;
	/* a request's engine-reported cached tokens (replay/truth.h: enum
	 * kvp_engine_figure); read by the output only, never the router */
	int engine_cached_kind;
	uint64_t engine_cached;
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
	struct kvp_jskel skel;   /* the json-c path's reader: a long line's
	                            top-level arrays stay out of the tree */
	struct json_object *obj; /* its tree of the last record (owned) */
	uintmax_t fast, slow;    /* records read by each path */
};

void kvp_rin_init(struct kvp_rin_parser *p, uint32_t block_size, int mooncake,
                  const char *lora, const char *ns);
void kvp_rin_fini(struct kvp_rin_parser *p);

/* Parses one record. line is its line number (the request id when none is
 * given). Returns 0, or -1 with d set. */
int kvp_rin_parse(struct kvp_rin_parser *p, const struct json_object *o,
                  uintmax_t line, struct kvp_rin *out, struct kvp_diag *d);

/*
 * Parses one line: the fast path (kvp_rin_scan) for the common shapes,
 * else json-c and kvp_rin_parse(). The result may point into line and into
 * p (its buffers and the json-c tree it keeps until the next call).
 * Returns KVP_OK, KVP_BAD (d set: invalid JSON or an invalid record) or
 * KVP_FAIL (out of memory).
 */
int kvp_rin_parse_line(struct kvp_rin_parser *p, const char *line, size_t len,
                       uintmax_t lineno, struct kvp_rin *out,
                       struct kvp_diag *d);

/* The fast path alone (route_scan.c): 0 with out filled, or 1 when the
 * line is not one of its shapes (then nothing in out is meaningful). */
int kvp_rin_scan(struct kvp_rin_parser *p, const char *line, size_t len,
                 uintmax_t lineno, struct kvp_rin *out);

/* Timestamp of a record: "ts_ms", else "timestamp", else "x"."ts_ms": a
 * non-negative integer of milliseconds (or a decimal string, or a finite
 * non-negative number, truncated). Returns 1 with *ts set, 0 when absent,
 * -1 with d set for any other value ("soon", -5, 1e999). */
int kvp_rin_ts(const struct json_object *o, uint64_t *ts, struct kvp_diag *d);

/* The request id of a record without one (its line number), or an
 * integer id; both shared by the two paths. */
void kvp_rin_line_id(struct kvp_rin_parser *p, uintmax_t line,
                     struct kvp_rin *out);
void kvp_rin_num_id(struct kvp_rin_parser *p, uint64_t id, struct kvp_rin *out);

#endif
