/* SPDX-License-Identifier: MIT */
/* mm_io.c — mm-expand's records: request JSON in, result JSON out, and the
 * tokenizer mode's records (mm_io.h). */
#include "mm/mm_io.h"

#include <json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/ndjson.h"
#include "common/util.h"
#include "kvpipe.h"
#include "mm/image.h"
#include "mm/tokenizer.h"

/* ---- preprocessor_config ------------------------------------------------- */

/* A positive integral parameter of a config object; 0 if absent/null. */
static int
cfg_num(const struct json_object *o, const char *key, uint64_t *out,
        struct kvp_diag *d)
{
	struct json_object *v;
	double x;

	*out = 0;
	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !kvp_json_get(o, key, &v))
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);

		if (i > 0) {
			*out = json_object_get_uint64(v);
			return 0;
		}
	} else if (json_object_is_type(v, json_type_double)) {
		x = json_object_get_double(v);
		if (isfinite(x) && x >= 1 && x < 18446744073709551616.0 &&
		    x == floor(x)) {
			*out = (uint64_t)x;
			return 0;
		}
	}
	return kvp_diag_set(d, 0,
	                    "preprocessor_config: \"%s\" must be a positive "
	                    "integer",
	                    key);
}

static const struct json_object *
cfg_sub(const struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o != NULL && kvp_json_get(o, key, &v) &&
	    json_object_is_type(v, json_type_object))
		return v;
	return NULL;
}

/* Top-level key, else the same in media_proc_cfg (Kimi). */
static int
kimi_num(const struct json_object *cfg, const char *key, const char *alt,
         uint64_t *out, struct kvp_diag *d)
{
	const struct json_object *m = cfg_sub(cfg, "media_proc_cfg");

	if (cfg_num(cfg, key, out, d) != 0)
		return -1;
	if (*out == 0 && alt != NULL && cfg_num(cfg, alt, out, d) != 0)
		return -1;
	if (*out == 0 && cfg_num(m, key, out, d) != 0)
		return -1;
	if (*out == 0 && alt != NULL && cfg_num(m, alt, out, d) != 0)
		return -1;
	return 0;
}

static int
navit_config(const struct json_object *cfg, struct kvp_mm_counter *c,
             struct kvp_diag *d)
{
	uint64_t v;

	if (kimi_num(cfg, "patch_size", NULL, &v, d) != 0)
		return -1;
	if (v)
		c->patch = v;
	if (kimi_num(cfg, "merge_kernel_size", "merge_size", &v, d) != 0)
		return -1;
	if (v)
		c->merge = v;
	if (kimi_num(cfg, "in_patch_limit", NULL, &v, d) != 0)
		return -1;
	if (v)
		c->in_patch_limit = v;
	if (kimi_num(cfg, "patch_limit_on_one_side", NULL, &v, d) != 0)
		return -1;
	if (v)
		c->side_limit = v;
	return 0;
}

/* Qwen3-VL also takes the pixel bounds from size.{shortest,longest}_edge. */
static int
smart_config(enum kvp_mm_family f, const struct json_object *cfg,
             struct kvp_mm_counter *c, struct kvp_diag *d)
{
	const struct json_object *size = cfg_sub(cfg, "size");
	uint64_t v;

	if (cfg_num(cfg, "patch_size", &v, d) != 0)
		return -1;
	if (v)
		c->patch = v;
	if (cfg_num(cfg, "merge_size", &v, d) != 0)
		return -1;
	if (v)
		c->merge = v;
	if (cfg_num(cfg, "min_pixels", &v, d) != 0)
		return -1;
	if (v == 0 && (f == KVP_MM_QWEN3_VL || f == KVP_MM_QWEN3_5) &&
	    cfg_num(size, "shortest_edge", &v, d) != 0)
		return -1;
	if (v)
		c->min_px = v;
	if (cfg_num(cfg, "max_pixels", &v, d) != 0)
		return -1;
	if (v == 0 && (f == KVP_MM_QWEN3_VL || f == KVP_MM_QWEN3_5) &&
	    cfg_num(size, "longest_edge", &v, d) != 0)
		return -1;
	if (v)
		c->max_px = v;
	return 0;
}

/* LLaVA: (side / patch)^2 for the image side (size.height, else
 * size.shortest_edge, else 336). */
static int
fixed_config(const struct json_object *cfg, struct kvp_mm_counter *c,
             struct kvp_diag *d)
{
	const struct json_object *size = cfg_sub(cfg, "size");
	uint64_t v, side;

	if (cfg_num(cfg, "patch_size", &v, d) != 0)
		return -1;
	if (v)
		c->patch = v;
	if (cfg_num(size, "height", &side, d) != 0)
		return -1;
	if (side == 0 && cfg_num(size, "shortest_edge", &side, d) != 0)
		return -1;
	if (side == 0)
		side = 336;
	if (side / c->patch > UINT32_MAX)
		return kvp_diag_set(d, 0,
		                    "preprocessor_config: image size "
		                    "too large");
	c->fixed = (side / c->patch) * (side / c->patch);
	return 0;
}

int
kvp_mm_counter_from_config(enum kvp_mm_family f, const struct json_object *cfg,
                           struct kvp_mm_counter *c, struct kvp_diag *d)
{
	int rc;

	kvp_mm_counter_default(f, c);
	if (cfg == NULL)
		return 0;
	switch (c->kind) {
	case KVP_MM_NAVIT:
		rc = navit_config(cfg, c, d);
		break;
	case KVP_MM_SMART:
		rc = smart_config(f, cfg, c, d);
		break;
	default:
		rc = fixed_config(cfg, c, d);
		break;
	}
	if (rc != 0)
		return -1;
	if (c->patch > UINT32_MAX || c->merge > UINT32_MAX ||
	    c->patch * c->merge > UINT32_MAX || c->side_limit > UINT32_MAX)
		return kvp_diag_set(d, 0,
		                    "preprocessor_config: patch, merge "
		                    "or side limit too large");
	return 0;
}

/* ---- hashes -------------------------------------------------------------- */

int
kvp_mm_parse_hash(const struct json_object *v, uint64_t *out,
                  struct kvp_diag *d)
{
	const char *s;
	size_t len, i;
	uint64_t x = 0;

	if (!json_object_is_type(v, json_type_string))
		return kvp_json_u64(v, 0, "mm_hash", out, d);
	s = json_object_get_string((struct json_object *)v);
	len = (size_t)json_object_get_string_len(v);
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
		if (len > 16)
			goto bad;
	} else if (len != 16 && len != 64) {
		goto bad;
	}
	for (i = 0; i < len; i++)
		if (kvp_hexval(s[i]) < 0)
			goto bad;
	for (i = 0; i < len && i < 16; i++)
		x = x << 4 | (uint64_t)kvp_hexval(s[i]);
	*out = x;
	return 0;
bad:
	return kvp_diag_set(d, 0,
	                    "mm_hash: expected a u64 or a string of 16 hex "
	                    "digits");
}

/* ---- request records ----------------------------------------------------- */

void
kvp_mm_reqbuf_init(struct kvp_mm_reqbuf *b)
{
	/* the containers mm-expand reads; others only have their type checked
	 */
	static const char *const keep[] = {"id",
	                                   "images",
	                                   "videos",
	                                   "mm_processor_kwargs",
	                                   "preprocessor_config",
	                                   "text",
	                                   "bos_token_id",
	                                   "allow_special",
	                                   NULL};

	memset(b, 0, sizeof *b);
	kvp_jskel_init(&b->skel);
	b->skel.arrays[0] = (struct kvp_jskel_array){
	    .key = "tokens", .v32 = &b->tokens, .cap = &b->tokens_cap};
	b->skel.arrays[1] = (struct kvp_jskel_array){.key = "token_ids",
	                                             .v32 = &b->tokens_alt,
	                                             .cap = &b->tokens_alt_cap};
	b->skel.n_arrays = 2;
	b->skel.keep = keep;
}

void
kvp_mm_reqbuf_fini(struct kvp_mm_reqbuf *b)
{
	free(b->tokens);
	free(b->tokens_alt);
	kvp_jskel_fini(&b->skel);
	free(b->u64);
	free(b->img);
	free(b->dims);
	free(b->vid);
	free(b->ts);
	kvp_mm_reqbuf_init(b);
}

static int
grow(void *p, size_t *cap, size_t want, size_t elem, struct kvp_diag *d)
{
	if (kvp_grow(p, cap, want, elem) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	return 0;
}

static int
u32_of(const struct json_object *v, const char *what, uint32_t *out,
       struct kvp_diag *d)
{
	uint64_t x;

	if (kvp_json_u64(v, 0, what, &x, d) != 0)
		return -1;
	if (x > UINT32_MAX)
		return kvp_diag_set(d, 0, "%s: %llu does not fit in u32", what,
		                    (unsigned long long)x);
	*out = (uint32_t)x;
	return 0;
}

static int
opt_u32(const struct json_object *o, const char *key, uint32_t *out,
        int *present, struct kvp_diag *d)
{
	struct json_object *v;

	*present = 0;
	if (!kvp_json_get(o, key, &v))
		return 0;
	*present = 1;
	return u32_of(v, key, out, d);
}

/* A JSON array of u32 into (*buf)[off..off + *n) (u64 scratch reused). */
static int
u32_array(struct kvp_mm_reqbuf *b, const struct json_object *arr,
          const char *what, uint32_t **buf, size_t *cap, size_t off, size_t *n,
          struct kvp_diag *d)
{
	size_t k;

	if (!json_object_is_type(arr, json_type_array))
		return kvp_diag_set(d, 0, "%s: expected an array", what);
	if (kvp_json_u64_array(arr, 0, what, &b->u64, &b->u64_cap, &k, d) != 0)
		return -1;
	if (grow(buf, cap, off + k + 1, sizeof **buf, d) != 0)
		return -1;
	for (size_t i = 0; i < k; i++) {
		if (b->u64[i] > UINT32_MAX)
			return kvp_diag_set(
			    d, 0, "%s[%zu]: %llu does not fit in u32", what, i,
			    (unsigned long long)b->u64[i]);
		(*buf)[off + i] = (uint32_t)b->u64[i];
	}
	*n = k;
	return 0;
}

/* Prefixes d's message with "images[i]: ". */
static int
image_error(struct kvp_diag *d, size_t i)
{
	if (d != NULL) {
		char msg[sizeof d->msg];

		memcpy(msg, d->msg, sizeof msg);
		kvp_diag_set(d, d->col, "images[%zu]: %s", i, msg);
	}
	return -1;
}

/* url, path, dims, orientation, token_count and mm_hash of one image. */
static int
image_fields(struct kvp_mm_image_req *in, const struct json_object *o, size_t i,
             struct kvp_diag *d)
{
	struct json_object *v;
	int hw, hh;

	if (kvp_json_opt_str(o, "url", &in->url, d) != 0 ||
	    kvp_json_opt_str(o, "path", &in->path, d) != 0)
		return image_error(d, i);
	if (in->url != NULL) {
		kvp_json_get(o, "url", &v);
		in->url_len = (size_t)json_object_get_string_len(v);
	}
	if (opt_u32(o, "width", &in->w, &hw, d) != 0 ||
	    opt_u32(o, "height", &in->h, &hh, d) != 0 ||
	    opt_u32(o, "exif_orientation", &in->orient, &in->has_orient, d) !=
	        0)
		return image_error(d, i);
	if (opt_u32(o, "token_count", &in->count, &in->has_count, d) != 0)
		return image_error(d, i);
	if (hw != hh)
		return kvp_diag_set(
		    d, 0, "images[%zu]: width and height go together", i);
	in->has_dims = hw;
	if (kvp_json_get(o, "mm_hash", &v)) {
		if (kvp_mm_parse_hash(v, &in->hash, d) != 0)
			return image_error(d, i);
		in->has_hash = 1;
	}
	return 0;
}

/*
 * dims_token_ids go to the shared pool; one that does not parse is kept
 * in req->bad_dims_* and reported only if the expansion needs it.
 */
static int
image_dims_ids(struct kvp_mm_reqbuf *b, struct kvp_mm_req *req,
               struct kvp_mm_image_req *in, const struct json_object *v,
               size_t i, struct kvp_diag *d)
{
	struct kvp_diag ed;

	if (!json_object_is_type(v, json_type_array))
		return kvp_diag_set(d, 0,
		                    "images[%zu].dims_token_ids: "
		                    "expected an array",
		                    i);
	in->has_dims_ids = 1;
	if (u32_array(b, v, "dims_token_ids", &b->dims, &b->dims_cap, b->n_dims,
	              &in->n_dims_ids, &ed) != 0) {
		in->n_dims_ids = 0;
		if (req->bad_dims_ids == SIZE_MAX) {
			req->bad_dims_ids = i;
			req->bad_dims_diag = ed;
		}
		return 0;
	}
	b->n_dims += in->n_dims_ids;
	return 0;
}

static int
parse_image(struct kvp_mm_reqbuf *b, struct kvp_mm_req *req,
            struct kvp_mm_image_req *in, const struct json_object *o, size_t i,
            struct kvp_diag *d)
{
	struct json_object *v;

	memset(in, 0, sizeof *in);
	if (!json_object_is_type(o, json_type_object))
		return kvp_diag_set(d, 0, "images[%zu]: expected an object", i);
	if (image_fields(in, o, i, d) != 0)
		return -1;
	if (kvp_json_get(o, "uuid", &v)) {
		if (json_object_is_type(v, json_type_string) &&
		    json_object_get_string_len(v) == 0)
			return kvp_diag_set(d, 0,
			                    "images[%zu]: empty uuid (Dynamo "
			                    "rejects the request)",
			                    i);
		in->uuid = 1;
	}
	if (kvp_json_get(o, "dims_token_ids", &v))
		return image_dims_ids(b, req, in, v, i, d);
	return 0;
}

static int
read_images(const struct json_object *images, struct kvp_mm_reqbuf *b,
            struct kvp_mm_req *req, struct kvp_diag *d)
{
	size_t n = images != NULL ? json_object_array_length(images) : 0;
	size_t off = 0;

	if (grow(&b->img, &b->img_cap, n + 1, sizeof *b->img, d) != 0)
		return -1;
	b->n_dims = 0;
	for (size_t i = 0; i < n; i++)
		if (parse_image(b, req, &b->img[i],
		                json_object_array_get_idx(images, i), i,
		                d) != 0)
			return -1;
	/* the pool has stopped moving: point each image into it */
	for (size_t i = 0; i < n; i++) {
		b->img[i].dims_ids = b->dims != NULL ? b->dims + off : NULL;
		off += b->img[i].n_dims_ids;
	}
	req->img = b->img;
	req->n_img = n;
	return 0;
}

/* ---- videos -------------------------------------------------------------- */

/* Prefixes d's message with "videos[i]: ". */
static int
video_error(struct kvp_diag *d, size_t i)
{
	if (d != NULL) {
		char msg[sizeof d->msg];

		memcpy(msg, d->msg, sizeof msg);
		kvp_diag_set(d, d->col, "videos[%zu]: %s", i, msg);
	}
	return -1;
}

/* timestamps: seconds, finite and not negative, into the shared pool. */
static int
video_timestamps(struct kvp_mm_reqbuf *b, struct kvp_mm_video_req *in,
                 const struct json_object *arr, struct kvp_diag *d)
{
	size_t n;

	if (!json_object_is_type(arr, json_type_array))
		return kvp_diag_set(d, 0, "timestamps: expected an array");
	n = json_object_array_length(arr);
	if (grow(&b->ts, &b->ts_cap, b->n_ts + n + 1, sizeof *b->ts, d) != 0)
		return -1;
	for (size_t k = 0; k < n; k++) {
		struct json_object *v = json_object_array_get_idx(arr, k);
		double t;

		if (!json_object_is_type(v, json_type_double) &&
		    !json_object_is_type(v, json_type_int))
			return kvp_diag_set(
			    d, 0, "timestamps[%zu]: expected a number", k);
		t = json_object_get_double(v);
		if (!isfinite(t) || t < 0)
			return kvp_diag_set(d, 0,
			                    "timestamps[%zu]: not a time in "
			                    "seconds",
			                    k);
		b->ts[b->n_ts + k] = t;
	}
	in->has_ts = 1;
	in->n_ts = n;
	b->n_ts += n;
	return 0;
}

/* frames, width and height, fps and timestamps of one video. */
static int
video_meta(struct kvp_mm_reqbuf *b, struct kvp_mm_video_req *in,
           const struct json_object *o, struct kvp_diag *d)
{
	struct json_object *v;
	uint32_t frames;
	int hw, hh;

	if (opt_u32(o, "frames", &frames, &in->has_frames, d) != 0 ||
	    opt_u32(o, "width", &in->w, &hw, d) != 0 ||
	    opt_u32(o, "height", &in->h, &hh, d) != 0 ||
	    kvp_json_opt_double(o, "fps", &in->fps, &in->has_fps, d) != 0)
		return -1;
	in->frames = frames;
	if (hw != hh)
		return kvp_diag_set(d, 0, "width and height go together");
	in->has_dims = hw;
	if (in->has_fps && !(isfinite(in->fps) && in->fps > 0))
		return kvp_diag_set(d, 0, "fps: expected a positive number");
	if (kvp_json_get(o, "timestamps", &v) &&
	    video_timestamps(b, in, v, d) != 0)
		return -1;
	if (in->has_ts && in->has_frames && in->n_ts != in->frames)
		return kvp_diag_set(d, 0, "%zu timestamps for %u frames",
		                    in->n_ts, frames);
	return 0;
}

static int
parse_video(struct kvp_mm_reqbuf *b, struct kvp_mm_video_req *in,
            const struct json_object *o, size_t i, struct kvp_diag *d)
{
	struct json_object *v;

	memset(in, 0, sizeof *in);
	if (!json_object_is_type(o, json_type_object))
		return kvp_diag_set(d, 0, "videos[%zu]: expected an object", i);
	if (kvp_json_opt_str(o, "url", &in->url, d) != 0 ||
	    kvp_json_opt_str(o, "path", &in->path, d) != 0 ||
	    video_meta(b, in, o, d) != 0)
		return video_error(d, i);
	if (in->url != NULL) {
		kvp_json_get(o, "url", &v);
		in->url_len = (size_t)json_object_get_string_len(v);
	}
	if (kvp_json_get(o, "mm_hash", &v)) {
		if (kvp_mm_parse_hash(v, &in->hash, d) != 0)
			return video_error(d, i);
		in->has_hash = 1;
	}
	if (kvp_json_get(o, "uuid", &v)) {
		if (json_object_is_type(v, json_type_string) &&
		    json_object_get_string_len(v) == 0)
			return kvp_diag_set(d, 0,
			                    "videos[%zu]: empty uuid (Dynamo "
			                    "rejects the request)",
			                    i);
		in->uuid = 1;
	}
	return 0;
}

static int
read_videos(const struct json_object *rec, struct kvp_mm_reqbuf *b,
            struct kvp_mm_req *req, struct kvp_diag *d)
{
	struct json_object *videos = NULL;
	size_t n, off = 0;

	if (kvp_json_get(rec, "videos", &videos) &&
	    !json_object_is_type(videos, json_type_array))
		return kvp_diag_set(d, 0, "videos: expected an array");
	n = videos != NULL ? json_object_array_length(videos) : 0;
	if (grow(&b->vid, &b->vid_cap, n + 1, sizeof *b->vid, d) != 0)
		return -1;
	b->n_ts = 0;
	for (size_t i = 0; i < n; i++)
		if (parse_video(b, &b->vid[i],
		                json_object_array_get_idx(videos, i), i,
		                d) != 0)
			return -1;
	/* the pool has stopped moving: point each video into it */
	for (size_t i = 0; i < n; i++) {
		b->vid[i].ts = b->ts != NULL ? b->ts + off : NULL;
		off += b->vid[i].n_ts;
	}
	req->vid = b->vid;
	req->n_vid = n;
	return 0;
}

/* The string-valued keys a request may carry. */
/* The request's token ids (v, under key), from the skeleton reader when a
 * long line left them out of the tree. */
static int
read_tokens(struct kvp_mm_reqbuf *b, const struct json_object *v,
            const char *key, struct kvp_mm_req *req, struct kvp_diag *d)
{
	const struct kvp_jskel_array *a = kvp_jskel_find(&b->skel, v);

	if (a == NULL) {
		if (u32_array(b, v, key, &b->tokens, &b->tokens_cap, 0,
		              &req->n_tokens, d) != 0)
			return -1;
		req->tokens = b->tokens;
		return 0;
	}
	if (a->failed) {
		*d = a->d;
		return -1;
	}
	req->tokens = *a->v32;
	req->n_tokens = a->n;
	return 0;
}

struct names {
	const char *family, *model_type, *model, *policy, *video_resize;
};

/* The token ids ("tokens", else "token_ids": the precedence kv-hash and
 * route-score use), block_size and the string keys. */
static int
read_head(const struct json_object *rec, struct kvp_mm_reqbuf *b,
          struct kvp_mm_req *req, struct names *nm, struct kvp_diag *d)
{
	const char *key = "tokens";
	struct json_object *v;
	uint64_t bs = 0;

	if (!kvp_json_get(rec, key, &v))
		key = "token_ids";
	if (!kvp_json_get(rec, key, &v))
		return kvp_diag_set(d, 0,
		                    "missing key \"token_ids\" (or "
		                    "\"tokens\")");
	if (read_tokens(b, v, key, req, d) != 0)
		return -1;
	if (kvp_json_opt_u64(rec, "block_size", 0, &bs, &req->has_block_size,
	                     d) != 0)
		return -1;
	if (bs > UINT32_MAX)
		return kvp_diag_set(d, 0, "block_size: too large");
	req->block_size = (uint32_t)bs;
	if (kvp_json_opt_str(rec, "lora_name", &req->lora, d) != 0 ||
	    kvp_json_opt_str(rec, "cache_namespace", &req->cache_namespace,
	                     d) != 0 ||
	    (req->cache_namespace == NULL &&
	     kvp_json_opt_str(rec, "cache_salt", &req->cache_namespace, d) !=
	         0) ||
	    kvp_json_opt_str(rec, "family", &nm->family, d) != 0 ||
	    kvp_json_opt_str(rec, "model_type", &nm->model_type, d) != 0 ||
	    kvp_json_opt_str(rec, "model", &nm->model, d) != 0 ||
	    kvp_json_opt_str(rec, "dims_policy", &nm->policy, d) != 0 ||
	    kvp_json_opt_str(rec, "video_resize", &nm->video_resize, d) != 0)
		return -1;
	return 0;
}

int
kvp_mm_video_rule_parse(const char *s, enum kvp_mm_video_rule *out)
{
	if (strcmp(s, "round-half-even") == 0)
		*out = KVP_MM_VIDEO_ROUND_HALF_EVEN;
	else if (strcmp(s, "legacy-ceil") == 0)
		*out = KVP_MM_VIDEO_LEGACY_CEIL;
	else
		return -1;
	return 0;
}

static int
read_policy(const char *pol, const char *vr, struct kvp_mm_req *req,
            struct kvp_diag *d)
{
	if (vr != NULL) {
		req->has_video_rule = 1;
		if (kvp_mm_video_rule_parse(vr, &req->video_rule) != 0)
			return kvp_diag_set(d, 0,
			                    "video_resize: expected "
			                    "\"round-half-even\" or "
			                    "\"legacy-ceil\"");
	}
	if (pol == NULL)
		return 0;
	req->has_policy = 1;
	if (strcmp(pol, "encoded") == 0)
		req->policy = KVP_MM_ENCODED;
	else if (strcmp(pol, "exif_transposed") == 0)
		req->policy = KVP_MM_EXIF_TRANSPOSED;
	else
		return kvp_diag_set(d, 0,
		                    "dims_policy: expected \"encoded\" "
		                    "or \"exif_transposed\"");
	return 0;
}

static int
is_empty_kwargs(const struct json_object *v)
{
	return v == NULL || (json_object_is_type(v, json_type_object) &&
	                     json_object_object_length(v) == 0);
}

/* is_eagle, dims_policy, preprocessor_config, mm_processor_kwargs,
 * other_media, placeholder_token_id and the images array. */
static int
read_options(const struct json_object *rec, struct kvp_mm_req *req,
             const struct names *nm, struct json_object **cfg,
             struct json_object **images, struct kvp_diag *d)
{
	struct json_object *v, *kwargs = NULL;
	int present;

	if (kvp_json_get(rec, "is_eagle", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return kvp_diag_set(d, 0,
			                    "is_eagle: expected a boolean");
		req->eagle = json_object_get_boolean(v);
	}
	if (read_policy(nm->policy, nm->video_resize, req, d) != 0)
		return -1;
	if (kvp_json_get(rec, "preprocessor_config", cfg) &&
	    !json_object_is_type(*cfg, json_type_object))
		return kvp_diag_set(d, 0,
		                    "preprocessor_config: expected an object");
	kvp_json_get(rec, "mm_processor_kwargs", &kwargs);
	req->kwargs_set = !is_empty_kwargs(kwargs);
	if (kvp_json_opt_u64(rec, "other_media", 0, &req->other_media, &present,
	                     d) != 0)
		return -1;
	if (opt_u32(rec, "placeholder_token_id", &req->placeholder,
	            &req->has_placeholder, d) != 0)
		return -1;
	if (kvp_json_get(rec, "images", images) &&
	    !json_object_is_type(*images, json_type_array))
		return kvp_diag_set(d, 0, "images: expected an array");
	return 0;
}

/* The family, bos_token_id and the family's counter. */
static int
read_family(const struct json_object *rec, const struct names *nm,
            const struct json_object *cfg, struct kvp_mm_req *req,
            struct kvp_diag *d)
{
	struct json_object *v;

	req->family = kvp_mm_family_resolve(nm->family, nm->model,
	                                    nm->model_type, &req->named);
	if (kvp_json_get(rec, "bos_token_id", &v)) {
		uint32_t bos = 0;

		req->has_bos = 1;
		if (json_object_is_type(v, json_type_boolean) &&
		    !json_object_get_boolean(v))
			req->bos = -1;
		else if (u32_of(v, "bos_token_id", &bos, d) != 0)
			return -1;
		else
			req->bos = bos;
	}
	if (req->family != KVP_MM_UNKNOWN &&
	    kvp_mm_counter_from_config(req->family, cfg, &req->counter, d) != 0)
		return -1;
	return 0;
}

int
kvp_mm_req_from_json(const struct json_object *rec, struct kvp_mm_reqbuf *b,
                     struct kvp_mm_req *req, struct kvp_diag *d)
{
	struct json_object *cfg = NULL, *images = NULL;
	struct names nm = {NULL, NULL, NULL, NULL, NULL};

	memset(req, 0, sizeof *req);
	req->bad_dims_ids = SIZE_MAX;
	if (read_head(rec, b, req, &nm, d) != 0 ||
	    read_options(rec, req, &nm, &cfg, &images, d) != 0 ||
	    read_images(images, b, req, d) != 0 ||
	    read_videos(rec, b, req, d) != 0 ||
	    read_family(rec, &nm, cfg, req, d) != 0)
		return KVP_BAD;
	return KVP_OK;
}

/* ---- result records ------------------------------------------------------ */

static void
kv_str_or_null(struct kvp_jw *w, const char *key, const char *s)
{
	if (s != NULL)
		kvp_jw_kv_str(w, key, s);
	else
		kvp_jw_kv_null(w, key);
}

/*
 * n more elements of value v, right after an element of the same array:
 * ",v" rendered once into the writer's buffer and copied in doubling steps
 * (pad runs are hundreds to thousands of one value).
 */
static void
put_run(struct kvp_jw *w, uint32_t v, size_t n)
{
	char one[1 + KVP_U64_DEC_ROOM];
	size_t len, total, done;
	char *p;

	one[0] = ',';
	len = 1 + kvp_u64_dec(one + 1, v);
	total = len * n;
	p = kvp_jw_reserve(w, total);
	if (p == NULL) /* out of memory: the writer's failure is sticky */
		return;
	memcpy(p, one, len);
	for (done = len; done < total; done *= 2)
		memcpy(p + done, p, done < total - done ? done : total - done);
	kvp_jw_commit(w, total);
}

/* A token array: routing sequences are mostly long runs of one pad. */
static void
write_tokens(struct kvp_jw *w, const uint32_t *t, size_t n)
{
	size_t i = 0, j;

	kvp_jw_arr_begin(w);
	while (i < n) {
		for (j = i + 1; j < n && t[j] == t[i]; j++)
			;
		kvp_jw_u64(w, t[i]);
		if (j - i > 2)
			put_run(w, t[i], j - i - 1);
		else if (j - i == 2)
			kvp_jw_u64(w, t[i]);
		i = j;
	}
	kvp_jw_arr_end(w);
}

static void
write_dims(struct kvp_jw *w, const struct kvp_mm_result *r)
{
	kvp_jw_key(w, "image_dims");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_img; i++) {
		kvp_jw_arr_begin(w);
		kvp_jw_u64(w, r->img[i].width);
		kvp_jw_u64(w, r->img[i].height);
		kvp_jw_arr_end(w);
	}
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "image_orientations");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_img; i++) {
		if (r->img[i].orientation == KVP_IMAGE_ORIENT_INVALID)
			kvp_jw_str(w, "invalid");
		else
			kvp_jw_u64(w, r->img[i].orientation);
	}
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "dims_texts");
	if (r->layout == KVP_MM_LAYOUT_KIMI_K3) {
		kvp_jw_arr_begin(w);
		for (size_t i = 0; i < r->n_img; i++)
			kvp_jw_str(w, r->img[i].dims_text);
		kvp_jw_arr_end(w);
	} else {
		kvp_jw_null(w);
	}
}

static void
write_hashes(struct kvp_jw *w, const struct kvp_mm_result *r)
{
	kvp_jw_key(w, "mm_hashes");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_img; i++)
		kvp_jw_hash(w, r->img[i].mm_hash);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "mm_hashes_hex");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_img; i++) {
		char hex[17];

		snprintf(hex, sizeof hex, "%016llx",
		         (unsigned long long)r->img[i].mm_hash);
		kvp_jw_str(w, hex);
	}
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "mm_hash_source");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_img; i++)
		kvp_jw_str(w, r->img[i].hash_source);
	kvp_jw_arr_end(w);
}

/* video_grids, video_token_counts, video_dims, video_frames, video_fps. */
static void
write_video_sizes(struct kvp_jw *w, const struct kvp_mm_result *r)
{
	kvp_jw_key(w, "video_grids");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_vid; i++)
		kvp_jw_u64_array(w, r->vid[i].grid, 3);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "video_token_counts");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_vid; i++)
		kvp_jw_u64(w, r->vid[i].count);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "video_dims");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_vid; i++) {
		kvp_jw_arr_begin(w);
		kvp_jw_u64(w, r->vid[i].width);
		kvp_jw_u64(w, r->vid[i].height);
		kvp_jw_arr_end(w);
	}
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "video_frames");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_vid; i++)
		kvp_jw_u64(w, r->vid[i].frames);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "video_fps");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_vid; i++)
		kvp_jw_double(w, r->vid[i].fps);
	kvp_jw_arr_end(w);
}

/* The per-video keys of an exact result. */
static void
write_videos(struct kvp_jw *w, const struct kvp_mm_result *r)
{
	char text[64];

	write_video_sizes(w, r);
	kvp_jw_key(w, "video_mm_hashes");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_vid; i++)
		kvp_jw_hash(w, r->vid[i].mm_hash);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "video_mm_hash_source");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_vid; i++)
		kvp_jw_str(w, r->vid[i].hash_source);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "video_pad_values");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_vid; i++)
		kvp_jw_u64(w, r->vid[i].pad);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "video_timestamps");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_vid; i++) {
		kvp_jw_arr_begin(w);
		for (uint64_t k = 0; k < r->vid[i].grid[0]; k++) {
			const struct kvp_mm_vgroup *g =
			    &r->groups[r->vid[i].group0 + k];

			snprintf(text, sizeof text, KVP_MM_TS_FMT, g->time);
			kvp_jw_str(w, text);
		}
		kvp_jw_arr_end(w);
	}
	kvp_jw_arr_end(w);
}

/* The per-image keys: values when exact, null on a fallback. */
static void
write_images(struct kvp_jw *w, const struct kvp_mm_result *r)
{
	static const char *const nulls[] = {
	    "image_token_counts", "image_dims",       "image_orientations",
	    "dims_texts",         "mm_hashes",        "mm_hashes_hex",
	    "mm_hash_source",     "pad_values",       "video_grids",
	    "video_token_counts", "video_dims",       "video_frames",
	    "video_fps",          "video_mm_hashes",  "video_mm_hash_source",
	    "video_pad_values",   "video_timestamps", "expanded_prompt_len"};

	if (!r->exact) {
		for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
			kvp_jw_kv_null(w, nulls[i]);
		return;
	}
	kvp_jw_key(w, "image_token_counts");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_img; i++)
		kvp_jw_u64(w, r->img[i].count);
	kvp_jw_arr_end(w);
	write_dims(w, r);
	write_hashes(w, r);
	kvp_jw_key(w, "pad_values");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < r->n_img; i++)
		kvp_jw_u64(w, r->img[i].pad);
	kvp_jw_arr_end(w);
	write_videos(w, r);
	kvp_jw_kv_u64(w, "expanded_prompt_len", r->expanded_len);
}

void
kvp_mm_write(struct kvp_jw *w, const struct json_object *rec,
             const struct kvp_mm_result *r)
{
	struct json_object *id;

	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "mm_expand");
	kvp_jw_key(w, "id");
	if (kvp_json_get(rec, "id", &id))
		kvp_jw_json(w, id);
	else
		kvp_jw_null(w);
	kvp_jw_kv_str(w, "status", r->exact ? "exact" : "fallback");
	kv_str_or_null(w, "reason", r->reason);
	kv_str_or_null(w, "detail", r->detail[0] != '\0' ? r->detail : NULL);
	kv_str_or_null(w, "family", kvp_mm_family_name(r->family));
	kv_str_or_null(w, "layout", kvp_mm_layout_name(r->layout));
	write_images(w, r);
	kvp_jw_key(w, "routing_token_ids");
	write_tokens(w, r->tokens, r->n_tokens);
	kvp_jw_kv_u64(w, "block_size", r->block_size);
	kvp_jw_kv_bool(w, "is_eagle", r->eagle);
	kvp_jw_kv_u64(w, "num_blocks", r->n_blocks);
	kvp_jw_kv_u64(w, "complete_blocks", r->complete_blocks);
	kvp_jw_kv_hash(w, "block_seed", r->block_seed);
	kvp_jw_kv_hash(w, "chain_seed", r->chain_seed);
	kvp_jw_key(w, "block_mm_infos");
	kvp_jw_arr_begin(w);
	kvp_jw_arr_end(w);
	kvp_jw_key(w, "block_hashes");
	kvp_jw_hash_array(w, r->local, r->n_blocks);
	kvp_jw_key(w, "sequence_hashes");
	kvp_jw_hash_array(w, r->seq, r->n_blocks);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
}

/* The request's token ids are not needed once expanded: a long prompt's
 * (over 1 Mi ids) go back before its record is written, so the two are
 * not held at once. */
static void
release_tokens(struct kvp_mm_reqbuf *b)
{
	if (b->tokens_cap > ((size_t)1 << 20)) {
		free(b->tokens);
		b->tokens = NULL;
		b->tokens_cap = 0;
	}
	if (b->tokens_alt_cap > ((size_t)1 << 20)) {
		free(b->tokens_alt);
		b->tokens_alt = NULL;
		b->tokens_alt_cap = 0;
	}
}

int
kvp_mm_expand_record(struct kvp_mm *m, struct kvp_mm_reqbuf *b,
                     const struct json_object *rec, struct kvp_jw *w,
                     struct kvp_diag *d)
{
	struct kvp_mm_req req;

	if (kvp_mm_req_from_json(rec, b, &req, d) != KVP_OK ||
	    kvp_mm_expand(m, &req, d) != KVP_OK)
		return KVP_BAD;
	release_tokens(b);
	kvp_mm_write(w, rec, kvp_mm_result(m));
	return KVP_OK;
}

/* ---- tokenizer mode ------------------------------------------------------ */

int
kvp_mm_encode_record(struct kvp_tokenizer *t, const struct json_object *rec,
                     struct kvp_tok_ids *ids, struct kvp_jw *w,
                     struct kvp_diag *d)
{
	struct json_object *v, *id = NULL;
	int allow = 0;

	if (!kvp_json_get(rec, "text", &v) ||
	    !json_object_is_type(v, json_type_string))
		return kvp_diag_set(d, 0, "\"text\": expected a string");
	if (kvp_json_get(rec, "allow_special", &id)) {
		if (!json_object_is_type(id, json_type_boolean))
			return kvp_diag_set(
			    d, 0, "allow_special: expected a boolean");
		allow = json_object_get_boolean(id);
	}
	ids->n = 0;
	if (kvp_tok_encode(t, json_object_get_string(v),
	                   (size_t)json_object_get_string_len(v), allow, ids,
	                   d) != 0)
		return -1;
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "tokens");
	kvp_jw_key(w, "id");
	if (kvp_json_get(rec, "id", &id))
		kvp_jw_json(w, id);
	else
		kvp_jw_null(w);
	kvp_jw_kv_u64(w, "n_tokens", ids->n);
	kvp_jw_key(w, "token_ids");
	kvp_jw_arr_begin(w);
	for (size_t i = 0; i < ids->n; i++)
		kvp_jw_u64(w, ids->v[i]);
	kvp_jw_arr_end(w);
	kvp_jw_obj_end(w);
	kvp_jw_end_record(w);
	return 0;
}
