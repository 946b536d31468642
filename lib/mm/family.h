/* SPDX-License-Identifier: MIT */
/*
 * family.h — the model families mm-expand knows (docs/spec/mm-expand.md §7.4)
 * and their image token counters (§3).
 *
 * Families: Kimi K2/K2.5/K2.6 (repeated pad, NaViT budget 16384), Kimi-K3
 * (media_begin + "image WxH" + media_content + pads + media_end, NaViT
 * budget 65536), Qwen2-VL/2.5-VL (smart_resize, factor 28), Qwen3-VL
 * and Qwen3.5/3.6 (factor 32; their own vocabularies), LLaVA-1.5 (576 per
 * image, BOS 1). Anything else is KVP_MM_UNKNOWN (unsupported_model):
 * never a guess.
 *
 * Videos (issue 29 §1): Qwen3-VL and Qwen3.5 only. A video of F frames of
 * W x H has the grid T, H', W' of kvp_mm_video_grid() and T * H' * W' / 4
 * video tokens, T temporal groups of H' * W' / 4.
 *
 * Pure functions over constant tables; no JSON (a preprocessor_config is
 * read into a counter by mm_io.h).
 */
#ifndef KVP_FAMILY_H
#define KVP_FAMILY_H

#include <stdint.h>

enum kvp_mm_family {
	KVP_MM_UNKNOWN = 0,
	KVP_MM_KIMI_K25,
	KVP_MM_KIMI_K3,
	KVP_MM_QWEN2_VL,
	KVP_MM_QWEN3_VL,
	KVP_MM_LLAVA,
	KVP_MM_QWEN3_5,
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

/* A video's budget rule (the frame count the pixel check multiplies by). */
enum kvp_mm_video_rule {
	/* transformers' current Qwen3-VL video smart_resize: the frames
	 * rounded half to even to a multiple of 2; fewer than 2 refused */
	KVP_MM_VIDEO_ROUND_HALF_EVEN = 0,
	/* its earlier one: the frames rounded up to a multiple of 2 */
	KVP_MM_VIDEO_LEGACY_CEIL,
};

/* Video geometry: patch 16, spatial merge 2, temporal patch 2, pixels over
 * all frames between min_px and max_px (4096 / 25165824). */
struct kvp_mm_video_counter {
	uint64_t patch, merge, temporal;
	uint64_t min_px, max_px;
};

/* A family's video token ids. */
struct kvp_mm_video_ids {
	uint32_t video, vision_start, vision_end;
};

/* Kimi-K3 control tokens and the Kimi media pad (spec §1.3). */
#define KVP_MM_KIMI_MEDIA_BEGIN 163602u
#define KVP_MM_KIMI_MEDIA_CONTENT 163603u
#define KVP_MM_KIMI_MEDIA_END 163604u
#define KVP_MM_KIMI_MEDIA_PAD 163605u
/* Dynamo's MAX_MM_ROUTING_TOKENS: longest padded routing sequence. */
#define KVP_MM_MAX_ROUTING_TOKENS 1048576u

/* "kimi_k3", ...; NULL for KVP_MM_UNKNOWN / KVP_MM_LAYOUT_NONE. */
const char *kvp_mm_family_name(enum kvp_mm_family f);
const char *kvp_mm_layout_name(enum kvp_mm_layout l);
/* Exact family name ("kimi_k3", ...), else KVP_MM_UNKNOWN. */
enum kvp_mm_family kvp_mm_family_by_name(const char *s);
/* §7.4 case-insensitive substring rules on a model id or model_type. */
enum kvp_mm_family kvp_mm_family_match(const char *s);
/*
 * A request's family: an explicit family (exact name, else the substring
 * rules), else the rules on model, then on model_type. Any of the three
 * may be NULL. *named gets the string the family came from ("" if none),
 * for messages.
 */
enum kvp_mm_family kvp_mm_family_resolve(const char *family, const char *model,
                                         const char *model_type,
                                         const char **named);
enum kvp_mm_layout kvp_mm_family_layout(enum kvp_mm_family f);
uint32_t kvp_mm_family_placeholder(enum kvp_mm_family f);
/* BOS id prepended by default (LLaVA: 1); -1 for none. */
int64_t kvp_mm_family_bos(enum kvp_mm_family f);

/* A family's video ids: 1, or 0 when it has no video rule. */
int kvp_mm_family_video(enum kvp_mm_family f, struct kvp_mm_video_ids *ids);
void kvp_mm_video_counter_default(struct kvp_mm_video_counter *c);
/*
 * The grid [T, H, W] of a video of frames frames of w x h (issue 29 §1):
 * T = ceil(frames / temporal); each side rounded half to even to the factor
 * (patch * merge), then scaled into the pixel budget, which multiplies the
 * sides by the rule's frame count and scales by the frame count itself;
 * H, W in patches. Returns 0, or -1 with *why set to a static string when
 * the engine's processor refuses the video (no frames, fewer than the
 * temporal patch under round-half-even, a side under the factor, an aspect
 * ratio over 200).
 */
int kvp_mm_video_grid(const struct kvp_mm_video_counter *c,
                      enum kvp_mm_video_rule rule, uint64_t frames, uint32_t w,
                      uint32_t h, uint64_t grid[3], const char **why);

/* Counter defaults of a family. */
void kvp_mm_counter_default(enum kvp_mm_family f, struct kvp_mm_counter *c);
/* Image tokens for a W x H image (0 if w or h is 0). Symmetric in (w, h). */
uint64_t kvp_mm_count(const struct kvp_mm_counter *c, uint32_t w, uint32_t h);

#endif
