/* SPDX-License-Identifier: MIT */
/* route_input.c — see route_input.h. */
#include "replay/route_input.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/jskel.h"
#include "common/jsonw.h"
#include "route/index.h"
#include "common/ndjson.h"
#include "common/util.h"
#include "kvpipe.h"
#include "replay/truth.h"

/* A request's token-id keys: "tokens" (kind 0), mm-expand's
 * "routing_token_ids" (kind 1), "token_ids" (kind 2). */
static const char *const tok_keys[] = {"tokens", "routing_token_ids",
                                       "token_ids"};

/* The skeleton reader's arrays, into p's buffers as they are now (p lives
 * in a growable array of sources, so they are bound for each line): the
 * request's (a stored record's block_hashes are copied). */
static void
bind_skel(struct kvp_rin_parser *p)
{
	struct kvp_jskel_array *a = p->skel.arrays;

	for (size_t i = 0; i < 3; i++)
		a[i] = (struct kvp_jskel_array){.key = tok_keys[i],
		                                .v32 = &p->tok,
		                                .cap = &p->captok,
		                                .u32_noun = "token id "};
	a[3] = (struct kvp_jskel_array){.key = "hash_ids",
	                                .flags = KVP_U64_HASH,
	                                .v = &p->local,
	                                .cap = &p->caplocal};
	a[4] = (struct kvp_jskel_array){.key = "block_hashes",
	                                .flags = KVP_U64_HASH,
	                                .v = &p->local,
	                                .cap = &p->caplocal};
	a[5] = (struct kvp_jskel_array){.key = "sequence_hashes",
	                                .flags = KVP_U64_HASH,
	                                .v = &p->seq,
	                                .cap = &p->capseq};
	p->skel.n_arrays = 6;
}

void
kvp_rin_init(struct kvp_rin_parser *p, uint32_t block_size, int mooncake,
             const char *lora, const char *ns)
{
	memset(p, 0, sizeof(*p));
	p->block_size = block_size;
	p->mooncake = mooncake;
	p->default_seed = kvp_hash_seed(KVP_HASH_SEED, lora, ns);
	kvp_jskel_init(&p->skel);
}

void
kvp_rin_fini(struct kvp_rin_parser *p)
{
	free(p->ext);
	free(p->local);
	free(p->seq);
	free(p->allowed);
	free(p->tmp);
	free(p->tok);
	free(p->fromtok);
	if (p->obj != NULL)
		json_object_put(p->obj);
	kvp_jskel_fini(&p->skel);
	memset(p, 0, sizeof(*p));
}

/* One timestamp value (key names it). 0 or -1 with d set. */
static int
ts_value(const struct json_object *v, const char *key, uint64_t *ts,
         struct kvp_diag *d)
{
	if (json_object_get_type(v) == json_type_double) {
		double x = json_object_get_double(v);

		if (!(x >= 0) || x >= 18446744073709551616.0)
			return kvp_diag_set(d, 0,
			                    "%s: expected a non-negative time "
			                    "in ms, got %g",
			                    key, x);
		*ts = (uint64_t)x;
		return 0;
	}
	if (kvp_json_u64(v, KVP_U64_STRING, key, ts, d) != 0)
		return kvp_diag_set(
		    d, 0, "%s: expected a non-negative integer of ms", key);
	return 0;
}

int
kvp_rin_ts(const struct json_object *o, uint64_t *ts, struct kvp_diag *d)
{
	struct json_object *v, *x;
	const char *key = "ts_ms";

	if (!kvp_json_get(o, "ts_ms", &v)) {
		key = "timestamp";
		if (!kvp_json_get(o, "timestamp", &v)) {
			key = "x.ts_ms";
			if (!kvp_json_get(o, "x", &x) ||
			    !json_object_is_type(x, json_type_object) ||
			    !kvp_json_get(x, "ts_ms", &v))
				return 0;
		}
	}
	return ts_value(v, key, ts, d) == 0 ? 1 : -1;
}

/* Reads a u32 token array into p->tok from index at on (a store's blocks
 * go one after another); *n gets the count. 0, or -1 with d set. */
static int
read_tokens(struct kvp_rin_parser *p, const struct json_object *arr,
            const char *what, size_t at, size_t *n, struct kvp_diag *d)
{
	const struct kvp_jskel_array *a = kvp_jskel_find(&p->skel, arr);
	uint32_t *t;

	if (a != NULL) { /* a skeleton's [], the values already in p->tok */
		if (a->failed) {
			*d = a->d;
			return -1;
		}
		*n = a->n;
		if (kvp_grow(&p->tok, &p->captok, *n + 1, sizeof(*p->tok)) != 0)
			return kvp_diag_set(d, 0, "out of memory");
		return 0;
	}
	if (kvp_json_u64_array(arr, 0, what, &p->tmp, &p->captmp, n, d) != 0)
		return -1;
	if (kvp_grow(&p->tok, &p->captok, at + *n + 1, sizeof(*p->tok)) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	t = p->tok + at;
	for (size_t i = 0; i < *n; i++) {
		if (p->tmp[i] > UINT32_MAX)
			return kvp_diag_set(d, 0,
			                    "%s[%zu]: token id %" PRIu64
			                    " does not fit in u32",
			                    what, i, p->tmp[i]);
		t[i] = (uint32_t)p->tmp[i];
	}
	return 0;
}

static int
opt_str(const struct json_object *o, const char *key, const char **out,
        struct kvp_diag *d)
{
	*out = NULL;
	return kvp_json_opt_str(o, key, out, d);
}

/* Local-hash seed for token-bearing records. */
static int
record_seed(const struct kvp_rin_parser *p, const struct json_object *o,
            uint64_t *seed, struct kvp_diag *d)
{
	const char *lora, *ns;

	if (opt_str(o, "lora_name", &lora, d) != 0 ||
	    opt_str(o, "cache_namespace", &ns, d) != 0)
		return -1;
	*seed = lora == NULL && ns == NULL
	            ? p->default_seed
	            : kvp_hash_seed(KVP_HASH_SEED, lora, ns);
	return 0;
}

static int
opt_u32(const struct json_object *o, const char *key, uint32_t *out,
        struct kvp_diag *d)
{
	uint64_t v;
	int present = 0;

	if (kvp_json_opt_u64(o, key, 0, &v, &present, d) != 0)
		return -1;
	if (!present)
		return 0;
	if (v > UINT32_MAX)
		return kvp_diag_set(d, 0, "%s: %" PRIu64 " does not fit in u32",
		                    key, v);
	*out = (uint32_t)v;
	return 0;
}

static int
parse_tier(const struct json_object *o, int *tier, struct kvp_diag *d)
{
	const char *s;

	*tier = KVP_TIER_DEVICE;
	if (opt_str(o, "storage_tier", &s, d) != 0)
		return -1;
	if (s == NULL)
		return 0;
	*tier = kvp_tier_parse(s);
	if (*tier < 0)
		return kvp_diag_set(d, 0,
		                    "storage_tier: unknown tier \"%.40s\"", s);
	return 0;
}

/* One element of a store's "blocks": block_hash and tokens_hash, or
 * tokens (a full block, appended to p->tok after the k blocks before it
 * and marked in p->fromtok). Returns 1 when the tokens ran short (the
 * store ends before this block), 0, or -1. */
static int
stored_block(struct kvp_rin_parser *p, const struct json_object *b, size_t i,
             size_t k, struct kvp_diag *d)
{
	struct json_object *th, *tk;
	size_t nt;

	p->fromtok[i] = 0;
	if (!json_object_is_type(b, json_type_object))
		return kvp_diag_set(d, 0, "blocks[%zu]: expected an object", i);
	if (kvp_json_req_u64(b, "block_hash", KVP_U64_HASH, &p->ext[i], d) != 0)
		return -1;
	if (kvp_json_get(b, "tokens_hash", &th))
		return kvp_json_u64(th, KVP_U64_HASH, "tokens_hash",
		                    &p->local[i], d);
	if (!kvp_json_get(b, "tokens", &tk))
		return kvp_diag_set(
		    d, 0, "blocks[%zu]: needs tokens_hash or tokens", i);
	if (read_tokens(p, tk, "tokens", k * p->block_size, &nt, d) != 0)
		return -1;
	if (nt != p->block_size)
		return 1;
	p->fromtok[i] = 1;
	p->local[i] = 0; /* kvp_rec_hash() */
	return 0;
}

/* A store's "blocks" array; *n gets the blocks kept. */
static int
stored_blocks(struct kvp_rin_parser *p, const struct json_object *blocks,
              struct kvp_rin *out, size_t *n, struct kvp_diag *d)
{
	size_t len, k = 0;

	if (!json_object_is_type(blocks, json_type_array))
		return kvp_diag_set(d, 0, "blocks: expected an array");
	len = json_object_array_length(blocks);
	if (kvp_grow(&p->ext, &p->capext, len + 1, sizeof(*p->ext)) ||
	    kvp_grow(&p->local, &p->caplocal, len + 1, sizeof(*p->local)) ||
	    kvp_grow(&p->fromtok, &p->capfromtok, len + 1, sizeof(*p->fromtok)))
		return kvp_diag_set(d, 0, "out of memory");
	for (size_t i = 0; i < len; i++) {
		int rc = stored_block(p, json_object_array_get_idx(blocks, i),
		                      i, k, d);

		if (rc < 0)
			return -1;
		if (rc > 0) {
			out->flags |= KVP_RIN_TRUNCATED;
			break;
		}
		k += p->fromtok[i];
		*n = i + 1;
	}
	if (k > 0) {
		out->tokens = p->tok;
		out->ntokens = k * p->block_size;
		out->from_tokens = p->fromtok;
	}
	return 0;
}

/* A store's "block_hashes" with the "tokens" of its full blocks. */
static int
stored_hashes(struct kvp_rin_parser *p, const struct json_object *s,
              struct kvp_rin *out, size_t *n, struct kvp_diag *d)
{
	struct json_object *bh, *tk;
	size_t nh, nt, full;

	if (kvp_json_req_array(s, "block_hashes", &bh, d) != 0)
		return kvp_diag_set(d, 0,
		                    "stored: needs \"blocks\" or "
		                    "\"block_hashes\" with \"tokens\"");
	if (kvp_jskel_u64s(&p->skel, bh, KVP_U64_HASH, "block_hashes", &p->ext,
	                   &p->capext, &nh, d) != 0)
		return -1;
	if (kvp_json_req_array(s, "tokens", &tk, d) != 0 ||
	    read_tokens(p, tk, "tokens", 0, &nt, d) != 0)
		return -1;
	full = p->block_size ? nt / p->block_size : 0;
	*n = nh < full ? nh : full;
	if (*n < nh)
		out->flags |= KVP_RIN_TRUNCATED;
	out->tokens = p->tok;
	out->ntokens = *n * p->block_size;
	return 0;
}

/* The body of a store: parent_hash, blocks[] (tokens_hash or tokens),
 * or block_hashes + tokens. seed_rec supplies lora/namespace. */
static int
parse_stored(struct kvp_rin_parser *p, const struct json_object *s,
             const struct json_object *seed_rec, struct kvp_rin *out,
             struct kvp_diag *d)
{
	struct json_object *v, *blocks;
	uint32_t bsz = p->block_size;
	size_t n = 0;

	out->ev.kind = KVP_EV_STORED;
	if (kvp_json_get(s, "parent_hash", &v)) {
		if (kvp_json_u64(v, KVP_U64_HASH, "parent_hash",
		                 &out->ev.parent, d) != 0)
			return -1;
		out->ev.has_parent = 1;
	}
	if (record_seed(p, seed_rec, &out->seed, d) != 0 ||
	    opt_u32(seed_rec, "block_size", &bsz, d) != 0)
		return -1;
	if (kvp_json_get(s, "blocks", &blocks)
	        ? stored_blocks(p, blocks, out, &n, d) != 0
	        : stored_hashes(p, s, out, &n, d) != 0)
		return -1;
	if (bsz != p->block_size) {
		out->flags |= KVP_RIN_BLOCK_SIZE_MISMATCH;
		n = 0;
	}
	out->ev.ext = p->ext;
	out->ev.local = p->local;
	out->ev.n = n;
	return 0;
}

static int
parse_removed(struct kvp_rin_parser *p, const struct json_object *s,
              struct kvp_rin *out, struct kvp_diag *d)
{
	struct json_object *bh;
	size_t n;

	out->ev.kind = KVP_EV_REMOVED;
	if (kvp_json_req_array(s, "block_hashes", &bh, d) != 0 ||
	    kvp_json_u64_array(bh, KVP_U64_HASH, "block_hashes", &p->ext,
	                       &p->capext, &n, d) != 0)
		return -1;
	out->ev.ext = p->ext;
	out->ev.n = n;
	return 0;
}

/* Dynamo RouterEvent. */
static int
parse_router_event(struct kvp_rin_parser *p, const struct json_object *o,
                   struct kvp_rin *out, struct kvp_diag *d)
{
	struct json_object *ev, *data, *v;
	int present = 0;

	out->kind = KVP_RIN_EVENT;
	if (kvp_json_req_u64(o, "worker_id", KVP_U64_STRING, &out->ev.worker_id,
	                     d) != 0 ||
	    parse_tier(o, &out->ev.tier, d) != 0)
		return -1;
	if (!kvp_json_get(o, "event", &ev) ||
	    !json_object_is_type(ev, json_type_object))
		return kvp_diag_set(d, 0, "event: expected an object");
	if (kvp_json_opt_u64(ev, "event_id", KVP_U64_STRING, &out->ev.event_id,
	                     &present, d) != 0 ||
	    opt_u32(ev, "dp_rank", &out->ev.dp_rank, d) != 0)
		return -1;
	out->ev.has_event_id = present;
	if (!kvp_json_get(ev, "data", &data))
		return kvp_diag_set(d, 0, "event: missing key \"data\"");
	if (json_object_is_type(data, json_type_string)) {
		if (strcmp(json_object_get_string(data), "cleared") != 0)
			return kvp_diag_set(d, 0,
			                    "event.data: unknown variant "
			                    "\"%.40s\"",
			                    json_object_get_string(data));
		out->ev.kind = KVP_EV_CLEARED;
		return 0;
	}
	if (!json_object_is_type(data, json_type_object))
		return kvp_diag_set(d, 0,
		                    "event.data: expected an object "
		                    "or \"cleared\"");
	if (kvp_json_get(data, "stored", &v))
		return parse_stored(p, v, v, out, d);
	if (kvp_json_get(data, "removed", &v))
		return parse_removed(p, v, out, d);
	if (json_object_object_get_ex(data, "cleared", NULL)) {
		out->ev.kind = KVP_EV_CLEARED;
		return 0;
	}
	return kvp_diag_set(d, 0,
	                    "event.data: expected stored, removed or "
	                    "cleared");
}

/* The request id (string or integer), or the line number. */
static int
parse_id(struct kvp_rin_parser *p, const struct json_object *o, uintmax_t line,
         struct kvp_rin *out, int required, struct kvp_diag *d)
{
	struct json_object *v;
	uint64_t u;

	if (!kvp_json_get(o, "request_id", &v) && !kvp_json_get(o, "id", &v)) {
		if (required)
			return kvp_diag_set(d, 0, "missing key \"request_id\"");
		kvp_rin_line_id(p, line, out);
		return 0;
	}
	out->id_json = v;
	if (json_object_is_type(v, json_type_string)) {
		out->rq.id = json_object_get_string(v);
		out->rq.id_len = (size_t)json_object_get_string_len(v);
		return 0;
	}
	if (kvp_json_u64(v, KVP_U64_NEGATIVE, "request_id", &u, d) != 0)
		return -1;
	snprintf(p->idbuf, sizeof(p->idbuf), "%" PRIu64, u);
	out->rq.id = p->idbuf;
	out->rq.id_len = strlen(p->idbuf);
	return 0;
}

/* "sequence_hashes" (optional): one per block hash; sets q->seq. */
static int
parse_seq(struct kvp_rin_parser *p, const struct json_object *o, size_t n,
          struct kvp_request *q, struct kvp_diag *d)
{
	struct json_object *sq;
	size_t ns;

	if (!kvp_json_get(o, "sequence_hashes", &sq))
		return 0;
	if (kvp_jskel_u64s(&p->skel, sq, KVP_U64_HASH, "sequence_hashes",
	                   &p->seq, &p->capseq, &ns, d) != 0)
		return -1;
	if (ns != n)
		return kvp_diag_set(d, 0,
		                    "sequence_hashes: %zu values for %zu block "
		                    "hashes",
		                    ns, n);
	q->seq = p->seq;
	return 0;
}

/* Pre-hashed blocks: v is "hash_ids" or "block_hashes" (what). Without
 * sequence hashes the router chains them. */
static int
req_hashed(struct kvp_rin_parser *p, const struct json_object *o,
           const struct json_object *v, const char *what, struct kvp_rin *out,
           struct kvp_diag *d)
{
	struct kvp_request *q = &out->rq;

	if (kvp_jskel_u64s(&p->skel, v, KVP_U64_HASH, what, &p->local,
	                   &p->caplocal, &q->n, d) != 0 ||
	    parse_seq(p, o, q->n, q, d) != 0)
		return -1;
	q->local = p->local;
	return 0;
}

/* A prompt length the load arithmetic can hold (KVP_RIN_MAX_ISL). */
static int
check_isl(const char *key, uint64_t v, struct kvp_diag *d)
{
	if (v > KVP_RIN_MAX_ISL)
		return kvp_diag_set(d, 0,
		                    "%s: %" PRIu64 " tokens is over the limit "
		                    "of 2^40 (1099511627776)",
		                    key, v);
	return 0;
}

/* mm-expand's extras on a routing_token_ids record: its block size, its
 * expanded prompt length (when input_length is absent) and its own block
 * hashes, which are primary: they carry its seed, EAGLE windows and
 * per-block mm infos. */
static int
req_mm(struct kvp_rin_parser *p, const struct json_object *o,
       struct kvp_rin *out, int *has_isl, struct kvp_diag *d)
{
	struct json_object *v;
	uint32_t rbs = p->block_size;

	if (opt_u32(o, "block_size", &rbs, d) != 0)
		return -1;
	if (rbs != p->block_size)
		out->flags |= KVP_RIN_BLOCK_SIZE_MISMATCH;
	if (!*has_isl && kvp_json_get(o, "expanded_prompt_len", &v)) {
		if (kvp_json_u64(v, 0, "expanded_prompt_len", &out->rq.isl,
		                 d) != 0 ||
		    check_isl("expanded_prompt_len", out->rq.isl, d) != 0)
			return -1;
		*has_isl = 1;
	}
	if (kvp_json_get(o, "block_hashes", &v)) {
		if (req_hashed(p, o, v, "block_hashes", out, d) != 0)
			return -1;
		out->tokens = NULL;
	}
	return 0;
}

/* Token ids: "tokens" (kind 0), "token_ids" (kind 2; the key mm-expand
 * and kv-hash also take, after "tokens") or mm-expand's
 * "routing_token_ids" (kind 1, mm): kept with the record's seed for
 * kvp_rec_hash() unless mm-expand hashed them already. */
static int
req_tokens(struct kvp_rin_parser *p, const struct json_object *o,
           const struct json_object *v, int kind, struct kvp_rin *out,
           int *has_isl, struct kvp_diag *d)
{
	int mm = kind == 1;

	if (read_tokens(p, v, tok_keys[kind], 0, &out->ntokens, d) != 0 ||
	    record_seed(p, o, &out->seed, d) != 0)
		return -1;
	out->tokens = p->tok;
	if (mm && req_mm(p, o, out, has_isl, d) != 0)
		return -1;
	if (!*has_isl)
		out->rq.isl = out->ntokens;
	return 0;
}

/* The request's blocks: pre-hashed, or token ids. */
static int
req_body(struct kvp_rin_parser *p, const struct json_object *o,
         struct kvp_rin *out, int has_isl, struct kvp_diag *d)
{
	struct json_object *v, *ov;

	if (kvp_json_get(o, "hash_ids", &v) ||
	    (!kvp_json_get(o, "tokens", &ov) &&
	     !kvp_json_get(o, "token_ids", &ov) &&
	     !kvp_json_get(o, "routing_token_ids", &ov) &&
	     kvp_json_get(o, "block_hashes", &v))) {
		const char *what = kvp_json_get(o, "hash_ids", &ov)
		                       ? "hash_ids"
		                       : "block_hashes";

		if (req_hashed(p, o, v, what, out, d) != 0)
			return -1;
		if (!has_isl)
			out->rq.isl = (uint64_t)out->rq.n * p->block_size;
		return 0;
	}
	if (kvp_json_get(o, "tokens", &v))
		return req_tokens(p, o, v, 0, out, &has_isl, d);
	if (kvp_json_get(o, "token_ids", &v))
		return req_tokens(p, o, v, 2, out, &has_isl, d);
	if (kvp_json_get(o, "routing_token_ids", &v))
		return req_tokens(p, o, v, 1, out, &has_isl, d);
	return kvp_diag_set(d, 0,
	                    "request: needs tokens, token_ids, "
	                    "routing_token_ids, block_hashes or hash_ids");
}

/* commit, overrides, allowed_workers, pinned. */
static int
req_options(struct kvp_rin_parser *p, const struct json_object *o,
            struct kvp_request *q, struct kvp_diag *d)
{
	struct json_object *v;

	if (kvp_json_get(o, "commit", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return kvp_diag_set(d, 0, "commit: expected a boolean");
		q->commit = json_object_get_boolean(v);
	}
	if (kvp_json_get(o, "overrides", &v)) {
		if (!json_object_is_type(v, json_type_object))
			return kvp_diag_set(d, 0,
			                    "overrides: expected an object");
		if (kvp_json_opt_double(v, "overlap_weight", &q->weight,
		                        &q->has_weight, d) != 0 ||
		    kvp_json_opt_double(v, "temperature", &q->temperature,
		                        &q->has_temperature, d) != 0)
			return -1;
		if ((q->has_weight && !(q->weight >= 0)) ||
		    (q->has_temperature && !(q->temperature >= 0)))
			return kvp_diag_set(d, 0,
			                    "overrides: values must be "
			                    ">= 0");
	}
	if (kvp_json_get(o, "allowed_workers", &v)) {
		if (kvp_json_u64_array(v, KVP_U64_STRING, "allowed_workers",
		                       &p->allowed, &p->capallowed,
		                       &q->n_allowed, d) != 0)
			return -1;
		q->allowed = p->allowed;
	}
	if (kvp_json_get(o, "pinned", &v)) {
		if (!json_object_is_type(v, json_type_object))
			return kvp_diag_set(d, 0, "pinned: expected an object");
		if (kvp_json_req_u64(v, "worker_id", KVP_U64_STRING,
		                     &q->pin_worker, d) != 0 ||
		    opt_u32(v, "dp_rank", &q->pin_rank, d) != 0)
			return -1;
		q->pinned = 1;
	}
	return 0;
}

/* Dynamo features' request keys: "session_id" (string), "replica",
 * "output_length" (Mooncake) or "osl" (Dynamo's agent_hints.osl). */
static int
req_dynamo(const struct json_object *o, struct kvp_request *q,
           struct kvp_diag *d)
{
	struct json_object *v;

	if (kvp_json_get(o, "session_id", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_string))
			return kvp_diag_set(d, 0,
			                    "session_id: expected a string");
		q->session_id = json_object_get_string(v);
		q->session_len = (size_t)json_object_get_string_len(v);
	}
	if (kvp_json_opt_u64(o, "replica", 0, &q->replica, &q->has_replica,
	                     d) != 0 ||
	    kvp_json_opt_u64(o, "output_length", 0, &q->osl, &q->has_osl, d) !=
	        0)
		return -1;
	if (!q->has_osl &&
	    kvp_json_opt_u64(o, "osl", 0, &q->osl, &q->has_osl, d) != 0)
		return -1;
	return 0;
}

static int
parse_request(struct kvp_rin_parser *p, const struct json_object *o,
              uintmax_t line, struct kvp_rin *out, struct kvp_diag *d)
{
	struct kvp_request *q = &out->rq;
	int has_isl = 0;

	out->kind = KVP_RIN_REQUEST;
	q->commit = 1;
	if (parse_id(p, o, line, out, 0, d) != 0)
		return -1;
	q->has_ts = out->has_ts;
	q->ts_ms = out->ts_ms;
	if (kvp_json_opt_u64(o, "input_length", 0, &q->isl, &has_isl, d) != 0 ||
	    (has_isl && check_isl("input_length", q->isl, d) != 0) ||
	    req_body(p, o, out, has_isl, d) != 0 || req_dynamo(o, q, d) != 0 ||
	    kvp_truth_parse(o, out, d) != 0)
		return -1;
	return req_options(p, o, q, d);
}

static int
parse_typed(struct kvp_rin_parser *p, const struct json_object *o,
            const char *type, uintmax_t line, struct kvp_rin *out,
            struct kvp_diag *d)
{
	uint64_t u;
	int present;

	if (strcmp(type, "request") == 0)
		return parse_request(p, o, line, out, d);
	if (strcmp(type, "prefill_done") == 0 || strcmp(type, "free") == 0) {
		out->kind =
		    type[0] == 'p' ? KVP_RIN_PREFILL_DONE : KVP_RIN_FREE;
		return parse_id(p, o, line, out, 1, d);
	}
	if (strcmp(type, "worker") != 0 && strcmp(type, "remove_worker") != 0 &&
	    strcmp(type, "load") != 0 && strcmp(type, "stored") != 0 &&
	    strcmp(type, "removed") != 0 && strcmp(type, "cleared") != 0)
		return kvp_diag_set(d, 0, "unknown record type \"%.40s\"",
		                    type);
	if (kvp_json_req_u64(o, "worker_id", KVP_U64_STRING, &out->worker_id,
	                     d) != 0)
		return -1;
	if (strcmp(type, "worker") == 0) {
		out->kind = KVP_RIN_WORKER;
		out->dp_size = 1;
		if (opt_u32(o, "dp_size", &out->dp_size, d) != 0 ||
		    opt_u32(o, "dp_start", &out->dp_start, d) != 0)
			return -1;
		if ((uint64_t)out->dp_start + out->dp_size > 1ULL << 32)
			return kvp_diag_set(d, 0,
			                    "dp_start + dp_size exceeds "
			                    "the u32 rank range");
		if (out->dp_size > 65536)
			return kvp_diag_set(d, 0, "dp_size: at most 65536");
		return 0;
	}
	if (strcmp(type, "remove_worker") == 0) {
		out->kind = KVP_RIN_REMOVE_WORKER;
		return 0;
	}
	if (opt_u32(o, "dp_rank", &out->dp_rank, d) != 0)
		return -1;
	if (strcmp(type, "load") == 0) {
		out->kind = KVP_RIN_LOAD;
		if (kvp_json_opt_u64(o, "active_prefill_tokens", 0,
		                     &out->prefill_tokens, &present, d) != 0 ||
		    kvp_json_opt_u64(o, "active_decode_blocks", 0,
		                     &out->decode_blocks, &present, d) != 0)
			return -1;
		return 0;
	}
	out->kind = KVP_RIN_EVENT;
	out->ev.worker_id = out->worker_id;
	out->ev.dp_rank = out->dp_rank;
	if (parse_tier(o, &out->ev.tier, d) != 0 ||
	    kvp_json_opt_u64(o, "event_id", KVP_U64_STRING, &u, &present, d) !=
	        0)
		return -1;
	out->ev.has_event_id = present;
	out->ev.event_id = u;
	if (strcmp(type, "stored") == 0)
		return parse_stored(p, o, o, out, d);
	if (strcmp(type, "removed") == 0)
		return parse_removed(p, o, out, d);
	if (strcmp(type, "cleared") == 0) {
		out->ev.kind = KVP_EV_CLEARED;
		return 0;
	}
	return kvp_diag_set(d, 0, "unknown record type \"%.40s\"", type);
}

/* Untyped records: a RouterEvent, a KvRecorder line, a request, another
 * kvpipe record. */
static int
parse_untyped(struct kvp_rin_parser *p, const struct json_object *o,
              uintmax_t line, struct kvp_rin *out, struct kvp_diag *d)
{
	struct json_object *v, *ev;
	const char *rec;

	if (kvp_json_get(o, "worker_id", &v) && kvp_json_get(o, "event", &v))
		return parse_router_event(p, o, out, d);
	if (kvp_json_get(o, "timestamp", &v) && kvp_json_get(o, "event", &ev) &&
	    json_object_is_type(ev, json_type_object) &&
	    kvp_json_get(ev, "worker_id", &v))
		return parse_router_event(p, ev, out, d); /* KvRecorder */
	if (kvp_json_get(o, "hash_ids", &v) || kvp_json_get(o, "tokens", &v) ||
	    kvp_json_get(o, "token_ids", &v) ||
	    kvp_json_get(o, "routing_token_ids", &v) ||
	    kvp_json_get(o, "block_hashes", &v))
		return parse_request(p, o, line, out, d);
	if (kvp_json_get(o, "rec", &v)) {
		rec = json_object_is_type(v, json_type_string)
		          ? json_object_get_string(v)
		          : "";
		out->kind = strcmp(rec, "gap") == 0     ? KVP_RIN_GAP
		            : strcmp(rec, "stale") == 0 ? KVP_RIN_STALE
		                                        : KVP_RIN_IGNORED;
		return 0;
	}
	return kvp_diag_set(d, 0,
	                    "unknown record: no \"type\", not a "
	                    "RouterEvent or a request");
}

int
kvp_rin_parse(struct kvp_rin_parser *p, const struct json_object *o,
              uintmax_t line, struct kvp_rin *out, struct kvp_diag *d)
{
	struct json_object *v;
	int ts;

	memset(out, 0, sizeof(*out));
	ts = kvp_rin_ts(o, &out->ts_ms, d);
	if (ts < 0)
		return -1;
	out->has_ts = ts;
	if (p->mooncake) {
		if (!kvp_json_get(o, "hash_ids", &v))
			return kvp_diag_set(d, 0, "missing key \"hash_ids\"");
		return parse_request(p, o, line, out, d);
	}
	if (kvp_json_get(o, "type", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return kvp_diag_set(d, 0, "type: expected a string");
		return parse_typed(p, o, json_object_get_string(v), line, out,
		                   d);
	}
	return parse_untyped(p, o, line, out, d);
}

int
kvp_rin_parse_line(struct kvp_rin_parser *p, const char *line, size_t len,
                   uintmax_t lineno, struct kvp_rin *out, struct kvp_diag *d)
{
	int oom;

	if (p->obj != NULL) {
		json_object_put(p->obj);
		p->obj = NULL;
	}
	if (kvp_rin_scan(p, line, len, lineno, out) == 0) {
		p->fast++;
		return KVP_OK;
	}
	p->slow++;
	bind_skel(p);
	p->obj = kvp_jskel_parse(&p->skel, line, len, d, &oom);
	if (p->obj == NULL)
		return oom ? KVP_FAIL : KVP_BAD;
	if (kvp_rin_parse(p, p->obj, lineno, out, d) != 0)
		return KVP_BAD;
	return KVP_OK;
}
