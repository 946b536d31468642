/* SPDX-License-Identifier: MIT */
/* fuzz_image.c — bytes through the header-only image reader (stb_image
 * info, WebP, EXIF orientation via libexif) and, as text, through the
 * base64 and data: URL decoders. */
#include <stdint.h>
#include <stdlib.h>

#include "common/base64.h"
#include "mm/dataurl.h"
#include "mm/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_image_info info;
	struct kvp_diag d;
	const char *media, *payload;
	size_t ml, pl, n;
	int b64;
	uint8_t *out;

	(void)kvp_image_info(data, size, KVP_IMAGE_DEFAULT_MAX_PIXELS, 1, &info,
	                     &d);
	(void)kvp_image_info(data, size, 0, 0, &info, &d);
	(void)kvp_image_orientation(data, size, NULL);
	out = malloc(kvp_base64_decoded_max(size) + 1);
	if (out == NULL)
		return 0;
	if (kvp_base64_decode((const char *)data, size, out, &n, &d) == 0)
		(void)kvp_image_info(out, n, KVP_IMAGE_DEFAULT_MAX_PIXELS, 1,
		                     &info, &d);
	if (kvp_dataurl_split((const char *)data, size, &media, &ml, &payload,
	                      &pl, &b64, &d) == 0 &&
	    b64 && kvp_base64_decode(payload, pl, out, &n, &d) == 0)
		(void)kvp_image_info(out, n, KVP_IMAGE_DEFAULT_MAX_PIXELS, 1,
		                     &info, &d);
	free(out);
	return 0;
}
