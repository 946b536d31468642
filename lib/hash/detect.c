/* SPDX-License-Identifier: MIT */
/* detect.c — kv-hash --detect: streams, candidates, verdicts (detect.h;
 * docs/spec/engine-hashes.md §7). */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/jsonw.h"
#include "common/ndjson.h"
#include "common/u64set.h"
#include "hash/detect.h"
#include "hash/engine_rec.h"
#include "hash/hash_internal.h"

#define N_PROBES 8

/* vLLM seeds worth trying first (§7.3; priors in §1.2). */
static const char *const common_seeds[] = {
    "vllm-none-hash", "0", "42", "123", "1234", "1", "10", "1337", "random"};
#define N_COMMON (sizeof common_seeds / sizeof common_seeds[0])

struct kvp_detect {
	struct kvp_detect_opts o;
	struct kvp_dstream *s;
	size_t n, cap;
};

struct kvp_detect *
kvp_detect_new(const struct kvp_detect_opts *o)
{
	struct kvp_detect *dt = calloc(1, sizeof *dt);

	if (dt != NULL)
		dt->o = *o;
	return dt;
}

static void
store_free(struct kvp_dstore *st)
{
	free(st->tok);
	free(st->h);
	free(st->off);
	free(st->lora);
	free(st->salt);
	free(st->sha);
	free(st->spans);
	json_object_put(st->extra);
}

void
kvp_detect_free(struct kvp_detect *dt)
{
	size_t i, j;

	if (dt == NULL)
		return;
	for (i = 0; i < dt->n; i++) {
		struct kvp_dstream *s = &dt->s[i];

		for (j = 0; j < s->n; j++)
			store_free(&s->st[j]);
		free(s->st);
		free(s->name);
		json_object_put(s->worker_id);
		json_object_put(s->topic);
		json_object_put(s->dp_rank);
	}
	free(dt->s);
	free(dt);
}

static struct json_object *
member(const struct json_object *rec, const char *k)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(rec, k, &v);
	return v;
}

/* The stream of rec: found or added. */
static struct kvp_dstream *
stream_of(struct kvp_detect *dt, const struct json_object *rec)
{
	struct json_object *w = member(rec, "worker_id");
	struct json_object *t = member(rec, "topic");
	struct json_object *r = member(rec, "dp_rank");
	const char *ts = t ? json_object_get_string(t) : "";
	char name[512];
	size_t i;

	snprintf(name, sizeof name, "%s worker %s dp%s", *ts ? ts : "-",
	         w ? json_object_get_string(w) : "-",
	         r ? json_object_get_string(r) : "-");
	for (i = 0; i < dt->n; i++)
		if (strcmp(dt->s[i].name, name) == 0)
			return &dt->s[i];
	if (dt->n == dt->cap) {
		size_t cap = dt->cap * 2 + 4;
		struct kvp_dstream *p = reallocarray(dt->s, cap, sizeof *p);

		if (p == NULL)
			return NULL;
		dt->s = p;
		dt->cap = cap;
	}
	memset(&dt->s[dt->n], 0, sizeof dt->s[dt->n]);
	if ((dt->s[dt->n].name = strdup(name)) == NULL)
		return NULL;
	dt->s[dt->n].worker_id = json_object_get(w);
	dt->s[dt->n].topic = json_object_get(t);
	dt->s[dt->n].dp_rank = json_object_get(r);
	return &dt->s[dt->n++];
}

static int
opt_strdup(const struct json_object *rec, const char *k, char **out)
{
	struct json_object *v = member(rec, k);

	*out = NULL;
	if (v == NULL || !json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) == 0)
		return 0;
	*out = strdup(json_object_get_string(v));
	return *out == NULL ? -1 : 0;
}

static int
read_tokens(const struct json_object *arr, struct kvp_dstore *st,
            struct kvp_diag *d)
{
	size_t n = json_object_array_length(arr), i;

	st->tok = calloc(n + 2, sizeof *st->tok);
	if (st->tok == NULL)
		return kvp_diag_set(d, 0, "out of memory");
	for (i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);
		uint64_t u;

		if (json_object_is_type(v, json_type_array)) {
			/* bigram pairs: the first head, then each tail */
			if (i == 0)
				st->tok[st->n_tok++] = json_object_get_int64(
				    json_object_array_get_idx(v, 0));
			v = json_object_array_get_idx(v, 1);
			st->eagle = 1;
		}
		if (kvp_json_u64(v, 0, "token_ids", &u, d) != 0)
			return -1;
		st->tok[st->n_tok++] = (int64_t)u;
	}
	return 0;
}

static int
read_hashes(const struct json_object *rec, struct kvp_dstore *st, int *neg,
            struct kvp_diag *d)
{
	struct json_object *arr = member(rec, "block_hashes"), *r;
	int is_int = (r = member(rec, "hash_repr")) != NULL &&
	             strcmp(json_object_get_string(r), "int") == 0;
	size_t n, i;

	if (arr == NULL || !json_object_is_type(arr, json_type_array))
		return kvp_diag_set(d, 0, "block_hashes: expected an array");
	n = json_object_array_length(arr);
	if ((st->h = calloc(n + 1, sizeof *st->h)) == NULL)
		return kvp_diag_set(d, 0, "out of memory");
	for (i = 0; i < n; i++) {
		if (kvp_json_u64(json_object_array_get_idx(arr, i),
		                 KVP_U64_HASH, "block_hashes", &st->h[i],
		                 d) != 0)
			return -1;
		if (is_int && st->h[i] >> 63)
			*neg = 1;
	}
	st->n_h = n;
	if ((r = member(rec, "parent_block_hash")) != NULL) {
		if (kvp_json_u64(r, KVP_U64_HASH, "parent_block_hash",
		                 &st->parent, d) != 0)
			return -1;
		st->has_parent = 1;
		if (is_int && st->parent >> 63)
			*neg = 1;
	}
	return 0;
}

/* A sparse store's block_offsets (kv-hash(1)): one u32 chunk per hash. */
static int
read_offsets(const struct json_object *rec, int ignore, struct kvp_dstore *st,
             struct kvp_diag *d)
{
	struct json_object *a = member(rec, "block_offsets");
	size_t n, cap = 0, i;

	st->n_chunks = st->n_h;
	if (a == NULL || ignore)
		return 0;
	if (kvp_json_u64_array(a, 0, "block_offsets", &st->off, &cap, &n, d) !=
	    0)
		return -1;
	if (n != st->n_h)
		return kvp_diag_set(d, 0,
		                    "block_offsets: %zu entries for %zu block "
		                    "hashes",
		                    n, st->n_h);
	st->n_chunks = 0;
	for (i = 0; i < n; i++) {
		if (st->off[i] > UINT32_MAX)
			return kvp_diag_set(d, 0,
			                    "block_offsets[%zu]: does not fit "
			                    "in u32",
			                    i);
		if (st->off[i] >= st->n_chunks)
			st->n_chunks = (size_t)st->off[i] + 1;
	}
	return 0;
}

/* A sparse store's chunks must lie inside its tokens; all of its full
 * chunks are hashed (a skipped last chunk may parent the next store). */
static int
check_chunks(struct kvp_dstore *st, struct kvp_diag *d)
{
	size_t have = 0;

	if (st->n_tok > 0 || !st->eagle)
		have = (st->n_tok - (st->eagle ? 1 : 0)) / st->bs;
	for (size_t i = 0; i < st->n_h; i++)
		if (st->off[i] >= have)
			return kvp_diag_set(
			    d, 0,
			    "block_offsets[%zu]: chunk %" PRIu64 " lies beyond "
			    "the %zu tokens (%zu full blocks of %u)",
			    i, st->off[i], st->n_tok, have, st->bs);
	st->n_chunks = have;
	return 0;
}

/* block_size, or the token count per hash; EAGLE's extra token. */
static int
read_shape(const struct json_object *rec, struct kvp_dstore *st,
           struct kvp_diag *d)
{
	struct json_object *v = member(rec, "token_layout");
	uint64_t bs = 0;
	int present = 0;

	if (v != NULL && strcmp(json_object_get_string(v), "bigram") == 0)
		st->eagle = 1;
	if (kvp_json_opt_u64(rec, "block_size", 0, &bs, &present, d) != 0)
		return -1;
	if (!present && st->n_h > 0 && st->off == NULL)
		bs = st->n_tok / st->n_h;
	if (bs == 0 || bs > UINT32_MAX)
		return kvp_diag_set(d, 0,
		                    "block_size: missing or out of range");
	st->bs = (uint32_t)bs;
	if (!st->eagle && st->off == NULL && st->n_tok == st->n_h * bs + 1)
		st->eagle = 1;
	if (st->off != NULL)
		return check_chunks(st, d);
	if (st->n_tok < st->n_h * bs + (st->eagle ? 1 : 0))
		return kvp_diag_set(
		    d, 0, "token_ids: %zu tokens for %zu blocks of %u",
		    st->n_tok, st->n_h, st->bs);
	return 0;
}

static int
read_extras(const struct json_object *rec, struct kvp_dstore *st,
            struct kvp_diag *d)
{
	struct json_object *v;

	if (opt_strdup(rec, "lora_name", &st->lora) != 0 ||
	    opt_strdup(rec, "cache_salt", &st->salt) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	if ((v = member(rec, "lora_id")) != NULL &&
	    json_object_is_type(v, json_type_int)) {
		st->has_lora_id = 1;
		st->lora_id = (uint64_t)json_object_get_int64(v);
	}
	v = member(rec, "extra_keys");
	if (v != NULL && json_object_is_type(v, json_type_array))
		st->extra = json_object_get(v);
	return 0;
}

/* block_hashes_sha256, parent_block_hash_sha256 and mm_spans (the
 * request's media spans, joined onto the store by the user). */
static int
read_media(const struct json_object *rec, struct kvp_dstore *st,
           struct kvp_diag *d)
{
	struct json_object *v = member(rec, "block_hashes_sha256"), *e;
	size_t i;

	if (v != NULL) {
		if (!json_object_is_type(v, json_type_array) ||
		    json_object_array_length(v) != st->n_h)
			return kvp_diag_set(d, 0,
			                    "block_hashes_sha256: expected one "
			                    "digest per block hash");
		st->sha = malloc(32 * st->n_h + 1);
		if (st->sha == NULL)
			return kvp_diag_set(d, 0, "out of memory");
		for (i = 0; i < st->n_h; i++) {
			e = json_object_array_get_idx(v, i);
			if (!json_object_is_type(e, json_type_string) ||
			    kvp_erec_hex32(
			        json_object_get_string(e),
			        (size_t)json_object_get_string_len(e),
			        st->sha + 32 * i) != 0)
				return kvp_diag_set(
				    d, 0,
				    "block_hashes_sha256[%zu]: expected 64 "
				    "hex digits",
				    i);
		}
	}
	if ((v = member(rec, "parent_block_hash_sha256")) != NULL) {
		if (!json_object_is_type(v, json_type_string) ||
		    kvp_erec_hex32(json_object_get_string(v),
		                   (size_t)json_object_get_string_len(v),
		                   st->sha_parent.d) != 0)
			return kvp_diag_set(
			    d, 0,
			    "parent_block_hash_sha256: expected "
			    "64 hex digits");
		st->sha_parent.len = 32;
		for (i = 0; i < 8; i++)
			st->sha_parent.u =
			    st->sha_parent.u << 8 | st->sha_parent.d[i];
		st->has_sha_parent = 1;
	}
	if ((v = member(rec, "mm_spans")) != NULL &&
	    kvp_erec_spans_read(v, st->n_tok, &st->spans, &st->spans_cap,
	                        &st->n_spans, d) != 0)
		return -1;
	return 0;
}

static int
str_is(const struct json_object *rec, const char *k, const char *want)
{
	struct json_object *v = member(rec, k);

	return v != NULL && json_object_is_type(v, json_type_string) &&
	       strcmp(json_object_get_string(v), want) == 0;
}

int
kvp_detect_record(struct kvp_detect *dt, const struct json_object *rec,
                  struct kvp_diag *d)
{
	struct json_object *tok = member(rec, "token_ids");
	struct kvp_dstream *s;
	struct kvp_dstore st = {0};

	if (!str_is(rec, "rec", "event") || !str_is(rec, "type", "BlockStored"))
		return 1;
	if (tok == NULL || !json_object_is_type(tok, json_type_array))
		return 1; /* no tokens: nothing to recompute */
	if ((s = stream_of(dt, rec)) == NULL)
		return kvp_diag_set(d, 0, "out of memory");
	if (read_tokens(tok, &st, d) != 0 ||
	    read_hashes(rec, &st, &s->neg, d) != 0 ||
	    read_offsets(rec, dt->o.ignore_offsets, &st, d) != 0 ||
	    read_shape(rec, &st, d) != 0 || read_extras(rec, &st, d) != 0 ||
	    read_media(rec, &st, d) != 0)
		goto bad;
	if (s->n == s->cap) {
		size_t cap = s->cap * 2 + 16;
		struct kvp_dstore *p = reallocarray(s->st, cap, sizeof *p);

		if (p == NULL) {
			kvp_diag_set(d, 0, "out of memory");
			goto bad;
		}
		s->st = p;
		s->cap = cap;
	}
	if (s->n == 0)
		s->bs = st.bs;
	s->st[s->n++] = st;
	return 0;
bad:
	store_free(&st);
	return -1;
}

/* ---- candidates ---------------------------------------------------------- */

struct cands {
	struct kvp_dcand *c;
	size_t n, cap;
};

static int
add(struct cands *cs, enum kvp_scheme s, const char *seed, uint32_t g)
{
	if (cs->n == cs->cap) {
		size_t cap = cs->cap * 2 + 64;
		struct kvp_dcand *p = reallocarray(cs->c, cap, sizeof *p);

		if (p == NULL)
			return -1;
		cs->c = p;
		cs->cap = cap;
	}
	cs->c[cs->n++] = (struct kvp_dcand){s, seed, g};
	return 0;
}

static int
add_seeded(struct cands *cs, const struct kvp_detect_opts *o, enum kvp_scheme s,
           uint32_t g)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < N_COMMON; i++)
		rc |= add(cs, s, common_seeds[i], g);
	for (i = 0; i < o->n_seeds; i++)
		rc |= add(cs, s, o->seeds[i], g);
	return rc;
}

static int
add_vllm(struct cands *cs, const struct kvp_detect_opts *o, uint32_t g)
{
	enum kvp_scheme s;
	int rc = 0;

	for (s = KVP_SCHEME_VLLM_SHA256_CBOR;
	     s <= KVP_SCHEME_VLLM_SHA256_CBOR_64BIT; s++)
		rc |= add_seeded(cs, o, s, g);
	return rc;
}

static int
add_others(struct cands *cs, const struct kvp_detect_opts *o, uint32_t g,
           int neg)
{
	size_t i;
	int rc = 0;

	if (neg) {
		rc |= add(cs, KVP_SCHEME_SGLANG, NULL, g);
		rc |= add(cs, KVP_SCHEME_SGLANG_LEGACY, NULL, g);
		return rc;
	}
	rc |= add(cs, KVP_SCHEME_TRTLLM_V1, NULL, g);
	rc |= add(cs, KVP_SCHEME_LLMD_FNV, "", g);
	for (i = 0; i < o->n_seeds; i++)
		rc |= add(cs, KVP_SCHEME_LLMD_FNV, o->seeds[i], g);
	rc |= add(cs, KVP_SCHEME_DYNAMO, "1337", g);
	rc |= add(cs, KVP_SCHEME_SGLANG, NULL, g);
	rc |= add(cs, KVP_SCHEME_SGLANG_LEGACY, NULL, g);
	return rc;
}

/* Fingerprint priors (§7.2): negative ints mean SGLang (vLLM and the u64
 * engines never publish them); otherwise vLLM first. Then each hash
 * granularity, block size first. */
static int
candidates(struct cands *cs, const struct kvp_detect_opts *o,
           const struct kvp_dstream *s)
{
	uint32_t g;
	int rc = 0;

	for (g = s->bs; g >= 1; g--) {
		if (s->bs % g != 0)
			continue;
		if (s->neg)
			rc |= add_others(cs, o, g, 1);
		else
			rc |= add_vllm(cs, o, g) | add_others(cs, o, g, 0);
	}
	return rc;
}

/* Screens every candidate and verifies the few that fit. *best gets the
 * winner's index, or -1. */
static int
pick(const struct cands *cs, const struct kvp_dstream *s, long *best,
     struct kvp_dcount *bn)
{
	size_t i, tried = 0;

	*best = -1;
	memset(bn, 0, sizeof *bn);
	for (i = 0; i < cs->n && tried < 4; i++) {
		struct kvp_dcount n;

		if (kvp_dcheck_probe(&cs->c[i], s, N_PROBES) <= 0)
			continue;
		tried++;
		if (kvp_dcheck_full(&cs->c[i], s, &n) != 0)
			return -1;
		if (*best < 0 || n.vb > bn->vb) {
			*best = (long)i;
			*bn = n;
		}
	}
	return 0;
}

/* ---- verdicts ------------------------------------------------------------ */

static int
has_seed(enum kvp_scheme s)
{
	return kvp_scheme_is_vllm(s) || s == KVP_SCHEME_LLMD_FNV ||
	       s == KVP_SCHEME_DYNAMO;
}

static void
found(struct kvp_verdict *v, const struct kvp_dcand *c,
      const struct kvp_dcount *n)
{
	v->has_scheme = 1;
	v->scheme = c->s;
	v->seed = has_seed(c->s) ? c->seed : NULL;
	v->granularity = c->g;
	v->verified_blocks = n->vb;
	v->mismatched_blocks = n->mb;
	v->unresolved_blocks = n->ub;
	v->verified_stores = n->vs;
	v->mm_verified_blocks = n->mm_vb;
	v->verdict = n->mb > 0 ? "MISMATCH-AFTER-MATCH" : "MATCH";
}

static void
not_found(struct kvp_verdict *v, const struct kvp_dstream *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (s->st[i].has_parent)
			v->unresolved_blocks += s->st[i].n_h;
		else
			v->mismatched_blocks += s->st[i].n_h;
	}
	v->verdict = v->root_stores > 0 ? "UNKNOWN-ROOT" : "UNRESOLVED";
}

static int
search(const struct kvp_detect *dt, const struct kvp_dstream *s,
       struct kvp_verdict *v)
{
	struct kvp_dcand c;
	struct kvp_dcount n;
	enum kvp_scheme sch;
	int rc;

	rc = kvp_dcheck_seed_search(s, dt->o.max_seconds,
	                            dt->o.threads ? dt->o.threads : 1, v, &sch);
	if (rc <= 0)
		return rc;
	c = (struct kvp_dcand){sch, v->search_seed, s->bs};
	if (kvp_dcheck_full(&c, s, &n) != 0)
		return -1;
	found(v, &c, &n);
	return 1;
}

static int
seed_differs(const struct kvp_verdict *v, const char *want)
{
	const char *got = v->seed ? v->seed : "";

	return strcmp(got, want ? want : "") != 0;
}

static void
expect(const struct kvp_detect_opts *o, const struct kvp_dstream *s,
       struct kvp_verdict *v)
{
	if (!o->has_expect)
		return;
	if (!v->has_scheme || v->scheme != o->expect_scheme)
		v->differs = "scheme";
	else if (seed_differs(v, o->expect_seed))
		v->differs = "seed";
	else if (o->expect_bs != s->bs || o->expect_bs != v->granularity) {
		v->differs = "block_size";
		v->verdict = "BLOCK-SIZE";
	}
}

static int
judge(const struct kvp_detect *dt, struct kvp_dstream *s)
{
	struct kvp_verdict *v = &s->v;
	struct cands cs = {0};
	struct kvp_dcount bn;
	long best;
	size_t i;
	int rc = 0;

	memset(v, 0, sizeof *v);
	v->stream = s->name;
	v->worker_id = s->worker_id;
	v->topic = s->topic;
	v->dp_rank = s->dp_rank;
	v->block_size = s->bs;
	v->stores = s->n;
	for (i = 0; i < s->n; i++) {
		v->root_stores += !s->st[i].has_parent;
		v->mm_stores += s->st[i].sha != NULL;
	}
	if (candidates(&cs, &dt->o, s) != 0 || pick(&cs, s, &best, &bn) != 0)
		rc = -1;
	else if (best >= 0)
		found(v, &cs.c[best], &bn);
	else if (dt->o.seed_search && !s->neg && v->root_stores > 0)
		rc = search(dt, s, v) < 0 ? -1 : 0;
	free(cs.c);
	if (rc == 0 && !v->has_scheme)
		not_found(v, s);
	expect(&dt->o, s, v);
	return rc;
}

static void
explain_match(const struct kvp_detect_opts *o, struct kvp_verdict *v)
{
	const char *name = kvp_scheme_names[v->scheme];

	if (kvp_scheme_is_vllm(v->scheme) &&
	    strcmp(v->seed, "vllm-none-hash") != 0)
		snprintf(v->note, sizeof v->note,
		         "seed \"%s\" is not vLLM's default \"vllm-none-hash\"",
		         v->seed);
	else if (v->granularity != v->block_size)
		snprintf(v->note, sizeof v->note,
		         "hashes are computed every %u tokens inside blocks of "
		         "%u (hybrid hash_block_size)",
		         v->granularity, v->block_size);
	else if (v->unresolved_blocks > 0)
		snprintf(v->note, sizeof v->note,
		         "%" PRIu64 " blocks continue stores that were not "
		         "captured",
		         v->unresolved_blocks);
	if (kvp_scheme_is_vllm(v->scheme))
		snprintf(
		    v->next, sizeof v->next,
		    "the engines run with PYTHONHASHSEED=%s; configure the "
		    "consumer with %s, the same seed and block size %u",
		    v->seed, name, v->granularity);
	else
		snprintf(v->next, sizeof v->next,
		         "configure the consumer with %s and block size %u",
		         name, v->granularity);
	(void)o;
}

static void
explain_other(struct kvp_verdict *v)
{
	const char *vd = v->verdict;

	if (strcmp(vd, "UNKNOWN-ROOT") == 0) {
		snprintf(v->note, sizeof v->note,
		         "no candidate scheme and seed reproduces the %" PRIu64
		         " root stores: content cannot be verified",
		         v->root_stores);
		snprintf(v->next, sizeof v->next,
		         "set the same PYTHONHASHSEED on every engine (unset "
		         "gives each process its own random root before vLLM "
		         "PR #51875 and for xxhash); try --seed TEXT or "
		         "--seed-search, and compare pods with --cross-stream");
	} else if (strcmp(vd, "UNRESOLVED") == 0) {
		snprintf(v->note, sizeof v->note,
		         "no root store was captured: every store continues a "
		         "block whose full digest is unknown");
		snprintf(v->next, sizeof v->next,
		         "capture from seq 0 (the replay endpoint) or after "
		         "reset_prefix_cache / flush_cache");
	} else if (strcmp(vd, "MISMATCH-AFTER-MATCH") == 0) {
		snprintf(v->note, sizeof v->note,
		         "the profile is proven on %" PRIu64
		         " blocks but %" PRIu64 " blocks differ",
		         v->verified_blocks, v->mismatched_blocks);
		snprintf(v->next, sizeof v->next,
		         "look for cache_salt, multimodal or LoRA extras the "
		         "events do not carry, or a second engine publishing "
		         "on the same stream");
	}
}

static void
explain(const struct kvp_detect_opts *o, struct kvp_verdict *v)
{
	if (strcmp(v->verdict, "MATCH") == 0)
		explain_match(o, v);
	else
		explain_other(v);
	if (v->differs == NULL)
		return;
	if (strcmp(v->differs, "block_size") == 0)
		snprintf(
		    v->next, sizeof v->next,
		    "the engines hash blocks of %u tokens, the consumer "
		    "expects %u: configure the consumer with block size %u",
		    v->granularity, o->expect_bs, v->granularity);
	else if (strcmp(v->differs, "seed") == 0)
		snprintf(v->next, sizeof v->next,
		         "the engines use seed \"%s\", the consumer \"%s\": "
		         "configure the consumer with the engines' seed",
		         v->seed ? v->seed : "", o->expect_seed);
	else if (v->has_scheme)
		snprintf(v->next, sizeof v->next,
		         "the engines hash with %s, the consumer expects %s: "
		         "configure the consumer with %s",
		         kvp_scheme_names[v->scheme],
		         kvp_scheme_names[o->expect_scheme],
		         kvp_scheme_names[v->scheme]);
}

long
kvp_detect_run(struct kvp_detect *dt, struct kvp_diag *d)
{
	size_t i;

	for (i = 0; i < dt->n; i++) {
		if (judge(dt, &dt->s[i]) != 0)
			return kvp_diag_set(d, 0, "out of memory");
		explain(&dt->o, &dt->s[i].v);
	}
	return (long)dt->n;
}

const struct kvp_verdict *
kvp_detect_verdict(const struct kvp_detect *dt, size_t i)
{
	return i < dt->n ? &dt->s[i].v : NULL;
}

/* ---- output -------------------------------------------------------------- */

static void
kv_json(struct kvp_jw *w, const char *k, const struct json_object *v)
{
	kvp_jw_key(w, k);
	if (v == NULL)
		kvp_jw_null(w);
	else
		kvp_jw_json(w, v);
}

static void
kv_str_or_null(struct kvp_jw *w, const char *k, const char *s)
{
	if (s == NULL)
		kvp_jw_kv_null(w, k);
	else
		kvp_jw_kv_str(w, k, s);
}

static void
write_search(struct kvp_jw *w, const struct kvp_verdict *v)
{
	kvp_jw_key(w, "seed_search");
	kvp_jw_obj_begin(w);
	kv_str_or_null(w, "found", v->search_found ? v->search_seed : NULL);
	kvp_jw_kv_u64(w, "searched", v->search_count);
	kvp_jw_kv_double(w, "seconds", v->search_seconds);
	kvp_jw_obj_end(w);
}

static void
write_record(struct kvp_jw *w, const struct kvp_verdict *v)
{
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "verdict");
	kvp_jw_kv_str(w, "stream", v->stream);
	kv_json(w, "worker_id", v->worker_id);
	kv_json(w, "topic", v->topic);
	kv_json(w, "dp_rank", v->dp_rank);
	kvp_jw_kv_str(w, "verdict", v->verdict);
	kv_str_or_null(w, "scheme",
	               v->has_scheme ? kvp_scheme_names[v->scheme] : NULL);
	kv_str_or_null(w, "seed", v->seed);
	kvp_jw_kv_u64(w, "block_size", v->block_size);
	if (v->has_scheme)
		kvp_jw_kv_u64(w, "hash_granularity", v->granularity);
	else
		kvp_jw_kv_null(w, "hash_granularity");
	kvp_jw_kv_u64(w, "stores", v->stores);
	kvp_jw_kv_u64(w, "root_stores", v->root_stores);
	kvp_jw_kv_u64(w, "verified_stores", v->verified_stores);
	kvp_jw_kv_u64(w, "verified_blocks", v->verified_blocks);
	kvp_jw_kv_u64(w, "unresolved_blocks", v->unresolved_blocks);
	kvp_jw_kv_u64(w, "mismatched_blocks", v->mismatched_blocks);
	if (v->mm_stores > 0) {
		kvp_jw_kv_u64(w, "mm_stores", v->mm_stores);
		kvp_jw_kv_u64(w, "mm_verified_blocks", v->mm_verified_blocks);
	}
	kv_str_or_null(w, "differs", v->differs);
	kv_str_or_null(w, "note", v->note[0] ? v->note : NULL);
	kv_str_or_null(w, "next", v->next[0] ? v->next : NULL);
	if (v->searched)
		write_search(w, v);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

static void
write_text(struct kvp_jw *w, const struct kvp_verdict *v)
{
	kvp_jw_text(w, "stream %s  %s\n", v->stream, v->verdict);
	if (v->has_scheme)
		kvp_jw_text(w,
		            "  scheme   %s  seed %s%s%s  block_size %u (hash "
		            "granularity %u)\n",
		            kvp_scheme_names[v->scheme], v->seed ? "\"" : "",
		            v->seed ? v->seed : "none", v->seed ? "\"" : "",
		            v->block_size, v->granularity);
	else
		kvp_jw_text(w, "  scheme   unknown  block_size %u\n",
		            v->block_size);
	kvp_jw_text(w,
	            "  verified %" PRIu64 " blocks in %" PRIu64 "/%" PRIu64
	            " stores (%" PRIu64 " root stores), %" PRIu64
	            " unresolved, %" PRIu64 " mismatched\n",
	            v->verified_blocks, v->verified_stores, v->stores,
	            v->root_stores, v->unresolved_blocks, v->mismatched_blocks);
	if (v->mm_stores > 0)
		kvp_jw_text(w,
		            "  media    %" PRIu64 " stores with full digests, "
		            "%" PRIu64 " blocks' digests verified\n",
		            v->mm_stores, v->mm_verified_blocks);
	if (v->searched)
		kvp_jw_text(w, "  search   %s%s after %" PRIu64 " seeds\n",
		            v->search_found ? "found seed " : "no seed found",
		            v->search_found ? v->search_seed : "",
		            v->search_count);
	if (v->differs != NULL)
		kvp_jw_text(w, "  differs  %s\n", v->differs);
	if (v->note[0])
		kvp_jw_text(w, "  note     %s\n", v->note);
	if (v->next[0])
		kvp_jw_text(w, "  next     %s\n", v->next);
	kvp_jw_end_record(w);
}

void
kvp_detect_write(struct kvp_jw *w, const struct kvp_verdict *v, int text)
{
	if (text)
		write_text(w, v);
	else
		write_record(w, v);
}

/* ---- cross-stream (§7.4) ------------------------------------------------- */

/* A root store's first block: tokens, block size, LoRA, salt, extras. */
static uint64_t
first_block_key(const struct kvp_dstore *st)
{
	uint64_t k = kvp_hash_bytes(st->tok, st->bs * sizeof *st->tok, st->bs);
	const char *ex = st->extra
	                     ? json_object_to_json_string(
	                           json_object_array_get_idx(st->extra, 0))
	                     : "";

	k ^= kvp_hash_bytes(st->lora ? st->lora : "",
	                    st->lora ? strlen(st->lora) : 0, k);
	k ^= kvp_hash_bytes(st->salt ? st->salt : "",
	                    st->salt ? strlen(st->salt) : 0, k + 1);
	k ^= kvp_hash_bytes(ex ? ex : "", ex ? strlen(ex) : 0, k + 2);
	return k;
}

static int
roots_of(const struct kvp_dstream *s, struct kvp_u64set *m)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		const struct kvp_dstore *st = &s->st[i];

		if (st->has_parent || st->n_h == 0 || kvp_dstore_chunk(st, 0))
			continue;
		if (kvp_u64set_put(m, first_block_key(st), st->h[0]) < 0)
			return -1;
	}
	return 0;
}

static void
write_pair(struct kvp_jw *w, const struct kvp_dstream *a,
           const struct kvp_dstream *b, uint64_t same, uint64_t diff, int text)
{
	const char *vd = same + diff == 0 ? "NO-COMMON-ROOT"
	                 : diff == 0      ? "SAME-ROOT"
	                                  : "DIFFERENT-ROOT";

	if (text) {
		kvp_jw_text(w,
		            "cross %s  <->  %s  %s (%" PRIu64 " same, %" PRIu64
		            " different first hashes)\n",
		            a->name, b->name, vd, same, diff);
		kvp_jw_end_record(w);
		return;
	}
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "cross_stream");
	kvp_jw_kv_str(w, "stream_a", a->name);
	kvp_jw_kv_str(w, "stream_b", b->name);
	kvp_jw_kv_str(w, "verdict", vd);
	kvp_jw_kv_u64(w, "compared", same + diff);
	kvp_jw_kv_u64(w, "same", same);
	kvp_jw_kv_u64(w, "different", diff);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

void
kvp_detect_write_cross(struct kvp_jw *w, const struct kvp_detect *dt, int text)
{
	size_t a, b;

	for (a = 0; a < dt->n; a++) {
		struct kvp_u64set ma;

		kvp_u64set_init(&ma, 1);
		if (roots_of(&dt->s[a], &ma) != 0)
			goto next;
		for (b = a + 1; b < dt->n; b++) {
			struct kvp_u64set mb;
			uint64_t k, va, vb, same = 0, diff = 0;
			size_t pos = 0;

			kvp_u64set_init(&mb, 1);
			if (roots_of(&dt->s[b], &mb) == 0)
				while (kvp_u64set_next(&ma, &pos, &k, &va))
					if (kvp_u64set_get(&mb, k, &vb))
						va == vb ? same++ : diff++;
			kvp_u64set_fini(&mb);
			write_pair(w, &dt->s[a], &dt->s[b], same, diff, text);
		}
	next:
		kvp_u64set_fini(&ma);
	}
}
