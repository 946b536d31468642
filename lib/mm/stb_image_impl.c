/* SPDX-License-Identifier: MIT */
/*
 * stb_image_impl.c — the only translation unit defining
 * STB_IMAGE_IMPLEMENTATION. Compiled with vendor flags (-w). No stdio, no
 * file access, only the formats mm-expand reads dimensions from.
 */
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_NO_FAILURE_STRINGS
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_ONLY_GIF
#define STBI_ONLY_BMP
#define STBI_MAX_DIMENSIONS (1 << 24)
#include <stb_image.h>

#include "mm/stb_image_impl.h"

int
kvp_stbi_info(const unsigned char *buf, size_t len, int *w, int *h)
{
	int comp;

	if (len > 0x7fffffff)
		len = 0x7fffffff;
	if (stbi_info_from_memory(buf, (int)len, w, h, &comp) != 1)
		return -1;
	return *w > 0 && *h > 0 ? 0 : -1;
}
