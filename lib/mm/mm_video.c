/* SPDX-License-Identifier: MIT */
/* mm_video.c — the videos of an expansion (mm_internal.h; issue 29 §1):
 * their facts and grids, temporal groups, timestamp texts and routing
 * tokens. */
#if defined(__GNUC__) && !defined(__clang__)
/* Frame times must round exactly as Python's (idx / fps, the mean). */
#pragma GCC optimize("fp-contract=off")
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/util.h"
#include "mm/dataurl.h"
#include "mm/mm_internal.h"

/* The facts the request leaves out, from its data: URL or file. */
static int
read_source(struct kvp_vidsrc *s, const struct kvp_mm_video_req *in,
            struct kvp_video_info *info, uint64_t *fhash, int *have,
            struct kvp_diag *d)
{
	int need =
	    !in->has_dims || !in->has_fps || (!in->has_frames && !in->has_ts);

	*have = 0;
	if (in->url != NULL && kvp_dataurl_is(in->url, in->url_len) && need) {
		if (kvp_vidsrc_dataurl(s, in->url, in->url_len, info, d) != 0)
			return -1;
		*have = 1;
	} else if (in->path != NULL &&
	           (need || (!in->has_hash && in->url == NULL))) {
		if (kvp_vidsrc_file(s, in->path, info, fhash, d) != 0)
			return -1;
		*have = 1;
	} else if (need) {
		return kvp_diag_set(d, 0,
		                    "no %s given and no path or data: URL to "
		                    "read it from (mm-expand never fetches "
		                    "http(s) URLs)",
		                    !in->has_dims  ? "width/height"
		                    : !in->has_fps ? "fps"
		                                   : "frames");
	}
	return 0;
}

static int
video_hash(const struct kvp_mm_video_req *in, uint64_t fhash,
           struct kvp_mm_video *v, struct kvp_diag *d)
{
	if (in->has_hash) {
		v->mm_hash = in->hash;
		v->hash_source = "explicit";
	} else if (in->url != NULL) {
		v->mm_hash = kvp_hash_bytes(in->url, in->url_len, 0);
		v->hash_source = "url";
	} else if (in->path != NULL) {
		v->mm_hash = fhash;
		v->hash_source = "file_bytes";
	} else {
		return kvp_diag_set(d, 0, "no url, path or mm_hash");
	}
	v->pad = kvp_pad_value(v->mm_hash);
	return 0;
}

int
kvp_mm_video_resolve(struct kvp_vidsrc *s, const struct kvp_mm_video_req *in,
                     enum kvp_mm_video_rule rule, struct kvp_mm_video *v,
                     struct kvp_diag *d)
{
	struct kvp_video_info info = {0};
	struct kvp_mm_video_counter c;
	uint64_t fhash = 0, merge2;
	const char *why;
	int have;

	if (read_source(s, in, &info, &fhash, &have, d) != 0 ||
	    video_hash(in, fhash, v, d) != 0)
		return -1;
	v->width = in->has_dims ? in->w : info.width;
	v->height = in->has_dims ? in->h : info.height;
	v->fps = in->has_fps ? in->fps : info.fps;
	v->frames = in->has_frames ? in->frames
	            : in->has_ts   ? in->n_ts
	                           : info.frames;
	if (!(v->fps > 0))
		return kvp_diag_set(d, 0, "no frame rate");
	if (in->has_ts && in->n_ts != v->frames)
		return kvp_diag_set(d, 0, "%zu timestamps for %llu frames",
		                    in->n_ts, (unsigned long long)v->frames);
	kvp_mm_video_counter_default(&c);
	if (kvp_mm_video_grid(&c, rule, v->frames, v->width, v->height, v->grid,
	                      &why) != 0)
		return kvp_diag_set(d, 0, "%llu frame(s) of %ux%u: %s",
		                    (unsigned long long)v->frames, v->width,
		                    v->height, why);
	merge2 = c.merge * c.merge;
	v->count = v->grid[0] * (v->grid[1] * v->grid[2] / merge2);
	return 0;
}

/* The time of frame i (Python: idx / fps; idx from the timestamp). */
static double
frame_time(const struct kvp_mm_video_req *in, const struct kvp_mm_video *v,
           uint64_t i)
{
	if (i >= v->frames)
		i = v->frames - 1; /* the last frame fills the last group */
	if (in->has_ts)
		return nearbyint(in->ts[i] * v->fps) / v->fps;
	return (double)i / v->fps;
}

int
kvp_mm_video_groups(struct kvp_tokenizer *t, const struct kvp_mm_video_req *in,
                    struct kvp_mm_video *v, struct kvp_mm_vbuf *b,
                    struct kvp_diag *d)
{
	uint64_t T = v->grid[0];
	struct kvp_diag ed;
	char text[64];

	if (t == NULL)
		return kvp_diag_set(d, 0,
		                    "timestamp texts need a tokenizer and none "
		                    "was given");
	if (kvp_grow(&b->g, &b->cap, b->n + T + 1, sizeof *b->g) != 0)
		return kvp_diag_set(d, 0, "out of memory");
	v->group0 = b->n;
	for (uint64_t k = 0; k < T; k++) {
		struct kvp_mm_vgroup *g = &b->g[b->n++];
		int len;

		g->time =
		    (frame_time(in, v, 2 * k) + frame_time(in, v, 2 * k + 1)) /
		    2;
		len = snprintf(text, sizeof text, KVP_MM_TS_FMT, g->time);
		if (len < 0 || (size_t)len >= sizeof text)
			return kvp_diag_set(d, 0, "timestamp %g too long",
			                    g->time);
		g->off = b->ids.n;
		if (kvp_tok_encode(t, text, (size_t)len, 0, &b->ids, &ed) != 0)
			return kvp_diag_set(d, 0, "timestamp text \"%s\": %s",
			                    text, ed.msg);
		g->len = b->ids.n - g->off;
	}
	return 0;
}

uint64_t
kvp_mm_video_len(const struct kvp_mm_video *v, const struct kvp_mm_vbuf *b)
{
	uint64_t n = v->count + 2 * v->grid[0];

	for (uint64_t k = 0; k < v->grid[0]; k++)
		n += b->g[v->group0 + k].len;
	return n;
}

size_t
kvp_mm_video_emit(const struct kvp_mm_video *v, const struct kvp_mm_vbuf *b,
                  const struct kvp_mm_video_ids *ids, uint32_t *out)
{
	uint64_t per = v->grid[0] != 0 ? v->count / v->grid[0] : 0;
	size_t o = 0;

	for (uint64_t k = 0; k < v->grid[0]; k++) {
		const struct kvp_mm_vgroup *g = &b->g[v->group0 + k];

		memcpy(out + o, b->ids.v + g->off, g->len * sizeof *out);
		o += g->len;
		out[o++] = ids->vision_start;
		for (uint64_t j = 0; j < per; j++)
			out[o++] = v->pad;
		out[o++] = ids->vision_end;
	}
	return o;
}
