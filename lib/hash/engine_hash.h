/* SPDX-License-Identifier: MIT */
/*
 * engine_hash.h — the block hashes inference engines publish in their KV
 * events (vLLM, SGLang, TensorRT-LLM, llm-d), recomputed from token ids.
 * Reference: docs/spec/engine-hashes.md (kvpipe's research notes; §1 vLLM, §2
 * SGLang, §3 TensorRT-LLM, §4 llm-d, §5 Dynamo).
 *
 * Every scheme chains on its full state (32-byte SHA-256 digest, 16-byte
 * XXH3-128 digest, or a u64) and publishes a 64-bit projection of it:
 *   vLLM     the last 8 digest bytes, big-endian, unsigned;
 *   SGLang   the first 8 digest bytes, big-endian, signed (kept as its u64
 *            two's complement, like every kvpipe hash);
 *   others   the u64 state itself.
 *
 * SHA-256 comes from OpenSSL's libcrypto, XXH3 from libxxhash. CBOR and
 * pickle bytes are written by the small encoders in engine_ser.c. A
 * struct kvp_eh is one thread's hashing context; nothing here prints or
 * keeps global state.
 */
#ifndef KVP_ENGINE_HASH_H
#define KVP_ENGINE_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

enum kvp_scheme {
	KVP_SCHEME_DYNAMO = 0,
	KVP_SCHEME_VLLM_SHA256_CBOR,
	KVP_SCHEME_VLLM_SHA256,
	KVP_SCHEME_VLLM_XXHASH_CBOR,
	KVP_SCHEME_VLLM_XXHASH,
	KVP_SCHEME_VLLM_SHA256_CBOR_64BIT,
	KVP_SCHEME_SGLANG,
	KVP_SCHEME_SGLANG_LEGACY,
	KVP_SCHEME_TRTLLM_V1,
	KVP_SCHEME_LLMD_FNV,
	KVP_SCHEME_SGLANG_MM,
	KVP_SCHEME_COUNT
};

/* The names kv-hash --scheme takes, in enum order, NULL-terminated. */
extern const char *const kvp_scheme_names[];

/* 1 for the vLLM family (seeded root, extras tuple). */
int kvp_scheme_is_vllm(enum kvp_scheme s);
/* 1 when the chain state is the published value, so that any store can be
 * checked from its own parent field (spec §7.4). */
int kvp_scheme_self_verifying(enum kvp_scheme s);

/* A chain state: len digest bytes (32, 16, or 0 for u64 schemes) and the
 * published 64-bit value u. */
struct kvp_edigest {
	uint8_t d[32];
	uint8_t len;
	uint64_t u;
};

/* One element of a vLLM extra-keys tuple. */
enum kvp_eitem_kind {
	KVP_EITEM_TEXT,  /* LoRA name, cache_salt, bare MM identifier */
	KVP_EITEM_MM,    /* (identifier, offset) */
	KVP_EITEM_BYTES, /* prompt-embeds digest */
	KVP_EITEM_INT,   /* lora_int_id of old vLLM versions */
};

struct kvp_eitem {
	enum kvp_eitem_kind kind;
	const char *s; /* TEXT, MM identifier, BYTES */
	size_t len;
	int64_t i; /* MM offset, INT */
};

/* A block's extras: n == 0 is None. */
struct kvp_eextra {
	const struct kvp_eitem *it;
	size_t n;
};

/* One media span of an SGLang request (sglang-mm, §2.4): raw token
 * positions [start, end) of the request's tokens hold media item id (the
 * 32 bytes of its sha256: identity), position start being the item's
 * token off. */
struct kvp_espan {
	uint64_t start, end, off;
	uint8_t id[32];
};

/*
 * The inputs of one store (or one request): n_tok tokens (+1 under
 * SGLang EAGLE), hashed in blocks of block_size; only full blocks unless
 * partial_tail (SGLang schemes: a last, shorter block too, as sgl-router's
 * hash parity fixture does; the engine publishes full pages only).
 */
struct kvp_ereq {
	const int64_t *tok;
	size_t n_tok;
	uint32_t block_size;
	int eagle;                        /* SGLang bigram keys */
	const struct kvp_edigest *parent; /* NULL: the chain's root */
	const char *lora;                 /* vLLM: every block; llm-d: model */
	int has_lora_id;                  /* TensorRT-LLM loraTaskId */
	uint64_t lora_id;
	int has_salt_id; /* TensorRT-LLM cacheSaltID (root blocks) */
	uint64_t salt_id;
	const char *salt; /* vLLM block 0, SGLang root prior; NULL/"": none */
	const struct kvp_eextra *extra; /* vLLM: per block, replaces lora and
	                                 * salt; NULL: built from them */
	size_t n_extra;
	int partial_tail;              /* SGLang: hash a trailing short block */
	const struct kvp_espan *spans; /* sglang-mm: sorted, disjoint */
	size_t n_spans;
};

struct kvp_eh {
	enum kvp_scheme scheme;
	struct kvp_edigest root; /* vLLM seed root; llm-d init; others: none */
	/* private */
	void *md_ctx; /* EVP_MD_CTX */
	void *md;     /* EVP_MD */
	uint8_t *buf; /* serialization buffer */
	size_t cap;
	uint64_t dyn_seed; /* Dynamo: XXH3 seed */
	/* SHA-256 compression-function calls so far (64-byte blocks with
	 * padding), for the benchmark's per-message-size ceiling */
	uint64_t sha_blocks;
};

/*
 * Sets up h for scheme s with the engine's seed text (vLLM: the
 * PYTHONHASHSEED text, NULL = "vllm-none-hash"; llm-d: HashSeed, NULL =
 * ""; sglang, sglang-legacy, trtllm-v1: must be NULL or ""; dynamo: a
 * decimal u64, NULL = 1337). Returns 0, or -1 with d set.
 */
int kvp_eh_init(struct kvp_eh *h, enum kvp_scheme s, const char *seed,
                struct kvp_diag *d);
void kvp_eh_fini(struct kvp_eh *h);

/* Number of full blocks of a request of n tokens. */
size_t kvp_eh_block_count(size_t n, uint32_t bs, int eagle);
/* The same, counting a trailing partial block when tail is set. */
size_t kvp_eh_block_count_tail(size_t n, uint32_t bs, int eagle, int tail);
/* 1 for the schemes that take partial_tail (sglang, sglang-mm). */
int kvp_scheme_has_partial_tail(enum kvp_scheme s);

/* Checks rq's spans against n raw tokens: ordered, disjoint, non-empty,
 * inside the tokens, offsets within u64. Returns 0, or -1 with d set. */
int kvp_eh_spans_check(const struct kvp_espan *sp, size_t n_sp, size_t n,
                       struct kvp_diag *d);

/*
 * Hashes the full blocks of rq into out[0..n-1] (n = the block count,
 * at most max_out). Returns n, or -1 with d set (memory, a token out of the
 * scheme's range, a bad parent).
 */
long kvp_eh_chain(struct kvp_eh *h, const struct kvp_ereq *rq,
                  struct kvp_edigest *out, size_t max_out, struct kvp_diag *d);

/* The state a published u64 stands for in a self-verifying scheme. */
void kvp_eh_state_from_u64(const struct kvp_eh *h, uint64_t u,
                           struct kvp_edigest *out);

/* Root of a vLLM-family scheme for a seed text (no other state touched). */
int kvp_eh_vllm_root(struct kvp_eh *h, const char *seed, size_t len,
                     struct kvp_edigest *out);

/* Digest primitives (exported for the unit tests and the seed search). */
int kvp_eh_sha256(struct kvp_eh *h, const void *p, size_t n, uint8_t out[32]);

/* CPython's hash() of a tuple of ints (3.8+): SGLang's legacy page hash. */
uint64_t kvp_eh_py_tuple_hash(const int64_t *v, size_t n);

#endif
