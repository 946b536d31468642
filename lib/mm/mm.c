/* SPDX-License-Identifier: MIT */
/* mm.c — the multimodal expansion core (mm.h): fallback rules, image
 * resolution, token counts, the routing sequence and its block hashes. */
#include "mm/mm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/util.h"
#include "kvpipe.h"
#include "mm/dataurl.h"
#include "mm/image.h"
#include "mm/mm_internal.h"
#include "mm/tokenizer.h"

struct kvp_mm {
	struct kvp_mm_opts o;
	struct kvp_mm_result r;
	size_t tok_cap, img_cap, blk_cap, seq_cap, vid_cap;
	struct kvp_tok_ids dims; /* K3 control and dims text ids */
	struct kvp_imgsrc src;
	struct kvp_mm_vbuf vb; /* the videos' temporal groups */
	struct kvp_vidsrc vsrc;
};

/* One expansion: the request and what the core settled for it. */
struct expansion {
	const struct kvp_mm_req *req;
	enum kvp_mm_policy policy;
	uint32_t placeholder;
	int64_t bos;
	uint32_t ctl[3]; /* K3 media_begin, media_content, media_end */
	uint64_t total;  /* expanded length */
	int has_video;   /* the family has video ids */
	struct kvp_mm_video_ids vids;
	enum kvp_mm_video_rule rule;
};

struct kvp_mm *
kvp_mm_new(const struct kvp_mm_opts *o)
{
	struct kvp_mm *m = calloc(1, sizeof *m);

	if (m == NULL)
		return NULL;
	m->o = *o;
	kvp_imgsrc_init(&m->src, o->max_pixels, o->max_image_bytes);
	kvp_vidsrc_init(&m->vsrc, o->max_video_bytes);
	return m;
}

void
kvp_mm_free(struct kvp_mm *m)
{
	if (m == NULL)
		return;
	free(m->r.tokens);
	free(m->r.img);
	free(m->r.local);
	free(m->r.seq);
	free(m->r.vid);
	free(m->vb.g);
	kvp_tok_ids_free(&m->vb.ids);
	kvp_tok_ids_free(&m->dims);
	kvp_imgsrc_fini(&m->src);
	kvp_vidsrc_fini(&m->vsrc);
	free(m);
}

const struct kvp_mm_result *
kvp_mm_result(const struct kvp_mm *m)
{
	return &m->r;
}

static uint64_t
ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

static int
grow(void *p, size_t *cap, size_t want, size_t elem, struct kvp_diag *d)
{
	if (kvp_grow(p, cap, want, elem) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	return 0;
}

static int fallback(struct kvp_mm *m, const char *reason, const char *fmt, ...)
    KVP_PRINTF(3, 4);

/* Records a fallback; returns 1 so deciding steps can return it. */
static int
fallback(struct kvp_mm *m, const char *reason, const char *fmt, ...)
{
	va_list ap;

	m->r.exact = 0;
	m->r.reason = reason;
	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(m->r.detail, sizeof m->r.detail, fmt, ap);
		va_end(ap);
	}
	return 1;
}

/* ---- images -------------------------------------------------------------- */

/* Header info from the image's bytes, when the request needs it. */
static int
read_info(struct kvp_mm *m, const struct kvp_mm_image_req *in,
          struct kvp_image_info *info, uint64_t *fhash, int *have,
          struct kvp_diag *d)
{
	*have = 0;
	if (in->url != NULL && kvp_dataurl_is(in->url, in->url_len) &&
	    !in->has_dims) {
		if (kvp_imgsrc_dataurl(&m->src, in->url, in->url_len, info,
		                       d) != 0)
			return -1;
		*have = 1;
	} else if (in->path != NULL &&
	           (!in->has_dims || (!in->has_hash && in->url == NULL))) {
		if (kvp_imgsrc_file(&m->src, in->path, info, fhash, d) != 0)
			return -1;
		*have = 1;
	}
	return 0;
}

/* mm_hash: explicit, else of the URL, else of the file's bytes. */
static int
image_hash(const struct kvp_mm_image_req *in, uint64_t fhash,
           struct kvp_mm_image *im, struct kvp_diag *d)
{
	if (in->has_hash) {
		im->mm_hash = in->hash;
		im->hash_source = "explicit";
	} else if (in->url != NULL) {
		im->mm_hash = kvp_hash_bytes(in->url, in->url_len, 0);
		im->hash_source = "url";
	} else if (in->path != NULL) {
		im->mm_hash = fhash;
		im->hash_source = "file_bytes";
	} else {
		return kvp_diag_set(d, 0, "no url, path or mm_hash");
	}
	return 0;
}

/* Dims as given, else from the header; then the dims policy. */
static int
image_dims(struct kvp_mm *m, const struct kvp_mm_image_req *in,
           const struct kvp_image_info *info, int have_info,
           enum kvp_mm_policy policy, struct kvp_mm_image *im,
           struct kvp_diag *d)
{
	if (in->has_dims) {
		im->width = in->w;
		im->height = in->h;
		if (m->o.max_pixels != 0 &&
		    (uint64_t)in->w * in->h > m->o.max_pixels)
			return kvp_diag_set(
			    d, 0,
			    "%ux%u is over the pixel limit of "
			    "%llu",
			    in->w, in->h, (unsigned long long)m->o.max_pixels);
	} else if (have_info) {
		im->width = info->width;
		im->height = info->height;
	} else {
		return kvp_diag_set(d, 0,
		                    "no width/height, path or data: URL "
		                    "(mm-expand never fetches http(s) URLs)");
	}
	if (im->width == 0 || im->height == 0)
		return kvp_diag_set(d, 0, "zero width or height");
	im->orientation = in->has_orient ? in->orient : info->orientation;
	if (im->orientation > 8) /* a value outside 1..8 is never echoed */
		im->orientation = KVP_IMAGE_ORIENT_INVALID;
	if (policy == KVP_MM_EXIF_TRANSPOSED &&
	    kvp_image_swaps_axes(im->orientation)) {
		uint32_t t = im->width;

		im->width = im->height;
		im->height = t;
	}
	return 0;
}

/* Fills m->r.img[i] (hash, dims, orientation) or returns -1 with d set. */
static int
resolve_image(struct kvp_mm *m, const struct expansion *x, size_t i,
              struct kvp_diag *d)
{
	const struct kvp_mm_image_req *in = &x->req->img[i];
	struct kvp_mm_image *im = &m->r.img[i];
	struct kvp_image_info info = {0};
	uint64_t fhash = 0;
	int have_info;

	if (read_info(m, in, &info, &fhash, &have_info, d) != 0 ||
	    image_hash(in, fhash, im, d) != 0)
		return -1;
	return image_dims(m, in, &info, have_info, x->policy, im, d);
}

/* ---- deciding ------------------------------------------------------------ */

/* Encodes a K3 control token; 0 with *id, or 1 (fallback already set). */
static int
control_token(struct kvp_mm *m, const char *name, uint32_t *id)
{
	struct kvp_diag ed;

	m->dims.n = 0;
	if (m->o.tok == NULL) {
		*id = kvp_mm_family_placeholder(KVP_MM_KIMI_K3);
		return 0;
	}
	if (kvp_tok_encode(m->o.tok, name, strlen(name), 1, &m->dims, &ed) != 0)
		return fallback(m, "layout_unresolved", "%s: %s", name, ed.msg);
	if (m->dims.n != 1)
		return fallback(m, "layout_unresolved",
		                "Kimi-K3 routing control token %s encoded to "
		                "%zu ids; expected exactly one",
		                name, m->dims.n);
	*id = m->dims.v[0];
	return 0;
}

/* The request-level fallbacks, in Dynamo's order: 0, or 1 (fallback). */
static int
check_request(struct kvp_mm *m, struct expansion *x)
{
	static const char *const names[3] = {
	    "<|media_begin|>", "<|media_content|>", "<|media_end|>"};
	const struct kvp_mm_req *req = x->req;
	struct kvp_mm_result *r = &m->r;

	if (r->layout == KVP_MM_LAYOUT_KIMI_K3)
		for (size_t i = 0; i < 3; i++)
			if (control_token(m, names[i], &x->ctl[i]) != 0)
				return 1;
	if (r->block_size == 0)
		return fallback(m, "block_size_zero", "block_size is 0");
	for (size_t i = 0; i < r->n_img; i++)
		if (req->img[i].uuid)
			return fallback(m, "user_uuid",
			                "images[%zu] has a user uuid", i);
	for (size_t i = 0; i < r->n_vid; i++)
		if (req->vid[i].uuid)
			return fallback(m, "user_uuid",
			                "videos[%zu] has a user uuid", i);
	if (req->kwargs_set)
		return fallback(m, "mm_processor_kwargs",
		                "mm_processor_kwargs is set");
	if (req->other_media > 0)
		return fallback(m, "non_image_media",
		                "%llu non-image media part(s)",
		                (unsigned long long)req->other_media);
	if (r->n_vid > 0 && !x->has_video)
		return fallback(m, "non_image_media",
		                "%zu video(s), and family %s has no video rule "
		                "(qwen3_vl and qwen3_5 have)",
		                r->n_vid, kvp_mm_family_name(r->family));
	return 0;
}

/* Every video resolved and one video token per video, each bare or
 * wrapped in vision_start / vision_end: 0, or 1 (fallback set). */
static int
check_videos(struct kvp_mm *m, const struct expansion *x)
{
	const struct kvp_mm_req *req = x->req;
	const uint32_t *t = req->tokens;
	struct kvp_mm_result *r = &m->r;
	struct kvp_diag vd;
	size_t k = 0;

	for (size_t i = 0; i < r->n_vid; i++)
		if (kvp_mm_video_resolve(&m->vsrc, &req->vid[i], x->rule,
		                         &r->vid[i], &vd) != 0)
			return fallback(m, "dims_unresolved", "videos[%zu]: %s",
			                i, vd.msg);
	for (size_t i = 0; i < req->n_tokens; i++) {
		if (t[i] != x->vids.video)
			continue;
		if (k < r->n_vid)
			r->vid[k].wrapped = i > 0 &&
			                    t[i - 1] == x->vids.vision_start &&
			                    i + 1 < req->n_tokens &&
			                    t[i + 1] == x->vids.vision_end;
		k++;
	}
	if (k != r->n_vid)
		return fallback(m, "placeholder_count_mismatch",
		                "video token %u occurs %zu times for %zu "
		                "video(s)",
		                x->vids.video, k, r->n_vid);
	return 0;
}

/* Every image resolved and one placeholder per image: 0, or 1. */
static int
check_images(struct kvp_mm *m, const struct expansion *x)
{
	const struct kvp_mm_req *req = x->req;
	struct kvp_diag id;
	uint64_t nph = 0;

	for (size_t i = 0; i < m->r.n_img; i++)
		if (resolve_image(m, x, i, &id) != 0)
			return fallback(m, "dims_unresolved", "images[%zu]: %s",
			                i, id.msg);
	if (m->r.n_vid > 0 && check_videos(m, x) != 0)
		return 1;
	for (size_t i = 0; i < req->n_tokens; i++)
		nph += req->tokens[i] == x->placeholder;
	if (nph != m->r.n_img)
		return fallback(m, "placeholder_count_mismatch",
		                "placeholder token %u occurs %llu times for "
		                "%zu image(s)",
		                x->placeholder, (unsigned long long)nph,
		                m->r.n_img);
	return 0;
}

/* K3 dims text ids of image i into m->dims: 0, 1 (fallback) or -1. */
static int
k3_dims_ids(struct kvp_mm *m, const struct expansion *x, size_t i,
            struct kvp_diag *d)
{
	const struct kvp_mm_image_req *in = &x->req->img[i];
	struct kvp_mm_image *im = &m->r.img[i];
	int len = snprintf(im->dims_text, sizeof im->dims_text, "image %ux%u",
	                   im->width, im->height);
	struct kvp_diag id;

	im->dims_off = m->dims.n;
	if (in->has_dims_ids) {
		if (i == x->req->bad_dims_ids) {
			if (d != NULL)
				*d = x->req->bad_dims_diag;
			return -1;
		}
		for (size_t k = 0; k < in->n_dims_ids; k++)
			if (kvp_tok_ids_push(&m->dims, in->dims_ids[k]) != 0)
				return kvp_diag_set(d, 0, "out of memory");
	} else if (m->o.tok != NULL &&
	           kvp_tok_encode(m->o.tok, im->dims_text, (size_t)len, 0,
	                          &m->dims, &id) != 0) {
		return fallback(m, "expansion_failed",
		                "images[%zu]: dims text \"%s\": %s", i,
		                im->dims_text, id.msg);
	}
	im->dims_len = m->dims.n - im->dims_off;
	return 0;
}

/* The videos' temporal groups and their share of the total: 0 or 1. */
static int
count_videos(struct kvp_mm *m, struct expansion *x)
{
	struct kvp_mm_result *r = &m->r;
	struct kvp_diag vd;

	for (size_t i = 0; i < r->n_vid; i++) {
		struct kvp_mm_video *v = &r->vid[i];

		/* the bound first: a video's groups are allocated */
		if (x->total + v->count + 2 * v->grid[0] >
		    KVP_MM_MAX_ROUTING_TOKENS)
			return fallback(m, "too_long",
			                "expanded prompt longer than %u tokens",
			                KVP_MM_MAX_ROUTING_TOKENS);
		if (kvp_mm_video_groups(m->o.text_tok, &x->req->vid[i], v,
		                        &m->vb, &vd) != 0)
			return fallback(m, "expansion_failed",
			                "videos[%zu]: %s", i, vd.msg);
		x->total += kvp_mm_video_len(v, &m->vb);
		x->total -= v->wrapped ? 3 : 1;
		if (x->total > KVP_MM_MAX_ROUTING_TOKENS)
			return fallback(m, "too_long",
			                "expanded prompt longer than %u tokens",
			                KVP_MM_MAX_ROUTING_TOKENS);
	}
	r->groups = m->vb.g;
	r->n_groups = m->vb.n;
	return 0;
}

/* Token counts, pad values, K3 dims ids and the checked total length. */
static int
count_images(struct kvp_mm *m, struct expansion *x, struct kvp_diag *d)
{
	struct kvp_mm_result *r = &m->r;
	int rc;

	m->dims.n = 0;
	x->total = x->req->n_tokens - r->n_img + (x->bos >= 0);
	for (size_t i = 0; i < r->n_img; i++) {
		struct kvp_mm_image *im = &r->img[i];
		const struct kvp_mm_image_req *in = &x->req->img[i];

		im->count = in->has_count ? in->count
		                          : kvp_mm_count(&x->req->counter,
		                                         im->width, im->height);
		im->pad = kvp_pad_value(im->mm_hash);
		if (r->layout == KVP_MM_LAYOUT_KIMI_K3) {
			rc = k3_dims_ids(m, x, i, d);
			if (rc != 0)
				return rc;
			x->total += 3 + im->dims_len;
		}
		x->total += im->count;
		if (x->total > KVP_MM_MAX_ROUTING_TOKENS)
			return fallback(m, "too_long",
			                "expanded prompt longer than %u tokens",
			                KVP_MM_MAX_ROUTING_TOKENS);
	}
	return count_videos(m, x);
}

/* The routing sequence: placeholders expanded, zero-padded to padded. */
static void
fill_tokens(struct kvp_mm *m, const struct expansion *x, uint64_t padded)
{
	struct kvp_mm_result *r = &m->r;
	const struct kvp_mm_req *req = x->req;
	int k3 = r->layout == KVP_MM_LAYOUT_KIMI_K3;
	size_t o = 0, k = 0, kv = 0;

	if (x->bos >= 0)
		r->tokens[o++] = (uint32_t)x->bos;
	for (size_t i = 0; i < req->n_tokens; i++) {
		const struct kvp_mm_image *im;

		if (kv < r->n_vid && req->tokens[i] == x->vids.video) {
			const struct kvp_mm_video *v = &r->vid[kv++];

			if (v->wrapped) { /* vision_start is out; skip
				             vision_end */
				o--;
				i++;
			}
			o += kvp_mm_video_emit(v, &m->vb, &x->vids,
			                       r->tokens + o);
			continue;
		}
		if (req->tokens[i] != x->placeholder || k >= r->n_img) {
			r->tokens[o++] = req->tokens[i];
			continue;
		}
		im = &r->img[k++];
		if (k3) {
			r->tokens[o++] = x->ctl[0];
			memcpy(r->tokens + o, m->dims.v + im->dims_off,
			       im->dims_len * sizeof *r->tokens);
			o += im->dims_len;
			r->tokens[o++] = x->ctl[1];
		}
		for (uint64_t j = 0; j < im->count; j++)
			r->tokens[o++] = im->pad;
		if (k3)
			r->tokens[o++] = x->ctl[2];
	}
	r->expanded_len = o;
	while (o < padded)
		r->tokens[o++] = 0;
	r->n_tokens = o;
}

/* Exact expansion: 0 (exact), 1 (fallback set) or -1 with d set. */
static int
decide(struct kvp_mm *m, struct expansion *x, struct kvp_diag *d)
{
	struct kvp_mm_result *r = &m->r;
	uint64_t padded;
	int rc;

	if (check_request(m, x) != 0 || check_images(m, x) != 0)
		return 1;
	rc = count_images(m, x, d);
	if (rc != 0)
		return rc;
	padded = ceil_div(x->total, r->block_size) * r->block_size;
	if (padded > KVP_MM_MAX_ROUTING_TOKENS)
		return fallback(m, "too_long",
		                "padded routing sequence of %llu tokens is "
		                "longer than %u",
		                (unsigned long long)padded,
		                KVP_MM_MAX_ROUTING_TOKENS);
	if (grow(&r->tokens, &m->tok_cap, (size_t)padded + 1, sizeof *r->tokens,
	         d) != 0)
		return -1;
	fill_tokens(m, x, padded);
	r->exact = 1;
	r->reason = NULL;
	return 0;
}

/* ---- the result ---------------------------------------------------------- */

/* Block and sequence hashes of r->tokens; complete blocks. */
static int
hash_blocks(struct kvp_mm *m, struct kvp_diag *d)
{
	struct kvp_mm_result *r = &m->r;
	size_t nb = kvp_hash_block_count(r->n_tokens, r->block_size, r->eagle);

	if (grow(&r->local, &m->blk_cap, nb + 1, sizeof *r->local, d) != 0 ||
	    grow(&r->seq, &m->seq_cap, nb + 1, sizeof *r->seq, d) != 0)
		return -1;
	r->n_blocks =
	    kvp_hash_tokens(r->tokens, r->n_tokens, r->block_size, r->eagle,
	                    r->block_seed, r->chain_seed, r->local, r->seq);
	if (r->exact) {
		size_t e = r->expanded_len;

		if (r->block_size == 0)
			r->complete_blocks = 0;
		else if (r->eagle)
			r->complete_blocks =
			    e >= 1 ? (e - 1) / r->block_size : 0;
		else
			r->complete_blocks = e / r->block_size;
	} else {
		r->complete_blocks = r->n_blocks;
	}
	return 0;
}

/* Resets the result for req and settles the request's defaults. */
static int
begin(struct kvp_mm *m, const struct kvp_mm_req *req, struct expansion *x,
      struct kvp_diag *d)
{
	struct kvp_mm_result *r = &m->r;

	memset(x, 0, sizeof *x);
	x->req = req;
	x->policy = req->has_policy ? req->policy : m->o.policy;
	x->bos = req->has_bos ? req->bos : kvp_mm_family_bos(req->family);
	x->ctl[0] = KVP_MM_KIMI_MEDIA_BEGIN;
	x->ctl[1] = KVP_MM_KIMI_MEDIA_CONTENT;
	x->ctl[2] = KVP_MM_KIMI_MEDIA_END;
	x->rule = req->has_video_rule ? req->video_rule : m->o.video_rule;
	x->has_video = kvp_mm_family_video(req->family, &x->vids);
	r->exact = 0;
	r->reason = NULL;
	r->detail[0] = '\0';
	r->family = req->family;
	r->layout = KVP_MM_LAYOUT_NONE;
	r->n_img = req->n_img;
	r->n_vid = req->n_vid;
	r->groups = NULL;
	r->n_groups = 0;
	m->vb.n = 0;
	m->vb.ids.n = 0;
	r->n_tokens = 0;
	r->expanded_len = 0;
	r->n_blocks = r->complete_blocks = 0;
	r->block_size = req->has_block_size ? req->block_size : m->o.block_size;
	r->eagle = req->eagle;
	r->chain_seed = m->o.chain_seed;
	r->block_seed =
	    kvp_hash_seed(KVP_HASH_SEED, req->lora, req->cache_namespace);
	if (grow(&r->img, &m->img_cap, r->n_img + 1, sizeof *r->img, d) != 0)
		return -1;
	memset(r->img, 0, r->n_img * sizeof *r->img);
	if (grow(&r->vid, &m->vid_cap, r->n_vid + 1, sizeof *r->vid, d) != 0)
		return -1;
	memset(r->vid, 0, r->n_vid * sizeof *r->vid);
	return 0;
}

int
kvp_mm_expand(struct kvp_mm *m, const struct kvp_mm_req *req,
              struct kvp_diag *d)
{
	struct kvp_mm_result *r = &m->r;
	struct expansion x;
	int rc = 0;

	if (begin(m, req, &x, d) != 0)
		return KVP_BAD;
	if (r->n_img == 0 && r->n_vid == 0)
		rc = fallback(m, "no_images", NULL);
	else if (r->family == KVP_MM_UNKNOWN)
		rc = fallback(m, "unsupported_model",
		              "no counter for family/model \"%s\"", req->named);
	if (rc == 0) {
		r->layout = kvp_mm_family_layout(r->family);
		x.placeholder = req->has_placeholder
		                    ? req->placeholder
		                    : kvp_mm_family_placeholder(r->family);
		rc = decide(m, &x, d);
		if (rc < 0)
			return KVP_BAD;
	}
	if (rc > 0) {
		/* fallback: the original token_ids, complete blocks only */
		if (grow(&r->tokens, &m->tok_cap, req->n_tokens + 1,
		         sizeof *r->tokens, d) != 0)
			return KVP_BAD;
		memcpy(r->tokens, req->tokens,
		       req->n_tokens * sizeof *r->tokens);
		r->n_tokens = req->n_tokens;
		r->expanded_len = 0;
		r->exact = 0;
	}
	return hash_blocks(m, d) != 0 ? KVP_BAD : KVP_OK;
}
