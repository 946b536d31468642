/* SPDX-License-Identifier: MIT */
/*
 * stb_image_impl.h — the one place stb_image is compiled (vendor code,
 * built with -w). Only header parsing is exposed: no pixel is decoded.
 * Formats compiled in: JPEG, PNG, GIF, BMP. All stbi_* symbols are static
 * (STB_IMAGE_STATIC); this wrapper is the module's only export.
 */
#ifndef KVP_STB_IMAGE_IMPL_H
#define KVP_STB_IMAGE_IMPL_H

#include <stddef.h>

/* Width and height from an image header in memory. Returns 0, or -1 when
 * no compiled-in format recognises the bytes (or a side exceeds 2^24). */
int kvp_stbi_info(const unsigned char *buf, size_t len, int *w, int *h);

#endif
