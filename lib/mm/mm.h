/* SPDX-License-Identifier: MIT */
/*
 * mm.h — router-side multimodal prompt expansion, as NVIDIA Dynamo's
 * frontend does it before hashing a request into KV blocks
 * (docs/spec/mm-expand.md): the expansion core. Plain structs in (a request,
 * read from a record by mm_io.h), plain structs out (a result); no JSON.
 *
 * One struct kvp_mm per run: it owns the result and its reusable buffers,
 * the image sources (with their cache of files already read) and borrows
 * the dims tokenizer.
 *
 * Nothing here prints. Every problem Dynamo itself would fall back on is a
 * "fallback" result with a reason code (§7.3) and a detail message; only a
 * request that cannot be expanded at all (no memory, dims_token_ids that
 * did not parse) is an error. Statuses are enum kvp_status (kvpipe.h).
 */
#ifndef KVP_MM_H
#define KVP_MM_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "mm/family.h"

struct kvp_tokenizer;

enum kvp_mm_policy { KVP_MM_ENCODED = 0, KVP_MM_EXIF_TRANSPOSED };

struct kvp_mm_opts {
	uint32_t block_size;       /* default for requests without one */
	uint64_t chain_seed;       /* sequence-hash seed (§2.3; default 0) */
	enum kvp_mm_policy policy; /* default dims policy */
	uint64_t max_pixels;       /* refuse larger images; 0: no limit */
	size_t max_image_bytes;    /* largest image file / data payload */
	struct kvp_tokenizer *tok; /* dims tokenizer (borrowed) */
	/* the tokenizer of video timestamp texts (borrowed); NULL when none
	 * was given: a request with videos then falls back */
	struct kvp_tokenizer *text_tok;
	enum kvp_mm_video_rule video_rule; /* default budget rule */
	size_t max_video_bytes;            /* largest video file / payload */
};

/* One image of a request (§7.2). Strings and arrays are borrowed. */
struct kvp_mm_image_req {
	const char *url;  /* NULL when absent; url_len bytes */
	const char *path; /* NULL when absent */
	size_t url_len;
	int has_dims, has_orient, has_hash, has_count, has_dims_ids;
	int uuid; /* a user uuid is set */
	uint32_t w, h, orient, count;
	uint64_t hash;
	const uint32_t *dims_ids; /* K3 dims text ids given by the request */
	size_t n_dims_ids;
};

/*
 * One video of a request: metadata (frames, width and height, fps, the
 * sampled frames' timestamps in seconds), a source to read what is missing
 * from (a data: URL or a path), or both; the explicit values win.
 */
struct kvp_mm_video_req {
	const char *url;  /* NULL when absent; url_len bytes */
	const char *path; /* NULL when absent */
	size_t url_len;
	int has_frames, has_dims, has_fps, has_hash, has_ts;
	int uuid;
	uint64_t frames;
	uint32_t w, h;
	double fps;
	uint64_t hash;
	const double *ts; /* n_ts timestamps when has_ts */
	size_t n_ts;
};

/*
 * A request. family and counter are already resolved (counter is used only
 * when family is known); named is the family, model or model_type string
 * the family came from, for the unsupported_model detail.
 *
 * dims_token_ids are only needed for the Kimi-K3 layout, so a malformed one
 * is an error only when the expansion reaches it: bad_dims_ids is the index
 * of the first image whose dims_token_ids did not parse (SIZE_MAX for none)
 * and bad_dims_diag the message.
 */
struct kvp_mm_req {
	const uint32_t *tokens; /* token_ids */
	size_t n_tokens;
	int has_block_size, has_policy, has_placeholder, has_bos;
	uint32_t block_size;
	enum kvp_mm_policy policy;
	uint32_t placeholder;
	int64_t bos; /* -1: none */
	int eagle;
	const char *lora, *cache_namespace; /* NULL when absent */
	enum kvp_mm_family family;
	const char *named;
	struct kvp_mm_counter counter;
	int kwargs_set;       /* mm_processor_kwargs is non-empty */
	uint64_t other_media; /* non-image media parts */
	const struct kvp_mm_image_req *img;
	size_t n_img;
	const struct kvp_mm_video_req *vid;
	size_t n_vid;
	int has_video_rule;
	enum kvp_mm_video_rule video_rule;
	size_t bad_dims_ids;
	struct kvp_diag bad_dims_diag;
};

struct kvp_mm_image {
	uint64_t mm_hash;
	const char *hash_source; /* "explicit", "url", "file_bytes" */
	uint32_t width, height;  /* after the dims policy */
	uint32_t orientation;    /* 1..8; 0 when unknown; or
	                            KVP_IMAGE_ORIENT_INVALID (mm/image.h) */
	uint64_t count;
	uint32_t pad;
	char dims_text[48];        /* K3 only */
	size_t dims_off, dims_len; /* K3 dims ids in the shared buffer */
};

struct kvp_mm_video {
	uint64_t mm_hash;
	const char *hash_source; /* "explicit", "url", "file_bytes" */
	uint32_t width, height;
	uint64_t frames;
	double fps;
	uint64_t grid[3]; /* T, H, W */
	uint64_t count;   /* video tokens: T * H * W / merge^2 */
	uint32_t pad;
	int wrapped; /* its placeholder is [vision_start, video, vision_end] */
	size_t group0; /* its T groups start at the result's groups[group0] */
};

/* A temporal group's timestamp text, as Qwen3-VL's processor writes it
 * (Python's f"<{t:.1f} seconds>": the double rounded half to even). */
#define KVP_MM_TS_FMT "<%.1f seconds>"

/* A temporal group: its mean frame time and its timestamp text's ids (in
 * the expansion's own buffer). */
struct kvp_mm_vgroup {
	double time;
	size_t off, len;
};

struct kvp_mm_result {
	int exact;
	const char *reason; /* NULL when exact */
	char detail[256];   /* "" when none */
	enum kvp_mm_family family;
	enum kvp_mm_layout layout;
	struct kvp_mm_image *img;
	size_t n_img;
	struct kvp_mm_video *vid;
	size_t n_vid;
	struct kvp_mm_vgroup *groups;
	size_t n_groups;
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

/*
 * Expands one request (§7.2). Returns KVP_OK with the result available
 * through kvp_mm_result() (exact or fallback) until the next call, or
 * KVP_BAD with d set: a malformed dims_token_ids the expansion needed, or
 * no memory (reported as a bad record, as it always was).
 */
int kvp_mm_expand(struct kvp_mm *m, const struct kvp_mm_req *req,
                  struct kvp_diag *d);
const struct kvp_mm_result *kvp_mm_result(const struct kvp_mm *m);

#endif
