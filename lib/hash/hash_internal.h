/* SPDX-License-Identifier: MIT */
/*
 * hash_internal.h — private to lib/hash/: the byte buffer and the CBOR and
 * pickle encoders of engine_ser.c, shared by engine_hash.c and detect.c.
 */
#ifndef KVP_HASH_INTERNAL_H
#define KVP_HASH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hash/engine_hash.h"

/* A growable byte buffer; oom sticks once an allocation failed. */
struct kvp_engine_ser_buf {
	uint8_t *p;
	size_t n, cap;
	int oom;
	size_t frame; /* pickle: offset of the open frame's header */
};

int kvp_engine_ser_reserve(struct kvp_engine_ser_buf *b, size_t more);

/* Canonical CBOR (RFC 8949 §4.2.1: definite lengths, shortest heads), the
 * bytes of Python's cbor2.dumps(x, canonical=True). */
void kvp_engine_ser_cbor_head(struct kvp_engine_ser_buf *b, unsigned major,
                              uint64_t v);
void kvp_engine_ser_cbor_int(struct kvp_engine_ser_buf *b, int64_t v);
void kvp_engine_ser_cbor_bytes(struct kvp_engine_ser_buf *b, unsigned major,
                               const void *p, size_t n);
void kvp_engine_ser_cbor_extra(struct kvp_engine_ser_buf *b,
                               const struct kvp_eextra *ex);

/* Pickle protocol 5 as CPython's C pickler writes it, frames included:
 * kvp_engine_ser_pickle_begin() writes PROTO and opens a frame,
 * kvp_engine_ser_pickle_boundary() runs before each object (a frame of 64 KiB
 * or more is closed there and a new one opened), kvp_engine_ser_pickle_end()
 * writes STOP and closes the frame. */
void kvp_engine_ser_pickle_begin(struct kvp_engine_ser_buf *b);
void kvp_engine_ser_pickle_boundary(struct kvp_engine_ser_buf *b);
void kvp_engine_ser_pickle_end(struct kvp_engine_ser_buf *b);
void kvp_engine_ser_pickle_int(struct kvp_engine_ser_buf *b, int64_t v);
void kvp_engine_ser_pickle_str(struct kvp_engine_ser_buf *b, const char *s,
                               size_t n);
void kvp_engine_ser_pickle_bytes(struct kvp_engine_ser_buf *b, const void *p,
                                 size_t n);
void kvp_engine_ser_pickle_op(struct kvp_engine_ser_buf *b, uint8_t op);
/* kvp_engine_ser_pickle_tuple_close() closes a tuple of n saved elements:
 * TUPLE1-3, or MARK ... TUPLE (the MARK written by
 * kvp_engine_ser_pickle_tuple_open()); EMPTY_TUPLE takes no memo. */
void kvp_engine_ser_pickle_tuple_open(struct kvp_engine_ser_buf *b, size_t n);
void kvp_engine_ser_pickle_tuple_close(struct kvp_engine_ser_buf *b, size_t n);
void kvp_engine_ser_pickle_extra(struct kvp_engine_ser_buf *b,
                                 const struct kvp_eextra *ex);

/* ---- detect.c / detect_check.c ------------------------------------------ */

#include "hash/detect.h"

/* One BlockStored event. */
struct kvp_dstore {
	int64_t *tok;
	size_t n_tok;
	uint64_t *h;
	size_t n_h;
	/* block_offsets (a sparse store: block i is chunk off[i]) or NULL;
	 * n_chunks: the chunks hashed, every full chunk of a sparse store's
	 * tokens (n_h for a dense store) */
	uint64_t *off;
	size_t n_chunks;
	int has_parent;
	uint64_t parent;
	uint32_t bs;
	int eagle;
	char *lora, *salt; /* NULL: none */
	int has_lora_id;
	uint64_t lora_id;
	struct json_object *extra; /* extra_keys (a reference) or NULL */
	/* SGLang media stores: block_hashes_sha256 (n_h digests) or NULL,
	 * parent_block_hash_sha256, and the record's mm_spans */
	uint8_t *sha;
	int has_sha_parent;
	struct kvp_edigest sha_parent;
	struct kvp_espan *spans;
	size_t n_spans, spans_cap;
};

struct kvp_dstream {
	char *name;
	struct json_object *worker_id, *topic, *dp_rank; /* references */
	struct kvp_dstore *st;
	size_t n, cap;
	int neg;     /* a hash_repr "int" value below 0 */
	int bytes;   /* hashes published as bin (not checked) */
	uint32_t bs; /* the first store's block size */
	struct kvp_verdict v;
};

/* A candidate profile: scheme, seed text, hash granularity. */
struct kvp_dcand {
	enum kvp_scheme s;
	const char *seed;
	uint32_t g;
};

struct kvp_dcount {
	uint64_t vb, mb, ub, vs; /* verified/mismatched/unresolved blocks,
	                          * verified stores */
	uint64_t mm_vb;          /* of vb: blocks whose full digest
	                          * (block_hashes_sha256) matched too */
};

/* Chunk of store block j. */
static inline size_t
kvp_dstore_chunk(const struct kvp_dstore *st, size_t j)
{
	return st->off != NULL ? (size_t)st->off[j] : j;
}

/* Probe blocks of candidate c that match (at most max_probes stores). */
long kvp_dcheck_probe(const struct kvp_dcand *c, const struct kvp_dstream *s,
                      size_t max_probes);
/* Full order-independent verification of stream s under c. */
int kvp_dcheck_full(const struct kvp_dcand *c, const struct kvp_dstream *s,
                    struct kvp_dcount *n);
/* Decimal seeds 0..2^32-1 for the vLLM schemes on one root store. */
int kvp_dcheck_seed_search(const struct kvp_dstream *s, double max_seconds,
                           unsigned threads, struct kvp_verdict *v,
                           enum kvp_scheme *found);

#endif
