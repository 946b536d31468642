/* SPDX-License-Identifier: MIT */
/* engine_rec.c — engine block hashes for kv-hash records (engine_rec.h). */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "common/ndjson.h"
#include "common/num.h"
#include "common/util.h"
#include "hash/engine_rec.h"

void
kvp_erec_extras_fini(struct kvp_erec_extras *x)
{
	free(x->blk);
	free(x->it);
	free(x->bytes);
	memset(x, 0, sizeof *x);
}

/* Counts items and bin bytes of the extra_keys array. */
static int
extras_size(const struct json_object *arr, size_t *n_it, size_t *n_bytes)
{
	size_t i, j, n = json_object_array_length(arr);

	*n_it = *n_bytes = 0;
	for (i = 0; i < n; i++) {
		struct json_object *b = json_object_array_get_idx(arr, i);

		if (b == NULL)
			continue;
		if (!json_object_is_type(b, json_type_array))
			return -1;
		*n_it += json_object_array_length(b);
		for (j = 0; j < json_object_array_length(b); j++) {
			struct json_object *v = json_object_array_get_idx(b, j);
			struct json_object *h;

			if (json_object_is_type(v, json_type_object) &&
			    json_object_object_get_ex(v, "bin", &h))
				*n_bytes += json_object_get_string_len(h) / 2;
		}
	}
	return 0;
}

static int
read_bin(struct kvp_erec_extras *x, size_t *used, struct json_object *v,
         struct kvp_eitem *it)
{
	struct json_object *h;
	const char *s;
	size_t n, k;

	if (!json_object_object_get_ex(v, "bin", &h) ||
	    !json_object_is_type(h, json_type_string))
		return -1;
	s = json_object_get_string(h);
	n = (size_t)json_object_get_string_len(h);
	if (n % 2)
		return -1;
	it->kind = KVP_EITEM_BYTES;
	it->s = (const char *)x->bytes + *used;
	it->len = n / 2;
	for (k = 0; k < n / 2; k++) {
		int hi = kvp_hexval(s[2 * k]), lo = kvp_hexval(s[2 * k + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		x->bytes[*used + k] = (uint8_t)(hi << 4 | lo);
	}
	*used += n / 2;
	return 0;
}

static int
read_item(struct kvp_erec_extras *x, size_t *used, struct json_object *v,
          struct kvp_eitem *it)
{
	memset(it, 0, sizeof *it);
	switch (json_object_get_type(v)) {
	case json_type_string:
		it->kind = KVP_EITEM_TEXT;
		it->s = json_object_get_string(v);
		it->len = (size_t)json_object_get_string_len(v);
		return 0;
	case json_type_int:
		it->kind = KVP_EITEM_INT;
		it->i = json_object_get_int64(v);
		return 0;
	case json_type_object:
		return read_bin(x, used, v, it);
	case json_type_array: {
		struct json_object *id = json_object_array_get_idx(v, 0);
		struct json_object *off = json_object_array_get_idx(v, 1);

		if (json_object_array_length(v) != 2 ||
		    !json_object_is_type(id, json_type_string) ||
		    !json_object_is_type(off, json_type_int))
			return -1;
		it->kind = KVP_EITEM_MM;
		it->s = json_object_get_string(id);
		it->len = (size_t)json_object_get_string_len(id);
		it->i = json_object_get_int64(off);
		return 0;
	}
	default:
		return -1;
	}
}

int
kvp_erec_extras_read(struct kvp_erec_extras *x, const struct json_object *arr,
                     struct kvp_diag *d)
{
	size_t n = json_object_array_length(arr), n_it, n_bytes, i, j, k = 0;
	size_t used = 0;

	x->n_blk = 0;
	if (extras_size(arr, &n_it, &n_bytes) != 0)
		return kvp_diag_set(d, 0,
		                    "extra_keys: expected an array of "
		                    "null or arrays");
	if (kvp_grow(&x->blk, &x->blk_cap, n, sizeof *x->blk) != 0 ||
	    kvp_grow(&x->it, &x->it_cap, n_it, sizeof *x->it) != 0 ||
	    kvp_grow(&x->bytes, &x->bytes_cap, n_bytes, 1) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (i = 0; i < n; i++) {
		struct json_object *b = json_object_array_get_idx(arr, i);
		size_t m = b ? json_object_array_length(b) : 0;

		x->blk[i] = (struct kvp_eextra){x->it + k, m};
		for (j = 0; j < m; j++, k++)
			if (read_item(x, &used, json_object_array_get_idx(b, j),
			              &x->it[k]) != 0)
				return kvp_diag_set(
				    d, 0,
				    "extra_keys[%zu][%zu]: expected text, "
				    "[text, int], int or {\"bin\":hex}",
				    i, j);
	}
	x->n_blk = n;
	return 0;
}

int
kvp_erec_hex32(const char *s, size_t len, uint8_t d[32])
{
	if (len != 64)
		return -1;
	for (size_t k = 0; k < 32; k++) {
		int hi = kvp_hexval(s[2 * k]), lo = kvp_hexval(s[2 * k + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		d[k] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* One [start, end, identity, offset] element. */
static int
span_read(struct json_object *v, size_t i, struct kvp_espan *sp,
          struct kvp_diag *d)
{
	struct json_object *id;
	const char *s;
	size_t len;

	if (!json_object_is_type(v, json_type_array) ||
	    json_object_array_length(v) != 4)
		return kvp_diag_set(d, 0,
		                    "mm_spans[%zu]: expected [start, end, "
		                    "identity, offset]",
		                    i);
	if (kvp_json_u64(json_object_array_get_idx(v, 0), 0, "mm_spans start",
	                 &sp->start, d) != 0 ||
	    kvp_json_u64(json_object_array_get_idx(v, 1), 0, "mm_spans end",
	                 &sp->end, d) != 0 ||
	    kvp_json_u64(json_object_array_get_idx(v, 3), 0, "mm_spans offset",
	                 &sp->off, d) != 0)
		return -1;
	id = json_object_array_get_idx(v, 2);
	s = json_object_get_string(id);
	len = (size_t)json_object_get_string_len(id);
	if (!json_object_is_type(id, json_type_string) || len != 71 ||
	    strncmp(s, "sha256:", 7) != 0 ||
	    kvp_erec_hex32(s + 7, 64, sp->id) != 0)
		return kvp_diag_set(
		    d, 0,
		    "mm_spans[%zu]: identity must be \"sha256:\" "
		    "and 64 hex digits",
		    i);
	return 0;
}

int
kvp_erec_spans_read(const struct json_object *arr, size_t n_tok,
                    struct kvp_espan **sp, size_t *cap, size_t *n,
                    struct kvp_diag *d)
{
	size_t m;

	*n = 0;
	if (!json_object_is_type(arr, json_type_array))
		return kvp_diag_set(d, 0, "mm_spans: expected an array");
	m = json_object_array_length(arr);
	if (kvp_grow(sp, cap, m + 1, sizeof **sp) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (size_t i = 0; i < m; i++)
		if (span_read(json_object_array_get_idx(arr, i), i, &(*sp)[i],
		              d) != 0)
			return -1;
	if (kvp_eh_spans_check(*sp, m, n_tok, d) != 0)
		return -1;
	*n = m;
	return 0;
}

int
kvp_erec_sparse_extras(struct kvp_erec_sparse *sp,
                       const struct kvp_eextra *listed, size_t n_listed,
                       const uint64_t *off, size_t n_chunks, size_t sub,
                       const char *lora, const char *salt, int root)
{
	size_t n = n_chunks * sub, nl = 0, i, k;

	if (kvp_grow(&sp->blk, &sp->cap, n + 1, sizeof *sp->blk) != 0)
		return -1;
	if (lora != NULL && *lora != '\0')
		sp->dflt[nl++] =
		    (struct kvp_eitem){KVP_EITEM_TEXT, lora, strlen(lora), 0};
	for (i = 0; i < n; i++)
		sp->blk[i] = (struct kvp_eextra){sp->dflt, nl};
	if (root && salt != NULL && *salt != '\0') {
		sp->dflt[nl] =
		    (struct kvp_eitem){KVP_EITEM_TEXT, salt, strlen(salt), 0};
		if (n > 0)
			sp->blk[0].n = nl + 1;
	}
	/* the first block naming a chunk wins, as for block_mm_infos */
	for (i = n_listed; i-- > 0;)
		for (k = 0; k < sub && off[i] < n_chunks; k++)
			sp->blk[off[i] * sub + k] = listed[i];
	sp->n_blk = n;
	return 0;
}

int
kvp_erec_init(struct kvp_erec *e, enum kvp_scheme s, const char *seed,
              struct kvp_diag *d)
{
	memset(e, 0, sizeof *e);
	kvp_u64set_init(&e->map, 1);
	return kvp_eh_init(&e->eh, s, seed, d);
}

void
kvp_erec_fini(struct kvp_erec *e)
{
	kvp_eh_fini(&e->eh);
	free(e->tok);
	free(e->dig);
	free(e->pool);
	free(e->spans);
	free(e->hex);
	free(e->sp.blk);
	kvp_erec_extras_fini(&e->ex);
	kvp_u64set_fini(&e->map);
}

/* Per-record inputs (engine_rec.h). */
static int
rec_inputs(struct kvp_erec *e, const struct json_object *rec,
           const struct kvp_hashrec_opts *o, struct kvp_ereq *rq,
           struct kvp_diag *d)
{
	struct json_object *v;
	const char *err;

	rq->lora = o->lora;
	rq->salt = o->ns;
	if (o->lora != NULL &&
	    kvp_num_parse_u64(o->lora, UINT64_MAX, &rq->lora_id, &err) == 0)
		rq->has_lora_id = 1;
	if (!o->record_overrides)
		return 0;
	if (kvp_json_opt_str(rec, "lora_name", &rq->lora, d) != 0)
		return -1;
	if (kvp_json_get(rec, "cache_namespace", &v) ||
	    kvp_json_get(rec, "cache_salt", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return kvp_diag_set(d, 0,
			                    "cache_salt: expected a "
			                    "string or null");
		rq->salt = json_object_get_string(v);
	}
	if (kvp_json_get(rec, "lora_id", &v)) {
		if (kvp_json_u64(v, 0, "lora_id", &rq->lora_id, d) != 0)
			return -1;
		rq->has_lora_id = 1;
	}
	if (kvp_json_get(rec, "extra_keys", &v)) {
		if (!json_object_is_type(v, json_type_array))
			return kvp_diag_set(d, 0,
			                    "extra_keys: expected an "
			                    "array or null");
		if (kvp_erec_extras_read(&e->ex, v, d) != 0)
			return -1;
		rq->extra = e->ex.blk;
		rq->n_extra = e->ex.n_blk;
	}
	return 0;
}

/* The chain state to continue from parent_block_hash, if any. */
static int
rec_parent(struct kvp_erec *e, const struct json_object *rec,
           struct kvp_edigest *par, const struct kvp_edigest **out,
           struct kvp_diag *d)
{
	struct json_object *v;
	uint64_t u, idx;

	*out = NULL;
	if ((e->eh.scheme == KVP_SCHEME_SGLANG ||
	     e->eh.scheme == KVP_SCHEME_SGLANG_MM) &&
	    kvp_json_get(rec, "parent_block_hash_sha256", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    kvp_erec_hex32(json_object_get_string(v),
		                   (size_t)json_object_get_string_len(v),
		                   par->d) != 0)
			return kvp_diag_set(
			    d, 0,
			    "parent_block_hash_sha256: expected "
			    "64 hex digits or null");
		par->len = 32;
		par->u = 0;
		for (int k = 0; k < 8; k++)
			par->u = par->u << 8 | par->d[k];
		*out = par;
		return 0;
	}
	if (!kvp_json_get(rec, "parent_block_hash", &v))
		return 0;
	if (kvp_json_u64(v, KVP_U64_HASH, "parent_block_hash", &u, d) != 0)
		return -1;
	if (kvp_scheme_self_verifying(e->eh.scheme)) {
		kvp_eh_state_from_u64(&e->eh, u, par);
		*out = par;
		return 0;
	}
	if (!kvp_u64set_get(&e->map, u, &idx))
		return kvp_diag_set(d, 0,
		                    "parent_block_hash %" PRIu64
		                    ": its store is not in the input, and a "
		                    "%s chain cannot go on from a 64-bit value",
		                    u, kvp_scheme_names[e->eh.scheme]);
	*out = &e->pool[idx];
	return 0;
}

/* Remembers each block's full state under its published value. */
static int
remember(struct kvp_erec *e, size_t nb)
{
	size_t i;

	if (kvp_scheme_self_verifying(e->eh.scheme))
		return 0;
	for (i = 0; i < nb; i++) {
		if (kvp_u64set_has(&e->map, e->dig[i].u))
			continue;
		if (e->n_pool == e->pool_cap &&
		    kvp_grow(&e->pool, &e->pool_cap, e->n_pool + 1,
		             sizeof *e->pool) != 0)
			return -1;
		e->pool[e->n_pool] = e->dig[i];
		if (kvp_u64set_put(&e->map, e->dig[i].u, e->n_pool) < 0)
			return -1;
		e->n_pool++;
	}
	return 0;
}

/* sglang-mm: the record's mm_spans, if any. */
static int
rec_spans(struct kvp_erec *e, const struct kvp_hashrec *r, struct kvp_ereq *rq,
          struct kvp_diag *d)
{
	struct json_object *v;

	if (e->eh.scheme != KVP_SCHEME_SGLANG_MM ||
	    !kvp_json_get(r->rec, "mm_spans", &v))
		return 0;
	if (kvp_erec_spans_read(v, r->n_tokens, &e->spans, &e->spans_cap,
	                        &rq->n_spans, d) != 0)
		return -1;
	rq->spans = e->spans;
	return 0;
}

/* sglang-mm: the digests of r's nb blocks as hex for kvp_hashrec_write()
 * (block i: chunk offsets[i] of a sparse store). */
static int
rec_hex(struct kvp_erec *e, struct kvp_hashrec *r, size_t nb)
{
	static const char xd[] = "0123456789abcdef";

	if (e->eh.scheme != KVP_SCHEME_SGLANG_MM)
		return 0;
	if (kvp_grow(&e->hex, &e->hex_cap, 64 * nb + 1, 1) != 0)
		return -1;
	for (size_t i = 0; i < nb; i++) {
		const uint8_t *g =
		    e->dig[r->offsets != NULL ? r->offsets[i] : i].d;

		for (size_t k = 0; k < 32; k++) {
			e->hex[64 * i + 2 * k] = xd[g[k] >> 4];
			e->hex[64 * i + 2 * k + 1] = xd[g[k] & 15];
		}
	}
	r->sha_hex = e->hex;
	return 0;
}

/* A sparse vLLM store whose extra_keys list its blocks only: spread
 * them over the chunks (any other length is read per chunk). */
static int
rec_sparse(struct kvp_erec *e, const struct kvp_hashrec *r, struct kvp_ereq *rq,
           size_t n_chunks)
{
	if (!kvp_scheme_is_vllm(e->eh.scheme) || rq->extra == NULL ||
	    rq->n_extra != r->n_blocks)
		return 0;
	if (kvp_erec_sparse_extras(&e->sp, rq->extra, rq->n_extra, r->offsets,
	                           n_chunks, 1, rq->lora, rq->salt,
	                           rq->parent == NULL) != 0)
		return -1;
	rq->extra = e->sp.blk;
	rq->n_extra = e->sp.n_blk;
	return 0;
}

int
kvp_erec_apply(struct kvp_erec *e, struct kvp_hashrec *r,
               const struct kvp_hashrec_opts *o, struct kvp_diag *d)
{
	struct kvp_ereq rq = {0};
	struct kvp_edigest par;
	size_t i, want;
	long nb;

	r->sha_hex = NULL;
	rq.partial_tail = o->partial_tail;
	want = kvp_eh_block_count_tail(
	    r->n_tokens, r->block_size, r->eagle,
	    o->partial_tail && kvp_scheme_has_partial_tail(e->eh.scheme));
	if (want < r->n_blocks)
		want = r->n_blocks;
	if (kvp_grow(&e->tok, &e->tok_cap, r->n_tokens + 1, sizeof *e->tok) !=
	        0 ||
	    kvp_grow(&e->dig, &e->dig_cap, want + 1, sizeof *e->dig) != 0 ||
	    kvp_hashrec_grow(r, want, d) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (i = 0; i < r->n_tokens; i++)
		e->tok[i] = r->tokens[i];
	rq.tok = e->tok;
	rq.n_tok = r->n_tokens;
	rq.block_size = r->block_size;
	rq.eagle = r->eagle;
	if (rec_inputs(e, r->rec, o, &rq, d) != 0 ||
	    (o->record_overrides &&
	     (rec_parent(e, r->rec, &par, &rq.parent, d) != 0 ||
	      rec_spans(e, r, &rq, d) != 0)))
		return -1;
	if (r->offsets != NULL && rec_sparse(e, r, &rq, want) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	nb = kvp_eh_chain(&e->eh, &rq, e->dig, want, d);
	if (nb < 0 || (r->offsets != NULL &&
	               kvp_hashrec_offsets_check(r, (size_t)nb, d) != 0))
		return -1;
	if (r->offsets == NULL)
		r->n_blocks = (size_t)nb;
	for (i = 0; i < r->n_blocks; i++)
		r->local[i] = e->dig[r->offsets ? r->offsets[i] : i].u;
	if (remember(e, (size_t)nb) != 0 || rec_hex(e, r, r->n_blocks) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	return 0;
}
