/* SPDX-License-Identifier: MIT */
/* hash_record.c — record → tokens → Dynamo block hashes (see hash_record.h). */
#define _GNU_SOURCE 1
#include "hash/hash_record.h"

#include <inttypes.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/jscan.h"
#include "common/jsonw.h"
#include "common/ndjson.h"
#include "common/util.h"

void
kvp_hashrec_opts_init(struct kvp_hashrec_opts *o)
{
	memset(o, 0, sizeof *o);
	o->seed = KVP_HASH_SEED;
	o->chain_seed = KVP_HASH_SEED;
	o->eagle = KVP_EAGLE_AUTO;
	o->record_overrides = 1;
}

void
kvp_hashrec_init(struct kvp_hashrec *r)
{
	memset(r, 0, sizeof *r);
	kvp_event_reader_blockmm_init(&r->mm);
}

void
kvp_hashrec_fini(struct kvp_hashrec *r)
{
	free(r->tokens);
	free(r->local);
	free(r->seq);
	free(r->strip);
	free(r->off);
	free(r->gather);
	free(r->inv);
	kvp_event_reader_blockmm_fini(&r->mm);
	if (r->rec != NULL)
		json_object_put(r->rec);
	if (r->tok != NULL)
		json_tokener_free(r->tok);
	memset(r, 0, sizeof *r);
}

static int
grow_tokens(struct kvp_hashrec *r, size_t n, struct kvp_diag *d)
{
	uint32_t *t;
	size_t cap;

	if (n <= r->tok_cap)
		return 0;
	cap = n < 256 ? 256 : n;
	t = reallocarray(r->tokens, cap, sizeof *t);
	if (t == NULL)
		return kvp_diag_set(d, 0, "out of memory (%zu tokens)", n);
	r->tokens = t;
	r->tok_cap = cap;
	return 0;
}

static int
grow_blocks(struct kvp_hashrec *r, size_t n, struct kvp_diag *d)
{
	uint64_t *l, *s;
	size_t cap;

	if (n <= r->blk_cap)
		return 0;
	cap = n < 64 ? 64 : n;
	l = reallocarray(r->local, cap, sizeof *l);
	if (l != NULL)
		r->local = l;
	s = reallocarray(r->seq, cap, sizeof *s);
	if (s != NULL)
		r->seq = s;
	if (l == NULL || s == NULL)
		return kvp_diag_set(d, 0, "out of memory (%zu blocks)", n);
	r->blk_cap = cap;
	return 0;
}

int
kvp_hashrec_grow(struct kvp_hashrec *r, size_t n, struct kvp_diag *d)
{
	return grow_blocks(r, n, d);
}

/* One token id: an integer in [0, 2^32). */
static int
token_value(const struct json_object *v, const char *key, size_t i, size_t j,
            int pair, uint32_t *out, struct kvp_diag *d)
{
	char where[96];
	int64_t s = 0;
	uint64_t u = 0;

	if (json_object_is_type(v, json_type_int)) {
		s = json_object_get_int64(v);
		if (s >= 0) {
			u = json_object_get_uint64(v);
			if (u <= UINT32_MAX) {
				*out = (uint32_t)u;
				return 0;
			}
		}
	}
	if (pair)
		snprintf(where, sizeof where, "%s[%zu][%zu]", key, i, j);
	else
		snprintf(where, sizeof where, "%s[%zu]", key, i);
	if (!json_object_is_type(v, json_type_int))
		return kvp_diag_set(
		    d, 0, "%s: token id must be an integer, got %s", where,
		    json_type_to_name(json_object_get_type(v)));
	if (s < 0)
		return kvp_diag_set(d, 0,
		                    "%s: token id must not be negative "
		                    "(got %" PRId64 ")",
		                    where, s);
	return kvp_diag_set(d, 0,
	                    "%s: token id %" PRIu64 " does not fit in u32 "
	                    "(wide token; see kv-normalize)",
	                    where, u);
}

/* Reads a flat or bigram token array into r->tokens. *bigram is set when
 * the array was a list of pairs. */
static int
read_tokens(struct kvp_hashrec *r, const struct json_object *arr,
            const char *key, int *bigram, struct kvp_diag *d)
{
	size_t len, i;

	*bigram = 0;
	if (!json_object_is_type(arr, json_type_array))
		return kvp_diag_set(
		    d, 0, "%s: expected an array of token ids, got %s", key,
		    json_type_to_name(json_object_get_type(arr)));
	len = json_object_array_length(arr);
	if (len > 0 && json_object_is_type(json_object_array_get_idx(arr, 0),
	                                   json_type_array)) {
		/* N pairs → N + 1 tokens: the first head, then each tail. */
		*bigram = 1;
		if (grow_tokens(r, len + 1, d) != 0)
			return -1;
		for (i = 0; i < len; i++) {
			const struct json_object *p =
			    json_object_array_get_idx(arr, i);

			if (!json_object_is_type(p, json_type_array) ||
			    json_object_array_length(p) < 2)
				return kvp_diag_set(
				    d, 0,
				    "%s[%zu]: bigram token lists need pairs "
				    "of two token ids",
				    key, i);
			if (i == 0 &&
			    token_value(json_object_array_get_idx(p, 0), key, i,
			                0, 1, &r->tokens[0], d) != 0)
				return -1;
			if (token_value(json_object_array_get_idx(p, 1), key, i,
			                1, 1, &r->tokens[i + 1], d) != 0)
				return -1;
		}
		r->n_tokens = len + 1;
		return 0;
	}
	if (grow_tokens(r, len, d) != 0)
		return -1;
	for (i = 0; i < len; i++) {
		const struct json_object *v = json_object_array_get_idx(arr, i);

		/* Fast path: a non-negative int64 below 2^32. */
		if (json_object_is_type(v, json_type_int)) {
			int64_t s = json_object_get_int64(v);

			if (s >= 0 && s <= (int64_t)UINT32_MAX) {
				r->tokens[i] = (uint32_t)s;
				continue;
			}
		}
		if (token_value(v, key, i, 0, 0, &r->tokens[i], d) != 0)
			return -1;
	}
	r->n_tokens = len;
	return 0;
}

/* A string setting from the record: 1 with *out set when the key holds a
 * string, 0 when absent or null, -1 on another type. */
static int
record_str(const struct json_object *rec, const char *key, const char **out,
           struct kvp_diag *d)
{
	struct json_object *v;

	if (!kvp_json_get(rec, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return kvp_diag_set(
		    d, 0, "%s: expected a string or null, got %s", key,
		    json_type_to_name(json_object_get_type(v)));
	*out = json_object_get_string(v);
	return 1;
}

static int
str_is(const struct json_object *rec, const char *key, const char *want)
{
	struct json_object *v;

	return kvp_json_get(rec, key, &v) &&
	       json_object_is_type(v, json_type_string) &&
	       strcmp(json_object_get_string(v), want) == 0;
}

/* Resolves block size, LoRA, namespace and EAGLE for this record. */
static int
settings(struct kvp_hashrec *r, const struct kvp_hashrec_opts *o,
         const struct json_object *rec, int bigram, struct kvp_diag *d)
{
	const char *lora = o->lora, *ns = o->ns;
	uint64_t bs = o->block_size;
	int eagle = o->eagle == KVP_EAGLE_ALWAYS;
	struct json_object *v;

	if (o->eagle == KVP_EAGLE_AUTO && bigram)
		eagle = 1;
	if (o->record_overrides) {
		int present = 0, rc;

		if (kvp_json_opt_u64(rec, "block_size", 0, &bs, &present, d) !=
		    0)
			return -1;
		if (present && bs == 0)
			return kvp_diag_set(d, 0, "block_size: must not be 0");
		if (present && bs > UINT32_MAX)
			return kvp_diag_set(
			    d, 0, "block_size: %" PRIu64 " does not fit in u32",
			    bs);
		if (record_str(rec, "lora_name", &lora, d) < 0)
			return -1;
		rc = record_str(rec, "cache_namespace", &ns, d);
		if (rc < 0)
			return -1;
		if (rc == 0 && record_str(rec, "cache_salt", &ns, d) < 0)
			return -1;
		if (o->eagle == KVP_EAGLE_AUTO) {
			if (str_is(rec, "token_layout", "bigram"))
				eagle = 1;
			if (kvp_json_get(rec, "is_eagle", &v)) {
				if (!json_object_is_type(v, json_type_boolean))
					return kvp_diag_set(
					    d, 0,
					    "is_eagle: expected a boolean, "
					    "got %s",
					    json_type_to_name(
					        json_object_get_type(v)));
				if (json_object_get_boolean(v))
					eagle = 1;
			}
		}
	}
	if (bs == 0)
		return kvp_diag_set(d, 0,
		                    "no block size: give --block-size or a "
		                    "\"block_size\" key");
	r->block_size = (uint32_t)bs;
	r->eagle = eagle;
	r->seed = kvp_hash_seed(o->seed, lora, ns);
	return 0;
}

/* A sparse store's block_offsets (hash_record.h): r->offsets set, or
 * left NULL for a dense record. */
static int
read_offsets(struct kvp_hashrec *r, const struct kvp_hashrec_opts *o,
             const struct json_object *rec, struct kvp_diag *d)
{
	struct json_object *a, *h;
	size_t n;

	r->offsets = NULL;
	if (o->ignore_offsets || !kvp_json_get(rec, "block_offsets", &a))
		return 0;
	if (kvp_json_u64_array(a, 0, "block_offsets", &r->off, &r->off_cap, &n,
	                       d) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (r->off[i] > UINT32_MAX)
			return kvp_diag_set(d, 0,
			                    "block_offsets[%zu]: does not fit "
			                    "in u32",
			                    i);
	if (str_is(rec, "rec", "event") &&
	    kvp_json_get(rec, "block_hashes", &h) &&
	    json_object_is_type(h, json_type_array) &&
	    json_object_array_length(h) != n)
		return kvp_diag_set(d, 0,
		                    "block_offsets: %zu entries for %zu block "
		                    "hashes",
		                    n, json_object_array_length(h));
	r->offsets = r->off;
	r->n_blocks = n;
	return 0;
}

int
kvp_hashrec_offsets_check(const struct kvp_hashrec *r, size_t n_chunks,
                          struct kvp_diag *d)
{
	for (size_t i = 0; r->offsets != NULL && i < r->n_blocks; i++)
		if (r->offsets[i] >= n_chunks)
			return kvp_diag_set(
			    d, 0,
			    "block_offsets[%zu]: chunk %" PRIu64 " lies beyond "
			    "the %zu tokens (%zu full blocks of %u)",
			    i, r->offsets[i], r->n_tokens, n_chunks,
			    r->block_size);
	return 0;
}

/* Block i of a sparse record takes chunk offsets[i]'s hashes. */
static int
gather(struct kvp_hashrec *r, struct kvp_diag *d)
{
	size_t n = r->n_blocks;

	if (kvp_grow(&r->gather, &r->gather_cap, 2 * n + 1,
	             sizeof *r->gather) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (size_t i = 0; i < n; i++) {
		r->gather[i] = r->local[r->offsets[i]];
		r->gather[n + i] = r->seq[r->offsets[i]];
	}
	memcpy(r->local, r->gather, n * sizeof *r->local);
	memcpy(r->seq, r->gather + n, n * sizeof *r->seq);
	return 0;
}

/* Chunk j's block_mm_infos element: the first block naming chunk j in a
 * sparse record, else element j (SIZE_MAX: none). */
static int
mm_index(struct kvp_hashrec *r, size_t nb, struct kvp_diag *d)
{
	size_t i;

	if (kvp_grow(&r->inv, &r->inv_cap, nb + 1, sizeof *r->inv) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	for (i = 0; i < nb; i++)
		r->inv[i] = r->offsets != NULL ? SIZE_MAX : i;
	for (i = r->n_blocks; r->offsets != NULL && i-- > 0;)
		r->inv[r->offsets[i]] = i;
	return 0;
}

/* Splits r->tokens into blocks and hashes them (with multimodal hashes
 * where block_mm_infos gives some); a sparse record's blocks are then
 * picked from the chunks. */
static int
hash_all(struct kvp_hashrec *r, const struct kvp_hashrec_opts *o,
         const struct json_object *rec, struct kvp_diag *d)
{
	size_t nb = kvp_hash_block_count(r->n_tokens, r->block_size, r->eagle);
	size_t covered, win = (size_t)r->block_size + (r->eagle ? 1 : 0);
	int sparse = r->offsets != NULL;
	struct kvp_hasher h;

	r->n_chunks = nb;
	if (kvp_hashrec_offsets_check(r, nb, d) != 0)
		return -1;
	/* block_mm_infos past the last full block are not read */
	if (grow_blocks(r, nb, d) != 0 ||
	    kvp_event_reader_blockmm_read(rec, sparse ? r->n_blocks : nb,
	                                  &r->mm, d) < 0)
		return -1;
	covered = r->mm.n_blocks;
	if (covered == 0) {
		kvp_hash_tokens(r->tokens, r->n_tokens, r->block_size, r->eagle,
		                r->seed, o->chain_seed, r->local, r->seq);
		r->n_blocks = sparse ? r->n_blocks : nb;
		return sparse ? gather(r, d) : 0;
	}
	if (mm_index(r, nb, d) != 0)
		return -1;
	kvp_hasher_init(&h, r->seed, o->chain_seed);
	for (size_t j = 0; j < nb; j++) {
		const uint64_t *mm = NULL;
		size_t n_mm = 0, i = r->inv[j];

		if (i < covered && r->mm.count[i] > 0) { /* mm.mm may be NULL */
			mm = r->mm.mm + r->mm.start[i];
			n_mm = r->mm.count[i];
		}
		kvp_hasher_block(&h, r->tokens + j * r->block_size, win, mm,
		                 n_mm, &r->local[j], &r->seq[j]);
	}
	if (!sparse) {
		r->n_blocks = nb;
		return 0;
	}
	return gather(r, d);
}

int
kvp_hashrec_run(struct kvp_hashrec *r, const struct kvp_hashrec_opts *o,
                const struct json_object *rec, struct kvp_diag *d)
{
	struct json_object *arr = NULL, *kind;
	const char *key = NULL;
	int bigram;

	if (o->tokens_key != NULL) {
		if (kvp_json_get(rec, o->tokens_key, &arr))
			key = o->tokens_key;
	} else if (kvp_json_get(rec, "tokens", &arr)) {
		key = "tokens";
	} else if (kvp_json_get(rec, "token_ids", &arr)) {
		key = "token_ids";
	}
	if (key == NULL) {
		if (kvp_json_get(rec, "rec", &kind) &&
		    (!str_is(rec, "rec", "event") ||
		     !str_is(rec, "type", "BlockStored")))
			return 1;
		if (o->tokens_key != NULL)
			return kvp_diag_set(d, 0, "missing key \"%s\"",
			                    o->tokens_key);
		return kvp_diag_set(d, 0,
		                    "missing key \"tokens\" or \"token_ids\"");
	}
	r->fast_key = NULL;
	r->raw_ok = 0;
	if (read_tokens(r, arr, key, &bigram, d) != 0)
		return -1;
	if (settings(r, o, rec, bigram, d) != 0 ||
	    read_offsets(r, o, rec, d) != 0)
		return -1;
	return hash_all(r, o, rec, d);
}

static void
write_tokens(struct kvp_jw *w, const uint32_t *t, size_t n)
{
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < n; i++)
		kvp_jw_u64(w, t[i]);
	kvp_jw_arr_end(w);
}

/* The hash keys, then the end of the object and of the record. */
static void
write_hashes(struct kvp_jw *w, const struct kvp_hashrec *r,
             const char *local_key, const char *seq_key)
{
	kvp_jw_key(w, local_key);
	kvp_jw_hash_array(w, r->local, r->n_blocks);
	if (r->sha_hex != NULL) {
		char key[256];

		snprintf(key, sizeof key, "%.240s_sha256", local_key);
		kvp_jw_key(w, key);
		kvp_jw_arr_begin(w);
		for (size_t i = 0; i < r->n_blocks; i++)
			kvp_jw_strn(w, r->sha_hex + 64 * i, 64);
		kvp_jw_arr_end(w);
	}
	if (seq_key != NULL) {
		kvp_jw_key(w, seq_key);
		kvp_jw_hash_array(w, r->seq, r->n_blocks);
	}
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

/* 1 when k is local_key + "_sha256". */
static int
is_sha_key(const char *k, const char *local_key)
{
	size_t n = strlen(local_key);

	return strncmp(k, local_key, n) == 0 && strcmp(k + n, "_sha256") == 0;
}

/* 1 when rec holds local_key + "_sha256". */
static int
has_sha_key(const struct json_object *rec, const char *local_key)
{
	json_object_object_foreach((struct json_object *)rec, k, v)
	{
		(void)v;
		if (is_sha_key(k, local_key))
			return 1;
	}
	return 0;
}

void
kvp_hashrec_write(struct kvp_jw *w, const struct json_object *rec,
                  const struct kvp_hashrec *r, const char *local_key,
                  const char *seq_key)
{
	if (r == NULL) {
		kvp_jw_json(w, rec);
		kvp_jw_end_record(w);
		return;
	}
	kvp_jw_obj_begin(w);
	if (rec != NULL) {
		json_object_object_foreach((struct json_object *)rec, k, v)
		{
			if (strcmp(k, local_key) == 0 ||
			    (seq_key != NULL && strcmp(k, seq_key) == 0) ||
			    (r->sha_hex != NULL && is_sha_key(k, local_key)))
				continue;
			kvp_jw_key(w, k);
			if (r->fast_key != NULL && strcmp(k, r->fast_key) == 0)
				write_tokens(w, r->tokens, r->n_tokens);
			else
				kvp_jw_json(w, v);
		}
	}
	write_hashes(w, r, local_key, seq_key);
}

/* ---- fast path ------------------------------------------------------- */

/*
 * The line is scanned strictly with lib/jscan (RFC 8259 grammar, nesting
 * below json-c's depth limit, top-level members recorded, keys escape-free
 * and unique). It may be copied raw only when it is in the form
 * kvp_jw_json() would write back byte for byte: no whitespace outside
 * strings, no escapes or non-ASCII bytes in strings, no nested objects
 * (json-c merges duplicate keys), no negative numbers, exponents or
 * integers of 20 digits or more. Anything the scanner rejects goes to the
 * json-c path.
 */
#define SCAN_MAX_MEMBERS 64
#define SCAN_MAX_DEPTH 30
#define NOT_RAW                                                                \
	(KVP_JSCAN_WS | KVP_JSCAN_ESC | KVP_JSCAN_NONASCII | KVP_JSCAN_NEG |   \
	 KVP_JSCAN_EXP | KVP_JSCAN_LONGINT | KVP_JSCAN_OBJECT)

/* Tries the fast path; 1 means "use json-c on the whole line". */
static int
fast_line(struct kvp_hashrec *r, const struct kvp_hashrec_opts *o,
          struct json_tokener *tok, const char *line, size_t len,
          struct json_object **rec, struct kvp_diag *d)
{
	static const char *const defaults[] = {"tokens", "token_ids"};
	struct kvp_jmember m[SCAN_MAX_MEMBERS];
	struct kvp_jscan c, t;
	const char *key = NULL;
	size_t n, close, need;
	long j = -1;

	kvp_jscan_init(&c, line, len);
	if (kvp_jscan_members(&c, m, SCAN_MAX_MEMBERS, SCAN_MAX_DEPTH, &n,
	                      &close) != 0)
		return 1;
	if (o->tokens_key != NULL) {
		j = kvp_jscan_find(&c, m, n, o->tokens_key);
		key = o->tokens_key;
	} else {
		for (int k = 0; k < 2 && j < 0; k++) {
			j = kvp_jscan_find(&c, m, n, defaults[k]);
			key = defaults[k];
		}
	}
	if (j < 0 || line[m[j].val] != '[')
		return 1;
	kvp_jscan_init(&t, line + m[j].val, m[j].vend - m[j].val);
	if (kvp_jscan_u32_array(&t, &r->tokens, &r->tok_cap, &r->n_tokens) != 0)
		return 1;
	/* json-c parses the line with the token array emptied. */
	need = len - (m[j].vend - m[j].val) + 2;
	if (need > r->strip_cap) {
		char *b = realloc(r->strip, need);

		if (b == NULL)
			return 1;
		r->strip = b;
		r->strip_cap = need;
	}
	memcpy(r->strip, line, m[j].val);
	memcpy(r->strip + m[j].val, "[]", 2);
	memcpy(r->strip + m[j].val + 2, line + m[j].vend, len - m[j].vend);
	*rec = kvp_json_parse_object(tok, r->strip, need, d);
	if (*rec == NULL)
		return 1;
	r->fast_key = key;
	r->raw_ok = (c.flags & NOT_RAW) == 0;
	r->close = close;
	return 0;
}

int
kvp_hashrec_line(struct kvp_hashrec *r, const struct kvp_hashrec_opts *o,
                 const char *line, size_t len, struct kvp_diag *d)
{
	struct json_object **rec = &r->rec;
	struct json_tokener *tok;
	int rc;

	if (*rec != NULL) {
		json_object_put(*rec);
		*rec = NULL;
	}
	if (r->tok == NULL && (r->tok = json_tokener_new()) == NULL)
		return kvp_diag_set(d, 0, "out of memory");
	tok = r->tok;
	if (fast_line(r, o, tok, line, len, rec, d) == 0) {
		if (settings(r, o, *rec, 0, d) != 0 ||
		    read_offsets(r, o, *rec, d) != 0)
			goto bad;
		if (hash_all(r, o, *rec, d) != 0)
			goto bad;
		return 0;
	}
	*rec = kvp_json_parse_object(tok, line, len, d);
	if (*rec == NULL)
		return -1;
	rc = kvp_hashrec_run(r, o, *rec, d);
	if (rc >= 0)
		return rc;
bad:
	json_object_put(*rec);
	*rec = NULL;
	return -1;
}

const char *
kvp_hashrec_local_key(const struct kvp_hashrec *r)
{
	if (r->rec != NULL && str_is(r->rec, "rec", "event"))
		return "tokens_hash";
	return "block_hashes";
}

void
kvp_hashrec_write_line(struct kvp_jw *w, const struct kvp_hashrec *r, int rc,
                       const char *line, const char *local_key,
                       const char *seq_key, int only_hashes)
{
	const struct json_object *rec = r->rec;
	struct json_object *v;

	if (rc == 1) {
		if (!only_hashes)
			kvp_hashrec_write(w, rec, NULL, NULL, NULL);
		return;
	}
	/* an output key already in the record, even as null, is replaced:
	 * the writer's path drops it (the raw copy would keep it) */
	if (only_hashes || !r->raw_ok || w->hash_strings ||
	    json_object_object_get_ex(rec, local_key, &v) ||
	    (seq_key != NULL && json_object_object_get_ex(rec, seq_key, &v)) ||
	    (r->sha_hex != NULL && has_sha_key(rec, local_key)) ||
	    json_object_object_length(rec) == 0) {
		kvp_hashrec_write(w, only_hashes ? NULL : rec, r, local_key,
		                  seq_key);
		return;
	}
	/* Compact plain JSON: copy up to the closing brace, then continue
	 * the object with the writer. */
	kvp_jw_raw(w, line, r->close);
	kvp_jw_obj_resume(w);
	write_hashes(w, r, local_key, seq_key);
}
