/* SPDX-License-Identifier: MIT */
/*
 * image.h — image dimensions and EXIF orientation from the header bytes
 * only. No pixel is ever decoded: JPEG, PNG, GIF and BMP sizes come from
 * stb_image's header parser (stbi_info_from_memory), WebP sizes from a
 * small RIFF reader of our own (VP8, VP8L, VP8X), the EXIF Orientation tag
 * (0x0112) from libexif (JPEG APP1 "Exif\0\0", PNG eXIf, WebP EXIF).
 *
 * An image whose width * height exceeds max_pixels is refused from its
 * header: nothing else is read. A JPEG header stb_image 2.27 would index
 * its tables out of bounds with (a DHT holding over 256 codes, a bad table
 * id or sampling factor) is refused before stb reads it.
 */
#ifndef KVP_IMAGE_H
#define KVP_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

/* PIL's DecompressionBombError threshold (2 * 89,478,485): vLLM and SGLang
 * load images with PIL, which refuses larger ones. */
#define KVP_IMAGE_DEFAULT_MAX_PIXELS 178956970u

/* An EXIF Orientation tag whose value is outside 1..8 (PIL and the image
 * crate apply no transform for it); never the value itself. */
#define KVP_IMAGE_ORIENT_INVALID UINT32_MAX

struct kvp_image_info {
	uint32_t width; /* as stored (encoded), before any EXIF transform */
	uint32_t height;
	/* EXIF Orientation 1..8; 0 when absent; KVP_IMAGE_ORIENT_INVALID */
	uint32_t orientation;
	const char *format; /* "jpeg", "png", "gif", "bmp", "webp" */
};

/*
 * Reads the header of an image held in buf[0..len). Sets out and returns 0;
 * returns -1 with d->msg set on an unknown format, a corrupt or truncated
 * header, or an image over max_pixels (0: no limit). Orientation is looked
 * up only when want_orientation is non-zero (an unreadable EXIF block is
 * not an error: orientation 0).
 */
int kvp_image_info(const void *buf, size_t len, uint64_t max_pixels,
                   int want_orientation, struct kvp_image_info *out,
                   struct kvp_diag *d);

/* EXIF Orientation from the header: 1..8, 0 when absent or unreadable,
 * KVP_IMAGE_ORIENT_INVALID for a tag with any other value. */
uint32_t kvp_image_orientation(const void *buf, size_t len, const char *format);

/* 1 for orientations 5..8 (transpose, rotate 90, transverse, rotate 270),
 * the ones that swap width and height; 0 otherwise (0, 1..4, > 8,
 * KVP_IMAGE_ORIENT_INVALID). */
int kvp_image_swaps_axes(uint32_t orientation);

#endif
