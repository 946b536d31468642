/* SPDX-License-Identifier: MIT */
/* fuzz_wire.c — bytes through the msgpack batch decoder (one payload, and
 * as a raw stream), every event, the JSON rendering, and base64. */
#include <stdio.h>
#include <stdlib.h>

#include "base64.h"
#include "ndjson.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
decode_loaded(struct kvp_wire *w, struct kvp_jw *jw, size_t size, int strict)
{
	struct kvp_wire_batch b = {0};
	struct kvp_wire_event ev;
	struct kvp_diag d;
	size_t i;

	b.bytes = size;
	kvp_wire_write_root(jw, w);
	kvp_jw_end_record(jw);
	if (kvp_wire_envelope(w, strict, &b, &d) != 0)
		return;
	for (i = 0; i < b.n_events; i++) {
		if (kvp_wire_event(w, &b, i, &ev, &d) != 0)
			continue;
		kvp_jw_arr_begin(jw);
		kvp_jw_u64_array(jw, ev.hashes, ev.n_hashes);
		kvp_jw_u64_array(jw, ev.tokens, ev.n_tokens);
		kvp_wire_write_value(jw, ev.extra_keys);
		kvp_wire_write_value(jw, ev.block_mm_infos);
		for (size_t k = 0; k < ev.n_unknown; k++)
			kvp_jw_strn(jw, ev.unknown[k].p, ev.unknown[k].len);
		if (ev.medium.present)
			kvp_jw_strn(jw, ev.medium.p, ev.medium.len);
		kvp_jw_arr_end(jw);
		kvp_jw_end_record(jw);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_wire *w = kvp_wire_new();
	struct kvp_wire_stream *s;
	struct kvp_diag d;
	struct kvp_jw jw;
	FILE *out = fopen("/dev/null", "w"), *in;
	unsigned char *b64;
	size_t n;
	uint64_t off;

	if (w == NULL || out == NULL)
		goto done;
	kvp_jw_init(&jw, out, 0, 0);
	if (kvp_wire_load(w, data, size, &d) == 0) {
		decode_loaded(w, &jw, size, 0);
		decode_loaded(w, &jw, size, 1);
	}
	if (size > 0 && (in = fmemopen((void *)data, size, "r")) != NULL) {
		s = kvp_wire_stream_new(in, 1 << 16);
		while (s != NULL &&
		       kvp_wire_stream_next(s, w, &off, &n, &d) == 1)
			decode_loaded(w, &jw, n, 0);
		kvp_wire_stream_free(s);
		fclose(in);
	}
	b64 = malloc(kvp_base64_decoded_max(size));
	if (b64 != NULL)
		(void)kvp_base64_decode((const char *)data, size, b64, &n, &d);
	free(b64);
done:
	kvp_wire_free(w);
	if (out != NULL)
		fclose(out);
	return 0;
}
