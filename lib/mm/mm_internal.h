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
 */
#ifndef KVP_MM_INTERNAL_H
#define KVP_MM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/diag.h"
#include "mm/image.h"

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

#endif
