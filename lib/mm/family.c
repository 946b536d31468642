/* SPDX-License-Identifier: MIT */
/* family.c — model families and image token counters (family.h;
 * docs/spec/mm-expand.md §3). */
#if defined(__GNUC__) && !defined(__clang__)
/* The counters must round exactly as the reference (spec §3.2). */
#pragma GCC optimize("fp-contract=off")
#endif
#include "mm/family.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* ---- families ------------------------------------------------------------ */

static const char *const family_names[] = {
    [KVP_MM_UNKNOWN] = NULL,        [KVP_MM_KIMI_K25] = "kimi_k25",
    [KVP_MM_KIMI_K3] = "kimi_k3",   [KVP_MM_QWEN2_VL] = "qwen2_vl",
    [KVP_MM_QWEN3_VL] = "qwen3_vl", [KVP_MM_LLAVA] = "llava",
    [KVP_MM_QWEN3_5] = "qwen3_5",
};

const char *
kvp_mm_family_name(enum kvp_mm_family f)
{
	return family_names[f];
}

const char *
kvp_mm_layout_name(enum kvp_mm_layout l)
{
	switch (l) {
	case KVP_MM_LAYOUT_REPEATED_PAD:
		return "repeated_pad";
	case KVP_MM_LAYOUT_KIMI_K3:
		return "kimi_k3";
	default:
		return NULL;
	}
}

enum kvp_mm_family
kvp_mm_family_by_name(const char *s)
{
	for (int f = KVP_MM_KIMI_K25; f <= KVP_MM_QWEN3_5; f++)
		if (strcmp(s, family_names[f]) == 0)
			return (enum kvp_mm_family)f;
	return KVP_MM_UNKNOWN;
}

static int
has(const char *s, const char *sub)
{
	size_t n = strlen(sub);

	for (; *s != '\0'; s++)
		if (strncasecmp(s, sub, n) == 0)
			return 1;
	return 0;
}

enum kvp_mm_family
kvp_mm_family_match(const char *s)
{
	if (has(s, "kimi_k3") || has(s, "kimi-k3") ||
	    (has(s, "kimi") && has(s, "k3")))
		return KVP_MM_KIMI_K3;
	if (has(s, "kimi_k25") || has(s, "kimi_k2_5") || has(s, "kimi_k2_6") ||
	    has(s, "kimi-k2") || has(s, "kimi_k2"))
		return KVP_MM_KIMI_K25;
	if (has(s, "qwen2_vl") || has(s, "qwen2-vl") || has(s, "qwen2_5_vl") ||
	    has(s, "qwen2.5-vl") || has(s, "qwen2_5-vl"))
		return KVP_MM_QWEN2_VL;
	if (has(s, "qwen3_vl") || has(s, "qwen3-vl"))
		return KVP_MM_QWEN3_VL;
	if (has(s, "qwen3.5") || has(s, "qwen3_5") || has(s, "qwen3.6") ||
	    has(s, "qwen3_6"))
		return KVP_MM_QWEN3_5;
	if (has(s, "llava-1.5") || has(s, "llava-v1.5"))
		return KVP_MM_LLAVA;
	return KVP_MM_UNKNOWN;
}

enum kvp_mm_family
kvp_mm_family_resolve(const char *family, const char *model,
                      const char *model_type, const char **named)
{
	enum kvp_mm_family f = KVP_MM_UNKNOWN;

	*named = family ? family : model ? model : model_type ? model_type : "";
	if (family != NULL) {
		f = kvp_mm_family_by_name(family);
		if (f == KVP_MM_UNKNOWN)
			f = kvp_mm_family_match(family);
		return f;
	}
	if (model != NULL)
		f = kvp_mm_family_match(model);
	if (f == KVP_MM_UNKNOWN && model_type != NULL)
		f = kvp_mm_family_match(model_type);
	return f;
}

enum kvp_mm_layout
kvp_mm_family_layout(enum kvp_mm_family f)
{
	if (f == KVP_MM_UNKNOWN)
		return KVP_MM_LAYOUT_NONE;
	return f == KVP_MM_KIMI_K3 ? KVP_MM_LAYOUT_KIMI_K3
	                           : KVP_MM_LAYOUT_REPEATED_PAD;
}

uint32_t
kvp_mm_family_placeholder(enum kvp_mm_family f)
{
	switch (f) {
	case KVP_MM_KIMI_K25:
	case KVP_MM_KIMI_K3:
		return KVP_MM_KIMI_MEDIA_PAD;
	case KVP_MM_QWEN2_VL:
	case KVP_MM_QWEN3_VL:
		return 151655;
	case KVP_MM_QWEN3_5:
		return 248056;
	case KVP_MM_LLAVA:
		return 32000;
	default:
		return 0;
	}
}

int64_t
kvp_mm_family_bos(enum kvp_mm_family f)
{
	return f == KVP_MM_LLAVA ? 1 : -1;
}

int
kvp_mm_family_video(enum kvp_mm_family f, struct kvp_mm_video_ids *ids)
{
	switch (f) {
	case KVP_MM_QWEN3_VL:
		ids->video = 151656;
		ids->vision_start = 151652;
		ids->vision_end = 151653;
		return 1;
	case KVP_MM_QWEN3_5:
		ids->video = 248057;
		ids->vision_start = 248053;
		ids->vision_end = 248054;
		return 1;
	default:
		memset(ids, 0, sizeof *ids);
		return 0;
	}
}

/* ---- counters ------------------------------------------------------------ */

void
kvp_mm_counter_default(enum kvp_mm_family f, struct kvp_mm_counter *c)
{
	memset(c, 0, sizeof *c);
	switch (f) {
	case KVP_MM_KIMI_K25:
	case KVP_MM_KIMI_K3:
		c->kind = KVP_MM_NAVIT;
		c->patch = 14;
		c->merge = 2;
		c->in_patch_limit = f == KVP_MM_KIMI_K3 ? 65536 : 16384;
		c->side_limit = 512;
		break;
	case KVP_MM_QWEN2_VL:
		c->kind = KVP_MM_SMART;
		c->patch = 14;
		c->merge = 2;
		c->min_px = 200704;
		c->max_px = 1003520;
		break;
	case KVP_MM_QWEN3_VL:
	case KVP_MM_QWEN3_5:
		c->kind = KVP_MM_SMART;
		c->patch = 16;
		c->merge = 2;
		c->min_px = 65536;
		c->max_px = 16777216;
		break;
	case KVP_MM_LLAVA:
	default:
		c->kind = KVP_MM_FIXED;
		c->patch = 14;
		c->fixed = 576;
		break;
	}
}

static uint64_t
ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* MoonViT NaViT resize (spec §3.1). */
static uint64_t
count_navit(const struct kvp_mm_counter *c, uint32_t w, uint32_t h)
{
	uint64_t ps = c->patch, s = c->side_limit * ps;
	uint64_t pw = w / ps > 1 ? w / ps : 1, ph = h / ps > 1 ? h / ps : 1;
	double scale = 1.0, x;
	uint64_t nw, nh;

	x = sqrt((double)c->in_patch_limit / ((double)pw * (double)ph));
	if (x < scale)
		scale = x;
	x = (double)s / (double)w;
	if (x < scale)
		scale = x;
	x = (double)s / (double)h;
	if (x < scale)
		scale = x;
	nw = (uint64_t)trunc((double)w * scale);
	nh = (uint64_t)trunc((double)h * scale);
	nw = nw < 1 ? 1 : nw > s ? s : nw;
	nh = nh < 1 ? 1 : nh > s ? s : nh;
	return ceil_div(nw, ps * c->merge) * ceil_div(nh, ps * c->merge);
}

/* smg's smart_resize (spec §3.2): clamp to factor before the min test. */
static uint64_t
count_smart(const struct kvp_mm_counter *c, uint32_t w, uint32_t h)
{
	double fac = (double)(c->patch * c->merge);
	double H = h, W = w, hb, wb, beta;
	uint64_t tw, th;

	if ((W > H ? W / H : H / W) > 200) {
		hb = wb = fac;
	} else {
		hb = nearbyint(H / fac) * fac;
		wb = nearbyint(W / fac) * fac;
		if (hb < fac)
			hb = fac;
		if (wb < fac)
			wb = fac;
		if (hb * wb > (double)c->max_px) {
			beta = sqrt(H * W / (double)c->max_px);
			hb = floor(H / beta / fac) * fac;
			wb = floor(W / beta / fac) * fac;
			if (hb < fac)
				hb = fac;
			if (wb < fac)
				wb = fac;
		} else if (hb * wb < (double)c->min_px) {
			beta = sqrt((double)c->min_px / (H * W));
			hb = ceil(H * beta / fac) * fac;
			wb = ceil(W * beta / fac) * fac;
		}
	}
	th = (uint64_t)hb / c->patch;
	tw = (uint64_t)wb / c->patch;
	return th * tw / (c->merge * c->merge);
}

uint64_t
kvp_mm_count(const struct kvp_mm_counter *c, uint32_t w, uint32_t h)
{
	if (w == 0 || h == 0)
		return 0;
	switch (c->kind) {
	case KVP_MM_NAVIT:
		return count_navit(c, w, h);
	case KVP_MM_SMART:
		return count_smart(c, w, h);
	default:
		return c->fixed;
	}
}

/* ---- videos -------------------------------------------------------------- */

void
kvp_mm_video_counter_default(struct kvp_mm_video_counter *c)
{
	c->patch = 16;
	c->merge = 2;
	c->temporal = 2;
	c->min_px = 4096;
	c->max_px = 25165824;
}

/* The frame count the budget check multiplies by. */
static uint64_t
budget_frames(enum kvp_mm_video_rule rule, uint64_t frames, uint64_t tp)
{
	uint64_t q = frames / tp, r = frames % tp;

	if (rule == KVP_MM_VIDEO_LEGACY_CEIL)
		return (q + (r != 0)) * tp;
	/* Python's round(frames / tp): half to even */
	if (2 * r > tp || (2 * r == tp && q % 2 == 1))
		q++;
	return q * tp;
}

/* transformers' Qwen3-VL video smart_resize, in its order of operations. */
static void
video_resize(const struct kvp_mm_video_counter *c, uint64_t tbar,
             uint64_t frames, double H, double W, double *hb, double *wb)
{
	double fac = (double)(c->patch * c->merge), beta;
	double all = (double)frames * H * W;
	double vol;

	*hb = nearbyint(H / fac) * fac;
	*wb = nearbyint(W / fac) * fac;
	vol = (double)tbar * *hb * *wb;
	if (vol > (double)c->max_px) {
		beta = sqrt(all / (double)c->max_px);
		*hb = floor(H / beta / fac) * fac;
		*wb = floor(W / beta / fac) * fac;
		if (*hb < fac)
			*hb = fac;
		if (*wb < fac)
			*wb = fac;
	} else if (vol < (double)c->min_px) {
		beta = sqrt((double)c->min_px / all);
		*hb = ceil(H * beta / fac) * fac;
		*wb = ceil(W * beta / fac) * fac;
	}
}

int
kvp_mm_video_grid(const struct kvp_mm_video_counter *c,
                  enum kvp_mm_video_rule rule, uint64_t frames, uint32_t w,
                  uint32_t h, uint64_t grid[3], const char **why)
{
	uint64_t fac = c->patch * c->merge, tp = c->temporal;
	double hb, wb;

	if (frames == 0) {
		*why = "no frames";
		return -1;
	}
	if (rule == KVP_MM_VIDEO_ROUND_HALF_EVEN && frames < tp) {
		*why = "fewer frames than the temporal patch (2), which the "
		       "round-half-even rule refuses";
		return -1;
	}
	if (w < fac || h < fac) {
		*why = "a side is under the 32-pixel factor";
		return -1;
	}
	if ((w > h ? (double)w / h : (double)h / w) > 200) {
		*why = "aspect ratio over 200";
		return -1;
	}
	video_resize(c, budget_frames(rule, frames, tp), frames, h, w, &hb,
	             &wb);
	grid[0] = frames / tp + (frames % tp != 0);
	grid[1] = (uint64_t)hb / c->patch;
	grid[2] = (uint64_t)wb / c->patch;
	return 0;
}
