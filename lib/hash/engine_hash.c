/* SPDX-License-Identifier: MIT */
/*
 * engine_hash.c — engine block-hash schemes (engine_hash.h). Each scheme's
 * rules are in docs/spec/engine-hashes.md; the section is named at each
 * function.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The low-level SHA256_Init/Update/Final: deprecated in OpenSSL 3 in
 * favour of EVP, but EVP's per-digest setup costs more than hashing a
 * 16-token block (bench/bench-engine-hash.sh measured about 2x). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <xxhash.h>

#include "common/blockhash.h"
#include "common/num.h"
#include "hash/engine_hash.h"
#include "hash/hash_internal.h"

const char *const kvp_scheme_names[] = {
    "dynamo",           "vllm-sha256-cbor", "vllm-sha256",
    "vllm-xxhash-cbor", "vllm-xxhash",      "vllm-sha256-cbor-64bit",
    "sglang",           "sglang-legacy",    "trtllm-v1",
    "llmd-fnv",         "sglang-mm",        NULL};

#define VLLM_DEFAULT_SEED "vllm-none-hash"
#define SGLANG_SALT_TAG "sglang-cache-salt-v1"
#define SGLANG_LORA_TAG "sglang-kv-event-lora-v1"
#define SGLANG_MM_TAG "sglang-mm-cache-key-v1"
#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

int
kvp_scheme_is_vllm(enum kvp_scheme s)
{
	return s >= KVP_SCHEME_VLLM_SHA256_CBOR &&
	       s <= KVP_SCHEME_VLLM_SHA256_CBOR_64BIT;
}

int
kvp_scheme_self_verifying(enum kvp_scheme s)
{
	return s == KVP_SCHEME_DYNAMO ||
	       s == KVP_SCHEME_VLLM_SHA256_CBOR_64BIT ||
	       s == KVP_SCHEME_SGLANG_LEGACY || s == KVP_SCHEME_TRTLLM_V1 ||
	       s == KVP_SCHEME_LLMD_FNV;
}

static int
is_xxh(enum kvp_scheme s)
{
	return s == KVP_SCHEME_VLLM_XXHASH || s == KVP_SCHEME_VLLM_XXHASH_CBOR;
}

static int
is_pickle(enum kvp_scheme s)
{
	return s == KVP_SCHEME_VLLM_SHA256 || s == KVP_SCHEME_VLLM_XXHASH;
}

static uint64_t
be64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

int
kvp_eh_sha256(struct kvp_eh *h, const void *p, size_t n, uint8_t out[32])
{
	SHA256_CTX c;

	h->sha_blocks += (n + 9 + 63) / 64; /* with the 0x80 and the length */
	if (SHA256_Init(&c) != 1 || SHA256_Update(&c, p, n) != 1 ||
	    SHA256_Final(out, &c) != 1)
		return -1;
	return 0;
}

static uint64_t
fnv64a(uint64_t v, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		v = (v ^ p[i]) * FNV_PRIME;
	return v;
}

/* The digest of serialized bytes, by scheme: SHA-256 (vLLM publishes the
 * last 8 bytes), XXH3-128 canonical (the low 64 bits), or the u64 of
 * sha256_cbor_64bit. */
static int
digest_bytes(struct kvp_eh *h, const uint8_t *p, size_t n,
             struct kvp_edigest *out)
{
	if (is_xxh(h->scheme)) {
		XXH128_canonical_t c;

		XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
		memcpy(out->d, c.digest, 16);
		out->len = 16;
		out->u = be64(out->d + 8);
		return 0;
	}
	if (kvp_eh_sha256(h, p, n, out->d) != 0)
		return -1;
	out->len = 32;
	out->u = be64(out->d + 24);
	if (h->scheme == KVP_SCHEME_VLLM_SHA256_CBOR_64BIT)
		out->len = 0;
	return 0;
}

int
kvp_eh_vllm_root(struct kvp_eh *h, const char *seed, size_t len,
                 struct kvp_edigest *out)
{
	struct kvp_engine_ser_buf b = {h->buf, 0, h->cap, 0, 0};
	int rc;

	if (is_pickle(h->scheme)) {
		kvp_engine_ser_pickle_begin(&b);
		kvp_engine_ser_pickle_str(&b, seed, len);
		kvp_engine_ser_pickle_end(&b);
	} else {
		kvp_engine_ser_cbor_bytes(&b, 3, seed, len);
	}
	h->buf = b.p;
	h->cap = b.cap;
	if (b.oom)
		return -1;
	rc = digest_bytes(h, b.p, b.n, out);
	return rc;
}

static int
init_root(struct kvp_eh *h, const char *seed, struct kvp_diag *d)
{
	const char *err;

	memset(&h->root, 0, sizeof h->root);
	if (kvp_scheme_is_vllm(h->scheme)) {
		if (seed == NULL)
			seed = VLLM_DEFAULT_SEED;
		if (kvp_eh_vllm_root(h, seed, strlen(seed), &h->root) != 0)
			return kvp_diag_set(d, 0, "cannot hash the seed");
		return 0;
	}
	if (h->scheme == KVP_SCHEME_LLMD_FNV) {
		if (seed == NULL)
			seed = "";
		h->root.u =
		    fnv64a(FNV_BASIS, (const uint8_t *)seed, strlen(seed));
		return 0;
	}
	if (h->scheme == KVP_SCHEME_DYNAMO) {
		h->dyn_seed = KVP_HASH_SEED;
		if (seed != NULL && kvp_num_parse_u64(seed, UINT64_MAX,
		                                      &h->dyn_seed, &err) != 0)
			return kvp_diag_set(
			    d, 0, "dynamo seed '%s' is not a u64", seed);
		return 0;
	}
	if (seed != NULL && *seed != '\0')
		return kvp_diag_set(d, 0, "scheme %s takes no seed",
		                    kvp_scheme_names[h->scheme]);
	return 0;
}

int
kvp_eh_init(struct kvp_eh *h, enum kvp_scheme s, const char *seed,
            struct kvp_diag *d)
{
	memset(h, 0, sizeof *h);
	h->scheme = s;
	h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	h->md_ctx = EVP_MD_CTX_new();
	if (h->md == NULL || h->md_ctx == NULL) {
		kvp_eh_fini(h);
		return kvp_diag_set(d, 0, "libcrypto: no SHA-256");
	}
	if (init_root(h, seed, d) != 0) {
		kvp_eh_fini(h);
		return -1;
	}
	return 0;
}

void
kvp_eh_fini(struct kvp_eh *h)
{
	EVP_MD_CTX_free(h->md_ctx);
	EVP_MD_free(h->md);
	free(h->buf);
	h->md_ctx = NULL;
	h->md = NULL;
	h->buf = NULL;
	h->cap = 0;
}

size_t
kvp_eh_block_count(size_t n, uint32_t bs, int eagle)
{
	if (bs == 0)
		return 0;
	if (eagle)
		return n == 0 ? 0 : (n - 1) / bs;
	return n / bs;
}

size_t
kvp_eh_block_count_tail(size_t n, uint32_t bs, int eagle, int tail)
{
	size_t atoms = eagle ? (n == 0 ? 0 : n - 1) : n;

	if (bs == 0)
		return 0;
	return tail ? (atoms + bs - 1) / bs : atoms / bs;
}

int
kvp_scheme_has_partial_tail(enum kvp_scheme s)
{
	return s == KVP_SCHEME_SGLANG || s == KVP_SCHEME_SGLANG_MM;
}

int
kvp_eh_spans_check(const struct kvp_espan *sp, size_t n_sp, size_t n,
                   struct kvp_diag *d)
{
	uint64_t prev = 0;

	for (size_t i = 0; i < n_sp; i++) {
		if (sp[i].start < prev || sp[i].end <= sp[i].start ||
		    sp[i].end > n)
			return kvp_diag_set(
			    d, 0,
			    "mm_spans[%zu]: spans must be ordered, disjoint, "
			    "non-empty and within the %zu tokens",
			    i, n);
		if (sp[i].off > UINT64_MAX - (sp[i].end - sp[i].start - 1))
			return kvp_diag_set(
			    d, 0, "mm_spans[%zu]: offset past u64", i);
		prev = sp[i].end;
	}
	return 0;
}

void
kvp_eh_state_from_u64(const struct kvp_eh *h, uint64_t u,
                      struct kvp_edigest *out)
{
	(void)h;
	memset(out, 0, sizeof *out);
	out->u = u;
}

/* ---- vLLM (§1.3, §1.4) --------------------------------------------------- */

/* The extras tuple of block i when the event gave none: LoRA name on every
 * block, cache_salt on the request's first block only (§1.3). */
static void
vllm_default_extra(const struct kvp_ereq *rq, size_t i, struct kvp_eitem it[2],
                   struct kvp_eextra *ex)
{
	ex->it = it;
	ex->n = 0;
	if (rq->lora != NULL && *rq->lora != '\0')
		it[ex->n++] = (struct kvp_eitem){KVP_EITEM_TEXT, rq->lora,
		                                 strlen(rq->lora), 0};
	if (i == 0 && rq->parent == NULL && rq->salt != NULL &&
	    *rq->salt != '\0')
		it[ex->n++] = (struct kvp_eitem){KVP_EITEM_TEXT, rq->salt,
		                                 strlen(rq->salt), 0};
}

/* One CBOR int, shortest head, into room reserved by the caller. */
static inline size_t
cbor_int_at(uint8_t *p, int64_t v)
{
	uint8_t major = 0;
	uint64_t u = (uint64_t)v;

	if (v < 0) {
		major = 0x20;
		u = (uint64_t)(-(v + 1));
	}
	if (u < 24) {
		p[0] = (uint8_t)(major | u);
		return 1;
	}
	if (u <= 0xff) {
		p[0] = major | 24;
		p[1] = (uint8_t)u;
		return 2;
	}
	if (u <= 0xffff) {
		p[0] = major | 25;
		p[1] = (uint8_t)(u >> 8);
		p[2] = (uint8_t)u;
		return 3;
	}
	if (u <= 0xffffffffu) {
		p[0] = major | 26;
		p[1] = (uint8_t)(u >> 24);
		p[2] = (uint8_t)(u >> 16);
		p[3] = (uint8_t)(u >> 8);
		p[4] = (uint8_t)u;
		return 5;
	}
	p[0] = major | 27;
	for (int i = 0; i < 8; i++)
		p[1 + i] = (uint8_t)(u >> (56 - 8 * i));
	return 9;
}

static void
vllm_cbor(struct kvp_engine_ser_buf *b, enum kvp_scheme s,
          const struct kvp_edigest *par, const int64_t *tok, size_t n,
          const struct kvp_eextra *ex)
{
	size_t i;

	kvp_engine_ser_cbor_head(b, 4, 3);
	if (s == KVP_SCHEME_VLLM_SHA256_CBOR_64BIT)
		kvp_engine_ser_cbor_head(b, 0, par->u);
	else
		kvp_engine_ser_cbor_bytes(b, 2, par->d, par->len);
	if (kvp_engine_ser_reserve(b, 9 * n + 9) != 0)
		return;
	kvp_engine_ser_cbor_head(b, 4, n);
	for (i = 0; i < n; i++)
		b->n += cbor_int_at(b->p + b->n, tok[i]);
	kvp_engine_ser_cbor_extra(b, ex);
}

static void
vllm_pickle(struct kvp_engine_ser_buf *b, const struct kvp_edigest *par,
            const int64_t *tok, size_t n, const struct kvp_eextra *ex)
{
	size_t i;

	kvp_engine_ser_pickle_begin(b);
	kvp_engine_ser_pickle_boundary(b); /* the outer tuple */
	kvp_engine_ser_pickle_boundary(b);
	kvp_engine_ser_pickle_bytes(b, par->d, par->len);
	kvp_engine_ser_pickle_boundary(b);
	kvp_engine_ser_pickle_tuple_open(b, n);
	for (i = 0; i < n; i++) {
		kvp_engine_ser_pickle_boundary(b);
		kvp_engine_ser_pickle_int(b, tok[i]);
	}
	kvp_engine_ser_pickle_tuple_close(b, n);
	kvp_engine_ser_pickle_extra(b, ex);
	kvp_engine_ser_pickle_tuple_close(b, 3);
	kvp_engine_ser_pickle_end(b);
}

static int
vllm_chain(struct kvp_eh *h, const struct kvp_ereq *rq, size_t nb,
           struct kvp_edigest *out)
{
	struct kvp_edigest par = rq->parent ? *rq->parent : h->root;
	struct kvp_eitem it[2];
	struct kvp_eextra dflt;
	size_t i;

	for (i = 0; i < nb; i++) {
		struct kvp_engine_ser_buf b = {h->buf, 0, h->cap, 0, 0};
		const struct kvp_eextra *ex = NULL;

		if (rq->extra != NULL)
			ex = i < rq->n_extra ? &rq->extra[i] : NULL;
		else
			vllm_default_extra(rq, i, it, &dflt), ex = &dflt;
		if (is_pickle(h->scheme))
			vllm_pickle(&b, &par, rq->tok + i * rq->block_size,
			            rq->block_size, ex);
		else
			vllm_cbor(&b, h->scheme, &par,
			          rq->tok + i * rq->block_size, rq->block_size,
			          ex);
		h->buf = b.p;
		h->cap = b.cap;
		if (b.oom || digest_bytes(h, b.p, b.n, &out[i]) != 0)
			return -1;
		par = out[i];
	}
	return 0;
}

/* ---- SGLang (§2.1, §2.2) ------------------------------------------------- */

static void
put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int
sglang_salt_root(struct kvp_eh *h, const char *salt, struct kvp_edigest *out)
{
	struct kvp_engine_ser_buf b = {h->buf, 0, h->cap, 0, 0};
	size_t tag = sizeof SGLANG_SALT_TAG; /* with its NUL: the 0x00 */
	size_t n = strlen(salt);

	if (kvp_engine_ser_reserve(&b, tag + n) != 0)
		return -1;
	memcpy(b.p, SGLANG_SALT_TAG, tag);
	memcpy(b.p + tag, salt, n);
	h->buf = b.p;
	h->cap = b.cap;
	out->len = 32;
	return kvp_eh_sha256(h, b.p, tag + n, out->d);
}

/* A LoRA adapter's published hashes (§2.1): seed = sha256(tag ‖ 0x00 ‖
 * name); each published i64 h becomes the first eight bytes, big-endian,
 * of sha256(seed ‖ i64-BE(h)). The chain itself runs on the unmixed
 * digests. */
static int
sglang_lora_mix(struct kvp_eh *h, const char *name, struct kvp_edigest *out,
                size_t nb)
{
	struct kvp_engine_ser_buf b = {h->buf, 0, h->cap, 0, 0};
	size_t tag = sizeof SGLANG_LORA_TAG; /* with its NUL: the 0x00 */
	size_t n = strlen(name);
	uint8_t seed[32], d[32];

	if (kvp_engine_ser_reserve(&b, tag + n + 40) != 0)
		return -1;
	h->buf = b.p;
	h->cap = b.cap;
	memcpy(b.p, SGLANG_LORA_TAG, tag);
	memcpy(b.p + tag, name, n);
	if (kvp_eh_sha256(h, b.p, tag + n, seed) != 0)
		return -1;
	for (size_t i = 0; i < nb; i++) {
		memcpy(b.p, seed, 32);
		for (int k = 0; k < 8; k++)
			b.p[32 + k] = (uint8_t)(out[i].u >> (56 - 8 * k));
		if (kvp_eh_sha256(h, b.p, 40, d) != 0)
			return -1;
		out[i].u = be64(d);
	}
	return 0;
}

/* An SGLang page digest: sha256 of the record, its first 8 bytes the
 * published (big-endian) hash. */
static int
sglang_digest(struct kvp_eh *h, const unsigned char *p, size_t n,
              struct kvp_edigest *out)
{
	if (kvp_eh_sha256(h, p, n, out->d) != 0)
		return -1;
	out->len = 32;
	out->u = be64(out->d);
	return 0;
}

static int
sglang_block(struct kvp_eh *h, const struct kvp_edigest *par,
             const int64_t *tok, size_t n, int eagle, struct kvp_edigest *out)
{
	size_t per = eagle ? 8 : 4, i, off = 0;
	struct kvp_engine_ser_buf b = {h->buf, 0, h->cap, 0, 0};

	if (kvp_engine_ser_reserve(&b, 32 + per * n) != 0)
		return -1;
	h->buf = b.p;
	h->cap = b.cap;
	if (par != NULL && par->len == 32) {
		memcpy(b.p, par->d, 32);
		off = 32;
	}
	for (i = 0; i < n; i++) {
		if (tok[i] < 0 || tok[i] > UINT32_MAX ||
		    (eagle && (tok[i + 1] < 0 || tok[i + 1] > UINT32_MAX)))
			return -1;
		put_le32(b.p + off, (uint32_t)tok[i]);
		off += 4;
		if (eagle) {
			put_le32(b.p + off, (uint32_t)tok[i + 1]);
			off += 4;
		}
	}
	return sglang_digest(h, b.p, off, out);
}

/* The span holding raw position pos, from span *k on (the positions a
 * page visits never decrease, bigram pairs included). */
static const struct kvp_espan *
span_at(const struct kvp_ereq *rq, size_t *k, uint64_t pos)
{
	while (*k < rq->n_spans && rq->spans[*k].end <= pos)
		(*k)++;
	if (*k < rq->n_spans && rq->spans[*k].start <= pos)
		return &rq->spans[*k];
	return NULL;
}

/* 1 when raw positions [a, b) meet a span. */
static int
page_has_mm(const struct kvp_ereq *rq, uint64_t a, uint64_t b)
{
	for (size_t i = 0; i < rq->n_spans; i++)
		if (rq->spans[i].end > a && rq->spans[i].start < b)
			return 1;
	return 0;
}

static void
put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A page touching media (§2.4): sha256(prior ‖ tag ‖ 0x00 ‖ bigram u8 ‖
 * u64-LE page length ‖ per raw position 0x00 ‖ u32-LE token, or 0x01 ‖
 * identity[32] ‖ u64-LE item offset). The page's atoms are [a, a + n). */
static int
sglang_mm_block(struct kvp_eh *h, const struct kvp_edigest *par,
                const struct kvp_ereq *rq, size_t a, size_t n,
                struct kvp_edigest *out)
{
	size_t parts = rq->eagle ? 2 : 1, tag = sizeof SGLANG_MM_TAG, off = 0;
	size_t k = 0;
	struct kvp_engine_ser_buf b = {h->buf, 0, h->cap, 0, 0};

	if (kvp_engine_ser_reserve(&b, 32 + tag + 9 + 41 * parts * n) != 0)
		return -1;
	h->buf = b.p;
	h->cap = b.cap;
	if (par != NULL && par->len == 32) {
		memcpy(b.p, par->d, 32);
		off = 32;
	}
	memcpy(b.p + off, SGLANG_MM_TAG, tag);
	off += tag;
	b.p[off++] = rq->eagle ? 1 : 0;
	put_le64(b.p + off, n);
	off += 8;
	for (size_t i = a; i < a + n; i++) {
		for (size_t j = 0; j < parts; j++) {
			const struct kvp_espan *sp = span_at(rq, &k, i + j);

			if (sp != NULL) {
				b.p[off++] = 1;
				memcpy(b.p + off, sp->id, 32);
				put_le64(b.p + off + 32,
				         sp->off + (i + j - sp->start));
				off += 40;
				continue;
			}
			if (rq->tok[i + j] < 0 || rq->tok[i + j] > UINT32_MAX)
				return -1;
			b.p[off++] = 0;
			put_le32(b.p + off, (uint32_t)rq->tok[i + j]);
			off += 4;
		}
	}
	return sglang_digest(h, b.p, off, out);
}

static int
sglang_chain(struct kvp_eh *h, const struct kvp_ereq *rq, size_t nb,
             struct kvp_edigest *out)
{
	struct kvp_edigest salt;
	const struct kvp_edigest *par = rq->parent;
	size_t atoms = rq->eagle ? rq->n_tok - 1 : rq->n_tok, i;

	if (par == NULL && rq->salt != NULL && *rq->salt != '\0') {
		if (sglang_salt_root(h, rq->salt, &salt) != 0)
			return -1;
		par = &salt;
	}
	for (i = 0; i < nb; i++) {
		size_t a = i * rq->block_size, n = rq->block_size;
		int rc;

		if (a + n > atoms)
			n = atoms - a; /* partial_tail */
		if (rq->n_spans > 0 &&
		    page_has_mm(rq, a, a + n + (rq->eagle ? 1 : 0)))
			rc = sglang_mm_block(h, par, rq, a, n, &out[i]);
		else
			rc = sglang_block(h, par, rq->tok + a, n, rq->eagle,
			                  &out[i]);
		if (rc != 0)
			return -1;
		par = &out[i];
	}
	if (rq->lora != NULL && *rq->lora != '\0')
		return sglang_lora_mix(h, rq->lora, out, nb);
	return 0;
}

/* CPython 3.8+ tuplehash (Objects/tupleobject.c, the xxHash-style lanes)
 * over int items, whose hash() is the value itself for |v| < 2^61 except
 * hash(-1) == -2. */
uint64_t
kvp_eh_py_tuple_hash(const int64_t *v, size_t n)
{
	const uint64_t p1 = 11400714785074694791ull;
	const uint64_t p2 = 14029467366897019727ull;
	const uint64_t p5 = 2870177450012600261ull;
	uint64_t acc = p5;
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t lane = v[i] == -1 ? (uint64_t)-2 : (uint64_t)v[i];

		acc += lane * p2;
		acc = acc << 31 | acc >> 33;
		acc *= p1;
	}
	acc += (uint64_t)n ^ (p5 ^ 3527539ull);
	if (acc == UINT64_MAX)
		return 1546275796;
	return acc;
}

/* ---- TensorRT-LLM v1_block_key (§3.1) ------------------------------------ */

static void
trt_mix32(uint64_t *seed, uint32_t v)
{
	v = ((v >> 16) ^ v) * 0x45D9F3Bu;
	v = ((v >> 16) ^ v) * 0x45D9F3Bu;
	v = (v >> 16) ^ v;
	v = v + 0x9E3779B9u; /* wraps at 32 bits */
	*seed ^= (uint64_t)v + (*seed << 6) + (*seed >> 2);
}

static void
trt_mix64(uint64_t *seed, uint64_t v)
{
	v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
	v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
	v ^= v >> 31;
	*seed ^= v + 0x9E3779B9ull + (*seed << 6) + (*seed >> 2);
}

static int
trt_chain(const struct kvp_ereq *rq, size_t nb, struct kvp_edigest *out)
{
	uint64_t par = rq->parent ? rq->parent->u : 0;
	size_t i, j;

	for (i = 0; i < nb; i++) {
		const int64_t *t = rq->tok + i * rq->block_size;
		uint64_t seed = rq->block_size ^ (par * 0xBF58476D1CE4E5B9ull);

		if (par == 0 && rq->has_salt_id)
			trt_mix64(&seed, rq->salt_id);
		for (j = 0; j < rq->block_size; j++) {
			if (t[j] < 0 || t[j] > UINT32_MAX)
				return -1;
			trt_mix32(&seed, (uint32_t)t[j]);
		}
		if (rq->has_lora_id)
			trt_mix64(&seed, rq->lora_id);
		memset(&out[i], 0, sizeof out[i]);
		out[i].u = par = seed;
	}
	return 0;
}

/* ---- llm-d FNV request keys (§4) ----------------------------------------- */

static int
llmd_root(struct kvp_eh *h, const char *model, uint64_t *root)
{
	struct kvp_engine_ser_buf b = {h->buf, 0, h->cap, 0, 0};

	*root = h->root.u;
	if (model == NULL || *model == '\0')
		return 0;
	kvp_engine_ser_cbor_head(&b, 4, 3);
	kvp_engine_ser_cbor_head(&b, 0, h->root.u);
	kvp_engine_ser_cbor_head(&b, 7, 22); /* null: no tokens */
	kvp_engine_ser_cbor_bytes(&b, 3, model, strlen(model));
	h->buf = b.p;
	h->cap = b.cap;
	if (b.oom)
		return -1;
	*root = fnv64a(FNV_BASIS, b.p, b.n);
	return 0;
}

static int
llmd_chain(struct kvp_eh *h, const struct kvp_ereq *rq, size_t nb,
           struct kvp_edigest *out)
{
	uint64_t par;
	size_t i, j;

	if (rq->parent != NULL)
		par = rq->parent->u;
	else if (llmd_root(h, rq->lora, &par) != 0)
		return -1;
	for (i = 0; i < nb; i++) {
		struct kvp_engine_ser_buf b = {h->buf, 0, h->cap, 0, 0};
		const int64_t *t = rq->tok + i * rq->block_size;

		kvp_engine_ser_cbor_head(&b, 4, 3);
		kvp_engine_ser_cbor_head(&b, 0, par);
		kvp_engine_ser_cbor_head(&b, 4, rq->block_size);
		for (j = 0; j < rq->block_size; j++)
			kvp_engine_ser_cbor_int(&b, t[j]);
		kvp_engine_ser_cbor_head(&b, 7, 22);
		h->buf = b.p;
		h->cap = b.cap;
		if (b.oom)
			return -1;
		memset(&out[i], 0, sizeof out[i]);
		out[i].u = par = fnv64a(FNV_BASIS, b.p, b.n);
	}
	return 0;
}

/* ---- Dynamo sequence hashes (§5) ----------------------------------------- */

static int
dynamo_chain(struct kvp_eh *h, const struct kvp_ereq *rq, size_t nb,
             struct kvp_edigest *out)
{
	size_t i, j;

	for (i = 0; i < nb; i++) {
		struct kvp_engine_ser_buf b = {h->buf, 0, h->cap, 0, 0};
		const int64_t *t = rq->tok + i * rq->block_size;
		uint64_t local;

		if (kvp_engine_ser_reserve(&b, 4 * (size_t)rq->block_size) != 0)
			return -1;
		h->buf = b.p;
		h->cap = b.cap;
		for (j = 0; j < rq->block_size; j++) {
			if (t[j] < 0 || t[j] > UINT32_MAX)
				return -1;
			put_le32(b.p + 4 * j, (uint32_t)t[j]);
		}
		local = kvp_hash_bytes(b.p, 4 * (size_t)rq->block_size,
		                       h->dyn_seed);
		memset(&out[i], 0, sizeof out[i]);
		if (i == 0 && rq->parent == NULL)
			out[i].u = local;
		else
			out[i].u =
			    kvp_hash_chain(i ? out[i - 1].u : rq->parent->u,
			                   local, KVP_HASH_SEED);
	}
	return 0;
}

long
kvp_eh_chain(struct kvp_eh *h, const struct kvp_ereq *rq,
             struct kvp_edigest *out, size_t max_out, struct kvp_diag *d)
{
	size_t nb = kvp_eh_block_count_tail(
	    rq->n_tok, rq->block_size, rq->eagle,
	    rq->partial_tail && kvp_scheme_has_partial_tail(h->scheme));
	int rc;

	if (nb > max_out)
		nb = max_out;
	switch (h->scheme) {
	case KVP_SCHEME_SGLANG:
	case KVP_SCHEME_SGLANG_MM:
		rc = sglang_chain(h, rq, nb, out);
		break;
	case KVP_SCHEME_SGLANG_LEGACY:
		for (size_t i = 0; i < nb; i++) {
			memset(&out[i], 0, sizeof out[i]);
			out[i].u = kvp_eh_py_tuple_hash(
			    rq->tok + i * rq->block_size, rq->block_size);
		}
		rc = 0;
		break;
	case KVP_SCHEME_TRTLLM_V1:
		rc = trt_chain(rq, nb, out);
		break;
	case KVP_SCHEME_LLMD_FNV:
		rc = llmd_chain(h, rq, nb, out);
		break;
	case KVP_SCHEME_DYNAMO:
		rc = dynamo_chain(h, rq, nb, out);
		break;
	default:
		rc = vllm_chain(h, rq, nb, out);
		break;
	}
	if (rc != 0)
		return kvp_diag_set(d, 0,
		                    "%s: a token is out of range or out of "
		                    "memory",
		                    kvp_scheme_names[h->scheme]);
	return (long)nb;
}
