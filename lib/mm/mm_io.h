/* SPDX-License-Identifier: MIT */
/*
 * mm_io.h — mm-expand's record forms (kvpipe-records(5)): a request record
 * in, as a struct kvp_mm_req for the expansion core (mm.h); the result out
 * as one mm_expand record through the JSON writer; and the tokenizer mode's
 * {"text": ...} records.
 *
 * Ownership: kvp_mm_req_from_json() borrows the json-c object (the strings
 * of the request point into it, so it must outlive the request's use); the
 * request's arrays live in the caller's struct kvp_mm_reqbuf, reused across
 * records and freed by kvp_mm_reqbuf_fini().
 *
 * Statuses are enum kvp_status (kvpipe.h): a malformed record (wrong
 * types, missing token_ids, out-of-range values) is KVP_BAD with d set, the
 * message naming the key. Running out of memory is KVP_BAD too ("out of
 * memory"), as it always was for mm-expand.
 */
#ifndef KVP_MM_IO_H
#define KVP_MM_IO_H

#include <stddef.h>
#include <stdint.h>

#include "common/jskel.h"
#include "common/diag.h"
#include "mm/family.h"
#include "mm/mm.h"

struct json_object;
struct kvp_jw;
struct kvp_tokenizer;
struct kvp_tok_ids;

struct kvp_mm_reqbuf {
	uint32_t *tokens;
	size_t tokens_cap;
	uint32_t *tokens_alt; /* token_ids a skeleton left out */
	size_t tokens_alt_cap;
	struct kvp_jskel skel; /* a long record's reader: tokens, token_ids */
	uint64_t *u64;         /* scratch for integer arrays */
	size_t u64_cap;
	struct kvp_mm_image_req *img;
	size_t img_cap;
	uint32_t *dims; /* dims_token_ids of every image, one after another */
	size_t dims_cap, n_dims;
	struct kvp_mm_video_req *vid;
	size_t vid_cap;
	double *ts; /* timestamps of every video, one after another */
	size_t ts_cap, n_ts;
};

/* b must not move after kvp_mm_reqbuf_init() (its skeleton reader fills
 * b's token buffers). */
void kvp_mm_reqbuf_init(struct kvp_mm_reqbuf *b);
void kvp_mm_reqbuf_fini(struct kvp_mm_reqbuf *b);

/* Fills req from one request record (docs/spec/mm-expand.md §7.2): KVP_OK
 * or KVP_BAD. */
int kvp_mm_req_from_json(const struct json_object *rec, struct kvp_mm_reqbuf *b,
                         struct kvp_mm_req *req, struct kvp_diag *d);

/* Writes a result as one mm_expand record; its "id" is the record's. */
void kvp_mm_write(struct kvp_jw *w, const struct json_object *rec,
                  const struct kvp_mm_result *r);

/* A request record through all three: read, expand, write. KVP_OK (a
 * record was written) or KVP_BAD (nothing written). */
int kvp_mm_expand_record(struct kvp_mm *m, struct kvp_mm_reqbuf *b,
                         const struct json_object *rec, struct kvp_jw *w,
                         struct kvp_diag *d);

/* A family's counter overridden by a preprocessor_config object (smg
 * rules, Kimi media_proc_cfg flattening); cfg NULL gives the defaults.
 * KVP_OK, or KVP_BAD with d set on a bad parameter value. */
int kvp_mm_counter_from_config(enum kvp_mm_family f,
                               const struct json_object *cfg,
                               struct kvp_mm_counter *c, struct kvp_diag *d);

/* "round-half-even" or "legacy-ceil" (family.h): 0, or -1 for anything
 * else. */
int kvp_mm_video_rule_parse(const char *s, enum kvp_mm_video_rule *out);

/* Parses a mm_hash value: a u64 JSON integer, or a string of 16 hex
 * digits (optionally "0x"), or vLLM's 64-hex form (first 16 digits, as
 * Dynamo's hash_mm_identifier). KVP_OK or KVP_BAD. */
int kvp_mm_parse_hash(const struct json_object *v, uint64_t *out,
                      struct kvp_diag *d);

/*
 * Tokenizer mode: reads {"id": .., "text": "...", "allow_special": bool}
 * and writes {"rec": "tokens", "id": .., "n_tokens": N, "token_ids":
 * [...]}; ids is the caller's reused buffer. KVP_OK or KVP_BAD.
 */
int kvp_mm_encode_record(struct kvp_tokenizer *t, const struct json_object *rec,
                         struct kvp_tok_ids *ids, struct kvp_jw *w,
                         struct kvp_diag *d);

#endif
