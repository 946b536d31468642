/* SPDX-License-Identifier: MIT */
/* hash_record.c — record → tokens → Dynamo block hashes (see hash_record.h). */
#define _GNU_SOURCE 1
#include "hash_record.h"

#include <inttypes.h>
#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "ndjson.h"

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
}

void
kvp_hashrec_fini(struct kvp_hashrec *r)
{
	free(r->tokens);
	free(r->local);
	free(r->seq);
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

int
kvp_hashrec_run(struct kvp_hashrec *r, const struct kvp_hashrec_opts *o,
                const struct json_object *rec, struct kvp_diag *d)
{
	struct json_object *arr = NULL, *kind;
	const char *key = NULL;
	int bigram;
	size_t nb;

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
	if (read_tokens(r, arr, key, &bigram, d) != 0)
		return -1;
	if (settings(r, o, rec, bigram, d) != 0)
		return -1;
	nb = kvp_hash_block_count(r->n_tokens, r->block_size, r->eagle);
	if (grow_blocks(r, nb, d) != 0)
		return -1;
	r->n_blocks =
	    kvp_hash_tokens(r->tokens, r->n_tokens, r->block_size, r->eagle,
	                    r->seed, o->chain_seed, r->local, r->seq);
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
			    strcmp(k, seq_key) == 0)
				continue;
			kvp_jw_key(w, k);
			kvp_jw_json(w, v);
		}
	}
	kvp_jw_key(w, local_key);
	kvp_jw_hash_array(w, r->local, r->n_blocks);
	kvp_jw_key(w, seq_key);
	kvp_jw_hash_array(w, r->seq, r->n_blocks);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}
