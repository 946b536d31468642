/* SPDX-License-Identifier: MIT */
/* fuzz_decode_in.c — bytes through kv-decode's input framing: format
 * detection, the frame-message reader (with a small frame limit so the
 * oversize path runs too) and the capture-line payload_b64 locator.
 *
 * Invariants checked (abort() otherwise): the reader never reports more
 * bytes than the input holds, a message's payload lies inside its frame
 * buffer, and a located payload_b64 value lies inside the line. */
#define _GNU_SOURCE /* fmemopen */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/decode_in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_din_frames r;
	struct kvp_din_msg m;
	struct kvp_diag d;
	size_t s = 0, e = 0;
	FILE *f;
	int rc, n = 0;

	if (kvp_din_find_payload((const char *)data, size, &s, &e) &&
	    (s > e || e > size))
		abort();
	if (size == 0)
		return 0;
	f = fmemopen((void *)data, size, "rb");
	if (f == NULL)
		return 0;
	(void)kvp_din_detect(f);
	kvp_din_frames_init(&r, f, 256);
	do {
		rc = kvp_din_frames_next(&r, &m, &d);
		if (r.off > size || m.start > size)
			abort();
		if (rc == KVP_DIN_MSG && (m.len == 0 || m.len > 256 ||
		                          m.topic == NULL || m.payload == NULL))
			abort();
	} while ((rc == KVP_DIN_MSG || rc == KVP_DIN_BAD) && ++n < 1000);
	kvp_din_frames_fini(&r);
	fclose(f);
	return 0;
}
