/* SPDX-License-Identifier: MIT */
/* fuzz_normalize.c — NDJSON lines through the record fast path and
 * kvp_event_reader_from_json() and a normalizer (mode, block size and a small
 * capacity chosen by the first byte), then out through the RouterEvent
 * writer. Checks that the fast path, when it accepts a line, agrees with
 * the json-c path, and that the tracked exclusion ids never exceed the
 * capacity of any (worker, rank). */
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/ndjson.h"
#include "events/normalize.h"
#include "events/event_reader.h"
#include "events/normalize_out.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_norm_opts no;
	struct kvp_norm *n;
	struct kvp_event_reader_buf b, fb;
	struct json_tokener *tok;
	struct kvp_lines r;
	struct kvp_jw w;
	FILE *in, *out;
	char *line;
	size_t len;
	int rc;

	if (size < 1)
		return 0;
	kvp_norm_opts_init(&no);
	no.excl_mode = (enum kvp_excl_mode)(data[0] % 3);
	no.narrow = no.excl_mode == KVP_EXCL_OFF && (data[0] & 8);
	no.kv_block_size = 1 + ((data[0] >> 4) & 3);
	no.capacity = (data[0] >> 2) & 3;
	no.fallback_drop = data[0] & 64;
	no.has_image_token = data[0] & 128;
	no.image_token = 7;
	/* fmemopen() needs a size of at least 1: an empty rest is /dev/null
	 * (fmemopen(data + 1, 1) read past a one-byte input) */
	in = size > 1 ? fmemopen((void *)(data + 1), size - 1, "r")
	              : fopen("/dev/null", "r");
	out = fopen("/dev/null", "w");
	n = kvp_norm_new(&no);
	tok = json_tokener_new();
	if (in == NULL || out == NULL || n == NULL || tok == NULL)
		abort();
	kvp_event_reader_buf_init(&b);
	kvp_event_reader_buf_init(&fb);
	kvp_lines_init(&r, in, 1 << 16);
	kvp_jw_init(&w, out, data[0] & 1, 0);
	while ((rc = kvp_lines_next(&r, &line, &len)) != KVP_LINE_EOF &&
	       rc != KVP_LINE_IOERR) {
		struct kvp_diag d;
		struct json_object *o;
		struct kvp_nev ev;
		struct kvp_nout nout;

		if (rc != KVP_LINE_OK)
			continue;
		{
			char *copy = malloc(len + 1);
			struct kvp_nev fe;
			int fast;

			if (copy == NULL)
				abort();
			memcpy(copy, line, len + 1);
			fast = kvp_event_reader_from_line(copy, len, &fb,
			                                  &fe) == 0;
			o = kvp_json_parse_object(tok, line, len, &d);
			if (fast &&
			    (o == NULL ||
			     kvp_event_reader_from_json(o, &b, &ev, &d) ||
			     fe.type != ev.type || fe.seq != ev.seq ||
			     fe.worker_id != ev.worker_id ||
			     fe.n_hashes != ev.n_hashes ||
			     fe.n_tokens != ev.n_tokens ||
			     fe.has_rank != ev.has_rank || fe.rank != ev.rank ||
			     fe.has_parent != ev.has_parent))
				abort();
			free(copy);
			if (o != NULL)
				json_object_put(o);
		}
		o = kvp_json_parse_object(tok, line, len, &d);
		if (o == NULL)
			continue;
		if (kvp_event_reader_from_json(o, &b, &ev, &d) == 0 &&
		    kvp_norm_process(n, &ev, &nout, &d) == 0)
			kvp_nout_write(&w, &nout);
		json_object_put(o);
		if (kvp_norm_tracked(n) > no.capacity * kvp_norm_streams(n))
			abort();
	}
	kvp_lines_fini(&r);
	kvp_event_reader_buf_fini(&b);
	kvp_event_reader_buf_fini(&fb);
	json_tokener_free(tok);
	kvp_norm_free(n);
	kvp_jw_fini(&w);
	fclose(in);
	fclose(out);
	return 0;
}
