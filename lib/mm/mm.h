/* SPDX-License-Identifier: MIT */
/*
 * mm.h — router-side multimodal prompt expansion, as NVIDIA Dynamo's
 * frontend does it before hashing a request into KV blocks
 * (spec-mm-expand.md).
 *
 * Families (§7.4): Kimi K2/K2.5/K2.6 (repeated pad, NaViT budget 16384),
 * Kimi-K3 (media_begin + "image WxH" + media_content + pads + media_end,
 * NaViT budget 65536), Qwen2-VL/2.5-VL (smart_resize, factor 28),
 * Qwen3-VL (factor 32), LLaVA-1.5 (576 per image, BOS 1). Anything else is
 * unsupported_model: never a guess.
 *
 * One struct kvp_mm per run: it owns the reusable buffers, the dims
 * tokenizer (borrowed) and a small cache of image files already read
 * (keyed by path, device, inode, size and mtime).
 *
 * Nothing here prints. A malformed record (wrong types, missing token_ids)
 * is an error (-1 and a diag); every problem Dynamo itself would fall back
 * on is a "fallback" result with a reason code (§7.3) and a detail message.
 */
#ifndef KVP_MM_H
#define KVP_MM_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

struct json_object;
struct kvp_jw;
struct kvp_tokenizer;
struct kvp_tok_ids;

enum kvp_mm_family {
	KVP_MM_UNKNOWN = 0,
	KVP_MM_KIMI_K25,
	KVP_MM_KIMI_K3,
	KVP_MM_QWEN2_VL,
	KVP_MM_QWEN3_VL,
	KVP_MM_LLAVA,
};

enum kvp_mm_layout {
	KVP_MM_LAYOUT_NONE = 0,
	KVP_MM_LAYOUT_REPEATED_PAD,
	KVP_MM_LAYOUT_KIMI_K3,
};

enum kvp_mm_counter_kind { KVP_MM_NAVIT, KVP_MM_SMART, KVP_MM_FIXED };

/* Token counter parameters (§3). */
struct kvp_mm_counter {
	enum kvp_mm_counter_kind kind;
	uint64_t patch, merge;
	uint64_t in_patch_limit, side_limit; /* NaViT */
	uint64_t min_px, max_px;             /* smart_resize */
	uint64_t fixed;                      /* fixed count (LLaVA) */
};

/* Kimi-K3 control tokens and the Kimi media pad (spec §1.3). */
#define KVP_MM_KIMI_MEDIA_BEGIN 163602u
#define KVP_MM_KIMI_MEDIA_CONTENT 163603u
#define KVP_MM_KIMI_MEDIA_END 163604u
#define KVP_MM_KIMI_MEDIA_PAD 163605u
/* Dynamo's MAX_MM_ROUTING_TOKENS: longest padded routing sequence. */
#define KVP_MM_MAX_ROUTING_TOKENS 1048576u

const char *kvp_mm_family_name(enum kvp_mm_family f);
const char *kvp_mm_layout_name(enum kvp_mm_layout l);
/* Exact family name ("kimi_k3", ...), else KVP_MM_UNKNOWN. */
enum kvp_mm_family kvp_mm_family_by_name(const char *s);
/* §7.4 case-insensitive substring rules on a model id or model_type. */
enum kvp_mm_family kvp_mm_family_match(const char *s);
enum kvp_mm_layout kvp_mm_family_layout(enum kvp_mm_family f);
uint32_t kvp_mm_family_placeholder(enum kvp_mm_family f);
/* BOS id prepended by default (LLaVA: 1); -1 for none. */
int64_t kvp_mm_family_bos(enum kvp_mm_family f);

/* Counter defaults of a family, and the same overridden by a
 * preprocessor_config object (smg rules, Kimi media_proc_cfg flattening).
 * from_config returns -1 with d set on a bad parameter value. */
void kvp_mm_counter_default(enum kvp_mm_family f, struct kvp_mm_counter *c);
int kvp_mm_counter_from_config(enum kvp_mm_family f,
                               const struct json_object *cfg,
                               struct kvp_mm_counter *c, struct kvp_diag *d);
/* Image tokens for a W x H image (w, h > 0). Symmetric in (w, h). */
uint64_t kvp_mm_count(const struct kvp_mm_counter *c, uint32_t w, uint32_t h);

/* Parses a mm_hash value: a u64 JSON integer, or a string of 16 hex
 * digits (optionally "0x"), or vLLM's 64-hex form (first 16 digits, as
 * Dynamo's hash_mm_identifier). */
int kvp_mm_parse_hash(const struct json_object *v, uint64_t *out,
                      struct kvp_diag *d);

enum kvp_mm_policy { KVP_MM_ENCODED = 0, KVP_MM_EXIF_TRANSPOSED };

struct kvp_mm_opts {
	uint32_t block_size;       /* default for records without one */
	uint64_t chain_seed;       /* sequence-hash seed (§2.3; default 0) */
	enum kvp_mm_policy policy; /* default dims policy */
	uint64_t max_pixels;       /* refuse larger images; 0: no limit */
	size_t max_image_bytes;    /* largest image file / data payload */
	struct kvp_tokenizer *tok; /* dims tokenizer (borrowed) */
};

struct kvp_mm_image {
	uint64_t mm_hash;
	const char *hash_source; /* "explicit", "url", "file_bytes" */
	uint32_t width, height;  /* after the dims policy */
	uint32_t orientation;    /* EXIF value; 0 when unknown */
	uint64_t count;
	uint32_t pad;
	char dims_text[48];        /* K3 only */
	size_t dims_off, dims_len; /* K3 dims ids in the shared buffer */
};

struct kvp_mm_result {
	const struct json_object *id; /* borrowed from the record */
	int exact;
	const char *reason; /* NULL when exact */
	char detail[256];   /* "" when none */
	enum kvp_mm_family family;
	enum kvp_mm_layout layout;
	struct kvp_mm_image *img;
	size_t n_img;
	uint32_t *dims_ids;
	uint32_t *tokens; /* routing_token_ids (exact) or token_ids */
	size_t n_tokens;
	size_t expanded_len; /* exact only */
	uint32_t block_size;
	int eagle;
	uint64_t block_seed, chain_seed;
	uint64_t *local, *seq;
	size_t n_blocks, complete_blocks;
};

struct kvp_mm;

/* NULL on no memory. */
struct kvp_mm *kvp_mm_new(const struct kvp_mm_opts *o);
void kvp_mm_free(struct kvp_mm *m);

/* Expands one request record (§7.2). Returns 0 with the result available
 * through kvp_mm_result() (exact or fallback), or -1 with d set when the
 * record is malformed. rec must outlive the result (id is borrowed). */
int kvp_mm_expand(struct kvp_mm *m, const struct json_object *rec,
                  struct kvp_diag *d);
const struct kvp_mm_result *kvp_mm_result(const struct kvp_mm *m);

/* Writes the result as one output record (kvpipe-records(5), mm-expand). */
void kvp_mm_write(const struct kvp_mm *m, struct kvp_jw *w);

/*
 * Special-token table for the dims tokenizer from a JSON file: an object
 * {"<|name|>": id, ...}, or a tokenizer_config.json-style object with
 * "added_tokens_decoder": {"id": {"content": "<|name|>"}, ...}. Replaces
 * the tokenizer's table. Returns 0, or -1 with d set.
 */
int kvp_mm_load_specials(struct kvp_tokenizer *t, const char *path,
                         struct kvp_diag *d);

/*
 * Tokenizer mode (mm-expand --encode): reads {"id": .., "text": "...",
 * "allow_special": bool} and writes {"rec": "tokens", "id": ..,
 * "n_tokens": N, "token_ids": [...]}. Returns 0, or -1 with d set.
 */
int kvp_mm_encode_record(struct kvp_tokenizer *t, const struct json_object *rec,
                         struct kvp_tok_ids *ids, struct kvp_jw *w,
                         struct kvp_diag *d);

#endif
