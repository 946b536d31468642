/* SPDX-License-Identifier: MIT */
/*
 * mm_internal.h — private to lib/mm: what the split modules of the mm stage
 * share. Nothing outside lib/mm (and its unit tests) includes this file.
 *
 * Image sources (image_src.c): the bytes of an image named by a request, a
 * file path or a data: URL, read and decoded into one reused buffer, with
 * the header read for dimensions and EXIF orientation. Files already read
 * are remembered in a small cache keyed by path, device, inode, size and
 * mtime, so a file named by many requests is read once.
 *
 * Video sources (video_src.c): the same for videos, whose files are mapped
 * rather than read (they are probed with video.h and hashed, never copied),
 * with a cache of their own.
 */
#ifndef KVP_MM_INTERNAL_H
#define KVP_MM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/diag.h"
#include "mm/family.h"
#include "mm/image.h"
#include "mm/mm.h"
#include "mm/tokenizer.h"
#include "mm/video.h"

#define KVP_IMGSRC_SLOTS 64

struct kvp_imgsrc_slot {
	char *path; /* NULL: empty */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct kvp_image_info info;
	uint64_t hash;
};

struct kvp_imgsrc {
	uint64_t max_pixels;    /* refuse larger images; 0: no limit */
	size_t max_image_bytes; /* largest file or data: payload */
	uint8_t *bytes;         /* the last image read or decoded */
	size_t bytes_cap;
	struct kvp_imgsrc_slot cache[KVP_IMGSRC_SLOTS];
};

/* init cannot fail (buffers grow on first use); fini frees them. */
void kvp_imgsrc_init(struct kvp_imgsrc *s, uint64_t max_pixels,
                     size_t max_image_bytes);
void kvp_imgsrc_fini(struct kvp_imgsrc *s);

/*
 * Header info of an image file and the XXH3 of its bytes, through the
 * cache. Returns 0, or -1 with d set (cannot open, not a regular file,
 * over the size limit, read error, bad header, no memory).
 */
int kvp_imgsrc_file(struct kvp_imgsrc *s, const char *path,
                    struct kvp_image_info *info, uint64_t *hash,
                    struct kvp_diag *d);

/*
 * Header info of the image in a data: URL (url[0..len)); base64 payloads
 * are decoded first. The media type is not checked: as in Dynamo, the
 * header decides. Returns 0, or -1 with d set.
 */
int kvp_imgsrc_dataurl(struct kvp_imgsrc *s, const char *url, size_t len,
                       struct kvp_image_info *info, struct kvp_diag *d);

/* ---- video sources (video_src.c) ---- */

#define KVP_VIDSRC_SLOTS 64

struct kvp_vidsrc_slot {
	char *path; /* NULL: empty */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct kvp_video_info info;
	uint64_t hash;
};

struct kvp_vidsrc {
	size_t max_bytes; /* largest file or data: payload */
	uint8_t *bytes;   /* the last data: payload decoded */
	size_t bytes_cap;
	struct kvp_vidsrc_slot cache[KVP_VIDSRC_SLOTS];
};

void kvp_vidsrc_init(struct kvp_vidsrc *s, size_t max_bytes);
void kvp_vidsrc_fini(struct kvp_vidsrc *s);

/*
 * A video file's facts (video.h) and the XXH3 of its bytes, through the
 * cache. Returns 0, or -1 with d set (cannot open, not a regular file,
 * over the size limit, not a video).
 */
int kvp_vidsrc_file(struct kvp_vidsrc *s, const char *path,
                    struct kvp_video_info *info, uint64_t *hash,
                    struct kvp_diag *d);

/* The facts of the video in a data: URL (url[0..len)); 0, or -1 with d
 * set. */
int kvp_vidsrc_dataurl(struct kvp_vidsrc *s, const char *url, size_t len,
                       struct kvp_video_info *info, struct kvp_diag *d);

/* ---- videos in the expansion (mm_video.c) ---- */

/*
 * A video's mm_hash, size, frame count, rate (explicit, else from its
 * data: URL or file) and grid under rule. Returns 0, or -1 with d set:
 * nothing to read what is missing from (an http(s) URL is never fetched),
 * an unreadable source, or a video the rule refuses.
 */
int kvp_mm_video_resolve(struct kvp_vidsrc *s,
                         const struct kvp_mm_video_req *in,
                         enum kvp_mm_video_rule rule, struct kvp_mm_video *v,
                         struct kvp_diag *d);

/* The growing arrays of one expansion's temporal groups. */
struct kvp_mm_vbuf {
	struct kvp_mm_vgroup *g;
	size_t n, cap;
	struct kvp_tok_ids ids; /* every group's timestamp text ids */
};

/*
 * Appends video v's grid[0] temporal groups to b: each group's mean frame
 * time (frame index = round-half-even(timestamp * fps), else the frame's
 * position; time = index / fps; the last frame repeated to fill the last
 * group) and its timestamp text encoded with t. Sets v->group0. Returns 0,
 * or -1 with d set (t NULL, a text t cannot encode, no memory).
 */
int kvp_mm_video_groups(struct kvp_tokenizer *t,
                        const struct kvp_mm_video_req *in,
                        struct kvp_mm_video *v, struct kvp_mm_vbuf *b,
                        struct kvp_diag *d);

/* The number of routing tokens video v expands to, and writing them at out
 * (returns how many were written): per group its timestamp ids,
 * vision_start, v->count / T pad values, vision_end. */
uint64_t kvp_mm_video_len(const struct kvp_mm_video *v,
                          const struct kvp_mm_vbuf *b);
size_t kvp_mm_video_emit(const struct kvp_mm_video *v,
                         const struct kvp_mm_vbuf *b,
                         const struct kvp_mm_video_ids *ids, uint32_t *out);

#endif
