/* SPDX-License-Identifier: MIT */
/* fuzz_normalize.c — NDJSON lines through the record fast path and
 * kvp_event_reader_from_json() and a normalizer (mode, block size and a small
 * capacity chosen by the first byte), then out through the RouterEvent
 * writer. Checks that the fast path, when it accepts a line, agrees with
 * the json-c path; that the reader (fast path, then the fallback's
 * scanner verdicts and skeleton line) gives what json-c on the whole line
 * gives, the same event or the same message and column; and that the
 * tracked exclusion ids never exceed the capacity of any (worker, rank). */
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

static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
same_u64s(const uint64_t *a, const uint64_t *b, size_t n)
{
	return n == 0 || memcmp(a, b, n * sizeof *a) == 0;
}

/* The reader against json-c on the whole line. */
static void
check_reader(struct kvp_event_reader *rd, struct json_tokener *tok,
             struct kvp_event_reader_buf *b, const char *line, size_t len)
{
	struct kvp_diag d1, d2;
	struct kvp_nev e1, e2;
	struct json_object *o;
	char *copy = malloc(len + 1);
	int r1, r2;

	if (copy == NULL)
		abort();
	memcpy(copy, line, len + 1);
	kvp_diag_clear(&d1);
	kvp_diag_clear(&d2);
	r1 = kvp_event_reader_line(rd, copy, len, &e1, &d1);
	o = kvp_json_parse_object(tok, line, len, &d2);
	r2 = o == NULL ? -1 : kvp_event_reader_from_json(o, b, &e2, &d2);
	if (r1 != r2 ||
	    (r1 < 0 && (strcmp(d1.msg, d2.msg) != 0 || d1.col != d2.col)))
		abort();
	if (r1 == 0 &&
	    (e1.type != e2.type || e1.seq != e2.seq || e1.idx != e2.idx ||
	     e1.worker_id != e2.worker_id || e1.has_rank != e2.has_rank ||
	     e1.rank != e2.rank || e1.has_ts != e2.has_ts ||
	     e1.ts_ms != e2.ts_ms || e1.n_hashes != e2.n_hashes ||
	     !same_u64s(e1.hashes, e2.hashes, e1.n_hashes) ||
	     e1.has_parent != e2.has_parent || e1.parent != e2.parent ||
	     e1.n_tokens != e2.n_tokens ||
	     !same_u64s(e1.tokens, e2.tokens, e1.n_tokens) ||
	     e1.eagle != e2.eagle || e1.block_size != e2.block_size ||
	     !same_str(e1.lora_name, e2.lora_name) || !same_str(e1.ns, e2.ns) ||
	     !same_str(e1.medium, e2.medium) || !same_str(e1.kind, e2.kind) ||
	     !same_str(e1.locality, e2.locality) ||
	     e1.has_group != e2.has_group || e1.group_idx != e2.group_idx ||
	     e1.n_mm_blocks != e2.n_mm_blocks))
		abort();
	if (o != NULL)
		json_object_put(o);
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_norm_opts no;
	struct kvp_norm *n;
	struct kvp_event_reader_buf b, fb, cb;
	struct kvp_event_reader rd;
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
	kvp_event_reader_buf_init(&cb);
	if (kvp_event_reader_init(&rd) != 0)
		abort();
	/* the skeleton for every line, or (bit 1) for none */
	rd.skel.min = data[0] & 2 ? SIZE_MAX : 0;
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
		check_reader(&rd, tok, &cb, line, len);
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
	kvp_event_reader_buf_fini(&cb);
	kvp_event_reader_fini(&rd);
	json_tokener_free(tok);
	kvp_norm_free(n);
	kvp_jw_fini(&w);
	fclose(in);
	fclose(out);
	return 0;
}
